"""The console entry point ends the process at once, with the run's code and all its output.

``cli.entry`` (the console script, ``python -m pp1audit``) skips the interpreter's
shutdown once ``main`` is done (``os._exit``): on a ``--record`` run that is
15-25 ms of freeing objects after the verdict. What must still hold: every byte
of the output reaches a pipe, and the exit code is the run's, for 0, 1 and 2.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

PROBE = (
    "import atexit, runpy, sys\n"
    "atexit.register(lambda: sys.stderr.write('SHUTDOWN RAN\\n'))\n"
    "sys.argv = ['pp1audit', *sys.argv[1:]]\n"
    "runpy.run_module('pp1audit', run_name='__main__', alter_sys=True)\n"
)
"""``python -m pp1audit`` (its ``__main__``) with an ``atexit`` hook registered first:
the hook runs only if the interpreter's shutdown does."""


def probe(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)


FILES = {f"pkg/m{i:04}.py": f"v = {i}\n" for i in range(1500)}
"""Every one pinned: 1,500 file checks, a JSON document of several pipe buffers (64 KiB)."""


@pytest.fixture
def target(make_files: Callable[[dict[str, str | bytes]], Path]) -> Path:
    return make_files({"pkg/__init__.py": "", **FILES,
                       "pkg-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: pkg\nVersion: 1.0\n"})


def manifest(tmp_path: Path, wrong: str | None) -> Path:
    """Every file of ``FILES`` pinned by its digest; ``wrong``'s by another one."""
    lines = ["pp1audit: 1", "target:", "  package: pkg", "files:"]
    for path, text in FILES.items():
        digest = hashlib.sha256(text.encode() + (b"!" if path == wrong else b"")).hexdigest()
        lines.append(f"  {path}: {digest}")
    path = tmp_path / "m.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(("wrong", "code"), [("pkg/m0700.py", 1), (None, 0)])
def test_exit_code_and_whole_output_without_shutdown(target: Path, tmp_path: Path, wrong: str | None,
                                                     code: int) -> None:
    proc = probe("check", str(target), "--manifest", str(manifest(tmp_path, wrong)), "--format", "json")
    assert proc.returncode == code, proc.stderr
    assert len(proc.stdout) > 4 * 65536
    result = json.loads(proc.stdout)  # the whole document arrived through the pipe
    files = {c["path"]: c["status"] for c in result["checks"] if c["kind"] == "file"}
    assert len(files) == len(FILES)
    assert {p for p, s in files.items() if s != "pass"} == ({wrong} if wrong else set())
    assert result["verdict"] == ("pass" if code == 0 else "fail")
    assert "SHUTDOWN RAN" not in proc.stderr  # the process ended at once


def test_output_file_is_whole_without_shutdown(target: Path, tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    proc = probe("check", str(target), "--manifest", str(manifest(tmp_path, None)), "--format", "json",
                 "-o", str(out))
    assert proc.returncode == 0 and proc.stdout == "", proc.stderr
    assert len(json.loads(out.read_text(encoding="utf-8"))["checks"]) == len(FILES)
    assert "SHUTDOWN RAN" not in proc.stderr


def test_the_console_script_is_entry() -> None:
    """The installed ``pp1audit`` command runs ``entry`` (as ``python -m`` does, above)."""
    from importlib.metadata import entry_points

    (script,) = entry_points(group="console_scripts", name="pp1audit")
    assert script.value == "pp1audit.cli:entry"


def test_usage_error_is_still_exit_2_with_its_line(tmp_path: Path) -> None:
    proc = probe("check", str(tmp_path / "missing"), "--manifest", str(tmp_path / "none.yaml"))
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("pp1audit: error: ")
    assert "SHUTDOWN RAN" not in proc.stderr


def test_main_itself_still_raises_system_exit() -> None:
    """Callers running ``main`` in their own process (the tests) keep their interpreter."""
    from pp1audit.cli import main

    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
