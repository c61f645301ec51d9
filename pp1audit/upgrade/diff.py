"""``pp1audit diff``: what an upgrade changes in what an audit cites.

Two trees (e.g. two vLLM wheels read in place) and one manifest: for every
pinned file and cited span, was it unchanged, did it only move, did its text
change (with a unified diff of the span, numbered as in the files), or is it
gone. Where a citation is in each tree comes from the core (``audit`` on each
tree: the same relocation ``check`` uses); a span the anchors find in only one
tree is followed into the other by a line diff of the whole file, so a change
is shown against the lines that replaced it rather than reported as missing.
A file that is there but cannot be used (a FIFO, a symlink escaping the tree,
non-UTF-8 text for a citation) is ``unresolved`` and says what it is, as
``check`` and ``pin`` do: calling it gone would send a reviewer looking for a
deletion that never happened. Pure: ``compare`` returns records,
``render_text``/``as_dict`` format them; the text format shows everything read
from the trees or the manifest through ``safetext.printable``.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Any

from pp1audit.checks.citations import moved_by
from pp1audit.checks.version import read_version, version_path
from pp1audit.errors import MissingFile, SourceError
from pp1audit.formats import counted, version_or_unknown
from pp1audit.manifest import Manifest
from pp1audit.result import Check, Status
from pp1audit.sources import Source
from pp1audit.sources.store import FileData, FileStore
from pp1audit.text.safe import printable, printable_code
from pp1audit.text.spans import line_range

UNCHANGED = "unchanged"
MOVED = "moved"
CHANGED = "changed"
GONE = "gone"
ADDED = "added"
UNRESOLVED = "unresolved"
OUTCOMES = (UNCHANGED, MOVED, CHANGED, GONE, ADDED, UNRESOLVED)


@dataclass(frozen=True)
class DiffItem:
    """One pin or citation compared across the two trees."""

    kind: str
    id: str
    status: str
    path: str | None = None
    old_lines: tuple[int, int] | None = None
    new_lines: tuple[int, int] | None = None
    old: str | None = None
    new: str | None = None
    message: str = ""
    diff: str = ""


@dataclass(frozen=True)
class TreeDiff:
    """The whole comparison, in manifest order."""

    manifest_path: str
    old: str
    new: str
    old_version: str | None
    new_version: str | None
    items: tuple[DiffItem, ...] = field(default_factory=tuple)

    def counts(self) -> dict[str, int]:
        """Items per outcome, every outcome present."""
        out = dict.fromkeys(OUTCOMES, 0)
        for item in self.items:
            out[item.status] += 1
        return out

    @property
    def same(self) -> bool:
        """True when nothing the manifest pins or cites differs between the trees."""
        return all(i.status == UNCHANGED for i in self.items)


def map_span(a: list[str], b: list[str], start: int, end: int) -> tuple[int, int] | None:
    """Where lines ``start``..``end`` of ``a`` went in ``b`` (1-based), by a line diff.

    Equal runs map line for line; a replaced run maps to its replacement; lines
    inserted strictly inside the span belong to it. None when every line of the
    span was deleted.
    """
    s, e = start - 1, end
    sm = difflib.SequenceMatcher(None, a, b, autojunk=False)
    lo: int | None = None
    hi: int | None = None
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "insert":
            if not s < i1 < e:
                continue
            lo_j, hi_j = j1, j2
        else:
            if i2 <= s or i1 >= e:
                continue
            if tag == "equal":
                lo_j, hi_j = j1 + max(i1, s) - i1, j1 + min(i2, e) - i1
            elif tag == "replace":
                lo_j, hi_j = j1, j2
            else:  # delete
                continue
        if hi_j <= lo_j:
            continue
        lo = lo_j if lo is None else min(lo, lo_j)
        hi = hi_j if hi is None else max(hi, hi_j)
    if lo is None or hi is None:
        return None
    return lo + 1, hi


_HUNK = re.compile(r"^@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@")


def span_diff(path: str, old: list[str], new: list[str], a: int, c: int, old_name: str,
              new_name: str) -> str:
    """Unified diff of two spans, hunk headers numbered as in the files."""
    out = []
    for line in difflib.unified_diff(old, new, f"{old_name}/{path}", f"{new_name}/{path}",
                                     lineterm="", n=2):
        m = _HUNK.match(line)
        if m:
            line = (f"@@ -{int(m[1]) + a - 1}{m[2] or ''} +{int(m[3]) + c - 1}{m[4] or ''} @@"
                    + line[m.end():])
        out.append(line)
    return "\n".join(out) + "\n" if out else ""


def _found(check: Check | None) -> tuple[int, int] | None:
    if check is None or check.status not in (Status.PASS, Status.DRIFT):
        return None
    return check.found_lines


@dataclass(frozen=True)
class _Side:
    """One tree's view of a path: its data, or why there is none.

    Neither set: the path is absent (gone / added). ``error``: the file is there
    but cannot be used (``is a FIFO; not opened``), which is no deletion.
    """

    data: FileData | None = None
    error: str | None = None

    @property
    def lines(self) -> list[str] | None:
        """The text lines; None when the file is absent, unusable or not text."""
        return None if self.data is None else self.data.lines


def _side(store: FileStore, path: str, need_text: bool) -> _Side:
    """Read ``path`` once from ``store``; a citation (``need_text``) also needs UTF-8 text."""
    try:
        data = store.get(path)
        if need_text:
            data.text_lines()
    except MissingFile:
        return _Side()
    except SourceError as exc:
        return _Side(error=exc.sentence)
    return _Side(data=data)


def _unusable(old: _Side, new: _Side) -> str | None:
    """Why the comparison cannot be made although the file is there, or None."""
    parts = [f"{tree} tree: {side.error}" for tree, side in (("old", old), ("new", new))
             if side.error is not None]
    return "; ".join(parts) or None


def _span_str(lines: tuple[int, int] | None) -> str:
    return "—" if lines is None else line_range(*lines, "–")


class _Comparer:
    def __init__(self, manifest: Manifest, old: Source, new: Source) -> None:
        from pp1audit.run import audit

        self.manifest = manifest
        self.old_store, self.new_store = FileStore(old), FileStore(new)
        self.old_checks = {c.id: c for c in audit(manifest, old).checks
                           if c.kind == "citation" and c.source is None}
        self.new_checks = {c.id: c for c in audit(manifest, new).checks
                           if c.kind == "citation" and c.source is None}
        self.old_name, self.new_name = "old", "new"

    def version(self, path: str) -> tuple[str | None, str | None]:
        def one(store: FileStore) -> str | None:
            try:
                return read_version(store.get(path).data)
            except SourceError:
                return None
        return one(self.old_store), one(self.new_store)

    def file(self, path: str) -> DiffItem:
        sa, sb = _side(self.old_store, path, False), _side(self.new_store, path, False)
        why = _unusable(sa, sb)
        if why is not None:
            return DiffItem("file", path, UNRESOLVED, path, message=why)
        if sa.data is None or sb.data is None:
            if sb.data is not None:
                return DiffItem("file", path, ADDED, path, new=sb.data.sha256,
                                message="not in the old tree")
            if sa.data is not None:
                return DiffItem("file", path, GONE, path, old=sa.data.sha256,
                                message="not in the new tree")
            return DiffItem("file", path, UNRESOLVED, path, message="in neither tree")
        a, b = sa.data.sha256, sb.data.sha256
        if a == b:
            return DiffItem("file", path, UNCHANGED, path, old=a, new=b)
        la, lb = sa.lines, sb.lines
        msg = "content differs"
        if la is not None and lb is not None:
            plus = minus = 0
            for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, la, lb, autojunk=False).get_opcodes():
                if tag != "equal":
                    minus += i2 - i1
                    plus += j2 - j1
            msg = f"+{plus} −{minus} lines"
        return DiffItem("file", path, CHANGED, path, old=a, new=b, message=msg)

    def citation(self, cid: str) -> DiffItem:
        cit = self.manifest.citations[cid]
        path = cit.span.path
        fo, fn = _found(self.old_checks.get(cid)), _found(self.new_checks.get(cid))
        sa, sb = _side(self.old_store, path, True), _side(self.new_store, path, True)
        why = _unusable(sa, sb)
        if why is not None:
            return DiffItem("citation", cid, UNRESOLVED, path, message=why)
        la, lb = sa.lines, sb.lines
        if fo is not None and la is not None and fn is None and lb is not None:
            fn = map_span(la, lb, *fo)
            if fn is None:
                return DiffItem("citation", cid, GONE, path, fo, None,
                                message="every line of the span was deleted")
        elif fn is not None and lb is not None and fo is None and la is not None:
            fo = map_span(lb, la, *fn)
            if fo is None:
                return DiffItem("citation", cid, ADDED, path, None, fn,
                                message="the span's lines are not in the old tree")
        if fo is None or la is None:
            if fn is None or lb is None:
                why = "not found in either tree"
                return DiffItem("citation", cid, UNRESOLVED, path, message=why)
            return DiffItem("citation", cid, ADDED, path, None, fn,
                            message=f"{path} is not in the old tree")
        if fn is None or lb is None:
            return DiffItem("citation", cid, GONE, path, fo, None,
                            message=f"{path} is not in the new tree")
        old_text, new_text = la[fo[0] - 1 : fo[1]], lb[fn[0] - 1 : fn[1]]
        if old_text == new_text:
            if fo == fn:
                return DiffItem("citation", cid, UNCHANGED, path, fo, fn)
            shift = fn[0] - fo[0]
            return DiffItem("citation", cid, MOVED, path, fo, fn,
                            message=f"{_span_str(fo)} → {_span_str(fn)} ({moved_by(shift)})")
        diff = span_diff(path, old_text, new_text, fo[0], fn[0], self.old_name, self.new_name)
        return DiffItem("citation", cid, CHANGED, path, fo, fn,
                        message=f"{_span_str(fo)} → {_span_str(fn)}, text differs", diff=diff)


def compare(manifest: Manifest, old: Source, new: Source) -> TreeDiff:
    """Compare two trees on everything ``manifest`` pins and cites in the target."""
    c = _Comparer(manifest, old, new)
    items: list[DiffItem] = []
    vpath = version_path(manifest.package)
    ov, nv = c.version(vpath)
    if manifest.version is not None:
        status = UNCHANGED if ov == nv else CHANGED
        items.append(DiffItem("version", "version", status, vpath, old=ov, new=nv,
                              message="" if ov == nv else
                              f"{version_or_unknown(ov)} → {version_or_unknown(nv)}"))
    items.extend(c.file(path) for path in manifest.files)
    items.extend(c.citation(cid) for cid, cit in manifest.citations.items() if cit.source is None)
    return TreeDiff(manifest.path, f"{old.kind} {old.location}", f"{new.kind} {new.location}",
                    ov, nv, tuple(items))


def _diff_lines(diff: str) -> list[str]:
    """A span diff made printable: the ``---``/``+++`` header names paths (escaped as
    names are), the hunks are code (their backslashes are the code's own)."""
    lines = diff.rstrip("\n").split("\n")
    return [printable(x) for x in lines[:2]] + [printable_code(x) for x in lines[2:]]


def render_text(td: TreeDiff, verbose: bool = False) -> str:
    """One line per item (unchanged ones only with ``verbose``), span diffs indented.

    Versions, paths, ids, messages and diffed lines come from the trees and the
    manifest: each is shown through ``printable``, so a ``_version.py`` or a cited
    line holding ``ESC[2J`` or a bidi override cannot write on the terminal. The
    diffed code keeps its backslashes (``printable_code``); its two header lines
    name paths, shown as any path is.
    """
    out = [printable(f"diff {td.old} ({version_or_unknown(td.old_version)}) → {td.new} "
                     f"({version_or_unknown(td.new_version)}); manifest {td.manifest_path}")]
    rows = [i for i in td.items if verbose or i.status != UNCHANGED]
    ids = [printable(i.id) for i in rows]
    widths = [max((len(x) for x in col), default=0) for col in (
        [i.status for i in rows], [i.kind for i in rows], ids)]
    for i, cid in zip(rows, ids, strict=True):
        detail = i.message
        if i.kind == "file" and i.status == CHANGED:
            detail = f"{(i.old or '')[:12]}… → {(i.new or '')[:12]}… ({i.message})"
        cells = "  ".join(x.ljust(w) for x, w in zip((i.status, i.kind, cid), widths, strict=True))
        out.append(f"  {cells}  {printable(detail)}".rstrip())
        if i.diff:
            out.extend("      " + line for line in _diff_lines(i.diff))
    out.append(f"summary: {counted(td.counts())}")
    return "\n".join(out) + "\n"


def as_dict(td: TreeDiff) -> dict[str, Any]:
    """The comparison as JSON-ready data (``pp1audit.diff/1``)."""
    return {
        "format": "pp1audit.diff/1",
        "manifest": td.manifest_path,
        "old": {"target": td.old, "version": td.old_version},
        "new": {"target": td.new, "version": td.new_version},
        "same": td.same,
        "counts": td.counts(),
        "items": [
            {
                "kind": i.kind, "id": i.id, "status": i.status, "path": i.path,
                "old_lines": list(i.old_lines) if i.old_lines else None,
                "new_lines": list(i.new_lines) if i.new_lines else None,
                "old": i.old, "new": i.new, "message": i.message, "diff": i.diff or None,
            }
            for i in td.items
        ],
    }
