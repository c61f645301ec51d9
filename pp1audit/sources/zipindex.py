"""A minimal, read-only zip reader: the central directory as a dict, members on demand.

``zipfile.ZipFile`` builds a full ``ZipInfo`` object per entry when it opens an
archive: about 23 ms for vLLM's 5,200-entry wheel, more than the rest of a
``check`` run. An audit reads a handful of members, so this module parses only
what it needs from each central-directory record (one ``struct`` call) and reads
a member by its local header, with the CRC-32 and size verified: whole
(``read``) or in bounded blocks (``stream``: the ``--record`` hashing of a
wheel, whose members reach hundreds of MB). Every failure is a ``ZipError``
(or ``OSError``), unlike ``zipfile``, which lets ``zlib.error``, ``EOFError``
and ``NotImplementedError`` through. Stored and
deflated members are supported (all that wheels use); zip64 is handled.

Inflating and the CRC-32 use zlib-ng (``zlib_ng``, the same API and the same
format as ``zlib``, fuzzed upstream): on vLLM's 300 MB ``.so`` member it
inflates 1.5× and computes CRC-32 4× faster than the system zlib 1.2.13, and
the largest member is what a ``--record`` run of a wheel waits for. Without
the package, the standard ``zlib`` does the same work more slowly.

pip installs a wheel through ``zipfile``, so an archive that ``zipfile`` could
read as other members than this reader sees (entries past the declared count,
two members installing to one path, an ambiguous zip64 end record) is refused
when it is opened: the audit must read every member pip would install.
"""

from __future__ import annotations

import functools
import io
import ntpath
import os
import posixpath
import re
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import cast

from pp1audit.sources.safeio import NotRegular, open_regular


@functools.cache
def codec() -> tuple[ModuleType, type[Exception]]:
    """The zlib module that inflates and its error class: zlib-ng, else the standard
    one. Imported on first use: 3.5 ms that a run on a directory never needs."""
    try:
        from zlib_ng import zlib_ng as zlib
    except ImportError:  # pragma: no cover - a dependency; the standard module is its fallback
        import zlib  # type: ignore[no-redef]
    return zlib, cast("type[Exception]", zlib.error)  # zlib_ng's stub types it as an instance

_EOCD = struct.Struct("<4s4H2LH")  # signature ... comment length: 22 bytes
_EOCD64_LOCATOR = struct.Struct("<4sLQL")  # 20 bytes
_EOCD64 = struct.Struct("<4sQ2H2L4Q")  # 56 bytes
_CENTRAL = struct.Struct("<4s6H3L5H2L")  # 46 bytes
_CENTRAL_HEAD = struct.Struct("<4s24x3H")  # its signature, name, extra and comment lengths
_LOCAL = struct.Struct("<4s5H3L2H")  # 30 bytes
_MAX_COMMENT = 0xFFFF
# In the names each written as "/" + name + "\n": a "//", or a "." or ".." segment (a name
# that normalises to another path). A newline in a name can only cause a false alarm.
_ALIAS_MARK = re.compile(rb"/(?:/|\.\.?[/\n])")


def install_name(name: str) -> str:
    """The path pip writes member ``name`` to (``os.path.normpath``; a directory member
    keeps its ``/``): one rule for the alias check here and the wheel layout in
    ``sources``."""
    if "/." in "/" + name or "//" in name:
        return posixpath.normpath(name) + ("/" if name.endswith("/") else "")
    return name


