"""Git sources whose clone lies or cannot be fully read: a verdict never rests on it.

Every repository here is built for real with gitpython / git, then altered the
way a user (or an attacker) would: an object file rewritten in place, a packed
object patched, a ``git replace`` ref, a shallow clone, unreadable ref
directories, a machine without git. Nothing mocks git.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zlib
from dataclasses import dataclass
from pathlib import Path

import git
import pytest
from conftest import run_cli
from lanerepo import _commit as lanerepo_commit
from lanerepo import dedent

MOD = "pkg/mod.py"
GREEDY = 'SAMPLE = "greedy"\n\n\ndef pick(row):\n    return max(row)\n'
SAMPLED = GREEDY.replace('"greedy"', '"random"')  # same length: a packed object can be patched


@dataclass(frozen=True)
class Lane:
    """A three-commit repository: ``pkg/mod.py`` is greedy at base and second,
    sampled at third (``main``); tag ``v1`` at base, ``release`` at second."""

    path: Path
    base: str
    second: str
    third: str


def _commit(repo: git.Repo, root: Path, text: str, message: str, when: int) -> str:
    """``pkg/mod.py`` set to ``text`` (and a note naming the commit), committed as
    ``lanerepo`` commits: the same actor and fixed dates."""
    return lanerepo_commit(repo, root, {MOD: text, "notes.txt": f"{message}\n"}, message, when)


def build(root: Path) -> Lane:
    """The repository, all of its objects loose (as gitpython writes them)."""
    repo = git.Repo.init(root, initial_branch="main")
    t = 1_790_000_000
    base = _commit(repo, root, GREEDY, "base", t)
    second = _commit(repo, root, GREEDY.replace("max(row)", "max(row)  # greedy"), "second", t + 60)
    third = _commit(repo, root, SAMPLED.replace("max(row)", "max(row)  # greedy"), "third", t + 120)
    repo.create_tag("v1", ref=base)
    repo.create_tag("release", ref=second)
    repo.close()
    return Lane(root, base, second, third)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Lane:
    return build(tmp_path_factory.mktemp("integrity") / "lane")


@pytest.fixture
def lane(pristine: Lane, tmp_path: Path) -> Lane:
    """A private copy of the repository, free to damage."""
    path = tmp_path / "lane"
    shutil.copytree(pristine.path, path, symlinks=True)
    return Lane(path, pristine.base, pristine.second, pristine.third)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "tgt" / "pkg").mkdir(parents=True)
    (tmp_path / "tgt" / "pkg" / "__init__.py").write_text("")
    return tmp_path / "tgt"


def manifest(commit: str, refs: str = "") -> str:
    """A citation with neither pin nor anchor (the commit id alone fixes it) and an
    invariant that holds only where ``pkg/mod.py`` is greedy."""
    text = dedent(f"""
        pp1audit: 1
        target: {{package: pkg}}
        sources:
          lane:
            kind: git
            commit: {commit}
        citations:
          lane-fixed: {{source: lane, at: "{MOD}:1"}}
        invariants:
          lane-greedy:
            source: lane
            file: {MOD}
            evidence:
              rule: {{pattern: 'SAMPLE = "greedy"'}}
            counterexample:
              rule: {{pattern: SAMPLE = $V}}
              constraints: {{V: {{not: {{regex: '^"greedy"$'}}}}}}
    """)
    pinned = f"    commit: {commit}\n"
    return text.replace(pinned, pinned + refs, 1)


def check(tree: Path, text: str, tmp_path: Path, *args: str,
          as_user: bool = False) -> tuple[int, dict[str, dict]]:
    m = tmp_path / "m.yaml"
    m.write_text(text)
    proc = run_cli("check", str(tree), "-m", str(m), "--format", "json", *args, as_user=as_user)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, {c["id"]: c for c in json.loads(proc.stdout)["checks"]}


def loose(repo: Path, sha: str) -> Path:
    return repo / ".git" / "objects" / sha[:2] / sha[2:]


def rewrite_loose(repo: Path, sha: str, kind: str, data: bytes) -> None:
    """Put other bytes in the loose object file of ``sha``: same name, same id."""
    path = loose(repo, sha)
    assert path.is_file()
    path.unlink()  # git writes objects read-only
    path.write_bytes(zlib.compress(b"%s %d\0" % (kind.encode(), len(data)) + data))


def blob_of(repo: Path, commit: str, path: str = MOD) -> str:
    """The object id of ``path`` at ``commit`` (a blob, or a tree for a directory)."""
    return str((git.Repo(repo).commit(commit).tree / path).hexsha)


def cat(repo: Path, what: str) -> str:
    """What git itself answers: the tampering is real, git shows the altered bytes."""
    return subprocess.run(["git", "-C", str(repo), "cat-file", "-p", what], check=True,
                          capture_output=True, text=True).stdout


# -- 1. the object chain from the commit to the blob is verified -------------------


def test_the_real_clone_fails_the_invariant(lane: Lane, tree: Path, tmp_path: Path) -> None:
    rc, checks = check(tree, manifest(lane.third), tmp_path, "--repo", f"lane={lane.path}")
    assert rc == 1
    assert checks["lane-greedy"]["status"] == "fail", checks["lane-greedy"]
    assert checks["lane-fixed"]["status"] == "pass"


def test_a_blob_rewritten_in_place_is_an_error_not_a_pass(
    lane: Lane, tree: Path, tmp_path: Path
) -> None:
    blob = blob_of(lane.path, lane.third)
    rewrite_loose(lane.path, blob, "blob", GREEDY.encode())
    assert '"greedy"' in cat(lane.path, f"{lane.third}:{MOD}")  # git reads the forgery
    rc, checks = check(tree, manifest(lane.third), tmp_path, "--repo", f"lane={lane.path}")
    assert rc == 1
    for cid in ("lane-fixed", "lane-greedy"):
        assert checks[cid]["status"] == "error", checks[cid]
        message = checks[cid]["message"]
        assert message.startswith(f"{MOD} cannot be trusted: blob {blob[:12]} in the lane clone "
                                  "hashes to "), message
        assert "not to its id: the object store is damaged or was altered (check with " \
               "git -C <lane clone> fsck)" in message
    # the commit itself is intact, and other commits' files are still judged
    assert checks["lane:commit"]["status"] == "pass"
    rc, checks = check(tree, manifest(lane.base), tmp_path, "--repo", f"lane={lane.path}")
    assert rc == 0 and checks["lane-greedy"]["status"] == "pass"


def test_a_tree_rewritten_to_name_another_blob_is_an_error(
    lane: Lane, tree: Path, tmp_path: Path
) -> None:
    """The ``pkg`` tree of the third commit made to list the base commit's (greedy)
    blob: every blob is then genuine, only the tree lies."""
    pkg = blob_of(lane.path, lane.third, "pkg")
    repo = git.Repo(lane.path)
    forged = repo.git.ls_tree(lane.third, "pkg/").replace(
        blob_of(lane.path, lane.third), blob_of(lane.path, lane.base))
    items = b"".join(
        b"%s %s\0" % (mode.encode(), p.rsplit("/", 1)[-1].encode()) + bytes.fromhex(sha)
        for mode, _kind, sha, p in (line.replace("\t", " ").split(" ") for line in forged.splitlines())
    )
    assert items  # the line above rebuilt the tree in git's binary form
    rewrite_loose(lane.path, pkg, "tree", items)
    assert '"greedy"' in cat(lane.path, f"{lane.third}:{MOD}")
    rc, checks = check(tree, manifest(lane.third), tmp_path, "--repo", f"lane={lane.path}")
    assert rc == 1
    for cid in ("lane-fixed", "lane-greedy"):
        assert checks[cid]["status"] == "error", checks[cid]
        assert checks[cid]["message"].startswith(
            f"{MOD} cannot be trusted: tree {pkg[:12]} in the lane clone hashes to "), checks[cid]
        assert "git -C <lane clone> fsck" in checks[cid]["message"]


def test_a_commit_rewritten_to_name_another_tree_is_an_error(
    lane: Lane, tree: Path, tmp_path: Path
) -> None:
    repo = git.Repo(lane.path)
    raw = repo.odb.stream(bytes.fromhex(lane.third)).read()
    base_tree = repo.commit(lane.base).tree.hexsha
    forged = raw.replace(repo.commit(lane.third).tree.hexsha.encode(), base_tree.encode())
    rewrite_loose(lane.path, lane.third, "commit", forged)
    rc, checks = check(tree, manifest(lane.third), tmp_path, "--repo", f"lane={lane.path}")
    assert rc == 1
    commit = checks["lane:commit"]
    assert commit["status"] == "error"
    assert commit["message"].startswith(f"commit {lane.third[:12]} in the lane clone hashes to ")
    assert commit["message"].endswith("(check with git -C <lane clone> fsck)")
    assert checks["lane-greedy"]["status"] == "error"
    assert checks["lane-greedy"]["message"] == commit["message"]


def declare_huge(repo: Path, sha: str, kind: str, declared: int) -> None:
    """The loose object of ``sha`` replaced by a header declaring ``declared`` bytes and
    a megabyte of zeros: a small file whose every reader that trusts the header would
    hold gigabytes (seen: 5.9 GB resident for a 13 MB object claiming 3 GB)."""
    path = loose(repo, sha)
    path.unlink()
    path.write_bytes(zlib.compress(b"%s %d\0" % (kind.encode(), declared) + bytes(1 << 20)))


def test_a_commit_declaring_gigabytes_is_an_error_unread(
    lane: Lane, tree: Path, tmp_path: Path
) -> None:
    declare_huge(lane.path, lane.third, "commit", 3_000_000_000)
    assert "3000000000" in subprocess.run(  # git takes the header at its word
        ["git", "-C", str(lane.path), "cat-file", "-s", lane.third],
        capture_output=True, text=True, check=True).stdout
    rc, checks = check(tree, manifest(lane.third), tmp_path, "--repo", f"lane={lane.path}")
    assert rc == 1
    commit = checks["lane:commit"]
    assert commit["status"] == "error"
    assert commit["message"] == (f"commit {lane.third[:12]} in the lane clone declares "
                                 "3,000,000,000 bytes, over the 64 MiB read whole for a "
                                 "commit: not read"), commit
    assert checks["lane-greedy"]["status"] == "error"


@pytest.mark.parametrize("kind", ["tree", "blob"])
def test_a_tree_or_blob_declaring_gigabytes_is_an_error_unread(
    lane: Lane, tree: Path, tmp_path: Path, kind: str
) -> None:
    sha = blob_of(lane.path, lane.third, "pkg" if kind == "tree" else MOD)
    declare_huge(lane.path, sha, kind, 3_000_000_000)
    rc, checks = check(tree, manifest(lane.third), tmp_path, "--repo", f"lane={lane.path}")
    assert rc == 1
    assert checks["lane:commit"]["status"] == "pass"  # the commit itself is intact
    for cid in ("lane-fixed", "lane-greedy"):
        assert checks[cid]["status"] == "error", checks[cid]
        if kind == "tree":
            assert checks[cid]["message"] == (
                f"{MOD} cannot be trusted: tree {sha[:12]} in the lane clone declares "
                "3,000,000,000 bytes, over the 64 MiB read whole for a tree: not read")
        else:  # a blob is a file of the commit: too large, as a file of a directory is
            assert checks[cid]["message"].startswith(
                f"{MOD} is too large to read whole (3,000,000,000 bytes; "), checks[cid]


def _patch_packed_blob(repo: Path, old: bytes, new: bytes) -> None:
    """Replace a blob's bytes inside a pack written uncompressed (zlib "stored"
    blocks), fixing the zlib checksum so that git inflates it without complaint."""
    assert len(old) == len(new)
    (pack,) = (repo / ".git" / "objects" / "pack").glob("*.pack")
    data = bytearray(pack.read_bytes())
    at = data.find(old)
    assert at > 0 and data.find(old, at + 1) == -1
    data[at : at + len(old)] = new
    end = at + len(new)
    data[end : end + 4] = zlib.adler32(new).to_bytes(4, "big")  # the stream's trailer
    pack.chmod(0o644)
    pack.write_bytes(bytes(data))


def test_a_packed_blob_patched_in_the_pack_is_an_error(lane: Lane, tree: Path, tmp_path: Path) -> None:
    subprocess.run(["git", "-C", str(lane.path), "-c", "pack.compression=0", "repack", "-a", "-d",
                    "-F", "-q", "--window=0"], check=True)
    blob = blob_of(lane.path, lane.third)
    assert not loose(lane.path, blob).exists()
    sampled = SAMPLED.replace("max(row)", "max(row)  # greedy").encode()
    _patch_packed_blob(lane.path, sampled, sampled.replace(b'"random"', b'"greedy"'))
    assert '"greedy"' in cat(lane.path, f"{lane.third}:{MOD}")
    rc, checks = check(tree, manifest(lane.third), tmp_path, "--repo", f"lane={lane.path}")
    assert rc == 1
    assert checks["lane-greedy"]["status"] == "error", checks["lane-greedy"]
    assert f"blob {blob[:12]} in the lane clone hashes to " in checks["lane-greedy"]["message"]


def test_a_replace_ref_does_not_change_what_is_read(lane: Lane, tree: Path, tmp_path: Path) -> None:
    """``git replace`` makes git answer the sampled blob's id with the greedy bytes;
    the pinned commit's own blob is read all the same."""
    repo = git.Repo(lane.path)
    repo.git.replace(blob_of(lane.path, lane.third), blob_of(lane.path, lane.base))
    assert '"greedy"' in cat(lane.path, f"{lane.third}:{MOD}")
    rc, checks = check(tree, manifest(lane.third), tmp_path, "--repo", f"lane={lane.path}")
    assert rc == 1
    inv = checks["lane-greedy"]
    assert inv["status"] == "fail" and '"random"' in inv["message"], inv


