"""SHA-256 of many files or wheel members, on a thread pool.

``hashlib`` releases the GIL while it hashes (zlib while it inflates), so a
``ThreadPoolExecutor`` with a thread per core hashes in parallel, with no process
to start and no bytes to copy. A file is opened only when the inventory listed a
regular file, with ``safeio.open_regular`` bound to the file listed
(``Entry.ident``, ``Entry.root``): a FIFO, or a directory swapped for a symlink
since the listing, cannot hang or redirect the run. Reading stops one byte past
the size ``fstat`` gave: a file a writer keeps growing is hashed as read (its size
says it changed), never read for ever. Sources and bytecode are kept in memory
(the bytes hashed are the bytes compiled), within ``KEEP_FILE`` and ``KEEP_TOTAL``.
"""

from __future__ import annotations

import hashlib
import heapq
import itertools
import os
import threading
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from typing import Protocol

from pp1audit.errors import Pp1Error
from pp1audit.sources import elsewhere
from pp1audit.sources.inventory import Entry, kind_of_mode, what_it_is
from pp1audit.sources.safeio import Elsewhere, NotRegular, open_regular
from pp1audit.sources.wheel import Zip, ZipError

SMALL = 256 << 10
"""Files below this are read whole in one call and wait for the end of the listing;
larger ones go to ``file_digest``, and start as soon as the listing finds them."""
KEEP_FILE = 16 << 20
"""Largest file whose bytes are kept (vLLM's largest source is 0.3 MB)."""
KEEP_TOTAL = 1 << 30
"""Most bytes one ``HashRun`` keeps (an installed vLLM keeps ~90 MB)."""
BUFFER = 1 << 20
"""Read size of a large file. ``file_digest``'s own 256 KiB measured 30 ms slower on
vLLM: each buffer is a GIL hand-over, which slowed the listing running meanwhile 2x."""
BATCH = 64
"""Small files per task: a task per file would cost more than hashing it."""
THREAD_STACK = 1 << 20
"""Stack per hashing thread: their calls are shallow (the work is in C), and the
default (8 MiB) is address space a memory limit (``ulimit -v``) counts per thread."""


class Progress(Protocol):
    """What the hashing (and compiling) loops report; the CLI draws it, the core never prints."""

    def start(self, description: str, total: int) -> None:
        """A phase begins: ``total`` units (bytes or files) to do."""

    def update(self, done: int) -> None:
        """``done`` units finished so far."""

    def stop(self) -> None:
        """The phase is over (remove any display)."""


@dataclass(frozen=True, slots=True)
class Digest:
    """The outcome of hashing one entry."""

    sha256: bytes | None
    """Raw digest (SHA-256 unless asked otherwise), or None when the entry could not be read."""
    size: int
    data: bytes | None = None
    """The whole content, when the caller asked to keep it."""
    error: str | None = None
    unkept: str | None = None
    """Why the content was not kept although asked (too large): hashed, not kept."""


class ThreadsUnavailable(Pp1Error):
    """Not one hashing thread could start (``ulimit -v``): nothing can be judged, exit 2."""

    def __init__(self, cause: BaseException) -> None:
        why = str(cause) or ("out of memory" if isinstance(cause, MemoryError) else type(cause).__name__)
        super().__init__(f"cannot start hashing threads: {why} (a memory limit, ulimit -v?)")


class _Cancelled(Exception):
    """The run was cancelled while a file was being read."""


def too_large(size: int) -> str:
    """Why a file asked to be kept was not: the phrase checks report."""
    return f"{size:,} bytes, over the {KEEP_FILE >> 20} MiB per file kept for comparison"


def growing(size: int) -> str:
    """Why a file that grew while it was read is not kept: a prefix of no version of it."""
    return f"growing while read (past the {size:,} bytes it had when opened)"


def default_workers() -> int:
    """One thread per usable core: hashing is CPU-bound once the files are cached."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - non-Linux
        return max(1, os.cpu_count() or 1)


class _Upto:
    """A descriptor as ``hashlib.file_digest`` reads it (until a read returns nothing):
    at most ``left`` bytes, and ``_Cancelled`` once ``stop`` is set."""

    def __init__(self, fd: int, left: int, stop: threading.Event | None) -> None:
        self.fd, self.left, self.stop, self.total = fd, left, stop, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buf: bytearray) -> int:
        if self.stop is not None and self.stop.is_set():
            raise _Cancelled
        n = os.readv(self.fd, (memoryview(buf)[: self.left],)) if self.left else 0
        self.left -= n
        self.total += n
        return n


def _read_whole(fd: int, size: int) -> bytes:
    """The file's bytes, at most ``size`` + 1: one ``read`` when it did not change."""
    parts: list[bytes] = []
    got = 0
    while got <= size and (chunk := os.read(fd, size + 1 - got)):
        parts.append(chunk)
        got += len(chunk)
        if got == size:  # short of the one byte more: the end
            break
    return parts[0] if len(parts) == 1 else b"".join(parts)


