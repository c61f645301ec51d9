"""Pinned remote files: a content-addressed cache, and a careful downloader for it.

A remote pin is a URL and a SHA-256. ``pp1audit fetch`` downloads each pin into
``<cache>/sha256/<digest>``; ``check`` reads only the cache (offline by default),
so a verdict never depends on the network. The cache is trusted for nothing: a
hit is hashed again before use.

The downloader is deliberately strict, because the bytes it produces become
evidence:

* https only; plain http solely for loopback addresses (the tests' servers);
  TLS verification always on; every redirect hop obeys the same rule and the
  digest is still enforced on whatever the last hop served;
* connect and read timeouts, and a total deadline for the whole download
  (all tries and redirects), checked between reads: a server dripping a byte
  every few seconds never trips the read timeout but cannot hold a run
  forever; a size cap enforced while streaming (and up front from
  Content-Length);
* bounded retries with exponential backoff on 5xx and connection errors, none on
  4xx (a 404 will not heal);
* the body goes to a temporary file next to its final place, is hashed while
  written, and is renamed into the cache only when the digest matches — no
  partial or unverified file ever lands, whatever fails; temporary files left
  by a killed run (``.part-*`` older than ``STALE_PART``) are removed before the
  next download.

Every failure is a ``FetchError`` whose text is one line. ``requests`` is
imported inside ``download`` only.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import SplitResult, urljoin, urlsplit

from pp1audit.errors import MissingFile, Pp1Error, SourceError
from pp1audit.paths import url_problem
from pp1audit.safeio import NotRegular, TooLarge, read_regular
from pp1audit.sources import Source, kind_of_mode

CHUNK = 64 * 1024
MAX_REDIRECTS = 5
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


class DigestMismatch(FetchError):
    """The server answered, but with other bytes than the pin: a ``fail``, not an ``error``."""

    def __init__(self, url: str, expected: str, actual: str) -> None:
        self.expected = expected
        self.actual = actual
        super().__init__(f"{url}: SHA-256 {actual} differs from the pinned {expected}; not cached")


@dataclass(frozen=True)
class FetchPolicy:
    """Limits of one download. Defaults suit patches and source files."""

    connect_timeout: float = 10.0
    read_timeout: float = 30.0
    max_bytes: int = MAX_BYTES
    attempts: int = 3
    """Tries in all (1 = no retry); only 5xx answers and connection errors are retried."""
    backoff: float = 0.5
    """First wait between tries; doubled each time."""
    total_timeout: float = 120.0
    """Seconds for the whole download, tries and redirects included."""


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

        ``FetchError`` when an entry exists but is not a regular file, is larger
        than the cap, or no longer has its digest (a corrupted or tampered cache):
        it is evidence of a problem, not a miss. The entry is opened like a file of
        an audited tree: never followed if a symlink, never blocking (a FIFO would
        hang the run), re-checked after the open, and read at most to the cap (a
        link to ``/dev/zero`` would otherwise exhaust memory).
        """
        path = self.path_for(sha256)
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise FetchError(f"{path}: cannot read cached file: {exc.strerror}") from None
        if not stat.S_ISREG(st.st_mode):
            raise self._not_regular(path, st.st_mode)
        try:
            data = read_regular(path, self.max_bytes)
        except NotRegular as exc:  # swapped after the lstat
            raise self._not_regular(path, exc.mode) from None
        except TooLarge:
            raise FetchError(f"{path}: cached file exceeds the size cap of "
                             f"{self.max_bytes} bytes; not read") from None
        except OSError as exc:
            raise FetchError(f"{path}: cannot read cached file: {exc.strerror}") from None
        actual = hashlib.sha256(data).hexdigest()
        if actual != sha256.lower():
            raise FetchError(
                f"{path}: cached file has SHA-256 {actual}, not {sha256}; "
                "delete it and run pp1audit fetch"
            )
        return data

    @staticmethod
    def _not_regular(path: Path, mode: int) -> FetchError:
        return FetchError(f"{path}: cached entry is a {kind_of_mode(mode)}, not a regular "
                          "file; not opened (delete it and run pp1audit fetch)")


