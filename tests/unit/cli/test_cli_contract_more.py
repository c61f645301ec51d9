"""The CLI contract where a user test of it found holes: a manifest that judges
nothing, names that are not UTF-8, signals during a write, errors only on stdout,
the reason a target cannot be reached, JSON at exit 2, colour and width, and
the wording of a few messages."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import assert_one_error_object, on_a_terminal, run_cli, unprivileged

from pp1audit import atomic, cli
from pp1audit.errors import Pp1Error

ANSI = re.compile(r"\x1b\[[0-9;]*m")
NOTHING = "pp1audit: 1\naudit: {id: x, title: t, date: 2026-10-23}\ntarget: {package: pkg}\n"


@pytest.fixture
def pinned(tmp_path: Path, make_files: Callable[..., Path]) -> tuple[Path, Path]:
    """A tree and the manifest ``init`` writes for it (version, one file, one citation)."""
    tree = make_files({"pkg/__init__.py": "", "pkg/_version.py": '__version__ = "1.0"\n',
                       "pkg/mod.py": "a = 1\nb = 2\nc = 3\nd = 4\ne = 5\n"})
    manifest = tmp_path / "m1.yaml"
    proc = run_cli("init", str(tree), "-p", "pkg", "--cite", "pkg/mod.py:3-4", "-o", str(manifest))
    assert proc.returncode == 0, proc.stderr
    return tree, manifest


# 1. nothing judged


def test_a_manifest_that_pins_nothing_is_exit_2_naming_it(
        tmp_path: Path, make_files: Callable[..., Path]) -> None:
    tree = make_files({"pkg/__init__.py": ""})
    manifest = tmp_path / "nv.yaml"
    manifest.write_text(NOTHING)
    for command in (["check", str(tree)], ["report", str(tree)]):
        proc = run_cli(*command, "-m", str(manifest))
        assert proc.returncode == 2, (command, proc.stdout)
        assert proc.stderr.startswith(f"pp1audit: error: {manifest}: pins nothing that this target "
                                      "can judge"), proc.stderr
        assert proc.stderr.count("\n") == 1
    # --record adds checks of its own: something is judged, the gate is the verdict's
    recorded = run_cli("check", str(tree), "-m", str(manifest), "--record", "--format", "json")
    assert recorded.returncode in (0, 1), recorded.stderr
    assert json.loads(recorded.stdout)["checks"]


# 2. init and names that are not UTF-8


def test_init_on_a_target_whose_name_is_not_utf8(tmp_path: Path, make_files: Callable[..., Path]) -> None:
    root = tmp_path / os.fsdecode(b"bad\xff")
    make_files({"pkg/__init__.py": "", "pkg/_version.py": '__version__ = "1.0"\n',
                "pkg/mod.py": "a = 1\nb = 2\n"}, root=root)
    out = tmp_path / "ff.yaml"
    proc = run_cli("init", str(root), "-p", "pkg", "--cite", "pkg/mod.py:1-2", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert out.read_text(encoding="utf-8").splitlines()[0].endswith("from directory "
                                                                      f"{tmp_path}/bad\\xff")
    printed = run_cli("init", str(root), "-p", "pkg", "--cite", "pkg/mod.py:1-2")
    assert printed.returncode == 0 and "bad\\xff" in printed.stdout, printed.stderr
    checked = run_cli("check", str(root), "-m", str(out))
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_init_refuses_a_cited_file_name_that_is_not_utf8(
        tmp_path: Path, make_files: Callable[..., Path]) -> None:
    tree = make_files({"pkg/__init__.py": "", os.fsdecode(b"pkg/m\xffod.py"): "a = 1\nb = 2\n"})
    proc = run_cli("init", str(tree), "-p", "pkg", "--cite", os.fsdecode(b"pkg/m\xffod.py:1-2"))
    assert proc.returncode == 2
    assert proc.stderr == ("pp1audit: error: --cite pkg/m\\xffod.py:1-2: the file name pkg/m\\xffod.py "
                           "is not UTF-8, so it cannot be written into a manifest (YAML is UTF-8 "
                           "text); rename the file to cite it\n")


def test_a_new_manifest_that_does_not_load_says_where(make_files: Callable[..., Path]) -> None:
    from pp1audit.sources import DirectorySource
    from pp1audit.upgrade import init

    tree = make_files({"pkg/__init__.py": ""})
    with pytest.raises(Pp1Error) as raised:
        init._prove("pp1audit: 1\nfiles: [\n", DirectorySource(tree))
    assert "(at )" not in str(raised.value)
    assert str(raised.value).endswith("(line 3 of the new manifest)")


# 3. signals during a write

SLOW_FSYNC = """
import os, sys, time
from pathlib import Path
marker = Path(sys.argv[1])
real = os.fsync
def slow(fd):
    marker.write_text("writing")
    time.sleep(120)
    real(fd)
