"""Reading a file that may be hostile: the one primitive every reader uses.

Files of an audited tree, files the user names (manifest, ``--check``,
``--config``) and entries of the download cache all get the same care, so it
lives once: the open never blocks (a FIFO swapped in would hang ``read``
forever), a final symlink is not followed unless asked, the type is checked on
the open descriptor (what was ``stat``-ed before may have been replaced), and
reading stops at a size cap (``/dev/zero`` or a sparse 8 GB file would exhaust
memory). Callers turn the two exceptions into their own one-line errors.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

BLOCK = 1 << 20
"""Read size: large blocks keep syscalls few."""


class NotRegular(Exception):
    """The open descriptor is not a regular file; ``mode`` says what it is."""

    def __init__(self, mode: int) -> None:
        super().__init__(mode)
        self.mode = mode


class TooLarge(Exception):
    """The file holds more than the cap; ``size`` is what was seen (at least)."""

    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.size = size


def open_regular(path: str | Path, *, follow: bool = False) -> tuple[int, os.stat_result]:
    """A descriptor open for reading on the regular file at ``path``, and its ``fstat``.

    The open never blocks, and the type is judged on the descriptor. ``NotRegular``
    (the descriptor is closed) or ``OSError`` from the system (a final symlink is
    ``ELOOP`` unless ``follow``). The caller closes the descriptor.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
    except OSError:
        os.close(fd)
        raise
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise NotRegular(st.st_mode)
    return fd, st


def read_regular(path: str | Path, limit: int, *, follow: bool = False) -> bytes:
    """The whole content of the regular file at ``path``, at most ``limit`` bytes.

    ``NotRegular`` or ``TooLarge`` as above; ``OSError`` from the system (a
    final symlink is ``ELOOP`` unless ``follow``).
    """
    fd, st = open_regular(path, follow=follow)
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
