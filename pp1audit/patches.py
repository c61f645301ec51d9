"""Is a patch in a tree? Hunk by hunk: ``applied``, ``not applied`` or ``conflict``.

An audit says things like "donor patch 0055 is not applied in this image". That
is checkable without running ``patch``: each hunk has a *before* block (context
and removed lines) and an *after* block (context and added lines). In a tree
where the hunk is applied the after block is present; where it is not, the
before block is; where neither is, the region was edited some other way — a
conflict a human must look at. The patch is parsed with ``unidiff`` (a real
unified-diff parser, git extended headers included), never by hand.

Matching ignores trailing whitespace but not line endings, as ``git apply``
compares lines: a patch written with CRLF endings carries the CR in its hunk
lines, so it matches a CRLF file and not an LF one (and an LF patch not a CRLF
file); the CR ending a *header* line is dropped, as git drops it, so file names
never end in ``\r``. When a block occurs more than once the occurrence nearest
the hunk's own line numbers is reported. As ``git apply`` does, a hunk with
context on one side only is anchored on the other: without trailing context it
ends at the end of the file, without leading context it starts at line 1 (a
hunk without any context, as ``diff -U0`` writes, floats). A whole-file hunk (a
file the patch adds or deletes) must match the whole file.

A git rename is judged on the name the tree has, as ``git apply`` and ``git
apply -R`` decide: only the old name there is *not applied* (when its hunks'
original lines are), only the new name is *applied* (when the patched lines
are), both or neither is a conflict. A rename without hunks (``similarity index
100%``) and an empty file created or deleted are judged by presence alone.

A target file that cannot be used (a FIFO, a directory, a symlink escaping the
root, a ``..`` path, non-UTF-8 text) is ``unusable``: nothing was judged, which
the donor check reports as an ``error``, as file checks do.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from pp1audit.errors import MissingFile, SourceError
from pp1audit.store import FileStore

APPLIED = "applied"
NOT_APPLIED = "not applied"
CONFLICT = "conflict"
UNUSABLE = "unusable"
"""The file the hunk needs could not be used (FIFO, symlink escape...): not judged."""
DEV_NULL = "/dev/null"
_EOL = re.compile(r"\r\n|\r|\n")


class PatchError(Exception):
    """The bytes are not a usable unified diff; the message is one line."""


@dataclass(frozen=True)
class Hunk:
    """One hunk, reduced to what status needs: where it is, and its two sides."""

    path: str
    """File the hunk changes, after stripping (the new name for a rename)."""
    old_path: str | None
    """Original name when it differs (rename, copy, ``--- a.orig``), or None."""
    index: int
    """1-based position of the hunk among the patch's hunks for this path (numbering
    continues when a patch holds several diffs of one file, so labels stay unique)."""
    header: str
    source_start: int
    target_start: int
    before: tuple[str, ...]
    after: tuple[str, ...]
    new_file: bool
    deleted_file: bool
    at_start: bool = False
    """No leading context (but some trailing): both blocks must start at line 1."""
    at_end: bool = False
    """No trailing context (but some leading): both blocks must end at the file's end."""
    renamed: bool = False
    """A git rename (``rename from`` / ``rename to``): ``old_path`` goes away."""

    @property
    def title(self) -> str:
        """How messages name it: ``hunk @@ -1,4 +1,4 @@``, or, for a git diff with no
        hunks, the change it makes (there is no hunk header to show)."""
        if self.header:
            return f"hunk {self.header}"
        if self.renamed:
            return f"rename of {self.old_path} to {self.path} (no hunks)"
        return f"{'creation' if self.new_file else 'deletion'} of the empty file {self.path}"


@dataclass(frozen=True)
class HunkStatus:
    """The verdict for one hunk in one tree, with where its text was found."""

    hunk: Hunk
    status: str
    lines: tuple[int, int] | None
    reason: str
    read: str | None = None
    """The file ``lines`` are in when it is not ``hunk.path`` (a rename's old name)."""

    @property
    def path(self) -> str:
        """The file the verdict was read from (what ``lines`` number)."""
        return self.read or self.hunk.path

    @property
    def label(self) -> str:
        """``path#index`` — how messages and check ids name a hunk (unique in a patch)."""
        return f"{self.hunk.path}#{self.hunk.index}"


def _strip(name: str, strip: int) -> str | None:
    name = name.rstrip("\r")  # a CRLF header line that was not a git header line
    if name == DEV_NULL:
        return None
    parts = name.split("/")
    if strip >= len(parts):
        raise PatchError(f"cannot strip {strip} components from '{name}'")
    return "/".join(parts[strip:])


