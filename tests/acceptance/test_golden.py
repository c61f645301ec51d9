"""Golden JSON: ``pp1audit check`` with the shipped PP1 manifest on the real vLLM 0.31.0,
as a wheel and as an extracted tree, must print exactly the saved result.

What a move or a library swap must not change (the gate, every check's status,
lines, expected/actual values and message) is compared whole. Only what belongs to
the machine is normalised: the target's location and the tool's version; the
manifest's digest is checked against the file itself. After an intended change,
``PP1AUDIT_REGOLD=1 python -m pytest tests/acceptance/test_golden.py`` rewrites the
files; review their diff like code.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from pathlib import Path

import pytest
from conftest import REPO, run_cli, site

pytestmark = pytest.mark.vllm

GOLDEN = REPO / "tests" / "data" / "golden"
MANIFEST = REPO / "manifests" / "pp1.yaml"


def _normalised(stdout: str) -> dict[str, object]:
    result = json.loads(stdout)
    assert result["manifest"]["sha256"] == hashlib.sha256(MANIFEST.read_bytes()).hexdigest()
    result["manifest"]["sha256"] = "<sha256 of manifests/pp1.yaml>"
    result["target"]["location"] = "<target>"
    result["tool"]["version"] = "<version>"
    return result


@pytest.mark.parametrize("kind", ["wheel", "tree"])
def test_pp1_on_real_0_31_0_is_the_golden_result(kind: str, vllm_wheel: Path, vllm_tree: Path) -> None:
    target = vllm_wheel if kind == "wheel" else vllm_tree
    proc = run_cli("check", str(target), "--format", "json")
    assert proc.returncode == 1, proc.stderr  # the patched image's pins fail on public 0.31.0
    got = _normalised(proc.stdout)
    path = GOLDEN / f"pp1-0.31.0-{kind}.json"
    if os.environ.get("PP1AUDIT_REGOLD"):
        path.write_text(json.dumps(got, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    assert got == json.loads(path.read_text(encoding="utf-8"))


def test_the_wheel_and_the_tree_are_judged_alike() -> None:
    wheel, tree = (json.loads((GOLDEN / f"pp1-0.31.0-{k}.json").read_text(encoding="utf-8"))
                   for k in ("wheel", "tree"))
    assert wheel["target"].pop("kind") == "wheel" and tree["target"].pop("kind") == "directory"
    assert wheel == tree


def test_pp1_record_on_a_pip_installed_0_31_0_is_the_golden_result(vllm_venv: Path) -> None:
    """``--record`` on a real pip-installed 0.31.0 (RECORD, bytecode, ``.pth`` files,
    entry points): the venv's and this Python's paths are the machine's, not the result's."""
    proc = run_cli("check", str(site(vllm_venv)), "--record", "--format", "json")
    assert proc.returncode == 1, proc.stderr
    text = proc.stdout.replace(str(vllm_venv), "<venv>").replace(sys.base_prefix, "<python>")
    # How many bytecode files the verification cache already knew depends on earlier runs.
    text = re.sub(r"\([0-9,]+ from the verification cache\)", "(N from the verification cache)", text)
    # The megabytes hashed round what pip wrote this time (INSTALLER, RECORD, direct_url).
    text = re.sub(r"\([0-9,]+ MB hashed;", "(N MB hashed;", text)
    got = _normalised(text)
    path = GOLDEN / "pp1-0.31.0-record-venv.json"
    if os.environ.get("PP1AUDIT_REGOLD"):
        path.write_text(json.dumps(got, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    assert got == json.loads(path.read_text(encoding="utf-8"))
