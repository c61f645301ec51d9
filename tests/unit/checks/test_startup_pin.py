"""``target.startup_sha256``: the anchor for the code that runs at every interpreter start.

An executing ``.pth`` passes ``check --record`` when an installed distribution's
RECORD vouches for it, and the module such a ``.pth`` imports passes when it
matches that RECORD. Both only catch accidents: whoever can write site-packages
can forge a ``*.dist-info`` (METADATA and RECORD) or re-hash a RECORD row. The
startup digest pins the set itself, as ``tree_sha256`` pins the package: with a
pin, such an edit fails the ``startup`` check, naming every startup file.

Each premise ("Python would run it") is shown with the real interpreter of a
hand-made venv (``test_shadowing_hooks.venv``).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import sys
from pathlib import Path

import pytest
from conftest import run_cli, setuptools_site
from recordtrees import bad, install, record_row, run, wheel_of
from startuptrees import HOOK, starts, venv, with_hack

from pp1audit.checks.bytecode import VerifiedCache
from pp1audit.checks.record_judge import record_checks
from pp1audit.checks.shadowing import check_shadowing
from pp1audit.result import Status
from pp1audit.sources import DirectorySource
from pp1audit.sources.inventory import DirInventory

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX prefix layout and symlinks")

NO_CACHE = {"PP1AUDIT_NO_CACHE": "1"}


@pytest.fixture(autouse=True)
def _no_user_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bytecode of vouched modules is verified with the user's cache by default: not here."""
    monkeypatch.setenv("PP1AUDIT_NO_CACHE", "1")


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


CFG = "../../../pyvenv.cfg"
"""A venv's ``pyvenv.cfg`` in the startup set: its token is the SHA-256 of what it
decides portably (``include-system-site-packages = true|false``), not of the file,
whose ``home`` / ``command`` lines differ per host (review of dea2ffb, item 6)."""


def expected_digest(root: Path, rels: list[str]) -> str:
    """The startup digest as the docstring defines it, computed here from scratch:
    ``sha256sum`` lines sorted by the path's bytes, hashed (``venv``'s pyvenv.cfg says
    ``include-system-site-packages = false``)."""
    def token(rel: str) -> str:
        if rel == CFG:
            return hashlib.sha256(b"include-system-site-packages = false\n").hexdigest()
        return sha(root / rel)
    lines = "".join(f"{token(rel)}  {rel}\n" for rel in sorted(rels, key=str.encode))
    return hashlib.sha256(lines.encode()).hexdigest()


HACK_FILES = ["_hack/__init__.py", "_hack/override.py", "hack-precedence.pth"]


def forge_distribution(root: Path) -> Path:
    """A ``.pth`` that runs code at every start, vouched for by a forged distribution:
    METADATA and a RECORD listing the ``.pth`` with its hash. Returns the ``.pth``."""
    pth = root / "zz-evil.pth"
    pth.write_text(HOOK, encoding="utf-8")
    meta = root / "zz_evil-1.0.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: zz-evil\nVersion: 1.0\n",
                                   encoding="utf-8")
    (meta / "RECORD").write_text(",".join(record_row(root, "zz-evil.pth")) + "\n", encoding="utf-8")
    return pth


def rehash_row(root: Path, record: str, rel: str) -> None:
    """Rewrite ``rel``'s row of ``record`` with the file's current hash and size."""
    data = (root / rel).read_bytes()
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    rows = (root / record).read_text(encoding="utf-8").splitlines()
    new = [f"{rel},sha256={digest},{len(data)}" if r.split(",")[0] == rel else r for r in rows]
    assert new != rows
    (root / record).write_text("\n".join(new) + "\n", encoding="utf-8")


def test_a_clean_site_passes_with_its_startup_digest_and_the_pin_matches(tmp_path: Path) -> None:
    root = with_hack(install(tmp_path / "site"))
    checks = run(root)
    assert bad(checks) == {}
    startup = checks["startup"]
    digest = expected_digest(root, HACK_FILES)
    assert startup.kind == "record" and startup.actual == digest
    assert startup.message == f"startup code: 3 file(s), digest {digest} (pin it as target.startup_sha256)"
    pinned = run(root, startup_sha256=digest)
    assert bad(pinned) == {}
    assert pinned["startup"].message == f"startup code: 3 file(s), digest {digest} matches the pin"
    assert pinned["startup"].expected == digest


def test_a_wheel_and_the_tree_it_installs_have_one_startup_digest(tmp_path: Path) -> None:
    root = with_hack(install(tmp_path / "site"))
    wheel = run(wheel_of(root, tmp_path))
    assert bad(wheel) == {}
    assert wheel["startup"].actual == run(root)["startup"].actual == expected_digest(root, HACK_FILES)


