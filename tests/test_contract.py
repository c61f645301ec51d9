"""The result contract of design.md: JSON keys, statuses, the --format registry,
the relocation message, and atomic output."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from pathlib import Path

import click
from conftest import REPO, run_cli

from pp1audit.cli import check as check_command
from pp1audit.formats import FORMATS, get_formatter

PP1 = REPO / "manifests" / "pp1.yaml"
CHECK_KEYS = {"id", "kind", "status", "path", "lines", "found_lines", "expected", "actual", "message",
              "source"}
TOP_KEYS = {"format", "tool", "manifest", "target", "verdict", "counts", "checks"}


def test_every_check_kind_has_every_contract_key(vllm_tree: Path) -> None:
    proc = run_cli("check", str(vllm_tree), "-m", str(PP1), "--format", "json", "--record")
    assert proc.returncode == 1, proc.stderr
    result = json.loads(proc.stdout)
    assert set(result) == TOP_KEYS
    assert result["format"] == "pp1audit.result/1"
    assert set(result["counts"]) == {"pass", "drift", "fail", "skip", "error"}
    assert sum(result["counts"].values()) == len(result["checks"])
    kinds = {c["kind"] for c in result["checks"]}
    assert kinds >= {"version", "file", "citation", "invariant", "git", "donor", "record"}
    for check in result["checks"]:
        assert set(check) == CHECK_KEYS, check["id"]
        assert check["status"] in result["counts"]
        for key in ("lines", "found_lines"):
            value = check[key]
            assert value is None or (len(value) == 2 and 1 <= value[0] <= value[1]), check
    ids = [c["id"] for c in result["checks"]]
    assert len(ids) == len(set(ids)), "check ids are unique"


def test_every_format_choice_has_a_formatter() -> None:
    option = next(p for p in check_command.params if p.name == "fmt")
    assert isinstance(option.type, click.Choice)
    assert tuple(option.type.choices) == FORMATS
    for name in FORMATS:
        assert callable(get_formatter(name))


def test_several_places_are_said(tmp_path: Path, make_files: Callable[..., Path]) -> None:
    body = "def f():\n    x = 1\n    return x\n\n"
    tree = make_files({"pkg/__init__.py": "", "pkg/m.py": "# head\n" + body + body})
    manifest = tmp_path / "m.yaml"
    manifest.write_text(
        "pp1audit: 1\ntarget: {package: pkg}\ncitations:\n  c:\n    at: pkg/m.py:3-4\n"
        "    anchor:\n      exact: |2-\n            x = 1\n            return x\n"
    )
    (tree / "pkg/m.py").write_text("# head\n# moved\n" + body + body)
    proc = run_cli("check", str(tree), "-m", str(manifest), "--format", "json")
    check = json.loads(proc.stdout)["checks"][0]
    assert check["status"] == "drift" and check["found_lines"] == [4, 5]
    assert "2 equally good places; the nearest to the pinned lines chosen" in check["message"]


def test_output_through_a_symlink_keeps_the_link_and_the_mode(tmp_path: Path, vllm_wheel: Path) -> None:
    real = tmp_path / "real.json"
    real.write_text("old")
    real.chmod(0o600)
    link = tmp_path / "link.json"
    link.symlink_to(real)
    proc = run_cli("check", str(vllm_wheel), "-m", str(REPO / "manifests/examples/vllm-0.31.0.yaml"),
                   "--format", "json", "-o", str(link))
    assert proc.returncode == 0, proc.stderr
    assert link.is_symlink() and json.loads(real.read_text())["verdict"] == "pass"
    assert stat.S_IMODE(os.stat(real).st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.json", "real.json"]


def test_text_output_prints_data_not_markup(tmp_path: Path, make_files: Callable[..., Path]) -> None:
    tree = make_files({"pkg/__init__.py": ""})
    manifest = tmp_path / "m.yaml"
    manifest.write_text('pp1audit: 1\ntarget: {package: pkg}\nfiles:\n  "pkg/a[/b].py": ' + "a" * 64 + "\n")
    for color in ("always", "never"):
        proc = run_cli("check", str(tree), "-m", str(manifest), "--color", color)
        assert proc.returncode == 1, proc.stderr
        assert "pkg/a[/b].py" in proc.stdout and "version unknown" in proc.stdout


def test_lazy_upgrade_commands_match_their_module() -> None:
    from pp1audit import cli, cli_upgrade

    assert {c.name for c in cli_upgrade.COMMANDS} == set(cli._Group._LAZY)
    for name, attr in cli._Group._LAZY.items():
        assert getattr(cli_upgrade, attr).name == name
