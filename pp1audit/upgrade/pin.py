"""``pp1audit pin``: carry a manifest to a new tree, as a reviewable change.

AIDE/Tripwire's *update* step for an audit: when the image moves (a new
release, or a rollback), the pins are re-measured on the new tree
(``pp1audit.upgrade.measure``) and written back into the same manifest text, so
the audit's prose, ids, comments, quoting and key order stay as their authors
wrote them: only the values that changed change (``pp1audit.upgrade.yamledit``).

Each citation the checks place with certainty gets its new ``at`` and its
anchor text re-quoted from those lines. One that cannot be placed, or whose new
place is in doubt and not ``--accept``-ed, is marked in the manifest
(``unresolved: "reason"``), which makes ``check`` fail it until a human decides;
pins that have no such key (version, files, invariants) are marked with a
comment. Whatever is re-quoted (text, context) is said in the review.

``plan`` is pure: it returns the new text and a review list
(``pp1audit.upgrade.review``); the CLI prints and writes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pp1audit.errors import Pp1Error, SourceError
from pp1audit.manifest import Citation, Manifest, text_lines
from pp1audit.result import Check, Status
from pp1audit.sources import Source
from pp1audit.text.anchors import block, context_lines
from pp1audit.text.spans import normalize, span_sha256
from pp1audit.upgrade.measure import Measure, context_holds
from pp1audit.upgrade.review import (
    CHANGED,
    MOVED,
    NOT_CARRIED,
    STALE,
    TARGET_FAILS,
    UNCHANGED,
    UNRESOLVED,
    PinItem,
    PinPlan,
)
from pp1audit.upgrade.yamledit import TextDoc

MARK = "pp1audit pin: UNRESOLVED"
"""Comment put on pins that have no ``unresolved`` key (version, files, invariants) when marked."""

_DIGEST_KEYS = {"tree": "tree_sha256", "startup": "startup_sha256"}
"""Record checks whose ``actual`` pin re-pins: check id -> key under ``target``."""

_SEP = re.compile(r"^[^:]+:\d+(?P<sep>\s*[-–]\s*)\d+$")


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


class _Planner(Measure):
    """One pin run: its measurements, and the manifest text being edited from them."""

    def __init__(self, manifest: Manifest, text: str, source: Source,
                 accept: frozenset[str] = frozenset(), unmarked: frozenset[str] = frozenset()
                 ) -> None:
        super().__init__(manifest, source, accept, unmarked)
        self.doc = TextDoc(text, manifest.path)
        self.items: list[PinItem] = []

    def _mark(self, path: tuple[str, str], reason: str) -> None:
        """Mark a pin that has no ``unresolved`` key (version, file, invariant) with a comment.

        The reason is shown through ``printable``: a comment ends at a line break,
        and messages quote the target.
        """
        from pp1audit.text.safe import printable

        self.doc.note(path, MARK, f"{MARK}: {printable(reason).strip()}")

    def _clear_mark(self, path: tuple[str, str]) -> None:
        """Take an earlier pin's UNRESOLVED comment off ``path`` now that it is resolved;
        the author's comment on that line stays."""
        self.doc.note(path, MARK, None)

    # -- version --------------------------------------------------------------
    def version(self) -> None:
        m = self.manifest
        if m.version is None:
            return
        check = next((c for c in self.result.checks if c.kind == "version"), None)
        if check is None:  # pragma: no cover - the core always checks a pinned version
            return
        if check.status is Status.PASS or check.actual:
            self._clear_mark(("target", "version"))
        if check.status is Status.PASS:
            self.items.append(PinItem("version", "version", UNCHANGED, m.version, m.version))
        elif check.actual:
            self.doc.set(("target", "version"), check.actual)
            self.items.append(PinItem("version", "version", CHANGED, m.version, check.actual,
                                      path=check.path))
        else:
            self._mark(("target", "version"), check.message)
            self.items.append(PinItem("version", "version", UNRESOLVED, m.version, None,
                                      check.message, path=check.path))

    # -- files ------------------------------------------------------------------
    def files(self) -> None:
        held: dict[str, list[str]] = {}
        for cid, problem in self.problems.items():
            if problem is not None:
                held.setdefault(self.manifest.citations[cid].span.path, []).append(cid)
        for path, digest in self.manifest.files.items():
            try:
                new = self.store.get(path).sha256
            except SourceError as exc:
                reason = f"{exc.message}; the old digest is kept"
                self._mark(("files", path), reason)
                self.items.append(PinItem("file", path, UNRESOLVED, digest, None, reason, path=path))
                continue
            if path not in held:
                self._clear_mark(("files", path))
            if new == digest:
                self.items.append(PinItem("file", path, UNCHANGED, digest, new, path=path))
            elif path in held:
                self._hold_digest(path, digest, held[path])
            else:
                self.doc.set(("files", path), new)
                self.items.append(PinItem("file", path, CHANGED, digest, new, path=path))

    def _hold_digest(self, path: str, digest: str, cids: list[str]) -> None:
        """Keep a changed file's old digest while citations in it are unresolved.

        Pinned, the new digest would prove those citations' stale spans (a citation
        passes by its file's digest), so once their marks were removed ``check``
        would pass lines that hold other code. Kept, the file fails by itself and
        its citations are judged by their anchors.
        """
        names = ", ".join(f"'{c}'" for c in cids)
        reason = (f"{'citations' if len(cids) > 1 else 'citation'} {names} "
                  f"{'are' if len(cids) > 1 else 'is'} unresolved; the old digest is kept")
        self._mark(("files", path), reason)
        self.items.append(PinItem("file", path, UNRESOLVED, digest, None, reason, path=path))

    # -- citations --------------------------------------------------------------
    def citations(self) -> None:
        checks = self.checks("citation")
        for cid, cit in self.manifest.citations.items():
            check = checks.get(cid)
            if cid not in self.problems:
                self.items.append(PinItem(
                    "citation", cid, NOT_CARRIED, str(cit.span), str(cit.span),
                    f"read from source '{cit.source}', not the target" if cit.source
                    else "no check ran for it", path=cit.span.path))
                continue
            reason = self.problems[cid]
            if reason is not None:
                self._unresolved_citation(cit, reason)
                continue
            assert check is not None and check.found_lines is not None
            self._carry(cit, check.found_lines)

    def _unresolved_citation(self, cit: Citation, reason: str) -> None:
        """Mark ``cit`` unresolved (``unresolved: reason``); a mark kept from an earlier
        pin stays, unless ``--accept`` lifted it: then it says today's reason."""
        rec = ("citations", cit.id)
        if cit.unresolved is None:
            if self.doc.get((*rec, "unresolved")) is not None:
                self.doc.set((*rec, "unresolved"), reason)
            else:
                self.doc.insert(rec, "unresolved", reason, after="at")
        self.items.append(PinItem(
            "citation", cit.id, UNRESOLVED, str(cit.span), None, reason, path=cit.span.path,
            old_lines=(cit.span.start, cit.span.end)))

    def _carry(self, cit: Citation, found: tuple[int, int]) -> None:
        """Move the citation to ``found`` and re-quote its anchor from those lines.

        ``exact`` (and a span digest) always quote the lines found. Context lines
        are re-quoted only when the written ones no longer surround the span (so
        an unchanged neighbourhood costs no diff), with as many lines as the
        author wrote, and each text keeps the author's final-newline convention.
        Whatever was re-quoted is said in the row: a context rewritten in silence
        would hide that the span now sits among other code.
        """
        a, b = found
        span = cit.span
        fd = self.store.get(span.path)
        lines = fd.text_lines()
        rec = ("citations", cit.id)
        old_at = str(self.doc.get((*rec, "at")))
        new_at = format_at(old_at, span.path, a, b)
        self.doc.set((*rec, "at"), new_at)
        if self.doc.get((*rec, "unresolved")) is not None:  # an earlier pin's mark, lifted by --accept
            self.doc.drop((*rec, "unresolved"))
        text_changed = False
        context: list[str] = []
        anchor = (*rec, "anchor")
        if isinstance(self.doc.get(anchor), dict):
            exact = self.doc.get((*anchor, "exact"))
            if exact is not None:
                text_changed |= self.doc.set((*anchor, "exact"),
                                             _like(str(exact), block(lines[a - 1 : b])))
            if self.doc.get((*anchor, "sha256")) is not None:
                text_changed |= self.doc.set((*anchor, "sha256"), span_sha256(lines[a - 1 : b]))
            context = self._requote_context(anchor, lines, found)
        outcome, detail = self.outcome(cit, fd.index, found, text_changed, context)
        self.items.append(PinItem(
            "citation", cit.id, outcome, old_at, new_at, detail, path=span.path,
            old_lines=(span.start, span.end), new_lines=found))

    def _requote_context(self, anchor: tuple[str, ...], lines: list[str],
                         found: tuple[int, int]) -> list[str]:
        """Re-quote ``prefix``/``suffix`` where they no longer surround ``found``; what was done, in words."""
        done: list[str] = []
        for key in ("prefix", "suffix"):
            old = self.doc.get((*anchor, key))
            if old is None:
                continue
            want = text_lines(str(old))
            if context_holds(lines, found, key == "prefix", want):
                continue
            ctx = context_lines(lines, *found, key == "prefix", len(normalize(want)))
            if normalize(ctx):
                self.doc.set((*anchor, key), _like(str(old), block(ctx)))
                done.append(f"{key} changed, re-quoted")
            else:
                self.doc.drop((*anchor, key))
                done.append(f"{key} dropped (no code {'before' if key == 'prefix' else 'after'} "
                            "the span now)")
        return done

    # -- invariants and the rest -------------------------------------------------
    def others(self) -> None:
        for check in self.result.checks:
            if check.kind in ("version", "file", "citation"):
                continue
            key = _DIGEST_KEYS.get(check.id) if check.kind == "record" else None
            if key is not None and getattr(self.manifest, key):
                self._target_digest(check, key)
                continue
            if check.kind == "invariant" and check.source is None:
                if check.status is Status.PASS:
                    self._clear_mark(("invariants", check.id))
                    self.items.append(PinItem("invariant", check.id, UNCHANGED, path=check.path,
                                              detail=check.message))
                    continue
                if check.status is Status.STALE:
                    self.items.append(PinItem("invariant", check.id, STALE, path=check.path,
                                              detail=f"re-review: {check.message}"))
                    continue
                if check.status in (Status.FAIL, Status.ERROR):
                    self._mark(("invariants", check.id), check.message)
                    self.items.append(PinItem("invariant", check.id, UNRESOLVED, path=check.path,
                                              detail=check.message))
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
        old = getattr(self.manifest, key)
        if check.status is Status.PASS or check.actual:
            self._clear_mark(("target", key))
        if check.status is Status.PASS:
            self.items.append(PinItem(check.kind, check.id, UNCHANGED, old, old, path=check.path))
        elif check.actual:
            self.doc.set(("target", key), check.actual)
            self.items.append(PinItem(check.kind, check.id, CHANGED, old, check.actual,
                                      path=check.path))
        else:
            self._mark(("target", key), check.message)
            self.items.append(PinItem(check.kind, check.id, UNRESOLVED, old, None, check.message,
                                      path=check.path))


