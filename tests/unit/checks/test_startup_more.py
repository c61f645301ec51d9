"""What Python really executes, as a user test of ``check --record`` found it missed.

1. ``pyvenv.cfg``'s ``version`` line (which Python never reads) turned tampered
   bytecode of a startup module into a pass. Such bytecode under another release
   is now a ``skip`` check, as the package's own is; and when the release that
   runs is known otherwise (the venv's ``bin/python`` or its ``home`` is the
   interpreter running the audit, or its standard library is), the bytecode is
   judged as that release's and a contradicting ``version`` is named in a note
   (it was a failure until the review of dea2ffb: a stale line after an upgrade
   in place closed the gate for nothing). ``pyvenv.cfg`` is in the startup digest.
2. A console script runs with its own directory first on ``sys.path``: a
   ``bin/pkg.py`` is the package it imports, a ``bin/json.py`` the ``json``.
3. Entry points in a directory a ``.pth`` path line adds were passed over when
   their metadata directory's *name* repeated an earlier distribution's, though
   ``importlib.metadata`` keys it by METADATA's ``Name`` (``pip-99.DIST-INFO``,
   an egg's ``EGG-INFO``) and loads them.
4. A path line to a directory that does not exist yet was silent and outside the
   startup digest: anyone able to create it arms it later. Every ``.pth`` is in
   the digest now.

Each premise ("Python would run it") is shown with the real interpreter of a
hand-made venv (``test_shadowing_hooks.venv``).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_cli
from recordtrees import bad, record_row, run, swap_pyc
from startuptrees import (
    HACK,
    HOOK,
    MARK,
    OTHER,
    PYVER,
    add_dist,
    cfg_line,
    fake_base,
    runs,
    starts,
    unrecognised_binary,
    venv,
    with_hack,
    with_script,
)

from pp1audit.checks.bytecode import RELEASE

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX prefix layout and symlinks")



@pytest.fixture(autouse=True)
def _no_user_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PP1AUDIT_NO_CACHE", "1")


def manifest(tmp_path: Path) -> Path:
    man = tmp_path / "m.yaml"
    man.write_text("pp1audit: 1\ntarget: {package: pkg}\n", encoding="utf-8")
    return man


# --- 1. pyvenv.cfg's release line --------------------------------------------------------


def stdlib_base(tmp_path: Path) -> Path:
    """A base prefix whose ``lib/pythonX.Y`` is a link to the running interpreter's
    standard library and whose ``bin`` holds no interpreter: its ``bin``."""
    real = Path(os.__file__).parent
    base = tmp_path / "stdbase"
    (base / "lib").mkdir(parents=True)
    (base / "lib" / PYVER).symlink_to(real)
    (base / "bin").mkdir()
    return base / "bin"


@pytest.mark.parametrize("home", ["interpreter", "stdlib"])
def test_a_release_line_the_home_interpreter_contradicts_is_a_note_and_bytecode_is_judged(
        tmp_path: Path, home: str) -> None:
    """``home`` names the interpreter running the audit (or its standard library), so
    its release is known: ``version = <other>`` plays no part (a note, review item 7:
    stale after an upgrade in place, or untrue), and the tampered bytecode of the
    module the ``.pth`` imports, and of the package, fails as tampered."""
    base = stdlib_base(tmp_path) if home == "stdlib" else None
    v, root = venv(tmp_path, f"include-system-site-packages = false\nversion = {OTHER}\n", home=base)
    if home == "stdlib":
        unrecognised_binary(v)  # only the standard library tells
    with_hack(root)
    hack = swap_pyc(root / "_hack" / "__init__.py", HOOK + HACK).relative_to(root).as_posix()
    own = swap_pyc(root / "pkg" / "mod.py", "def answer():\n    return 41\n").relative_to(root).as_posix()
    assert MARK in starts(v)  # the premise: it runs at every start
    checks = run(root)
    assert sorted(bad(checks)) == sorted([f"pth:hack-precedence.pth:{hack}", f"bytecode:{own}"])
    assert {c.status.value for c in bad(checks).values()} == {"fail"}
    cfg = f"{v / 'pyvenv.cfg'}"
    summary = checks["shadowing"].message
    assert (f"{cfg} states Python {OTHER} (version in {cfg}), but the interpreter that runs is Python "
            f"{RELEASE} (") in summary, summary
    assert ("the interpreter running pp1audit" if home == "interpreter"
            else "the standard library of the Python running pp1audit") in summary
    assert "tampered bytecode" in checks[f"pth:hack-precedence.pth:{hack}"].message


def test_a_true_release_line_and_none_say_nothing(tmp_path: Path) -> None:
    v, root = venv(tmp_path, f"include-system-site-packages = false\nversion = {RELEASE}\n")
    assert bad(run(root)) == {}
    (v / "pyvenv.cfg").write_text(f"home = {os.path.dirname(os.path.realpath(sys._base_executable))}\n"  # type: ignore[attr-defined]
                                  "include-system-site-packages = false\n", encoding="utf-8")
    assert bad(run(root)) == {}


def test_startup_bytecode_under_another_release_is_a_skip_the_text_output_shows(tmp_path: Path) -> None:
    """``home`` names nothing the audit can read a release from: the stated one is
    believed, and a differing pyc of a startup module is a ``skip`` naming the file
    and the release, in the text output too; ``--require-all`` closes the gate."""
    v, root = venv(tmp_path, f"include-system-site-packages = false\nversion = {OTHER}\n",
                   home=fake_base(tmp_path, interpreter=False))
    unrecognised_binary(v)
    with_hack(root)
    hack = swap_pyc(root / "_hack" / "__init__.py", HOOK + HACK).relative_to(root).as_posix()
    assert MARK in starts(v)
    checks = bad(run(root))
    cid = f"pth:hack-precedence.pth:other:{hack}"
    assert list(checks) == [cid] and checks[cid].status.value == "skip"
    man = str(manifest(tmp_path))
    text = run_cli("check", str(root), "-m", man, "--record", env={"PP1AUDIT_NO_CACHE": "1"})
    assert text.returncode == 0, text.stdout + text.stderr
    line = next(x for x in text.stdout.splitlines() if cid in x)
    assert line.startswith("skip") and f"runs Python {OTHER} (version in {v / 'pyvenv.cfg'})" in line, line
    gated = run_cli("check", str(root), "-m", man, "--record", "--require-all",
                    env={"PP1AUDIT_NO_CACHE": "1"})
    assert gated.returncode == 1, gated.stdout + gated.stderr




def test_pyvenv_cfg_is_in_the_startup_digest_wherever_the_venv_lives(tmp_path: Path) -> None:
    """It decides what starts (``include-system-site-packages``): a change fails the
    pin. Named relative to the site directory, so a venv moved keeps its digest."""
    v, root = venv(tmp_path, home=fake_base(tmp_path))  # an empty system site-packages
    digest = run(root)["startup"].actual
    assert digest == hashlib.sha256(cfg_line("false")).hexdigest()
    moved = tmp_path / "elsewhere"
    shutil.copytree(v, moved, symlinks=True)
    assert run(moved / "lib" / PYVER / "site-packages")["startup"].actual == digest
    cfg = (v / "pyvenv.cfg").read_bytes()
    (v / "pyvenv.cfg").write_bytes(cfg.replace(b"= false", b"= true"))
    assert list(bad(run(root, startup_sha256=digest))) == ["startup"]


# --- 2. the console script's directory ----------------------------------------------------






def test_a_clean_console_script_directory_passes(tmp_path: Path) -> None:
    v, root = venv(tmp_path)
    script = with_script(v, root)
    assert runs(script).stdout.startswith(f"pkg from {root}")
    assert bad(run(root)) == {}
    assert f"looked ahead on sys.path in {v / 'bin'}" in run(root)["shadowing"].message


@pytest.mark.parametrize("form", ["module", "package", "namespace"])
def test_the_package_beside_the_console_script_fails(tmp_path: Path, form: str) -> None:
    v, root = venv(tmp_path)
    script = with_script(v, root)
    if form == "module":
        evil = v / "bin" / "pkg.py"
        evil.write_text(HOOK, encoding="utf-8")
    else:
        evil = v / "bin" / "pkg"
        evil.mkdir()
        (evil / ("__init__.py" if form == "package" else "mod.py")).write_text(HOOK, encoding="utf-8")
    out = runs(script)
    if form != "namespace":  # a namespace portion loses to the regular package, a copy all the same
        assert MARK in out.stderr and f"pkg from {evil}" in out.stdout  # the premise
    checks = bad(run(root))
    assert list(checks) == [f"shadow:{evil}"]
    assert checks[f"shadow:{evil}"].message == (
        f"another 'pkg' at {evil} is ahead of the audited copy on sys.path when the console script "
        f"{script} runs (Python puts the script's directory first): Python imports that one")


def test_another_module_beside_the_console_script_fails_unless_a_record_lists_it(tmp_path: Path) -> None:
    v, root = venv(tmp_path)
    script = with_script(v, root)
    evil = v / "bin" / "json.py"
    evil.write_text(HOOK, encoding="utf-8")
    assert MARK in runs(script).stderr  # even a standard-library name: the script's directory is first
    checks = bad(run(root))
    assert list(checks) == [f"shadow:{evil}"]
    assert checks[f"shadow:{evil}"].message.endswith(
        "runs this file instead of any installed one; no installed distribution's RECORD lists it")
    # Installed by a distribution whose RECORD lists it with its hash: named, not failed.
    meta = add_dist(root, "")
    with open(meta / "RECORD", "a", encoding="utf-8") as f:
        f.write(",".join(record_row(root, os.path.relpath(evil, root))) + "\n")
    checks = run(root)
    assert bad(checks) == {}
    assert f"{evil}, importable as 'json' beside the console script {script}, is installed by " \
        f"{meta.name} (matches its RECORD)" in checks["shadowing"].message
    evil.write_text(HOOK + "# changed\n", encoding="utf-8")
    assert bad(run(root))[f"shadow:{evil}"].message.endswith(f"; it differs from the {meta.name} RECORD")


def test_files_beside_the_script_that_are_no_modules_pass(tmp_path: Path) -> None:
    v, root = venv(tmp_path)
    with_script(v, root)
    for name in ("activate", "activate.fish", "Activate.ps1", "pip3.11", "python3.11-config", "x-y.py"):
        (v / "bin" / name).write_text("", encoding="utf-8")
    (v / "bin" / "__pycache__").mkdir()
    (v / "bin" / "activate_this.py").write_text("", encoding="utf-8")
    checks = run(root)
    assert bad(checks) == {}
    assert "virtualenv's activate_this.py" in checks["shadowing"].message


# --- 3. entry points judged whatever the metadata directory is called ----------------------

LOAD = """
from importlib.metadata import entry_points
for e in entry_points(group="pkg.plugins"):   # vLLM's load_plugins_by_group
    try:
        e.load()
        print("loaded", e.name)
    except Exception as x:
        print("failed", e.name, type(x).__name__)
