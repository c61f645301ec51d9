"""The minimal zip reader against archives written by ``zipfile`` (the reference)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from pp1audit.zipindex import ZipError, ZipIndex

FILES = {
    "pkg/__init__.py": b"",
    "pkg/a.py": b"x = 1\n" * 500,
    "pkg/caf\u00e9.py": "name = 'caf\u00e9'\n".encode(),
    "pkg/data.bin": bytes(range(256)) * 64,
}


def write(path: Path, method: int, zip64: bool = False, prefix: bytes = b"") -> Path:
    with zipfile.ZipFile(path, "w", compression=method) as zf:
        zf.writestr("pkg/", b"")
        for name, data in FILES.items():
            with zf.open(name, "w", force_zip64=zip64) as fh:
                fh.write(data)
    if prefix:
        path.write_bytes(prefix + path.read_bytes())
    return path


@pytest.mark.parametrize("method", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])
@pytest.mark.parametrize("zip64", [False, True])
def test_reads_what_zipfile_wrote(tmp_path: Path, method: int, zip64: bool) -> None:
    index = ZipIndex(write(tmp_path / "t.whl", method, zip64))
    assert sorted(index.names()) == sorted(["pkg/", *FILES])
    for name, data in FILES.items():
        member = index.member(name)
        assert member is not None and index.read(member) == data
    assert index.member("pkg/missing.py") is None
    index.close()


def test_prefixed_archive(tmp_path: Path) -> None:
    path = write(tmp_path / "t.zip", zipfile.ZIP_DEFLATED, prefix=b"#!/bin/sh\nexit 0\n")
    with zipfile.ZipFile(path) as zf:
        expected = zf.read("pkg/a.py")
    index = ZipIndex(path)
    member = index.member("pkg/a.py")
    assert member is not None and index.read(member) == expected == FILES["pkg/a.py"]


def test_corruption_is_detected(tmp_path: Path) -> None:
    path = write(tmp_path / "t.whl", zipfile.ZIP_STORED)
    blob = bytearray(path.read_bytes())
    at = blob.find(FILES["pkg/data.bin"][:64])
    blob[at + 10] ^= 0xFF
    path.write_bytes(bytes(blob))
    index = ZipIndex(path)
    member = index.member("pkg/data.bin")
    assert member is not None
    with pytest.raises(ZipError, match="CRC-32 mismatch"):
        index.read(member)


@pytest.mark.parametrize("content", [b"", b"not a zip at all", b"PK\x05\x06" + b"\x00" * 10])
def test_not_a_zip(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "bad.whl"
    path.write_bytes(content)
    with pytest.raises(ZipError):
        ZipIndex(path)


def test_truncated_archive(tmp_path: Path) -> None:
    path = write(tmp_path / "t.whl", zipfile.ZIP_DEFLATED)
    blob = path.read_bytes()
    path.write_bytes(blob[:200] + blob[-22:])
    with pytest.raises(ZipError):
        index = ZipIndex(path)
        for name in FILES:
            member = index.member(name)
            assert member is not None
            index.read(member)


@pytest.mark.parametrize("method", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])
@pytest.mark.parametrize("zip64", [False, True])
def test_stream_yields_the_member_in_bounded_blocks(tmp_path: Path, method: int,
                                                    zip64: bool) -> None:
    index = ZipIndex(write(tmp_path / "t.whl", method, zip64))
    for name, data in FILES.items():
        member = index.member(name)
        assert member is not None
        blocks = list(index.stream(member, block=100))
        assert b"".join(blocks) == data and all(len(b) <= 100 for b in blocks)
    index.close()


def test_stream_of_a_highly_compressed_member_never_inflates_past_a_block(tmp_path: Path) -> None:
    path = tmp_path / "t.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("zeros", b"\0" * (8 << 20))  # 8 MiB in ~8 kB
    index = ZipIndex(path)
    member = index.member("zeros")
    assert member is not None and member.compressed_size < 64 << 10
    sizes = [len(b) for b in index.stream(member, block=1 << 20)]
    assert sum(sizes) == 8 << 20 and max(sizes) <= 1 << 20


def _central_record(blob: bytes, name: str) -> int:
    pos = blob.find(b"PK\x01\x02")
    while blob[pos + 46 : pos + 46 + len(name)] != name.encode():
        pos = blob.find(b"PK\x01\x02", pos + 4)
    return pos


@pytest.mark.parametrize(("damage", "words"), [
    ("crc", "CRC-32 mismatch"),
    ("deflate", "corrupt deflate data"),
    ("size", "size does not match the central directory"),
])
def test_stream_reports_corruption_as_zip_error(tmp_path: Path, damage: str, words: str) -> None:
    path = write(tmp_path / "t.whl", zipfile.ZIP_DEFLATED)
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo("pkg/data.bin")
    blob = bytearray(path.read_bytes())
    central = _central_record(bytes(blob), "pkg/data.bin")
    if damage == "crc":
        blob[central + 16] ^= 0xFF  # the CRC-32 the central directory declares
    elif damage == "deflate":
        blob[info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)] = 0xFF
    else:
        blob[central + 24] ^= 0x01  # the declared uncompressed size, off by one
    path.write_bytes(bytes(blob))
    index = ZipIndex(path)
    member = index.member("pkg/data.bin")
    assert member is not None
    with pytest.raises(ZipError, match=words):
        b"".join(index.stream(member, block=4096))
    index.close()
