"""A ``Source`` over one commit of a local git clone, read with gitpython's object model.

Evidence pinned to a commit is read from its objects, never the work tree, and
offline (no lazy fetch in a partial clone). "The commit id fixes the content" holds
only if every object on the way to a file is checked against its id, and git's
``cat-file`` (which gitpython reads through) does not hash what it returns: an
object file rewritten in place would pass for the pinned one. So gitpython's object
database gets one hook (``_verify_objects``) that hashes every commit, tree and blob
it reads, refuses over-large ones from their header and trees git never writes.
Replace refs and grafts are switched off: they make git answer an id with other bytes.

gitpython is imported only once a clone is given: a run without ``--repo`` needs no git.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from io import BytesIO
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pp1audit.errors import MissingFile, Pp1Error, SourceError, TargetError
from pp1audit.sources import MAX_READ, Source, too_large
from pp1audit.sources.safeio import realpath

if TYPE_CHECKING:
    import git
    from git.objects.base import IndexObjUnion

GIT_NOT_FOUND = ("git not found (needed for the manifest's git sources): install git, "
                 "or set GIT_PYTHON_GIT_EXECUTABLE to its path")
"""The one line for a missing git executable: gitpython's own is ~900 characters."""

OBJECT_LIMITS = {"blob": MAX_READ, "tree": 64 << 20, "commit": 64 << 20}
"""Most bytes read whole per kind, judged from the header before reading: a 13 MB loose
object can claim 3 GB. A blob as a file of a directory; a tree or commit far over any real one."""


class CloneError(Pp1Error):
    """git could not answer a question about a clone: the check's ``error``, never a verdict."""


class ObjectMismatch(CloneError):
    """An object not hashing to its id, or a tree git never writes: nothing read through it
    can be judged."""


class ObjectTooLarge(ObjectMismatch):
    """An object whose header declares more bytes than its kind may take: not read."""

    def __init__(self, message: str, size: int) -> None:
        super().__init__(message)
        self.size = size


def object_id(kind: str, data: bytes) -> str:
    """The SHA-1 git names an object by: of ``b"<kind> <size>\\0"`` and the bytes."""
    return hashlib.sha1(b"%s %d\0" % (kind.encode(), len(data)) + data, usedforsecurity=False).hexdigest()


def tree_problem(data: bytes) -> str | None:
    """Why a tree's bytes (hashing to its id) are not a tree git writes, as ``git fsck``
    says: a name given twice (``git show`` reads the first, a checkout the last), ``.git``,
    a ``/``, or entries out of git's order. Two checks could otherwise read two files."""
    from git.objects.fun import tree_entries_from_data

    try:
        entries = tree_entries_from_data(data)  # gitpython parses (recent ones check names too)
    except ValueError as exc:
        return str(exc)
    names = [name.encode("utf-8", "surrogateescape") for _, _, name in entries]
    if any(n in (b"", b".", b"..") or n.lower() == b".git" or b"/" in n for n in names):
        return "an entry named as git never writes"
    keys = [n + b"/" if mode >> 12 == 4 else n for n, (_, mode, _) in zip(names, entries, strict=True)]
    if len(set(names)) != len(names) or any(a >= b for a, b in pairwise(keys)):
        return "an entry given twice or out of git's order"
    return None


@dataclass(frozen=True)
class Ancestry:
    """How a ref's commit now relates to the recorded one: ``kind`` is ``ahead`` (by
    ``ahead`` commits; ``at_least`` in a shallow clone), ``diverged``, ``absent`` (the
    recorded commit is not in the clone) or ``cut`` (a shallow clone cannot tell)."""

    kind: str
    ahead: int = 0
    at_least: bool = False
    shallow: bool = False


def _git_says(exc: Exception | str) -> str:
    """git's own reason in one line (``exc``: an exception, or git's stderr): its first
    ``fatal:`` line (why it stopped), else its first ``error:`` line (what it went on
    past), else the first line."""
    text = exc if isinstance(exc, str) else str(getattr(exc, "stderr", "") or "")
    found = re.search(r"fatal: ([^\n']+)", text) or re.search(r"error: ([^\n']+)", text)
    if found:
        return found.group(1).strip()
    lines = str(exc).strip().splitlines()
    return lines[0].strip() if lines else "no reason given" if isinstance(exc, str) else type(exc).__name__