# -- 2. HEAD and other $GIT_DIR refs are looked up first, as git does -----------------


def head_refs(commit: str, name: str = "HEAD") -> str:
    return f"    refs:\n      {name}: {{commit: {commit}}}\n"


def test_head_is_the_clones_head_not_a_remotes(lane: Lane, tree: Path, tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    repo = git.Repo.clone_from(f"file://{lane.path}", clone)  # origin/HEAD -> main (third)
    repo.git.checkout("--detach", lane.base)
    _, checks = check(tree, manifest(lane.base, head_refs(lane.base)), tmp_path,
                       "--repo", f"lane={clone}")
    head = checks["lane:ref:HEAD"]
    assert head["status"] == "pass" and head["actual"] == lane.base, head
    assert head["message"] == f"HEAD still at the recorded {lane.base[:12]}"
    # checked out on a branch, HEAD follows it and says which
    repo.git.checkout("main")
    _, checks = check(tree, manifest(lane.base, head_refs(lane.base)), tmp_path,
                       "--repo", f"lane={clone}")
    head = checks["lane:ref:HEAD"]
    assert head["status"] == "fail" and head["actual"] == lane.third
    assert head["message"].startswith(f"fixed ref moved: HEAD (refs/heads/main) now at "
                                      f"{lane.third[:12]}, 2 commit(s) ahead")


def test_head_in_a_clone_without_remotes_and_fetch_head(lane: Lane, tree: Path, tmp_path: Path) -> None:
    _, checks = check(tree, manifest(lane.base, head_refs(lane.third)), tmp_path,
                       "--repo", f"lane={lane.path}")
    head = checks["lane:ref:HEAD"]
    assert head["status"] == "pass", head  # was: "fixed ref 'HEAD' is not in lane"
    assert head["message"] == f"HEAD (refs/heads/main) still at the recorded {lane.third[:12]}"
    clone = tmp_path / "clone"
    git.Repo.clone_from(f"file://{lane.path}", clone).git.fetch("origin", "v1")
    _, checks = check(tree, manifest(lane.base, head_refs(lane.base, "FETCH_HEAD")), tmp_path,
                       "--repo", f"lane={clone}")
    fetched = checks["lane:ref:FETCH_HEAD"]
    assert fetched["status"] == "pass" and fetched["actual"] == lane.base, fetched


def test_a_fifo_in_git_dir_is_never_opened_for_a_ref(lane: Lane, tree: Path, tmp_path: Path) -> None:
    """``$GIT_DIR/FETCH_HEAD`` replaced by a FIFO: read as git's files backend reads a
    ref, a plain open would wait for a writer forever. It is no ref here, as git
    (which never reads FETCH_HEAD for ``for-each-ref``) would say."""
    os.mkfifo(lane.path / ".git" / "FETCH_HEAD")
    m = tmp_path / "m.yaml"
    m.write_text(manifest(lane.base, head_refs(lane.base, "FETCH_HEAD")))
    proc = run_cli("check", str(tree), "-m", str(m), "--format", "json",
                   "--repo", f"lane={lane.path}", timeout=60)
    fetched = {c["id"]: c for c in json.loads(proc.stdout)["checks"]}["lane:ref:FETCH_HEAD"]
    assert fetched["status"] == "fail" and "is not in" in fetched["message"], fetched


# -- 3. a shallow clone's cut history is not a rewritten one ------------------------


def shallow_clone(lane: Lane, tmp_path: Path) -> Path:
    """The user test's shallow clone: depth 1, then the two older commits fetched
    at depth 1 (so every commit is present, none with its parent)."""
    dest = tmp_path / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "1", "--no-single-branch",
                    f"file://{lane.path}", str(dest)], check=True)
    subprocess.run(["git", "-C", str(dest), "fetch", "-q", "--depth", "1", "origin",
                    lane.second, lane.base], check=True)
    subprocess.run(["git", "-C", str(dest), "tag", "-f", "release", lane.third],
                   check=True, capture_output=True)
    assert (dest / ".git" / "shallow").is_file()
    return dest


