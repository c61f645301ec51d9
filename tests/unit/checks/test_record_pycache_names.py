"""Files in ``__pycache__`` that Python never writes are files like any other.

RECORD leaves bytecode to the bytecode check, but only what Python's cache
writes is bytecode: ``<stem>.<cache_tag>.pyc`` and ``….opt-<N>.pyc`` directly in
``__pycache__``. A ``__pycache__/sitecustomize.pyc`` is no cache file: the bytecode
check does not know its name, and a ``.pth`` path line naming the directory makes
``site`` import it at every start. It must be ``unlisted`` unless RECORD lists it.
"""

from __future__ import annotations

import importlib.util
import os
import py_compile
import subprocess
import sys
from pathlib import Path

import pytest
from recordtrees import bad, install, record_row, run

from pp1audit.checks.distrecord import is_bytecode
from pp1audit.result import Status

TAG = sys.implementation.cache_tag


@pytest.mark.parametrize(("path", "expected"), [
    (f"pkg/__pycache__/mod.{TAG}.pyc", True),
    (f"pkg/__pycache__/mod.{TAG}.opt-1.pyc", True),
    (f"pkg/__pycache__/mod.{TAG}.opt-2.pyc", True),
    ("pkg/__pycache__/mod.cpython-312.pyc", True),  # any interpreter's tag
    ("pkg/__pycache__/mod.pypy39.pyc", True),
    (f"pkg/__pycache__/a.b.{TAG}.pyc", True),  # source a.b.py
    (f"__pycache__/top.{TAG}.pyc", True),
    ("pkg/__pycache__/sitecustomize.pyc", False),  # importable as module "sitecustomize"
    ("pkg/__pycache__/evil.py", False),
    (f"pkg/__pycache__/mod.{TAG}.opt-0.pyc", True),  # cache_from_source(optimization=0) writes it
    ("pkg/__pycache__/__init__.pyc", False),
    (f"pkg/__pycache__/.{TAG}.pyc", False),
    (f"pkg/__pycache__/sub/mod.{TAG}.pyc", False),  # never a subdirectory
    (f"pkg/x__pycache__/mod.{TAG}.pyc", False),
    (f"pkg/__pycache__/mod.{TAG}.pyc.140234", False),  # importlib's temporary name
    (f"pkg/mod.{TAG}.pyc", False),
])
def test_only_names_python_writes_are_bytecode(path: str, expected: bool) -> None:
    assert is_bytecode(path) is expected


def test_a_cache_name_is_what_importlib_writes() -> None:
    for opt in ("", 0, 1, 2, 3):
        assert is_bytecode(importlib.util.cache_from_source("pkg/mod.py", optimization=opt))


def test_sitecustomize_pyc_in_pycache_is_unlisted(tmp_path: Path) -> None:
    root = install(tmp_path / "site")
    hook = tmp_path / "hook.py"
    hook.write_text("print('MARK: injected')\n", encoding="utf-8")
    cache = root / "pkg" / "__pycache__"
    py_compile.compile(str(hook), cfile=str(cache / "sitecustomize.pyc"), doraise=True)
    (cache / "evil.py").write_text("print('MARK: evil')\n", encoding="utf-8")
    # The premise: with the directory on sys.path (one .pth line does it), both import.
    proc = subprocess.run([sys.executable, "-I", "-c",
                           f"import sys; sys.path.insert(0, {str(cache)!r}); import sitecustomize, evil"],
                          capture_output=True, text=True, timeout=60)
    assert proc.stdout == "MARK: injected\nMARK: evil\n", proc.stderr

    checks = bad(run(root))
    assert set(checks) == {"record:pkg/__pycache__/sitecustomize.pyc", "record:pkg/__pycache__/evil.py"}
    c = checks["record:pkg/__pycache__/sitecustomize.pyc"]
    assert c.status is Status.FAIL and c.actual is not None and c.actual.startswith("sha256=")
    assert c.message == (
        "Unlisted: in __pycache__ but not in RECORD, and not named as Python names its bytecode cache "
        "(<module>.<cache tag>[.opt-N].pyc directly in __pycache__), so Python never wrote it, and the "
        "bytecode check does not judge it; a .pth path line putting this directory on sys.path makes "
        "it importable as a module of its own")


@pytest.mark.parametrize("name", ["x.pyc", f"sub/mod.{TAG}.pyc", "sub/__init__.pyc", "x.so", "x.pyc.txt"])
def test_other_odd_names_in_pycache_are_unlisted(tmp_path: Path, name: str) -> None:
    root = install(tmp_path / "site")
    path = root / "pkg" / "__pycache__" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\0" * 16)
    assert list(bad(run(root))) == [f"record:pkg/__pycache__/{name}"]


def test_a_leftover_temporary_pyc_is_unlisted_and_explained(tmp_path: Path) -> None:
    root = install(tmp_path / "site")
    (root / "pkg" / "__pycache__" / f"mod.{TAG}.pyc.140234").write_bytes(b"partial")
    (check,) = bad(run(root)).values()
    assert check.message.startswith(
        "Unlisted: in __pycache__ but not in RECORD, and named like the temporary file importlib "
        "writes before renaming a pyc into place")


def test_listed_in_record_it_is_verified_like_any_file(tmp_path: Path) -> None:
    root = install(tmp_path / "site")
    odd = root / "pkg" / "__pycache__" / "sitecustomize.pyc"
    odd.write_bytes(b"not bytecode at all")
    record = root / "pkg-1.0.dist-info" / "RECORD"
    record.write_text(",".join(record_row(root, "pkg/__pycache__/sitecustomize.pyc")) + "\n"
                      + record.read_text(encoding="utf-8"), encoding="utf-8")
    checks = run(root)
    assert bad(checks) == {}
    assert checks["record"].message.startswith("5 of 5 files match")
    odd.write_bytes(b"not bytecode at ALL")
    assert list(bad(run(root))) == ["record:pkg/__pycache__/sitecustomize.pyc"]


def test_python_written_bytecode_still_passes(tmp_path: Path) -> None:
    """The cache after ``python``, ``python -O`` and ``python -OO`` imported the package:
    no false alarm."""
    root = install(tmp_path / "site", compile_pyc=False)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    for flags in ([], ["-O"], ["-OO"]):
        subprocess.run([sys.executable, *flags, "-c", "import pkg"], cwd=root, env=env, check=True,
                       timeout=60)
    names = sorted(p.name for p in (root / "pkg" / "__pycache__").iterdir())
    assert names == sorted(f"{m}.{TAG}{o}.pyc" for m in ("__init__", "mod") for o in ("", ".opt-1", ".opt-2"))
    checks = run(root)
    assert bad(checks) == {}
    assert checks["bytecode"].message.startswith("6 bytecode files")
