"""Text anchors taken from a file: the span's lines and a little context around them.

``init`` writes them and ``pin`` refreshes them, always from the lines of the
tree being pinned and never from anything guessed: an anchor is a quotation.
The shape is the manifest's (W3C TextQuoteSelector style): ``exact`` holds the
span's lines, ``prefix``/``suffix`` a few lines just before and after, each a
block of text with one newline per line (``manifest.text_lines`` reads it back).
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_CONTEXT = 2
"""Lines of context on each side: enough to choose among repeated code, small to review."""


def block(lines: list[str]) -> str:
    """Lines as a YAML block scalar's text: every line ends with a newline."""
    return "".join(line + "\n" for line in lines)


@dataclass(frozen=True)
class AnchorText:
    """Anchor texts for one span; empty context when the span touches the file's edge."""

    exact: str
    prefix: str
    suffix: str


def anchor_text(
    lines: list[str], start: int, end: int, before: int = DEFAULT_CONTEXT, after: int = DEFAULT_CONTEXT
) -> AnchorText:
    """The anchor of lines ``start``..``end`` (1-based, inclusive) of ``lines``."""
    if not 1 <= start <= end <= len(lines):
        raise ValueError(f"lines {start}-{end} are not inside a file of {len(lines)} lines")
    return AnchorText(
        exact=block(lines[start - 1 : end]),
        prefix=block(lines[max(0, start - 1 - before) : start - 1]) if before > 0 else "",
        suffix=block(lines[end : end + after]) if after > 0 else "",
    )
