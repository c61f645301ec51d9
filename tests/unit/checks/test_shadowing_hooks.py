"""What ``site`` runs at startup besides the target root's own ``.pth`` lines.

* A ``.pth`` *path* line puts a directory or a zip on ``sys.path``; ``site``
  imports ``sitecustomize`` / ``usercustomize`` after it has processed the
  ``.pth`` files, so one importable from there runs at every start. A path line
  into the audited package makes its files top-level modules.
* A vouched executing ``.pth`` (setuptools' ``distutils-precedence.pth``) runs
  the module it imports: that module must match the same RECORD.
* The code an executing ``.pth`` runs is shown cut: the cut is counted and the
  file's SHA-256 named, so a payload after the cut changes the output.
* A venv that lets the system site-packages in (``include-system-site-packages``
  true, or absent) runs the base interpreter's ``.pth`` files and
  ``sitecustomize`` too.

Each premise ("Python would run it") is shown with the real interpreter, started
as the ``bin/python`` of a hand-made venv; the venvs' base is either the
interpreter running the tests or a fake prefix whose standard library is links
to its.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import py_compile
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from recordtrees import bad, install, record_row, run, swap_pyc
from startuptrees import BASE_EXE, HACK, HOOK, PYVER, fake_base, starts, unrecognised_binary, venv, with_hack

from pp1audit.checks import pthimports, shadowing, startupzip
from pp1audit.checks.bytecode import VerifiedCache
from pp1audit.checks.record_judge import record_checks
from pp1audit.sources.inventory import DirInventory

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX prefix layout and symlinks")













@pytest.fixture(autouse=True)
def _no_user_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bytecode of modules a vouched .pth imports is verified with the user's
    cache by default: not in tests."""
    monkeypatch.setenv("PP1AUDIT_NO_CACHE", "1")


# --- 1. path lines to startup hooks ---------------------------------------------------------


def _pyc(source: str, cfile: Path) -> None:
    src = cfile.parent / "_src_for_pyc.py"
    src.write_text(source, encoding="utf-8")
    py_compile.compile(str(src), cfile=str(cfile), doraise=True)
    src.unlink()


@pytest.mark.parametrize("form", ["source", "sourceless", "package"])
def test_a_path_line_to_a_directory_with_sitecustomize_fails(tmp_path: Path, form: str) -> None:
    v, root = venv(tmp_path)
    evil = tmp_path / "evil"
    evil.mkdir()
    name = {"source": "sitecustomize.py", "sourceless": "sitecustomize.pyc", "package": "sitecustomize"}[form]
    if form == "source":
        (evil / name).write_text(HOOK, encoding="utf-8")
    elif form == "sourceless":
        _pyc(HOOK, evil / name)
    else:
        (evil / name).mkdir()
        (evil / name / "__init__.py").write_text(HOOK, encoding="utf-8")
    (root / "zz-paths.pth").write_text(f"{evil}\n", encoding="utf-8")
    assert "MARK: startup hook ran" in starts(v)  # the premise
    checks = bad(run(root))
    # Never opened, so the startup digest cannot pin it (test_startup_pin.py).
    assert list(checks) == [f"pth:zz-paths.pth:1:{name}", "startup"]
    assert checks[f"pth:zz-paths.pth:1:{name}"].message == (
        f"zz-paths.pth:1 adds {evil} to sys.path, where {evil / name} is imported by site at every "
        "interpreter start, after the .pth files; no installed distribution's RECORD vouches for it")


