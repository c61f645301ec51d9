"""Text output and the width of where it goes: only a terminal wraps the table.

``--color always | tee ci.log`` is the common way to keep colour in a CI log; a
table folded at 80 columns there splits ids and paths over lines, and a grep
for a check id or a file no longer finds its row.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from conftest import on_a_terminal, run_cli

ANSI = re.compile(r"\x1b\[[0-9;]*m")
LONG = "pkg/" + "/".join(f"a_rather_long_directory_name_{i}" for i in range(4)) + "/module.py"


def _manifest(tmp_path: Path, make_files: Callable[..., Path]) -> tuple[Path, Path]:
    tree = make_files({"pkg/__init__.py": ""})
    manifest = tmp_path / "m.yaml"
    manifest.write_text(f'pp1audit: 1\ntarget: {{package: pkg}}\nfiles:\n  "{LONG}": {"a" * 64}\n')
    return tree, manifest


def test_forced_colour_into_a_pipe_keeps_each_row_on_one_line(
        tmp_path: Path, make_files: Callable[..., Path]) -> None:
    tree, manifest = _manifest(tmp_path, make_files)
    # COLUMNS is what rich would otherwise fold at (80 when nothing says)
    proc = run_cli("check", str(tree), "-m", str(manifest), "--color", "always",
                   env={"COLUMNS": "80", "NO_COLOR": ""})
    assert proc.returncode == 1, proc.stderr
    assert "\x1b[" in proc.stdout  # colour, as asked
    rows = [line for line in ANSI.sub("", proc.stdout).splitlines() if line.startswith("fail")]
    assert len(rows) == 1 and f"file:{LONG}" in rows[0] and f"  {LONG}  " in rows[0], proc.stdout


def test_on_a_terminal_the_table_still_fits_its_width(
        tmp_path: Path, make_files: Callable[..., Path]) -> None:
    tree, manifest = _manifest(tmp_path, make_files)
    code, drawn = on_a_terminal(["check", str(tree), "-m", str(manifest)],
                                {"COLUMNS": "80", "NO_COLOR": ""})
    assert code == 1
    lines = [ANSI.sub("", line) for line in drawn]
    table = lines[1:]  # the first line, naming manifest and target, is not rich's
    assert any(line.startswith("fail") for line in table)
    assert max(len(line) for line in table) <= 80, table


def test_show_with_forced_colour_into_a_pipe_keeps_each_line_whole(
        tmp_path: Path, make_files: Callable[..., Path]) -> None:
    """``show --color always | tee log``: the title and status lines hold the cited
    path; folded at a fixed width, a 250-character path was cut in two."""
    longer = LONG.replace("module.py", "x" * 120 + ".py")
    tree = make_files({"pkg/__init__.py": "", longer: "a = 1\nb = 2\n"})
    manifest = tmp_path / "m.yaml"
    manifest.write_text(f'pp1audit: 1\ntarget: {{package: pkg}}\ncitations:\n  c:\n'
                        f'    at: "{longer}:1-2"\n    anchor: {{exact: "a = 1\\nb = 2"}}\n',
                        encoding="utf-8")
    (tree / longer).unlink()  # the status line then names the path too
    proc = run_cli("show", str(tree), "c", "-m", str(manifest), "--color", "always",
                   env={"COLUMNS": "80", "NO_COLOR": ""})
    plain = ANSI.sub("", proc.stdout + proc.stderr)
    assert len(longer) > 200 and proc.returncode == 1, plain
    assert any(longer in line for line in plain.splitlines()), plain
