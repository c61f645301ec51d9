"""Simplifications that keep behaviour: the derived views live on the file they derive from."""

from __future__ import annotations

from pp1audit.store import FileData


def test_file_index_is_built_once_per_file() -> None:
    """The relocation index is the file's own cached view (no module-level cache in a check)."""
    fd = FileData("a.py", b"x = 1\ny = 2\n")
    assert fd.index is fd.index
    assert fd.index.lines == fd.lines
    assert FileData("a.py", b"x = 1\ny = 2\n").index is not fd.index
