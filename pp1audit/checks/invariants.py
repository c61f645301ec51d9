"""``invariant``: a structural claim about the code, judged on any version.

The evaluation itself (parse once, ast-grep's rules) is the run's
``rules.engine.Engine``; this module only turns its outcome into a ``Check``:
every evidence rule matches and no counterexample does → ``pass`` with the lines
of the first evidence match; a counterexample found → ``fail`` with where; an
evidence rule matching nothing → ``stale`` (re-review); the file unusable (not
UTF-8, not readable as Python) → ``error``; the file gone → ``fail``, as for a
pinned file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from pp1audit.checks.citations import moved_by
from pp1audit.manifest import Citation
from pp1audit.result import Check, Status
from pp1audit.rules.engine import PASS, STALE, Engine
from pp1audit.rules.model import Invariant


def check_invariant(inv: Invariant, engine: Engine, source: str | None = None) -> Check:
    """Judge one invariant against the file as the run's store read it."""
    outcome = engine.outcome(inv)
    base = Check(id=inv.id, kind="invariant", status=Status(outcome.status),
                 message=outcome.message, path=inv.file, source=source, expected=inv.summary)
    if outcome.status == PASS:
        return replace(base, found_lines=outcome.spans[0], excerpt=outcome.excerpts[0])
    return base


def anchored_citation(citation: Citation, base: Check, engine: Engine,
                      invariants: Mapping[str, Invariant]) -> Check:
    """A citation whose anchor is an invariant: its span is where the rule matches.

    Called only when the cited file no longer matches its pin (or has none). The
    first evidence rule's matches are the candidate spans; the nearest to the pinned
    lines wins (said in the message when there were several): at the pinned
    lines → ``pass``, elsewhere → ``drift`` with ``found_lines``; the evidence
    gone → ``stale`` (re-review), so a claim's citation moves with the code it
    describes. A counterexample is the invariant's own verdict, not the span's.
    """
    span = citation.span
    iid = citation.anchor.invariant if citation.anchor is not None else None
    inv = invariants.get(iid or "")
    if inv is None:  # the loader refuses this; kept for direct callers
        return replace(base, status=Status.ERROR, message=f"no invariant '{iid}'")
    outcome = engine.evidence(inv)
    if outcome.status == STALE:
        return replace(base, status=Status.STALE,
                       message=f"anchor invariant '{inv.id}': {outcome.message}")
    if outcome.status != PASS:
        return replace(base, status=Status(outcome.status), message=outcome.message)
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
