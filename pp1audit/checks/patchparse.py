"""A unified diff read as ``git apply`` reads it, reduced to what judging a tree needs.

``unidiff`` parses the patch (a real unified-diff parser, git extended headers
included); what it leaves to the reader is taken as git takes it:

* A CR ending a *header* line is dropped, as git drops it, so file names never
  end in ``\\r``; a hunk line keeps its CR (content, compared as git compares it).
  A ``\\ No newline at end of file`` line takes the newline off the line before.
* Quoted names (``"pkg/caf\\303\\251.py"``) are unquoted as git unquotes them.
* A file is created or deleted only when the patch says so (``new file mode``,
  ``deleted file mode``, ``/dev/null``, or, in a non-git diff, the epoch
  timestamp ``diff -N`` writes); a traditional diff that adds to an absent file
  creates it, as git decides. Emptying a file, or filling an empty one, is an
  ordinary change.
* A git rename without hunks, an empty file created or deleted and a binary diff
  each become one pseudo-hunk (nothing else names them); a mode change or a copy
  alone changes nothing a tree's text shows, and is dropped.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

DEV_NULL = "/dev/null"
_EPOCH = re.compile(r"(1969-12-31|1970-01-01) ([0-2][0-9]):([0-5][0-9]):00(?:\.0+)? "
                    r"([-+])([0-2][0-9]):?([0-5][0-9])")
_C_QUOTED = re.compile(r'"(?:[^"\\]|\\[abfnrtv"\\]|\\[0-3][0-7][0-7])*"')
"""A name as git's ``quote_c_style`` writes it: C escapes and octal bytes, nothing else."""


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
class FileDiff:
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


def _unquote(name: str) -> str:
    """A file name as git writes it, unquoted as git unquotes it (``unquote_c_style``:
    C escapes, octal bytes read as UTF-8); an unquoted name is returned as is."""
    if len(name) < 2 or name[0] != '"' or name[-1] != '"':
        return name
    if not _C_QUOTED.fullmatch(name):
        raise PatchError(f"a quoted file name is not written as git quotes it: {name}")
    try:  # the escapes decoded to code points below 256, one per byte, then read as UTF-8
        return name[1:-1].encode().decode("unicode_escape").encode("latin-1").decode()
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


def _file_diff(pfile: Any, strip: int, per_path: dict[str, int]) -> FileDiff | None:
    """One file's diff (``per_path`` numbers hunks across the patch); None for a
    change a tree's text cannot show (a mode change or a copy alone)."""
    source = _strip(pfile.source_file, strip) if pfile.source_file else None
    target = _strip(pfile.target_file, strip) if pfile.target_file else None
    path = target or source
    if path is None:
        raise PatchError("a file diff names /dev/null on both sides")
    header = [line.rstrip("\r\n") for line in (pfile.patch_info or [])]  # git's extended headers
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
        return FileDiff((replace(base, index=per_path[path]),), is_new, is_delete)
    hunks = []
    for h in pfile:
        per_path[path] = index = per_path.get(path, 0) + 1
        before, after, leading, trailing = _sides(h)
        hunks.append(replace(
            base, index=index, source_start=h.source_start, target_start=h.target_start,
            header=f"@@ -{h.source_start},{h.source_length} +{h.target_start},{h.target_length} @@",
            before=before, after=after, leading=leading, trailing=trailing))
    return FileDiff(tuple(hunks), is_new, is_delete)


def parse(data: bytes, strip: int = 1) -> list[FileDiff]:
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


def context_free(diffs: Sequence[FileDiff]) -> bool:
    """The patch has no context line at all and some hunk git would not pin to its
    whole file: ``diff -U0`` wrote it (git would need ``--unidiff-zero``), so its hunks
    are judged where they say. A context-free hunk whose old side starts at line 0 or 1
    and that ends its file's diff is pinned at both ends: plain ``git diff`` writes one
    when it empties, fills or rewrites a small file, judged as git judges it, as the
    whole file."""
    hunks = [(d, h) for d in diffs for h in d.text]
    return not any(h.leading or h.trailing for _, h in hunks) and any(
        h.source_start > 1 or h is not d.text[-1] for d, h in hunks)
