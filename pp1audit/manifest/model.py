"""The manifest's typed models: frozen dataclasses the checks read (never the raw YAML)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pp1audit.manifest.yamlpos import KeyPath, Loaded
from pp1audit.text.spans import Span

if TYPE_CHECKING:
    from pp1audit.manifest.provenance import Provenance
    from pp1audit.rules.model import Invariant


TARGET = "target"
"""The name of the audited tree among sources (``pp1audit.manifest.provenance.TARGET``)."""


def text_lines(text: str) -> list[str]:
    """Lines of a YAML block scalar: its final newline does not make an extra line."""
    return text[:-1].split("\n") if text.endswith("\n") else text.split("\n")


@dataclass(frozen=True)
class Anchor:
    """Text or digest that identifies a span independently of its line numbers."""

    exact: list[str] | None
    prefix: list[str]
    suffix: list[str]
    sha256: str | None
    invariant: str | None = None
    """An invariant id: the span is where that rule matches (``checks.citations``)."""


@dataclass(frozen=True)
class Citation:
    """A claim's evidence: a span of a file, and how to find it again."""

    id: str
    span: Span
    anchor: Anchor | None
    claim: str | None
    title: str | None
    source: str | None = None
    """A named git source or remote pin the cited file lives in; None: the target."""
    unresolved: str | None = None
    """Why ``pin`` could not carry this citation (a human must decide); it always fails."""


@dataclass(frozen=True)
class Manifest:
    """A validated manifest, with the bytes' digest and the YAML positions."""

    path: str
    sha256: str
    raw: dict[str, Any]
    loaded: Loaded
    audit_id: str
    audit_title: str | None
    audit_date: str | None
    package: str
    version: str | None
    files: dict[str, str]
    citations: dict[str, Citation] = field(default_factory=dict)
    prov: Provenance | None = None
    """Named git sources, remote pins and donors, or None when the manifest has none
    (so that a manifest without them never imports the provenance machinery)."""
    invariants: dict[str, Invariant] = field(default_factory=dict)
    """Claims on the target's Python files, backed by ast-grep rules (``pp1audit.rules``)."""
    record: bool = False
    """``target.record``: verify the distribution against RECORD (``pp1audit.checks.record``)."""
    tree_sha256: str | None = None
    """``target.tree_sha256``: the pinned tree digest (``pp1audit.checks.treedigest``)."""
    startup_sha256: str | None = None
    """``target.startup_sha256``: the pinned startup digest (``pp1audit.checks.treedigest``): the
    anchor for the code run at every interpreter start, which RECORD vouching is not."""

    @property
    def provenance(self) -> Provenance:
        """The provenance records (empty when the manifest declares none)."""
        if self.prov is not None:
            return self.prov
        from pp1audit.manifest.provenance import Provenance

        return Provenance()

    def where(self, path: KeyPath) -> str:
        """``file:line:column`` of a key path, for messages that point into the manifest."""
        line, col = self.loaded.where(path)
        return f"{self.path}:{line}:{col}"


