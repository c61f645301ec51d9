"""Text measured from an audited tree, made safe to print.

Versions, paths, messages and excerpts come from the target, and the target
is the thing under suspicion: a ``_version.py`` holding a newline and an
escape sequence could print a fake ``PASS (gate open)`` line on a terminal and
hide the real one (``ESC[8m``), or add a heading to a Markdown report. So every
character Unicode says is not shown as ink is printed as a visible escape
instead (``\\n``, ``\\x1b``, ``\\u202e``): the categories Cc (C0, DEL, C1
controls), Cf (format: bidi overrides, isolates and marks such as U+061C, zero-width
characters, the soft hyphen U+00AD, the BOM, tag characters), Zl and Zp (line and
paragraph separators) and Cs (lone surrogates), and every other
Default_Ignorable_Code_Point (Hangul fillers U+115F, U+1160, U+3164, U+FFA0,
variation selectors, the combining grapheme joiner, the code points reserved
as ignorable), which a terminal may draw as nothing. Taken from
``unicodedata`` rather than listed by hand, so no format character is left
out. Braille's blank U+2800 is not escaped: it is drawn as a blank cell, like
a space, not hidden. JSON output needs none of this (its encoder escapes), so
only the formats meant for people use it.

The escapes are unambiguous, so a name can be told from a forged look-alike:

* ``printable`` also doubles the backslash, so a file named ``a\\nb.py``
  (backslash, n) shows as ``a\\\\nb.py`` and one holding a newline as ``a\\nb.py``.
* ``\\xNN`` is an ASCII control (``\\x00``-``\\x1f``, ``\\x7f``) or, from ``\\x80``
  up, a byte that is not UTF-8: a file name with byte 0xff reaches Python as the
  surrogate U+DCFF (``surrogateescape``) and shows as ``\\xff``, the byte it is.
  A character is ``\\uNNNN`` (``\\UNNNNNNNN`` past U+FFFF, as in Python and YAML:
  a tag character U+E0041 is ``\\U000e0041``, never ``\\ue004`` and a ``1``): the
  C1 control U+009B is ``\\u009b``, never the ``\\x9b`` of a raw byte.

``printable_code`` keeps backslashes as they are, for text whose backslashes are
its own notation (cited source lines, diff hunks of them, Python literals).
"""

from __future__ import annotations

import codecs
import functools
import re
import unicodedata

_CANDIDATE = re.compile(r"[^\x20-\x5b\x5d-\x7e]")
"""A backslash, an ASCII control, or any character outside ASCII (judged by ``_hidden``):
written as what it is not, since a class up to U+10FFFF takes ~6 ms to compile at import."""
_CANDIDATE_IN_CODE = re.compile(r"[^\x20-\x7e]")
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
_IGNORABLE = ((0x034F, 0x034F), (0x115F, 0x1160), (0x17B4, 0x17B5), (0x180B, 0x180F),
              (0x2060, 0x206F), (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFFA0, 0xFFA0),
              (0xFFF0, 0xFFF8), (0xE0000, 0xE0FFF))
"""Unicode's Default_Ignorable_Code_Point ranges (DerivedCoreProperties.txt) that hold
characters outside the categories above: drawn as nothing where not supported
(Hangul fillers, variation selectors, U+034F) or reserved to be (U+2065, U+FFF0-FFF8,
U+E0000-E0FFF); ``unicodedata`` has no such property."""
_NAMED = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_BYTE = range(0xDC80, 0xDD00)
"""The surrogates ``surrogateescape`` decodes the bytes 0x80-0xff to (file names
that are not UTF-8: ``os.fsdecode``, a zip member's name)."""


@functools.cache
def _hidden(ch: str) -> bool:
    """True when ``ch`` is not drawn as ink: a control, a format or separator
    character, a surrogate, or a default-ignorable code point."""
    if unicodedata.category(ch) in _HIDDEN_CATEGORIES:
        return True
    code = ord(ch)
    return any(a <= code <= b for a, b in _IGNORABLE)