os.fsync = slow
from pp1audit.cli import main
main(sys.argv[2:])
"""


def _killed_while_writing(sig: int, tmp_path: Path, tree: Path, manifest: Path,
                          out: Path) -> subprocess.CompletedProcess[str]:
    """Run ``check -o out`` with every fsync held, send ``sig`` once the temporary
    file is written (the marker says so), and collect the process."""
    marker = tmp_path / "marker"
    marker.unlink(missing_ok=True)
    proc = subprocess.Popen(
        [sys.executable, "-c", SLOW_FSYNC, str(marker), "check", str(tree), "-m", str(manifest),
         "--format", "json", "-o", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while not marker.exists():
        assert proc.poll() is None and time.monotonic() < deadline, "the write never started"
        time.sleep(0.02)
    proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_term_and_hup_during_a_write_leave_no_temporary_file(
        sig: int, tmp_path: Path, pinned: tuple[Path, Path]) -> None:
    tree, manifest = pinned
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / "out.json"
    out.write_text("OLD")
    proc = _killed_while_writing(sig, tmp_path, tree, manifest, out)
    assert proc.returncode == -sig  # ended by the signal, as without a handler (shell: 128 + sig)
    assert proc.stderr == f"pp1audit: terminated by {signal.Signals(sig).name}\n"
    assert sorted(p.name for p in out_dir.iterdir()) == ["out.json"]
    assert out.read_text() == "OLD"


def test_ctrl_c_during_a_write_says_aborted_in_one_line(tmp_path: Path, pinned: tuple[Path, Path]) -> None:
    tree, manifest = pinned
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / "out.json"
    proc = _killed_while_writing(signal.SIGINT, tmp_path, tree, manifest, out)
    assert proc.returncode == 2
    assert proc.stderr == "pp1audit: error: aborted\n"  # no empty line first: stderr is no terminal
    assert list(out_dir.iterdir()) == []


def test_the_next_write_removes_what_a_killed_writer_left(tmp_path: Path, pinned: tuple[Path, Path]) -> None:
    tree, manifest = pinned
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / "out.json"
    out.write_text("OLD")
    killed = _killed_while_writing(signal.SIGKILL, tmp_path, tree, manifest, out)
    assert killed.returncode == -signal.SIGKILL
    left = [p.name for p in out_dir.iterdir() if p.name != "out.json"]
    assert len(left) == 1 and left[0].startswith(".out.json.pp1audit-"), left  # nothing can stop that
    proc = run_cli("check", str(tree), "-m", str(manifest), "--format", "json", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    # A recent one is kept: its age, not only its PID, must say the writer is gone.
    assert sorted(p.name for p in out_dir.iterdir()) == sorted([*left, "out.json"])
    _age(out_dir / left[0])
    proc = run_cli("check", str(tree), "-m", str(manifest), "--format", "json", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in out_dir.iterdir()) == ["out.json"]
    assert json.loads(out.read_text())["verdict"] == "pass"


def _age(path: Path, seconds: float = 11 * 60) -> None:
    """Make ``path`` look last written ``seconds`` ago: by default more than the
    10 minutes after which a dead writer's temporary file may go."""
    then = time.time() - seconds
    os.utime(path, (then, then), follow_symlinks=False)


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", ""])
    child.wait()
    return child.pid


