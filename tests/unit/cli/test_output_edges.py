"""Stdout that takes fewer bytes than written: the run fails with one line, never exits 0 cut short.

A file that reaches the size limit (``RLIMIT_FSIZE``) or a disk that fills up takes
part of a write and fails the next one. CPython's unbuffered text stream
(``PYTHONUNBUFFERED``) dropped the rest of such a short write and reported success,
so a truncated JSON document or report went out with exit 0 and nothing on stderr.
Every byte now goes out through ``atomic.write_all`` (a loop that completes or
raises), and a failure is the README's "one line, exit 2". Normal output is the
same bytes as before: encoded as the stream would (its encoding, its errors, a
byte-order mark where CPython writes one).
"""

from __future__ import annotations

import errno
import fcntl
import os
import resource
import signal
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import run_cli

from pp1audit import atomic
from pp1audit.text.safe import CODE_POINTS

TOO_LARGE = "pp1audit: error: cannot write to stdout: File too large"


@pytest.fixture
def audited(tmp_path: Path, make_files: Callable[..., Path]) -> tuple[Path, Path]:
    """A small tree with non-ASCII code, and the manifest ``init`` measured from it."""
    tree = make_files({
        "pkg/__init__.py": "",
        "pkg/_version.py": '__version__ = "1.0"\n',
        "pkg/a.py": 'def f():\n    return "é — →"\n\nx = 2\n',
    })
    manifest = tmp_path / "m.yaml"
    made = run_cli("init", str(tree), "-p", "pkg", "--cite", "c=pkg/a.py:1-2", "-o", str(manifest))
    assert made.returncode == 0, made.stderr
    with open(manifest, "a", encoding="utf-8") as fh:  # prose, so that a report has a body
        fh.write("report:\n  sections:\n    - heading: Notes\n      blocks:\n        - text: "
                 "The function f returns a string é — →; nothing else in pkg changes it, "
                 "as the checks below measure.\n")
    return tree, manifest


def commands(tree: Path, manifest: Path) -> dict[str, list[str]]:
    """Every command that writes a result to stdout, with arguments that succeed."""
    t, m = str(tree), str(manifest)
    return {
        "check-text": ["check", t, "-m", m, "-v"],
        "check-json": ["check", t, "-m", m, "--format", "json"],
        "report": ["report", "-m", m],
        "report-target": ["report", t, "-m", m],
        "pin": ["pin", t, "-m", m],
        "pin-json": ["pin", t, "-m", m, "--format", "json"],
        "diff": ["diff", t, t, "-m", m, "-v"],
        "show": ["show", t, "c", "-m", m],
        "init": ["init", t, "-p", "pkg", "--cite", "pkg/a.py:1-2", "--audit-id", "a"],
        "schema": ["schema"],
        "help": ["check", "--help"],
    }


def environment(unbuffered: bool, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONUNBUFFERED", "PYTHONIOENCODING")}
    env["NO_COLOR"] = "1"
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"
    return {**env, **extra}


def run_to_file(out: Path, args: list[str], env: dict[str, str], fsize: int | None = None,
                ) -> subprocess.CompletedProcess[str]:
    """``python -m pp1audit ARGS > out``, with the file size limit ``fsize`` when given."""

    def limit() -> None:
        if fsize is not None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG)
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

    with open(out, "wb") as fh:
        return subprocess.run([sys.executable, "-m", "pp1audit", *args], stdout=fh,
                              stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                              env=env, timeout=120, preexec_fn=limit)


NAMES = list(commands(Path("t"), Path("m")))


@pytest.mark.parametrize("unbuffered", [True, False], ids=["unbuffered", "buffered"])
@pytest.mark.parametrize("name", NAMES)
def test_a_file_size_limit_on_stdout_is_one_line_and_exit_2(
        name: str, unbuffered: bool, audited: tuple[Path, Path], tmp_path: Path) -> None:
    args = commands(*audited)[name]
    env = environment(unbuffered)
    whole = run_to_file(tmp_path / "whole.out", args, env)
    assert whole.returncode == 0, whole.stderr
    document = (tmp_path / "whole.out").read_bytes()
    assert len(document) > 40, document
    limit = len(document) // 2  # the first write is short, the next one fails
    cut = run_to_file(tmp_path / "cut.out", args, env, fsize=limit)
    assert cut.returncode == 2, cut.stderr
    assert (tmp_path / "cut.out").read_bytes() == document[:limit]
    said = cut.stderr.splitlines()
    assert said[-1] == TOO_LARGE, cut.stderr
    assert said[:-1] == whole.stderr.splitlines()[:len(said) - 1]  # only notes said before
    assert "internal error" not in cut.stderr and "Traceback" not in cut.stderr


