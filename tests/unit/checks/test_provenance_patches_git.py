"""Donor hunks judged as ``git apply`` judges them, where pp1audit used to guess.

Every patch here is written by real git (``git diff``, ``git diff -U0``, ``git
format-patch``) or GNU ``diff``, and git is the oracle: ``git apply --check``
succeeding means *not applied*, ``git apply --check -R`` succeeding means
*applied*, neither means *conflict*. A patch without any context line is checked
with ``--unidiff-zero``, as git needs; there an addition always applies forward,
so only the side git can tell is asserted, and pp1audit judges the hunk at the
line it names.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import pytest
from conftest import run_cli
from lanerepo import dedent

from pp1audit.checks.patches import UNUSABLE, patch_status
from pp1audit.checks.patchmatch import APPLIED, CONFLICT, NOT_APPLIED
from pp1audit.sources import DirectorySource
from pp1audit.sources.store import FileStore

MOD = "pkg/mod.py"
LONG = "".join(f"x{i} = 0\n" for i in range(1, 12))
FUNC = "def f():\n    a = 1\n    b = 2\n    return a + b\n"

Files = dict[str, str | bytes]


def git(*args: str, cwd: Path, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", "-c", "core.autocrlf=false", "-c", "user.name=t", "-c",
                           "user.email=t@t", *args], cwd=cwd, input=stdin, capture_output=True,
                          check=False)


def write(root: Path, files: Files) -> Path:
    """``root`` holding package ``pkg`` and ``files`` (text written byte for byte)."""
    (root / "pkg").mkdir(parents=True, exist_ok=True)
    (root / "pkg" / "__init__.py").touch()
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(text if isinstance(text, bytes) else text.encode())
    return root


def commit(repo: Path, files: Files, message: str) -> None:
    for path in list(files):
        if (repo / path).exists():
            (repo / path).unlink()
    write(repo, files)
    assert git("add", "-A", cwd=repo).returncode == 0
    assert git("commit", "-qm", message, cwd=repo).returncode == 0


def diff(root: Path, before: Files, after: Files, *args: str) -> bytes:
    """What ``git diff`` (with ``args``) writes for ``before`` changed to ``after``."""
    root.mkdir(parents=True)
    git("init", "-q", cwd=root)
    commit(root, before, "base")
    write(root, after)
    git("add", "-A", cwd=root)
    out = git("diff", "--cached", *args, cwd=root)
    assert out.returncode == 0 and out.stdout, out.stderr
    return out.stdout


def git_apply(tree: Path, patch: bytes, *args: str) -> tuple[bool, bool]:
    """``(git apply --check succeeds, git apply --check -R succeeds)`` in ``tree``."""
    git("init", "-q", cwd=tree)
    (tree.parent / "oracle.patch").write_bytes(patch)
    where = str(tree.parent / "oracle.patch")
    forward = git("apply", "--check", *args, where, cwd=tree).returncode == 0
    reverse = git("apply", "--check", "-R", *args, where, cwd=tree).returncode == 0
    return forward, reverse


def oracle(tree: Path, patch: bytes, *args: str) -> str:
    """git's verdict when it has one: forward only, reverse only, or neither."""
    forward, reverse = git_apply(tree, patch, *args)
    assert not (forward and reverse), "git cannot tell"
    return NOT_APPLIED if forward else APPLIED if reverse else CONFLICT


def judged(tree: Path, patch: bytes) -> list[str]:
    return [s.status for s in patch_status(patch, FileStore(DirectorySource(tree))).hunks]


# -- 1. an empty line range is not a creation or a deletion -----------------------


@pytest.mark.parametrize(("text", "expected"), [("", NOT_APPLIED), ("from .mod import f\n", APPLIED)],
                         ids=["empty", "filled"])