def is_loopback(host: str | None) -> bool:
    """True for ``localhost`` and loopback IP literals (127.0.0.0/8, ::1)."""
    if not host:
        return False
    if host.lower() == "localhost":
        return True
    import ipaddress

    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _split(url: str) -> SplitResult:
    """``urlsplit`` with the port parsed too; ``FetchError`` for a malformed URL
    (``http://[::1``, a port out of range), which the standard library reports as
    a bare ``ValueError``."""
    problem = url_problem(url)
    if problem is not None:
        raise FetchError(f"{url}: {problem}")
    return urlsplit(url)


def check_url(url: str) -> None:
    """Refuse anything but https (or http to a loopback address), before any socket opens."""
    parts = _split(url)
    scheme = parts.scheme.lower()
    if scheme == "https":
        if not parts.hostname:
            raise FetchError(f"{url}: no host in URL")
        return
    if scheme == "http" and is_loopback(parts.hostname):
        return
    if scheme == "http":
        raise FetchError(f"{url}: plain http refused (https only, except loopback addresses)")
    raise FetchError(f"{url}: scheme '{parts.scheme}' refused (https only)")


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and every exception nested in it (args, cause, context), outermost first."""
    stack: list[BaseException] = [exc]
    seen: set[int] = set()
    while stack:
        e = stack.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        yield e
        stack.extend(a for a in e.args if isinstance(a, BaseException))
        stack.extend(x for x in (e.__cause__, e.__context__) if x is not None)


def _os_reason(exc: BaseException) -> str | None:
    """The innermost OS error's text ("Connection reset by peer"), if one is in the chain."""
    return next((e.strerror for e in _chain(exc) if isinstance(e, OSError) and e.strerror), None)


def _tls_reason(exc: BaseException) -> str:
    """What the ``ssl`` module said, without OpenSSL's decorations: "certificate verify
    failed: self-signed certificate" (not the nested reprs requests wraps it in)."""
    import ssl

    for e in _chain(exc):
        if isinstance(e, ssl.SSLError) and e.strerror:
            text = re.sub(r"^\[SSL(: [A-Z0-9_]+)?\] *", "", e.strerror)
            return re.sub(r" *\(_ssl\.c:\d+\)$", "", text) or e.strerror
    return _one_line(exc)


def _one_line(exc: BaseException) -> str:
    """A requests/urllib3 exception as one short line (they nest and repeat themselves)."""
    text = " ".join(str(exc).split())
    if "Caused by " in text:
        text = text.split("Caused by ", 1)[1]
        while text.endswith(")") and text.count(")") > text.count("("):
            text = text[:-1]  # only the parentheses the cut left unmatched
    return text[:300]


@dataclass(frozen=True)
class Fetched:
    """A verified file in the cache, and how it got there."""

    path: Path
    already_cached: bool
    final_url: str
    """The URL that served the bytes (differs from the pin's after redirects)."""
    redirects: int = 0
    size: int = 0


def download(url: str, sha256: str, cache: Cache, policy: FetchPolicy | None = None) -> Fetched:
    """Download ``url`` into the cache if its bytes have ``sha256``.

    Already cached (and still matching) → returned without any network access.
    Raises ``DigestMismatch`` for other bytes and ``FetchError`` for everything
    else; in every failure the cache is left exactly as it was.
    """
    policy = policy or FetchPolicy()
    sha256 = sha256.lower()
    final = cache.path_for(sha256)
    try:
        hit = cache.lookup(sha256)
        if hit is not None:
            return Fetched(final, True, url, 0, len(hit))
    except FetchError:
        pass  # a corrupt entry is replaced by a fresh, verified download
    check_url(url)
    remove_stale_parts(final.parent)
    import requests

    session = requests.Session()
    # Loopback servers are local by definition: no proxy from the environment.
    session.trust_env = not is_loopback(_split(url).hostname)
    deadline = time.monotonic() + policy.total_timeout
    try:
        return _download_with_retries(session, url, sha256, final, policy, deadline)
    finally:
        session.close()


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


