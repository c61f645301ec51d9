"""What ``pin`` measures on the new tree, before it edits anything.

Where a citation is now comes from the core alone: ``audit`` is run on the new
tree and each citation check's ``found_lines`` (whatever anchored it: text or
an invariant) is its new place. Nothing is guessed. A citation the checks
cannot find, or find in several equally good places, is **unresolved**: the
lesson of text-annotation tools is that a confident wrong re-anchor is worse
than none. So is a find that keeps the text but maybe not its meaning
(``doubt``), until a human accepts it (``--accept ID``).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property, partial
from typing import TYPE_CHECKING

from pp1audit.checks.citations import moved_by, reindent_words, reindented
from pp1audit.errors import Pp1Error, SourceError
from pp1audit.manifest import Anchor, Citation, Manifest
from pp1audit.result import Check, Status
from pp1audit.sources import Source
from pp1audit.sources.store import FileStore
from pp1audit.text.anchors import context_lines
from pp1audit.text.spans import LineIndex, normalize
from pp1audit.upgrade.review import CHANGED, MOVED, UNCHANGED, lines_str

if TYPE_CHECKING:
    from pp1audit.rules.engine import Engine


def _count_lines(lines: tuple[int, int]) -> str:
    n = lines[1] - lines[0] + 1
    return f"{n} line{'' if n == 1 else 's'}"


def context_holds(lines: list[str], found: tuple[int, int], before: bool, want: list[str]) -> bool:
    """True when the context ``want`` (an anchor's ``prefix``/``suffix``) still surrounds ``found``.

    Compared as ``pin`` re-quotes it: the same number of non-blank lines,
    whitespace-normalised."""
    ctx = context_lines(lines, *found, before, len(normalize(want)))
    return normalize(ctx) == normalize(want)


def _context_changed(anchor: Anchor, lines: list[str], found: tuple[int, int]) -> list[str]:
    """The non-blank sides of ``anchor``'s context (``prefix``, ``suffix``) that no longer
    surround ``found``; a side of blank lines only confirms nothing and is not judged."""
    sides = (("prefix", anchor.prefix), ("suffix", anchor.suffix))
    return [key for key, want in sides
            if normalize(want) and not context_holds(lines, found, key == "prefix", want)]


def doubt(cit: Citation, index: LineIndex, found: tuple[int, int], same_file: bool) -> str | None:
    """Why the span the checks found may not be the code the audit cited, or None.

    The checks find text; whether it is still the code the audit meant is told
    by what surrounds it. So a text-anchored span is carried silently only when
    every non-blank side of its context (``prefix``, ``suffix``) still matches
    where it is found and, when it moved, at least one such side exists to
    confirm the move. One matching side is not enough: a trivial line
    (``return True``) matches as well next to a copy of the text in dead code as
    next to the code cited. A Python span re-indented (moved under an added
    ``if False:``, out of a loop) is in doubt whatever its context. Carried,
    such a find would pass ``check``; so ``pin`` holds it unresolved until a
    human looks (``--accept``): a false UNRESOLVED costs one flag, a false carry
    is a wrong verdict. A file identical to its pinned digest holds exactly the
    code audited: nothing to doubt. Invariant anchors pin no text and say where
    the span is by the rule they check: no doubt of this kind.
    """
    anchor = cit.anchor
    if anchor is None or anchor.invariant is not None or same_file:
        return None
    span = cit.span
    lines = index.lines
    a, b = found
    moved = found != (span.start, span.end)
    where = (f"{span} moved to {lines_str(found)} ({moved_by(a - span.start)})" if moved
             else f"{span} still holds the anchored text")
    if anchor.exact is not None:
        shift = reindented(span.path, anchor.exact, lines[a - 1 : b],
                           partial(index.open_before, a - 1))
        if shift:
            return f"{where}, {reindent_words(shift)}"
    changed = _context_changed(anchor, lines, found)
    why = "the text found may be a copy, or the code around it changed" if moved else (
        "the code around it changed")
    if changed:
        held = [k for k, want in (("prefix", anchor.prefix), ("suffix", anchor.suffix))
                if normalize(want) and k not in changed]
        still = f" (its {held[0]} matches)" if held else ""
        return (f"{where}, context changed: {' and '.join(changed)} "
                f"{'differ' if len(changed) > 1 else 'differs'} there{still}: {why}")
    if moved and not (normalize(anchor.prefix) or normalize(anchor.suffix)):
        return (f"{where}, no non-blank context to confirm the move (its anchor has "
                "no prefix or suffix holding code): the text found may be a copy")
    return None


def judged(manifest: Manifest, checks: Sequence[Check]) -> None:
    """``Pp1Error`` (exit 2) when nothing on the target was judged, as ``check`` says.

    A manifest pinning only what ``pin`` does not measure (git sources, remote
    pins, donors) would otherwise come back ``0 unchanged`` with exit 0, and be
    written: a success for a run that measured nothing.
    """
    if any(c.status is not Status.SKIP for c in checks):
        return
    from pp1audit.text.safe import count

    what = f"every check was skipped ({count(len(checks), 'check')})" if checks else "it pins nothing"
    raise Pp1Error(f"{manifest.path}: {what}, so nothing on the target was judged: pin measures "
                   "the version, files, citations and invariants of the target (sources, remote "
                   "pins and donors are read by check); nothing written")


class Measure:
    """One pin run's measurements: the checks on the new tree, its files, and why each
    citation can or cannot be carried."""

    def __init__(self, manifest: Manifest, source: Source, accept: frozenset[str] = frozenset(),
                 unmarked: frozenset[str] = frozenset()) -> None:
        from pp1audit.run import audit

        self.manifest = manifest
        self.store = FileStore(source)
        self.result = audit(manifest, source)
        judged(manifest, self.result.checks)
        self.accept = accept
        """Citation ids the user accepted where they are found although in doubt (``--accept``)."""
        self.accepted: dict[str, str] = {}
        """Accepted citations, and the doubt each was carried despite."""
        self.unmarked = unmarked
        """Accepted citations whose ``unresolved`` mark (an earlier pin's) is lifted:
        judged afresh, and the mark taken off when carried."""
        self.needless: list[str] = []
        """Accepted citations that needed no accepting (carried as they would be anyway)."""
        cited = self.checks("citation")
        self.problems: dict[str, str | None] = {
            cid: self._citation_problem(cit, cited[cid])
            for cid, cit in manifest.citations.items() if cit.source is None and cid in cited
        }
        """Target citations with a check: why each cannot be carried, or None when it can.
        Decided before anything is edited, because a file's digest depends on them."""

    def checks(self, kind: str) -> dict[str, Check]:
        """This run's checks of ``kind`` on the target (not on a source), by id."""
        return {c.id: c for c in self.result.checks if c.kind == kind and c.source is None}

    def _citation_problem(self, cit: Citation, check: Check) -> str | None:
        """Why this citation cannot be carried, or None when its new place is certain."""
        if cit.unresolved is not None:
            return f"still marked: {cit.unresolved}"
        if check.status not in (Status.PASS, Status.DRIFT) or check.found_lines is None:
            return check.message
        a, b = check.found_lines
        try:
            lines = self.store.get(cit.span.path).text_lines()
        except SourceError as exc:
            return str(exc)
        if not 1 <= a <= b <= len(lines):
            return f"found at {a}-{b}, outside the file ({len(lines)} lines)"
        if check.excerpt is not None and check.excerpt != "\n".join(lines[a - 1 : b]):
            return f"{cit.span.path} changed while it was being read"
        anchor = cit.anchor
        if check.status is Status.DRIFT and anchor is not None and check.places > 1:
            what = (f"invariant '{anchor.invariant}' matches in {check.places} places"
                    if anchor.invariant
                    else f"the anchored text occurs in {check.places} equally good places")
            return f"{what} in {cit.span.path}; which one the audit means is for a human to say"
        if anchor is not None and self._by_digest(cit, check):
            alone = self._by_anchor(cit)
            if alone.status is not Status.PASS:
                return f"passes only by its file's pinned SHA-256; by its anchor: {alone.message}"
        same_file = self.manifest.files.get(cit.span.path) == self.store.get(cit.span.path).sha256
        why = doubt(cit, self.store.get(cit.span.path).index, (a, b), same_file)
        if why is None:
            if cit.id in self.accept and cit.id not in self.unmarked:
                self.needless.append(cit.id)
            return None
        if cit.id in self.accept:
            self.accepted[cit.id] = why
            return None
        return f"{why}; --accept {cit.id} carries it as found"

    def _by_digest(self, cit: Citation, check: Check) -> bool:
        """True when ``check`` passed by the file's pinned digest, whatever the anchor says."""
        pinned = self.manifest.files.get(cit.span.path)
        return check.status is Status.PASS and pinned == self.store.get(cit.span.path).sha256

    def _by_anchor(self, cit: Citation) -> Check:
        """``cit`` judged by its anchor alone, as ``check`` would judge it without the file pin.

        A digest proves the lines only if it was pinned when the span was right; a
        pin written while the citation was unresolved (or a span edited by hand)
        would otherwise be re-quoted from code the audit never meant.
        """
        from pp1audit.checks.citations import check_citation

        by_invariant = None
        if cit.anchor is not None and cit.anchor.invariant is not None:
            from pp1audit.checks.invariants import anchored_citation

            engine, invariants = self.engine, self.manifest.invariants

            def by_invariant(c: Citation, base: Check) -> Check:
                return anchored_citation(c, base, engine, invariants)

        return check_citation(cit, None, self.store, invariant_anchor=by_invariant)

    @cached_property
    def engine(self) -> Engine:
        """Invariant evaluation over this run's store, made only when an anchor needs it."""
        from pp1audit.rules.engine import Engine

        return Engine(self.store)

    def outcome(self, cit: Citation, index: LineIndex, found: tuple[int, int], text_changed: bool,
                 context: list[str]) -> tuple[str, str]:
        """The row's outcome and detail, in ``diff``'s words: text that changed is ``changed``
        (with its move), text that only moved is ``moved``.

        An invariant anchor pins no text: a span of another length is changed
        text (as ``diff`` finds it); one of the same length may or may not be,
        and the row says the text was not pinned.
        """
        span = cit.span
        pinned = (span.start, span.end)
        anchor = cit.anchor
        invariant = anchor.invariant if anchor is not None else None
        resized = invariant is not None and found[1] - found[0] != span.end - span.start
        notes: list[str] = []
        if text_changed:
            shift = (reindented(span.path, anchor.exact, index.lines[found[0] - 1 : found[1]],
                                partial(index.open_before, found[0] - 1))
                     if anchor is not None else 0)
            why = reindent_words(shift) if shift else "whitespace differs"
            notes.append(f"anchor text re-quoted ({why})")
        if resized:
            notes.append(f"{_count_lines(pinned)}, now {found[1] - found[0] + 1}: the cited text changed "
                         f"(invariant '{invariant}' still holds; `pp1audit diff` shows how)")
        elif invariant is not None and found != pinned:
            notes.append(f"text not pinned: invariant '{invariant}' anchors it")
        if cit.id in self.unmarked:
            notes.append("its unresolved mark removed (--accept)")
        if cit.id in self.accepted:
            notes.append("carried as found (--accept)")
        notes.extend(context)
        if text_changed or resized:
            outcome = CHANGED
        elif found != pinned:
            outcome = MOVED
        else:
            outcome = UNCHANGED
        place = f"{lines_str(pinned)} → {lines_str(found)}" if found != pinned else "same place"
        if outcome == UNCHANGED and not notes:
            return outcome, ""
        return outcome, "; ".join([place, *notes])