def _header_crs_dropped(text: str) -> str:
    """The patch with the CR of a CRLF *header* line dropped, as ``git apply`` drops it
    (``diff --git``, ``new file mode``, ``rename from``, ``---``/``+++``, ``@@``...):
    unidiff would keep it in names and miss git's extended headers. Hunk lines
    (a space, ``+`` or ``-`` first, or an empty CRLF context line) keep theirs:
    there the CR is content, compared as git compares it. A ``---`` line is a
    header when a ``+++`` line and a hunk header follow it (a hunk's last lines
    are followed by the next file's header, never by another hunk's)."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.endswith("\r") and line != "\r" and line[:1] not in (" ", "+", "-"):
            lines[i] = line[:-1]
        elif (line.startswith("--- ") and lines[i + 1 : i + 2] != []
              and lines[i + 1].startswith("+++ ") and lines[i + 2 : i + 3] != []
              and lines[i + 2].startswith("@@ ")):
            lines[i], lines[i + 1] = line.removesuffix("\r"), lines[i + 1].removesuffix("\r")
    return "\n".join(lines)


def _git_header(pfile: Any) -> list[str]:
    """The extended header lines of one file's git diff (``rename from ...``)."""
    return [line.rstrip("\r\n") for line in (pfile.patch_info or [])]


def _body(value: str) -> str:
    """A hunk line without its LF; a CR before it stays (see the module notes)."""
    return value[:-1] if value.endswith("\n") else value


def parse_patch(data: bytes, strip: int = 1) -> list[Hunk]:
    """Every hunk of a unified diff (git format-patch mail text is fine), with one
    pseudo-hunk per git rename or empty-file change that has no hunks."""
    from unidiff.errors import UnidiffParseError
    from unidiff.patch import PatchSet

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PatchError(f"patch is not UTF-8 text (byte {exc.start})") from None
    try:
        patchset: Any = PatchSet(_header_crs_dropped(text))
    except UnidiffParseError as exc:
        raise PatchError(f"not a unified diff: {exc}") from None
    hunks: list[Hunk] = []
    per_path: dict[str, int] = {}
    for pfile in patchset:
        hunks.extend(_file_hunks(pfile, strip, per_path))
    if not hunks and len(patchset):
        raise PatchError(f"no hunks to check: its {len(patchset)} file diff(s) only change "
                         "file modes or copy files")
    if not hunks:
        raise PatchError("no hunks found: not a unified diff")
    return hunks


def _file_hunks(pfile: Any, strip: int, per_path: dict[str, int]) -> list[Hunk]:
    """The hunks of one file's diff (``per_path`` numbers them across the patch)."""
    source = _strip(pfile.source_file, strip) if pfile.source_file else None
    target = _strip(pfile.target_file, strip) if pfile.target_file else None
    path = target or source
    if path is None:
        raise PatchError("a file diff names /dev/null on both sides")
    if pfile.is_binary_file:
        raise PatchError(f"{path}: binary diffs cannot be checked")
    header = _git_header(pfile)
    renamed = source is not None and source != path and any(
        line.startswith("rename from ") for line in header)
    new_file = source is None or bool(pfile.is_added_file)
    deleted_file = target is None or bool(pfile.is_removed_file)
    base = Hunk(path=path, old_path=source if source and source != path else None, index=0,
                header="", source_start=0, target_start=0, before=(), after=(),
                new_file=new_file, deleted_file=deleted_file, renamed=renamed)
    if not len(pfile):
        # git writes no hunk for a pure rename or an empty file added or deleted;
        # a mode change or a copy alone changes nothing a tree's text can show.
        if not (renamed or new_file or deleted_file):
            return []
        per_path[path] = per_path.get(path, 0) + 1
        return [replace(base, index=per_path[path])]
    out = []
    for h in pfile:
        per_path[path] = index = per_path.get(path, 0) + 1
        leading, trailing = _context_edges(h)
        out.append(replace(
            base, index=index,
            header=f"@@ -{h.source_start},{h.source_length} +{h.target_start},{h.target_length} @@",
            source_start=h.source_start, target_start=h.target_start,
            before=tuple(_body(ln.value) for ln in h if ln.is_context or ln.is_removed),
            after=tuple(_body(ln.value) for ln in h if ln.is_context or ln.is_added),
            at_start=leading == 0 < trailing, at_end=trailing == 0 < leading,
        ))
    return out


