"""What Python's startup really does with a site directory, where the shadowing
check used to model it differently (a reviewer's reproductions under each test).

Each premise ("Python would run it") is shown with the real interpreter where
the running one can show it, as in ``test_shadowing_hooks``.
"""

from __future__ import annotations

import importlib.util
import os
import py_compile
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from recordtrees import bad, install, record_row, run, swap_pyc, wheel_of
from startuptrees import BASE_EXE, HOOK, PYVER, add_rows, fake_base, starts, venv, with_hack

from pp1audit.checks import pthimports

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX prefix layout and symlinks")


@pytest.fixture(autouse=True)
def _no_user_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PP1AUDIT_NO_CACHE", "1")




# --- hash-less rows for files that are not there (virtualenv's seeder) -----------------------


def test_hashless_rows_for_absent_files_of_a_vouched_module_pass(tmp_path: Path) -> None:
    """virtualenv (tox, hatch, poetry) seeds setuptools with rows such as
    ``_distutils_hack/override.cpython-311.pyc,,`` and ``_distutils_hack/__pycache__,,``
    for files it never writes: nothing there to run, so nothing fails."""
    root = with_hack(install(tmp_path / "site"))
    add_rows(root, "hack-1.0.dist-info", [["_hack/override.cpython-311.pyc", "", ""],
                                          ["_hack/__init__.cpython-311.pyc", "", ""],
                                          ["_hack/__pycache__", "", ""]])
    assert bad(run(root)) == {}
    # A hash-less row of a file that is there still fails: its content is unvouched.
    (root / "_hack" / "override.cpython-311.pyc").write_bytes(b"")
    assert list(bad(run(root))) == ["pth:hack-precedence.pth:_hack/override.cpython-311.pyc"]


# --- the site directory as site spells it: a symlinked site-packages -------------------------


def linked_venv(tmp_path: Path, home: Path, cfg: str = "include-system-site-packages = false\n"
                ) -> tuple[Path, Path]:
    """A venv whose ``site-packages`` is a symbolic link to a tree elsewhere (``pkg``
    installed there): (venv, the site-packages path through the link)."""
    real = install(tmp_path / "elsewhere" / "sp")
    v = tmp_path / "venv"
    (v / "lib" / PYVER).mkdir(parents=True)
    (v / "lib" / PYVER / "site-packages").symlink_to(real)
    (v / "bin").mkdir()
    (v / "bin" / "python").symlink_to(home / PYVER)
    (v / "pyvenv.cfg").write_text(f"home = {home}\n{cfg}", encoding="utf-8")
    return v, v / "lib" / PYVER / "site-packages"


def imports_pkg_from(v: Path) -> str:
    """Where the venv's interpreter imports ``pkg`` from."""
    return subprocess.run([str(v / "bin" / "python"), "-I", "-c", "import pkg; print(pkg.__file__)"],
                          capture_output=True, text=True, check=True, timeout=60, cwd="/").stdout.strip()


def test_a_symlinked_site_packages_is_judged_by_the_path_given(tmp_path: Path) -> None:
    """The layout and pyvenv.cfg come from the path given, as site builds it from
    sys.prefix: the resolved one (``elsewhere/sp``) is no ``lib/pythonX.Y/site-packages``,
    and the stdlib check went quiet."""
    home = fake_base(tmp_path)
    stdlib = home.parent / "lib" / PYVER
    (stdlib / "pkg").mkdir()
    (stdlib / "pkg" / "__init__.py").write_text(HOOK, encoding="utf-8")
    v, site = linked_venv(tmp_path, home)
    assert imports_pkg_from(v) == str(stdlib / "pkg" / "__init__.py")  # the premise
    assert list(bad(run(site))) == [f"shadow:{stdlib / 'pkg'}"]
    # Given by where it leads, the layout is not recognised: the summary says so.
    summary = run(site.resolve())["shadowing"].message
    assert (f"{site.resolve()} is not laid out as <prefix>/lib/pythonX.Y/site-packages: the base "
            "standard library, pyvenv.cfg and the system site-packages were not looked at") in summary


def test_a_relative_path_line_is_joined_to_the_path_given(tmp_path: Path) -> None:
    """``../hookdir`` from ``venv/lib/pythonX.Y/site-packages`` (a link) is
    ``venv/lib/pythonX.Y/hookdir`` for site (``os.path.abspath``), not a
    directory beside the link's target."""
    v, site = linked_venv(tmp_path, Path(os.path.dirname(BASE_EXE)))
    hookdir = v / "lib" / PYVER / "hookdir"
    hookdir.mkdir()
    (hookdir / "sitecustomize.py").write_text(HOOK, encoding="utf-8")
    (site / "zz.pth").write_text("../hookdir\n", encoding="utf-8")
    assert "MARK: startup hook ran" in starts(v)  # the premise
    assert "pth:zz.pth:1:sitecustomize.py" in bad(run(site))


