"""The content-addressed cache of remote pins, and the error every fetch raises.

A remote pin is a URL and a SHA-256. ``pp1audit fetch`` downloads each pin into
``<cache>/sha256/<digest>``; ``check`` reads only the cache (offline by default),
so a verdict never depends on the network. The cache is trusted for nothing: a
hit is hashed again before use. Temporary files left by a killed run
(``.part-*`` older than ``STALE_PART``) are removed before the next download.

Separate from the downloader (``pp1audit.sources.download``): a check only reads pins
back, offline, and how they got here is the downloader's job. ``FetchError``
lives here because the cache is the one layer every fetching module builds on
(a bad cache entry is reported like a failed download).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import time
from pathlib import Path

from pp1audit.errors import Pp1Error
from pp1audit.sources import kind_of_mode
from pp1audit.sources.safeio import NotRegular, TooLarge, read_regular

MAX_BYTES = 32 * 1024 * 1024
"""Default size cap of a remote pin, downloaded or read back from the cache."""
CACHE_ENV = "PP1AUDIT_CACHE_DIR"
"""Environment variable overriding the default cache directory."""
PART_PREFIX = ".part-"
STALE_PART = 600.0
"""Seconds after which a ``.part-*`` file in the cache is a leftover of a killed run
(a live download rewrites its file far more often than that)."""


class FetchError(Pp1Error):
    """A download failed; the message is one line naming the URL and the reason."""


class CachedTooLarge(FetchError):
    """A cache entry larger than the size cap of this run: it may well be the pin
    (a ``fetch --max-bytes`` with a larger cap put it there), so it is neither read
    nor downloaded again; the message says which setting raises the cap."""

    def __init__(self, shown: str, size: int, cap: int) -> None:
        super().__init__(f"{shown}: cached file of {size} bytes exceeds the size cap of {cap} "
                         f"bytes; not read (raise the cap to at least {size} with --max-bytes "
                         "or [fetch] max_bytes in pp1audit.toml)")


def default_cache_dir() -> Path:
    """``$PP1AUDIT_CACHE_DIR`` or ``<user cache dir>/pp1audit``."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_cache_dir("pp1audit", appauthor=False))


SHOWN_DIR = "<cache>/sha256"
"""How a message names the directory entries are stored in, an entry being
``<cache>/sha256/<hex>`` (``Cache.shown``): never by its path (see ``Cache``)."""


class Cache:
    """Files named by their SHA-256: ``<root>/sha256/<hex>``. Nothing else is ever kept.

    Its errors name an entry as ``<cache>/sha256/<hex>`` (``shown``), never by the
    directory's path: they become the messages of checks, and a report of a closed
    gate (``report --check``) or a JSON result must be the same bytes for every user
    and machine, whose cache directories differ (``~/.cache`` of each). The digest
    names the entry; ``pp1audit fetch`` says which directory ``<cache>`` is."""

    def __init__(self, root: Path, max_bytes: int = MAX_BYTES) -> None:
        self.root = root
        self.max_bytes = max_bytes
        """Largest entry read back (the download cap): a bigger one is never loaded whole."""

    def path_for(self, sha256: str) -> Path:
        """Where the file with this digest lives (whether or not it is there)."""
        return self.root / "sha256" / sha256.lower()

    @staticmethod
    def shown(sha256: str) -> str:
        """How a message names the entry of this digest: ``<cache>/sha256/<hex>``."""
        return f"{SHOWN_DIR}/{sha256.lower()}"

    def lookup(self, sha256: str) -> bytes | None:
        """The cached bytes, re-verified; None when absent.

        ``FetchError`` when an entry exists but is not a regular file, is larger
        than the cap (``CachedTooLarge``), or no longer has its digest (a corrupted
        or tampered cache): it is evidence of a problem, not a miss. The entry is
        opened like a file of an audited tree: never followed if a symlink, never
        blocking (a FIFO would hang the run), re-checked after the open, and read
        at most to the cap (a link to ``/dev/zero`` would otherwise exhaust memory).
        """
        path, shown = self.path_for(sha256), self.shown(sha256)
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise FetchError(f"{shown}: cannot read cached file: {exc.strerror}") from None
        if not stat.S_ISREG(st.st_mode):
            raise self._not_regular(shown, st.st_mode)
        try:
            data = read_regular(path, self.max_bytes)
        except NotRegular as exc:  # swapped after the lstat
            raise self._not_regular(shown, exc.mode) from None
        except TooLarge as exc:  # over this run's cap (safeio checks it on the descriptor)
            raise CachedTooLarge(shown, exc.size, self.max_bytes) from None
        except OSError as exc:
            raise FetchError(f"{shown}: cannot read cached file: {exc.strerror}") from None
        actual = hashlib.sha256(data).hexdigest()
        if actual != sha256.lower():
            raise FetchError(
                f"{shown}: cached file has SHA-256 {actual}, not {sha256}; "
                "delete it and run pp1audit fetch"
            )
        return data

    @staticmethod
    def _not_regular(shown: str, mode: int) -> FetchError:
        return FetchError(f"{shown}: cached entry is a {kind_of_mode(mode)}, not a regular "
                          "file; not opened (delete it and run pp1audit fetch)")


def remove_stale_parts(directory: Path, older_than: float = STALE_PART) -> int:
    """Delete ``.part-*`` files older than ``older_than`` seconds (a killed run's
    leftovers: ``_store`` removes its own on every failure it survives). Best
    effort; returns how many were removed."""
    removed = 0
    now = time.time()
    try:
        names = os.listdir(directory)
    except OSError:
        return 0
    for name in names:
        if not name.startswith(PART_PREFIX):
            continue
        path = directory / name
        with contextlib.suppress(OSError):
            st = path.lstat()
            if now - st.st_mtime > older_than:
                path.unlink()
                removed += 1
    return removed
