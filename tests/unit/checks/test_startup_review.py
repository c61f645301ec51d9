"""Bypasses and false alarms the review of dea2ffb (startup-code fixes) found.

1. A module beside the console script (``bin/torch.py``) that a forged
   ``*.dist-info``'s RECORD lists (``../../../bin/torch.py``) passed every check
   and both pins: every importable module there is now startup code, in the
   digest; a vouched one's bytecode there is judged.
2. A ``*.dist-info`` in ``bin/`` is found by ``importlib.metadata`` when the
   console script runs (its directory is ``sys.path[0]``): its entry points in
   the package's groups are judged.
3. The release that runs is known when the venv's ``bin/python`` is the
   interpreter running the audit (a link, or an identical copy), whatever
   ``home`` says; ``home`` is searched upward for the standard library as
   ``getpath`` searches it.
4. A symlinked ``pyvenv.cfg`` fails, never opened; a dangling one is in the digest.
5. A path line to a directory others can write fails.
6. The startup digest takes from ``pyvenv.cfg`` only what decides startup and is
   the same on every host.
7. A ``version`` line the known release contradicts is a note, not a failure.
8. The audited RECORD is parsed once.
9. A package directory beside the console script is called one.
10. A ``bin/python`` that is a script fails.

Each premise ("Python would run it") is shown with the real interpreter of a
hand-made venv (``test_shadowing_hooks.venv``).
"""

from __future__ import annotations

import grp
import hashlib
import os
import pwd
import shutil
import sys
from pathlib import Path

import pytest
from conftest import setuptools_site
from recordtrees import bad, record_row, run, swap_pyc
from startuptrees import (
    BASE_EXE,
    HACK,
    HOOK,
    MARK,
    OTHER,
    PYVER,
    cfg_line,
    fake_base,
    runs,
    starts,
    venv,
    with_hack,
    with_script,
)

from pp1audit.checks import pthfiles, shadowing
from pp1audit.checks.bytecode import RELEASE

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX prefix layout and symlinks")


@pytest.fixture(autouse=True)
def _no_user_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PP1AUDIT_NO_CACHE", "1")


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def forge(root: Path, target: Path, name: str = "torch_stub-1.0") -> Path:
    """A forged installed distribution whose RECORD lists ``target`` with its hash."""
    meta = root / f"{name}.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name.split('-')[0]}\nVersion: 1.0\n",
                                   encoding="utf-8")
    (meta / "RECORD").write_text(",".join(record_row(root, os.path.relpath(target, root))) + "\n"
                                 f"{meta.name}/METADATA,,\n{meta.name}/RECORD,,\n", encoding="utf-8")
    return meta


# --- 1. modules beside the console script are startup code ---------------------------------


def test_a_module_beside_the_console_script_a_forged_record_vouches_for_fails_the_pin(tmp_path: Path) -> None:
    v, root = venv(tmp_path)
    script = with_script(v, root, body="import pkg, torch\n")
    digest = run(root)["startup"].actual
    torch = v / "bin" / "torch.py"
    torch.write_text(HOOK, encoding="utf-8")
    forge(root, torch)
    assert MARK in runs(script).stderr  # the premise: vllm's `import torch` runs it
    checks = run(root)
    assert bad(checks) == {}  # vouched for: the check without a pin names it
    assert f"{torch}, importable as 'torch' beside the console script {script}, is installed by " \
        "torch_stub-1.0.dist-info (matches its RECORD)" in checks["shadowing"].message
    assert checks["startup"].actual != digest
    failed = bad(run(root, startup_sha256=digest))
    assert list(failed) == ["startup"]
    assert f"../../../bin/torch.py {sha(torch)[:12]}" in failed["startup"].message


def test_every_module_beside_the_script_is_in_the_startup_set_whatever_its_form(tmp_path: Path) -> None:
    v, root = venv(tmp_path)
    with_script(v, root)
    (v / "bin" / "evil").mkdir()
    (v / "bin" / "evil" / "__init__.py").write_text(HOOK, encoding="utf-8")
    (v / "bin" / "json.pyc").write_bytes(b"not really bytecode")
    (v / "bin" / "__pycache__").mkdir()
    (v / "bin" / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"")
    (v / "bin" / "activate").write_text("", encoding="utf-8")
    rep = shadowing.check_shadowing(shadowing.DirInventory(str(root)), "pkg", "pkg-1.0.dist-info",
                                    site_dir=str(root))
    names = [p for p, _ in rep.startup_files()]
    # The console script itself too (test_startup_scripts.py).
    assert names == ["../../../bin/evil/__init__.py", "../../../bin/json.pyc", "../../../bin/pkgcli",
                     "../../../pyvenv.cfg"]
    assert dict(rep.startup_files())["../../../bin/json.pyc"] == sha(v / "bin" / "json.pyc")


