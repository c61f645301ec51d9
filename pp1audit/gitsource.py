"""A ``Source`` over one commit of a local git clone, read from blobs with gitpython.

Evidence pinned to a commit must be read from that commit's objects, never the
work tree: a dirty or checked-out-elsewhere clone cannot then fake a pass. The
clone is opened read-only in spirit (nothing here writes to it); git is told not
to fetch lazily (partial clones), so reading never touches the network.

gitpython is imported inside the functions that need it: ``pp1audit check`` on a
plain directory never pays for it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pp1audit.errors import MissingFile, Pp1Error, SourceError, TargetError
from pp1audit.sources import MAX_READ, Source, too_large

_SYMLINK = 0o120000
_GITLINK = 0o160000


class CloneError(Pp1Error):
    """git could not answer a question about a clone (a ref that does not peel to a
    commit, a broken ref store): the check's ``error``, never a verdict."""


def _git_says(exc: Exception) -> str:
    """git's own reason in one line: the first ``fatal:`` / ``error:`` line of its
    stderr, else the first line of the exception (gitpython's are several lines)."""
    text = str(getattr(exc, "stderr", "") or "")
    found = re.search(r"(?:fatal|error): ([^\n']+)", text)
    if found:
        return found.group(1).strip()
    lines = str(exc).strip().splitlines()
    return lines[0].strip() if lines else type(exc).__name__


