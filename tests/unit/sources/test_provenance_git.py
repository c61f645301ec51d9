"""Git sources: citations and invariants read from a pinned commit of a real repository.

The repository is built with gitpython (``lanerepo``): a lane-shaped package with
several commits and two branches. Nothing here mocks git.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import git
import pytest
from conftest import run_cli
from lanerepo import SPECULATOR, WIRE, WORKER, WORKER_BASE, Lane, build_lane, dedent

LANE_RULES = (
    "lane-refuses-non-greedy",
    "lane-hello-greedy",
    "lane-wire-no-distribution",
    "lane-capacity-draft-logits-none",
    "lane-worker-bias-then-argmax",
)

CITES = ("cite-speculator-refuses", "cite-capacity-none", "cite-worker-argmax",
         "cite-by-invariant")


EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def lane_manifest(commit: str, refs: str = "") -> str:
    """The lane claims of the PP1 audit, as a manifest pinned at ``commit``.

    ``refs``: more keys of the lane source (refs, contains, lacks), indented 4.
    """
    text = dedent(f"""
        pp1audit: 1
        target: {{package: pkg}}
        sources:
          lane:
            kind: git
            commit: {commit}
        invariants:
          lane-refuses-non-greedy:
            source: lane
            file: {SPECULATOR}
            in: RemoteSpeculator.check_mode
            evidence:
              rule:
                pattern: raise NotImplementedError($$$MSG)
                inside:
                  kind: if_statement
                  has: {{field: condition, pattern: '$METHOD != "greedy"'}}
                  stopBy: end
          lane-hello-greedy:
            source: lane
            file: {WIRE}
            evidence:
              rule:
                pattern: HELLO = $VALUE
                has: {{pattern: SAMPLE_GREEDY, stopBy: end}}
            counterexample:
              rule:
                pattern: HELLO = $VALUE
                has: {{pattern: SAMPLE_PROBABILISTIC, stopBy: end}}
          lane-wire-no-distribution:
            source: lane
            file: {WIRE}
            in: Proposal
            evidence:
              rule: {{pattern: "ids: $T"}}
            counterexample:
              rule: {{pattern: "$FIELD: $TYPE"}}
              constraints:
                FIELD: {{regex: "prob|dist|logit"}}
          lane-capacity-draft-logits-none:
            source: lane
            file: {SPECULATOR}
            in: CapacitySpeculator.propose
            evidence:
              rule: {{pattern: self.draft_logits = None}}
            counterexample:
              rule: {{pattern: self.draft_logits = $VALUE}}
              constraints:
                VALUE: {{not: {{regex: ^None$}}}}
          lane-worker-bias-then-argmax:
            source: lane
            file: {WORKER}
            in: propose_tokens
            evidence:
              rule:
                kind: expression_statement
                has: {{pattern: $TOKEN = argmax($BIASED)}}
                follows:
                  has: {{pattern: $BIASED = apply_markov_bias($$$ARGS)}}
                  stopBy: end
            counterexample:
              rule: {{pattern: random.$DRAW($$$ARGS)}}
        citations:
          cite-speculator-refuses:
            source: lane
            at: {SPECULATOR}:19-22
            anchor:
              exact: |2
                        if method != "greedy":
                            raise NotImplementedError(
                                f"remote DSpark proposals are greedy only; got {{method!r}}"
                            )
          cite-capacity-none:
            source: lane
            at: {SPECULATOR}:34-35
            anchor:
              exact: |2
                        proposal = super().propose(batch)
                        self.draft_logits = None
          cite-by-invariant:
            source: lane
            at: {SPECULATOR}:35
            anchor: {{invariant: lane-capacity-draft-logits-none}}
          cite-worker-argmax:
            source: lane
            at: {WORKER}:22-23
            anchor:
              exact: |2
                        biased = apply_markov_bias(row, markov_bias, prev)
                        token = argmax(biased)
    """)
    pinned = f"    commit: {commit}\n"
    return text.replace(pinned, pinned + refs, 1)


@pytest.fixture(scope="module")
def lane(tmp_path_factory: pytest.TempPathFactory) -> Lane:
    """The lane repository, built once for this module (tests that dirty it copy it)."""
    return build_lane(tmp_path_factory.mktemp("lane") / "lane")


@pytest.fixture
def tree(make_files) -> Path:  # type: ignore[no-untyped-def]
    """A tiny target: the lane checks do not read it."""
    return make_files({"pkg/__init__.py": ""})


def check(tree: Path, manifest_text: str, tmp_path: Path, *args: str) -> tuple[int, dict, str]:
    """Run ``check`` as a user would; return exit code, JSON result and text output."""
    m = tmp_path / "lane.yaml"
    m.write_text(manifest_text)
    proc = run_cli("check", str(tree), "-m", str(m), "--format", "json", *args)
    assert proc.returncode in (0, 1), proc.stderr
    text = run_cli("check", str(tree), "-m", str(m), "-v", *args)
    assert text.returncode == proc.returncode, text.stderr
    return proc.returncode, json.loads(proc.stdout), text.stdout


def by_id(result: dict) -> dict[str, dict]:
    return {c["id"]: c for c in result["checks"]}


def test_lane_rules_pass_at_the_pinned_commit(lane: Lane, tree: Path, tmp_path: Path) -> None:
    rc, result, text = check(tree, lane_manifest(lane.base), tmp_path, "--repo", f"lane={lane.path}")
    assert rc == 0, text
    checks = by_id(result)
    for rid in LANE_RULES:
        assert checks[rid]["status"] == "pass", checks[rid]
        assert checks[rid]["source"] == "lane"
    # found_lines are read back from the blob at the pinned commit
    blob = git.Repo(lane.path).commit(lane.base).tree / SPECULATOR
    lines = blob.data_stream.read().decode().splitlines()
    a, b = checks["lane-capacity-draft-logits-none"]["found_lines"]
    assert (a, b) == (35, 35)
    assert lines[a - 1].strip() == "self.draft_logits = None"
    for cid in CITES:
        assert checks[cid]["status"] == "pass" and checks[cid]["source"] == "lane"
    assert checks["lane:commit"]["status"] == "pass"


def test_lane_rules_fail_each_with_its_reason_on_the_breaking_commit(
    lane: Lane, tree: Path, tmp_path: Path
) -> None:
    rc, result, text = check(tree, lane_manifest(lane.sampled), tmp_path,
                             "--repo", f"lane={lane.path}")
    assert rc == 1
    checks = by_id(result)
    reasons = {rid: checks[rid]["message"] for rid in LANE_RULES}
    # the refusal is gone (its evidence: stale, re-review); the others are contradicted
    assert checks["lane-refuses-non-greedy"]["status"] == "stale", reasons
    assert all(checks[rid]["status"] == "fail" for rid in LANE_RULES
               if rid != "lane-refuses-non-greedy"), reasons
    assert ("evidence 'raise NotImplementedError($$$MSG)' no longer found in "
            "RemoteSpeculator.check_mode") in reasons["lane-refuses-non-greedy"]
    assert reasons["lane-hello-greedy"] == (
        'counterexample found at line 10: HELLO = {"version": 4, "sample": SAMPLE_PROBABILISTIC}')
    assert reasons["lane-wire-no-distribution"] == (  # the new `probs` field
        "counterexample found at line 20: probs: list[list[float]] | None = None")
    assert reasons["lane-capacity-draft-logits-none"] == (
        "counterexample found at line 34: self.draft_logits = proposal.probs")
    assert reasons["lane-worker-bias-then-argmax"].startswith(
        "counterexample found at line 25: random.choices(")
    for cid in CITES:
        if cid == "cite-by-invariant":  # anchored on a claim whose evidence is gone
            assert checks[cid]["status"] == "stale", checks[cid]
            assert "'lane-capacity-draft-logits-none': evidence" in checks[cid]["message"]
            continue
        assert checks[cid]["status"] == "fail", checks[cid]
        assert "no longer in" in checks[cid]["message"], checks[cid]
    for rid in LANE_RULES:
        assert rid in text
    # text names the source of each path: the path is relative to the lane repository
    assert f"lane:{SPECULATOR}" in text and f"lane:{WORKER}" in text


def test_a_later_commit_that_keeps_the_claims_reports_drift_not_fail(
    lane: Lane, tree: Path, tmp_path: Path
) -> None:
    """The docs commit shifts the speculator by two lines: claims hold, spans drift."""
    rc, result, _ = check(tree, lane_manifest(lane.docs), tmp_path, "--repo", f"lane={lane.path}")
    checks = by_id(result)
    assert all(checks[rid]["status"] == "pass" for rid in LANE_RULES)
    moved = checks["cite-capacity-none"]
    assert moved["status"] == "drift" and moved["found_lines"] == [36, 37]
    assert checks["cite-worker-argmax"]["status"] == "pass"
    by_rule = checks["cite-by-invariant"]
    assert by_rule["status"] == "drift" and by_rule["found_lines"] == [37, 37]
    assert "where invariant 'lane-capacity-draft-logits-none' matches" in by_rule["message"]
    assert rc == 1
    assert check(tree, lane_manifest(lane.docs), tmp_path, "--repo", f"lane={lane.path}",
                 "--allow-drift")[0] == 0


def test_the_work_tree_is_never_read(lane: Lane, tree: Path, tmp_path: Path) -> None:
    """Dirty, staged or deleted work-tree files change nothing: blobs are read."""
    clone = tmp_path / "dirty"
    shutil.copytree(lane.path, clone)
    before_pass = check(tree, lane_manifest(lane.base), tmp_path, "--repo", f"lane={clone}")
    before_fail = check(tree, lane_manifest(lane.sampled), tmp_path, "--repo", f"lane={clone}")
    # main (checked out) holds the breaking commit: make its work tree greedy again,
    # stage part of it, and delete the wire module outright.
    (clone / WORKER).write_text(WORKER_BASE)
    repo = git.Repo(clone)
    repo.index.add([WORKER])
    (clone / WIRE).unlink()
    (clone / SPECULATOR).write_text("raise SystemExit('not the committed file')\n")
    assert repo.is_dirty()
    after_pass = check(tree, lane_manifest(lane.base), tmp_path, "--repo", f"lane={clone}")
    after_fail = check(tree, lane_manifest(lane.sampled), tmp_path, "--repo", f"lane={clone}")
    for before, after in ((before_pass, after_pass), (before_fail, after_fail)):
        b, a = before[1], after[1]
        b.pop("manifest"), a.pop("manifest")
        assert before[0] == after[0]
        assert b["checks"] == a["checks"]
    assert before_pass[0] == 0 and before_fail[0] == 1


def test_a_commit_missing_from_the_clone_fails_and_says_to_fetch(
    lane: Lane, tree: Path, tmp_path: Path
) -> None:
    absent = "0123456789abcdef0123456789abcdef01234567"
    rc, result, text = check(tree, lane_manifest(absent), tmp_path, "--repo", f"lane={lane.path}")
    assert rc == 1
    checks = by_id(result)
    commit = checks["lane:commit"]
    assert commit["status"] == "fail"
    assert f"commit {absent[:12]} is not in the lane clone; fetch it" in commit["message"]
    assert f"fetch origin {absent}" in commit["message"]
    for rid in LANE_RULES:
        assert checks[rid]["status"] == "fail" and "fetch it" in checks[rid]["message"]
    assert "fetch it" in text


def test_a_source_not_given_is_skip_everywhere_and_require_all_closes_the_gate(
    lane: Lane, tree: Path, tmp_path: Path
) -> None:
    # The target's own file judged beside them: skipped checks alone judge nothing (exit 2).
    judged = lane_manifest(lane.base) + f"files:\n  pkg/__init__.py: {EMPTY_SHA256}\n"
    rc, result, text = check(tree, judged, tmp_path)
    assert rc == 0
    lane_checks = [c for c in result["checks"] if c["source"] == "lane"]
    assert len(lane_checks) == len(LANE_RULES) + len(CITES) + 1
    assert {c["status"] for c in lane_checks} == {"skip"}
    assert all("--repo lane=PATH" in c["message"] for c in lane_checks)
    assert result["counts"]["skip"] == len(lane_checks)
    assert "skip" in text and "--repo lane=PATH" in text
    m = tmp_path / "lane.yaml"
    md = run_cli("report", str(tree), "-m", str(m))
    assert md.returncode == 0, md.stderr  # skips do not close the gate
    assert "**skip**" in md.stdout and "--repo lane=PATH" in md.stdout
    rc_all, _, _ = check(tree, judged, tmp_path, "--require-all")
    assert rc_all == 1


REFS = """\
    refs:
      main: {{commit: {docs}, moving: true}}
      offload-x86host: {{commit: {offload}, moving: true}}
      v1: {{commit: {base}}}
      release: {{commit: {base}}}
      gone: {{commit: {base}, moving: true}}
      vanished: {{commit: {base}}}
      refs/heads/main: {{commit: {offload}}}
