"""Reading a file that may be hostile: the one primitive every reader uses.

Files of an audited tree, files the user names (manifest, ``--check``,
``--config``) and entries of the download cache all get the same care, so it
lives once: the open never blocks (a FIFO swapped in would hang ``read``
forever), a final symlink is not followed unless asked, the type is checked on
the open descriptor (what was ``stat``-ed before may have been replaced), and
reading stops at a size cap (``/dev/zero`` or a sparse 8 GB file would exhaust
memory). Callers turn the exceptions into their own one-line errors.

``O_NOFOLLOW`` guards only the last component of a path: a directory on it
swapped for a symlink (``mv pkg/d …; ln -s /outside pkg/d``) between a
listing and the open is followed. So a caller names the directory the file
must be in (``within``): the kernel says where the descriptor really leads
(``/proc/self/fd``), and a file opened elsewhere is closed unread. A caller
that listed the file passes the identity it listed too (``same``): when the
``fstat`` made anyway matches, the question needs no system call.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from pp1audit.errors import TargetError

BLOCK = 1 << 20
"""Read size: large blocks keep syscalls few."""


class NotRegular(Exception):
    """The open descriptor is not a regular file; ``mode`` says what it is."""

    def __init__(self, mode: int) -> None:
        super().__init__(mode)
        self.mode = mode


class Elsewhere(Exception):
    """The open descriptor leads outside ``within`` (``where``: the real path the
    kernel gives), or, not being the file listed (``same``), to a place the
    system cannot say (``where`` None). Nothing was read."""

    def __init__(self, where: str | None) -> None:
        super().__init__(where)
        self.where = where


class TooLarge(Exception):
    """The file holds more than the cap; ``size`` is what was seen (at least)."""

    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.size = size


def fd_path(fd: int) -> str | None:
    """Where an open descriptor really leads (symlinks resolved by the kernel at the
    open, so no later swap changes it), or None when the system cannot say (no
    ``/proc``; a path too long; a non-Linux system)."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None


RESOLVE_TRIES = 16
"""How often ``realpath`` resolves a path again when a link on it changed mid-way."""


def realpath(path: str | os.PathLike[str]) -> str:
    """``os.path.realpath``, which a symbolic link swapped while it is resolved cannot
    crash: the standard one ``lstat``s a component, then ``readlink``s it, and raises
    ``OSError`` (EINVAL) when the link became a directory in between (seen on a tree
    whose links were being exchanged: 4 of 80 ``check --record`` runs ended in an
    internal error). It is resolved again, as of a later moment; a path that changes
    under every one of ``RESOLVE_TRIES`` tries is a ``TargetError`` (exit 2: a tree
    that keeps changing cannot be judged), never an uncaught exception."""
    for _ in range(RESOLVE_TRIES):
        try:
            return os.path.realpath(path)
        except OSError:
            continue
    raise TargetError(f"{path}: changed while it was resolved, {RESOLVE_TRIES} times "
                      "(a symbolic link on it is being swapped): not judged")


def is_within(path: str, root: str) -> bool:
    """True when the resolved ``path`` is ``root`` or below it."""
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def check_place(fd: int, st: os.stat_result | None, within: str | None,
                same: tuple[int, int] | None) -> None:
    """``Elsewhere`` unless the descriptor is inside ``within`` (no check without one).

    The identity the listing found settles it without a system call: the file
    listed inside is the file opened. Otherwise (a directory on the path
    swapped; a file renamed over; a file system whose ``fstat`` and ``lstat``
    disagree, as overlayfs did before Linux 4.19) the kernel says where the
    descriptor leads, and inside is fine. When it cannot (no ``/proc``), a
    caller that resolved the path itself (no ``same``) keeps its answer; one
    holding an identity that no longer matches may not read. ``st`` is the
    descriptor's ``fstat`` (None: compare no identity); the walk's directories and
    ``DirInventory.entry`` ask it too, so the question is written once."""
    if within is None or (same is not None and st is not None and (st.st_dev, st.st_ino) == same):
        return
    where = fd_path(fd)
    if where is None and same is None:
        return
    if where is None or not is_within(where, within):
        raise Elsewhere(where)


def open_regular(path: str | Path, *, follow: bool = False, within: str | None = None,
                 same: tuple[int, int] | None = None) -> tuple[int, os.stat_result]:
    """A descriptor open for reading on the regular file at ``path``, and its ``fstat``.

    The open never blocks, and the type is judged on the descriptor. ``within``
    (a resolved directory) says where the file must be, ``same`` (the
    ``(st_dev, st_ino)`` a listing found there) spares asking: ``check_place``. ``NotRegular``,
    ``Elsewhere`` (the descriptor is closed, nothing read) or ``OSError`` from
    the system (a final symlink is ``ELOOP`` unless ``follow``). The caller
    closes the descriptor.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        check_place(fd, st, within, same)
    except BaseException:
        os.close(fd)
        raise
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise NotRegular(st.st_mode)
    return fd, st


def read_regular(path: str | Path, limit: int, *, follow: bool = False,
                 within: str | None = None, same: tuple[int, int] | None = None) -> bytes:
    """The whole content of the regular file at ``path``, at most ``limit`` bytes.

    ``NotRegular``, ``Elsewhere`` (outside ``within``) or ``TooLarge`` as above;
    ``OSError`` from the system (a final symlink is ``ELOOP`` unless ``follow``).
    """
    fd, st = open_regular(path, follow=follow, within=within, same=same)
    try:
        if st.st_size > limit:
            raise TooLarge(st.st_size)
        chunks = []
        total = 0
        while chunk := os.read(fd, BLOCK):
            total += len(chunk)
            if total > limit:  # grew while being read
                raise TooLarge(total)
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)
