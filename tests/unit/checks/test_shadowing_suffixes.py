"""Module file names as the *target's* interpreter imports them, not pp1audit's.

An audit run by one Python of a site-packages of another used the running
interpreter's ``importlib.machinery.EXTENSION_SUFFIXES``: a 3.12 target's
``sitecustomize.cpython-312-x86_64-linux-gnu.so``, which 3.12 imports at every
start, went unseen (PASS, startup pin matching), while a ``.cpython-311`` one,
which 3.12 never imports, failed. Built by hand here: an empty file named like
the extension is all the check looks at; the premise (which names the target
imports) is shown with the real interpreter where one is installed.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from recordtrees import bad, install, record_row, run, wheel_of
from startuptrees import add_rows, with_hack

from pp1audit.checks.sitemodel import imports_as

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX prefix layout")

MINE = sys.version_info.minor
OTHER = MINE + 1
"""A target version other than the running one (3.11 audits 3.12)."""
ARCH = "x86_64-linux-gnu"


def ext(module: str, minor: int) -> str:
    return f"{module}.cpython-3{minor}-{ARCH}.so"


def target(tmp_path: Path, minor: int = OTHER) -> Path:
    """``pkg`` installed in ``<prefix>/lib/python3.<minor>/site-packages``."""
    return install(tmp_path / "prefix" / "lib" / f"python3.{minor}" / "site-packages")


@pytest.fixture(autouse=True)
def _no_user_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PP1AUDIT_NO_CACHE", "1")


def test_the_targets_own_compiled_sitecustomize_fails_even_with_the_startup_pin(tmp_path: Path) -> None:
    """The reviewer's adv312: the pin taken before the hook was added must not match after."""
    root = target(tmp_path)
    digest = run(root)["startup"].message.split("digest ")[1].split(" ")[0]
    (root / ext("sitecustomize", OTHER)).write_bytes(b"")
    failed = bad(run(root, startup_sha256=digest))
    assert set(failed) == {f"shadow:{ext('sitecustomize', OTHER)}", "startup"}
    assert failed[f"shadow:{ext('sitecustomize', OTHER)}"].message.endswith(
        "is imported by site at every interpreter start, before any package; no installed "
        "distribution's RECORD vouches for it")


def test_another_versions_extension_is_not_a_hook_of_the_target(tmp_path: Path) -> None:
    """3.12 never imports a ``.cpython-311`` module: no false alarm."""
    root = target(tmp_path)
    (root / ext("sitecustomize", MINE)).write_bytes(b"")
    (root / ext("pkg", MINE)).write_bytes(b"")
    assert bad(run(root)) == {}


@pytest.mark.parametrize("name", ["sitecustomize.abi3.so", "sitecustomize.so",
                                  f"sitecustomize.cpython-3{OTHER}t-{ARCH}.so"])
def test_version_free_and_flagged_extensions_count(tmp_path: Path, name: str) -> None:
    root = target(tmp_path)
    (root / name).write_bytes(b"")
    assert list(bad(run(root))) == [f"shadow:{name}"]


def test_a_copy_of_the_package_beside_it_as_the_targets_extension(tmp_path: Path) -> None:
    root = target(tmp_path)
    (root / ext("pkg", OTHER)).write_bytes(b"")
    assert list(bad(run(root))) == [f"shadow:{ext('pkg', OTHER)}"]


def test_a_path_line_to_the_targets_compiled_sitecustomize_fails(tmp_path: Path) -> None:
    root = target(tmp_path)
    evil = tmp_path / "evil"
    evil.mkdir()
    (evil / ext("sitecustomize", OTHER)).write_bytes(b"")
    (evil / ext("usercustomize", MINE)).write_bytes(b"")  # never imported by the target
    (root / "zz-paths.pth").write_text(f"{evil}\n", encoding="utf-8")
    assert list(bad(run(root))) == [f"pth:zz-paths.pth:1:{ext('sitecustomize', OTHER)}", "startup"]


