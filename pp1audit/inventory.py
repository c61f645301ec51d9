"""Inventories: what entries a target holds, with their type, size and mtime.

RECORD verification, the tree digest and the bytecode check all need more than
``Source.iter_files`` gives: the *type* of every entry (a FIFO must be reported,
never opened), its size (to hash the largest files first) and, for installed
trees, the source files' mtimes (which decide whether Python loads a ``.pyc``).
An ``Inventory`` lists that once per run, without opening any file, for a
directory (``os.scandir``: one ``lstat`` per entry) or a wheel (the zip's
central directory). Logical paths are relative to the target root, as
everywhere in pp1audit.
"""

from __future__ import annotations

import os
import stat
import struct
from collections.abc import Callable
from dataclasses import dataclass

from pp1audit.errors import TargetError
from pp1audit.safeio import Elsewhere, check_place, is_within
from pp1audit.sources import DEVICE as DEVICE  # the type names live with the sources
from pp1audit.sources import DIR as DIR
from pp1audit.sources import FIFO as FIFO
from pp1audit.sources import FILE as FILE
from pp1audit.sources import OTHER as OTHER
from pp1audit.sources import SOCKET as SOCKET
from pp1audit.sources import SYMLINK as SYMLINK
from pp1audit.sources import (
    DirectorySource,
    Source,
    WheelSource,
    elsewhere,
    install_clash,
    installed_path,
    wheel_layout,
)
from pp1audit.sources import kind_of_mode as kind_of_mode
from pp1audit.zipindex import Member

UNREADABLE = "entry that could not be examined"
"""The kind of an entry the listing found but could not ``lstat`` or, for a
directory, list: its ``error`` says why. Never silently dropped: what such a
directory holds was not verified, and a tree digest without it is not the tree's."""


_DIR_FLAGS = getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | os.O_CLOEXEC
"""How a directory is pinned while its entries are examined through it (``O_PATH``
where there is one: no read permission needed, as ``lstat`` needs none)."""


class _Moved(Exception):
    """A directory to list is no longer the one its parent listed; the message says
    what it is now (the walk reports it as an ``UNREADABLE`` entry, not listed)."""


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


@dataclass(frozen=True, slots=True)
class Entry:
    """One non-directory entry: logical path, type, size, and mtime on disk (None in a wheel)."""

    path: str
    kind: str
    size: int
    mtime: int | None = None
    ref: str = ""
    """Where to read it: an absolute OS path, or the zip member name."""
    link: str | None = None
    """A symbolic link's target (never followed)."""
    error: str | None = None
    """Why an ``UNREADABLE`` entry could not be examined (a directory's path ends in ``/``)."""
    ident: tuple[int, int] | None = None
    """``(st_dev, st_ino)`` as listed on disk: the file later opened must be this one,
    or a directory on its path was swapped (for a symlink leading out) since."""
    root: str | None = None
    """The resolved root it was listed in: where a swapped path leads is judged against it."""


class Inventory:
    """Lists entries of a directory or a wheel; never opens a file."""

    kind: str
    location: str

    def children(self, top: str = "") -> list[tuple[str, str]]:
        """``(name, kind)`` of the entries directly in ``top`` ('' = the root), sorted."""
        raise NotImplementedError

    def walk(self, top: str, found: Callable[[Entry], None] | None = None) -> list[Entry]:
        """Every non-directory entry below directory ``top``, sorted by path.

        ``found`` is called with each entry as soon as it is listed (in no
        particular order), so hashing can start before the listing ends.
        """
        raise NotImplementedError

    def entry(self, path: str) -> Entry | None:
        """The entry at ``path``, or None when absent (``..`` paths allowed on disk only)."""
        raise NotImplementedError


