"""Shadowing the first tests missed: the zipped standard library, and egg-info files.

* ``<base prefix>/lib/python311.zip`` is on ``sys.path`` before ``lib/python3.11``
  and site-packages (for a venv the base prefix is found from ``pyvenv.cfg``'s
  ``home``): a package in it is what ``import`` loads. The premise is shown with
  the real interpreter, started from a hand-made venv whose base is a fake prefix.
* A distutils-style ``pkg-0.1-py3.11.egg-info`` is a single PKG-INFO *file*;
  ``importlib.metadata`` reads it as a distribution like a directory.
"""

from __future__ import annotations

import importlib.machinery
import importlib.metadata
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from recordtrees import bad, install, run
from startuptrees import PYVER, ZIPNAME, venv_with_base, write_zip

from pp1audit.checks import startupzip


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX prefix layout and symlinks")
def test_package_in_the_base_zipped_stdlib_is_what_python_imports_and_is_reported(tmp_path: Path) -> None:
    """The real interpreter, run as the venv's ``bin/python``, imports ``pkg`` from the zip."""
    # The base interpreter's paths: run from a venv (a fresh CI), the venv's own
    # ``platstdlib`` names the venv, though the standard library is the base's.
    base_vars = {"base": sys.base_prefix, "platbase": sys.base_exec_prefix,
                 "installed_base": sys.base_prefix, "installed_platbase": sys.base_exec_prefix}
    paths = sysconfig.get_paths(vars=base_vars)
    stdlib = paths["stdlib"]
    if os.path.basename(stdlib) != PYVER or paths["platstdlib"] != stdlib:
        pytest.skip("this interpreter's standard library is not laid out as <prefix>/lib/pythonX.Y")
    venv, base = tmp_path / "venv", tmp_path / "base"
    root = install(venv / "lib" / PYVER / "site-packages")
    (base / "bin").mkdir(parents=True)
    (base / "lib").mkdir()
    (base / "lib" / PYVER).symlink_to(stdlib)  # the landmark (os.py) that makes base the prefix
    (base / "bin" / PYVER).symlink_to(os.path.realpath(sys._base_executable))  # type: ignore[attr-defined]
    (venv / "bin").mkdir()
    (venv / "bin" / "python").symlink_to(base / "bin" / PYVER)
    # The system site-packages (the real interpreter's, through the link) stay out:
    # this test is about the zip.
    (venv / "pyvenv.cfg").write_text(f"home = {base / 'bin'}\ninclude-system-site-packages = false\n",
                                     encoding="utf-8")
    zpath = write_zip(base / "lib" / ZIPNAME, {"pkg/__init__.py": "where = 'zip'\n"})

    probe = subprocess.run(
        [str(venv / "bin" / "python"), "-I", "-c",
         "import sys, pkg; print(sys.prefix); print(sys.base_prefix); print(pkg.__file__)"],
        capture_output=True, text=True, check=True, timeout=60)
    prefix, base_prefix, loaded = probe.stdout.splitlines()
    assert (prefix, base_prefix) == (str(venv), str(base))
    assert loaded == f"{zpath}/pkg/__init__.py"  # not the audited site-packages copy

    checks = run(root)
    assert set(bad(checks)) == {f"shadow:{zpath}/pkg"}
    assert checks[f"shadow:{zpath}/pkg"].message == (
        f"another 'pkg' at {zpath}/pkg is ahead of the audited copy on sys.path "
        "(zipped standard library): Python imports that one")
    assert str(zpath) in checks["shadowing"].message  # named among the places looked in


EXT = importlib.machinery.EXTENSION_SUFFIXES[0]


@pytest.mark.parametrize(("members", "shown", "imported"), [
    ({"pkg/__init__.py": ""}, "pkg", True),
    ({"pkg/__init__.pyc": ""}, "pkg", True),
    ({"pkg.py": ""}, "pkg.py", True),
    ({"pkg.pyc": ""}, "pkg.pyc", True),
    ({"pkg/": ""}, "pkg", False),  # a directory member alone
    ({"pkg/sub/mod.py": ""}, "pkg", False),
    ({f"pkg{EXT}": ""}, f"pkg{EXT}", False),
], ids=["package", "package-pyc", "module", "module-pyc", "dir-member", "member-under", "extension"])
def test_every_form_of_the_package_in_the_zip_is_reported(
        tmp_path: Path, members: dict[str, str], shown: str, imported: bool) -> None:
    root, base = venv_with_base(tmp_path)
    zpath = write_zip(base / "lib" / ZIPNAME, {"os.py": "", **members})
    checks = bad(run(root))
    assert list(checks) == [f"shadow:{zpath}/{shown}"]
    message = checks[f"shadow:{zpath}/{shown}"].message
    assert message.startswith(f"another 'pkg' at {zpath}/{shown} is ahead of the audited copy on sys.path")
    assert message.endswith("Python imports that one") == imported
    if not imported:
        assert "a second copy nonetheless" in message


