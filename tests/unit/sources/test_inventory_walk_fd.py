"""The walk holds each directory by one descriptor, opened in its parent's.

Below the top, no directory is opened by its path: each is opened by name in
its parent's descriptor (``O_NOFOLLOW``), must be the directory the parent
listed, and is listed through that descriptor. So a directory swapped for a
symlink or for another directory mid-run is never listed, and none of it needs
``/proc`` (the tests run with ``safeio.fd_path`` saying nothing, as on a system
without ``/proc``, where that is what they show). ``entry`` steps down a path likewise. The descriptors
held are one per level, never one per directory, and all are closed.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import CACHE

from pp1audit.errors import TargetError
from pp1audit.sources import inventory, safeio
from pp1audit.sources.hashing import hash_entries
from pp1audit.sources.inventory import FILE, MAX_DEPTH, REPLACED, UNREADABLE, DirInventory, Entry

SECRET = b"secret\n"
"""What every file outside the root holds."""

FILES = {
    "pkg/__init__.py": b"x = 1\n",
    "pkg/c/z.txt": b"inside 4\n",
    "pkg/d/f1.txt": b"inside 1\n",
    "pkg/d/f2.txt": b"inside 2\n",
    "pkg/d/e/f3.txt": b"inside 3\n",
}


def _write(base: Path, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        p = base / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)


@pytest.fixture
def site(tmp_path: Path) -> Path:
    """A root holding ``pkg`` and, outside it, a decoy tree with the same names (and ``x.txt``)."""
    _write(tmp_path / "site", FILES)
    _write(tmp_path / "outside", {"d/f1.txt": SECRET, "d/f2.txt": SECRET, "d/e/f3.txt": SECRET,
                                  "d/x.txt": SECRET, "d/e/x.txt": SECRET, "c/x.txt": SECRET})
    return tmp_path / "site"


@pytest.fixture
def no_proc(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The system cannot say where a descriptor leads (no ``/proc``); the list holds
    each descriptor it was asked about."""
    asked: list[int] = []

    def fd_path(fd: int) -> str | None:
        asked.append(fd)
        return None

    monkeypatch.setattr(safeio, "fd_path", fd_path)
    yield asked


def swap(site: Path, rel: str, to: str = "d") -> None:
    """``mv site/<rel> …; ln -s outside/<to> site/<rel>``."""
    os.rename(site / rel, site.parent / f"moved-away-{rel.replace('/', '-')}")
    (site / rel).symlink_to(site.parent / "outside" / to, target_is_directory=True)


def walked(site: Path, found: Any = None) -> dict[str, Entry]:
    return {e.path: e for e in DirInventory(str(site)).walk("pkg", found)}


def nothing_outside(site: Path, entries: dict[str, Entry]) -> None:
    """No entry is a file outside the root: not ``x.txt`` (only outside holds it), no
    identity of an outside file."""
    assert not any(p.endswith("x.txt") for p in entries)
    outside = {(st.st_dev, st.st_ino) for st in (p.lstat() for p in (site.parent / "outside").rglob("*"))}
    assert not {e.ident for e in entries.values()} & outside


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


# --- a directory swapped mid-walk ----------------------------------------------------

def test_a_sibling_swapped_for_a_symlink_before_its_turn_is_one_unreadable_entry(
        site: Path, no_proc: list[int]) -> None:
    """Whichever of ``pkg/c`` and ``pkg/d`` is listed first swaps the other for a
    symlink to outside: ``O_NOFOLLOW`` in the parent's descriptor refuses it."""
    swapped: list[str] = []

    def found(e: Entry) -> None:
        if not swapped and e.path.count("/") == 2:
            other = {"pkg/c": "pkg/d", "pkg/d": "pkg/c"}[e.path.rsplit("/", 1)[0]]
            swapped.append(other)
            swap(site, other, other.rsplit("/", 1)[1])

    entries = walked(site, found)
    gone = entries[swapped[0] + "/"]
    assert (gone.kind, gone.error) == (UNREADABLE, REPLACED)
    assert not any(p.startswith(swapped[0] + "/") and p != swapped[0] + "/" for p in entries)
    nothing_outside(site, entries)
    assert len(no_proc) <= 1  # the top's check only: the walk below it never asks


