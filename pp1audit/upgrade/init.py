"""``pp1audit init``: a new manifest measured from a tree (AIDE's ``--init``).

Everything written is read from the tree, once per file: the package version,
the SHA-256 of every cited file and each citation's text anchor. The result is
a manifest that ``check`` passes on the same tree by construction; ``build``
proves it before returning (a manifest that would not pass is a bug, not output).
Nothing is printed here; the CLI writes the text.
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass

from pp1audit.checks.version import read_version, version_path
from pp1audit.errors import Pp1Error, SourceError
from pp1audit.sources import Source
from pp1audit.sources.store import FileStore
from pp1audit.text.anchors import DEFAULT_CONTEXT, anchor_text
from pp1audit.text.safe import count, cut, printable
from pp1audit.text.spans import Span, parse_safe_span

_ID_OK = re.compile(r"^[a-z0-9][a-z0-9._-]*$")


@dataclass(frozen=True)
class CiteRequest:
    """One ``--cite [ID=]PATH:A-B`` option."""

    span: Span
    text: str
    """The option as typed, so that an error names what the user wrote."""
    id: str | None = None


def parse_cite(text: str) -> CiteRequest:
    """Parse ``[ID=]PATH:A-B``; ``Pp1Error`` (exit 2) naming the option when malformed."""
    cid: str | None = None
    spec = text
    head, sep, tail = text.partition("=")
    if sep and ":" not in head:
        cid, spec = head, tail
        if not _ID_OK.match(cid):
            raise Pp1Error(f"--cite {cut(text, 80)}: '{cid}' is not a valid id (a-z, 0-9, '.', '_', '-')")
    try:
        span = parse_safe_span(spec)
    except ValueError as exc:
        raise Pp1Error(f"--cite {cut(text, 80)}: {exc}") from None
    return CiteRequest(span, text, cid)


def _writable(value: str, what: str, hint: str = "") -> None:
    """``Pp1Error`` (exit 2) naming ``what`` when ``value`` cannot be written into a
    manifest: YAML is UTF-8 text, and a file name's byte that is not UTF-8 (it
    reaches Python as a lone surrogate, ``\\udcff``) has no spelling there, so the
    manifest would not load. The CLI shows it escaped, as every name (``m\\xffod.py``)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise Pp1Error(f"{what} is not UTF-8, so it cannot be written into a manifest "
                       f"(YAML is UTF-8 text){hint}") from None


def default_id(span: Span, prefix: str = "") -> str:
    """``<prefix><file stem>-<a>-<b>``, lower case, in the manifest's id alphabet."""
    stem = span.path.rsplit("/", 1)[-1].rsplit(".", 1)[0].lower()
    stem = re.sub(r"[^a-z0-9.-]+", "-", stem).strip("-.") or "cite"
    lines = f"{span.start}" if span.start == span.end else f"{span.start}-{span.end}"
    return f"{prefix}{stem}-{lines}"


def _unique(cid: str, taken: set[str]) -> str:
    if cid not in taken:
        return cid
    n = 2
    while f"{cid}-{n}" in taken:
        n += 1
    return f"{cid}-{n}"


@dataclass(frozen=True)
class InitResult:
    """The manifest text and what was measured, for the CLI's summary line."""

    text: str
    version: str | None
    files: dict[str, str]
    citations: dict[str, Span]
    notes: tuple[str, ...]