# --- pyvenv.cfg read as getpath and site read it --------------------------------------------

# Characters str.splitlines ends a line at and neither reader does.
NOT_LINE_ENDS = ["\x0c", "\x1c", "\x85", "\u2028"]


@pytest.mark.parametrize("sep", [*NOT_LINE_ENDS, "\r"])  # getpath splits at \n only
def test_home_hidden_in_a_line_is_not_the_first_home(tmp_path: Path, sep: str) -> None:
    home = fake_base(tmp_path)
    stdlib = home.parent / "lib" / PYVER
    (stdlib / "pkg").mkdir()
    (stdlib / "pkg" / "__init__.py").write_text(HOOK, encoding="utf-8")
    v, root = venv(tmp_path, home=home)
    (v / "pyvenv.cfg").write_text(f"x = 1{sep}home = {os.path.dirname(BASE_EXE)}\nhome = {home}\n"
                                  "include-system-site-packages = false\n", encoding="utf-8", newline="")
    assert imports_pkg_from(v) == str(stdlib / "pkg" / "__init__.py")  # the premise
    assert list(bad(run(root))) == [f"shadow:{stdlib / 'pkg'}"]


@pytest.mark.parametrize("sep", NOT_LINE_ENDS)
def test_a_hidden_last_include_system_site_packages_is_not_the_last(tmp_path: Path, sep: str) -> None:
    home = fake_base(tmp_path)
    base_site = home.parent / "lib" / PYVER / "site-packages"
    (base_site / "b.pth").write_text(HOOK, encoding="utf-8")
    v, root = venv(tmp_path, "include-system-site-packages = true\n"
                   f"x = 1{sep}include-system-site-packages = false\n", home=home)
    assert "MARK: startup hook ran" in starts(v)  # the premise
    assert list(bad(run(root))) == [f"pth:{base_site}/b.pth"]


def test_a_pyvenv_cfg_getpath_refuses_is_named(tmp_path: Path) -> None:
    v, root = venv(tmp_path)
    with open(v / "pyvenv.cfg", "a", encoding="utf-8") as f:
        f.write("#" * (32 << 10))
    probe = subprocess.run([str(v / "bin" / "python"), "-I", "-c", "pass"], capture_output=True,
                           text=True, timeout=60)
    assert probe.returncode != 0 and "larger than 32KB" in probe.stderr  # the premise
    assert (f"{v / 'pyvenv.cfg'} is 32 KiB or more: Python refuses to start with such a pyvenv.cfg "
            "(nothing runs)") in run(root)["shadowing"].message


# --- sitecustomize / usercustomize verified as modules ---------------------------------------


def hook_dist(root: Path, files: dict[str, str]) -> Path:
    """A distribution installing a startup hook as pip installs it: its files, their
    bytecode (listed without a hash) and a RECORD."""
    rows = []
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
        rows.append(record_row(root, rel))
        pyc = importlib.util.cache_from_source(str(root / rel))
        py_compile.compile(str(root / rel), cfile=pyc, doraise=True)
        rows.append([os.path.relpath(pyc, root), "", ""])
    meta = root / "hook-1.0.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text("Name: hook\nVersion: 1.0\n", encoding="utf-8")
    rows += [record_row(root, "hook-1.0.dist-info/METADATA"), ["hook-1.0.dist-info/RECORD", "", ""]]
    add_rows(root, "hook-1.0.dist-info", rows)
    return root


def test_a_sitecustomize_package_a_record_installs_passes(tmp_path: Path) -> None:
    """``pip install sitecustomize-entrypoints`` installs a ``sitecustomize/`` package."""
    root = hook_dist(install(tmp_path / "site"), {"sitecustomize/__init__.py": "from ._impl import run\n",
                                                  "sitecustomize/_impl.py": "def run():\n    pass\n"})
    checks = run(root)
    assert bad(checks) == {}
    assert ("sitecustomize runs at startup, vouched for by hook-1.0.dist-info: sitecustomize (2 file(s) "
            "matching it, 2 bytecode file(s) verified as their sources compiled)"
            ) in checks["shadowing"].message
    (root / "sitecustomize" / "extra.py").write_text(HOOK, encoding="utf-8")
    assert list(bad(run(root))) == ["shadow:sitecustomize/extra.py"]


def test_tampered_bytecode_of_a_vouched_sitecustomize_fails(tmp_path: Path) -> None:
    """A pyc whose header matches the source's mtime and size: Python runs it, while
    the source still matches RECORD."""
    v, root = venv(tmp_path)
    hook_dist(root, {"sitecustomize.py": "pass\n"})
    pyc = swap_pyc(root / "sitecustomize.py", HOOK)
    assert "MARK: startup hook ran" in starts(v)  # the premise
    checks = bad(run(root))
    cid = f"shadow:{pyc.relative_to(root).as_posix()}"
    assert list(checks) == [cid]
    assert "tampered bytecode: Python would run this instead of sitecustomize.py" in checks[cid].message