def _download_with_retries(
    session: Any, url: str, sha256: str, final: Path, policy: FetchPolicy, deadline: float
) -> Fetched:
    attempt = 0
    while True:
        attempt += 1
        try:
            return _download_once(session, url, sha256, final, policy, deadline)
        except _Retryable as exc:
            wait = policy.backoff * (2 ** (attempt - 1))
            if attempt >= policy.attempts or time.monotonic() + wait >= deadline:
                tries = f" after {attempt} attempts" if attempt > 1 else ""
                raise FetchError(f"{exc}{tries}") from None
        time.sleep(wait)


def _over_deadline(url: str, policy: FetchPolicy, deadline: float) -> None:
    """``FetchError`` once the whole download has taken longer than allowed."""
    if time.monotonic() > deadline:
        raise FetchError(f"{url}: download did not finish within the total timeout of "
                         f"{policy.total_timeout:g} s; aborted")


def _redirect_target(current: str, location: str) -> str:
    """The absolute URL a redirect points to; ``FetchError`` when it cannot be parsed."""
    try:
        nxt = urljoin(current, location)
    except ValueError as exc:
        raise FetchError(f"{current}: redirect to {location}: not a valid URL ({exc})") from None
    problem = url_problem(nxt)
    if problem is not None:
        raise FetchError(f"{current}: redirect to {location}: {problem}")
    return nxt


def _refuse_bad_location(response: Any, *args: Any, **kwargs: Any) -> Any:
    """A ``requests`` response hook. Even when told not to follow redirects,
    ``requests`` parses the Location header before returning, and a malformed
    one (``http://[::1``) would escape as a bare ``ValueError``: it is refused
    here first, as the redirect's ``FetchError``."""
    location = response.headers.get("Location") if response.is_redirect else None
    if location:
        try:
            _redirect_target(response.url, location)
        except FetchError:
            response.close()
            raise
    return response


class _Retryable(Exception):
    """A 5xx answer or a connection-level failure: worth another try."""


def _download_once(
    session: Any, url: str, sha256: str, final: Path, policy: FetchPolicy, deadline: float
) -> Fetched:
    import requests
    from urllib3.exceptions import LocationValueError

    current = url
    hops: list[str] = []
    try:
        for _ in range(MAX_REDIRECTS + 1):
            check_url(current)
            _over_deadline(current, policy, deadline)
            left = max(deadline - time.monotonic(), 0.01)
            # No single wait may outlast the total deadline either.
            timeout = (min(policy.connect_timeout, left), min(policy.read_timeout, left))
            response = session.get(
                current, stream=True, timeout=timeout, allow_redirects=False, verify=True,
                headers={"Accept-Encoding": "identity"},
                hooks={"response": _refuse_bad_location},
            )
            with response:
                if response.is_redirect:
                    location = response.headers.get("Location")
                    if not location:
                        raise FetchError(f"{current}: redirect without a Location header")
                    nxt = _redirect_target(current, location)
                    if _split(current).scheme == "https" and _split(nxt).scheme != "https":
                        raise FetchError(f"{current}: redirect to {nxt} downgrades https; refused")
                    check_url(nxt)
                    hops.append(nxt)
                    current = nxt
                    continue
                status = response.status_code
                if 500 <= status < 600:
                    raise _Retryable(f"{current}: HTTP {status} {response.reason or ''}".rstrip())
                if status != 200:
                    raise FetchError(f"{current}: HTTP {status} {response.reason or ''}".rstrip())
                size = _store(response, current, sha256, final, policy, deadline)
                return Fetched(final, False, current, len(hops), size)
        raise FetchError(f"{url}: more than {MAX_REDIRECTS} redirects")
    except LocationValueError as exc:  # a host urllib3 cannot use ("a..b"), found at connect
        raise FetchError(f"{current}: not a valid URL ({exc})") from None
    except requests.exceptions.SSLError as exc:
        raise FetchError(f"{current}: TLS verification failed: {_tls_reason(exc)}") from None
    except (requests.ConnectionError, requests.Timeout, requests.exceptions.ChunkedEncodingError) as exc:
        _over_deadline(current, policy, deadline)  # a wait cut short by the deadline says so
        if isinstance(exc, requests.ConnectTimeout):
            why = f"connect timed out after {policy.connect_timeout:g} s"
        elif isinstance(exc, requests.Timeout) or "timed out" in str(exc):
            why = f"read timed out after {policy.read_timeout:g} s (server stalled)"
        else:
            why = f"connection failed: {_os_reason(exc) or _one_line(exc)}"
        raise _Retryable(f"{current}: {why}") from None
    except requests.RequestException as exc:
        raise FetchError(f"{current}: {_one_line(exc)}") from None