"""


def test_refs_report_where_they_point_now(lane: Lane, tree: Path, tmp_path: Path) -> None:
    refs = REFS.format(docs=lane.docs, offload=lane.offload, base=lane.base)
    rc, result, _ = check(tree, lane_manifest(lane.base, refs=refs), tmp_path,
                          "--repo", f"lane={lane.path}")
    checks = by_id(result)
    main = checks["lane:ref:main"]
    assert main["status"] == "pass" and main["actual"] == lane.sampled
    assert "moving ref: information" in main["message"]
    assert "1 commit(s) ahead of the recorded" in main["message"]
    offload = checks["lane:ref:offload-x86host"]
    assert offload["status"] == "pass" and "still at the recorded" in offload["message"]
    assert checks["lane:ref:v1"]["status"] == "pass"
    release = checks["lane:ref:release"]
    assert release["status"] == "fail" and release["message"].startswith("fixed ref moved")
    assert release["expected"] == lane.base and release["actual"] == lane.docs
    assert checks["lane:ref:gone"]["status"] == "skip"
    assert checks["lane:ref:vanished"]["status"] == "fail"
    assert "not in" in checks["lane:ref:vanished"]["message"]
    diverged = checks["lane:ref:refs/heads/main"]
    assert diverged["status"] == "fail"
    assert "not a descendant of the recorded" in diverged["message"]
    assert rc == 1


CONTENT = """\
    contains:
      wire-at-base: {{path: {wire}}}
      wire-bytes: {{path: {wire}, sha256: {wire_sha}}}
      wire-bytes-anywhere: {{sha256: {wire_sha}}}
      offload-on-branch: {{commit: {offload}, path: spark/remote_dspark/offload.py}}
    lacks:
      no-offload-at-base: {{path: spark/remote_dspark/offload.py}}
      sampled-wire-not-at-base: {{sha256: {sampled_sha}}}
      should-fail: {{commit: {offload}, path: spark/remote_dspark/offload.py}}
