"""``pp1audit pin`` carries the shipped PP1 audit (manifests/pp1.yaml, pinned to the
audited image) to real vLLM 0.31.0, and on to real vLLM 0.30.0 (a rollback).

Expectations are computed by the test from the wheels' files (where each anchor's
text is, line for line), never copied from pin's own output.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import REPO, file_lines, find_block, run_cli

from pp1audit.manifest import Manifest, load_manifest

PP1 = REPO / "manifests" / "pp1.yaml"
RUNNER = "vllm/v1/worker/gpu/model_runner.py"



def expected_moves(m: Manifest, target: Path) -> tuple[dict[str, int], set[str]]:
    """Text-anchored target citations: {id: new start} of those that moved, and the lost."""
    moved: dict[str, int] = {}
    lost: set[str] = set()
    for cid, cit in m.citations.items():
        if cit.source is not None or cit.anchor is None or cit.anchor.exact is None:
            continue
        starts = find_block(file_lines(target, cit.span.path), cit.anchor.exact)
        if not starts:
            lost.add(cid)
        elif cit.span.start not in starts:
            moved[cid] = min(starts, key=lambda s: abs(s - cit.span.start))
    return moved, lost


def pin_json(target: Path, manifest: Path, *extra: str) -> tuple[int, dict]:
    proc = run_cli("pin", str(target), "-m", str(manifest), "--format", "json", *extra)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def outcome_ids(review: dict, outcome: str) -> dict[str, dict]:
    return {i["id"]: i for i in review["items"] if i["kind"] == "citation" and i["outcome"] == outcome}


@pytest.fixture(scope="module")
def pp1_031(vllm_tree: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("pp1") / "pp1-0.31.0.yaml"
    rc, review = pin_json(vllm_tree, PP1, "-o", str(out))
    assert rc == 0, review["counts"]
    return out, review


def test_pp1_carried_to_031_checks_on_tree_and_wheel(
    pp1_031: tuple[Path, dict], vllm_tree: Path, vllm_wheel: Path
) -> None:
    out, review = pp1_031
    assert run_cli("check", str(vllm_tree), "-m", str(PP1)).returncode == 1  # pinned to the image
    for target in (vllm_tree, vllm_wheel):
        proc = run_cli("check", str(target), "-m", str(out), "--format", "json")
        assert proc.returncode == 0, proc.stdout
        result = json.loads(proc.stdout)
        assert result["target"]["version"] == "0.31.0"
        assert result["counts"]["fail"] == result["counts"]["drift"] == 0
    # What moved is what the files say moved (text anchors), and nothing else.
    m = load_manifest(PP1)
    moved, lost = expected_moves(m, vllm_tree)
    assert lost == set()
    got = outcome_ids(review, "moved")
    assert {c: r["new_lines"][0] for c, r in got.items() if c in moved} == moved
    invariant_anchored = {c for c, cit in m.citations.items()
                          if cit.anchor is not None and cit.anchor.invariant is not None}
    assert set(got) - set(moved) <= invariant_anchored
    # The invariant-anchored runner citation now names the real call's lines.
    new = load_manifest(out).citations["runner-passes-draft-logits"].span
    lines = file_lines(vllm_tree, RUNNER)[new.start - 1 : new.end]
    assert lines[0].strip().startswith("sampler_output = self.rejection_sampler(")
    assert any("self.speculator.draft_logits" in x for x in lines)
    # Citations in the lane repository are not the target's: carried untouched.
    assert all(i["outcome"] == "not carried" for i in review["items"]
               if i["id"].startswith("lane-") and i["kind"] == "citation")


def test_pp1_rollback_to_030(pp1_031: tuple[Path, dict], vllm_wheel_030: Path,
                             tmp_path: Path) -> None:
    m31, _ = pp1_031
    out = tmp_path / "pp1-0.30.0.yaml"
    rc, review = pin_json(vllm_wheel_030, m31, "-o", str(out))
    moved, lost = expected_moves(load_manifest(m31), vllm_wheel_030)
    assert set(outcome_ids(review, "unresolved")) == lost
    got = outcome_ids(review, "moved")
    assert {c: r["new_lines"][0] for c, r in got.items() if c in moved} == moved
    invariant_anchored = {c for c, cit in load_manifest(m31).citations.items()
                          if cit.anchor is not None and cit.anchor.invariant is not None}
    assert set(got) - set(moved) <= invariant_anchored
    assert {"runner-passes-draft-logits", "config-default-greedy"} <= set(got)
    greedy = got["config-default-greedy"]["new_lines"]
    assert file_lines(vllm_wheel_030, "vllm/config/speculative.py")[greedy[0] - 1].strip() == (
        'draft_sample_method: DraftSampleMethod = "greedy"')
    runner = got["runner-passes-draft-logits"]["new_lines"]
    assert "self.speculator.draft_logits," in file_lines(vllm_wheel_030, RUNNER)[runner[1] - 2]
    # Every PP1 claim exists in 0.30.0 too (spans whose text changed are anchored
    # on invariants), so the rollback is complete and the result gates open there.
    assert not lost
    assert rc == 0
    proc = run_cli("check", str(vllm_wheel_030), "-m", str(out), "--format", "json")
    assert proc.returncode == 0, proc.stdout
    statuses = {c["status"] for c in json.loads(proc.stdout)["checks"]}
    assert statuses <= {"pass", "skip"}


def test_pp1_comments_and_key_order_survive(pp1_031: tuple[Path, dict], vllm_tree: Path,
                                           tmp_path: Path) -> None:
    out, _ = pp1_031
    original = PP1.read_text(encoding="utf-8").splitlines()
    carried = out.read_text(encoding="utf-8").splitlines()
    # Same number of lines, and every line that differs is a pinned value.
    assert len(carried) == len(original)
    changed = [(a, b) for a, b in zip(original, carried, strict=True) if a != b]
    assert changed
    for before, after in changed:
        key = before.split(":", 1)[0].strip()
        assert key == after.split(":", 1)[0].strip()
        assert key in ("at", "version") or key.startswith("vllm/"), before
    # Carried again to the same tree: a fixed point.
    again = tmp_path / "again.yaml"
    rc, review = pin_json(vllm_tree, out, "-o", str(again))
    assert rc == 0 and again.read_text() == out.read_text()
    assert not outcome_ids(review, "moved")


def test_a_broken_invariant_is_unresolved_and_marked_only_when_allowed(
    tree_copy: Path, tmp_path: Path, edit: Callable[[Path, Callable[[str], str]], None]
) -> None:
    edit(tree_copy / RUNNER, lambda t: t.replace(
        "                self.speculator.draft_logits,\n            )\n",
        "                None,\n            )\n", 1))
    out = tmp_path / "out.yaml"
    rc, review = pin_json(tree_copy, PP1, "-o", str(out))
    assert rc == 1 and not out.exists()
    unresolved = {(i["kind"], i["id"]) for i in review["items"] if i["outcome"] == "unresolved"}
    # The invariant is re-checked and fails; the citation anchored on it cannot be placed.
    assert unresolved == {("invariant", "runner-sampler-gets-draft-logits"),
                          ("citation", "runner-passes-draft-logits")}
    rc, _ = pin_json(tree_copy, PP1, "-o", str(out), "--allow-unresolved")
    assert rc == 1
    text = out.read_text(encoding="utf-8")
    assert "  runner-sampler-gets-draft-logits:  # pp1audit pin: UNRESOLVED: " in text
    assert load_manifest(out).citations["runner-passes-draft-logits"].unresolved
    proc = run_cli("check", str(tree_copy), "-m", str(out), "--format", "json")
    assert proc.returncode == 1
    failing = {(c["kind"], c["id"]) for c in json.loads(proc.stdout)["checks"]
               if c["status"] == "fail"}
    assert failing == unresolved
