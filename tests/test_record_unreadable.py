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

import pytest
from conftest import run_cli
from test_record_units import bad, install, run

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


def test_a_directory_the_listing_cannot_read_is_reported_even_if_its_files_can_be_opened(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Execute-only (``--x``): known names open, but a file added there could not
    be seen; the rows RECORD lists are still verified one by one."""
    root = install(tmp_path / "site", {"pkg/__init__.py": "x = 1\n", "pkg/sub/a.py": "a = 1\n"})
    real = os.scandir

    def scandir(path: str) -> object:
        if str(path).endswith(os.sep + os.path.join("pkg", "sub")):
            raise PermissionError(13, "Permission denied")
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    checks = run(root)
    assert set(bad(checks)) == {"record:pkg/sub/", "tree"}
    assert checks["record:pkg/sub/"].message.startswith("Cannot list this directory: Permission denied")
    assert checks["tree"].message == "tree digest not computable: unreadable pkg/sub/"
    assert checks["record"].message.startswith("3 of 4 files match")  # a.py verified by name


def test_a_row_is_blocked_only_by_a_directory_it_lies_under() -> None:
    from pp1audit.inventory import UNREADABLE, Entry
    from pp1audit.record import _blocked_by

    blocked = {p: Entry(p, UNREADABLE, 0, error="cannot list this directory: Permission denied")
               for p in ("pkg/a/", "pkg/b/c/")}
    assert _blocked_by("pkg/a/x.py", blocked) is blocked["pkg/a/"]
    assert _blocked_by("pkg/a/deep/er/x.py", blocked) is blocked["pkg/a/"]
    assert _blocked_by("pkg/b/c/d/x.py", blocked) is blocked["pkg/b/c/"]
    for free in ("pkg/ab/x.py", "pkg/a", "pkg/b/x.py", "pkg/b/cd/x.py", "x.py", "pkg/a.py"):
        assert _blocked_by(free, blocked) is None, free