"""


def test_contains_and_lacks(lane: Lane, tree: Path, tmp_path: Path) -> None:
    import hashlib

    from lanerepo import WIRE_BASE, WIRE_SAMPLED

    content = CONTENT.format(
        wire=WIRE, offload=lane.offload,
        wire_sha=hashlib.sha256(WIRE_BASE.encode()).hexdigest(),
        sampled_sha=hashlib.sha256(WIRE_SAMPLED.encode()).hexdigest(),
    )
    rc, result, _ = check(tree, lane_manifest(lane.base, refs=content), tmp_path,
                          "--repo", f"lane={lane.path}")
    checks = by_id(result)
    for cid in ("wire-at-base", "wire-bytes", "wire-bytes-anywhere", "offload-on-branch",
                "no-offload-at-base", "sampled-wire-not-at-base"):
        assert checks[f"lane:{cid}"]["status"] == "pass", checks[f"lane:{cid}"]
    assert WIRE in checks["lane:wire-bytes-anywhere"]["message"]
    bad = checks["lane:should-fail"]
    assert bad["status"] == "fail"
    assert bad["message"] == (f"must not contain: spark/remote_dspark/offload.py is in commit "
                              f"{lane.offload[:12]}")
    assert rc == 1


def test_repo_options_from_a_config_file_and_usage_errors(
    lane: Lane, tree: Path, tmp_path: Path
) -> None:
    m = tmp_path / "lane.yaml"
    m.write_text(lane_manifest(lane.base))
    cfg = tmp_path / "conf" / "pp1audit.toml"
    cfg.parent.mkdir()
    # a relative path in the config is relative to the config file, not the cwd
    rel = os.path.relpath(lane.path, cfg.parent)
    # a name the manifest does not use is ignored in a config file (it may serve
    # other manifests), but is a usage error on the command line (below)
    cfg.write_text(f'[repos]\nlane = "{rel}"\nother = "/nonexistent"\n')
    proc = run_cli("check", str(tree), "-m", str(m), "--config", str(cfg), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert by_id(json.loads(proc.stdout))["lane-hello-greedy"]["status"] == "pass"
    # ./pp1audit.toml is picked up without --config
    proc = run_cli("check", str(tree), "-m", str(m), "--format", "json", cwd=cfg.parent)
    assert proc.returncode == 0 and by_id(json.loads(proc.stdout))["lane:commit"]["status"] == "pass"
    # usage errors: exit 2, one line, naming the problem
    cases = [
        (["--repo", "lane"], "expected NAME=PATH"),
        (["--repo", f"other={lane.path}"], "no git source 'other'"),
        (["--repo", f"lane={tmp_path / 'nope'}"], "no such directory"),
        (["--repo", f"lane={tree}"], "not a git repository"),
        (["--fetch", "--offline"], "contradict"),
    ]
    for args, expected in cases:
        proc = run_cli("check", str(tree), "-m", str(m), *args)
        assert proc.returncode == 2, (args, proc.stderr)
        assert expected in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    bad = tmp_path / "bad.toml"
    for content, expected in (("[repos\n", "invalid TOML"), ("[other]\n", "unknown section"),
                              ("[repos]\nlane = 3\n", "wrong type")):
        bad.write_text(content)
        proc = run_cli("check", str(tree), "-m", str(m), "--config", str(bad))
        assert proc.returncode == 2 and str(bad) in proc.stderr and expected in proc.stderr


def test_manifest_errors_for_provenance_keys(tree: Path, tmp_path: Path) -> None:
    base = "pp1audit: 1\ntarget: {package: pkg}\n"
    cases = {
        "sources:\n  lane: {kind: git, commit: abc}\n": ("not a full commit id", 4),
        "citations:\n  c: {at: a.py:1, source: nowhere, anchor: {exact: x}}\n":
            ("no source 'nowhere'", 4),
        "sources:\n  target: {kind: git, commit: " + "a" * 40 + "}\n": ("reserved", 4),
        "sources:\n  s:\n    kind: git\n    commit: " + "a" * 40 + "\n    lacks:\n"
        "      x: {donor: missing}\n": ("no pin 'missing'", 8),
        "donors:\n  d: {url: 'ftp://x/y.patch', sha256: " + "a" * 64 + "}\n": ("not an http", 4),
        "sources:\n  lane: {kind: git, commit: " + "a" * 40 + "}\n"
        "invariants:\n  i: {file: a.py, evidence: {rule: {pattern: x = 1}}}\n"
        "citations:\n  c: {at: a.py:1, source: lane, anchor: {invariant: i}}\n":
            ("invariant 'i' reads source 'target', the citation 'lane'", 8),
    }
    for body, (message, line) in cases.items():
        m = tmp_path / "m.yaml"
        m.write_text(base + body)
        proc = run_cli("check", str(tree), "-m", str(m))
        assert proc.returncode == 2, body
        assert message in proc.stderr, (body, proc.stderr)
        assert f"m.yaml:{line}:" in proc.stderr, (body, proc.stderr)


def test_donor_hunks_in_a_git_source_and_lacks_its_bytes(
    lane: Lane, tree: Path, tmp_path: Path
) -> None:
    """A real `git diff` of the breaking change, as a donor: judged at a commit's blobs."""
    import hashlib

    patch = (git.Repo(lane.path).git.diff(lane.docs, lane.sampled) + "\n").encode()
    digest = hashlib.sha256(patch).hexdigest()
    cache = tmp_path / "cache"
    (cache / "sha256").mkdir(parents=True)
    (cache / "sha256" / digest).write_bytes(patch)  # where `pp1audit fetch` puts it
    donor = dedent(f"""
        donors:
          sampled:
            url: https://example.invalid/sampled.patch
            sha256: '{digest}'
            expect: not-applied
            applies_to: lane
    """)
    lacks = f"    lacks:\n      no-donor-bytes: {{commit: {lane.sampled}, donor: sampled}}\n"

    def run(commit: str) -> tuple[int, dict[str, dict]]:
        text = lane_manifest(commit, refs=lacks) + donor
        rc, result, _ = check(tree, text, tmp_path, "--repo", f"lane={lane.path}",
                              "--cache-dir", str(cache))
        return rc, by_id(result)

    rc, checks = run(lane.base)
    assert checks["sampled"]["status"] == "pass"
    assert checks["sampled:hunks"]["status"] == "pass"
    assert checks["sampled:hunks"]["message"].startswith(
        f"sampled is not applied in lane@{lane.base[:12]}: all ")
    assert checks["lane:no-donor-bytes"]["status"] == "pass"
    assert checks["lane:no-donor-bytes"]["message"] == (
        f"no file in commit {lane.sampled[:12]} has sampled's bytes")
    assert rc == 0
    rc, checks = run(lane.sampled)
    assert rc == 1
    assert checks["sampled:hunks"]["status"] == "fail"
    assert checks["sampled:hunks"]["actual"] == "6 applied, 0 not applied, 0 conflict"
    assert checks[f"sampled:{WIRE}#1"]["actual"] == "applied"