def test_filling_an_empty_file_is_a_change_not_a_creation(tmp_path: Path, text: str,
                                                          expected: str) -> None:
    patch = diff(tmp_path / "src", {"pkg/__init__.py": ""}, {"pkg/__init__.py": "from .mod import f\n"})
    assert b"@@ -0,0 +1 @@" in patch and b"new file mode" not in patch
    tree = write(tmp_path / "t", {"pkg/__init__.py": text})
    assert oracle(tree, patch) == expected
    assert judged(tree, patch) == [expected]  # was: conflict, "a file the patch adds exists"


@pytest.mark.parametrize(("files", "expected"), [
    ({MOD: "x = 1\n"}, NOT_APPLIED), ({MOD: ""}, APPLIED), ({}, CONFLICT)],
    ids=["original", "emptied", "missing"])
def test_emptying_a_file_is_a_change_not_a_deletion(tmp_path: Path, files: Files,
                                                     expected: str) -> None:
    patch = diff(tmp_path / "src", {MOD: "x = 1\n"}, {MOD: ""})
    assert b"@@ -1 +0,0 @@" in patch and b"deleted file mode" not in patch
    tree = write(tmp_path / "t", files)
    assert oracle(tree, patch) == expected
    assert judged(tree, patch) == [expected]  # emptied was: conflict; missing was: applied


def test_a_u0_insertion_at_the_top_is_judged_at_line_1(tmp_path: Path) -> None:
    """A second context-free hunk not at the file's edges shows ``-U0`` wrote the
    patch; alone, ``@@ -0,0 +1 @@`` is also what plain ``git diff`` writes when it
    fills an empty file, and is judged as git judges that: as the whole file."""
    patched = "import os\n" + FUNC.replace("b = 2", "b = 3")
    patch = diff(tmp_path / "src", {MOD: FUNC}, {MOD: patched}, "-U0")
    assert b"@@ -0,0 +1 @@" in patch and b"@@ -3 +4 @@" in patch
    tree = write(tmp_path / "t", {MOD: FUNC})
    assert git_apply(tree, patch, "--unidiff-zero") == (True, False)
    assert judged(tree, patch) == [NOT_APPLIED, NOT_APPLIED]  # was: conflict
    tree = write(tmp_path / "t2", {MOD: patched})
    assert git_apply(tree, patch, "--unidiff-zero")[1]
    assert judged(tree, patch) == [APPLIED, APPLIED]  # was: conflict
    alone = diff(tmp_path / "src1", {MOD: FUNC}, {MOD: "import os\n" + FUNC}, "-U0")
    assert alone.count(b"\n@@ ") == 1
    tree = write(tmp_path / "t3", {MOD: FUNC})
    assert oracle(tree, alone) == CONFLICT
    assert judged(tree, alone) == [CONFLICT]


def test_diff_n_timestamps_create_and_delete_as_git_reads_them(tmp_path: Path) -> None:
    """``diff -ruN`` marks an absent side with the epoch; ``diff -u`` between an empty
    and a filled file does not, and there the file is only changed."""
    for side in ("a", "b"):
        (tmp_path / side / "pkg").mkdir(parents=True)
    (tmp_path / "a" / "pkg" / "old.py").write_text(FUNC)
    (tmp_path / "b" / "pkg" / "new.py").write_text(FUNC)
    (tmp_path / "a" / "pkg" / "e.py").write_text("")
    (tmp_path / "b" / "pkg" / "e.py").write_text("x = 1\n")
    patch = subprocess.run(["diff", "-ruN", "a", "b"], cwd=tmp_path, capture_output=True,
                           env={"TZ": "UTC"}, check=False).stdout
    assert b"1970-01-01 00:00:00" in patch and b"/dev/null" not in patch
    before = write(tmp_path / "t1", {"pkg/old.py": FUNC, "pkg/e.py": ""})
    assert oracle(before, patch) == NOT_APPLIED
    assert judged(before, patch) == [NOT_APPLIED] * 3  # e.py was: conflict
    after = write(tmp_path / "t2", {"pkg/new.py": FUNC, "pkg/e.py": "x = 1\n"})
    assert oracle(after, patch) == APPLIED
    assert judged(after, patch) == [APPLIED] * 3


# -- 2. a hunk at line 1 is pinned to the start; a whole-file hunk to the file ------


