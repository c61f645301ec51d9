"""Entry points in the package's own groups: code the package imports and runs at start-up.

vLLM imports and calls every entry point of ``vllm.general_plugins`` (and four
more ``vllm.*`` groups) that *any* installed distribution declares, so a
foreign ``*.dist-info/entry_points.txt`` beside it is code vLLM runs. The parser
is checked against ``importlib.metadata`` itself (the files Python reads are
the ones judged), the check on hand-made trees and on the real vLLM tree.
"""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest
from conftest import replace_file
from recordtrees import bad, install, record_row, run, wheel_of
from startuptrees import HELPER, add_dist

from pp1audit.checks.entrypoints import (
    ENTRY_POINTS_MAX,
    FINDINGS_PER_FILE,
    EntryPointsError,
    judge,
    parse_entry_points,
)
from pp1audit.checks.record import RecordRun
from pp1audit.checks.record_judge import record_checks
from pp1audit.result import Check, Status
from pp1audit.sources import DirectorySource

# What importlib.metadata makes of odd but valid files (CPython 3.10-3.13 alike).
ODD = {
    "brackets": "[[pkg.plugins]]\nx = helper:register\n",
    "spaces": "  [pkg.plugins]  \n\t x   =   helper : register  \n",
    "before-group": "orphan line without equals\n[pkg.plugins]\nx=helper:register\n",
    "comments": "# [pkg.plugins]\n[pkg.plugins]\n# y = no\n\nx = helper:register\n",
    "formfeed-ends-a-line": "[pkg.plugins]\fx = helper:register\n",
    "u2028-ends-a-line": "[pkg.plugins]\u2028x = helper:register\n",
    "bom-hides-the-group": "\ufeff[pkg.plugins]\nx = helper:register\n[other]\ny = z\n",
    "crlf": "[pkg.plugins]\r\nx = helper:register\r\n",
    "equals-in-value": "[pkg.plugins]\nx = a = b\n=\n",
    "case-sensitive-keys": "[pkg.plugins]\nName = a:b\nname = c:d\nname = e:f\n",
    "empty-group": "[]\nx = y\n",
}


def _importlib_view(tmp_path: Path, text: str | bytes) -> list[tuple[str, str, str]]:
    meta = tmp_path / "odd-1.0.dist-info"
    meta.mkdir(exist_ok=True)
    data = text.encode("utf-8") if isinstance(text, str) else text
    (meta / "entry_points.txt").write_bytes(data)
    return [(e.group, e.name, e.value) for e in importlib.metadata.PathDistribution(meta).entry_points]


@pytest.mark.parametrize("case", sorted(ODD))
def test_parsed_exactly_as_importlib_metadata(tmp_path: Path, case: str) -> None:
    expected = _importlib_view(tmp_path, ODD[case])
    got = [(e.group, e.name, e.value) for e in parse_entry_points(ODD[case].encode(), "f")]
    assert got == expected


@pytest.mark.parametrize(("data", "error"), [
    (b"[pkg.plugins]\nx = a:b\nno equals here\n", "f:3: 'no equals here' in group [pkg.plugins] has no '='"),
    (b"[pkg.plugins]\nx = \xff\n", "f: not UTF-8 (invalid start byte at byte 18)"),
])
def test_malformed_is_an_error_where_importlib_metadata_raises(tmp_path: Path, data: bytes,
                                                              error: str) -> None:
    with pytest.raises((TypeError, UnicodeDecodeError)):
        _importlib_view(tmp_path, data)
    with pytest.raises(EntryPointsError) as exc:
        parse_entry_points(data, "f")
    assert str(exc.value).startswith(error)