def test_git_source_refuses_symlinks_and_names_missing_blobs(tmp_path: Path) -> None:
    from pp1audit.errors import MissingFile, SourceError
    from pp1audit.sources.git import Clone

    root = tmp_path / "r"
    repo = git.Repo.init(root)
    (root / "real.py").write_text("x = 1\n")
    os.symlink("/etc/passwd", root / "link.py")
    repo.index.add(["real.py", "link.py"])
    sha = repo.index.commit("with a symlink").hexsha
    clone = Clone("r", root)
    try:
        source = clone.source(sha)
        assert source is not None
        assert source.read("real.py") == b"x = 1\n"
        with pytest.raises(SourceError, match="is a symbolic link"):
            source.read("link.py")
        with pytest.raises(MissingFile, match=f"is not in commit {sha[:12]}"):
            source.read("gone.py")
        with pytest.raises(SourceError, match=r"contains '\.\.'"):
            source.read("../real.py")
        assert list(source.iter_files()) == ["link.py", "real.py"]
        assert clone.source("f" * 40) is None
    finally:
        clone.close()


def test_citation_in_a_remote_pin(tree: Path, tmp_path: Path) -> None:
    """A cached remote file is a source like any other: its pin proves its lines."""
    import hashlib

    data = b"def rejection_sample(target, draft):\n    return accept(target, draft)\n"
    digest = hashlib.sha256(data).hexdigest()
    cache = tmp_path / "cache"
    (cache / "sha256").mkdir(parents=True)
    (cache / "sha256" / digest).write_bytes(data)
    text = dedent(f"""
        pp1audit: 1
        target: {{package: pkg}}
        remotes:
          upstream-rs:
            url: https://example.invalid/vllm/blob/e4db46c7/vllm/v1/sample/rejection_sampler.py
            sha256: '{digest}'
            commit: e4db46c79bca354fef07197465faea14ca563c09
            path: vllm/v1/sample/rejection_sampler.py
        citations:
          upstream-accepts:
            source: upstream-rs
            at: vllm/v1/sample/rejection_sampler.py:1-2
          wrong-path:
            source: upstream-rs
            at: vllm/v1/sample/other.py:1
            anchor: {{exact: "x"}}
        invariants:
          upstream-accepts-with-draft:
            source: upstream-rs
            file: vllm/v1/sample/rejection_sampler.py
            in: rejection_sample
            evidence:
              rule:
                pattern: accept($$$ARGS)
                has: {{pattern: draft, stopBy: end}}
    """)
    rc, result, _ = check(tree, text, tmp_path, "--cache-dir", str(cache))
    checks = by_id(result)
    assert checks["upstream-rs"]["kind"] == "file" and checks["upstream-rs"]["status"] == "pass"
    assert "pins commit e4db46c79bca" in checks["upstream-rs"]["message"]
    assert checks["upstream-accepts"]["status"] == "pass"
    assert checks["wrong-path"]["status"] == "fail"
    assert "is not this remote pin's file" in checks["wrong-path"]["message"]
    inv = checks["upstream-accepts-with-draft"]
    assert inv["status"] == "pass" and inv["source"] == "upstream-rs" and inv["found_lines"] == [2, 2]
    assert rc == 1


