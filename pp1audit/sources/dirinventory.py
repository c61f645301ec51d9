"""A directory's inventory: a walk on pinned descriptors that never follows a link
out of the root and notices an entry replaced while it is listed."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise
from typing import TYPE_CHECKING

from pp1audit.errors import TargetError
from pp1audit.sources import DEVICE as DEVICE  # the type names live with the sources
from pp1audit.sources import DIR as DIR
from pp1audit.sources import FIFO as FIFO
from pp1audit.sources import FILE as FILE
from pp1audit.sources import OTHER as OTHER
from pp1audit.sources import SOCKET as SOCKET
from pp1audit.sources import SYMLINK as SYMLINK
from pp1audit.sources import (
    elsewhere,
)
from pp1audit.sources import kind_of_mode as kind_of_mode
from pp1audit.sources.safeio import Elsewhere, check_place, fd_path, is_within, realpath

if TYPE_CHECKING:
    pass

from pp1audit.sources.entries import MAX_DEPTH, REPLACED, UNREADABLE, Entry, Inventory

_PIN_FLAGS = getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | os.O_CLOEXEC
"""How ``DirInventory.entry`` holds the directories on a path while it steps down
them (``O_PATH`` where there is one: no read permission needed, as ``lstat``
needs none, so a row below an execute-only directory is still examined)."""


_LIST_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
"""How the walk opens a directory it lists: readable, since ``os.scandir`` reads
the very descriptor that was opened (and checked)."""


_NOT_A_DIR = (errno.ENOTDIR, errno.ELOOP)
"""What ``O_NOFOLLOW | O_DIRECTORY`` gives for a name that is no directory now:
Linux says ``ENOTDIR`` for a symlink too, other systems ``ELOOP``."""


MAX_LINKS = 40
"""Most symbolic links ``DirInventory.entry`` follows on one path (as Linux's
``MAXSYMLINKS``): past it the path is a loop."""


class _Moved(Exception):
    """A directory to list is no longer the one its parent listed; the message says
    what it is now (the walk reports it as an ``UNREADABLE`` entry, not listed)."""


class _TopMoved(Exception):
    """The walk's top (the package directory), or a directory above it up to the
    root, is no longer where the walk found it: nothing listed through it is known
    to be in the root, so the whole walk is refused (``TargetError``); the message
    says where the top's path leads now."""


class _Through(Exception):
    """A directory on a path ``entry`` looks up is a symbolic link: ``rel`` is its
    path below the root; nothing was followed."""

    def __init__(self, rel: str) -> None:
        super().__init__(rel)
        self.rel = rel


@dataclass(slots=True)
class _Level:
    """One directory the walk holds open while it lists its subdirectories."""

    fd: int
    path: str
    """Its OS path: where its entries' ``ref`` start (nothing is opened by it)."""
    prefix: str
    """Its logical path, ``/``-terminated ('' for the root)."""
    name: str
    """Its name in the directory one level up ('' for the root)."""
    ident: tuple[int, int]
    """``(st_dev, st_ino)`` as that directory listed it (the root: as opened)."""
    pending: list[tuple[str, tuple[int, int]]]
    """Its subdirectories not walked yet, with the identity listed (none for the
    levels above the top: they are held only to check it is in place)."""


def _ident(fd: int) -> tuple[int, int]:
    """``(st_dev, st_ino)`` of an open descriptor."""
    st = os.fstat(fd)
    return st.st_dev, st.st_ino


def _readlink(path: str) -> str | None:
    try:
        return os.readlink(path)
    except OSError:
        return None


def _readlink_at(name: str, dir_fd: int) -> str | None:
    """A symlink's target, read in the directory open as ``dir_fd``."""
    try:
        return os.readlink(name, dir_fd=dir_fd)
    except OSError:
        return None


def _out_of_place(levels: list[_Level]) -> int | None:
    """The index of the first level no longer where it was found, or None: the
    first (the root) still at its resolved path, each other still at its name in
    the level above, as that one listed it. Asked in the descriptors held (the
    root alone by its path): every directory from the root down, the package
    directory included, so a swap of any of them is seen."""
    root = levels[0]
    try:
        st = os.stat(root.path, follow_symlinks=False)
    except OSError:
        return 0
    if (st.st_dev, st.st_ino) != root.ident:
        return 0
    for i, (above, level) in enumerate(pairwise(levels), start=1):
        try:
            st = os.stat(level.name, dir_fd=above.fd, follow_symlinks=False)
        except OSError:
            return i
        if (st.st_dev, st.st_ino) != level.ident:
            return i
    return None


