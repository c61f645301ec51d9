"""A wheel read in place through ``zipfile`` (``sources.wheel.Zip``), and what it refuses.

Every refusal is one line: a ``ZipError`` from the reader, a ``SourceError`` (an
``error`` check) for one member, or exit 2 naming the wheel when nothing of it can
be judged; never a traceback. Archives are written by ``zipfile`` (the reference,
as pip reads them) and then damaged byte by byte.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import struct
import threading
import tracemalloc
import warnings
import zipfile
from pathlib import Path

import pytest
from conftest import REPO, run_cli
from wheeltrees import make_wheel, run, wheel_path

from pp1audit import sources
from pp1audit.errors import SourceError
from pp1audit.sources import WheelSource
from pp1audit.sources.hashing import hash_member
from pp1audit.sources.wheel import BLOCK, NotAFile, NotAZip, Zip, ZipError, install_escape

FILES = {
    "pkg/__init__.py": b"",
    "pkg/a.py": b"x = 1\n" * 500,
    "pkg/caf\u00e9.py": "name = 'caf\u00e9'\n".encode(),
    "pkg/data.bin": bytes(range(256)) * 64,
}


def write(path: Path, method: int = zipfile.ZIP_DEFLATED, zip64: bool = False,
          prefix: bytes = b"") -> Path:
    with zipfile.ZipFile(path, "w", compression=method) as zf:
        zf.writestr("pkg/", b"")
        for name, data in FILES.items():
            with zf.open(name, "w", force_zip64=zip64) as fh:
                fh.write(data)
    if prefix:
        path.write_bytes(prefix + path.read_bytes())
    return path


def manifest(tmp_path: Path, pins: dict[str, bytes]) -> Path:
    m = tmp_path / "m.yaml"
    m.write_text("pp1audit: 1\naudit: {id: t, date: 2026-01-01}\ntarget: {package: pkg}\nfiles:\n"
                 + "".join(f"  {p}: {hashlib.sha256(d).hexdigest()}\n" for p, d in pins.items()),
                 encoding="utf-8")
    return m


def checks_of(stdout: str) -> dict[str, dict[str, object]]:
    return {c["id"]: c for c in json.loads(stdout)["checks"]}


def _central(blob: bytes, name: str) -> int:
    """Offset of ``name``'s central-directory record."""
    pos = blob.find(b"PK\x01\x02")
    while blob[pos + 46 : pos + 46 + len(name.encode())] != name.encode():
        pos = blob.find(b"PK\x01\x02", pos + 4)
    return pos


# --- reading ------------------------------------------------------------------------------

@pytest.mark.parametrize("method", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])
@pytest.mark.parametrize("zip64", [False, True])
@pytest.mark.parametrize("prefix", [b"", b"#!/bin/sh\nexit 0\n"])
def test_reads_what_zipfile_wrote(tmp_path: Path, method: int, zip64: bool, prefix: bytes) -> None:
    z = Zip(write(tmp_path / "t.whl", method, zip64, prefix))
    try:
        assert sorted(z.names) == sorted(["pkg/", *FILES])
        for name, data in FILES.items():
            info = z.info(name)
            assert info is not None and z.read(info, 1 << 20) == data
            blocks = list(z.stream(info, block=100))
            assert b"".join(blocks) == data and all(len(b) <= 100 for b in blocks)
        assert z.info("pkg/missing.py") is None
        assert not z.moves and z.escaping() == {}
    finally:
        z.close()


