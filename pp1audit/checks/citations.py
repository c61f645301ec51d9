"""``citation``: a cited span still exists and still is the pinned content.

Proof comes from the file's pinned digest (the whole file is unchanged, so are
its lines) or from the citation's anchor. When the file changed, the anchor is
looked for again (``spans.relocate``): found at the pinned lines is ``pass``,
found elsewhere is ``drift`` with ``found_lines``, not found is ``fail``. A
citation is never re-anchored silently. In a Python file a span whose text
matches only with its leading indentation shifted is ``drift`` even in place:
it now sits in another block (``spans.reindented_by``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import partial

from pp1audit.checks import source_problem
from pp1audit.errors import SourceError
from pp1audit.manifest import Anchor, Citation
from pp1audit.result import Check, Status
from pp1audit.sources.store import FileStore
from pp1audit.text.spans import OpenState, Span, reindented_by, relocate, span_sha256


def _anchor_holds(anchor: Anchor, current: list[str]) -> str | None:
    """How the anchor matches the lines at the pinned place ("exact"/"normalized"), or None."""
    if anchor.exact is not None and anchor.exact == current:
        return "exact"
    want = anchor.sha256 or (span_sha256(anchor.exact) if anchor.exact else None)
    if want is not None and span_sha256(current) == want:
        return "normalized"
    return None


PYTHON_SUFFIXES = (".py", ".pyi")


def reindented(path: str, exact: list[str] | None, found: list[str],
               before: Callable[[], OpenState]) -> int:
    """Columns a Python span's statements moved right (+) or left (-) against its
    anchored text ``exact`` (``found``: its lines now; ``before``: the file above them).

    A whitespace-normalised match forgives indentation, but in Python a uniform
    shift of a span's leading indentation may move it into another block (under
    an added ``if False:``, out of a loop): the same text, another meaning. Other
    files, and sha256-only anchors (no text to measure), give 0. ``check`` and
    ``pin`` both ask here, so they say the same thing of the same span. ``before``
    gives the lexer's state above ``found`` (``LineIndex.open_before``)."""
    if exact is None or not path.endswith(PYTHON_SUFFIXES):
        return 0
    return reindented_by(exact, found, before)


def reindent_words(shift: int) -> str:
    """How a re-indented span is said, by ``check`` and by ``pin``: "may", since
    a file re-indented as a whole (4 spaces to 2, to tabs) shifts every span
    without changing any block, and only a reader can tell the two apart."""
    return (f"re-indented by {shift:+d} column{'' if abs(shift) == 1 else 's'}: it may sit in "
            "another block now; re-pin after review")


def moved_by(shift: int) -> str:
    """How far a span moved, in words: "1 line earlier", "3 lines later".

    A signed count ("-1 lines") read as a typo and left the reader to work out which
    way the code went; 0 (same first line, other length) says so."""
    if shift == 0:
        return "same first line"
    n = abs(shift)
    return f"{n} line{'' if n == 1 else 's'} {'earlier' if shift < 0 else 'later'}"


InvariantAnchor = Callable[[Citation, Check], Check]
"""Judges a citation anchored on an invariant (``checks.invariants.anchored_citation``)."""


def check_citation(
    citation: Citation, pinned_sha256: str | None, store: FileStore, source: str | None = None,
    invariant_anchor: InvariantAnchor | None = None,
) -> Check:
    """Judge one citation against the file as the store read it."""
    span = citation.span
    pinned = (span.start, span.end)
    base = Check(
        id=citation.id, kind="citation", status=Status.FAIL, message="", path=span.path,
        lines=pinned, source=source,
    )
    if citation.unresolved is not None:
        # Marked by ``pin --allow-unresolved``: its span is not known to hold, so it
        # can never pass, whatever the file now contains.
        return replace(base, message=f"marked unresolved by pin: {citation.unresolved}")
    try:
        fd = store.get(span.path)
        lines = fd.text_lines()
    except SourceError as exc:
        return source_problem(exc, id=citation.id, kind="citation", lines=pinned, source=source)
    in_range = span.end <= len(lines)
    current = lines[span.start - 1 : span.end] if in_range else []
    excerpt = "\n".join(current) if in_range else None

    if pinned_sha256 is not None and fd.sha256 == pinned_sha256:
        if in_range:
            return replace(base, status=Status.PASS, found_lines=pinned, excerpt=excerpt,
                         message=f"{span} unchanged (file matches its pinned SHA-256)")
        return replace(base, status=Status.FAIL,
                     message=f"{span} is past the end of the pinned file ({len(lines)} lines)")

    anchor = citation.anchor
    if anchor is not None and anchor.invariant is not None:
        if invariant_anchor is None:
            return replace(base, status=Status.ERROR,
                           message=f"anchor invariant '{anchor.invariant}' was not evaluated")
        return invariant_anchor(citation, base)
    if anchor is None:
        return replace(base, status=Status.FAIL, expected=pinned_sha256, actual=fd.sha256,
                     message=f"{span.path} changed and the citation has no anchor to find "
                     "its span again")
    how = _anchor_holds(anchor, current) if in_range else None
    index = fd.index
    if how is not None:
        shift = reindented(span.path, anchor.exact, current,
                           partial(index.open_before, span.start - 1))
        if shift:
            return replace(base, status=Status.DRIFT, found_lines=pinned, excerpt=excerpt,
                           message=f"{span} still holds the anchored text, {reindent_words(shift)}")
        note = "" if how == "exact" else " (whitespace differs)"
        return replace(base, status=Status.PASS, found_lines=pinned, excerpt=excerpt,
                     message=f"{span} still holds the anchored text{note}")
    match = relocate(lines, span, anchor.exact, anchor.prefix, anchor.suffix, index)
    if match is None:
        if anchor.exact is None:
            return replace(base, status=Status.FAIL,
                           message=f"{span} no longer has the anchored digest (a sha256-only "
                           "anchor is checked in place; add exact text to let it relocate)")
        return replace(base, status=Status.FAIL,
                     message=f"the anchored text of {span} is no longer in {span.path}")
    found = (match.start, match.end)
    moved = Span(span.path, match.start, match.end)
    notes = []
    if match.how == "normalized":
        shift = reindented(span.path, anchor.exact, lines[match.start - 1 : match.end],
                           partial(index.open_before, match.start - 1))
        notes.append(reindent_words(shift) if shift else "whitespace differs")
    if match.candidates > 1:
        notes.append(
            f"{match.candidates} equally good places; the nearest to the pinned lines chosen"
        )
    elif match.total > 1:
        notes.append(f"found in {match.total} places; the one whose context still matches chosen")
    suffix = f" ({'; '.join(notes)})" if notes else ""
    shift = match.start - span.start
    return replace(
        base, status=Status.DRIFT, found_lines=found, places=match.candidates,
        excerpt="\n".join(lines[match.start - 1 : match.end]),
        message=f"{span} moved to {moved.lines} ({moved_by(shift)}){suffix}",
    )
