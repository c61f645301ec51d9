"""Is a patch in a tree? Hunk by hunk: ``applied``, ``not applied`` or ``conflict``.

An audit says things like "donor patch 0055 is not applied in this image". That
is checkable without running anything: ``git apply --check`` succeeding means
the patch is *not applied* yet, ``git apply --check -R`` succeeding means it is
*applied*, neither means the region was edited some other way (a *conflict* a
human must look at). This module answers as git would, in memory, for each hunk.
The patch is parsed with ``unidiff`` (a real unified-diff parser, git extended
headers included); what git reads into it is taken as git takes it:

* Lines are compared as ``git apply`` compares them by default: exactly, bytes
  and line endings included (a CRLF patch matches a CRLF file, not an LF one;
  trailing whitespace counts; a ``\\ No newline at end of file`` line counts; a
  byte-order mark is part of the first line). A CR ending a *header* line is
  dropped, as git drops it, so file names never end in ``\\r``.
* A hunk may match anywhere (git searches outward from the line it names),
  except where git pins it: a hunk whose old side starts at line 0 or 1 must
  match at the start of the file, one without trailing context at its end, a
  whole-file hunk the whole file; a hunk never matches lines an earlier hunk of
  the same diff wrote. When the diff of a file applies as a whole (or its
  reverse does) and not the other way, every hunk says so; otherwise each hunk
  is judged alone, and when both versions of it occur, the one nearest the line
  it names (shifted by the earlier hunks found applied) counts.
* A patch without a single context line is read as ``diff -U0`` output (which
  ``git apply`` takes only with ``--unidiff-zero``), unless its every hunk is one
  git pins to its whole file (old side at line 0 or 1, its file's last hunk): plain
  ``git diff`` writes those when it empties, fills or rewrites a small file, and
  they are judged as git judges them, as the whole file. A ``-U0`` hunk is judged
  at the line it names, shifted only by the hunks of the same file before it that
  are applied. There git puts an addition. A removal whose lines are not there is
  applied only when they are nowhere in the file: a copy elsewhere may be the line
  moved (git would remove it) or another one, so it is a conflict.
* A file is created or deleted only when the patch says so (``new file mode``,
  ``deleted file mode``, ``/dev/null``, or, in a non-git diff, the epoch
  timestamp ``diff -N`` writes); a traditional diff that adds to an absent file
  creates it, as git decides. Emptying a file, or filling an empty one, is an
  ordinary change.
* A git rename is judged on the name the tree has: only the old name there is
  *not applied* (when its hunks' original lines are), only the new name is
  *applied* (when the patched lines are), both or neither is a conflict. A
  rename without hunks and an empty file created or deleted are judged by
  presence alone. Quoted names (``"pkg/caf\\303\\251.py"``) are unquoted as git
  unquotes them.
* Several diffs of one file (a ``git format-patch`` series in one mbox) are
  judged as a series: the tree is the state after the first *j* of them when
  ``git apply -R`` of those and ``git apply`` of the rest both succeed, so a
  diff a later one rewrote is still *applied*. When several fit (a commit reverted
  later), the whole series decides: it applies forward, every hunk is *not
  applied*; in reverse, *applied*; else each is a conflict. At most 64 points are
  replayed in full; past that the series is a conflict, not judged. When no *j*
  fits, the diffs are judged from the last: one found applied is reversed in
  memory before the one before it is judged.

A target file that cannot be used (a FIFO, a directory, a symlink escaping the
root, a ``..`` path, non-UTF-8 text), or a binary diff, is ``unusable``: nothing
was judged, which the donor check reports as an ``error``, as file checks do.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from contextlib import suppress
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

from pp1audit.errors import MissingFile, SourceError
from pp1audit.sources.store import FileStore

APPLIED = "applied"
NOT_APPLIED = "not applied"
CONFLICT = "conflict"
UNUSABLE = "unusable"
"""The file the hunk needs could not be used (FIFO, symlink escape...): not judged."""
DEV_NULL = "/dev/null"
_GIT_SPACE = str.maketrans("", "", " \t\n\r")
"""What git's ``isspace`` is (no ``\\v``, no ``\\f``): its line hash skips it."""
_EPOCH = re.compile(r"(1969-12-31|1970-01-01) ([0-2][0-9]):([0-5][0-9]):00(?:\.0+)? "
                    r"([-+])([0-2][0-9]):?([0-5][0-9])")
_ESCAPES = {"a": 7, "b": 8, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11, '"': 34, "\\": 92}
_STATED = " (no context: judged at the line the hunk names)"


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
    """The old side (context and removed lines), each line as the file holds it: with
    its newline, unless the patch marks it ``\\ No newline at end of file``."""
    after: tuple[str, ...]
    """The new side (context and added lines), the same way."""
    new_file: bool
    deleted_file: bool
    leading: int = 0
    """Context lines before the first change."""
    trailing: int = 0
    """Context lines after the last change (none: git pins the hunk to the file's end)."""
    renamed: bool = False
    """A git rename (``rename from`` / ``rename to``): ``old_path`` goes away."""
    binary: bool = False
    """A binary diff: no text to judge."""

    @property
    def title(self) -> str:
        """How messages name it: ``hunk @@ -1,4 +1,4 @@``, or, for a git diff with no
        hunks, the change it makes (there is no hunk header to show)."""
        if self.header:
            return f"hunk {self.header}"
        if self.binary:
            return f"binary change of {self.path}"
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