def test_a_forged_distribution_vouching_for_a_new_pth_fails_the_pin(tmp_path: Path) -> None:
    v, root = venv(tmp_path)
    with_hack(root)
    digest = run(root)["startup"].actual
    assert digest is not None
    pth = forge_distribution(root)
    assert "MARK: startup hook ran" in starts(v)  # it runs at every start
    checks = run(root)
    assert bad(checks) == {}  # vouched for: the shadowing check passes it
    assert "zz-evil.pth executes code at startup, vouched for by zz_evil-1.0.dist-info" in \
        checks["shadowing"].message
    failed = bad(run(root, startup_sha256=digest))
    assert list(failed) == ["startup"]
    fail = failed["startup"]
    assert fail.status is Status.FAIL and fail.expected == digest
    # The venv's pyvenv.cfg is startup code too, named as RECORD names files outside the root.
    assert fail.actual == expected_digest(root, [*HACK_FILES, "zz-evil.pth", CFG]) != digest
    assert fail.message.startswith(f"startup code: 5 file(s), digest {fail.actual} differs from the pin")
    assert f"zz-evil.pth {sha(pth)[:12]}" in fail.message
    for rel in HACK_FILES:
        assert f"{rel} {sha(root / rel)[:12]}" in fail.message


def test_a_tampered_imported_module_with_its_row_rehashed_fails_the_pin(tmp_path: Path) -> None:
    v, root = venv(tmp_path)
    with_hack(root)
    digest = run(root)["startup"].actual
    with open(root / "_hack" / "__init__.py", "a", encoding="utf-8") as f:
        f.write(HOOK)
    rehash_row(root, "hack-1.0.dist-info/RECORD", "_hack/__init__.py")
    assert "MARK: startup hook ran" in starts(v)  # distutils-precedence-style .pth imports it
    assert bad(run(root)) == {}  # the module matches its (rewritten) RECORD
    failed = bad(run(root, startup_sha256=digest))
    assert list(failed) == ["startup"]
    assert f"_hack/__init__.py {sha(root / '_hack' / '__init__.py')[:12]}" in failed["startup"].message


def test_a_rehashed_pth_row_hiding_a_payload_fails_the_pin(tmp_path: Path) -> None:
    root = with_hack(install(tmp_path / "site"))
    digest = run(root)["startup"].actual
    pth = root / "hack-precedence.pth"
    pth.write_text(pth.read_text(encoding="utf-8").rstrip("\n") + " " * 200 + "; " + HOOK,
                   encoding="utf-8")
    rehash_row(root, "hack-1.0.dist-info/RECORD", "hack-precedence.pth")
    assert bad(run(root)) == {}
    failed = bad(run(root, startup_sha256=digest))
    assert list(failed) == ["startup"]
    assert f"hack-precedence.pth {sha(pth)[:12]}" in failed["startup"].message


def test_the_pin_alone_turns_the_startup_check_on(tmp_path: Path) -> None:
    """As a pinned tree_sha256 does: without --record only the digests are checked."""
    root = with_hack(install(tmp_path / "site"))
    digest = run(root)["startup"].actual
    assert digest is not None
    m = tmp_path / "m.yaml"
    m.write_text(f"pp1audit: 1\ntarget:\n  package: pkg\n  startup_sha256: {digest.upper()}\n",
                 encoding="utf-8")
    proc = run_cli("check", str(root), "-m", str(m), "--format", "json", env=NO_CACHE)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ids = [c["id"] for c in json.loads(proc.stdout)["checks"]]
    assert ids == ["tree", "startup"]
    forge_distribution(root)
    proc = run_cli("check", str(root), "-m", str(m), "--format", "json", env=NO_CACHE)
    assert proc.returncode == 1
    startup = next(c for c in json.loads(proc.stdout)["checks"] if c["id"] == "startup")
    assert startup["status"] == "fail" and startup["expected"] == digest


def test_pin_updates_startup_and_tree_digests_and_the_next_run_passes(tmp_path: Path) -> None:
    root = with_hack(install(tmp_path / "site"))
    clean = run(root)
    old_startup, tree = clean["startup"].actual, clean["tree"].actual
    m = tmp_path / "m.yaml"
    m.write_text("pp1audit: 1\ntarget:\n  package: pkg\n  record: true\n"
                 f"  tree_sha256: {'a' * 64}   # stale\n"
                 f"  startup_sha256: {old_startup}   # the venv's startup code\n", encoding="utf-8")
    assert run_cli("check", str(root), "-m", str(m), env=NO_CACHE).returncode == 1  # the stale tree
    forge_distribution(root)
    proc = run_cli("pin", str(root), "-m", str(m), "--in-place", "--format", "json", env=NO_CACHE)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    items = {i["id"]: i for i in json.loads(proc.stdout)["items"]}
    new = expected_digest(root, [*HACK_FILES, "zz-evil.pth"])
    assert items["startup"]["outcome"] == "changed"
    assert (items["startup"]["old"], items["startup"]["new"]) == (old_startup, new)
    assert (items["tree"]["outcome"], items["tree"]["new"]) == ("changed", tree)
    text = m.read_text(encoding="utf-8")
    assert f"  startup_sha256: {new}   # the venv's startup code\n" in text
    assert f"  tree_sha256: {tree}   # stale\n" in text
    assert run_cli("check", str(root), "-m", str(m), env=NO_CACHE).returncode == 0


