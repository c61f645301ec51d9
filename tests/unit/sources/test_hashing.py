"""The streamed hashing run: files hashed while the listing goes on, and what it keeps.

Digests are compared with ``hashlib`` over the same bytes read independently;
the trees are small and hand-made (the real-package runs are in
test_record_vllm.py).
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from pp1audit.checks.record import RecordRun
from pp1audit.checks.record_judge import record_checks
from pp1audit.sources import DirectorySource
from pp1audit.sources.hashing import SMALL, HashRun, hash_entries, hash_path
from pp1audit.sources.inventory import DirInventory, Entry


def hashing_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("pp1audit-hash")]


def tree(root: Path, sizes: dict[str, int]) -> list[Entry]:
    """Files of the given sizes (distinct contents) and their inventory entries."""
    for i, (rel, size) in enumerate(sizes.items()):
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(bytes([i % 251]) * size)
    return DirInventory(str(root)).walk("pkg")


def expected(root: Path, entries: list[Entry]) -> dict[str, bytes]:
    return {e.path: hashlib.sha256((root / e.path).read_bytes()).digest() for e in entries}


SIZES = {"pkg/big.so": 3 * SMALL + 7, "pkg/mid.bin": SMALL, "pkg/a.py": 10, "pkg/b.txt": 0,
         "pkg/sub/c.py": SMALL - 1, "pkg/sub/d.dat": 5000}


def test_streamed_run_hashes_what_was_added_before_and_after_the_listing_ends(
        tmp_path: Path) -> None:
    entries = tree(tmp_path, SIZES)
    run = HashRun(workers=2)
    for e in entries:
        run.add(e)
    got = run.result()
    assert {p: d.sha256 for p, d in got.items()} == expected(tmp_path, entries)
    assert {p: d.size for p, d in got.items()} == {e.path: e.size for e in entries}


def test_large_files_start_before_the_listing_is_closed(tmp_path: Path) -> None:
    entries = {e.path: e for e in tree(tmp_path, SIZES)}
    seen = threading.Event()

    def keep(e: Entry) -> bool:  # called by a hashing thread as it takes the file
        if e.path == "pkg/big.so":
            seen.set()
        return False

    run = HashRun(keep=keep, workers=1)
    run.add(entries["pkg/a.py"])  # small: held for close()
    run.add(entries["pkg/big.so"])  # large: a thread takes it now
    assert seen.wait(10), "the large file was not taken before close()"
    got = run.result()
    assert set(got) == {"pkg/a.py", "pkg/big.so"}


def test_small_files_wait_for_the_listing(tmp_path: Path) -> None:
    entries = tree(tmp_path, {"pkg/a.py": 10, "pkg/b.py": 20})
    taken: list[str] = []

    def keep(e: Entry) -> bool:
        taken.append(e.path)
        return False

    run = HashRun(keep=keep, workers=2)
    for e in entries:
        run.add(e)
    assert taken == []  # no thread even started: nothing large was added
    assert set(run.result()) == {"pkg/a.py", "pkg/b.py"}
    assert sorted(taken) == ["pkg/a.py", "pkg/b.py"]


def test_cancel_stops_the_threads_without_hashing_the_rest(tmp_path: Path) -> None:
    entries = tree(tmp_path, {f"pkg/f{i}.bin": SMALL for i in range(40)})
    started, go = threading.Event(), threading.Event()

    def keep(e: Entry) -> bool:  # holds every thread on its first file until told
        started.set()
        go.wait(10)
        return False

    run = HashRun(keep=keep, workers=2)
    for e in entries:
        run.add(e)
    assert started.wait(10)
    canceller = threading.Thread(target=run.cancel)  # before close(): nothing more is taken
    canceller.start()
    while not run._stop.is_set():
        canceller.join(0.01)
    go.set()
    canceller.join(10)
    assert not canceller.is_alive() and not hashing_threads()
    assert run.out == {}  # the two files the threads were on stopped at their first block


def test_an_error_in_a_thread_reaches_the_caller(tmp_path: Path) -> None:
    entries = tree(tmp_path, SIZES)

    def keep(e: Entry) -> bool:
        raise RuntimeError(f"boom on {e.path}")

    with pytest.raises(RuntimeError, match="boom on"):
        hash_entries(entries, keep=keep, workers=2)


def test_a_few_small_files_hash_in_the_calling_thread(tmp_path: Path) -> None:
    entries = tree(tmp_path, {"pkg/x.py": 3, "pkg/y.py": 4})
    callers: set[str] = set()

    def keep(e: Entry) -> bool:
        callers.add(threading.current_thread().name)
        return True

    got = hash_entries(entries, keep=keep)
    assert callers == {threading.current_thread().name}
    assert {p: d.sha256 for p, d in got.items()} == expected(tmp_path, entries)
    assert all(d.data is not None for d in got.values())  # kept: keep said so


def test_sources_are_kept_in_memory_only_when_bytecode_names_them(tmp_path: Path) -> None:
    import importlib.util
    import py_compile

    root = tmp_path / "site"
    tree(root, {"pkg/with_pyc.py": 30, "pkg/without.py": 30, "pkg/data.txt": 30})
    (root / "pkg" / "with_pyc.py").write_text("x = 1\n", encoding="utf-8")
    src = root / "pkg" / "with_pyc.py"
    py_compile.compile(str(src), cfile=importlib.util.cache_from_source(str(src)), doraise=True)
    with DirectorySource(root) as source:
        rec = RecordRun("pkg", source)
        digests = rec.run.result()
    kept = {p for p, d in digests.items() if d.data is not None}
    pyc = next(p for p in digests if p.endswith(".pyc"))
    assert kept == {"pkg/with_pyc.py", pyc}


def test_a_kept_file_over_the_limit_is_hashed_streaming_not_held(tmp_path: Path) -> None:
    from pp1audit.sources.hashing import KEEP_FILE

    big = tmp_path / "big.py"
    with big.open("wb") as f:  # sparse: zeros, then a marker at the end
        f.seek(KEEP_FILE)
        f.write(b"#")
    d = hash_path(str(big), True)
    assert d.data is None and d.error is None
    assert d.unkept == f"{KEEP_FILE + 1:,} bytes, over the 16 MiB per file kept for comparison"
    assert (d.sha256, d.size) == (hashlib.sha256(big.read_bytes()).digest(), KEEP_FILE + 1)
    small = tmp_path / "small.py"
    small.write_bytes(b"x = 1\n")
    assert hash_path(str(small), True).data == b"x = 1\n"


def test_a_kept_file_over_2_gib_is_hashed_whole(tmp_path: Path) -> None:
    """``read`` returns at most 2,147,479,552 bytes per call: taking that short read
    for the end hashed such a file truncated (a source hashed while the tree is
    listed is asked to be kept)."""

    huge = tmp_path / "huge.py"
    size = (2 << 30) + 4096
    with huge.open("wb") as f:
        f.seek(size - 1)
        f.write(b"!")
    # (head -c $(( (2<<30) + 4095 )) /dev/zero; printf '!') | sha256sum
    whole = "3e686da514e91fb64c3f7907c2390430bc1615305a87f55bcd222e9bb86a10dc"
    d = hash_path(str(huge), True)
    assert (d.sha256.hex() if d.sha256 else None, d.size) == (whole, size)


def test_what_a_run_keeps_is_bounded_in_total(tmp_path: Path) -> None:
    entries = tree(tmp_path, {f"pkg/m{i}.py": 1000 for i in range(5)})
    run = HashRun(keep=lambda e: True, workers=1, keep_total=2500)
    for e in entries:
        run.add(e)
    got = run.result()
    kept = [d for d in got.values() if d.data is not None]
    unkept = [d for d in got.values() if d.unkept is not None]
    assert (len(kept), len(unkept)) == (2, 3)
    assert unkept[0].unkept == "1,000 bytes, past the 2,500 bytes kept for comparison in one run"
    assert {p: d.sha256 for p, d in got.items()} == expected(tmp_path, entries)  # all hashed


def test_an_exception_while_hashing_one_file_is_that_files_error(tmp_path: Path) -> None:
    entries = tree(tmp_path, SIZES)
    broken = Entry("pkg/broken.py", "file", 10, None, str(tmp_path / "pkg" / "a\0.py"))
    for few in (False, True):  # the threads, and the calling thread for a handful of files
        todo = [broken, *(entries[:2] if few else entries)]
        got = hash_entries(todo, workers=2)
        assert got["pkg/broken.py"].error == "cannot be hashed: ValueError: embedded null byte"
        assert {p: d.sha256 for p, d in got.items() if p != "pkg/broken.py"} == expected(
            tmp_path, todo[1:])


def test_oversized_bytecode_is_never_read(tmp_path: Path) -> None:
    """Only the bytecode check reads a pyc, and it cannot compare one over the limit:
    a 40 GB sparse pyc must not be hashed for nothing (it took 93 s)."""
    from pp1audit.sources.hashing import KEEP_FILE

    root = tmp_path / "site"
    tree(root, {"pkg/mod.py": 30})
    pyc = root / "pkg" / "__pycache__" / "mod.cpython-311.pyc"
    pyc.parent.mkdir()
    with pyc.open("wb") as f:
        f.truncate(KEEP_FILE + 1)
    with DirectorySource(root) as source:
        rec = RecordRun("pkg", source)
        hashed = rec.run.result()
    assert "pkg/mod.py" in hashed and pyc.relative_to(root).as_posix() not in hashed


def test_a_failed_audit_stops_its_hashing_threads(tmp_path: Path) -> None:
    """audit() starts hashing before the other checks; when one of them raises
    (here a --repo named for nothing), nobody collects the hashing: it must stop."""
    from pp1audit.errors import Pp1Error
    from pp1audit.manifest import parse
    from pp1audit.run import audit
    from pp1audit.sources.runconfig import ProvenanceOptions

    tree(tmp_path / "site", {f"pkg/f{i}.bin": 2 * SMALL for i in range(200)})
    manifest = parse("pp1audit: 1\ntarget: {package: pkg, record: true}\n", "m.yaml")
    options = ProvenanceOptions(repos={"nope": tmp_path}, named_on_command_line=frozenset({"nope"}))
    with DirectorySource(tmp_path / "site") as source, pytest.raises(Pp1Error, match="nope"):
        audit(manifest, source, options=options)
    assert not hashing_threads()


def test_without_record_no_bytecode_is_read(tmp_path: Path) -> None:
    """Only --record judges bytecode; the tree digest excludes __pycache__: a
    tree-digest-only run reads no pyc (a 40 GB sparse one would cost minutes)."""
    root = tmp_path / "site"
    tree(root, {"pkg/m.py": 10})
    big = root / "pkg" / "__pycache__" / "m.cpython-311.pyc"
    big.parent.mkdir()
    with open(big, "wb") as f:
        f.truncate(40 << 30)
    with DirectorySource(root) as source:
        rec = RecordRun("pkg", source, record=False, tree_sha256="0" * 64)
        checks = {c.id: c for c in record_checks(rec)}
    assert checks["tree"].status.value == "fail"  # judged (the pin is made up), quickly
    assert rec.run.out.get("pkg/__pycache__/m.cpython-311.pyc") is None  # never hashed


def open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def held_on(first: str, go: threading.Event) -> tuple[Callable[[Entry], bool], threading.Event]:
    """A keep hook that holds the thread taking ``first`` until told, and an event
    set once it holds: what is added meanwhile waits for that thread."""
    holding = threading.Event()

    def keep(e: Entry) -> bool:
        if e.path == first:
            holding.set()
            assert go.wait(10)
        return False
    return keep, holding


def test_the_largest_file_waiting_goes_first(tmp_path: Path) -> None:
    """The listing finds files in directory order; a thread takes the largest of
    those waiting, whatever order they were found in."""
    sizes = {"pkg/a.so": SMALL, "pkg/b.so": 2 * SMALL, "pkg/c.so": 4 * SMALL, "pkg/d.so": 3 * SMALL}
    entries = {e.path: e for e in tree(tmp_path, sizes)}
    go = threading.Event()
    keep, holding = held_on("pkg/a.so", go)
    run = HashRun(keep=keep, workers=1)
    run.add(entries["pkg/a.so"])
    assert holding.wait(10)  # the thread is on a.so: the others are found meanwhile
    for name in ("pkg/b.so", "pkg/c.so", "pkg/d.so"):
        run.add(entries[name])
    go.set()
    got = run.result()
    assert list(run.out) == ["pkg/a.so", "pkg/c.so", "pkg/d.so", "pkg/b.so"]
    assert {p: d.sha256 for p, d in got.items()} == expected(tmp_path, list(entries.values()))


def test_small_files_are_hashed_by_the_caller_and_the_threads(tmp_path: Path) -> None:
    """Once the listing ends, the calling thread takes batches of small files too (their
    cost is Python work, while the threads hash large files outside the GIL)."""
    entries = tree(tmp_path, {f"pkg/m{i}.py": 100 + i for i in range(400)})
    who: dict[str, str] = {}
    caller = threading.current_thread().name
    took = {True: threading.Event(), False: threading.Event()}  # by the caller, by a thread

    def keep(e: Entry) -> bool:  # each side waits on its first file until the other took one
        who[e.path] = threading.current_thread().name
        mine = who[e.path] == caller
        took[mine].set()
        assert took[not mine].wait(10)
        return False

    got = hash_entries(entries, keep=keep, workers=2)
    assert caller in set(who.values()) and len(set(who.values())) > 1
    assert {p: d.sha256 for p, d in got.items()} == expected(tmp_path, entries)


def test_cancel_stops_a_file_mid_read_and_leaves_nothing_open(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C while a large file is hashed: it stops at its next block, unfinished,
    its descriptor closed; what waited is never started."""
    entries = {e.path: e for e in tree(tmp_path, {"pkg/a.so": 32 * SMALL, "pkg/b.so": 16 * SMALL})}
    run = HashRun(workers=1)
    reads: list[int] = []
    reading = threading.Event()
    real = os.readv

    def readv(fd: int, buffers: list[memoryview]) -> int:
        reads.append(fd)
        run._stop.set()  # as cancel() does, while this thread reads the first block
        reading.set()
        return real(fd, buffers)

    monkeypatch.setattr(os, "readv", readv)
    before = open_fds()
    run.add(entries["pkg/a.so"])
    run.add(entries["pkg/b.so"])
    assert reading.wait(10)
    run.cancel()
    assert len(reads) == 1 and run.out == {}
    assert open_fds() == before and not hashing_threads()


