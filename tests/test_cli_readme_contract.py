"""Output contracts a README user test found unkept: ``schema``'s error object at
exit 2, characters a locale cannot show told from bytes that are not UTF-8, the
first line fitted to a terminal, the same rows piped with colour or without, and
``pin``'s counts line written as every other one is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli

from pp1audit import cli


@pytest.mark.parametrize("case", ["bad config", "unknown option", "extra argument"])
def test_schema_at_exit_2_prints_one_error_object(tmp_path: Path, case: str) -> None:
    """README: ``schema`` JSON follows check's rules, so exit 2 is one
    ``pp1audit.error/1`` object on stdout, its ``error`` the line on stderr."""
    args = {"bad config": [], "unknown option": ["--bogus"], "extra argument": ["extra"]}[case]
    if case == "bad config":
        (tmp_path / "pp1audit.toml").write_text("[fetch]\ntimeout = 0\n", encoding="utf-8")
    proc = run_cli("schema", *args, cwd=tmp_path)
    assert proc.returncode == 2
    said = proc.stderr.removeprefix("pp1audit: error: ").removesuffix("\n")
    assert said != proc.stderr and "\n" not in said
    assert json.loads(proc.stdout) == {
        "format": "pp1audit.error/1", "tool": {"name": "pp1audit", "version": cli.__version__},
        "error": said, "exit": 2,
    }


def test_schema_at_exit_0_is_the_schema_alone(tmp_path: Path) -> None:
    proc = run_cli("schema", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stderr == ""
    assert "format" not in json.loads(proc.stdout) or json.loads(proc.stdout)["format"] != "pp1audit.error/1"
