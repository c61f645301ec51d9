"""Provenance sections of a manifest: named git sources, remote pins and donor patches.

Half of an audit's evidence lives outside the installed tree: a repository at a
pinned commit, refs that were recorded, a donor patch and upstream files pinned by
URL and digest. This module turns the ``sources``, ``remotes`` and ``donors``
sections (already shape-checked by the JSON Schema) into frozen records and
applies the rules a schema cannot state (names unique across sections, every
reference resolvable). ``manifest.parse`` calls ``parse_provenance`` so the errors
carry ``file:line:column`` like every other manifest error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit

from pp1audit.manifest.paths import path_problem, url_problem
from pp1audit.manifest.yamlpos import KeyPath, Loaded

TARGET = "target"
"""The reserved source name of the tree given on the command line."""


@dataclass(frozen=True)
class RefPin:
    """A ref recorded at audit time: fixed refs must not move, moving ones are reported."""

    source: str
    name: str
    commit: str
    moving: bool


@dataclass(frozen=True)
class ContentRule:
    """"Commit X contains / lacks file P or these bytes", evaluated on a clone."""

    id: str
    source: str
    present: bool
    commit: str
    path: str | None
    sha256: str | None
    donor: str | None
    claim: str | None


@dataclass(frozen=True)
class GitSourceSpec:
    """A named git repository: the pinned commit citations are read from, and its records."""

    name: str
    commit: str
    url: str | None
    title: str | None
    files: dict[str, str]
    refs: tuple[RefPin, ...]
    rules: tuple[ContentRule, ...]


@dataclass(frozen=True)
class RemotePin:
    """A file pinned by URL and SHA-256 (a donor patch when ``donor`` is true)."""

    id: str
    url: str
    download: str
    sha256: str
    commit: str | None
    path: str
    title: str | None
    donor: bool = False
    expect: str | None = None
    applies_to: str = TARGET
    strip: int = 1


@dataclass(frozen=True)
class Provenance:
    """Everything the manifest pins outside the target tree."""

    sources: dict[str, GitSourceSpec] = field(default_factory=dict)
    remotes: dict[str, RemotePin] = field(default_factory=dict)
    """Remote pins and donors together, by id (one namespace: both are citable)."""

    def kind_of(self, name: str) -> str | None:
        """``"target"``, ``"git"``, ``"remote"`` or None for an unknown name."""
        if name == TARGET:
            return TARGET
        if name in self.sources:
            return "git"
        if name in self.remotes:
            return "remote"
        return None

    def pins(self, name: str) -> dict[str, str]:
        """SHA-256 pins of a named source's files (a remote pin pins its one file)."""
        if name in self.sources:
            return self.sources[name].files
        if name in self.remotes:
            pin = self.remotes[name]
            return {pin.path: pin.sha256}
        return {}


def default_path(url: str) -> str:
    """The logical path of a remote file: the last segment of its URL's path
    (``url`` already passed ``url_problem``)."""
    segment = unquote(urlsplit(url).path.rstrip("/").rsplit("/", 1)[-1])
    return segment or "index"


def parse_provenance(loaded: Loaded, file: str, raw: dict[str, Any]) -> Provenance:
    """Build the provenance records; ``ManifestError`` (with line:column) on a bad reference."""
    from pp1audit.manifest.explain import fail_at

    def fail(path: KeyPath, message: str, key: bool = False) -> Exception:
        return fail_at(loaded, file, path, message, key=key)

    remotes: dict[str, RemotePin] = {}
    for section, donor in (("remotes", False), ("donors", True)):
        for rid, rec in (raw.get(section) or {}).items():
            if rid == TARGET:
                raise fail((section, rid), f"'{TARGET}' is reserved for the checked tree", key=True)
            if rid in remotes:
                raise fail((section, rid), f"'{rid}' is already a remote pin or donor", key=True)
            for key in ("url", "download"):
                problem = url_problem(rec[key]) if key in rec else None
                if problem:
                    raise fail((section, rid, key), problem)
            path = rec.get("path") or default_path(rec.get("download") or rec["url"])
            problem = path_problem(path)
            if problem:
                raise fail((section, rid, "path" if "path" in rec else "url"), problem)
            remotes[rid] = RemotePin(
                id=rid, url=rec["url"], download=rec.get("download") or rec["url"],
                sha256=rec["sha256"].lower(), commit=(rec.get("commit") or "").lower() or None,
                path=path, title=rec.get("title"), donor=donor, expect=rec.get("expect"),
                applies_to=rec.get("applies_to", TARGET), strip=rec.get("strip", 1),
            )

    sources: dict[str, GitSourceSpec] = {}
    for name, rec in (raw.get("sources") or {}).items():
        where: KeyPath = ("sources", name)
        if name == TARGET:
            raise fail(where, f"'{TARGET}' is reserved for the checked tree", key=True)
        if name in remotes:
            raise fail(where, f"'{name}' is already a remote pin or donor", key=True)
        for path in rec.get("files") or {}:
            problem = path_problem(path)
            if problem:
                raise fail((*where, "files", path), problem, key=True)
        commit = rec["commit"].lower()
        refs = tuple(
            RefPin(name, ref, r["commit"].lower(), bool(r.get("moving", False)))
            for ref, r in (rec.get("refs") or {}).items()
        )
        rules: list[ContentRule] = []
        for section, present in (("contains", True), ("lacks", False)):
            for cid, c in (rec.get(section) or {}).items():
                cpath = c.get("path")
                if cpath is not None and path_problem(cpath):
                    raise fail((*where, section, cid, "path"), str(path_problem(cpath)))
                donor_id = c.get("donor")
                if donor_id is not None and donor_id not in remotes:
                    raise fail((*where, section, cid, "donor"),
                               f"no pin '{donor_id}' under 'donors' or 'remotes'")
                if "sha256" in c and donor_id is not None:
                    raise fail((*where, section, cid), "give 'sha256' or 'donor', not both")
                digest = c["sha256"].lower() if "sha256" in c else (
                    remotes[donor_id].sha256 if donor_id is not None else None)
                rules.append(ContentRule(
                    id=cid, source=name, present=present,
                    commit=(c.get("commit") or commit).lower(), path=cpath, sha256=digest,
                    donor=donor_id, claim=c.get("claim"),
                ))
        sources[name] = GitSourceSpec(
            name=name, commit=commit, url=rec.get("url"), title=rec.get("title"),
            files={p: d.lower() for p, d in (rec.get("files") or {}).items()},
            refs=refs, rules=tuple(rules),
        )

    for rid, pin in remotes.items():
        if pin.donor and pin.applies_to != TARGET and pin.applies_to not in sources:
            raise fail(("donors", rid, "applies_to"),
                       f"no git source '{pin.applies_to}' under 'sources' (or use 'target')")
    for section in ("citations", "invariants"):
        for iid, rec in (raw.get(section) or {}).items():
            name = rec.get("source", TARGET) if isinstance(rec, dict) else TARGET
            if name != TARGET and name not in sources and name not in remotes:
                raise fail((section, iid, "source"),
                           f"no source '{name}' under 'sources', 'remotes' or 'donors'")
    return Provenance(sources=sources, remotes=remotes)