"""


def loaded(v: Path) -> list[str]:
    out = subprocess.run([str(v / "bin" / "python"), "-I", "-c", LOAD], capture_output=True, text=True,
                         check=True, timeout=60, cwd="/").stdout
    return [line.split()[1] for line in out.splitlines() if line.startswith("loaded")]


@pytest.mark.parametrize(("directory", "meta", "metadata"), [
    ("extra", "pip-99.DIST-INFO", "METADATA"),
    ("pip-1.0.egg", "EGG-INFO", "PKG-INFO"),
])
def test_a_plugin_under_a_name_seen_earlier_is_judged(tmp_path: Path, directory: str, meta: str,
                                                      metadata: str) -> None:
    """The root holds ``pip``; a path line adds a directory whose metadata directory
    is named like pip but whose METADATA says ``evilplug``: importlib.metadata keys it
    by that Name and loads its plugin."""
    v, root = venv(tmp_path)
    add_dist(root, "[console_scripts]\npip = helper:main\n", meta="pip-23.2.1.dist-info")
    extra = root / directory
    (extra / meta).mkdir(parents=True)
    (extra / meta / metadata).write_text("Metadata-Version: 2.1\nName: evilplug\nVersion: 1.0\n",
                                         encoding="utf-8")
    (extra / meta / "entry_points.txt").write_text("[pkg.plugins]\nevil = evilmod:run\n", encoding="utf-8")
    (extra / "evilmod.py").write_text(f"{HOOK}def run(): pass\n", encoding="utf-8")
    (root / "zz.pth").write_text(f"{directory}\n", encoding="utf-8")
    assert loaded(v) == ["evil"]  # the premise
    where = f"{extra}/{meta}/entry_points.txt"
    # ``extra/`` is a top-level package no RECORD lists too (``import extra.evilmod``).
    unlisted = ["shadow:extra"] if directory.isidentifier() else []
    assert list(bad(run(root))) == [*unlisted, f"plugin:{where}:2"]


# --- 4. path lines to what does not exist yet; every .pth in the digest ----------------------


def test_a_path_line_to_a_missing_directory_fails_and_is_armed_later(tmp_path: Path) -> None:
    v, root = venv(tmp_path)
    later = tmp_path / "later"
    (root / "zz-later.pth").write_text(f"{later}\n", encoding="utf-8")
    assert MARK not in starts(v)
    checks = bad(run(root))
    assert list(checks) == ["pth:zz-later.pth:1"]
    assert checks["pth:zz-later.pth:1"].message.startswith(
        f"zz-later.pth:1 adds {later} to sys.path once it exists: a path that does not exist; anything "
        "created there later runs at start")
    later.mkdir()
    (later / "sitecustomize.py").write_text(HOOK, encoding="utf-8")
    assert MARK in starts(v)  # armed by whoever can create it


def test_a_dangling_link_on_a_path_line_counts_as_missing(tmp_path: Path) -> None:
    _v, root = venv(tmp_path)
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "nowhere")
    (root / "zz-later.pth").write_text(f"{link}\n", encoding="utf-8")
    assert list(bad(run(root))) == ["pth:zz-later.pth:1"]


def test_a_missing_path_inside_the_site_directory_is_a_note(tmp_path: Path) -> None:
    _v, root = venv(tmp_path)
    (root / "easy-install.pth").write_text("./gone-1.0.egg\n", encoding="utf-8")
    checks = run(root)
    assert bad(checks) == {}
    assert f"easy-install.pth:1 adds {root / 'gone-1.0.egg'} to sys.path once it exists (it does not; " \
        "inside the site directory)" in checks["shadowing"].message


def test_a_path_only_pth_changes_the_startup_digest(tmp_path: Path) -> None:
    """A ``.pth`` of path lines only decides what ``site`` imports: adding one fails the pin."""
    _v, root = venv(tmp_path)
    digest = run(root)["startup"].actual
    empty = tmp_path / "empty"
    empty.mkdir()
    pth = root / "zz-paths.pth"
    pth.write_text(f"{empty}\n", encoding="utf-8")
    checks = run(root, startup_sha256=digest)
    assert list(bad(checks)) == ["startup"]
    assert f"zz-paths.pth {hashlib.sha256(pth.read_bytes()).hexdigest()[:12]}" in checks["startup"].message
