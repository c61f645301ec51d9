"""Sources: one small interface over "a tree of files" (directory or wheel).

Every check reads through a ``Source`` and so works on any of them. Logical paths
are relative POSIX paths from the target root (site-packages, or the top of a
wheel), exactly as a manifest writes them. A source refuses, with a
``SourceError`` the checks turn into an ``error`` status, anything it must never
open: a path escaping the root (symlinks resolved), FIFOs, sockets and devices.
"""

from __future__ import annotations

import os
import stat
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from pp1audit.errors import MissingFile, SourceError, TargetError
from pp1audit.manifest.paths import path_problem
from pp1audit.sources.safeio import Elsewhere, NotRegular, TooLarge, is_within, read_regular, realpath
from pp1audit.sources.wheel import Zip, ZipError, install_name

if TYPE_CHECKING:
    import zipfile

MAX_READ = 512 << 20
"""Largest file read whole (a file pin, a cited file): the biggest file of vLLM is
300 MB. A larger one (or a sparse 8 GB file planted at a cited path) is that
check's ``error``, never an exhausted memory; ``--record`` and the tree digest
hash any size in a stream."""


def too_large(size: int) -> str:
    """The phrase for a file over ``MAX_READ``, one wording for every source."""
    return f"is too large to read whole ({size:,} bytes; the limit is {MAX_READ >> 20} MiB)"


ESCAPE = "resolves outside the target root (symlink escape)"
"""Why a path is not read: one wording whether the escape was found by resolving the
path or, after a directory on it was swapped for a symlink, on the open descriptor."""


def elsewhere(where: str | None, undone: str = "not read") -> str:
    """Why an entry whose descriptor leads elsewhere (``safeio.Elsewhere``) is not
    used: one wording for the listing, the entries and the hashing. ``where`` is
    the real path the kernel found: an escape is never read. None when it cannot
    say: the entry is only known not to be the one listed, and ``undone`` says
    what was not done with it (a directory is "not listed")."""
    if where is None:
        return f"replaced since it was listed, and where it leads cannot be told; {undone}"
    return f"resolves outside the target root ({where}): symlink escape, not read"


FILE = "file"
DIR = "directory"
SYMLINK = "symbolic link"
FIFO = "FIFO"
SOCKET = "socket"
DEVICE = "device"
OTHER = "special file"


def kind_of_mode(mode: int) -> str:
    """Entry type name for an ``st_mode`` (the names appear in messages: "is a FIFO")."""
    if stat.S_ISREG(mode):
        return FILE
    if stat.S_ISDIR(mode):
        return DIR
    if stat.S_ISLNK(mode):
        return SYMLINK
    if stat.S_ISFIFO(mode):
        return FIFO
    if stat.S_ISSOCK(mode):
        return SOCKET
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return DEVICE
    return OTHER


class Source(ABC):
    """A read-only tree of files addressed by logical paths."""

    kind: str
    location: str

    @abstractmethod
    def read(self, path: str) -> bytes:
        """The whole content of a regular file; ``SourceError`` for anything else."""

    @abstractmethod
    def exists(self, path: str) -> bool:
        """True when ``path`` names an entry of any type (a FIFO exists too)."""

    @abstractmethod
    def iter_files(self, under: str = "") -> Iterator[str]:
        """Logical paths of every non-directory entry below ``under``, sorted."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release OS resources (open zip files); sources are context managers too."""

    def __enter__(self) -> Source:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @staticmethod
    def _check_path(path: str) -> None:
        problem = path_problem(path)
        if problem:
            raise SourceError(path, problem)