def test_only_stale_temporary_files_of_the_destination_are_removed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    long_name = "n" * 250  # too long for the full form: the name's hash stands in for it
    dead_pid = _dead_pid()
    prefix = atomic.temp_prefix("out.json")
    live = prefix  # this process's
    dead = prefix.replace(f"-{os.getpid()}-", f"-{dead_pid}-")
    dead_long = atomic.temp_prefix(long_name).replace(f"-{os.getpid()}-", f"-{dead_pid}-")
    other_host = re.sub(r"pp1audit-[0-9a-f]{8}-", "pp1audit-00000000-", dead)
    with monkeypatch.context() as other:  # same host name, another PID namespace (a container)
        other.setattr(atomic, "_pid_namespace", lambda: "4026539999", raising=False)
        other_namespace = atomic.temp_prefix("out.json").replace(f"-{os.getpid()}-", f"-{dead_pid}-")
    assert len(os.fsencode(dead_long)) + 12 <= 255 and long_name not in dead_long
    names = {
        dead + "abcd_123.tmp": True,            # a dead writer's: removed
        dead_long + "abcd_123.tmp": False,      # another destination's (the long one)
        live + "abcd_123.tmp": False,           # a live writer's (this process)
        other_host + "abcd_123.tmp": False,     # another host's: its PIDs are not ours to test
        other_namespace + "abcd_123.tmp": False,  # another PID namespace's: nor are its PIDs
        dead + "abcd_123.tmp.bak": False,       # not the exact pattern
        dead.replace("out.json", "other.json") + "abcd_123.tmp": False,  # another destination's
        ".out.json.abcd_123.tmp": False,        # no writer named
    }
    for name in names:
        (tmp_path / name).write_text("x")
        _age(tmp_path / name)  # old enough: only the name and the PID decide
    (tmp_path / (dead + "link_123.tmp")).symlink_to(tmp_path / "elsewhere")  # not a regular file
    _age(tmp_path / (dead + "link_123.tmp"))
    (tmp_path / (dead + "late_123.tmp")).write_text("x")  # a dead writer's, but recent: kept
    removed = atomic.remove_stale_temps(tmp_path, "out.json")
    assert removed == [n for n, gone in names.items() if gone]
    assert {p.name for p in tmp_path.iterdir()} == {
        *(n for n, gone in names.items() if not gone), dead + "link_123.tmp", dead + "late_123.tmp"}
    assert atomic.remove_stale_temps(tmp_path, long_name) == [dead_long + "abcd_123.tmp"]


