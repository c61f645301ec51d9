"""Donor patches as git writes them, judged as git judges them; and git objects
behind directories that cannot be read.

Every patch here is made by real ``git diff`` (a CRLF patch is one with ``\\r``
added to each line, as ``sed 's/$/\\r/'`` makes it). The oracle for each tree is
git itself: ``git apply --check`` succeeding means *not applied*, ``git apply
--check -R`` succeeding means *applied*, neither means *conflict*; pp1audit must
give the same answer. A target file that cannot be used (FIFO, symlink escape,
directory, a ``..`` path) is an ``error`` with the file check's own reason.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import git
import pytest
from conftest import run_cli
from lanerepo import _commit, dedent

from pp1audit.checks.patches import patch_status
from pp1audit.checks.patchmatch import APPLIED, CONFLICT, NOT_APPLIED
from pp1audit.sources import DirectorySource
from pp1audit.sources.store import FileStore

MOD = "pkg/mod.py"
ORIGINAL = "def f():\n    a = 1\n    b = 2\n    return a + b\n"
PATCHED = ORIGINAL.replace("b = 2", "b = 3")
RENAMED_CHANGED = ORIGINAL.replace("b = 2", "b = 9")


def sh(*args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False)


def git_diff(root: Path, files: dict[str, str | None], *args: str) -> bytes:
    """What ``git diff --cached -M`` writes for ``files`` (None: removed) changed
    from a commit holding ``pkg/mod.py`` = ORIGINAL."""
    repo = git.Repo.init(root, initial_branch="main")
    _commit(repo, root, {MOD: ORIGINAL}, "base", 1_790_000_000)
    for path, text in files.items():
        if text is None:
            sh("rm", "-q", "--cached", path, cwd=root)
            (root / path).unlink()
        else:
            (root / path).write_text(text, encoding="utf-8")
            sh("add", path, cwd=root)
    out = sh("diff", "--cached", "-M", *args, cwd=root)
    assert out.returncode == 0, out.stderr
    repo.close()
    return out.stdout


def tree_of(root: Path, files: dict[str, str], crlf: bool = False) -> Path:
    """A target holding package ``pkg`` with ``files`` (written with CRLF if asked)."""
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    for path, text in files.items():
        (root / path).write_bytes(text.replace("\n", "\r\n" if crlf else "\n").encode())
    return root


def oracle(tree: Path, patch: bytes) -> str:
    """What git says: forward applies → not applied; reverse applies → applied."""
    sh("init", "-q", cwd=tree)  # so that git apply reads paths from this root
    (tree.parent / "oracle.patch").write_bytes(patch)
    forward = sh("apply", "--check", str(tree.parent / "oracle.patch"), cwd=tree).returncode == 0
    reverse = sh("apply", "--check", "-R", str(tree.parent / "oracle.patch"), cwd=tree).returncode == 0
    assert not (forward and reverse)
    return NOT_APPLIED if forward else APPLIED if reverse else CONFLICT


def judged(tree: Path, patch: bytes) -> list[tuple[str, str]]:
    return [(s.label, s.status) for s in patch_status(patch, FileStore(DirectorySource(tree))).hunks]


@pytest.fixture(scope="module")
def one_patch(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    patch = git_diff(tmp_path_factory.mktemp("one"), {MOD: PATCHED})
    assert b"@@ -1,4 +1,4 @@" in patch
    return patch


# -- CRLF patches: names without \r, hunk lines compared as git compares them ------


@pytest.mark.parametrize(("patch_crlf", "tree_crlf", "text", "expected"), [
    (True, True, ORIGINAL, NOT_APPLIED),   # was: conflict, "pkg/mod.py\r is missing"
    (True, True, PATCHED, APPLIED),
    (True, False, ORIGINAL, CONFLICT),     # git apply refuses a CRLF hunk on LF lines
    (True, False, PATCHED, CONFLICT),
    (False, True, ORIGINAL, CONFLICT),     # and an LF hunk on CRLF lines
    (False, True, PATCHED, CONFLICT),
    (False, False, ORIGINAL, NOT_APPLIED),
    (False, False, PATCHED, APPLIED),
], ids=["crlf-on-crlf", "crlf-on-crlf-applied", "crlf-on-lf", "crlf-on-lf-applied",
        "lf-on-crlf", "lf-on-crlf-applied", "lf-on-lf", "lf-on-lf-applied"])
def test_line_endings_are_judged_as_git_apply_judges_them(
    one_patch: bytes, tmp_path: Path, patch_crlf: bool, tree_crlf: bool, text: str, expected: str
) -> None:
    patch = one_patch.replace(b"\n", b"\r\n") if patch_crlf else one_patch
    tree = tree_of(tmp_path / "t", {MOD: text}, crlf=tree_crlf)
    assert oracle(tree, patch) == expected
    assert judged(tree, patch) == [(f"{MOD}#1", expected)]


def seed(cache: Path, data: bytes) -> str:
    digest = hashlib.sha256(data).hexdigest()
    (cache / "sha256").mkdir(parents=True, exist_ok=True)
    (cache / "sha256" / digest).write_bytes(data)
    return digest


def check_donor(tmp_path: Path, tree: Path, patch: bytes, expect: str,
                files: str = "") -> tuple[int, dict[str, dict]]:
    """``pp1audit check`` of donor ``d`` (the patch, cached) on ``tree``: exit code
    and checks by id; ``files``: a ``files:`` section for the same run."""
    digest = seed(tmp_path / "cache", patch)
    m = tmp_path / "m.yaml"
    m.write_text(dedent(f"""
        pp1audit: 1
        target: {{package: pkg}}
        donors:
          d:
            url: https://example.invalid/d.patch
            sha256: '{digest}'
            expect: {expect}
    """) + files)
    proc = run_cli("check", str(tree), "-m", str(m), "--cache-dir", str(tmp_path / "cache"),
                   "--offline", "--format", "json")
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, {c["id"]: c for c in json.loads(proc.stdout)["checks"]}


def test_a_crlf_donor_on_a_crlf_target_is_not_applied(one_patch: bytes, tmp_path: Path) -> None:
    tree = tree_of(tmp_path / "t", {MOD: ORIGINAL}, crlf=True)
    rc, checks = check_donor(tmp_path, tree, one_patch.replace(b"\n", b"\r\n"), "not-applied")
    assert rc == 0, checks
    assert list(checks) == ["d", "d:hunks", f"d:{MOD}#1"]
    hunk = checks[f"d:{MOD}#1"]
    assert hunk["path"] == MOD and hunk["found_lines"] == [1, 4]
    assert hunk["message"] == "hunk @@ -1,4 +1,4 @@: not applied: original lines found at 1-4"


# -- renames: the name the tree has decides, as git apply / git apply -R ----------


@pytest.fixture(scope="module")
def rename_patches(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    pure = git_diff(tmp_path_factory.mktemp("ren"), {MOD: None, "pkg/mod2.py": ORIGINAL})
    changed = git_diff(tmp_path_factory.mktemp("renchg"), {MOD: None, "pkg/mod3.py": RENAMED_CHANGED})
    assert b"similarity index 100%" in pure and b"@@" not in pure
    assert b"rename to pkg/mod3.py" in changed and b"@@ -1,4 +1,4 @@" in changed
    return {"pure": pure, "changed": changed}


@pytest.mark.parametrize(("files", "expected"), [
    ({MOD: ORIGINAL}, NOT_APPLIED),             # was: error "no hunks found: not a unified diff"
    ({"pkg/mod2.py": ORIGINAL}, APPLIED),
    ({"pkg/mod2.py": PATCHED}, APPLIED),         # a pure rename does not look at the text
    ({MOD: ORIGINAL, "pkg/mod2.py": ORIGINAL}, CONFLICT),
    ({}, CONFLICT),
], ids=["old-name", "new-name", "new-name-edited", "both", "neither"])
def test_a_pure_rename_is_judged_by_which_name_is_there(
    rename_patches: dict[str, bytes], tmp_path: Path, files: dict[str, str], expected: str
) -> None:
    tree = tree_of(tmp_path / "t", files)
    patch = rename_patches["pure"]
    assert oracle(tree, patch) == expected
    assert judged(tree, patch) == [("pkg/mod2.py#1", expected)]


@pytest.mark.parametrize(("files", "expected", "read"), [
    ({MOD: ORIGINAL}, NOT_APPLIED, MOD),
    ({"pkg/mod3.py": RENAMED_CHANGED}, APPLIED, "pkg/mod3.py"),
    ({"pkg/mod3.py": ORIGINAL}, CONFLICT, "pkg/mod3.py"),     # renamed, not changed
    ({MOD: RENAMED_CHANGED}, CONFLICT, MOD),                  # changed, not renamed
    ({MOD: ORIGINAL, "pkg/mod3.py": RENAMED_CHANGED}, CONFLICT, "pkg/mod3.py"),
    ({}, CONFLICT, "pkg/mod3.py"),
], ids=["old-name", "new-name", "renamed-only", "changed-only", "both", "neither"])
def test_a_rename_with_a_change_reads_the_name_the_tree_has(
    rename_patches: dict[str, bytes], tmp_path: Path, files: dict[str, str], expected: str,
    read: str,
) -> None:
    tree = tree_of(tmp_path / "t", files)
    patch = rename_patches["changed"]
    assert oracle(tree, patch) == expected
    [status] = patch_status(patch, FileStore(DirectorySource(tree))).hunks
    assert (status.label, status.status, status.path) == ("pkg/mod3.py#1", expected, read)


def test_the_rename_checks_name_the_file_their_lines_are_in(
    rename_patches: dict[str, bytes], tmp_path: Path
) -> None:
    tree = tree_of(tmp_path / "t", {MOD: ORIGINAL})
    rc, checks = check_donor(tmp_path, tree, rename_patches["changed"], "not-applied")
    assert rc == 0, checks
    hunk = checks["d:pkg/mod3.py#1"]
    assert hunk["path"] == MOD and hunk["found_lines"] == [1, 4]  # was: pkg/mod3.py
    assert hunk["message"] == ("hunk @@ -1,4 +1,4 @@: not applied: pkg/mod.py, not yet renamed "
                               "to pkg/mod3.py: original lines found at 1-4")
    rc, checks = check_donor(tmp_path, tree, rename_patches["pure"], "not-applied")
    assert rc == 0, checks
    assert checks["d:pkg/mod2.py#1"]["message"] == (
        "rename of pkg/mod.py to pkg/mod2.py (no hunks): not applied: "
        "pkg/mod.py, not yet renamed to pkg/mod2.py, is in the tree")


@pytest.mark.parametrize(("text", "expected"), [
    (None, NOT_APPLIED), ("", APPLIED), ("x = 1\n", CONFLICT),
], ids=["absent", "empty", "other-content"])
def test_an_empty_file_git_adds_without_a_hunk_is_judged_by_presence(
    tmp_path: Path, text: str | None, expected: str
) -> None:
    patch = git_diff(tmp_path / "src", {"pkg/empty.py": ""})
    assert b"new file mode" in patch and b"@@" not in patch
    tree = tree_of(tmp_path / "t", {MOD: ORIGINAL} | ({} if text is None else {"pkg/empty.py": text}))
    assert oracle(tree, patch) == expected
    assert judged(tree, patch) == [("pkg/empty.py#1", expected)]


# -- a target file that cannot be used is an error, as a file check says ----------


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _escape(path: Path) -> None:
    outside = path.parents[2] / "outside.py"
    outside.write_text(ORIGINAL)
    os.symlink(outside, path)


def _directory(path: Path) -> None:
    path.mkdir()


@pytest.mark.parametrize("make", [_fifo, _escape, _directory], ids=["fifo", "escape", "directory"])
def test_a_hunk_on_an_unusable_file_is_an_error_with_the_file_checks_reason(
    one_patch: bytes, tmp_path: Path, make: Callable[[Path], None]
) -> None:
    tree = tree_of(tmp_path / "t", {})
    make(tree / MOD)
    digest = hashlib.sha256(ORIGINAL.encode()).hexdigest()
    rc, checks = check_donor(tmp_path, tree, one_patch, "not-applied",
                             files=f"files:\n  {MOD}: '{digest}'\n")
    assert rc == 1
    reason = checks[f"file:{MOD}"]["message"]
    assert checks[f"file:{MOD}"]["status"] == "error" and reason.startswith(f"{MOD} ")
    hunk = checks[f"d:{MOD}#1"]
    assert hunk["status"] == "error", hunk  # was: fail, "conflict: pkg/mod.py: is a FIFO..."
    assert hunk["message"] == f"hunk @@ -1,4 +1,4 @@: {reason}"
    assert hunk["actual"] == "unusable"
    summary = checks["d:hunks"]
    assert summary["status"] == "error"
    assert summary["message"] == f"d: 1 of 1 hunk(s) in the target could not be checked: {reason}"


def test_a_patch_path_with_dotdot_is_an_error(one_patch: bytes, tmp_path: Path) -> None:
    patch = one_patch.replace(b"a/pkg/mod.py", b"a/pkg/../pkg/mod.py").replace(
        b"b/pkg/mod.py", b"b/pkg/../pkg/mod.py")
    tree = tree_of(tmp_path / "t", {MOD: ORIGINAL})
    rc, checks = check_donor(tmp_path, tree, patch, "not-applied")
    assert rc == 1
    hunk = checks["d:pkg/../pkg/mod.py#1"]
    assert hunk["status"] == "error", hunk
    assert hunk["message"] == ("hunk @@ -1,4 +1,4 @@: pkg/../pkg/mod.py path contains '..'; "
                               "paths must stay inside the target root")
    assert checks["d:hunks"]["status"] == "error"


# -- git: an object directory that cannot be read is named, not called missing ----


def _lane(root: Path) -> tuple[str, str]:
    """A repository whose commit, trees and ``pkg/mod.py`` blob sit in four different
    loose-object directories: ``(commit, blob)``."""
    repo = git.Repo.init(root, initial_branch="main")
    for salt in range(200):
        commit = _commit(repo, root, {MOD: f"{ORIGINAL}# {salt}\n"}, "base", 1_790_000_000 + salt)
        tree = repo.commit(commit).tree
        ids = [commit, tree.hexsha, (tree / "pkg").hexsha, (tree / MOD).hexsha]
        if len({i[:2] for i in ids}) == 4:
            repo.close()
            return commit, ids[3]
    raise AssertionError("no salt separates the object directories")


def _cite(tmp_path: Path, lane: Path, commit: str) -> tuple[int, dict[str, dict]]:
    """``check`` of a citation of ``pkg/mod.py`` at ``commit``, with file modes applying."""
    tree = tmp_path / "t"
    if not tree.exists():
        tree_of(tree, {MOD: ORIGINAL})
    m = tmp_path / "m.yaml"
    m.write_text(dedent(f"""
        pp1audit: 1
        target: {{package: pkg}}
        sources:
          lane: {{kind: git, commit: {commit}}}
        citations:
          lane-mod: {{source: lane, at: "{MOD}:1"}}
    """))
    proc = run_cli("check", str(tree), "-m", str(m), "--repo", f"lane={lane}", "--format", "json",
                   as_user=True)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, {c["id"]: c for c in json.loads(proc.stdout)["checks"]}


def test_an_unreadable_blob_directory_is_named(tmp_path: Path) -> None:
    lane = tmp_path / "lane"
    commit, blob = _lane(lane)
    rc, checks = _cite(tmp_path, lane, commit)
    assert rc == 0, checks
    locked = lane / ".git" / "objects" / blob[:2]
    locked.chmod(0o000)
    try:
        rc, checks = _cite(tmp_path, lane, commit)
    finally:
        locked.chmod(0o755)
    cite = checks["lane-mod"]
    assert cite["status"] == "error", cite
    assert cite["message"] == (  # was: "... which is missing from ... (a damaged clone?)"
        f"{MOD} needs blob {blob[:12]}, but $GIT_DIR/objects/{blob[:2]} cannot be read "
        "(Permission denied)")


def test_an_unreadable_commit_is_an_error_not_a_commit_to_fetch(tmp_path: Path) -> None:
    lane = tmp_path / "lane"
    commit, _ = _lane(lane)
    locked = lane / ".git" / "objects" / commit[:2]
    locked.chmod(0o000)
    try:
        rc, checks = _cite(tmp_path, lane, commit)
    finally:
        locked.chmod(0o755)
    assert rc == 1
    pinned = checks["lane:commit"]
    assert pinned["status"] == "error", pinned  # was: fail, "... fetch it"
    assert pinned["message"] == (f"commit {commit[:12]} in the lane clone cannot be read: "
                                 f"$GIT_DIR/objects/{commit[:2]} cannot be read (Permission denied)")


def test_an_unreadable_pack_is_named(tmp_path: Path) -> None:
    lane = tmp_path / "lane"
    commit, _ = _lane(lane)
    assert sh("repack", "-adq", cwd=lane).returncode == 0
    sh("prune-packed", cwd=lane)
    [pack] = (lane / ".git" / "objects" / "pack").glob("*.pack")
    pack.chmod(0o000)
    try:
        rc, checks = _cite(tmp_path, lane, commit)
    finally:
        pack.chmod(0o444)
    assert rc == 1
    pinned = checks["lane:commit"]
    assert pinned["status"] == "error", pinned
    assert pinned["message"] == (f"commit {commit[:12]} in the lane clone cannot be read: "
                                 f"$GIT_DIR/objects/pack/{pack.name} cannot be read "
                                 "(Permission denied)")