def hash_path(real: str, keep: bool, algorithm: str = "sha256", *, same: tuple[int, int] | None = None,
              root: str | None = None, stop: threading.Event | None = None) -> Digest:
    """Digest of one regular file on disk; ``keep`` keeps its bytes (up to ``KEEP_FILE``).
    ``same`` and ``root`` bind the open to the file listed (``safeio.check_place``)."""
    try:
        fd, st = open_regular(real, same=same, within=root)
    except NotRegular as exc:
        return Digest(None, 0, error=f"is a {kind_of_mode(exc.mode)}; not opened")
    except Elsewhere as exc:
        return Digest(None, 0, error=elsewhere(exc.where))
    except OSError as exc:
        return Digest(None, 0, error=f"cannot open: {exc.strerror}")
    size = st.st_size
    try:
        if size < SMALL or (keep and size <= KEEP_FILE):
            data = _read_whole(fd, size)
            digest = hashlib.new(algorithm, data).digest()
            if keep and len(data) > size:
                return Digest(digest, len(data), unkept=growing(size))
            return Digest(digest, len(data), data if keep else None)
        reader = _Upto(fd, size + 1, stop)
        digest = hashlib.file_digest(reader, algorithm, _bufsize=BUFFER).digest()
        return Digest(digest, reader.total, unkept=too_large(reader.total) if keep else None)
    except OSError as exc:
        return Digest(None, 0, error=f"cannot read: {exc.strerror}")
    finally:
        os.close(fd)


def hash_member(wheel: Zip, name: str, keep: bool, algorithm: str = "sha256",
                stop: threading.Event | None = None) -> Digest:
    """Digest of one wheel member, CRC-checked (``Zip``); a corrupt member is this
    file's error. Kept only up to ``KEEP_FILE``: a larger one is streamed, not held."""
    info = wheel.info(name)
    if info is None:
        return Digest(None, 0, error="cannot read from the wheel: no such member")
    h, total = hashlib.new(algorithm), 0
    try:
        if keep and info.file_size <= KEEP_FILE:
            data = wheel.read(info, KEEP_FILE)
            return Digest(hashlib.new(algorithm, data).digest(), len(data), data)
        for chunk in wheel.stream(info):
            if stop is not None and stop.is_set():
                raise _Cancelled
            h.update(chunk)
            total += len(chunk)
    except ZipError as exc:
        return Digest(None, total, error=f"cannot read from the wheel: {exc}")
    return Digest(h.digest(), total, unkept=too_large(total) if keep else None)


def _hash(e: Entry, keep: bool, wheel: Zip | None, algorithm: str,
          stop: threading.Event | None = None) -> Digest:
    """One listed entry's digest; an exception (``MemoryError``, a bug, an algorithm
    OpenSSL refuses) is that file's error: one bad file must not end the run."""
    if e.kind != "file":
        return Digest(None, 0, error=e.error or f"{what_it_is(e)}; not opened")
    try:
        if wheel is not None:
            return hash_member(wheel, e.ref, keep, algorithm, stop)
        return hash_path(e.ref, keep, algorithm, same=e.ident, root=e.root, stop=stop)
    except _Cancelled:
        raise
    except Exception as exc:
        return Digest(None, 0, error=f"cannot be hashed: {type(exc).__name__}: {exc}")


def hash_here(entries: Sequence[Entry], *, wheel: Zip | None = None,
              keep: Callable[[Entry], bool] = lambda e: False,
              algorithm: str = "sha256") -> dict[str, Digest]:
    """As ``hash_entries``, in the calling thread: for a few files (a RECORD, the
    dist-info files), where starting threads would cost more than hashing them."""
    return {e.path: _hash(e, e.kind == "file" and keep(e), wheel, algorithm) for e in entries}


def hash_entries(entries: Sequence[Entry], *, wheel: Zip | None = None,
                 keep: Callable[[Entry], bool] = lambda e: False, workers: int | None = None,
                 progress: Progress | None = None, algorithm: str = "sha256") -> dict[str, Digest]:
    """Digest of every entry (regular files only; others get an ``error``), by logical path:
    ``entry.ref`` is the OS path, or the member name of ``wheel``. SHA-256 unless
    ``algorithm`` names another ``hashlib`` one (RECORD rows may use any)."""
    if progress is None and len(entries) <= 4 and sum(e.size for e in entries) < SMALL:
        return hash_here(entries, wheel=wheel, keep=keep, algorithm=algorithm)
    run = HashRun(wheel=wheel, keep=keep, workers=workers, progress=progress, algorithm=algorithm)
    for e in sorted(entries, key=lambda e: e.size, reverse=True):  # no thread left with a large one
        run.add(e)
    return run.result()