def test_judge_own_and_foreign() -> None:
    eps = parse_entry_points(b"[pkg.plugins]\na = pkg.x:f\nb = other:f\nc = ???\n"
                             b"[console_scripts]\nd = other:f\n[pkgx.plugins]\ne = other:f\n", "f")
    found, passed = judge("pkg-1.0.dist-info", eps, "pkg", own=True)
    assert passed == 1
    assert [f.id for f in found] == ["plugin:pkg-1.0.dist-info/entry_points.txt:3",
                                     "plugin:pkg-1.0.dist-info/entry_points.txt:4"]
    assert "names module 'other', outside pkg/" in found[0].message
    assert "names no module importlib.metadata can parse" in found[1].message
    found, passed = judge("pkg-1.0.dist-info", eps, "pkg", own=True, unvouched="why")
    assert passed == 0 and len(found) == 3
    found, passed = judge("other-1.0.dist-info", eps, "pkg", own=False)
    assert passed == 0 and len(found) == 3  # console_scripts and pkgx.* are not pkg's groups


# --- the check on hand-made trees -------------------------------------------------------------





def plugins(checks: dict[str, Check]) -> dict[str, Check]:
    return {k: c for k, c in checks.items() if k.startswith("plugin:")}


def importlib_plugins(root: Path) -> set[tuple[str, str, str, str]]:
    """What ``importlib.metadata`` hands ``pkg``: (dist-info, group, name, value) in ``pkg.*`` groups."""
    out = set()
    for dist in importlib.metadata.distributions(path=[str(root)]):
        for ep in dist.entry_points:
            if ep.group.startswith("pkg."):
                out.add((os.path.basename(str(dist._path)), ep.group, ep.name, ep.value))  # type: ignore[attr-defined]
    return out


def test_a_foreign_plugin_fails_naming_dist_group_name_and_target(tmp_path: Path) -> None:
    root = install(tmp_path / "site")
    add_dist(root, "[console_scripts]\nhelper = helper:main\n\n[pkg.plugins]\nhelper = helper:register\n")
    assert importlib_plugins(root) == {(HELPER, "pkg.plugins", "helper", "helper:register")}
    checks = run(root)
    assert list(bad(checks)) == [f"plugin:{HELPER}/entry_points.txt:5"]
    c = checks[f"plugin:{HELPER}/entry_points.txt:5"]
    assert c.status is Status.FAIL and c.path == f"{HELPER}/entry_points.txt"
    assert c.message == (
        f"{HELPER}/entry_points.txt:5: [pkg.plugins] helper = helper:register — declared by {HELPER}, "
        "not by the audited distribution: pkg imports and runs it at start-up (it loads its plugin "
        "groups from every installed distribution), and nothing audited vouches for it")
    assert "(1 entry-point problem(s) reported separately)" in checks["shadowing"].message


def test_foreign_entry_points_outside_the_packages_groups_pass(tmp_path: Path) -> None:
    root = install(tmp_path / "site")
    add_dist(root, "[console_scripts]\nh = helper:main\n[pkgx.plugins]\na = helper:f\n"
                   "[PKG.plugins]\nb = helper:f\n[ pkg]\nc = helper:f\n[pkg]\nd = helper:f\n")
    assert importlib_plugins(root) == set()
    checks = run(root)
    assert bad(checks) == {}
    assert "no entry point in pkg.* groups; 1 entry_points.txt file(s) read" in checks["shadowing"].message


@pytest.mark.parametrize(("meta", "text"), [
    (HELPER, "[[pkg.plugins]]\nx = helper:register\n"),
    (HELPER, "\t[pkg.plugins]\nx=helper:register\n"),
    (HELPER, "[pkg.plugins]\fx = helper:register\n"),
    ("Helper-1.0.DIST-INFO", "[pkg.plugins]\nx = helper:register\n"),  # importlib matches any case
    ("helper-1.0.egg-info", "[pkg.plugins]\nx = helper:register\n"),
    ("pkg-0.9.dist-info", "[pkg.plugins]\nx = helper:register\n"),  # a second pkg is not the audited one
])
def test_every_foreign_plugin_importlib_loads_is_found(tmp_path: Path, meta: str, text: str) -> None:
    root = install(tmp_path / "site")
    add_dist(root, text, meta=meta)
    loaded = importlib_plugins(root)
    assert {(m, g, n, v) for m, g, n, v in loaded} == {(meta, "pkg.plugins", "x", "helper:register")}
    found = plugins(run(root))
    assert len(found) == 1
    (check,) = found.values()
    assert check.status is Status.FAIL and check.path == f"{meta}/entry_points.txt"
    assert "[pkg.plugins] x = helper:register — declared by" in check.message