def test_tampered_bytecode_of_a_vouched_module_beside_the_script_fails(tmp_path: Path) -> None:
    v, root = venv(tmp_path)
    script = with_script(v, root, body="import pkg, torch\n")
    torch = v / "bin" / "torch.py"
    torch.write_text("answer = 42\n", encoding="utf-8")
    forge(root, torch)
    pyc = swap_pyc(torch, HOOK)
    assert MARK in runs(script).stderr  # Python loads the pyc in place of the vouched source
    checks = bad(run(root))
    assert list(checks) == [f"shadow:{pyc}"]
    assert checks[f"shadow:{pyc}"].message.startswith(
        f"{pyc} is the bytecode of 'torch', imported in place of any installed one when the console script "
        f"{script} runs: tampered bytecode")


# --- 2. distributions beside the console script --------------------------------------------

PLUGIN_LOAD = """
from importlib.metadata import entry_points
for e in entry_points(group="pkg.plugins"):
    e.load()
    print("loaded", e.name)
"""


def test_a_distribution_beside_the_console_script_declaring_a_plugin_fails(tmp_path: Path) -> None:
    v, root = venv(tmp_path)
    script = with_script(v, root, body="import pkg\n" + PLUGIN_LOAD)
    meta = v / "bin" / "evil-1.0.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: evil\nVersion: 1.0\n", encoding="utf-8")
    (meta / "entry_points.txt").write_text("[pkg.plugins]\nevil = json:dumps\n", encoding="utf-8")
    assert "loaded evil" in runs(script).stdout  # the premise: found through sys.path[0]
    checks = run(root)
    where = f"{os.path.realpath(meta)}/entry_points.txt"
    assert list(bad(checks)) == [f"plugin:{where}:2"]
    assert f"(in the target root and {os.path.realpath(v / 'bin')})" in checks["shadowing"].message


# --- 3. the release that runs -----------------------------------------------------------------


@pytest.mark.parametrize("home", ["prefix", "nonexistent", "other-stdlib", "copies"])
def test_the_release_is_known_from_the_venvs_interpreter_whatever_home_says(tmp_path: Path,
                                                                            home: str) -> None:
    """``version = <other>`` is untrue: the venv's ``bin/python`` is the interpreter
    running the audit, so the tampered bytecode of the module a ``.pth`` imports is
    judged as its and fails, where believing the line made it a ``skip``."""
    base_bin = fake_base(tmp_path, interpreter=False)  # a standard library that is not this one's
    named = {"prefix": base_bin.parent, "nonexistent": base_bin / "nonexistent"}.get(home, base_bin)
    v, root = venv(tmp_path, f"include-system-site-packages = false\nversion = {OTHER}\n", home=named)
    if home == "copies":  # python -m venv --copies
        (v / "bin" / "python").unlink()
        shutil.copy2(BASE_EXE, v / "bin" / "python")
    with_hack(root)
    hack = swap_pyc(root / "_hack" / "__init__.py", HOOK + HACK).relative_to(root).as_posix()
    assert MARK in starts(v)  # the premise
    checks = run(root)
    assert list(bad(checks)) == [f"pth:hack-precedence.pth:{hack}"]
    assert bad(checks)[f"pth:hack-precedence.pth:{hack}"].status.value == "fail"
    summary = checks["shadowing"].message
    assert f"the interpreter that runs is Python {RELEASE} ({v / 'bin' / 'python'}" in summary, summary
    # getpath's upward search from home finds the standard library it starts with
    assert f"base standard library taken as {base_bin.parent / 'lib' / PYVER} (home = {named} in" in summary


# --- 4. a symlinked pyvenv.cfg ----------------------------------------------------------------

IS_VENV = "import sys; print(sys.prefix != sys.base_prefix)"


def is_venv(v: Path) -> str:
    import subprocess

    return subprocess.run([str(v / "bin" / "python"), "-I", "-c", IS_VENV], capture_output=True, text=True,
                          check=True, timeout=60).stdout.strip()


