"""Acceptance tests of the core on the real vLLM 0.31.0 wheel and its extracted tree."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import REPO, replace_file, run_cli

EXAMPLE = REPO / "manifests" / "examples" / "vllm-0.31.0.yaml"
RUNNER = "vllm/v1/worker/gpu/model_runner.py"
SPECULATOR = "vllm/v1/worker/gpu/spec_decode/speculator.py"


def check_json(target: Path, manifest: Path, *extra: str) -> tuple[int, dict]:
    proc = run_cli("check", str(target), "--manifest", str(manifest), "--format", "json", *extra)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def by_id(result: dict) -> dict[str, dict]:
    return {c["id"]: c for c in result["checks"]}


def test_example_manifest_passes_on_tree_and_wheel_with_identical_json(
    vllm_tree: Path, vllm_wheel: Path
) -> None:
    rc_tree, tree = check_json(vllm_tree, EXAMPLE)
    rc_wheel, wheel = check_json(vllm_wheel, EXAMPLE)
    assert (rc_tree, rc_wheel) == (0, 0)
    assert tree["verdict"] == wheel["verdict"] == "pass"
    assert tree["target"]["kind"] == "directory"
    assert wheel["target"]["kind"] == "wheel"
    assert tree["target"]["version"] == wheel["target"]["version"] == "0.31.0"
    tree.pop("target")
    wheel.pop("target")
    assert tree == wheel
    checks = by_id(tree)
    kinds = sorted(c["kind"] for c in tree["checks"])
    assert kinds.count("file") >= 5 and kinds.count("citation") >= 2 and "version" in kinds
    # The citation's lines really hold what it claims.
    lines = (vllm_tree / RUNNER).read_text().splitlines()
    a, b = checks["runner-passes-draft-logits"]["found_lines"]
    assert "self.speculator.draft_logits," in "\n".join(lines[a - 1 : b])


def test_one_byte_changed_in_pinned_file_fails_with_both_digests(tree_copy: Path) -> None:
    path = tree_copy / "vllm/v1/worker/gpu/spec_decode/rejection_sampler_utils.py"
    data = bytearray(path.read_bytes())
    original = hashlib.sha256(data).hexdigest()
    data[100] ^= 0x01
    replace_file(path, bytes(data))
    rc, result = check_json(tree_copy, EXAMPLE)
    assert rc == 1
    failing = [c for c in result["checks"] if c["status"] != "pass"]
    assert [c["id"] for c in failing] == ["file:vllm/v1/worker/gpu/spec_decode/rejection_sampler_utils.py"]
    assert failing[0]["expected"] == original
    assert failing[0]["actual"] == hashlib.sha256(data).hexdigest()


def test_three_lines_inserted_above_citation_is_drift_shifted_by_three(
    tree_copy: Path, edit: Callable[[Path, Callable[[str], str]], None]
) -> None:
    three = "# a\n# b\n# c\nclass GPUModelRunner("
    edit(tree_copy / RUNNER, lambda t: t.replace("class GPUModelRunner(", three, 1))
    rc, result = check_json(tree_copy, EXAMPLE)
    assert rc == 1
    cite = by_id(result)["runner-passes-draft-logits"]
    assert cite["status"] == "drift"
    assert cite["found_lines"] == [cite["lines"][0] + 3, cite["lines"][1] + 3]
    assert by_id(result)[f"file:{RUNNER}"]["status"] == "fail"
    # --allow-drift opens the gate for the drift but not for the changed file pin.
    proc = run_cli("check", str(tree_copy), "-m", str(EXAMPLE), "--allow-drift")
    assert proc.returncode == 1


def test_cited_text_deleted_fails(
    tree_copy: Path, edit: Callable[[Path, Callable[[str], str]], None]
) -> None:
    guard = (
        '        if self.speculative_config.draft_sample_method == "probabilistic":\n'
        "            # Pre-temperature logits, cached from the previous decode step.\n"
    )
    edit(tree_copy / SPECULATOR, lambda t: t.replace(guard, "", 1))
    rc, result = check_json(tree_copy, EXAMPLE)
    assert rc == 1
    cite = by_id(result)["speculator-allocates-draft-logits"]
    assert cite["status"] == "fail"
    assert cite["found_lines"] is None
    assert "no longer" in cite["message"]


def test_drift_alone_is_opened_by_allow_drift(
    tmp_path: Path, tree_copy: Path, edit: Callable[[Path, Callable[[str], str]], None]
) -> None:
    # Without the file pin, a moved span is the only finding: drift closes the gate
    # by default and --allow-drift opens it.
    text = EXAMPLE.read_text()
    unpinned = "\n".join(line for line in text.splitlines() if not line.startswith(f"  {RUNNER}:"))
    manifest = tmp_path / "m.yaml"
    manifest.write_text(unpinned)
    edit(tree_copy / RUNNER, lambda t: t.replace("class GPUModelRunner(", "\n\nclass GPUModelRunner(", 1))
    assert run_cli("check", str(tree_copy), "-m", str(manifest)).returncode == 1
    proc = run_cli("check", str(tree_copy), "-m", str(manifest), "--allow-drift")
    assert proc.returncode == 0, proc.stdout
    assert "drift" in proc.stdout and "(2 lines later)" in proc.stdout


def pp1_pins_manifest(path: Path) -> Path:
    """Only the image pins of manifests/pp1.yaml: its version and its file digests."""
    import yaml

    pp1 = yaml.safe_load((REPO / "manifests" / "pp1.yaml").read_text(encoding="utf-8"))
    pins = {"pp1audit": 1, "target": pp1["target"], "files": pp1["files"]}
    path.write_text(yaml.safe_dump(pins), encoding="utf-8")
    return path


@pytest.mark.parametrize("which", ["tree", "wheel"])
def test_pp1_pins_fail_on_real_0310_with_actual_values(
    tmp_path: Path, vllm_tree: Path, vllm_wheel: Path, which: str
) -> None:
    manifest = pp1_pins_manifest(tmp_path / "pp1-pins.yaml")
    rc, result = check_json(vllm_tree if which == "tree" else vllm_wheel, manifest)
    assert rc == 1
    assert result["counts"] == {"pass": 0, "drift": 0, "stale": 0, "fail": 4, "skip": 0,
                                "error": 0}
    checks = by_id(result)
    assert checks["version"]["actual"] == "0.31.0"
    assert checks["version"]["expected"] == "0.31.1.dev0+g6e517b15.dsv41gb10"
    for cid, check in checks.items():
        if cid.startswith("file:"):
            real = hashlib.sha256((vllm_tree / check["path"]).read_bytes()).hexdigest()
            assert check["actual"] == real != check["expected"]


def test_package_directory_as_target(vllm_tree: Path) -> None:
    rc, result = check_json(vllm_tree / "vllm", EXAMPLE)
    assert rc == 0
    assert result["counts"]["pass"] == len(result["checks"])


def test_text_output_summary_and_verbose(vllm_tree: Path) -> None:
    quiet = run_cli("check", str(vllm_tree), "-m", str(EXAMPLE))
    loud = run_cli("check", str(vllm_tree), "-m", str(EXAMPLE), "-v")
    assert quiet.returncode == loud.returncode == 0
    assert "PASS (gate open): 8 pass" in quiet.stdout
    assert "runner-passes-draft-logits" not in quiet.stdout
    assert "runner-passes-draft-logits" in loud.stdout
    assert "\x1b[" not in loud.stdout  # NO_COLOR / not a terminal: plain text
    colored = run_cli("check", str(vllm_tree), "-m", str(EXAMPLE), "-v", "--color", "always")
    assert "\x1b[" in colored.stdout


def test_output_file_written_atomically(tmp_path: Path, vllm_wheel: Path) -> None:
    out = tmp_path / "result.json"
    proc = run_cli("check", str(vllm_wheel), "-m", str(EXAMPLE), "--format", "json", "-o", str(out))
    assert proc.returncode == 0 and proc.stdout == ""
    assert json.loads(out.read_text())["verdict"] == "pass"
    assert [p.name for p in tmp_path.iterdir()] == ["result.json"]


def test_text_says_a_version_mismatch_once(vllm_wheel: Path) -> None:
    proc = run_cli("check", str(vllm_wheel), "-m", str(REPO / "manifests" / "pp1.yaml"))
    line = next(x for x in proc.stdout.splitlines() if x.split()[:2] == ["fail", "version"])
    assert line.endswith("vllm/_version.py  version is 0.31.0, pinned 0.31.1.dev0+g6e517b15.dsv41gb10")
    digest = next(x for x in proc.stdout.splitlines() if x.split()[:2] == ["fail", "file"])
    assert "(expected " in digest  # a digest message does not carry the values: they are added