class Clone:
    """A local clone given with ``--repo NAME=PATH``: resolves commits and refs.

    ``TargetError`` (exit 2) when the path is not a git repository at all, or one
    git refuses to use: that is a usage error, not a verdict about the audit.
    """

    def __init__(self, name: str, path: Path, origin: str | None = None) -> None:
        """``origin``: who gave ``path``, heading an error about it
        (``ProvenanceOptions.repo_origin``); by default ``PATH: --repo NAME``."""
        import git

        self.name = name
        self.path = path
        self.origin = origin or f"{path}: --repo {name}"
        self._ref_names: frozenset[str] | None = None
        try:
            self.repo: Any = git.Repo(path, search_parent_directories=False)
        except git.NoSuchPathError:
            raise TargetError(f"{self.origin}: no such directory") from None
        except (git.InvalidGitRepositoryError, git.GitError) as exc:
            raise TargetError(f"{self.origin}: not a git repository ({exc})") from None
        # Never let a partial clone fetch a missing object: reading stays offline.
        self.repo.git.update_environment(GIT_NO_LAZY_FETCH="1", GIT_TERMINAL_PROMPT="0")
        self._check_git_accepts_it()

    def _check_git_accepts_it(self) -> None:
        """``TargetError`` when git refuses the repository.

        gitpython opens a repository by reading its files, but every object read
        goes through git, which refuses a repository owned by another user
        ("dubious ownership", common in CI containers). Unchecked, each read would
        fail quietly and the pinned commit would look absent from the clone.
        """
        import git

        try:
            self.repo.git.rev_parse("--git-dir")
        except git.GitCommandError as exc:
            reason = _git_says(exc)
            if "dubious ownership" in reason:
                where = Path(self.repo.working_tree_dir or self.repo.git_dir).resolve()
                reason = (f"git refuses it: owned by another user (dubious ownership); if you "
                          f"trust it: git config --global --add safe.directory {where}")
            raise TargetError(f"{self.origin}: {reason}") from None

    def commit(self, sha: str) -> Any | None:
        """The commit object for a full id, or None when the clone does not have it.

        Asked of a one-off ``git cat-file -t``: in a partial clone an absent object
        ends gitpython's persistent helper, and every later read would fail.
        """
        import git

        try:
            kind = self.repo.git.cat_file("-t", sha).strip()
        except git.GitCommandError:  # no such object here
            return None
        if kind != "commit":
            return None
        obj = self.repo.commit(sha)
        return obj if obj.hexsha == sha else None

    def _refs(self) -> frozenset[str]:
        """Every ref name of the clone, listed once per run (a clone of vLLM has
        thousands of tags; each pinned ref used to list them all again)."""
        import git

        if self._ref_names is None:
            try:
                out = self.repo.git.for_each_ref("--format=%(refname)")
            except git.GitCommandError as exc:
                raise CloneError(f"{self.path}: cannot list refs: {_git_says(exc)}") from None
            self._ref_names = frozenset(out.splitlines())
        return self._ref_names

    def resolve_ref(self, name: str) -> tuple[str, str] | None:
        """``(full ref name, commit id)`` of a ref, or None when the clone has none.

        A short name is looked up in ``git rev-parse``'s order: ``refs/<name>``,
        tags, local branches, ``refs/remotes/<name>`` and its ``HEAD`` — so a
        branch named like a recorded tag cannot stand in for it. Then, for a clone
        that has only remote-tracking branches, ``origin``'s branch of that name,
        then any other remote's. ``CloneError`` when git cannot list the refs or
        peel the one found to a commit.
        """
        import git

        existing = self._refs()
        if name.startswith("refs/"):
            candidates = [name]
        else:
            candidates = [f"refs/{name}", f"refs/tags/{name}", f"refs/heads/{name}",
                          f"refs/remotes/{name}", f"refs/remotes/{name}/HEAD",
                          f"refs/remotes/origin/{name}"]
            candidates += sorted(
                r for r in existing
                if r.startswith("refs/remotes/") and r.endswith(f"/{name}") and r.count("/") == 3
            )
        for full in candidates:
            if full not in existing:
                continue
            try:
                commit = self.repo.git.rev_parse("--verify", f"{full}^{{commit}}").strip()
            except git.GitCommandError as exc:
                raise CloneError(f"{full} in {self.path} does not resolve to a commit "
                                 f"({_git_says(exc)})") from None
            return full, commit
        return None

    def is_ancestor(self, older: str, newer: str) -> bool:
        """True when ``older`` is reachable from ``newer`` (a fast-forward move)."""
        try:
            return bool(self.repo.is_ancestor(older, newer))
        except Exception:  # an unknown commit is simply "not an ancestor"
            return False

    def count_between(self, older: str, newer: str) -> int | None:
        """Number of commits in ``older..newer``, or None when it cannot be told."""
        try:
            return int(self.repo.git.rev_list("--count", f"{older}..{newer}").strip())
        except Exception:
            return None

    def source(self, sha: str) -> GitSource | None:
        """A source over ``sha``'s tree, or None when the clone lacks the commit."""
        commit = self.commit(sha)
        if commit is None:
            return None
        return GitSource(self, commit)

    def unreadable(self, path: str, kind: str, sha: str, exc: Exception) -> SourceError:
        """The per-file error for an object git could not give (``kind``: blob, tree).

        gitpython's ``cat-file`` helpers are restarted first: git ends them on an
        object a partial clone lacks, and every later read through them would fail,
        losing the run's other checks.
        """
        import git

        self.repo.git.clear_cache()
        try:
            self.repo.git.cat_file("-e", sha)
        except git.GitCommandError:
            if self.is_partial():
                return SourceError(path, f"needs {kind} {sha[:12]}, which is not in this partial "
                                   f"clone; fetch it (git -C {self.path} cat-file -e {sha})")
            return SourceError(path, f"needs {kind} {sha[:12]}, which is missing from "
                               f"{self.path} (a damaged clone?)")
        return SourceError(path, f"cannot read {kind} {sha[:12]}: {_git_says(exc)}")

    def is_partial(self) -> bool:
        """True for a clone made with ``--filter``: its objects may be missing by design."""
        import git

        try:
            found = self.repo.git.config(
                "--get-regexp", r"^(remote\..*\.promisor|extensions\.partialclone)$")
        except git.GitCommandError:  # exit 1: no such key
            return False
        return any(line.split()[-1].lower() != "false" for line in found.splitlines() if line)

    def close(self) -> None:
        """Stop gitpython's persistent ``git cat-file`` helpers."""
        self.repo.close()


class MissingBlob(MissingFile):
    """The path is not in the commit's tree (a ``fail``, like any missing pinned file)."""

    def __init__(self, path: str, commit: str) -> None:
        SourceError.__init__(self, path, f"is not in commit {commit[:12]}")


@dataclass(frozen=True)
class _Entry:
    mode: int
    blob: Any