# --- what a vouched .pth imports through exec / eval / compile -------------------------------


def test_code_run_through_exec_strings_is_read_for_imports() -> None:
    imports = pthimports.pth_imports([
        "import sys; exec('import os\\n\\nif os.getenv(\"X\"):\\n try:\\n  import cov\\n except:\\n  pass')",
        "exec(u'exec(\"from deep.er import x\")'); eval(\"__import__('ev')\")",
        "exec(compile(source='import comp', filename='<pth>', mode='exec'))",
        "exec(b'import by'); exec('import ' + 'folded'); builtins.exec('import attr')",
        "exec('import ((( no parse')",
    ])
    assert imports.modules == ["attr", "by", "comp", "cov", "deep", "ev", "folded", "os", "sys"]
    assert imports.dynamic == []


@pytest.mark.parametrize("line", [
    "import os; exec(os.environ.get('CODE', ''))",
    "import base64; exec(base64.b64decode('aW1wb3J0IHg='))",
    "import os; __import__(os.environ['MOD'])",
    "import importlib; importlib.import_module(*['x'])",
    "exec(compile(open('/tmp/x').read(), 'x', 'exec'))",
])
def test_code_or_a_name_computed_at_run_time_is_dynamic(line: str) -> None:
    assert pthimports.pth_imports([line]).dynamic != []


def test_a_module_imported_in_an_exec_string_is_verified(tmp_path: Path) -> None:
    """coverage's ``a1_coverage.pth``: ``import sys; exec('…import coverage…')``."""
    v, root = venv(tmp_path)
    with_hack(root, pth="import sys; exec('import _hack')\n")
    assert bad(run(root)) == {}
    with open(root / "_hack" / "__init__.py", "a", encoding="utf-8") as f:
        f.write(HOOK)
    assert "MARK: startup hook ran" in starts(v)  # the premise
    assert list(bad(run(root))) == ["pth:hack-precedence.pth:_hack/__init__.py"]


def test_code_a_vouched_pth_computes_at_run_time_fails(tmp_path: Path) -> None:
    root = with_hack(install(tmp_path / "site"),
                     pth="import os; exec(os.environ.get('HACK_CODE', 'import _hack'))\n")
    checks = bad(run(root))
    assert list(checks) == ["pth:hack-precedence.pth:dynamic"]
    assert checks["pth:hack-precedence.pth:dynamic"].message == (
        "hack-precedence.pth (vouched for by hack-1.0.dist-info) runs code at every interpreter start "
        "that it computes at run time: exec(os.environ.get('HACK_CODE', 'import _hack')); what that "
        "imports cannot be determined, so nothing vouches for the code it runs")


def test_a_module_another_distribution_installs_is_verified_against_its_record(tmp_path: Path) -> None:
    """coverage-enable-subprocess's ``.pth`` imports coverage, which coverage's RECORD
    installs: verified against that RECORD, not failed as unvouched."""
    root = with_hack(install(tmp_path / "site"), pth="import _hack, _other\n")
    (root / "_other.py").write_text("X = 1\n", encoding="utf-8")
    meta = root / "other-1.0.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text("Name: other\nVersion: 1.0\n", encoding="utf-8")
    add_rows(root, "other-1.0.dist-info", [record_row(root, "_other.py"),
                                           ["other-1.0.dist-info/RECORD", "", ""]])
    checks = run(root)
    assert bad(checks) == {}
    assert "_other (1 file(s) matching it, 0 bytecode file(s) verified as their sources compiled) " \
        "installed by other-1.0.dist-info" in checks["shadowing"].message
    (root / "_other.py").write_text(HOOK, encoding="utf-8")
    assert list(bad(run(root))) == ["pth:hack-precedence.pth:_other.py"]


# --- .pth files as the target interpreter's version reads them ------------------------------

BOM_PTH = b"\xef\xbb\xbfimport sys; print('MARK: bom.pth ran', file=sys.stderr)\n"
FF_PTH = b"# a comment\x0cimport sys; print('MARK: ff.pth ran', file=sys.stderr)\n"