class HashRun:
    """Hashing threads fed while the tree is still being listed: ``add`` each entry as
    the inventory finds it, then ``result()`` (or ``cancel()``).

    Listing 5,000 files takes about as long as hashing 50 MB, so the large files
    (most of the bytes) start the moment they are found, the largest waiting first
    (vLLM's 300 MB one, found late in the listing, must not start last). Small
    files wait for ``close`` (the end of the listing: ``keep`` may depend on all of
    it); their cost is Python work under the GIL more than hashing, so the calling
    thread takes them in ``result`` while the threads hash the large ones, which
    releases it, and the threads join in when done (measured on vLLM: 50 ms sooner
    than the threads alone).
    """

    def __init__(self, *, wheel: Zip | None = None, keep: Callable[[Entry], bool] = lambda e: False,
                 workers: int | None = None, progress: Progress | None = None,
                 algorithm: str = "sha256", keep_total: int = KEEP_TOTAL) -> None:
        self.out: dict[str, Digest] = {}
        self._wheel, self._keep, self._algorithm = wheel, keep, algorithm
        self._workers = max(1, workers or default_workers())
        self._progress = progress
        self._pool: ThreadPoolExecutor | None = None
        self._futures: list[Future[None]] = []
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._held: list[Entry] = []
        self._ready: list[tuple[int, int, Entry]] = []  # large files waiting: (-size, order, entry)
        self._order = itertools.count()
        self._small: deque[list[Entry]] = deque()  # batches of small files, once listed
        self._kept, self._keep_total = 0, keep_total
        self._total = self._done = 0
        self._closed = False

    def add(self, e: Entry) -> None:
        """One entry of the listing: a large regular file starts hashing at once."""
        if e.kind != "file":
            self.out[e.path] = _hash(e, False, None, self._algorithm)
            return
        self._total += max(e.size, 1)
        if e.size < SMALL:
            self._held.append(e)
            return
        with self._lock:
            heapq.heappush(self._ready, (-e.size, next(self._order), e))
        self._submit(self._largest)

    def close(self) -> None:
        """The listing is complete: the small files are handed out, in batches."""
        if self._closed:
            return
        self._closed = True
        if self._progress is not None:
            self._progress.start("hashing", self._total)
        held = self._held
        self._small.extend(held[i : i + BATCH] for i in range(0, len(held), BATCH))
        for _ in range(min(self._workers, len(self._small))):
            self._submit(self._drain)

    def _submit(self, task: Callable[..., None], *args: object) -> None:
        """Queue ``task``. A thread the system refuses to start (a memory limit) is done
        without: the task is queued all the same, for the threads that did start."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self._workers, thread_name_prefix="pp1audit-hash")
        old = threading.stack_size(THREAD_STACK)  # for a thread ``submit`` starts
        try:
            self._futures.append(self._pool.submit(task, *args))
        except (RuntimeError, MemoryError) as exc:
            if not self._pool._threads:
                self.cancel()
                raise ThreadsUnavailable(exc) from None
        finally:
            threading.stack_size(old)

    def _largest(self) -> None:
        with self._lock:
            e = heapq.heappop(self._ready)[2]
        self._one(e)

    def _drain(self, progress: Progress | None = None) -> None:
        """Hash batches of small files until none is left (``popleft`` hands each out once)."""
        while True:
            try:
                batch = self._small.popleft()
            except IndexError:
                return
            for e in batch:
                self._one(e)
            if progress is not None:
                progress.update(self._done)

    def _one(self, e: Entry) -> None:
        """Hash ``e``, keeping its bytes when asked and ``keep_total`` allows."""
        if self._stop.is_set():
            raise _Cancelled
        want = self._keep(e)
        with self._lock:
            over = want and e.size <= KEEP_FILE and self._kept + e.size > self._keep_total
            self._kept += e.size if want and not over and e.size <= KEEP_FILE else 0
        d = _hash(e, want and not over, self._wheel, self._algorithm, self._stop)
        if over:
            d = replace(d, unkept=f"{e.size:,} bytes, past the {self._keep_total:,} bytes "
                                  "kept for comparison in one run")
        self.out[e.path] = d
        with self._lock:
            self._done += max(e.size, 1)

    def cancel(self) -> None:
        """Abandon the run (the caller failed): waiting files are dropped, the threads
        stop at their next block, and are joined."""
        self._stop.set()
        self._closed = True
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)

    def result(self) -> dict[str, Digest]:
        """Close the listing, wait for every file (reporting progress), return the digests;
        an exception in a thread (``keep`` failing) is raised here."""
        self.close()
        try:
            self._drain(self._progress)  # the small files, with the threads
            pending = set(self._futures)
            while pending:
                pending = wait(pending, timeout=0.1).not_done
                if self._progress is not None:
                    self._progress.update(self._done)
            for f in self._futures:
                f.result()
            if self._pool is not None:
                self._pool.shutdown()
        except BaseException:
            self.cancel()
            raise
        finally:
            if self._progress is not None:
                self._progress.stop()
        return self.out
