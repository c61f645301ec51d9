"""The hashing's edges: a directory swapped for a symlink mid-run, a file that grows
while it is read, hashing threads the system will not start.

Every race is made deterministic by a hook at the moment it matters (after the
listing, between resolving a path and opening it, after the ``fstat``), and
work is bounded by counting bytes read, never by time.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from recordtrees import bad, install, run

from pp1audit import sources
from pp1audit.errors import Pp1Error, SourceError
from pp1audit.sources import DirectorySource, hashing, safeio
from pp1audit.sources.hashing import SMALL, hash_entries, hash_path
from pp1audit.sources.inventory import FILE, UNREADABLE, DirInventory, Entry

SECRET = b"secret\n"
"""What every file outside the root holds: were it read, its digest would show."""

FILES = {
    "pkg/__init__.py": "x = 1\n",
    "pkg/d/f1.txt": "inside 1\n",
    "pkg/d/f2.txt": "inside 2\n",
    "pkg/d/e/f3.txt": "inside 3\n",
    "pkg/c/z.txt": "inside 4\n",
}


@pytest.fixture
def site(tmp_path: Path) -> Path:
    """An installed ``pkg`` and, outside it, a decoy tree with the same names."""
    root = install(tmp_path / "site", FILES, compile_pyc=False)
    for rel in ("d/f1.txt", "d/f2.txt", "d/e/f3.txt", "d/x.txt"):
        p = tmp_path / "outside" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(SECRET)
    return root


def swap(site: Path, rel: str = "pkg/d") -> None:
    """``mv site/pkg/d …; ln -s outside/d site/pkg/d``, as the user test did."""
    os.rename(site / rel, site.parent / "moved-away")
    (site / rel).symlink_to(site.parent / "outside" / "d", target_is_directory=True)


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Where every ``read``/``readv`` of this process read from (the kernel's path
    of the descriptor): nothing outside the root may appear."""
    seen: list[str] = []
    real_read, real_readv = os.read, os.readv

    def where(fd: int) -> None:
        with contextlib.suppress(OSError):
            seen.append(os.readlink(f"/proc/self/fd/{fd}"))

    def read(fd: int, n: int) -> bytes:
        where(fd)
        return real_read(fd, n)

    def readv(fd: int, buffers: Any) -> int:
        where(fd)
        return real_readv(fd, buffers)

    monkeypatch.setattr(os, "read", read)
    monkeypatch.setattr(os, "readv", readv)
    yield seen


def outside(site: Path, seen: list[str]) -> list[str]:
    return [p for p in seen if p.startswith(str(site.parent / "outside"))]


def test_a_directory_swapped_for_a_symlink_after_the_listing_is_not_hashed_through(
        site: Path, monkeypatch: pytest.MonkeyPatch, reads: list[str]) -> None:
    """The user test's race, pinned: listed inside, swapped before the small files
    are hashed (they wait for the listing's end). Each file below is an ``error``
    naming the escape, never *Modified* with the outside content's digest."""
    listed = DirInventory.walk

    def walk_then_swap(self: DirInventory, top: str, found: Callable[[Entry], None] | None = None,
                       ) -> list[Entry]:
        out = listed(self, top, found)
        swap(site)
        return out

    monkeypatch.setattr(DirInventory, "walk", walk_then_swap)
    checks = run(site)
    below = {k: c for k, c in bad(checks).items() if k.startswith("record:pkg/d/")}
    assert set(below) == {"record:pkg/d/f1.txt", "record:pkg/d/f2.txt", "record:pkg/d/e/f3.txt"}
    for c in below.values():
        assert c.status.value == "error", c
        assert "resolves outside the target root" in c.message and "symlink escape" in c.message, c
        assert "modified" not in c.message.lower()
    assert outside(site, reads) == []


