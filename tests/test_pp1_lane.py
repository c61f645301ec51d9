"""The lane rules of the shipped manifests/pp1.yaml, on a lane-shaped git repository.

The real lane repository is not available here, so the test points the PP1
manifest's ``lane`` source at the repository ``lanerepo`` builds with gitpython
(its pinned commit swapped for that repository's base commit): the rules must
hold there, and each must fail, with its reason, on the commit that breaks it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from conftest import REPO, run_cli
from lanerepo import WIRE_SAMPLED, Lane, build_lane

PP1 = REPO / "manifests" / "pp1.yaml"
LANE_BASE = "cc9515fdd4e26197ef13b797c06bcf9cc39a085c"


@pytest.fixture(scope="module")
def lane(tmp_path_factory: pytest.TempPathFactory) -> Lane:
    return build_lane(tmp_path_factory.mktemp("pp1lane") / "lane")


def lane_rules() -> set[str]:
    data = yaml.safe_load(PP1.read_text(encoding="utf-8"))
    return {i for i, rec in data["invariants"].items() if rec.get("source") == "lane"}


def run_pp1_at(commit: str, lane: Lane, vllm_tree: Path, tmp_path: Path) -> dict[str, dict]:
    text = PP1.read_text(encoding="utf-8")
    assert text.count(LANE_BASE) == 1  # only the source's pinned commit is swapped
    manifest = tmp_path / "pp1-at-test-lane.yaml"
    manifest.write_text(text.replace(LANE_BASE, commit), encoding="utf-8")
    proc = run_cli("check", str(vllm_tree), "-m", str(manifest), "--repo", f"lane={lane.path}",
                   "--format", "json", "--offline")
    assert proc.returncode == 1, proc.stderr
    return {c["id"]: c for c in json.loads(proc.stdout)["checks"] if c["kind"] == "invariant"}


def test_pp1_lane_rules_hold_at_the_pinned_commit(lane: Lane, vllm_tree: Path, tmp_path: Path) -> None:
    rules = lane_rules()
    assert len(rules) == 5
    checks = run_pp1_at(lane.base, lane, vllm_tree, tmp_path)
    for rid in rules:
        assert checks[rid]["status"] == "pass", (rid, checks[rid]["message"])
        assert checks[rid]["source"] == "lane" and checks[rid]["found_lines"]


def test_pp1_lane_rules_fail_each_with_its_reason_on_the_breaking_commit(
    lane: Lane, vllm_tree: Path, tmp_path: Path
) -> None:
    checks = run_pp1_at(lane.sampled, lane, vllm_tree, tmp_path)
    failed = {rid for rid in lane_rules() if checks[rid]["status"] == "fail"}
    assert failed == lane_rules()
    assert "not found" in checks["lane-refuses-non-greedy"]["message"] or "guarded" in (
        checks["lane-refuses-non-greedy"]["message"])
    assert "SAMPLE_GREEDY" in checks["lane-hello-declares-greedy"]["message"]
    wire = checks["lane-wire-carries-no-distribution"]["message"]
    probs_line = next(i for i, x in enumerate(WIRE_SAMPLED.splitlines(), 1) if x.strip().startswith("probs:"))
    assert "must be absent" in wire and f"present at line {probs_line}" in wire
    assert "argmax" in checks["lane-worker-bias-then-argmax"]["message"]
    # The vLLM-side rules are untouched by the lane commit.
    others = {rid: c for rid, c in checks.items() if c["source"] != "lane"}
    assert others and all(c["status"] == "pass" for c in others.values())
