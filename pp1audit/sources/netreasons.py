"""Network exceptions told as one line, in words.

requests and urllib3 report a failure as nested reprs of the exceptions they
wrap; a ``FetchError`` names the URL and then says what happened on the wire
("connection broken: 100 of 228 bytes received", "certificate verify failed:
self-signed certificate").

Separate from the downloader because it is a translation table, not a
procedure: it grows with every new way a connection can fail, and the download
logic does not change when it does. ``http.client``, ``ssl`` and ``urllib3`` are
imported inside the functions only (they matter only once a download failed).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any


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


def tls_reason(exc: BaseException) -> str:
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


class ResponseCutOff(ConnectionError):
    """The connection ended inside a response's status line or headers: a network
    failure, never an answer (http.client would take the end of file for the blank
    line that ends the headers, and an empty body would then be hashed)."""


_TOO_LONG = re.compile(r"got more than (\d+) bytes when reading (.+)")
_TOO_MANY = re.compile(r"got more than (\d+) headers")
_ZLIB = re.compile(r"^Error -?\d+ while \w+ data: ")
_ENCODING = re.compile(r"content-encoding: ([\w-]+)", re.IGNORECASE)


def network_reason(exc: BaseException) -> str:
    """What went wrong on the wire, in words.

    requests and urllib3 wrap http.client's exceptions in tuples of reprs
    (``('Connection broken: IncompleteRead(128 bytes read, 100 more expected)',
    IncompleteRead(...))``); the innermost exception that says what happened is
    found in the chain and told as a sentence. Text the server sent (a status
    line) is escaped: it goes to a terminal.
    """
    import http.client

    from urllib3.exceptions import DecodeError
    from urllib3.exceptions import IncompleteRead as ShortBody

    chain = list(_chain(exc))
    for e in chain:
        if isinstance(e, ResponseCutOff):
            return f"connection broken: {e}"
        if isinstance(e, ShortBody):
            return f"connection broken: {e.partial} of {e.partial + e.expected} bytes received"
        if isinstance(e, http.client.IncompleteRead):
            return _incomplete_read(e, chain)
        if isinstance(e, http.client.RemoteDisconnected):
            return "connection closed by the server before any response"
        if isinstance(e, http.client.BadStatusLine):
            line = str(e.args[0] if e.args else "").rstrip("\r\n")
            return f"not an HTTP response (first line: {line[:80]})"
        if isinstance(e, http.client.HTTPException) and e.args:
            return _bad_response(str(e.args[0]))
        if isinstance(e, DecodeError):
            return _undecodable(chain)
    reason = _os_reason(exc)
    return f"connection failed: {reason or _one_line(exc)}"


def _incomplete_read(e: Any, chain: list[BaseException]) -> str:
    """http.client's ``IncompleteRead``: a chunked body that ended or went wrong
    (its chunk-size line did not parse: a ``ValueError`` in the chain), else a
    body short of what it announced."""
    if any(isinstance(x, ValueError) for x in chain) or not e.partial:
        return "connection broken: chunked body cut off or malformed"
    got = len(e.partial)
    if e.expected is None:
        return f"connection broken: body cut off after {got} bytes"
    return f"connection broken: {got} of {got + e.expected} bytes received"


def _bad_response(text: str) -> str:
    """An http.client ``HTTPException`` message (``LineTooLong``, too many headers)."""
    too_long = _TOO_LONG.fullmatch(text)
    if too_long:
        return f"bad HTTP response: {too_long[2]} longer than {too_long[1]} bytes"
    too_many = _TOO_MANY.fullmatch(text)
    if too_many:
        return f"bad HTTP response: more than {too_many[1]} header lines"
    return f"bad HTTP response: {text[:200]}"


def _undecodable(chain: list[BaseException]) -> str:
    """A body whose Content-Encoding did not decode (sent although ``identity`` was asked)."""
    import zlib

    encoding = next((m[1] for e in chain if (m := _ENCODING.search(str(e)))), "")
    detail = next((_ZLIB.sub("", str(e)) for e in chain if isinstance(e, zlib.error)), "")
    said = ": ".join(x for x in (f"Content-Encoding {encoding}" if encoding else "",
                                 detail) if x)
    return f"body could not be decoded ({said})" if said else "body could not be decoded"