class DirInventory(Inventory):
    """A directory on disk (the target root: site-packages, usually)."""

    kind = "directory"

    def __init__(self, root: str) -> None:
        self.root = os.path.realpath(root)
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

        Each directory is listed through a descriptor that must be the directory
        its parent listed (``_open_dir``), and each entry keeps its identity
        (``Entry.ident``) for the hashing to hold the file it opens to: a
        directory swapped for a symlink while the run goes on is never listed
        or read through."""
        start = self._os(top)
        real = os.path.realpath(start)
        if not is_within(real, self.root):
            raise TargetError(f"{top.rstrip('/')}/ resolves outside the target root ({real}): "
                              "symlink escape, not audited")
        out: list[Entry] = []
        stack: list[tuple[str, str, tuple[int, int] | None]] = [
            (start, top.rstrip("/") + "/" if top else "", None)]

        def add(entry: Entry) -> None:
            out.append(entry)
            if found is not None:
                found(entry)

        while stack:
            real_dir, prefix, ident = stack.pop()
            try:
                self._list(real_dir, prefix, ident, stack, add)
            except FileNotFoundError:  # removed since it was listed
                continue
            except _Moved as exc:
                if ident is None:
                    raise TargetError(f"{top.rstrip('/')}/ {exc}") from None
                add(Entry(prefix, UNREADABLE, 0, None, real_dir, None, str(exc)))
            except OSError as exc:  # say no permission: nothing below it can be judged
                if not prefix:
                    raise TargetError(f"{real_dir}: cannot list the target root: {exc.strerror}") from None
                add(Entry(prefix, UNREADABLE, 0, None, real_dir, None,
                          f"cannot list this directory: {exc.strerror}"))
        out.sort(key=lambda e: e.path)
        return out

    def _open_dir(self, path: str, ident: tuple[int, int] | None) -> int:
        """A descriptor (``O_PATH``: it needs no read permission, so an execute-only
        directory is still pinned) on the directory at ``path``: the one its parent
        listed as ``ident``, or (for the top, ``ident`` None, followed as Python
        follows it) one inside the root.

        Why: a path is resolved anew at every use, so a directory swapped for a
        symlink after its parent was listed would be examined where the link
        leads. ``O_NOFOLLOW`` refuses a swapped last component; for an earlier
        one, ``safeio.check_place`` (as for files): the identity settles it when
        it matches, else the kernel says where the descriptor leads, and outside
        is ``_Moved`` saying where. ``OSError`` from the system
        (``FileNotFoundError``: gone)."""
        flags = _DIR_FLAGS | (0 if ident is None else os.O_NOFOLLOW)
        try:
            fd = os.open(path, flags)
        except NotADirectoryError:
            if ident is None:
                raise
            raise _Moved("replaced since it was listed: no longer a directory (a symlink?); "
                         "not followed") from None
        try:
            check_place(fd, os.fstat(fd), self.root, ident)
        except Elsewhere as exc:
            os.close(fd)
            raise _Moved(elsewhere(exc.where, "not listed")) from None
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _list(self, real_dir: str, prefix: str, ident: tuple[int, int] | None,
              stack: list[tuple[str, str, tuple[int, int] | None]],
              add: Callable[[Entry], None]) -> None:
        """The entries of the directory at ``real_dir``, pinned by ``_open_dir``:
        files to ``add``, directories onto ``stack`` with their identity.

        The names come from ``scandir`` (an ``O_PATH`` descriptor cannot be read),
        everything about them from the pinned descriptor: were the path swapped
        in between, a name found elsewhere is absent here (skipped) or examined
        here, so no entry ever describes a file outside the directory listed."""
        fd = self._open_dir(real_dir, ident)
        try:
            self._examine(fd, real_dir, prefix, stack, add)
        finally:
            os.close(fd)

    def _examine(self, fd: int, real_dir: str, prefix: str,
                 stack: list[tuple[str, str, tuple[int, int] | None]],
                 add: Callable[[Entry], None]) -> None:
        """``_list``'s loop: each name ``scandir`` finds, examined in ``fd``."""
        with os.scandir(real_dir) as it:
            for d in it:
                path = f"{real_dir}/{d.name}" if real_dir != "/" else f"/{d.name}"
                try:
                    st = os.stat(d.name, dir_fd=fd, follow_symlinks=False)
                except FileNotFoundError:
                    continue
                except OSError as exc:
                    add(Entry(prefix + d.name, UNREADABLE, 0, None, path, None,
                              f"cannot examine it: {exc.strerror}"))
                    continue
                kind = kind_of_mode(st.st_mode)
                if kind == DIR:
                    stack.append((path, prefix + d.name + "/", (st.st_dev, st.st_ino)))
                    continue
                link = _readlink_at(d.name, fd) if kind == SYMLINK else None
                add(Entry(prefix + d.name, kind, st.st_size, int(st.st_mtime), path, link,
                          ident=(st.st_dev, st.st_ino), root=self.root))

    def entry(self, path: str) -> Entry | None:
        """See ``Inventory.entry``. An entry inside the root is examined in its
        directory opened first and found inside the root: a directory on its
        path swapped for a symlink leading out makes it ``UNREADABLE``, never
        the outside file's entry (whose identity the hashing would then hold to)."""
        real = self._os(path)
        if not self.inside(path) or real == self.root:
            return self._lstat_entry(path, real)
        parent, name = os.path.split(real)
        try:
            fd = os.open(parent, _DIR_FLAGS)
        except OSError:
            return None
        try:
            try:
                check_place(fd, None, self.root, None)
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except Elsewhere as exc:
                return Entry(path, UNREADABLE, 0, None, real, None, elsewhere(f"{exc.where}/{name}"))
            except OSError:
                return None
            kind = kind_of_mode(st.st_mode)
            link = _readlink_at(name, fd) if kind == SYMLINK else None
        finally:
            os.close(fd)
        return Entry(path, kind, st.st_size, int(st.st_mtime), real, link,
                     ident=(st.st_dev, st.st_ino), root=self.root)

    def _lstat_entry(self, path: str, real: str) -> Entry | None:
        """An entry outside the root (a RECORD row ``../../bin/x`` the caller admitted) or
        the root itself: examined by its path."""
        try:
            st = os.lstat(real)
        except OSError:
            return None
        kind = kind_of_mode(st.st_mode)
        link = _readlink(real) if kind == SYMLINK else None
        return Entry(path, kind, st.st_size, int(st.st_mtime), real, link, ident=(st.st_dev, st.st_ino))