SHALLOW_REFS = """\
    refs:
      main: {{commit: {second}, moving: true}}
      origin/main: {{commit: {second}, moving: true}}
      release: {{commit: {second}}}
"""


def test_a_shallow_boundary_is_said_not_a_rewrite(lane: Lane, tree: Path, tmp_path: Path) -> None:
    shallow = shallow_clone(lane, tmp_path)
    refs = SHALLOW_REFS.format(second=lane.second)
    _, checks = check(tree, manifest(lane.base, refs), tmp_path, "--repo", f"lane={shallow}")
    cut = (f"now at {lane.third[:12]}; whether it descends from the recorded {lane.second[:12]} "
           f"cannot be told: the lane clone is shallow and its history stops before the "
           f"answer (deepen it: git -C <lane clone> fetch --unshallow)")
    release = checks["lane:ref:release"]
    assert release["status"] == "fail", release  # it moved: that much is known
    assert release["message"] == f"fixed ref moved: refs/tags/release {cut}"
    main = checks["lane:ref:main"]
    assert main["status"] == "pass"  # a moving ref's move is information either way
    assert main["message"] == f"refs/heads/main {cut} (moving ref: information)"
    for c in checks.values():
        assert "rewritten" not in c["message"], c
    # deepened, the same clone tells: a fast-forward
    subprocess.run(["git", "-C", str(shallow), "fetch", "-q", "--unshallow"], check=True)
    _, checks = check(tree, manifest(lane.base, refs), tmp_path, "--repo", f"lane={shallow}")
    assert checks["lane:ref:release"]["message"] == (
        f"fixed ref moved: refs/tags/release now at {lane.third[:12]}, 1 commit(s) ahead of "
        f"the recorded {lane.second[:12]}")


