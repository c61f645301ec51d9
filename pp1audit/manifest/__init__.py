"""Manifest: YAML → typed, validated models.

Validation happens in two steps, both reporting ``file:line:column`` and the key
path: the JSON Schema (shape, types, unknown keys, digest syntax), then the
rules a schema cannot say (safe paths, line ranges, every citation verifiable,
a URL naming the commit its entry pins: ``url_commit_clashes``).
Models are frozen dataclasses; checks read only these, never the raw YAML.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pp1audit.errors import ManifestError
from pp1audit.manifest.explain import fail_at, schema_check
from pp1audit.manifest.model import TARGET, Anchor, Citation, Manifest, text_lines
from pp1audit.manifest.paths import path_problem
from pp1audit.manifest.urls import url_commit_check
from pp1audit.manifest.yamlpos import KeyPath, Loaded, keypath_str, load
from pp1audit.text.spans import Span, parse_safe_span

if TYPE_CHECKING:
    from pp1audit.manifest.provenance import Provenance
    from pp1audit.rules.model import Invariant

__all__ = ["TARGET", "Anchor", "Citation", "Manifest", "load_manifest", "parse", "parse_bytes", "text_lines"]


def _anchor(raw: dict[str, Any] | None) -> Anchor | None:
    if raw is None:
        return None
    exact = text_lines(raw["exact"]) if "exact" in raw else None
    return Anchor(
        exact=exact,
        prefix=text_lines(raw.get("prefix", "")) if raw.get("prefix") else [],
        suffix=text_lines(raw.get("suffix", "")) if raw.get("suffix") else [],
        sha256=raw["sha256"].lower() if "sha256" in raw else None,
        invariant=raw.get("invariant"),
    )


def _invariants(loaded: Loaded, file: str, raw: dict[str, Any]) -> dict[str, Invariant]:
    """Parse ``invariants``; a rule error points at its key (``rules.RuleError``)."""
    if not raw.get("invariants"):
        return {}
    from pp1audit.rules.model import RuleError, parse_invariant  # only manifests with rules pay

    out: dict[str, Invariant] = {}
    for iid, rec in (raw.get("invariants") or {}).items():
        try:
            out[iid] = parse_invariant(iid, rec)
        except RuleError as exc:
            path = ("invariants", iid, *exc.keypath)
            raise fail_at(loaded, file, path, exc.message, key=exc.key) from None
    return out


def _invariant_anchor(
    loaded: Loaded, file: str, cid: str, anchor: Anchor, rec: dict[str, Any],
    invariants: dict[str, Invariant], span: Span,
) -> None:
    """An invariant anchor names a rule on the cited file and stands alone."""
    at: KeyPath = ("citations", cid, "anchor", "invariant")
    inv = invariants.get(anchor.invariant or "")
    if inv is None:
        raise fail_at(loaded, file, at, f"no invariant '{anchor.invariant}' under 'invariants'")
    if inv.file != span.path:
        raise fail_at(loaded, file, at, f"invariant '{inv.id}' is on {inv.file}, "
                    f"not on the cited file {span.path}")
    if rec.get("source", TARGET) != (inv.source or TARGET):
        raise fail_at(loaded, file, at, f"invariant '{inv.id}' reads source "
                    f"'{inv.source or TARGET}', the citation '{rec.get('source', TARGET)}'")
    extra = [k for k in ("exact", "sha256", "prefix", "suffix") if k in rec["anchor"]]
    if extra:
        raise fail_at(loaded, file, ("citations", cid, "anchor", extra[0]),
                    f"an invariant anchor stands alone: remove '{extra[0]}'", key=True)


def _report_check(loaded: Loaded, file: str, text: str, raw: dict[str, Any]) -> None:
    """The report section's first problem, at the bad reference itself when there is
    one (its place in the scalar's text, mapped back to the file's line:column)."""
    from pp1audit.manifest.prose import locate, validate

    for problem in validate(raw):
        line, col = loaded.where(problem.keypath)
        if problem.offset is not None:
            line, col = locate(text, (line, col), problem.text, problem.offset)
        raise ManifestError(file, line, col, keypath_str(problem.keypath), problem.message)


MAX_SIMPLE_KEY = 1024
"""Characters YAML (PyYAML and libyaml alike) reads as a plain or quoted key on one line."""

_KEY_COLON_ERRORS = ("mapping values are not allowed", "expected ',' or ")
"""What the YAML parser says at the ``:`` of a key it did not take for one."""

_BREAK = re.compile("\r\n|[\r\n\x85\u2028\u2029]")
"""Line breaks as YAML counts them (its marks number lines so)."""


def _line_span(text: str, line: int) -> tuple[int, int]:
    """Offsets of the start and end of 1-based ``line`` of ``text`` (YAML's breaks)."""
    start, end = 0, len(text)
    for number, m in enumerate(_BREAK.finditer(text), start=2):
        if number == line:
            start = m.end()
        elif number == line + 1:
            end = m.start()
            break
    return start, end


def _key_start(line: str, colon: int) -> int:
    """Where the key ending at ``colon`` begins on its line: after the indentation, a
    ``- ``/``? `` indicator, or the flow punctuation or ``: `` before it."""
    start = len(line) - len(line.lstrip(" "))
    for mark in ("{", "[", ",", ": ", "- ", "? "):
        at = line.rfind(mark, 0, colon)
        if at >= 0:
            start = max(start, at + len(mark))
    while start < colon and line[start] == " ":
        start += 1
    return start


def _long_key(text: str, exc: ManifestError) -> ManifestError | None:
    """The error to give instead of YAML's when its cause is a key over 1,024 characters.

    YAML looks no further than 1,024 characters for the ``:`` that makes a key, so a
    longer key reads as text, and its ``:`` as "mapping values are not allowed in this
    context": true, and no help. The key is the cause when the same line with a short
    key in its place parses past that ``:``."""
    if not exc.message.startswith("invalid YAML: ") or not any(
            words in exc.message for words in _KEY_COLON_ERRORS):
        return None
    begin, end = _line_span(text, exc.line)
    line, colon = text[begin:end], exc.column - 1
    if not line.startswith(":", colon):
        return None
    key = _key_start(line, colon)
    if colon - key <= MAX_SIMPLE_KEY:
        return None
    short = text[:begin + key] + "k" + text[begin + colon:end] + "\n"
    try:
        load(short, exc.file)
    except ManifestError as again:
        if (again.line, again.column) <= (exc.line, key + 2):  # still at (or before) the ':'
            return None
    return ManifestError(exc.file, exc.line, key + 1, "",
                         f"invalid YAML: a key of {colon - key:,} characters; YAML reads at "
                         f"most {MAX_SIMPLE_KEY:,} characters as a key (its ':' is then "
                         "text): use a shorter key")


def _load(text: str, file: str) -> Loaded:
    """``yamlpos.load``, saying so when a key longer than YAML reads is the problem."""
    try:
        return load(text, file)
    except ManifestError as exc:
        better = _long_key(text, exc)
        if better is None:
            raise
        raise better from None


def parse(text: str, file: str, sha256: str | None = None) -> Manifest:
    """Parse and validate manifest text; ``ManifestError`` names the line and column."""
    loaded = _load(text, file)
    if not isinstance(loaded.data, dict):
        raise fail_at(loaded, file, (), "the manifest must be a mapping")
    schema_check(loaded, file, text)
    raw: dict[str, Any] = loaded.data
    url_commit_check(loaded, file, text, raw)

    files: dict[str, str] = {}
    for path, digest in (raw.get("files") or {}).items():
        problem = path_problem(path)
        if problem:
            raise fail_at(loaded, file, ("files", path), problem, key=True)
        files[path] = digest.lower()

    provenance: Provenance | None = None
    if any(raw.get(k) for k in ("sources", "remotes", "donors")):
        from pp1audit.manifest.provenance import parse_provenance

        provenance = parse_provenance(loaded, file, raw)

    def kind_of(name: str) -> str | None:
        if name == TARGET:
            return TARGET
        return None if provenance is None else provenance.kind_of(name)

    invariants = _invariants(loaded, file, raw)
    for iid, inv in invariants.items():
        if inv.source is not None and kind_of(inv.source) is None:
            raise fail_at(loaded, file, ("invariants", iid, "source"),
                        f"no source '{inv.source}' under 'sources', 'remotes' or 'donors'")
    citations: dict[str, Citation] = {}
    for cid, rec in (raw.get("citations") or {}).items():
        cited_in = rec.get("source", TARGET)
        if kind_of(cited_in) is None:
            raise fail_at(loaded, file, ("citations", cid, "source"),
                        f"no source '{cited_in}' under 'sources', 'remotes' or 'donors'")
        pins = files if cited_in == TARGET or provenance is None else provenance.pins(cited_in)
        try:
            span = parse_safe_span(rec["at"])
        except ValueError as exc:
            raise fail_at(loaded, file, ("citations", cid, "at"), str(exc)) from None
        anchor = _anchor(rec.get("anchor"))
        if anchor is not None and anchor.exact is not None:
            if len(anchor.exact) != span.length:
                raise fail_at(
                    loaded, file, ("citations", cid, "anchor", "exact"),
                    f"anchor text has {len(anchor.exact)} lines but the span {span} has {span.length}",
                )
            if not any(line.strip() for line in anchor.exact):
                raise fail_at(loaded, file, ("citations", cid, "anchor", "exact"),
                            "anchor text is blank: it would match any blank lines")
        if anchor is not None and anchor.invariant is not None:
            _invariant_anchor(loaded, file, cid, anchor, rec, invariants, span)
        # A git source's pinned commit fixes its files' content (git addresses blobs
        # by hash), so its citations are verifiable without a digest or an anchor.
        if anchor is None and span.path not in pins and kind_of(cited_in) != "git":
            raise fail_at(
                loaded, file, ("citations", cid),
                f"citation cannot be verified: pin {span.path} under 'files' or give it an anchor",
                key=True,
            )
        citations[cid] = Citation(
            cid, span, anchor, rec.get("claim"), rec.get("title"),
            source=None if cited_in == TARGET else cited_in,
            unresolved=rec.get("unresolved"),
        )

    # Check ids must be unique in a result: a citation and an invariant may not share one.
    for iid in invariants:
        if iid in citations:
            raise fail_at(loaded, file, ("invariants", iid),
                        f"'{iid}' is also a citation id; check ids must be unique", key=True)

    # Evidence names checks by their ids: a clash of ids comes before any evidence.
    from pp1audit.manifest.ids import id_clashes

    clash = next(iter(id_clashes(raw)), None)
    if clash is not None:
        raise fail_at(loaded, file, clash.keypath, clash.message, key=True)
    if "report" in raw or "[[" in str((raw.get("audit") or {}).get("title", "")):
        _report_check(loaded, file, text, raw)

    audit = raw.get("audit") or {}
    if "date" in audit:
        import datetime

        try:
            datetime.date.fromisoformat(audit["date"])
        except ValueError:
            raise fail_at(loaded, file, ("audit", "date"),
                        f"'{audit['date']}' is not a calendar date") from None
    target = raw["target"]
    return Manifest(
        path=file,
        sha256=sha256 or hashlib.sha256(text.encode("utf-8")).hexdigest(),
        raw=raw,
        loaded=loaded,
        audit_id=audit.get("id", Path(file).stem),
        audit_title=audit.get("title"),
        audit_date=audit.get("date"),
        package=target["package"],
        version=target.get("version"),
        files=files,
        citations=citations,
        prov=provenance,
        invariants=invariants,
        record=bool(target.get("record", False)),
        tree_sha256=target["tree_sha256"].lower() if "tree_sha256" in target else None,
        startup_sha256=target["startup_sha256"].lower() if "startup_sha256" in target else None,
    )


def load_manifest(path: Path, display: str | None = None) -> Manifest:
    """Read and parse a manifest file; unreadable or non-UTF-8 files are one-line errors."""
    from pp1audit.sources.inputs import read_input

    return parse_bytes(read_input(path, "manifest"), display or str(path))


def parse_bytes(data: bytes, name: str) -> Manifest:
    """A manifest from the bytes of its file (for callers that need the bytes too)."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise ManifestError(name, line, col, "", "not UTF-8 text") from None
    return parse(text, name, sha256=hashlib.sha256(data).hexdigest())