def _context_edges(hunk: Any) -> tuple[int, int]:
    """Context lines before the first change and after the last one."""
    kinds = [ln.is_context for ln in hunk if ln.is_context or ln.is_added or ln.is_removed]
    changed = [i for i, context in enumerate(kinds) if not context]
    if not changed:
        return len(kinds), 0
    return changed[0], len(kinds) - 1 - changed[-1]


def _key(line: str, cr: bool) -> str:
    """A line as compared: trailing whitespace dropped, but a CR ending kept."""
    return line.rstrip() + ("\r" if cr else "")


def _keys(block: tuple[str, ...]) -> list[str]:
    """A hunk block as compared (its lines keep the CR a CRLF patch gives them)."""
    return [_key(b, b.endswith("\r")) for b in block]


def _find(lines: list[str], block: tuple[str, ...]) -> list[int]:
    """0-based starts of ``block`` in ``lines`` (``_read``'s keys)."""
    if not block:
        return []
    want = _keys(block)
    n = len(want)
    first = want[0]
    return [i for i in range(len(lines) - n + 1) if lines[i] == first and lines[i : i + n] == want]


def _anchored(hunk: Hunk, lines: list[str], block: tuple[str, ...]) -> list[int]:
    """0-based starts of ``block`` where the hunk may apply (see the anchors above)."""
    starts = _find(lines, block)
    if hunk.at_start:
        starts = [s for s in starts if s == 0]
    if hunk.at_end:
        starts = [s for s in starts if s + len(block) == len(lines)]
    return starts


def _same(lines: list[str], block: tuple[str, ...]) -> bool:
    """The whole file is ``block``."""
    return lines == _keys(block)


def _whole(block: tuple[str, ...]) -> tuple[int, int] | None:
    """The lines of a whole file that is ``block`` (none for an empty file)."""
    return (1, len(block)) if block else None


def _nearest(starts: list[int], hint: int) -> int:
    return min(starts, key=lambda s: (abs(s + 1 - hint), s))


def _read(store: FileStore, path: str) -> list[str] | None:
    """The file's lines as compared (``_key``: numbered as ``text_lines`` numbers
    them, each knowing whether it ended in CRLF), None when missing;
    ``SourceError`` for a file that cannot be used or is not text."""
    try:
        got = store.get(path)
    except MissingFile:
        return None
    lines = got.text_lines()
    ends = [m.group() != "\n" for m in _EOL.finditer(got.data.decode("utf-8-sig"))]
    ends += [False] * (len(lines) - len(ends))  # a last line without a newline
    return [_key(line, cr) for line, cr in zip(lines, ends, strict=True)]


def _present(store: FileStore, path: str) -> bool:
    """``path`` is in the tree (its bytes alone: a pure rename needs no text)."""
    try:
        store.get(path)
    except MissingFile:
        return False
    return True


def hunk_status(hunk: Hunk, store: FileStore) -> HunkStatus:
    """Judge one hunk against the tree behind ``store``; ``unusable`` when a file it
    needs cannot be used (the one-line reason file checks give)."""
    try:
        if hunk.renamed:
            return _renamed(hunk, store)
        lines, read = _read(store, hunk.path), hunk.path
        if lines is None and hunk.old_path is not None:
            found = _read(store, hunk.old_path)
            if found is not None:
                lines, read = found, hunk.old_path
        return replace(_judge(hunk, lines), read=read)
    except SourceError as exc:
        return HunkStatus(hunk, UNUSABLE, None, exc.sentence, read=exc.path)


def _renamed(hunk: Hunk, store: FileStore) -> HunkStatus:
    """A git rename, decided as ``git apply`` / ``git apply -R`` decide it: the name
    the tree has says which side it is on, and a hunk is read from that file."""
    old, new = hunk.old_path or "", hunk.path
    here = [p for p in (old, new) if _present(store, p)]
    if len(here) == 2:
        return HunkStatus(hunk, CONFLICT, None,
                          f"both {old} and {new} are in the tree (the patch renames {old})")
    if not here:
        return HunkStatus(hunk, CONFLICT, None, f"neither {old} nor {new} is in the tree")
    if here == [old]:
        want, note = NOT_APPLIED, f"{old}, not yet renamed to {new}"
    else:
        want, note = APPLIED, f"{new}, renamed from {old}"
    if not hunk.header:  # a pure rename: presence is all git checks
        return HunkStatus(hunk, want, None, f"{note}, is in the tree", read=here[0])
    judged = _judge(hunk, _read(store, here[0]))
    if judged.status in (want, CONFLICT):
        return replace(judged, reason=f"{note}: {judged.reason}", read=here[0])
    undone = "rename" if want == NOT_APPLIED else "change"
    return HunkStatus(hunk, CONFLICT, None, f"{note}: {judged.reason}, so the patch's "
                      f"{undone} is missing (neither applied nor not applied)", read=here[0])