class WheelInventory(Inventory):
    """A wheel's members, from the zip central directory (nothing decompressed).

    Entries are at the paths pip installs them to (``installed_path``: a
    ``<dist>.data/purelib/`` or ``platlib/`` member at its place in site-packages;
    ``ref`` is the member name), so RECORD, the tree digest and the bytecode check
    judge the tree the wheel installs. A path several members install to is one
    ``UNREADABLE`` entry naming them.

    ``escaping`` (member name -> why: ``ZipIndex.escaping``) is found here, from
    the central directory read once: the RECORD checks fail those members and the
    hashing leaves them unread, and reopening the wheel for it could find another
    wheel than the one listed.
    """

    kind = "wheel"

    def __init__(self, wheel: str) -> None:
        from pp1audit.zipindex import ZipError, ZipIndex

        self.location = wheel
        try:
            index = ZipIndex(wheel)
        except ZipError as exc:
            raise TargetError(f"{wheel}: not a readable wheel ({exc})") from None
        try:
            members = [m for name in index.names() if (m := index.member(name)) is not None]
            self.escaping: dict[str, str] = index.escaping()
        except (OSError, ZipError, ValueError, struct.error) as exc:  # a damaged directory
            raise TargetError(f"{wheel}: not a readable wheel ({exc})") from None
        finally:
            index.close()
        self._entries: dict[str, Entry] = {}
        self._dirs: set[str] = set()
        if index.moves:
            self._lay_out(members)
            return
        for m in members:  # every member installs at its own name: the common case, quick
            if m.name.endswith("/"):
                self._dirs.add(m.name.rstrip("/"))
            else:
                self._add(self._entry(m.name, [m]))

    def _lay_out(self, members: list[Member]) -> None:
        """Entries at the paths pip installs the members to (``wheel_layout``)."""
        by_name = {m.name: m for m in members}
        self._dirs.update(p.rstrip("/") for n in by_name if n.endswith("/") and (p := installed_path(n)))
        for path, names in wheel_layout(by_name).items():
            self._add(self._entry(path, [by_name[n] for n in names]))

    def _add(self, entry: Entry) -> None:
        self._entries[entry.path] = entry
        parts = entry.path.split("/")
        for i in range(1, len(parts)):
            self._dirs.add("/".join(parts[:i]))

    @staticmethod
    def _entry(path: str, members: list[Member]) -> Entry:
        """The entry at installed path ``path``: its member's, or ``UNREADABLE`` naming
        every member when several install there (what is left depends on the
        installer's write order: neither is the installed file for sure)."""
        if len(members) > 1:
            return Entry(path, UNREADABLE, 0, None, members[-1].name, None,
                         install_clash([m.name for m in members]))
        m = members[0]
        mode = m.external_attr >> 16
        kind = kind_of_mode(mode) if stat.S_IFMT(mode) else FILE
        return Entry(path, kind, m.size, None, m.name)

    def inside(self, path: str) -> bool:
        """Paths in a wheel are members: ``..`` or absolute names are never inside."""
        return not (path.startswith("/") or ".." in path.split("/"))

    def children(self, top: str = "") -> list[tuple[str, str]]:
        prefix = top.rstrip("/") + "/" if top else ""
        seen: dict[str, str] = {}
        for name in self._entries:
            if name.startswith(prefix):
                head = name[len(prefix):].split("/", 1)
                seen[head[0]] = DIR if len(head) > 1 else self._entries[name].kind
        for d in self._dirs:
            if d.startswith(prefix) and "/" not in d[len(prefix):] and d[len(prefix):]:
                seen.setdefault(d[len(prefix):], DIR)
        return sorted(seen.items())

    def walk(self, top: str, found: Callable[[Entry], None] | None = None) -> list[Entry]:
        prefix = top.rstrip("/") + "/"
        out = [self._entries[n] for n in sorted(self._entries) if n.startswith(prefix)]
        if found is not None:
            for e in out:
                found(e)
        return out

    def entry(self, path: str) -> Entry | None:
        return self._entries.get(path)