def plan(manifest: Manifest, text: str, source: Source, accept: Sequence[str] = ()) -> PinPlan:
    """Compute the re-pinned manifest for ``source`` and review every pin; writes nothing.

    ``accept``: ids of citations to carry where they are found although that
    place is in doubt (re-indented, its context changed or none to confirm a
    move: ``measure.doubt``), or although an earlier pin marked them unresolved; a
    human said so after reading the reason. An id that names no citation of
    the target is bad input: a typo would otherwise accept nothing, silently;
    one that needed no accepting is said in ``PinPlan.notes``.
    The new text is proved before it is returned: it must load to exactly the
    values meant (``TextDoc.text``), and every pin not reported unresolved must
    pass on ``source``. A pin that would not is a bug, reported as an error
    rather than written.
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
    new_text = p.doc.text()
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


def _prove(name: str, new_text: str, source: Source, items: tuple[PinItem, ...]) -> None:
    from pp1audit.manifest import parse
    from pp1audit.run import audit

    try:
        new = parse(new_text, name)
    except Pp1Error as exc:  # pragma: no cover - a bug in the edit
        raise Pp1Error(f"pin: internal error: the re-pinned manifest does not load: {exc}") from None
    carried = {(i.kind, i.id) for i in items if i.outcome in (UNCHANGED, MOVED, CHANGED)}
    result = audit(new, source)
    for c in result.checks:
        key = (c.kind, "version" if c.kind == "version" else c.path if c.kind == "file" else c.id)
        if key in carried and c.status is not Status.PASS:  # pragma: no cover - a bug
            raise Pp1Error(f"pin: internal error: {c.kind} {c.id} does not pass after the pin: "
                           f"{c.message}")