def test_a_recorded_commit_outside_a_shallow_clone_says_how_to_deepen(
    lane: Lane, tree: Path, tmp_path: Path
) -> None:
    dest = tmp_path / "depth1"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{lane.path}", str(dest)],
                   check=True)
    refs = f"    refs:\n      main: {{commit: {lane.second}, moving: true}}\n"
    _, checks = check(tree, manifest(lane.third, refs), tmp_path, "--repo", f"lane={dest}")
    main = checks["lane:ref:main"]
    assert main["status"] == "pass"
    assert main["message"] == (
        f"refs/heads/main now at {lane.third[:12]}; the recorded {lane.second[:12]} is not in "
        f"this clone (the clone is shallow; deepen it: git -C <lane clone> fetch --unshallow) "
        "(moving ref: information)")


# -- 4. unreadable ref directories cannot be judged -------------------------------


MREF = """\
    refs:
      dev: {{commit: {second}, moving: true}}
      v1: {{commit: {base}}}
"""


@pytest.mark.parametrize("mode", [0o000, 0o644], ids=["no-access", "no-search"])
def test_unreadable_ref_directories_are_errors_not_missing_refs(
    lane: Lane, tree: Path, tmp_path: Path, mode: int
) -> None:
    git.Repo(lane.path).create_head("dev", lane.second)
    refs = MREF.format(second=lane.second, base=lane.base)
    text = manifest(lane.base, refs)
    rc, checks = check(tree, text, tmp_path, "--repo", f"lane={lane.path}", as_user=True)
    assert checks["lane:ref:dev"]["status"] == "pass" and checks["lane:ref:v1"]["status"] == "pass"
    locked = [lane.path / ".git" / "refs" / "tags", lane.path / ".git" / "refs" / "heads"]
    for d in locked:
        d.chmod(mode)
    try:
        rc, checks = check(tree, text, tmp_path, "--repo", f"lane={lane.path}", as_user=True)
    finally:
        for d in locked:
            d.chmod(0o755)
    assert rc == 1
    for name in ("dev", "v1"):
        ref = checks[f"lane:ref:{name}"]
        assert ref["status"] == "error", ref  # was: skip (dev) and fail (v1)
        assert ref["message"] == (f"cannot tell where '{name}' points in the lane clone: "
                                  "$GIT_DIR/refs/tags cannot be read (Permission denied)")


