"""``safetext`` escapes every character Unicode says is not drawn as ink, taken
from ``unicodedata`` (categories Cc, Cf, Zl, Zp, Cs) and Unicode's
Default_Ignorable_Code_Point, not from a hand-made list: U+061C (Arabic letter
mark) and U+00AD (soft hyphen) were written raw by ``init`` and in pin's diff."""

from __future__ import annotations

import sys
import unicodedata

import pytest

from pp1audit.text.safe import printable, printable_code

HIDDEN_CATEGORIES = {"Cc", "Cf", "Zl", "Zp", "Cs"}


def escaped(ch: str) -> bool:
    return ch not in printable_code(f"a{ch}b")


def test_every_control_format_and_separator_character_is_escaped() -> None:
    missed = [f"U+{code:04X}" for code in range(sys.maxunicode + 1)
              if unicodedata.category(chr(code)) in HIDDEN_CATEGORIES and not escaped(chr(code))]
    assert missed == []


@pytest.mark.parametrize("ch", [
    "\u061c", "\u00ad", "\u180e", "\u200b", "\u2066", "\ufeff",  # Cf
    "\u115f", "\u1160", "\u3164", "\uffa0",  # Hangul fillers (Lo, default ignorable)
    "\u034f", "\ufe0f", "\U000e0100", "\u2065", "\U000e0001", "\U000e0041",
])
def test_invisible_characters_are_escaped(ch: str) -> None:
    assert escaped(ch)
    code = ord(ch)
    want = f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"
    assert printable(ch) == printable_code(ch) == want


@pytest.mark.parametrize("text", ["é", "中文", "→ — …", "\u2800", "\u00a0", "ÿ", "\U0001f600"])
def test_visible_text_is_kept(text: str) -> None:
    assert printable(text) == printable_code(text) == text


def test_an_astral_character_is_escaped_unambiguously() -> None:
    """``\\ue0041`` would read as U+E004 and a ``1``: past U+FFFF the escape has 8 digits."""
    assert printable("\U000e0041" + "1") == "\\U000e00411"


def test_surrogate_bytes_and_backslashes_are_as_before() -> None:
    assert printable("a\udcffb") == "a\\xffb"
    assert printable("a\\nb\x1b\x85") == "a\\\\nb\\x1b\\u0085"
    assert printable_code("a\\nb") == "a\\nb"
