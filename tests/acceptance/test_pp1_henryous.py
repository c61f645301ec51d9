"""The donor repository rules of the shipped manifests/pp1.yaml, on a real git repository.

The audit says historical b1726644 "does not contain 0055". A rule that looks only
for the path ``patches/0055-dsv41-hybrid-draft.patch`` passes on a commit that holds
the same patch under another name (the cross-check's finding), so the rule also
names the donor pin, whose bytes no file of the commit may have. The real donor
repository is not available here: the test builds one with gitpython (the patch
committed as ``0055-hybrid.patch``, then renamed to the pinned name) and points
the PP1 manifest's ``henryous`` source, lacks rule and donor digest at it.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import git
import pytest
from conftest import REPO, run_cli
from lanerepo import _commit

PP1 = REPO / "manifests" / "pp1.yaml"
DONOR_COMMIT = "afe4d5e41ec6fa4db17c5cc88758af439a106913"
HISTORICAL = "b1726644b89fbb57b6468d33880cddac55a3c527"
DONOR_SHA256 = "9affd2a869ef344be901ed5fa9b444544ebff48f714b78c930101392467a05f5"
PINNED_PATH = "patches/0055-dsv41-hybrid-draft.patch"
OTHER_NAME = "patches/0055-hybrid.patch"
LACKS = "henryous:historical-commit-lacks-0055"

PATCH = """\
From: donor <donor@example.invalid>
Subject: [PATCH 0055] dsv41 hybrid draft

Sampled proposals for requests in the full-window regime; argmax elsewhere.
---
--- a/vllm/v1/worker/gpu/spec_decode/dspark/speculator.py
+++ b/vllm/v1/worker/gpu/spec_decode/dspark/speculator.py
@@ -1,1 +1,2 @@
 import torch
+HYBRID = True
"""


@pytest.fixture(scope="module")
def donor_repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """Commits: the patch under another name (``renamed``), then at the pinned path
    (``pinned``); and, on a branch, a historical commit without those bytes (``clean``)."""
    root = tmp_path_factory.mktemp("henryous") / "donor"
    repo = git.Repo.init(root, initial_branch="main")
    t = 1_790_000_000
    clean = _commit(repo, root, {"README.md": "donor patches\n",
                                 "patches/0054-other.patch": "--- a/x\n+++ b/x\n"}, "0054", t)
    renamed = _commit(repo, root, {OTHER_NAME: PATCH}, "0055 under a working name", t + 60)
    repo.index.remove([OTHER_NAME], working_tree=True)
    pinned = _commit(repo, root, {PINNED_PATH: PATCH}, "0055: the published name", t + 120)
    repo.close()
    return root, {"clean": clean, "renamed": renamed, "pinned": pinned}


def manifest_for(tmp_path: Path, pinned: str, historical: str, *, donor_line: bool = True) -> Path:
    """manifests/pp1.yaml pointed at the test repository's commits and the test patch's
    digest (every occurrence of each value, so the URLs still name the pinned commit)."""
    text = PP1.read_text(encoding="utf-8")
    assert text.count(HISTORICAL) == 1 and text.count(DONOR_SHA256) == 1
    text = text.replace(DONOR_COMMIT, pinned).replace(HISTORICAL, historical)
    text = text.replace(DONOR_SHA256, hashlib.sha256(PATCH.encode()).hexdigest())
    if not donor_line:  # the rule as it was: the path only
        line = "        donor: hybrid-0055                   # nor the patch's bytes under any other name\n"
        assert text.count(line) == 1
        text = text.replace(line, "")
    out = tmp_path / "pp1-henryous.yaml"
    out.write_text(text, encoding="utf-8")
    return out


def henryous_checks(manifest: Path, repo: Path, vllm_tree: Path) -> dict[str, dict]:
    proc = run_cli("check", str(vllm_tree), "-m", str(manifest), "--repo", f"henryous={repo}",
                   "--format", "json", "--offline")
    assert proc.returncode == 1, proc.stderr  # the image pins still fail on 0.31.0
    return {c["id"]: c for c in json.loads(proc.stdout)["checks"] if c["source"] == "henryous"}


def test_historical_commit_with_the_patch_under_another_name_fails(
    donor_repo: tuple[Path, dict[str, str]], vllm_tree: Path, tmp_path: Path
) -> None:
    root, commits = donor_repo
    checks = henryous_checks(manifest_for(tmp_path, commits["pinned"], commits["renamed"]),
                             root, vllm_tree)
    assert checks["henryous:patch-0055-at-pinned-commit"]["status"] == "pass"
    lacks = checks[LACKS]
    assert lacks["status"] == "fail", lacks["message"]
    assert f"hybrid-0055's bytes at {OTHER_NAME}" in lacks["message"]


def test_a_path_only_rule_would_have_passed_it(
    donor_repo: tuple[Path, dict[str, str]], vllm_tree: Path, tmp_path: Path
) -> None:
    root, commits = donor_repo
    manifest = manifest_for(tmp_path, commits["pinned"], commits["renamed"], donor_line=False)
    assert henryous_checks(manifest, root, vllm_tree)[LACKS]["status"] == "pass"


def test_historical_commit_without_the_patch_passes(
    donor_repo: tuple[Path, dict[str, str]], vllm_tree: Path, tmp_path: Path
) -> None:
    root, commits = donor_repo
    checks = henryous_checks(manifest_for(tmp_path, commits["pinned"], commits["clean"]),
                             root, vllm_tree)
    assert checks[LACKS]["status"] == "pass", checks[LACKS]["message"]
    assert {c["status"] for c in checks.values()} == {"pass"}
