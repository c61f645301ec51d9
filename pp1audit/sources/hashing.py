"""Parallel streamed SHA-256 of many files, at the machine's hashing speed.

Why this shape:

* ``hashlib`` releases the GIL while it hashes a buffer larger than 2 KiB, and
  ``readinto`` / zlib decompression release it while they wait or inflate, so
  plain threads (one per core) hash in parallel without processes to start or
  bytes to copy between them.
* Reads are large (4 MiB) into one reusable buffer per thread, so a 300 MB
  shared object costs ~75 syscalls and no allocations, and a small file one
  ``read`` into the same buffer. ``mmap`` measured 4-9 % faster on the large
  files (no copy out of the page cache) but a file truncated while mapped
  kills the process with SIGBUS: an audited tree must never be able to crash
  the auditor, so reads it is. (Buffer sizes from 128 KiB to 4 MiB measured
  the same.)
* Files are hashed while the tree is still being listed, largest first (see
  ``HashRun``): on a tree where two files are 60 % of the bytes, the big ones
  start at once instead of one thread finishing a 300 MB file alone at the
  end. Large files go in slices (``_Job``), so one found late that is far
  larger takes a thread's place instead of waiting for it. One thread works
  up from the smallest files, whose cost is Python overhead under the GIL
  rather than hashing, so that work overlaps the GIL-free hashing of the big
  ones.
* Only entries the inventory says are regular files are ever opened, with
  ``O_NONBLOCK | O_NOFOLLOW`` and a re-check of ``fstat`` after the open, so a
  FIFO or a symlink swapped in between cannot hang or redirect the run; and
  the file opened must be the one listed (``Entry.ident``, free: the ``fstat``
  is made anyway) or lead inside the root, so a *directory* on its path
  swapped for a symlink cannot send the run outside (``safeio.open_regular``).
* Files a caller wants to inspect further (sources and bytecode) are kept in
  memory: the bytes that are hashed are the bytes that are compiled. What is
  kept is bounded (``KEEP_FILE`` per file, ``KEEP_TOTAL`` per run): a bloated
  file (a 40 GB sparse pyc, a zip bomb) is still hashed, streaming, and
  marked ``unkept`` for the caller to report, never read whole.
* A read is short only at the end of a regular file, but ``read`` returns at
  most ~2 GiB and network or FUSE file systems may return less: reading goes
  on until the size ``fstat`` gave is reached and a read comes back short.
  It never goes past that size and one byte: a file a writer keeps growing
  ends the read there (hashed as read, as one that shrank), so the run's time
  depends on the input, not on the writer.
* A thread the system refuses to start (a memory limit) is done without; none
  at all is ``ThreadsUnavailable``, in words.
* An exception while hashing one file (``MemoryError``, a bug) is that file's
  ``error``, never the end of the run.

Progress is reported through an optional ``Progress`` hook polled by the
calling thread ten times a second; the workers only bump their own counters.
"""

from __future__ import annotations

import hashlib
import heapq
import os
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import partial
from typing import Protocol

from pp1audit.errors import Pp1Error
from pp1audit.sources import elsewhere
from pp1audit.sources.inventory import Entry, kind_of_mode, what_it_is
from pp1audit.sources.safeio import Elsewhere, NotRegular, open_regular
from pp1audit.sources.zipindex import ZipError, ZipIndex

BUFFER = 4 << 20
"""Read size per call; large enough that hashlib and syscalls run at full speed."""
SMALL = 256 << 10
"""Files below this are read in one call and hashed in one ``update``."""
KEEP_FILE = 16 << 20
"""Largest file whose bytes are kept: real modules and their bytecode are far
smaller (vLLM's largest source is 0.3 MB); a larger one is hashed streaming."""
SLICE = 16 << 20
"""How much of a large file one thread hashes before it looks for a larger one."""
RESUMABLE = 2 * SLICE
"""Files from this size on are hashed in slices and may change threads (see
``HashRun``); never kept (over ``KEEP_FILE``), so a slice holds no bytes."""
SUSPENDED_MAX = 8
"""Most large files set aside half-hashed at once: each holds an open descriptor."""
KEEP_TOTAL = 1 << 30
"""Most bytes one ``HashRun`` keeps (an installed vLLM keeps ~90 MB): a tree of
many bloated files (say a zip bomb of 16 MiB pycs) must not exhaust memory."""