@pytest.mark.parametrize("minor", [9, OTHER, 14])
def test_an_unknown_version_counts_every_versions_extension(tmp_path: Path, minor: int) -> None:
    """A wheel, or a layout not recognised: any file named like a hook counts."""
    root = install(tmp_path / "site")
    (root / ext("sitecustomize", minor)).write_bytes(b"")
    assert list(bad(run(root))) == [f"shadow:{ext('sitecustomize', minor)}"]
    whl = wheel_of(install(tmp_path / "clean"), tmp_path, {ext("usercustomize", minor): ""})
    assert f"shadow:{ext('usercustomize', minor)}" in bad(run(whl))


def test_a_vouched_pth_importing_the_targets_extension_in_its_record_passes(tmp_path: Path) -> None:
    root = with_hack(target(tmp_path), pth="import _hack, _fast\n")
    (root / ext("_fast", OTHER)).write_bytes(b"\x7fELF")
    add_rows(root, "hack-1.0.dist-info", [record_row(root, ext("_fast", OTHER))])
    checks = run(root)
    assert bad(checks) == {}
    assert "_fast (1 file(s) matching it" in checks["shadowing"].message
    # Tampered, it fails as a module of that RECORD; the running version's name is not it.
    (root / ext("_fast", OTHER)).write_bytes(b"\x7fELF!")
    assert list(bad(run(root))) == [f"pth:hack-precedence.pth:{ext('_fast', OTHER)}"]


@pytest.mark.parametrize(("name", "version", "imported"), [
    ("m.py", (3, 12), True), ("m.pyc", (3, 12), True), ("m.so", (3, 12), True),
    ("m.abi3.so", (3, 12), True), (f"m.cpython-312-{ARCH}.so", (3, 12), True),
    ("m.cpython-312-darwin.so", (3, 12), True), ("m.cpython-312.so", (3, 12), True),
    (f"m.cpython-311-{ARCH}.so", (3, 12), False), (f"m.cpython-3012-{ARCH}.so", (3, 12), False),
    ("m.cp312-win_amd64.pyd", (3, 12), False), ("m.pyd", (3, 12), False),
    (f"m.cpython-39-{ARCH}.so", None, True), ("m.cp312-win_amd64.pyd", None, True),
    ("m.txt", None, False), ("mm.py", None, False), (f"m.x.cpython-312-{ARCH}.so", None, False),
])
def test_imports_as(name: str, version: tuple[int, int] | None, imported: bool) -> None:
    assert imports_as(name, "m", version) is imported


def _real(minor: int) -> str | None:
    """A real ``python3.<minor>``: a pyenv install, else one on PATH that runs."""
    hits = sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/3.{minor}.*/bin/python3.{minor}")))
    if hits:
        return hits[-1]
    found = shutil.which(f"python3.{minor}")
    if found is None:
        return None
    try:
        subprocess.run([found, "-c", "pass"], capture_output=True, check=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None  # a pyenv shim for a version not installed
    return found


@pytest.mark.parametrize("minor", [11, 12, 13])
def test_the_premise_the_real_interpreters_suffixes(minor: int) -> None:
    """Every extension suffix a real interpreter imports is its version's (and no
    other version's) here: the model agrees with ``EXTENSION_SUFFIXES`` of each."""
    exe = _real(minor)
    if exe is None:
        pytest.skip(f"no python3.{minor} here")
    out = subprocess.run([exe, "-I", "-c", "import importlib.machinery as m; "
                          "print('\\n'.join(m.EXTENSION_SUFFIXES))"],
                         capture_output=True, text=True, check=True, timeout=60).stdout.split()
    assert out and all(imports_as("m" + s, "m", (3, minor)) for s in out)
    tagged = [s for s in out if s.startswith(".cpython-")]
    assert tagged and not any(imports_as("m" + s, "m", (3, minor + 1)) for s in tagged)
