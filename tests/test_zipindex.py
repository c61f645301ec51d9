"""The minimal zip reader against archives written by ``zipfile`` (the reference)."""

from __future__ import annotations

import hashlib
import os
import posixpath
import random
import re
import shutil
import struct
import warnings
import zipfile
from pathlib import Path

import pytest
from conftest import REPO, run_cli

from pp1audit.sources import zipindex
from pp1audit.sources.zipindex import ZipError, ZipIndex


@pytest.fixture(autouse=True, params=["zlib-ng", "zlib"])
def inflater(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test with zlib-ng (the dependency) and with the standard zlib (its
    fallback when the package is missing): the same verdicts either way."""
    if request.param == "zlib":
        import zlib

        monkeypatch.setattr(zipindex, "codec", lambda: (zlib, zlib.error))
    else:
        assert zipindex.codec()[0].__name__ == "zlib_ng.zlib_ng"
    return str(request.param)

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


# --- Archives that pip (zipfile) would install differently from what we read ---------

EOCD = struct.Struct("<4s4H2LH")


def _eocd(blob: bytes) -> int:
    return blob.rfind(b"PK\x05\x06")


def _lower_count(path: Path) -> None:
    """Declare one central-directory entry fewer in the end record (the rest unchanged)."""
    blob = bytearray(path.read_bytes())
    at = _eocd(bytes(blob))
    count = struct.unpack_from("<H", blob, at + 10)[0]
    struct.pack_into("<2H", blob, at + 8, count - 1, count - 1)
    path.write_bytes(bytes(blob))


def _append(path: Path, name: str, data: bytes) -> Path:
    """Append member ``name`` with ``zipfile`` (which warns on a repeated name, and writes it)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with zipfile.ZipFile(path, "a", zipfile.ZIP_DEFLATED) as zf:
            zf.writestr(name, data)
    return path


def test_a_member_past_the_declared_count_is_refused(tmp_path: Path) -> None:
    path = _append(write(tmp_path / "t.whl", zipfile.ZIP_DEFLATED), "pkg/a.py", b"evil\n")
    _lower_count(path)
    with zipfile.ZipFile(path) as zf:  # what pip installs: the last copy wins
        assert zf.namelist().count("pkg/a.py") == 2 and zf.read("pkg/a.py") == b"evil\n"
    with pytest.raises(ZipError, match="end record declares 5 members, the central directory holds 6"):
        ZipIndex(path)


def test_an_extra_member_past_the_declared_count_is_refused(tmp_path: Path) -> None:
    path = _append(write(tmp_path / "t.whl", zipfile.ZIP_STORED), "evil.pth", b"import os\n")
    _lower_count(path)
    with zipfile.ZipFile(path) as zf:
        assert "evil.pth" in zf.namelist()
    with pytest.raises(ZipError, match="declares 5 members, the central directory holds 6"):
        ZipIndex(path)


def _rename(path: Path, old: str, new: bytes, utf8_flag: bool | None = None) -> None:
    """Give member ``old`` the raw name ``new`` (same length) in both of its headers."""
    blob = bytearray(path.read_bytes())
    raw = old.encode()
    assert len(new) == len(raw) and blob.count(raw) == 2
    central = _central_record(bytes(blob), old)
    blob[:] = blob.replace(raw, new)
    if utf8_flag is not None:
        flags = struct.unpack_from("<H", blob, central + 8)[0]
        struct.pack_into("<H", blob, central + 8, flags | 0x800 if utf8_flag else flags & ~0x800)
    path.write_bytes(bytes(blob))


def test_a_repeated_name_is_refused(tmp_path: Path) -> None:
    path = _append(write(tmp_path / "t.whl", zipfile.ZIP_DEFLATED), "pkg/a.py", b"evil\n")
    with zipfile.ZipFile(path) as zf:  # pip installs both, the last over the first
        assert zf.namelist().count("pkg/a.py") == 2 and zf.read("pkg/a.py") == b"evil\n"
    with pytest.raises(ZipError, match=re.escape("member 'pkg/a.py' appears twice")):
        ZipIndex(path)


@pytest.mark.parametrize("alias", ["pkg/./a.py", "pkg//a.py", "./pkg/a.py", "pkg/sub/../a.py"])
def test_two_members_that_install_to_one_path_are_refused(tmp_path: Path, alias: str) -> None:
    path = _append(write(tmp_path / "t.whl", zipfile.ZIP_DEFLATED), alias, b"evil\n")
    with zipfile.ZipFile(path) as zf:  # pip installs both, through os.path.normpath
        assert [n for n in zf.namelist() if posixpath.normpath(n) == "pkg/a.py"] == ["pkg/a.py", alias]
    with pytest.raises(ZipError, match=re.escape(f"'pkg/a.py' and '{alias}' both install as 'pkg/a.py'")):
        ZipIndex(path)


def test_a_nul_in_a_name_is_refused(tmp_path: Path) -> None:
    path = _append(write(tmp_path / "t.whl", zipfile.ZIP_STORED), "pkg/a.pyX", b"evil\n")
    _rename(path, "pkg/a.pyX", b"pkg/a.py\0")
    with zipfile.ZipFile(path) as zf:  # zipfile cuts the name at the NUL
        assert zf.namelist().count("pkg/a.py") == 2
    with pytest.raises(ZipError, match=re.escape("member name 'pkg/a.py\\x00' holds a NUL byte")):
        ZipIndex(path)


def test_names_that_decode_alike_are_refused(tmp_path: Path) -> None:
    """A CP437 name (no UTF-8 flag) can decode to the same text as a UTF-8 one."""
    path = _append(write(tmp_path / "t.whl", zipfile.ZIP_STORED), "pkg/cafX.py", b"evil\n")
    _rename(path, "pkg/cafX.py", b"pkg/caf\x82.py", utf8_flag=False)  # 0x82 is e-acute in CP437
    with zipfile.ZipFile(path) as zf:
        assert zf.namelist().count("pkg/caf\u00e9.py") == 2
    with pytest.raises(ZipError, match=re.escape("member 'pkg/caf\u00e9.py' appears twice")):
        ZipIndex(path)


def _with_zip64_end(blob: bytes) -> bytes:
    """The archive with a zip64 end record and locator, as a zip64 writer lays them out."""
    at = _eocd(blob)
    _sig, _d, _cd, _n, count, size, offset, clen = EOCD.unpack_from(blob, at)
    record = struct.pack("<4sQ2H2L4Q", b"PK\x06\x06", 44, 45, 45, 0, 0, count, count, size, offset)
    locator = struct.pack("<4sLQL", b"PK\x06\x07", 0, offset + size, 1)
    end = EOCD.pack(b"PK\x05\x06", 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, clen)
    return blob[:at] + record + locator + end + blob[at + EOCD.size:]


def test_zip64_end_record_after_a_prefix_is_found_as_zipfile_finds_it(tmp_path: Path) -> None:
    path = tmp_path / "t.zip"
    archive = _with_zip64_end(write(tmp_path / "src.zip", zipfile.ZIP_DEFLATED).read_bytes())
    path.write_bytes(b"#!/bin/sh\nexit 0\n" + archive)
    with zipfile.ZipFile(path) as zf:
        expected = {n: zf.read(n) for n in zf.namelist()}
    index = ZipIndex(path)
    assert sorted(index.names()) == sorted(expected)
    for name, data in expected.items():
        member = index.member(name)
        assert member is not None and index.read(member) == data
    index.close()


def test_zip64_member_past_the_declared_count_is_refused(tmp_path: Path) -> None:
    src = _append(write(tmp_path / "src.zip", zipfile.ZIP_DEFLATED), "pkg/a.py", b"evil\n")
    blob = bytearray(_with_zip64_end(src.read_bytes()))
    record = blob.rfind(b"PK\x06\x06")
    struct.pack_into("<2Q", blob, record + 24, 5, 5)
    path = tmp_path / "t.zip"
    path.write_bytes(bytes(blob))
    with zipfile.ZipFile(path) as zf:
        assert zf.namelist().count("pkg/a.py") == 2
    with pytest.raises(ZipError, match="declares 5 members, the central directory holds 6"):
        ZipIndex(path)


def test_zip64_locator_pointing_into_a_prefix_is_refused(tmp_path: Path) -> None:
    """Python 3.11's zipfile reads the record just before the locator; newer ones try the
    locator's offset first. A prefix holding a valid-looking record (here: of an empty
    archive) at that offset is read two ways, so it is refused."""
    inner = _with_zip64_end(write(tmp_path / "src.zip", zipfile.ZIP_DEFLATED).read_bytes())
    reloff = struct.unpack_from("<Q", inner, inner.rfind(b"PK\x06\x07") + 8)[0]
    # Newer zipfile checks the record's size against the gap to the locator: the prefix's length.
    forged = struct.pack("<4sQ2H2L4Q", b"PK\x06\x06", 44 + len(inner), 45, 45, 0, 0, 0, 0, 0, reloff)
    prefix = bytes(reloff) + forged + bytes(len(inner) - reloff - len(forged))
    path = tmp_path / "t.zip"
    path.write_bytes(prefix + inner)
    with zipfile.ZipFile(path) as zf:  # this Python: the real record, every member
        assert len(zf.namelist()) == len(FILES) + 1
    with pytest.raises(ZipError, match="zip64 end record is ambiguous"):
        ZipIndex(path)


@pytest.mark.parametrize("delta", [1, -1])
def test_a_corrupt_directory_offset_is_one_error(tmp_path: Path, delta: int) -> None:
    path = write(tmp_path / "t.whl", zipfile.ZIP_DEFLATED)
    blob = bytearray(path.read_bytes())
    at = _eocd(bytes(blob))
    offset = struct.unpack_from("<L", blob, at + 16)[0]
    struct.pack_into("<L", blob, at + 16, offset + delta)
    path.write_bytes(bytes(blob))
    with pytest.raises(ZipError, match="bad offset for the central directory"):
        ZipIndex(path)


def test_cli_refuses_a_corrupt_directory_offset_once(tmp_path: Path) -> None:
    wheel = write(tmp_path / "pkg-1.0-py3-none-any.whl", zipfile.ZIP_DEFLATED)
    blob = bytearray(wheel.read_bytes())
    at = _eocd(bytes(blob))
    struct.pack_into("<L", blob, at + 16, struct.unpack_from("<L", blob, at + 16)[0] + 7)
    wheel.write_bytes(bytes(blob))
    manifest = tmp_path / "m.yaml"
    manifest.write_text("pp1audit: 1\naudit: {id: t, date: 2026-01-01}\ntarget: {package: pkg}\n"
                        "files:\n  pkg/a.py: " + hashlib.sha256(FILES["pkg/a.py"]).hexdigest() + "\n")
    proc = run_cli("check", str(wheel), "-m", str(manifest), timeout=10)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr.splitlines() == [
        f"pp1audit: error: {wheel}: not a readable wheel (bad offset for the central directory)"]


def test_cli_refuses_the_vllm_wheel_with_a_hidden_runner(tmp_path: Path, vllm_wheel: Path) -> None:
    """The real wheel with an evil copy of a pinned file appended and the count lowered:
    pip would install the evil copy; the check must not pass it, even with --record."""
    name = "vllm/v1/worker/gpu/model_runner.py"
    manifest = str(REPO / "manifests" / "examples" / "vllm-0.31.0.yaml")
    assert run_cli("check", str(vllm_wheel), "-m", manifest).returncode == 0
    evil = tmp_path / vllm_wheel.name
    shutil.copyfile(vllm_wheel, evil)
    with zipfile.ZipFile(vllm_wheel) as zf:
        runner = zf.read(name)
    _append(evil, name, runner + b"\nimport os; os.system('echo PWNED')\n")
    _lower_count(evil)
    with zipfile.ZipFile(evil) as zf:
        assert zf.read(zf.infolist()[-1]).endswith(b"PWNED')\n")
    proc = run_cli("check", str(evil), "-m", manifest, "--record")
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr.splitlines() == [
        f"pp1audit: error: {evil}: not a readable wheel (the end record declares 5194 members, "
        "the central directory holds 5195)"]


def test_a_directory_run_never_loads_the_inflater(tmp_path: Path) -> None:
    """zlib-ng costs 3.5 ms to import, and only a wheel needs it."""
    import subprocess
    import sys

    root = tmp_path / "site"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    man = tmp_path / "m.yaml"
    man.write_text("pp1audit: 1\ntarget: {package: pkg, record: true}\n", encoding="utf-8")
    code = (
        "import sys\nfrom pathlib import Path\nfrom pp1audit.manifest import load_manifest\n"
        "from pp1audit.run import audit\nfrom pp1audit.sources import DirectorySource\n"
        f"audit(load_manifest(Path({str(man)!r})), DirectorySource(Path({str(root)!r})))\n"
        "print(sorted(m for m in sys.modules if m.startswith(('zlib_ng', 'gzip'))))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "[]"


def test_a_fifo_in_place_of_the_archive_is_refused_without_waiting(tmp_path: Path) -> None:
    """A wheel path swapped for a FIFO after the caller's check: a plain ``open``
    would wait for a writer forever; the index refuses it on the descriptor."""
    import threading

    fifo = tmp_path / "pkg-1.0-py3-none-any.whl"
    os.mkfifo(fifo)
    outcome: list[BaseException | None] = []

    def build() -> None:
        try:
            ZipIndex(fifo)
            outcome.append(None)
        except BaseException as exc:  # handed to the test thread
            outcome.append(exc)

    t = threading.Thread(target=build, daemon=True)
    t.start()
    t.join(10)
    if t.is_alive():  # the old behaviour: release the open before failing
        with open(fifo, "wb"):
            pass
        t.join(10)
        pytest.fail("ZipIndex blocked opening a FIFO")
    assert isinstance(outcome[0], ZipError) and str(outcome[0]) == "not a regular file; not opened"


def _sparse_wheel(path: Path, method: int, declared: int) -> Path:
    """One member, ``pkg/__init__.py`` (6 bytes), whose headers declare ``declared``
    compressed bytes: the archive's central directory sits past a sparse hole, so the
    file is a few KB on disk whatever it declares (a hostile wheel's shape)."""
    data = b"x = 1\n"
    body = zlib_raw(data) if method == 8 else data
    name = b"pkg/__init__.py"
    crc = zlib_crc(data)
    with open(path, "wb") as f:
        f.write(struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, 0, method, 0, 0, crc,
                            declared, len(data), len(name), 0) + name + body)
        cd_at = 30 + len(name) + declared
        f.seek(cd_at)
        cen = struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 20, 20, 0, method, 0, 0, crc,
                          declared, len(data), len(name), 0, 0, 0, 0, 0o100644 << 16, 0) + name
        f.write(cen + struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, 1, 1, len(cen), cd_at, 0))
    return path