@pytest.mark.parametrize("patched", [False, True], ids=["original", "patched"])
def test_a_hunk_at_line_1_must_match_at_the_start(tmp_path: Path, patched: bool) -> None:
    after = LONG.replace("x2 = 0", "x2 = 1")
    patch = diff(tmp_path / "src", {MOD: LONG}, {MOD: after})
    assert b"@@ -1,5 +1,5 @@\n x1 = 0\n-x2 = 0" in patch
    tree = write(tmp_path / "t", {MOD: "# added on top\n" + (after if patched else LONG)})
    assert oracle(tree, patch) == CONFLICT
    assert judged(tree, patch) == [CONFLICT]  # was: applied / not applied


def test_a_whole_file_hunk_without_context_matches_only_the_whole_file(tmp_path: Path) -> None:
    patch = diff(tmp_path / "src", {MOD: LONG, "pkg/one.py": "a = 1\n"},
                 {MOD: LONG.replace("x6 = 0", "x6 = 1"), "pkg/one.py": "a = 2\n"})
    assert b"@@ -1 +1 @@\n-a = 1\n+a = 2\n" in patch
    tree = write(tmp_path / "t", {MOD: LONG, "pkg/one.py": "a = 2\nb = 3\n"})
    assert oracle(tree, patch, "--include=pkg/one.py") == CONFLICT
    assert judged(tree, patch) == [NOT_APPLIED, CONFLICT]  # one.py was: applied


# -- 3. a context-free hunk is judged at the line it names ---------------------------


def test_a_u0_addition_elsewhere_in_the_file_is_not_applied(tmp_path: Path) -> None:
    original = "import torch\n\n\n@torch.no_grad()\ndef a(x):\n    return x\n\n\ndef b(x):\n    return x\n"
    patched = original.replace("\ndef b", "\n@torch.no_grad()\ndef b")
    patch = diff(tmp_path / "src", {MOD: original}, {MOD: patched}, "-U0")
    assert b"@@ -8,0 +9 @@" in patch
    tree = write(tmp_path / "t", {MOD: original})
    assert git_apply(tree, patch, "--unidiff-zero")[0]
    [status] = patch_status(patch, FileStore(DirectorySource(tree))).hunks
    assert status.status == NOT_APPLIED  # was: applied (the line is at 4)
    assert status.reason == ("the added lines are not at line 9 (no context: judged at the line "
                             "the hunk names)")
    tree = write(tmp_path / "t2", {MOD: patched})
    assert git_apply(tree, patch, "--unidiff-zero")[1]
    assert judged(tree, patch) == [APPLIED]


# -- 4. a series of commits in one mbox ---------------------------------------------


