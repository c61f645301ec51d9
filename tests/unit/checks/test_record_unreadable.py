"""A directory of the package that cannot be listed (or an entry that cannot be
examined): an ``error`` naming it, never "missing" files, and no tree digest.

Root reads every directory whatever its mode, so the real run drops the
capabilities that let it (``setpriv``, util-linux) when the tests run as root.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli
from recordtrees import bad, install, run

MANIFEST = "pp1audit: 1\ntarget:\n  package: vllm\n"


@pytest.fixture
def locked(tree_copy: Path) -> Iterator[Path]:
    """The real vLLM tree with ``vllm/lora`` (44 files RECORD lists) made unreadable."""
    lora = tree_copy / "vllm" / "lora"
    lora.chmod(0)
    try:
        yield tree_copy
    finally:
        lora.chmod(0o755)


def test_an_unreadable_directory_is_one_error_and_its_files_are_not_called_missing(
        locked: Path, tmp_path: Path) -> None:
    manifest = tmp_path / "m.yaml"
    manifest.write_text(MANIFEST, encoding="utf-8")
    proc = run_cli("check", str(locked), "-m", str(manifest), "--record", "--format", "json",
                   timeout=300, as_user=True)
    assert proc.returncode == 1, proc.stderr
    checks = {c["id"]: c for c in json.loads(proc.stdout)["checks"]}
    bad_ones = {cid: c for cid, c in checks.items() if c["status"] != "pass"}
    directory = bad_ones.pop("record:vllm/lora/")
    assert directory["status"] == "error"
    assert directory["message"].startswith("Cannot list this directory: Permission denied: a file added")
    below = {cid: c for cid, c in bad_ones.items() if cid.startswith("record:vllm/lora/")}
    assert len(below) >= 40  # each file RECORD lists there: unknown, not missing
    assert {c["status"] for c in below.values()} == {"error"}
    assert all(c["message"] == "Cannot be verified: vllm/lora/: cannot list this directory: Permission denied"
               for c in below.values())
    tree = bad_ones.pop("tree")
    assert tree["status"] == "error" and "vllm/lora/" in tree["message"]
    assert set(bad_ones) == set(below)  # nothing else flagged
    assert not any("missing" in c["message"] for c in checks.values())


@pytest.fixture
def execute_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An installed ``pkg`` whose ``pkg/sub`` is execute-only (``--x``): a real mode
    when the tests run as a user; as root, who reads it anyway, the walk's open
    for reading of ``sub`` in its parent is refused as the kernel refuses a user
    (``O_PATH``, which ``entry`` and ``lstat`` use, needs no read permission)."""
    root = install(tmp_path / "site", {"pkg/__init__.py": "x = 1\n", "pkg/sub/a.py": "a = 1\n"})
    sub = root / "pkg" / "sub"
    if os.geteuid() != 0:
        sub.chmod(0o111)
        try:
            yield root
        finally:
            sub.chmod(0o755)
        return
    real = os.open

    def refusing(path: Any, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        name = os.fspath(path)
        named = name == "sub" if dir_fd is not None else name.endswith(os.sep + os.path.join("pkg", "sub"))
        if named and flags & os.O_DIRECTORY and not flags & getattr(os, "O_PATH", 0):
            raise PermissionError(13, "Permission denied")
        return real(path, flags, mode, dir_fd=dir_fd)

    monkeypatch.setattr(os, "open", refusing)
    yield root


def test_a_directory_the_listing_cannot_read_is_reported_even_if_its_files_can_be_opened(
        execute_only: Path) -> None:
    """Execute-only (``--x``): known names open, but a file added there could not
    be seen; the rows RECORD lists are still verified one by one."""
    checks = run(execute_only)
    assert set(bad(checks)) == {"record:pkg/sub/", "tree"}
    assert checks["record:pkg/sub/"].message.startswith("Cannot list this directory: Permission denied")
    assert checks["tree"].message == "tree digest not computable: unreadable pkg/sub/"
    assert checks["record"].message.startswith("3 of 4 files match")  # a.py verified by name


def test_an_execute_only_directory_with_real_modes(tmp_path: Path) -> None:
    """The same with the kernel deciding (root's override dropped, ``setpriv``), run
    as a user runs it: the directory is one error, ``a.py`` below it verified."""
    root = install(tmp_path / "site", {"pkg/__init__.py": "x = 1\n", "pkg/sub/a.py": "a = 1\n"})
    manifest = tmp_path / "m.yaml"
    manifest.write_text("pp1audit: 1\ntarget:\n  package: pkg\n", encoding="utf-8")
    sub = root / "pkg" / "sub"
    sub.chmod(0o111)
    try:
        proc = run_cli("check", str(root), "-m", str(manifest), "--record", "--format", "json",
                       as_user=True)
    finally:
        sub.chmod(0o755)
    assert proc.returncode == 1, proc.stderr
    checks = {c["id"]: c for c in json.loads(proc.stdout)["checks"]}
    assert {cid for cid, c in checks.items() if c["status"] != "pass"} == {"record:pkg/sub/", "tree"}
    assert checks["record:pkg/sub/"]["message"].startswith("Cannot list this directory: Permission denied")
    assert checks["record"]["message"].startswith("3 of 4 files match")


def test_a_row_is_blocked_only_by_a_directory_it_lies_under() -> None:
    from pp1audit.checks.distrecord import _blocked_by
    from pp1audit.sources.inventory import UNREADABLE, Entry

    blocked = {p: Entry(p, UNREADABLE, 0, error="cannot list this directory: Permission denied")
               for p in ("pkg/a/", "pkg/b/c/")}
    assert _blocked_by("pkg/a/x.py", blocked) is blocked["pkg/a/"]
    assert _blocked_by("pkg/a/deep/er/x.py", blocked) is blocked["pkg/a/"]
    assert _blocked_by("pkg/b/c/d/x.py", blocked) is blocked["pkg/b/c/"]
    for free in ("pkg/ab/x.py", "pkg/a", "pkg/b/x.py", "pkg/b/cd/x.py", "x.py", "pkg/a.py"):
        assert _blocked_by(free, blocked) is None, free
