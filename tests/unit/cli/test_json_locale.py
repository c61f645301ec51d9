"""JSON on stdout is UTF-8 whatever the locale.

Under an ASCII or C locale Python's stdout writes what it cannot encode with
backslash escapes: ``é`` as ``\\xe9`` and a character past U+FFFF as
``\\U0001f600``, neither of which is a JSON escape, so a ``| jq`` step failed
on any non-ASCII name. Every JSON a command prints (a result, ``pin``/``diff``
plans, the schema, the exit-2 error object) must parse, with the exact text.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

NAME = "mé-😀"
ASCII = {"PYTHONIOENCODING": "ascii"}  # the stream only: file names stay UTF-8


def run(*args: str, cwd: Path) -> tuple[int, bytes]:
    env = {**os.environ, "NO_COLOR": "1", **ASCII}
    proc = subprocess.run([sys.executable, "-m", "pp1audit", *args], capture_output=True,
                          cwd=cwd, env=env, timeout=120, stdin=subprocess.DEVNULL)
    return proc.returncode, proc.stdout


@pytest.fixture
def site(tmp_path: Path) -> Path:
    """A package whose one pinned file and manifest carry non-ASCII names."""
    root = tmp_path / "site"
    (root / "pkg").mkdir(parents=True)
    body = b"x = 1\n"
    (root / "pkg" / f"{NAME}.py").write_bytes(body)
    (tmp_path / f"{NAME}.yaml").write_text(
        "pp1audit: 1\ntarget:\n  package: pkg\nfiles:\n"
        f"  pkg/{NAME}.py: {hashlib.sha256(body).hexdigest()}\n", encoding="utf-8")
    return root


def test_check_json_parses_under_an_ascii_locale(site: Path) -> None:
    code, out = run("check", "site", "-m", f"{NAME}.yaml", "--format", "json", cwd=site.parent)
    assert code == 0
    data = json.loads(out.decode("utf-8"))
    assert data["manifest"]["path"].endswith(f"{NAME}.yaml")
    assert [c["path"] for c in data["checks"] if c["kind"] == "file"] == [f"pkg/{NAME}.py"]


def test_diff_and_pin_json_parse_under_an_ascii_locale(site: Path) -> None:
    code, out = run("diff", "site", "site", "-m", f"{NAME}.yaml", "--format", "json", cwd=site.parent)
    assert code == 0
    assert f"pkg/{NAME}.py" in json.dumps(json.loads(out.decode("utf-8")), ensure_ascii=False)
    code, out = run("pin", "site", "-m", f"{NAME}.yaml", "--format", "json", cwd=site.parent)
    assert code == 0
    assert f"{NAME}.yaml" in json.dumps(json.loads(out.decode("utf-8")), ensure_ascii=False)


def test_the_error_object_parses_under_an_ascii_locale(tmp_path: Path) -> None:
    code, out = run("check", str(tmp_path), "-m", f"{NAME}-missing.yaml", "--format", "json",
                    cwd=tmp_path)
    assert code == 2
    data = json.loads(out.decode("utf-8"))
    assert f"{NAME}-missing.yaml" in data["error"]


def test_the_schema_parses_under_an_ascii_locale(tmp_path: Path) -> None:
    code, out = run("schema", cwd=tmp_path)
    assert code == 0
    assert json.loads(out.decode("utf-8"))