@pytest.mark.parametrize("component", ["last", "earlier"])
def test_a_directory_swapped_before_it_is_listed_is_not_listed_through(
        site: Path, component: str, reads: list[str]) -> None:
    """Swapped after its parent was listed, before its own turn: the directory
    itself (``pkg/c`` or ``pkg/d``, whichever waits: ``O_NOFOLLOW``) or one above
    it (``pkg/d`` swapped while ``pkg/d/e`` waits: its identity) is one
    unreadable entry; no file outside is an entry, and none is read."""
    swapped: list[str] = []

    def found(e: Entry) -> None:
        if swapped or e.path.count("/") != 2:
            return
        listing = e.path.rsplit("/", 1)[0]  # pkg/c or pkg/d: the other one waits
        if component == "last":
            swapped.append({"pkg/c": "pkg/d", "pkg/d": "pkg/c"}[listing])
            swap(site, swapped[0])
        elif listing == "pkg/d":  # pkg/d/e waits
            swapped.append("pkg/d/e")
            swap(site, "pkg/d")

    entries = {e.path: e for e in DirInventory(str(site)).walk("pkg", found)}
    assert swapped
    gone = entries[swapped[0] + "/"]
    assert gone.kind == UNREADABLE
    if component == "last":
        assert gone.error == "replaced since it was listed: no longer a directory (a symlink?); not followed"
    else:
        assert gone.error is not None and gone.error.startswith("resolves outside the target root (")
        assert gone.error.endswith("outside/d/e): symlink escape, not read")
    files = [e for e in entries.values() if e.kind == FILE]
    assert not any(e.path.endswith("x.txt") for e in files)  # only outside/d holds it
    digests = hash_entries(files, workers=2)
    assert not any(d.sha256 == hashlib.sha256(SECRET).digest() for d in digests.values())
    assert outside(site, reads) == []


def test_a_directory_swapped_between_its_opening_and_its_listing_gives_no_outside_entry(
        site: Path, monkeypatch: pytest.MonkeyPatch, reads: list[str]) -> None:
    """The walk lists the descriptor it opened (``os.scandir(fd)``): swapped right
    before, the names are still the inside ones (``x.txt``, only outside, is no
    entry), ``pkg/d/e`` is no longer at its path (not listed), and reading the
    files through the swapped path is refused."""
    scandir = os.scandir
    d = (site / "pkg/d").stat()

    def swap_then_scandir(fd: Any) -> Any:
        if isinstance(fd, int) and not (site / "pkg/d").is_symlink():
            st = os.fstat(fd)
            if (st.st_dev, st.st_ino) == (d.st_dev, d.st_ino):
                swap(site)
        return scandir(fd)

    monkeypatch.setattr(os, "scandir", swap_then_scandir)
    entries = {e.path: e for e in DirInventory(str(site)).walk("pkg")}
    assert (site / "pkg/d").is_symlink()
    assert "pkg/d/x.txt" not in entries
    assert entries["pkg/d/e/"].kind == UNREADABLE
    files = [e for e in entries.values() if e.kind == FILE]
    digests = hash_entries(files, workers=2)
    for path in ("pkg/d/f1.txt", "pkg/d/f2.txt"):
        assert digests[path].sha256 is None and "symlink escape" in (digests[path].error or "")
    assert outside(site, reads) == []


def test_an_entry_looked_up_through_a_swapped_directory_is_not_the_outside_file(
        site: Path, reads: list[str]) -> None:
    """``entry`` (how RECORD and the rows the listing did not find are looked up)
    examines the file in its directory, found inside the root first."""
    inv = DirInventory(str(site))
    assert inv.entry("pkg/d/f1.txt") is not None and inv.entry("pkg/d/f1.txt").kind == FILE  # type: ignore[union-attr]
    swap(site)
    e = inv.entry("pkg/d/f1.txt")
    assert e is not None and e.kind == UNREADABLE
    assert e.error is not None and "symlink escape" in e.error
    assert outside(site, reads) == []


def test_a_file_read_whole_through_a_directory_swapped_after_resolving_is_refused(
        site: Path, monkeypatch: pytest.MonkeyPatch, reads: list[str]) -> None:
    """Pinned files and citations read through ``DirectorySource.read``: the path
    is resolved inside, then a directory on it is swapped before the open."""
    reader = safeio.read_regular

    def swap_then_read(*args: Any, **kw: Any) -> bytes:
        swap(site)
        return reader(*args, **kw)

    monkeypatch.setattr(sources, "read_regular", swap_then_read)
    with DirectorySource(site) as source, pytest.raises(SourceError) as info:
        source.read("pkg/d/f1.txt")
    assert info.value.sentence == "pkg/d/f1.txt resolves outside the target root (symlink escape)"
    assert outside(site, reads) == []


def test_within_refuses_a_descriptor_leading_outside(site: Path) -> None:
    swap(site)
    with pytest.raises(safeio.Elsewhere) as info:
        safeio.read_regular(site / "pkg/d/f1.txt", 100, within=str(site))
    assert info.value.where == str(site.parent / "outside/d/f1.txt")
    assert safeio.read_regular(site / "pkg/d/f1.txt", 100, within=str(site.parent)) == SECRET