def test_a_series_is_judged_in_order(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    git("init", "-q", cwd=src)
    commit(src, {MOD: FUNC}, "base")
    commit(src, {MOD: FUNC.replace("b = 2", "b = 3")}, "c1")
    commit(src, {MOD: FUNC.replace("b = 2", "b = 4")}, "c2")
    series = git("format-patch", "--stdout", "-2", cwd=src).stdout
    first = git("format-patch", "--stdout", "-1", "HEAD~1", cwd=src).stdout
    second = git("format-patch", "--stdout", "-1", "HEAD", cwd=src).stdout
    assert series.count(b"\ndiff --git") == 2
    final = write(tmp_path / "final", {MOD: FUNC.replace("b = 2", "b = 4")})
    assert oracle(final, series) == APPLIED
    statuses = patch_status(series, FileStore(DirectorySource(final))).hunks
    assert [s.status for s in statuses] == [APPLIED, APPLIED]  # #1 was: conflict
    assert statuses[0].reason.startswith("applied; a later diff of the same file in the patch "
                                         "changed these lines again")
    middle = write(tmp_path / "middle", {MOD: FUNC.replace("b = 2", "b = 3")})
    assert oracle(middle, first) == APPLIED and oracle(middle, second) == NOT_APPLIED
    assert judged(middle, series) == [APPLIED, NOT_APPLIED]
    original = write(tmp_path / "original", {MOD: FUNC})
    assert oracle(original, series) == NOT_APPLIED
    assert judged(original, series) == [NOT_APPLIED, NOT_APPLIED]  # #2 was: conflict


def test_a_series_half_applied_is_judged_from_its_last_diff(tmp_path: Path) -> None:
    """The tree has commit 1 and the first hunk of commit 2, which rewrote commit 1's
    line: git applies the series neither way, nor commit 1 alone; commit 2's applied
    hunk, put back in memory, shows commit 1 applied."""
    src = tmp_path / "src"
    src.mkdir()
    git("init", "-q", cwd=src)
    text = "".join(f"y{i} = 0\n" for i in range(1, 31))
    commit(src, {MOD: text}, "base")
    commit(src, {MOD: text.replace("y2 = 0", "y2 = 1")}, "c1")
    commit(src, {MOD: text.replace("y2 = 0", "y2 = 2").replace("y20 = 0", "y20 = 1")}, "c2")
    series = git("format-patch", "--stdout", "-2", cwd=src).stdout
    first = git("format-patch", "--stdout", "-1", "HEAD~1", cwd=src).stdout
    assert series.count(b"\n@@ ") == 3
    tree = write(tmp_path / "t", {MOD: text.replace("y2 = 0", "y2 = 2")})
    assert git_apply(tree, series) == (False, False)
    assert oracle(tree, first) == CONFLICT
    assert judged(tree, series) == [APPLIED, APPLIED, NOT_APPLIED]  # #1 was: conflict


# -- 5. a binary diff is one file's problem, and none outside the package ---------


def seed(cache: Path, data: bytes) -> str:
    digest = hashlib.sha256(data).hexdigest()
    (cache / "sha256").mkdir(parents=True, exist_ok=True)
    (cache / "sha256" / digest).write_bytes(data)
    return digest


def check_donor(tmp_path: Path, tree: Path, patch: bytes) -> tuple[int, dict[str, dict]]:
    digest = seed(tmp_path / "cache", patch)
    m = tmp_path / "m.yaml"
    m.write_text(dedent(f"""
        pp1audit: 1
        target: {{package: pkg}}
        donors:
          d: {{url: https://example.invalid/d.patch, sha256: '{digest}', expect: not-applied}}
    """))
    proc = run_cli("check", str(tree), "-m", str(m), "--cache-dir", str(tmp_path / "cache"),
                   "--offline", "--format", "json")
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, {c["id"]: c for c in json.loads(proc.stdout)["checks"]}


def test_a_binary_diff_outside_the_package_is_counted_not_an_error(tmp_path: Path) -> None:
    patch = diff(tmp_path / "src", {MOD: FUNC, "docs/logo.png": b"\x89PNG\x00\x01"},
                 {MOD: FUNC.replace("b = 2", "b = 3"), "docs/logo.png": b"\x89PNG\x00\x02"},
                 "--binary")
    assert b"GIT binary patch" in patch
    rc, checks = check_donor(tmp_path, write(tmp_path / "t", {MOD: FUNC}), patch)
    assert rc == 0, checks  # was: error, "docs/logo.png: binary diffs cannot be checked"
    assert checks["d:hunks"]["message"] == ("d is not applied in the target: all 1 hunk(s) not "
                                            "applied; 1 hunk(s) outside pkg/ not checked")


def test_a_binary_diff_inside_the_package_is_that_files_error(tmp_path: Path) -> None:
    patch = diff(tmp_path / "src", {MOD: FUNC, "pkg/data.bin": b"\x00\x01"},
                 {MOD: FUNC.replace("b = 2", "b = 3"), "pkg/data.bin": b"\x00\x02"})
    assert b"Binary files a/pkg/data.bin and b/pkg/data.bin differ" in patch
    tree = write(tmp_path / "t", {MOD: FUNC, "pkg/data.bin": b"\x00\x01"})
    statuses = patch_status(patch, FileStore(DirectorySource(tree)), within="pkg/").hunks
    assert [(s.label, s.status) for s in statuses] == [
        ("pkg/data.bin#1", UNUSABLE), (f"{MOD}#1", NOT_APPLIED)]  # was: PatchError, nothing judged
    rc, checks = check_donor(tmp_path, tree, patch)
    assert rc == 1
    assert checks["d:pkg/data.bin#1"]["status"] == "error"
    assert checks["d:pkg/data.bin#1"]["message"] == (
        "binary change of pkg/data.bin: pkg/data.bin has a binary diff, whose content cannot be checked")
    assert checks[f"d:{MOD}#1"]["status"] == "pass"


# -- 6. quoted names ------------------------------------------------------------------


@pytest.mark.parametrize("name", ["pkg/caf\u00e9.py", 'pkg/say "hi".py', "pkg/tab\there.py"],
                         ids=["utf8", "quote", "tab"])
def test_quoted_file_names_are_unquoted_as_git_does(tmp_path: Path, name: str) -> None:
    patch = diff(tmp_path / "src", {name: FUNC}, {name: FUNC.replace("b = 2", "b = 3")})
    assert b'--- "a/pkg/' in patch
    tree = write(tmp_path / "t", {name: FUNC})
    assert oracle(tree, patch) == NOT_APPLIED
    [status] = patch_status(patch, FileStore(DirectorySource(tree))).hunks
    assert (status.label, status.status) == (f"{name}#1", NOT_APPLIED)  # was: conflict, missing


# -- 7. whitespace and the final newline count ----------------------------------------


@pytest.mark.parametrize(("before", "after"), [
    ("a = 1  \nb = 2\n", "a = 1\nb = 2\n"),
    ("a = 1\nb = 2", "a = 1\nb = 2\n"),
    ("a = 1  \nb = 2", "a = 1\nb = 2\n"),
], ids=["trailing-space", "final-newline", "both"])
def test_whitespace_and_the_final_newline_are_compared_exactly(tmp_path: Path, before: str,
                                                                after: str) -> None:
    patch = diff(tmp_path / "src", {MOD: before}, {MOD: after})
    for name, text, expected in (("t1", before, NOT_APPLIED), ("t2", after, APPLIED)):
        tree = write(tmp_path / name, {MOD: text})
        assert oracle(tree, patch) == expected
        assert judged(tree, patch) == [expected]  # the original was: applied


# -- 8. a byte-order mark is part of the first line ----------------------------------


def test_a_file_with_a_bom_matches_a_hunk_at_line_1(tmp_path: Path) -> None:
    original = "\ufeffimport os\nx = 1\ny = 2\nz = 3\n"
    patched = original.replace("x = 1", "x = 9")
    patch = diff(tmp_path / "src", {MOD: original}, {MOD: patched})
    assert "\ufeffimport os".encode() in patch
    for name, text, expected in (("t1", original, NOT_APPLIED), ("t2", patched, APPLIED)):
        tree = write(tmp_path / name, {MOD: text})
        assert oracle(tree, patch) == expected
        assert judged(tree, patch) == [expected]  # was: conflict


# -- 6. context-free hunks: a whole file's, or -U0's ----------------------------------


@pytest.mark.parametrize(("before", "after", "tree"), [
    ("import os\nDEBUG = True\n", "", "import os\nimport sys\nDEBUG = True\n"),
    ("", "SAFE = True\n", "x = 1\n"),
    ("a = 1\n", "a = 2\n", "a = 2\nb = 3\n")], ids=["emptied", "filled", "rewritten"])
def test_a_plain_diff_without_context_is_judged_as_the_whole_file(
        tmp_path: Path, before: str, after: str, tree: str) -> None:
    """Plain ``git diff`` writes no context when it empties, fills or rewrites a small
    file; git pins such a hunk to the start and the end: the whole file."""
    patch = diff(tmp_path / "src", {MOD: before}, {MOD: after})
    assert patch.count(b"\n@@ ") == 1 and b"\n " not in patch.split(b"\n@@ ")[1]
    target = write(tmp_path / "t", {MOD: tree})
    assert oracle(target, patch) == CONFLICT
    assert judged(target, patch) == [CONFLICT]  # was: applied / not applied
    for text, expected in ((before, NOT_APPLIED), (after, APPLIED)):
        target = write(tmp_path / f"t-{expected}", {MOD: text})
        assert oracle(target, patch) == expected
        assert judged(target, patch) == [expected]


CFG = "import os\nDEBUG = True\nx = 1\n"


@pytest.mark.parametrize(("tree", "expected"), [
    (CFG, NOT_APPLIED), ("import os\nx = 1\n", APPLIED),
    ("import os\nimport re\nimport sys\nDEBUG = True\nx = 1\n", CONFLICT)],
    ids=["there", "removed", "moved"])
def test_a_u0_removal_moved_elsewhere_is_a_conflict(tmp_path: Path, tree: str,
                                                    expected: str) -> None:
    patch = diff(tmp_path / "src", {MOD: CFG}, {MOD: CFG.replace("DEBUG = True\n", "")}, "-U0")
    assert b"@@ -2 +1,0 @@" in patch
    target = write(tmp_path / "t", {MOD: tree})
    # with --unidiff-zero the reverse (an addition) always applies; the forward check
    # finds the removed line wherever it is, so for "moved" git cannot tell either
    assert git_apply(target, patch, "--unidiff-zero")[0] == (expected != APPLIED)
    assert judged(target, patch) == [expected]  # moved was: applied


def mails(tmp_path: Path, base: str, *texts: str) -> bytes:
    """``git format-patch`` of commits turning ``base`` into each of ``texts`` in turn."""
    src = tmp_path / "src"
    src.mkdir()
    git("init", "-q", cwd=src)
    commit(src, {MOD: base}, "base")
    for i, text in enumerate(texts):
        commit(src, {MOD: text}, f"c{i}")
    return git("format-patch", "--stdout", f"-{len(texts)}", cwd=src).stdout


LINES = "".join(f"y{i} = 0\n" for i in range(1, 21))


def test_a_series_several_splits_fit_is_judged_by_the_whole_series(tmp_path: Path) -> None:
    """Commit 2 reverts commit 1: the base tree is the series before commit 1 and after
    commit 2; git applies the whole series forward."""
    changed, other = LINES.replace("y10 = 0", "y10 = 1"), LINES.replace("y3 = 0", "y3 = 1")
    series = mails(tmp_path, LINES, changed, LINES, other)
    tree = write(tmp_path / "t", {MOD: LINES})
    assert git_apply(tree, series)[0]
    assert judged(tree, series) == [NOT_APPLIED] * 3  # was: not applied, applied, not applied


def test_a_series_several_splits_fit_neither_way_is_a_conflict(tmp_path: Path) -> None:
    x, y, z, w = (LINES.replace("y10 = 0", f"y10 = {v}") for v in (1, 2, 3, 4))
    series = mails(tmp_path, x, y, z, y, w)  # the tree y is the series after 1 and after 3
    tree = write(tmp_path / "t", {MOD: y})
    assert git_apply(tree, series) == (False, False)
    statuses = patch_status(series, FileStore(DirectorySource(tree))).hunks
    assert [s.status for s in statuses] == [CONFLICT] * 4
    assert statuses[0].reason == "series ambiguous: several points fit"


def test_a_series_with_too_many_split_points_is_not_replayed(tmp_path: Path) -> None:
    """Sixty-six round trips: every even point fits; past 64 full replays the series is
    not judged (each replay costs the whole series)."""
    there = mails(tmp_path, LINES, LINES.replace("y10 = 0", "y10 = 1"), LINES)
    series = there * 66
    tree = write(tmp_path / "t", {MOD: LINES})
    statuses = patch_status(series, FileStore(DirectorySource(tree))).hunks
    assert len(statuses) == 132 and {s.status for s in statuses} == {CONFLICT}
    assert statuses[0].reason == "series too ambiguous: more than 64 split points to try"
