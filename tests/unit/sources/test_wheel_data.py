"""A wheel is judged as what it installs: ``<dist>.data/purelib/`` and ``platlib/``.

pip installs the members of a wheel's ``<name>-<version>.data/purelib/`` and
``.data/platlib/`` directories at the root of site-packages, after the root
members, so ``pkg-1.0.data/purelib/pkg/mod.py`` *is* ``pkg/mod.py`` once
installed, and replaces a root ``pkg/mod.py`` written before it. These tests
build small wheels (and one copy of the real vLLM wheel) with such members and
check that file pins, citations, ``show``, RECORD, the tree digest and the
bytecode check all read the installed path, and that a path two members
install to is an error naming both, never a pass.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import importlib.util
import io
import json
import py_compile
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import REPO, run_cli

from pp1audit.errors import MissingFile, SourceError
from pp1audit.sources import WheelSource, installed_path
from pp1audit.sources.inventory import UNREADABLE, WheelInventory

DIST = "pkg-1.0"
DATA = f"{DIST}.data"
INIT = b"from pkg.mod import answer\n"
MOD = b"def answer():\n    return 42\n"
EVIL = b"def answer():\n    return 'pwned'\n"
RUNNER = "vllm/v1/worker/gpu/model_runner.py"


def _row(name: str, data: bytes) -> list[str]:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return [name, f"sha256={digest}", str(len(data))]


def make_wheel(path: Path, members: dict[str, bytes], unlisted: tuple[str, ...] = ()) -> Path:
    """A wheel pip accepts: ``members``, METADATA, WHEEL and a RECORD listing every
    member (except ``unlisted``) by its member name, as wheel builders write it."""
    meta = {
        f"{DIST}.dist-info/METADATA": b"Metadata-Version: 2.1\nName: pkg\nVersion: 1.0\n",
        f"{DIST}.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                                   b"Tag: py3-none-any\n",
    }
    everything = {**members, **meta}
    buf = io.StringIO()
    rows = [_row(n, d) for n, d in everything.items() if n not in unlisted]
    csv.writer(buf, lineterminator="\n").writerows([*rows, [f"{DIST}.dist-info/RECORD", "", ""]])
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in everything.items():
            zf.writestr(name, data)
        zf.writestr(f"{DIST}.dist-info/RECORD", buf.getvalue())
    return path


def manifest(tmp_path: Path, pins: dict[str, bytes], cite: str | None = None) -> Path:
    """Pins of ``pins`` (path -> expected content) and, with ``cite``, a citation of
    the first line of ``pkg/mod.py`` anchored on ``cite``."""
    text = "pp1audit: 1\ntarget: {package: pkg}\n" + ("files:\n" if pins else "") + "".join(
        f"  {p}: {hashlib.sha256(d).hexdigest()}\n" for p, d in pins.items())
    if cite is not None:
        text += f"citations:\n  answer:\n    at: pkg/mod.py:1\n    anchor: {{exact: '{cite}'}}\n"
    out = tmp_path / "m.yaml"
    out.write_text(text, encoding="utf-8")
    return out


def check_json(target: Path, man: Path, tmp_path: Path, *extra: str) -> tuple[int, dict[str, dict]]:
    proc = run_cli("check", str(target), "-m", str(man), "--format", "json", *extra,
                   env={"PP1AUDIT_CACHE_DIR": str(tmp_path / "cache")}, timeout=300)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, {c["id"]: c for c in json.loads(proc.stdout)["checks"]}


def flagged(checks: dict[str, dict]) -> dict[str, str]:
    return {cid: c["status"] for cid, c in checks.items() if c["status"] != "pass"}


def pip_install(wheel: Path, dest: Path, *options: str) -> Path | None:
    """``pip install --no-deps --no-index --target dest wheel`` (offline), or None
    when pip cannot run here."""
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
         "--disable-pip-version-check", "--no-warn-script-location", *options,
         "--target", str(dest), str(wheel)],
        capture_output=True, text=True, timeout=600,
    )
    return dest if proc.returncode == 0 else None


@pytest.mark.parametrize("scheme", ["purelib", "platlib"])
def test_a_lib_scheme_member_is_audited_at_its_installed_path(tmp_path: Path, scheme: str) -> None:
    wheel = make_wheel(tmp_path / f"{DIST}-py3-none-any.whl",
                       {"pkg/__init__.py": INIT, f"{DATA}/{scheme}/pkg/mod.py": MOD})
    man = manifest(tmp_path, {"pkg/mod.py": MOD, "pkg/__init__.py": INIT}, cite="def answer():")
    rc, checks = check_json(wheel, man, tmp_path, "--record")
    assert (rc, flagged(checks)) == (0, {})
    assert checks["record"]["message"].startswith("4 of 4 files match pkg-1.0.dist-info/RECORD")
    assert checks["tree"]["message"].startswith("tree digest over 2 files under pkg/")
    # The pin and the citation see the installed content, not an absent file.
    bad = manifest(tmp_path, {"pkg/mod.py": EVIL}, cite="def answer():")
    rc, checks = check_json(wheel, bad, tmp_path)
    assert (rc, flagged(checks)) == (1, {"file:pkg/mod.py": "fail"})
    show = run_cli("show", str(wheel), "pkg/mod.py:1-2", "-m", str(man), timeout=30)
    assert show.returncode == 0, show.stderr
    assert "return 42" in show.stdout


def test_the_tree_digest_of_the_wheel_is_that_of_the_tree_pip_installs(tmp_path: Path) -> None:
    members = {"pkg/__init__.py": INIT, f"{DATA}/purelib/pkg/mod.py": MOD,
               f"{DATA}/platlib/pkg/sub/fast.py": b"FAST = 1\n",
               f"{DATA}/scripts/pkg-tool": b"#!python\nprint('tool')\n"}
    wheel = make_wheel(tmp_path / f"{DIST}-py3-none-any.whl", members)
    man = manifest(tmp_path, {})
    rc, from_wheel = check_json(wheel, man, tmp_path, "--record")
    assert (rc, flagged(from_wheel)) == (0, {})
    assert from_wheel["tree"]["message"].startswith("tree digest over 3 files under pkg/")
    site = pip_install(wheel, tmp_path / "site")
    if site is None:
        pytest.skip("pip cannot install a local wheel offline here")
    assert (site / "pkg" / "mod.py").read_bytes() == MOD
    rc, installed = check_json(site, man, tmp_path, "--record")
    assert installed["tree"]["actual"] == from_wheel["tree"]["actual"]
    # Unlike pip, the wheel-installed tree has no bytecode and no console script:
    # what the installed tree adds is judged there, never the package's content.
    assert not {cid for cid in flagged(installed) if cid.startswith(("file:", "citation", "tree"))}


@pytest.mark.parametrize(("first", "second"), [
    ("pkg/mod.py", f"{DATA}/purelib/pkg/mod.py"),
    ("pkg/mod.py", f"{DATA}/platlib/pkg/mod.py"),
    (f"{DATA}/purelib/pkg/mod.py", f"{DATA}/platlib/pkg/mod.py"),
])
@pytest.mark.parametrize("listed", [True, False])
def test_two_members_installing_to_one_path_are_an_error_naming_both(
    tmp_path: Path, first: str, second: str, listed: bool
) -> None:
    wheel = make_wheel(tmp_path / f"{DIST}-py3-none-any.whl",
                       {"pkg/__init__.py": INIT, first: MOD, second: EVIL},
                       unlisted=() if listed else (first, second))
    man = manifest(tmp_path, {"pkg/mod.py": MOD}, cite="def answer():")
    rc, checks = check_json(wheel, man, tmp_path, "--record")
    assert (rc, flagged(checks)) == (1, {"file:pkg/mod.py": "error", "answer": "error",
                                         "record:pkg/mod.py": "error", "tree": "error"})
    for cid in ("file:pkg/mod.py", "answer", "record:pkg/mod.py"):
        message = checks[cid]["message"]
        assert f"installed from 2 wheel members ({first}, {second})" in message.lower(), message
        assert "\n" not in message
    assert checks["tree"]["message"] == "tree digest not computable: unreadable pkg/mod.py"
    show = run_cli("show", str(wheel), "pkg/mod.py:1-2", "-m", str(man), timeout=30)
    assert (show.returncode, show.stdout) == (2, "")
    assert show.stderr.startswith("pp1audit: error: pkg/mod.py: is installed from 2 wheel members")


def test_other_schemes_keep_their_member_names(tmp_path: Path) -> None:
    """scripts, headers and data install outside site-packages: never in the package,
    still matched with RECORD at the name it gives them."""
    members = {"pkg/__init__.py": INIT, "pkg/mod.py": MOD,
               f"{DATA}/scripts/pkg/mod.py": EVIL, f"{DATA}/data/pkg/mod.py": EVIL,
               f"{DATA}/headers/pkg.h": b"int x;\n"}
    wheel = make_wheel(tmp_path / f"{DIST}-py3-none-any.whl", members)
    rc, checks = check_json(wheel, manifest(tmp_path, {"pkg/mod.py": MOD}), tmp_path, "--record")
    assert (rc, flagged(checks)) == (0, {})
    assert checks["record"]["message"].startswith("7 of 7 files match")
    with WheelSource(wheel) as source:
        assert source.read(f"{DATA}/scripts/pkg/mod.py") == EVIL
        assert source.read("pkg/mod.py") == MOD


def test_an_unlisted_purelib_member_is_unlisted_at_its_installed_path(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / f"{DIST}-py3-none-any.whl",
                       {"pkg/__init__.py": INIT, f"{DATA}/purelib/pkg/extra.py": EVIL},
                       unlisted=(f"{DATA}/purelib/pkg/extra.py",))
    rc, checks = check_json(wheel, manifest(tmp_path, {}), tmp_path, "--record")
    assert (rc, flagged(checks)) == (1, {"record:pkg/extra.py": "fail"})
    assert checks["record:pkg/extra.py"]["message"].startswith("Unlisted")


def test_bytecode_shipped_in_purelib_is_compared_with_the_source_it_shadows(tmp_path: Path) -> None:
    """A pyc in ``.data/purelib/pkg/__pycache__/`` is where Python looks for
    ``pkg/mod.py``'s bytecode: compiled from other code, it fails."""
    evil_src = tmp_path / "mod.py"
    evil_src.write_bytes(EVIL)
    pyc = Path(importlib.util.cache_from_source("pkg/mod.py"))
    compiled = tmp_path / "mod.pyc"
    py_compile.compile(str(evil_src), cfile=str(compiled), doraise=True,
                       invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
    wheel = make_wheel(tmp_path / f"{DIST}-py3-none-any.whl",
                       {"pkg/__init__.py": INIT, "pkg/mod.py": MOD,
                        f"{DATA}/purelib/{pyc.as_posix()}": compiled.read_bytes()})
    rc, checks = check_json(wheel, manifest(tmp_path, {"pkg/mod.py": MOD}), tmp_path, "--record")
    assert (rc, flagged(checks)) == (1, {f"bytecode:{pyc.as_posix()}": "fail"})


def test_the_inventory_and_the_source_agree_on_installed_paths(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / f"{DIST}-py3-none-any.whl",
                       {"pkg/__init__.py": INIT, f"{DATA}/purelib/pkg/mod.py": MOD,
                        "pkg/clash.py": MOD, f"{DATA}/platlib/pkg/clash.py": EVIL})
    inv = WheelInventory(str(wheel))
    entries = {e.path: e for e in inv.walk("pkg")}
    assert sorted(entries) == ["pkg/__init__.py", "pkg/clash.py", "pkg/mod.py"]
    assert entries["pkg/mod.py"].ref == f"{DATA}/purelib/pkg/mod.py"
    assert entries["pkg/clash.py"].kind == UNREADABLE
    assert dict(inv.children("")) == {"pkg": "directory", f"{DIST}.dist-info": "directory"}
    with WheelSource(wheel) as source:
        assert list(source.iter_files("pkg")) == sorted(entries)
        assert source.exists("pkg/mod.py") and source.exists("pkg/clash.py")
        assert not source.exists(f"{DATA}/purelib/pkg/mod.py")
        with pytest.raises(MissingFile):
            source.read(f"{DATA}/purelib/pkg/mod.py")
        with pytest.raises(SourceError, match=r"pkg/clash\.py: is installed from 2 wheel members"):
            source.read("pkg/clash.py")


@pytest.mark.parametrize(("name", "path"), [
    ("pkg/mod.py", "pkg/mod.py"),
    (f"{DATA}/purelib/pkg/mod.py", "pkg/mod.py"),
    (f"{DATA}/platlib/pkg/", "pkg/"),
    ("other.data/purelib/pkg/mod.py", "pkg/mod.py"),  # pip takes any top-level *.data
    (f"{DATA}/purelib/pkg/./sub//mod.py", "pkg/sub/mod.py"),
    (f"{DATA}/scripts/tool", f"{DATA}/scripts/tool"),
    (f"{DATA}/data/share/x", f"{DATA}/data/share/x"),
    (f"pkg/{DATA}/purelib/mod.py", f"pkg/{DATA}/purelib/mod.py"),  # not top-level
    ("pkg/./mod.py", "pkg/mod.py"),
])
def test_installed_path_is_where_pip_writes_the_member(name: str, path: str) -> None:
    assert installed_path(name) == path


@pytest.mark.vllm
def test_the_real_wheel_with_a_purelib_runner_is_not_a_pass(tmp_path: Path, vllm_wheel: Path) -> None:
    """The user's report: vLLM 0.31.0 with ``vllm-0.31.0.data/purelib/<runner>`` added and
    listed in RECORD with its right hash; nothing under ``vllm/`` changed. pip installs
    the added one over the runner; the check must not pass it."""
    man = str(REPO / "manifests" / "examples" / "vllm-0.31.0.yaml")
    evil = tmp_path / vllm_wheel.name
    evil_runner = b'print("pwned")\n'
    _copy_with_members(vllm_wheel, evil, {f"vllm-0.31.0.data/purelib/{RUNNER}": evil_runner})
    rc, checks = check_json(evil, Path(man), tmp_path, "--record")
    assert rc == 1
    assert flagged(checks) == {f"file:{RUNNER}": "error", "runner-passes-draft-logits": "error",
                               f"record:{RUNNER}": "error", "tree": "error"}
    both = f"installed from 2 wheel members ({RUNNER}, vllm-0.31.0.data/purelib/{RUNNER})"
    assert both in checks[f"record:{RUNNER}"]["message"]
    site = pip_install(evil, tmp_path / "site", "--no-compile")
    if site is None:
        pytest.skip("pip cannot install a local wheel offline here")
    assert (site / RUNNER).read_bytes() == evil_runner
    rc, installed = check_json(site, Path(man), tmp_path, "--record")
    assert rc == 1
    assert {f"file:{RUNNER}", "runner-passes-draft-logits", f"record:{RUNNER}"} <= set(flagged(installed))


@pytest.mark.vllm
def test_the_real_wheel_with_a_new_purelib_module_has_the_installed_tree_digest(
    tmp_path: Path, vllm_wheel: Path
) -> None:
    """A purelib module that clashes with nothing is part of the package: RECORD matches
    it, and the tree digest is that of the tree pip installs (not the original's)."""
    man = tmp_path / "v.yaml"
    man.write_text("pp1audit: 1\ntarget: {package: vllm, version: 0.31.0}\n", encoding="utf-8")
    added = tmp_path / vllm_wheel.name
    _copy_with_members(vllm_wheel, added, {"vllm-0.31.0.data/purelib/vllm/v1/added.py": b"X = 1\n"})
    _, original = check_json(vllm_wheel, man, tmp_path, "--record")
    rc, from_wheel = check_json(added, man, tmp_path, "--record")
    assert (rc, flagged(from_wheel)) == (0, {})
    assert from_wheel["tree"]["actual"] != original["tree"]["actual"]
    site = pip_install(added, tmp_path / "site", "--no-compile")
    if site is None:
        pytest.skip("pip cannot install a local wheel offline here")
    _, installed = check_json(site, man, tmp_path, "--record")
    assert installed["tree"]["actual"] == from_wheel["tree"]["actual"]


def _copy_with_members(src: Path, dst: Path, members: dict[str, bytes]) -> None:
    """A copy of wheel ``src`` with ``members`` added and listed in RECORD with their
    right hashes. The copy is appended to (no member is recompressed); RECORD is
    dropped from the central directory and written anew, so the archive has one."""
    shutil.copyfile(src, dst)
    with zipfile.ZipFile(dst, "a") as zf:
        record = next(i for i in zf.infolist() if i.filename.endswith(".dist-info/RECORD"))
        text = zf.read(record).decode("utf-8")
        zf.filelist.remove(record)
        del zf.NameToInfo[record.filename]
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerows(_row(n, d) for n, d in members.items())
        for name, data in members.items():
            zf.writestr(name, data, compress_type=zipfile.ZIP_DEFLATED)
        zf.writestr(record.filename, text + buf.getvalue(), compress_type=zipfile.ZIP_DEFLATED)


def test_a_pth_file_in_purelib_is_at_the_root_where_site_runs_it(tmp_path: Path) -> None:
    """``.data/purelib/evil.pth`` installs as ``site-packages/evil.pth``, which ``site``
    executes at every start: the shadowing check must see it there."""
    wheel = make_wheel(tmp_path / f"{DIST}-py3-none-any.whl",
                       {"pkg/__init__.py": INIT, f"{DATA}/purelib/evil.pth": b"import os; os.getcwd()\n"})
    rc, checks = check_json(wheel, manifest(tmp_path, {}), tmp_path, "--record")
    assert (rc, flagged(checks)) == (1, {"pth:evil.pth": "fail"})
