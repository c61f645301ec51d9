"""Bad inputs: one line naming the file (and line:column for manifests), exit 2 or
an ``error`` check, within 5 s, and no output file left behind."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import REPO, run_cli

H = "a" * 64
GOOD = "pp1audit: 1\ntarget:\n  package: pkg\n"


def manifest_errors() -> list[tuple[str, str, str]]:
    """(name, manifest text, expected "line:column: message" fragment)."""
    return [
        ("duplicate key", GOOD + "files:\n  pkg/a.py: " + H + "\n  pkg/a.py: " + H + "\n",
         ":6:3: duplicate key 'pkg/a.py'"),
        ("unknown key", GOOD + "filez: {}\n", ":4:1: unknown key 'filez'"),
        ("unknown nested key", GOOD + "citations:\n  c:\n    at: pkg/a.py:1\n    ancor: {}\n",
         ":7:5: unknown key 'ancor'"),
        ("short digest", GOOD + "files:\n  pkg/a.py: abc\n", ":5:13: not a SHA-256 digest"),
        ("reversed range", GOOD + "files:\n  pkg/a.py: " + H + "\ncitations:\n  c:\n    at: pkg/a.py:9-3\n",
         ":8:9: 'pkg/a.py:9-3': the range is reversed"),
        ("zero line", GOOD + "files:\n  pkg/a.py: " + H + "\ncitations:\n  c:\n    at: pkg/a.py:0-3\n",
         ":8:9: 'pkg/a.py:0-3': lines are 1-based"),
        ("absolute path", GOOD + "files:\n  /etc/passwd: " + H + "\n", ":5:3: absolute path"),
        ("dotdot path", GOOD + "files:\n  pkg/../../x: " + H + "\n", ":5:3: path contains '..'"),
        ("dotdot citation", GOOD + "citations:\n  c:\n    at: ../x.py:1\n    anchor: {exact: x}\n",
         ":6:9: path contains '..'"),
        ("unverifiable citation", GOOD + "citations:\n  c:\n    at: pkg/a.py:1-2\n",
         ":5:3: citation cannot be verified"),
        ("anchor length", GOOD + "citations:\n  c:\n    at: pkg/a.py:1-2\n    anchor: {exact: x}\n",
         ":7:21: anchor text has 1 lines but the span pkg/a.py:1-2 has 2"),
        ("blank anchor", GOOD + "citations:\n  c:\n    at: pkg/a.py:1\n    anchor: {exact: ' '}\n",
         "anchor text is blank"),
        ("alias", GOOD + "files: &f {}\nsources: *f\n", ":5:10: YAML aliases are not allowed"),
        ("alias cycle", GOOD + "audit: &a {id: x, title: [*a]}\n", "YAML aliases are not allowed"),
        ("deep nesting", GOOD + "x: " + "[" * 3000 + "]" * 3000 + "\n", ":4:36: nested deeper than 32"),
        ("bad date", GOOD + "audit: {id: x, date: 2026-13-45}\n", ":4:22: '2026-13-45' is not a calendar"),
        ("digest with newline", GOOD + "files:\n  pkg/a.py: |\n    " + H + "\n",
         ":5:13: not a SHA-256 digest"),
        ("heading reference", GOOD + "report:\n  sections:\n    - heading: '[[cite:nope]]'\n",
         ":6:17: [[cite:nope]]: no citation 'nope' in the manifest"),
        ("title reference", GOOD + "audit: {id: x, title: 'See [[x]]'}\n", ":4:28: [[x]]: not a reference"),
        ("invariant in an unknown source", GOOD + "invariants:\n  i:\n    source: lane\n"
         "    file: pkg/a.py\n    evidence: {rule: {pattern: x = 1}}\n", ":6:13: no source 'lane'"),
        ("anchor without text", GOOD + "citations:\n  c:\n    at: pkg/a.py:1-2\n    anchor: {prefix: x}\n",
         ":7:13: an anchor needs 'exact' text"),
        ("unknown evidence", GOOD + "report:\n  sections:\n    - blocks:\n        - text: hi\n"
         "          evidence: [nope]\n", ":8:22: unknown evidence id 'nope'"),
        ("bad reference", GOOD + "report:\n  sections:\n    - blocks:\n        - text: '[[cite:zz]]'\n",
         ":7:18: [[cite:zz]]: no citation 'zz' in the manifest"),
        ("bad yaml", GOOD + "files: [\n", ":5:1: invalid YAML"),
        ("python tag", GOOD + "x: !!python/object/apply:os.system ['true']\n", ":4:4: unsupported YAML tag"),
        ("wrong format version", "pp1audit: 7\ntarget: {package: pkg}\n", ":1:11: 1 was expected"),
        ("not a mapping", "- 1\n- 2\n", ":1:1: the manifest must be a mapping"),
        ("empty", "", ":1:1: the manifest is empty"),
    ]


CASES = manifest_errors()


@pytest.mark.parametrize(("name", "text", "expected"), CASES, ids=[e[0] for e in CASES])
def test_invalid_manifest_is_exit_2_with_line_and_column(
    tmp_path: Path, make_files: Callable[..., Path], name: str, text: str, expected: str
) -> None:
    tree = make_files({"pkg/__init__.py": "", "pkg/a.py": "x = 1\n"})
    manifest = tmp_path / "bad.yaml"
    manifest.write_text(text)
    out = tmp_path / "out.json"
    proc = run_cli("check", str(tree), "-m", str(manifest), "--format", "json", "-o", str(out), timeout=5)
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert str(manifest) in lines[0]
    assert expected in lines[0]
    assert "Traceback" not in proc.stderr
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name != "tree"] == ["bad.yaml"]


def test_non_utf8_manifest(tmp_path: Path, make_files: Callable[..., Path]) -> None:
    tree = make_files({"pkg/__init__.py": ""})
    manifest = tmp_path / "bad.yaml"
    manifest.write_bytes(GOOD.encode() + b"audit: {id: x, title: \xff}\n")
    proc = run_cli("check", str(tree), "-m", str(manifest), timeout=5)
    assert proc.returncode == 2
    assert f"{manifest}:4:23: not UTF-8 text" in proc.stderr


@pytest.mark.parametrize("target", ["missing-dir", "file.txt", "no-package"])
def test_unusable_target_is_exit_2(tmp_path: Path, make_files: Callable[..., Path], target: str) -> None:
    make_files({"file.txt": "hello", "no-package/other/__init__.py": ""}, root=tmp_path)
    manifest = tmp_path / "m.yaml"
    manifest.write_text(GOOD)
    proc = run_cli("check", str(tmp_path / target), "-m", str(manifest), timeout=5)
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1
    assert str(tmp_path / target) in proc.stderr


def test_corrupt_wheel_is_exit_2(tmp_path: Path) -> None:
    wheel = tmp_path / "pkg-1.0-py3-none-any.whl"
    wheel.write_bytes(b"PK\x03\x04 not really a zip")
    manifest = tmp_path / "m.yaml"
    manifest.write_text(GOOD)
    proc = run_cli("check", str(wheel), "-m", str(manifest), timeout=5)
    assert proc.returncode == 2
    assert f"{wheel}: not a readable wheel" in proc.stderr


@pytest.mark.parametrize("kind", ["fifo", "device", "directory"])
def test_manifest_that_is_not_a_regular_file(tmp_path: Path, kind: str) -> None:
    if kind == "fifo":
        manifest = tmp_path / "m.yaml"
        os.mkfifo(manifest)
    elif kind == "device":
        manifest = Path("/dev/zero")
    else:
        manifest = tmp_path
    proc = run_cli("check", str(tmp_path), "--manifest", str(manifest), timeout=5)
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1
    assert str(manifest) in proc.stderr and "Traceback" not in proc.stderr


def test_config_that_is_a_fifo_does_not_hang(tmp_path: Path, vllm_tree: Path) -> None:
    fifo = tmp_path / "pp1audit.toml"
    os.mkfifo(fifo)
    proc = run_cli("check", str(vllm_tree), "--config", str(fifo), timeout=5)
    assert proc.returncode == 2
    assert f"{fifo}: not a regular file" in proc.stderr


def test_report_check_against_a_fifo_does_not_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "audit.md"
    os.mkfifo(fifo)
    proc = run_cli("report", "--check", str(fifo), timeout=5)
    assert proc.returncode == 2
    assert f"{fifo}: not a regular file" in proc.stderr


def test_usage_errors_are_one_line(tmp_path: Path) -> None:
    for args in (["check"], ["check", str(tmp_path), "--format", "xml"], ["check", str(tmp_path), "-m",
                                                                            str(tmp_path)]):
        proc = run_cli(*args, timeout=5)
        assert proc.returncode == 2, args
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("pp1audit: error: "), proc.stderr


def test_missing_manifest_and_bad_option(tmp_path: Path) -> None:
    proc = run_cli("check", str(tmp_path), "-m", str(tmp_path / "nope.yaml"), timeout=5)
    assert proc.returncode == 2
    assert f"{tmp_path / 'nope.yaml'}: manifest not found" in proc.stderr
    proc = run_cli("check", "--format", "xml", str(tmp_path), timeout=5)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr


def _tree_manifest(tmp_path: Path, files: dict[str, str], cites: dict[str, str]) -> Path:
    text = GOOD + "files:\n" + "".join(f"  {p}: {d}\n" for p, d in files.items())
    if cites:
        text += "citations:\n" + "".join(f"  {c}:\n    at: {at}\n" for c, at in cites.items())
    manifest = tmp_path / "m.yaml"
    manifest.write_text(text)
    return manifest


def _checks(proc_stdout: str) -> dict[str, dict]:
    return {c["id"]: c for c in json.loads(proc_stdout)["checks"]}


def test_bad_files_in_tree_are_error_checks_not_crashes(
    tmp_path: Path, make_files: Callable[..., Path]
) -> None:
    secret = tmp_path / "secret.py"
    secret.write_text("password = 1\n")
    tree = make_files({
        "pkg/__init__.py": "",
        "pkg/good.py": "a = 1\nb = 2\n",
        "pkg/latin1.py": "x = 'caf\xe9'\n".encode("latin-1"),
        "pkg/blob.bin": b"\x00\x01\x02binary",
    })
    os.mkfifo(tree / "pkg" / "fifo.py")
    os.symlink(secret, tree / "pkg" / "escape.py")
    os.symlink("loop.py", tree / "pkg" / "loop.py")
    (tree / "pkg" / "adir.py").mkdir()
    digest = hashlib.sha256(b"a = 1\nb = 2\n").hexdigest()
    names = ["good", "latin1", "blob", "fifo", "escape", "loop", "adir", "gone"]
    files = {f"pkg/{n}.{'bin' if n == 'blob' else 'py'}": digest for n in names}
    cites = {f"cite-{n}": f"{p}:1" for n, p in zip(names, files, strict=True)}
    manifest = _tree_manifest(tmp_path, files, cites)
    proc = run_cli("check", str(tree), "-m", str(manifest), "--format", "json", timeout=5)
    assert proc.returncode == 1, proc.stderr
    checks = _checks(proc.stdout)
    assert checks["file:pkg/good.py"]["status"] == "pass"
    assert checks["cite-good"]["status"] == "pass"
    assert checks["file:pkg/latin1.py"]["status"] == "fail"  # bytes hash fine; they differ
    assert checks["cite-latin1"]["status"] == "error"
    assert "not UTF-8 text" in checks["cite-latin1"]["message"]
    assert checks["cite-blob"]["status"] == "error"
    for kind in ("file:", "cite-"):
        sep = "pkg/" if kind == "file:" else ""
        fifo = checks[f"{kind}{sep}fifo.py" if kind == "file:" else "cite-fifo"]
        assert fifo["status"] == "error" and "is a FIFO; not opened" in fifo["message"]
    for name in ("escape", "loop", "adir"):
        assert checks[f"file:pkg/{name}.py"]["status"] == "error"
        assert checks[f"cite-{name}"]["status"] == "error"
    assert "outside the target root" in checks["file:pkg/escape.py"]["message"]
    assert "outside the target root" in checks["cite-escape"]["message"]
    assert "is a directory" in checks["file:pkg/adir.py"]["message"]
    assert checks["file:pkg/gone.py"]["status"] == "fail"
    assert "missing from the target" in checks["file:pkg/gone.py"]["message"]
    for check in checks.values():
        assert "\n" not in check["message"]


def test_unreadable_file_is_error_check(tmp_path: Path, make_files: Callable[..., Path]) -> None:
    tree = make_files({"pkg/__init__.py": "", "pkg/a.py": "a = 1\n"})
    (tree / "pkg" / "a.py").chmod(0)
    manifest = _tree_manifest(tmp_path, {"pkg/a.py": H}, {})
    proc = run_cli("check", str(tree), "-m", str(manifest), "--format", "json", timeout=20, as_user=True)
    assert proc.returncode == 1, proc.stderr
    check = _checks(proc.stdout)["file:pkg/a.py"]
    assert check["status"] == "error" and "Permission denied" in check["message"], check


def test_package_dir_target_cannot_read_outside_it(tmp_path: Path, make_files: Callable[..., Path]) -> None:
    tree = make_files({"pkg/__init__.py": "", "other/x.py": "x = 1\n"})
    manifest = _tree_manifest(tmp_path, {"other/x.py": H}, {})
    proc = run_cli("check", str(tree / "pkg"), "-m", str(manifest), "--format", "json", timeout=5)
    assert proc.returncode == 1
    check = _checks(proc.stdout)["file:other/x.py"]
    assert check["status"] == "error" and "outside the package directory" in check["message"]


def test_package_dir_target_is_audited_not_a_nested_copy_inside_it(
        tmp_path: Path, make_files: Callable[..., Path]) -> None:
    """A package directory holding a pristine ``pkg/pkg/`` copy: ``import pkg``
    runs the outer (tampered) files, so those are the ones audited."""
    import hashlib

    pristine = "x = 1\n"
    tree = make_files({"pkg/__init__.py": "", "pkg/m.py": "x = 1  # tampered\n",
                       "pkg/pkg/__init__.py": "", "pkg/pkg/m.py": pristine})
    digest = hashlib.sha256(pristine.encode()).hexdigest()
    manifest = _tree_manifest(tmp_path, {"pkg/m.py": digest}, {})
    proc = run_cli("check", str(tree / "pkg"), "-m", str(manifest), "--format", "json", timeout=5)
    assert proc.returncode == 1, proc.stdout
    assert _checks(proc.stdout)["file:pkg/m.py"]["status"] == "fail"
    proc = run_cli("check", str(tree), "-m", str(manifest), "--format", "json", timeout=5)
    assert _checks(proc.stdout)["file:pkg/m.py"]["status"] == "fail"  # and as site-packages


def test_a_huge_file_at_a_pinned_path_is_an_error_not_exhausted_memory(
        tmp_path: Path, make_files: Callable[..., Path]) -> None:
    """A sparse 8 GB file costs no disk but would cost 8 GB of memory read whole."""
    from pp1audit.sources import MAX_READ

    tree = make_files({"pkg/__init__.py": "", "pkg/a.py": "a = 1\n"})
    with open(tree / "pkg" / "big.so", "wb") as f:
        f.truncate(8 << 30)
    manifest = _tree_manifest(tmp_path, {"pkg/big.so": H, "pkg/a.py": H}, {})
    proc = run_cli("check", str(tree), "-m", str(manifest), "--format", "json", timeout=20)
    assert proc.returncode == 1, proc.stderr
    check = _checks(proc.stdout)["file:pkg/big.so"]
    assert check["status"] == "error"
    assert check["message"] == (f"pkg/big.so is too large to read whole ({8 << 30:,} bytes; "
                                f"the limit is {MAX_READ >> 20} MiB)")
    assert _checks(proc.stdout)["file:pkg/a.py"]["status"] == "fail"  # the rest still judged


def test_wheel_with_symlink_entry_is_not_read(tmp_path: Path) -> None:
    import stat
    import zipfile

    wheel = tmp_path / "pkg-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("pkg/__init__.py", "")
        link = zipfile.ZipInfo("pkg/link.py")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        zf.writestr(link, "/etc/passwd")
    manifest = _tree_manifest(tmp_path, {"pkg/link.py": H}, {})
    proc = run_cli("check", str(wheel), "-m", str(manifest), "--format", "json", timeout=5)
    assert proc.returncode == 1
    check = _checks(proc.stdout)["file:pkg/link.py"]
    assert check["status"] == "error" and "symbolic link" in check["message"]


def test_wheel_with_an_undecodable_member_name(tmp_path: Path) -> None:
    """A name flagged UTF-8 that is not: ``zipfile`` (and so pip) cannot open the
    archive, so nothing of it can be judged: exit 2, one line naming the wheel."""
    import zipfile

    wheel = tmp_path / "pkg-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("pkg/__init__.py", "")
        zf.writestr("pkg/bad-\u00e9.py", "x = 1\n")  # written with the UTF-8 flag
    blob = wheel.read_bytes().replace("bad-\u00e9".encode(), b"bad-\xff\xfe")
    wheel.write_bytes(blob)
    manifest = _tree_manifest(tmp_path, {"pkg/caf\u00e9.py": H, "pkg/__init__.py": H}, {})
    proc = run_cli("check", str(wheel), "-m", str(manifest), "--format", "json", timeout=5)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == [
        f"pp1audit: error: {wheel}: not a readable wheel ('utf-8' codec can't decode byte 0xff "
        "in position 8: invalid start byte)"]


def test_hostile_version_file_is_an_error_check(tmp_path: Path, make_files: Callable[..., Path]) -> None:
    tree = make_files({"pkg/__init__.py": "", "pkg/_version.py": "x = " + "-" * 200_000 + "1\n"})
    manifest = tmp_path / "m.yaml"
    manifest.write_text(GOOD + "  version: '1.0'\n")
    proc = run_cli("check", str(tree), "-m", str(manifest), "--format", "json", timeout=10)
    assert proc.returncode == 1, proc.stderr
    assert _checks(proc.stdout)["version"]["status"] == "error"


def test_an_error_naming_an_odd_path_stays_one_line(tmp_path: Path) -> None:
    odd = tmp_path / "no\nsuch\x1b[2J"
    proc = run_cli("check", str(odd), "-m", str(REPO / "manifests/examples/vllm-0.31.0.yaml"))
    assert proc.returncode == 2
    assert proc.stderr == f"pp1audit: error: {tmp_path}/no\\nsuch\\x1b[2J: no such file or directory\n"


@pytest.mark.parametrize("command", [("check",), ("report",), ("pin",), ("show", "pkg/a.py:1")])
def test_a_target_without_the_package_is_exit_2_for_a_directory_and_a_wheel(
        tmp_path: Path, command: tuple[str, ...]) -> None:
    """Nothing could be judged on either (every pin would be "missing"): the wrong target
    was given. A wheel of another project used to be judged, every check a fail."""
    import zipfile

    manifest = tmp_path / "m.yaml"
    manifest.write_text(GOOD + "files:\n  pkg/a.py: " + H + "\n")
    (tmp_path / "site" / "other").mkdir(parents=True)
    wheel = tmp_path / "other-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("other/__init__.py", "")
        zf.writestr("pkg.py", "")  # a module named like the package is not the package
    name, *rest = command
    for target, words in ((tmp_path / "site", "no 'pkg' package here; give site-packages, the "
                           "package directory or a .whl file"),
                          (wheel, "no 'pkg' package in this wheel (it installs no file under "
                           "pkg/)")):
        proc = run_cli(name, str(target), *rest, "-m", str(manifest))
        assert proc.returncode == 2, (target, proc.stdout, proc.stderr)
        assert proc.stderr == f"pp1audit: error: {target}: {words}\n", proc.stderr


def test_a_wheel_installing_the_package_from_its_data_directory_is_judged(tmp_path: Path) -> None:
    import zipfile

    manifest = tmp_path / "m.yaml"
    manifest.write_text(GOOD + "files:\n  pkg/a.py: "
                        + hashlib.sha256(b"a = 1\n").hexdigest() + "\n")
    wheel = tmp_path / "pkg-1.0-cp311-cp311-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("pkg-1.0.data/platlib/pkg/a.py", "a = 1\n")
        zf.writestr("pkg-1.0.data/platlib/pkg/_version.py", "__version__ = '1.0'\n")
    proc = run_cli("check", str(wheel), "-m", str(manifest), "--format", "json")
    assert proc.returncode == 0, (proc.stdout, proc.stderr)


@pytest.mark.parametrize(("args", "param", "command"), [
    (["check", "", "-m", "{m}"], "'TARGET'", "check"),
    (["check", "{t}", "-m", ""], "'--manifest' / '-m'", "check"),
    (["check", "{t}", "-m", "{m}", "-o", ""], "'--output' / '-o'", "check"),
    (["check", "{t}", "-m", "{m}", "--config", ""], "'--config'", "check"),
    (["check", "{t}", "-m", "{m}", "--cache-dir", ""], "'--cache-dir'", "check"),
    (["report", "", "-m", "{m}"], "'[TARGET]'", "report"),
    (["diff", "{t}", "", "-m", "{m}"], "'NEW'", "diff"),
    (["pin", "", "-m", "{m}"], "'TARGET'", "pin"),
])
def test_an_empty_path_is_refused_not_read_as_the_current_directory(
        tmp_path: Path, make_files: Callable[..., Path], args: list[str], param: str,
        command: str) -> None:
    """pathlib reads "" as ".": ``check "$SITE"`` with SITE unset judged the current
    directory (here one holding the package, so it would have passed)."""
    tree = make_files({"pkg/__init__.py": "", "pkg/_version.py": "__version__ = '1.0'\n"})
    manifest = tmp_path / "m.yaml"
    manifest.write_text(GOOD + "  version: '1.0'\n")
    here = {"PYTHONPATH": str(REPO)}  # this checkout's code, run from the tree
    assert run_cli("check", ".", "-m", str(manifest), cwd=tree, env=here).returncode == 0
    proc = run_cli(*(a.format(t=tree, m=manifest) for a in args), cwd=tree, env=here)
    assert proc.returncode == 2
    assert proc.stderr == (f"pp1audit: error: Invalid value for {param}: an empty path (an "
                           f"unset shell variable?) (see 'pp1audit {command} --help')\n")