def test_an_unreadable_ref_file_is_an_error(lane: Lane, tree: Path, tmp_path: Path) -> None:
    tag = lane.path / ".git" / "refs" / "tags" / "v1"
    text = manifest(lane.base, f"    refs:\n      v1: {{commit: {lane.base}}}\n")
    tag.chmod(0o000)
    try:
        _, checks = check(tree, text, tmp_path, "--repo", f"lane={lane.path}", as_user=True)
    finally:
        tag.chmod(0o644)
    v1 = checks["lane:ref:v1"]
    assert v1["status"] == "error", v1
    assert v1["message"] == ("cannot tell where 'v1' points in the lane clone: $GIT_DIR/refs/tags/v1 "
                             "is unreadable or broken (git skips it)")


# -- 5. no git on PATH: one line --------------------------------------------------


@pytest.mark.parametrize("refresh", [None, "quiet"])
def test_no_git_on_path_is_one_short_line(
    pristine: Lane, tree: Path, tmp_path: Path, refresh: str | None
) -> None:
    m = tmp_path / "m.yaml"
    m.write_text(manifest(pristine.third))
    empty = tmp_path / "bin"
    empty.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_PYTHON")}
    env.update(PATH=str(empty), NO_COLOR="1")
    if refresh:
        env["GIT_PYTHON_REFRESH"] = refresh

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "pp1audit", "check", str(tree), "-m", str(m),
                               *args], capture_output=True, text=True, env=env, timeout=120,
                              stdin=subprocess.DEVNULL)

    proc = run("--repo", f"lane={pristine.path}")
    assert proc.returncode == 2
    assert proc.stderr == (f"pp1audit: error: {pristine.path}: --repo lane: git not found (needed "
                           "for the manifest's git sources): install git, or set "
                           "GIT_PYTHON_GIT_EXECUTABLE to its path\n")
    # without a clone, git is never needed: the git checks skip as usual (all of them
    # here, so nothing is judged: exit 2 saying what is missing, not that git is)
    proc = run()
    assert proc.returncode == 2, proc.stderr
    assert "every check was skipped" in proc.stderr and "--repo lane=PATH" in proc.stderr
    assert "git not found" not in proc.stderr