@pytest.mark.parametrize("dangling", [False, True])
def test_a_symlinked_pyvenv_cfg_fails_unopened_and_a_dangling_one_is_in_the_digest(
        tmp_path: Path, dangling: bool) -> None:
    v, root = venv(tmp_path)
    cfg = v / "pyvenv.cfg"
    shared = tmp_path / "shared.cfg"
    text = cfg.read_text(encoding="utf-8")
    cfg.unlink()
    cfg.symlink_to(shared)
    if not dangling:
        shared.write_text(text, encoding="utf-8")
    assert is_venv(v) == ("False" if dangling else "True")  # the premise: Python reads what it names
    checks = run(root)
    assert list(bad(checks)) == [f"pyvenv:{cfg}"]
    message = bad(checks)[f"pyvenv:{cfg}"].message
    assert message.startswith(f"{cfg} is a symbolic link (to {shared}); not opened"), message
    line = f"symlink:{shared}  ../../../pyvenv.cfg\n".encode()
    assert checks["startup"].actual == hashlib.sha256(line).hexdigest()
    if dangling:
        shared.write_text(text, encoding="utf-8")
        assert is_venv(v) == "True"  # armed by whoever can create it


# --- 5. path lines to directories others can write --------------------------------------------


def grp_name(gid: int) -> str:
    return f"{grp.getgrgid(gid).gr_name} (gid {gid})"


def another_users_group() -> tuple[int, str]:
    """A group with a user other than root in it (that user's primary group), and
    that user's name: every Linux account database has one (``daemon``, ``nobody``)."""
    user = next(p for p in pwd.getpwall() if p.pw_uid != 0 and p.pw_gid != 0)
    return user.pw_gid, user.pw_name


@pytest.mark.parametrize("how", ["sticky", "world", "parent", "owner", "group", "group-parent"])
def test_a_path_line_to_a_directory_others_can_write_fails(tmp_path: Path, how: str) -> None:
    v, root = venv(tmp_path)
    shared = tmp_path / "shared" / "dir"
    shared.mkdir(parents=True)
    gid, member = another_users_group()
    if how.startswith("group"):
        if os.geteuid() != 0:
            pytest.skip("giving a directory to another group takes root")
        where = shared if how == "group" else shared.parent
        os.chown(where, -1, gid)
        where.chmod(0o775)
    elif how == "sticky":
        shared.chmod(0o1777)
    elif how == "world":
        shared.chmod(0o777)
    elif how == "parent":
        shared.parent.chmod(0o777)
    else:
        if os.geteuid() != 0:
            pytest.skip("giving a directory to another user takes root")
        os.chown(shared, 65534, -1)
    (root / "zz.pth").write_text(f"{shared}\n", encoding="utf-8")
    assert MARK not in starts(v)
    checks = bad(run(root))
    assert list(checks) == ["pth:zz.pth:1:writable"]
    who = {"sticky": f"{shared} is writable by every user (the sticky bit stops removals, not additions)",
           "world": f"{shared} is writable by every user",
           "parent": f"{shared.parent} is writable by every user",
           "owner": f"{shared} is owned by another user (uid 65534)",
           "group": f"{shared} is writable by group {grp_name(gid)}, which holds ",
           "group-parent": f"{shared.parent} is writable by group {grp_name(gid)}, which holds "}[how]
    message = checks["pth:zz.pth:1:writable"].message
    assert message.startswith(f"zz.pth:1 adds {shared} to sys.path, and {who}"), message
    if how.startswith("group"):
        assert member in message.split("which holds ", 1)[1].split(":")[0].split(", "), message
    (shared / "sitecustomize.py").write_text(HOOK, encoding="utf-8")
    assert MARK in starts(v)  # what anyone can add there runs at every start


@pytest.mark.parametrize("mode", [0o755, 0o775, 0o1775])
def test_a_path_line_to_a_directory_only_its_owner_writes_passes(tmp_path: Path, mode: int) -> None:
    """0o775 with the owner's group (root's, here: no one else in it) and a sticky
    group-writable directory above are the owner's own write."""
    _v, root = venv(tmp_path)
    mine = tmp_path / "mine"
    mine.mkdir()
    mine.chmod(mode)
    assert not pthfiles._others_in_group(mine.stat().st_gid, os.getuid()), "premise: only its owner"
    (root / "zz.pth").write_text(f"{mine}\n", encoding="utf-8")
    assert bad(run(root)) == {}


