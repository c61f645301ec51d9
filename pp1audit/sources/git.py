"""A ``Source`` over one commit of a local git clone, read from blobs with gitpython.

Evidence pinned to a commit must be read from that commit's objects, never the
work tree: a dirty or checked-out-elsewhere clone cannot then fake a pass. The
clone is opened read-only in spirit (nothing here writes to it); git is told not
to fetch lazily (partial clones), so reading never touches the network.

"The commit id fixes the content" holds only if every object on the way from the
commit to a file is checked against its id: git's ``cat-file`` does not hash what
it returns, so an object file rewritten in place (loose or packed) would be read
as if it were the pinned one. Every commit, tree and blob read here is hashed and
compared with the id that named it (``Clone.read_object``); a mismatch is an
``error`` naming the object, never a pass. ``git replace`` refs are ignored for the
same reason: they make git return another object's bytes for an id.

gitpython is imported inside the functions that need it: ``pp1audit check`` on a
plain directory never pays for it.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pp1audit.errors import MissingFile, Pp1Error, SourceError, TargetError
from pp1audit.sources import MAX_READ, Source, kind_of_mode, too_large
from pp1audit.sources.safeio import NotRegular, TooLarge, open_regular, read_regular, realpath

SHALLOW_MAX = 64 << 20
"""A ``$GIT_DIR/shallow`` is one 41-byte line per boundary commit: 64 MiB is 1.6 million."""

_TREE = 0o040000
_SYMLINK = 0o120000
_GITLINK = 0o160000
_FORMAT = 0o170000

GIT_NOT_FOUND = ("git not found (needed for the manifest's git sources): install git, "
                 "or set GIT_PYTHON_GIT_EXECUTABLE to its path")
"""The one line for a missing git executable: gitpython's own is ~900 characters."""

class CloneError(Pp1Error):
    """git could not answer a question about a clone (a ref that does not peel to a
    commit, a broken ref store): the check's ``error``, never a verdict."""


class ObjectMismatch(CloneError):
    """An object whose bytes do not hash to the id that named it: the object store
    was damaged or altered, so nothing read through it can be judged."""


class ObjectTooLarge(ObjectMismatch):
    """An object whose header declares more bytes than its kind may take: not read, and
    so judged like a mismatch (nothing read through it). A 13 MB loose object can
    claim 3 GB; reading it whole held 5.9 GB resident before its hash was refused."""


OBJECT_LIMITS = {"blob": MAX_READ, "tree": 64 << 20, "commit": 64 << 20}
"""The most bytes read whole for each kind: a blob as a file of a directory; a tree or a
commit far over any real one (a tree of 100,000 entries is about 5 MB)."""


def _import_git(origin: str) -> Any:
    """gitpython, or ``TargetError`` (exit 2) in one line when git is not installed.

    gitpython looks for the git executable when imported and raises an
    ``ImportError`` of many lines if there is none; only runs given a clone
    (``--repo``) import it, so a run without one never needs git.
    """
    try:
        import git
    except ImportError as exc:
        if "git executable" in str(exc):
            raise TargetError(f"{origin}: {GIT_NOT_FOUND}") from None
        raise
    return git


def object_id(kind: str, data: bytes) -> str:
    """The SHA-1 git names an object by: of ``b"<kind> <size>\\0"`` and the bytes."""
    header = b"%s %d\0" % (kind.encode("ascii"), len(data))
    return hashlib.sha1(header + data, usedforsecurity=False).hexdigest()


@dataclass(frozen=True)
class TreeItem:
    """One entry of a tree object whose bytes were checked against its id."""

    name: str
    mode: int
    hexsha: str

    @property
    def kind(self) -> str:
        """``tree``, ``commit`` (a submodule) or ``blob`` (files and symbolic links)."""
        fmt = self.mode & _FORMAT
        return "tree" if fmt == _TREE else "commit" if fmt == _GITLINK else "blob"


