"""The lane rules of the shipped manifests/pp1.yaml, on a lane-shaped git repository.

The real lane repository is not available here, so the test points the PP1
manifest's ``lane`` source at the repository ``lanerepo`` builds with gitpython
(its pinned commit swapped for that repository's base commit): the rules must
hold there, and each must fail (or, its evidence gone, be stale), with its reason,
on the commit that breaks it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from conftest import REPO, run_cli
from lanerepo import (
    SPECULATOR,
    SPECULATOR_BASE,
    WIRE,
    WIRE_BASE,
    WIRE_SAMPLED,
    WORKER,
    WORKER_BASE,
    Lane,
    _commit,
    build_lane,
)

PP1 = REPO / "manifests" / "pp1.yaml"
LANE_BASE = "cc9515fdd4e26197ef13b797c06bcf9cc39a085c"


@pytest.fixture(scope="module")
def lane(tmp_path_factory: pytest.TempPathFactory) -> Lane:
    return build_lane(tmp_path_factory.mktemp("pp1lane") / "lane")


def lane_rules() -> set[str]:
    data = yaml.safe_load(PP1.read_text(encoding="utf-8"))
    return {i for i, rec in data["invariants"].items() if rec.get("source") == "lane"}


def run_pp1_at(commit: str, lane: Lane | Path, vllm_tree: Path, tmp_path: Path,
               kinds: tuple[str, ...] = ("invariant",)) -> dict[str, dict]:
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
    assert checks["lane-refuses-non-greedy"]["message"].startswith(
        "evidence 'raise $ERROR($$$MSG)' no longer found"), checks["lane-refuses-non-greedy"]
    assert "SAMPLE_PROBABILISTIC" in checks["lane-hello-declares-greedy"]["message"]
    wire = checks["lane-wire-carries-no-distribution"]["message"]
    probs_line = next(i for i, x in enumerate(WIRE_SAMPLED.splitlines(), 1) if x.strip().startswith("probs:"))
    assert wire.startswith(f"counterexample found at line {probs_line}: probs:"), wire
    assert "random.choices(" in checks["lane-worker-bias-then-argmax"]["message"]
    assert "proposal.probs" in checks["lane-capacity-sets-draft-logits-none"]["message"]
    # The vLLM-side rules are untouched by the lane commit.
    others = {rid: c for rid, c in checks.items() if c["source"] != "lane"}
    assert others and all(c["status"] == "pass" for c in others.values())


# --- the lane-shaped repository's own files, broken as the fidelity review (s8) broke them ---

LANE_BREAKS = {
    "LB-hello-probabilistic-with-greedy-fallback": (WIRE, WIRE_BASE.replace(
        'HELLO = {"version": 3, "sample": SAMPLE_GREEDY}',
        'HELLO = {"version": 4, "sample": SAMPLE_PROBABILISTIC, "fallback": SAMPLE_GREEDY}'),
        "lane-hello-declares-greedy"),
}
LANE_FILES = {SPECULATOR: SPECULATOR_BASE, WIRE: WIRE_BASE, WORKER: WORKER_BASE}


def _once(text: str, old: str, new: str) -> str:
    """``old`` replaced where it occurs, exactly once (an edit cannot silently miss)."""
    assert text.count(old) == 1, old
    return text.replace(old, new)


CHECK_MODE = ('    def check_mode(self):\n        method = self.config.draft_sample_method\n'
              '        if method != "greedy":\n            raise NotImplementedError(\n'
              '                f"remote DSpark proposals are greedy only; got {method!r}"\n            )\n')
REFUSAL = ('        method = self.config.draft_sample_method\n        if method != "greedy":\n'
           '            raise NotImplementedError(method)\n')
HELLO_BASE = 'HELLO = {"version": 3, "sample": SAMPLE_GREEDY}'
RAW_TOP = "        token = argmax(biased)\n        raw_top = argmax(row)  # for the agreement statistic\n"
# The second review (claims2): plausible shapes of the real lane that closed the gate. The
# refusal where the runner reaches it (a hook, propose(), a module helper, a staticmethod,
# __init__ itself); a HELLO naming other capabilities or commenting on q; an argmax of the
# raw row kept for a statistic.
LANE_SPELLINGS = {
    "LA-refusal-in-a-hook": (SPECULATOR, _once(_once(
        SPECULATOR_BASE, "    def check_mode(self):\n", "    def load_model(self, target_model):\n"),
        "        self.check_mode()\n", "")),
    "LA-refusal-in-propose": (SPECULATOR, _once(_once(
        SPECULATOR_BASE, "        self.check_mode()\n        reply", REFUSAL + "        reply"),
        CHECK_MODE + "\n", "")),
    "LA-refusal-in-a-module-helper": (SPECULATOR, _once(_once(_once(
        SPECULATOR_BASE, CHECK_MODE, ""), "        self.check_mode()\n", ""), "class RemoteSpeculator:",
        "def _require_greedy(config):\n" + REFUSAL.replace("self.config", "config")[4:].replace(
            "\n        ", "\n    ") + "\n\nclass RemoteSpeculator:").replace(
        "        self.draft_logits = None\n        self.client.send",
        "        self.draft_logits = None\n        _require_greedy(config)\n        self.client.send")),
    "LA-refusal-in-a-staticmethod": (SPECULATOR, _once(_once(
        SPECULATOR_BASE, "    def check_mode(self):\n        method = self.config.draft_sample_method\n",
        "    @staticmethod\n    def check_mode(config):\n        method = config.draft_sample_method\n"),
        "        self.check_mode()\n", "        RemoteSpeculator.check_mode(self.config)\n")),
    "LA-refusal-called-from-init": (SPECULATOR, _once(_once(
        SPECULATOR_BASE, "        self.draft_logits = None\n        self.client.send",
        "        self.draft_logits = None\n        self.check_mode()\n        self.client.send"),
        "        self.check_mode()\n        reply", "        reply")),
    "LB-hello-capability-false": (WIRE, _once(WIRE_BASE, HELLO_BASE, HELLO_BASE.replace(
        "}", ', "probabilistic": False}'))),
    "LB-hello-comment": (WIRE, _once(WIRE_BASE, HELLO_BASE, 'HELLO = {\n    "version": 3,\n'
                         "    # greedy only: a probabilistic proposal would need q on the wire\n"
                         '    "sample": SAMPLE_GREEDY,\n}')),
    "LB-hello-other-constant": (WIRE, _once(_once(
        WIRE_BASE, HELLO_BASE, HELLO_BASE.replace("}", ', "max_tokens": SAMPLE_MAX_TOKENS}')),
        "SAMPLE_PROBABILISTIC = 2\n", "SAMPLE_PROBABILISTIC = 2\nSAMPLE_MAX_TOKENS = 16\n")),
    "LE-argmax-of-raw-row-for-a-statistic": (WORKER, _once(
        WORKER_BASE, "        token = argmax(biased)\n", RAW_TOP)),
    "LE-first-token-renamed": (WORKER, _once(
        WORKER_BASE, "        token = argmax(biased)\n        ids.append(token)\n        prev = token\n",
        "        token = argmax(biased)\n        ids.append(token)\n        prev = token\n"
        "    first = argmax(head_logits[0]) if not ids else ids[0]\n")),
}


@pytest.fixture(scope="module")
def broken_lane(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A git repository: the lane-shaped base files, then each review edit on top of it
    (breaks and claim-preserving spellings, each its own commit)."""
    import git

    root = tmp_path_factory.mktemp("brokenlane") / "lane"
    repo = git.Repo.init(root, initial_branch="main")
    t = 1_790_000_000
    commits = {"base": _commit(repo, root, LANE_FILES, "lane base files", t)}
    variants = {**{n: (p, x) for n, (p, x, _) in LANE_BREAKS.items()}, **LANE_SPELLINGS}
    for i, (name, (path, text)) in enumerate(variants.items(), 1):
        assert text != LANE_FILES[path], name
        commits[name] = _commit(repo, root, {**LANE_FILES, path: text}, name, t + 60 * i)
    repo.close()
    return root, commits