def test_own_entry_points_pass_only_when_record_vouches_and_they_point_inside(tmp_path: Path) -> None:
    root = install(tmp_path / "site")
    own = root / "pkg-1.0.dist-info" / "entry_points.txt"
    own.write_text("[pkg.plugins]\nbuiltin = pkg.mod:answer\n", encoding="utf-8")
    record = root / "pkg-1.0.dist-info" / "RECORD"
    clean = record.read_text(encoding="utf-8")
    record.write_text(",".join(record_row(root, "pkg-1.0.dist-info/entry_points.txt")) + "\n" + clean,
                      encoding="utf-8")
    checks = run(root)
    assert bad(checks) == {}
    assert ("1 entry point(s) in pkg.* groups, all declared by pkg-1.0.dist-info and vouched for by "
            "its RECORD") in checks["shadowing"].message

    replace_file(own, b"[pkg.plugins]\nbuiltin = helper:register\n")  # same length: RECORD says modified
    checks = run(root)
    assert set(bad(checks)) == {"record:pkg-1.0.dist-info/entry_points.txt",
                                "plugin:pkg-1.0.dist-info/entry_points.txt:2"}
    own_id = "plugin:pkg-1.0.dist-info/entry_points.txt:2"
    assert ("declared by the audited distribution, but pkg-1.0.dist-info/entry_points.txt is not the "
            "one its RECORD vouches for (modified:") in checks[own_id].message

    record.write_text(clean, encoding="utf-8")  # not listed at all: nothing else notices
    checks = run(root)
    assert list(bad(checks)) == ["plugin:pkg-1.0.dist-info/entry_points.txt:2"]
    assert "(pkg-1.0.dist-info/RECORD does not list it)" in checks[
        "plugin:pkg-1.0.dist-info/entry_points.txt:2"].message

    record.write_text(",".join(record_row(root, "pkg-1.0.dist-info/entry_points.txt")) + "\n" + clean,
                      encoding="utf-8")  # vouched for, but it runs helper.py, not pkg
    checks = run(root)
    assert list(bad(checks)) == ["plugin:pkg-1.0.dist-info/entry_points.txt:2"]
    assert ("declared by the audited distribution, but it names module 'helper', outside pkg/: pkg "
            "imports and runs code the audit does not cover") in checks[
        "plugin:pkg-1.0.dist-info/entry_points.txt:2"].message


def test_malformed_entry_points_fail_without_a_crash(tmp_path: Path) -> None:
    root = install(tmp_path / "site")
    add_dist(root, b"[console_scripts]\nh = helper:main\nbroken\n")
    add_dist(root, b"[pkg.plugins]\nx = \xff\n", meta="other-1.0.dist-info")
    checks = plugins(run(root))
    assert set(checks) == {f"plugin:{HELPER}/entry_points.txt", "plugin:other-1.0.dist-info/entry_points.txt"}
    assert checks[f"plugin:{HELPER}/entry_points.txt"].message == (
        f"malformed: {HELPER}/entry_points.txt:3: 'broken' in group [console_scripts] has no '=' (not "
        "name = value); importlib.metadata.entry_points() raises on it, for pkg's plugin discovery as "
        "for every other caller")
    assert all(c.status is Status.FAIL for c in checks.values())