def test_a_sibling_renamed_over_by_another_directory_is_not_listed(site: Path) -> None:
    """Another directory renamed to the listed name (inside the root even): its
    identity is not the one listed, so it is not listed, ``/proc`` or not (the old
    walk asked ``/proc`` and, the descriptor being inside, listed it as the
    directory its parent had found)."""
    (site / "other").mkdir()
    (site / "other" / "planted.py").write_bytes(b"planted\n")
    swapped: list[str] = []

    def found(e: Entry) -> None:
        if not swapped and e.path.count("/") == 2:
            other = {"pkg/c": "pkg/d", "pkg/d": "pkg/c"}[e.path.rsplit("/", 1)[0]]
            swapped.append(other)
            os.rename(site / other, site.parent / "moved-away")
            os.rename(site / "other", site / other)

    entries = walked(site, found)
    gone = entries[swapped[0] + "/"]
    assert gone.kind == UNREADABLE
    assert gone.error == "replaced since it was listed, and where it leads cannot be told; not listed"
    assert not any(p.endswith("planted.py") for p in entries)


def test_a_directory_whose_parent_was_swapped_is_not_listed(site: Path, no_proc: list[int]) -> None:
    """``pkg/d`` swapped while it is listed: its own descriptor still reads the
    directory moved away, but ``pkg/d/e`` is no longer at that path, so it is not
    listed; where the path leads is named without ``/proc``."""

    def found(e: Entry) -> None:
        if e.path.startswith("pkg/d/") and not (site / "pkg/d").is_symlink():
            swap(site, "pkg/d")

    entries = walked(site, found)
    assert (site / "pkg/d").is_symlink()
    gone = entries["pkg/d/e/"]
    assert gone.kind == UNREADABLE
    assert gone.error == (f"resolves outside the target root ({site.parent / 'outside/d/e'}): "
                          "symlink escape, not read")
    assert "pkg/d/e/f3.txt" not in entries
    nothing_outside(site, entries)


def test_a_directory_swapped_between_its_open_and_its_listing_gives_no_outside_entry(
        site: Path, monkeypatch: pytest.MonkeyPatch, no_proc: list[int]) -> None:
    """The listing reads the descriptor that was opened and checked, not a path:
    swapped right before ``scandir``, the names are still the inside ones, and
    the files listed there are not read through the symlink by the hashing."""
    scandir = os.scandir
    d = (site / "pkg/d").stat()

    def swap_then_scandir(fd: Any) -> Any:
        if isinstance(fd, int) and not (site / "pkg/d").is_symlink():
            st = os.fstat(fd)
            if (st.st_dev, st.st_ino) == (d.st_dev, d.st_ino):
                swap(site, "pkg/d")
        return scandir(fd)

    monkeypatch.setattr(os, "scandir", swap_then_scandir)
    entries = walked(site)
    assert (site / "pkg/d").is_symlink()
    assert {p for p in entries if p.startswith("pkg/d/")} == {"pkg/d/f1.txt", "pkg/d/f2.txt", "pkg/d/e/"}
    assert entries["pkg/d/e/"].kind == UNREADABLE
    nothing_outside(site, entries)
    digests = hash_entries([e for e in entries.values() if e.kind == FILE], workers=2)
    assert not any(d.sha256 == hashlib.sha256(SECRET).digest() for d in digests.values())
    assert digests["pkg/d/f1.txt"].sha256 is None and digests["pkg/d/f2.txt"].sha256 is None
    assert digests["pkg/c/z.txt"].sha256 == hashlib.sha256(b"inside 4\n").digest()


# --- the package directory itself swapped mid-walk ---------------------------------

def move_top_out(site: Path) -> Path:
    """``mv site/pkg …/moved-pkg; ln -s …/moved-pkg site/pkg``: the same directory (its
    files, their identities), now outside the root and reached through a link."""
    moved = site.parent / "moved-pkg"
    os.rename(site / "pkg", moved)
    (site / "pkg").symlink_to(moved, target_is_directory=True)
    return moved


def test_the_package_directory_moved_out_while_it_is_listed_is_a_target_error(
        site: Path, no_proc: list[int]) -> None:
    """Swapped once its own files are listed, before any subdirectory is opened: the
    old walk opened ``pkg/c`` and ``pkg/d`` in the old descriptor (they were the
    directories it listed) and checked only the levels below ``pkg``, so every
    file of the moved tree was listed, and then hashed through the link."""
    before = open_descriptors()
    moved: list[Path] = []

    def found(e: Entry) -> None:
        if not moved and e.path == "pkg/__init__.py":
            moved.append(move_top_out(site))

    with pytest.raises(TargetError) as caught:
        walked(site, found)
    assert moved, "the swap was never made"
    assert str(caught.value) == (f"pkg/ resolves outside the target root ({moved[0]}): "
                                 "symlink escape, not read")
    assert "\n" not in str(caught.value)
    assert open_descriptors() == before