@pytest.mark.parametrize("name", list(LANE_BREAKS))
def test_pp1_lane_rule_fails_on_the_review_edit_of_the_lane_files(
    name: str, broken_lane: tuple[Path, dict[str, str]], vllm_tree: Path, tmp_path: Path
) -> None:
    root, commits = broken_lane
    checks = run_pp1_at(commits[name], root, vllm_tree, tmp_path)
    failed = {rid for rid in lane_rules() if checks[rid]["status"] != "pass"}
    assert failed == {LANE_BREAKS[name][2]}
    assert checks[LANE_BREAKS[name][2]]["status"] == "fail"


@pytest.mark.parametrize("name", list(LANE_SPELLINGS))
def test_pp1_lane_rules_hold_on_the_review_spellings_of_the_lane_files(
    name: str, broken_lane: tuple[Path, dict[str, str]], vllm_tree: Path, tmp_path: Path
) -> None:
    """A false alarm on the pinned lane closes the gate for good (the commit is fixed): each
    plausible shape of the cited code keeps every lane rule green."""
    root, commits = broken_lane
    checks = run_pp1_at(commits[name], root, vllm_tree, tmp_path)
    for rid in lane_rules():
        assert checks[rid]["status"] == "pass", (rid, checks[rid]["message"])


def test_pp1_lane_citations_stay_fixed_by_the_commit_when_a_lane_rule_fails(
    broken_lane: tuple[Path, dict[str, str]], vllm_tree: Path, tmp_path: Path
) -> None:
    """The lane citations are not anchored on the lane rules: a rule's match is not the
    cited range, so on the real lane an anchored citation would drift and close the gate.
    The rule fails on its own; the citations are read at the pinned commit, alike."""
    root, commits = broken_lane
    kinds = ("invariant", "citation")
    base = run_pp1_at(commits["base"], root, vllm_tree, tmp_path, kinds)
    broken = run_pp1_at(commits["LB-hello-probabilistic-with-greedy-fallback"], root, vllm_tree,
                        tmp_path, kinds)
    assert (base["lane-hello-declares-greedy"]["status"],
            broken["lane-hello-declares-greedy"]["status"]) == ("pass", "fail")
    for cid in ("lane-speculator-refuses-non-greedy", "lane-capacity-draft-logits-none",
                "lane-wire-no-distribution", "lane-worker-markov-argmax"):
        assert broken[cid]["status"] == base[cid]["status"], cid
        assert "invariant" not in broken[cid]["message"], cid