@dataclass(frozen=True)
class _Diff:
    """One file's diff: its hunks (one pseudo-hunk when git wrote none) and whether it
    creates or deletes the file, as git reads that: 1 yes, 0 no, -1 unknown (a
    traditional diff; git decides by whether the file is there)."""

    hunks: tuple[Hunk, ...]
    is_new: int
    is_delete: int

    @property
    def path(self) -> str:
        return self.hunks[0].path

    @property
    def old_path(self) -> str | None:
        return self.hunks[0].old_path

    @property
    def renamed(self) -> bool:
        return self.hunks[0].renamed

    @property
    def binary(self) -> bool:
        return self.hunks[0].binary

    @cached_property
    def text(self) -> tuple[Hunk, ...]:
        """The hunks with text (a pseudo-hunk has none); built once, asked per hunk."""
        return tuple(h for h in self.hunks if h.header)

    @property
    def names(self) -> tuple[str, ...]:
        """Every file name the diff reads or writes."""
        return (self.path,) if self.old_path is None else (self.old_path, self.path)


@dataclass(frozen=True)
class _Verdict:
    """A hunk's status in one file's lines; ``start`` is the 0-based line where the
    block it rests on begins (the patched lines when applied, else the original)."""

    status: str
    start: int | None
    size: int
    reason: str

    @property
    def lines(self) -> tuple[int, int] | None:
        if self.start is None or not self.size:
            return None
        return self.start + 1, self.start + self.size


# -- parsing ------------------------------------------------------------------------


def _unquote(name: str) -> str:
    """A file name as git writes it, unquoted as git unquotes it (``unquote_c_style``:
    C escapes, octal bytes read as UTF-8); an unquoted name is returned as is."""
    if len(name) < 2 or name[0] != '"' or name[-1] != '"':
        return name
    body, out, i = name[1:-1], bytearray(), 0
    while i < len(body):
        char = body[i]
        if char == '"':
            raise PatchError(f"a quoted file name has a bare quote inside: {name}")
        if char != "\\":
            out += char.encode()
            i += 1
        elif body[i + 1 : i + 2] in _ESCAPES:
            out.append(_ESCAPES[body[i + 1]])
            i += 2
        elif re.fullmatch(r"[0-3][0-7][0-7]", body[i + 1 : i + 4]):
            out.append(int(body[i + 1 : i + 4], 8))
            i += 4
        else:
            raise PatchError(f"a quoted file name has an escape git does not write: {name}")
    try:
        return out.decode("utf-8")
    except UnicodeDecodeError:
        raise PatchError(f"a quoted file name is not UTF-8: {name}") from None


def _strip(name: str, strip: int) -> str | None:
    name = _unquote(name.rstrip("\r"))  # a CRLF header line that was not a git header line
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


def _epoch(timestamp: str | None) -> bool:
    """The timestamp ``diff -N`` gives a file that is absent on one side: the epoch in
    the writer's time zone (git's ``has_epoch_timestamp``)."""
    found = _EPOCH.fullmatch((timestamp or "").split("\t")[-1])
    if found is None:
        return False
    day, hour, minute, sign, zone_h, zone_m = found.groups()
    zone = (int(zone_h) * 60 + int(zone_m)) * (-1 if sign == "-" else 1)
    return int(hour) * 60 + int(minute) - zone == (24 * 60 if day == "1969-12-31" else 0)


def _creation(pfile: Any, git: bool, source: str | None, target: str | None,
              hunks: Sequence[Any]) -> tuple[int, int]:
    """``(is_new, is_delete)`` as git reads them: a git diff says so (``new file
    mode`` / ``deleted file mode``), a traditional one by ``/dev/null`` or the epoch
    timestamp, else it is unknown (-1) until the tree is looked at; old lines (or a
    second hunk) rule out a creation, new lines a deletion."""
    if git:
        return int(source is None), int(target is None)
    if source is None:
        return 1, 0
    if target is None:
        return 0, 1
    if _epoch(pfile.source_timestamp):
        return 1, 0
    if _epoch(pfile.target_timestamp):
        return 0, 1
    several = len(hunks) > 1
    is_new = 0 if several or any(h.source_length for h in hunks) else -1
    is_delete = 0 if several or any(h.target_length for h in hunks) else -1
    return is_new, is_delete