def test_the_package_directory_moved_out_after_its_last_listing_is_a_target_error(
        tmp_path: Path, no_proc: list[int]) -> None:
    """No subdirectory to open after the swap: the walk's last check, once the
    listing ends, still finds the top out of place."""
    _write(tmp_path / "site", {"pkg/__init__.py": b"x = 1\n", "pkg/a.py": b"a = 1\n"})
    site = tmp_path / "site"
    moved: list[Path] = []

    def found(e: Entry) -> None:
        if not moved:
            moved.append(move_top_out(site))

    with pytest.raises(TargetError, match=r"^pkg/ resolves outside the target root"):
        walked(site, found)


def test_a_directory_above_the_package_swapped_mid_walk_is_a_target_error(
        tmp_path: Path, no_proc: list[int]) -> None:
    """The check runs from the root down: a directory between the root and the top
    (``lib/pkg`` walked in root ``site``) swapped for a link to where it was moved."""
    _write(tmp_path / "site", {"lib/pkg/__init__.py": b"x = 1\n", "lib/pkg/sub/a.py": b"a = 1\n"})
    site = tmp_path / "site"
    moved = tmp_path / "moved-lib"

    def found(e: Entry) -> None:
        if e.path == "lib/pkg/__init__.py" and not moved.exists():
            os.rename(site / "lib", moved)
            (site / "lib").symlink_to(moved, target_is_directory=True)

    with pytest.raises(TargetError, match=r"^lib/pkg/ resolves outside the target root"):
        DirInventory(str(site)).walk("lib/pkg", found)
    assert moved.exists()


def test_a_package_directory_linked_inside_the_root_is_still_walked(site: Path) -> None:
    """The top is followed as Python follows it: a link to a directory inside the
    root is the directory it leads to, checked in place along its real path."""
    os.rename(site / "pkg", site / "real")
    (site / "pkg").symlink_to("real", target_is_directory=True)
    assert sorted(walked(site)) == sorted(FILES)


# --- entry() ---------------------------------------------------------------------

def test_an_entry_through_a_swapped_directory_is_unreadable_without_proc(
        site: Path, no_proc: list[int]) -> None:
    """The old lookup opened the parent by its path and, with nothing to compare
    and no ``/proc``, kept the answer: the outside file's entry."""
    inv = DirInventory(str(site))
    assert inv.entry("pkg/d/e/f3.txt").kind == FILE  # type: ignore[union-attr]
    swap(site, "pkg/d")
    for path in ("pkg/d/f1.txt", "pkg/d/e/f3.txt", "pkg/d/x.txt"):
        e = inv.entry(path)
        assert e is not None and e.kind == UNREADABLE, path
        where = site.parent / "outside" / path.removeprefix("pkg/")
        assert e.error == f"resolves outside the target root ({where}): symlink escape, not read"
    assert inv.entry("pkg/__init__.py").kind == FILE  # type: ignore[union-attr]
    assert inv.entry("pkg/nope/x") is None and inv.entry("pkg/__init__.py/x") is None
    assert no_proc == []


def test_an_entry_through_a_symlink_inside_the_root_is_followed_as_python_would(
        site: Path, no_proc: list[int]) -> None:
    """Python imports through such a link, so its file is the one to verify; the
    link is resolved by the lookup itself (no ``/proc``), relative or absolute."""
    (site / "alias").symlink_to(site / "pkg", target_is_directory=True)
    (site / "pkg" / "up").symlink_to("../pkg/d", target_is_directory=True)
    (site / "pkg" / "d" / "hop").symlink_to("../../alias/d/e", target_is_directory=True)
    want = (site / "pkg/d/e/f3.txt").stat()
    inv = DirInventory(str(site))
    for path in ("alias/d/e/f3.txt", "pkg/up/e/f3.txt", "pkg/d/hop/f3.txt", "alias/up/hop/f3.txt"):
        e = inv.entry(path)
        assert e is not None and e.kind == FILE, path
        assert e.ident == (want.st_dev, want.st_ino) and e.size == want.st_size, path
    assert inv.entry("alias/d/nope.txt") is None
    assert no_proc == []


