"""Writing the result needs no import: under a memory limit an import at the
moment an error is printed fails too, and the one line became a traceback."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

NO_IMPORTS_AFTER_START = (
    "import sys, pp1audit.cli as cli\n"
    "sys.modules['pp1audit.atomic'] = None  # any import of it now fails\n"
    "sys.argv = ['pp1audit', *sys.argv[1:]]\n"
    "cli.main()\n"
)


def test_the_result_is_written_without_importing_the_file_writer(make_files: Callable[..., Path]) -> None:
    root = make_files({"vllm/__init__.py": "", "vllm/_version.py": '__version__ = "1.0"\n'})
    manifest = root / "m.yaml"
    manifest.write_text('pp1audit: 1\ntarget: {package: vllm, version: "1.0"}\n', encoding="utf-8")
    proc = subprocess.run([sys.executable, "-c", NO_IMPORTS_AFTER_START, "check", str(root), "--manifest",
                           str(manifest), "--format", "json"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert '"format": "pp1audit.result/1"' in proc.stdout or '"pass"' in proc.stdout, proc.stdout
    assert "Traceback" not in proc.stderr, proc.stderr
