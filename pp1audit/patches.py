"""Is a patch in a tree? Hunk by hunk: ``applied``, ``not applied`` or ``conflict``.

An audit says things like "donor patch 0055 is not applied in this image". That
is checkable without running ``patch``: each hunk has a *before* block (context
and removed lines) and an *after* block (context and added lines). In a tree
where the hunk is applied the after block is present; where it is not, the
before block is; where neither is, the region was edited some other way — a
conflict a human must look at. The patch is parsed with ``unidiff`` (a real
unified-diff parser, git extended headers included), never by hand.

Matching ignores line endings and trailing whitespace; when a block occurs more
than once the occurrence nearest the hunk's own line numbers is reported. As
``git apply`` does, a hunk with context on one side only is anchored on the
other: without trailing context it ends at the end of the file, without leading
context it starts at line 1 (a hunk without any context, as ``diff -U0`` writes,
floats). A whole-file hunk (a file the patch adds or deletes) must match the
whole file.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pp1audit.errors import MissingFile, SourceError
from pp1audit.store import FileStore

APPLIED = "applied"
NOT_APPLIED = "not applied"
CONFLICT = "conflict"
DEV_NULL = "/dev/null"


class PatchError(Exception):
    """The bytes are not a usable unified diff; the message is one line."""


@dataclass(frozen=True)
class Hunk:
    """One hunk, reduced to what status needs: where it is, and its two sides."""

    path: str
    """File the hunk changes, after stripping (the new name for a rename)."""
    old_path: str | None
    """Original name when it differs (rename), or None."""
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


@dataclass(frozen=True)
class HunkStatus:
    """The verdict for one hunk in one tree, with where its text was found."""

    hunk: Hunk
    status: str
    lines: tuple[int, int] | None
    reason: str

    @property
    def label(self) -> str:
        """``path#index`` — how messages and check ids name a hunk (unique in a patch)."""
        return f"{self.hunk.path}#{self.hunk.index}"


def _strip(name: str, strip: int) -> str | None:
    if name == DEV_NULL:
        return None
    parts = name.split("/")
    if strip >= len(parts):
        raise PatchError(f"cannot strip {strip} components from '{name}'")
    return "/".join(parts[strip:])


def parse_patch(data: bytes, strip: int = 1) -> list[Hunk]:
    """Every hunk of a unified diff (git format-patch mail text is fine)."""
    from unidiff.errors import UnidiffParseError
    from unidiff.patch import PatchSet

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PatchError(f"patch is not UTF-8 text (byte {exc.start})") from None
    try:
        patchset: Any = PatchSet(text)
    except UnidiffParseError as exc:
        raise PatchError(f"not a unified diff: {exc}") from None
    hunks: list[Hunk] = []
    per_path: dict[str, int] = {}
    for pfile in patchset:
        source = _strip(pfile.source_file, strip) if pfile.source_file else None
        target = _strip(pfile.target_file, strip) if pfile.target_file else None
        path = target or source
        if path is None:
            raise PatchError("a file diff names /dev/null on both sides")
        if pfile.is_binary_file:
            raise PatchError(f"{path}: binary diffs cannot be checked")
        for h in pfile:
            per_path[path] = index = per_path.get(path, 0) + 1
            before = tuple(ln.value.rstrip("\r\n") for ln in h if ln.is_context or ln.is_removed)
            after = tuple(ln.value.rstrip("\r\n") for ln in h if ln.is_context or ln.is_added)
            leading, trailing = _context_edges(h)
            hunks.append(Hunk(
                path=path, old_path=source if source and source != path else None, index=index,
                header=f"@@ -{h.source_start},{h.source_length} +{h.target_start},{h.target_length} @@",
                source_start=h.source_start, target_start=h.target_start,
                before=before, after=after,
                new_file=bool(pfile.is_added_file), deleted_file=bool(pfile.is_removed_file),
                at_start=leading == 0 < trailing, at_end=trailing == 0 < leading,
            ))
    if not hunks:
        raise PatchError("no hunks found: not a unified diff")
    return hunks


def _context_edges(hunk: Any) -> tuple[int, int]:
    """Context lines before the first change and after the last one."""
    kinds = [ln.is_context for ln in hunk if ln.is_context or ln.is_added or ln.is_removed]
    changed = [i for i, context in enumerate(kinds) if not context]
    if not changed:
        return len(kinds), 0
    return changed[0], len(kinds) - 1 - changed[-1]


def _find(lines: list[str], block: tuple[str, ...]) -> list[int]:
    """0-based starts of ``block`` in ``lines`` (trailing whitespace ignored)."""
    if not block:
        return []
    want = [b.rstrip() for b in block]
    have = [ln.rstrip() for ln in lines]
    n = len(want)
    first = want[0]
    return [i for i in range(len(have) - n + 1) if have[i] == first and have[i : i + n] == want]


def _anchored(hunk: Hunk, lines: list[str], block: tuple[str, ...]) -> list[int]:
    """0-based starts of ``block`` where the hunk may apply (see the anchors above)."""
    starts = _find(lines, block)
    if hunk.at_start:
        starts = [s for s in starts if s == 0]
    if hunk.at_end:
        starts = [s for s in starts if s + len(block) == len(lines)]
    return starts


def _same(lines: list[str], block: tuple[str, ...]) -> bool:
    """The whole file is ``block`` (trailing whitespace ignored)."""
    return [ln.rstrip() for ln in lines] == [b.rstrip() for b in block]


def _nearest(starts: list[int], hint: int) -> int:
    return min(starts, key=lambda s: (abs(s + 1 - hint), s))


def _read(store: FileStore, path: str) -> list[str] | None:
    """The file's lines, None when missing; ``SourceError`` for unreadable or binary files."""
    try:
        return store.get(path).text_lines()
    except MissingFile:
        return None


def hunk_status(hunk: Hunk, store: FileStore) -> HunkStatus:
    """Judge one hunk against the tree behind ``store``."""
    try:
        lines = _read(store, hunk.path)
        if lines is None and hunk.old_path is not None:
            lines = _read(store, hunk.old_path)
    except SourceError as exc:
        return HunkStatus(hunk, CONFLICT, None, f"{exc.path}: {exc.message}")
    if lines is None:
        if hunk.deleted_file:
            return HunkStatus(hunk, APPLIED, None, f"{hunk.path} is deleted, as the patch does")
        if hunk.new_file:
            return HunkStatus(hunk, NOT_APPLIED, None, f"{hunk.path}, which the patch adds, is absent")
        return HunkStatus(hunk, CONFLICT, None, f"{hunk.path} is missing from the tree")
    if hunk.new_file and not hunk.before:
        if _same(lines, hunk.after):
            return HunkStatus(hunk, APPLIED, (1, len(hunk.after)), "the added file is present")
        return HunkStatus(hunk, CONFLICT, None, "a file the patch adds exists with other content")
    if hunk.deleted_file and not hunk.after:
        if _same(lines, hunk.before):
            return HunkStatus(hunk, NOT_APPLIED, (1, len(hunk.before)),
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
    """Counts per status, all three present."""
    out = {APPLIED: 0, NOT_APPLIED: 0, CONFLICT: 0}
    for s in statuses:
        out[s.status] += 1
    return out
