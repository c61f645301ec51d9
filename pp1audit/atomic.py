"""Atomic file output: a reader sees the old file or the whole new one, never half.

Results, reports and manifests are written to a temporary file in the same
directory, flushed and fsynced, then renamed over the destination (and the
directory fsynced, so the rename survives a crash); on any error the temporary
file is removed, so a failed run leaves nothing behind. A destination that is a
symlink is followed (the link stays a link), and an existing file keeps its
mode; a new one gets the usual 0666 less the umask.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

from pp1audit.errors import Pp1Error


def _mode_for(path: Path) -> int:
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def write_atomic(path: Path, data: str | bytes) -> None:
    """Replace ``path`` with ``data`` atomically; one-line ``Pp1Error`` on failure."""
    blob = data.encode("utf-8") if isinstance(data, str) else data
    target = Path(os.path.realpath(path)) if os.path.islink(path) else path
    directory = target.parent if str(target.parent) else Path(".")
    mode = _mode_for(target)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise Pp1Error(f"{path}: cannot write: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(blob)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise Pp1Error(f"{path}: cannot write: {exc.strerror}") from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):  # not every file system lets a directory be fsynced
        dfd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
