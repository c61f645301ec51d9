"""Donor hunk status on the real vLLM 0.31.0 tree: applied, not applied, conflict.

The donor patch is made here from real 0.31.0 files (difflib, in the unified
format git and ``patch`` use) and parsed back by pp1audit with ``unidiff``.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import replace_file

from pp1audit.checks.patches import patch_status
from pp1audit.checks.patchmatch import APPLIED, CONFLICT, NOT_APPLIED
from pp1audit.checks.patchparse import PatchError, parse
from pp1audit.sources import DirectorySource, WheelSource
from pp1audit.sources.store import FileStore

CONFIG = "vllm/config/speculative.py"
SAMPLER = "vllm/v1/worker/gpu/spec_decode/rejection_sampler.py"

pytestmark = pytest.mark.vllm


def donor_edits(tree: Path) -> dict[str, tuple[str, str]]:
    """A 0055-like donor change on real files: path -> (original text, patched text)."""
    config = (tree / CONFIG).read_text()
    sampler = (tree / SAMPLER).read_text()
    new_config = config.replace(
        '    draft_sample_method: DraftSampleMethod = "greedy"',
        '    draft_sample_method: DraftSampleMethod = "probabilistic"\n'
        '    hybrid_draft: bool = True\n'
        '    """Sample requests already in the full-window regime; argmax for the rest."""',
    )
    new_sampler = sampler.replace(
        "        processed_logits = self.sampler.apply_sampling_params(",
        "        # hybrid draft: one-hot logits for argmax requests\n"
        "        processed_logits = self.sampler.apply_sampling_params(",
    )
    assert new_config != config and new_sampler != sampler
    return {CONFIG: (config, new_config), SAMPLER: (sampler, new_sampler)}


def make_patch(edits: dict[str, tuple[str, str]]) -> bytes:
    """A multi-file unified diff with a mail preamble, as ``git format-patch`` writes."""
    out = ["From 0055 Mon Sep 17 00:00:00 2001\n", "Subject: [PATCH] dsv41 hybrid draft\n",
           "\n", "Prose about the experiment; not part of the diff.\n", "---\n"]
    for path, (old, new) in edits.items():
        out.append(f"diff --git a/{path} b/{path}\n")
        out.extend(difflib.unified_diff(old.splitlines(True), new.splitlines(True),
                                        f"a/{path}", f"b/{path}", n=3))
    out.append("-- \n2.43.0\n")
    return "".join(out).encode()


def statuses(tree: Path, patch: bytes) -> list[str]:
    return [s.status for s in patch_status(patch, FileStore(DirectorySource(tree))).hunks]


def test_pristine_tree_reports_not_applied(vllm_tree: Path) -> None:
    patch = make_patch(donor_edits(vllm_tree))
    assert [h.path for d in parse(patch) for h in d.hunks] == [CONFIG, SAMPLER]
    result = patch_status(patch, FileStore(DirectorySource(vllm_tree))).hunks
    assert [s.status for s in result] == [NOT_APPLIED, NOT_APPLIED]
    # the reported lines hold the hunk's original text in the real file
    lines = (vllm_tree / CONFIG).read_text().splitlines()
    a, b = result[0].lines  # type: ignore[misc]
    assert '    draft_sample_method: DraftSampleMethod = "greedy"' in lines[a - 1 : b]


def test_the_same_on_the_wheel_read_in_place(vllm_tree: Path, vllm_wheel: Path) -> None:
    patch = make_patch(donor_edits(vllm_tree))
    with WheelSource(vllm_wheel) as wheel:
        assert [s.status for s in patch_status(patch, FileStore(wheel)).hunks] == [NOT_APPLIED] * 2


def test_patched_copy_reports_applied(tree_copy: Path) -> None:
    edits = donor_edits(tree_copy)
    patch = make_patch(edits)
    for path, (_, new) in edits.items():
        replace_file(tree_copy / path, new.encode())
    result = patch_status(patch, FileStore(DirectorySource(tree_copy))).hunks
    assert [s.status for s in result] == [APPLIED, APPLIED]
    lines = (tree_copy / CONFIG).read_text().splitlines()
    a, b = result[0].lines  # type: ignore[misc]
    assert "    hybrid_draft: bool = True" in lines[a - 1 : b]


def test_half_applied_and_overlapping_edit_is_conflict(
    tree_copy: Path, edit: Callable[[Path, Callable[[str], str]], None]
) -> None:
    patch = make_patch(donor_edits(tree_copy))
    # someone changed the same default another way; the sampler hunk stays pristine
    edit(tree_copy / CONFIG, lambda t: t.replace(
        'draft_sample_method: DraftSampleMethod = "greedy"',
        'draft_sample_method: DraftSampleMethod = "synthetic"'))
    result = patch_status(patch, FileStore(DirectorySource(tree_copy))).hunks
    assert [s.status for s in result] == [CONFLICT, NOT_APPLIED]
    assert "neither the original nor the patched lines" in result[0].reason


def test_file_missing_is_conflict_and_new_file_absent_is_not_applied(tree_copy: Path) -> None:
    edits = donor_edits(tree_copy)
    added = "vllm/v1/worker/gpu/spec_decode/hybrid.py"
    patch = make_patch(edits) + (
        f"diff --git a/{added} b/{added}\nnew file mode 100644\n--- /dev/null\n+++ b/{added}\n"
        "@@ -0,0 +1,2 @@\n+HYBRID = True\n+WINDOW = 8\n"
    ).encode()
    (tree_copy / SAMPLER).unlink()
    result = patch_status(patch, FileStore(DirectorySource(tree_copy))).hunks
    assert [s.status for s in result] == [NOT_APPLIED, CONFLICT, NOT_APPLIED]
    assert "missing" in result[1].reason
    (tree_copy / added).write_text("HYBRID = True\nWINDOW = 8\n")
    assert patch_status(patch, FileStore(DirectorySource(tree_copy))).hunks[2].status == APPLIED


def test_not_a_patch_is_a_one_line_error() -> None:
    with pytest.raises(PatchError, match="no hunks found"):
        parse(b"just prose\n")
    with pytest.raises(PatchError, match="not UTF-8"):
        parse(b"\xff\xfe")


def seed_cache(cache: Path, data: bytes) -> str:
    """Put bytes where ``pp1audit fetch`` would (content-addressed); return the digest."""
    import hashlib

    digest = hashlib.sha256(data).hexdigest()
    (cache / "sha256").mkdir(parents=True, exist_ok=True)
    (cache / "sha256" / digest).write_bytes(data)
    return digest


def test_check_states_not_applied_as_a_fact_on_the_real_tree(
    vllm_tree: Path, tree_copy: Path, tmp_path: Path
) -> None:
    import json

    from conftest import run_cli

    edits = donor_edits(vllm_tree)
    digest = seed_cache(tmp_path / "cache", make_patch(edits))
    m = tmp_path / "m.yaml"
    m.write_text(
        "pp1audit: 1\ntarget: {package: vllm}\ndonors:\n  hybrid-0055:\n"
        "    url: https://example.invalid/0055-dsv41-hybrid-draft.patch\n"
        f"    sha256: '{digest}'\n    expect: not-applied\n"
    )

    def run(tree: Path) -> tuple[int, dict[str, dict]]:
        proc = run_cli("check", str(tree), "-m", str(m), "--cache-dir", str(tmp_path / "cache"),
                       "--offline", "--format", "json")
        assert proc.returncode in (0, 1), proc.stderr
        return proc.returncode, {c["id"]: c for c in json.loads(proc.stdout)["checks"]}

    rc, checks = run(vllm_tree)
    assert rc == 0
    assert checks["hybrid-0055:hunks"]["message"] == (
        "hybrid-0055 is not applied in the target: all 2 hunk(s) not applied")
    for path, (_, new) in edits.items():
        replace_file(tree_copy / path, new.encode())
    rc, checks = run(tree_copy)
    assert rc == 1
    summary = checks["hybrid-0055:hunks"]
    assert summary["status"] == "fail" and summary["actual"] == "2 applied, 0 not applied, 0 conflict"
    hunk = checks[f"hybrid-0055:{CONFIG}#1"]
    assert hunk["status"] == "fail" and hunk["actual"] == "applied"
    lines = (tree_copy / CONFIG).read_text().splitlines()
    a, b = hunk["found_lines"]
    assert '    draft_sample_method: DraftSampleMethod = "probabilistic"' in lines[a - 1 : b]


def test_hunks_without_context_are_applied_or_not_never_conflict(tmp_path: Path) -> None:
    # As ``diff -U0`` writes them: a pure addition and a pure deletion, no context.
    tree = tmp_path / "tree"
    (tree / "pkg").mkdir(parents=True)
    patch = (b"--- a/pkg/mod.py\n+++ b/pkg/mod.py\n"
             b"@@ -1,0 +2 @@\n+method = 'probabilistic'\n"
             b"@@ -3 +3,0 @@\n-legacy = True\n")
    (tree / "pkg" / "mod.py").write_text("a = 1\nb = 2\nlegacy = True\n", encoding="utf-8")
    assert statuses(tree, patch) == [NOT_APPLIED, NOT_APPLIED]
    (tree / "pkg" / "mod.py").write_text("a = 1\nmethod = 'probabilistic'\nb = 2\n",
                                         encoding="utf-8")
    assert statuses(tree, patch) == [APPLIED, APPLIED]
