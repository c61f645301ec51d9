"""Output contracts a README user test found unkept: ``schema``'s error object at
exit 2, characters a locale cannot show told from bytes that are not UTF-8, the
first line fitted to a terminal, the same rows piped with colour or without, and
``pin``'s counts line written as every other one is."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import assert_one_error_object, deep_tree, on_a_terminal, run_cli

from pp1audit.text.safe import CODE_POINTS, as_code_points, printable


@pytest.mark.parametrize("case", ["bad config", "unknown option", "extra argument"])
def test_schema_at_exit_2_prints_one_error_object(tmp_path: Path, case: str) -> None:
    """README: ``schema`` JSON follows check's rules, so exit 2 is one
    ``pp1audit.error/1`` object on stdout, its ``error`` the line on stderr."""
    args = {"bad config": [], "unknown option": ["--bogus"], "extra argument": ["extra"]}[case]
    if case == "bad config":
        (tmp_path / "pp1audit.toml").write_text("[fetch]\ntimeout = 0\n", encoding="utf-8")
    assert_one_error_object(run_cli("schema", *args, cwd=tmp_path))


def test_schema_at_exit_0_is_the_schema_alone(tmp_path: Path) -> None:
    proc = run_cli("schema", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stderr == ""
    assert json.loads(proc.stdout).get("format") != "pp1audit.error/1"


# 3. what a locale cannot show, told from a byte that is not UTF-8

NAMES = {"character": "t_é", "byte": os.fsdecode(b"t_\xe9")}
"""Two targets: a directory named with the character é, one named with the raw byte
0xE9 (not UTF-8). Under an ASCII stdout they must print differently."""


@pytest.fixture
def twins(tmp_path: Path, make_files: Callable[..., Path]) -> tuple[dict[str, Path], Path]:
    files = {"pkg/__init__.py": "", "pkg/_version.py": '__version__ = "1.0"\n',
             "pkg/mod_é.py": "é = 1\n"}
    trees = {how: make_files(files, tmp_path / name) for how, name in NAMES.items()}
    manifest = tmp_path / "m.yaml"
    made = run_cli("init", str(trees["character"]), "-p", "pkg", "--cite", "c=pkg/mod_é.py:1",
                   "-o", str(manifest))
    assert made.returncode == 0, made.stderr
    return trees, manifest


@pytest.mark.parametrize("command", ["check", "pin", "diff", "show", "error"])
def test_an_unshowable_character_is_not_written_as_a_byte(
        twins: tuple[dict[str, Path], Path], command: str) -> None:
    """``é`` under ASCII is ``\\u00e9`` (``\\U0001f600`` past U+FFFF), never the
    ``\\xe9`` that names the raw byte 0xE9, on every text path and on stderr."""
    trees, manifest = twins
    shown = {}
    for how, tree in trees.items():
        t = str(tree)
        args = {"check": ["check", t], "pin": ["pin", t], "diff": ["diff", t, t],
                "show": ["show", t, "c"], "error": ["check", t + "_gone"]}[command]
        proc = run_cli(*args, "-m", str(manifest), env={"PYTHONIOENCODING": "ascii"})
        out = proc.stderr if command == "error" else proc.stdout
        assert proc.returncode in ((2,) if command == "error" else (0, 1)), proc.stderr
        out.encode("ascii")  # nothing the stream could not write
        shown[how] = out
    character, byte = shown["character"], shown["byte"]
    if command == "show":  # names the cited file, not the target: é in both
        assert "pkg/mod_\\u00e9.py" in character and "\\u00e9 = 1" in character
        return
    assert "t_\\u00e9" in character and "t_\\xe9" not in character
    assert "t_\\xe9" in byte and "t_\\u00e9" not in byte
    assert character != byte


def test_code_points_past_the_bmp_and_bytes() -> None:
    assert as_code_points("é — 😀", "ascii") == "\\u00e9 \\u2014 \\U0001f600"
    assert as_code_points("é →", "latin-1") == "é \\u2192"
    assert "a\udce9é".encode("ascii", CODE_POINTS) == b"a\\xe9\\u00e9"
    assert printable("a\udce9") == "a\\xe9"


# 4. and 5. the terminal's width, and the same rows piped with colour or without

ANSI = re.compile(r"\x1b\[[0-9;]*m")


@pytest.mark.parametrize("color", ["never", "always"])
def test_on_a_terminal_the_first_line_fits_its_width_too(
        color: str, tmp_path: Path, make_files: Callable[..., Path]) -> None:
    tree, manifest = deep_tree(tmp_path, make_files)
    assert len(str(tree)) > 80
    code, drawn = on_a_terminal(["check", str(tree), "-m", str(manifest), "--color", color],
                                {"COLUMNS": "80", "NO_COLOR": ""})
    assert code == 1
    lines = [ANSI.sub("", line) for line in drawn]
    assert max(len(line) for line in lines) <= 80, lines
    first = lines[0]
    assert first.startswith(str(tmp_path)[:10]) and first.endswith("/tree (pkg 1.0)")
    assert " against directory " in first and "…" in first and len(first) == 80
    piped = run_cli("check", str(tree), "-m", str(manifest), "--color", color)
    assert piped.stdout.splitlines()[0].endswith(f"{tree} (pkg 1.0)")  # a log: never elided


def test_the_first_line_fitted_to_a_width() -> None:
    """Wide characters count two columns; the manifest's name gives way once the
    location is down to half the room."""
    from pp1audit.formats.text_format import _elide, _head
    from pp1audit.result import Result, TargetInfo

    result = Result(manifest_path="m" * 50 + ".yaml", manifest_sha256="0" * 64, checks=(),
                    target=TargetInfo(kind="directory", location="/" + "界" * 60, package="p",
                                      version="1"))
    assert _head(result) == f"{'m' * 50}.yaml against directory /{'界' * 60} (p 1)"
    fitted = _head(result, 60)
    from rich.cells import cell_len

    assert cell_len(fitted) <= 60 and fitted.count("…") == 2 and fitted.endswith("界 (p 1)")
    assert _elide("abcdefgh", 5) == "ab…gh" and _elide("abc", 3) == "abc"


def test_forced_colour_into_a_pipe_is_the_plain_rows(
        tmp_path: Path, make_files: Callable[..., Path]) -> None:
    """README: piped output keeps one check per line: ``--color always`` adds the
    escape codes and nothing else (no header row), whatever the verbosity."""
    tree, manifest = deep_tree(tmp_path, make_files)
    for verbose in ([], ["-v"]):
        plain = run_cli("check", str(tree), "-m", str(manifest), *verbose)
        colour = run_cli("check", str(tree), "-m", str(manifest), "--color", "always", *verbose,
                         env={"NO_COLOR": ""})
        assert plain.returncode == colour.returncode == 1
        assert "\x1b[1;31mfail\x1b[0m" in colour.stdout
        assert ANSI.sub("", colour.stdout) == plain.stdout
        assert not any(line.split()[:2] == ["status", "kind"] for line in plain.stdout.splitlines())
