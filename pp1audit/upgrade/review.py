"""The review of a pin: one row per pin, what happened to it, and how it is shown.

``pin`` computes a ``PinPlan`` (``pp1audit.upgrade.pin``); the CLI shows it as a
table and the manifest's diff, or as JSON (``pp1audit.pin/1``). Nothing here
measures or edits: a plan is data, and every view of it is a function of it.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any

from pp1audit.formats import counted
from pp1audit.text.spans import line_range

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


def lines_str(lines: tuple[int, int]) -> str:
    """``a–b`` (or ``a``), as the review writes a span."""
    return line_range(*lines, "–")



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
