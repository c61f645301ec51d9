"""Text measured from an audited tree, made safe to print.

Versions, paths, messages and excerpts come from the target, and the target
is the thing under suspicion: a ``_version.py`` holding a newline and an
escape sequence could print a fake ``PASS (gate open)`` line on a terminal and
hide the real one (``ESC[8m``), or add a heading to a Markdown report. Every
control character (C0, DEL, C1), Unicode line/paragraph separators, the
invisible formatting characters used for "Trojan Source" tricks (bidi
overrides and isolates, zero-width characters, BOM) and lone surrogates are
shown as a visible escape instead (``\\n``, ``\\x1b``, ``\\u202e``). JSON output
needs none of this (its encoder escapes), so only the formats meant for people
use it.

The escapes are unambiguous, so a name can be told from a forged look-alike:

* ``printable`` also doubles the backslash, so a file named ``a\\nb.py``
  (backslash, n) shows as ``a\\\\nb.py`` and one holding a newline as ``a\\nb.py``.
* ``\\xNN`` is an ASCII control (``\\x00``-``\\x1f``, ``\\x7f``) or, from ``\\x80``
  up, a byte that is not UTF-8: a file name with byte 0xff reaches Python as the
  surrogate U+DCFF (``surrogateescape``) and shows as ``\\xff``, the byte it is.
  A character is ``\\uNNNN``: the C1 control U+009B is ``\\u009b``, never the
  ``\\x9b`` of a raw byte.

``printable_code`` keeps backslashes as they are, for text whose backslashes are
its own notation (cited source lines, diff hunks of them, Python literals).
"""

from __future__ import annotations

import re

_UNSAFE = "\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ud800-\udfff\ufeff"
_ESCAPED = re.compile(f"[\\\\{_UNSAFE}]")
_ESCAPED_IN_CODE = re.compile(f"[{_UNSAFE}]")
_NAMED = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_BYTE = range(0xDC80, 0xDD00)
"""The surrogates ``surrogateescape`` decodes the bytes 0x80-0xff to (file names
that are not UTF-8: ``os.fsdecode``, a zip member's name)."""


def _escape(m: re.Match[str]) -> str:
    ch = m.group()
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    if code < 0x80:
        return f"\\x{code:02x}"
    if code in _BYTE:
        return f"\\x{code - 0xDC00:02x}"
    return f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with every backslash, control or invisible formatting character escaped.

    For names, versions, ids and messages: doubling the backslash is what makes the
    escapes unambiguous (a file literally named ``a\\x1bb`` is not one holding ESC)."""
    return _ESCAPED.sub(_escape, text) if _ESCAPED.search(text) else text


def printable_code(text: str) -> str:
    """``text`` with every control or invisible formatting character escaped, backslashes kept.

    For a line of cited source (``show``, a report's excerpts, ``diff`` hunks) or a
    Python literal (``repr``): there a backslash is the code's own notation, and
    doubling it would misquote the code (``"\\n".join`` would read ``"\\\\n".join``).
    A real control character in a source line is as rare as it is suspicious, and
    its escape still cannot act on the terminal or reorder what is shown."""
    return _ESCAPED_IN_CODE.sub(_escape, text) if _ESCAPED_IN_CODE.search(text) else text


def cut(text: str, limit: int) -> str:
    """``text``, at most ``limit`` characters of it, saying how many more there are:
    a long value from the target cannot flood a message, and two that differ after
    the cut still read differently (the count, or the digest the caller names)."""
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text) - limit:,} more characters)"


def count(n: int, noun: str) -> str:
    """``1 line``, ``2 lines``: a count with its noun in the right number."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
