"""``DirInventory.entry`` resolves symbolic links as the kernel does, by itself.

A RECORD row or a startup file reached through a symlinked directory inside the
root is the file Python imports, so the lookup follows such links, but reads
each one and walks on from the directory it is in (never asking the kernel to
resolve a path, never through ``/proc``): the oracle here is the kernel itself,
``os.stat`` of the same path. A first version joined a link's target as text,
so ``x/../real`` with ``x`` a link went to the wrong place (a clean tree then
failed "missing"), and a link spelled through a path outside the root that
leads back in was refused.
"""

from __future__ import annotations

import errno
import os
import random
from pathlib import Path
from typing import Any

import pytest

from pp1audit.checks import shadowing
from pp1audit.errors import TargetError
from pp1audit.sources.inventory import FILE, UNREADABLE, DirInventory


def _file(p: Path, data: bytes = b"x\n") -> None:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data)


def _agrees_with_kernel(root: Path, rel: str) -> None:
    """``entry(rel)`` is the file the kernel reaches; UNREADABLE when the kernel
    reaches one outside the root or the links loop; None when there is none."""
    e = DirInventory(str(root)).entry(rel)
    try:
        os.stat(root / rel)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            assert e is not None and e.kind == UNREADABLE, (rel, e)
        else:
            assert exc.errno in (errno.ENOENT, errno.ENOTDIR), exc
            assert e is None, (rel, e)
        return
    real = os.path.realpath(root / rel)
    if not real.startswith(os.path.realpath(root) + "/"):
        assert e is not None and e.kind == UNREADABLE, (rel, e)
        return
    st = os.lstat(real)
    assert e is not None and e.kind == FILE, (rel, e)
    assert e.ident == (st.st_dev, st.st_ino), rel


def test_a_dotdot_after_a_link_is_taken_from_where_the_link_leads(tmp_path: Path) -> None:
    root = tmp_path / "site"
    _file(root / "data/a/real/f.txt", b"kernel's\n")
    _file(root / "data/real/f.txt", b"text's\n")
    (root / "data/x").symlink_to("a/b")
    (root / "data/a/b").mkdir()
    (root / "data/alias").symlink_to("x/../real")
    _agrees_with_kernel(root, "data/alias/f.txt")
    st = os.stat(root / "data/a/real/f.txt")
    assert DirInventory(str(root)).entry("data/alias/f.txt").ident == (st.st_dev, st.st_ino)  # type: ignore[union-attr]


def test_a_link_spelled_through_a_path_outside_that_leads_back_in_is_followed(tmp_path: Path) -> None:
    real = tmp_path / "real"
    root = real / "site"
    _file(root / "data/a/f.txt")
    (tmp_path / "lnk").symlink_to(real)
    (root / "data/abs").symlink_to(tmp_path / "lnk/site/data/a")
    (root / "data/rel").symlink_to("../../site/data/a")
    for rel in ("data/abs/f.txt", "data/rel/f.txt"):
        e = DirInventory(str(root)).entry(rel)
        assert e is not None and e.kind == FILE, rel
        _agrees_with_kernel(root, rel)


@pytest.mark.parametrize("seed", range(12))
def test_random_link_farms_resolve_as_the_kernel_resolves_them(tmp_path: Path, seed: int) -> None:
    """Links relative and absolute, chained, with ``..``, into and out of the root."""
    rng = random.Random(seed)
    root = tmp_path / "site"
    dirs = ["a", "a/b", "a/b/c", "d", "d/e", "f"]
    for d in dirs:
        _file(root / d / "f.txt", d.encode())
    _file(tmp_path / "out/f.txt", b"outside\n")
    _file(tmp_path / "out/a/f.txt", b"outside\n")
    names = []
    for i in range(8):
        where = rng.choice(["", *dirs])
        name = f"{where}/l{i}".lstrip("/")
        kind = rng.random()
        if kind < 0.5:  # relative, maybe climbing
            ups = "../" * rng.randint(0, where.count("/") + (2 if where else 1))
            target = ups + rng.choice([*dirs, *names, "out", "site/a"])
        elif kind < 0.8:
            target = str(root / rng.choice([*dirs, *names]))
        else:
            target = str(tmp_path / rng.choice(["out", "site/a", "site/d/e"]))
        (root / name).symlink_to(target)
        names.append(name)
    for name in names:
        for rest in ("f.txt", "b/f.txt", "a/f.txt"):  # (a row's own ``..`` is normalised first)
            _agrees_with_kernel(root, f"{name}/{rest}")


def test_no_permission_on_the_way_is_unreadable_not_absent(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "site"
    _file(root / "data/none/f.txt")
    real = os.open

    def refusing(path: Any, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        if path == "none":
            raise PermissionError(errno.EACCES, "Permission denied")
        return real(path, flags, mode, dir_fd=dir_fd)

    monkeypatch.setattr(os, "open", refusing)
    e = DirInventory(str(root)).entry("data/none/f.txt")
    assert e is not None and e.kind == UNREADABLE
    assert e.error == "cannot examine it: Permission denied"
    assert DirInventory(str(root)).entry("data/gone/f.txt") is None
    assert DirInventory(str(root)).entry("data/none/f.txt/x") is not None  # refused on the way too


def test_running_out_of_descriptors_is_said_as_such_not_as_an_unlistable_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "site"
    _file(root / "pkg/sub/f.txt")
    real = os.open

    def exhausted(path: Any, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        if path == "sub":
            raise OSError(errno.EMFILE, "Too many open files")
        return real(path, flags, mode, dir_fd=dir_fd)

    monkeypatch.setattr(os, "open", exhausted)
    with pytest.raises(TargetError, match=r"Too many open files while listing the package: .*ulimit -n"):
        DirInventory(str(root)).walk("pkg")


def test_a_directory_nested_a_thousand_deep_is_searched_without_recursion(tmp_path: Path) -> None:
    """``shadowing._imports_below`` used ``os.walk``, recursive in Python 3.11."""
    top = tmp_path / "deep"
    top.mkdir()
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(1000):  # made in descriptors: pathlib's mkdir(parents=True) recurses too
            os.mkdir("d", dir_fd=fd)
            below = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = below
        assert shadowing._imports_below(str(top), (3, 11)) is False
        os.close(os.open("mod.py", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
    finally:
        os.close(fd)
    try:
        assert shadowing._imports_below(str(top), (3, 11)) is True
    finally:  # removed here, bottom up: pytest's clean-up (shutil.rmtree) recurses too
        levels = [top.joinpath(*["d"] * n) for n in range(1, 1001)]
        (levels[-1] / "mod.py").unlink(missing_ok=True)
        for level in reversed(levels):
            os.rmdir(level)
