"""The project's own standard, enforced by the test command: ruff and mypy clean.

CI runs only the README's test command, so the lint and type checks live here
rather than in ``.ci/run``; a change that breaks either turns the suite red.
Both run as ``python -m`` so they are the versions the ``[test]`` extra pins,
in the interpreter that runs the tests.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import REPO

ROOT = REPO


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)


def test_ruff_is_clean() -> None:
    proc = _run("ruff", "check", "--no-cache", ".")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_is_clean(tmp_path: Path) -> None:
    # A fresh cache: a stale one from another checkout must not hide an error.
    proc = _run("mypy", "--cache-dir", str(tmp_path / "mypy"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Success" in proc.stdout, proc.stdout
