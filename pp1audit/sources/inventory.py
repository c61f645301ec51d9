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
from collections.abc import Callable
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
    DirectorySource,
    Source,
    WheelSource,
    install_clash,
    installed_path,
    wheel_layout,
)
from pp1audit.sources import kind_of_mode as kind_of_mode
from pp1audit.sources.safeio import realpath
from pp1audit.sources.wheel import Zip, ZipError

if TYPE_CHECKING:
    import zipfile

from pp1audit.sources.dirinventory import DirInventory
from pp1audit.sources.entries import MAX_DEPTH, REPLACED, UNREADABLE, Entry, Inventory, what_it_is


class WheelInventory(Inventory):
    """A wheel's members, from the zip central directory (nothing decompressed).

    Entries are at the paths pip installs them to (``installed_path``: a
    ``<dist>.data/purelib/`` or ``platlib/`` member at its place in site-packages;
    ``ref`` is the member name), so RECORD, the tree digest and the bytecode check
    judge the tree the wheel installs. A path several members install to is one
    ``UNREADABLE`` entry naming them.

    ``wheel`` is the open archive (``WheelSource.zip``), or a path opened here; the
    hashing reads the members from the same open archive (``zip``), so RECORD, the
    escaping members (``escaping``: member name -> why, ``Zip.escaping``) and the
    digests all come from the wheel that was listed, never from one put at its path since.
    """

    kind = "wheel"

    def __init__(self, wheel: str | Zip) -> None:
        try:
            self.zip = wheel if isinstance(wheel, Zip) else Zip(wheel)
        except ZipError as exc:
            raise TargetError(f"{wheel}: not a readable wheel ({exc})") from None
        self.location = self.zip.path
        self.escaping: dict[str, str] = self.zip.escaping()
        self._entries: dict[str, Entry] = {}
        self._dirs: set[str] = set()
        members = self.zip.zf.infolist()
        if self.zip.moves:
            self._lay_out(members)
            return
        for m in members:  # every member installs at its own name: the common case, quick
            if m.filename.endswith("/"):
                self._dirs.add(m.filename.rstrip("/"))
            else:
                self._add(self._entry(m.filename, [m]))

    def _lay_out(self, members: list[zipfile.ZipInfo]) -> None:
        """Entries at the paths pip installs the members to (``wheel_layout``)."""
        by_name = {m.filename: m for m in members}
        self._dirs.update(p.rstrip("/") for n in by_name if n.endswith("/") and (p := installed_path(n)))
        for path, names in wheel_layout(by_name).items():
            self._add(self._entry(path, [by_name[n] for n in names]))

    def _add(self, entry: Entry) -> None:
        self._entries[entry.path] = entry
        parts = entry.path.split("/")
        for i in range(1, len(parts)):
            self._dirs.add("/".join(parts[:i]))

    @staticmethod
    def _entry(path: str, members: list[zipfile.ZipInfo]) -> Entry:
        """The entry at installed path ``path``: its member's, or ``UNREADABLE`` naming
        every member when several install there (what is left depends on the
        installer's write order: neither is the installed file for sure)."""
        if len(members) > 1:
            return Entry(path, UNREADABLE, 0, None, members[-1].filename, None,
                         install_clash([m.filename for m in members]))
        m = members[0]
        mode = m.external_attr >> 16
        kind = kind_of_mode(mode) if stat.S_IFMT(mode) else FILE
        return Entry(path, kind, m.file_size, None, m.filename)

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
        stripped = realpath(stripped)
    return realpath(os.path.dirname(stripped)), os.path.basename(stripped)


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
        return WheelInventory(source.zip)
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


__all__ = ["DEVICE", "DIR", "FIFO", "FILE", "MAX_DEPTH", "OTHER", "REPLACED", "SOCKET", "SYMLINK",
           "UNREADABLE",
           "DirInventory", "Entry", "Inventory", "WheelInventory", "inventory_for", "kind_of_mode",
           "what_it_is"]
