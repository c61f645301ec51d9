"""`pin` carries the shipped PP1 manifest across real releases (0.31.0 -> 0.32.0 -> 0.31.0)
and lists a claim whose evidence changed shape as `stale`, for review, without refusing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import REPO, fetch_wheel, run_cli

pytestmark = pytest.mark.vllm

PP1 = REPO / "manifests" / "pp1.yaml"


def pin(release: str, manifest: Path, out: Path, *extra: str) -> tuple[int, dict]:
    proc = run_cli("pin", str(fetch_wheel(release)), "-m", str(manifest), "-o", str(out),
                   "--format", "json", *extra)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def gate(release: str, manifest: Path) -> dict:
    proc = run_cli("check", str(fetch_wheel(release)), "-m", str(manifest), "--format", "json")
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


def test_pin_to_032_and_back(tmp_path: Path) -> None:
    up, back = tmp_path / "pp1-032.yaml", tmp_path / "pp1-031.yaml"
    rc, plan = pin("0.32.0", PP1, up)
    assert rc == 0 and plan["counts"]["unresolved"] == 0 and plan["counts"]["stale"] == 0
    carried = {i["id"]: i["new"] for i in plan["items"] if i["kind"] == "citation"}
    assert carried["runner-passes-draft-logits"].endswith("model_runner.py:1647-1653")
    assert gate("0.32.0", up)["verdict"] == "pass"
    rc, plan = pin("0.31.0", up, back)
    assert rc == 0 and plan["counts"]["unresolved"] == 0
    result = gate("0.31.0", back)
    assert result["verdict"] == "pass" and result["counts"]["fail"] == 0
    cited = {c["id"]: c["lines"] for c in result["checks"] if c["kind"] == "citation"}
    assert cited["runner-passes-draft-logits"] == [1605, 1610]


def test_a_stale_claim_is_listed_for_review_not_refused(tmp_path: Path) -> None:
    """On 0.28.0 the draft's Gumbel noise has no salt yet: its claim's evidence is gone.
    The two text citations whose context changed are accepted by the reviewer."""
    out = tmp_path / "pp1-028.yaml"
    rc, plan = pin("0.28.0", PP1, out, "--accept", "speculator-draft-logits",
                   "--accept", "dspark-markov-bias")
    stale = [i for i in plan["items"] if i["outcome"] == "stale"]
    assert rc == 0 and [i["id"] for i in stale] == ["gumbel-separate-draft-noise"]
    assert plan["counts"]["unresolved"] == 0
    assert "unresolved" not in out.read_text(encoding="utf-8")
    result = gate("0.28.0", out)
    statuses = {c["id"]: c["status"] for c in result["checks"] if c["kind"] == "invariant"}
    assert statuses["gumbel-separate-draft-noise"] == "stale"
    assert result["verdict"] == "fail" and result["counts"]["stale"] == 1
    assert result["counts"]["fail"] == 0