def test_an_extension_module_and_usercustomize_count_too(tmp_path: Path) -> None:
    root = install(tmp_path / "site")
    evil = tmp_path / "evil"
    evil.mkdir()
    ext = "usercustomize" + importlib.machinery.EXTENSION_SUFFIXES[0]
    (evil / ext).write_bytes(b"\x7fELF")
    (root / "zz-paths.pth").write_text(f"{evil}\n", encoding="utf-8")
    assert list(bad(run(root))) == [f"pth:zz-paths.pth:1:{ext}", "startup"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_hook_is_named_and_never_opened(tmp_path: Path) -> None:
    """Outside the root only names and types are looked at: a FIFO would hang a read."""
    root = install(tmp_path / "site")
    evil = tmp_path / "evil"
    evil.mkdir()
    os.mkfifo(evil / "sitecustomize.py")
    os.mkfifo(tmp_path / "pipe")
    (root / "zz-paths.pth").write_text(f"{evil}\n{tmp_path / 'pipe'}\n", encoding="utf-8")
    assert list(bad(run(root))) == ["pth:zz-paths.pth:1:sitecustomize.py", "startup"]


@pytest.mark.parametrize("member", ["sitecustomize.py", "sitecustomize/__init__.py"])
def test_a_path_line_to_a_zip_holding_sitecustomize_fails(tmp_path: Path, member: str) -> None:
    v, root = venv(tmp_path)
    with zipfile.ZipFile(root / "extras.egg", "w") as zf:
        zf.writestr(member, HOOK)
    (root / "extras.pth").write_text("./extras.egg\n", encoding="utf-8")
    assert "MARK: startup hook ran" in starts(v)
    checks = bad(run(root))
    assert list(checks) == ["pth:extras.pth:1:sitecustomize", "startup"]
    shown = "sitecustomize.py" if member == "sitecustomize.py" else "sitecustomize"
    assert f"a zip holding {root / 'extras.egg' / shown}, which site imports" \
        in checks["pth:extras.pth:1:sitecustomize"].message


def test_a_zip_only_zipimport_reads_is_looked_into_as_zipimport_reads_it(tmp_path: Path) -> None:
    """The end record's comment length set to 1 and a signature written into its
    disk-number field: zipfile (and so ``Zip``) search back for the last signature
    and find no zip; zipimport takes the record at the very end and imports the hook
    (the real interpreter shows it). It passed as "no zip at all" (found by an
    adversarial review)."""
    import io

    v, root = venv(tmp_path)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("sitecustomize.py", HOOK)
    data = bytearray(buf.getvalue())
    end = len(data) - 22
    assert data[end:end + 4] == b"PK\x05\x06"
    data[end + 4:end + 8] = b"PK\x05\x06"
    data[end + 20:end + 22] = (1).to_bytes(2, "little")
    (root / "extras.egg").write_bytes(bytes(data))
    with pytest.raises(zipfile.BadZipFile):
        zipfile.ZipFile(root / "extras.egg")
    (root / "extras.pth").write_text("./extras.egg\n", encoding="utf-8")
    assert "MARK: startup hook ran" in starts(v)
    checks = bad(run(root))
    assert list(checks) == ["pth:extras.pth:1:sitecustomize", "startup"]
    assert f"a zip holding {root / 'extras.egg' / 'sitecustomize.py'}, which site imports" \
        in checks["pth:extras.pth:1:sitecustomize"].message


def test_a_zip_that_cannot_be_looked_into_fails_and_a_non_zip_passes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = install(tmp_path / "site")
    with zipfile.ZipFile(tmp_path / "big.egg", "w") as zf:
        zf.writestr("other.py", "")
    (tmp_path / "notes.txt").write_text("not a zip\n", encoding="utf-8")
    (root / "extras.pth").write_text(f"{tmp_path / 'big.egg'}\n{tmp_path / 'notes.txt'}\n",
                                     encoding="utf-8")
    checks = run(root)
    assert bad(checks) == {}
    # No zip at all: nothing to say, in the entry-point summary either.
    assert "notes.txt (on sys.path) cannot be read" not in checks["shadowing"].message, \
        checks["shadowing"].message
    monkeypatch.setattr(startupzip, "PATH_ZIP_MAX", 10)
    checks = bad(run(root))
    assert list(checks) == ["pth:extras.pth:1"]
    assert "cannot be looked into" in checks["pth:extras.pth:1"].message


def test_a_path_line_into_the_package_fails(tmp_path: Path) -> None:
    """``pkg/__pycache__`` on sys.path: a sourceless ``sitecustomize.pyc`` there runs."""
    v, root = venv(tmp_path)
    _pyc(HOOK, root / "pkg" / "__pycache__" / "sitecustomize.pyc")
    (root / "zz-paths.pth").write_text("pkg/__pycache__\n", encoding="utf-8")
    assert "MARK: startup hook ran" in starts(v)
    checks = bad(run(root))
    assert "pth:zz-paths.pth:1" in checks
    message = checks["pth:zz-paths.pth:1"].message
    assert message.startswith(f"zz-paths.pth:1 adds {root / 'pkg' / '__pycache__'} to sys.path, inside "
                              "the audited package directory pkg/: its files become importable as "
                              "top-level modules")
    assert f"{root / 'pkg' / '__pycache__' / 'sitecustomize.pyc'} there is imported" in message


@pytest.mark.parametrize("line", ["pkg", "./pkg/", "other/../pkg/data", "cachelink"])
def test_every_way_into_the_package_fails(tmp_path: Path, line: str) -> None:
    """Joined to the site directory and normalised as site does; symlinks resolved."""
    root = install(tmp_path / "site")
    (root / "other").mkdir()
    (root / "cachelink").symlink_to(root / "pkg" / "__pycache__")
    (root / "zz-paths.pth").write_text(f"{line}\n", encoding="utf-8")
    checks = bad(run(root))
    assert list(checks) == ["pth:zz-paths.pth:1"]
    assert "inside the audited package directory pkg/" in checks["pth:zz-paths.pth:1"].message


def test_a_hook_under_the_root_is_judged_by_record(tmp_path: Path) -> None:
    """A directory of the site the path line adds: its hook fails unless an installed
    distribution's RECORD lists it with its hash. (Unlisted, the directory is also a
    top-level ``hooks`` no RECORD lists: ``import hooks.sitecustomize`` reaches it.)"""
    root = install(tmp_path / "site")
    (root / "hooks").mkdir()
    (root / "hooks" / "sitecustomize.py").write_text(HOOK, encoding="utf-8")
    (root / "hooks.pth").write_text("hooks\n", encoding="utf-8")
    assert list(bad(run(root))) == ["pth:hooks.pth:1:sitecustomize.py", "shadow:hooks"]
    meta = root / "hooks-1.0.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text("Name: hooks\nVersion: 1.0\n", encoding="utf-8")
    (meta / "RECORD").write_text(",".join(record_row(root, "hooks/sitecustomize.py")) + "\n",
                                 encoding="utf-8")
    checks = run(root)
    assert bad(checks) == {}
    assert ("hooks/sitecustomize is on sys.path through hooks.pth:1 and runs at startup, vouched "
            "for by hooks-1.0.dist-info: sitecustomize (1 file(s) matching it, 0 bytecode file(s) "
            "verified as their sources compiled)") in checks["shadowing"].message
    # Verified as a module: a file beside it that its RECORD does not list fails.
    (root / "hooks" / "sitecustomize.abi3.so").write_bytes(b"\x7fELF")
    assert list(bad(run(root))) == ["pth:hooks.pth:1:hooks/sitecustomize.abi3.so"]


def test_path_lines_without_hooks_pass(tmp_path: Path) -> None:
    root = install(tmp_path / "site")
    plain = tmp_path / "plain"
    (plain / "sub").mkdir(parents=True)
    (plain / "module.py").write_text("", encoding="utf-8")
    # A path that does not exist is no longer silent (test_startup_more.py): left out here.
    (root / "paths.pth").write_text(f"{plain}\n.\n", encoding="utf-8")
    assert bad(run(root)) == {}


def test_a_suffixless_file_named_sitecustomize_is_no_hook(tmp_path: Path) -> None:
    """A regular file named just ``sitecustomize`` (no suffix) imports as nothing:
    not a hook in a directory a path line adds, in the root, or in a wheel; its
    directory form, and a link to a directory, still are."""
    from recordtrees import wheel_of

    v, root = venv(tmp_path)
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "sitecustomize").write_text(HOOK, encoding="utf-8")
    (root / "sitecustomize").write_text(HOOK, encoding="utf-8")
    (root / "hooks").mkdir()
    (root / "hooks" / "usercustomize").write_text(HOOK, encoding="utf-8")
    (root / "zz-paths.pth").write_text(f"{plain}\nhooks\n", encoding="utf-8")
    assert "MARK" not in starts(v)  # the premise: Python imports none of them
    assert bad(run(root)) == {}
    whl = wheel_of(install(tmp_path / "w", compile_pyc=False), tmp_path,
                   {"hooks/sitecustomize": HOOK, "hooks.pth": "hooks\n"})
    assert bad(run(whl)) == {}
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "sitecustomize").symlink_to(tmp_path / "plain", target_is_directory=True)
    (root / "zz-paths.pth").write_text(f"{linked}\n", encoding="utf-8")
    assert list(bad(run(root))) == ["pth:zz-paths.pth:1:sitecustomize", "startup"]