def _chunks(response: Any) -> Iterator[bytes]:
    """The body as it arrives: ``read1`` returns whatever bytes are there, so the
    caller regains control after every packet (``iter_content`` blocks until a
    whole chunk is filled, which a dripping server may take hours to do).
    urllib3 errors are translated as ``iter_content`` translates them."""
    import requests
    from urllib3.exceptions import DecodeError, ProtocolError, ReadTimeoutError
    from urllib3.exceptions import SSLError as Urllib3SSLError

    raw = response.raw
    if not hasattr(raw, "read1"):  # pragma: no cover - urllib3 < 2.3
        yield from response.iter_content(CHUNK)
        return
    try:
        while chunk := raw.read1(CHUNK, decode_content=True):
            yield chunk
    except ProtocolError as exc:
        raise requests.exceptions.ChunkedEncodingError(exc) from None
    except DecodeError as exc:
        raise requests.exceptions.ContentDecodingError(exc) from None
    except ReadTimeoutError as exc:
        raise requests.ConnectionError(exc) from None
    except Urllib3SSLError as exc:
        raise requests.exceptions.SSLError(exc) from None


def _store(response: Any, url: str, sha256: str, final: Path, policy: FetchPolicy,
           deadline: float) -> int:
    """Stream the body to a temporary file, hash it, and rename it into place if it matches."""
    declared = response.headers.get("Content-Length")
    if declared is not None and declared.isdigit() and int(declared) > policy.max_bytes:
        raise FetchError(
            f"{url}: Content-Length {declared} exceeds the size cap of {policy.max_bytes} bytes"
        )
    import tempfile

    try:
        final.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=PART_PREFIX, dir=final.parent)
    except OSError as exc:
        raise FetchError(f"{final.parent}: cannot write to the cache: {exc.strerror}") from None
    try:
        digest = hashlib.sha256()
        size = 0
        with os.fdopen(fd, "wb") as fh:
            for chunk in _chunks(response):
                _over_deadline(url, policy, deadline)
                size += len(chunk)
                if size > policy.max_bytes:
                    raise FetchError(
                        f"{url}: body exceeds the size cap of {policy.max_bytes} bytes; aborted"
                    )
                digest.update(chunk)
                fh.write(chunk)
            fh.flush()
            os.fsync(fh.fileno())
        actual = digest.hexdigest()
        if actual != sha256:
            raise DigestMismatch(url, sha256, actual)
        os.chmod(tmp, 0o444)
        os.replace(tmp, final)
        return size
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        import requests

        if isinstance(exc, requests.RequestException):  # these are IOErrors too: the network
            raise
        raise FetchError(f"{final.parent}: cannot write to the cache: {exc.strerror}") from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


class NotThePin(MissingFile):
    """A path other than the one file a remote pin holds (a ``fail``, like a missing file)."""

    def __init__(self, path: str, pinned: str) -> None:
        SourceError.__init__(self, path, f"is not this remote pin's file ({pinned})")


class RemoteSource(Source):
    """One pinned remote file, from verified cached bytes, at its logical path.

    Citations name it like any file (``at: <path>:a-b`` with ``source: <pin id>``);
    the bytes are those that matched the pin, so the pin's digest proves them.
    """

    kind = "remote"

    def __init__(self, path: str, data: bytes, location: str) -> None:
        self.path = path
        self.data = data
        self.location = location

    def read(self, path: str) -> bytes:
        self._check_path(path)
        if path != self.path:
            raise NotThePin(path, self.path)
        return self.data

    def exists(self, path: str) -> bool:
        return path == self.path

    def iter_files(self, under: str = "") -> Iterator[str]:
        prefix = under.rstrip("/") + "/" if under else ""
        if self.path.startswith(prefix):
            yield self.path