@pytest.mark.vllm
def test_pp1_manifest_lane_section_on_a_clone_that_lacks_the_lane_base(
    lane: Lane, vllm_tree: Path
) -> None:
    """The shipped PP1 manifest's lane source, pointed at a clone without cc9515f…:
    every lane citation fails saying to fetch; the moving refs report their move."""
    from conftest import REPO

    pp1 = REPO / "manifests" / "pp1.yaml"
    proc = run_cli("check", str(vllm_tree), "-m", str(pp1), "--repo", f"lane={lane.path}",
                   "--format", "json", "--offline")
    assert proc.returncode == 1, proc.stderr
    result = json.loads(proc.stdout)
    lane_checks = [c for c in result["checks"] if c["source"] == "lane"]
    assert lane_checks
    citations = [c for c in lane_checks if c["kind"] == "citation"]
    assert citations and all(c["status"] == "fail" for c in citations)
    assert all("cc9515fdd4e2 is not in" in c["message"] and "fetch it" in c["message"]
               for c in citations)
    refs = {c["id"]: c for c in lane_checks if ":ref:" in c["id"]}
    assert refs["lane:ref:main"]["status"] == "pass"
    assert refs["lane:ref:main"]["actual"] == lane.sampled
    assert "moving ref: information" in refs["lane:ref:main"]["message"]
    assert refs["lane:ref:offload-x86host"]["actual"] == lane.offload
    others = [c for c in result["checks"] if c["source"] == "henryous"]
    assert others and all(c["status"] == "skip" for c in others)