def test_a_wheel_pth_into_the_package_fails(tmp_path: Path) -> None:
    from recordtrees import wheel_of

    root = install(tmp_path / "site", compile_pyc=False)
    whl = wheel_of(root, tmp_path, {"pkg-paths.pth": "pkg/data\n", "hooks/sitecustomize.py": HOOK,
                                    "hooks.pth": "hooks\n"})
    checks = bad(run(whl))
    assert set(checks) == {"pth:pkg-paths.pth:1", "pth:hooks.pth:1:sitecustomize.py"}


# --- 2. what a vouched .pth imports ---------------------------------------------------------





def test_the_module_a_vouched_pth_imports_is_verified(tmp_path: Path) -> None:
    v, root = venv(tmp_path)
    with_hack(root)
    checks = run(root)
    assert bad(checks) == {}
    summary = checks["shadowing"].message
    assert ("hack-precedence.pth executes code at startup, vouched for by hack-1.0.dist-info (matches "
            "its RECORD; imports _hack (2 file(s) matching it, 2 bytecode file(s) verified as their "
            "sources compiled) and os (standard library, not audited here))") in summary
    # Tampered: the vouched .pth runs it at every start.
    with open(root / "_hack" / "__init__.py", "a", encoding="utf-8") as f:
        f.write(HOOK)
    assert "MARK: startup hook ran" in starts(v)
    checks = bad(run(root))
    assert list(checks) == ["pth:hack-precedence.pth:_hack/__init__.py"]
    assert checks["pth:hack-precedence.pth:_hack/__init__.py"].message.startswith(
        "_hack/__init__.py is run at every interpreter start by hack-precedence.pth (vouched for by "
        "hack-1.0.dist-info), but does not match that RECORD: modified: content differs from RECORD")


