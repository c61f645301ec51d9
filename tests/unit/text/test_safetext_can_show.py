"""``safetext.can_show``: the one answer to "does a stream in this encoding write
this text as it is", asked by the first line's elision (``…`` or ``...``), by
``report --check``'s diff (escape it first, or not) and by ``as_code_points``."""

from __future__ import annotations

import pytest

from pp1audit.formats.text_format import _ellipsis
from pp1audit.text.safe import as_code_points, can_show


@pytest.mark.parametrize(("text", "encoding", "shown"), [
    ("tr\u00e9e", "ascii", False),
    ("tr\u00e9e", "latin-1", True),
    ("\u2026", "latin-1", False),
    ("\u2026", "utf-8", True),
    ("\u2026", None, True),  # no encoding known: the stream's own, nothing to fit
    ("\u2026", "no-such-codec", True),  # one Python does not know: the stream was made with it
])
def test_can_show(text: str, encoding: str | None, shown: bool) -> None:
    assert can_show(text, encoding) is shown


@pytest.mark.parametrize("encoding", ["ascii", "latin-1", "utf-8", "no-such-codec", None])
def test_the_ellipsis_is_the_one_the_encoding_can_show(encoding: str | None) -> None:
    assert _ellipsis(encoding) == ("\u2026" if can_show("\u2026", encoding) else "...")


def test_as_code_points_escapes_only_what_cannot_be_shown() -> None:
    assert as_code_points("tr\u00e9e \u2026", "latin-1") == "tr\u00e9e \\u2026"
    assert as_code_points("tr\u00e9e \u2026", "utf-8") == "tr\u00e9e \u2026"
    assert as_code_points("tr\u00e9e \u2026", "no-such-codec") == "tr\u00e9e \u2026"