@pytest.mark.parametrize("unbuffered", [True, False], ids=["unbuffered", "buffered"])
def test_the_json_error_object_cut_short_still_exits_2(
        unbuffered: bool, audited: tuple[Path, Path], tmp_path: Path) -> None:
    """A JSON run that exits 2 prints an error object; a stdout that takes part of it
    leaves the exit code and the one line of the run's own error as they were."""
    missing = tmp_path / "missing.yaml"
    args = ["check", str(audited[0]), "-m", str(missing), "--format", "json"]
    env = environment(unbuffered)
    whole = run_to_file(tmp_path / "whole.out", args, env)
    assert whole.returncode == 2
    document = (tmp_path / "whole.out").read_bytes()
    assert b'"pp1audit.error/1"' in document
    cut = run_to_file(tmp_path / "cut.out", args, env, fsize=len(document) // 2)
    assert cut.returncode == 2
    assert cut.stderr == whole.stderr and str(missing) in cut.stderr
    assert len(cut.stderr.splitlines()) == 1


@pytest.mark.parametrize("unbuffered", [True, False], ids=["unbuffered", "buffered"])
def test_stdout_is_the_bytes_o_file_gets(
        unbuffered: bool, audited: tuple[Path, Path], tmp_path: Path) -> None:
    """Normal output is unchanged: stdout in UTF-8 is what ``-o FILE`` writes, byte for byte."""
    tree, manifest = audited
    env = environment(unbuffered)
    for name in ("check-text", "check-json", "report", "init"):
        args = commands(tree, manifest)[name]
        saved = tmp_path / f"{name}.saved"
        assert run_cli(*args, "-o", str(saved)).returncode == 0
        run = run_to_file(tmp_path / "out", args, env)
        assert run.returncode == 0, run.stderr
        assert (tmp_path / "out").read_bytes() == saved.read_bytes(), name
    assert "é — →".encode() in (tmp_path / "init.saved").read_bytes()


@pytest.mark.parametrize(("encoding", "expected"), [
    ("ascii", lambda text: text.encode("ascii", CODE_POINTS)),
    ("latin-1", lambda text: text.encode("latin-1", CODE_POINTS)),
    ("utf-16", lambda text: text.encode("utf-16")),  # one BOM, at the start of the file
    ("utf-8-sig", lambda text: text.encode("utf-8-sig")),
])
def test_stdout_is_encoded_as_the_stream_would(
        encoding: str, expected: Callable[[str], bytes], audited: tuple[Path, Path],
        tmp_path: Path) -> None:
    """``PYTHONIOENCODING``: output for people (``show``) in its encoding, the
    ``CODE_POINTS`` handler ``main`` sets (``é`` as ``\\u00e9`` under ASCII), and a
    byte-order mark once (click probes the stream with ``b""``: a bytes write is
    refused, as a text stream refuses it,
    before it could use up the mark). A document (``init``'s manifest) is UTF-8
    whatever the stream says: pp1audit reads manifests as UTF-8 only, and under
    ASCII its anchors would read ``\\xe9`` where the file has ``é``."""
    tree, manifest = audited
    show = commands(tree, manifest)["show"]
    plain = run_to_file(tmp_path / "plain", show, environment(True, PYTHONIOENCODING="utf-8"))
    assert plain.returncode == 0, plain.stderr
    text = (tmp_path / "plain").read_text(encoding="utf-8")
    assert "é — →" in text
    saved = tmp_path / "init.yaml"
    init = commands(tree, manifest)["init"]
    assert run_cli(*init, "-o", str(saved)).returncode == 0
    for unbuffered in (True, False):
        env = environment(unbuffered, PYTHONIOENCODING=encoding)
        run = run_to_file(tmp_path / "out", show, env)
        assert run.returncode == 0, run.stderr
        assert (tmp_path / "out").read_bytes() == expected(text)
        run = run_to_file(tmp_path / "out", init, env)
        assert run.returncode == 0, run.stderr
        assert (tmp_path / "out").read_bytes() == saved.read_bytes()
    version = run_to_file(tmp_path / "v", ["--version"], environment(True, PYTHONIOENCODING=encoding))
    assert version.returncode == 0
    assert (tmp_path / "v").read_bytes().startswith(expected("pp1audit"))


def test_a_utf16_stdout_appended_to_a_file_gets_no_second_bom(
        audited: tuple[Path, Path], tmp_path: Path) -> None:
    """``>> log``: CPython writes no byte-order mark past the start of a file; nor do we."""
    out = tmp_path / "log"
    out.write_bytes("old\n".encode("utf-16"))
    with open(out, "ab") as fh:
        run = subprocess.run([sys.executable, "-m", "pp1audit", "--version"], stdout=fh,
                             stderr=subprocess.PIPE, text=True, timeout=120,
                             env=environment(True, PYTHONIOENCODING="utf-16"))
    assert run.returncode == 0
    data = out.read_bytes()
    assert data.count(b"\xff\xfe") == 1 and data.decode("utf-16").startswith("old\npp1audit")


def pipe_capacity(fd: int) -> int:
    return fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ)


