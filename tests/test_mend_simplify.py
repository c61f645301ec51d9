"""Simplifications that keep behaviour: the derived views live on the file they derive from."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from conftest import run_cli

from pp1audit.manifest import load_manifest
from pp1audit.store import FileData


def test_file_index_is_built_once_per_file() -> None:
    """The relocation index is the file's own cached view (no module-level cache in a check)."""
    fd = FileData("a.py", b"x = 1\ny = 2\n")
    assert fd.index is fd.index
    assert fd.index.lines == fd.lines
    assert FileData("a.py", b"x = 1\ny = 2\n").index is not fd.index


def test_requoted_context_at_the_file_edge_quotes_no_trailing_blank_lines(
    make_files: Callable[..., Path], tmp_path: Path
) -> None:
    """``pin`` re-quotes context as ``init`` quotes it (``anchortext.context_lines``):
    blank lines past the last line of code at the file's edge say nothing."""
    root = make_files({"pkg/__init__.py": "", "pkg/a.py": "fire()\nb = 2\nc = 3\n"})
    m = tmp_path / "m.yaml"
    proc = run_cli("init", str(root), "-p", "pkg", "--cite", "fire=pkg/a.py:1", "-o", str(m))
    assert proc.returncode == 0, proc.stderr
    (root / "pkg" / "a.py").write_text("fire()\nb = 3\n\n\n")
    proc = run_cli("pin", str(root), "-m", str(m), "--in-place", "--accept", "fire")
    assert proc.returncode == 0, proc.stderr
    anchor = load_manifest(m).citations["fire"].anchor
    assert anchor is not None and anchor.suffix == ["b = 3"]
    assert run_cli("check", str(root), "-m", str(m)).returncode == 0
