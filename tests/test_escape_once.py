"""Text from the target is escaped once, by the output, never also where it is built.

``safetext.printable`` doubles backslashes (so a name holding ``\\n`` is told from one
holding a newline), so a message escaped in the core and again by the output read
``'vllm/a\\\\x1bb.py'`` for a RECORD path holding ESC and ``'a\\\\nb'`` for a bytecode
constant holding a newline; ``report --check`` doubled every backslash of the
document in its diff. The core keeps messages raw; each output escapes them once
(JSON by its encoder, carrying the raw text).
"""

from __future__ import annotations

import importlib.util
import json
import marshal
from pathlib import Path

from conftest import run_cli
from test_record_units import install

from pp1audit.bytecode import _where_they_part
from pp1audit.safetext import printable

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
    from pp1audit.bytecode import _literal

    for value in (b"\x00\xff\\\n'", ("a\nb", ("x",), 1.5, None), "it's", b"", ()):
        assert printable(_literal(value)) == repr(value)


def test_a_long_literal_is_cut_to_its_width_once_escaped() -> None:
    from pp1audit.bytecode import _SHOWN, _shown

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