def versioned_venv(tmp_path: Path, version: str, exe: str | None = None) -> tuple[Path, Path]:
    """A venv laid out for Python ``version`` (``3.13``), ``pkg`` installed without
    bytecode, ``bom.pth`` and ``ff.pth`` in it; its ``bin/python`` is ``exe``."""
    v = tmp_path / f"venv{version}"
    root = install(v / "lib" / f"python{version}" / "site-packages", compile_pyc=False)
    (root / "bom.pth").write_bytes(BOM_PTH)
    (root / "ff.pth").write_bytes(FF_PTH)
    (root / ".hidden.pth").write_bytes(BOM_PTH[3:])
    (v / "bin").mkdir()
    home = os.path.dirname(exe) if exe else "/nonexistent/bin"
    if exe:
        (v / "bin" / "python").symlink_to(exe)
    (v / "pyvenv.cfg").write_text(f"home = {home}\ninclude-system-site-packages = false\n",
                                  encoding="utf-8")
    return v, root


@pytest.mark.parametrize(("version", "modern"), [("3.11", False), ("3.12", False), ("3.13", True),
                                                 ("3.14", True)])
def test_a_pth_is_read_as_the_target_version_reads_it(tmp_path: Path, version: str, modern: bool) -> None:
    """3.13's site strips a BOM, splits with str.splitlines and skips names starting
    with '.'; 3.11 and 3.12 keep the BOM in the first line, split at line ends only,
    and read every name."""
    _v, root = versioned_venv(tmp_path, version)
    checks = run(root)
    if modern:
        assert set(bad(checks)) == {"pth:bom.pth", "pth:ff.pth"}
        assert ("bom.pth executes code at every interpreter start (no installed distribution's "
                "RECORD lists it): line 1: import sys;") in checks["pth:bom.pth"].message
        assert ("ff.pth executes code at every interpreter start (no installed distribution's "
                "RECORD lists it): line 2: import sys;") in checks["pth:ff.pth"].message
        assert (f".hidden.pth is not read: Python {version} skips a .pth whose name starts "
                "with '.'") in checks["shadowing"].message
    else:
        assert set(bad(checks)) == {"pth:.hidden.pth"}


def _interpreter(version: str) -> str | None:
    """A ``python<version>`` to show a premise with, if one runs here."""
    if f"{sys.version_info.major}.{sys.version_info.minor}" == version:
        return BASE_EXE
    found = shutil.which(f"python{version}")
    if found is None:
        return None
    try:
        real = subprocess.run([found, "-c", "import sys; print(sys._base_executable)"],
                              capture_output=True, text=True, check=True, timeout=60).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return os.path.realpath(real)


@pytest.mark.parametrize("version", ["3.11", "3.12", "3.13"])
def test_the_premise_with_the_real_interpreter(tmp_path: Path, version: str) -> None:
    exe = _interpreter(version)
    if exe is None:
        pytest.skip(f"no python{version} here")
    v, root = versioned_venv(tmp_path, version, exe)
    (root / ".hidden.pth").unlink()
    out = starts(v)
    ran = {name for name in ("bom.pth", "ff.pth") if f"MARK: {name} ran" in out}
    assert ran == ({"bom.pth", "ff.pth"} if version >= "3.13" else set())
    assert set(bad(run(root))) & {"pth:bom.pth", "pth:ff.pth"} == {f"pth:{name}" for name in ran}


def test_a_wheel_pth_gets_the_lines_of_every_version(tmp_path: Path) -> None:
    """A wheel installs into any version: a line either reading runs is judged."""
    root = install(tmp_path / "site", compile_pyc=False)
    whl = wheel_of(root, tmp_path, {"ff.pth": FF_PTH.decode()})
    assert list(bad(run(whl))) == ["pth:ff.pth"]


# --- a distribution's own packages in the system site-packages ------------------------------


def test_a_pth_without_record_in_the_system_site_packages_fails_and_says_how_to_leave_it_out(
        tmp_path: Path) -> None:
    """Debian's python3-setuptools ships /usr/lib/python3/dist-packages/distutils-precedence.pth
    with an egg-info and no RECORD: a venv that lets the system site-packages in runs
    it, and nothing the audit reads vouches for it, so it fails (the directory is not
    trusted wholesale: anything else dropped there would be too); the message says
    which setting leaves it out."""
    home = fake_base(tmp_path)
    base_site = home.parent / "lib" / PYVER / "site-packages"
    (base_site / "distutils-precedence.pth").write_text(HOOK, encoding="utf-8")
    (base_site / "setuptools-66.1.1.egg-info").mkdir()
    (base_site / "setuptools-66.1.1.egg-info" / "PKG-INFO").write_text("Name: setuptools\n", encoding="utf-8")
    v, root = venv(tmp_path, "include-system-site-packages = true\n", home=home)
    assert "MARK: startup hook ran" in starts(v)  # the premise
    shown = f"{base_site}/distutils-precedence.pth"
    checks = bad(run(root))
    assert list(checks) == [f"pth:{shown}"]
    assert checks[f"pth:{shown}"].message.startswith(
        f"{shown} executes code at every interpreter start (no installed distribution's RECORD lists "
        "it; it is in the system site-packages, which a venv with include-system-site-packages = false "
        "leaves out): line 1: ")