def _split_as_given(location: str) -> tuple[str, str]:
    """The directory a path's last component is in, resolved as the OS resolves it,
    and that component: the name Python finds the package directory by.

    Not ``os.path.abspath``, which drops ``foo/..`` as text: with ``foo`` a
    symlink, the OS (and Python's import) goes to the link target's parent, so
    ``site/foo/../vllm`` must be judged where the other checks read it. A
    trailing ``/`` or ``/.`` names the same directory; a last component ``..``
    names no entry of a parent, so the whole path is resolved.
    """
    path = location if os.path.isabs(location) else os.path.join(os.getcwd(), location)
    while True:
        stripped = path.rstrip("/") or "/"
        if os.path.basename(stripped) != ".":
            break
        path = os.path.dirname(stripped)
    if os.path.basename(stripped) in ("..", ""):
        stripped = os.path.realpath(stripped)
    return os.path.realpath(os.path.dirname(stripped)), os.path.basename(stripped)


def inventory_for(source: Source, package: str) -> Inventory:
    """The inventory of the tree ``source`` reads, rooted where RECORD paths start.

    A package directory given as the target (``DirectorySource`` with a mount)
    is audited from its parent, where its ``*.dist-info`` lives: the parent of
    the path as given, which is where Python finds the package by that name.
    Were it the parent of where a symlinked package directory leads, a link
    ``site/pkg`` to ``elsewhere/pkg`` with a copied dist-info beside its target
    would be audited from ``elsewhere``: the tree would pass and the ``.pth``
    files Python runs from ``site`` would go unseen. From ``site`` the listing
    finds the link leading outside: the same symlink escape as ``check site``.
    """
    if isinstance(source, WheelSource):
        return WheelInventory(source.location)
    if isinstance(source, DirectorySource):
        if source.mount is None:
            return DirInventory(source.base)
        parent, name = _split_as_given(source.location)
        if name != package:
            raise TargetError(
                f"{source.location}: the package directory is not named '{package}'; "
                "give the site-packages directory for RECORD verification"
            )
        return DirInventory(parent)
    raise TargetError(f"{source.location}: RECORD verification needs a directory or a wheel")