@pytest.mark.parametrize("content", [b"", b"not a zip at all", b"PK\x05\x06" + b"\x00" * 10])
def test_no_zip_at_all(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "bad.whl"
    path.write_bytes(content)
    with pytest.raises(NotAZip, match="File is not a zip file"):
        Zip(path)


def test_a_truncated_archive_is_one_error(tmp_path: Path) -> None:
    path = write(tmp_path / "t.whl")
    blob = path.read_bytes()
    path.write_bytes(blob[:200] + blob[-22:])
    with pytest.raises(ZipError):
        z = Zip(path)
        for name in FILES:
            info = z.info(name)
            assert info is not None
            z.read(info, 1 << 20)


def test_a_fifo_in_place_of_the_archive_is_refused_without_waiting(tmp_path: Path) -> None:
    """A wheel path swapped for a FIFO after the caller's check: a plain ``open``
    (``zipfile.ZipFile(path)``) would wait for a writer for ever."""
    fifo = tmp_path / "pkg-1.0-py3-none-any.whl"
    os.mkfifo(fifo)
    outcome: list[BaseException | None] = []

    def build() -> None:
        try:
            Zip(fifo)
            outcome.append(None)
        except BaseException as exc:  # handed to the test thread
            outcome.append(exc)

    t = threading.Thread(target=build, daemon=True)
    t.start()
    t.join(10)
    if t.is_alive():
        with open(fifo, "wb"):
            pass
        pytest.fail("Zip blocked opening a FIFO")
    assert isinstance(outcome[0], NotAFile) and str(outcome[0]) == "not a regular file; not opened"


def test_one_archive_is_read_by_several_threads_at_once(tmp_path: Path) -> None:
    """The hashing threads share the archive the inventory listed."""
    path = tmp_path / "t.whl"
    data = {f"pkg/m{i}.bin": os.urandom(300_000) for i in range(8)}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, blob in data.items():
            zf.writestr(name, blob)
    z = Zip(path)
    got: dict[str, bytes | None] = {}

    def digest(name: str) -> None:
        for _ in range(5):
            got[name] = hash_member(z, name, False).sha256

    threads = [threading.Thread(target=digest, args=(n,)) for n in data]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    z.close()
    assert got == {n: hashlib.sha256(b).digest() for n, b in data.items()}


# --- corrupt members: a CRC-32 or inflate error, one line ---------------------------------

def _flip_stored(path: Path, name: str) -> None:
    """Flip one byte inside ``name``'s stored data."""
    blob = bytearray(path.read_bytes())
    at = blob.find(FILES[name][:64])
    blob[at + 10] ^= 0xFF
    path.write_bytes(bytes(blob))


@pytest.mark.parametrize(("damage", "words"), [
    ("data", "Bad CRC-32 for file 'pkg/data.bin'"),
    ("crc", "Bad CRC-32 for file 'pkg/data.bin'"),
    ("deflate", "Error -3 while decompressing data: invalid block type"),
    ("size", "size does not match the central directory"),
])
def test_a_corrupt_member_is_one_zip_error(tmp_path: Path, damage: str, words: str) -> None:
    path = write(tmp_path / "t.whl", zipfile.ZIP_STORED if damage == "data" else zipfile.ZIP_DEFLATED)
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo("pkg/data.bin")
    blob = bytearray(path.read_bytes())
    central = _central(bytes(blob), "pkg/data.bin")
    if damage == "data":
        _flip_stored(path, "pkg/data.bin")
        blob = bytearray(path.read_bytes())
    elif damage == "crc":
        blob[central + 16] ^= 0xFF  # the CRC-32 the central directory declares
    elif damage == "deflate":
        blob[info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)] = 0xFF
    else:
        blob[central + 24] += 1  # the declared size, one more than the data holds
    path.write_bytes(bytes(blob))
    z = Zip(path)
    info = z.info("pkg/data.bin")
    assert info is not None
    with pytest.raises(ZipError, match=re.escape(words)):
        z.read(info, 1 << 20)
    with pytest.raises(ZipError, match=re.escape(words)):
        b"".join(z.stream(info, block=4096))
    assert hash_member(z, "pkg/data.bin", True).error == f"cannot read from the wheel: {words}"
    z.close()


def test_a_corrupt_member_is_an_error_check_naming_it(tmp_path: Path) -> None:
    """Pinned and corrupt: that check's ``error`` (exit 1), in one line; the others judged."""
    wheel = write(tmp_path / "pkg-1.0-py3-none-any.whl", zipfile.ZIP_STORED)
    _flip_stored(wheel, "pkg/data.bin")
    m = manifest(tmp_path, {"pkg/data.bin": FILES["pkg/data.bin"], "pkg/a.py": FILES["pkg/a.py"]})
    proc = run_cli("check", str(wheel), "-m", str(m), "--format", "json", timeout=20)
    assert proc.returncode == 1 and proc.stderr == "", proc.stderr
    checks = checks_of(proc.stdout)
    assert checks["file:pkg/data.bin"]["status"] == "error"
    assert checks["file:pkg/data.bin"]["message"] == (
        "pkg/data.bin cannot read from the wheel: Bad CRC-32 for file 'pkg/data.bin'")
    assert checks["file:pkg/a.py"]["status"] == "pass"


def test_a_corrupt_member_fails_record_as_unreadable(tmp_path: Path) -> None:
    wheel = wheel_path(tmp_path, "w")
    make_wheel(wheel, {"pkg/data.bin": bytes(range(256)) * 64})
    with zipfile.ZipFile(wheel) as zf:
        info = zf.getinfo("pkg/data.bin")
    blob = bytearray(wheel.read_bytes())
    blob[info.header_offset + 30 + len(info.filename.encode()) + len(info.extra) + 5] ^= 0xFF
    wheel.write_bytes(bytes(blob))
    c = run(wheel)["record:pkg/data.bin"]
    assert c.status.value == "error"
    assert "cannot read from the wheel" in c.message and "\n" not in c.message


