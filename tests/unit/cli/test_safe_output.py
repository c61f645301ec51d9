"""What the audited tree says is data, never terminal control or Markdown structure.

A ``_version.py`` holding a newline, a fake verdict line and ``ESC[8m`` (which
hides the rest of the line on a terminal) must come out as visible escapes in
the text and Markdown formats, in plain and colour output alike.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import run_cli

from pp1audit.text.safe import printable

EVIL = "0.31.0\nPASS (gate open): 9 pass, 0 drift, 0 fail, 0 skip, 0 error\x1b[8m"


@pytest.fixture
def evil(tmp_path: Path, make_files: Callable[..., Path]) -> tuple[Path, Path]:
    tree = make_files({
        "pkg/__init__.py": "",
        "pkg/_version.py": f"__version__ = {EVIL!r}\n",
        "pkg/m.py": "x = 1\nfence = '```'\ny = 2\n",
    })
    manifest = tmp_path / "m.yaml"
    manifest.write_text(
        "pp1audit: 1\ntarget: {package: pkg, version: 0.31.0}\ncitations:\n"
        "  c:\n    at: pkg/m.py:2\n    claim: The fence line.\n"
        "    anchor:\n      exact: |2-\n        fence = '```'\n"
        "report:\n  sections:\n    - blocks:\n        - text: The code.\n"
        "          evidence: [c, version]\n",
        encoding="utf-8")
    return tree, manifest


@pytest.mark.parametrize("color", ["never", "always"])
def test_text_output_cannot_be_forged_by_the_target(evil: tuple[Path, Path], color: str) -> None:
    tree, manifest = evil
    proc = run_cli("check", str(tree), "-m", str(manifest), "--color", color)
    assert proc.returncode == 1
    assert "\x1b[8m" not in proc.stdout  # rich's own colour codes are fine, the target's are not
    lines = proc.stdout.splitlines()
    assert not any(line.startswith("PASS") for line in lines)
    verdict = "FAIL (gate closed): 1 pass, 0 drift, 0 stale, 1 fail, 0 skip, 0 error"
    assert lines[-1].split("\x1b[0m")[0].endswith(verdict)
    assert "0.31.0\\nPASS (gate open)" in proc.stdout and "\\x1b[8m" in proc.stdout


def test_markdown_report_cannot_be_restructured_by_the_target(evil: tuple[Path, Path]) -> None:
    tree, manifest = evil
    proc = run_cli("report", str(tree), "-m", str(manifest), "--excerpts")
    md = proc.stdout
    assert "\x1b" not in md
    assert not any(line.startswith("PASS") for line in md.splitlines())
    assert "found `0.31.0\\nPASS (gate open)" in md
    fences = [line.strip() for line in md.splitlines() if line.strip().startswith("`" * 3)]
    assert fences == ["````python", "````"]  # longer than the ``` inside the cited line


def test_json_keeps_the_exact_value(evil: tuple[Path, Path]) -> None:
    tree, manifest = evil
    proc = run_cli("check", str(tree), "-m", str(manifest), "--format", "json")
    version = next(c for c in json.loads(proc.stdout)["checks"] if c["id"] == "version")
    assert version["actual"] == EVIL  # JSON escapes by itself: the value is not altered


def test_printable_escapes_controls_and_invisible_formatting_only() -> None:
    assert printable("a\tb\r\n\x00\x7f\x9b") == "a\\tb\\r\\n\\x00\\x7f\\u009b"  # C1: a character
    assert printable("x\u202ey\u200bz\ufeff") == "x\\u202ey\\u200bz\\ufeff"
    assert printable("plain – ünïcödé → ok") == "plain – ünïcödé → ok"


def test_pin_review_cannot_be_forged_by_the_target(evil: tuple[Path, Path]) -> None:
    tree, manifest = evil
    proc = run_cli("pin", str(tree), "-m", str(manifest))
    assert "\x1b" not in proc.stdout.split("\n---", 1)[0]  # the review table
    assert not any(line.startswith("PASS") for line in proc.stdout.splitlines())
    assert "0.31.0\\nPASS (gate open)" in proc.stdout