def test_an_entry_through_a_symlink_leading_out_or_looping_is_unreadable(site: Path) -> None:
    outside = site.parent / "elsewhere"
    (outside / "d").mkdir(parents=True)
    (outside / "d" / "f.txt").write_bytes(b"outside\n")
    (site / "out").symlink_to(outside, target_is_directory=True)
    (site / "rel").symlink_to("../elsewhere", target_is_directory=True)
    (site / "loop").symlink_to("loop2", target_is_directory=True)
    (site / "loop2").symlink_to("loop", target_is_directory=True)
    inv = DirInventory(str(site))
    for path in ("out/d/f.txt", "rel/d/f.txt"):
        e = inv.entry(path)
        assert e is not None and e.kind == UNREADABLE, path
        assert e.error == (f"resolves outside the target root ({outside}/d/f.txt): "
                           "symlink escape, not read"), path
    e = inv.entry("loop/f.txt")
    assert e is not None and e.kind == UNREADABLE
    assert e.error == ("reached through a symbolic link (loop/) that loops, or led outside the "
                       "target root while it was resolved: not followed")


# --- bounded descriptors -----------------------------------------------------------

def test_a_tree_deeper_than_the_cap_is_listed_to_the_cap_and_the_rest_is_unreadable(
        tmp_path: Path) -> None:
    deep = tmp_path / "site" / "pkg"
    parts = ["d"] * (MAX_DEPTH + 3)
    (deep.joinpath(*parts)).mkdir(parents=True)
    for n in (MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 2):
        deep.joinpath(*parts[:n], "f.txt").write_bytes(b"x\n")
    before = open_descriptors()
    entries = walked(tmp_path / "site")
    assert open_descriptors() == before
    files = sorted(p.count("/") - 1 for p, e in entries.items() if e.kind == FILE)
    assert files == [MAX_DEPTH - 1, MAX_DEPTH]  # the one below the cap is not seen
    (capped,) = [e for e in entries.values() if e.kind == UNREADABLE]
    assert capped.path == "pkg/" + "d/" * (MAX_DEPTH + 1)
    assert capped.error == f"nested deeper than {MAX_DEPTH} directories"


def test_the_descriptors_held_are_one_per_level_and_all_are_closed(tmp_path: Path) -> None:
    """1,500 directories, three levels: never more than a handful open, and the
    walk runs under a descriptor limit far below the directory count."""
    import resource

    files = {f"pkg/w{i}/v/f.txt": b"x\n" for i in range(1500)}
    _write(tmp_path / "site", files)
    before = open_descriptors()
    most = [0]

    def found(e: Entry) -> None:
        most[0] = max(most[0], open_descriptors() - before)

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (before + 64, hard))
    try:
        entries = walked(tmp_path / "site", found)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert sorted(entries) == sorted(files)
    assert most[0] <= 3 + 2  # top, w<i>, v, and listing them (one more each time)
    assert open_descriptors() == before


def test_descriptors_are_closed_when_the_callback_fails(site: Path) -> None:
    before = open_descriptors()

    def found(e: Entry) -> None:
        if e.path == "pkg/d/e/f3.txt":
            raise RuntimeError("stop")

    with pytest.raises(RuntimeError):
        walked(site, found)
    assert open_descriptors() == before


# --- the real tree: the same entries as an independent listing ---------------------

def _real_tree() -> Path:
    trees = sorted((CACHE / "trees").glob("vllm-0.31.0-*"))
    if not trees:
        pytest.skip("the extracted vLLM 0.31.0 tree is not cached (the other vLLM tests make it)")
    return Path(os.path.realpath(trees[0]))


def _os_walk_entries(root: Path, top: str) -> dict[str, tuple[Any, ...]]:
    """Every non-directory below ``top`` as ``os.walk`` and ``lstat`` see it: path, kind,
    size, mtime, identity, link target."""
    out: dict[str, tuple[Any, ...]] = {}
    for dirpath, dirnames, filenames in os.walk(root / top):
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            st = os.lstat(full)
            if stat.S_ISDIR(st.st_mode):
                continue
            rel = os.path.relpath(full, root)
            link = os.readlink(full) if stat.S_ISLNK(st.st_mode) else None
            out[rel] = (inventory.kind_of_mode(st.st_mode), st.st_size, int(st.st_mtime),
                        (st.st_dev, st.st_ino), full, link)
    return out


def test_the_real_tree_walk_gives_every_entry_os_walk_finds(no_proc: list[int]) -> None:
    root = _real_tree()
    before = open_descriptors()
    got = DirInventory(str(root)).walk("vllm")
    assert open_descriptors() == before
    assert [e.path for e in got] == sorted(e.path for e in got)
    expected = _os_walk_entries(root, "vllm")
    assert len(expected) > 5000
    assert {e.path: (e.kind, e.size, e.mtime, e.ident, e.ref, e.link) for e in got} == expected
    assert all(e.root == str(root) for e in got)
    assert len(no_proc) <= 1
