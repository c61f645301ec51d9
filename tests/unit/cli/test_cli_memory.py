"""Under a memory limit: one line that says so, exit 2, never a traceback.

A ``MemoryError`` carries no text, so the catch-all for bugs printed
"internal error: MemoryError: " — nothing a user under ``ulimit -v`` could act on.
And writing the result must need no import: an import at the moment an error is
printed fails too under the limit, and the one line became a traceback.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

RAISE_IN_AUDIT = (
    "import pp1audit.run as a\n"
    "def refused(*args, **kwargs):\n"
    "    raise MemoryError()\n"
    "a.audit = refused\n"
)
NO_IMPORTS_AFTER_START = (
    "import pp1audit.cli\n"
    "sys.modules['pp1audit.atomic'] = None  # importing it now fails\n"
)


def run_patched(make_files: Callable[..., Path], patch: str,
                *args: str) -> subprocess.CompletedProcess[str]:
    """``pp1audit check`` of a one-pin tree in a Python that ran ``patch`` first."""
    root = make_files({"vllm/__init__.py": "", "vllm/_version.py": '__version__ = "1.0"\n'})
    manifest = root / "m.yaml"
    manifest.write_text('pp1audit: 1\ntarget: {package: vllm, version: "1.0"}\n', encoding="utf-8")
    code = (f"import sys\n{patch}from pp1audit.cli import main\n"
            "sys.argv = ['pp1audit', *sys.argv[1:]]\nmain()\n")
    return subprocess.run([sys.executable, "-c", code, "check", str(root), "--manifest", str(manifest),
                           *args], capture_output=True, text=True, timeout=120)


def test_out_of_memory_is_one_line_naming_it(make_files: Callable[..., Path]) -> None:
    proc = run_patched(make_files, RAISE_IN_AUDIT)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr == "pp1audit: error: out of memory (a memory limit, ulimit -v?)\n", proc.stderr


def test_the_result_is_written_without_importing_the_file_writer(make_files: Callable[..., Path]) -> None:
    proc = run_patched(make_files, NO_IMPORTS_AFTER_START, "--format", "json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert '"pass"' in proc.stdout, proc.stdout
    assert "Traceback" not in proc.stderr, proc.stderr
