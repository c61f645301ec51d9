"""Remote pins downloaded into the content-addressed cache, with ``requests``.

The bytes become evidence, so the download is strict, each rule a library
setting where there is one: https only (plain http to loopback: the tests'
servers), TLS always verified, every redirect hop held to the same rule before
it is followed (never https down to http); urllib3's ``Retry`` for connection
failures and 429/5xx answers (with backoff and ``Retry-After``; up to the
response headers only: a body that breaks is one failure); connect/read
timeouts and a total deadline, checked while the body streams and, in the main
thread, held by ``SIGALRM`` too (a server dripping its headers, or a long
``Retry-After``, cannot outlast it); a size cap on ``Content-Length`` and on
the streamed body; the SHA-256 verified before the cache stores the bytes.

Every failure is a ``FetchError``: one line naming the pinned URL (and where a
redirect led), in words. ``requests`` is imported only when a download really
happens: a ``check`` without ``--fetch`` never loads it.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

from pp1audit.manifest.paths import url_problem
from pp1audit.sources.cache import Cache, CachedTooLarge, FetchError
from pp1audit.sources.runconfig import FetchPolicy

CHUNK = 64 * 1024
MAX_REDIRECTS = 5
RETRY_STATUSES = (429, 500, 502, 503, 504)


class DigestMismatch(FetchError):
    """Other bytes than the pin: a ``fail``, not an ``error``."""

    def __init__(self, url: str, expected: str, actual: str) -> None:
        super().__init__(f"{url}: SHA-256 {actual} differs from the pinned {expected}; not cached")


@dataclass(frozen=True)
class Fetched:
    """A verified file in the cache, and how it got there."""

    path: Path
    already_cached: bool
    final_url: str
    """The URL that served the bytes (differs from the pin's after redirects)."""
    redirects: int = 0
    size: int = 0


class _Late(BaseException):
    """The total deadline passed (a ``BaseException``: raised by a signal handler
    inside requests, no ``except Exception`` there may swallow it)."""


def is_loopback(host: str | None) -> bool:
    """True for ``localhost`` and loopback IP literals (127.0.0.0/8, ::1)."""
    import ipaddress

    if not host or host.lower() == "localhost":
        return bool(host)
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _refusal(url: str) -> str | None:
    """Why ``url`` may not be downloaded from (https only, or http to loopback), or None."""
    if problem := url_problem(url):
        return problem
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme == "https":
        return None if parts.hostname else "no host in URL"
    if scheme == "http":
        return None if is_loopback(parts.hostname) else \
            "plain http refused (https only, except loopback addresses)"
    return f"scheme '{parts.scheme}' refused (https only)"


def check_url(url: str) -> None:
    """``FetchError`` for a URL that may not be downloaded from, before any socket opens."""
    if reason := _refusal(url):
        raise FetchError(f"{url}: {reason}")


def _where(pinned: str, current: str) -> str:
    """The head of a message: the pinned URL, and where a redirect led (a refusal
    naming only the target would hide which pin asked for it)."""
    return pinned if current == pinned else f"{pinned} redirected to {current}"


def download(url: str, sha256: str, cache: Cache, policy: FetchPolicy | None = None) -> Fetched:
    """Download ``url`` into the cache if its bytes have ``sha256``: no network when
    cached; ``CachedTooLarge`` when cached over the cap (most likely the pin, which
    would fail the same cap again); a corrupt entry is replaced. ``DigestMismatch``
    for other bytes, ``FetchError`` for the rest, the cache then left as it was."""
    policy = policy or FetchPolicy()
    sha256 = sha256.lower()
    try:
        hit = cache.lookup(sha256)
    except CachedTooLarge:
        raise
    except FetchError:
        hit = None
    if hit is not None:
        return Fetched(cache.path_for(sha256), True, url, 0, len(hit))
    check_url(url)
    data, final, hops = _fetch(url, policy)
    actual = hashlib.sha256(data).hexdigest()
    if actual != sha256:
        raise DigestMismatch(_where(url, final), sha256, actual)
    return Fetched(cache.store(sha256, data), False, final, hops, len(data))


def _fetch(url: str, policy: FetchPolicy) -> tuple[bytes, str, int]:
    """The body ``url`` leads to, the URL that served it and the redirects taken."""
    import requests
    from requests.adapters import HTTPAdapter
    from urllib3.exceptions import HTTPError
    from urllib3.util import Retry

    retry = Retry(total=policy.attempts - 1, other=0, backoff_factor=policy.backoff,
                  status_forcelist=RETRY_STATUSES, allowed_methods={"GET"},
                  respect_retry_after_header=True, raise_on_status=False)
    session = requests.Session()
    session.max_redirects = MAX_REDIRECTS
    # Loopback servers are local by definition: no proxy from the environment.
    session.trust_env = not is_loopback(urlsplit(url).hostname)
    adapter = HTTPAdapter(max_retries=retry)
    session.mount("https://", adapter)
    session.mount("http://", adapter)
    ends = time.monotonic() + policy.total_timeout
    current = url
    try:
        with _alarm(policy.total_timeout), session, session.get(
            url, stream=True, headers={"Accept-Encoding": "identity"},
            timeout=(min(policy.connect_timeout, policy.total_timeout),
                     min(policy.read_timeout, policy.total_timeout)),
            hooks={"response": _hop_guard(url)},
        ) as response:
            current = response.url
            _check_status(response, _where(url, current), policy)
            return _body(response, _where(url, current), policy, ends), current, \
                len(response.history)
    except _Late:
        raise FetchError(f"{_where(url, current)}: download did not finish within the total "
                         f"timeout of {policy.total_timeout:g} s; aborted") from None
    except (requests.RequestException, HTTPError) as exc:
        hop = getattr(getattr(exc, "request", None), "url", None) or current
        raise FetchError(f"{_where(url, hop)}: {_reason(exc, policy)}") from None


@contextlib.contextmanager
def _alarm(seconds: float) -> Iterator[None]:
    """Hold the total deadline during a blocking read (or sleep) too, which a read
    timeout cannot: a byte every few seconds resets it. ``SIGALRM`` interrupts the
    read and the handler's exception unwinds requests, which closes the connection.
    Signals reach the main thread only (and POSIX only); elsewhere the body's loop
    checks the time, and a read or a ``Retry-After`` sleep is bounded by itself."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def fire(signum: int, frame: Any) -> None:
        raise _Late

    previous = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _hop_guard(pinned: str) -> Callable[..., Any]:
    """A response hook, run on every hop before requests follows its redirect: the
    next hop must be a URL the pin could have named, and not downgrade https."""

    def guard(response: Any, *args: Any, **kwargs: Any) -> Any:
        if not response.is_redirect:
            return response
        location = response.headers["Location"]
        try:
            nxt = urljoin(response.url, location)
            problem = url_problem(nxt)
        except ValueError as exc:
            nxt, problem = location, f"not a valid URL ({exc})"
        if problem:
            refused = f"{_where(pinned, response.url)}: redirect to {location}: {problem}"
        elif response.url.startswith("https:") and not nxt.lower().startswith("https:"):
            refused = f"{_where(pinned, nxt)}: downgrades https; refused"
        elif reason := _refusal(nxt):
            refused = f"{_where(pinned, nxt)}: {reason}"
        else:
            return response
        response.close()
        raise FetchError(refused)

    return guard


def _check_status(response: Any, where: str, policy: FetchPolicy) -> None:
    """``FetchError`` for any answer but 200 (``Retry`` already retried those worth it)."""
    status = response.status_code
    if status == 200:
        return
    said = f"HTTP {status} {response.reason or ''}".rstrip()
    if 300 <= status < 400 and "Location" not in response.headers:
        said = f"redirect without a Location header ({said})"
    elif status in RETRY_STATUSES and policy.attempts > 1:
        said += f" after {policy.attempts} attempts"
    raise FetchError(f"{where}: {said}")


def _body(response: Any, where: str, policy: FetchPolicy, ends: float) -> bytes:
    """The body, refused over the size cap (declared or streamed) or past the deadline."""
    declared = response.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > policy.max_bytes:
        raise FetchError(f"{where}: Content-Length {declared} exceeds the size cap of "
                         f"{policy.max_bytes} bytes")
    body = bytearray()
    # read1, not iter_content: it returns what one read brought, so the loop regains
    # control after every packet of a dripping server (iter_content waits for a CHUNK).
    while chunk := response.raw.read1(CHUNK, decode_content=True):
        body += chunk
        if len(body) > policy.max_bytes:
            raise FetchError(f"{where}: body exceeds the size cap of {policy.max_bytes} "
                             "bytes; aborted")
        if time.monotonic() > ends:
            raise _Late
    if time.monotonic() > ends:
        raise _Late
    return bytes(body)


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and every exception nested in it (in ``args``, ``reason``, as a cause):
    requests wraps urllib3's errors, which wrap what the socket said."""
    stack, seen = [exc], set()
    while stack:
        e = stack.pop()
        if id(e) not in seen:
            seen.add(id(e))
            yield e
            nested = [*e.args, getattr(e, "reason", None), e.__cause__, e.__context__]
            stack.extend(reversed([x for x in nested if isinstance(x, BaseException)]))


def _reason(exc: BaseException, policy: FetchPolicy) -> str:
    """What went wrong on the wire, in words, found in the chain of exceptions
    (never requests' nested reprs); " after N attempts" when ``Retry`` gave up."""
    import http.client
    import ssl

    import requests
    from urllib3 import exceptions as u3

    chain = list(_chain(exc))

    def first(kind: type | tuple[type, ...]) -> Any:
        return next((e for e in chain if isinstance(e, kind)), None)

    if cert := first(ssl.SSLCertVerificationError):
        return f"TLS certificate not trusted: {cert.verify_message}"
    if tls := first(ssl.SSLError):
        return f"TLS failed: {tls.reason or tls}"
    if isinstance(exc, requests.TooManyRedirects):
        return f"more than {MAX_REDIRECTS} redirects"
    if bad_url := first(u3.LocationValueError):  # a host urllib3 cannot use ("a..b")
        return f"not a valid URL ({_words(bad_url)})"
    if short := first(u3.IncompleteRead):
        said = f"connection broken: {short.partial} of {short.partial + short.expected} " \
               "bytes received"
    elif first(http.client.IncompleteRead):  # urllib3's InvalidChunkLength among them
        said = "connection broken: chunked body cut off or malformed"
    elif first(u3.ConnectTimeoutError) and not first(u3.NewConnectionError):
        said = f"connect timed out after {policy.connect_timeout:g} s"
    elif first((u3.ReadTimeoutError, TimeoutError)):
        said = f"read timed out after {policy.read_timeout:g} s (server stalled)"
    elif first(u3.DecodeError):
        said = f"body could not be decoded ({_words(chain[-1])})"
    elif bad := first(http.client.HTTPException):
        said = f"bad HTTP response: {_words(bad) or type(bad).__name__}"
    elif os_error := next((e for e in chain if isinstance(e, OSError) and e.strerror), None):
        said = f"connection failed: {os_error.strerror}"
    else:
        said = f"connection failed: {_words(chain[-1])}"
    retried = first(u3.MaxRetryError) and policy.attempts > 1
    return said + (f" after {policy.attempts} attempts" if retried else "")


def _words(exc: BaseException) -> str:
    """An exception's text on one short line."""
    return " ".join(str(exc).split())[:200]