def test_fifo_and_symlinks_are_never_opened_or_followed(tmp_path: Path) -> None:
    root = install(tmp_path / "site")
    d = add_dist(root, "")
    (d / "entry_points.txt").unlink()
    os.mkfifo(d / "entry_points.txt")
    elsewhere = tmp_path / "elsewhere-1.0.dist-info"
    elsewhere.mkdir()
    (elsewhere / "entry_points.txt").write_text("[pkg.plugins]\nx = helper:register\n", encoding="utf-8")
    (root / "linked-1.0.dist-info").symlink_to(elsewhere)
    # A file named as metadata: importlib.metadata finds no entry points in it.
    (root / "old-1.0.egg-info").write_text("Metadata-Version: 1.0\nName: old\n", encoding="utf-8")
    checks = plugins(run(root))  # would hang here if the FIFO were opened
    assert set(checks) == {f"plugin:{HELPER}/entry_points.txt", "plugin:linked-1.0.dist-info"}
    assert checks[f"plugin:{HELPER}/entry_points.txt"].message.startswith(
        f"{HELPER}/entry_points.txt is a FIFO: importlib.metadata opens it")
    assert checks["plugin:linked-1.0.dist-info"].message.startswith(
        "linked-1.0.dist-info is a symbolic link named as distribution metadata")
    assert all(c.status is Status.FAIL for c in checks.values())


def test_an_oversized_file_is_an_error_and_many_entries_are_capped(tmp_path: Path) -> None:
    root = install(tmp_path / "site")
    many = "[pkg.plugins]\n" + "".join(f"p{i} = helper:f\n" for i in range(FINDINGS_PER_FILE + 15))
    add_dist(root, many)
    add_dist(root, "[pkg.plugins]\n" + "#" * ENTRY_POINTS_MAX + "\n", meta="big-1.0.dist-info")
    checks = plugins(run(root))
    big = checks.pop("plugin:big-1.0.dist-info/entry_points.txt")
    assert big.status is Status.ERROR and "over the 1 MiB read" in big.message
    assert len(checks) == FINDINGS_PER_FILE + 1
    assert checks[f"plugin:{HELPER}/entry_points.txt:more"].message == (
        f"{HELPER}/entry_points.txt: 15 more entry point(s) in pkg.* groups fail like the ones above")


def test_a_long_value_is_shown_cut_and_counted(tmp_path: Path) -> None:
    root = install(tmp_path / "site")
    add_dist(root, "[pkg.plugins]\nx = helper:register" + " " * 40 + "[" + "y" * 500 + "]\n")
    (check,) = plugins(run(root)).values()
    assert "(357 more characters)" in check.message


def test_a_wheel_holds_only_its_own_dist_info(tmp_path: Path) -> None:
    root = install(tmp_path / "site", compile_pyc=False)
    whl = wheel_of(root, tmp_path, {"pkg-1.0.dist-info/entry_points.txt": "[pkg.plugins]\nx = pkg.mod:f\n"})
    with zipfile.ZipFile(whl) as zf:
        assert "pkg-1.0.dist-info/entry_points.txt" in zf.namelist()
    checks = run(whl)
    # RECORD (made before the member was added) does not list it: the own entry point is not vouched.
    assert list(plugins(checks)) == ["plugin:pkg-1.0.dist-info/entry_points.txt:2"]


def test_plugins_are_judged_only_with_record(tmp_path: Path) -> None:
    root = install(tmp_path / "site")
    add_dist(root, "[pkg.plugins]\nx = helper:register\n")
    with DirectorySource(root) as source:
        checks = record_checks(RecordRun("pkg", source, record=False))
    assert [c.id for c in checks] == ["tree"]


# --- the real vLLM tree -----------------------------------------------------------------------

VLLM_PLUGIN = textwrap.dedent("""\
    [vllm.platform_plugins]
    cuda_helper = vllm_cuda_helper:register

    [vllm.general_plugins]
    cuda_helper = vllm_cuda_helper:register
    """)


def run_vllm(target: Path) -> dict[str, Check]:
    with DirectorySource(target) as source:
        checks = record_checks(RecordRun("vllm", source, cache=None))
    return {c.id: c for c in checks}


