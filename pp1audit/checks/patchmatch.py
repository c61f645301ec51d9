"""Where a hunk's sides fit in one file's lines, matched as ``git apply`` matches them.

Each hunk of one file's diff is judged in memory as ``git apply --check`` (then
*not applied*) and ``git apply --check -R`` (then *applied*) would judge it:

* Lines are compared as ``git apply`` compares them by default: exactly, bytes
  and line endings included (a CRLF patch matches a CRLF file, not an LF one;
  trailing whitespace counts; a byte-order mark is part of the first line).
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
  git pins to its whole file (plain ``git diff`` writes those when it empties,
  fills or rewrites a small file). A ``-U0`` hunk is judged at the line it
  names, shifted only by the hunks of the same file before it that are applied.
  There git puts an addition. A removal whose lines are not there is applied
  only when they are nowhere in the file: a copy elsewhere may be the line moved
  (git would remove it) or another one, so it is a conflict.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pp1audit.checks.patchparse import FileDiff, Hunk

APPLIED = "applied"
NOT_APPLIED = "not applied"
CONFLICT = "conflict"
_GIT_SPACE = str.maketrans("", "", " \t\n\r")
"""What git's ``isspace`` is (no ``\\v``, no ``\\f``): its line hash skips it."""
_STATED = " (no context: judged at the line the hunk names)"


@dataclass(frozen=True)
class Verdict:
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


@dataclass(frozen=True)
class Frag:
    """A hunk in one direction: git's fragment (``-R`` swaps the sides)."""

    oldpos: int
    newpos: int
    pre: tuple[str, ...]
    post: tuple[str, ...]
    trailing: int


def fragment(hunk: Hunk, reverse: bool) -> Frag:
    """The hunk as git applies it, forward or (``reverse``) as ``-R``."""
    if reverse:
        return Frag(hunk.target_start, hunk.source_start, hunk.after, hunk.before, hunk.trailing)
    return Frag(hunk.source_start, hunk.target_start, hunk.before, hunk.after, hunk.trailing)


def git_lines(text: str) -> list[str]:
    """Lines as git holds them: each with its newline (a last one may lack it)."""
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


class Image:
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

    def find(self, frag: Frag) -> int | None:
        """Where git applies the fragment: the first fit in the order ``find_pos``
        tries lines (its line, one after, one before, two after...)."""
        beginning, end = anchors(frag.oldpos, frag.trailing)
        count = len(self.lines)
        line = 0 if beginning else count - len(frag.pre) if end else max(frag.newpos - 1, 0)
        line = count if line < 0 or line > count else line
        tried = sorted(self._candidates(frag.pre), key=lambda s: (abs(s - line), s < line))
        return next((s for s in tried if self.fits(s, frag.pre, beginning, end)), None)

    def put(self, start: int, frag: Frag) -> None:
        """The fragment applied at ``start``; its lines are marked as written."""
        end = start + len(frag.pre)
        self.lines[start:end] = frag.post
        self.patched[start:end] = [True] * len(frag.post)
        self._where = None


def anchors(oldpos: int, trailing: int) -> tuple[bool, bool]:
    """Where git pins a hunk (not ``--unidiff-zero``): old side at line 0 or 1 → the
    start of the file; no trailing context → its end."""
    return oldpos <= 1, trailing == 0


def _stated(oldpos: int, size: int) -> int:
    """The 0-based line a hunk names (an empty side names the line after which it goes)."""
    return oldpos - 1 if size else oldpos


def fits_at(lines: Sequence[str], start: int, block: tuple[str, ...]) -> bool:
    """``block`` is exactly the lines at ``start``."""
    return start >= 0 and start + len(block) <= len(lines) and tuple(
        lines[start : start + len(block)]) == block