def test_a_file_added_beside_the_imported_module_fails(tmp_path: Path) -> None:
    root = with_hack(install(tmp_path / "site"))
    (root / "_hack" / "extra.py").write_text(HOOK, encoding="utf-8")
    (root / "_hack" / "__pycache__" / "sitecustomize.pyc").write_bytes(b"")
    assert set(bad(run(root))) == {"pth:hack-precedence.pth:_hack/extra.py",
                                   "pth:hack-precedence.pth:_hack/__pycache__/sitecustomize.pyc"}


def test_tampered_bytecode_of_the_imported_module_fails(tmp_path: Path) -> None:
    """A pyc whose header matches the source's mtime and size: Python runs it."""
    v, root = venv(tmp_path)
    with_hack(root)
    pyc = swap_pyc(root / "_hack" / "__init__.py", HOOK + HACK)
    assert "MARK: startup hook ran" in starts(v)
    checks = bad(run(root))
    cid = f"pth:hack-precedence.pth:{pyc.relative_to(root).as_posix()}"
    assert list(checks) == [cid]
    assert "tampered bytecode: Python would run this instead of _hack/__init__.py" in checks[cid].message


def test_differing_bytecode_of_the_imported_module_under_another_patch_release_is_a_skip(
        tmp_path: Path) -> None:
    """The venv runs another patch release of this Python (its pyvenv.cfg says, and
    neither its ``bin/python`` nor its home is an interpreter the audit can tell
    apart): a pyc of a module a vouched .pth imports that differs from this
    interpreter's compile is unverifiable, as the package's own is, not tampered: a
    ``skip``, as the package's own is, never a pass (``--require-all`` closes the
    gate on it). (Since the review of dea2ffb a ``bin/python`` linking to the
    running interpreter makes the release known: hence ``unrecognised_binary``.)"""
    other = f"{sys.version_info[0]}.{sys.version_info[1]}.{sys.version_info[2] + 1}"
    v, root = venv(tmp_path, f"include-system-site-packages = false\nversion = {other}\n",
                   home=fake_base(tmp_path, interpreter=False))
    unrecognised_binary(v)
    with_hack(root)
    pyc = swap_pyc(root / "_hack" / "__init__.py", HOOK + HACK).relative_to(root).as_posix()
    assert "MARK: startup hook ran" in starts(v)
    checks = bad(run(root))
    cid = f"pth:hack-precedence.pth:other:{pyc}"
    assert list(checks) == [cid]
    assert checks[cid].status.value == "skip"
    assert f"and the target runs Python {other} (version in {v / 'pyvenv.cfg'}), whose compiler" in \
        checks[cid].message, checks[cid].message
    assert checks[cid].message.startswith(f"{pyc} is run at every interpreter start by hack-precedence.pth")