def parse_tree(data: bytes) -> list[TreeItem]:
    """The entries of a tree object (``<octal mode> <name>\\0<20-byte id>`` each);
    ``ValueError`` when the bytes are not a tree, or not one git writes.

    A tree's bytes hashing to its id proves only that they were not altered,
    not that they are well formed: a tree made with ``hash-object --literally``
    may name one path twice (``git show`` then reads the first entry, a
    checkout writes the last), or hold a name with a ``/`` (which a path
    lookup would take for a directory). Readers here that walk a tree and
    readers that flatten it would then disagree, and two checks of one run
    could see two different files. So, as ``git fsck`` does, such a tree is
    refused: an empty name, ``.``, ``..``, ``.git`` (in any case), a ``/`` or
    a NUL in a name, a name given twice, or entries out of git's order (by
    name bytes, a directory sorting as if its name ended in ``/``).
    """
    items: list[TreeItem] = []
    at = 0
    previous: bytes | None = None
    while at < len(data):
        space = data.index(b" ", at)
        nul = data.index(b"\0", space)
        raw = data[nul + 1 : nul + 21]
        if len(raw) != 20:
            raise ValueError("truncated tree entry")
        name_bytes = data[space + 1 : nul]
        mode = int(data[at:space], 8)
        if name_bytes in (b"", b".", b"..") or name_bytes.lower() == b".git" or b"/" in name_bytes:
            raise ValueError(f"entry named {name_bytes!r}, which git never writes")
        order = name_bytes + (b"/" if mode == _TREE else b"")
        if previous is not None and order <= previous:
            raise ValueError(f"entry {name_bytes!r} given twice or out of git's order")
        previous = order
        items.append(TreeItem(name_bytes.decode("utf-8", "surrogateescape"), mode, raw.hex()))
        at = nul + 21
    if len({item.name for item in items}) != len(items):  # a file and a directory of one name
        raise ValueError("a name given twice")
    return items


@dataclass(frozen=True)
class Ancestry:
    """How a ref's commit now relates to the one recorded (``Clone.ancestry``)."""

    kind: str
    """``ahead`` (a fast-forward), ``diverged`` (not a descendant), ``absent`` (the
    recorded commit is not in the clone) or ``cut`` (a shallow clone's history
    stops before the answer: it cannot be told)."""
    ahead: int = 0
    """Commits in ``recorded..now`` (``ahead`` only)."""
    at_least: bool = False
    """The count stops at a shallow boundary: the real number may be larger."""
    shallow: bool = False
    """The clone is shallow (``$GIT_DIR/shallow``)."""


def _git_says(exc: Exception) -> str:
    """git's own reason in one line: the first ``fatal:`` line of its stderr, else
    its first ``error:`` line, else the first line of the exception (gitpython's
    are several lines). ``fatal:`` first: git says ``error:`` for what it went on
    past (an ``alternates`` line naming no directory) before the reason it stopped."""
    text = str(getattr(exc, "stderr", "") or "")
    found = re.search(r"fatal: ([^\n']+)", text) or re.search(r"error: ([^\n']+)", text)
    if found:
        return found.group(1).strip()
    lines = str(exc).strip().splitlines()
    return lines[0].strip() if lines else type(exc).__name__


