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
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pp1audit.errors import MissingFile, SourceError, TargetError
from pp1audit.sources import Source

_SYMLINK = 0o120000
_GITLINK = 0o160000

class Clone:
    """A local clone given with ``--repo NAME=PATH``: resolves commits and refs.

    ``TargetError`` (exit 2) when the path is not a git repository at all: that is
    a usage error, not a verdict about the audit.
    """

    def __init__(self, name: str, path: Path) -> None:
        import git

        self.name = name
        self.path = path
        try:
            self.repo: Any = git.Repo(path, search_parent_directories=False)
        except git.NoSuchPathError:
            raise TargetError(f"{path}: --repo {name}: no such directory") from None
        except (git.InvalidGitRepositoryError, git.GitError) as exc:
            raise TargetError(f"{path}: --repo {name}: not a git repository ({exc})") from None
        # Never let a partial clone fetch a missing object: reading stays offline.
        self.repo.git.update_environment(GIT_NO_LAZY_FETCH="1", GIT_TERMINAL_PROMPT="0")

    def commit(self, sha: str) -> Any | None:
        """The commit object for a full id, or None when the clone does not have it."""
        try:
            obj = self.repo.rev_parse(f"{sha}^{{commit}}")
        except Exception:  # BadName, BadObject, ValueError: the clone lacks it
            return None
        return obj if obj.hexsha == sha else None

    def resolve_ref(self, name: str) -> tuple[str, str] | None:
        """``(full ref name, commit id)`` of a branch, remote branch or tag, or None.

        Local branches win, then ``origin``'s remote branches, then any other
        remote's, then tags: the order in which a person would read "main".
        """
        candidates = [name] if name.startswith("refs/") else [
            f"refs/heads/{name}", f"refs/remotes/origin/{name}",
        ]
        if not name.startswith("refs/"):
            candidates += sorted(
                r.path for r in self.repo.refs
                if r.path.startswith("refs/remotes/") and r.path.endswith(f"/{name}")
                and r.path.count("/") == 3
            )
            candidates.append(f"refs/tags/{name}")
        for full in candidates:
            try:
                commit = self.repo.rev_parse(f"{full}^{{commit}}")
            except Exception:  # gitpython raises several types for "no such ref"
                continue
            return full, str(commit.hexsha)
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
            for item in self.commit.tree.traverse():
                if item.type != "tree":
                    entries[item.path] = _Entry(item.mode, item)
            self._entries = entries
        return self._entries

    def _lookup(self, path: str) -> _Entry | None:
        """One path's entry: walks only the subtrees on the way (no whole-tree listing)."""
        if self._entries is not None:
            return self._entries.get(path)
        try:
            item = self.commit.tree / path
        except KeyError:
            return None
        if item.type == "tree":
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
        entry = self._entry(path)
        try:
            data: bytes = entry.blob.data_stream.read()
        except Exception as exc:  # a corrupt object store is a per-file error
            raise SourceError(path, f"cannot read blob {entry.blob.hexsha[:12]}: {exc}") from None
        return data

    def _is_tree(self, path: str) -> bool:
        try:
            return bool((self.commit.tree / path).type == "tree")
        except KeyError:
            return False

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
        read and hashed.
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
            elif hashlib.sha256(entry.blob.data_stream.read()).hexdigest() == sha256:
                found.append(path)
        return found