class DirectorySource(Source):
    """A directory on disk: site-packages, or the package directory itself.

    When the target is the package directory (``mount`` set to the package name),
    logical paths still start with the package name, so one manifest fits both
    ways of naming an installed package; nothing outside the package directory
    can then be read.
    """

    kind = "directory"

    def __init__(self, base: Path, mount: str | None = None) -> None:
        self.base = realpath(base)
        self.mount = mount
        self.location = str(base)

    def _real(self, path: str) -> str:
        self._check_path(path)
        rel = path
        if self.mount is not None:
            if path == self.mount:
                rel = ""
            elif path.startswith(self.mount + "/"):
                rel = path[len(self.mount) + 1 :]
            else:
                raise SourceError(path, f"outside the package directory '{self.mount}'")
        real = realpath(os.path.join(self.base, rel))
        if not is_within(real, self.base):
            raise SourceError(path, ESCAPE)
        return real

    def read(self, path: str) -> bytes:
        real = self._real(path)
        try:
            st = os.stat(real)
        except FileNotFoundError:
            raise MissingFile(path) from None
        except OSError as exc:
            raise SourceError(path, f"cannot stat: {exc.strerror}") from None
        if not stat.S_ISREG(st.st_mode):
            raise SourceError(path, f"is a {kind_of_mode(st.st_mode)}; not opened")
        try:
            # ``within``: a directory on the path swapped for a symlink since
            # ``_real`` resolved it is judged where the descriptor leads.
            return read_regular(real, MAX_READ, within=self.base)
        except NotRegular as exc:  # swapped after the stat: refused on the open descriptor
            raise SourceError(path, f"is a {kind_of_mode(exc.mode)}; not opened") from None
        except Elsewhere:
            raise SourceError(path, ESCAPE) from None
        except TooLarge as exc:
            raise SourceError(path, too_large(exc.size)) from None
        except OSError as exc:
            raise SourceError(path, f"cannot read: {exc.strerror}") from None

    def exists(self, path: str) -> bool:
        try:
            return os.path.lexists(self._real(path))
        except SourceError:
            return False

    def iter_files(self, under: str = "") -> Iterator[str]:
        if under:
            self._check_path(under.rstrip("/"))
        top = self.base
        prefix = ""
        if self.mount is not None:
            prefix = self.mount + "/"
        if under:
            if self.mount is not None and (under == self.mount or under.startswith(prefix)):
                sub = under[len(self.mount) :].lstrip("/")
            else:
                sub = under
                if self.mount is not None:
                    return
            top = os.path.join(self.base, sub)
            prefix = under.rstrip("/") + "/"
        out: list[str] = []
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames.sort()
            rel = os.path.relpath(dirpath, top)
            rel = "" if rel == "." else rel.replace(os.sep, "/") + "/"
            # os.walk lists symlinked directories in dirnames without descending:
            # report them as entries so nothing is silently hidden.
            out.extend(prefix + rel + d for d in dirnames if os.path.islink(os.path.join(dirpath, d)))
            out.extend(prefix + rel + f for f in filenames)
        yield from sorted(out)


LIB_SCHEMES = ("purelib", "platlib")
"""The ``<dist>.data/`` schemes that pip installs into site-packages itself."""


def _in_data_dir(name: str) -> bool:
    """pip's test for a member of a ``.data`` directory: its first segment ends in ``.data``
    (any such directory, not only the spec's ``<name>-<version>.data``)."""
    return name.split("/", 1)[0].endswith(".data")


def installed_path(name: str) -> str:
    """The logical path (from site-packages) where pip installs the wheel member ``name``.

    A wheel is judged as what it installs: pip normalises every name
    (``os.path.normpath``) and writes the members of ``<dist>.data/purelib/`` and
    ``<dist>.data/platlib/`` at the root of site-packages, after the root members,
    so ``vllm-0.31.0.data/purelib/vllm/a.py`` *is* ``vllm/a.py``. The other schemes
    (``scripts``, ``headers``, ``data``) install outside site-packages and keep their
    member name. A directory member keeps its ``/``; the scheme directory itself is ``''``.
    """
    path = install_name(name)
    if _in_data_dir(name):
        parts = path.split("/", 2)
        if len(parts) == 3 and parts[1] in LIB_SCHEMES:
            return parts[2]
    return path


def wheel_layout(names: Iterable[str]) -> dict[str, list[str]]:
    """Installed path -> the file members (directories skipped) pip writes there, in its
    write order: root members, then ``.data`` ones, each in archive order. Two or more
    at one path is a clash (``install_clash``)."""
    out: dict[str, list[str]] = {}
    later: list[str] = []
    for name in names:
        if name.endswith("/"):
            continue
        if _in_data_dir(name):
            later.append(name)
        else:
            out.setdefault(installed_path(name), []).append(name)
    for name in later:
        out.setdefault(installed_path(name), []).append(name)
    return out


def install_clash(members: list[str]) -> str:
    """Why a path that several wheel members install to is never read: which one is left
    depends on the installer's write order (pip keeps the last), so auditing either
    one could pass what the other installs. One wording for the source and the inventory."""
    return (f"installed from {len(members)} wheel members ({', '.join(members)}); "
            "the installer keeps the last one it writes: not read")


