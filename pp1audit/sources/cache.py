"""The content-addressed cache of remote pins, and the error every fetch raises.

``pp1audit fetch`` stores each pin as ``<cache>/sha256/<digest>``; ``check`` reads
only the cache (offline by default), so a verdict never depends on the network.
The cache is trusted for nothing: a hit is hashed again before use, and only
verified bytes are stored, atomically. Messages name an entry
``<cache>/sha256/<hex>``, never by its path: they become checks' messages, and a
report or a JSON result must be the same bytes on every machine.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
from pathlib import Path

from pp1audit.errors import Pp1Error
from pp1audit.sources import kind_of_mode
from pp1audit.sources.safeio import NotRegular, TooLarge, read_regular

MAX_BYTES = 32 * 1024 * 1024
"""Default size cap of a remote pin, downloaded or read back from the cache."""
CACHE_ENV = "PP1AUDIT_CACHE_DIR"
SHOWN_DIR = "<cache>/sha256"


class FetchError(Pp1Error):
    """A download failed (or a cache entry is unusable): one line naming the URL or entry."""


class CachedTooLarge(FetchError):
    """An entry over this run's cap: maybe the pin itself (a ``fetch --max-bytes``
    with a larger cap put it there), so neither read nor downloaded again."""

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


class Cache:
    """Files named by their SHA-256: ``<root>/sha256/<hex>``. Nothing else is ever kept."""

    def __init__(self, root: Path, max_bytes: int = MAX_BYTES) -> None:
        self.root = root
        self.max_bytes = max_bytes
        """Largest entry read back (the download cap): a bigger one is never loaded whole."""

    def path_for(self, sha256: str) -> Path:
        """Where the file with this digest lives (whether or not it is there)."""
        return self.root / "sha256" / sha256.lower()

    def lookup(self, sha256: str) -> bytes | None:
        """The cached bytes, re-verified; None when absent.

        ``FetchError`` for an entry that is not a regular file, is over the cap
        (``CachedTooLarge``) or lost its digest: evidence of a problem, not a miss.
        Opened like a file of an audited tree: never through a symlink, never
        blocking (a FIFO), read at most to the cap (a link to ``/dev/zero``).
        """
        path, shown = self.path_for(sha256), f"{SHOWN_DIR}/{sha256.lower()}"
        try:
            mode = os.lstat(path).st_mode
            if not stat.S_ISREG(mode):
                raise NotRegular(mode)
            data = read_regular(path, self.max_bytes)
        except FileNotFoundError:
            return None
        except NotRegular as exc:  # at the lstat, or swapped after it
            raise FetchError(f"{shown}: cached entry is a {kind_of_mode(exc.mode)}, not a "
                             "regular file; not opened (delete it and run pp1audit fetch)") from None
        except TooLarge as exc:
            raise CachedTooLarge(shown, exc.size, self.max_bytes) from None
        except OSError as exc:
            raise FetchError(f"{shown}: cannot read cached file: {exc.strerror}") from None
        actual = hashlib.sha256(data).hexdigest()
        if actual != sha256.lower():
            raise FetchError(f"{shown}: cached file has SHA-256 {actual}, not {sha256}; "
                             "delete it and run pp1audit fetch")
        return data

    def store(self, sha256: str, data: bytes) -> Path:
        """Keep ``data`` (verified by the caller) as the entry of ``sha256``: written
        beside it and renamed over it, so that no reader sees a partial entry."""
        import tempfile

        path, tmp = self.path_for(sha256), None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=path.parent, prefix=".part-", delete=False) as fh:
                tmp = fh.name
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(tmp, 0o444)  # evidence: read-only
            os.replace(tmp, path)
        except BaseException as exc:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
            if isinstance(exc, OSError):
                raise FetchError(f"{SHOWN_DIR}: cannot write to the cache: {exc.strerror}") from None
            raise
        return path