def test_a_corrupt_directory_offset_makes_each_member_an_error(tmp_path: Path) -> None:
    """``zipfile`` finds the directory from the end record's place, and the members
    then where none begins: each read is an error, one line each (exit 1)."""
    wheel = write(tmp_path / "pkg-1.0-py3-none-any.whl")
    blob = bytearray(wheel.read_bytes())
    at = blob.rfind(b"PK\x05\x06")
    struct.pack_into("<L", blob, at + 16, struct.unpack_from("<L", blob, at + 16)[0] + 7)
    wheel.write_bytes(bytes(blob))
    proc = run_cli("check", str(wheel), "-m", str(manifest(tmp_path, {"pkg/a.py": FILES["pkg/a.py"]})),
                   "--format", "json", timeout=20)
    assert proc.returncode == 1 and proc.stderr == "", proc.stderr
    check = checks_of(proc.stdout)["file:pkg/a.py"]
    assert (check["status"], check["message"]) == (
        "error", "pkg/a.py cannot read from the wheel: Bad magic number for file header")


@pytest.mark.parametrize(("method", "flags", "words"), [
    (zipfile.ZIP_BZIP2, 0, "unsupported compression method 12"),
    (zipfile.ZIP_LZMA, 0, "unsupported compression method 14"),
    (zipfile.ZIP_STORED, 0x1, "encrypted member"),
])
def test_members_no_wheel_holds_are_refused_unread(tmp_path: Path, method: int, flags: int,
                                                   words: str) -> None:
    """bzip2 and LZMA blocks inflate without a bound in ``zipfile``; encryption needs a key."""
    path = tmp_path / "t.whl"
    with zipfile.ZipFile(path, "w", compression=method) as zf:
        zf.writestr("pkg/a.py", b"x = 1\n" * 100)
    if flags:
        blob = bytearray(path.read_bytes())
        central = _central(bytes(blob), "pkg/a.py")
        blob[central + 8] |= flags
        path.write_bytes(bytes(blob))
    z = Zip(path)
    info = z.info("pkg/a.py")
    assert info is not None
    with pytest.raises(ZipError, match=re.escape(words)):
        z.read(info, 1 << 20)
    z.close()


# --- expansion: capped, never past the declared size --------------------------------------