def zlib_raw(data: bytes) -> bytes:
    import zlib

    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    return c.compress(data) + c.flush()


def zlib_crc(data: bytes) -> int:
    import zlib

    return zlib.crc32(data)


@pytest.mark.parametrize("method", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])
def test_a_compressed_size_no_member_of_its_size_can_take_is_refused_unread(
        tmp_path: Path, method: int) -> None:
    """``read`` takes the compressed range whole: 3 GB declared for a 6-byte file would
    be 3 GB of memory (seen: 3.9 GB resident for a wheel 8 KB on disk)."""
    index = ZipIndex(_sparse_wheel(tmp_path / "t.whl", method, 3 << 30))
    member = index.member("pkg/__init__.py")
    assert member is not None and member.compressed_size == 3 << 30
    kind = "stored" if method == 0 else "deflated"
    words = f"compressed size {3 << 30} is more than {kind} data of 6 bytes can take"
    with pytest.raises(ZipError, match=words):
        index.read(member, limit=1 << 20)
    with pytest.raises(ZipError, match=words):
        list(index.stream(member))
    index.close()


@pytest.mark.parametrize("method", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])
def test_a_compressed_size_within_the_bound_is_read(tmp_path: Path, method: int) -> None:
    """The honest sizes of the same member read as before (the refusal is the bound's)."""
    honest = 6 if method == 0 else len(zlib_raw(b"x = 1\n"))
    index = ZipIndex(_sparse_wheel(tmp_path / "t.whl", method, honest))
    member = index.member("pkg/__init__.py")
    assert member is not None and index.read(member) == b"x = 1\n"
    assert b"".join(index.stream(member)) == b"x = 1\n"