@pytest.mark.parametrize("value", ["abc", "'" + "g" * 64 + "'", "[]"])
def test_a_malformed_startup_sha256_is_a_manifest_error(tmp_path: Path, value: str) -> None:
    root = install(tmp_path / "site")
    m = tmp_path / "m.yaml"
    m.write_text(f"pp1audit: 1\ntarget:\n  package: pkg\n  startup_sha256: {value}\n", encoding="utf-8")
    proc = run_cli("check", str(root), "-m", str(m))
    assert proc.returncode == 2
    err = proc.stderr.strip()
    assert len(err.splitlines()) == 1
    assert err.startswith(f"pp1audit: error: {m}:4:19: ") and "target.startup_sha256" in err


def test_a_hook_outside_the_site_directory_makes_the_digest_uncomputable(tmp_path: Path) -> None:
    """A path line's sitecustomize outside the site directory is only ``lstat``ed
    (and fails the shadowing check): the digest cannot pin what was not read."""
    root = install(tmp_path / "site")
    hooks = tmp_path / "elsewhere"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(HOOK, encoding="utf-8")
    (root / "paths.pth").write_text(f"{hooks}\n", encoding="utf-8")
    failed = bad(run(root))
    assert failed["startup"].status is Status.ERROR
    assert failed["startup"].message == \
        f"startup digest not computable: not read: {hooks}{os.sep}sitecustomize.py"
    assert "pth:paths.pth:1:sitecustomize.py" in failed


def test_hooks_in_the_site_directory_are_in_the_startup_set(tmp_path: Path) -> None:
    """The root's sitecustomize, and one a path line reaches inside the site
    directory even in a ``__pycache__`` (user test 1c), are startup code; so is the
    ``.pth`` whose path line reaches it (every ``.pth`` is)."""
    root = install(tmp_path / "site")
    (root / "sitecustomize.py").write_text(HOOK, encoding="utf-8")
    cache = root / "pkg" / "__pycache__"
    (cache / "sitecustomize.pyc").write_bytes(b"not really bytecode")
    (root / "zz-paths.pth").write_text("pkg/__pycache__\n", encoding="utf-8")
    rep = check_shadowing(DirInventory(str(root)), "pkg", "pkg-1.0.dist-info", VerifiedCache(None))
    assert rep.startup_files() == [
        ("pkg/__pycache__/sitecustomize.pyc", sha(cache / "sitecustomize.pyc")),
        ("sitecustomize.py", sha(root / "sitecustomize.py")),
        ("zz-paths.pth", sha(root / "zz-paths.pth")),
    ]


@pytest.mark.vllm
def test_a_pip_made_venv_has_a_stable_digest_over_its_distutils_hack(vllm_venv: Path) -> None:
    from pp1audit.checks.record import RecordRun
    from pp1audit.checks.treedigest import listing_digest

    where = setuptools_site(vllm_venv)

    def once() -> tuple[list[tuple[str, str | None]], str | None]:
        # vLLM's RECORD, as RecordRun reads it: its console script is in the set too.
        rep = check_shadowing(DirInventory(str(where)), "vllm", "vllm-0.31.0.dist-info", VerifiedCache(None))
        files = rep.startup_files()
        return files, listing_digest(files).sha256

    files, digest = once()
    assert once() == (files, digest) and digest is not None
    paths = [p for p, _ in files]
    assert "distutils-precedence.pth" in paths
    assert "_distutils_hack/__init__.py" in paths and "_distutils_hack/override.py" in paths
    assert dict(files)["_distutils_hack/__init__.py"] == sha(where / "_distutils_hack" / "__init__.py")
    assert not any("__pycache__" in p for p in paths)
    with DirectorySource(where) as source:  # the pin alone: no bytecode read, nothing written
        checks = record_checks(RecordRun("vllm", source, record=False, startup_sha256=digest,
                           cache=VerifiedCache(None)))
    startup = next(c for c in checks if c.id == "startup")
    assert startup.status is Status.PASS and startup.actual == digest
