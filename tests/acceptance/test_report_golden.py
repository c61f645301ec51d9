"""Golden Markdown: ``pp1audit report`` with the shipped PP1 manifest on the real vLLM
0.31.0 wheel must write exactly the saved audit, and stay short enough to read.

The report is deterministic (no clock, no path as typed, manifest order), so it is
compared whole; only the manifest's SHA-256 is replaced, after it is checked against
the file, so that a comment added to the manifest does not rewrite the golden file.
The run has no ``pp1audit.toml`` and an empty remote cache: no git source and no
donor, as on a fresh machine. After an intended change,
``PP1AUDIT_REGOLD=1 python -m pytest tests/acceptance/test_report_golden.py``
rewrites ``tests/data/golden/pp1-0.31.0-report.md``; review its diff like code.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from conftest import REPO, run_cli

pytestmark = pytest.mark.vllm

GOLDEN = REPO / "tests" / "data" / "golden" / "pp1-0.31.0-report.md"
MANIFEST = REPO / "manifests" / "pp1.yaml"
SEED = REPO.parent / "shared" / "seeds" / "000_b8cc05a1b3d28d45.txt"


@pytest.fixture(scope="module")
def report(vllm_wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The main job's report (``report WHEEL -m manifests/pp1.yaml``), run where no
    config file or cached donor can change it."""
    here = tmp_path_factory.mktemp("report")
    proc = run_cli("report", str(vllm_wheel), "-m", str(MANIFEST), cwd=here,
                   env={"PP1AUDIT_CACHE_DIR": str(here / "cache"), "PP1AUDIT_NO_CACHE": "1"})
    assert proc.returncode == 1, proc.stderr  # the patched image's pins fail on public 0.31.0
    return proc.stdout


def test_pp1_report_on_real_0_31_0_is_the_golden_audit(report: str) -> None:
    sha = hashlib.sha256(MANIFEST.read_bytes()).hexdigest()
    assert f"| Manifest | `pp1.yaml`, SHA-256 `{sha}` |" in report.splitlines()
    got = report.replace(sha, "<sha256 of manifests/pp1.yaml>")
    if os.environ.get("PP1AUDIT_REGOLD"):
        GOLDEN.write_text(got, encoding="utf-8")
    assert got == GOLDEN.read_text(encoding="utf-8")


def test_pp1_report_stays_under_twice_the_seed_audit(report: str, vllm_wheel: Path) -> None:
    """Issue 33: without ``--excerpts`` the measured audit is under twice the length of
    the audit it regenerates, and opens with its summary table."""
    size = len(report.encode("utf-8"))
    assert size < 2 * SEED.stat().st_size, size
    with vllm_wheel.open("rb") as fh:
        wheel = hashlib.file_digest(fh, "sha256").hexdigest()
    assert report.splitlines()[2:5] == [
        "| | |", "|---|---|",
        f"| Target | wheel `{vllm_wheel.name}` — vllm `0.31.0` |"]
    assert f"| Target SHA-256 | `{wheel}` |" in report.splitlines()
    assert report.count("--repo lane=PATH") == 2  # the not-checked group's row and its command