def apply_frags(lines: Sequence[str], frags: Iterable[Frag], zero: bool) -> list[str] | None:
    """The lines after applying the fragments in order as ``git apply`` does (``zero``:
    each at the line it names, shifted by the ones before), or None if one fails."""
    if zero:
        out, shift = list(lines), 0
        for frag in frags:
            start = _stated(frag.oldpos, len(frag.pre)) + shift
            if not fits_at(out, start, frag.pre):
                return None
            out[start : start + len(frag.pre)] = frag.post
            shift += len(frag.post) - len(frag.pre)
        return out
    image = Image(lines)
    for frag in frags:
        found = image.find(frag)
        if found is None:
            return None
        image.put(found, frag)
    return image.lines


def nearest(starts: list[int], hint: int) -> int:
    return min(starts, key=lambda s: (abs(s - hint), s))


# -- one file's hunks ------------------------------------------------------------------


def _missing(diff: FileDiff) -> Verdict:
    """The file is absent: git creates it when the diff may create it, and a diff that
    may delete it is applied."""
    if diff.is_new:
        return Verdict(NOT_APPLIED, None, 0, f"{diff.path}, which the patch adds, is absent")
    if diff.is_delete:
        return Verdict(APPLIED, None, 0, f"{diff.path} is deleted, as the patch does")
    return Verdict(CONFLICT, None, 0, f"{diff.path} is missing from the tree")


def _whole_file(diff: FileDiff, lines: list[str]) -> Verdict:
    """A file the patch creates (or deletes) is there: applied (not applied) only when
    it is exactly the patch's content, as ``git apply -R`` (``git apply``) requires."""
    hunk = diff.hunks[0]
    if diff.is_new == 1:
        if "".join(lines) == "".join(hunk.after):
            return Verdict(APPLIED, 0, len(hunk.after), "the added file is present")
        return Verdict(CONFLICT, None, 0, "a file the patch adds exists with other content")
    if "".join(lines) == "".join(hunk.before):
        return Verdict(NOT_APPLIED, 0, len(hunk.before),
                       f"{diff.path}, which the patch deletes, is still there")
    return Verdict(CONFLICT, None, 0, f"{diff.path}, which the patch deletes, exists with other content")


def _stated_verdict(h: Hunk, lines: list[str], start: int) -> Verdict:
    """A hunk without context at ``start``: an addition is applied when its lines are
    there, a deletion when its lines are not, a replacement by the side that is."""
    found_after = bool(h.after) and fits_at(lines, start, h.after)
    found_before = bool(h.before) and fits_at(lines, start, h.before)
    if found_after or found_before:
        status, block = (APPLIED, h.after) if found_after else (NOT_APPLIED, h.before)
        kind = "patched" if found_after else "original"
        return Verdict(status, start, len(block), f"{kind} lines found at {start + 1}-"
                       f"{start + len(block)}{_STATED}")
    if not h.before:
        return Verdict(NOT_APPLIED, start, 0, f"the added lines are not at line {start + 1}{_STATED}")
    if not h.after:
        return _removal_elsewhere(h, lines, start)
    return Verdict(CONFLICT, None, 0, "neither the original nor the patched lines are at line "
                   f"{start + 1}{_STATED}")


def _removal_elsewhere(h: Hunk, lines: list[str], start: int) -> Verdict:
    """A context-free removal whose lines are not where it says: absent from the file,
    it is applied; still elsewhere (the file moved under it), neither side is known,
    as ``git apply --unidiff-zero`` and its ``-R`` cannot tell either."""
    found = Image(lines).starts(h.before, False, False)
    if not found:
        return Verdict(APPLIED, start, 0, f"the removed lines are not in the file{_STATED}")
    at = nearest(found, start)
    return Verdict(CONFLICT, None, 0, f"the removed lines are not at line {start + 1} but at "
                   f"{at + 1}-{at + len(h.before)}, so whether they were removed is unknown"
                   f"{_STATED}")


