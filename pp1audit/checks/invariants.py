"""``invariant``: a structural claim about the code, judged on any version.

The evaluation itself (parse once, match, relations) is the run's
``matcher.Engine``; this module only turns its outcome into a ``Check``: the
rule holds → ``pass`` with the lines of the first satisfying match; it does not
→ ``fail`` with the broken relation; the file is unusable (unparsable, not
UTF-8, over the matcher's size cap) → ``error``; the file is gone → ``fail``,
as for a pinned file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from pp1audit.checks.citations import moved_by
from pp1audit.manifest import Citation
from pp1audit.matcher import BROKEN, HOLDS, Engine
from pp1audit.result import Check, Status
from pp1audit.rules import Invariant


def check_invariant(inv: Invariant, engine: Engine, source: str | None = None) -> Check:
    """Judge one invariant against the file as the run's store read it."""
    outcome = engine.outcome(inv)
    base = Check(id=inv.id, kind="invariant", status=Status.FAIL, message=outcome.message,
                 path=inv.file, source=source, expected=inv.rule.pattern.short)
    if outcome.status == HOLDS:
        return replace(base, status=Status.PASS, found_lines=outcome.spans[0],
                       excerpt=outcome.excerpts[0])
    if outcome.status == BROKEN:
        return replace(base, status=Status.FAIL if outcome.missing_file else Status.ERROR)
    return base


def anchored_citation(citation: Citation, base: Check, engine: Engine,
                      invariants: Mapping[str, Invariant]) -> Check:
    """A citation whose anchor is an invariant: its span is where the rule matches.

    Called only when the cited file no longer matches its pin (or has none). The
    rule's satisfying matches are the candidate spans; the nearest to the pinned
    lines wins (said in the message when there were several): at the pinned
    lines → ``pass``, elsewhere → ``drift`` with ``found_lines``; the rule not
    holding → ``fail``, so a claim's citation moves with the code it describes.
    """
    span = citation.span
    iid = citation.anchor.invariant if citation.anchor is not None else None
    inv = invariants.get(iid or "")
    if inv is None:  # the loader refuses this; kept for direct callers
        return replace(base, status=Status.ERROR, message=f"no invariant '{iid}'")
    outcome = engine.outcome(inv)
    if outcome.status == BROKEN:
        status = Status.FAIL if outcome.missing_file else Status.ERROR
        return replace(base, status=status, message=outcome.message)
    if outcome.status != HOLDS:
        return replace(base, status=Status.FAIL,
                       message=f"anchor invariant '{inv.id}' does not hold: {outcome.message}")
    order = sorted(range(len(outcome.spans)),
                   key=lambda i: (abs(outcome.spans[i][0] - span.start), outcome.spans[i][0]))
    best = order[0]
    found = outcome.spans[best]
    several = (f" ({len(outcome.spans)} places match; the nearest to the pinned lines chosen)"
               if len(outcome.spans) > 1 else "")
    excerpt = outcome.excerpts[best]
    places = len(outcome.spans)
    if found == (span.start, span.end):
        return replace(base, status=Status.PASS, found_lines=found, excerpt=excerpt, places=places,
                       message=f"{span} is still where invariant '{inv.id}' matches{several}")
    shift = found[0] - span.start
    return replace(base, status=Status.DRIFT, found_lines=found, excerpt=excerpt, places=places,
                   message=f"{span} moved to {found[0]}-{found[1]} ({moved_by(shift)}), where "
                   f"invariant '{inv.id}' matches{several}")
