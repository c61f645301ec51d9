"""A report (and a JSON result) never holds the path a clone was given at.

A committed audit is checked with ``report --check`` from any checkout: the
messages of failing git-source checks must name the clone by its source name
("the lane clone"), and the commands they suggest must not carry the path,
or the same repository state cloned elsewhere reads as a stale report.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import run_cli
from lanerepo import SPECULATOR, Lane, build_lane, dedent


@pytest.fixture(scope="module")
def lane(tmp_path_factory: pytest.TempPathFactory) -> Lane:
    return build_lane(tmp_path_factory.mktemp("lane") / "lane")


def shallow_clone(lane: Lane, dest: Path) -> Path:
    """A depth-1 clone of the lane's main: the base and docs commits are not in it."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{lane.path}", str(dest)],
                   check=True)
    return dest


def manifest(lane: Lane) -> str:
    """Every check of the lane source fails or is judged with a path-bearing hint:
    a pinned commit the clone lacks, a fixed ref it lacks, a moving ref whose
    recorded commit is past the shallow boundary."""
    return dedent(f"""
        pp1audit: 1
        target: {{package: pkg}}
        sources:
          lane:
            kind: git
            commit: {lane.base}
            refs:
              main: {{commit: {lane.docs}, moving: true}}
              gone: {{commit: {lane.base}}}
        citations:
          lane-speculator: {{source: lane, at: "{SPECULATOR}:1"}}
    """)


def runs(tmp_path: Path, lane: Lane) -> list[tuple[str, list[str]]]:
    """(report bytes, JSON check messages) for two clones at two paths, each run
    from its own working directory, one given relative and one absolute."""
    tree = tmp_path / "tree"
    (tree / "pkg").mkdir(parents=True)
    (tree / "pkg" / "__init__.py").write_text("")
    m = tmp_path / "audit.yaml"
    m.write_text(manifest(lane))
    first = shallow_clone(lane, tmp_path / "one" / "deep" / "lane")
    second = shallow_clone(lane, tmp_path / "two" / "clone")
    out = []
    for cwd, repo in ((tmp_path / "one", os.path.relpath(first, tmp_path / "one")),
                      (second.parent, str(second))):
        args = ("-m", str(m), "--repo", f"lane={repo}")
        report = run_cli("report", str(tree), *args, cwd=cwd)
        assert report.returncode == 1, report.stderr
        result = run_cli("check", str(tree), *args, "--format", "json", cwd=cwd)
        assert result.returncode == 1, result.stderr
        out.append((report.stdout, [c["message"] for c in json.loads(result.stdout)["checks"]]))
    return out


def test_two_clones_at_two_paths_give_one_report_and_one_json(lane: Lane, tmp_path: Path) -> None:
    (report_a, messages_a), (report_b, messages_b) = runs(tmp_path, lane)
    assert messages_a == messages_b
    assert report_a == report_b
    assert str(tmp_path) not in report_a and "one/deep" not in report_a
    joined = "\n".join(messages_a)
    # the hints are still there, naming the clone by its source
    assert f"commit {lane.base[:12]} is not in the lane clone; fetch it " \
           f"(git -C <lane clone> fetch origin {lane.base})" in joined
    assert "fixed ref 'gone' is not in the lane clone" in joined
    assert "(the clone is shallow; deepen it: git -C <lane clone> fetch --unshallow)" in joined


def test_report_check_of_one_clone_is_current_for_the_other(lane: Lane, tmp_path: Path) -> None:
    """The committed report of one checkout passes ``report --check`` in another."""
    (report_a, _), _ = runs(tmp_path, lane)
    committed = tmp_path / "AUDIT.md"
    committed.write_text(report_a, encoding="utf-8")
    other = tmp_path / "two" / "clone"
    proc = run_cli("report", str(tmp_path / "tree"), "-m", str(tmp_path / "audit.yaml"),
                   "--repo", f"lane={other}", "--check", str(committed), cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_scrub_replaces_only_whole_paths_of_the_clone(lane: Lane, tmp_path: Path) -> None:
    """A clone's path inside a longer word is not the clone: ``/x/lane.git`` beside
    ``/x/lane`` (an alternate), ``refs/tags/srv-build`` for a clone at ``/srv``."""
    from pp1audit.sources.git import Clone

    dest = shallow_clone(lane, tmp_path / "c" / "lane")
    clone = Clone("lane", dest)
    here = str(dest)
    said = clone._scrub(f"unable to normalize alternate object path: {here}.git/objects; "
                        f"see {here}/.git/objects/pack and {here}; and x{here}/y")
    assert said == (f"unable to normalize alternate object path: {here}.git/objects; "
                    f"see $GIT_DIR/objects/pack and <lane clone>; and x{here}/y")


def test_worktree_places_read_as_a_plain_clones(lane: Lane, tmp_path: Path) -> None:
    """gitpython gives a worktree's common directory as ``…/worktrees/wt/../..``:
    ``common_dir`` normalises it, so a place in it (git's own words, an unreadable
    pack) reads ``$GIT_DIR/objects/pack`` as in a plain clone, never
    ``$GIT_DIR/../../objects/pack``."""
    from pp1audit.sources.git import Clone

    dest = shallow_clone(lane, tmp_path / "plain")
    subprocess.run(["git", "-C", str(dest), "worktree", "add", "-q", "--detach",
                    str(tmp_path / "wt")], check=True)
    for where in (dest, tmp_path / "wt"):
        clone = Clone("lane", where)
        assert clone._scrub(os.path.join(clone.common_dir, "objects", "pack")) == \
            "$GIT_DIR/objects/pack"


def test_the_commands_name_the_clone_by_its_placeholder(lane: Lane, tmp_path: Path) -> None:
    """``command`` and ``unshallow_hint`` spell the clone as ``_scrub`` does: one
    placeholder, never the path."""
    from pp1audit.sources.git import Clone

    clone = Clone("lane", shallow_clone(lane, tmp_path / "lane"))
    assert clone.command("fsck") == "git -C <lane clone> fsck"
    assert clone.unshallow_hint() == "deepen it: git -C <lane clone> fetch --unshallow"
    assert clone._scrub(str(tmp_path / "lane")) == "<lane clone>"


def test_git_says_the_reason_it_stopped_not_what_it_went_on_past(tmp_path: Path) -> None:
    """An ``alternates`` line naming no directory makes git say ``error:`` first and go
    on; the reason it then stopped is its ``fatal:`` line: that is the one told."""
    import git

    from pp1audit.sources.git import _git_says

    repo = git.Repo.init(tmp_path / "r")
    with repo.config_writer() as cw:
        cw.set_value("user", "name", "t")
        cw.set_value("user", "email", "t@example.invalid")
    repo.index.commit("x")
    (tmp_path / "r" / ".git" / "objects" / "info" / "alternates").write_text("/nonexistent/objects\n")
    with pytest.raises(git.GitCommandError) as info:
        repo.git.rev_parse("--verify", "0" * 39 + "1^{commit}")
    assert "alternate" in str(info.value.stderr)  # the premise: git said both
    assert _git_says(info.value) == "Needed a single revision"
    # Only error: lines: the first of them.
    assert _git_says(git.GitCommandError("x", 1, b"error: one\nerror: two\n")) == "one"
