"""Shared test helpers: trees of start-up code (.pth files, venvs, entry points) for the startup tests."""

from __future__ import annotations

import csv
import hashlib
import importlib.machinery
import importlib.metadata
import importlib.util
import io
import os
import py_compile
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
from recordtrees import install, record_row

PYVER = f"python{sys.version_info.major}.{sys.version_info.minor}"


HOOK = 'import sys; print("MARK: startup hook ran", file=sys.stderr)\n'


BASE_EXE = os.path.realpath(sys._base_executable)  # type: ignore[attr-defined]


def _stdlib() -> str:
    base_vars = {"base": sys.base_prefix, "platbase": sys.base_exec_prefix,
                 "installed_base": sys.base_prefix, "installed_platbase": sys.base_exec_prefix}
    paths = sysconfig.get_paths(vars=base_vars)
    if os.path.basename(paths["stdlib"]) != PYVER or paths["platstdlib"] != paths["stdlib"]:
        pytest.skip("this interpreter's standard library is not laid out as <prefix>/lib/pythonX.Y")
    return paths["stdlib"]


def venv(tmp_path: Path, cfg: str = "include-system-site-packages = false\n",
         home: Path | None = None) -> tuple[Path, Path]:
    """A venv over the running interpreter (or ``home``), ``pkg`` installed: (venv, site-packages)."""
    _stdlib()
    v = tmp_path / "venv"
    root = install(v / "lib" / PYVER / "site-packages")
    (v / "bin").mkdir()
    (v / "bin" / "python").symlink_to(home / PYVER if home and (home / PYVER).exists() else BASE_EXE)
    (v / "pyvenv.cfg").write_text(f"home = {home or os.path.dirname(BASE_EXE)}\n{cfg}", encoding="utf-8")
    return v, root


def fake_base(tmp_path: Path, interpreter: bool = True) -> Path:
    """A base prefix whose standard library is links to the real one, with a
    site-packages of its own (the real one is never touched): its ``bin``. Without
    ``interpreter`` that ``bin`` is empty: nothing there tells the audit which
    release a venv over it runs (a venv's ``bin/python`` then links straight to
    the running interpreter)."""
    stdlib = _stdlib()
    lib = tmp_path / "base" / "lib" / PYVER
    lib.mkdir(parents=True)
    for name in os.listdir(stdlib):
        if name != "site-packages":
            (lib / name).symlink_to(os.path.join(stdlib, name))
    (lib / "site-packages").mkdir()
    (tmp_path / "base" / "bin").mkdir()
    if interpreter:
        (tmp_path / "base" / "bin" / PYVER).symlink_to(BASE_EXE)
    return tmp_path / "base" / "bin"


def starts(v: Path) -> str:
    """What the venv's interpreter writes to stderr on a bare start."""
    return subprocess.run([str(v / "bin" / "python"), "-I", "-c", "pass"], capture_output=True,
                          text=True, check=True, timeout=60).stderr


HACK = "def add_shim():\n    pass\n"


PTH = "import os; __import__('_hack').add_shim()\n"


def with_hack(root: Path, pth: str = PTH) -> Path:
    """A second distribution as setuptools installs ``distutils-precedence.pth``:
    the ``.pth``, the module it imports and their RECORD rows, with bytecode."""
    (root / "_hack").mkdir()
    (root / "_hack" / "__init__.py").write_text(HACK, encoding="utf-8")
    (root / "_hack" / "override.py").write_text("", encoding="utf-8")
    (root / "hack-precedence.pth").write_text(pth, encoding="utf-8")
    meta = root / "hack-1.0.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text("Name: hack\nVersion: 1.0\n", encoding="utf-8")
    rows = [record_row(root, p) for p in ("_hack/__init__.py", "_hack/override.py",
                                          "hack-precedence.pth", "hack-1.0.dist-info/METADATA")]
    for src in ("_hack/__init__.py", "_hack/override.py"):
        pyc = importlib.util.cache_from_source(str(root / src))
        py_compile.compile(str(root / src), cfile=pyc, doraise=True)
        rows.append([os.path.relpath(pyc, root), "", ""])
    rows.append(["hack-1.0.dist-info/RECORD", "", ""])
    (meta / "RECORD").write_text("".join(",".join(r) + "\n" for r in rows), encoding="utf-8")
    return root


