"""The Markdown audit is a UTF-8 document whatever the locale of the run.

Under ``PYTHONIOENCODING=ascii`` or ``LC_ALL=C PYTHONUTF8=0``, stdout's encoding
cannot write an em dash; ``main`` makes it write ``\\u2014`` instead, which is
right for a terminal but was written into ``report > audit.md`` as six ASCII
characters: other content, silently (exit 0), and ``report --check`` then stale on
any UTF-8 machine. ``report`` now writes UTF-8 bytes to stdout, as to ``-o FILE``.
``check``'s text output keeps the terminal's escaping. And a stale report's diff
stays readable in such a locale: a line of the file holding ``\\u2014`` as text and
the generated one holding ``—`` must not print alike.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import run_cli

NARROW = {
    "ascii": {"PYTHONIOENCODING": "ascii"},
    "C": {"LC_ALL": "C", "PYTHONUTF8": "0"},
}


def narrow_env(name: str) -> dict[str, str]:
    """The environment of a run whose stdout cannot write non-ASCII characters."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONIOENCODING", "PYTHONUTF8", "LC_ALL", "LC_CTYPE", "LANG")}
    return {**env, "NO_COLOR": "1", **NARROW[name]}


def run_bytes(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    """``python -m pp1audit ARGS`` with stdout captured as bytes (no decoding by the test)."""
    return subprocess.run([sys.executable, "-m", "pp1audit", *args], capture_output=True,
                          stdin=subprocess.DEVNULL, env=env, timeout=120)


@pytest.fixture
def audited(tmp_path: Path, make_files: Callable[..., Path]) -> tuple[Path, Path]:
    """A small tree with non-ASCII code, and its manifest with non-ASCII prose."""
    tree = make_files({
        "pkg/__init__.py": "",
        "pkg/_version.py": '__version__ = "1.0"\n',
        "pkg/a.py": 'def f():\n    return "é — →"\n\nx = 2\n',
    })
    manifest = tmp_path / "m.yaml"
    made = run_cli("init", str(tree), "-p", "pkg", "--cite", "c=pkg/a.py:1-2", "-o", str(manifest))
    assert made.returncode == 0, made.stderr
    with open(manifest, "a", encoding="utf-8") as fh:
        fh.write("report:\n  title: Audit — é\n  sections:\n    - heading: Notes\n      blocks:\n"
                 "        - text: f returns é — → 😀.\n          evidence: [c]\n")
    return tree, manifest


@pytest.mark.parametrize("locale", list(NARROW))
@pytest.mark.parametrize("with_target", [False, True], ids=["pinned", "measured"])
def test_report_on_stdout_is_the_utf8_document_o_file_writes(
        locale: str, with_target: bool, audited: tuple[Path, Path], tmp_path: Path) -> None:
    tree, manifest = audited
    args = ["report", *([str(tree)] if with_target else []), "-m", str(manifest), "--excerpts"]
    saved = tmp_path / "saved.md"
    assert run_cli(*args, "-o", str(saved)).returncode == 0
    document = saved.read_bytes()
    assert "# Audit — é".encode() in document and "😀".encode() in document
    run = run_bytes(args, narrow_env(locale))
    assert run.returncode == 0, run.stderr
    assert run.stdout == document
    current = run_bytes([*args, "--check", str(saved)], narrow_env(locale))
    assert current.returncode == 0, current.stderr


@pytest.mark.parametrize("locale", list(NARROW))
def test_check_text_still_escapes_what_the_terminal_cannot_show(
        locale: str, audited: tuple[Path, Path]) -> None:
    """Only the document is UTF-8 whatever the locale: ``check``'s lines are for a
    person, and a terminal that cannot show ``→`` gets an escape, not mojibake."""
    tree, manifest = audited
    run = run_bytes(["check", str(tree), "-m", str(manifest), "-v"], narrow_env(locale))
    assert run.returncode == 0, run.stderr
    run.stdout.decode("ascii")  # every byte ASCII: nothing the locale cannot show


@pytest.mark.parametrize("locale", list(NARROW))
def test_a_stale_reports_diff_reads_differently_where_the_lines_differ(
        locale: str, audited: tuple[Path, Path], tmp_path: Path) -> None:
    """A report once written under such a locale holds ``\\u2014`` as text: its diff
    against the generated ``—`` must show two different lines, in that locale too."""
    _, manifest = audited
    saved = tmp_path / "saved.md"
    assert run_cli("report", "-m", str(manifest), "-o", str(saved)).returncode == 0
    text = saved.read_text(encoding="utf-8")
    saved.write_text(text.replace("—", "\\u2014"), encoding="utf-8")
    run = run_bytes(["report", "-m", str(manifest), "--check", str(saved)], narrow_env(locale))
    assert run.returncode == 1
    diff = run.stdout.decode("ascii").splitlines()
    old = [line[1:] for line in diff if line.startswith("-") and not line.startswith("---")]
    new = [line[1:] for line in diff if line.startswith("+") and not line.startswith("+++")]
    assert old and len(old) == len(new)
    assert all(a != b for a, b in zip(old, new, strict=True)), diff
    assert "# Audit \\\\u2014 \\u00e9" in old and "# Audit \\u2014 \\u00e9" in new
    said = run.stderr.decode("ascii").splitlines()
    assert said == [f"pp1audit: {saved} is stale: regenerate it with pp1audit report; the diff "
                    "writes what ascii cannot show as \\uNNNN, and a backslash of the text as \\\\"]


def test_a_stale_reports_diff_in_utf8_is_as_before(
        audited: tuple[Path, Path], tmp_path: Path) -> None:
    """Where stdout can show every character, the diff quotes the text as written."""
    _, manifest = audited
    saved = tmp_path / "saved.md"
    assert run_cli("report", "-m", str(manifest), "-o", str(saved)).returncode == 0
    saved.write_text(saved.read_text(encoding="utf-8").replace("—", "\\u2014"), encoding="utf-8")
    run = run_cli("report", "-m", str(manifest), "--check", str(saved),
                  env={"PYTHONIOENCODING": "utf-8"})
    assert run.returncode == 1
    assert "-# Audit \\u2014 é" in run.stdout.splitlines()
    assert "+# Audit — é" in run.stdout.splitlines()
    assert run.stderr.splitlines()[-1] == (f"pp1audit: {saved} is stale: regenerate it with "
                                           "pp1audit report")


def test_init_to_stdout_writes_utf8_whatever_the_locale(tmp_path: Path) -> None:
    """A manifest is a UTF-8 document: under an ASCII stdout ``init`` wrote the
    anchor's ``é`` as the text ``\\xe9``, so the anchor no longer matched its file."""
    site = tmp_path / "site"
    (site / "pkg").mkdir(parents=True)
    (site / "pkg" / "a.py").write_text("x = 'é — eₖ'\n", encoding="utf-8")
    args = ("init", str(site), "-p", "pkg", "--cite", "c=pkg/a.py:1", "--audit-id", "a")
    plain = subprocess.run([sys.executable, "-m", "pp1audit", *args, "-o", str(tmp_path / "m.yaml")],
                           capture_output=True, timeout=120)
    assert plain.returncode == 0, plain.stderr
    ascii_out = subprocess.run([sys.executable, "-m", "pp1audit", *args], capture_output=True,
                               timeout=120, env={**os.environ, "PYTHONIOENCODING": "ascii"})
    assert ascii_out.returncode == 0, ascii_out.stderr
    assert ascii_out.stdout == (tmp_path / "m.yaml").read_bytes()
    assert "x = 'é — eₖ'".encode() in ascii_out.stdout


def test_the_names_in_the_document_do_not_depend_on_the_locale(tmp_path: Path) -> None:
    """Under a C locale the file-system encoding gave ``é.yaml`` as ``\\xc3\\xa9.yaml``."""
    site = tmp_path / "site"
    (site / "pkg").mkdir(parents=True)
    (site / "pkg" / "a.py").write_bytes(b"x = 1\n")
    manifest = tmp_path / "é.yaml"
    manifest.write_text("pp1audit: 1\ntarget: {package: pkg}\nfiles:\n  pkg/a.py: "
                        f"{hashlib.sha256(b'x = 1' + bytes([10])).hexdigest()}\n", encoding="utf-8")
    made = subprocess.run([sys.executable, "-m", "pp1audit", "report", "site", "-m", "é.yaml",
                           "-o", "doc.md"], capture_output=True, timeout=120, cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert "`é.yaml`" in (tmp_path / "doc.md").read_text(encoding="utf-8")
    again = subprocess.run(
        [sys.executable, "-m", "pp1audit", "report", "site", "-m", "é.yaml", "--check", "doc.md"],
        capture_output=True, timeout=120, cwd=tmp_path,
        env={**os.environ, "LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"})
    assert again.returncode == 0, again.stdout + again.stderr
