"""``safeio.realpath``: a symbolic link swapped while a path is resolved is resolved
again, never an uncaught ``OSError`` (the standard ``os.path.realpath`` ``lstat``s a
component, then ``readlink``s it: a link exchanged for a directory in between raises
EINVAL, which ended ``check --record`` in an internal error).

The swap is real: a thread exchanges a directory and a symlink with ``renameat2``
(``RENAME_EXCHANGE``) as fast as it can, as a hostile writer in the tree would."""

from __future__ import annotations

import ctypes
import errno
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pp1audit.errors import TargetError
from pp1audit.sources import safeio

RENAME_EXCHANGE = 2
AT_FDCWD = -100


def _exchanger() -> ctypes._CFuncPtr | None:  # type: ignore[name-defined]
    libc = ctypes.CDLL(None, use_errno=True)
    fn = getattr(libc, "renameat2", None)
    if fn is None:
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    return fn


@pytest.fixture
def swapping(tmp_path: Path) -> Iterator[tuple[Path, Path, Path]]:
    """``tree/sub`` (a directory holding ``f``) and ``tree/link`` (a symlink to
    ``host``, which holds ``f`` too) exchanged in a loop: ``tree/sub/f`` is one or the
    other, and its ``sub`` changes kind between any two looks."""
    tree, host = tmp_path / "tree", tmp_path / "host"
    (tree / "sub").mkdir(parents=True)
    host.mkdir()
    (tree / "sub" / "f").write_text("inside\n")
    (host / "f").write_text("host\n")
    (tree / "link").symlink_to(host)
    fn = _exchanger()
    a, b = os.fsencode(tree / "sub"), os.fsencode(tree / "link")
    if fn is None or fn(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) != 0:
        pytest.skip(f"renameat2(RENAME_EXCHANGE) not available here "
                    f"({errno.errorcode.get(ctypes.get_errno(), '?')})")
    stop = threading.Event()

    def flip() -> None:
        while not stop.is_set():
            fn(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE)  # releases the GIL

    thread = threading.Thread(target=flip, daemon=True)
    thread.start()
    try:
        yield tree / "sub" / "f", tree.resolve() / "sub" / "f", host.resolve() / "f"
    finally:
        stop.set()
        thread.join()


def test_the_standard_realpath_does_raise_under_the_swap(
        swapping: tuple[Path, Path, Path]) -> None:
    """What the wrapper is for, seen for real: within seconds the standard call raises."""
    path, _, _ = swapping
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.path.realpath(path)
        except OSError as exc:
            assert exc.errno == errno.EINVAL
            return
    pytest.fail("os.path.realpath never raised in 30 s of swaps")


def test_realpath_under_the_swap_answers_one_of_the_two_places(
        swapping: tuple[Path, Path, Path]) -> None:
    """Each call answers where the path led at some moment, or, when the swap won every
    try (a swapper in the same process, on a loaded machine, can), a ``TargetError``:
    never the ``OSError`` the standard call raises."""
    path, inside, host = swapping
    seen: set[str] = set()
    gave_up = 0
    for _ in range(20_000):
        try:
            seen.add(safeio.realpath(path))
        except TargetError:
            gave_up += 1
    assert seen == {str(inside), str(host)}, seen  # both were seen: the swap really ran
    assert gave_up < 20_000


def test_a_path_that_changes_at_every_try_is_a_target_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No machine loses 16 races in a row on demand: ``RESOLVE_TRIES`` lowered to 0,
    the error is what any number of lost races ends in (one line, exit 2)."""
    monkeypatch.setattr(safeio, "RESOLVE_TRIES", 0)
    with pytest.raises(TargetError, match=r"changed while it was resolved, 0 times"):
        safeio.realpath(tmp_path)


def test_realpath_is_the_standard_one_when_nothing_moves(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "l").symlink_to("d")
    (tmp_path / "loop").symlink_to("loop")
    for p in ("l", "l/x", "d/../l", "loop", "missing/x"):
        assert safeio.realpath(tmp_path / p) == os.path.realpath(tmp_path / p)