class Progress(Protocol):
    """What the hashing (and compiling) loops report; the CLI draws it, the core never prints."""

    def start(self, description: str, total: int) -> None:
        """A phase begins: ``total`` units (bytes or files) to do."""

    def update(self, done: int) -> None:
        """``done`` units finished so far in the current phase."""

    def stop(self) -> None:
        """The phase is over (remove any display)."""


@dataclass(frozen=True, slots=True)
class Digest:
    """The outcome of hashing one entry."""

    sha256: bytes | None
    """Raw 32-byte digest, or None when the entry could not be read."""
    size: int
    data: bytes | None = None
    """The whole content, when the caller asked to keep it."""
    error: str | None = None
    unkept: str | None = None
    """Why the content was not kept although asked (too large): hashed, not kept."""


THREAD_STACK = 1 << 20
"""Stack reserved per hashing thread. Their calls are shallow (the work is in C:
``readv``, OpenSSL, zlib), and the default (``ulimit -s``, 8 MiB) is address
space a memory limit (``ulimit -v``) counts once per thread: with it, the user
test's ``ulimit -v 100000`` left too little to start them."""


@contextmanager
def _small_stacks() -> Iterator[None]:
    """Threads started inside get ``THREAD_STACK`` (the setting is the process's:
    it is put back after; only the calling thread starts threads meanwhile)."""
    try:
        old = threading.stack_size(THREAD_STACK)
    except (ValueError, RuntimeError):  # pragma: no cover - a platform that refuses
        yield
        return
    try:
        yield
    finally:
        threading.stack_size(old)


SWITCH_INTERVAL = 0.0005
"""The interpreter's thread switch interval while hashing threads run (the default
is 5 ms). A hashing thread needs the GIL for a moment between two buffers; were
the calling thread busy in Python (listing the tree, parsing RECORD, the other
checks), each of those moments could wait for a whole interval. Measured on
vLLM (``check --record``, paired runs): the 0.5 ms interval ends the run 30-80 ms
sooner; the 5 ms default left the threads idle for a tenth of the hashing."""