def partial_clone(lane: Lane, tmp_path: Path, missing: str) -> Path:
    """A ``--filter=blob:none`` clone of the lane holding every blob of the base commit
    but ``missing``'s, as a CI job's partial clone that never read that file."""
    origin = tmp_path / "origin"
    shutil.copytree(lane.path, origin)
    git.Repo(origin).git.config("uploadpack.allowFilter", "true")
    part = tmp_path / "partial"
    clone = git.Repo.clone_from(f"file://{origin}", part,
                                multi_options=["--filter=blob:none", "--no-checkout"])
    tree = git.Repo(origin).commit(lane.base).tree
    for item in tree.traverse():
        if item.type == "blob" and item.path != missing:
            clone.git.cat_file("-e", item.hexsha)  # fetched lazily, as a read would
    clone.close()
    return part


def test_a_blob_a_partial_clone_lacks_is_that_files_error_only(
    lane: Lane, tree: Path, tmp_path: Path
) -> None:
    part = partial_clone(lane, tmp_path, missing=WORKER)
    blob = (git.Repo(lane.path).commit(lane.base).tree / WORKER).hexsha
    rc, result, _ = check(tree, lane_manifest(lane.base), tmp_path, "--repo", f"lane={part}")
    assert rc == 1
    checks = by_id(result)
    expected = (f"needs blob {blob[:12]}, which is not in this partial clone; fetch it "
                f"(git -C <lane clone> cat-file -e {blob})")
    for cid in ("cite-worker-argmax", "lane-worker-bias-then-argmax"):
        assert checks[cid]["status"] == "error", checks[cid]
        assert checks[cid]["message"] == f"{WORKER} {expected}", checks[cid]
    # everything else is still judged, files first read after the failure included (wire.py)
    others = [c for c in result["checks"] if c["id"] not in ("cite-worker-argmax",
                                                              "lane-worker-bias-then-argmax")]
    assert others and all(c["status"] == "pass" for c in others), others
    assert checks["lane-hello-greedy"]["status"] == "pass"
    # a "lacks" rule that must read every blob cannot be proven: an error, not a pass
    lacks = "    lacks:\n      no-such-bytes: {sha256: '" + "0" * 64 + "'}\n"
    rc, result, _ = check(tree, lane_manifest(lane.base, refs=lacks), tmp_path,
                          "--repo", f"lane={part}")
    rule = by_id(result)["lane:no-such-bytes"]
    assert rule["status"] == "error" and rule["message"] == f"{WORKER}: {expected}"


