"""Escapes that cannot be mistaken for each other, code shown as written, drift in words.

A file literally named ``a\\nb.py`` (backslash, n) printed as the one holding a
newline did, and a name with the byte 0xff printed as ``\\udcff`` (the surrogate
Python decodes it to), not as the byte. Cited code keeps its backslashes: it is
quoted, not named. A span one line up was said to have moved "(-1 lines)".
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import run_cli

from pp1audit.checks.citations import moved_by
from pp1audit.checks.pycexplain import _where_they_part
from pp1audit.text.safe import printable, printable_code

NEWLINE_NAME = "pkg/a\nb.py"
BACKSLASH_NAME = "pkg/a\\nb.py"
BYTE_NAME = os.fsdecode(b"pkg/\xff.py")  # "pkg/\udcff.py": surrogateescape
CODE_LINE = 'sep = "\\n".join(parts)  # a "\\t" too'


def test_the_backslash_is_doubled_so_a_name_is_never_a_forged_escape() -> None:
    assert printable(BACKSLASH_NAME) == "pkg/a\\\\nb.py"
    assert printable(NEWLINE_NAME) == "pkg/a\\nb.py"
    assert printable("C:\\x1b") != printable("C:\x1b")


def test_a_byte_that_is_not_utf8_shows_as_that_byte() -> None:
    assert printable(BYTE_NAME) == "pkg/\\xff.py"
    assert printable(os.fsdecode(b"\x9b")) == "\\x9b"
    assert printable("\x9b") == "\\u009b"  # the C1 character, not the byte 0x9b
    assert printable("\ud800") == "\\ud800"  # a lone surrogate no byte decodes to
    assert printable("\x1b\x7f") == "\\x1b\\x7f"  # ASCII: the byte and the character agree


def test_code_keeps_its_backslashes_and_still_escapes_controls() -> None:
    assert printable_code(CODE_LINE) == CODE_LINE
    assert printable_code("x = 1  # \x1b[2J \u202e\udcff") == "x = 1  # \\x1b[2J \\u202e\\xff"


@pytest.mark.parametrize(("shift", "words"), [
    (-1, "1 line earlier"), (1, "1 line later"), (3, "3 lines later"), (-94, "94 lines earlier"),
    (0, "same first line"),
])
def test_a_move_is_said_in_words(shift: int, words: str) -> None:
    assert moved_by(shift) == words


def test_a_python_literal_in_a_bytecode_message_is_not_escaped_twice() -> None:
    """Once escaped by the output, the message quotes both sides as ``repr`` does:
    ``'a\\\\b'`` is a backslash, ``'a\\nb'`` a newline (the core keeps them raw)."""
    assert printable(_where_they_part("a\\b", "a\nb")) == "'a\\\\b' in the bytecode, 'a\\nb' compiled"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


@pytest.fixture
def named_tree(tmp_path: Path, make_files: Callable[..., Path]) -> tuple[Path, Path]:
    """An installed ``pkg`` whose RECORD misses three files with look-alike names."""
    listed = {"pkg/__init__.py": "", "pkg/_version.py": "__version__ = '1.0'\n",
              "pkg-1.0.dist-info/METADATA": "Name: pkg\nVersion: 1.0\n"}
    root = make_files({**listed, NEWLINE_NAME: "x = 1\n", BACKSLASH_NAME: "x = 1\n",
                       BYTE_NAME: "x = 1\n"})
    rows = [[rel, f"sha256={_b64(text.encode())}", str(len(text.encode()))]
            for rel, text in listed.items()] + [["pkg-1.0.dist-info/RECORD", "", ""]]
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    (root / "pkg-1.0.dist-info" / "RECORD").write_text(buf.getvalue(), encoding="utf-8")
    manifest = tmp_path / "m.yaml"
    manifest.write_text("pp1audit: 1\ntarget: {package: pkg, version: '1.0'}\n", encoding="utf-8")
    return root, manifest


def test_check_text_tells_look_alike_file_names_apart(named_tree: tuple[Path, Path]) -> None:
    root, manifest = named_tree
    proc = run_cli("check", "--record", str(root), "-m", str(manifest))
    assert proc.returncode == 1, proc.stderr
    places = [line.split()[3] for line in proc.stdout.splitlines() if line.startswith("fail")]
    assert sorted(places) == ["pkg/\\xff.py", "pkg/a\\\\nb.py", "pkg/a\\nb.py"]


def test_check_json_keeps_the_exact_names(named_tree: tuple[Path, Path]) -> None:
    root, manifest = named_tree
    proc = run_cli("check", "--record", str(root), "-m", str(manifest), "--format", "json")
    failed = {c["path"] for c in json.loads(proc.stdout)["checks"] if c["status"] == "fail"}
    assert failed == {NEWLINE_NAME, BACKSLASH_NAME, BYTE_NAME}


@pytest.fixture
def cited_code(tmp_path: Path, make_files: Callable[..., Path]) -> tuple[Path, Path]:
    """A tree citing a line of code with backslashes in it (pkg/a.py:2)."""
    root = make_files({"pkg/__init__.py": "", "pkg/a.py": f"a = 1\n{CODE_LINE}\nc = 3\n"})
    manifest = tmp_path / "m.yaml"
    proc = run_cli("init", str(root), "-p", "pkg", "-o", str(manifest), "--cite", "sep=pkg/a.py:2")
    assert proc.returncode == 0, proc.stderr
    return root, manifest


def _moved(root: Path, lines: str) -> None:
    """pkg/a.py with the cited line after ``lines`` (moving it up or down)."""
    (root / "pkg" / "a.py").write_text(f"{lines}{CODE_LINE}\nc = 3\n", encoding="utf-8")


def test_show_quotes_the_code_as_written(cited_code: tuple[Path, Path]) -> None:
    root, manifest = cited_code
    proc = run_cli("show", str(root), "sep", "-m", str(manifest))
    assert proc.returncode == 0, proc.stderr
    assert f"> 2 │ {CODE_LINE}" in proc.stdout.splitlines()


def test_report_excerpt_quotes_the_code_as_written(cited_code: tuple[Path, Path]) -> None:
    root, manifest = cited_code
    with manifest.open("a", encoding="utf-8") as f:
        f.write("report:\n  sections:\n    - blocks:\n        - text: The join.\n"
                "          evidence: [sep]\n")
    proc = run_cli("report", str(root), "-m", str(manifest), "--excerpts")
    assert proc.returncode == 0, proc.stderr
    assert any(line.strip() == f"2  {CODE_LINE}" for line in proc.stdout.splitlines()), proc.stdout


@pytest.mark.parametrize(("before", "words"), [("", "1 line earlier"),
                                                ("a = 1\nb = 2\n\n\n", "3 lines later")])
def test_check_says_which_way_a_citation_moved(
    cited_code: tuple[Path, Path], before: str, words: str
) -> None:
    root, manifest = cited_code
    _moved(root, before)
    proc = run_cli("check", str(root), "-m", str(manifest))
    now = 1 if not before else 5
    assert f"pkg/a.py:2 moved to {now} ({words})" in proc.stdout, proc.stdout


def test_diff_says_which_way_and_quotes_the_code(
    cited_code: tuple[Path, Path], tmp_path: Path, make_files: Callable[..., Path]
) -> None:
    old, manifest = cited_code
    new = make_files({"pkg/__init__.py": "", "pkg/a.py": f"{CODE_LINE}\nc = 3\n"}, tmp_path / "new")
    proc = run_cli("diff", str(old), str(new), "-m", str(manifest))
    assert "2 → 1 (1 line earlier)" in proc.stdout, proc.stdout
    changed = make_files({"pkg/__init__.py": "", "pkg/a.py": f"a = 1\n{CODE_LINE}!\nc = 3\n"},
                         tmp_path / "changed")
    lines = run_cli("diff", str(old), str(changed), "-m", str(manifest)).stdout.splitlines()
    assert f"      -{CODE_LINE}" in lines and f"      +{CODE_LINE}!" in lines