class Clone:
    """A local clone given with ``--repo NAME=PATH``: resolves commits and refs.

    ``TargetError`` (exit 2) when the path is not a git repository at all, or one
    git refuses to use: that is a usage error, not a verdict about the audit. It
    names the path as given (``origin``): the user must find it.

    Every other message (``CloneError``, the ``SourceError`` of a file) ends up in
    a check, hence in the JSON result and the Markdown report, which must be the
    same bytes wherever the clone was made and whatever the working directory.
    So those name the clone by its source name (``shown``: "the lane clone"), the
    places inside it from ``$GIT_DIR``, and the commands to run as
    ``git -C <lane clone> …`` (``command``); ``_scrub`` takes the clone's paths
    out of what git itself says.
    """

    def __init__(self, name: str, path: Path, origin: str | None = None) -> None:
        """``origin``: who gave ``path``, heading an error about it
        (``ProvenanceOptions.repo_origin``); by default ``PATH: --repo NAME``."""
        self.name = name
        self.path = path
        self.origin = origin or f"{path}: --repo {name}"
        self.shown = f"the {name} clone"
        """How check messages name the clone: never its path (see the class)."""
        self.placeholder = f"<{name} clone>"
        """How a command or a path in a message names the clone's directory
        (``git -C <lane clone> fetch``): never its path (see the class)."""
        git = _import_git(self.origin)
        self._ref_names: frozenset[str] | None = None
        self._ref_problems: dict[str, str] | None = None
        self._shallow: frozenset[str] | None = None
        self._trees: dict[str, list[TreeItem]] = {}
        try:
            self.repo: Any = git.Repo(path, search_parent_directories=False)
        except git.NoSuchPathError:
            raise TargetError(f"{self.origin}: no such directory") from None
        except git.GitCommandNotFound:
            raise TargetError(f"{self.origin}: {GIT_NOT_FOUND}") from None
        except (git.InvalidGitRepositoryError, git.GitError) as exc:
            raise TargetError(f"{self.origin}: not a git repository ({exc})") from None
        # Never let a partial clone fetch a missing object: reading stays offline.
        # Replace refs would make git answer an id with another object's bytes.
        self.repo.git.update_environment(GIT_NO_LAZY_FETCH="1", GIT_TERMINAL_PROMPT="0",
                                         GIT_NO_REPLACE_OBJECTS="1",
                                         GIT_GRAFT_FILE=os.devnull)
        self._check_git_accepts_it()
        self._check_sha1()

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
        except git.GitCommandNotFound:  # GIT_PYTHON_REFRESH=quiet let the import pass
            raise TargetError(f"{self.origin}: {GIT_NOT_FOUND}") from None
        except git.GitCommandError as exc:
            reason = _git_says(exc)  # an exit-2 line, not a check: the path may stay
            if "dubious ownership" in reason:
                where = Path(self.repo.working_tree_dir or self.repo.git_dir).resolve()
                reason = (f"git refuses it: owned by another user (dubious ownership); if you "
                          f"trust it: git config --global --add safe.directory {where}")
            raise TargetError(f"{self.origin}: {reason}") from None

    def _check_sha1(self) -> None:
        """``TargetError`` for a SHA-256 repository: manifests pin 40-hex (SHA-1)
        commit ids, so none could name its objects, and gitpython reads SHA-1 only."""
        import git

        try:
            fmt = self.repo.git.config("--get", "extensions.objectformat").strip().lower()
        except git.GitCommandError:  # exit 1: not set, the SHA-1 default
            return
        if fmt not in ("", "sha1"):
            raise TargetError(f"{self.origin}: a {fmt.upper().replace('SHA', 'SHA-')} repository "
                              f"(extensions.objectFormat={fmt}); manifests pin SHA-1 commit ids, "
                              "so it cannot be read")

    def has_commit(self, sha: str) -> bool:
        """True when the clone holds a commit object of that full id.

        Asked of a one-off ``git cat-file -t``: in a partial clone an absent object
        ends gitpython's persistent helper, and every later read would fail.
        """
        import git

        try:
            kind = self.repo.git.cat_file("-t", sha).strip()
        except git.GitCommandError:  # no such object here
            return False
        return bool(kind == "commit")

    def read_object(self, sha: str, kind: str, size: int | None = None) -> bytes:
        """The bytes of object ``sha``, checked to hash to ``sha`` as a ``kind``.

        ``ObjectMismatch`` when they do not (an object file rewritten in place, a
        bad pack entry: git's ``cat-file`` returns such bytes unchecked); any other
        exception when git cannot give the object at all (``unreadable`` names it).
        Loose and packed objects alike: the check is on the bytes git returns.
        ``ObjectTooLarge`` before anything is read when the header declares more than
        ``OBJECT_LIMITS`` allows (``size``: the header's size, when already asked).
        """
        if size is None:
            size = self.object_size(sha)
        limit = OBJECT_LIMITS[kind]
        if size > limit:
            raise ObjectTooLarge(f"{kind} {sha[:12]} in {self.shown} declares {size:,} bytes, "
                                 f"over the {limit >> 20} MiB read whole for a {kind}: not read")
        got = self.repo.odb.stream(bytes.fromhex(sha))
        data: bytes = got.read()
        actual_kind = got.type.decode("ascii", "replace")
        actual = object_id(actual_kind, data)
        if actual != sha:
            raise ObjectMismatch(self._mismatch(kind, sha, f"hashes to {actual[:12]}, not to its id"))
        if actual_kind != kind:  # the id is right, the tree or commit naming it is not
            raise ObjectMismatch(self._mismatch(kind, sha, f"is a {actual_kind}, not a {kind}"))
        return data

    def _mismatch(self, kind: str, sha: str, what: str) -> str:
        return (f"{kind} {sha[:12]} in {self.shown} {what}: the object store is damaged or "
                f"was altered (check with {self.command('fsck')})")

    def command(self, args: str) -> str:
        """A git command to run in the clone, as a message shows it: ``git -C <lane clone>
        fetch``. The user knows the path they gave; the report must not hold it."""
        return f"git -C {self.placeholder} {args}"

    @property
    def common_dir(self) -> str:
        """The git directory shared by all work trees, normalised: gitpython gives a
        worktree's as ``…/.git/worktrees/wt/../..``, which would name the same
        place differently from a plain clone's (``$GIT_DIR/../../objects``)."""
        return os.path.normpath(str(self.repo.common_dir))

    def _places(self) -> list[tuple[str, str]]:
        """(path, how a message names it) for the clone's own directories, the
        longest first: the git directories as ``$GIT_DIR``, the work tree and
        the path given as ``<lane clone>``. Absolute forms only (as given and as
        it resolves): a relative one (``lane``) could be any word of a message."""
        pairs: set[tuple[str, str]] = set()
        for where, shown in ((self.common_dir, "$GIT_DIR"), (self.repo.git_dir, "$GIT_DIR"),
                             (self.repo.working_tree_dir, self.placeholder),
                             (self.path, self.placeholder)):
            if where is not None:
                for form in (os.path.abspath(where), realpath(where)):
                    if form != os.sep:
                        pairs.add((form, shown))
        return sorted(pairs, key=lambda p: (-len(p[0]), p))

    def _scrub(self, text: str) -> str:
        """``text`` with the clone's paths named as the report names them (``_places``):
        git's own words may quote an absolute path of the clone. Only a whole path
        is replaced, one not inside a longer word: ``/x/lane`` names the clone in
        ``/x/lane/objects`` but not in ``/x/lane.git/objects`` (an alternate beside
        it) nor in ``refs/tags/srv-build`` for a clone at ``/srv``."""
        places = self._places()
        if not places:
            return text
        shown = dict(places)
        pattern = re.compile(r"(?<![\w./-])(" + "|".join(re.escape(f) for f, _ in places)
                             + r")(?![\w.-])")
        return pattern.sub(lambda m: shown[m.group(1)], text)

    def _says(self, exc: Exception) -> str:
        """``_git_says`` with the clone's paths taken out (``_scrub``)."""
        return self._scrub(_git_says(exc))

    def tree_of(self, commit: str) -> str:
        """The root tree id named by a commit, read through its verified bytes
        (``ObjectMismatch`` when they do not hash to ``commit``)."""
        data = self.read_object(commit, "commit")
        first = data.split(b"\n", 1)[0]
        if not re.fullmatch(rb"tree [0-9a-f]{40}", first):
            raise ObjectMismatch(self._mismatch("commit", commit, "names no tree"))
        return first[5:].decode("ascii")

    def tree(self, sha: str) -> list[TreeItem]:
        """A tree's entries, read and verified once per run (a tree is shared by many
        commits, and a large tree is walked for every ``lacks`` rule)."""
        hit = self._trees.get(sha)
        if hit is None:
            data = self.read_object(sha, "tree")
            try:
                hit = parse_tree(data)
            except ValueError as exc:
                raise ObjectMismatch(self._mismatch("tree", sha, f"is not a valid tree ({exc})")) from None
            self._trees[sha] = hit
        return hit

    def object_size(self, sha: str) -> int:
        """An object's size from its header alone (before deciding to read it)."""
        return int(self.repo.odb.info(bytes.fromhex(sha)).size)

    def _refs(self) -> frozenset[str]:
        """Every ref name of the clone, listed once per run (a clone of vLLM has
        thousands of tags; each pinned ref used to list them all again).

        git skips what it cannot read (an unreadable ``refs/tags`` directory, a
        ref file it cannot open) and lists the rest; those places are kept in
        ``_ref_problems`` so that a ref that may be there is never said absent.
        """
        import git

        if self._ref_names is None:
            try:
                _, out, err = self.repo.git.for_each_ref("--format=%(refname)",
                                                         with_extended_output=True)
            except git.GitCommandError as exc:
                raise CloneError(f"{self.shown}: cannot list refs: {self._says(exc)}") from None
            problems = self._unreadable_ref_dirs()
            for broken in re.findall(r"ignoring broken ref (\S+)", err or ""):
                problems.setdefault(broken, "is unreadable or broken (git skips it)")
            self._ref_problems = problems
            self._ref_names = frozenset(out.splitlines())
        return self._ref_names

    def _unreadable_ref_dirs(self) -> dict[str, str]:
        """``{"refs/tags": "cannot be read (Permission denied)"}``: loose-ref directories (and a
        ``packed-refs`` file) that cannot be read. Directories only are listed:
        a ref store has few of them, however many tags it holds."""
        common = Path(self.common_dir)
        problems: dict[str, str] = {}
        packed = common / "packed-refs"
        try:
            os.close(open_regular(packed, follow=True)[0])
        except FileNotFoundError:
            pass
        except NotRegular as exc:
            problems["packed-refs"] = f"is a {kind_of_mode(exc.mode)}, not a file"
        except OSError as exc:
            problems["packed-refs"] = f"cannot be read ({exc.strerror or type(exc).__name__})"
        pending = ["refs"]
        while pending:
            rel = pending.pop()
            try:
                with os.scandir(common / rel) as it:
                    entries = list(it)
                if entries:  # listable is not enough: git must also reach the files
                    entries[0].stat(follow_symlinks=False)
                pending.extend(f"{rel}/{e.name}" for e in entries if e.is_dir(follow_symlinks=False))
            except FileNotFoundError:
                continue
            except OSError as exc:
                problems[rel] = f"cannot be read ({exc.strerror or type(exc).__name__})"
        return problems

    def _blocked(self, name: str, full: str) -> None:
        """``CloneError`` when ref ``name``, as ``full`` (``*``: any one component),
        may be in a place git could not read: whether it is there cannot be told."""
        self._refs()
        assert self._ref_problems is not None
        want = full.split("/")
        for where, why in sorted(self._ref_problems.items()):
            have = where.split("/")
            inside = len(have) <= len(want) and all(
                w in ("*", h) for w, h in zip(want[: len(have)], have, strict=True))
            if where == "packed-refs" or inside:
                raise CloneError(f"cannot tell where '{name}' points in {self.shown}: "
                                 f"$GIT_DIR/{where} {why}")

    def _git_dir_ref(self, name: str) -> tuple[str, str] | None:
        """``$GIT_DIR/<name>`` (``HEAD``, ``FETCH_HEAD``...): first in git's order.

        Returns ``(label, commit)``; None when there is no such file or it names
        no object (git then goes on to ``refs/<name>``). Read as git's files
        backend does: ``ref: <target>`` or an object id on the first line.
        """
        import git

        parts = name.split("/")
        if any(not p or p.startswith(".") or p.endswith(".lock") for p in parts):
            return None  # not a ref name git would look up (and never a path out of $GIT_DIR)
        try:  # the first line is all git reads; never a FIFO's open, never a whole index
            fd, _ = open_regular(Path(self.repo.git_dir) / name, follow=True)
            try:
                text = os.read(fd, 4096).decode("utf-8", errors="replace")
            finally:
                os.close(fd)
        except (FileNotFoundError, NotADirectoryError, NotRegular):
            return None
        except OSError as exc:
            raise CloneError(f"cannot tell where '{name}' points in {self.shown}: "
                             f"$GIT_DIR/{name} cannot be read ({exc.strerror})") from None
        first = text.split("\n", 1)[0].strip()
        if first.startswith("ref:"):
            target = first[4:].strip()
            if target not in self._refs():
                self._blocked(name, target)
                return None  # an unborn branch: git goes on to refs/<name>, as here
            label, what = f"{name} ({target})", target
        else:
            oid = (first.split() or [""])[0]
            if not re.fullmatch(r"[0-9a-f]{40}", oid):
                return None  # not a ref file (config, index...): git goes on as well
            label, what = name, oid
        try:
            commit = self.repo.git.rev_parse("--verify", f"{what}^{{commit}}").strip()
        except git.GitCommandError as exc:
            raise CloneError(f"$GIT_DIR/{name} in {self.shown} does not resolve to a commit "
                             f"({self._says(exc)})") from None
        return label, commit

    def resolve_ref(self, name: str) -> tuple[str, str] | None:
        """``(full ref name, commit id)`` of a ref, or None when the clone has none.

        A short name is looked up in ``git rev-parse``'s order (gitrevisions(7)):
        ``$GIT_DIR/<name>`` (``HEAD``, ``FETCH_HEAD``...), ``refs/<name>``, tags,
        local branches, ``refs/remotes/<name>`` and its ``HEAD`` — so a branch
        named like a recorded tag cannot stand in for it. Then, for a clone that
        has only remote-tracking branches, ``origin``'s branch of that name, then
        any other remote's. ``CloneError`` when git cannot list the refs, peel the
        one found to a commit, or read a place the ref may be in.
        """
        import git

        existing = self._refs()
        if name.startswith("refs/"):
            candidates = [name]
        else:
            at_git_dir = self._git_dir_ref(name)
            if at_git_dir is not None:
                return at_git_dir
            candidates = [f"refs/{name}", f"refs/tags/{name}", f"refs/heads/{name}",
                          f"refs/remotes/{name}", f"refs/remotes/{name}/HEAD",
                          f"refs/remotes/origin/{name}"]
            candidates += sorted(
                r for r in existing
                if r.startswith("refs/remotes/") and r.endswith(f"/{name}") and r.count("/") == 3
            )
        for full in candidates:
            if full not in existing:
                self._blocked(name, full)
                continue
            try:
                commit = self.repo.git.rev_parse("--verify", f"{full}^{{commit}}").strip()
            except git.GitCommandError as exc:
                raise CloneError(f"{full} in {self.shown} does not resolve to a commit "
                                 f"({self._says(exc)})") from None
            return full, commit
        if not name.startswith("refs/"):
            self._blocked(name, f"refs/remotes/*/{name}")
        return None

    def shallow_commits(self) -> frozenset[str]:
        """The commits a shallow clone's history stops at (``$GIT_DIR/shallow``;
        empty for a full clone): their parents are not in the clone."""
        if self._shallow is None:
            path = Path(self.common_dir) / "shallow"
            try:
                text = read_regular(path, SHALLOW_MAX, follow=True).decode("ascii", errors="replace")
            except FileNotFoundError:
                text = ""
            except (NotRegular, TooLarge):
                raise CloneError(f"{self.shown}: $GIT_DIR/shallow is not a shallow list "
                                 "git would write; not read") from None
            except OSError as exc:
                raise CloneError(f"{self.shown}: cannot read $GIT_DIR/shallow ({exc.strerror})") from None
            self._shallow = frozenset(text.split())
        return self._shallow

    def ancestry(self, older: str, newer: str) -> Ancestry:
        """How commit ``newer`` relates to ``older`` (both full ids; ``newer`` is in
        the clone). In a shallow clone git sees no parents past the boundary, so
        "not an ancestor" is only an answer when the walk from ``newer`` never
        reaches it; otherwise it is ``cut``: it cannot be told. ``CloneError``
        when git cannot walk the history."""
        import git

        shallow = bool(self.shallow_commits())
        if not self.has_commit(older):
            return Ancestry("absent", shallow=shallow)
        try:
            status, _, err = self.repo.git.merge_base("--is-ancestor", older, newer,
                                                      with_extended_output=True, with_exceptions=False)
            if status not in (0, 1):
                raise CloneError(f"{self.shown}: cannot walk the history from {newer[:12]} "
                                 f"({self._says(git.GitCommandError('merge-base', status, err))})")
            if shallow:  # a shallow clone's history is short: list it
                walked = self.repo.git.rev_list(f"{older}..{newer}").split()
                count = len(walked)
            elif status == 0:  # counted only for a fast-forward: a diverged ref says no count
                walked, count = [], int(self.repo.git.rev_list("--count", f"{older}..{newer}"))
            else:
                walked, count = [], 0
        except git.GitCommandError as exc:
            raise CloneError(f"{self.shown}: cannot walk the history from {newer[:12]} "
                             f"({self._says(exc)})") from None
        # A shallow boundary in older..newer: the walk stopped there, not at older's side.
        cut = not self.shallow_commits().isdisjoint(walked)
        if status == 0:
            return Ancestry("ahead", count, at_least=cut, shallow=shallow)
        return Ancestry("cut" if cut else "diverged", shallow=shallow)

    def unshallow_hint(self) -> str:
        """The command that deepens a shallow clone to its full history."""
        return f"deepen it: {self.command('fetch --unshallow')}"

    def source(self, sha: str) -> GitSource | None:
        """A source over ``sha``'s tree, or None when the clone lacks the commit.

        The commit object is read and verified here: ``ObjectMismatch`` (a
        ``CloneError``) when its bytes do not hash to ``sha``.
        """
        if not self.has_commit(sha):
            blocked = self.unreadable_objects(sha)
            if blocked:  # git says "no such object" where it could not look
                raise CloneError(f"commit {sha[:12]} in {self.shown} cannot be read: {blocked}")
            return None
        try:
            tree = self.tree_of(sha)
        except ObjectMismatch:
            raise
        except Exception as exc:  # git could not give it (a damaged clone)
            self.repo.git.clear_cache()
            raise CloneError(f"commit {sha[:12]} in {self.shown} cannot be read: "
                             f"{self._says(exc)}") from None
        return GitSource(self, sha, tree)

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
            blocked = self.unreadable_objects(sha)
            if blocked:
                return SourceError(path, f"needs {kind} {sha[:12]}, but {blocked}")
            if self.is_partial():
                return SourceError(path, f"needs {kind} {sha[:12]}, which is not in this partial "
                                   f"clone; fetch it ({self.command(f'cat-file -e {sha}')})")
            return SourceError(path, f"needs {kind} {sha[:12]}, which is missing from "
                               f"{self.shown} (a damaged clone?)")
        return SourceError(path, f"cannot read {kind} {sha[:12]}: {self._says(exc)}")

    def unreadable_objects(self, sha: str) -> str | None:
        """``"$GIT_DIR/objects/50 cannot be read (Permission denied)"``: a place in the
        object store (or an alternate's) that could hold ``sha`` and cannot be read,
        or None. git reports an object behind an unreadable directory or pack as
        missing; a missing object says "damaged clone" or "fetch it", which would
        send the user the wrong way. Places in the clone are named from ``$GIT_DIR``
        (``_scrub``); an alternate elsewhere by its path."""
        objects = Path(self.common_dir) / "objects"
        dirs = [objects]
        try:
            dirs += _alternates(objects)
        except OSError as exc:
            return f"$GIT_DIR/objects/info/alternates cannot be read ({exc.strerror})"
        for where in dirs:
            found = _unreadable_loose(where, sha) or _unreadable_packs(where / "pack")
            if found:
                return self._scrub(found)
        return None

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


