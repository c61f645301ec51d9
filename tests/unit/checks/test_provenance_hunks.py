"""Donor hunk status at the edges: whole-file hunks, hunks anchored at the start or
the end of a file, and several diffs of one file in one patch (small real trees)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from conftest import run_cli

from pp1audit.checks.patches import patch_status
from pp1audit.checks.patchmatch import APPLIED, CONFLICT, NOT_APPLIED
from pp1audit.checks.patchparse import parse
from pp1audit.sources import DirectorySource
from pp1audit.sources.store import FileStore


def judge(tree: Path, patch: bytes) -> list[str]:
    return [s.status for s in patch_status(patch, FileStore(DirectorySource(tree))).hunks]


def write(tree: Path, text: str | None) -> Path:
    """``pkg/m.py`` with ``text`` (None: absent); returns the tree."""
    path = tree / "pkg" / "m.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    if text is None:
        path.unlink(missing_ok=True)
    else:
        path.write_text(text, encoding="utf-8")
    return tree


DELETE = (b"diff --git a/pkg/m.py b/pkg/m.py\ndeleted file mode 100644\n"
          b"--- a/pkg/m.py\n+++ /dev/null\n@@ -1,3 +0,0 @@\n-import os\n-import sys\n-print(1)\n")
ADD = (b"diff --git a/pkg/m.py b/pkg/m.py\nnew file mode 100644\n"
       b"--- /dev/null\n+++ b/pkg/m.py\n@@ -0,0 +1,2 @@\n+HYBRID = True\n+WINDOW = 8\n")


def test_a_deleted_file_is_applied_only_when_absent(tmp_path: Path) -> None:
    assert judge(write(tmp_path, None), DELETE) == [APPLIED]
    assert judge(write(tmp_path, "import os\nimport sys\nprint(1)\n"), DELETE) == [NOT_APPLIED]
    # the file is there with other content: the patch was not applied, nor is it pristine
    [status] = patch_status(DELETE, FileStore(DirectorySource(write(tmp_path, "a = 1\nb = 2\n")))).hunks
    assert status.status == CONFLICT
    assert status.reason == "pkg/m.py, which the patch deletes, exists with other content"
    # the removed lines inside a longer file are not the file the patch deletes
    longer = "import os\nimport sys\nprint(1)\nprint(2)\n"
    assert judge(write(tmp_path, longer), DELETE) == [CONFLICT]


def test_an_added_file_is_applied_only_with_exactly_its_content(tmp_path: Path) -> None:
    assert judge(write(tmp_path, None), ADD) == [NOT_APPLIED]
    assert judge(write(tmp_path, "HYBRID = True\nWINDOW = 8\n"), ADD) == [APPLIED]
    assert judge(write(tmp_path, "HYBRID = True\nWINDOW = 8\nimport evil\n"), ADD) == [CONFLICT]


APPEND = b"--- a/pkg/m.py\n+++ b/pkg/m.py\n@@ -1,3 +1,5 @@\n x = 1\n y = 2\n z = 3\n+w = 4\n+v = 5\n"
PREPEND = b"--- a/pkg/m.py\n+++ b/pkg/m.py\n@@ -1,3 +1,4 @@\n+import os\n x = 1\n y = 2\n z = 3\n"


def test_a_hunk_without_trailing_context_is_anchored_at_the_end(tmp_path: Path) -> None:
    assert judge(write(tmp_path, "x = 1\ny = 2\nz = 3\n"), APPEND) == [NOT_APPLIED]
    assert judge(write(tmp_path, "x = 1\ny = 2\nz = 3\nw = 4\nv = 5\n"), APPEND) == [APPLIED]
    # partly applied: the context is there, but no longer at the end of the file
    assert judge(write(tmp_path, "x = 1\ny = 2\nz = 3\nw = 4\n"), APPEND) == [CONFLICT]
    assert judge(write(tmp_path, "x = 1\ny = 2\nz = 3\nimport os\nos.system('x')\n"),
                 APPEND) == [CONFLICT]


def test_a_hunk_without_leading_context_is_anchored_at_the_start(tmp_path: Path) -> None:
    assert judge(write(tmp_path, "x = 1\ny = 2\nz = 3\nq = 0\n"), PREPEND) == [NOT_APPLIED]
    assert judge(write(tmp_path, "import os\nx = 1\ny = 2\nz = 3\n"), PREPEND) == [APPLIED]
    assert judge(write(tmp_path, "import sys\nx = 1\ny = 2\nz = 3\n"), PREPEND) == [CONFLICT]


def test_two_diffs_of_one_file_give_distinct_hunk_ids(tmp_path: Path) -> None:
    patch = (b"--- a/pkg/m.py\n+++ b/pkg/m.py\n@@ -1,2 +1,2 @@\n-x = 1\n+x = 10\n y = 2\n"
             b"--- a/pkg/m.py\n+++ b/pkg/m.py\n@@ -2,2 +2,2 @@\n y = 2\n-z = 3\n+z = 30\n")
    assert [(h.path, h.index) for d in parse(patch) for h in d.hunks] == [("pkg/m.py", 1), ("pkg/m.py", 2)]
    tree = write(tmp_path / "tree", "x = 10\ny = 2\nz = 3\n")
    (tree / "pkg" / "__init__.py").write_text("")
    digest = hashlib.sha256(patch).hexdigest()
    (tmp_path / "cache" / "sha256").mkdir(parents=True)
    (tmp_path / "cache" / "sha256" / digest).write_bytes(patch)
    m = tmp_path / "m.yaml"
    m.write_text("pp1audit: 1\ntarget: {package: pkg}\ndonors:\n"
                 f"  d: {{url: 'https://example.invalid/d.patch', sha256: '{digest}'}}\n")
    proc = run_cli("check", str(tree), "-m", str(m), "--cache-dir", str(tmp_path / "cache"),
                   "--format", "json")
    assert proc.returncode == 0, proc.stderr
    ids = [c["id"] for c in json.loads(proc.stdout)["checks"]]
    assert ids == ["d", "d:hunks", "d:pkg/m.py#1", "d:pkg/m.py#2"]
    actual = {c["id"]: c["actual"] for c in json.loads(proc.stdout)["checks"]}
    assert actual["d:pkg/m.py#1"] == APPLIED and actual["d:pkg/m.py#2"] == NOT_APPLIED