def _bomb(path: Path, size: int, declared: int | None = None) -> Path:
    """A wheel whose ``pkg/bomb.bin`` inflates to ``size`` zero bytes (~1,000 to 1 deflated),
    declaring ``declared`` bytes in the central directory (default: the truth)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("pkg/__init__.py", b"")
        with zf.open("pkg/bomb.bin", "w") as fh:
            for _ in range(size >> 20):
                fh.write(bytes(1 << 20))
    if declared is not None:
        blob = bytearray(path.read_bytes())
        struct.pack_into("<L", blob, _central(bytes(blob), "pkg/bomb.bin") + 24, declared)
        path.write_bytes(bytes(blob))
    return path


def test_a_member_declaring_more_than_the_cap_is_refused_unread(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    wheel = _bomb(tmp_path / "pkg-1.0-py3-none-any.whl", 8 << 20)
    monkeypatch.setattr(sources, "MAX_READ", 4 << 20)
    monkeypatch.setattr(Zip, "stream", lambda *a, **k: pytest.fail("read"))
    with WheelSource(wheel) as source, pytest.raises(SourceError) as info:
        source.read("pkg/bomb.bin")
    assert info.value.sentence == ("pkg/bomb.bin is too large to read whole (8,388,608 bytes; "
                                   "the limit is 4 MiB)")
    z = Zip(wheel)
    bomb = z.info("pkg/bomb.bin")
    assert bomb is not None
    with pytest.raises(ZipError, match="member is 8,388,608 bytes, over the 1,048,576-byte limit"):
        z.read(bomb, 1 << 20)
    z.close()


def test_a_member_inflating_past_its_declared_size_is_cut_and_fails_its_crc(tmp_path: Path) -> None:
    """64 MiB of zeros declared as 1,000 bytes: ``zipfile`` (as pip) stops at 1,000, and
    the CRC-32 of those is not the one declared. Memory stays at a few blocks."""
    wheel = _bomb(tmp_path / "pkg-1.0-py3-none-any.whl", 64 << 20, declared=1000)
    z = Zip(wheel)
    info = z.info("pkg/bomb.bin")
    assert info is not None and info.file_size == 1000
    seen = 0
    tracemalloc.start()
    try:
        with pytest.raises(ZipError, match=re.escape("Bad CRC-32 for file 'pkg/bomb.bin'")):
            for chunk in z.stream(info):
                seen += len(chunk)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        z.close()
    assert seen <= 1000 and peak < 8 * BLOCK
    m = manifest(tmp_path, {"pkg/bomb.bin": b""})
    proc = run_cli("check", str(wheel), "-m", str(m), "--format", "json", timeout=20)
    assert proc.returncode == 1 and proc.stderr == ""
    check = checks_of(proc.stdout)["file:pkg/bomb.bin"]
    assert (check["status"], check["message"]) == (
        "error", "pkg/bomb.bin cannot read from the wheel: Bad CRC-32 for file 'pkg/bomb.bin'")


def test_a_large_member_is_hashed_in_blocks_never_held(tmp_path: Path) -> None:
    wheel = _bomb(tmp_path / "t.whl", 96 << 20)
    z = Zip(wheel)
    tracemalloc.start()
    try:
        d = hash_member(z, "pkg/bomb.bin", keep=True)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        z.close()
    assert (d.sha256, d.size, d.data) == (hashlib.sha256(bytes(96 << 20)).digest(), 96 << 20, None)
    assert d.unkept == "100,663,296 bytes, over the 16 MiB per file kept for comparison"
    assert peak < 24 << 20  # the 16 MiB kept until it is given up, and a few blocks


def test_a_compressed_size_past_the_data_is_read_as_zipfile_reads_it(tmp_path: Path) -> None:
    """A 6-byte member declaring 3 GB of compressed data (the archive is a sparse file,
    a few KB on disk): ``zipfile`` reads one block of it and stops at the declared
    size, so the member is its 6 bytes, as pip installs it, in bounded memory."""
    path = tmp_path / "t.whl"
    data, name, declared = b"x = 1\n", b"pkg/__init__.py", 3 << 30
    crc = __import__("zlib").crc32(data)
    with open(path, "wb") as f:
        f.write(struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, 0, 0, 0, 0, crc, declared, len(data),
                            len(name), 0) + name + data)
        cd_at = 30 + len(name) + declared
        f.seek(cd_at)
        cen = struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 20, 20, 0, 0, 0, 0, crc, declared,
                          len(data), len(name), 0, 0, 0, 0, 0o100644 << 16, 0) + name
        f.write(cen + struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, 1, 1, len(cen), cd_at, 0))
    z = Zip(path)
    info = z.info("pkg/__init__.py")
    assert info is not None and info.compress_size == declared
    assert z.read(info, 1 << 20) == data
    z.close()


# --- names: escaping the install directory, two members at one path ----------------------

@pytest.mark.parametrize("name", ["../x.py", "/abs.py", "pkg/../../y.py", "..\\x.py",
                                  "pkg/..\\..\\evil.py", "C:\\x.py", "pkg-1.0.data/purelib/../../../z.py"])
def test_a_name_escaping_the_install_directory_is_found(tmp_path: Path, name: str) -> None:
    wheel = make_wheel(wheel_path(tmp_path, "w"), {name: b"evil = 1\n"})
    z = Zip(wheel)
    try:
        assert list(z.escaping()) == [name] and install_escape(name) is not None
    finally:
        z.close()


def test_escaping_members_fail_the_record_check_in_one_line_each(tmp_path: Path) -> None:
    names = ["../x.py", "/abs.py", "pkg/..\\..\\evil.py"]
    wheel = make_wheel(wheel_path(tmp_path, "w"), dict.fromkeys(names, b"evil = 1\n"))
    m = tmp_path / "m.yaml"
    m.write_text("pp1audit: 1\ntarget: {package: pkg}\n", encoding="utf-8")
    proc = run_cli("check", str(wheel), "-m", str(m), "--record", "--format", "json", timeout=60)
    assert proc.returncode == 1 and proc.stderr == "", proc.stderr
    checks = checks_of(proc.stdout)
    for name in names:
        c = checks[f"record:{name}"]
        assert c["status"] == "fail" and "outside" in str(c["message"]), c
        assert "\n" not in str(c["message"])


def _append(path: Path, name: str, data: bytes) -> Path:
    """Append member ``name`` with ``zipfile`` (which warns on a repeated name, and writes it)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with zipfile.ZipFile(path, "a", zipfile.ZIP_DEFLATED) as zf:
            zf.writestr(name, data)
    return path


