"""Compare pycs with their sources in worker processes, surviving any one of them crashing.

Always in workers, even for one pair: ``marshal.loads`` is not safe against
hostile data (its docs say so), so a crafted pyc may crash the process that
reads it; that must be a worker, whose death becomes that pair's ``error``,
never the end of the auditor. One worker per core: compiling ~2,800 vLLM
modules costs ~7 s of CPU. Workers also ignore the signals the CLI unwinds on
and die with their parent, so Ctrl-C, ``timeout`` or a closed terminal never
leave one behind or print a pool's traceback.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Iterator

from pp1audit.checks.pyccompare import compare
from pp1audit.sources.hashing import Progress, default_workers

_TASKS: list[tuple[bytes, bytes, int]] = []
"""Set before forking workers: children read the bytes from inherited memory, not a pipe."""


UNWINDING = ("SIGTERM", "SIGHUP", "SIGINT")
"""Signals a caller may handle by unwinding the run (the CLI: TERM and HUP raise,
Ctrl-C is ``KeyboardInterrupt``); see ``_worker_init`` for what workers do with them."""

PR_SET_PDEATHSIG = 1
"""prctl(2): the signal a process gets when the thread that forked it ends (Linux)."""


def _handled_here() -> tuple[int, ...]:
    """The ``UNWINDING`` signals this process handles in Python: the handler
    unwinds the run, and the pool's shutdown on the way ends the workers."""
    handled = (getattr(signal, name, None) for name in UNWINDING)
    return tuple(s for s in handled if s is not None and callable(signal.getsignal(s)))


def _worker_init(ignored: tuple[int, ...], parent: int) -> None:
    """Start of a worker process: ignore the signals its parent unwinds on, and
    die with the parent.

    ``timeout``, a closed terminal or Ctrl-C signals the whole process group. A
    worker that died by it broke the pool while the parent, unwinding, cancelled
    its tasks, and the pool's manager thread then set a result on a cancelled
    task and printed a traceback (CPython gh-107219). Ignoring them, the worker
    finishes its chunk and leaves when the parent's shutdown tells it to. A
    signal the parent leaves at its default (a library caller) ends the worker
    as it ends the parent. What cannot unwind the parent (SIGKILL, a second
    signal during the shutdown) would leave the worker waiting for tasks for
    ever: on Linux the kernel kills it when the parent is gone (``PR_SET_PDEATHSIG``).
    """
    for signum in ignored:
        signal.signal(signum, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # the parent died before the line above
            os._exit(1)


@contextlib.contextmanager
def _signals_held(signums: tuple[int, ...]) -> Iterator[None]:
    """Hold ``signums`` while the pool forks its workers and queues the tasks,
    and deliver them after. A handler that raises there (the CLI's) unwinds from
    the middle of ``submit``: a worker forked but not yet registered, or a task
    registered but never queued, which no shutdown ends or one that waits for
    it for ever; raised in an at-fork hook, Python prints "Exception ignored"
    and the signal is lost. A forked worker runs the holding handler until
    ``_worker_init`` ignores the signal. Outside the main thread nothing is held:
    handlers run in the main thread only, never in the middle of this one."""
    caught: list[int] = []
    previous: dict[int, object] = {}
    try:
        for signum in signums:
            previous[signum] = signal.signal(signum, lambda s, frame: caught.append(s))
    except ValueError:  # not the main thread
        pass
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)  # type: ignore[arg-type]
        for signum in dict.fromkeys(caught):
            signal.raise_signal(signum)


def _compare_task(i: int) -> tuple[str, str] | None:
    return compare(*_TASKS[i])


def compare_all(tasks: list[tuple[bytes, bytes, int]], progress: Progress | None,
                workers: int | None) -> list[tuple[str, str] | None]:
    """``compare(source, pyc, optimize)`` for every task, in order, in worker processes."""
    n = min(workers or default_workers(), len(tasks))
    if progress is not None and tasks:
        progress.start("compiling", len(tasks))
    try:
        return _in_processes(tasks, n, progress) if tasks else []
    finally:
        if progress is not None and tasks:
            progress.stop()


DIED = ("error", "it could not be compared with its source: compiling it killed the worker "
        "process (a crash of the interpreter itself, e.g. on hostile bytecode)")
"""The verdict for a pair whose comparison made a worker process die."""


def _in_processes(tasks: list[tuple[bytes, bytes, int]], n: int,
                  progress: Progress | None) -> list[tuple[str, str] | None]:
    """``compare`` every task in ``n`` worker processes; a task that kills its
    worker outright (a C-level crash: no exception reaches Python) becomes
    that one pair's ``error``, never the end of the run.

    All tasks go out in chunks; when the pool breaks, the tasks without an
    answer go again one per submission in a fresh pool. Tasks leave in order
    and at most ``n + 1`` are handed out at a time, so when that pool breaks
    the culprit is among the first ``n + 1`` unanswered: each of those runs
    alone (the one that dies again is named), the rest go round again. Each
    crashing pair costs ``n + 2`` pools, not one per pair left.
    """
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    global _TASKS
    ctx = multiprocessing.get_context("fork")  # children read the tasks from inherited memory
    handled = _handled_here()

    @contextlib.contextmanager
    def pool_of(workers: int) -> Iterator[ProcessPoolExecutor]:
        """A pool whose tasks not yet started are cancelled when the run unwinds
        (a signal, Ctrl-C), whether or not ``map``'s iterator had started."""
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_worker_init,
                                   initargs=(handled, os.getpid()))
        try:
            yield pool
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def one_by_one(indices: list[int], workers: int) -> None:
        with pool_of(workers) as pool:
            with _signals_held(handled):
                futures = [(i, pool.submit(_compare_task, i)) for i in indices]
            for i, f in futures:
                with contextlib.suppress(BrokenProcessPool):  # unanswered: sorted out below
                    results[i] = f.result()

    results: list[tuple[str, str] | object | None] = [_PENDING] * len(tasks)
    _TASKS = tasks
    try:
        with pool_of(n) as pool:
            try:
                with _signals_held(handled):  # map queues every chunk before it returns
                    answers = pool.map(_compare_task, range(len(tasks)), chunksize=32)
                for i, r in enumerate(answers):
                    results[i] = r
                    if progress is not None and i % 32 == 0:
                        progress.update(i)
            except BrokenProcessPool:
                pass
        left = [i for i, r in enumerate(results) if r is _PENDING]
        while left:
            one_by_one(left, n)
            left = [i for i in left if results[i] is _PENDING]
            for i in left[:n + 1]:  # the culprit is among these: each alone
                one_by_one([i], 1)
                if results[i] is _PENDING:
                    results[i] = DIED
            left = left[n + 1:]
    finally:
        _TASKS = []
    return results  # type: ignore[return-value]  # no _PENDING is left


_PENDING = object()
