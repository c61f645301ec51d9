"""Patch releases share a cache tag but not always a compiler: a pyc that differs
from this interpreter's compile is unverifiable, not tampered, when the target's
``pyvenv.cfg`` says it runs another release of this Python.

(Debian's 3.11.2 and pyenv's 3.11.7 emit different code for five vLLM 0.31.0
modules: a venv made with the one and audited with the other closed the gate with
"tampered bytecode" on a clean install.)
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from recordtrees import bad, install, run, swap_pyc

from pp1audit.checks.bytecode import RELEASE

THIS = RELEASE
OTHER = f"{sys.version_info[0]}.{sys.version_info[1]}.{sys.version_info[2] + 1}"
PYVER = f"python{sys.version_info[0]}.{sys.version_info[1]}"


def venv_site(tmp_path: Path, cfg: str | None) -> Path:
    """``<venv>/lib/pythonX.Y/site-packages`` with pkg installed and ``pyvenv.cfg`` = ``cfg``."""
    venv = tmp_path / "venv"
    site = install(venv / "lib" / PYVER / "site-packages")
    if cfg is not None:
        (venv / "pyvenv.cfg").write_text(cfg, encoding="utf-8")
    return site


def other_code(site: Path) -> str:
    """Replace pkg/__init__.py's pyc by another source's code, header kept: Python runs
    it. Returns the pyc's path relative to the site."""
    return swap_pyc(site / "pkg" / "__init__.py", "print('other code')\n").relative_to(site).as_posix()


@pytest.mark.parametrize("cfg", [
    f"home = /usr/bin\nversion = {OTHER}\n",                  # venv
    f"home = /usr/bin\nversion_info = {OTHER}.final.0\n",     # virtualenv
])
def test_another_patch_release_makes_a_differing_pyc_unverifiable(tmp_path: Path, cfg: str) -> None:
    site = venv_site(tmp_path, f"include-system-site-packages = false\n{cfg}")
    pyc = other_code(site)
    checks = run(site)
    assert list(bad(checks)) == [f"bytecode:other:{pyc}"]
    message = checks[f"bytecode:other:{pyc}"].message
    assert checks[f"bytecode:other:{pyc}"].status.value == "skip"
    assert f"differ from their sources compiled by Python {THIS}, and the target runs Python {OTHER}" \
        in message, message
    assert f"run pp1audit under Python {OTHER} to verify them" in message, message
    # A pyc that compiles equal is verified all the same.
    assert "1 bytecode files Python" in checks["bytecode"].message, checks["bytecode"].message


@pytest.mark.parametrize("cfg", [
    f"include-system-site-packages = false\nhome = /usr/bin\nversion = {THIS}\n",
    "include-system-site-packages = false\nhome = /usr/bin\n",
    None,                                                      # not a venv: nothing says
])
def test_this_release_or_an_unknown_one_still_fails(tmp_path: Path, cfg: str | None) -> None:
    site = venv_site(tmp_path, cfg)
    pyc = other_code(site)
    checks = bad(run(site))
    assert list(checks) == [f"bytecode:{pyc}"]
    assert checks[f"bytecode:{pyc}"].status.value == "fail"
    assert checks[f"bytecode:{pyc}"].message.startswith("Tampered bytecode")
