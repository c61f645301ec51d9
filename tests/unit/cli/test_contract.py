"""The result contract of design.md: JSON keys, statuses, the --format registry,
the relocation message, and atomic output."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Callable
from pathlib import Path

import click
import pytest
from conftest import REPO, run_cli

from pp1audit.cli.audit_cmds import check as check_command
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
    assert result["format"] == "pp1audit.result/2"
    assert set(result["counts"]) == {"pass", "drift", "stale", "fail", "skip", "error"}
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


def test_lazy_commands_match_their_modules() -> None:
    from pp1audit import cli
    from pp1audit.cli import audit_cmds, upgrade_cmds

    modules = {"audit_cmds": audit_cmds, "upgrade_cmds": upgrade_cmds}
    assert {c.name for c in upgrade_cmds.COMMANDS} | {"check", "report", "fetch", "schema"} \
        == set(cli._Group._LAZY)
    for name, (module, attr) in cli._Group._LAZY.items():
        assert getattr(modules[module], attr).name == name


M_DIGEST = hashlib.sha256(b"x = 1\n").hexdigest()
PINS_M = f"pp1audit: 1\ntarget: {{package: pkg}}\nfiles: {{pkg/m.py: {M_DIGEST}}}\n"
"""A manifest that passes on the small tree (``pkg/m.py`` holding ``x = 1``)."""


def _small_check(tmp_path: Path, make_files: Callable[..., Path], out: str) -> tuple[int, str, str]:
    tree = make_files({"pkg/__init__.py": "", "pkg/m.py": "x = 1\n"})
    manifest = tmp_path / "m.yaml"
    manifest.write_text(PINS_M)  # a manifest pinning nothing judges nothing: exit 2
    proc = run_cli("check", str(tree), "-m", str(manifest), "--format", "json", "-o", out, timeout=20)
    return proc.returncode, proc.stdout, proc.stderr


def test_output_to_a_fifo_is_written_into_it_never_replaced(
        tmp_path: Path, make_files: Callable[..., Path]) -> None:
    import threading

    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    code, _, err = _small_check(tmp_path, make_files, str(fifo))
    reader.join(20)
    assert code == 0, err
    assert json.loads(got[0])["verdict"] == "pass"
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_output_to_a_fifo_nobody_reads_is_refused_at_once(
        tmp_path: Path, make_files: Callable[..., Path]) -> None:
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    code, out, err = _small_check(tmp_path, make_files, str(fifo))  # no hang: 20 s timeout
    assert code == 2 and out == ""
    assert err == f"pp1audit: error: {fifo}: cannot write: a FIFO that no process is reading\n"
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_output_to_dev_stdout_goes_to_stdout(tmp_path: Path, make_files: Callable[..., Path]) -> None:
    code, out, err = _small_check(tmp_path, make_files, "/dev/stdout")
    assert code == 0, err
    assert json.loads(out)["verdict"] == "pass"


def test_output_to_a_character_device_writes_through_it(
        tmp_path: Path, make_files: Callable[..., Path]) -> None:
    import pytest

    null = tmp_path / "null"
    try:
        os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # a second /dev/null, here
    except PermissionError:
        pytest.skip("creating a device node needs root")
    code, _, err = _small_check(tmp_path, make_files, str(null))
    assert code == 0, err
    assert stat.S_ISCHR(os.lstat(null).st_mode), "the device was replaced by a regular file"


def test_output_onto_a_directory_is_refused(tmp_path: Path, make_files: Callable[..., Path]) -> None:
    target = tmp_path / "dir"
    target.mkdir()
    code, out, err = _small_check(tmp_path, make_files, str(target))
    assert code == 2 and out == "" and err.count("\n") == 1 and str(target) in err


def test_output_to_dev_stdout_appends_when_stdout_appends(
        tmp_path: Path, make_files: Callable[..., Path]) -> None:
    """``-o /dev/stdout >> log``: the log keeps its earlier lines (reopening the
    path with O_TRUNC, as for a FIFO, would wipe them)."""
    import subprocess
    import sys

    tree = make_files({"pkg/__init__.py": "", "pkg/m.py": "x = 1\n"})
    manifest = tmp_path / "m.yaml"
    manifest.write_text(PINS_M)  # a manifest pinning nothing judges nothing: exit 2
    log = tmp_path / "log.txt"
    log.write_text("earlier line\n")
    with open(log, "a") as out:
        proc = subprocess.run([sys.executable, "-m", "pp1audit", "check", str(tree), "-m", str(manifest),
                               "--format", "json", "-o", "/dev/stdout"], stdout=out, timeout=30)
    assert proc.returncode == 0
    first, rest = log.read_text().split("\n", 1)
    assert first == "earlier line" and json.loads(rest)["verdict"] == "pass"


def test_main_collects_rarely_during_a_run_and_restores_the_collector_after(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI freezes what imports made and raises the collection threshold
    for its run (see ``cli._quiet_gc``); a caller running ``main`` in its own
    process gets its collector back as it was, whatever the exit."""
    import gc

    from pp1audit import cli

    seen: list[tuple[tuple[int, int, int], int]] = []
    real = cli.cli.main

    def spy(*args: object, **kwargs: object) -> object:
        seen.append((gc.get_threshold(), gc.get_freeze_count()))
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(cli.cli, "main", spy)
    before = (gc.get_threshold(), gc.get_freeze_count())
    for argv in (["--version"], ["check", str(tmp_path / "missing")]):
        with pytest.raises(SystemExit):
            cli.main(argv)
        assert (gc.get_threshold(), gc.get_freeze_count()) == before
    assert [t for t, _ in seen] == [(50_000, 20, 20)] * 2
    assert all(frozen > 0 for _, frozen in seen)
