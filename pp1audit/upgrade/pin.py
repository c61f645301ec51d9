"""``pp1audit pin``: carry a manifest to a new tree, as a reviewable change.

AIDE/Tripwire's *update* step for an audit: when the image moves (a new
release, or a rollback), the pins are re-measured on the new tree and written
back into the same manifest, so the audit's prose, ids, comments and key order
stay as their authors wrote them (ruamel round trip, ``pp1audit.upgrade.yamledit``).

Where a citation is now comes from the core alone: ``audit`` is run on the new
tree and each citation check's ``found_lines`` (whatever anchored it: text or
an invariant) becomes its new ``at``; the anchor text is then re-quoted from
those lines. Nothing is guessed. A citation the checks cannot find, or find in
several equally good places, is **unresolved**: the lesson of text-annotation
tools is that a confident wrong re-anchor is worse than none. So is a find
that keeps the text but maybe not its meaning: a Python span re-indented (under
an added ``if False:``), one whose context (any non-blank side of ``prefix``,
``suffix``) changed, moved or not, and one that moved with no non-blank context
to confirm the move (maybe a copy); those are unresolved too, until a human
accepts them (``--accept ID``, which also lifts an earlier pin's mark).
Whatever is re-quoted (text, context) is said in the review. Unresolved items
are marked in the manifest (``unresolved: "reason"``), which makes ``check``
fail them until a human decides.

``plan`` is pure: it returns the new text and a review list; the CLI prints and
writes.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property, partial
from typing import TYPE_CHECKING, Any

from pp1audit.checks.citations import moved_by, reindent_words, reindented
from pp1audit.errors import Pp1Error, SourceError
from pp1audit.formats import counted
from pp1audit.manifest import Anchor, Citation, Manifest, text_lines
from pp1audit.result import Check, Status
from pp1audit.sources import Source
from pp1audit.sources.store import FileStore
from pp1audit.text.anchors import block, context_lines
from pp1audit.text.spans import LineIndex, line_range, normalize, span_sha256

if TYPE_CHECKING:
    from pp1audit.rules.engine import Engine
    from pp1audit.upgrade.yamledit import Note

UNCHANGED = "unchanged"
MOVED = "moved"
CHANGED = "changed"
UNRESOLVED = "unresolved"
NOT_CARRIED = "not carried"
TARGET_FAILS = "target fails"
"""A check of the target itself that fails and that no pin can carry (the tree
differs from its own RECORD, a tampered pyc): the manifest written would fail."""
STALE = "stale"
"""A claim whose evidence the new target no longer shows in the form its rules
describe: listed for a person to re-review, not marked and not refused (the rules
are not pins: there is nothing to carry, and the claim may still hold)."""

MARK = "pp1audit pin: UNRESOLVED"
"""Comment put on pins that have no ``unresolved`` key (version, files) when marked."""

_DIGEST_KEYS = {"tree": "tree_sha256", "startup": "startup_sha256"}
"""Record checks whose ``actual`` pin re-pins: check id -> key under ``target``."""

_SEP = re.compile(r"^[^:]+:\d+(?P<sep>\s*[-–]\s*)\d+$")


@dataclass(frozen=True)
class PinItem:
    """One row of the review table: what happened to one pin."""

    kind: str
    id: str
    outcome: str
    old: str | None = None
    new: str | None = None
    detail: str = ""
    path: str | None = None
    old_lines: tuple[int, int] | None = None
    new_lines: tuple[int, int] | None = None

    @property
    def label(self) -> str:
        """The outcome as the table shows it (a file's or the tree's change is a hash change)."""
        if self.outcome == CHANGED and self.kind in ("file", "record"):
            return "hash changed"
        return self.outcome


@dataclass(frozen=True)
class PinPlan:
    """A pin computed but not written: the new text and the review of every pin."""

    manifest_path: str
    target_kind: str
    target_location: str
    old_text: str
    new_text: str
    items: tuple[PinItem, ...]
    notes: tuple[str, ...] = ()
    """One line each, for the user: an ``--accept`` that had nothing to accept."""

    @property
    def unresolved(self) -> list[PinItem]:
        """Items a human must decide; a plan with any is written only when allowed."""
        return [i for i in self.items if i.outcome == UNRESOLVED]

    @property
    def target_fails(self) -> list[PinItem]:
        """Failing checks of the target that no pin can carry (``check`` will fail too)."""
        return [i for i in self.items if i.outcome == TARGET_FAILS]

    @property
    def stale(self) -> list[PinItem]:
        """Claims to re-review by hand: their evidence changed shape on the target."""
        return [i for i in self.items if i.outcome == STALE]

    @property
    def moved(self) -> list[PinItem]:
        """Citations found at other lines (and carried there)."""
        return [i for i in self.items if i.outcome == MOVED]

    def counts(self) -> dict[str, int]:
        """Items per outcome, every outcome present."""
        out = dict.fromkeys((UNCHANGED, MOVED, CHANGED, STALE, UNRESOLVED, NOT_CARRIED,
                             TARGET_FAILS), 0)
        for item in self.items:
            out[item.outcome] += 1
        return out


def _lines_str(lines: tuple[int, int]) -> str:
    return line_range(*lines, "–")


def format_at(old_at: str, path: str, start: int, end: int) -> str:
    """``path:start-end`` written with the separator the author used (``-`` or ``–``)."""
    if start == end:
        return f"{path}:{start}"
    m = _SEP.match(old_at)
    return f"{path}:{start}{m['sep'] if m else '-'}{end}"


def _like(old: str, new: str) -> str:
    """``new`` with the final-newline convention of ``old`` (``|`` vs ``|-`` blocks)."""
    if not old.endswith("\n") and new.endswith("\n") and not new.endswith("\n\n") and new != "\n":
        return new[:-1]  # a last line that is blank needs its newline to stay a line
    return new


def _count_lines(lines: tuple[int, int]) -> str:
    n = lines[1] - lines[0] + 1
    return f"{n} line{'' if n == 1 else 's'}"


def _context_holds(lines: list[str], found: tuple[int, int], before: bool, want: list[str]) -> bool:
    """True when the context ``want`` (an anchor's ``prefix``/``suffix``) still surrounds ``found``.

    Compared as ``_carry`` re-quotes it: the same number of non-blank lines,
    whitespace-normalised."""
    ctx = context_lines(lines, *found, before, len(normalize(want)))
    return normalize(ctx) == normalize(want)


def _context_changed(anchor: Anchor, lines: list[str], found: tuple[int, int]) -> list[str]:
    """The non-blank sides of ``anchor``'s context (``prefix``, ``suffix``) that no longer
    surround ``found``; a side of blank lines only confirms nothing and is not judged."""
    sides = (("prefix", anchor.prefix), ("suffix", anchor.suffix))
    return [key for key, want in sides
            if normalize(want) and not _context_holds(lines, found, key == "prefix", want)]


def _doubt(cit: Citation, index: LineIndex, found: tuple[int, int], same_file: bool) -> str | None:
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
    where = (f"{span} moved to {_lines_str(found)} ({moved_by(a - span.start)})" if moved
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


def _judged(manifest: Manifest, checks: Sequence[Check]) -> None:
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


def _invariant_marks_allowed() -> bool:
    """True when the schema lets an invariant record carry an ``unresolved`` key."""
    from pp1audit.manifest.schema import SCHEMA

    inv = SCHEMA.get("properties", {}).get("invariants", {})
    rec = inv.get("additionalProperties", {}) if isinstance(inv, dict) else {}
    return isinstance(rec, dict) and "unresolved" in rec.get("properties", {})


def _insert_after(mapping: Any, after: str, key: str, value: Any) -> None:
    keys = list(mapping.keys())
    pos = keys.index(after) + 1 if after in keys else len(keys)
    mapping.insert(pos, key, value)


class _Planner:
    """Holds one pin run's state: the checks, the store and the document being edited."""

    def __init__(self, manifest: Manifest, text: str, source: Source,
                 accept: frozenset[str] = frozenset(), unmarked: frozenset[str] = frozenset()
                 ) -> None:
        from pp1audit.run import audit
        from pp1audit.upgrade.yamledit import load_document

        self.manifest = manifest
        self.source = source
        self.store = FileStore(source)
        self.result = audit(manifest, source)
        _judged(manifest, self.result.checks)
        self.accept = accept
        """Citation ids the user accepted where they are found although in doubt (``--accept``)."""
        self.accepted: dict[str, str] = {}
        """Accepted citations, and the doubt each was carried despite."""
        self.unmarked = unmarked
        """Accepted citations whose ``unresolved`` mark (an earlier pin's) is lifted:
        judged afresh, and the mark taken off when carried."""
        self.needless: list[str] = []
        """Accepted citations that needed no accepting (carried as they would be anyway)."""
        self.doc = load_document(text)
        self.items: list[PinItem] = []
        self.edited: set[tuple[str, ...]] = set()
        """Key paths of the entries this pin changed: only their lines are re-emitted."""
        self.notes: dict[tuple[str, ...], Note] = {}
        """Key paths whose UNRESOLVED comment this pin put on or took off: only that line changes."""
        cited = self.checks("citation")
        self.problems: dict[str, str | None] = {
            cid: self._citation_problem(cit, cited[cid])
            for cid, cit in manifest.citations.items() if cit.source is None and cid in cited
        }
        """Target citations with a check: why each cannot be carried, or None when it can.
        Decided before anything is edited, because a file's digest depends on them."""

    def checks(self, kind: str) -> dict[str, Check]:
        return {c.id: c for c in self.result.checks if c.kind == kind and c.source is None}

    def _note(self, mapping: Any, path: tuple[str, str], note: Note) -> bool:
        """Put ``note`` on (or take it off) the entry at ``path``; True when that changed it."""
        if mapping is None or path[-1] not in mapping or not self.doc.note(mapping, path[-1], note):
            return False
        self.notes[path] = note
        return True

    def _mark(self, mapping: Any, path: tuple[str, str], reason: str) -> None:
        """Mark a pin that has no ``unresolved`` key (version, file, invariant) with a comment.

        The reason is shown through ``printable``: a comment ends at a line break,
        and messages quote the target.
        """
        from pp1audit.text.safe import printable
        from pp1audit.upgrade.yamledit import Note

        self._note(mapping, path, Note(MARK, f"{MARK}: {printable(reason).strip()}"))

    def _clear_mark(self, mapping: Any, path: tuple[str, str]) -> None:
        """Take an earlier pin's UNRESOLVED comment off ``path`` now that it is resolved.

        Other comments on that line, and the lines after it, are the author's and stay.
        """
        from pp1audit.upgrade.yamledit import Note

        self._note(mapping, path, Note(MARK))

    # -- version --------------------------------------------------------------
    def version(self) -> None:
        m = self.manifest
        if m.version is None:
            return
        check = next((c for c in self.result.checks if c.kind == "version"), None)
        target = self.doc.data["target"]
        if check is None:  # pragma: no cover - the core always checks a pinned version
            return
        if check.status is Status.PASS or check.actual:
            self._clear_mark(target, ("target", "version"))
        if check.status is Status.PASS:
            self.items.append(PinItem("version", "version", UNCHANGED, m.version, m.version))
        elif check.actual:
            from pp1audit.upgrade.yamledit import set_scalar

            set_scalar(target, "version", check.actual)
            self.edited.add(("target", "version"))
            self.items.append(PinItem("version", "version", CHANGED, m.version, check.actual,
                                      path=check.path))
        else:
            self._mark(target, ("target", "version"), check.message)
            self.items.append(PinItem("version", "version", UNRESOLVED, m.version, None,
                                      check.message, path=check.path))

    # -- files ------------------------------------------------------------------
    def files(self) -> None:
        from pp1audit.upgrade.yamledit import set_scalar

        fmap = self.doc.data.get("files")
        held: dict[str, list[str]] = {}
        for cid, problem in self.problems.items():
            if problem is not None:
                held.setdefault(self.manifest.citations[cid].span.path, []).append(cid)
        for path, digest in self.manifest.files.items():
            try:
                new = self.store.get(path).sha256
            except SourceError as exc:
                reason = f"{exc.message}; the old digest is kept"
                self._mark(fmap, ("files", path), reason)
                self.items.append(PinItem("file", path, UNRESOLVED, digest, None, reason, path=path))
                continue
            if path not in held:
                self._clear_mark(fmap, ("files", path))
            if new == digest:
                self.items.append(PinItem("file", path, UNCHANGED, digest, new, path=path))
            elif path in held:
                self._hold_digest(fmap, path, digest, held[path])
            else:
                set_scalar(fmap, path, new)
                self.edited.add(("files", path))
                self.items.append(PinItem("file", path, CHANGED, digest, new, path=path))

    def _hold_digest(self, fmap: Any, path: str, digest: str, cids: list[str]) -> None:
        """Keep a changed file's old digest while citations in it are unresolved.

        Pinned, the new digest would prove those citations' stale spans (a citation
        passes by its file's digest), so once their marks were removed ``check``
        would pass lines that hold other code. Kept, the file fails by itself and
        its citations are judged by their anchors.
        """
        names = ", ".join(f"'{c}'" for c in cids)
        reason = (f"{'citations' if len(cids) > 1 else 'citation'} {names} "
                  f"{'are' if len(cids) > 1 else 'is'} unresolved; the old digest is kept")
        self._mark(fmap, ("files", path), reason)
        self.items.append(PinItem("file", path, UNRESOLVED, digest, None, reason, path=path))

    # -- citations --------------------------------------------------------------
    def citations(self) -> None:
        checks = self.checks("citation")
        cmap = self.doc.data.get("citations")
        for cid, cit in self.manifest.citations.items():
            rec = cmap[cid]
            check = checks.get(cid)
            if cid not in self.problems:
                self.items.append(PinItem(
                    "citation", cid, NOT_CARRIED, str(cit.span), str(cit.span),
                    f"read from source '{cit.source}', not the target" if cit.source
                    else "no check ran for it", path=cit.span.path))
                continue
            reason = self.problems[cid]
            if reason is not None:
                self._unresolved_citation(cit, rec, reason)
                continue
            assert check is not None and check.found_lines is not None
            self._carry(cit, rec, check.found_lines)

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
        doubt = _doubt(cit, self.store.get(cit.span.path).index, (a, b), same_file)
        if doubt is None:
            if cit.id in self.accept and cit.id not in self.unmarked:
                self.needless.append(cit.id)
            return None
        if cit.id in self.accept:
            self.accepted[cit.id] = doubt
            return None
        return f"{doubt}; --accept {cit.id} carries it as found"

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

    def _unresolved_citation(self, cit: Citation, rec: Any, reason: str) -> None:
        """Mark ``cit`` unresolved (``unresolved: reason``); a mark kept from an earlier
        pin stays, unless ``--accept`` lifted it: then it says today's reason."""
        from pp1audit.upgrade.yamledit import set_scalar

        if "unresolved" in rec and cit.unresolved is None:
            if set_scalar(rec, "unresolved", reason):
                self.edited.add(("citations", cit.id))
        elif cit.unresolved is None:
            _insert_after(rec, "at", "unresolved", reason)
            self.edited.add(("citations", cit.id))
        self.items.append(PinItem(
            "citation", cit.id, UNRESOLVED, str(cit.span), None, reason, path=cit.span.path,
            old_lines=(cit.span.start, cit.span.end)))

    def _carry(self, cit: Citation, rec: Any, found: tuple[int, int]) -> None:
        """Move the citation to ``found`` and re-quote its anchor from those lines.

        ``exact`` (and a span digest) always quote the lines found. Context lines
        are re-quoted only when the written ones no longer surround the span (so
        an unchanged neighbourhood costs no diff), with as many lines as the
        author wrote, and each text keeps the author's final-newline convention.
        Whatever was re-quoted is said in the row: a context rewritten in silence
        would hide that the span now sits among other code.
        """
        from pp1audit.upgrade.yamledit import set_scalar

        a, b = found
        span = cit.span
        fd = self.store.get(span.path)
        lines = fd.text_lines()
        old_at = str(rec["at"])
        set_scalar(rec, "at", format_at(old_at, span.path, a, b))
        unmarked = "unresolved" in rec  # an earlier pin's mark, lifted by --accept
        if unmarked:
            del rec["unresolved"]
        text_changed = False
        context: list[str] = []
        anchor = rec.get("anchor")
        if anchor is not None:
            if "exact" in anchor:
                new_exact = _like(str(anchor["exact"]), block(lines[a - 1 : b]))
                text_changed |= set_scalar(anchor, "exact", new_exact)
            if "sha256" in anchor:
                text_changed |= set_scalar(anchor, "sha256", span_sha256(lines[a - 1 : b]))
            context = self._requote_context(anchor, lines, found)
        pinned = (span.start, span.end)
        if found != pinned or text_changed or context or unmarked:
            self.edited.add(("citations", cit.id))
        outcome, detail = self._outcome(cit, fd.index, found, text_changed, context)
        self.items.append(PinItem(
            "citation", cit.id, outcome, old_at, str(rec["at"]), detail, path=span.path,
            old_lines=pinned, new_lines=found))

    @staticmethod
    def _requote_context(anchor: Any, lines: list[str], found: tuple[int, int]) -> list[str]:
        """Re-quote ``prefix``/``suffix`` where they no longer surround ``found``; what was done, in words."""
        from pp1audit.upgrade.yamledit import drop_key, set_scalar

        done: list[str] = []
        for key in ("prefix", "suffix"):
            if key not in anchor:
                continue
            old = str(anchor[key])
            want = text_lines(old)
            if _context_holds(lines, found, key == "prefix", want):
                continue
            ctx = context_lines(lines, *found, key == "prefix", len(normalize(want)))
            if normalize(ctx):
                set_scalar(anchor, key, _like(old, block(ctx)))
                done.append(f"{key} changed, re-quoted")
            else:
                drop_key(anchor, key)
                done.append(f"{key} dropped (no code {'before' if key == 'prefix' else 'after'} "
                            "the span now)")
        return done

    def _outcome(self, cit: Citation, index: LineIndex, found: tuple[int, int], text_changed: bool,
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
        place = f"{_lines_str(pinned)} → {_lines_str(found)}" if found != pinned else "same place"
        if outcome == UNCHANGED and not notes:
            return outcome, ""
        return outcome, "; ".join([place, *notes])

    # -- invariants and the rest -------------------------------------------------
    def others(self) -> None:
        allowed = _invariant_marks_allowed()
        invariants = self.doc.data.get("invariants")
        for check in self.result.checks:
            if check.kind in ("version", "file", "citation"):
                continue
            key = _DIGEST_KEYS.get(check.id) if check.kind == "record" else None
            if key is not None and getattr(self.manifest, key):
                self._target_digest(check, key)
                continue
            if check.kind == "invariant" and check.source is None:
                if check.status is Status.PASS:
                    self._clear_mark(invariants, ("invariants", check.id))
                    self.items.append(PinItem("invariant", check.id, UNCHANGED, path=check.path,
                                              detail=check.message))
                    continue
                if check.status is Status.STALE:
                    self.items.append(PinItem("invariant", check.id, STALE, path=check.path,
                                              detail=f"re-review: {check.message}"))
                    continue
                if check.status in (Status.FAIL, Status.ERROR):
                    self._unresolved_invariant(check, invariants, allowed)
                    continue
            fails = check.kind == "record" and check.status in (Status.FAIL, Status.ERROR)
            # Provenance (git sources, remotes, donors) is not measured by pin: its
            # skip would tell the user to pass options pin does not have.
            detail = (f"{check.kind} pins are read by check (its sources and cache), not carried "
                      "by pin" if check.status is Status.SKIP else
                      f"{check.status.value}: {check.message}")
            self.items.append(PinItem(
                check.kind, check.id, TARGET_FAILS if fails else NOT_CARRIED, path=check.path,
                detail=detail))

    def _target_digest(self, check: Check, key: str) -> None:
        """Re-pin ``target.<key>`` (``tree_sha256``, ``startup_sha256``) to the digest
        the record check measured.

        The tree and startup digests are measurements of the target like a file's
        SHA-256, so they are carried like one; left stale, the manifest written
        would fail ``check``. One that could not be computed is marked unresolved.
        """
        from pp1audit.upgrade.yamledit import set_scalar

        old = getattr(self.manifest, key)
        target = self.doc.data["target"]
        if check.status is Status.PASS or check.actual:
            self._clear_mark(target, ("target", key))
        if check.status is Status.PASS:
            self.items.append(PinItem(check.kind, check.id, UNCHANGED, old, old, path=check.path))
        elif check.actual:
            set_scalar(target, key, check.actual)
            self.edited.add(("target", key))
            self.items.append(PinItem(check.kind, check.id, CHANGED, old, check.actual,
                                      path=check.path))
        else:
            self._mark(target, ("target", key), check.message)
            self.items.append(PinItem(check.kind, check.id, UNRESOLVED, old, None, check.message,
                                      path=check.path))

    def _unresolved_invariant(self, check: Check, invariants: Any, allowed: bool) -> None:
        if invariants is not None and check.id in invariants:
            rec = invariants[check.id]
            if allowed and hasattr(rec, "insert"):
                if "unresolved" not in rec:
                    rec.insert(len(rec), "unresolved", check.message)
                    self.edited.add(("invariants", check.id))
            else:
                self._mark(invariants, ("invariants", check.id), check.message)
        self.items.append(PinItem("invariant", check.id, UNRESOLVED, path=check.path,
                                  detail=check.message))


def plan(manifest: Manifest, text: str, source: Source, accept: Sequence[str] = ()) -> PinPlan:
    """Compute the re-pinned manifest for ``source`` and review every pin; writes nothing.

    ``accept``: ids of citations to carry where they are found although that
    place is in doubt (re-indented, its context changed or none to confirm a
    move: ``_doubt``), or although an earlier pin marked them unresolved; a
    human said so after reading the reason. An id that names no citation of
    the target is bad input: a typo would otherwise accept nothing, silently;
    one that needed no accepting is said in ``PinPlan.notes``.
    The new text is proved before it is returned: it must load, and every pin
    not reported unresolved must pass on ``source``. A pin that would not is a
    bug, reported as an error rather than written.
    """
    ours = {cid for cid, cit in manifest.citations.items() if cit.source is None}
    unknown = [cid for cid in accept if cid not in ours]
    if unknown:
        from pp1audit.text.safe import printable

        raise Pp1Error(f"{manifest.path}: --accept {printable(unknown[0])}: no citation of the "
                       "target has that id")
    unmarked = frozenset(cid for cid in accept if manifest.citations[cid].unresolved is not None)
    p = _Planner(_lift_marks(manifest, unmarked), text, source, frozenset(accept), unmarked)
    p.version()
    p.files()
    p.citations()
    p.others()
    new_text = _minimal(text, p.doc.dump(), p.edited, p.doc.data, p.notes)
    items = tuple(p.items)
    _prove(manifest.path, new_text, source, items)
    notes = tuple(f"--accept {cid}: nothing to accept (its place is not in doubt); carried as "
                  "it would be without it" for cid in dict.fromkeys(p.needless))
    return PinPlan(manifest.path, source.kind, source.location, text, new_text, items, notes)


def _lift_marks(manifest: Manifest, ids: frozenset[str]) -> Manifest:
    """``manifest`` with the ``unresolved`` marks of citations ``ids`` lifted.

    A marked citation always fails ``check``, so the checks never say where it is
    now. The mark's own advice is ``--accept ID``: the human has reviewed it, so
    it is judged afresh, as if unmarked, and carried (its mark taken off) when it
    is found; a place still not found stays unresolved, with today's reason.
    """
    if not ids:
        return manifest
    from dataclasses import replace

    cits = {cid: replace(c, unresolved=None) if cid in ids else c
            for cid, c in manifest.citations.items()}
    return replace(manifest, citations=cits)


def _minimal(old_text: str, dumped: str, edited: set[tuple[str, ...]], old_doc: Any,
             notes: dict[tuple[str, ...], Note]) -> str:
    """The dump spliced into the original text so that only edited entries change.

    An entry whose only change is its UNRESOLVED comment changes on its key line
    alone. The splice is kept only when it loads to exactly the data of the full
    dump; otherwise the full dump (same data, ruamel's layout) is used.
    """
    from pp1audit.upgrade.yamledit import same_data, splice

    if not edited and not notes:
        return old_text
    if "\r\n" in old_text:  # ruamel writes LF; a CRLF manifest stays CRLF
        dumped = dumped.replace("\r\n", "\n").replace("\n", "\r\n")
    spliced = splice(old_text, dumped, edited, old_doc, notes)
    return spliced if same_data([spliced], [dumped]) else dumped  # else a splice bug


def _prove(name: str, new_text: str, source: Source, items: tuple[PinItem, ...]) -> None:
    from pp1audit.manifest import parse
    from pp1audit.run import audit

    try:
        new = parse(new_text, name)
    except Pp1Error as exc:  # pragma: no cover - a round-trip bug
        raise Pp1Error(f"pin: internal error: the re-pinned manifest does not load: {exc}") from None
    carried = {(i.kind, i.id) for i in items if i.outcome in (UNCHANGED, MOVED, CHANGED)}
    result = audit(new, source)
    for c in result.checks:
        key = (c.kind, "version" if c.kind == "version" else c.path if c.kind == "file" else c.id)
        if key in carried and c.status is not Status.PASS:  # pragma: no cover - a bug
            raise Pp1Error(f"pin: internal error: {c.kind} {c.id} does not pass after the pin: "
                           f"{c.message}")


def manifest_diff(plan: PinPlan, new_name: str | None = None) -> str:
    """Unified diff of the manifest text (old → new); empty when nothing changed."""
    return "".join(difflib.unified_diff(
        plan.old_text.splitlines(keepends=True), plan.new_text.splitlines(keepends=True),
        fromfile=plan.manifest_path, tofile=new_name or plan.manifest_path,
    ))


def render_diff(plan: PinPlan, new_name: str | None = None) -> str:
    """The manifest's diff as text output shows it: control and invisible formatting
    characters escaped (``safetext``), so a cited line or a file name holding a bidi
    override cannot reorder the diff a reviewer approves.

    The header lines name files and are escaped as names are; the rest is YAML,
    whose backslashes are its own notation and are kept (``printable_code``). A
    CRLF manifest's line ends are line ends, not characters to show.
    """
    from pp1audit.text.safe import printable, printable_code

    text = manifest_diff(plan, new_name)
    if not text:
        return ""
    lines = [line.removesuffix("\r") for line in text.removesuffix("\n").split("\n")]
    shown = [printable(x) if x.startswith(("--- ", "+++ ")) and n < 2 else printable_code(x)
             for n, x in enumerate(lines)]
    return "\n".join(shown) + "\n"


def _short(value: str | None) -> str:
    if value is None:
        return "—"
    return value[:12] + "…" if re.fullmatch(r"[0-9a-f]{64}", value) else value


def review_rows(plan: PinPlan) -> list[tuple[str, str, str, str]]:
    """(outcome, kind, id, detail) for every item, in manifest order."""
    rows = []
    for i in plan.items:
        if i.kind == "citation" and i.outcome == MOVED:
            detail = i.detail
        elif i.kind != "citation" and i.outcome == CHANGED:
            detail = f"{_short(i.old)} → {_short(i.new)}"
        else:
            detail = i.detail
        label = i.label.upper() if i.outcome == UNRESOLVED else i.label
        rows.append((label, i.kind, i.id, detail))
    return rows


def render_review(plan: PinPlan, verbose: bool = True) -> str:
    """The review table as plain text: one line per pin and a summary line.

    Cells quote the target (versions, paths, messages): shown through
    ``printable``, as in check's text format, so the tree cannot write on the
    terminal."""
    from pp1audit.text.safe import printable

    rows = [tuple(printable(cell) for cell in r)
            for r in review_rows(plan) if verbose or r[0] != UNCHANGED]
    widths = [max((len(r[k]) for r in rows), default=0) for k in range(3)]
    out = [printable(f"pin {plan.manifest_path} → {plan.target_kind} {plan.target_location}")]
    for r in rows:
        cells = "  ".join(r[k].ljust(widths[k]) for k in range(3))
        out.append(f"  {cells}  {r[3]}".rstrip())
    out.append(f"summary: {counted(plan.counts())}")
    out.extend(f"note: {printable(note)}" for note in plan.notes)
    return "\n".join(out) + "\n"


def as_dict(plan: PinPlan, new_name: str | None = None) -> dict[str, Any]:
    """The review as JSON-ready data (``pp1audit.pin/1``), the manifest diff included."""
    return {
        "format": "pp1audit.pin/1",
        "manifest": plan.manifest_path,
        "manifest_diff": manifest_diff(plan, new_name),
        "target": {"kind": plan.target_kind, "location": plan.target_location},
        "counts": plan.counts(),
        "notes": list(plan.notes),
        "items": [
            {
                "kind": i.kind, "id": i.id, "outcome": i.outcome, "old": i.old, "new": i.new,
                "path": i.path, "old_lines": list(i.old_lines) if i.old_lines else None,
                "new_lines": list(i.new_lines) if i.new_lines else None, "detail": i.detail,
            }
            for i in plan.items
        ],
    }


__all__ = ["PinItem", "PinPlan", "as_dict", "manifest_diff", "plan", "render_review"]