def _judge(hunk: Hunk, lines: list[str] | None) -> HunkStatus:
    """The verdict on one file's lines (``_read``'s keys; None: the file is absent)."""
    if lines is None:
        if hunk.deleted_file:
            return HunkStatus(hunk, APPLIED, None, f"{hunk.path} is deleted, as the patch does")
        if hunk.new_file:
            return HunkStatus(hunk, NOT_APPLIED, None, f"{hunk.path}, which the patch adds, is absent")
        return HunkStatus(hunk, CONFLICT, None, f"{hunk.path} is missing from the tree")
    if hunk.new_file and not hunk.before:
        if _same(lines, hunk.after):
            return HunkStatus(hunk, APPLIED, _whole(hunk.after), "the added file is present")
        return HunkStatus(hunk, CONFLICT, None, "a file the patch adds exists with other content")
    if hunk.deleted_file and not hunk.after:
        if _same(lines, hunk.before):
            return HunkStatus(hunk, NOT_APPLIED, _whole(hunk.before),
                              f"{hunk.path}, which the patch deletes, is still there")
        return HunkStatus(hunk, CONFLICT, None,
                          f"{hunk.path}, which the patch deletes, exists with other content")
    after = _anchored(hunk, lines, hunk.after)
    before = _anchored(hunk, lines, hunk.before)
    # ``diff -U0`` hunks without context: a pure addition has no "before" text
    # to find (nothing is an empty block's absence), a pure deletion no "after".
    if not hunk.before and not after:
        return HunkStatus(hunk, NOT_APPLIED, None,
                          "the added lines are not there (a pure addition without context)")
    if not hunk.after and hunk.before and not before:
        return HunkStatus(hunk, APPLIED, None,
                          "the removed lines are not there (a pure deletion without context)")
    if after and before:
        a, b = _nearest(after, hunk.target_start), _nearest(before, hunk.source_start)
        if abs(a + 1 - hunk.target_start) <= abs(b + 1 - hunk.source_start):
            before = []
        else:
            after = []
        note = " (both versions occur; the one nearest the hunk's lines counts)"
    else:
        note = ""
    if after:
        start = _nearest(after, hunk.target_start)
        return HunkStatus(hunk, APPLIED, (start + 1, start + len(hunk.after)),
                          f"patched lines found at {start + 1}-{start + len(hunk.after)}{note}")
    if before:
        start = _nearest(before, hunk.source_start)
        return HunkStatus(hunk, NOT_APPLIED, (start + 1, start + len(hunk.before)),
                          f"original lines found at {start + 1}-{start + len(hunk.before)}{note}")
    return HunkStatus(hunk, CONFLICT, None,
                      "neither the original nor the patched lines are there (edited otherwise)")


@dataclass(frozen=True)
class PatchStatus:
    """A patch judged in one tree: its hunks under the tree's scope, in patch order,
    and how many it has outside that scope (not judged: the tree cannot hold them)."""

    hunks: tuple[HunkStatus, ...]
    outside: int = 0


def patch_status(data: bytes, store: FileStore, strip: int = 1, within: str = "") -> PatchStatus:
    """The hunks of the patch whose path starts with ``within`` judged against one tree;
    ``PatchError`` if unparsable. An installed package holds only its own directory
    (``within="vllm/"``): a donor's tests, docs or C++ sources cannot be judged there,
    so they are counted, not reported as missing files."""
    hunks = parse_patch(data, strip)
    inside = [h for h in hunks if h.path.startswith(within)]
    return PatchStatus(tuple(hunk_status(h, store) for h in inside), len(hunks) - len(inside))


def tally(statuses: Iterable[HunkStatus]) -> dict[str, int]:
    """Counts per status: the three verdicts always, ``unusable`` only when some are."""
    out = {APPLIED: 0, NOT_APPLIED: 0, CONFLICT: 0}
    for s in statuses:
        out[s.status] = out.get(s.status, 0) + 1
    return out