def test_another_pid_namespace_keeps_a_live_writers_temporary_file(tmp_path: Path) -> None:
    """A process in a PID namespace of its own (a container; same host name) does
    not see this process's PID, and must not take its temporary file for a dead
    writer's: ``unshare -p`` runs the cleanup there."""
    unshare = shutil.which("unshare")
    probe = [unshare, "-p", "-f", "--mount-proc", sys.executable, "-c", "import os; print(os.getpid())"]
    if unshare is None or subprocess.run(probe, capture_output=True).returncode != 0:
        pytest.skip("unshare -p is not available (root and util-linux needed)")
    live = tmp_path / (atomic.temp_prefix("out.json") + "abcd_123.tmp")  # this process's: alive
    live.write_text("x")
    _age(live)  # and old: only the namespace keeps it
    cleanup = ("import sys; from pathlib import Path; from pp1audit import atomic; "
               "print(atomic.remove_stale_temps(Path(sys.argv[1]), 'out.json'))")
    proc = subprocess.run([unshare, "-p", "-f", "--mount-proc", sys.executable, "-c", cleanup,
                           str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "[]\n"
    assert live.exists()


@pytest.mark.parametrize("length", [218, 241, 255])
def test_a_destination_name_near_name_max_is_written(length: int, tmp_path: Path,
                                                     pinned: tuple[Path, Path]) -> None:
    """The temporary file's name must fit where the destination's does: a name of
    200-odd bytes gets the short form of it, and leaves nothing behind."""
    tree, manifest = pinned
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / ("o" * length)
    proc = run_cli("check", str(tree), "-m", str(manifest), "--format", "json", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert [p.name for p in out_dir.iterdir()] == [out.name]
    assert json.loads(out.read_text())["verdict"] == "pass"


# 4. fetch says its failure on stderr


def test_fetch_that_fails_says_so_on_stderr(tmp_path: Path) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    manifest = tmp_path / "m.yaml"
    manifest.write_text(
        "pp1audit: 1\ntarget: {package: pkg}\ndonors:\n  d1:\n"
        f"    url: http://127.0.0.1:{port}/x.patch\n    sha256: \"{'a' * 64}\"\n"
        "    commit: afe4d5e41ec6fa4db17c5cc88758af439a106913\n    expect: not-applied\n")
    proc = run_cli("fetch", "-m", str(manifest), "--cache-dir", str(tmp_path / "cache"), "--attempts", "1")
    assert proc.returncode == 2
    assert re.fullmatch(rf"pp1audit: error: d1: http://127\.0\.0\.1:{port}/x\.patch: [^\n]+\n", proc.stderr)
    assert "FAILED  d1:" in proc.stdout  # the table is still there


# 5. why a target cannot be reached


def test_a_name_too_long_is_said_so(tmp_path: Path, pinned: tuple[Path, Path]) -> None:
    _, manifest = pinned
    target = tmp_path / ("d" * 300)
    proc = run_cli("check", str(target), "-m", str(manifest))
    assert proc.returncode == 2
    assert proc.stderr == f"pp1audit: error: {target}: cannot be reached: File name too long\n"


def test_a_directory_that_may_not_be_searched_is_said_so(tmp_path: Path, pinned: tuple[Path, Path]) -> None:
    tree, manifest = pinned
    unprivileged()  # skips when file modes cannot apply
    locked = tmp_path / "locked"
    locked.mkdir()
    tree.rename(locked / "t1")
    locked.chmod(0)
    try:
        proc = run_cli("check", str(locked / "t1"), "-m", str(manifest), as_user=True)
    finally:
        locked.chmod(0o755)
    assert proc.returncode == 2
    assert proc.stderr == f"pp1audit: error: {locked}/t1: cannot be reached: Permission denied\n"


# 6. one JSON object at exit 2 too




@pytest.mark.parametrize("extra", [[], ["--bogus"]], ids=["bad target", "usage error"])
def test_json_at_exit_2_is_one_error_object(tmp_path: Path, pinned: tuple[Path, Path],
                                            extra: list[str]) -> None:
    _, manifest = pinned
    proc = run_cli("check", str(tmp_path / "absent"), "-m", str(manifest), "--format", "json", *extra)
    assert_one_error_object(proc)
    text = run_cli("check", str(tmp_path / "absent"), "-m", str(manifest), *extra)
    assert text.returncode == 2 and text.stdout == ""


def test_json_at_exit_2_for_a_bad_manifest(tmp_path: Path, pinned: tuple[Path, Path]) -> None:
    tree, _ = pinned
    bad = tmp_path / "bad.yaml"
    bad.write_text("pp1audit: 1\ntarget: {package: pkg, version: 1.10}\n")
    proc = run_cli("check", str(tree), "-m", str(bad), "--format", "json")
    assert proc.returncode == 2
    error = json.loads(proc.stdout)["error"]
    assert error == (f"{bad}:2:33: 1.10 is read as a number (1.1), not as text: quote it ('1.10') "
                     "(at target.version)")
    assert proc.stderr == f"pp1audit: error: {error}\n"


# 7. and 8. colour and width


def _drifted(tmp_path: Path, make_files: Callable[..., Path]) -> tuple[Path, Path]:
    """A tree whose one citation moved down a line: a ``drift`` row with a long message."""
    long = "pkg/" + "/".join(f"a_rather_long_directory_name_{i}" for i in range(2)) + "/module.py"
    tree = make_files({"pkg/__init__.py": "", long: "# new\na = 1\nb = 2\n"})
    manifest = tmp_path / "m.yaml"
    manifest.write_text(f'pp1audit: 1\ntarget: {{package: pkg}}\ncitations:\n  c:\n'
                        f'    at: "{long}:1-2"\n    anchor: {{exact: "a = 1\\nb = 2"}}\n')
    return tree, manifest


def test_color_always_wins_over_no_color(tmp_path: Path, make_files: Callable[..., Path]) -> None:
    tree, manifest = _drifted(tmp_path, make_files)
    proc = run_cli("check", str(tree), "-m", str(manifest), "--color", "always", env={"NO_COLOR": "1"})
    assert proc.returncode == 1, proc.stderr
    assert "\x1b[33mdrift" in proc.stdout  # yellow, as asked
    shown = run_cli("show", str(tree), "c", "-m", str(manifest), "--color", "always",
                    env={"NO_COLOR": "1"})
    assert re.search(r"\x1b\[(3|9)[0-7]m", shown.stdout), shown.stdout  # syntax colours
    auto = run_cli("check", str(tree), "-m", str(manifest), "--color", "auto", env={"NO_COLOR": "1"})
    assert "\x1b[" not in auto.stdout


@pytest.mark.parametrize("how", [(["--color", "never"], {"NO_COLOR": ""}),
                                 (["--color", "auto"], {"NO_COLOR": "1"})], ids=["never", "NO_COLOR"])
def test_without_colour_a_terminal_still_fits_its_width(
        how: tuple[list[str], dict[str, str]], tmp_path: Path, make_files: Callable[..., Path]) -> None:
    tree, manifest = _drifted(tmp_path, make_files)
    options, env = how
    code, lines = on_a_terminal(["check", str(tree), "-m", str(manifest), *options],
                                 {"COLUMNS": "60", **env})
    assert code == 1
    assert not any("\x1b" in line for line in lines), lines  # no colour, no bold
    table = lines[1:]  # the first line, naming manifest and target, is not the table
    assert table[0].split() == ["status", "kind", "id", "where", "detail"]
    assert max(len(line) for line in table) <= 60, table


# 9. wording and positions


def test_an_alias_error_points_at_the_alias(tmp_path: Path, pinned: tuple[Path, Path]) -> None:
    tree, _ = pinned
    bad = tmp_path / "bad.yaml"
    bad.write_text("pp1audit: 1\naudit: {id: x, title: t}\ntarget: {package: pkg}\nreferences:\n"
                   "  a: &a {title: t}\n  b: *a\n")
    proc = run_cli("check", str(tree), "-m", str(bad))
    assert proc.stderr == f"pp1audit: error: {bad}:6:6: YAML aliases are not allowed (at references.b)\n"


@pytest.mark.parametrize(("written", "said"), [
    ("1.10", "1.10 is read as a number (1.1), not as text: quote it ('1.10')"),
    ("2", "2 is read as a number, not as text: quote it ('2')"),
    ("yes", "yes is read as a boolean (true), not as text: quote it ('yes')"),
])
def test_a_number_where_text_belongs_says_to_quote_it(written: str, said: str, tmp_path: Path,
                                                      pinned: tuple[Path, Path]) -> None:
    tree, _ = pinned
    bad = tmp_path / "bad.yaml"
    bad.write_text(f"pp1audit: 1\ntarget:\n  package: pkg\n  version: {written}\n")
    proc = run_cli("check", str(tree), "-m", str(bad))
    assert proc.stderr == f"pp1audit: error: {bad}:4:12: {said} (at target.version)\n"


def test_show_says_one_line_in_the_singular(tmp_path: Path, make_files: Callable[..., Path]) -> None:
    tree = make_files({"pkg/__init__.py": "", "pkg/m.py": "a = 1\n"})
    manifest = tmp_path / "m.yaml"
    manifest.write_text(NOTHING)
    proc = run_cli("show", str(tree), "pkg/m.py:2-3", "-m", str(manifest))
    assert proc.returncode == 2
    assert proc.stderr.endswith("pkg/m.py has only 1 line\n"), proc.stderr


def test_json_location_of_a_name_that_is_not_utf8_is_exact_and_utf8(
        tmp_path: Path, make_files: Callable[..., Path], pinned: tuple[Path, Path]) -> None:
    """The document is valid UTF-8 (plain ASCII then) and the name exact: ``\\udcff``, which
    a ``surrogateescape`` reader turns back into the byte (the text form ``bad\\xff`` is
    also the name of a file called with a backslash)."""
    tree, manifest = pinned
    odd = tmp_path / os.fsdecode(b"bad\xff")
    tree.rename(odd)
    out = tmp_path / "out.json"
    for where in ([], ["-o", str(out)]):
        proc = run_cli("check", str(odd), "-m", str(manifest), "--format", "json", *where)
        assert proc.returncode == 0, proc.stderr
        data = (out.read_bytes() if where else proc.stdout.encode("utf-8", "surrogateescape"))
        assert data.isascii()
        result = json.loads(data.decode("utf-8"))  # strict UTF-8
        assert os.fsencode(result["target"]["location"]) == os.fsencode(str(tmp_path)) + b"/bad\xff"


def test_a_broken_pp1audit_toml_found_here_is_exit_2_for_any_manifest(
        tmp_path: Path, pinned: tuple[Path, Path]) -> None:
    tree, manifest = pinned
    (tmp_path / "pp1audit.toml").write_text("[foo]\n")
    proc = run_cli("check", str(tree), "-m", str(manifest), cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == ("pp1audit: error: pp1audit.toml: unknown section 'foo' "
                           "(known: cache, fetch, repos)\n")
    (tmp_path / "pp1audit.toml").write_text("[cache]\n")
    assert run_cli("check", str(tree), "-m", str(manifest), cwd=tmp_path).returncode == 0


# Review of the contract fixes (session 6)

# 1. a signal to the whole process group while bytecode workers run


@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP", "SIGINT"])
def test_a_bytecode_worker_outlives_the_signal_the_cli_unwinds_on(
        name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``timeout``, a closed terminal and Ctrl-C signal the whole group, workers
    included. A worker that died by it broke the pool while the parent, unwinding,
    cancelled its tasks: the pool's thread then printed ``InvalidStateError``
    tracebacks (CPython gh-107219). Under the CLI's handlers a worker ignores the
    signal and the parent's unwinding ends it: here each task signals its own worker,
    deterministically, and every answer still comes back."""
    from pp1audit.checks import pyccompare, pycworkers

    signum = getattr(signal, name)

    def signalled(source: bytes, pyc: bytes, optimize: int) -> tuple[str, str]:
        os.kill(os.getpid(), signum)  # the group's signal, as it reaches a worker
        return "fail", "the worker lived on"

    monkeypatch.setattr(pyccompare, "_compare", signalled)
    try:
        with cli._unwinding_signals():
            answers = pycworkers._in_processes([(b"", b"", 0)] * 5, 2, None)
    except KeyboardInterrupt:  # a worker's Ctrl-C sent back as its task's exception
        pytest.fail("the worker's KeyboardInterrupt reached the parent")
    assert answers == [("fail", "the worker lived on")] * 5


@pytest.fixture(scope="module")
def many_pycs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A tree with enough bytecode that ``--record`` keeps its workers busy for a
    while (a second or more), and a manifest that pins nothing else."""
    import py_compile

    root = tmp_path_factory.mktemp("pycs")
    (root / "pkg").mkdir()
    (root / "pkg/__init__.py").write_text("")
    body = "".join(f"def f{j}(x):\n    return [x * {j} + k for k in range(x)]\n" for j in range(40))
    for i in range(1500):
        src = root / f"pkg/m{i}.py"
        src.write_text(f"N = {i}\n{body}")
        py_compile.compile(str(src), doraise=True)
    manifest = root / "m.yaml"
    manifest.write_text(NOTHING)
    return root, manifest


def _children(pid: int) -> list[str]:
    """The PIDs of ``pid``'s children (of any of its threads), from /proc."""
    found: list[str] = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(OSError):
            found += Path(f"/proc/{pid}/task/{task}/children").read_text().split()
    return found


@pytest.mark.parametrize(("name", "code", "said"), [
    ("SIGTERM", -signal.SIGTERM, "pp1audit: terminated by SIGTERM\n"),  # shell: 143
    ("SIGHUP", -signal.SIGHUP, "pp1audit: terminated by SIGHUP\n"),     # shell: 129
    ("SIGINT", 2, "pp1audit: error: aborted\n"),
])
def test_a_signal_to_the_group_once_workers_exist_ends_the_run_cleanly(
        name: str, code: int, said: str, tmp_path: Path, many_pycs: tuple[Path, Path]) -> None:
    """The moment the first worker exists (seen in /proc) is the pool's start: the
    signal then reaches the parent while it forks and queues the tasks, and every
    worker. One line on stderr, no traceback, the signal's exit status, and no
    process of the group left once the parent is gone."""
    if not Path("/proc/self/task").is_dir():
        pytest.skip("needs /proc")
    tree, manifest = many_pycs
    proc = subprocess.Popen(
        [sys.executable, "-m", "pp1audit", "check", str(tree), "-m", str(manifest), "--record"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL,
        start_new_session=True,  # its own group, as a shell job's
        env={**os.environ, "NO_COLOR": "1", "PP1AUDIT_CACHE_DIR": str(tmp_path / "cache")},
    )
    try:
        deadline = time.monotonic() + 120
        while not _children(proc.pid):
            assert proc.poll() is None and time.monotonic() < deadline, "no worker was started"
            time.sleep(0.002)
        os.killpg(proc.pid, getattr(signal, name))
        _, stderr = proc.communicate(timeout=60)  # a run that hangs fails here
        left = _group_alive(proc.pid)
    finally:  # whatever failed, nothing of the run outlives the test
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert stderr == said
    assert proc.returncode == code
    assert not left, "a worker outlived the run"


def _group_alive(pgid: int) -> bool:
    """Whether any process of group ``pgid`` exists."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


# 3. the "quote it" hint never for a tagged, anchored or aliased value, and never a crash


@pytest.mark.parametrize(("written", "said"), [
    ("!!float 1", "5:12: 1.0 is not of type 'string'"),
    ("!!int 2", "5:12: 2 is not of type 'string'"),
    ("&v 1.10", "5:12: 1.1 is not of type 'string'"),
])
def test_a_tagged_or_anchored_number_where_text_belongs_is_the_schemas_message(
        written: str, said: str, tmp_path: Path, pinned: tuple[Path, Path]) -> None:
    """A tag or an anchor says what the value is on purpose: no "quote it" hint
    (``!!float 1`` quoted is no fix), and reading the token for one must not crash."""
    tree, _ = pinned
    bad = tmp_path / "m.yaml"
    bad.write_text(f"pp1audit: 1\naudit: {{id: x, title: t}}\ntarget:\n  package: pkg\n"
                   f"  version: {written}\n")
    proc = run_cli("check", str(tree), "-m", str(bad))
    assert proc.returncode == 2
    assert proc.stderr == f"pp1audit: error: {bad}:{said} (at target.version)\n"


# 4. every check skipped: nothing judged


def _unreachable_inputs(tmp_path: Path) -> Path:
    """A manifest pinning only a git source (no --repo given) and a donor (never fetched)."""
    manifest = tmp_path / "src.yaml"
    manifest.write_text(
        "pp1audit: 1\naudit: {id: x, title: t, date: 2026-10-23}\ntarget: {package: pkg}\n"
        f"sources:\n  lane: {{kind: git, commit: {'c' * 40}}}\n"
        "donors:\n  d1:\n    url: http://127.0.0.1:9/x.patch\n"
        f"    sha256: \"{'a' * 64}\"\n    commit: afe4d5e41ec6fa4db17c5cc88758af439a106913\n"
        "    expect: not-applied\n")
    return manifest


@pytest.mark.parametrize("command", [
    ["check"], ["check", "--require-all"], ["check", "--format", "json"], ["report"],
], ids=["check", "require-all", "json", "report"])
def test_every_check_skipped_is_exit_2_saying_what_is_missing(
        command: list[str], tmp_path: Path, make_files: Callable[..., Path]) -> None:
    tree = make_files({"pkg/__init__.py": ""})
    manifest = _unreachable_inputs(tmp_path)
    cache = tmp_path / "cache"
    proc = run_cli(command[0], str(tree), *command[1:], "-m", str(manifest), "--cache-dir", str(cache))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr == (
        f"pp1audit: error: {manifest}: every check was skipped, so nothing was judged (3 checks): "
        "lane: git source 'lane' not given; pass --repo lane=PATH (or set it in pp1audit.toml) | "
        "d1: not fetched: no copy in the cache; run pp1audit fetch\n")
    if "json" in command:
        assert json.loads(proc.stdout)["error"] == proc.stderr.removeprefix("pp1audit: error: ").strip()
    else:
        assert proc.stdout == ""


def test_show_of_a_citation_whose_source_is_missing_is_exit_2_too(
        tmp_path: Path, make_files: Callable[..., Path]) -> None:
    """``show`` judges one citation: one that cannot be read for want of its source
    is nothing judged as well, as check and report say (already so; kept)."""
    tree = make_files({"pkg/__init__.py": ""})
    manifest = _unreachable_inputs(tmp_path)
    with manifest.open("a") as fh:
        fh.write('citations:\n  c:\n    source: lane\n    at: "a.py:1"\n    anchor: {exact: "x"}\n')
    proc = run_cli("show", str(tree), "c", "-m", str(manifest))
    assert proc.returncode == 2
    assert proc.stderr == ("pp1audit: error: show c: git source 'lane' not given; pass --repo "
                           "lane=PATH (or set it in pp1audit.toml)\n")


# 6. every JSON document by the one rule


def _moved_and_renamed(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A tree, a manifest citing a line with a non-ASCII character, and a copy of
    the tree under a name that is not UTF-8 where the citation moved down a line."""
    old = tmp_path / "old"
    (old / "pkg").mkdir(parents=True)
    (old / "pkg/__init__.py").write_text("")
    (old / "pkg/_version.py").write_text('__version__ = "1.0"\n')
    (old / "pkg/mod.py").write_text('a = 1\nb = "é"\nc = 3\n', encoding="utf-8")
    manifest = tmp_path / "m.yaml"
    made = run_cli("init", str(old), "-p", "pkg", "--cite", "pkg/mod.py:2-3", "-o", str(manifest))
    assert made.returncode == 0, made.stderr
    new = tmp_path / os.fsdecode(b"new\xff")
    shutil.copytree(old, new)
    (new / "pkg/mod.py").write_text('# moved\na = 1\nb = "é"\nc = 3\n', encoding="utf-8")
    return old, new, manifest


@pytest.mark.parametrize("command", ["pin", "diff"])
def test_pin_and_diff_json_follow_the_json_rule(command: str, tmp_path: Path) -> None:
    """A name that is not UTF-8 in the document: the whole of it is then plain
    ASCII with ``\\u`` escapes, the name exact (``formats.json_format.dumps``), as
    check's; not UTF-8 text for some characters and escapes for others."""
    old, new, manifest = _moved_and_renamed(tmp_path)
    targets = [str(new)] if command == "pin" else [str(old), str(new)]
    proc = subprocess.run([sys.executable, "-m", "pp1audit", command, *targets, "-m", str(manifest),
                           "--format", "json"], capture_output=True, stdin=subprocess.DEVNULL)
    assert proc.returncode == (0 if command == "pin" else 1), proc.stderr  # all carried / moved
    assert proc.stdout.isascii()
    data = json.loads(proc.stdout.decode("utf-8"))
    location = data["target"]["location"] if command == "pin" else data["new"]["target"]
    assert os.fsencode(location).endswith(os.fsencode(str(new)))


# 7. the config file, validated by every command


@pytest.mark.parametrize("command", [
    ["check", "{tree}", "-m", "{manifest}"],
    ["report"],
    ["report", "{tree}", "-m", "{manifest}"],
    ["show", "{tree}", "pkg/mod.py:1-2", "-m", "{manifest}"],
    ["pin", "{tree}", "-m", "{manifest}"],
    ["diff", "{tree}", "{tree}", "-m", "{manifest}"],
    ["init", "{tree}", "-p", "pkg", "--cite", "pkg/mod.py:1-2"],
    ["fetch", "-m", "{manifest}"],
    ["schema"],
], ids=["check", "report-as-pinned", "report-target", "show", "pin", "diff", "init", "fetch",
        "schema"])
def test_a_broken_config_is_exit_2_for_every_command(
        command: list[str], tmp_path: Path, pinned: tuple[Path, Path]) -> None:
    """One rule, no exceptions: a broken ``./pp1audit.toml`` is bad input whatever
    runs, as a broken ``--config FILE`` is; a typo in it cannot wait silently for
    the one command and manifest that read it."""
    tree, manifest = pinned
    args = [a.format(tree=tree, manifest=manifest) for a in command]
    (tmp_path / "pp1audit.toml").write_text("[foo]\n")
    proc = run_cli(*args, cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout
    assert proc.stderr == ("pp1audit: error: pp1audit.toml: unknown section 'foo' "
                           "(known: cache, fetch, repos)\n")
    help_ = run_cli(args[0], "--help", cwd=tmp_path)  # asking how is no run: it still answers
    assert help_.returncode == 0 and "Usage:" in help_.stdout


def test_a_broken_config_given_is_exit_2_where_nothing_reads_it(
        tmp_path: Path, pinned: tuple[Path, Path]) -> None:
    bad = tmp_path / "other.toml"
    bad.write_text("[fetch]\ntimeout = -1\n")
    proc = run_cli("report", "--config", str(bad))  # rendered as pinned: no provenance read
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"pp1audit: error: {bad}: ")
    assert "\n" not in proc.stderr.rstrip("\n")
