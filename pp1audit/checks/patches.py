"""Is a patch in a tree? Hunk by hunk: ``applied``, ``not applied`` or ``conflict``.

An audit says things like "donor patch 0055 is not applied in this image". That
is checkable without running anything: ``patchparse`` reads the patch as git
reads it, ``patchmatch`` judges each file's hunks as ``git apply --check`` (*not
applied*) and its ``-R`` (*applied*) would; neither is a *conflict*, the region
edited otherwise, for a human to look at. This module reads the tree and judges
what spans files:

* A git rename is judged on the name the tree has: only the old name there is
  *not applied* (when its hunks' original lines are), only the new name is
  *applied* (when the patched lines are), both or neither is a conflict. A
  rename without hunks and an empty file created or deleted are judged by
  presence alone.
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

from collections import Counter
from collections.abc import Iterable, Sequence
from contextlib import suppress
from dataclasses import dataclass

from pp1audit.checks.patchmatch import (
    APPLIED,
    CONFLICT,
    NOT_APPLIED,
    Image,
    Verdict,
    anchors,
    apply_frags,
    fits_at,
    fragment,
    git_lines,
    judge_lines,
    nearest,
)
from pp1audit.checks.patchparse import FileDiff, Hunk, context_free, parse
from pp1audit.errors import MissingFile, SourceError
from pp1audit.sources.store import FileStore

UNUSABLE = "unusable"
"""The file the hunk needs could not be used (FIFO, symlink escape...): not judged."""


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


def _read(store: FileStore, path: str) -> list[str] | None:
    """The file's lines as git holds them (a byte-order mark is part of the first),
    None when missing; ``SourceError`` for a file that cannot be used or is not text."""
    try:
        got = store.get(path)
    except MissingFile:
        return None
    text = got.text()  # SourceError for binary or non-UTF-8 content, as file checks say
    return git_lines(text)


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


def _judge_diff(diff: FileDiff, tree: _Tree, zero: bool) -> tuple[list[HunkStatus], list[Verdict]]:
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
        verdicts = judge_lines(diff, lines, zero)
        return [HunkStatus(h, v.status, v.lines, v.reason, read=read)
                for h, v in zip(diff.hunks, verdicts, strict=True)], verdicts
    except SourceError as exc:
        return [HunkStatus(h, UNUSABLE, None, exc.sentence, read=exc.path) for h in diff.hunks], []


def _renamed(diff: FileDiff, tree: _Tree, zero: bool) -> tuple[list[HunkStatus], list[Verdict]]:
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
                for h in diff.hunks], [Verdict(want, None, 0, "")]
    verdicts = judge_lines(diff, tree.lines(here[0]), zero)
    undone = "rename" if want == NOT_APPLIED else "change"
    out = [HunkStatus(h, v.status, v.lines, f"{note}: {v.reason}", read=here[0])
           if v.status in (want, CONFLICT) else
           HunkStatus(h, CONFLICT, None, f"{note}: {v.reason}, so the patch's {undone} is missing "
                      "(neither applied nor not applied)", read=here[0])
           for h, v in zip(diff.hunks, verdicts, strict=True)]
    return out, [Verdict(s.status, v.start, v.size, v.reason) for s, v in zip(out, verdicts, strict=True)]


# -- several diffs of one file: a series ------------------------------------------------


def _git_apply(view: dict[str, list[str] | None], diff: FileDiff, reverse: bool,
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
    out = apply_frags(lines or [], [fragment(h, reverse) for h in diff.text], zero)
    if out is None or (is_delete == 1 and out):
        return None
    changes: dict[str, list[str] | None] = {old: None} if diff.renamed or is_delete == 1 else {}
    if is_delete != 1:
        changes[new] = out
    return changes


def _run(view: dict[str, list[str] | None], diffs: Iterable[FileDiff], reverse: bool,
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


def _series_split(view: dict[str, list[str] | None], diffs: Sequence[FileDiff], zero: bool) -> int | None:
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


def _series_verdicts(view: dict[str, list[str] | None], diffs: Sequence[FileDiff], split: int,
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
        image = Image(lines) if lines is not None else None
        statuses = []
        for h in diff.hunks:
            block, pos = (h.after, h.target_start) if status == APPLIED else (h.before, h.source_start)
            pinned = (False, False) if zero else anchors(pos, h.trailing)
            found = image.starts(block, *pinned) if image and h.header and block else []
            if found:
                start = nearest(found, max(pos - 1, 0))
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


def _undo(diff: FileDiff, verdicts: Sequence[Verdict], tree: _Tree,
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
        if start + len(h.after) > limit or not fits_at(out, start, h.after):
            return {}
        out[start : start + len(h.after)] = h.before
        limit = start
    return {diff.path: out}


def _judge_series(diffs: Sequence[FileDiff], store: FileStore, zero: bool) -> list[list[HunkStatus]]:
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


def _series(diffs: Sequence[FileDiff]) -> list[list[int]]:
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
    diffs = parse(data, strip)
    zero = context_free(diffs)
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
    return {APPLIED: 0, NOT_APPLIED: 0, CONFLICT: 0} | Counter(s.status for s in statuses)