def _judge_stated(hunks: Sequence[Hunk], lines: list[str]) -> list[Verdict]:
    """Hunks without context, each judged at the line it names, shifted by the earlier
    hunks found applied (``diff -U0`` output says nothing else about where it goes)."""
    out, shift = [], 0
    for h in hunks:
        verdict = _stated_verdict(h, lines, _stated(h.source_start, len(h.before)) + shift)
        out.append(verdict)
        shift += len(h.after) - len(h.before) if verdict.status == APPLIED else 0
    return out


def _pin_note(image: Image, h: Hunk) -> str:
    """Why a pinned hunk found nowhere may still have its lines in the file."""
    beginning, end = anchors(h.source_start, h.trailing)
    if not (beginning or end) or not (image.starts(h.before, False, False)
                                      or image.starts(h.after, False, False)):
        return ""
    where = "as the whole file" if beginning and end else (
        "at the start of the file" if beginning else "at the end of the file")
    return f" (its lines occur, but git apply matches this hunk only {where})"


def _choose(h: Hunk, befores: list[int], afters: list[int], whole: str | None,
            hint: int) -> Verdict:
    """One hunk's verdict from where its sides fit; ``whole``: what the file's diff as a
    whole says, when git decides it one way only."""
    note = ""
    if whole is not None:
        pick = whole
        if befores and afters:
            note = f" (the other version occurs too, but git apply{' -R' * (whole == APPLIED)} " \
                   "of the file's diff succeeds and the other way does not)"
    elif befores and afters:
        nearer_after = abs(nearest(afters, hint) - hint) <= abs(nearest(befores, hint) - hint)
        pick = APPLIED if nearer_after else NOT_APPLIED
        note = " (both versions occur; the one nearest the hunk's lines counts)"
    else:
        pick = APPLIED if afters else NOT_APPLIED
    found, block = (afters, h.after) if pick == APPLIED else (befores, h.before)
    kind = "patched" if pick == APPLIED else "original"
    if not found:
        return Verdict(pick, None, 0, f"the {kind} lines are not found on their own, but git apply"
                       f"{' -R' * (pick == APPLIED)} of the file's diff succeeds")
    start = nearest(found, hint)
    return Verdict(pick, start, len(block),
                   f"{kind} lines found at {start + 1}-{start + len(block)}{note}")


def _judge_floating(hunks: Sequence[Hunk], lines: list[str]) -> list[Verdict]:
    """Hunks with context, as ``git apply --check`` (-R) judges them: the file's diff
    as a whole first, else each hunk alone."""
    image = Image(lines)
    forward = apply_frags(lines, [fragment(h, False) for h in hunks], False) is not None
    reverse = apply_frags(lines, [fragment(h, True) for h in hunks], False) is not None
    whole = NOT_APPLIED if forward and not reverse else APPLIED if reverse and not forward else None
    out, shift = [], 0
    for h in hunks:
        befores = image.starts(h.before, *anchors(h.source_start, h.trailing))
        afters = image.starts(h.after, *anchors(h.target_start, h.trailing))
        if whole is None and not befores and not afters:
            verdict = Verdict(CONFLICT, None, 0, "neither the original nor the patched lines are "
                              f"there (edited otherwise){_pin_note(image, h)}")
        else:
            verdict = _choose(h, befores, afters, whole, max(h.source_start - 1, 0) + shift)
        out.append(verdict)
        shift += len(h.after) - len(h.before) if verdict.status == APPLIED else 0
    return out


def judge_lines(diff: FileDiff, lines: list[str] | None, zero: bool) -> list[Verdict]:
    """Every hunk of one file's diff against the file's lines (None: absent)."""
    if lines is None:
        return [_missing(diff)] * len(diff.hunks)
    if diff.is_new == 1 or diff.is_delete == 1:
        return [_whole_file(diff, lines)] * len(diff.hunks)
    return _judge_stated(diff.text, lines) if zero else _judge_floating(diff.text, lines)