def _verify_objects(clone: Clone) -> None:
    """Every object gitpython reads goes through ``repo.odb.stream``: checked there."""
    from git.db import GitCmdObjectDB
    from gitdb.base import OStream  # type: ignore[import-untyped]

    trees = clone.trees

    class VerifyingDB(GitCmdObjectDB):
        def stream(self, binsha: bytes) -> OStream:
            data = trees.get(binsha)  # a tree is shared by many commits, and walked often
            if data is not None:
                return OStream(binsha, b"tree", len(data), BytesIO(data))
            info, sha = self.info(binsha), binsha.hex()
            kind, limit = info.type.decode(), OBJECT_LIMITS.get(info.type.decode(), 64 << 20)
            if info.size > limit:
                raise ObjectTooLarge(f"{kind} {sha[:12]} in {clone.shown} declares {info.size:,} "
                                     f"bytes, over the {limit >> 20} MiB read whole for a {kind}: "
                                     "not read", info.size)
            data = super().stream(binsha).read()
            actual = object_id(kind, data)
            if actual != sha:
                raise ObjectMismatch(clone.mismatch(kind, sha, f"hashes to {actual[:12]}, not to its id"))
            if kind == "tree":
                problem = tree_problem(data)
                if problem:
                    raise ObjectMismatch(clone.mismatch(kind, sha, f"is not a valid tree ({problem})"))
                trees[binsha] = data
            return OStream(binsha, info.type, len(data), BytesIO(data))

    clone.repo.odb = VerifyingDB(clone.repo.odb.root_path(), clone.repo.git)


