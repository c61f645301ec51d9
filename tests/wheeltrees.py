"""Shared test helpers: hand-made wheels, for the wheel-reading tests."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import zipfile
from pathlib import Path

from pp1audit.checks.bytecode import VerifiedCache
from pp1audit.checks.record import RecordRun
from pp1audit.checks.record_judge import record_checks
from pp1audit.result import Check
from pp1audit.sources import DirectorySource, WheelSource

DIST = "pkg-1.0"


GOOD = {"pkg/__init__.py": b"", "pkg/mod.py": b"def answer():\n    return 42\n"}


def _row(name: str, data: bytes) -> list[str]:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return [name, f"sha256={digest}", str(len(data))]


def _meta() -> dict[str, bytes]:
    return {
        f"{DIST}.dist-info/METADATA": b"Metadata-Version: 2.1\nName: pkg\nVersion: 1.0\n",
        f"{DIST}.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                                   b"Tag: py3-none-any\n",
    }


def _record(rows: list[list[str]]) -> bytes:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows([*rows, [f"{DIST}.dist-info/RECORD", "", ""]])
    return buf.getvalue().encode()


def make_wheel(path: Path, extra: dict[str, bytes], *, unlisted: tuple[str, ...] = (),
               ghost_rows: dict[str, bytes] | None = None) -> Path:
    """A wheel of ``GOOD`` and ``extra`` members, METADATA and WHEEL, its RECORD listing
    every member but ``unlisted`` (as the zipfile module writes any name), plus rows
    for ``ghost_rows`` with no member behind them."""
    members = {**GOOD, **extra, **_meta()}
    rows = [_row(n, d) for n, d in members.items() if n not in unlisted]
    rows += [_row(n, d) for n, d in (ghost_rows or {}).items()]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
        zf.writestr(f"{DIST}.dist-info/RECORD", _record(rows))
    return path


def wheel_path(tmp_path: Path, sub: str) -> Path:
    (tmp_path / sub).mkdir()
    return tmp_path / sub / f"{DIST}-py3-none-any.whl"


def run(target: Path) -> dict[str, Check]:
    source = WheelSource(target) if target.suffix == ".whl" else DirectorySource(target)
    with source:
        checks = record_checks(RecordRun("pkg", source, cache=VerifiedCache(None)))
    return {c.id: c for c in checks}
