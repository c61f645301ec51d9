"""Writing all of a byte string to a file descriptor, or failing: the one loop.

Apart from ``atomic`` (temporary files, renames, hashing) because the CLI's
stdout goes through it on every run and must not import anything when it
writes: under a memory limit, an import at the moment an error is printed
fails too, and the one-line error became a traceback."""

from __future__ import annotations

import errno
import os
import select


def write_all(fd: int, blob: bytes) -> None:
    """Write all of ``blob`` to ``fd``, or raise ``OSError``: never fewer bytes in silence.

    One ``write`` may take part of the bytes (a file that reaches the size
    limit or fills its disk, a pipe, a signal): the rest is written by the next,
    which then fails with the reason (EFBIG, ENOSPC) when there is one. Python's
    own streams do not always go on: an unbuffered one (``PYTHONUNBUFFERED``)
    drops the tail of a short write and reports success. A descriptor left
    non-blocking by whoever opened it (EAGAIN) is waited on until it can take
    more, and a write that takes nothing at all is an error, not a loop.
    """
    view = memoryview(blob)
    while view:
        try:
            written = os.write(fd, view)
        except BlockingIOError:
            _wait_writable(fd)
            continue
        if written <= 0:
            raise OSError(errno.EIO, "the write made no progress")
        view = view[written:]


def _wait_writable(fd: int) -> None:
    """Block until ``fd`` (a non-blocking pipe or socket) can take more bytes."""
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    poller.poll()