def _alternates(objects: Path) -> list[Path]:
    """The object directories ``objects/info/alternates`` lends (``OSError`` when that
    file is there but cannot be read)."""
    try:
        text = (objects / "info" / "alternates").read_text(encoding="utf-8", errors="replace")
    except (FileNotFoundError, NotADirectoryError):
        return []
    lines = (line.strip() for line in text.splitlines())
    return [objects / line for line in lines if line and not line.startswith("#")]


def _unreadable_loose(objects: Path, sha: str) -> str | None:
    """Why the loose object ``sha`` could not be read although it may be there."""
    fan_out = objects / sha[:2]
    loose = fan_out / sha[2:]
    for parent, child in ((objects, fan_out), (fan_out, loose)):
        try:
            os.stat(child)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:  # the parent cannot be searched
            return f"{parent} cannot be read ({exc.strerror})"
    try:
        os.close(os.open(loose, os.O_RDONLY | os.O_NONBLOCK))
    except OSError as exc:
        return f"{loose} cannot be read ({exc.strerror})"
    return None


def _unreadable_packs(pack: Path) -> str | None:
    """A pack directory, pack or index that cannot be read (git skips what it cannot
    open and answers from the rest)."""
    try:
        names = sorted(os.listdir(pack))
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        return f"{pack} cannot be read ({exc.strerror})"
    for name in names:
        if name.endswith((".pack", ".idx")):
            try:
                os.close(os.open(pack / name, os.O_RDONLY | os.O_NONBLOCK))
            except OSError as exc:
                return f"{pack / name} cannot be read ({exc.strerror})"
    return None


