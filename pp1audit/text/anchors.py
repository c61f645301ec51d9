"""Text anchors taken from a file: the span's lines and a little context around them.

``init`` writes them and ``pin`` refreshes them, always from the lines of the
tree being pinned and never from anything guessed: an anchor is a quotation.
The shape is the manifest's (W3C TextQuoteSelector style): ``exact`` holds the
span's lines, ``prefix``/``suffix`` the lines just before and after it up to a
few lines of code, each a block of text with one newline per line
(``manifest.text_lines`` reads it back).
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_CONTEXT = 2
"""Non-blank lines of context on each side: enough to choose among repeated code, small to review."""


def block(lines: list[str]) -> str:
    """Lines as a YAML block scalar's text: every line ends with a newline."""
    return "".join(line + "\n" for line in lines)


@dataclass(frozen=True)
class AnchorText:
    """Anchor texts for one span; empty context when no code is on that side of it."""

    exact: str
    prefix: str
    suffix: str


def context_lines(lines: list[str], start: int, end: int, before: bool, nonblank: int) -> list[str]:
    """The lines just before (or after) lines ``start``..``end`` (1-based) up to the
    ``nonblank``-th non-blank one, or fewer at the file's edge; [] when none holds code.

    Counted in non-blank lines because context is compared so (relocation's
    ``spans.fold``, and ``pin``, which re-quotes context with this function): the lines
    around a top-level ``def`` are blank, and a context of blank lines confirms
    no move. The blank lines between the span and that code are kept, so the
    quotation is a run of the file's own lines; blank lines beyond the last line
    of code (at the file's edge) say nothing and are not quoted.
    """
    out: list[str] = []
    seen = kept = 0  # lines of code met; lines quoted up to the last of them
    for i in range(start - 2, -1, -1) if before else range(end, len(lines)):
        if seen == nonblank:
            break
        out.append(lines[i])
        if lines[i].strip():
            seen += 1
            kept = len(out)
    out = out[:kept]
    return out[::-1] if before else out


def anchor_text(
    lines: list[str], start: int, end: int, before: int = DEFAULT_CONTEXT, after: int = DEFAULT_CONTEXT
) -> AnchorText:
    """The anchor of lines ``start``..``end`` (1-based, inclusive) of ``lines``, with
    ``before``/``after`` non-blank lines of context (``context_lines``)."""
    if not 1 <= start <= end <= len(lines):
        raise ValueError(f"lines {start}-{end} are not inside a file of {len(lines)} lines")
    return AnchorText(
        exact=block(lines[start - 1 : end]),
        prefix=block(context_lines(lines, start, end, True, before)),
        suffix=block(context_lines(lines, start, end, False, after)),
    )