def test_a_sticky_group_writable_directory_above_passes(tmp_path: Path) -> None:
    """The sticky bit above stops the group renaming the directory away: only the
    directory itself being group-writable matters."""
    if os.geteuid() != 0:
        pytest.skip("giving a directory to another group takes root")
    _v, root = venv(tmp_path)
    mine = tmp_path / "up" / "mine"
    mine.mkdir(parents=True, mode=0o755)
    os.chown(mine.parent, -1, another_users_group()[0])
    mine.parent.chmod(0o1775)
    (root / "zz.pth").write_text(f"{mine}\n", encoding="utf-8")
    assert bad(run(root)) == {}


# --- 6. a digest that is the same on every host ---------------------------------------------


def test_identical_venvs_on_other_hosts_share_a_startup_digest(tmp_path: Path) -> None:
    """``home``, ``executable``, ``command`` and ``version`` name the host: two venvs
    that start the same have one digest; one that lets the system site-packages in
    another."""
    digests = []
    for n, home in enumerate([None, fake_base(tmp_path / "b", interpreter=False)]):
        (tmp_path / str(n)).mkdir()
        v, root = venv(tmp_path / str(n), home=home)
        with open(v / "pyvenv.cfg", "a", encoding="utf-8") as f:
            f.write(f"version = 3.11.{n}\nexecutable = /host{n}/bin/python3.11\n"
                    f"command = /host{n}/bin/python3.11 -m venv {v}\n")
        digests.append(run(root)["startup"].actual)
    assert digests[0] == digests[1] == hashlib.sha256(cfg_line("false")).hexdigest()
    (v / "pyvenv.cfg").write_text((v / "pyvenv.cfg").read_text(encoding="utf-8").replace("= false", "= TRUE"),
                                  encoding="utf-8")
    assert run(root)["startup"].actual == hashlib.sha256(cfg_line("true")).hexdigest()


# --- 7. a stale release line ------------------------------------------------------------------


def test_a_stale_release_line_is_a_note_and_a_clean_venv_passes(tmp_path: Path) -> None:
    v, root = venv(tmp_path, f"include-system-site-packages = false\nversion = {OTHER}\n")
    with_hack(root)
    checks = run(root)
    assert bad(checks) == {}
    cfg = v / "pyvenv.cfg"
    assert f"{cfg} states Python {OTHER} (version in {cfg}), but the interpreter that runs is Python " \
        f"{RELEASE} ({v / 'bin' / 'python'}, the interpreter running pp1audit): Python never reads that " \
        f"line (stale after an upgrade in place, or untrue); bytecode is judged as Python {RELEASE}'s" \
        in checks["shadowing"].message


# --- 8. the audited RECORD parsed once --------------------------------------------------------


def test_the_audited_record_is_parsed_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    v, root = venv(tmp_path)
    with_script(v, root)
    (v / "bin" / "json.py").write_text(HOOK, encoding="utf-8")
    parsed: list[str] = []
    real = shadowing.parse_record

    def counting(data: bytes, where: str):  # type: ignore[no-untyped-def]
        parsed.append(where)
        return real(data, where)

    monkeypatch.setattr(shadowing, "parse_record", counting)
    assert list(bad(run(root))) == [f"shadow:{v / 'bin' / 'json.py'}"]  # the script directory is judged
    assert "pkg-1.0.dist-info/RECORD" not in parsed


# --- 9. a package directory beside the console script ---------------------------------------


def test_a_package_directory_beside_the_script_is_called_one(tmp_path: Path) -> None:
    v, root = venv(tmp_path)
    script = with_script(v, root, body="import pkg, torch\n")
    torch = v / "bin" / "torch"
    torch.mkdir()
    (torch / "__init__.py").write_text(HOOK, encoding="utf-8")
    assert MARK in runs(script).stderr
    checks = run(root)
    assert list(bad(checks)) == [f"shadow:{torch}"]
    assert bad(checks)[f"shadow:{torch}"].message.endswith(
        "; it is a package directory, which no installed distribution's RECORD installs there")
    assert "cannot be read" not in bad(checks)[f"shadow:{torch}"].message


# --- 10. a bin/python that is a script --------------------------------------------------------


