"""Atomic file output: a reader sees the old file or the whole new one, never half.

Results, reports and manifests are written to a temporary file in the same
directory, flushed and fsynced, then renamed over the destination; on any error
the temporary file is removed, so a failed run leaves nothing behind.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from pp1audit.errors import Pp1Error


def write_atomic(path: Path, data: str | bytes) -> None:
    """Replace ``path`` with ``data`` atomically; one-line ``Pp1Error`` on failure."""
    blob = data.encode("utf-8") if isinstance(data, str) else data
    directory = path.parent if str(path.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise Pp1Error(f"{path}: cannot write: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(blob)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise Pp1Error(f"{path}: cannot write: {exc.strerror}") from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
