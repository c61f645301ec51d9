"""What the CLI says when its own output cannot be delivered, and what it says on stderr.

Results that cannot be written to stdout (a full disk) are one line and exit 2,
never an "internal error"; a reader that went away (``| head``) is silent and
the exit code is the run's own (the 0/1/2 contract, whoever reads the output);
``report`` says its verdict on stderr whether the gate is open or closed; a
report to ``--check`` that is no text is bad input, not a stale report; what
the tree says (its version) never reaches the terminal raw.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO

import pytest
from conftest import replace_file, run_cli

NO_SPACE = "pp1audit: error: cannot write to stdout: No space left on device\n"
PASS_LINE = "PASS (gate open): 3 pass, 0 drift, 0 stale, 0 fail, 0 skip, 0 error"

needs_dev_full = pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")


def run_into(stdout: int | IO[str], *args: str, env: dict[str, str] | None = None,
             ) -> subprocess.CompletedProcess[str]:
    """``python -m pp1audit`` with stdout on a file or pipe of the test's choosing."""
    return subprocess.run(
        [sys.executable, "-m", "pp1audit", *args], stdout=stdout, stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL, text=True, timeout=120,
        env=env if env is not None else {**os.environ, "NO_COLOR": "1"},
    )


def run_into_closed_pipe(*args: str) -> subprocess.CompletedProcess[str]:
    """Stdout a pipe whose reader is gone before the first byte is written."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return run_into(write_end, *args)
    finally:
        os.close(write_end)


@pytest.fixture
def audited(tmp_path: Path, make_files: Callable[..., Path]) -> tuple[Path, Path]:
    """A small tree and the manifest ``init`` measured from it (the gate is open)."""
    tree = make_files({
        "pkg/__init__.py": "",
        "pkg/_version.py": '__version__ = "1.0"\n',
        "pkg/a.py": "def f():\n    return 1\n\nx = 2\n",
    })
    manifest = tmp_path / "m.yaml"
    made = run_cli("init", str(tree), "-p", "pkg", "--cite", "c=pkg/a.py:1-2", "-o", str(manifest))
    assert made.returncode == 0, made.stderr
    return tree, manifest


def commands(tree: Path, manifest: Path) -> dict[str, list[str]]:
    """Every command that writes results to stdout, with arguments that succeed."""
    t, m = str(tree), str(manifest)
    return {
        "schema": ["schema"],
        "report": ["report", "-m", m],
        "report-target": ["report", t, "-m", m],
        "check-text": ["check", t, "-m", m],
        "check-json": ["check", t, "-m", m, "--format", "json"],
        "pin": ["pin", t, "-m", m],
        "init": ["init", t, "-p", "pkg", "--cite", "pkg/a.py:1-2"],
        "diff": ["diff", t, t, "-m", m],
        "show": ["show", t, "c", "-m", m],
        "version": ["--version"],
        "help": ["check", "--help"],
    }


COMMANDS = ["schema", "report", "report-target", "check-text", "check-json", "pin", "init",
            "diff", "show", "version", "help"]


@needs_dev_full
@pytest.mark.parametrize("name", COMMANDS)
def test_a_full_disk_on_stdout_is_one_line_not_a_bug(name: str, audited: tuple[Path, Path]) -> None:
    args = commands(*audited)[name]
    with open("/dev/full", "w") as full:
        proc = run_into(full, *args)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.endswith(NO_SPACE), proc.stderr
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr
    # report's verdict line is said once the document is written: not before an error
    # that overrules it (exit 2)
    assert proc.stderr.splitlines() == [NO_SPACE.strip()]


@needs_dev_full
@pytest.mark.parametrize("name", ["report", "report-target", "check-text", "check-json"])
def test_a_full_disk_on_an_output_file_is_one_line(name: str, audited: tuple[Path, Path]) -> None:
    args = commands(*audited)[name]
    proc = run_cli(*args, "-o", "/dev/full")
    assert proc.returncode == 2
    assert proc.stderr == "pp1audit: error: /dev/full: cannot write: No space left on device\n"


@pytest.mark.parametrize("name", COMMANDS)
def test_a_closed_pipe_is_silent_and_keeps_the_exit_code(name: str, audited: tuple[Path, Path]) -> None:
    args = commands(*audited)[name]
    with open(os.devnull, "w") as devnull:
        normal = run_into(devnull, *args)
    proc = run_into_closed_pipe(*args)
    assert proc.returncode == normal.returncode == 0, proc.stderr
    assert proc.stderr == normal.stderr  # the same notes (report's verdict, pin's hint), no error


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_a_closed_pipe_after_a_closed_gate_is_still_exit_1(fmt: str, audited: tuple[Path, Path]) -> None:
    """``pp1audit check … | head -1`` in a pipeline with ``pipefail``: the gate's
    verdict, not a code that reads as neither open nor closed."""
    tree, manifest = audited
    (tree / "pkg" / "a.py").write_text("def f():\n    return 2\n\nx = 2\n", encoding="utf-8")
    proc = run_into_closed_pipe("check", str(tree), "-m", str(manifest), "--format", fmt)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr == ""


def test_a_reader_that_stops_reading_midway_is_silent_and_keeps_the_exit_code(
        tmp_path: Path, make_files: Callable[..., Path]) -> None:
    """``pp1audit show … | head -c1``: 1.7 MB against a 64 KiB pipe, the reader gone
    after one byte. Run as a user runs it: PYTHONUNBUFFERED (set where these tests
    run) makes CPython drop a short write's tail unannounced (an unbuffered text
    stream ignores the count ``write`` returns), and nothing fails to be told."""
    body = "".join(f"x_{i} = {i}  # {'y' * 60}\n" for i in range(20_000))
    tree = make_files({"pkg/__init__.py": "", "pkg/big.py": body})
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "pp1audit", "show", str(tree), "pkg/big.py:1-20000", "-p", "pkg",
         "-C", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.read(1) == b"p"  # the title line: output had begun
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0, err  # the span was shown: show's own code
    assert err == ""


def test_report_says_an_open_verdict_on_stderr_as_a_closed_one(audited: tuple[Path, Path]) -> None:
    tree, manifest = audited
    proc = run_cli("report", str(tree), "-m", str(manifest))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == f"pp1audit: {tree}: {PASS_LINE}\n"
    assert proc.stdout  # the document itself is stdout's
    saved = tree.parent / "audit.md"
    saved.write_text(proc.stdout, encoding="utf-8")
    current = run_cli("report", str(tree), "-m", str(manifest), "--check", str(saved))
    assert (current.returncode, current.stdout) == (0, "")
    assert current.stderr == f"pp1audit: {tree}: {PASS_LINE}\n"
    replace_file(tree / "pkg/a.py", b"def f():\n    return 2\n\nx = 2\n")
    closed = run_cli("report", str(tree), "-m", str(manifest))
    assert closed.returncode == 1
    assert closed.stderr.startswith(f"pp1audit: {tree}: FAIL (gate closed): ")


@pytest.mark.parametrize(("data", "why"), [
    (b"\xff\xfe", "not a UTF-8 text file (invalid byte at offset 0)"),
    (b"# Audit\n\xe2\x80\n", "not a UTF-8 text file (invalid byte at offset 8)"),
    (b"# Audit\n\x00\n", "not a text file (NUL byte at offset 8)"),
])
def test_report_check_of_a_file_that_is_no_text_is_bad_input(
        tmp_path: Path, audited: tuple[Path, Path], data: bytes, why: str) -> None:
    bad = tmp_path / "bin.md"
    bad.write_bytes(data)
    proc = run_cli("report", "-m", str(audited[1]), "--check", str(bad))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stdout == ""
    assert proc.stderr == f"pp1audit: error: {bad}: {why}; a report to check must be one\n"


def test_report_check_diff_shows_the_file_escaped(tmp_path: Path, audited: tuple[Path, Path]) -> None:
    """The file checked may come from a pull request: its lines cannot write on
    the terminal (``ESC[2J`` clears the screen), and a CRLF ending shows."""
    made = run_cli("report", "-m", str(audited[1]))
    stale = tmp_path / "audit.md"
    stale.write_bytes(made.stdout.encode("utf-8") + b"evil\x1b[2J\r\n")
    proc = run_cli("report", "-m", str(audited[1]), "--check", str(stale))
    assert proc.returncode == 1, proc.stderr
    assert "\x1b" not in proc.stdout and "\r" not in proc.stdout
    assert "-evil\\x1b[2J\\r\n" in proc.stdout
    assert proc.stderr == f"pp1audit: {stale} is stale: regenerate it with pp1audit report\n"


def test_init_says_the_version_escaped(tmp_path: Path, make_files: Callable[..., Path]) -> None:
    tree = make_files({
        "pkg/_version.py": '__version__ = "1.0\\x1b[31m\\n"\n',
        "pkg/a.py": "x = 1\n",
    })
    out = tmp_path / "x.yaml"
    proc = run_cli("init", str(tree), "-p", "pkg", "--cite", "pkg/a.py:1", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "\x1b" not in proc.stderr
    assert proc.stderr == (f"pp1audit: wrote {out}: 1 citation, 1 file, "
                           "version 1.0\\x1b[31m\\n\n")


def run_with_closed(fds: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m pp1audit ARGS`` started with ``fds`` (``>&-``, ``2>&-``) closed, as a
    shell line would start it; what stays open is captured."""
    line = " ".join(f"'{a}'" for a in (sys.executable, "-m", "pp1audit", *args)) + " " + fds
    return subprocess.run(["bash", "-c", line], capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL, env={**os.environ, "NO_COLOR": "1"})


def test_a_closed_stderr_never_changes_the_exit_code(audited: tuple[Path, Path],
                                                      tmp_path: Path) -> None:
    """``2>&-``: the one-line error has nowhere to go, and a usage error is still 2
    (it was 1, the closed gate's code: the message's own write failed in its handler)."""
    tree, manifest = audited
    assert run_with_closed("2>&-", "check", str(tree), "-m", str(tmp_path / "none.yaml")).returncode == 2
    proc = run_with_closed("2>&-", "check", str(tree), "-m", str(manifest))
    assert proc.returncode == 0 and "PASS (gate open)" in proc.stdout
    (tree / "pkg" / "a.py").write_text("def f():\n    return 2\n\nx = 2\n", encoding="utf-8")
    assert run_with_closed("2>&-", "report", str(tree), "-m", str(manifest)).returncode == 1


def test_a_stdout_closed_from_the_start_is_one_line_not_a_bug(audited: tuple[Path, Path],
                                                               tmp_path: Path) -> None:
    """``>&-``: results asked for cannot be delivered (exit 2, said on stderr, as for a
    full disk); written to ``-o FILE`` they can, and the run is judged as usual."""
    tree, manifest = audited
    for args in (["check", str(tree), "-m", str(manifest)], ["schema"]):
        proc = run_with_closed(">&-", *args)
        assert proc.returncode == 2
        assert proc.stderr == "pp1audit: error: cannot write to stdout: stdout is closed\n"
    out = tmp_path / "result.txt"
    proc = run_with_closed(">&- 2>&-", "check", str(tree), "-m", str(manifest), "-o", str(out))
    assert proc.returncode == 0 and "PASS (gate open)" in out.read_text()


@pytest.mark.parametrize("unbuffered", [True, False])
def test_a_stderr_closed_after_the_start_never_changes_the_exit_code(
        tmp_path: Path, unbuffered: bool) -> None:
    """A caller that closes fd 2 once Python is up (``main`` run in its own process):
    the usage error is still 2: not 1 (reconfiguring the closed stream raised inside
    the run) nor 120 (the message left in its buffer failed Python's final flush)."""
    missing = str(tmp_path / "missing")
    code = (f"import os, sys; sys.argv = ['pp1audit', 'check', {missing!r}]; os.close(2); "
            "from pp1audit.cli import main; main()")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL, env=env)
    assert proc.returncode == 2


def test_report_check_names_a_stale_file_escaped(tmp_path: Path, audited: tuple[Path, Path]) -> None:
    """The stale line is one line whatever the file is called: a newline in the
    name cannot forge a second line (``fake: PASS``), an escape code cannot act."""
    made = run_cli("report", "-m", str(audited[1]))
    stale = tmp_path / "stale\nfake: PASS\x1b[8m.md"
    stale.write_text(made.stdout + "more\n", encoding="utf-8")
    proc = run_cli("report", "-m", str(audited[1]), "--check", str(stale))
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr == (f"pp1audit: {tmp_path}/stale\\nfake: PASS\\x1b[8m.md is stale: "
                           "regenerate it with pp1audit report\n")