def test_a_module_the_vouching_record_does_not_install_fails(tmp_path: Path) -> None:
    root = with_hack(install(tmp_path / "site"), pth="import _hack, _elsewhere; import json\n")
    (root / "_elsewhere.py").write_text(HOOK, encoding="utf-8")
    checks = bad(run(root))
    assert list(checks) == ["pth:hack-precedence.pth:_elsewhere"]
    assert checks["pth:hack-precedence.pth:_elsewhere"].message == (
        "hack-precedence.pth (vouched for by hack-1.0.dist-info) imports '_elsewhere' at every "
        "interpreter start, which hack-1.0.dist-info/RECORD does not install and is not a "
        "standard-library module; another of that name is in the site directory: nothing vouches "
        "for the code it runs")


def test_a_standard_library_name_in_the_site_directory_is_judged_too(tmp_path: Path) -> None:
    root = with_hack(install(tmp_path / "site"), pth="import _hack, json\n")
    (root / "json").mkdir()
    assert list(bad(run(root))) == ["pth:hack-precedence.pth:json"]


def test_the_real_setuptools_pth_imports() -> None:
    line = ("import os; var = 'SETUPTOOLS_USE_DISTUTILS'; enabled = os.environ.get(var, 'local') == "
            "'local'; enabled and __import__('_distutils_hack').add_shim(); ")
    assert pthimports.imported_modules([line]) == ["_distutils_hack", "os"]
    assert pthimports.imported_modules(["import a.b as c, d; from e.f import g; from . import h",
                              "import importlib; importlib.import_module('i.j')",
                              "import ((( garbage", "import x\0y"]) == ["a", "d", "e", "i", "importlib"]


# --- 3. the code shown ----------------------------------------------------------------------


def test_a_payload_after_the_cut_changes_the_message(tmp_path: Path) -> None:
    first = "import os; " + "x = 1; " * 20 + "y = 2;"
    messages = []
    for tail in ("", "print('payload')"):
        root = install(tmp_path / f"site{len(tail)}")
        data = (first + tail + "\n").encode()
        (root / "evil.pth").write_bytes(data)
        message = bad(run(root))["pth:evil.pth"].message
        cut = len(first + tail) - pthimports.CUT
        assert message.endswith(f": line 1: {first[:pthimports.CUT]}… ({cut} more characters); "
                                f"file sha256 {hashlib.sha256(data).hexdigest()[:12]}")
        messages.append(message)
    assert messages[0] != messages[1]


def test_files_that_differ_outside_the_code_shown_read_differently(tmp_path: Path) -> None:
    """A comment line changes nothing Python runs; it still changes the file named."""
    texts = ["import os\n", "import os\n# another\n"]
    messages = set()
    for i, text in enumerate(texts):
        root = install(tmp_path / f"site{i}")
        (root / "evil.pth").write_text(text, encoding="utf-8")
        messages.add(bad(run(root))["pth:evil.pth"].message)
    assert len(messages) == 2


# --- 4. the system site-packages of a venv --------------------------------------------------