@pytest.mark.vllm
def test_vllm_loads_a_foreign_plugin_and_the_check_fails(tree_copy: Path) -> None:
    """vLLM's own, unmodified ``load_plugins_by_group`` imports the foreign plugin (with
    ``vllm/__init__`` and ``vllm.envs`` stubbed: torch is not installed here)."""
    clean = run_vllm(tree_copy)
    assert bad(clean) == {}
    assert ("2 entry point(s) in vllm.* groups, all declared by vllm-0.31.0.dist-info and vouched "
            "for by its RECORD") in clean["shadowing"].message

    (tree_copy / "vllm_cuda_helper.py").write_text(
        "print('MARK: imported')\ndef register():\n    print('MARK: called')\n", encoding="utf-8")
    d = tree_copy / "vllm_cuda_helper-1.0.dist-info"
    d.mkdir()
    (d / "METADATA").write_text("Metadata-Version: 2.1\nName: vllm-cuda-helper\nVersion: 1.0\n",
                                encoding="utf-8")
    (d / "entry_points.txt").write_text(VLLM_PLUGIN, encoding="utf-8")
    demo = textwrap.dedent(f"""\
        import sys, types, importlib
        site = {str(tree_copy)!r}
        sys.path.insert(0, site)
        pkg = types.ModuleType("vllm"); pkg.__path__ = [site + "/vllm"]; sys.modules["vllm"] = pkg
        envs = types.ModuleType("vllm.envs"); envs.VLLM_PLUGINS = None
        sys.modules["vllm.envs"] = envs; pkg.envs = envs
        plugins = importlib.import_module("vllm.plugins")
        for func in plugins.load_plugins_by_group("vllm.general_plugins").values():
            func()
        """)
    proc = subprocess.run([sys.executable, "-I", "-c", demo], capture_output=True, text=True,
                          timeout=60, cwd=tree_copy.parent)
    assert "MARK: imported" in proc.stdout and "MARK: called" in proc.stdout, proc.stderr

    checks = run_vllm(tree_copy)
    where = "vllm_cuda_helper-1.0.dist-info/entry_points.txt"
    # Its module, which that distribution (no RECORD) does not list, fails too (review of
    # dea2ffb, item 10: top-level modules no installed RECORD lists).
    assert set(bad(checks)) == {f"plugin:{where}:2", f"plugin:{where}:5", "shadow:vllm_cuda_helper.py"}
    assert checks[f"plugin:{where}:2"].message.startswith(
        f"{where}:2: [vllm.platform_plugins] cuda_helper = vllm_cuda_helper:register — declared by "
        "vllm_cuda_helper-1.0.dist-info, not by the audited distribution: vllm imports and runs it "
        "at start-up")


@pytest.mark.vllm
def test_vllm_own_entry_points_edited_fail(tree_copy: Path) -> None:
    own = tree_copy / "vllm-0.31.0.dist-info" / "entry_points.txt"
    replace_file(own, own.read_bytes() + b"evil = vllm_evil:register\n")
    checks = run_vllm(tree_copy)
    assert set(bad(checks)) == {"record:vllm-0.31.0.dist-info/entry_points.txt",
                                "plugin:vllm-0.31.0.dist-info/entry_points.txt:5",
                                "plugin:vllm-0.31.0.dist-info/entry_points.txt:6",
                                "plugin:vllm-0.31.0.dist-info/entry_points.txt:7"}


# --- distributions elsewhere on sys.path -------------------------------------------------------


def venv_plugins(v: Path) -> list[str]:
    """The ``pkg.plugins`` entry points the venv's interpreter finds (``entry_points()``)."""
    code = ("from importlib.metadata import entry_points as e; "
            "print(sorted(f'{x.name}={x.value}' for x in e(group='pkg.plugins')))")
    return eval(subprocess.run([str(v / "bin" / "python"), "-I", "-c", code], capture_output=True,
                               text=True, check=True, timeout=60, cwd="/").stdout)