def test_a_package_at_the_prefix_of_a_plain_install_is_found_too(tmp_path: Path) -> None:
    """No venv: the zip is ``<prefix>/lib/python311.zip`` beside the site-packages' stdlib."""
    lib = tmp_path / "prefix" / "lib"
    root = install(lib / PYVER / "site-packages")
    zpath = write_zip(lib / ZIPNAME, {"pkg.py": "answer = 0\n"})
    assert set(bad(run(root))) == {f"shadow:{zpath}/pkg.py"}


def test_names_that_only_look_alike_in_the_zip_pass(tmp_path: Path) -> None:
    root, base = venv_with_base(tmp_path)
    zpath = write_zip(base / "lib" / ZIPNAME, {
        "pkgx.py": "", "pkg_extra/__init__.py": "", "email/pkg.py": "", "PKG.py": "", "pkg.txt": ""})
    checks = run(root)
    assert bad(checks) == {}
    assert f"looked ahead on sys.path in {base / 'lib' / PYVER}, {zpath}" in checks["shadowing"].message


def test_a_missing_zip_says_nothing(tmp_path: Path) -> None:
    root, _base = venv_with_base(tmp_path)
    checks = run(root)
    assert bad(checks) == {}
    assert ZIPNAME not in checks["shadowing"].message


