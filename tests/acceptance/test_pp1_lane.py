"""The lane rules of the shipped manifests/pp1.yaml, on a lane-shaped git repository.

The real lane repository is not available here, so the test points the PP1
manifest's ``lane`` source at the repository ``lanerepo`` builds with gitpython
(its pinned commit swapped for that repository's base commit): the rules must
hold there, and each must fail (or, its evidence gone, be stale), with its reason,
on the commit that breaks it.

The lane corpus (``tests/data/lane_corpus.yaml``) adds realistic breaks and harmless
refactors of the lane's files, on the lane-shaped base and on the same files in the
audit's own words, each its own commit of one repository, judged by the real CLI.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import REPO, run_cli
from lanerepo import LANE_FILES, WIRE_SAMPLED, WORDS_FILES, Lane, _commit, build_lane

PP1 = REPO / "manifests" / "pp1.yaml"
CORPUS = yaml.safe_load((REPO / "tests" / "data" / "lane_corpus.yaml").read_text(encoding="utf-8"))
BREAKS, REFACTORS = CORPUS["breaks"], CORPUS["refactors"]
CASES = {**BREAKS, **REFACTORS}
BASES = {"lane": LANE_FILES, "words": WORDS_FILES}
LANE_BASE = "cc9515fdd4e26197ef13b797c06bcf9cc39a085c"


@pytest.fixture(scope="module")
def lane(tmp_path_factory: pytest.TempPathFactory) -> Lane:
    return build_lane(tmp_path_factory.mktemp("pp1lane") / "lane")


def lane_rules() -> set[str]:
    data = yaml.safe_load(PP1.read_text(encoding="utf-8"))
    return {i for i, rec in data["invariants"].items() if rec.get("source") == "lane"}


def run_pp1_at(commit: str, lane: Lane | Path, vllm_tree: Path, tmp_path: Path,
               kinds: tuple[str, ...] = ("invariant",)) -> dict[str, dict[str, Any]]:
    text = PP1.read_text(encoding="utf-8")
    assert text.count(LANE_BASE) == 1  # only the source's pinned commit is swapped
    manifest = tmp_path / "pp1-at-test-lane.yaml"
    manifest.write_text(text.replace(LANE_BASE, commit), encoding="utf-8")
    repo = lane.path if isinstance(lane, Lane) else lane
    proc = run_cli("check", str(vllm_tree), "-m", str(manifest), "--repo", f"lane={repo}",
                   "--format", "json", "--offline")
    assert proc.returncode == 1, proc.stderr
    return {c["id"]: c for c in json.loads(proc.stdout)["checks"] if c["kind"] in kinds}


def test_pp1_lane_rules_hold_at_the_pinned_commit(lane: Lane, vllm_tree: Path, tmp_path: Path) -> None:
    rules = lane_rules()
    assert len(rules) == 6
    checks = run_pp1_at(lane.base, lane, vllm_tree, tmp_path)
    for rid in rules:
        assert checks[rid]["status"] == "pass", (rid, checks[rid]["message"])
        assert checks[rid]["source"] == "lane" and checks[rid]["found_lines"]


def test_pp1_lane_rules_fail_each_with_its_reason_on_the_breaking_commit(
    lane: Lane, vllm_tree: Path, tmp_path: Path
) -> None:
    checks = run_pp1_at(lane.sampled, lane, vllm_tree, tmp_path)
    status = {rid: checks[rid]["status"] for rid in lane_rules()}
    # The refusal is gone (its evidence: stale, re-review); the sampled commit leaves the
    # confidence computation as it was; every other claim is contradicted.
    assert status == {**dict.fromkeys(lane_rules(), "fail"),
                      "lane-refuses-non-greedy": "stale",
                      "lane-worker-confidence-separate": "pass"}
    assert "no longer found" in checks["lane-refuses-non-greedy"]["message"], \
        checks["lane-refuses-non-greedy"]
    assert "SAMPLE_PROBABILISTIC" in checks["lane-hello-declares-greedy"]["message"]
    wire = checks["lane-wire-carries-no-distribution"]["message"]
    probs_line = next(i for i, x in enumerate(WIRE_SAMPLED.splitlines(), 1) if x.strip().startswith("probs:"))
    assert wire.startswith(f"counterexample found at line {probs_line}: probs:"), wire
    assert "random.choices(" in checks["lane-worker-bias-then-argmax"]["message"]
    assert "proposal.probs" in checks["lane-capacity-sets-draft-logits-none"]["message"]
    # The vLLM-side rules are untouched by the lane commit.
    others = {rid: c for rid, c in checks.items() if c["source"] != "lane"}
    assert others and all(c["status"] == "pass" for c in others.values())


# --- the lane corpus: breaks and harmless refactors of the lane's files -----------------


def edited(case: dict[str, Any]) -> dict[str, str]:
    """The case's base files with its edit applied: ``content``, or each ``old`` (which
    must occur exactly once, so an edit cannot silently miss) replaced by its ``new``."""
    files = dict(BASES[str(case.get("base", "lane"))])
    path = str(case["file"])
    if "content" in case:
        files[path] = str(case["content"])
        return files
    text = files[path]
    for edit in [case, *([case["also"]] if "also" in case else [])]:
        old, new = str(edit["old"]), str(edit["new"])
        assert text.count(old) == 1, f"the edit's old text is not in {path} exactly once: {old!r}"
        text = text.replace(old, new)
    assert text != files[path]
    files[path] = text
    return files


@pytest.fixture(scope="module")
def corpus_lane(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A git repository: each base, then each corpus case, its own commit (its base's
    files with the case's edit)."""
    import git

    root = tmp_path_factory.mktemp("corpuslane") / "lane"
    repo = git.Repo.init(root, initial_branch="main")
    t = 1_790_000_000
    commits = {}
    for i, (name, files) in enumerate([*BASES.items(), *((n, edited(c)) for n, c in CASES.items())]):
        commits[name] = _commit(repo, root, files, name, t + 60 * i)
    repo.close()
    return root, commits


