"""The text format on a terminal: grouped by status, broken first, skips told once per input."""

from __future__ import annotations

from pp1audit.formats import skip_reasons
from pp1audit.formats.text_format import render
from pp1audit.result import Check, Result, Status, TargetInfo

LANE = "git source 'lane' not given; pass --repo lane=PATH"
FETCH = "not fetched: no copy in the cache; run pp1audit fetch"


def _result() -> Result:
    checks = (
        Check("ok", "file", Status.PASS, "matches the pin", path="a.py"),
        Check("moved", "citation", Status.DRIFT, "a.py:1-2 moved to 3-4", path="a.py"),
        Check("lane-1", "invariant", Status.SKIP, LANE, source="lane"),
        Check("broken", "invariant", Status.FAIL, "counterexample found at a.py:9", path="a.py"),
        Check("lane-2", "citation", Status.SKIP, LANE, source="lane"),
        Check("donor", "donor", Status.SKIP, FETCH),
        Check("donor:hunks", "donor", Status.SKIP, "hunks not checked: " + FETCH),
        Check("look-again", "invariant", Status.STALE, "evidence 'x' no longer found", path="b.py"),
    )
    return Result("m.yaml", "0" * 64, TargetInfo("directory", "/t", "pkg", "1.0"), checks)


def test_a_terminal_groups_broken_first_and_tells_skips_once_per_input() -> None:
    text = render(_result(), terminal=True)
    lines = text.splitlines()
    assert lines[1].split() == ["status", "kind", "id", "where", "detail"]
    statuses = [line.split()[0] for line in lines[2:] if line.split()[0] in {s.value for s in Status}]
    assert statuses == ["fail", "stale", "drift"]  # broken first; pass only with -v; skips summarised
    waiting = lines.index("4 not judged, each waiting for an input:")
    assert [line.split("×")[0].strip() for line in lines[waiting + 1: waiting + 3]] == ["2", "2"]
    assert LANE in lines[waiting + 1] and lines[waiting + 2].endswith(FETCH)
    assert lines[-1].startswith("FAIL (gate closed)")


def test_verbose_lists_every_check_grouped_and_still_summarises_the_skips() -> None:
    text = render(_result(), verbose=True, terminal=True)
    statuses = [line.split()[0] for line in text.splitlines()[2:]
                if line.split() and line.split()[0] in {s.value for s in Status}]
    assert statuses == ["fail", "stale", "drift", "skip", "skip", "skip", "skip", "pass"]
    assert "4 not judged" in text


def test_a_pipe_keeps_one_line_per_check_in_manifest_order() -> None:
    lines = render(_result(), verbose=True).splitlines()
    assert [line.split()[0] for line in lines[1:-1]] == [
        "pass", "drift", "skip", "fail", "skip", "skip", "skip", "stale"]
    assert "not judged" not in "\n".join(lines)


def test_a_donors_hunks_wait_for_the_donors_input() -> None:
    checks = list(_result().checks)
    groups = skip_reasons([c for c in checks if c.status is Status.SKIP])
    assert [(reason, n, first.id) for reason, n, first in groups] == [
        (LANE, 2, "lane-1"), (FETCH, 2, "donor")]
