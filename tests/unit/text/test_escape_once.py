"""Text from the target is escaped once, by the output; the zipped stdlib read safely and cheaply.

``safetext.printable`` doubles backslashes (so a name holding ``\\n`` is told from one
holding a newline), so a message escaped in the core and again by the output read
``'vllm/a\\\\x1bb.py'`` for a RECORD path holding ESC and ``'a\\\\nb'`` for a bytecode
constant holding a newline; ``report --check`` doubled every backslash of the
document in its diff. The core keeps messages raw; each output escapes them once
(JSON by its encoder, carrying the raw text).

The stdlib zip was ``stat``-ed then opened blocking (a FIFO swapped in between
hung the run), and all its member names were decoded into a set when a few
decide; its size cap was far above any real zipped standard library.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import marshal
import os
import threading
from pathlib import Path

import pytest
from conftest import run_cli
from recordtrees import install

from pp1audit.checks.pycexplain import _where_they_part
from pp1audit.text.safe import printable

MANIFEST = "pp1audit: 1\ntarget: {package: pkg, version: '1.0'}\n"


def _manifest(tmp_path: Path) -> Path:
    path = tmp_path / "m.yaml"
    path.write_text(MANIFEST, encoding="utf-8")
    return path


def _line(stdout: str, words: tuple[str, str]) -> str:
    """The one row of the text table whose first two cells are ``words``."""
    (line,) = [x for x in stdout.splitlines() if tuple(x.split()[:2]) == words]
    return line


def test_a_record_path_holding_esc_reads_with_one_escape(tmp_path: Path) -> None:
    root = install(tmp_path / "site", {"pkg/__init__.py": ""}, compile_pyc=False)
    record = root / "pkg-1.0.dist-info" / "RECORD"
    record.write_text("vllm/a\x1bb.py,,\n" + record.read_text(encoding="utf-8"), encoding="utf-8")
    manifest = _manifest(tmp_path)
    text = run_cli("check", "--record", str(root), "-m", str(manifest))
    line = _line(text.stdout, ("error", "record"))
    assert "RECORD:1: path 'vllm/a\\x1bb.py' contains the control character \\x1b:" in line, line
    assert "\x1b" not in text.stdout and "\\\\" not in text.stdout
    js = run_cli("check", "--record", str(root), "-m", str(manifest), "--format", "json")
    (check,) = [c for c in json.loads(js.stdout)["checks"] if c["id"] == "record"]
    assert "path 'vllm/a\x1bb.py' contains the control character \x1b:" in check["message"]


def _bytecode_line(stdout: str) -> str:
    (line,) = [x for x in stdout.splitlines() if x.startswith("fail") and " bytecode:" in x]
    return line


def _tampered(tmp_path: Path, source: str, bytecode: str, names: tuple[str, ...] = ()) -> Path:
    """A site whose ``pkg/m.py`` holds ``source`` and whose current-looking pyc
    (header of the source's) holds ``bytecode`` compiled (its ``co_names`` replaced
    by ``names`` when given)."""
    root = install(tmp_path / "site", {"pkg/__init__.py": "", "pkg/m.py": source})
    pyc = Path(importlib.util.cache_from_source(str(root / "pkg" / "m.py")))
    data = pyc.read_bytes()
    code = marshal.loads(data[16:])
    evil = compile(bytecode, code.co_filename, "exec", dont_inherit=True)
    if names:
        evil = evil.replace(co_names=names)
    pyc.write_bytes(data[:16] + marshal.dumps(evil))
    return root


def test_a_tampered_constant_reads_as_python_writes_it(tmp_path: Path) -> None:
    root = _tampered(tmp_path, 'x = "a\\nc"\n', 'x = "a\\nb"\n')
    manifest = _manifest(tmp_path)
    env = {"PP1AUDIT_NO_CACHE": "1"}
    text = run_cli("check", "--record", str(root), "-m", str(manifest), env=env)
    line = _bytecode_line(text.stdout)
    assert "only in the bytecode: 'a\\nb'; only in the source: 'a\\nc'" in line, line
    js = run_cli("check", "--record", str(root), "-m", str(manifest), "--format", "json", env=env)
    (check,) = [c for c in json.loads(js.stdout)["checks"] if c["id"].startswith("bytecode:")]
    assert "only in the bytecode: 'a\nb'; only in the source: 'a\nc'" in check["message"]


def test_a_differing_name_reads_as_python_writes_it(tmp_path: Path) -> None:
    """A code field (``co_names``, crafted to hold a backslash and a newline) shown on both sides."""
    root = _tampered(tmp_path, "y = os\n", "y = os\n", names=("o\\s\n", "y"))
    text = run_cli("check", "--record", str(root), "-m", str(_manifest(tmp_path)),
                   env={"PP1AUDIT_NO_CACHE": "1"})
    line = _bytecode_line(text.stdout)
    assert "<module>.co_names (('o\\\\s\\n', 'y') in the bytecode, ('os', 'y') compiled)" in line, line


def test_a_literal_and_its_window_read_once_escaped() -> None:
    assert printable(_where_they_part("a\\b\x1b", "f\n")) == "'a\\\\b\\x1b' in the bytecode, 'f\\n' compiled"
    assert printable(_where_they_part((b"\xff\\", "it's"), (b"\n",))) == (
        "(b'\\xff\\\\', \"it's\") in the bytecode, (b'\\n',) compiled")
    mine, fresh = printable(_where_they_part("\x1b" * 100, "\x1b" * 99 + "a")).split(" in the bytecode, ")
    assert mine.endswith("\\x1b'") and fresh.endswith("a' compiled")


def test_bytes_and_tuples_read_as_their_repr_once_escaped() -> None:
    from pp1audit.checks.pycexplain import _literal

    for value in (b"\x00\xff\\\n'", ("a\nb", ("x",), 1.5, None), "it's", b"", ()):
        assert printable(_literal(value)) == repr(value)


def test_a_long_literal_is_cut_to_its_width_once_escaped() -> None:
    from pp1audit.checks.pycexplain import _SHOWN, _shown

    shown = printable(_shown(("\x1b" * 30,) * 5))
    assert len(shown) <= _SHOWN and shown.endswith("…") and shown.startswith("('\\x1b\\x1b")


def test_report_check_diff_keeps_the_documents_backslashes(tmp_path: Path) -> None:
    manifest = _manifest(tmp_path)
    saved = tmp_path / "r\\eport.md"
    assert run_cli("report", "-m", str(manifest), "-o", str(saved)).returncode == 0
    with saved.open("a", encoding="utf-8", newline="") as f:
        f.write('C:\\temp\nsep = "\\n".join(parts)\nx\x1b[2J\r\n')
    proc = run_cli("report", "-m", str(manifest), "--check", str(saved))
    assert proc.returncode == 1, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == f"--- {printable(str(saved))}" and "r\\\\eport.md" in lines[0]
    assert "-C:\\temp" in lines and '-sep = "\\n".join(parts)' in lines and "-x\\x1b[2J\\r" in lines



# --- the zipped standard library (startupzip._zip_names) --------------------------

def _venv_zip(tmp_path: Path) -> tuple[Path, Path]:
    """An installed ``pkg`` in a venv, and where its base's ``pythonXY.zip`` goes."""
    from startuptrees import ZIPNAME, venv_with_base

    root, base = venv_with_base(tmp_path)
    return root, base / "lib" / ZIPNAME


