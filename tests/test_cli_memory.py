"""Out of memory is the machine's answer, not a bug: one line that says so, exit 2.

A ``MemoryError`` carries no text, so the catch-all for bugs printed
"internal error: MemoryError: " — nothing a user under ``ulimit -v`` could act on.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

RAISE_IN_AUDIT = (
    "import sys, pp1audit.audit as a\n"
    "def refused(*args, **kwargs):\n"
    "    raise MemoryError()\n"
    "a.audit = refused\n"
    "from pp1audit.cli import main\n"
    "sys.argv = ['pp1audit', *sys.argv[1:]]\n"
    "main()\n"
)


def test_out_of_memory_is_one_line_naming_it(make_files: Callable[..., Path]) -> None:
    root = make_files({"vllm/__init__.py": "", "vllm/_version.py": '__version__ = "1.0"\n'})
    manifest = root / "m.yaml"
    manifest.write_text('pp1audit: 1\ntarget: {package: vllm, version: "1.0"}\n', encoding="utf-8")
    proc = subprocess.run([sys.executable, "-c", RAISE_IN_AUDIT, "check", str(root), "--manifest",
                           str(manifest)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr == "pp1audit: error: out of memory (a memory limit, ulimit -v?)\n", proc.stderr