def _sides(hunk: Any) -> tuple[tuple[str, ...], tuple[str, ...], int, int]:
    """The old and new side of a unidiff hunk as git builds them, and its leading and
    trailing context: a line followed by ``\\ No newline at end of file`` loses its
    newline (a CR before it stays), an empty context line so marked adds nothing."""
    lines = [ln for ln in hunk if ln.line_type in (" ", "-", "+", "\\")]
    before: list[str] = []
    after: list[str] = []
    leading = trailing = 0
    changed = False
    for i, ln in enumerate(lines):
        if ln.line_type == "\\":
            continue
        value = ln.value
        if i + 1 < len(lines) and lines[i + 1].line_type == "\\":
            value = value.removesuffix("\n")
            if ln.line_type == " " and not value:
                continue
        if ln.line_type == " ":
            before.append(value)
            after.append(value)
            leading += not changed
            trailing += 1
        else:
            (before if ln.line_type == "-" else after).append(value)
            changed, trailing = True, 0
    return tuple(before), tuple(after), leading, trailing


def _file_diff(pfile: Any, strip: int, per_path: dict[str, int]) -> _Diff | None:
    """One file's diff (``per_path`` numbers hunks across the patch); None for a
    change a tree's text cannot show (a mode change or a copy alone)."""
    source = _strip(pfile.source_file, strip) if pfile.source_file else None
    target = _strip(pfile.target_file, strip) if pfile.target_file else None
    path = target or source
    if path is None:
        raise PatchError("a file diff names /dev/null on both sides")
    header = _git_header(pfile)
    git = bool(header) and header[0].startswith("diff --git ")
    renamed = source is not None and source != path and any(
        line.startswith("rename from ") for line in header)
    is_new, is_delete = _creation(pfile, git, source, target, list(pfile))
    base = Hunk(path=path, old_path=source if source and source != path else None, index=0,
                header="", source_start=0, target_start=0, before=(), after=(),
                new_file=is_new == 1, deleted_file=is_delete == 1, renamed=renamed,
                binary=bool(pfile.is_binary_file))
    if pfile.is_binary_file or not len(pfile):
        # git writes no hunk for a pure rename or an empty file added or deleted;
        # a mode change or a copy alone changes nothing a tree's text can show.
        if not (base.binary or renamed or base.new_file or base.deleted_file):
            return None
        per_path[path] = per_path.get(path, 0) + 1
        return _Diff((replace(base, index=per_path[path]),), is_new, is_delete)
    hunks = []
    for h in pfile:
        per_path[path] = index = per_path.get(path, 0) + 1
        before, after, leading, trailing = _sides(h)
        hunks.append(replace(
            base, index=index, source_start=h.source_start, target_start=h.target_start,
            header=f"@@ -{h.source_start},{h.source_length} +{h.target_start},{h.target_length} @@",
            before=before, after=after, leading=leading, trailing=trailing))
    return _Diff(tuple(hunks), is_new, is_delete)


def _parse(data: bytes, strip: int) -> list[_Diff]:
    """Every file diff of a unified diff (git format-patch mail text is fine, several
    commits in one mbox too)."""
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
    per_path: dict[str, int] = {}
    diffs = [d for d in (_file_diff(p, strip, per_path) for p in patchset) if d is not None]
    if not diffs and len(patchset):
        raise PatchError(f"no hunks to check: its {len(patchset)} file diff(s) only change "
                         "file modes or copy files")
    if not diffs:
        raise PatchError("no hunks found: not a unified diff")
    return diffs


def _pinned_whole(diff: _Diff, h: Hunk) -> bool:
    """A context-free hunk git pins at both ends (old side at line 0 or 1, no trailing
    context, the file's last hunk): plain ``git diff`` writes one when a file is
    emptied, filled or rewritten whole, and git matches it only as the whole file."""
    return not (h.leading or h.trailing) and h.source_start <= 1 and h is diff.text[-1]


def _zero(diffs: Iterable[_Diff]) -> bool:
    """The patch has no context line at all and some hunk git would not pin to its
    whole file: ``diff -U0`` wrote it (git would need ``--unidiff-zero``), so its hunks
    are judged where they say. A patch whose every hunk is a whole file's (emptying,
    filling, rewriting a small file) is what plain ``git diff`` writes: judged as git
    judges it, each hunk as its whole file."""
    diffs = list(diffs)
    if any(h.leading or h.trailing for d in diffs for h in d.text):
        return False
    return any(not _pinned_whole(d, h) for d in diffs for h in d.text)


def parse_patch(data: bytes, strip: int = 1) -> list[Hunk]:
    """Every hunk of a unified diff (git format-patch mail text is fine), with one
    pseudo-hunk per git rename or empty-file change that has no hunks and one per
    binary diff."""
    return [h for d in _parse(data, strip) for h in d.hunks]


# -- matching, as git apply matches ---------------------------------------------------


@dataclass(frozen=True)
class _Frag:
    """A hunk in one direction: git's fragment (``-R`` swaps the sides)."""

    oldpos: int
    newpos: int
    pre: tuple[str, ...]
    post: tuple[str, ...]
    trailing: int