class _Switching:
    """``SWITCH_INTERVAL`` while any run's threads work, the interval found put back
    when the last run ends (the setting is the process's, and runs may overlap:
    ``hash_here`` in the calling thread while a ``HashRun`` works)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._users = 0
        self._saved = 0.0

    def enter(self) -> None:
        with self._lock:
            if self._users == 0:
                self._saved = sys.getswitchinterval()
                if self._saved > SWITCH_INTERVAL:
                    sys.setswitchinterval(SWITCH_INTERVAL)
            self._users += 1

    def leave(self) -> None:
        with self._lock:
            self._users -= 1
            if self._users == 0:
                sys.setswitchinterval(self._saved)


_switching = _Switching()


class ThreadsUnavailable(Pp1Error):
    """Not one hashing thread could start (``ulimit -v``: each thread reserves a
    stack): nothing can be judged, so the run ends with the cause, exit 2."""

    def __init__(self, cause: BaseException) -> None:
        why = str(cause) or ("out of memory" if isinstance(cause, MemoryError) else type(cause).__name__)
        super().__init__(f"cannot start hashing threads: {why} (a memory limit, ulimit -v?)")


def _new_hash(algorithm: str) -> hashlib._Hash:
    return hashlib.sha256() if algorithm == "sha256" else hashlib.new(algorithm)


def too_large(size: int) -> str:
    """Why a file asked to be kept was not: the phrase checks report."""
    return f"{size:,} bytes, over the {KEEP_FILE >> 20} MiB per file kept for comparison"


def _open_regular(real: str, same: tuple[int, int] | None = None,
                  root: str | None = None) -> tuple[int, int] | Digest:
    """``(fd, size)`` of a regular file opened for reading, or why it was not opened
    (``safeio.open_regular``: a FIFO swapped in after the listing cannot hang the
    open, a symlink swapped in cannot redirect it, the type is judged on the
    descriptor itself, so no race remains).

    ``root`` is the resolved root the file was listed in (``Entry.root``), ``same``
    its identity there (``Entry.ident``): a directory on the path swapped for a
    symlink since then leads the open outside, and that file is closed unread."""
    try:
        fd, st = open_regular(real, same=same, within=root)
    except NotRegular as exc:
        return Digest(None, 0, error=f"is a {kind_of_mode(exc.mode)}; not opened")
    except Elsewhere as exc:
        return Digest(None, 0, error=elsewhere(exc.where))
    except OSError as exc:
        return Digest(None, 0, error=f"cannot open: {exc.strerror}")
    return fd, st.st_size


def growing(size: int) -> str:
    """Why a file that grew while it was read was not kept: what was read is a
    prefix of no version of it, so nothing may be compiled or compared from it."""
    return f"growing while read (past the {size:,} bytes it had when opened)"


def _pump(fd: int, h: hashlib._Hash, view: memoryview, total: int, size: int,
          limit: int | None = None, parts: list[bytes] | None = None) -> tuple[int, bool]:
    """Read and hash from ``fd`` until the end, or until ``limit`` more bytes are
    done; returns the new total and whether the end was reached.

    The end is a read of nothing, or a short read once ``size`` (from ``fstat``)
    is reached: no call is spent proving EOF. At most ``size + 1`` bytes are
    read: a file that keeps growing (a writer appending to it, a sparse file
    extended faster than it is read) would otherwise be read for ever; the one
    byte more says it grew (a total over ``size``), as a total under it says
    it shrank. ``parts``, when given, collects the bytes (the caller bounds how many)."""
    full = len(view)
    cap = size + 1
    stop = cap if limit is None else min(total + limit, cap)
    while total < stop:
        want = min(full, stop - total)
        n = os.readv(fd, (view[:want] if want < full else view,))
        if not n:
            return total, True
        h.update(view[:n])
        total += n
        if parts is not None:
            parts.append(bytes(view[:n]))
        if n < want and total >= size:
            return total, True
    return total, total >= cap


def hash_path(real: str, keep: bool, buf: bytearray, algorithm: str = "sha256", *,
              same: tuple[int, int] | None = None, root: str | None = None) -> Digest:
    """Digest (SHA-256 unless told) of one file on disk; never opens anything but a regular file.

    The bytes are read into ``buf`` (the calling thread's, reused): a file
    smaller than it takes one ``read``. ``keep`` copies the bytes out, up to
    ``KEEP_FILE``. A file that grew since ``fstat`` is hashed as read, as one
    that shrank is (its size then says so: ``_pump``), but never kept
    (``growing``). ``same`` and ``root``: see ``_open_regular``.
    """
    opened = _open_regular(real, same, root)
    if isinstance(opened, Digest):
        return opened
    fd, size = opened
    try:
        h = _new_hash(algorithm)
        view = memoryview(buf)
        if not keep or size > KEEP_FILE:
            total, _ = _pump(fd, h, view, 0, size)
            return Digest(h.digest(), total, unkept=too_large(total) if keep else None)
        parts: list[bytes] = []
        total, _ = _pump(fd, h, view, 0, size, parts=parts)
        if total > size:
            return Digest(h.digest(), total, unkept=growing(size))
        return Digest(h.digest(), total, parts[0] if len(parts) == 1 else b"".join(parts))
    except OSError as exc:
        return Digest(None, 0, error=f"cannot read: {exc.strerror}")
    finally:
        os.close(fd)


def hash_member(zf: ZipIndex, name: str, keep: bool, algorithm: str = "sha256") -> Digest:
    """Digest of one wheel member, decompressed in streamed blocks (size and CRC-32
    checked by ``ZipIndex.stream``, which raises nothing but ``ZipError``/``OSError``:
    a corrupt member is this file's error, never the end of the run). ``keep``
    keeps at most ``KEEP_FILE`` bytes: a 2 GiB member inflated from 2 MB is
    hashed, not held."""
    h = _new_hash(algorithm)
    total = 0
    parts: list[bytes] | None = [] if keep else None
    try:
        member = zf.member(name)
        if member is None:
            return Digest(None, 0, error="cannot read from the wheel: no such member")
        for chunk in zf.stream(member, BUFFER):
            h.update(chunk)
            total += len(chunk)
            if parts is not None and total > KEEP_FILE:
                parts = None
            elif parts is not None:
                parts.append(chunk)
    except (OSError, ZipError) as exc:
        return Digest(None, total, error=f"cannot read from the wheel: {exc or type(exc).__name__}")
    if keep and parts is None:
        return Digest(h.digest(), total, unkept=too_large(total))
    return Digest(h.digest(), total, b"".join(parts) if parts is not None else None)


def _guarded(hash_one: Callable[..., Digest], *args: object) -> Digest:
    """Run one file's hashing; an exception it raises (``MemoryError``, a bug) is
    that file's error: one bad file must not end the run, whatever it holds."""
    try:
        return hash_one(*args)
    except Exception as exc:
        return Digest(None, 0, error=f"cannot be hashed: {type(exc).__name__}: {exc}")


def default_workers() -> int:
    """One thread per usable core: hashing is CPU-bound once the files are cached."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - non-Linux
        return max(1, os.cpu_count() or 1)


def hash_entries(
    entries: Sequence[Entry],
    *,
    wheel: str | None = None,
    keep: Callable[[Entry], bool] = lambda e: False,
    workers: int | None = None,
    progress: Progress | None = None,
    algorithm: str = "sha256",
) -> dict[str, Digest]:
    """Digest of every entry (regular files only; others get an ``error``), by logical path.

    SHA-256 unless ``algorithm`` names another ``hashlib`` one (RECORD rows may
    use any): always streamed, so no algorithm makes a large file be held.

    ``entry.ref`` is the OS path, or the member name when ``wheel`` is given
    (each thread then opens its own ``ZipIndex``: one index has one file
    position, and reading its central directory costs a few milliseconds).
    A handful of small files (RECORD, a ``.pth``) is hashed in the calling
    thread: starting threads would cost more than the hashing.
    """
    if progress is None and len(entries) <= 4 and sum(e.size for e in entries) < SMALL:
        return hash_here(entries, wheel=wheel, keep=keep, algorithm=algorithm)
    run = HashRun(wheel=wheel, keep=keep, workers=workers, progress=progress, algorithm=algorithm)
    for e in entries:
        run.add(e)
    return run.result()


def hash_here(entries: Sequence[Entry], *, wheel: str | None = None,
              keep: Callable[[Entry], bool] = lambda e: False,
              algorithm: str = "sha256") -> dict[str, Digest]:
    """As ``hash_entries``, in the calling thread: for a few files (a RECORD, the
    dist-info files) read while the hashing threads are busy with the tree, so
    starting more threads would only cost time."""
    out: dict[str, Digest] = {}
    for e in entries:
        if e.kind != "file":
            out[e.path] = Digest(None, 0, error=e.error or f"{what_it_is(e)}; not opened")
    with _Reader(wheel, algorithm, SMALL) as reader:
        for e in entries:
            if e.kind == "file":
                out[e.path] = reader.hash(e, keep(e))
    return out


class _Reader:
    """One thread's means of hashing entries: its reusable buffer and, for a
    wheel, its own ``ZipIndex`` (one index has one file position). A wheel that
    changed or vanished since the inventory makes every entry that error."""

    def __init__(self, wheel: str | None, algorithm: str, buffer: int) -> None:
        self._buf = bytearray(buffer)
        self._algorithm = algorithm
        self._zip: ZipIndex | None = None
        self._error: str | None = None
        if wheel is not None:
            try:
                self._zip = ZipIndex(wheel)
            except ZipError as exc:
                self._error = f"cannot read from the wheel: {exc}"

    def hash(self, e: Entry, keep: bool) -> Digest:
        if self._error is not None:
            return Digest(None, 0, error=self._error)
        if self._zip is not None:
            return _guarded(hash_member, self._zip, e.ref, keep, self._algorithm)
        return _guarded(partial(hash_path, same=e.ident, root=e.root),
                        e.ref, keep, self._buf, self._algorithm)

    def resumable(self, e: Entry) -> bool:
        """Whether ``e`` is hashed as a ``_Job``: a large file on disk. Wheel members
        never are: a member's inflate state belongs to its thread's ``ZipIndex``."""
        return self._zip is None and self._error is None and e.size >= RESUMABLE

    def view(self) -> memoryview:
        return memoryview(self._buf)

    def __enter__(self) -> _Reader:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._zip is not None:
            self._zip.close()


class _Job:
    """A large file being hashed in slices: its descriptor and hash state travel
    with it, so whichever thread is free continues it (see ``HashRun``). A file
    is only ever in one thread's hands at a time, so the digest is that of the
    bytes in order, whatever the schedule."""

    __slots__ = ("entry", "fd", "h", "size", "total", "want")

    def __init__(self, entry: Entry, want: bool, fd: int, size: int, h: hashlib._Hash) -> None:
        self.entry = entry
        self.want = want
        self.fd: int | None = fd
        self.size = size
        self.h = h
        self.total = 0

    @classmethod
    def open(cls, e: Entry, want: bool, algorithm: str) -> _Job | Digest:
        """The job, or this file's error: the hash object is made before the file
        is opened, so an algorithm this OpenSSL refuses leaves no descriptor."""
        try:
            h = _new_hash(algorithm)
            opened = _open_regular(e.ref, e.ident, e.root)
        except Exception as exc:  # as ``_guarded``: an embedded NUL, an unknown algorithm
            return Digest(None, 0, error=f"cannot be hashed: {type(exc).__name__}: {exc}")
        return opened if isinstance(opened, Digest) else cls(e, want, *opened, h)

    @property
    def remaining(self) -> int:
        return max(self.size - self.total, 0)

    def step(self, view: memoryview) -> Digest | None:
        """Hash the next slice; the file's digest once it is done (or failed), else None.
        Any exception (a read error, ``digest()`` of a SHAKE algorithm a RECORD row
        named) is this file's error, as ``_guarded`` makes it for other files."""
        assert self.fd is not None
        try:
            self.total, done = _pump(self.fd, self.h, view, self.total, self.size, SLICE)
            if not done:
                return None
            digest = self.h.digest()
        except OSError as exc:
            self.close()
            return Digest(None, 0, error=f"cannot read: {exc.strerror}")
        except Exception as exc:
            self.close()
            return Digest(None, 0, error=f"cannot be hashed: {type(exc).__name__}: {exc}")
        self.close()
        return Digest(digest, self.total, unkept=too_large(self.total) if self.want else None)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


class HashRun:
    """Hashing threads fed while the tree is still being listed.

    ``add`` each entry as the inventory finds it, ``close`` when the listing
    is complete, then ``result()``. Why streaming: listing 5,000 files takes
    about as long as hashing 50 MB, and a run is only as fast as its last
    thread, so the large files (most of the bytes) start hashing the moment
    they are found, largest first among those waiting (by bytes left: a large
    file set aside half-hashed waits with the rest, see ``_advance``). Small
    files are held until ``close``: then they are sorted too, and while the
    other threads work down from the largest, one works up from the smallest,
    whose cost is Python-level work under the GIL rather than hashing, so it
    overlaps the GIL-free hashing of the big ones; then it takes the largest
    left too. ``keep`` is asked when an entry is hashed, so for the small files
    it can depend on the whole listing.
    """

    def __init__(
        self,
        *,
        wheel: str | None = None,
        keep: Callable[[Entry], bool] = lambda e: False,
        workers: int | None = None,
        progress: Progress | None = None,
        early: int = SMALL,
        algorithm: str = "sha256",
        keep_total: int = KEEP_TOTAL,
    ) -> None:
        self.out: dict[str, Digest] = {}
        self._wheel = wheel
        self._algorithm = algorithm
        self._kept = 0  # bytes reserved for kept files, up to keep_total
        self._keep_total = keep_total
        self._kept_lock = threading.Lock()
        self._keep = keep
        self._early = early
        self._workers = max(1, workers or default_workers())
        self._progress = progress
        self._cond = threading.Condition()
        # Heap of (-bytes left, order, file): files waiting, and large ones set aside half-hashed.
        self._ready: list[tuple[int, int, Entry | _Job]] = []
        self._suspended = 0  # how many _Job are in _ready
        self._held: list[Entry] = []
        self._sorted: list[Entry] = []
        self._front = 0
        self._end = 0
        self._closed = False
        self._cancelled = False
        self._total = 0
        self._order = 0
        self._done: list[int] = []
        self._threads: list[threading.Thread] = []
        self._errors: list[BaseException] = []
        self._switched = False  # holds ``_switching`` while its threads may work

    def add(self, e: Entry) -> None:
        """One entry of the listing: a large regular file starts hashing at once."""
        if e.kind != "file":
            self.out[e.path] = Digest(None, 0, error=e.error or f"{what_it_is(e)}; not opened")
            return
        self._total += max(e.size, 1)
        if e.size < self._early:
            self._held.append(e)
            return
        with self._cond:
            self._order += 1
            heapq.heappush(self._ready, (-e.size, self._order, e))
            self._cond.notify()
        if not self._threads:
            self._start(self._workers)

    def close(self) -> None:
        """The listing is complete: release the small files to the threads."""
        if self._closed:
            return
        if self._progress is not None:
            self._progress.start("hashing", self._total)
        with self._cond:
            # The small files join one sorted list, worked from both ends.
            held = sorted(self._held, key=lambda e: e.size, reverse=True)
            self._held = []
            self._sorted = held
            self._end = len(held)
            self._closed = True
            self._cond.notify_all()
        if not self._threads:
            self._start(min(self._workers, max(1, len(held) + len(self._ready))))

    def cancel(self) -> None:
        """Abandon the run (the caller failed): the threads finish their file and stop."""
        with self._cond:
            self._cancelled = True
            self._sorted = []
            self._front = self._end = 0
            self._closed = True
            self._cond.notify_all()
        for t in self._threads:
            t.join()
        self._unswitch()
        self._close_waiting()

    def _unswitch(self) -> None:
        """The threads are done (or abandoned): give the switch interval back."""
        if self._switched:
            self._switched = False
            _switching.leave()

    def _close_waiting(self) -> None:
        """Close the descriptors of large files left half-hashed (the run was
        cancelled, or a thread died): nobody will continue them."""
        with self._cond:
            for _, _, item in self._ready:
                if isinstance(item, _Job):
                    item.close()
            self._ready.clear()
            self._suspended = 0

    def _start(self, n: int) -> None:
        """Start up to ``n`` threads. A thread the system refuses (a memory limit:
        each reserves a stack) is not waited for: the run goes on with those that
        started, and with none it is ``ThreadsUnavailable``, the real cause in
        words (``cancel`` joining a thread never started used to mask it)."""
        self._done = [0] * n
        if not self._switched:  # before the threads start: their first buffer counts too
            self._switched = True
            _switching.enter()
        with _small_stacks():
            for slot in range(n):
                t = threading.Thread(target=self._work, args=(slot,), name="pp1audit-hash", daemon=True)
                try:
                    t.start()
                except (RuntimeError, MemoryError) as exc:
                    if not self._threads:
                        self._unswitch()
                        raise ThreadsUnavailable(exc) from None
                    return
                self._threads.append(t)

    def _take(self, smallest: bool) -> Entry | _Job | None:
        """The next file for a thread: the one with the most bytes left, except that
        the ``smallest`` thread does the small files first, from the smallest up."""
        with self._cond:
            while True:
                if self._cancelled:
                    return None
                if smallest and self._closed and self._front < self._end:
                    self._end -= 1
                    return self._sorted[self._end]
                if self._ready:
                    item = heapq.heappop(self._ready)[2]
                    if isinstance(item, _Job):
                        self._suspended -= 1
                    return item
                if self._closed:
                    if self._front >= self._end:
                        return None
                    self._front += 1
                    return self._sorted[self._front - 1]
                self._cond.wait()

    def _work(self, slot: int) -> None:
        try:
            self._hash_all(slot)
        except BaseException as exc:  # handed to the caller by result()
            self._errors.append(exc)

    def _hash_all(self, slot: int) -> None:
        smallest = slot == 1
        with _Reader(self._wheel, self._algorithm, BUFFER) as reader:
            view = reader.view()
            while (e := self._take(smallest)) is not None:
                if isinstance(e, _Job):
                    self._advance(e, slot, view)
                    continue
                want = self._keep(e)
                if reader.resumable(e):
                    job = _Job.open(e, want, self._algorithm)
                    if isinstance(job, Digest):
                        self.out[e.path] = job
                        self._done[slot] += max(e.size, 1)
                        continue
                    if job.size >= RESUMABLE:
                        self._advance(job, slot, view)
                        continue
                    job.close()  # it shrank since the listing: hashed (and kept) as any file
                over = want and not self._reserve(e.size)
                d = reader.hash(e, want and not over)
                if over:
                    d = replace(d, unkept=f"{e.size:,} bytes, past the {self._keep_total:,} bytes "
                                          "kept for comparison in one run")
                self.out[e.path] = d
                self._done[slot] += max(e.size, 1)

    def _advance(self, job: _Job, slot: int, view: memoryview) -> None:
        """Hash ``job`` slice by slice until it is done, or until a file more than
        twice its size is waiting: then ``job`` waits in its place, by bytes left.

        Why: the listing finds files in directory order, so a thread may be on a
        40 MB file when a 300 MB one turns up. Without this, the 300 MB file
        starts late and one thread finishes it alone at the end (measured on vLLM:
        one thread idle for the last 150 ms of 600). Twice the size, not the
        bytes left, so that files of like size never take turns; and a file set
        aside holds a descriptor, so at most ``SUSPENDED_MAX`` are."""
        listed = max(job.entry.size, 1)  # what progress counts for it, whatever it reads
        try:
            while True:
                before = job.total
                digest = job.step(view)
                self._done[slot] += min(job.total, listed) - min(before, listed)
                if digest is not None:
                    self.out[job.entry.path] = digest
                    self._done[slot] += listed - min(job.total, listed)
                    return
                if self._cancelled:
                    job.close()
                    return
                if job.remaining > SLICE:
                    with self._cond:  # once a slice: 50 times for vLLM's 794 MB
                        if (self._ready and -self._ready[0][0] > 2 * job.size
                                and self._suspended < SUSPENDED_MAX):
                            self._order += 1
                            heapq.heappush(self._ready, (-job.remaining, self._order, job))
                            self._suspended += 1
                            return
        except BaseException:
            job.close()  # the thread dies: its file must not stay open
            raise

    def _reserve(self, size: int) -> bool:
        """Count a kept file against ``keep_total``; False when it would not fit (one
        over ``KEEP_FILE`` is refused by the reader itself and costs nothing here)."""
        if size > KEEP_FILE:
            return True
        with self._kept_lock:
            if self._kept + size > self._keep_total:
                return False
            self._kept += size
            return True

    def result(self) -> dict[str, Digest]:
        """Close the listing, wait for every thread (reporting progress meanwhile), return the digests."""
        self.close()
        try:
            for t in self._threads:
                while True:
                    t.join(0.1)
                    if self._progress is not None:
                        self._progress.update(sum(self._done))
                    if not t.is_alive():
                        break
        finally:
            self._unswitch()
            if self._progress is not None:
                self._progress.stop()
        self._close_waiting()
        if self._errors:
            raise self._errors[0]
        return self.out