@pytest.mark.parametrize(("cfg", "runs"), [
    ("include-system-site-packages = true\n", True),
    ("", True),  # site's default when the key is absent
    ("include-system-site-packages = TRUE\ninclude-system-site-packages = false\n", False),  # the last
    ("include-system-site-packages = false\n", False),
    ("include-system-site-packages = yes\n", False),  # only "true" lets them in
])
def test_the_base_site_packages_pth_files_run_when_the_venv_lets_them_in(
        tmp_path: Path, cfg: str, runs: bool) -> None:
    home = fake_base(tmp_path)
    base_site = home.parent / "lib" / PYVER / "site-packages"
    (base_site / "b.pth").write_text(HOOK, encoding="utf-8")
    v, root = venv(tmp_path, cfg, home=home)
    assert ("MARK: startup hook ran" in starts(v)) == runs  # the premise
    checks = run(root)
    failed = bad(checks)
    if not runs:
        assert failed == {}
        assert "system site-packages" not in checks["shadowing"].message
        return
    shown = f"{base_site}/b.pth"
    assert list(failed) == [f"pth:{shown}"]
    assert failed[f"pth:{shown}"].message.startswith(f"{shown} executes code at every interpreter start "
                                                     "(no installed distribution's RECORD lists it; "
                                                     "it is in the system site-packages")
    assert "the system site-packages are on sys.path (" in checks["shadowing"].message


def test_a_sitecustomize_in_the_base_site_packages_fails(tmp_path: Path) -> None:
    home = fake_base(tmp_path)
    base_site = home.parent / "lib" / PYVER / "site-packages"
    (base_site / "sitecustomize.py").write_text(HOOK, encoding="utf-8")
    v, root = venv(tmp_path, "include-system-site-packages = true\n", home=home)
    assert "MARK: startup hook ran" in starts(v)
    assert list(bad(run(root))) == [f"shadow:{base_site}/sitecustomize.py"]


def test_the_summary_names_the_base_standard_library_and_its_origin(tmp_path: Path) -> None:
    """``home`` as getpath reads it: any letter case, the first one; named in the summary."""
    home = fake_base(tmp_path)
    v, root = venv(tmp_path, home=home)
    cfg = v / "pyvenv.cfg"
    cfg.write_text(f"HOME = {home}\nhome = {os.path.dirname(BASE_EXE)}\n"
                   "include-system-site-packages = false\n", encoding="utf-8")
    probe = subprocess.run([str(v / "bin" / "python"), "-I", "-c", "import sys; print(sys.base_prefix)"],
                           capture_output=True, text=True, check=True, timeout=60)
    assert probe.stdout.strip() == str(home.parent)  # the premise: the first home, upper case
    summary = run(root)["shadowing"].message
    assert (f"base standard library taken as {home.parent / 'lib' / PYVER} (home = {home} in {cfg}); "
            "not audited here") in summary


def test_check_shadowing_uses_the_cache_given(tmp_path: Path) -> None:
    """The bytecode of a vouched module, once verified, is not compiled again."""
    root = with_hack(install(tmp_path / "site"))
    cache = VerifiedCache(tmp_path / "cache")
    rep = shadowing.check_shadowing(DirInventory(str(root)), "pkg", "pkg-1.0.dist-info", cache)
    assert rep.findings == []
    assert len(cache.keys) == 2


def test_record_run_passes_its_cache_to_the_vouched_modules(tmp_path: Path) -> None:
    """The cache ``check --record`` was given (not the user's) serves the modules a
    vouched ``.pth`` imports too."""
    from pp1audit.checks.record import RecordRun
    from pp1audit.sources import DirectorySource

    root = with_hack(install(tmp_path / "site"))
    cache = VerifiedCache(tmp_path / "cache")
    with DirectorySource(root) as source:
        checks = record_checks(RecordRun("pkg", source, cache=cache))
    assert [c.id for c in checks if c.status.value != "pass"] == []
    hack = {VerifiedCache.key(hashlib.sha256(pyc.read_bytes()).digest(),
                              hashlib.sha256((root / "_hack" / f"{pyc.name.split('.')[0]}.py")
                                             .read_bytes()).digest(), 0)
            for pyc in (root / "_hack" / "__pycache__").iterdir()}
    assert len(hack) == 2 and hack <= cache.keys