def test_a_thread_error_leaves_no_file_open(tmp_path: Path) -> None:
    entries = tree(tmp_path, {"pkg/a.so": 4 * SMALL, "pkg/b.so": 20 * SMALL})

    def keep(e: Entry) -> bool:
        if e.path == "pkg/b.so":
            raise RuntimeError("boom")
        return False

    before = open_fds()
    with pytest.raises(RuntimeError, match="boom"):
        hash_entries(entries, keep=keep, workers=1)
    assert open_fds() == before and not hashing_threads()


def test_a_file_that_shrinks_once_opened_is_hashed_as_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Truncated between its ``fstat`` and its reading: the digest is that of the
    bytes read, the size says how many (RECORD's size then flags it), nothing crashes."""
    from pp1audit.sources import hashing

    entries = tree(tmp_path, {"pkg/a.so": 4 * SMALL, "pkg/b.py": 1000})
    opener = hashing.open_regular

    def open_then_shrink(path: str, **kw: object) -> tuple[int, os.stat_result]:
        fd, st = opener(path, **kw)  # type: ignore[arg-type]
        os.truncate(path, 100)
        return fd, st

    monkeypatch.setattr(hashing, "open_regular", open_then_shrink)
    got = hash_entries(entries, workers=1, keep=lambda e: e.path.endswith(".py"))
    for e in entries:
        data = (tmp_path / e.path).read_bytes()
        assert (got[e.path].sha256, got[e.path].size) == (hashlib.sha256(data).digest(), 100)
    assert got["pkg/b.py"].data == (tmp_path / "pkg/b.py").read_bytes()


@pytest.mark.parametrize(("algorithm", "error"), [
    ("shake_128", "cannot be hashed: TypeError: "),  # RECORD may name it; digest() needs a length
    ("nope", "cannot be hashed: ValueError: unsupported hash type nope"),
])
def test_a_file_that_cannot_be_hashed_is_its_error_and_leaves_nothing_open(
        tmp_path: Path, algorithm: str, error: str) -> None:
    entries = tree(tmp_path, {"pkg/a.so": 4 * SMALL, "pkg/b.so": 3 * SMALL, "pkg/c.py": 10})
    before = open_fds()
    got = hash_entries(entries, workers=2, algorithm=algorithm)
    assert sorted(got) == ["pkg/a.so", "pkg/b.so", "pkg/c.py"]
    assert all(d.sha256 is None and (d.error or "").startswith(error) for d in got.values()), got
    assert open_fds() == before


class Recorder:
    """A progress hook that remembers what it was told."""

    def __init__(self) -> None:
        self.total = 0
        self.done = 0

    def start(self, description: str, total: int) -> None:
        self.total = total

    def update(self, done: int) -> None:
        self.done = done

    def stop(self) -> None:
        pass


def test_a_large_file_that_shrank_since_the_listing_is_hashed_and_kept_as_listed_small(
        tmp_path: Path) -> None:
    """Listed large, found small when opened: it is hashed like any small file, so a
    source bytecode names keeps its bytes; and progress counts each file as
    listed, so it ends at its total."""
    entries = tree(tmp_path, {"pkg/mod.py": 4 * SMALL, "pkg/grew.so": 3 * SMALL})
    (tmp_path / "pkg/mod.py").write_bytes(b"x = 1\n")
    with (tmp_path / "pkg/grew.so").open("ab") as f:
        f.write(b"!" * SMALL)
    progress = Recorder()
    got = hash_entries(entries, workers=1, keep=lambda e: e.path.endswith(".py"), progress=progress)
    assert (got["pkg/mod.py"].data, got["pkg/mod.py"].size, got["pkg/mod.py"].unkept) == (
        b"x = 1\n", 6, None)
    assert got["pkg/grew.so"].size == 4 * SMALL
    assert {p: d.sha256 for p, d in got.items()} == expected(tmp_path, entries)
    assert progress.done == progress.total == 7 * SMALL