def install_escape(name: str) -> str | None:
    """Why pip would write wheel member ``name`` (or the member a wheel's RECORD row
    names) outside the directory it installs the member into, or None.

    pip's ``_install_wheel`` joins ``os.path.normpath(name)`` to site-packages (a
    ``<x>.data/<scheme>/<path>`` member: ``<path>`` to that scheme's directory) and
    refuses the whole wheel when the result is not within it ("trying to install
    outside the target directory"): ``../x.py``, ``vllm/../../y.py``, ``/abs.py``.
    A wheel is judged as what it installs wherever it installs, so the name is
    judged as pip on Windows judges it too, where ``os.path`` is ``ntpath``: a
    ``\\`` separates directories and ``C:`` names a drive, so ``..\\x.py``,
    ``vllm\\..\\..\\y.py`` and ``C:\\x.py`` (in a ``.data`` scheme's path as well)
    escape there while POSIX pip writes them as odd file names. Stricter than pip in
    two ways, both about names no wheel builder writes: any leading ``..`` is an
    escape (pip compares with ``os.path.commonprefix``, character by character, so
    ``../site-packages2/x.py`` passes it), and so is a ``.data`` member that
    normalises out of its ``.data`` directory (pip refuses most such names as
    malformed; the audit would place it outside site-packages). A directory member
    is no escape: pip creates nothing for it.
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


class ZipError(Exception):
    """The archive or one member is unreadable; the message says why."""


class NotAZip(ZipError):
    """The file holds no zip end record at all: no archive (zipimport imports nothing
    from it), as opposed to a damaged one, whose contents are unknown."""


class NotAFile(ZipError):
    """The path is no regular file (a FIFO, a device, a directory): never opened for reading."""


def compressed_bound(member: Member) -> int:
    """The most compressed bytes a member of its declared size can hold: stored data is
    its size; deflate's worst case is fixed-Huffman blocks (9 bits for a literal byte,
    1.125x) or stored blocks (5 bytes per 64 KiB), so 1.125x plus a KiB is a bound no
    real encoder exceeds (zlib's own ``deflateBound`` is below it)."""
    if member.method == 0:
        return member.size
    return member.size + (member.size + 7) // 8 + 1024


@dataclass(frozen=True)
class Member:
    """What is needed to read one member and to judge its type."""

    name: str
    method: int
    crc: int
    compressed_size: int
    size: int
    header_offset: int
    external_attr: int
    flags: int


def _zip64_extra(extra: bytes, size: int, csize: int, offset: int) -> tuple[int, int, int]:
    """Replace 0xFFFFFFFF fields by their zip64 extra-field values (in spec order)."""
    pos = 0
    while pos + 4 <= len(extra):
        tag, length = struct.unpack_from("<2H", extra, pos)
        body = extra[pos + 4 : pos + 4 + length]
        if tag == 0x0001:
            values = list(struct.unpack_from(f"<{len(body) // 8}Q", body))
            if size == 0xFFFFFFFF and values:
                size = values.pop(0)
            if csize == 0xFFFFFFFF and values:
                csize = values.pop(0)
            if offset == 0xFFFFFFFF and values:
                offset = values.pop(0)
            break
        pos += 4 + length
    return size, csize, offset


def _open_regular(path: str) -> io.BufferedReader:
    """The archive opened for reading, only if it is a regular file.

    Callers check the path first, but a FIFO swapped in after that check would
    hang a plain ``open`` (it waits for a writer) and a device would be read
    forever: ``safeio.open_regular`` never blocks and judges the descriptor. A
    symlink to a regular file is followed, as Python and pip follow it.
    """
    try:
        fd, _ = open_regular(path, follow=True)
    except NotRegular:
        raise NotAFile("not a regular file; not opened") from None
    except OSError as exc:
        raise ZipError(exc.strerror or str(exc)) from None
    return os.fdopen(fd, "rb")


class ZipIndex:
    """The members of a zip archive by name; ``read`` returns verified bytes."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self._names: dict[str, int] | None = None
        self._directory = b""
        self._shift = 0
        self.moves = True
        """False when pip installs every member at its own name: no name it normalises
        (``//``, a ``.`` or ``..`` segment) and no ``*.data/`` directory, whose
        ``purelib``/``platlib`` members it installs at the root. Known from the one
        search that clears aliases; only when True do the sources lay the members out
        (``sources.wheel_layout``). True too whenever names are looked at one by one."""
        self._fh = _open_regular(self.path)
        try:
            self.members = self._read_directory()
        except (OSError, struct.error) as exc:
            self._fh.close()
            raise ZipError(f"bad central directory: {exc}") from None
        except ZipError:
            self._fh.close()
            raise

    def _read_directory(self) -> dict[bytes, int]:
        """Index the central directory; refuse an archive pip would read otherwise.

        pip installs through ``zipfile``, which reads central-directory entries
        until the directory's declared size is used up (the entry count is
        ignored) and installs each name through ``os.path.normpath``, the last of
        several copies winning. An archive is refused when its entries disagree
        with the end record's count, or two of its members install to one path:
        otherwise a member could be installed that the audit never read.
        """
        fh = self._fh
        fh.seek(0, os.SEEK_END)
        end = fh.tell()
        tail_len = min(end, _MAX_COMMENT + _EOCD.size + _EOCD64_LOCATOR.size + _EOCD64.size)
        fh.seek(end - tail_len)
        tail = fh.read(tail_len)
        # As zipfile: a record ending the file without a comment, else the last signature.
        at = tail_len - _EOCD.size
        if at < 0 or tail[at : at + 4] != b"PK\x05\x06" or tail[-2:] != b"\0\0":
            at = tail.rfind(b"PK\x05\x06", max(0, tail_len - _MAX_COMMENT - _EOCD.size))
        if at < 0 or at + _EOCD.size > len(tail):
            raise NotAZip("File is not a zip file")
        _, _, _, _, count, cd_size, cd_offset, _ = _EOCD.unpack_from(tail, at)
        # The directory ends where the end record starts (or the zip64 one): whatever
        # lies before the archive's own offsets is a prefix (self-extracting archives).
        # zipfile reads the directory from there too, whatever its offset field says.
        directory_end = end - tail_len + at
        loc = at - _EOCD64_LOCATOR.size
        if loc >= 0 and tail[loc : loc + 4] == b"PK\x06\x07":
            count, cd_size, cd_offset = self._zip64_end(tail, loc, directory_end)
            directory_end -= _EOCD64_LOCATOR.size + _EOCD64.size
        shift = directory_end - cd_size - cd_offset
        if shift < 0:
            raise ZipError("bad offset for the central directory")
        fh.seek(cd_offset + shift)
        directory = fh.read(cd_size)
        if len(directory) != cd_size:
            raise ZipError("truncated central directory")
        self._directory = directory
        self._shift = shift
        # One slice and one small unpack per entry; records are parsed in full
        # only for the members actually used (``member``). Entries are read until
        # the directory's size is used up, as zipfile does; the count is checked after.
        index: dict[bytes, int] = {}
        head = _CENTRAL_HEAD.unpack_from
        pos = entries = 0
        try:
            while pos < cd_size:
                signature, nlen, elen, clen = head(directory, pos)
                if signature != b"PK\x01\x02":
                    raise ZipError("bad central directory entry")
                start = pos + _CENTRAL.size
                index[directory[start : start + nlen]] = pos
                pos = start + nlen + elen + clen
                entries += 1
        except struct.error:
            raise ZipError("truncated central directory entry") from None
        if pos != cd_size:
            raise ZipError("the last central directory entry overruns the directory")
        if entries != count:
            raise ZipError(
                f"the end record declares {count} members, the central directory holds {entries}"
            )
        self._refuse_aliases(index, entries)
        if shift and index:  # a prefix, or a wrong offset: the first member tells which
            first = self._member_at("", 0)
            fh.seek(first.header_offset)
            if fh.read(4) != b"PK\x03\x04":
                raise ZipError("bad offset for the central directory")
        return index

    def _zip64_end(self, tail: bytes, loc: int, directory_end: int) -> tuple[int, int, int]:
        """Count, size and offset of the directory from the zip64 end record.

        Python 3.11's zipfile reads the record just before the locator; newer
        versions first try the locator's offset. Both agree when the record is
        just before the locator, the locator's offset is where the directory
        ends, and nothing else that looks like a record is at that offset (a
        prefix could hold one): anything else is refused.
        """
        _, _, locator_offset, _ = _EOCD64_LOCATOR.unpack_from(tail, loc)
        at = loc - _EOCD64.size
        if at < 0 or tail[at : at + 4] != b"PK\x06\x06":
            raise ZipError("bad zip64 end of central directory")
        _, record_size, _, _, _, _, _, count, cd_size, cd_offset = _EOCD64.unpack_from(tail, at)
        if record_size != _EOCD64.size - 12 or cd_offset + cd_size != locator_offset:
            raise ZipError("bad zip64 end of central directory")
        record_pos = directory_end - _EOCD64_LOCATOR.size - _EOCD64.size
        if locator_offset != record_pos:
            self._fh.seek(locator_offset)
            if self._fh.read(4) == b"PK\x06\x06":
                raise ZipError("the zip64 end record is ambiguous (another where the locator points)")
        return count, cd_size, cd_offset

    def _refuse_aliases(self, index: dict[bytes, int], entries: int) -> None:
        """Refuse two members that pip would install to one path.

        zipfile cuts a name at a NUL byte and decodes it (UTF-8 when flagged,
        else CP437); pip installs it through ``os.path.normpath``. A wheel of
        distinct ASCII names without ``.``/``..`` segments or ``//`` is cleared by
        one search over all names at once; any other is looked at name by name.
        """
        joined = b"\n/".join([b"", *index, b""])
        if (len(index) == entries and joined.isascii() and b"\0" not in joined
                and _ALIAS_MARK.search(joined) is None):
            self.moves = b".data/" in joined  # a false alarm only costs a closer look
            return
        seen: dict[str, str] = {}
        pos = 0
        while pos < len(self._directory):
            nlen, elen, clen = struct.unpack_from("<3H", self._directory, pos + 28)
            name = self._decode(self._directory[pos + 46 : pos + 46 + nlen], pos)
            if "\0" in name:
                raise ZipError(f"member name {name!r} holds a NUL byte")
            path = install_name(name)
            if path in seen:
                if seen[path] == name:
                    raise ZipError(f"member {name!r} appears twice")
                raise ZipError(f"members {seen[path]!r} and {name!r} both install as {path!r}")
            seen[path] = name
            pos += 46 + nlen + elen + clen

    def _decode(self, raw: bytes, pos: int) -> str:
        flags = struct.unpack_from("<H", self._directory, pos + 8)[0]
        # A malformed name must not stop the run: undecodable bytes are kept
        # as surrogates, so the name never equals a (valid) manifest path.
        return raw.decode("utf-8" if flags & 0x800 else "cp437", errors="surrogateescape")

    def escaping(self) -> dict[str, str]:
        """Member name -> why pip would write it outside the directory it installs
        into (``install_escape``), for every such member. One search over all raw
        names at once clears a wheel with no ``//``, no ``.``/``..`` segment, no ``\\``
        and no ``:`` (every real one) without decoding a name; UTF-8 and CP437 both
        keep those ASCII bytes as they are, so the search misses none."""
        joined = b"\n/".join([b"", *self.members, b""])
        if _ALIAS_MARK.search(joined) is None and b"\\" not in joined and b":" not in joined:
            return {}
        return {name: why for name in self.names() if (why := install_escape(name)) is not None}

    def names_starting(self, prefixes: tuple[bytes, ...]) -> Iterator[str]:
        """The decoded names of the members whose raw name starts with one of
        ``prefixes``; every other name is skipped undecoded (a stdlib zip of 150,000
        members looked into for one package's few)."""
        for raw, pos in self.members.items():
            if raw.startswith(prefixes):
                yield self._decode(raw, pos)

    def names(self) -> list[str]:
        """Every member name, decoded as the archive says (UTF-8 flag, else CP437)."""
        if self._names is None:
            self._names = {self._decode(raw, pos): pos for raw, pos in self.members.items()}
        return list(self._names)

    def member(self, name: str) -> Member | None:
        """The member called ``name``, or None."""
        pos = self.members.get(name.encode("utf-8", errors="surrogateescape"))
        if pos is None and not name.isascii():
            self.names()
            pos = (self._names or {}).get(name)
        if pos is None:
            return None
        return self._member_at(name, pos)

    def _member_at(self, name: str, pos: int) -> Member:
        (_sig, _vm, _vn, flags, method, _t, _d, crc, csize, size, nlen, elen, _clen,
         _disk, _ia, eattr, offset) = _CENTRAL.unpack_from(self._directory, pos)
        start = pos + _CENTRAL.size
        if 0xFFFFFFFF in (size, csize, offset):
            extra = self._directory[start + nlen : start + nlen + elen]
            size, csize, offset = _zip64_extra(extra, size, csize, offset)
        return Member(name, method, crc, csize, size, offset + self._shift, eattr, flags)

    def read(self, member: Member, limit: int | None = None) -> bytes:
        """The member's bytes, decompressed; CRC-32 and size checked."""
        if limit is not None and member.size > limit:
            raise ZipError(f"member is {member.size} bytes, over the {limit}-byte limit")
        fh = self._fh
        fh.seek(self._data_start(member))
        data = fh.read(member.compressed_size)
        if len(data) != member.compressed_size:
            raise ZipError("truncated member data")
        zlib, inflate_error = codec()
        if member.method == 8:
            try:
                inflater = zlib.decompressobj(-15)
                data = inflater.decompress(data, member.size + 1)  # never more than declared
            except inflate_error as exc:
                raise ZipError(f"corrupt deflate data: {exc}") from None
        if len(data) != member.size:
            raise ZipError("size does not match the central directory")
        if zlib.crc32(data) != member.crc:
            raise ZipError("CRC-32 mismatch")
        return data

    def _data_start(self, member: Member) -> int:
        """Offset of the member's (compressed) data, after its local header is checked."""
        if member.flags & 0x1:
            raise ZipError("encrypted member")
        if member.method not in (0, 8):
            raise ZipError(f"unsupported compression method {member.method}")
        if member.compressed_size > compressed_bound(member):
            # Refused before a byte is read: ``read`` takes the compressed range whole,
            # and a few-KB sparse wheel can declare gigabytes of it for a 6-byte file.
            raise ZipError(f"compressed size {member.compressed_size} is more than "
                           f"{'stored' if member.method == 0 else 'deflated'} data of "
                           f"{member.size} bytes can take")
        fh = self._fh
        fh.seek(member.header_offset)
        header = fh.read(_LOCAL.size)
        if len(header) != _LOCAL.size or header[:4] != b"PK\x03\x04":
            raise ZipError("bad local file header")
        nlen, elen = struct.unpack_from("<2H", header, 26)
        if fh.read(nlen) != member.name.encode("utf-8", errors="surrogateescape") and not (
            member.flags & 0x800 == 0 and not member.name.isascii()
        ):
            raise ZipError("local header names another member")
        start: int = member.header_offset + _LOCAL.size + nlen + elen
        return start

    def stream(self, member: Member, block: int = 4 << 20) -> Iterator[bytes]:
        """The member's bytes in decompressed blocks of at most ``block`` bytes.

        For hashing large members without holding them whole: memory stays at
        about two blocks whatever the member's size or compression ratio (a
        deflate bomb never inflates past ``block`` per step, nor past the
        declared size). Size and CRC-32 are checked at the end, so the last
        block is followed by a ``ZipError`` when the data is not what the
        central directory says; every problem is a ``ZipError`` or ``OSError``.
        """
        fh = self._fh
        fh.seek(self._data_start(member))
        remaining = member.compressed_size
        zlib, inflate_error = codec()
        inflater = zlib.decompressobj(-15) if member.method == 8 else None
        crc = total = 0

        def counted(out: bytes) -> bytes:
            nonlocal crc, total
            total += len(out)
            if total > member.size:
                raise ZipError("size does not match the central directory")
            crc = zlib.crc32(out, crc)
            return out

        try:
            while remaining > 0:
                raw = fh.read(min(block, remaining))
                if not raw:
                    raise ZipError("truncated member data")
                remaining -= len(raw)
                if inflater is None:
                    yield counted(raw)
                    continue
                data = raw
                while data and not inflater.eof:
                    out = inflater.decompress(data, block)
                    data = inflater.unconsumed_tail
                    if out:
                        yield counted(out)
            if inflater is not None:
                # Output still pending inside zlib once all input is in (``block`` reached).
                while not inflater.eof:
                    out = inflater.decompress(b"", block)
                    if not out:
                        raise ZipError("corrupt deflate data: the stream ends early")
                    yield counted(out)
        except inflate_error as exc:
            raise ZipError(f"corrupt deflate data: {exc}") from None
        if total != member.size:
            raise ZipError("size does not match the central directory")
        if crc != member.crc:
            raise ZipError("CRC-32 mismatch")

    def close(self) -> None:
        """Close the archive file."""
        self._fh.close()
