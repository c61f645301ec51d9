"""Reading the files a user names on the command line (manifest, --check, --config).

They get the same care as files of an audited tree: a FIFO, device or
directory is refused before it is opened (a FIFO would block ``read`` forever,
``/dev/zero`` would never end), the open cannot block, and the size is capped.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from pp1audit.errors import Pp1Error
from pp1audit.sources.safeio import NotRegular, TooLarge, read_regular

MAX_INPUT = 16 << 20
"""16 MiB: far above any manifest, report or config file."""


def read_input(path: Path, what: str, limit: int = MAX_INPUT) -> bytes:
    """The bytes of a regular file given by the user; one-line ``Pp1Error`` otherwise."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise Pp1Error(f"{path}: {what} not found") from None
    except OSError as exc:
        raise Pp1Error(f"{path}: cannot read {what}: {exc.strerror}") from None
    if stat.S_ISDIR(st.st_mode):
        raise Pp1Error(f"{path}: is a directory, not a {what}")
    if not stat.S_ISREG(st.st_mode):
        raise Pp1Error(f"{path}: not a regular file; a {what} must be one")
    try:
        return read_regular(path, limit, follow=True)  # the user's own links are followed
    except NotRegular:  # swapped after the stat
        raise Pp1Error(f"{path}: not a regular file; a {what} must be one") from None
    except TooLarge:
        raise Pp1Error(f"{path}: {what} larger than {limit >> 20} MiB") from None
    except OSError as exc:
        raise Pp1Error(f"{path}: cannot read {what}: {exc.strerror}") from None
