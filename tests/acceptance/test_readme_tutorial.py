"""The README's tutorial, step by step, on the real vLLM 0.31.0 and 0.32.0 wheels.

The commands and the claim's YAML are read from README.md itself, so the tutorial
cannot drift from what the tool does.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import REPO, fetch_wheel, run_cli

pytestmark = pytest.mark.vllm

README = (REPO / "README.md").read_text(encoding="utf-8")


def _tutorial_claim() -> str:
    """The ```yaml block of the tutorial, de-indented as it is to be appended."""
    blocks = [b for b in re.findall(r"```yaml\n(.*?)```", README, re.S) if "invariants:" in b]
    assert len(blocks) == 1, "the README tutorial lost its claim"
    lines = blocks[0].splitlines()
    indent = min(len(x) - len(x.lstrip()) for x in lines if x.strip())
    return "\n".join(x[indent:] for x in lines) + "\n"


def _cite() -> str:
    found = re.search(r"--cite (\S+)", README)
    assert found is not None
    return found.group(1)


def test_the_readme_tutorial_holds_on_real_releases(tmp_path: Path) -> None:
    old, new = fetch_wheel("0.31.0"), fetch_wheel("0.32.0")
    manifest = tmp_path / "my.yaml"

    # 1. init: a manifest measured from the tree, with the README's citation.
    proc = run_cli("init", str(old), "-p", "vllm", "-o", str(manifest), "--cite", _cite())
    assert proc.returncode == 0, proc.stderr

    # 2. the README's claim appended.
    manifest.write_text(manifest.read_text(encoding="utf-8") + _tutorial_claim(), encoding="utf-8")

    # 3. check: the gate opens, and the claim is judged (not skipped).
    proc = run_cli("check", str(old), "-m", str(manifest), "--format", "json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    checks = {c["id"]: c for c in json.loads(proc.stdout)["checks"]}
    assert checks["draft-sample-method-defaults-greedy"]["status"] == "pass"
    assert checks["draft-default"]["status"] == "pass"

    # 4. pin to 0.32.0 in place, then check there: the gate opens again.
    proc = run_cli("pin", str(new), "-m", str(manifest), "--in-place")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0.32.0" in manifest.read_text(encoding="utf-8")
    proc = run_cli("check", str(new), "-m", str(manifest), "--format", "json")
    assert proc.returncode == 0, proc.stdout + proc.stderr

