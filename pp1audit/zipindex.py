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
"""

from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

_EOCD = struct.Struct("<4s4H2LH")  # signature ... comment length: 22 bytes
_EOCD64_LOCATOR = struct.Struct("<4sLQL")  # 20 bytes
_EOCD64 = struct.Struct("<4sQ2H2L4Q")  # 56 bytes
_CENTRAL = struct.Struct("<4s6H3L5H2L")  # 46 bytes
_LOCAL = struct.Struct("<4s5H3L2H")  # 30 bytes
_MAX_COMMENT = 0xFFFF


class ZipError(Exception):
    """The archive or one member is unreadable; the message says why."""


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


class ZipIndex:
    """The members of a zip archive by name; ``read`` returns verified bytes."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self._names: dict[str, int] | None = None
        self._directory = b""
        self._shift = 0
        try:
            self._fh = open(self.path, "rb")  # noqa: SIM115 - kept open for reads, closed by close()
        except OSError as exc:
            raise ZipError(exc.strerror or str(exc)) from None
        try:
            self.members = self._read_directory()
        except (OSError, struct.error) as exc:
            self._fh.close()
            raise ZipError(f"bad central directory: {exc}") from None
        except ZipError:
            self._fh.close()
            raise

    def _read_directory(self) -> dict[bytes, int]:
        fh = self._fh
        fh.seek(0, os.SEEK_END)
        end = fh.tell()
        tail_len = min(end, _MAX_COMMENT + _EOCD.size + _EOCD64_LOCATOR.size)
        fh.seek(end - tail_len)
        tail = fh.read(tail_len)
        at = tail.rfind(b"PK\x05\x06")
        if at < 0 or at + _EOCD.size > len(tail):
            raise ZipError("File is not a zip file")
        _, _, _, _, count, cd_size, cd_offset, _ = _EOCD.unpack_from(tail, at)
        loc = at - _EOCD64_LOCATOR.size
        if loc >= 0 and tail[loc : loc + 4] == b"PK\x06\x07":
            _, _, eocd64_offset, _ = _EOCD64_LOCATOR.unpack_from(tail, loc)
            fh.seek(eocd64_offset)
            record = fh.read(_EOCD64.size)
            if record[:4] != b"PK\x06\x06":
                raise ZipError("bad zip64 end of central directory")
            fields = _EOCD64.unpack(record)
            count, cd_size, cd_offset = fields[7], fields[8], fields[9]
        # Data may be preceded by a prefix (self-extracting archives): locate the
        # directory relative to where the end record actually is.
        eocd_pos = end - tail_len + at
        shift = eocd_pos - cd_size - cd_offset
        if loc >= 0 and tail[loc : loc + 4] == b"PK\x06\x07":
            shift = 0
        fh.seek(cd_offset + shift)
        directory = fh.read(cd_size)
        if len(directory) != cd_size:
            raise ZipError("truncated central directory")
        self._directory = directory
        self._shift = shift
        # One slice and one small unpack per entry; records are parsed in full
        # only for the members actually used (``member``).
        index: dict[bytes, int] = {}
        lengths = struct.Struct("<3H").unpack_from
        pos = 0
        for _ in range(count):
            if directory[pos : pos + 4] != b"PK\x01\x02":
                raise ZipError("bad central directory entry")
            nlen, elen, clen = lengths(directory, pos + 28)
            index[directory[pos + 46 : pos + 46 + nlen]] = pos
            pos += 46 + nlen + elen + clen
        return index

    def _decode(self, raw: bytes, pos: int) -> str:
        flags = struct.unpack_from("<H", self._directory, pos + 8)[0]
        # A malformed name must not stop the run: undecodable bytes are kept
        # as surrogates, so the name never equals a (valid) manifest path.
        return raw.decode("utf-8" if flags & 0x800 else "cp437", errors="surrogateescape")

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
        if member.method == 8:
            try:
                inflater = zlib.decompressobj(-15)
                data = inflater.decompress(data, member.size + 1)  # never more than declared
            except zlib.error as exc:
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
        except zlib.error as exc:
            raise ZipError(f"corrupt deflate data: {exc}") from None
        if total != member.size:
            raise ZipError("size does not match the central directory")
        if crc != member.crc:
            raise ZipError("CRC-32 mismatch")

    def close(self) -> None:
        """Close the archive file."""
        self._fh.close()
