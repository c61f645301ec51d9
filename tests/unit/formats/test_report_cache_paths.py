"""A report (and a JSON result) never holds the path of the remote-pin cache.

Each user and machine has its own cache directory (``~/.cache/pp1audit``, a CI
runner's, ``--cache-dir``): a bad cached pin named by that path made the report
of a closed gate other bytes for each, so ``report --check`` called a committed
audit stale. The entry is named ``<cache>/sha256/<hex>``, as
``test_report_clone_paths`` names a clone by its source.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import run_cli
from lanerepo import dedent

PINNED = b"# a pinned file\nx = 1\n"
SHA = hashlib.sha256(PINNED).hexdigest()
BAD = {
    "other bytes": lambda entry: entry.write_bytes(b"# tampered\n"),
    "a FIFO": os.mkfifo,
    "a link": lambda entry: entry.symlink_to("/dev/zero"),
    "too large": lambda entry: entry.write_bytes(PINNED),  # over --max-bytes 8
}


def _setup(tmp_path: Path, make_files: Callable[..., Path]) -> tuple[Path, Path]:
    tree = make_files({"pkg/__init__.py": ""})
    manifest = tmp_path / "audit.yaml"
    manifest.write_text(dedent(f"""
        pp1audit: 1
        target: {{package: pkg}}
        remotes:
          r1: {{url: "https://example.invalid/other.py", sha256: "{SHA}"}}
        citations:
          c1: {{source: r1, at: "other.py:1", anchor: {{exact: "# a pinned file"}}}}
    """), encoding="utf-8")
    return tree, manifest


@pytest.mark.parametrize("bad", list(BAD))
def test_two_caches_at_two_paths_give_one_report_and_one_json(
        bad: str, tmp_path: Path, make_files: Callable[..., Path]) -> None:
    tree, manifest = _setup(tmp_path, make_files)
    seen = []
    for where in (tmp_path / "one" / "deep" / "cache", tmp_path / "two"):
        (where / "sha256").mkdir(parents=True)
        BAD[bad](where / "sha256" / SHA)
        args = ("-m", str(manifest), "--cache-dir", str(where), "--max-bytes", "8" if bad == "too large"
                else "1000")
        report = run_cli("report", str(tree), *args, timeout=30)
        assert report.returncode == 1, report.stderr
        result = run_cli("check", str(tree), *args, "--format", "json", timeout=30)
        assert result.returncode == 1, result.stderr
        messages = [c["message"] for c in json.loads(result.stdout)["checks"]]
        assert all(m.startswith(f"<cache>/sha256/{SHA}: ") for m in messages), messages
        assert str(where) not in report.stdout and str(tmp_path) not in report.stdout
        seen.append((report.stdout, messages))
    assert seen[0] == seen[1]


def test_report_check_with_another_cache_is_current(
        tmp_path: Path, make_files: Callable[..., Path]) -> None:
    tree, manifest = _setup(tmp_path, make_files)
    for where in (tmp_path / "a", tmp_path / "b"):
        (where / "sha256").mkdir(parents=True)
        (where / "sha256" / SHA).write_bytes(b"# tampered\n")
    committed = tmp_path / "audit.md"
    made = run_cli("report", str(tree), "-m", str(manifest), "--cache-dir", str(tmp_path / "a"),
                   "-o", str(committed))
    assert made.returncode == 1, made.stderr
    proc = run_cli("report", str(tree), "-m", str(manifest), "--cache-dir", str(tmp_path / "b"),
                   "--check", str(committed))
    assert proc.returncode == 0, proc.stdout + proc.stderr
