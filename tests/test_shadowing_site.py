"""What Python's startup really does with a site directory, where the shadowing
check used to model it differently (a reviewer's reproductions under each test).

Each premise ("Python would run it") is shown with the real interpreter where
the running one can show it, as in ``test_shadowing_hooks``.
"""

from __future__ import annotations

import csv
import io
import sys
from pathlib import Path

import pytest
from test_record_units import bad, install, run
from test_shadowing_hooks import with_hack

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX prefix layout and symlinks")


@pytest.fixture(autouse=True)
def _no_user_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PP1AUDIT_NO_CACHE", "1")


def add_rows(root: Path, meta: str, rows: list[list[str]]) -> None:
    """Append rows to ``meta``'s RECORD."""
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    with open(root / meta / "RECORD", "a", encoding="utf-8") as f:
        f.write(buf.getvalue())


# --- hash-less rows for files that are not there (virtualenv's seeder) -----------------------


def test_hashless_rows_for_absent_files_of_a_vouched_module_pass(tmp_path: Path) -> None:
    """virtualenv (tox, hatch, poetry) seeds setuptools with rows such as
    ``_distutils_hack/override.cpython-311.pyc,,`` and ``_distutils_hack/__pycache__,,``
    for files it never writes: nothing there to run, so nothing fails."""
    root = with_hack(install(tmp_path / "site"))
    add_rows(root, "hack-1.0.dist-info", [["_hack/override.cpython-311.pyc", "", ""],
                                          ["_hack/__init__.cpython-311.pyc", "", ""],
                                          ["_hack/__pycache__", "", ""]])
    assert bad(run(root)) == {}
    # A hash-less row of a file that is there still fails: its content is unvouched.
    (root / "_hack" / "override.cpython-311.pyc").write_bytes(b"")
    assert list(bad(run(root))) == ["pth:hack-precedence.pth:_hack/override.cpython-311.pyc"]