def _notation(code: int) -> str:
    """The escape of one code point: ``\\xNN`` for an ASCII control or a byte that
    is not UTF-8 (a ``surrogateescape`` surrogate), else ``\\uNNNN`` (``\\UNNNNNNNN``
    past U+FFFF). One notation for ``printable`` and for what a locale cannot show."""
    if code < 0x80:
        return f"\\x{code:02x}"
    if code in _BYTE:
        return f"\\x{code - 0xDC00:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _escape(m: re.Match[str]) -> str:
    ch = m.group()
    if ch in _NAMED:
        return _NAMED[ch]
    if ord(ch) >= 0x80 and not _hidden(ch):
        return ch
    return _notation(ord(ch))


def printable(text: str) -> str:
    """``text`` with every backslash, control or invisible formatting character escaped.

    For names, versions, ids and messages: doubling the backslash is what makes the
    escapes unambiguous (a file literally named ``a\\x1bb`` is not one holding ESC)."""
    return _CANDIDATE.sub(_escape, text) if _CANDIDATE.search(text) else text


def printable_code(text: str) -> str:
    """``text`` with every control or invisible formatting character escaped, backslashes kept.

    For a line of cited source (``show``, a report's excerpts, ``diff`` hunks) or a
    Python literal (``repr``): there a backslash is the code's own notation, and
    doubling it would misquote the code (``"\\n".join`` would read ``"\\\\n".join``).
    A real control character in a source line is as rare as it is suspicious, and
    its escape still cannot act on the terminal or reorder what is shown."""
    return _CANDIDATE_IN_CODE.sub(_escape, text) if _CANDIDATE_IN_CODE.search(text) else text


def cut(text: str, limit: int) -> str:
    """``text``, at most ``limit`` characters of it, saying how many more there are:
    a long value from the target cannot flood a message, and two that differ after
    the cut still read differently (the count, or the digest the caller names)."""
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text) - limit:,} more characters)"


def count(n: int, noun: str) -> str:
    """``1 line``, ``2 lines``: a count with its noun in the right number."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


CODE_POINTS = "pp1audit.codepoints"
"""The ``errors`` handler of stdout and stderr (``cli.main``): a character the
stream's encoding cannot write (``é`` under ASCII, ``→`` under Latin-1) is written
``\\u00e9``, as ``printable`` writes a character, never ``\\xe9``, which it keeps for
a byte that is not UTF-8. Python's ``backslashreplace`` writes both as ``\\xe9``, so
a directory ``t_é`` and one named with the raw byte 0xE9 printed the same line."""


def _code_points(exc: UnicodeError) -> tuple[str, int]:
    """``CODE_POINTS``: the characters ``exc`` could not encode, each in ``_notation``."""
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    return "".join(_notation(ord(ch)) for ch in exc.object[exc.start:exc.end]), exc.end


codecs.register_error(CODE_POINTS, _code_points)


def can_show(text: str, encoding: str | None) -> bool:
    """Whether a stream in ``encoding`` writes ``text`` as it is, no character of it
    escaped. None, or an encoding Python does not know, can: the stream was made
    with it, so a caller has nothing to fit or escape in advance."""
    if encoding is None:
        return True
    try:
        text.encode(encoding)
    except UnicodeEncodeError:
        return False
    except LookupError:
        return True
    return True


def as_code_points(text: str, encoding: str) -> str:
    """``text`` as a stream in ``encoding`` with ``CODE_POINTS`` writes it (each
    character the encoding lacks as ``\\uNNNN``): for a caller that must know the
    escaped text itself (``report --check``'s diff); text the encoding can write,
    or an encoding Python does not know (``can_show``), leaves it as it is."""
    if can_show(text, encoding):
        return text
    return text.encode(encoding, CODE_POINTS).decode(encoding)