# -- a SHA-256 repository is refused in one line ------------------------------------


def test_a_sha256_repository_is_refused(tree: Path, tmp_path: Path, pristine: Lane) -> None:
    root = tmp_path / "s256"
    subprocess.run(["git", "init", "-q", "--object-format=sha256", str(root)], check=True)
    m = tmp_path / "m.yaml"
    m.write_text(manifest(pristine.third))
    proc = run_cli("check", str(tree), "-m", str(m), "--repo", f"lane={root}")
    assert proc.returncode == 2
    assert proc.stderr == (f"pp1audit: error: {root}: --repo lane: a SHA-256 repository "
                           "(extensions.objectFormat=sha256); manifests pin SHA-1 commit ids, "
                           "so it cannot be read\n")


# -- trees git never writes: refused, so no two checks read two different files


def _commit_tree(repo: Path, entries: list[tuple[str, bytes, str]], message: str) -> str:
    """A commit of a root tree written as given (``hash-object --literally``: git's own
    writers refuse these trees), ``entries`` as (octal mode, name, hex id)."""
    def write(kind: str, data: bytes, literally: bool = True) -> str:
        args = ["git", "-C", str(repo), "hash-object", "-t", kind, "-w", "--stdin"]
        return subprocess.run(args + (["--literally"] if literally else []), input=data,
                              check=True, capture_output=True).stdout.decode().strip()

    body = b"".join(mode.encode() + b" " + name + b"\0" + bytes.fromhex(sha)
                    for mode, name, sha in entries)
    root = write("tree", body)
    commit = (f"tree {root}\nauthor A <a@example.invalid> 1790000000 +0000\n"
              f"committer A <a@example.invalid> 1790000000 +0000\n\n{message}\n").encode()
    return write("commit", commit, literally=False)