class Clone:
    """A local clone given with ``--repo NAME=PATH``: resolves commits and refs.

    ``TargetError`` (exit 2) when git will not use it, naming the path as given
    (``origin``). Every other message goes into a check, hence the JSON result and the
    report, which must read the same wherever the clone is: the clone is "the lane
    clone" (``shown``), places in it ``$GIT_DIR/…``, commands ``git -C <lane clone> …``;
    ``_scrub`` takes its paths out of what git says.
    """

    def __init__(self, name: str, path: Path, origin: str | None = None) -> None:
        self.name, self.path = name, path
        self.origin = origin or f"{path}: --repo {name}"
        self.shown, self.placeholder = f"the {name} clone", f"<{name} clone>"
        self.trees: dict[bytes, bytes] = {}
        try:
            import git
        except ImportError as exc:  # gitpython's import looks for git
            if "git executable" in str(exc):
                raise TargetError(f"{self.origin}: {GIT_NOT_FOUND}") from None
            raise
        try:
            self.repo = git.Repo(path, search_parent_directories=False)
            self.repo.git.update_environment(GIT_NO_LAZY_FETCH="1", GIT_TERMINAL_PROMPT="0",
                                             GIT_NO_REPLACE_OBJECTS="1", GIT_GRAFT_FILE=os.devnull)
            # an ambiguous short name resolved in git's documented order, not refused
            self.repo.git.set_persistent_git_options(c="core.warnAmbiguousRefs=false")
            self.repo.git.rev_parse("--git-dir")  # git reads the objects: will it use the clone?
        except git.NoSuchPathError:
            raise TargetError(f"{self.origin}: no such directory") from None
        except git.GitCommandNotFound:  # GIT_PYTHON_REFRESH=quiet let the import pass
            raise TargetError(f"{self.origin}: {GIT_NOT_FOUND}") from None
        except git.GitCommandError as exc:
            reason = _git_says(exc)  # an exit-2 line, not a check: the path may stay
            if "dubious ownership" in reason:  # owned by another user, as in CI containers
                reason = (f"git refuses it: owned by another user (dubious ownership); if you "
                          f"trust it: git config --global --add safe.directory {path.resolve()}")
            raise TargetError(f"{self.origin}: {reason}") from None
        except (git.InvalidGitRepositoryError, git.GitError) as exc:
            raise TargetError(f"{self.origin}: not a git repository ({exc})") from None
        fmt = str(self.repo.config_reader("repository").get_value("extensions", "objectformat", "sha1"))
        if fmt.lower() != "sha1":
            raise TargetError(f"{self.origin}: a {fmt.upper().replace('SHA', 'SHA-')} repository "
                              f"(extensions.objectFormat={fmt.lower()}); manifests pin SHA-1 "
                              "commit ids, so it cannot be read")
        _verify_objects(self)

    def command(self, args: str) -> str:
        """A git command to run in the clone, as a message shows it."""
        return f"git -C {self.placeholder} {args}"

    def unshallow_hint(self) -> str:
        return f"deepen it: {self.command('fetch --unshallow')}"

    def mismatch(self, kind: str, sha: str, what: str) -> str:
        return (f"{kind} {sha[:12]} in {self.shown} {what}: the object store is damaged or "
                f"was altered (check with {self.command('fsck')})")

    @property
    def common_dir(self) -> str:
        """The git directory of all work trees, normalised (``…/worktrees/wt/../..``)."""
        return os.path.normpath(str(self.repo.common_dir))

    def _scrub(self, text: str) -> str:
        """``text`` with the clone's absolute paths (as given and resolved) named as the
        report names them; only whole paths (``/x/lane`` is not in ``/x/lane.git``)."""
        places = sorted({(form, shown)
                         for where, shown in ((self.common_dir, "$GIT_DIR"), (self.repo.git_dir, "$GIT_DIR"),
                                              (self.repo.working_tree_dir, self.placeholder),
                                              (self.path, self.placeholder)) if where is not None
                         for form in (os.path.abspath(where), realpath(where)) if form != os.sep},
                        key=lambda p: (-len(p[0]), p))
        shown = dict(places)
        pattern = "|".join(re.escape(f) for f, _ in places)
        return re.sub(rf"(?<![\w./-])({pattern})(?![\w.-])", lambda m: shown[m.group(1)], text)

    def _says(self, exc: Exception | str) -> str:
        return self._scrub(_git_says(exc))

    def _cannot_read(self, places: list[str]) -> str | None:
        """``$GIT_DIR/objects/50 cannot be read (Permission denied)``: the first of ``places``
        that is there but cannot be read. git takes an object or ref it cannot read for an
        absent one; said absent, the user would be sent the wrong way ("fetch it")."""
        for place in places:
            path = Path(self.common_dir, place)
            try:
                if path.is_dir():  # listable, and its entries reachable
                    with os.scandir(path) as it:
                        first = next(it, None)
                    if first is not None:
                        first.stat(follow_symlinks=False)
                else:
                    os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK))
            except (FileNotFoundError, NotADirectoryError):
                continue
            except OSError as exc:
                return f"$GIT_DIR/{place} cannot be read ({exc.strerror or type(exc).__name__})"
        return None

    def unreadable_objects(self, sha: str) -> str | None:
        """A place of the object store that could hold ``sha`` and cannot be read."""
        try:
            packs = sorted(n for n in os.listdir(Path(self.common_dir, "objects", "pack"))
                           if n.endswith((".pack", ".idx")))
        except OSError:
            packs = []
        return self._cannot_read(["objects", f"objects/{sha[:2]}", f"objects/{sha[:2]}/{sha[2:]}",
                                  "objects/pack", *(f"objects/pack/{n}" for n in packs)])

    def _git(self, command: str, *args: str) -> tuple[int, str, str]:
        """``(status, stdout, stderr)`` of a one-off git command (none raised on status)."""
        status, out, err = getattr(self.repo.git, command.replace("-", "_"))(
            *args, with_extended_output=True, with_exceptions=False)
        return int(status), str(out).strip(), str(err)

    def has_commit(self, sha: str) -> bool:
        """A one-off ``cat-file``: an absent object ends gitpython's persistent helper."""
        status, out, _ = self._git("cat-file", "-t", sha)
        return status == 0 and out == "commit"

    def resolve_ref(self, name: str) -> tuple[str, str] | None:
        """``(label, commit id)`` of a ref, or None when the clone has none.

        git resolves a short name (``$GIT_DIR/<name>``, ``refs/<name>``, tags, branches,
        remotes: gitrevisions(7)), so a branch named like a recorded tag cannot stand in
        for it; then ``origin``'s branch of that name, then any other remote's (a clone
        with remote-tracking branches only). ``CloneError`` when the ref does not peel to
        a commit, or may be in a place git could not read.
        """
        wants = [name]
        if not name.startswith("refs/"):
            try:  # git would open a FIFO at $GIT_DIR/<name> and wait forever
                mode = os.stat(Path(self.repo.git_dir, name)).st_mode
            except (OSError, ValueError):
                mode = stat.S_IFREG
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                wants = [f"refs/{p}{name}" for p in ("", "tags/", "heads/", "remotes/")]
            remotes = self._git("for-each-ref", "--format=%(refname)", f"refs/remotes/*/{name}")[1]
            wants += [f"refs/remotes/origin/{name}", *sorted(remotes.split())]
        full = next((f for f in (self._git("rev-parse", "--verify", "-q", "--symbolic-full-name",
                                           w)[1] for w in wants) if f), None)
        if full is None:
            blocked = self._ref_blocked(name)
            if blocked:
                raise CloneError(f"cannot tell where '{name}' points in {self.shown}: {blocked}")
            return None
        status, commit, err = self._git("rev-parse", "--verify", f"{full}^{{commit}}")
        if status != 0:
            raise CloneError(f"{full} in {self.shown} does not resolve to a commit ({self._says(err)})")
        # HEAD, FETCH_HEAD...: the name and the branch it stands for
        return (f"{name} ({full})" if full != name and re.fullmatch(r"[A-Z_]+", name) else full), commit

    def _ref_blocked(self, name: str) -> str | None:
        """Where ref ``name`` may be and git could not look: git skips an unreadable directory
        of the ref store silently, and a ref file it cannot read with a warning."""
        wants = [name] if name.startswith("refs/") else [
            f"refs/{p}{name}" for p in ("", "tags/", "heads/", "remotes/", "remotes/origin/")]
        for broken in re.findall(r"ignoring broken ref (\S+)", self._git("for-each-ref", "--format=")[2]):
            if broken in wants:
                return f"$GIT_DIR/{broken} is unreadable or broken (git skips it)"
        dirs = dict.fromkeys(w.rsplit("/", i)[0] for w in wants for i in range(w.count("/"), 0, -1))
        return self._cannot_read(["packed-refs", *dirs])

    def ancestry(self, older: str, newer: str) -> Ancestry:
        """How commit ``newer`` relates to ``older``. A shallow clone sees no parents past
        its boundary: "not an ancestor" is then ``cut`` and a count a lower bound."""
        shallow = self._git("rev-parse", "--is-shallow-repository")[1] == "true"
        if not self.has_commit(older):
            return Ancestry("absent", shallow=shallow)
        status, count, err = self._git("merge-base", "--is-ancestor", older, newer)
        if status == 0:
            status, count, err = self._git("rev-list", "--count", f"{older}..{newer}")
        if status == 1:
            return Ancestry("cut" if shallow else "diverged", shallow=shallow)
        if status != 0:
            raise CloneError(f"{self.shown}: cannot walk the history from {newer[:12]} "
                             f"({self._says(err)})")
        return Ancestry("ahead", int(count), at_least=shallow, shallow=shallow)

    def source(self, sha: str) -> GitSource | None:
        """A source over ``sha``'s tree, or None when the clone lacks the commit. The
        commit is read (so verified) here: ``ObjectMismatch`` when altered."""
        import git

        if not self.has_commit(sha):
            blocked = self.unreadable_objects(sha)
            if blocked:  # git says "no such object" where it could not look
                raise CloneError(f"commit {sha[:12]} in {self.shown} cannot be read: {blocked}")
            return None
        try:
            return GitSource(self, sha, git.Commit(self.repo, bytes.fromhex(sha)).tree)
        except ObjectMismatch:
            raise
        except Exception as exc:  # git could not give it (a damaged clone)
            self.repo.git.clear_cache()
            raise CloneError(f"commit {sha[:12]} in {self.shown} cannot be read: "
                             f"{self._says(exc)}") from None

    def unreadable(self, path: str, kind: str, sha: str, exc: Exception) -> SourceError:
        """The error for a file whose ``kind`` object git could not give. gitpython's
        helpers are restarted first: git ends them on an object a partial clone lacks."""
        self.repo.git.clear_cache()
        if self._git("cat-file", "-e", sha)[0] == 0:
            return SourceError(path, f"cannot read {kind} {sha[:12]}: {self._says(exc)}")
        needs = f"needs {kind} {sha[:12]}"
        blocked = self.unreadable_objects(sha)
        if blocked:
            return SourceError(path, f"{needs}, but {blocked}")
        partial = self._git("config", "--get-regexp", r"^(remote\..*\.promisor|extensions\.partialclone)$")[1]
        if any(line.split()[-1].lower() != "false" for line in partial.splitlines()):
            return SourceError(path, f"{needs}, which is not in this partial clone; fetch it "
                               f"({self.command(f'cat-file -e {sha}')})")
        return SourceError(path, f"{needs}, which is missing from {self.shown} (a damaged clone?)")

    def close(self) -> None:
        """Stop gitpython's persistent ``git cat-file`` helpers."""
        self.repo.close()


