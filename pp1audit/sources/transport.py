"""The connections a download runs on: watched by its total deadline, and strict
about where a response's headers end.

A total deadline checked between reads cannot stop a server that drips a byte
every few seconds into its headers or its body: each byte resets the read
timeout, and one read can last for ever. ``Deadline`` is enforced during a read
too, by a timer that shuts the download's sockets down; ``watched_adapter`` is
the ``requests`` adapter whose connections hand every new socket to it. The same
connections read their responses with a header parser that takes an end of file
inside the headers for a cut-off response (``ResponseCutOff``), not a whole one.

Separate from the downloader: this is the plumbing into urllib3's connection
classes, the part of fetching that depends on library internals. ``requests``,
``socket`` and ``threading`` are imported inside the functions only.
"""

from __future__ import annotations

import contextlib
import functools
import os
import time
from typing import TYPE_CHECKING, Any

from pp1audit.sources.cache import FetchError
from pp1audit.sources.netreasons import ResponseCutOff

if TYPE_CHECKING:  # only downloads use sockets and the deadline timer: loaded there
    import socket


class Deadline:
    """The total deadline of one download, held during a read too.

    The loops check it between reads, but one read can last long: while requests
    waits for the response headers (or urllib3 for a body packet) only the
    per-read timeout applies, and a server dripping a byte at a time resets it
    with every byte. So a timer thread shuts down every socket of the download
    when the deadline passes: ``shutdown`` from another thread wakes a blocked
    ``recv`` with end of file, and the download unwinds through its usual error
    paths (temporary file removed, session closed). Whatever was read is then
    never trusted: every path that would keep bytes asks ``passed()`` first.

    Chosen over running the request in a worker thread and abandoning it at the
    deadline: an abandoned thread keeps its socket and goes on reading for as
    long as the server drips (one per pin of a ``check --fetch``), and its
    result must be fenced off; a shut-down socket ends the I/O itself.

    The timer holds duplicates of the sockets (``os.dup``): one whose original
    urllib3 closed meanwhile, its number reused by another file, is never hit
    by mistake; the duplicates are closed with the download. Name resolution
    before the connect is the one wait it cannot cut short.
    """

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.at = time.monotonic() + seconds
        import threading

        self._lock = threading.Lock()
        self._socks: list[socket.socket] = []
        self._fired = False
        self._closed = False
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True
        self._timer.start()

    def left(self) -> float:
        """Seconds until the deadline (negative once past)."""
        return self.at - time.monotonic()

    def passed(self) -> bool:
        """True once the deadline is past (the sockets may have been shut down)."""
        return self._fired or time.monotonic() > self.at

    def check(self, where: str) -> None:
        """``FetchError`` once the whole download has taken longer than allowed."""
        if self.passed():
            raise FetchError(f"{where}: download did not finish within the total timeout of "
                             f"{self.seconds:g} s; aborted")

    def watch(self, sock: socket.socket) -> None:
        """Shut ``sock`` down when the deadline passes (at once if it has)."""
        try:
            import socket

            twin = socket.socket(fileno=os.dup(sock.fileno()))
        except OSError:
            return
        with self._lock:
            if not self._closed:
                self._socks.append(twin)
                if self._fired:
                    _shut(twin)
                return
        twin.close()

    def _fire(self) -> None:
        with self._lock:
            self._fired = True
            for sock in self._socks:
                _shut(sock)

    def close(self) -> None:
        """Stop the timer and let go of the sockets (the download is over)."""
        self._timer.cancel()
        with self._lock:
            self._closed = True
            socks, self._socks = self._socks, []
        for sock in socks:
            sock.close()


def _shut(sock: socket.socket) -> None:
    import socket

    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


class _LastLine:
    """A reader that remembers the last line ``readline`` returned (b"" at end of file)."""

    def __init__(self, raw: Any) -> None:
        self._raw = raw
        self.last: bytes | None = None

    def readline(self, *args: Any) -> bytes:
        line: bytes = self._raw.readline(*args)
        self.last = line
        return line

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)


@functools.cache
def _checked_response() -> type:
    """http.client's response, but a header block ended by end of file is
    ``ResponseCutOff`` (http.client stops reading headers at end of file as at the
    blank line, and the cut-off response would pass for a whole one)."""
    import http.client

    def begin(self: Any) -> None:
        raw = self.fp
        watch = _LastLine(raw)
        self.fp = watch
        try:
            http.client.HTTPResponse.begin(self)
        finally:
            if self.fp is watch:
                self.fp = raw
        if watch.last == b"":
            raise ResponseCutOff("response cut off inside its headers")

    return type("CheckedResponse", (http.client.HTTPResponse,), {"begin": begin})


def _watched_pool(pool: Any, deadline: Deadline) -> Any:
    """``pool`` (a urllib3 pool class) whose connections hand each new socket to
    ``deadline`` and read their responses with ``_checked_response``."""

    base = pool.ConnectionCls

    def _new_conn(self: Any) -> Any:
        sock = base._new_conn(self)
        deadline.watch(sock)
        return sock

    connection = type(base.__name__, (base,), {
        "_new_conn": _new_conn, "response_class": _checked_response()})
    return type(pool.__name__, (pool,), {"ConnectionCls": connection})


def _watch_pools(manager: Any, deadline: Deadline) -> None:
    manager.pool_classes_by_scheme = {
        scheme: _watched_pool(pool, deadline)
        for scheme, pool in manager.pool_classes_by_scheme.items()
    }


def watched_adapter(deadline: Deadline) -> Any:
    """A requests adapter whose connections (direct or through a proxy) are
    watched by ``deadline``."""
    from requests.adapters import HTTPAdapter

    class Adapter(HTTPAdapter):
        def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
            super().init_poolmanager(*args, **kwargs)
            _watch_pools(self.poolmanager, deadline)

        def proxy_manager_for(self, proxy: str, **kwargs: Any) -> Any:
            fresh = proxy not in self.proxy_manager
            manager = super().proxy_manager_for(proxy, **kwargs)
            if fresh:
                _watch_pools(manager, deadline)
            return manager

    return Adapter()