def _entry_in(fd: int, name: str, path: str, real: str, root: str) -> Entry | None:
    """The entry ``name`` of the directory held by ``fd`` (``lstat``ed there, a link read
    there, never followed), its identity and ``root`` recorded for the hashing's open."""
    try:
        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except OSError as exc:
        return _not_examined(path, real, exc)
    kind = kind_of_mode(st.st_mode)
    link = _readlink_at(name, fd) if kind == SYMLINK else None
    return Entry(path, kind, st.st_size, int(st.st_mtime), real, link,
                 ident=(st.st_dev, st.st_ino), root=root)


def _not_examined(path: str, real: str, exc: OSError) -> Entry | None:
    """``entry``'s answer when the system refused: None for a path that is not
    there (absent, or a file where a directory should be), else an ``UNREADABLE``
    entry saying why (no permission is not "missing from the target")."""
    if isinstance(exc, (FileNotFoundError, NotADirectoryError)):
        return None
    return Entry(path, UNREADABLE, 0, None, real, None, f"cannot examine it: {exc.strerror}")


def _out_of_descriptors(exc: OSError, path: str) -> None:
    """A ``TargetError`` (the run's ``record`` error, saying so) when the process has
    no descriptor left: a limit of the run, not a directory of the tree that
    cannot be listed, so it must not read as one."""
    if exc.errno in (errno.EMFILE, errno.ENFILE):
        raise TargetError(f"{path}: {exc.strerror} while listing the package: the process "
                          "may open too few files (raise `ulimit -n`) and run again") from None


def _unlisted(prefix: str, path: str, why: str) -> Entry:
    """The ``UNREADABLE`` entry of a directory the walk did not list (``prefix``: its
    logical path, ``/``-terminated; ``path``: its OS path): what it holds is unknown."""
    return Entry(prefix, UNREADABLE, 0, None, path, None, why)


