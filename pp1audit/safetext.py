"""Text measured from an audited tree, made safe to print.

Versions, paths, messages and excerpts come from the target, and the target
is the thing under suspicion: a ``_version.py`` holding a newline and an
escape sequence could print a fake ``PASS (gate open)`` line on a terminal and
hide the real one (``ESC[8m``), or add a heading to a Markdown report. Every
control character (C0, DEL, C1), Unicode line/paragraph separators, and the
invisible formatting characters used for "Trojan Source" tricks (bidi
overrides and isolates, zero-width characters, BOM) is shown as a visible
escape instead (``\\n``, ``\\x1b``, ``\\u202e``). JSON output needs none of this
(its encoder escapes), so only the formats meant for people use it.
"""

from __future__ import annotations

import re

_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(m: re.Match[str]) -> str:
    ch = m.group()
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with every control or invisible formatting character escaped."""
    return _UNSAFE.sub(_escape, text) if _UNSAFE.search(text) else text