def build(
    source: Source,
    package: str,
    cites: list[CiteRequest],
    *,
    id_prefix: str = "",
    audit_id: str = "audit",
    title: str | None = None,
    date: str | None = None,
    context: int = DEFAULT_CONTEXT,
) -> InitResult:
    """Measure ``source`` and return a manifest pinning every cited span.

    Bad input (a cited file missing, not text, or a span past its end) raises
    ``Pp1Error`` naming it: an ``init`` that silently dropped a citation would
    produce an audit that claims less than its author asked for.
    """
    from pp1audit.upgrade.yamledit import dump

    if not cites:
        raise Pp1Error("init: give at least one --cite PATH:A-B")
    if id_prefix and not _ID_OK.match(id_prefix):
        raise Pp1Error(f"--id-prefix {id_prefix}: not valid at the start of an id")
    if not _ID_OK.match(audit_id):
        raise Pp1Error(f"audit id '{audit_id}': use a-z, 0-9, '.', '_', '-'")
    store = FileStore(source)
    notes: list[str] = []

    version: str | None = None
    vpath = version_path(package)
    try:
        version = read_version(store.get(vpath).data)
    except SourceError as exc:
        notes.append(f"no version pinned: {exc}")
    else:
        if version is None:
            notes.append(f"no version pinned: {vpath} assigns no __version__ string")

    files: dict[str, str] = {}
    citations: dict[str, Span] = {}
    anchors = {}
    _writable(package, f"--package {package}")
    _writable(title or "", f"--title {title}")
    for req in cites:
        span = req.span
        arg = f"--cite {req.text}"
        _writable(span.path, f"{arg}: the file name {span.path}", "; rename the file to cite it")
        try:
            fd = store.get(span.path)
            lines = fd.text_lines()
        except SourceError as exc:
            raise Pp1Error(f"{arg}: {exc}") from None
        if span.end > len(lines):
            raise Pp1Error(f"{arg}: {span.path} has only {count(len(lines), 'line')}")
        if not any(line.strip() for line in lines[span.start - 1 : span.end]):
            raise Pp1Error(f"{arg}: the span holds only blank lines, and an anchor of blank "
                           "lines would match any blank lines; cite the code it belongs to")
        files.setdefault(span.path, fd.sha256)
        cid = req.id or default_id(span, id_prefix)
        if req.id is not None and cid in citations:
            raise Pp1Error(f"--cite {req.id}=…: the id '{cid}' is given twice")
        cid = _unique(cid, set(citations))
        citations[cid] = span
        anchors[cid] = anchor_text(lines, span.start, span.end, context, context)

    audit: dict[str, str] = {"id": audit_id}
    if title:
        audit["title"] = title
    audit["date"] = date or _dt.datetime.now(_dt.UTC).date().isoformat()
    target = {"package": package} | ({"version": version} if version is not None else {})
    cmap: dict[str, dict[str, object]] = {}
    for cid, span in citations.items():
        a = anchors[cid]
        sides = {"prefix": a.prefix, "suffix": a.suffix}
        anchor = {"exact": a.exact} | {k: v for k, v in sides.items() if v}
        cmap[cid] = {"at": str(span), "anchor": anchor}
    doc: dict[str, object] = {"pp1audit": 1, "audit": audit, "target": target, "files": files,
                              "citations": cmap}
    # The location as check prints it: a byte that is not UTF-8 (``bad\xff``), a line
    # break or an escape sequence in the directory's name cannot end the comment.
    text = dump(doc, "pp1audit manifest written by `pp1audit init` from "
                     f"{source.kind} {printable(source.location)}")
    _prove(text, source)
    return InitResult(text, version, files, citations, tuple(notes))


def _prove(text: str, source: Source) -> None:
    """The new manifest must load and pass on the tree it was measured from.

    ``build`` refuses up front, naming the ``--cite``, what the manifest rules
    would refuse; a manifest that still does not load is a bug, and its
    position in YAML the user never saw is no help, so the key path is named.
    """
    from pp1audit.errors import ManifestError
    from pp1audit.manifest import parse
    from pp1audit.result import Status
    from pp1audit.run import audit

    try:
        manifest = parse(text, "<init>")
    except ManifestError as exc:  # pragma: no cover - a bug in init
        where = f"at {exc.keypath}" if exc.keypath else f"line {exc.line} of the new manifest"
        raise Pp1Error(f"init: internal error: the new manifest does not load: {exc.message} "
                       f"({where})") from None
    result = audit(manifest, source)
    bad = [c for c in result.checks if c.status is not Status.PASS]
    if bad:  # pragma: no cover - would be a bug in init or the checks
        raise Pp1Error(f"init: internal error: the new manifest does not pass: {bad[0].message}")
