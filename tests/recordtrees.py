"""Shared test helpers: installed trees with a RECORD, for the --record tests."""

from __future__ import annotations

import base64
import csv
import hashlib
import importlib.util
import io
import marshal
import os
import py_compile
import struct
import zipfile
from pathlib import Path

from pp1audit.checks.record import RecordRun
from pp1audit.checks.record_judge import record_checks
from pp1audit.result import Check, Status
from pp1audit.sources import DirectorySource, WheelSource

FILES = {
    "pkg/__init__.py": "from pkg.mod import answer\n",
    "pkg/mod.py": "def answer():\n    return 42\n",
    "pkg/data/table.json": '{"a": 1}\n',
}


def record_row(root: Path, rel: str) -> list[str]:
    data = (root / rel).read_bytes()
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return [rel, f"sha256={digest}", str(len(data))]


def install(root: Path, files: dict[str, str] = FILES, dist: str = "pkg-1.0",
            compile_pyc: bool = True) -> Path:
    """A site-packages laid out as pip leaves it: files, RECORD, pycs listed without hash."""
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    meta = root / f"{dist}.dist-info"
    meta.mkdir(parents=True, exist_ok=True)
    (meta / "METADATA").write_text(f"Name: {dist.split('-')[0]}\nVersion: 1.0\n", encoding="utf-8")
    rows = [record_row(root, rel) for rel in files] + [record_row(root, f"{dist}.dist-info/METADATA")]
    if compile_pyc:
        for rel in files:
            if rel.endswith(".py"):
                src = root / rel
                pyc = importlib.util.cache_from_source(str(src))
                py_compile.compile(str(src), cfile=pyc, doraise=True)
                rows.append([os.path.relpath(pyc, root), "", ""])
    rows.append([f"{dist}.dist-info/RECORD", "", ""])
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    (meta / "RECORD").write_text(buf.getvalue(), encoding="utf-8")
    return root


def swap_pyc(src: Path, text: str) -> Path:
    """Write ``src``'s pyc as the code of ``text`` under the header Python checks (the
    source's mtime and size): Python runs ``text`` instead of the source. Returns the pyc."""
    pyc = Path(importlib.util.cache_from_source(str(src)))
    pyc.parent.mkdir(exist_ok=True)
    st = src.stat()
    header = importlib.util.MAGIC_NUMBER + struct.pack(
        "<III", 0, int(st.st_mtime) & 0xFFFFFFFF, st.st_size & 0xFFFFFFFF)
    pyc.write_bytes(header + marshal.dumps(compile(text, str(src), "exec", dont_inherit=True)))
    return pyc


def wheel_of(root: Path, tmp_path: Path, extra: dict[str, str] | None = None) -> Path:
    """The installed tree ``root`` zipped as a wheel (plus ``extra`` members)."""
    whl = tmp_path / "pkg-1.0-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w", zipfile.ZIP_DEFLATED) as zf:
        for p in sorted(root.rglob("*")):
            if p.is_file():
                zf.write(p, p.relative_to(root).as_posix())
        for name, text in (extra or {}).items():
            zf.writestr(name, text)
    return whl


def run(target: Path, **kw: object) -> dict[str, Check]:
    source = WheelSource(target) if target.suffix == ".whl" else DirectorySource(target)
    with source:
        checks = record_checks(RecordRun("pkg", source, cache=_nocache(), **kw))  # type: ignore[arg-type]
    return {c.id: c for c in checks}


def _nocache():  # type: ignore[no-untyped-def]
    from pp1audit.checks.bytecode import VerifiedCache

    return VerifiedCache(None)


def bad(checks: dict[str, Check]) -> dict[str, Check]:
    return {k: c for k, c in checks.items() if c.status is not Status.PASS}
