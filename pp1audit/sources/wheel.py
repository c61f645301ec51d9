"""A zip (a wheel, an egg on ``sys.path``) read in place through ``zipfile``.

pip installs a wheel through ``zipfile``, so reading it through the same module
means the audit reads the members pip installs, as pip decodes and finds them.
What ``zipfile`` leaves to its caller is done here, once:

* The archive is opened with ``safeio.open_regular``: a FIFO put at its path
  would hang a plain ``open`` (it waits for a writer), a device would be read
  for ever. A symlink to a regular file is followed, as pip and Python follow it.
* Members are read in bounded blocks (``stream``) and always to their end, so
  the CRC-32 that ``zipfile`` checks when a member ends is always checked;
  ``zipfile`` stops at the declared size, so a member inflating past it (a zip
  bomb) fails that check, and ``read`` refuses a member declaring more than
  the caller's cap before reading a byte. Only stored and deflated members
  (all that wheels use) are read: ``zipfile`` inflates bzip2 and LZMA blocks
  without a bound on their output.
* Every failure is one ``ZipError`` carrying ``zipfile``'s words (it raises
  ``BadZipFile``, ``zlib.error``, ``EOFError``, ``NotImplementedError``,
  ``RuntimeError``, ``OSError``, ``UnicodeDecodeError``…), never a traceback.
* Two members pip would install to one path are refused when the archive is
  opened: pip keeps the last one written, and the audit must not read the other.
"""

from __future__ import annotations

import functools
import ntpath
import os
import posixpath
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from pp1audit.sources.safeio import NotRegular, open_regular

if TYPE_CHECKING:
    import zipfile

BLOCK = 1 << 20
"""Bytes per read of a member: large enough that zlib and hashlib run at full speed."""


@functools.cache
def failures() -> tuple[type[Exception], ...]:
    """What ``zipfile`` raises on a damaged, truncated, encrypted or exotic archive or
    member. ``zipfile`` (with zlib, bz2 and lzma: ~3 ms) is imported on first use:
    a run on a directory never needs it."""
    import struct
    import zipfile
    import zlib

    return (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError,
            OSError, ValueError, struct.error)

_ALIAS_MARK = re.compile(r"/(?:/|\.\.?[/\n])")
"""In the names each written as "/" + name + "\\n": a "//", or a "." or ".." segment
(a name that normalises to another path). A newline in a name only costs a closer look."""


class ZipError(Exception):
    """The archive or one member is unreadable; the message says why."""


class NotAZip(ZipError):
    """The file holds no zip end record at all: no archive (zipimport imports nothing
    from it), as opposed to a damaged one, whose contents are unknown."""


class NotAFile(ZipError):
    """The path is no regular file (a FIFO, a device, a directory): never opened for reading."""


def install_name(name: str) -> str:
    """The path pip writes member ``name`` to (``os.path.normpath``; a directory member
    keeps its ``/``): one rule for the alias check here and the wheel layout in ``sources``."""
    if "/." in "/" + name or "//" in name:
        return posixpath.normpath(name) + ("/" if name.endswith("/") else "")
    return name


def install_escape(name: str) -> str | None:
    """Why pip would write wheel member ``name`` (or the member a wheel's RECORD row
    names) outside the directory it installs the member into, or None.

    pip's ``_install_wheel`` joins ``os.path.normpath(name)`` to site-packages (a
    ``<x>.data/<scheme>/<path>`` member: ``<path>`` to that scheme's directory) and
    refuses the whole wheel when the result is not within it: ``../x.py``,
    ``vllm/../../y.py``, ``/abs.py``. A wheel is judged as what it installs wherever
    it installs, so the name is judged as pip on Windows judges it too (``ntpath``:
    ``..\\x.py``, ``C:\\x.py`` escape there). Stricter than pip in two ways, both
    about names no wheel builder writes: any leading ``..`` is an escape (pip's
    ``commonprefix`` passes ``../site-packages2/x.py``), and so is a ``.data``
    member that normalises out of its ``.data`` directory. A directory member is no
    escape: pip creates nothing for it.
    """
    if name.endswith("/"):
        return None
    data = name.split("/", 1)[0].endswith(".data")
    normed = posixpath.normpath(name)
    if normed.startswith("/") or normed == ".." or normed.startswith("../"):
        if data:
            return (f"'{name}' normalises to '{normed}', out of its .data directory: pip "
                    "refuses the wheel or installs the member elsewhere than its name says")
        to = "" if normed == name else f" to '{normed}',"
        return f"pip would write '{name}'{to} outside site-packages, so it refuses the wheel"
    win = ntpath.normpath(name)
    sub, where = win, "its .data directory" if data else "site-packages"
    if data and len(parts := win.split("\\", 2)) == 3:
        sub, where = parts[2], f"the {parts[1]} scheme directory"
    if ntpath.splitdrive(sub)[0] or sub.startswith("\\") or sub == ".." or sub.startswith("..\\"):
        to = "" if sub == name else f" to '{sub}',"
        return (f"pip on Windows, where '\\' separates directories and a letter before ':' names "
                f"a drive, would write '{name}'{to} outside {where}, so it refuses the wheel")
    return None


