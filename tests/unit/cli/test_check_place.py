"""``safeio.check_place`` is the one "is this descriptor where it should be" test
(files, the walk's directories, ``DirInventory.entry``), and ``sources.elsewhere``
the one wording of its answer."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pp1audit.sources import elsewhere
from pp1audit.sources.safeio import Elsewhere, check_place


def test_a_descriptor_outside_is_elsewhere_unless_it_is_the_one_listed(tmp_path: Path) -> None:
    (tmp_path / "root").mkdir()
    (tmp_path / "out").mkdir()
    root = str(tmp_path / "root")
    fd = os.open(tmp_path / "out", os.O_RDONLY | os.O_DIRECTORY)
    try:
        st = os.fstat(fd)
        with pytest.raises(Elsewhere) as info:
            check_place(fd, None, root, None)
        assert info.value.where == str(tmp_path / "out")
        check_place(fd, st, root, (st.st_dev, st.st_ino))  # the identity listed settles it
        check_place(fd, None, None, None)  # nowhere to be: no check
    finally:
        os.close(fd)


def test_one_wording_for_an_escape_and_for_a_replaced_entry() -> None:
    assert elsewhere("/x/y") == "resolves outside the target root (/x/y): symlink escape, not read"
    assert elsewhere(None, "not listed") == (
        "replaced since it was listed, and where it leads cannot be told; not listed")