def test_a_file_renamed_over_inside_the_root_is_hashed_as_found(site: Path) -> None:
    """Another file at the listed path, still inside the root (an installer's
    rename; a file system whose ``fstat`` and ``lstat`` disagree): hashed, as
    before; only where the descriptor leads decides."""
    entries = DirInventory(str(site)).walk("pkg")
    new = site / "pkg/d/new"
    new.write_bytes(b"renamed over\n")
    os.replace(new, site / "pkg/d/f1.txt")
    got = hash_entries(entries, workers=2)["pkg/d/f1.txt"]
    assert got.sha256 == hashlib.sha256(b"renamed over\n").digest()


def test_without_proc_a_file_not_the_one_listed_is_not_read(
        site: Path, monkeypatch: pytest.MonkeyPatch, reads: list[str]) -> None:
    """Where the system cannot say where a descriptor leads, the identity alone
    decides: the listed file is read, another one is not."""
    entries = DirInventory(str(site)).walk("pkg")
    monkeypatch.setattr(safeio, "fd_path", lambda fd: None)
    swap(site)
    got = hash_entries(entries, workers=2)
    assert got["pkg/d/f1.txt"].error == (
        "replaced since it was listed, and where it leads cannot be told; not read")
    assert got["pkg/__init__.py"].sha256 == hashlib.sha256(b"x = 1\n").digest()
    assert outside(site, reads) == []


# --- a file that grows while it is read -------------------------------------------------

GROWTH = 8 << 20
"""How much a file grows once opened (sparse, so no disk is used): unbounded
reading would read all of it."""


@pytest.fixture
def grows(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, int]]:
    """A file named ``grow*`` the hashing opens grows by ``GROWTH`` bytes right after its
    ``fstat``; yields the bytes every ``read``/``readv`` read, by file name."""
    opener = safeio.open_regular
    real_read, real_readv = os.read, os.readv
    counts: dict[str, int] = {}

    def open_then_grow(path: Any, **kw: Any) -> tuple[int, os.stat_result]:
        fd, st = opener(path, **kw)
        if os.path.basename(path).startswith("grow"):
            os.truncate(path, st.st_size + GROWTH)
        return fd, st

    def count(fd: int, n: int) -> None:
        name = os.path.basename(os.readlink(f"/proc/self/fd/{fd}"))
        counts[name] = counts.get(name, 0) + n

    def read(fd: int, n: int) -> bytes:
        data = real_read(fd, n)
        count(fd, len(data))
        return data

    def readv(fd: int, buffers: Any) -> int:
        n = real_readv(fd, buffers)
        count(fd, n)
        return n

    monkeypatch.setattr(hashing, "open_regular", open_then_grow)
    monkeypatch.setattr(os, "read", read)
    monkeypatch.setattr(os, "readv", readv)
    yield counts


@pytest.mark.parametrize("keep", [False, True])
def test_a_file_growing_while_hashed_is_read_to_one_byte_past_its_size(
        tmp_path: Path, grows: dict[str, int], keep: bool) -> None:
    """As a file that shrank, it is hashed as read and its size says it changed; the
    bytes are never kept (a prefix of no version of the file)."""
    f = tmp_path / "grow.py"
    f.write_bytes(b"x = 1\n" * 1000)
    d = hash_path(str(f), keep)
    assert grows == {"grow.py": 6001}
    assert (d.sha256, d.size) == (hashlib.sha256(f.read_bytes()[:6001]).digest(), 6001)
    assert d.data is None
    assert d.unkept == ("growing while read (past the 6,000 bytes it had when opened)" if keep else None)


def test_a_large_file_growing_while_hashed_is_read_to_one_byte_past_its_size(
        tmp_path: Path, grows: dict[str, int]) -> None:
    """The same through ``hashlib.file_digest``, which reads until a read returns nothing."""
    f = tmp_path / "pkg" / "grow.so"
    f.parent.mkdir()
    f.write_bytes(b"\1" * (4 * SMALL))
    entries = DirInventory(str(tmp_path)).walk("pkg")
    got = hash_entries(entries, workers=2)["pkg/grow.so"]
    assert grows == {"grow.so": 4 * SMALL + 1}
    assert got.size == 4 * SMALL + 1 and got.error is None


