"""``./pp1audit.toml`` and the cache directory: what is not usable is said, never passed over.

A ``./pp1audit.toml`` that was a directory, a FIFO, a link to ``/dev/zero`` or a
dangling link was looked up with ``is_file()`` and silently ignored, while the
same given as ``--config`` is a one-line exit 2: now anything there by that name
gets the ``--config`` treatment (and a FIFO or device is never opened, so the
run cannot hang). A cache directory that cannot be one was exit 2 when named by
``--cache-dir``, ``[cache] dir`` or ``$PP1AUDIT_CACHE_DIR``, but from
``$XDG_CACHE_HOME`` every remote pin became an ``error`` of its own (exit 1):
now it is the same one line, exit 2.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import run_cli

PINNED = hashlib.sha256(b"x = 1\n").hexdigest()

@pytest.fixture
def passing(tmp_path: Path, make_files: Callable[..., Path]) -> tuple[Path, Path]:
    """A tree and a manifest pinning its one file: ``check`` exits 0."""
    tree = make_files({"pkg/__init__.py": "", "pkg/a.py": "x = 1\n"})
    manifest = tmp_path / "m.yaml"
    manifest.write_text(f"pp1audit: 1\ntarget: {{package: pkg}}\nfiles:\n  pkg/a.py: {PINNED}\n")
    return tree, manifest


def _make(kind: str, path: Path) -> None:
    if kind == "directory":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "device link":
        path.symlink_to("/dev/zero")
    else:
        path.symlink_to(path.parent / "nowhere.toml")


KINDS = {
    "directory": "pp1audit.toml: is a directory, not a config file",
    "fifo": "pp1audit.toml: not a regular file; a config file must be one",
    "device link": "pp1audit.toml: not a regular file; a config file must be one",
    "dangling link": "pp1audit.toml: config file not found",
}


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("command", ["check", "report", "fetch"])
def test_a_config_here_that_is_no_file_is_what_config_says_of_it(
        kind: str, command: str, passing: tuple[Path, Path], tmp_path: Path) -> None:
    tree, manifest = passing
    here = tmp_path / "here"
    here.mkdir()
    assert run_cli("check", str(tree), "-m", str(manifest), cwd=here).returncode == 0
    _make(kind, here / "pp1audit.toml")
    args = {"check": ["check", str(tree)], "report": ["report", str(tree)], "fetch": ["fetch"]}
    proc = run_cli(*args[command], "-m", str(manifest), cwd=here, timeout=20)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == f"pp1audit: error: {KINDS[kind]}\n"
    assert proc.stdout == ""
    given = run_cli(*args[command], "-m", str(manifest), "--config", "pp1audit.toml", cwd=here,
                    timeout=20)
    assert given.returncode == 2
    if kind == "directory":  # click refuses it for --config, in its own words
        assert given.stderr.count("\n") == 1 and "'pp1audit.toml' is a directory" in given.stderr
    else:
        assert given.stderr == proc.stderr


REMOTE = f"""pp1audit: 1
target: {{package: pkg}}
files:
  pkg/a.py: {PINNED}
remotes:
  r: {{url: "http://127.0.0.1:9/r.py", sha256: {"a" * 64}}}
"""


@pytest.mark.parametrize("command", ["check", "fetch"])
def test_xdg_cache_home_at_a_file_is_one_line_and_exit_2(
        command: str, passing: tuple[Path, Path], tmp_path: Path) -> None:
    """As ``$PP1AUDIT_CACHE_DIR`` at a file is: the user cache directory below it cannot be."""
    tree, _ = passing
    manifest = tmp_path / "remote.yaml"
    manifest.write_text(REMOTE)
    afile = tmp_path / "afile"
    afile.write_text("")
    args = ["check", str(tree)] if command == "check" else ["fetch"]
    proc = run_cli(*args, "-m", str(manifest),
                   env={"XDG_CACHE_HOME": str(afile), "PP1AUDIT_CACHE_DIR": ""})
    assert proc.returncode == 2, proc.stdout
    assert proc.stderr == (f"pp1audit: error: XDG_CACHE_HOME: {afile}/pp1audit: a parent of it is "
                           "not a directory; the remote-pin cache must be a directory\n")
    assert proc.stdout == ""
    env = run_cli(*args, "-m", str(manifest), env={"PP1AUDIT_CACHE_DIR": str(afile)})
    assert env.returncode == 2
    assert env.stderr == (f"pp1audit: error: PP1AUDIT_CACHE_DIR: {afile} is not a directory; "
                          "the remote-pin cache must be a directory\n")


def test_a_usable_xdg_cache_home_is_used(passing: tuple[Path, Path], tmp_path: Path) -> None:
    """The check is only of what cannot be a directory: a missing one is a miss (made
    by fetch), and a copy stored under ``$XDG_CACHE_HOME/pp1audit`` is the one read."""
    tree, _ = passing
    body = b"r = 1\n"
    digest = hashlib.sha256(body).hexdigest()
    manifest = tmp_path / "remote.yaml"
    manifest.write_text(REMOTE.replace("a" * 64, digest))
    cache = tmp_path / "xdg"
    env = {"XDG_CACHE_HOME": str(cache), "PP1AUDIT_CACHE_DIR": ""}
    proc = run_cli("check", str(tree), "-m", str(manifest), "--format", "json", env=env)
    assert proc.returncode == 0, proc.stderr
    assert [c["status"] for c in json.loads(proc.stdout)["checks"] if c["id"] == "r"] == ["skip"]
    entry = cache / "pp1audit" / "sha256" / digest
    entry.parent.mkdir(parents=True)
    entry.write_bytes(body)
    proc = run_cli("check", str(tree), "-m", str(manifest), "--format", "json", env=env)
    assert proc.returncode == 0, proc.stderr
    assert [c["status"] for c in json.loads(proc.stdout)["checks"] if c["id"] == "r"] == ["pass"]


GIT_ONLY = f"""pp1audit: 1
target: {{package: pkg}}
files:
  pkg/a.py: {PINNED}
sources:
  lane: {{kind: git, title: lane, commit: 8fd15310c43c1da47ed2411a39af68c3ca48e166}}
"""


@pytest.mark.parametrize("env", [{"HOME": "/dev/null", "XDG_CACHE_HOME": ""},
                                 {"XDG_CACHE_HOME": "afile"}])
def test_an_unusable_user_cache_does_not_end_a_run_that_reads_no_remote_pin(
        env: dict[str, str], passing: tuple[Path, Path], tmp_path: Path) -> None:
    """A git source alone needs no cache: ``HOME=/dev/null`` (a sandboxed CI) used to
    make such a run exit 2 "nothing judged" once the user cache was checked eagerly."""
    tree, _ = passing
    manifest = tmp_path / "git.yaml"
    manifest.write_text(GIT_ONLY)
    (tmp_path / "afile").write_text("")
    env = {k: str(tmp_path / v) if v == "afile" else v for k, v in env.items()}
    proc = run_cli("check", str(tree), "-m", str(manifest), env={**env, "PP1AUDIT_CACHE_DIR": ""})
    assert proc.returncode == 0, proc.stderr
    assert "skip" in proc.stdout and "lane" in proc.stdout