def _frag(hunk: Hunk, reverse: bool) -> _Frag:
    if reverse:
        return _Frag(hunk.target_start, hunk.source_start, hunk.after, hunk.before, hunk.trailing)
    return _Frag(hunk.source_start, hunk.target_start, hunk.before, hunk.after, hunk.trailing)


def _split(text: str) -> list[str]:
    """Lines as git holds them: each with its newline (a last one may lack it)."""
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


class _Image:
    """A file's lines as ``git apply`` holds them while it applies one diff, with a flag
    per line that a hunk wrote (no later hunk may match there)."""

    def __init__(self, lines: Sequence[str]) -> None:
        self.lines = list(lines)
        self.patched = [False] * len(self.lines)
        self._where: dict[str, list[int]] | None = None

    def _candidates(self, block: tuple[str, ...]) -> Iterable[int]:
        """The lines where ``block`` may start: where its first line is."""
        if not block:
            return range(len(self.lines) + 1)
        if not block[0].endswith("\n"):
            return [i for i, line in enumerate(self.lines) if line.startswith(block[0])]
        if self._where is None:
            self._where = {}
            for i, line in enumerate(self.lines):
                self._where.setdefault(line, []).append(i)
        return self._where.get(block[0], [])

    def fits(self, start: int, block: tuple[str, ...], beginning: bool, end: bool) -> bool:
        """git's ``match_fragment`` without whitespace fuzz: ``block`` exactly at
        ``start``, on lines no hunk wrote; a last line without newline may be followed
        by whitespace (git compares bytes up to its end, and hashes lines blind to
        whitespace), unless the block must end the file."""
        n = len(block)
        if start < 0 or start + n > len(self.lines) or (beginning and start):
            return False
        if (end and start + n != len(self.lines)) or any(self.patched[start : start + n]):
            return False
        if not n:
            return True
        if tuple(self.lines[start : start + n - 1]) != block[:-1]:
            return False
        line, last = self.lines[start + n - 1], block[-1]
        if end or last.endswith("\n"):
            return line == last
        return line.startswith(last) and not line[len(last) :].translate(_GIT_SPACE)

    def starts(self, block: tuple[str, ...], beginning: bool, end: bool) -> list[int]:
        """Every line where ``block`` fits."""
        return [s for s in self._candidates(block) if self.fits(s, block, beginning, end)]

    def find(self, frag: _Frag) -> int | None:
        """Where git applies the fragment: the first fit in the order ``find_pos``
        tries lines (its line, one after, one before, two after...)."""
        beginning, end = _anchors(frag.oldpos, frag.trailing)
        count = len(self.lines)
        line = 0 if beginning else count - len(frag.pre) if end else max(frag.newpos - 1, 0)
        line = count if line < 0 or line > count else line
        tried = sorted(self._candidates(frag.pre), key=lambda s: (abs(s - line), s < line))
        return next((s for s in tried if self.fits(s, frag.pre, beginning, end)), None)

    def put(self, start: int, frag: _Frag) -> None:
        """The fragment applied at ``start``; its lines are marked as written."""
        end = start + len(frag.pre)
        self.lines[start:end] = frag.post
        self.patched[start:end] = [True] * len(frag.post)
        self._where = None


def _anchors(oldpos: int, trailing: int) -> tuple[bool, bool]:
    """Where git pins a hunk (not ``--unidiff-zero``): old side at line 0 or 1 → the
    start of the file; no trailing context → its end."""
    return oldpos <= 1, trailing == 0


def _stated(oldpos: int, size: int) -> int:
    """The 0-based line a hunk names (an empty side names the line after which it goes)."""
    return oldpos - 1 if size else oldpos


def _at(lines: Sequence[str], start: int, block: tuple[str, ...]) -> bool:
    """``block`` is exactly the lines at ``start``."""
    return start >= 0 and start + len(block) <= len(lines) and tuple(
        lines[start : start + len(block)]) == block


def _apply(lines: Sequence[str], frags: Iterable[_Frag], zero: bool) -> list[str] | None:
    """The lines after applying the fragments in order as ``git apply`` does (``zero``:
    each at the line it names, shifted by the ones before), or None if one fails."""
    if zero:
        out, shift = list(lines), 0
        for frag in frags:
            start = _stated(frag.oldpos, len(frag.pre)) + shift
            if not _at(out, start, frag.pre):
                return None
            out[start : start + len(frag.pre)] = frag.post
            shift += len(frag.post) - len(frag.pre)
        return out
    image = _Image(lines)
    for frag in frags:
        found = image.find(frag)
        if found is None:
            return None
        image.put(found, frag)
    return image.lines


def _nearest(starts: list[int], hint: int) -> int:
    return min(starts, key=lambda s: (abs(s - hint), s))


# -- one file's hunks ------------------------------------------------------------------