def queued(fd: int) -> int:
    """Bytes waiting in the pipe ``fd`` reads from."""
    buf = fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0")
    return int.from_bytes(buf, sys.byteorder)


def test_a_nonblocking_stdout_pipe_gets_the_whole_document(
        tmp_path: Path, make_files: Callable[..., Path]) -> None:
    """A parent that hands over a non-blocking pipe (O_NONBLOCK is the pipe's, not
    the process's): once the pipe is full, a write fails with EAGAIN. It was a cut
    document and exit 0 (unbuffered) or exit 2 (buffered); it waits now. The reader
    starts only once the pipe is full, so the wait is certain, not a race."""
    body = "".join(f"x_{i} = {i}  # {'y' * 60}\n" for i in range(5_000))
    tree = make_files({"pkg/__init__.py": "", "pkg/big.py": body})
    args = ["show", str(tree), "pkg/big.py:1-5000", "-p", "pkg", "-C", "0"]
    whole = run_to_file(tmp_path / "whole.out", args, environment(True))
    assert whole.returncode == 0, whole.stderr
    document = (tmp_path / "whole.out").read_bytes()
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    assert len(document) > 2 * pipe_capacity(read_end)
    try:
        proc = subprocess.Popen([sys.executable, "-m", "pp1audit", *args], stdout=write_end,
                                stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                env=environment(True))
        os.close(write_end)
        while proc.poll() is None and queued(read_end) < pipe_capacity(read_end):
            time.sleep(0.01)  # until the pipe is full (or the writer gave up)
        got = bytearray()
        while chunk := os.read(read_end, 1 << 16):
            got += chunk
        assert proc.stderr is not None
        err = proc.stderr.read().decode()
        assert proc.wait(timeout=120) == 0, err
    finally:
        os.close(read_end)
    assert err == ""
    assert bytes(got) == document


def test_write_all_goes_on_after_short_writes(monkeypatch: pytest.MonkeyPatch,
                                              tmp_path: Path) -> None:
    """Each ``write`` takes at most 3 bytes: all of them still arrive, in 3-byte calls."""
    real_write = os.write
    calls: list[int] = []

    def short(fd: int, data: bytes | memoryview) -> int:
        calls.append(len(data))
        return real_write(fd, bytes(data[:3]))

    monkeypatch.setattr("pp1audit.atomic.os.write", short)
    blob = bytes(range(256)) * 4
    with open(tmp_path / "f", "wb") as fh:
        atomic.write_all(fh.fileno(), blob)
    assert (tmp_path / "f").read_bytes() == blob
    assert len(calls) == -(-len(blob) // 3)


def test_write_all_that_makes_no_progress_raises(monkeypatch: pytest.MonkeyPatch,
                                                 tmp_path: Path) -> None:
    """A ``write`` that takes nothing is an error, not an endless loop (counted: one call)."""
    calls: list[int] = []

    def nothing(fd: int, data: bytes | memoryview) -> int:
        calls.append(len(data))
        return 0

    monkeypatch.setattr("pp1audit.atomic.os.write", nothing)
    with open(tmp_path / "f", "wb") as fh, pytest.raises(OSError) as caught:
        atomic.write_all(fh.fileno(), b"abc")
    assert caught.value.errno == errno.EIO
    assert calls == [3]


def test_write_all_waits_on_a_full_nonblocking_pipe(monkeypatch: pytest.MonkeyPatch) -> None:
    """EAGAIN is "not now", not an error: the reader starts only after the writer met
    it (an event set by the first EAGAIN), and every byte arrives."""
    real_write = os.write
    blocked = threading.Event()

    def noting(fd: int, data: bytes | memoryview) -> int:
        try:
            return real_write(fd, data)
        except BlockingIOError:
            blocked.set()
            raise

    monkeypatch.setattr("pp1audit.atomic.os.write", noting)
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    blob = os.urandom(4 * pipe_capacity(read_end))
    got = bytearray()

    def drain() -> None:
        blocked.wait()
        while chunk := os.read(read_end, 1 << 16):
            got.extend(chunk)

    reader = threading.Thread(target=drain)
    reader.start()
    try:
        atomic.write_all(write_end, blob)
    finally:
        blocked.set()
        os.close(write_end)
        reader.join()
        os.close(read_end)
    assert bytes(got) == blob