@pytest.mark.parametrize("kind", ["corrupt", "truncated", "directory", "fifo", "too-large"])
def test_an_unreadable_zip_is_a_note_not_a_crash(tmp_path: Path, kind: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    root, base = venv_with_base(tmp_path)
    zpath = base / "lib" / ZIPNAME
    expected = {"corrupt": "cannot be read (File is not a zip file)",
                "truncated": "cannot be read (",
                "directory": "is not a regular file; not opened",
                "fifo": "is not a regular file; not opened",
                "too-large": "over the 0 MiB read for its member list; not looked into"}[kind]
    if kind == "corrupt":
        zpath.write_bytes(b"not a zip at all\n" * 10)
    elif kind == "truncated":
        data = write_zip(zpath, {"pkg/__init__.py": "x = 1\n" * 100}).read_bytes()
        zpath.write_bytes(data[:-30])
    elif kind == "directory":
        (zpath / "pkg").mkdir(parents=True)
    elif kind == "fifo":
        if not hasattr(os, "mkfifo"):
            pytest.skip("needs FIFOs")
        os.mkfifo(zpath)  # opening it would block forever
    else:
        write_zip(zpath, {"pkg.py": ""})
        monkeypatch.setattr(startupzip, "STDLIB_ZIP_MAX", 10)
    checks = run(root)
    assert bad(checks) == {}
    assert f"{zpath} (on sys.path ahead of the audited copy) " in checks["shadowing"].message
    assert expected in checks["shadowing"].message


def test_sitecustomize_in_the_base_stdlib_is_named_not_failed(tmp_path: Path) -> None:
    """Debian and Ubuntu ship ``/usr/lib/python3.X/sitecustomize.py``: a note, not a failure."""
    root, base = venv_with_base(tmp_path)
    hook = base / "lib" / PYVER / "sitecustomize.py"
    hook.write_text("import os\n", encoding="utf-8")
    zpath = write_zip(base / "lib" / ZIPNAME, {"usercustomize.py": "import os\n"})
    checks = run(root)
    assert bad(checks) == {}
    summary = checks["shadowing"].message
    for path in (hook, f"{zpath}/usercustomize.py"):
        assert (f"{path} in the base interpreter's standard library is imported by site at every "
                "interpreter start, before any package; not audited here") in summary


def test_a_linked_sitecustomize_names_its_target(tmp_path: Path) -> None:
    root, base = venv_with_base(tmp_path)
    etc = tmp_path / "etc" / "sitecustomize.py"
    etc.parent.mkdir()
    etc.write_text("\n", encoding="utf-8")
    (base / "lib" / PYVER / "sitecustomize.py").symlink_to(etc)
    assert f"sitecustomize.py (-> {etc}) in the base" in run(root)["shadowing"].message


PKG_INFO = "Metadata-Version: 1.0\nName: {name}\nVersion: {version}\n"


@pytest.mark.parametrize("name", [
    "pkg-0.1-py3.11.egg-info", "pkg.egg-info", "Pkg-0.1.EGG-INFO", "pkg-0.1.dist-info"])
def test_a_metadata_file_is_a_second_distribution(tmp_path: Path, name: str) -> None:
    root = install(tmp_path / "site")
    (root / name).write_text(PKG_INFO.format(name="pkg", version="0.1"), encoding="utf-8")
    # The premise: importlib.metadata reads the file as a distribution of 'pkg'.
    found = sorted(d.version for d in importlib.metadata.distributions(name="pkg", path=[str(root)]))
    assert found == ["0.1", "1.0"]
    checks = bad(run(root))
    assert list(checks) == [f"shadow:{name}"]
    what = "a distutils-style egg-info file" if "egg" in name.lower() else "a metadata file, not a directory"
    assert checks[f"shadow:{name}"].message == (
        f"second installed distribution for 'pkg': {name} besides pkg-1.0.dist-info ({what}, which "
        "importlib.metadata reads as a distribution: an uninstall leftover or a second version)")


def test_metadata_files_of_other_projects_pass(tmp_path: Path) -> None:
    root = install(tmp_path / "site")
    for other in ("pkg_extra-1.0-py3.11.egg-info", "pkgx.egg-info", "other-0.1.dist-info"):
        (root / other).write_text(PKG_INFO.format(name=other.split("-")[0], version="1"), encoding="utf-8")
    assert [d.version for d in importlib.metadata.distributions(name="pkg", path=[str(root)])] == ["1.0"]
    assert bad(run(root)) == {}


def test_the_standard_library_is_found_by_its_landmark_as_getpath_finds_it(tmp_path: Path) -> None:
    """``home``'s parent holding a ``lib/pythonX.Y`` without ``os.py``: getpath passes
    over it and takes the one further up, with its landmark. Taking the first one (the
    simplification this replaced) looked for copies in a directory Python never uses,
    and a ``pkg`` in the real one passed (shown by an adversarial review with the real
    interpreter, ``import pkg`` loading it)."""
    venv, outer = tmp_path / "venv", tmp_path / "outer"
    root = install(venv / "lib" / PYVER / "site-packages")
    (outer / "b" / "bin").mkdir(parents=True)
    (outer / "b" / "lib" / PYVER).mkdir(parents=True)  # no landmark: not the prefix
    real = outer / "lib" / PYVER
    (real / "pkg").mkdir(parents=True)
    (real / "os.py").write_text("")
    (real / "pkg" / "__init__.py").write_text("evil = True\n")
    (venv / "pyvenv.cfg").write_text(f"home = {outer / 'b' / 'bin'}\n", encoding="utf-8")
    checks = run(root)
    assert set(bad(checks)) == {f"shadow:{real}/pkg"}, bad(checks)
    assert f"base standard library taken as {real}" in checks["shadowing"].message


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX venv layout")
@pytest.mark.parametrize("name", ["python", "python3"])
def test_a_pth_file_beside_the_interpreter_that_replaces_sys_path_fails(tmp_path: Path,
                                                                        name: str) -> None:
    """A real venv, the real interpreter: ``bin/<name>._pth`` lists a directory ahead of
    site-packages and ``import pkg`` runs the copy there; pp1audit passed it (nothing in
    the package, RECORD or the .pth files changed). Python 3.11+ reads it on Linux too."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    root = install(venv / "lib" / PYVER / "site-packages")
    probe = [str(venv / "bin" / name), "-c", "import pkg; print(pkg.__file__)"]
    clean = subprocess.run(probe, capture_output=True, text=True, check=True, timeout=60).stdout
    assert clean.strip() == str(root / "pkg" / "__init__.py")
    assert bad(run(root)) == {}
    evil = venv / "evil" / "pkg"
    evil.mkdir(parents=True)
    (evil / "__init__.py").write_text("")
    base = [p for p in sys.path if p.startswith(sys.base_prefix) and "site-packages" not in p]
    pth = venv / "bin" / f"{name}._pth"
    pth.write_text("\n".join(["../evil", *base, f"../lib/{PYVER}/site-packages", "import site"])
                   + "\n")
    loaded = subprocess.run(probe, capture_output=True, text=True, check=True, timeout=60).stdout
    assert loaded.strip() == str(evil / "__init__.py")  # Python runs the other copy
    checks = bad(run(root))
    assert set(checks) == {f"shadow:{pth}"}, checks
    assert checks[f"shadow:{pth}"].message.startswith(
        f"{pth} replaces sys.path at every start of the interpreter beside it (Python 3.11+ ")


def test_a_pth_file_that_is_a_fifo_beside_the_interpreter_is_named_not_read(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    root = install(venv / "lib" / PYVER / "site-packages")
    (venv / "bin").mkdir()
    (venv / "bin" / "python").symlink_to(sys.executable)
    (venv / "pyvenv.cfg").write_text(f"home = {os.path.dirname(sys.executable)}\n")
    os.mkfifo(venv / "bin" / "python3.11._pth")
    checks = bad(run(root))
    assert f"shadow:{venv}/bin/python3.11._pth" in checks, checks