def _missing(diff: _Diff) -> _Verdict:
    """The file is absent: git creates it when the diff may create it, and a diff that
    may delete it is applied."""
    if diff.is_new:
        return _Verdict(NOT_APPLIED, None, 0, f"{diff.path}, which the patch adds, is absent")
    if diff.is_delete:
        return _Verdict(APPLIED, None, 0, f"{diff.path} is deleted, as the patch does")
    return _Verdict(CONFLICT, None, 0, f"{diff.path} is missing from the tree")


def _whole_file(diff: _Diff, lines: list[str]) -> _Verdict:
    """A file the patch creates (or deletes) is there: applied (not applied) only when
    it is exactly the patch's content, as ``git apply -R`` (``git apply``) requires."""
    hunk = diff.hunks[0]
    if diff.is_new == 1:
        if "".join(lines) == "".join(hunk.after):
            return _Verdict(APPLIED, 0, len(hunk.after), "the added file is present")
        return _Verdict(CONFLICT, None, 0, "a file the patch adds exists with other content")
    if "".join(lines) == "".join(hunk.before):
        return _Verdict(NOT_APPLIED, 0, len(hunk.before),
                        f"{diff.path}, which the patch deletes, is still there")
    return _Verdict(CONFLICT, None, 0, f"{diff.path}, which the patch deletes, exists with other content")


def _stated_verdict(h: Hunk, lines: list[str], start: int) -> _Verdict:
    """A hunk without context at ``start``: an addition is applied when its lines are
    there, a deletion when its lines are not, a replacement by the side that is."""
    found_after = bool(h.after) and _at(lines, start, h.after)
    found_before = bool(h.before) and _at(lines, start, h.before)
    if found_after or found_before:
        status, block = (APPLIED, h.after) if found_after else (NOT_APPLIED, h.before)
        kind = "patched" if found_after else "original"
        return _Verdict(status, start, len(block), f"{kind} lines found at {start + 1}-"
                        f"{start + len(block)}{_STATED}")
    if not h.before:
        return _Verdict(NOT_APPLIED, start, 0, f"the added lines are not at line {start + 1}{_STATED}")
    if not h.after:
        return _removal_elsewhere(h, lines, start)
    return _Verdict(CONFLICT, None, 0, "neither the original nor the patched lines are at line "
                    f"{start + 1}{_STATED}")


def _removal_elsewhere(h: Hunk, lines: list[str], start: int) -> _Verdict:
    """A context-free removal whose lines are not where it says: absent from the file,
    it is applied; still elsewhere (the file moved under it), neither side is known,
    as ``git apply --unidiff-zero`` and its ``-R`` cannot tell either."""
    found = _Image(lines).starts(h.before, False, False)
    if not found:
        return _Verdict(APPLIED, start, 0, f"the removed lines are not in the file{_STATED}")
    at = _nearest(found, start)
    return _Verdict(CONFLICT, None, 0, f"the removed lines are not at line {start + 1} but at "
                    f"{at + 1}-{at + len(h.before)}, so whether they were removed is unknown"
                    f"{_STATED}")


def _judge_stated(hunks: Sequence[Hunk], lines: list[str]) -> list[_Verdict]:
    """Hunks without context, each judged at the line it names, shifted by the earlier
    hunks found applied (``diff -U0`` output says nothing else about where it goes)."""
    out, shift = [], 0
    for h in hunks:
        verdict = _stated_verdict(h, lines, _stated(h.source_start, len(h.before)) + shift)
        out.append(verdict)
        shift += len(h.after) - len(h.before) if verdict.status == APPLIED else 0
    return out


def _pin_note(image: _Image, h: Hunk) -> str:
    """Why a pinned hunk found nowhere may still have its lines in the file."""
    beginning, end = _anchors(h.source_start, h.trailing)
    if not (beginning or end) or not (image.starts(h.before, False, False)
                                      or image.starts(h.after, False, False)):
        return ""
    where = "as the whole file" if beginning and end else (
        "at the start of the file" if beginning else "at the end of the file")
    return f" (its lines occur, but git apply matches this hunk only {where})"


def _choose(h: Hunk, befores: list[int], afters: list[int], whole: str | None,
            hint: int) -> _Verdict:
    """One hunk's verdict from where its sides fit; ``whole``: what the file's diff as a
    whole says, when git decides it one way only."""
    note = ""
    if whole is not None:
        pick = whole
        if befores and afters:
            note = f" (the other version occurs too, but git apply{' -R' * (whole == APPLIED)} " \
                   "of the file's diff succeeds and the other way does not)"
    elif befores and afters:
        nearer_after = abs(_nearest(afters, hint) - hint) <= abs(_nearest(befores, hint) - hint)
        pick = APPLIED if nearer_after else NOT_APPLIED
        note = " (both versions occur; the one nearest the hunk's lines counts)"
    else:
        pick = APPLIED if afters else NOT_APPLIED
    found, block = (afters, h.after) if pick == APPLIED else (befores, h.before)
    kind = "patched" if pick == APPLIED else "original"
    if not found:
        return _Verdict(pick, None, 0, f"the {kind} lines are not found on their own, but git apply"
                        f"{' -R' * (pick == APPLIED)} of the file's diff succeeds")
    start = _nearest(found, hint)
    return _Verdict(pick, start, len(block),
                    f"{kind} lines found at {start + 1}-{start + len(block)}{note}")


