"""`pp1audit check` with the shipped PP1 manifest on real vLLM 0.31.0.

The audited image is a patched 0.31.1.dev build; public 0.31.0 is its nearest
real relative. So the gate must close on exactly the image pins (version and
three digests), while every claim is found again in the real code.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from conftest import REPO, run_cli

PP1 = REPO / "manifests" / "pp1.yaml"


def line_of(path: Path, needle: str, start: int = 1) -> int:
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if number >= start and needle in line:
            return number
    raise AssertionError(f"{needle!r} not in {path}")


@pytest.fixture(scope="module")
def pp1_result(vllm_tree: Path) -> dict:
    proc = run_cli("check", str(vllm_tree), "--manifest", str(PP1), "--format", "json")
    assert proc.returncode == 1, proc.stderr
    return json.loads(proc.stdout)


def checks(result: dict, kind: str) -> dict[str, dict]:
    return {c["id"]: c for c in result["checks"] if c["kind"] == kind}


def test_image_pins_fail_with_actual_values(pp1_result: dict, vllm_tree: Path) -> None:
    version = checks(pp1_result, "version")["version"]
    assert (version["status"], version["actual"]) == ("fail", "0.31.0")
    assert version["expected"] == "0.31.1.dev0+g6e517b15.dsv41gb10"
    files = checks(pp1_result, "file")
    assert len(files) == 3
    for check in files.values():
        assert check["status"] == "fail"
        assert check["actual"] == hashlib.sha256((vllm_tree / check["path"]).read_bytes()).hexdigest()
    failing = {c["id"] for c in pp1_result["checks"] if c["status"] in ("fail", "error")}
    assert failing == {"version", *files}


def test_vllm_citations_found_again_at_the_right_lines(pp1_result: dict, vllm_tree: Path) -> None:
    cites = checks(pp1_result, "citation")
    gpu = vllm_tree / "vllm/v1/worker/gpu"
    runner = gpu / "model_runner.py"
    call = line_of(runner, "sampler_output = self.rejection_sampler(")
    assert cites["runner-passes-draft-logits"]["status"] == "drift"
    assert cites["runner-passes-draft-logits"]["found_lines"] == [call, line_of(runner, ")", call + 1)]
    assert line_of(runner, "self.speculator.draft_logits,", call) < line_of(runner, ")", call + 1)
    mask = line_of(runner, "self.structured_outputs_worker.apply_grammar_bitmask(")
    assert cites["runner-grammar-mask"]["found_lines"] == [mask, mask]
    sampler = gpu / "spec_decode/rejection_sampler.py"
    verify = line_of(sampler, "    def _verify(")
    assert cites["rejection-sampler-verify"]["status"] == "drift"
    assert cites["rejection-sampler-verify"]["found_lines"] == [
        verify, line_of(sampler, "return processed_logits, sampled, num_sampled", verify)
    ]
    spec = gpu / "spec_decode/speculator.py"
    alloc = line_of(spec, "self.draft_logits: torch.Tensor | None = None")
    assert cites["speculator-draft-logits"]["found_lines"] == [alloc, alloc + 13]
    assert "torch.full(" in spec.read_text().splitlines()[alloc + 3]
    cfg = vllm_tree / "vllm/config/speculative.py"
    default = line_of(cfg, 'draft_sample_method: DraftSampleMethod = "greedy"')
    assert cites["config-default-greedy"]["found_lines"] == [default, default]
    for cid, check in cites.items():
        if cid.startswith("lane-"):
            assert check["status"] == "skip", cid
            assert "--repo lane=PATH" in check["message"]
        else:
            assert check["status"] in ("pass", "drift"), (cid, check["message"])


def test_every_vllm_invariant_passes_and_lane_rules_skip(pp1_result: dict) -> None:
    invariants = checks(pp1_result, "invariant")
    on_vllm = {i: c for i, c in invariants.items() if c["source"] is None or c["source"] == "target"}
    assert len(on_vllm) >= 6
    assert {c["status"] for c in on_vllm.values()} == {"pass"}
    lane = {i: c for i, c in invariants.items() if c["source"] == "lane"}
    assert len(lane) == 6 and {c["status"] for c in lane.values()} == {"skip"}


# Every check of manifests/pp1.yaml on real 0.31.0, by status: the image pins fail, the
# citations whose text or lines moved drift, the lane / donor evidence (no --repo, no
# fetch) skips, everything else passes.
STATUSES = {
    "fail": {"version", "file:vllm/v1/worker/gpu/spec_decode/dspark/speculator.py",
             "file:vllm/v1/worker/gpu/spec_decode/rejection_sampler.py",
             "file:vllm/v1/worker/gpu/spec_decode/rejection_sampler_utils.py"},
    "drift": {"runner-passes-draft-logits", "runner-grammar-mask", "rejection-sampler-verify",
              "utils-resample", "speculator-draft-logits"},
    "skip": {"lane-speculator-refuses-non-greedy", "lane-capacity-draft-logits-none",
             "lane-wire-no-distribution", "lane-worker-markov-argmax", "lane-refuses-non-greedy",
             "lane-capacity-sets-draft-logits-none", "lane-hello-declares-greedy",
             "lane-wire-carries-no-distribution", "lane-worker-bias-then-argmax",
             "lane-worker-confidence-separate", "lane:commit", "lane:ref:main",
             "lane:ref:offload-x86host", "henryous:commit", "henryous:patch-0055-at-pinned-commit",
             "henryous:historical-commit-lacks-0055", "hybrid-0055", "hybrid-0055:hunks"},
    "pass": {
        # citations (the last four of them added with the seed cross-check)
        "utils-ratio-verification", "speculator-head-dtype", "config-default-greedy",
        "dspark-sample-logits", "legacy-caches-draft-probs", "legacy-dense-rejection-sampler",
        "legacy-missing-request-fallback", "dspark-markov-bias", "gumbel-draft-cache",
        "verify-reloads-draft-logits",
        # invariants (the claims of the audit, each backed by its ast-grep rules)
        "runner-sampler-gets-draft-logits", "runner-grammar-before-sampler",
        "verify-applies-sampling-params", "verify-passes-draft-logits", "ratio-verification",
        "draft-logprob-zero-without-draft-logits", "verify-reloads-scaled-draft-logits",
        "resample-three-branches", "greedy-compares-target-argmax",
        "block-verification-supported", "draft-logits-only-when-probabilistic",
        "draft-sample-method-defaults-greedy", "cache-dtype-from-head-dtype",
        "dspark-markov-bias-before-sampling", "dspark-scatters-reduced-vocab",
        "dspark-samples-with-gumbel", "gumbel-caches-pre-temperature-logits",
        "gumbel-separate-draft-noise", "legacy-runner-caches-draft-probs",
        "legacy-runner-dense-rejection-sampler", "legacy-missing-request-warns-none",
    },
}


def test_every_check_has_its_status_on_0_31_0(pp1_result: dict) -> None:
    got: dict[str, set[str]] = {}
    for c in pp1_result["checks"]:
        got.setdefault(c["status"], set()).add(c["id"])
    assert got == STATUSES
    assert pp1_result["counts"] == {**{k: len(v) for k, v in STATUSES.items()}, "stale": 0,
                                    "error": 0}


def test_default_manifest_is_pp1(vllm_wheel: Path) -> None:
    proc = run_cli("check", str(vllm_wheel), "--format", "json")
    assert proc.returncode == 1, proc.stderr
    result = json.loads(proc.stdout)
    assert result["manifest"]["sha256"] == hashlib.sha256(PP1.read_bytes()).hexdigest()
    assert {c["id"] for c in result["checks"]} >= {"runner-passes-draft-logits", "version"}