def test_a_clone_git_refuses_is_a_usage_error_naming_safe_directory(
    lane: Lane, tree: Path, tmp_path: Path
) -> None:
    """git's "dubious ownership" (a clone owned by another user, as in CI containers):
    git's own test switch makes it refuse the clone without changing its owner."""
    m = tmp_path / "lane.yaml"
    m.write_text(lane_manifest(lane.base))
    config = tmp_path / "gitconfig"
    config.write_text("")
    env = {"GIT_TEST_ASSUME_DIFFERENT_OWNER": "1", "GIT_CONFIG_GLOBAL": str(config),
           "GIT_CONFIG_NOSYSTEM": "1"}
    proc = run_cli("check", str(tree), "-m", str(m), "--repo", f"lane={lane.path}", env=env)
    assert proc.returncode == 2
    trust = f"git config --global --add safe.directory {lane.path.resolve()}"
    assert proc.stderr == (f"pp1audit: error: {lane.path}: --repo lane: git refuses it: owned by "
                           f"another user (dubious ownership); if you trust it: {trust}\n")
    # the command it names is the remedy
    import subprocess

    subprocess.run(trust.split(), check=True, env={**os.environ, **env})
    proc = run_cli("check", str(tree), "-m", str(m), "--repo", f"lane={lane.path}", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_recorded_tag_is_not_shadowed_by_a_branch_of_the_same_name(
    tree: Path, tmp_path: Path
) -> None:
    """git resolves ``v1`` to the tag before a branch: a branch cannot fake a moved tag."""
    root = tmp_path / "r"
    repo = git.Repo.init(root, initial_branch="main")
    (root / "a.py").write_text("x = 1\n")
    repo.index.add(["a.py"])
    first = repo.index.commit("one").hexsha
    (root / "a.py").write_text("x = 2\n")
    repo.index.add(["a.py"])
    second = repo.index.commit("two").hexsha
    repo.create_tag("v1", ref=second)  # the recorded tag moved from `first`...
    repo.create_head("v1", first)  # ...and a branch of the same name points where it was
    repo.git.tag("blob-tag", (repo.commit(first).tree / "a.py").hexsha)
    refs = (f"    refs:\n      v1: {{commit: {first}}}\n"
            f"      blob-tag: {{commit: {first}}}\n")
    text = dedent(f"""
        pp1audit: 1
        target: {{package: pkg}}
        sources:
          lane:
            kind: git
            commit: {first}
    """) + refs
    rc, result, _ = check(tree, text, tmp_path, "--repo", f"lane={root}")
    checks = by_id(result)
    v1 = checks["lane:ref:v1"]
    assert v1["status"] == "fail" and v1["actual"] == second
    assert v1["message"].startswith(f"fixed ref moved: refs/tags/v1 now at {second[:12]}")
    # a ref git cannot peel to a commit is an error, never "not in the clone"
    blob_tag = checks["lane:ref:blob-tag"]
    assert blob_tag["status"] == "error"
    assert blob_tag["message"].startswith("refs/tags/blob-tag in the lane clone does not resolve to a commit")
    assert rc == 1


def test_a_blob_over_the_read_limit_is_an_error_not_read(tree: Path, tmp_path: Path) -> None:
    """A 513 MiB blob (zeros: stored compressed in a few MB) is refused before reading."""
    import subprocess

    from pp1audit.sources import MAX_READ

    root = tmp_path / "big"
    repo = git.Repo.init(root, initial_branch="main")
    size = MAX_READ + (1 << 20)
    writer = subprocess.Popen(["git", "-c", "core.looseCompression=1", "hash-object", "-w",
                               "--stdin"], cwd=root, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert writer.stdin is not None and writer.stdout is not None
    zeros = bytes(1 << 20)
    for _ in range(size >> 20):
        writer.stdin.write(zeros)
    writer.stdin.close()
    blob = writer.stdout.read().decode().strip()
    assert writer.wait() == 0
    repo.git.update_index("--add", "--cacheinfo", f"100644,{blob},big.bin")
    (root / "small.py").write_text("x = 1\n")
    repo.index.add(["small.py"])
    commit = repo.index.commit("big").hexsha
    text = dedent(f"""
        pp1audit: 1
        target: {{package: pkg}}
        sources:
          lane:
            kind: git
            commit: {commit}
            files: {{big.bin: "{'0' * 64}"}}
            lacks:
              no-such-bytes: {{sha256: "{'0' * 64}"}}
        citations:
          c: {{source: lane, at: "small.py:1", anchor: {{exact: "x = 1"}}}}
    """)
    rc, result, _ = check(tree, text, tmp_path, "--repo", f"lane={root}")
    checks = by_id(result)
    too_large = f"is too large to read whole ({size:,} bytes; the limit is 512 MiB)"
    assert checks["file:lane:big.bin"]["status"] == "error"
    assert checks["file:lane:big.bin"]["message"].endswith(too_large)
    assert checks["lane:no-such-bytes"] == {**checks["lane:no-such-bytes"], "status": "error",
                                            "message": f"big.bin: {too_large}"}
    assert checks["c"]["status"] == "pass" and rc == 1


def test_a_repo_option_for_a_manifest_without_sources_is_a_usage_error(
    lane: Lane, tree: Path, tmp_path: Path
) -> None:
    m = tmp_path / "plain.yaml"
    m.write_text("pp1audit: 1\ntarget: {package: pkg}\n")
    proc = run_cli("check", str(tree), "-m", str(m), "--repo", f"lnae={lane.path}")
    assert proc.returncode == 2
    assert proc.stderr == ("pp1audit: error: --repo lnae: the manifest has no git source 'lnae' "
                           "(its sources: none)\n")


def test_a_bad_clone_path_is_blamed_on_who_gave_it(lane: Lane, tree: Path, tmp_path: Path) -> None:
    """A path from a config file that is no clone names the file and its key: the
    message used to say ``--repo lane`` to a user who typed no --repo."""
    m = tmp_path / "lane.yaml"
    m.write_text(lane_manifest(lane.base))
    cfg = tmp_path / "cfg.toml"
    for path, why in (("/nonexistent", "no such directory"), (str(tree), "not a git repository")):
        cfg.write_text(f'[repos]\nlane = "{path}"\n')
        proc = run_cli("check", str(tree), "-m", str(m), "--config", str(cfg))
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.startswith(f"pp1audit: error: {cfg}: [repos] lane: {path}: {why}"), proc.stderr
        assert "--repo" not in proc.stderr and len(proc.stderr.splitlines()) == 1
    # --repo overrides the file, and a bad path given there is still said as before
    proc = run_cli("check", str(tree), "-m", str(m), "--config", str(cfg), "--repo", "lane=/nope")
    assert proc.returncode == 2
    assert proc.stderr == "pp1audit: error: /nope: --repo lane: no such directory\n"