def test_a_file_growing_while_checked_against_record_is_modified(
        tmp_path: Path, grows: dict[str, int]) -> None:
    root = install(tmp_path / "site", {"pkg/__init__.py": "x = 1\n", "pkg/grow.py": "y = 2\n"},
                   compile_pyc=False)
    c = run(root)["record:pkg/grow.py"]
    assert c.status.value == "fail"
    assert c.message == "Modified: content differs from RECORD (size 7, RECORD says 6)"
    assert grows["grow.py"] == 7


# --- hashing threads the system refuses ---------------------------------------------------

def refuse_threads(monkeypatch: pytest.MonkeyPatch, exc: BaseException, after: int = 0) -> list[str]:
    """``Thread.start`` of a hashing thread fails (as under ``ulimit -v``) once ``after``
    of them started; returns the names of those that started."""
    real = threading.Thread.start
    started: list[str] = []

    def start(self: threading.Thread) -> None:
        if self.name.startswith("pp1audit-hash"):
            if len(started) >= after:
                raise exc
            started.append(self.name)
        real(self)

    monkeypatch.setattr(threading.Thread, "start", start)
    return started


@pytest.mark.parametrize(("exc", "why"), [
    (RuntimeError("can't start new thread"), "can't start new thread"),
    (MemoryError(), "out of memory"),
])
def test_no_hashing_thread_starting_is_the_cause_in_words(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exc: BaseException, why: str) -> None:
    root = install(tmp_path / "site", FILES, compile_pyc=False)
    refuse_threads(monkeypatch, exc)
    with pytest.raises(Pp1Error) as info:
        run(root)
    assert str(info.value) == f"cannot start hashing threads: {why} (a memory limit, ulimit -v?)"


def test_a_run_goes_on_with_the_threads_that_started(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    many = {**FILES, **{f"pkg/m{i}.py": f"m = {i}\n" for i in range(300)}}  # several tasks
    entries = DirInventory(str(install(tmp_path / "site", many, compile_pyc=False))).walk("pkg")
    started = refuse_threads(monkeypatch, RuntimeError("can't start new thread"), after=1)
    hashes = hashing.HashRun(workers=4)
    for e in entries:
        hashes.add(e)
    got = hashes.result()
    assert len(started) == 1
    assert {p: d.sha256 for p, d in got.items()} == {
        e.path: hashlib.sha256(Path(e.ref).read_bytes()).digest() for e in entries}


def test_the_cli_says_why_the_threads_did_not_start_exit_2(tmp_path: Path) -> None:
    """The user test's ``ulimit -v 100000`` message was "internal error: RuntimeError:
    cannot join thread before it is started": the clean-up's error, not the cause."""
    root = install(tmp_path / "site", FILES, compile_pyc=False)
    manifest = tmp_path / "m.yaml"
    manifest.write_text("pp1audit: 1\ntarget:\n  package: pkg\n", encoding="utf-8")
    code = ("import threading, sys\n"
            "real = threading.Thread.start\n"
            "def start(self):\n"
            "    if self.name.startswith('pp1audit-hash'):\n"
            "        raise RuntimeError(\"can't start new thread\")\n"
            "    real(self)\n"
            "threading.Thread.start = start\n"
            f"sys.argv = ['pp1audit', 'check', {str(root)!r}, '-m', {str(manifest)!r}, '--record']\n"
            "from pp1audit.cli import main; main()\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL, env={**os.environ, "NO_COLOR": "1"})
    assert proc.returncode == 2
    assert proc.stderr == ("pp1audit: error: cannot start hashing threads: can't start new thread "
                           "(a memory limit, ulimit -v?)\n")


def test_hashing_threads_get_small_stacks_and_the_setting_is_put_back(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each thread's stack is address space a memory limit counts: the hashing
    threads' shallow calls need far less than the default 8 MiB."""
    many = {**FILES, **{f"pkg/m{i}.py": f"m = {i}\n" for i in range(300)}}  # several tasks
    entries = DirInventory(str(install(tmp_path / "site", many, compile_pyc=False))).walk("pkg")
    real = threading.Thread.start
    seen: list[int] = []

    def stack() -> int:
        size = threading.stack_size()  # asking sets it (to the default): put it back
        threading.stack_size(size)
        return size

    def start(self: threading.Thread) -> None:
        seen.append(stack())
        real(self)

    monkeypatch.setattr(threading.Thread, "start", start)
    before = stack()
    hashes = hashing.HashRun(workers=2)
    for e in entries:
        hashes.add(e)
    hashes.result()
    # The pool starts a thread per task only while none is idle: one or two, by timing.
    assert 1 <= len(seen) <= 2 and set(seen) == {hashing.THREAD_STACK}
    assert stack() == before
