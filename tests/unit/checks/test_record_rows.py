"""RECORD rows that must not pass: blanked hashes, control characters in paths, and wording.

A row without a hash says nothing about the file's content, so only the files
RECORD cannot hash (itself, its signatures) and the ones installers write
after it (INSTALLER, REQUESTED, direct_url.json) may be listed so; any other
is its own failing ``record:<path>`` check. A path with a NUL byte is a
malformed row (a one-line ``record`` error), never an internal error from
``lstat``. The hand-made trees come from ``test_record_units``; the last test
repeats the blanked-hash attack on the real pip-installed vLLM tree.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
from pathlib import Path

import pytest
from conftest import record_json, replace_file, run_cli, site
from recordtrees import bad, install, run, wheel_of

from pp1audit.checks.distrecord import RecordError, parse_record
from pp1audit.result import Status

RECORD = "pkg-1.0.dist-info/RECORD"
UNHASHED = "Listed in RECORD without a hash: its content cannot be verified"


def rewrite_record(root: Path, change: dict[str, list[str]], add: list[list[str]] | None = None) -> None:
    """RECORD with the rows of ``change`` replaced by their new fields and ``add`` appended."""
    path = root / RECORD
    rows = [change.get(r[0], r) for r in csv.reader(io.StringIO(path.read_text(encoding="utf-8")))]
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows + (add or []))
    path.write_text(buf.getvalue(), encoding="utf-8")


def test_blanked_hash_hides_no_modified_module(tmp_path: Path) -> None:
    root = install(tmp_path / "site")
    mod = root / "pkg" / "mod.py"
    mod.write_text(mod.read_text() + "import os; os.system('id')\n", encoding="utf-8")
    rewrite_record(root, {"pkg/mod.py": ["pkg/mod.py", "", ""]})
    checks = run(root)
    flagged = bad(checks)
    assert set(flagged) == {"record:pkg/mod.py"}
    check = flagged["record:pkg/mod.py"]
    assert check.status is Status.FAIL
    assert check.message == UNHASHED
    assert check.expected == "," and check.actual is not None and check.actual.startswith("sha256=")
    # The summary counts it among the files, not among the unhashed entries.
    summary = checks["record"].message
    assert summary.startswith(f"3 of 4 files match {RECORD}"), summary
    assert "1 unhashed entries as installers write them" in summary
    assert "1 problem(s) reported separately" in summary


def test_blanked_hash_is_named_by_the_pinned_tree_digest(tmp_path: Path) -> None:
    root = install(tmp_path / "site")
    pin = run(root)["tree"].actual
    mod = root / "pkg" / "mod.py"
    mod.write_text(mod.read_text() + "import os; os.system('id')\n", encoding="utf-8")
    rewrite_record(root, {"pkg/mod.py": ["pkg/mod.py", "", ""]})
    tree = run(root, tree_sha256=pin)["tree"]
    assert tree.status is Status.FAIL
    assert "differs from the pin; explained by RECORD: unhashed pkg/mod.py" in tree.message, tree.message
    assert "every file matches RECORD" not in tree.message


def test_blanked_hash_in_a_wheel_fails_too(tmp_path: Path) -> None:
    root = install(tmp_path / "site", compile_pyc=False)
    rewrite_record(root, {"pkg/__init__.py": ["pkg/__init__.py", "", "27"]})
    flagged = bad(run(wheel_of(root, tmp_path)))
    assert set(flagged) == {"record:pkg/__init__.py"}
    assert flagged["record:pkg/__init__.py"].message.startswith("Listed in RECORD without a hash")


def test_rows_installers_leave_unhashed_pass(tmp_path: Path) -> None:
    root = install(tmp_path / "site")
    meta = root / "pkg-1.0.dist-info"
    for name, text in {"INSTALLER": "pip\n", "REQUESTED": "", "direct_url.json": "{}\n",
                       "RECORD.jws": "{}"}.items():
        (meta / name).write_text(text, encoding="utf-8")
    rewrite_record(root, {}, [[f"pkg-1.0.dist-info/{n}", "", ""]
                              for n in ("INSTALLER", "REQUESTED", "direct_url.json", "RECORD.jws")])
    checks = run(root)
    assert bad(checks) == {}
    assert "5 unhashed entries as installers write them" in checks["record"].message


def test_installer_file_names_elsewhere_are_not_exempt(tmp_path: Path) -> None:
    """``RECORD`` or ``INSTALLER`` inside the package is data like any other file."""
    files = {"pkg/__init__.py": "", "pkg/RECORD": "x", "pkg/INSTALLER": "y", "pkg/sub/RECORD.p7s": "z"}
    root = install(tmp_path / "site", files)
    rewrite_record(root, {p: [p, "", ""] for p in files if p != "pkg/__init__.py"})
    flagged = bad(run(root))
    assert set(flagged) == {"record:pkg/RECORD", "record:pkg/INSTALLER", "record:pkg/sub/RECORD.p7s"}
    assert all(c.status is Status.FAIL for c in flagged.values())


def test_unhashed_row_of_an_absent_file_is_missing(tmp_path: Path) -> None:
    root = install(tmp_path / "site")
    rewrite_record(root, {}, [["pkg-1.0.dist-info/INSTALLER", "", ""]])
    flagged = bad(run(root))
    assert set(flagged) == {"record:pkg-1.0.dist-info/INSTALLER"}
    assert flagged["record:pkg-1.0.dist-info/INSTALLER"].message == (
        "Listed in RECORD but missing from the target")


@pytest.mark.parametrize("char", ["\x00", "\n", "\x1b", "\x7f", "\x85"])
def test_control_character_in_a_path_is_a_malformed_row(char: str) -> None:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows([["a.py", "", ""], [f"pkg/x{char}y.py", "", ""]])
    # Raw: the output escapes the message once (tests/test_escape_once.py).
    with pytest.raises(RecordError) as info:
        parse_record(buf.getvalue().encode("utf-8"), "R")
    assert str(info.value) == (f"R:2: path 'pkg/x{char}y.py' contains the control character "
                               f"{char}: not a file name an installer writes")


def test_non_ascii_names_are_legitimate_paths() -> None:
    names = ["pkg/données/é.py", "pkg/数据.json", "pkg/emoji_\U0001f600.txt", "pkg/zwj\u200dname.txt",
             "pkg/\u00a0nbsp.txt"]
    data = "".join(f"{n},,\n" for n in names).encode("utf-8")
    assert [r.path for r in parse_record(data, "R")] == names


def test_nul_byte_in_a_record_row_is_a_record_error_not_a_crash(tmp_path: Path) -> None:
    root = install(tmp_path / "site")
    rows = (root / RECORD).read_text(encoding="utf-8").splitlines()
    line = next(i for i, r in enumerate(rows, 1) if r.startswith("pkg/mod.py,"))
    (root / RECORD).write_text("\n".join(r.replace("pkg/mod.py", "pkg/mod\x00.py") for r in rows) + "\n",
                               encoding="utf-8")
    checks = run(root)
    assert checks["record"].status is Status.ERROR
    assert checks["record"].message.startswith(f"{RECORD}:{line}: path 'pkg/mod\x00.py' contains")  # raw
    man = tmp_path / "m.yaml"
    man.write_text("pp1audit: 1\ntarget: {package: pkg, record: true}\n", encoding="utf-8")
    proc = run_cli("check", str(root), "-m", str(man), "--format", "json", env={"PP1AUDIT_NO_CACHE": "1"})
    assert proc.returncode == 1 and proc.stderr == "", proc.stderr
    record = next(c for c in json.loads(proc.stdout)["checks"] if c["id"] == "record")
    assert record["status"] == "error" and f"{RECORD}:{line}:" in record["message"]


@pytest.mark.parametrize("wheel", [False, True])
def test_unlisted_wording_fits_a_wheel_and_an_installed_tree(tmp_path: Path, wheel: bool) -> None:
    root = install(tmp_path / "site", compile_pyc=False)
    (root / "pkg" / "hook.py").write_text("print('hi')\n", encoding="utf-8")
    flagged = bad(run(wheel_of(root, tmp_path) if wheel else root))
    message = flagged["record:pkg/hook.py"].message
    assert message.startswith("Unlisted: in the package directory but not in RECORD")
    assert "install" not in message


@pytest.mark.vllm
def test_blanked_hash_on_the_real_pip_installed_tree(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """The user's report: a line appended to a module of a pip-installed vLLM and
    its RECORD row blanked (``path,,``) passed as "every file matches"."""
    installed, yaml, cache = (request.getfixturevalue(f) for f in ("vllm_venv", "manifest", "bytecode_cache"))
    venv = tmp_path / "venv"
    shutil.copytree(installed, venv, symlinks=True, copy_function=os.link)
    target = site(venv)
    _, clean = record_json(target, yaml, cache)
    summary = {c["id"]: c for c in clean["checks"]}["record"]["message"]
    m = re.match(r"([\d,]+) of ([\d,]+) files match", summary)
    assert m and m[1] == m[2], summary
    total = int(m[1].replace(",", ""))
    pin = {c["id"]: c for c in clean["checks"]}["tree"]["actual"]

    rel = "vllm/v1/worker/gpu/model_runner.py"
    replace_file(target / rel, (target / rel).read_bytes() + b"\nimport os; os.system('id')\n")
    record = next(target.glob("vllm-*.dist-info")) / "RECORD"
    text = record.read_text(encoding="utf-8")
    new, n = re.subn(rf"^{re.escape(rel)},[^\n]*$", f"{rel},,", text, flags=re.M)
    assert n == 1
    replace_file(record, new.encode("utf-8"))
    pinned = tmp_path / "pinned.yaml"
    pinned.write_text(yaml.read_text() + f"  tree_sha256: {pin}\n", encoding="utf-8")

    rc, result = record_json(target, pinned, cache)
    assert rc == 1
    flagged = {c["id"]: c for c in result["checks"] if c["status"] != "pass"}
    assert set(flagged) == {f"record:{rel}", "tree"}, flagged
    assert flagged[f"record:{rel}"]["status"] == "fail"
    assert flagged[f"record:{rel}"]["message"] == UNHASHED
    assert f"explained by RECORD: unhashed {rel}" in flagged["tree"]["message"]
    summary = {c["id"]: c for c in result["checks"]}["record"]["message"]
    assert summary.startswith(f"{total - 1:,} of {total:,} files match"), summary