def _judge_floating(hunks: Sequence[Hunk], lines: list[str]) -> list[_Verdict]:
    """Hunks with context, as ``git apply --check`` (-R) judges them: the file's diff
    as a whole first, else each hunk alone."""
    image = _Image(lines)
    forward = _apply(lines, [_frag(h, False) for h in hunks], False) is not None
    reverse = _apply(lines, [_frag(h, True) for h in hunks], False) is not None
    whole = NOT_APPLIED if forward and not reverse else APPLIED if reverse and not forward else None
    out, shift = [], 0
    for h in hunks:
        befores = image.starts(h.before, *_anchors(h.source_start, h.trailing))
        afters = image.starts(h.after, *_anchors(h.target_start, h.trailing))
        if whole is None and not befores and not afters:
            verdict = _Verdict(CONFLICT, None, 0, "neither the original nor the patched lines are "
                               f"there (edited otherwise){_pin_note(image, h)}")
        else:
            verdict = _choose(h, befores, afters, whole, max(h.source_start - 1, 0) + shift)
        out.append(verdict)
        shift += len(h.after) - len(h.before) if verdict.status == APPLIED else 0
    return out


def _judge_lines(diff: _Diff, lines: list[str] | None, zero: bool) -> list[_Verdict]:
    """Every hunk of one file's diff against the file's lines (None: absent)."""
    if lines is None:
        return [_missing(diff)] * len(diff.hunks)
    if diff.is_new == 1 or diff.is_delete == 1:
        return [_whole_file(diff, lines)] * len(diff.hunks)
    return _judge_stated(diff.text, lines) if zero else _judge_floating(diff.text, lines)


# -- the tree, and what an earlier diff sees of it -------------------------------------


def _read(store: FileStore, path: str) -> list[str] | None:
    """The file's lines as git holds them (a byte-order mark is part of the first),
    None when missing; ``SourceError`` for a file that cannot be used or is not text."""
    try:
        got = store.get(path)
    except MissingFile:
        return None
    text = got.text()  # SourceError for binary or non-UTF-8 content, as file checks say
    return _split(text)


class _Tree:
    """The tree behind a store, with files a later diff of the patch changed put back
    as they were before it (``over``: path → lines, None when absent)."""

    def __init__(self, store: FileStore, over: dict[str, list[str] | None] | None = None) -> None:
        self.store = store
        self.over = dict(over or {})

    def lines(self, path: str) -> list[str] | None:
        return self.over[path] if path in self.over else _read(self.store, path)

    def present(self, path: str) -> bool:
        """``path`` is there (its bytes alone: a pure rename needs no text)."""
        if path in self.over:
            return self.over[path] is not None
        try:
            self.store.get(path)
        except MissingFile:
            return False
        return True

    def view(self, names: Iterable[str]) -> dict[str, list[str] | None]:
        return {name: self.lines(name) for name in names}


def _statuses(diff: _Diff, verdicts: Sequence[_Verdict], read: str | None = None) -> list[HunkStatus]:
    return [HunkStatus(h, v.status, v.lines, v.reason, read=read)
            for h, v in zip(diff.hunks, verdicts, strict=True)]


def _judge_diff(diff: _Diff, tree: _Tree, zero: bool) -> tuple[list[HunkStatus], list[_Verdict]]:
    """Every hunk of one file's diff in the tree (``unusable`` when a file it needs
    cannot be used, or the diff is binary), with the verdicts behind them."""
    if diff.binary:
        reason = f"{diff.path} has a binary diff, whose content cannot be checked"
        return [HunkStatus(h, UNUSABLE, None, reason) for h in diff.hunks], []
    try:
        if diff.renamed:
            return _renamed(diff, tree, zero)
        lines, read = tree.lines(diff.path), diff.path
        if lines is None and diff.old_path is not None:
            found = tree.lines(diff.old_path)
            if found is not None:
                lines, read = found, diff.old_path
        verdicts = _judge_lines(diff, lines, zero)
        return _statuses(diff, verdicts, read=read), verdicts
    except SourceError as exc:
        return [HunkStatus(h, UNUSABLE, None, exc.sentence, read=exc.path) for h in diff.hunks], []


