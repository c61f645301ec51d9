"""``-o`` naming a loop of symlinks: one line, exit 2, and the links stay links.

``realpath`` of a loop gives the link back, so the atomic rename replaced the
link with a regular file holding the result (exit 1, no message), where the
README says a destination that is a symlink is followed and stays a link.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import run_cli

from pp1audit import atomic
from pp1audit.errors import Pp1Error


@pytest.fixture
def loop(tmp_path: Path) -> Path:
    """``out/loop1.json -> loop2.json -> loop1.json``, alone in its directory."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "loop1.json").symlink_to("loop2.json")
    (out / "loop2.json").symlink_to("loop1.json")
    return out


def test_write_atomic_refuses_a_loop_of_links(loop: Path) -> None:
    with pytest.raises(Pp1Error) as caught:
        atomic.write_atomic(loop / "loop1.json", "{}\n")
    assert str(caught.value) == f"{loop / 'loop1.json'}: cannot write: Too many levels of symbolic links"
    assert sorted(os.listdir(loop)) == ["loop1.json", "loop2.json"]
    assert os.readlink(loop / "loop1.json") == "loop2.json"


@pytest.mark.parametrize("command", ["check", "report"])
def test_o_naming_a_loop_of_links_is_one_line_and_exit_2(
        command: str, loop: Path, tmp_path: Path, make_files: Callable[..., Path]) -> None:
    tree = make_files({"pkg/__init__.py": "", "pkg/a.py": "x = 1\n"})
    manifest = tmp_path / "m.yaml"
    digest = hashlib.sha256(b"x = 1\n").hexdigest()
    manifest.write_text(f"pp1audit: 1\ntarget: {{package: pkg}}\nfiles:\n  pkg/a.py: {digest}\n")
    proc = run_cli(command, str(tree), "-m", str(manifest), "-o", "loop1.json", cwd=loop)
    assert proc.returncode == 2
    said = proc.stderr.splitlines()
    assert said[-1] == "pp1audit: error: loop1.json: cannot write: Too many levels of symbolic links"
    assert all(line.startswith(f"pp1audit: {tree}: ") for line in said[:-1])  # report's verdict
    assert proc.stdout == ""
    assert sorted(os.listdir(loop)) == ["loop1.json", "loop2.json"]  # no file, no temporary
    assert os.path.islink(loop / "loop1.json") and os.readlink(loop / "loop1.json") == "loop2.json"
    assert os.path.islink(loop / "loop2.json") and os.readlink(loop / "loop2.json") == "loop1.json"