def test_the_lane_corpus_is_small_and_breaks_every_lane_claim() -> None:
    assert not set(BREAKS) & set(REFACTORS) and not set(CASES) & set(BASES)
    assert 20 <= len(CASES) <= 40, len(CASES)
    for name, case in CASES.items():
        assert set(case) <= {"base", "file", "old", "new", "also", "content", "expect", "why"}, name
        assert case.get("base", "lane") in BASES and case.get("why"), name
        assert set(case.get("expect", {})) <= lane_rules(), name
    for name, case in BREAKS.items():  # one claim each, contradicted or gone
        assert len(case["expect"]) == 1 and set(case["expect"].values()) <= {"fail", "stale"}, name
    for name, case in REFACTORS.items():  # never a fail
        assert set(case.get("expect", {}).values()) <= {"stale"}, name
    broken = {claim for case in BREAKS.values() for claim in case["expect"]}
    assert broken == lane_rules(), f"claims no break exercises: {sorted(lane_rules() - broken)}"


@pytest.mark.parametrize("name", list(BASES))
def test_pp1_lane_rules_hold_on_both_bases(name: str, corpus_lane: tuple[Path, dict[str, str]],
                                           vllm_tree: Path, tmp_path: Path) -> None:
    """The lane-shaped files and the same claims in the audit's words."""
    root, commits = corpus_lane
    checks = run_pp1_at(commits[name], root, vllm_tree, tmp_path)
    for rid in lane_rules():
        assert checks[rid]["status"] == "pass", (rid, checks[rid]["message"])


@pytest.mark.parametrize("name", list(CASES))
def test_lane_corpus(name: str, corpus_lane: tuple[Path, dict[str, str]], vllm_tree: Path,
                     tmp_path: Path) -> None:
    """A break closes its claim (and no other); a refactor fails none (stale only where
    the case expects it). A false alarm on the pinned lane closes the gate for good."""
    root, commits = corpus_lane
    checks = run_pp1_at(commits[name], root, vllm_tree, tmp_path)
    expect = {rid: CASES[name].get("expect", {}).get(rid, "pass") for rid in lane_rules()}
    got = {rid: checks[rid]["status"] for rid in lane_rules()}
    wrong = {rid: f"{got[rid]} (expected {expect[rid]}): {checks[rid]['message']}"
             for rid in lane_rules() if got[rid] != expect[rid]}
    assert not wrong, f"{name} ({CASES[name]['why']}): {wrong}"


def test_pp1_lane_citations_stay_fixed_by_the_commit_when_a_lane_rule_fails(
    corpus_lane: tuple[Path, dict[str, str]], vllm_tree: Path, tmp_path: Path
) -> None:
    """The lane citations are not anchored on the lane rules: a rule's match is not the
    cited range, so on the real lane an anchored citation would drift and close the gate.
    The rule fails on its own; the citations are read at the pinned commit, alike."""
    root, commits = corpus_lane
    kinds = ("invariant", "citation")
    base = run_pp1_at(commits["lane"], root, vllm_tree, tmp_path, kinds)
    broken = run_pp1_at(commits["hello-probabilistic-with-greedy-fallback"], root, vllm_tree,
                        tmp_path, kinds)
    assert (base["lane-hello-declares-greedy"]["status"],
            broken["lane-hello-declares-greedy"]["status"]) == ("pass", "fail")
    for cid in ("lane-speculator-refuses-non-greedy", "lane-capacity-draft-logits-none",
                "lane-wire-no-distribution", "lane-worker-markov-argmax"):
        assert broken[cid]["status"] == base[cid]["status"], cid
        assert "invariant" not in broken[cid]["message"], cid
