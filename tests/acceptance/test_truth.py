"""The shipped PP1 manifest judged against the truth on five real vLLM releases.

``tests/data/truth.yaml`` says, for each release, which of the audit's claims hold,
read from the code by a person (with the lines). Rules are judged against it, not
against an adversary: a claim that holds must be ``pass`` or ``stale`` (never a false
``fail``), a claim that does not hold must be ``fail`` or ``stale`` (never a false
``pass``), and a citation found again must overlap the lines the truth gives.
"""

from __future__ import annotations

import pytest
import yaml
from conftest import REPO, fetch_wheel

from pp1audit.manifest import load_manifest
from pp1audit.result import Check, Result, Status
from pp1audit.run import audit
from pp1audit.sources import open_target

pytestmark = pytest.mark.vllm

TRUTH = yaml.safe_load((REPO / "tests" / "data" / "truth.yaml").read_text(encoding="utf-8"))
RELEASES = sorted(TRUTH["releases"])

CITATION_CLAIM = {
    # citations with a text anchor -> the claim whose code they cite
    "runner-grammar-mask": "runner-grammar-before-sampler",
    "utils-ratio-verification": "ratio-verification",
    "speculator-draft-logits": "draft-logits-only-when-probabilistic",
    "speculator-head-dtype": "cache-dtype-from-head-dtype",
    "config-default-greedy": "draft-sample-method-defaults-greedy",
    "dspark-markov-bias": "dspark-markov-bias-before-sampling",
    "legacy-dense-rejection-sampler": "legacy-runner-dense-rejection-sampler",
    "legacy-missing-request-fallback": "legacy-missing-request-warns-none",
}
"""Citations anchored on a claim's evidence are mapped by their anchor (below)."""


@pytest.fixture(scope="module", params=RELEASES)
def judged(request: pytest.FixtureRequest) -> tuple[str, Result]:
    release = request.param
    manifest = load_manifest(REPO / "manifests" / "pp1.yaml")
    with open_target(fetch_wheel(release), manifest.package) as source:
        return release, audit(manifest, source)


def _by_id(result: Result, kind: str) -> dict[str, Check]:
    return {c.id: c for c in result.checks if c.kind == kind}


def test_truth_names_every_claim_of_the_manifest() -> None:
    manifest = load_manifest(REPO / "manifests" / "pp1.yaml")
    target_claims = {i for i, inv in manifest.invariants.items() if inv.source is None}
    for release in RELEASES:
        assert set(TRUTH["releases"][release]) == target_claims, release


def test_claims_agree_with_the_truth(judged: tuple[str, Result]) -> None:
    release, result = judged
    truth = TRUTH["releases"][release]
    wrong = []
    for cid, check in _by_id(result, "invariant").items():
        if cid not in truth:
            continue  # the lane's claims: judged on the lane repository (tests/test_pp1_lane.py)
        allowed = (Status.PASS, Status.STALE) if truth[cid]["holds"] else (Status.FAIL, Status.STALE)
        if check.status not in allowed:
            wrong.append(f"{cid}: {check.status.value} ({check.message}); truth: {truth[cid]}")
    assert not wrong, f"{release}:\n" + "\n".join(wrong)


def test_a_claim_that_passes_points_at_the_truths_lines(judged: tuple[str, Result]) -> None:
    release, result = judged
    truth = TRUTH["releases"][release]
    for cid, check in _by_id(result, "invariant").items():
        if cid in truth and check.status is Status.PASS:
            assert check.found_lines is not None and truth[cid]["lines"] is not None
            assert check.path == truth[cid]["file"]
            assert _overlap(check.found_lines, truth[cid]["lines"]), (release, cid, check.found_lines)


def test_relocated_citations_overlap_the_truth(judged: tuple[str, Result]) -> None:
    release, result = judged
    truth = TRUTH["releases"][release]
    manifest = load_manifest(REPO / "manifests" / "pp1.yaml")
    seen = 0
    for cid, check in _by_id(result, "citation").items():
        cit = manifest.citations[cid]
        claim = (cit.anchor.invariant if cit.anchor is not None and cit.anchor.invariant
                 else CITATION_CLAIM.get(cid))
        if claim is None or check.status not in (Status.PASS, Status.DRIFT):
            continue
        assert truth[claim]["holds"], (release, cid)
        assert check.path == truth[claim]["file"]
        assert _overlap(check.found_lines, truth[claim]["lines"]), (release, cid, check.found_lines,
                                                                   truth[claim]["lines"])
        seen += 1
    assert seen >= 10, f"{release}: only {seen} citations relocated"


def test_the_gate_closes_on_every_public_release(judged: tuple[str, Result]) -> None:
    """The image pins (version, three digests) are the patched build's: no public
    release is that build, whatever its claims say."""
    _, result = judged
    assert not result.gate_open
    assert _by_id(result, "version")["version"].status is Status.FAIL


def _overlap(found: tuple[int, int] | None, truth: list[int] | None) -> bool:
    return found is not None and truth is not None and found[0] <= truth[1] and truth[0] <= found[1]


def test_overlap_reads_inclusive_spans() -> None:
    assert _overlap((5, 5), [5, 9]) and _overlap((1, 5), [5, 6])
    assert not _overlap((1, 4), [5, 6]) and not _overlap(None, [1, 2])