def _why(exc: BaseException) -> str:
    """``zipfile``'s words for a failure (the system's for an ``OSError``)."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


class Zip:
    """An archive opened for reading: ``zipfile``'s own index (a ``ZipInfo`` per member),
    nothing more per member.

    One ``Zip`` may be read by several threads at once: ``zipfile`` reads every
    member through one lock-guarded file position, and inflates outside it.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        import zipfile

        self.path = os.fspath(path)
        try:
            fd, _ = open_regular(self.path, follow=True)
        except NotRegular:
            raise NotAFile("not a regular file; not opened") from None
        except OSError as exc:
            raise ZipError(exc.strerror or str(exc)) from None
        self._fh = os.fdopen(fd, "rb")
        try:
            self.zf = zipfile.ZipFile(self._fh)
            self.names = self.zf.namelist()
            self._joined = "\n/".join(["", *self.names, ""])
            self._refuse_aliases()
        except BaseException as exc:
            self._fh.close()
            if isinstance(exc, zipfile.BadZipFile) and str(exc) == "File is not a zip file":
                raise NotAZip(str(exc)) from None
            if isinstance(exc, failures()):
                raise ZipError(_why(exc)) from None
            raise
        self.moves = ".data/" in self._joined or _ALIAS_MARK.search(self._joined) is not None
        """False when pip installs every member at its own name (no name it normalises,
        no ``*.data/`` directory): the sources then need no layout (``wheel_layout``)."""

    def _refuse_aliases(self) -> None:
        """Two members that pip installs to one path (a repeated name, or one that
        ``os.path.normpath`` makes another; ``zipfile`` cuts a name at a NUL and
        decodes it as UTF-8 or CP437, so those aliases are repeats here). Most
        archives are cleared by one search over all names at once."""
        if len(self.zf.NameToInfo) == len(self.names) and _ALIAS_MARK.search(self._joined) is None:
            return
        seen: dict[str, str] = {}
        for name in self.names:
            path = install_name(name)
            if path in seen:
                if seen[path] == name:
                    raise ZipError(f"member {name!r} appears twice")
                raise ZipError(f"members {seen[path]!r} and {name!r} both install as {path!r}")
            seen[path] = name

    def escaping(self) -> dict[str, str]:
        """Member name -> why pip would write it outside the directory it installs into
        (``install_escape``). One search clears an archive with no ``//``, no ``.``/``..``
        segment, no ``\\`` and no ``:`` in any name (every real wheel)."""
        joined = self._joined
        if _ALIAS_MARK.search(joined) is None and "\\" not in joined and ":" not in joined:
            return {}
        return {name: why for name in self.names if (why := install_escape(name)) is not None}

    def info(self, name: str) -> zipfile.ZipInfo | None:
        """The member called ``name``, or None."""
        return self.zf.NameToInfo.get(name)

    def stream(self, info: zipfile.ZipInfo, block: int = BLOCK) -> Iterator[bytes]:
        """The member's bytes in blocks of at most ``block``, read to its end (so its
        CRC-32 is checked) and never past its declared size; ``ZipError`` otherwise."""
        if info.flag_bits & 0x1:
            raise ZipError("encrypted member")
        if info.compress_type not in (0, 8):  # stored, deflated
            raise ZipError(f"unsupported compression method {info.compress_type}")
        total = 0
        try:
            with self.zf.open(info) as f:
                while chunk := f.read(block):
                    total += len(chunk)
                    yield chunk
        except failures() as exc:
            raise ZipError(_why(exc)) from None
        if total != info.file_size:
            raise ZipError("size does not match the central directory")

    def read(self, info: zipfile.ZipInfo, limit: int) -> bytes:
        """The member's bytes, CRC-checked; refused unread when it declares over ``limit``."""
        if info.file_size > limit:
            raise ZipError(f"member is {info.file_size:,} bytes, over the {limit:,}-byte limit")
        return b"".join(self.stream(info))

    def close(self) -> None:
        """Close the archive file."""
        self.zf.close()
        self._fh.close()
