"""matcher: where a file that is not valid Python is wrong (a NUL byte has no place in CPython's error)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from conftest import run_cli


def test_a_nul_byte_is_placed_at_its_line_not_at_line_none(
        make_files: Callable[..., Path], tmp_path: Path) -> None:
    tree = make_files({"pkg/__init__.py": "", "pkg/nul.py": 'def f():\r\n    return 1\nx = "a\0b"\n'})
    manifest = tmp_path / "m.yaml"
    manifest.write_text("pp1audit: 1\ntarget: {package: pkg}\n"
                        "invariants:\n  inv: {file: pkg/nul.py, in: f, pattern: return 1}\n",
                        encoding="utf-8")
    proc = run_cli("check", str(tree), "-m", str(manifest), "-v")
    assert proc.returncode == 1, proc.stderr
    assert ("pkg/nul.py is not valid Python (source code string cannot contain null bytes "
            "at line 3, column 7); invariants cannot be judged on it") in proc.stdout
    assert "None" not in proc.stdout