class GitSource(Source):
    """The files of one commit: ``read`` returns blob bytes, whatever the work tree holds."""

    kind = "git"

    def __init__(self, clone: Clone, commit: Any) -> None:
        self.clone = clone
        self.commit = commit
        self.hexsha: str = commit.hexsha
        self.location = f"{clone.path}@{self.hexsha}"
        self._entries: dict[str, _Entry] | None = None

    def _index(self) -> dict[str, _Entry]:
        """Every non-tree entry of the commit, by path (one ``ls-tree``-like walk)."""
        if self._entries is None:
            entries: dict[str, _Entry] = {}
            pending = [self.commit.tree]
            while pending:
                tree = pending.pop()
                for item in self._children(tree.path or ".", tree):
                    if item.type == "tree":
                        pending.append(item)
                    else:
                        entries[item.path] = _Entry(item.mode, item)
            self._entries = entries
        return self._entries

    def _children(self, path: str, tree: Any) -> list[Any]:
        """The entries of one tree object; ``SourceError`` (for ``path``) when git cannot give it."""
        try:
            return list(tree)
        except Exception as exc:  # a tree a partial clone lacks, a corrupt object store
            raise self.clone.unreadable(path, "tree", tree.hexsha, exc) from None

    def _item(self, path: str) -> Any | None:
        """The tree entry at ``path``, or None: walks only the subtrees on the way."""
        item = self.commit.tree
        for part in path.split("/"):
            if item.type != "tree":
                return None
            item = next((c for c in self._children(path, item) if c.name == part), None)
            if item is None:
                return None
        return item

    def _lookup(self, path: str) -> _Entry | None:
        """One path's non-tree entry (from the full index once it exists)."""
        if self._entries is not None:
            return self._entries.get(path)
        item = self._item(path)
        if item is None or item.type == "tree":
            return None
        return _Entry(item.mode, item)

    def _entry(self, path: str) -> _Entry:
        self._check_path(path)
        entry = self._lookup(path)
        if entry is None:
            if self._is_tree(path):
                raise SourceError(path, f"is a directory in commit {self.hexsha[:12]}")
            raise MissingBlob(path, self.hexsha)
        kind = entry.mode & 0o170000
        if kind == _SYMLINK:
            raise SourceError(path, f"is a symbolic link in commit {self.hexsha[:12]}; not followed")
        if kind == _GITLINK:
            raise SourceError(path, f"is a submodule in commit {self.hexsha[:12]}; not read")
        return entry

    def read(self, path: str) -> bytes:
        blob = self._entry(path).blob
        try:
            size = int(blob.size)  # the header only: nothing is loaded yet
        except Exception as exc:
            raise self.clone.unreadable(path, "blob", blob.hexsha, exc) from None
        if size > MAX_READ:  # as for a file of a directory: an error, never exhausted memory
            raise SourceError(path, too_large(size))
        try:
            data: bytes = blob.data_stream.read()
        except Exception as exc:
            raise self.clone.unreadable(path, "blob", blob.hexsha, exc) from None
        return data

    def _is_tree(self, path: str) -> bool:
        item = self._item(path)
        return item is not None and item.type == "tree"

    def exists(self, path: str) -> bool:
        if self._check_safe(path):
            return self._lookup(path) is not None or self._is_tree(path)
        return False

    @staticmethod
    def _check_safe(path: str) -> bool:
        from pp1audit.paths import path_problem

        return path_problem(path) is None

    def iter_files(self, under: str = "") -> Iterator[str]:
        prefix = under.rstrip("/") + "/" if under else ""
        yield from sorted(p for p in self._index() if p.startswith(prefix))

    def find_bytes(self, sha256: str, data: bytes | None = None) -> list[str]:
        """Paths of regular files whose bytes have this SHA-256.

        With the bytes at hand (a cached donor), the git blob id is computed and
        matched against the tree without reading any blob; otherwise every blob is
        read (size-capped) and hashed. ``SourceError`` when a blob cannot be read: a
        "lacks" rule cannot be proven over bytes that were never seen.
        """
        found: list[str] = []
        blob_id = None
        if data is not None:
            blob_id = hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()
        for path, entry in sorted(self._index().items()):
            if entry.mode & 0o170000 in (_SYMLINK, _GITLINK):
                continue
            if blob_id is not None:
                if entry.blob.hexsha == blob_id:
                    found.append(path)
            elif hashlib.sha256(self.read(path)).hexdigest() == sha256:
                found.append(path)
        return found