def test_a_venv_interpreter_replaced_by_a_wrapper_script_fails(tmp_path: Path) -> None:
    v, root = venv(tmp_path)
    script = with_script(v, root)
    exe = v / "bin" / "python"
    exe.unlink()
    exe.write_text(f"#!/bin/bash\necho '{MARK}' >&2\nexec -a \"$0\" {BASE_EXE} \"$@\"\n", encoding="utf-8")
    exe.chmod(0o755)
    import subprocess

    out = subprocess.run([str(script)], capture_output=True, text=True, timeout=60, cwd="/")
    assert MARK in out.stderr and "pkg from" in out.stdout  # the console script runs through it
    checks = bad(run(root))
    assert list(checks) == [f"shadow:{exe}"]
    assert checks[f"shadow:{exe}"].message.startswith(f"{exe} is a script (it starts with '#!'), not an "
                                                       "interpreter: the console scripts name it")


# --- 10. top-level modules no RECORD lists --------------------------------------------------


@pytest.mark.parametrize(("form", "code", "cid"), [
    ("torch", "import pkg, torch", "shadow:torch"),   # vLLM imports torch
    ("nt.py", "import pathlib", "shadow:nt.py"),      # pathlib imports ntpath, which tries nt
])
def test_a_top_level_module_no_record_lists_fails(tmp_path: Path, form: str, code: str, cid: str) -> None:
    import subprocess

    v, root = venv(tmp_path)
    if form == "torch":
        (root / "torch").mkdir()
        (root / "torch" / "__init__.py").write_text(HOOK, encoding="utf-8")
    else:
        (root / form).write_text(HOOK, encoding="utf-8")
    out = subprocess.run([str(v / "bin" / "python"), "-I", "-c", code], capture_output=True, text=True,
                         timeout=60, cwd="/")
    assert MARK in out.stderr  # the premise
    checks = bad(run(root))
    assert list(checks) == [cid]
    module = form.split(".")[0]
    assert checks[cid].message.startswith(
        f"{form} is importable as '{module}' from the site directory, and no installed distribution's RECORD "
        f"lists it: any 'import {module}'")


def test_what_no_import_reaches_or_an_installer_lists_passes(tmp_path: Path) -> None:
    import subprocess

    v, root = venv(tmp_path)
    (root / "json").mkdir()  # the standard library's json is found first
    (root / "json" / "__init__.py").write_text(HOOK, encoding="utf-8")
    (root / "empty").mkdir()
    (root / "caches" / "__pycache__").mkdir(parents=True)
    (root / "caches" / "__pycache__" / "mod.cpython-311.pyc").write_bytes(b"")
    (root / "README.txt").write_text("", encoding="utf-8")
    (root / "not-a-name.py").write_text(HOOK, encoding="utf-8")
    (root / "legacy").mkdir()  # installed by setuptools of old: an egg-info, no RECORD
    (root / "legacy" / "__init__.py").write_text("", encoding="utf-8")
    (root / "legacy-1.0-py3.11.egg-info").mkdir()
    (root / "legacy-1.0-py3.11.egg-info" / "PKG-INFO").write_text("Name: legacy\nVersion: 1.0\n",
                                                                   encoding="utf-8")
    (root / "legacy-1.0-py3.11.egg-info" / "top_level.txt").write_text("legacy\n", encoding="utf-8")
    out = subprocess.run([str(v / "bin" / "python"), "-I", "-c", "import json"], capture_output=True,
                         text=True, timeout=60, cwd="/")
    assert MARK not in out.stderr  # the premise
    assert bad(run(root)) == {}


@pytest.mark.vllm
def test_a_pip_made_vllm_venv_has_no_finding(vllm_venv: Path) -> None:
    from pp1audit.checks.bytecode import VerifiedCache

    where = setuptools_site(vllm_venv)  # the expected set names setuptools' hook

    rep = shadowing.check_shadowing(shadowing.DirInventory(str(where)), "vllm", "vllm-0.31.0.dist-info",
                                    VerifiedCache(None), site_dir=str(where))
    assert rep.findings == []
    assert rep.script_dirs == [os.path.realpath(where / ".." / ".." / ".." / "bin")]
    assert [p for p, _ in rep.startup_files()] == [
        "../../../bin/vllm", "../../../pyvenv.cfg", "_distutils_hack/__init__.py",
        "_distutils_hack/override.py", "distutils-precedence.pth"]