def add_rows(root: Path, meta: str, rows: list[list[str]]) -> None:
    """Append rows to ``meta``'s RECORD."""
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    with open(root / meta / "RECORD", "a", encoding="utf-8") as f:
        f.write(buf.getvalue())


OTHER = f"{sys.version_info[0]}.{sys.version_info[1]}.{sys.version_info[2] + 1}"
"""A patch release of this Python that is not the one running."""


MARK = "MARK: startup hook ran"


def cfg_line(value: str) -> bytes:
    """The startup digest's line for ``../../../pyvenv.cfg``: what it decides, portably."""
    token = hashlib.sha256(f"include-system-site-packages = {value}\n".encode()).hexdigest()
    return f"{token}  ../../../pyvenv.cfg\n".encode()


def with_script(v: Path, root: Path, body: str = "import pkg, json\n") -> Path:
    """A console script as pip writes it, listed in pkg's RECORD (``../../../bin/pkgcli``)."""
    script = v / "bin" / "pkgcli"
    script.write_text(f"#!{v / 'bin' / 'python'}\n{body}print('pkg from', pkg.__file__)\n", encoding="utf-8")
    script.chmod(0o755)
    rel = os.path.relpath(script, root)
    record = root / "pkg-1.0.dist-info" / "RECORD"
    with open(record, "a", encoding="utf-8") as f:
        f.write(",".join(record_row(root, rel)) + "\n")
    return script


def runs(script: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(script.parent / "python"), str(script)], capture_output=True, text=True,
                          timeout=60, cwd="/")


PYVER = f"python{sys.version_info.major}.{sys.version_info.minor}"


ZIPNAME = f"python{sys.version_info.major}{sys.version_info.minor}.zip"


def venv_with_base(tmp_path: Path) -> tuple[Path, Path]:
    """A venv (``pyvenv.cfg`` with ``home = <base>/bin``) with ``pkg`` installed, and its base prefix."""
    venv, base = tmp_path / "venv", tmp_path / "base"
    root = install(venv / "lib" / PYVER / "site-packages")
    (base / "bin").mkdir(parents=True)
    (base / "lib" / PYVER).mkdir(parents=True)
    (base / "lib" / PYVER / "os.py").write_text("")  # getpath's landmark: base is the prefix
    (venv / "pyvenv.cfg").write_text(f"home = {base / 'bin'}\n", encoding="utf-8")
    return root, base


def write_zip(path: Path, members: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, text in members.items():
            zf.writestr(name, text)
    return path


HELPER = "helper-1.0.dist-info"


def add_dist(root: Path, entry_points: str | bytes, meta: str = HELPER) -> Path:
    """A complete foreign distribution: a module, METADATA, entry_points.txt and a RECORD
    vouching for all three (what anyone who can write to site-packages can make)."""
    (root / "helper.py").write_text("def register():\n    print('plugin ran')\n", encoding="utf-8")
    d = root / meta
    d.mkdir()
    (d / "METADATA").write_text("Metadata-Version: 2.1\nName: helper\nVersion: 1.0\n", encoding="utf-8")
    data = entry_points.encode("utf-8") if isinstance(entry_points, str) else entry_points
    (d / "entry_points.txt").write_bytes(data)
    rows = [record_row(root, p) for p in ("helper.py", f"{meta}/METADATA", f"{meta}/entry_points.txt")]
    (d / "RECORD").write_text("".join(",".join(r) + "\n" for r in rows) + f"{meta}/RECORD,,\n",
                              encoding="utf-8")
    return d


def unrecognised_binary(v: Path) -> None:
    """Make the venv's ``bin/python`` an interpreter the audit cannot tell is the one
    running it: a copy of it with a byte appended (it runs the same, as another
    build of this release would, but its bytes differ), so the release that runs is
    not known and ``pyvenv.cfg``'s ``version`` is believed."""
    exe = v / "bin" / "python"
    data = Path(BASE_EXE).read_bytes()
    exe.unlink()
    exe.write_bytes(data + b"\0")
    exe.chmod(0o755)