def _renamed(diff: _Diff, tree: _Tree, zero: bool) -> tuple[list[HunkStatus], list[_Verdict]]:
    """A git rename, decided as ``git apply`` / ``git apply -R`` decide it: the name
    the tree has says which side it is on, and a hunk is read from that file."""
    old, new = diff.old_path or "", diff.path
    here = [p for p in (old, new) if tree.present(p)]
    if len(here) != 1:
        reason = (f"both {old} and {new} are in the tree (the patch renames {old})" if here
                  else f"neither {old} nor {new} is in the tree")
        return [HunkStatus(h, CONFLICT, None, reason) for h in diff.hunks], []
    if here == [old]:
        want, note = NOT_APPLIED, f"{old}, not yet renamed to {new}"
    else:
        want, note = APPLIED, f"{new}, renamed from {old}"
    if not diff.text:  # a pure rename: presence is all git checks
        return [HunkStatus(h, want, None, f"{note}, is in the tree", read=here[0])
                for h in diff.hunks], [_Verdict(want, None, 0, "")]
    verdicts = _judge_lines(diff, tree.lines(here[0]), zero)
    undone = "rename" if want == NOT_APPLIED else "change"
    out = [HunkStatus(h, v.status, v.lines, f"{note}: {v.reason}", read=here[0])
           if v.status in (want, CONFLICT) else
           HunkStatus(h, CONFLICT, None, f"{note}: {v.reason}, so the patch's {undone} is missing "
                      "(neither applied nor not applied)", read=here[0])
           for h, v in zip(diff.hunks, verdicts, strict=True)]
    return out, [_Verdict(s.status, v.start, v.size, v.reason) for s, v in zip(out, verdicts, strict=True)]


# -- several diffs of one file: a series ------------------------------------------------


def _git_apply(view: dict[str, list[str] | None], diff: _Diff, reverse: bool,
               zero: bool) -> dict[str, list[str] | None] | None:
    """What ``git apply`` (``-R``) of one file's diff changes in ``view`` (the files it
    names), or None when git refuses it."""
    old, new = (diff.old_path or diff.path) if diff.renamed else diff.path, diff.path
    is_new, is_delete = diff.is_new, diff.is_delete
    if reverse:
        old, new, is_new, is_delete = new, old, is_delete, is_new
    lines = view.get(old)
    if (lines is None and not is_new) or (lines is not None and is_new == 1):
        return None
    if diff.renamed and view.get(new) is not None:
        return None
    out = _apply(lines or [], [_frag(h, reverse) for h in diff.text], zero)
    if out is None or (is_delete == 1 and out):
        return None
    changes: dict[str, list[str] | None] = {old: None} if diff.renamed or is_delete == 1 else {}
    if is_delete != 1:
        changes[new] = out
    return changes


def _run(view: dict[str, list[str] | None], diffs: Iterable[_Diff], reverse: bool,
         zero: bool) -> bool:
    """``git apply`` (``-R``) of the diffs in turn succeeds on ``view``."""
    view = dict(view)
    for diff in diffs:
        changes = _git_apply(view, diff, reverse, zero)
        if changes is None:
            return False
        view.update(changes)
    return True


_MAX_REPLAYS = 64
"""Split points tried in full at most; a series with more candidates is not judged
(each try replays the whole series, so the cost would grow with its square)."""
_AMBIGUOUS = -1
"""Several split points fit and the whole series applies neither way."""
_TOO_MANY = -2
"""More split points to try than ``_MAX_REPLAYS``."""


def _series_split(view: dict[str, list[str] | None], diffs: Sequence[_Diff], zero: bool) -> int | None:
    """The *j* for which the tree is the series after its first *j* diffs (``git apply
    -R`` of those, last first, and ``git apply`` of the rest both succeed), or None when
    none fits. When several fit, the whole series decides, as ``git apply`` of the mbox
    would: 0 when it applies forward, all when it applies in reverse, else
    ``_AMBIGUOUS``. Only a *j* whose two neighbouring diffs fit the tree as it is is
    tried in full, and at most ``_MAX_REPLAYS`` of them (else ``_TOO_MANY``)."""
    near = [j for j in range(len(diffs) + 1)
            if (j == len(diffs) or _git_apply(view, diffs[j], False, zero) is not None)
            and (j == 0 or _git_apply(view, diffs[j - 1], True, zero) is not None)]
    if len(near) > _MAX_REPLAYS:
        return _TOO_MANY
    fits = [j for j in near
            if _run(view, reversed(diffs[:j]), True, zero) and _run(view, diffs[j:], False, zero)]
    if len(fits) <= 1:
        return fits[0] if fits else None
    if 0 in fits:  # the whole series applies forward
        return 0
    if len(diffs) in fits:  # ... or in reverse
        return len(diffs)
    return _AMBIGUOUS