def _zip_names(zpath: Path, packages: tuple[str, ...] = ("pkg",)) -> tuple[set[str] | None, list[str]]:
    from pp1audit.checks.shadowing import ShadowReport
    from pp1audit.checks.startupzip import _zip_names

    report = ShadowReport()
    return _zip_names(str(zpath), report, packages), report.notes


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_swapped_in_after_the_stat_is_refused_not_waited_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The zip was ``os.stat``-ed, then opened blocking: a FIFO put in its place
    between the two hung the run. Here ``os.stat`` sees the regular file it was."""
    regular = tmp_path / "regular"
    regular.write_bytes(b"")
    real_stat = os.stat
    _root, zpath = _venv_zip(tmp_path)
    os.mkfifo(zpath)

    def stat_before_the_swap(p: object, *a: object, **k: object) -> os.stat_result:
        return real_stat(regular) if str(p) == str(zpath) else real_stat(p, *a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "stat", stat_before_the_swap)  # the module shadowing calls it through
    out: list[tuple[set[str] | None, list[str]]] = []
    worker = threading.Thread(target=lambda: out.append(_zip_names(zpath)), daemon=True)
    worker.start()
    worker.join(30)
    if worker.is_alive():  # blocked in open(): give it a writer so the thread ends
        os.close(os.open(zpath, os.O_WRONLY | os.O_NONBLOCK))
        worker.join(30)
        pytest.fail("opening the stdlib zip waited on a FIFO")
    assert out == [(None, [f"{zpath} (on sys.path ahead of the audited copy) is not a regular file; "
                           "not opened"])]


def test_a_linked_zip_is_read_as_python_imports_it(tmp_path: Path) -> None:
    from startuptrees import write_zip

    _root, zpath = _venv_zip(tmp_path)
    elsewhere = write_zip(tmp_path / "elsewhere.zip", {"pkg.py": ""})
    zpath.symlink_to(elsewhere)
    assert _zip_names(zpath) == ({"pkg.py"}, [])


def test_only_the_names_that_decide_are_kept(tmp_path: Path) -> None:
    """A zip of thousands of members became a set of all their names; what
    ``_zip_hit`` decides on is a handful per package, and decides the same."""
    from startuptrees import write_zip

    from pp1audit.checks.startupzip import _zip_hit

    ext = importlib.machinery.EXTENSION_SUFFIXES[0]
    members = {**{f"pkg/m{i:04}.py": "" for i in range(2000)}, **{f"other{i:04}.py": "" for i in range(2000)},
               f"pkg{ext}": "", f"pkg.b{ext}": "", "pkg.py": "", "sitecustomize/x.txt": "", "pkgx.py": "",
               "donn\u00e9es/__init__.py": ""}
    _root, zpath = _venv_zip(tmp_path)
    write_zip(zpath, members)
    packages = ("pkg", "donn\u00e9es", "sitecustomize", "usercustomize")
    names, notes = _zip_names(zpath, packages)
    # ``pkg.b<ext>`` is no name of ``pkg`` (the extension names are read per version now).
    assert notes == [] and names == {"pkg.py", "pkg/m0000.py", f"pkg{ext}",
                                     "sitecustomize/x.txt", "donn\u00e9es/__init__.py"}
    for package in packages:
        assert _zip_hit(str(zpath), names, package) == _zip_hit(str(zpath), set(members), package)


def test_a_zip_far_larger_than_a_standard_library_is_not_read(tmp_path: Path) -> None:
    """All of CPython's standard library zips to 16 MiB at most (startupzip.STDLIB_ZIP_MAX)."""
    _root, zpath = _venv_zip(tmp_path)
    with zpath.open("wb") as f:
        f.truncate(17 << 20)  # sparse: no 17 MiB written
    names, notes = _zip_names(zpath)
    assert names is None
    assert notes == [f"{zpath} (on sys.path ahead of the audited copy) is {17 << 20:,} bytes, over the "
                     "16 MiB read for its member list; not looked into"]
