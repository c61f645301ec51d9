"""What an inventory lists: entries with their type, size and mtime, and the
``Inventory`` interface. Shared by the directory walk (``dirinventory``) and the
wheel listing (``inventory``), which also re-exports these names."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pp1audit.sources import DEVICE as DEVICE  # the type names live with the sources
from pp1audit.sources import DIR as DIR
from pp1audit.sources import FIFO as FIFO
from pp1audit.sources import FILE as FILE
from pp1audit.sources import OTHER as OTHER
from pp1audit.sources import SOCKET as SOCKET
from pp1audit.sources import SYMLINK as SYMLINK
from pp1audit.sources import kind_of_mode as kind_of_mode

if TYPE_CHECKING:
    pass


UNREADABLE = "entry that could not be examined"
"""The kind of an entry the listing found but could not ``lstat`` or, for a
directory, list: its ``error`` says why. Never silently dropped: what such a
directory holds was not verified, and a tree digest without it is not the tree's."""






MAX_DEPTH = 128
"""How many directories below the top the walk descends: it holds one descriptor
per level (``ulimit -n`` is often 1024, and the hashing threads open files
meanwhile). A deeper directory is an ``UNREADABLE`` entry, never a failed run;
no installed package comes near it."""

REPLACED = "replaced since it was listed: no longer a directory (a symlink?); not followed"
"""Why a directory the walk was to list is not: its name no longer holds a directory."""












def what_it_is(e: Entry) -> str:
    """``is a fifo`` / ``is a symlink``…, or for an entry that could not be examined,
    ``could not be examined (why)``: a message reads "vllm/x.pyc could not be
    examined (…)", never "is a entry that could not be examined"."""
    if e.kind == UNREADABLE:
        return f"could not be examined ({e.error})" if e.error else "could not be examined"
    return f"is a {e.kind}"








@dataclass(frozen=True, slots=True)
class Entry:
    """One non-directory entry: logical path, type, size, and mtime on disk (None in a wheel)."""

    path: str
    kind: str
    size: int
    mtime: int | None = None
    ref: str = ""
    """Where to read it: an absolute OS path, or the zip member name."""
    link: str | None = None
    """A symbolic link's target (never followed)."""
    error: str | None = None
    """Why an ``UNREADABLE`` entry could not be examined (a directory's path ends in ``/``)."""
    ident: tuple[int, int] | None = None
    """``(st_dev, st_ino)`` as listed on disk: the file later opened must be this one,
    or a directory on its path was swapped (for a symlink leading out) since."""
    root: str | None = None
    """The resolved root it was listed in: where a swapped path leads is judged against it."""









class Inventory:
    """Lists entries of a directory or a wheel; never opens a file."""

    kind: str
    location: str

    def children(self, top: str = "") -> list[tuple[str, str]]:
        """``(name, kind)`` of the entries directly in ``top`` ('' = the root), sorted."""
        raise NotImplementedError

    def walk(self, top: str, found: Callable[[Entry], None] | None = None) -> list[Entry]:
        """Every non-directory entry below directory ``top``, sorted by path.

        ``found`` is called with each entry as soon as it is listed (in no
        particular order), so hashing can start before the listing ends.
        """
        raise NotImplementedError

    def entry(self, path: str) -> Entry | None:
        """The entry at ``path``, or None when absent (``..`` paths allowed on disk only)."""
        raise NotImplementedError


