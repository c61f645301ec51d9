"""The careful downloader of remote pins into the cache.

The downloader is deliberately strict, because the bytes it produces become
evidence:

* https only; plain http solely for loopback addresses (the tests' servers);
  TLS verification always on; every redirect hop obeys the same rule and the
  digest is still enforced on whatever the last hop served;
* connect and read timeouts, and a total deadline for the whole download
  (all tries and redirects, connect and response headers included): checked
  between reads, and enforced during one by a timer that shuts the download's
  sockets down (a server dripping a byte every few seconds, into its headers
  or its body, never trips the read timeout but cannot hold a run forever); a
  size cap enforced while streaming (and up front from Content-Length);
* a response cut off (inside its headers, short of its Content-Length, in a
  chunk) is a network failure, never bytes to hash: only a complete answer can
  be "other bytes than pinned";
* bounded retries with exponential backoff on 5xx and connection errors, none on
  4xx (a 404 will not heal);
* the body goes to a temporary file next to its final place, is hashed while
  written, and is renamed into the cache only when the digest matches — no
  partial or unverified file ever lands, whatever fails; temporary files left
  by a killed run (``.part-*`` older than ``STALE_PART``) are removed before the
  next download.

Every failure is a ``FetchError`` whose text is one line, in words (never the
nested reprs of requests and urllib3), naming the pinned URL and, after a
redirect, where it led (the words come from ``pp1audit.sources.netreasons``).
``requests`` is imported inside ``download`` only.

The deadline's timer and the socket plumbing behind it are ``pp1audit.sources.transport``;
where the bytes land and how they are read back is ``pp1audit.sources.cache``.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import SplitResult, urljoin, urlsplit

from pp1audit.manifest.paths import url_problem
from pp1audit.sources.cache import (
    PART_PREFIX,
    SHOWN_DIR,
    Cache,
    CachedTooLarge,
    FetchError,
    remove_stale_parts,
)
from pp1audit.sources.fetchpolicy import FetchPolicy
from pp1audit.sources.netreasons import network_reason, tls_reason
from pp1audit.sources.transport import Deadline, watched_adapter

CHUNK = 64 * 1024
MAX_REDIRECTS = 5
REDIRECT_CODES = frozenset({301, 302, 303, 307, 308})


class DigestMismatch(FetchError):
    """The server answered, but with other bytes than the pin: a ``fail``, not an ``error``."""

    def __init__(self, url: str, expected: str, actual: str) -> None:
        self.expected = expected
        self.actual = actual
        super().__init__(f"{url}: SHA-256 {actual} differs from the pinned {expected}; not cached")


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
    reason = _refusal(url)
    if reason is not None:
        raise FetchError(f"{url}: {reason}")


def _refusal(url: str) -> str | None:
    """Why ``url`` may not be downloaded from, or None when it may."""
    parts = _split(url)
    scheme = parts.scheme.lower()
    if scheme == "https":
        return None if parts.hostname else "no host in URL"
    if scheme == "http" and is_loopback(parts.hostname):
        return None
    if scheme == "http":
        return "plain http refused (https only, except loopback addresses)"
    return f"scheme '{parts.scheme}' refused (https only)"


def _where(pinned: str, current: str) -> str:
    """The head of a message about ``current``: the pinned URL, and where it led when
    a redirect went elsewhere (a refusal naming only the target hides which pin
    asked for it)."""
    return pinned if current == pinned else f"{pinned} redirected to {current}"


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

    Already cached (and still matching) → returned without any network access;
    cached but over the size cap → ``CachedTooLarge`` (the entry is the pin's,
    most likely: downloading it again would only fail on the same cap).
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
    except CachedTooLarge:
        raise
    except FetchError:
        pass  # a corrupt entry is replaced by a fresh, verified download
    check_url(url)
    remove_stale_parts(final.parent)
    import requests

    deadline = Deadline(policy.total_timeout)
    session = requests.Session()
    # Loopback servers are local by definition: no proxy from the environment.
    session.trust_env = not is_loopback(_split(url).hostname)
    adapter = watched_adapter(deadline)
    session.mount("https://", adapter)
    session.mount("http://", adapter)
    try:
        return _download_with_retries(session, url, sha256, final, policy, deadline)
    finally:
        deadline.close()
        session.close()


def _download_with_retries(
    session: Any, url: str, sha256: str, final: Path, policy: FetchPolicy, deadline: Deadline
) -> Fetched:
    attempt = 0
    while True:
        attempt += 1
        try:
            return _download_once(session, url, sha256, final, policy, deadline)
        except _Retryable as exc:
            wait = policy.backoff * (2 ** (attempt - 1))
            if attempt >= policy.attempts or wait >= deadline.left():
                tries = f" after {attempt} attempts" if attempt > 1 else ""
                raise FetchError(f"{exc}{tries}") from None
        time.sleep(wait)


def _redirect_target(pinned: str, current: str, location: str) -> str:
    """The absolute URL a redirect points to; ``FetchError`` when it cannot be parsed."""
    where = _where(pinned, current)
    try:
        nxt = urljoin(current, location)
    except ValueError as exc:
        raise FetchError(f"{where}: redirect to {location}: "
                         f"not a valid URL ({exc})") from None
    problem = url_problem(nxt)
    if problem is not None:
        raise FetchError(f"{where}: redirect to {location}: {problem}")
    return nxt


def _refuse_bad_location(response: Any, *args: Any, pinned: str, current: str,
                         **kwargs: Any) -> Any:
    """A ``requests`` response hook. Even when told not to follow redirects,
    ``requests`` parses the Location header before returning, and a malformed
    one (``http://[::1``) would escape as a bare ``ValueError``: it is refused
    here first, as the redirect's ``FetchError``."""
    location = response.headers.get("Location") if response.is_redirect else None
    if location:
        try:
            _redirect_target(pinned, current, location)
        except FetchError:
            response.close()
            raise
    return response


class _Retryable(Exception):
    """A 5xx answer or a connection-level failure: worth another try."""


def _download_once(
    session: Any, url: str, sha256: str, final: Path, policy: FetchPolicy, deadline: Deadline
) -> Fetched:
    import requests
    from urllib3.exceptions import LocationValueError

    current = url
    hops = 0
    try:
        for _ in range(MAX_REDIRECTS + 1):
            deadline.check(_where(url, current))
            left = max(deadline.left(), 0.01)
            # No single wait may outlast the total deadline either.
            timeout = (min(policy.connect_timeout, left), min(policy.read_timeout, left))
            response = session.get(
                current, stream=True, timeout=timeout, allow_redirects=False, verify=True,
                headers={"Accept-Encoding": "identity"},
                hooks={"response": functools.partial(_refuse_bad_location, pinned=url,
                                                     current=current)},
            )
            with response:
                nxt = _next_hop(response, url, current)
                if nxt is not None:
                    hops += 1
                    current = nxt
                    continue
                size = _store(response, _where(url, current), sha256, final, policy, deadline)
                return Fetched(final, False, current, hops, size)
        raise FetchError(f"{url}: more than {MAX_REDIRECTS} redirects")
    except LocationValueError as exc:  # a host urllib3 cannot use ("a..b"), found at connect
        raise FetchError(f"{_where(url, current)}: not a valid URL ({exc})") from None
    except requests.RequestException as exc:
        raise _failure(exc, _where(url, current), policy, deadline) from None


def _next_hop(response: Any, pinned: str, current: str) -> str | None:
    """Where a redirect leads (checked like the pinned URL); None for a 200;
    ``_Retryable`` for a 5xx; ``FetchError`` for any other answer."""
    where = _where(pinned, current)
    status = response.status_code
    said = f"HTTP {status} {response.reason or ''}".rstrip()
    if status in REDIRECT_CODES:
        location = response.headers.get("Location")
        if not location:
            raise FetchError(f"{where}: redirect without a Location header ({said})")
        nxt = _redirect_target(pinned, current, location)
        if _split(current).scheme == "https" and _split(nxt).scheme != "https":
            raise FetchError(f"{_where(pinned, nxt)}: downgrades https; refused")
        reason = _refusal(nxt)
        if reason is not None:
            raise FetchError(f"{_where(pinned, nxt)}: {reason}")
        return nxt
    if 500 <= status < 600:
        raise _Retryable(f"{where}: {said}")
    if status != 200:
        raise FetchError(f"{where}: {said}")
    return None


def _failure(exc: Exception, where: str, policy: FetchPolicy, deadline: Deadline) -> Exception:
    """A requests exception as what the download reports: the deadline when it
    passed (the timer may have cut the transfer, whatever broke), else one line
    in words; connection-level failures are ``_Retryable``."""
    import requests

    try:
        deadline.check(where)
    except FetchError as late:
        return late
    if isinstance(exc, requests.exceptions.SSLError):
        return FetchError(f"{where}: TLS verification failed: {tls_reason(exc)}")
    if isinstance(exc, requests.ConnectTimeout):
        return _Retryable(f"{where}: connect timed out after {policy.connect_timeout:g} s")
    if isinstance(exc, requests.Timeout) or "timed out" in str(exc):
        return _Retryable(f"{where}: read timed out after {policy.read_timeout:g} s "
                          "(server stalled)")
    if isinstance(exc, (requests.ConnectionError, requests.exceptions.ChunkedEncodingError)):
        return _Retryable(f"{where}: {network_reason(exc)}")
    return FetchError(f"{where}: {network_reason(exc)}")


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


def _store(response: Any, where: str, sha256: str, final: Path, policy: FetchPolicy,
           deadline: Deadline) -> int:
    """Stream the body to a temporary file, hash it, and rename it into place if it matches."""
    declared = response.headers.get("Content-Length")
    if declared is not None and declared.isdigit() and int(declared) > policy.max_bytes:
        raise FetchError(
            f"{where}: Content-Length {declared} exceeds the size cap of {policy.max_bytes} bytes"
        )
    import tempfile

    try:
        final.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=PART_PREFIX, dir=final.parent)
    except OSError as exc:
        raise FetchError(f"{SHOWN_DIR}: cannot write to the cache: {exc.strerror}") from None
    try:
        digest = hashlib.sha256()
        size = 0
        with os.fdopen(fd, "wb") as fh:
            for chunk in _chunks(response):
                deadline.check(where)
                size += len(chunk)
                if size > policy.max_bytes:
                    raise FetchError(
                        f"{where}: body exceeds the size cap of {policy.max_bytes} bytes; aborted"
                    )
                digest.update(chunk)
                fh.write(chunk)
            # An end of body after the deadline may be the timer's shutdown, not the server's.
            deadline.check(where)
            fh.flush()
            os.fsync(fh.fileno())
        actual = digest.hexdigest()
        if actual != sha256:
            raise DigestMismatch(where, sha256, actual)
        os.chmod(tmp, 0o444)
        os.replace(tmp, final)
        return size
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        import requests

        if isinstance(exc, requests.RequestException):  # these are IOErrors too: the network
            raise
        raise FetchError(f"{SHOWN_DIR}: cannot write to the cache: {exc.strerror}") from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
