"""The one hostile-file reader behind the tree, the user's inputs and the cache."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from pp1audit.sources.safeio import NotRegular, TooLarge, read_regular


def test_reads_a_regular_file_whole(tmp_path: Path) -> None:
    f = tmp_path / "f"
    f.write_bytes(b"x" * (3 << 20))  # several read blocks
    assert read_regular(f, 4 << 20) == b"x" * (3 << 20)


def test_a_fifo_is_refused_on_the_open_descriptor_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "p"
    os.mkfifo(fifo)
    with pytest.raises(NotRegular) as info:
        read_regular(fifo, 100)  # no writer: a blocking open would hang here
    assert info.value.mode & 0o170000 == 0o010000


def test_a_final_symlink_is_not_followed_unless_asked(tmp_path: Path) -> None:
    (tmp_path / "real").write_bytes(b"data")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(OSError) as info:
        read_regular(tmp_path / "link", 100)
    assert info.value.errno == errno.ELOOP
    assert read_regular(tmp_path / "link", 100, follow=True) == b"data"


def test_the_cap_holds_for_a_sparse_giant_and_a_device(tmp_path: Path) -> None:
    sparse = tmp_path / "s"
    with open(sparse, "wb") as f:
        f.truncate(8 << 30)
    with pytest.raises(TooLarge) as info:
        read_regular(sparse, 1 << 20)
    assert info.value.size == 8 << 30
    with pytest.raises(NotRegular):
        read_regular("/dev/zero", 1 << 20, follow=True)
