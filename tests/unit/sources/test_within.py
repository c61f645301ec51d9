"""One containment test (``safeio.is_within``) for every caller: where a caller
had its own copy (``root + os.sep``), the root ``/`` held nothing (``//``)."""

from __future__ import annotations

from pathlib import Path

from pp1audit.sources import DirectorySource
from pp1audit.sources.inventory import DirInventory


def test_everything_is_inside_the_root_slash() -> None:
    assert DirInventory("/").inside("etc")
    assert DirectorySource(Path("/"))._real("etc") == "/etc"


def test_a_sibling_with_the_root_as_prefix_is_outside(tmp_path: Path) -> None:
    (tmp_path / "root").mkdir()
    assert not DirInventory(str(tmp_path / "root")).inside("../rootx/a")