class MissingBlob(MissingFile):
    """The path is not in the commit's tree (a ``fail``, like any missing pinned file)."""

    def __init__(self, path: str, commit: str) -> None:
        SourceError.__init__(self, path, f"is not in commit {commit[:12]}")


class GitSource(Source):
    """The files of one commit: blob bytes, whatever the work tree holds, each tree on
    the way and the blob checked against their ids (``_verify_objects``)."""

    kind = "git"

    def __init__(self, clone: Clone, hexsha: str, root: git.Tree) -> None:
        self.clone, self.hexsha, self.root = clone, hexsha, root
        self.location = f"{clone.path}@{hexsha}"
        self._files: dict[str, IndexObjUnion] | None = None

    def _read(self, path: str, kind: str, sha: str, read: Callable[[], Any]) -> Any:
        """``read()`` of object ``sha`` (a tree on the way to ``path``, or its blob), its
        failures as ``SourceError`` for ``path``."""
        try:
            return read()
        except ObjectTooLarge as exc:
            if kind == "blob":  # as for a file of a directory: an error, never exhausted memory
                raise SourceError(path, too_large(exc.size)) from None
            raise SourceError(path, f"cannot be trusted: {exc}") from None
        except ObjectMismatch as exc:
            raise SourceError(path, f"cannot be trusted: {exc}") from None
        except Exception as exc:  # an object a partial clone lacks, a corrupt store
            raise self.clone.unreadable(path, kind, sha, exc) from None

    def _children(self, tree: git.Tree, path: str) -> list[IndexObjUnion]:
        items: list[IndexObjUnion] = self._read(path, "tree", tree.hexsha, lambda: list(tree))
        if tree.binsha not in self.clone.trees:  # its id names a blob or commit: git says no tree
            what = self.clone.mismatch("tree", tree.hexsha, "is not a tree")
            raise SourceError(path, f"cannot be trusted: {what}")
        return items

    def _index(self) -> dict[str, IndexObjUnion]:
        """Every non-tree entry of the commit, by path (one walk, kept)."""
        from git import Tree

        if self._files is None:
            self._files, pending = {}, [self.root]
            while pending:
                tree = pending.pop()
                for item in self._children(tree, str(tree.path) or "."):
                    if isinstance(item, Tree):
                        pending.append(item)
                    else:
                        self._files[str(item.path)] = item
        return self._files

    def _item(self, path: str) -> IndexObjUnion | None:
        """The entry at ``path`` (a directory too), or None: only the trees on the way are read."""
        from git import Tree

        item: IndexObjUnion | None = self.root
        for part in path.split("/"):
            if not isinstance(item, Tree):
                return None
            item = next((c for c in self._children(item, path) if c.name == part), None)
        return item

    def read(self, path: str) -> bytes:
        from git import Blob, Tree

        self._check_path(path)
        blob, at = (self._files or {}).get(path) or self._item(path), f"commit {self.hexsha[:12]}"
        if blob is None:
            raise MissingBlob(path, self.hexsha)
        if isinstance(blob, Tree):
            raise SourceError(path, f"is a directory in {at}")
        if not isinstance(blob, Blob):
            raise SourceError(path, f"is a submodule in {at}; not read")
        if stat.S_ISLNK(blob.mode):
            raise SourceError(path, f"is a symbolic link in {at}; not followed")
        got = self._read(path, "blob", blob.hexsha, lambda: blob.data_stream)
        if got.type != b"blob":  # the id is right, the tree naming it is not
            what = f"is a {got.type.decode()}, not a blob"
            raise SourceError(path, f"cannot be trusted: {self.clone.mismatch('blob', blob.hexsha, what)}")
        data: bytes = got.read()
        return data

    def exists(self, path: str) -> bool:
        from pp1audit.manifest.paths import path_problem

        return path_problem(path) is None and self._item(path) is not None

    def iter_files(self, under: str = "") -> Iterator[str]:
        prefix = under.rstrip("/") + "/" if under else ""
        yield from sorted(p for p in self._index() if p.startswith(prefix))

    def find_bytes(self, sha256: str, data: bytes | None = None) -> list[str]:
        """Paths of regular files whose bytes have this SHA-256: with the bytes at hand (a
        cached donor) by their blob id, no blob read; else every blob is read (size-capped)
        and hashed, and one that cannot be read is a ``SourceError`` (a "lacks" rule cannot
        be proven over bytes never seen)."""
        blob_id = object_id("blob", data) if data is not None else None
        return [path for path, item in sorted(self._index().items())
                if item.type == "blob" and not stat.S_ISLNK(item.mode)
                and (item.hexsha == blob_id if blob_id is not None
                     else hashlib.sha256(self.read(path)).hexdigest() == sha256)]