@pytest.mark.parametrize("level", [0, 1, 6, 9])
@pytest.mark.parametrize("size", [0, 1, 100, 70_000, 3 << 20])
def test_the_bound_holds_for_what_real_encoders_write(level: int, size: int) -> None:
    """Incompressible data, each zlib level (0 writes stored blocks) and zlib-ng: never
    over the bound, so no real wheel is refused."""
    import zlib

    data = random.Random(size).randbytes(size)
    for lib in (zlib, zipindex.codec()[0]):
        c = lib.compressobj(level, zlib.DEFLATED, -15)
        packed = c.compress(data) + c.flush()
        member = zipindex.Member("m", 8, 0, len(packed), size, 0, 0, 0)
        assert len(packed) <= zipindex.compressed_bound(member), (lib, level, size)


def test_check_of_a_wheel_declaring_gigabytes_is_an_error_check_at_once(tmp_path: Path) -> None:
    wheel = _sparse_wheel(tmp_path / "pkg-1.0-py3-none-any.whl", 0, 3 << 30)
    manifest = tmp_path / "m.yaml"
    manifest.write_text("pp1audit: 1\ntarget:\n  package: pkg\nfiles:\n"
                        f"  pkg/__init__.py: {hashlib.sha256(b'x = 1').hexdigest()}\n")
    proc = run_cli("check", str(wheel), "-m", str(manifest), "--format", "json", timeout=20)
    assert proc.returncode == 1, proc.stderr
    import json

    (check,) = [c for c in json.loads(proc.stdout)["checks"] if c["kind"] == "file"]
    assert check["status"] == "error"
    assert "is more than stored data of 6 bytes can take" in check["message"], check