def _series_verdicts(view: dict[str, list[str] | None], diffs: Sequence[_Diff], split: int,
                     zero: bool) -> list[list[HunkStatus]]:
    """The first ``split`` diffs applied, the rest not; each hunk's lines where the tree
    still shows them (a later diff may have rewritten them, an earlier one may be due
    to write what they need)."""
    note = (f" (of the patch's {len(diffs)} diffs of {diffs[-1].path}, the first {split} "
            f"{'is' if split == 1 else 'are'} applied)")
    out = []
    for i, diff in enumerate(diffs):
        status = APPLIED if i < split else NOT_APPLIED
        name = diff.path if status == APPLIED or not diff.renamed else diff.old_path or diff.path
        lines = view.get(name)
        image = _Image(lines) if lines is not None else None
        statuses = []
        for h in diff.hunks:
            block, pos = (h.after, h.target_start) if status == APPLIED else (h.before, h.source_start)
            pinned = (False, False) if zero else _anchors(pos, h.trailing)
            found = image.starts(block, *pinned) if image and h.header and block else []
            if found:
                start = _nearest(found, max(pos - 1, 0))
                kind = "patched" if status == APPLIED else "original"
                statuses.append(HunkStatus(h, status, (start + 1, start + len(block)),
                                           f"{kind} lines found at {start + 1}-{start + len(block)}"
                                           f"{note}", read=name))
            elif not h.header or not block:
                statuses.append(HunkStatus(h, status, None, f"{status} in turn{note}", read=name))
            else:
                later = ("applied; a later diff of the same file in the patch changed these lines "
                         "again" if status == APPLIED else "not applied; an earlier diff of the same "
                         "file in the patch changes these lines first")
                statuses.append(HunkStatus(h, status, None, later + note, read=name))
        out.append(statuses)
    return out


def _undo(diff: _Diff, verdicts: Sequence[_Verdict], tree: _Tree,
          zero: bool) -> dict[str, list[str] | None]:
    """The files as they were before ``diff``, as far as it is applied: the whole diff
    reversed as git would, else its applied hunks put back where they were found."""
    if not verdicts or all(v.status != APPLIED for v in verdicts):
        return {}
    view = tree.view(diff.names)
    if all(v.status == APPLIED for v in verdicts):
        changes = _git_apply(view, diff, True, zero)
        if changes is not None:
            return changes
    lines = view.get(diff.path)
    if lines is None or diff.renamed:
        return {}
    done = sorted(((v.start, h) for h, v in zip(diff.text, verdicts, strict=False)
                   if v.status == APPLIED and v.start is not None), key=lambda p: -p[0])
    out = list(lines)
    limit = len(out) + 1
    for start, h in done:
        if start + len(h.after) > limit or not _at(out, start, h.after):
            return {}
        out[start : start + len(h.after)] = h.before
        limit = start
    return {diff.path: out}


def _judge_series(diffs: Sequence[_Diff], store: FileStore, zero: bool) -> list[list[HunkStatus]]:
    """Several diffs of the same file(s), in patch order (see the module notes)."""
    tree = _Tree(store)
    try:
        view = tree.view(dict.fromkeys(n for d in diffs for n in d.names))
        split = _series_split(view, diffs, zero)
    except SourceError:
        split = None  # judged diff by diff below, where the file's reason is given
    if split in (_AMBIGUOUS, _TOO_MANY):
        reason = ("series ambiguous: several points fit" if split == _AMBIGUOUS else
                  f"series too ambiguous: more than {_MAX_REPLAYS} split points to try")
        return [[HunkStatus(h, CONFLICT, None, reason) for h in d.hunks] for d in diffs]
    if split is not None:
        return _series_verdicts(view, diffs, split, zero)
    out: list[list[HunkStatus]] = []
    for diff in reversed(diffs):
        statuses, verdicts = _judge_diff(diff, tree, zero)
        out.append(statuses)
        with suppress(SourceError):
            tree = _Tree(store, tree.over | _undo(diff, verdicts, tree, zero))
    return out[::-1]


def _series(diffs: Sequence[_Diff]) -> list[list[int]]:
    """The diffs grouped by the files they share (a rename links its two names), each
    group in patch order; a binary diff or a copy stands alone."""
    parent = list(range(len(diffs)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[str, int] = {}
    for i, diff in enumerate(diffs):
        if diff.binary or (diff.old_path is not None and not diff.renamed):
            continue
        for name in diff.names:
            if name in owner:
                parent[root(i)] = root(owner[name])
            owner[name] = i
    groups: dict[int, list[int]] = {}
    for i in range(len(diffs)):
        groups.setdefault(root(i), []).append(i)
    return list(groups.values())


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
    so they are counted, not reported as missing files (a binary diff outside too)."""
    diffs = _parse(data, strip)
    zero = _zero(diffs)
    inside = [d for d in diffs if d.path.startswith(within)]
    judged: dict[int, list[HunkStatus]] = {}
    for group in _series(inside):
        if len(group) == 1:
            judged[group[0]] = _judge_diff(inside[group[0]], _Tree(store), zero)[0]
            continue
        for i, statuses in zip(group, _judge_series([inside[i] for i in group], store, zero),
                               strict=True):
            judged[i] = statuses
    hunks = tuple(s for i in range(len(inside)) for s in judged[i])
    return PatchStatus(hunks, sum(len(d.hunks) for d in diffs) - len(hunks))


def tally(statuses: Iterable[HunkStatus]) -> dict[str, int]:
    """Counts per status: the three verdicts always, ``unusable`` only when some are."""
    out = {APPLIED: 0, NOT_APPLIED: 0, CONFLICT: 0}
    for s in statuses:
        out[s.status] = out.get(s.status, 0) + 1
    return out