class WheelSource(Source):
    """A ``.whl`` read in place through ``zipfile`` (``sources.wheel.Zip``): nothing is
    extracted to disk, every member read is CRC-checked.

    Logical paths are where pip installs each member (``installed_path``): a
    ``.data/purelib/`` member is read at its path in site-packages, and a path two
    members install to is a ``SourceError`` naming both. The open archive is shared
    with the inventory and the hashing threads (``zip``): one central directory read.
    """

    kind = "wheel"

    def __init__(self, path: Path) -> None:
        self.location = str(path)
        self._layout: dict[str, list[str]] | None = None
        try:
            self.zip = Zip(path)
        except ZipError as exc:
            raise TargetError(f"{path}: not a readable wheel ({exc})") from None

    def _installed(self) -> dict[str, list[str]] | None:
        """Installed path -> members, or None when every member installs at its own
        name (``Zip.moves``: most wheels)."""
        if self._layout is None and self.zip.moves:
            self._layout = wheel_layout(self.zip.names)
        return self._layout

    def _members_at(self, path: str) -> list[str]:
        """The names of the members installing at ``path`` (unchecked when nothing moves)."""
        layout = self._installed()
        return [path] if layout is None else layout.get(path, [])

    def info(self, path: str) -> zipfile.ZipInfo:
        """The zip entry for ``path``; ``SourceError`` when absent, unsafe or a clash."""
        self._check_path(path)
        names = [] if path.endswith("/") else self._members_at(path)
        if len(names) > 1:
            raise SourceError(path, "is " + install_clash(names))
        member = self.zip.info(names[0]) if names else None
        if member is None:
            raise MissingFile(path)
        mode = member.external_attr >> 16
        if mode and stat.S_IFMT(mode) and not stat.S_ISREG(mode):
            raise SourceError(path, f"is a {kind_of_mode(mode)} in the wheel; not opened")
        return member

    def read(self, path: str) -> bytes:
        member = self.info(path)
        if member.file_size > MAX_READ:
            raise SourceError(path, too_large(member.file_size))
        try:
            return self.zip.read(member, MAX_READ)
        except ZipError as exc:
            raise SourceError(path, f"cannot read from the wheel: {exc}") from None

    def exists(self, path: str) -> bool:
        if path.endswith("/"):
            return False
        names = self._members_at(path)
        return len(names) > 1 or (len(names) == 1 and self.zip.info(names[0]) is not None)

    def iter_files(self, under: str = "") -> Iterator[str]:
        prefix = under.rstrip("/") + "/" if under else ""
        layout = self._installed()
        names = self.zip.names if layout is None else list(layout)
        yield from sorted(n for n in names if n.startswith(prefix) and not n.endswith("/"))

    def close(self) -> None:
        self.zip.close()


def _target_mode(target: Path) -> int:
    """``st_mode`` of the target (links followed), or ``TargetError`` saying why there
    is none: "no such file or directory" only when that is the reason (``lexists``
    said it for every failure, ENAMETOOLONG and EACCES included)."""
    try:
        return os.stat(target).st_mode
    except FileNotFoundError:
        if os.path.islink(target):
            raise TargetError(f"{target}: a symbolic link to nothing") from None
        raise TargetError(f"{target}: no such file or directory") from None
    except OSError as exc:
        raise TargetError(f"{target}: cannot be reached: {exc.strerror or exc}") from None


def _wheel_of(target: Path, package: str) -> WheelSource:
    """The wheel as a source, or ``TargetError`` when it installs no file under
    ``package/``: as for a directory without the package, nothing of the manifest
    could be judged there (every pin would "fail" as missing, which says the wrong
    wheel was given, not that the package changed)."""
    source = WheelSource(target)
    if next(source.iter_files(package), None) is None:
        source.close()
        raise TargetError(f"{target}: no '{package}' package in this wheel (it installs no "
                          f"file under {package}/)")
    return source


def open_target(target: Path, package: str) -> Source:
    """Build the source for a target given on the command line.

    Accepts site-packages (a directory holding ``package/``), the package
    directory itself, or a ``.whl`` file. A target that cannot be reached is
    one line naming it with the system's reason: a path too long, a directory
    that may not be searched, a symbolic link to nothing.
    """
    mode = _target_mode(target)
    if stat.S_ISDIR(mode):
        # A directory with __init__.py is a package: what ``import`` loads from
        # it is its own files, even if it holds a directory named like the
        # package (a nested copy must never be audited in its place).
        if (target / "__init__.py").is_file():
            return DirectorySource(target, mount=package)
        if (target / package).is_dir():
            return DirectorySource(target)
        if target.resolve().name == package:  # a namespace package
            return DirectorySource(target, mount=package)
        raise TargetError(
            f"{target}: no '{package}' package here; give site-packages, "
            "the package directory or a .whl file"
        )
    if stat.S_ISREG(mode):
        if target.suffix == ".whl":
            return _wheel_of(target, package)
        raise TargetError(f"{target}: not a directory or a .whl file")
    raise TargetError(f"{target}: not a directory or a regular file")