def _rename(path: Path, old: str, new: bytes, utf8_flag: bool | None = None) -> None:
    """Give member ``old`` the raw name ``new`` (same length) in both of its headers."""
    blob = bytearray(path.read_bytes())
    raw = old.encode()
    assert len(new) == len(raw) and blob.count(raw) == 2
    central = _central(bytes(blob), old)
    blob[:] = blob.replace(raw, new)
    if utf8_flag is not None:
        flags = struct.unpack_from("<H", blob, central + 8)[0]
        struct.pack_into("<H", blob, central + 8, flags | 0x800 if utf8_flag else flags & ~0x800)
    path.write_bytes(bytes(blob))


@pytest.mark.parametrize(("alias", "words"), [
    ("pkg/a.py", "member 'pkg/a.py' appears twice"),
    ("pkg/./a.py", "members 'pkg/a.py' and 'pkg/./a.py' both install as 'pkg/a.py'"),
    ("pkg//a.py", "members 'pkg/a.py' and 'pkg//a.py' both install as 'pkg/a.py'"),
    ("./pkg/a.py", "members 'pkg/a.py' and './pkg/a.py' both install as 'pkg/a.py'"),
    ("pkg/sub/../a.py", "members 'pkg/a.py' and 'pkg/sub/../a.py' both install as 'pkg/a.py'"),
])
def test_two_members_installing_to_one_path_are_refused(tmp_path: Path, alias: str, words: str) -> None:
    """pip installs both, the last over the first: the audit could read the other one."""
    path = _append(write(tmp_path / "pkg-1.0-py3-none-any.whl"), alias, b"evil\n")
    with pytest.raises(ZipError, match=f"^{re.escape(words)}$"):
        Zip(path)
    proc = run_cli("check", str(path), "-m", str(manifest(tmp_path, {"pkg/a.py": FILES["pkg/a.py"]})),
                   timeout=20)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr.splitlines() == [f"pp1audit: error: {path}: not a readable wheel ({words})"]


def test_names_that_decode_alike_are_refused(tmp_path: Path) -> None:
    """A NUL cuts a name in ``zipfile``; a CP437 name (no UTF-8 flag) can decode to the
    same text as a UTF-8 one: either way two members install to one path."""
    nul = _append(write(tmp_path / "n.whl", zipfile.ZIP_STORED), "pkg/a.pyX", b"evil\n")
    _rename(nul, "pkg/a.pyX", b"pkg/a.py\0")
    with pytest.raises(ZipError, match=re.escape("member 'pkg/a.py' appears twice")):
        Zip(nul)
    cp437 = _append(write(tmp_path / "c.whl", zipfile.ZIP_STORED), "pkg/cafX.py", b"evil\n")
    _rename(cp437, "pkg/cafX.py", b"pkg/caf\x82.py", utf8_flag=False)  # 0x82 is e-acute in CP437
    with pytest.raises(ZipError, match=re.escape("member 'pkg/caf\u00e9.py' appears twice")):
        Zip(cp437)


def test_cli_refuses_the_vllm_wheel_with_a_hidden_runner(tmp_path: Path, vllm_wheel: Path) -> None:
    """The real wheel with an evil copy of a pinned file appended: pip would install
    the evil copy; the check must not pass it, even with --record."""
    name = "vllm/v1/worker/gpu/model_runner.py"
    m = str(REPO / "manifests" / "examples" / "vllm-0.31.0.yaml")
    assert run_cli("check", str(vllm_wheel), "-m", m).returncode == 0
    evil = tmp_path / vllm_wheel.name
    shutil.copyfile(vllm_wheel, evil)
    with zipfile.ZipFile(vllm_wheel) as zf:
        runner = zf.read(name)
    _append(evil, name, runner + b"\nimport os; os.system('echo PWNED')\n")
    proc = run_cli("check", str(evil), "-m", m, "--record")
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr.splitlines() == [
        f"pp1audit: error: {evil}: not a readable wheel (member '{name}' appears twice)"]


def test_a_directory_run_never_imports_zipfile(tmp_path: Path) -> None:
    """``zipfile`` with zlib, bz2 and lzma costs ~3 ms to import, and only a wheel needs it."""
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
        "print(sorted(m for m in sys.modules if m in ('zipfile', 'bz2', 'lzma')))\n"
    )
    path = os.pathsep.join([str(REPO), *sys.path])  # without site: nothing imported by a .pth
    proc = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True,
                          check=True, env={**os.environ, "PYTHONPATH": path})
    assert proc.stdout.strip() == "[]"