class MissingBlob(MissingFile):
    """The path is not in the commit's tree (a ``fail``, like any missing pinned file)."""

    def __init__(self, path: str, commit: str) -> None:
        SourceError.__init__(self, path, f"is not in commit {commit[:12]}")


class GitSource(Source):
    """The files of one commit: ``read`` returns blob bytes, whatever the work tree holds.

    Every tree on the way to a file and the file's blob are checked against their
    ids (``Clone.read_object``), as the commit was when the source was made: the
    bytes returned are the ones the commit id fixes, or a ``SourceError``.
    """

    kind = "git"

    def __init__(self, clone: Clone, hexsha: str, tree: str) -> None:
        self.clone = clone
        self.hexsha = hexsha
        self.tree = tree
        self.location = f"{clone.path}@{self.hexsha}"
        self._entries: dict[str, TreeItem] | None = None

    def _index(self) -> dict[str, TreeItem]:
        """Every non-tree entry of the commit, by path (one ``ls-tree``-like walk)."""
        if self._entries is None:
            entries: dict[str, TreeItem] = {}
            pending = [("", self.tree)]
            while pending:
                prefix, tree = pending.pop()
                for item in self._children(prefix.rstrip("/") or ".", tree):
                    path = prefix + item.name
                    if item.kind == "tree":
                        pending.append((path + "/", item.hexsha))
                    else:
                        entries[path] = item
            self._entries = entries
        return self._entries

    def _children(self, path: str, tree: str) -> list[TreeItem]:
        """The entries of one verified tree object; ``SourceError`` (for ``path``)
        when git cannot give it or its bytes do not match its id."""
        try:
            return self.clone.tree(tree)
        except ObjectMismatch as exc:
            raise SourceError(path, f"cannot be trusted: {exc}") from None
        except Exception as exc:  # a tree a partial clone lacks, a corrupt object store
            raise self.clone.unreadable(path, "tree", tree, exc) from None

    def _item(self, path: str) -> TreeItem | None:
        """The tree entry at ``path``, or None: walks only the subtrees on the way."""
        item: TreeItem | None = TreeItem("", _TREE, self.tree)
        for part in path.split("/"):
            if item is None or item.kind != "tree":
                return None
            item = next((c for c in self._children(path, item.hexsha) if c.name == part), None)
        return item

    def _lookup(self, path: str) -> TreeItem | None:
        """One path's non-tree entry (from the full index once it exists)."""
        if self._entries is not None:
            return self._entries.get(path)
        item = self._item(path)
        if item is None or item.kind == "tree":
            return None
        return item

    def _entry(self, path: str) -> TreeItem:
        self._check_path(path)
        entry = self._lookup(path)
        if entry is None:
            if self._is_tree(path):
                raise SourceError(path, f"is a directory in commit {self.hexsha[:12]}")
            raise MissingBlob(path, self.hexsha)
        kind = entry.mode & _FORMAT
        if kind == _SYMLINK:
            raise SourceError(path, f"is a symbolic link in commit {self.hexsha[:12]}; not followed")
        if kind == _GITLINK:
            raise SourceError(path, f"is a submodule in commit {self.hexsha[:12]}; not read")
        return entry

    def read(self, path: str) -> bytes:
        blob = self._entry(path).hexsha
        try:
            size = self.clone.object_size(blob)  # the header only: nothing is loaded yet
        except Exception as exc:
            raise self.clone.unreadable(path, "blob", blob, exc) from None
        if size > MAX_READ:  # as for a file of a directory: an error, never exhausted memory
            raise SourceError(path, too_large(size))
        try:
            return self.clone.read_object(blob, "blob", size)
        except ObjectMismatch as exc:
            raise SourceError(path, f"cannot be trusted: {exc}") from None
        except Exception as exc:
            raise self.clone.unreadable(path, "blob", blob, exc) from None

    def _is_tree(self, path: str) -> bool:
        item = self._item(path)
        return item is not None and item.kind == "tree"

    def exists(self, path: str) -> bool:
        if self._check_safe(path):
            return self._lookup(path) is not None or self._is_tree(path)
        return False

    @staticmethod
    def _check_safe(path: str) -> bool:
        from pp1audit.manifest.paths import path_problem

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
            blob_id = object_id("blob", data)
        for path, entry in sorted(self._index().items()):
            if entry.mode & _FORMAT in (_SYMLINK, _GITLINK):
                continue
            if blob_id is not None:
                if entry.hexsha == blob_id:
                    found.append(path)
            elif hashlib.sha256(self.read(path)).hexdigest() == sha256:
                found.append(path)
        return found