@pytest.mark.parametrize("shape", ["duplicate", "slash", "dot-git", "out-of-order",
                                   "file-and-directory"])
def test_a_tree_git_never_writes_is_an_error_not_a_verdict(
    lane: Lane, tree: Path, tmp_path: Path, shape: str
) -> None:
    """One path named twice (``git show`` reads the first, a checkout writes the
    last), a name with a ``/`` (a flattened lookup takes it for a path), ``.git``:
    the tree hashes to its id, yet checks reading it disagreed with each other."""
    greedy, sampled = blob_of(lane.path, lane.base), blob_of(lane.path, lane.third)
    pkg = {
        "duplicate": [("100644", b"mod.py", sampled), ("100644", b"mod.py", greedy)],
        "slash": [("100644", b"mod.py", greedy), ("100644", b"sub/x.py", sampled)],
        "dot-git": [("100644", b".GIT", sampled), ("100644", b"mod.py", greedy)],
        "out-of-order": [("100644", b"mod.py", greedy), ("100644", b"a.py", sampled)],
        "file-and-directory": [("100644", b"mod.py", greedy), ("40000", b"mod.py", "")],
    }[shape]
    if shape == "file-and-directory":  # a directory named like the file, holding the sample
        inner = _commit_tree(lane.path, [("100644", b"x.py", sampled)], "inner")
        pkg[1] = ("40000", b"mod.py", str(git.Repo(lane.path).commit(inner).tree.hexsha))
    repo = lane.path
    sub = _commit_tree(repo, pkg, "sub")
    sub_tree = git.Repo(repo).commit(sub).tree.hexsha
    forged = _commit_tree(repo, [("40000", b"pkg", sub_tree)], shape)
    rc, checks = check(tree, manifest(forged), tmp_path, "--repo", f"lane={repo}")
    assert rc == 1
    for cid in ("lane-fixed", "lane-greedy"):
        assert checks[cid]["status"] == "error", checks[cid]
        assert "is not a valid tree" in checks[cid]["message"], checks[cid]["message"]


def test_a_graft_does_not_change_what_a_moved_ref_is_said_to_be(
    lane: Lane, tree: Path, tmp_path: Path
) -> None:
    """``info/grafts`` rewrites parents for ``merge-base`` and ``rev-list``: a tag
    moved off the recorded history must not be called a fast-forward."""
    repo = git.Repo(lane.path)
    repo.git.checkout("-q", "-b", "side", lane.base)
    (lane.path / "side.txt").write_text("side\n")
    repo.index.add(["side.txt"])
    side = repo.index.commit("side").hexsha
    repo.git.tag("-f", "release", side)  # recorded at `second`; now on a side branch
    refs = f"    refs:\n      release: {{commit: {lane.second}}}\n"
    text = manifest(lane.base, refs)
    _, before = check(tree, text, tmp_path, "--repo", f"lane={lane.path}")
    (lane.path / ".git" / "info").mkdir(exist_ok=True)
    (lane.path / ".git" / "info" / "grafts").write_text(f"{side} {lane.second}\n")
    _, after = check(tree, text, tmp_path, "--repo", f"lane={lane.path}")
    moved = [c for c in after.values() if c["kind"] == "git" and "release" in c["message"]]
    assert moved and all("not a descendant" in c["message"] for c in moved), moved
    assert {k: c["message"] for k, c in after.items()} == {k: c["message"] for k, c in before.items()}