class DirInventory(Inventory):
    """A directory on disk (the target root: site-packages, usually)."""

    kind = "directory"

    def __init__(self, root: str) -> None:
        self.root = realpath(root)
        self.location = root

    def _os(self, path: str) -> str:
        return os.path.normpath(os.path.join(self.root, path)) if path else self.root

    def inside(self, path: str) -> bool:
        """True when ``path`` stays inside the root once normalised (``..`` and absolute)."""
        real = self._os(path)
        return is_within(real, self.root)

    def children(self, top: str = "") -> list[tuple[str, str]]:
        try:
            with os.scandir(self._os(top)) as it:
                out = []
                for d in it:
                    try:
                        kind = kind_of_mode(d.stat(follow_symlinks=False).st_mode)
                    except OSError:
                        continue
                    out.append((d.name, kind))
        except OSError:
            return []
        return sorted(out)

    def walk(self, top: str, found: Callable[[Entry], None] | None = None) -> list[Entry]:
        """See ``Inventory.walk``. Symlinks below ``top`` are entries, never followed;
        ``top`` itself (the package directory) is followed as Python follows it, but
        only within the root: one leading outside is a ``TargetError`` (the files
        of another tree, as the file checks call a symlink escape).

        ``top`` is the only directory opened by its path. It must be the directory
        found at its place by stepping down from the root (``_top_levels``), and
        the root and every directory on the way stay held: before each
        directory below it is opened, all of them, the top included, must still
        be where they were found (``_out_of_place``), and again once the listing
        ends. A top moved out of the root (and replaced by a link to it) while
        it is listed would otherwise be listed through its old descriptor and
        hashed through the link: that is a ``TargetError``, not a verdict.

        Every directory below the top is opened by name in its parent's
        descriptor (``O_NOFOLLOW``), must be the directory the parent listed
        (its identity), and is listed through that same descriptor; each entry
        keeps its identity (``Entry.ident``) for the hashing to hold the file it
        opens to. So a directory swapped for a symlink (or another directory)
        while the run goes on is never listed or read through, whether or not
        ``/proc`` can say where a descriptor leads."""
        start = self._os(top)
        real = realpath(start)
        if not is_within(real, self.root):
            raise TargetError(f"{top.rstrip('/')}/ resolves outside the target root ({real}): "
                              "symlink escape, not audited")
        out: list[Entry] = []

        def add(entry: Entry) -> None:
            out.append(entry)
            if found is not None:
                found(entry)

        prefix = top.rstrip("/") + "/" if top else ""
        try:
            levels = self._top_levels(start, real, prefix, add)
        except FileNotFoundError:  # removed since it was named
            return out
        except _Moved as exc:
            raise TargetError(f"{top.rstrip('/')}/ {exc}") from None
        except OSError as exc:  # say no permission: nothing below it can be judged
            _out_of_descriptors(exc, start)
            if not prefix:
                raise TargetError(f"{start}: cannot list the target root: {exc.strerror}") from None
            add(_unlisted(prefix, start, f"cannot list this directory: {exc.strerror}"))
            return out
        try:
            self._descend(levels, add)
            if _out_of_place(levels) is not None:  # moved after its last subdirectory was opened
                raise _TopMoved(self._where_now(start, "not audited"))
        except _TopMoved as exc:
            raise TargetError(f"{top.rstrip('/')}/ {exc}") from None
        finally:
            for level in levels:
                os.close(level.fd)
        out.sort(key=lambda e: e.path)
        return out

    def _top_levels(self, start: str, real: str, prefix: str,
                    add: Callable[[Entry], None]) -> list[_Level]:
        """The levels from the root down to the top (the last): the root held by its
        resolved path, each directory between opened in the one before, never
        through a symlink (``O_PATH``: held only for ``_out_of_place``), then the
        top, opened by its path (followed, as Python follows it), which must be
        the directory the level above holds at its name, and listed: files to
        ``add``, its subdirectories pending. ``_Moved`` when the top is not that
        directory or the kernel says its descriptor leads outside the root
        (``check_place``), ``OSError`` from the system. The caller closes them."""
        names = [p for p in os.path.relpath(real, self.root).split(os.sep) if p not in ("", ".")]
        levels: list[_Level] = []
        try:
            if names:
                fd = os.open(self.root, _PIN_FLAGS)
                levels.append(_Level(fd, self.root, "", "", _ident(fd), []))
            for name in names[:-1]:
                levels.append(self._pin_below(levels[-1], name))
            fd = os.open(start, _LIST_FLAGS)
            # A top that resolves to the root is the root's level: held by its resolved path.
            top = _Level(fd, start if names else self.root, prefix, names[-1] if names else "",
                         _ident(fd), [])
            levels.append(top)
            try:
                check_place(fd, None, self.root, None)
            except Elsewhere as exc:
                raise _Moved(elsewhere(exc.where, "not listed")) from None
            if _out_of_place(levels) is not None:  # not the directory found at its place
                raise _Moved(self._where_now(start))
            top.pending = self._list(fd, top.path, prefix, add)
            return levels
        except BaseException:
            for level in levels:
                os.close(level.fd)
            raise

    @staticmethod
    def _pin_below(above: _Level, name: str) -> _Level:
        """Directory ``name`` of ``above``, held (``O_PATH``) for ``_out_of_place`` only:
        opened in its descriptor, never through a symlink (one now there: ``_Moved``)."""
        try:
            fd = os.open(name, _PIN_FLAGS | os.O_NOFOLLOW, dir_fd=above.fd)
        except OSError as exc:
            if exc.errno in _NOT_A_DIR:
                raise _Moved(REPLACED) from None
            raise
        return _Level(fd, f"{above.path.rstrip('/')}/{name}", "", name, _ident(fd), [])

    def _descend(self, levels: list[_Level], add: Callable[[Entry], None]) -> None:
        """Every directory below the top (``levels[-1]``), depth first: a
        directory's subdirectories are walked while its descriptor stays open
        (each is opened in it), so the descriptors held are one per level, at
        most ``MAX_DEPTH`` + 1 below the root's, however many directories the
        tree has. The levels down to the top are left open (the caller checks
        them once more, and closes them); those it opened are closed, whatever
        happens."""
        top = len(levels) - 1
        try:
            while True:
                here = levels[-1]
                if here.pending:
                    name, ident = here.pending.pop()
                    if (child := self._enter(levels, top, name, ident, add)) is not None:
                        levels.append(child)
                elif len(levels) > top + 1:
                    os.close(levels.pop().fd)
                else:
                    return
        finally:
            while len(levels) > top + 1:
                os.close(levels.pop().fd)

    def _enter(self, levels: list[_Level], top: int, name: str, ident: tuple[int, int],
               add: Callable[[Entry], None]) -> _Level | None:
        """Subdirectory ``name`` of the innermost level, opened there and listed, or
        None when it was not (an ``UNREADABLE`` entry says why; gone: nothing).
        ``levels[top]`` is the walk's top: ``_TopMoved`` when it or a level above
        it is no longer in place."""
        parent = levels[-1]
        path = f"{parent.path.rstrip('/')}/{name}"
        prefix = parent.prefix + name + "/"
        if len(levels) - top > MAX_DEPTH:
            add(_unlisted(prefix, path, f"nested deeper than {MAX_DEPTH} directories"))
            return None
        fd = None
        try:
            fd = self._open_below(levels, top, name, ident, path)
            return _Level(fd, path, prefix, name, ident, self._list(fd, path, prefix, add))
        except BaseException as exc:
            if fd is not None:
                os.close(fd)
            if isinstance(exc, FileNotFoundError):  # removed since it was listed
                return None
            if isinstance(exc, _Moved):
                add(_unlisted(prefix, path, str(exc)))
                return None
            if not isinstance(exc, OSError):
                raise
            _out_of_descriptors(exc, path)  # else no permission: nothing below it can be judged
            add(_unlisted(prefix, path, f"cannot list this directory: {exc.strerror}"))
            return None

    def _open_below(self, levels: list[_Level], top: int, name: str, ident: tuple[int, int],
                    path: str) -> int:
        """A readable descriptor on directory ``name`` of the innermost level: opened
        in its descriptor, never through a symlink, the directory listed as
        ``ident``, with every level above still where it was listed, from the
        root down (``_out_of_place``): ``_TopMoved`` when the one out of place is
        the top (``levels[top]``) or above it.

        Why: a name resolved in the descriptor it was listed in cannot lead
        anywhere else, but an ancestor moved away since (``mv pkg/d …; ln -s
        /outside pkg/d``) takes the descriptors below it along: what is listed
        there is no longer at the paths its entries name. ``_Moved`` (naming
        where the path leads now, for the message only) or ``OSError`` from the
        system (``FileNotFoundError``: gone; ``PermissionError``: no read
        permission)."""
        flags = _LIST_FLAGS | os.O_NOFOLLOW
        try:
            fd = os.open(name, flags, dir_fd=levels[-1].fd)
        except OSError as exc:
            if exc.errno in _NOT_A_DIR:
                raise _Moved(REPLACED) from None
            raise
        try:
            moved = _out_of_place(levels)
            if moved is not None and moved <= top:
                raise _TopMoved(self._where_now(levels[top].path, "not audited"))
            if _ident(fd) != ident or moved is not None:
                raise _Moved(self._where_now(path))
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _where_now(self, path: str, undone: str = "not listed") -> str:
        """Why a directory no longer the one listed is not listed (or, the top, not
        audited): where its path leads now when that is outside the root (resolved
        for the wording only: nothing is opened there), else that it was replaced."""
        where = realpath(path)
        return elsewhere(None if is_within(where, self.root) else where, undone)

    def _list(self, fd: int, real_dir: str, prefix: str, add: Callable[[Entry], None]) -> list[
            tuple[str, tuple[int, int]]]:
        """The entries of the directory open as ``fd`` (its OS path ``real_dir``,
        for the entries' ``ref``): files to ``add`` as soon as each is examined,
        the subdirectories returned with their identity.

        Names and everything about them come from that one descriptor (``scandir``
        reads it, ``lstat`` is made in it), so no entry ever describes a file
        outside the directory that was checked. The listing is read to its end
        before any subdirectory is opened: its iterator holds a descriptor too."""
        subdirs: list[tuple[str, tuple[int, int]]] = []
        base = real_dir.rstrip("/")  # '' for '/'
        with os.scandir(fd) as it:
            for d in it:
                name = d.name
                path = f"{base}/{name}"
                try:
                    st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                except OSError as exc:
                    if (unread := _not_examined(prefix + name, path, exc)) is not None:
                        add(unread)
                    continue
                kind = kind_of_mode(st.st_mode)
                if kind == DIR:
                    subdirs.append((name, (st.st_dev, st.st_ino)))
                    continue
                link = _readlink_at(name, fd) if kind == SYMLINK else None
                add(Entry(prefix + name, kind, st.st_size, int(st.st_mtime), path, link,
                          ident=(st.st_dev, st.st_ino), root=self.root))
        return subdirs

    def entry(self, path: str) -> Entry | None:
        """See ``Inventory.entry``. An entry inside the root is examined in its
        directory, reached from the root one component at a time, each opened in
        the one before and never through a symlink: a directory on its path
        swapped for a symlink makes it ``UNREADABLE``, never the entry of the file
        where the link leads (whose identity the hashing would then hold to),
        whether or not ``/proc`` can say where a descriptor leads."""
        real = self._os(path)
        if not self.inside(path) or real == self.root:
            return self._lstat_entry(path, real)
        *dirs, name = os.path.relpath(real, self.root).split(os.sep)
        try:
            fd = self._open_path(dirs)
        except _Through as exc:
            return Entry(path, UNREADABLE, 0, None, real, None, self._through(exc.rel, real))
        except OSError as exc:
            return _not_examined(path, real, exc)
        try:
            return _entry_in(fd, name, path, real, self.root)
        finally:
            os.close(fd)

    def _open_path(self, dirs: list[str]) -> int:
        """A descriptor (``O_PATH``) on the directory ``dirs`` names below the root,
        resolved as the kernel (and so Python's import) resolves a path, but by
        pp1audit, one component at a time: each opened in the directory before
        with ``O_NOFOLLOW``, so every directory passed is a real one and the
        components passed are the real path of the one reached. A symbolic link
        on the way is read and its target put in front of the components left
        (an absolute one from ``/``); ``..`` is the directory's own parent. The
        directory reached must be inside the root (else ``_Through``, naming the
        first link followed; also past ``MAX_LINKS`` links); ``OSError`` when a
        component is absent or no directory. Two descriptors at most are held."""
        at = [p for p in self.root.split("/") if p]  # the real path of fd
        depth = len(at)
        todo = list(reversed(dirs))  # a stack: the next component last
        first: str | None = None  # the first link followed, as a path below the root
        links = 0
        fd = os.open(self.root, _PIN_FLAGS)
        try:
            while todo:
                part = todo.pop()
                if part in ("", "."):
                    continue
                flags = _PIN_FLAGS if part == ".." else _PIN_FLAGS | os.O_NOFOLLOW
                try:
                    nxt = os.open(part, flags, dir_fd=fd)
                except OSError as exc:
                    target = _readlink_at(part, fd) if exc.errno in _NOT_A_DIR else None
                    if target is None:
                        raise
                    links += 1
                    first = first or "/".join([*at[depth:], part])
                    if links > MAX_LINKS:
                        raise _Through(first) from None
                    todo.extend(reversed(target.split("/")))
                    if not target.startswith("/"):
                        continue  # resolved on from this directory
                    nxt, at = os.open("/", _PIN_FLAGS), []
                else:
                    if part != "..":
                        at.append(part)
                    elif at:
                        at.pop()
                os.close(fd)
                fd = nxt
            if not is_within("/" + "/".join(at), self.root):
                raise _Through(first or "")
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _through(self, rel: str, real: str) -> str:
        """Why an entry reached through the symlink ``rel`` is not examined: where its
        path leads when outside the root (the escape's wording, resolved for it
        only), else that the links loop (or changed while resolved): not followed."""
        parent, name = os.path.split(real)
        where = f"{realpath(parent)}/{name}"
        if not is_within(where, self.root):
            return elsewhere(where)
        return (f"reached through a symbolic link ({rel}/) that loops, or led outside the "
                "target root while it was resolved: not followed")

    def entry_outside(self, path: str, within: str) -> Entry | None:
        """The entry at ``path`` outside the root (a RECORD row ``../../../bin/x`` the
        caller admitted), found only inside the resolved directory ``within``.

        The caller resolved the row's directories once; a directory on the way swapped
        for a symlink since could take a lookup by path anywhere on the host. So the
        parent is opened (following links, as Python would) and asked where it leads
        (``/proc``), and the entry is ``lstat``ed in it: what it names is inside
        ``within`` or it is an ``UNREADABLE`` entry, never examined; its identity and
        ``within`` as its root bind the hashing's open to the same file (an identity
        that changed is judged by where the descriptor leads). Without ``/proc`` the
        caller's resolution is all there is."""
        real = self._os(path)
        parent, name = os.path.split(real)
        try:
            fd = os.open(parent, _PIN_FLAGS)
        except OSError as exc:
            return _not_examined(path, real, exc)
        try:
            where = fd_path(fd)
            led = None if where is None else os.path.join(where, name)
            if led is not None and (led == within or not is_within(led, within)):
                return Entry(path, UNREADABLE, 0, None, real, None,
                             f"leads outside the installation ({led}) since its directories "
                             "were resolved: not examined")
            return _entry_in(fd, name, path, real, within)
        finally:
            os.close(fd)

    def _lstat_entry(self, path: str, real: str) -> Entry | None:
        """An entry outside the root asked for by path (a RECORD row the caller admitted
        goes through ``entry_outside`` instead) or the root itself: examined by its path."""
        try:
            st = os.lstat(real)
        except OSError:
            return None
        kind = kind_of_mode(st.st_mode)
        link = _readlink(real) if kind == SYMLINK else None
        return Entry(path, kind, st.st_size, int(st.st_mtime), real, link, ident=(st.st_dev, st.st_ino))