def plugin_zip(path: Path, meta: str) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(f"{meta}/METADATA", "Metadata-Version: 2.1\nName: zipped\nVersion: 1.0\n")
        zf.writestr(f"{meta}/entry_points.txt", "[pkg.plugins]\nz = zipped:register\n")
    return path


def test_a_plugin_in_a_directory_a_path_line_adds_fails(tmp_path: Path) -> None:
    from startuptrees import venv

    v, root = venv(tmp_path)
    elsewhere = tmp_path / "plugdir"
    elsewhere.mkdir()
    add_dist(elsewhere, "[pkg.plugins]\nx = helper:register\n")
    (root / "zz-paths.pth").write_text(f"{elsewhere}\n", encoding="utf-8")
    assert venv_plugins(v) == ["x=helper:register"]  # the premise
    checks = run(root)
    cid = f"plugin:{elsewhere}/{HELPER}/entry_points.txt:2"
    assert list(bad(checks)) == [cid]
    assert f"declared by {elsewhere}/{HELPER}, not by the audited distribution" in checks[cid].message
    assert f"entry_points.txt file(s) read (in the target root and {elsewhere})" \
        in checks["shadowing"].message


@pytest.mark.parametrize(("name", "meta"), [("plugins.zip", "zipped-1.0.dist-info"),
                                            ("zipped-1.0-py3.11.egg", "EGG-INFO")])
def test_a_plugin_in_a_zip_a_path_line_adds_fails(tmp_path: Path, name: str, meta: str) -> None:
    from startuptrees import venv

    v, root = venv(tmp_path)
    z = plugin_zip(tmp_path / name, meta)
    (root / "zz-paths.pth").write_text(f"{z}\n", encoding="utf-8")
    assert venv_plugins(v) == ["z=zipped:register"]  # the premise
    assert list(bad(run(root))) == [f"plugin:{z}/{meta}/entry_points.txt:2"]


@pytest.mark.parametrize("system_site", [True, False])
def test_a_plugin_in_the_system_site_packages_fails_when_they_are_let_in(
        tmp_path: Path, system_site: bool) -> None:
    from startuptrees import PYVER, fake_base, venv

    home = fake_base(tmp_path)
    base_site = home.parent / "lib" / PYVER / "site-packages"
    add_dist(base_site, "[pkg.plugins]\nx = helper:register\n")
    v, root = venv(tmp_path, f"include-system-site-packages = {str(system_site).lower()}\n", home=home)
    assert venv_plugins(v) == (["x=helper:register"] if system_site else [])  # the premise
    expected = [f"plugin:{base_site}/{HELPER}/entry_points.txt:2"] if system_site else []
    assert list(bad(run(root))) == expected


def test_a_distribution_named_as_one_earlier_on_sys_path_is_judged_all_the_same(tmp_path: Path) -> None:
    """``entry_points()`` keeps one distribution per normalised name, the first on
    sys.path: a ``Helper`` in a later directory is never loaded. The audit judges it
    all the same: which name ``entry_points()`` keys a distribution by depends on the
    target's version and on the letter case of its directory's suffix (a
    ``pip-99.DIST-INFO`` is keyed by its METADATA's Name; test_startup_more.py), so
    passing any over by its directory's name let a loaded plugin through."""
    from startuptrees import venv

    v, root = venv(tmp_path)
    add_dist(root, "[console_scripts]\nh = helper:main\n")
    elsewhere = tmp_path / "plugdir"
    elsewhere.mkdir()
    add_dist(elsewhere, "[pkg.plugins]\nx = helper:register\n", meta="Helper-2.0.dist-info")
    (root / "zz-paths.pth").write_text(f"{elsewhere}\n", encoding="utf-8")
    assert venv_plugins(v) == []  # the premise
    assert list(bad(run(root))) == [f"plugin:{elsewhere}/Helper-2.0.dist-info/entry_points.txt:2"]
