"""The audited distribution's console scripts (``bin/vllm``) under the startup digest.

``vllm serve`` runs ``<prefix>/bin/vllm``. Its RECORD row (``../../../bin/vllm``)
is as easy to re-hash as any, so with the file rewritten to run other code and
its row rewritten, ``check --record`` passed with both ``tree_sha256`` and
``startup_sha256`` pinned (red team, ``atk_console``): neither covered it. The
startup digest now holds every file the RECORD lists in ``<prefix>/bin``, its
``#!`` header (which names the host's path) in a canonical form, so identical
venvs at different paths keep one digest.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import replace_file, run_cli, site
from startuptrees import venv

from pp1audit.checks.bytecode import VerifiedCache
from pp1audit.checks.shadowing import check_shadowing
from pp1audit.checks.treedigest import listing_digest, script_header, script_token
from pp1audit.sources.inventory import DirInventory

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX prefix layout and symlinks")

BODY = b"# -*- coding: utf-8 -*-\nimport sys\nfrom pkg import main\nsys.exit(main())\n"
SCRIPT_ROW = "../../../bin/pkg"
VLLM_ROW = "../../../bin/vllm"


# --- the canonical header ---------------------------------------------------------------------

def test_pips_two_header_forms_of_one_interpreter_share_a_token() -> None:
    plain = b"#!/opt/venv/bin/python\n" + BODY
    long_ = b"/srv/" + b"x" * 130
    sh = b"#!/bin/sh\n'''exec' " + long_ + b"/bin/python \"$0\" \"$@\"\n' '''\n" + BODY
    quoted = b"#!/bin/sh\n'''exec' \"/my venv/bin/python\" \"$0\" \"$@\"\n' '''\n" + BODY
    tokens = {script_token([plain], [b"/opt/venv"]), script_token([sh], [long_]),
              script_token([quoted], [b"/my venv"])}
    assert len(tokens) == 1
    token = tokens.pop()
    expected = hashlib.sha256(b"#!<prefix>/bin/python\n" + BODY).hexdigest()
    assert token == "script:" + expected


def test_the_interpreter_named_is_kept_and_one_outside_the_prefix_is_hashed_as_is() -> None:
    base = script_token([b"#!/opt/venv/bin/python\n" + BODY], [b"/opt/venv"])
    assert script_token([b"#!/opt/venv/bin/python3\n" + BODY], [b"/opt/venv"]) != base
    evil = b"#!/tmp/evil/python\n" + BODY
    assert script_token([evil], [b"/opt/venv"]) == hashlib.sha256(evil).hexdigest()
    # A prefix that is only the start of a directory's name is not the prefix.
    assert script_header(b"#!/opt/venv2/bin/python\n", [b"/opt/venv"]) is None


def test_a_literal_canonical_header_is_not_taken_for_one() -> None:
    """``#!<prefix>/bin/python`` written in a file is a path relative to wherever the
    script is run from: its token is the plain digest, never the canonical one's."""
    literal = b"#!<prefix>/bin/python\n" + BODY
    assert script_token([literal], [b"/opt/venv"]) == hashlib.sha256(literal).hexdigest()
    assert script_token([literal], [b"/opt/venv"]) != script_token(
        [b"#!/opt/venv/bin/python\n" + BODY], [b"/opt/venv"])


@pytest.mark.parametrize("head", [
    b"#!/opt/venv/bin/python -c evil\n",  # the kernel passes the rest as an argument
    b"#!/opt/venv/bin/python\r\n",
    b"#!/bin/sh\n'''exec' /opt/venv/bin/python;evil \"$0\" \"$@\"\n' '''\n",
    b"#!/bin/sh\n'''exec' \"/opt/venv/bin/$(evil)\" \"$0\" \"$@\"\n' '''\n",
    b"#!/bin/sh\n'''exec' /opt/venv/bin/py* \"$0\" \"$@\"\n' '''\n",
])
def test_a_header_the_kernel_or_shell_would_read_otherwise_is_not_canonical(head: bytes) -> None:
    assert script_header(head + BODY, [b"/opt/venv"]) is None


def test_the_header_is_read_across_chunks() -> None:
    data = b"#!/opt/venv/bin/python\n" + BODY * 5000
    whole = script_token([data], [b"/opt/venv"])
    assert script_token([data[:16384], data[16384:40000], data[40000:]], [b"/opt/venv"]) == whole


# --- a hand-made venv: what is read, and how ----------------------------------------------------

def with_script(tmp_path: Path, data: bytes | None = BODY) -> tuple[Path, Path]:
    """``venv`` with ``bin/pkg`` (``data``; None: not made) listed in pkg's RECORD."""
    v, root = venv(tmp_path)
    script = v / "bin" / "pkg"
    if data is not None:
        script.write_bytes(data)
    record = root / "pkg-1.0.dist-info" / "RECORD"
    digest = base64.urlsafe_b64encode(hashlib.sha256(data or b"").digest()).rstrip(b"=").decode()
    rows = list(csv.reader(io.StringIO(record.read_text(encoding="utf-8"))))
    rows.append([SCRIPT_ROW, f"sha256={digest}", str(len(data or b""))])
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    record.write_text(out.getvalue(), encoding="utf-8")
    return v, root


def startup(root: Path) -> dict[str, str | None]:
    rep = check_shadowing(DirInventory(str(root)), "pkg", "pkg-1.0.dist-info", VerifiedCache(None),
                          site_dir=str(root))
    return dict(rep.startup_files())


def test_a_listed_script_is_in_the_startup_set(tmp_path: Path) -> None:
    _v, root = with_script(tmp_path, b"#!" + os.fsencode(tmp_path / "venv") + b"/bin/python\n" + BODY)
    canonical = hashlib.sha256(b"#!<prefix>/bin/python\n" + BODY).hexdigest()
    assert startup(root)[SCRIPT_ROW] == "script:" + canonical


def test_a_missing_script_is_named_in_the_digest(tmp_path: Path) -> None:
    _v, root = with_script(tmp_path, None)
    files = startup(root)
    assert files[SCRIPT_ROW] == "missing:"
    assert listing_digest(files.items()).sha256 is not None


def test_a_script_that_is_a_link_or_a_fifo_is_never_followed_or_opened(tmp_path: Path) -> None:
    v, root = with_script(tmp_path)
    script = v / "bin" / "pkg"
    script.unlink()
    script.symlink_to("/etc/passwd")
    assert startup(root)[SCRIPT_ROW] == "symlink:/etc/passwd"
    script.unlink()
    os.mkfifo(script)
    assert startup(root)[SCRIPT_ROW] == "FIFO:"  # opened, it would block


def test_a_scripts_directory_leading_out_of_the_prefix_is_not_read(tmp_path: Path) -> None:
    v, root = with_script(tmp_path)
    outside = tmp_path / "elsewhere" / "bin"
    outside.parent.mkdir()
    (v / "bin").rename(outside)
    (v / "bin").symlink_to(outside)
    files = startup(root)
    assert files[SCRIPT_ROW] is None
    assert listing_digest(files.items()).unreadable == [SCRIPT_ROW]


def test_rows_outside_the_scripts_directory_are_not_scripts(tmp_path: Path) -> None:
    v, root = with_script(tmp_path)
    (v / "share").mkdir()
    (v / "share" / "pkg.txt").write_bytes(b"data")
    record = root / "pkg-1.0.dist-info" / "RECORD"
    record.write_text(record.read_text(encoding="utf-8") + "../../../share/pkg.txt,,\n"
                      "../../../bin/../../../../etc/passwd,,\n", encoding="utf-8")
    scripts = [p for p in startup(root) if p.startswith("../")]
    assert scripts == [SCRIPT_ROW, "../../../pyvenv.cfg"]


# --- the real vLLM wheel, installed by pip --------------------------------------------------------

def rehash_row(site_dir: Path, rel: str) -> None:
    """Rewrite the RECORD row of ``rel`` to the file's hash and size, as an attacker would."""
    record = site_dir / "vllm-0.31.0.dist-info" / "RECORD"
    data = (site_dir / rel).read_bytes()
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    rows = [[rel, f"sha256={digest}", str(len(data))] if r and r[0] == rel else r
            for r in csv.reader(io.StringIO(record.read_text(encoding="utf-8")))]
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    replace_file(record, out.getvalue().encode("utf-8"))


def checks(target: Path, m: Path, cache: Path, *extra: str) -> tuple[int, dict[str, dict]]:
    proc = run_cli("check", str(target), "-m", str(m), "--format", "json", *extra,
                   env={"PP1AUDIT_CACHE_DIR": str(cache)}, timeout=300)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    return proc.returncode, {c["id"]: c for c in json.loads(proc.stdout)["checks"]}


@pytest.mark.vllm
def test_a_rewritten_console_script_with_its_row_rehashed_fails_the_startup_pin(
    venv_copy: Path, manifest: Path, bytecode_cache: Path, tmp_path: Path
) -> None:
    sp = site(venv_copy)
    _, clean = checks(sp, manifest, bytecode_cache, "--record")
    pinned = tmp_path / "pinned.yaml"
    pinned.write_text(manifest.read_text() + f"  record: true\n  tree_sha256: {clean['tree']['actual']}\n"
                      f"  startup_sha256: {clean['startup']['actual']}\n", encoding="utf-8")
    assert checks(sp, pinned, bytecode_cache)[0] == 0
    script = venv_copy / "bin" / "vllm"
    lines = script.read_bytes().split(b"\n")
    replace_file(script, b"\n".join([lines[0], b'print("PWNED via console script")', *lines[1:]]))
    os.chmod(script, 0o755)
    rehash_row(sp, VLLM_ROW)
    ran = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=60)
    assert "PWNED via console script" in ran.stdout  # the premise: it runs
    rc, result = checks(sp, pinned, bytecode_cache)
    assert rc == 1
    assert {i for i, c in result.items() if c["status"] != "pass"} == {"startup"}
    assert result["record"]["status"] == "pass" and result["tree"]["status"] == "pass"
    assert "a console script, was added, removed or changed" in result["startup"]["message"]
    assert f"{VLLM_ROW} " in result["startup"]["message"]
    # Pinned alone, without --record, the startup check still catches it.
    alone = tmp_path / "alone.yaml"
    alone.write_text(manifest.read_text() + f"  startup_sha256: {clean['startup']['actual']}\n",
                     encoding="utf-8")
    rc, result = checks(sp, alone, bytecode_cache)
    assert rc == 1 and result["startup"]["status"] == "fail"


@pytest.mark.vllm
def test_a_deleted_console_script_fails_the_pin_by_name(
    venv_copy: Path, manifest: Path, bytecode_cache: Path, tmp_path: Path
) -> None:
    sp = site(venv_copy)
    _, clean = checks(sp, manifest, bytecode_cache, "--record")
    (venv_copy / "bin" / "vllm").unlink()
    pinned = tmp_path / "pinned.yaml"
    pinned.write_text(manifest.read_text() + f"  startup_sha256: {clean['startup']['actual']}\n",
                      encoding="utf-8")
    rc, result = checks(sp, pinned, bytecode_cache)
    assert rc == 1 and f"{VLLM_ROW} missing:" in result["startup"]["message"]


@pytest.fixture(scope="module")
def long_venv(vllm_wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A second venv, the wheel installed by pip as ``vllm_venv``'s was, at a path
    long enough that pip writes its ``#!/bin/sh`` header (over 127 bytes)."""
    base = tmp_path_factory.getbasetemp()
    venv_dir = tmp_path_factory.mktemp("long") / ("v" * max(1, 140 - len(str(base))))
    subprocess.run([sys.executable, "-m", "venv", str(venv_dir)], check=True)
    subprocess.run([str(venv_dir / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-deps",
                    "--no-index", "--disable-pip-version-check", str(vllm_wheel)], check=True)
    return venv_dir


@pytest.mark.vllm
def test_identical_venvs_at_different_paths_share_a_startup_digest(
    vllm_venv: Path, long_venv: Path, manifest: Path, bytecode_cache: Path
) -> None:
    assert (long_venv / "bin" / "vllm").read_bytes().startswith(b"#!/bin/sh\n'''exec' ")  # the premise
    assert (vllm_venv / "bin" / "vllm").read_bytes().startswith(b"#!" + os.fsencode(vllm_venv))
    digests = []
    for v in (vllm_venv, long_venv):
        rep = check_shadowing(DirInventory(str(site(v))), "vllm", "vllm-0.31.0.dist-info",
                              VerifiedCache(None), site_dir=str(site(v)))
        files = dict(rep.startup_files())
        assert files[VLLM_ROW] is not None and files[VLLM_ROW].startswith("script:")
        digests.append(listing_digest(files.items()).sha256)
    assert digests[0] == digests[1] is not None
    # The CLI agrees.
    actual = {checks(site(v), manifest, bytecode_cache, "--record")[1]["startup"]["actual"]
              for v in (vllm_venv, long_venv)}
    assert actual == {digests[0]}


@pytest.mark.vllm
def test_pin_repins_the_startup_digest_over_the_console_script(
    venv_copy: Path, manifest: Path, bytecode_cache: Path, tmp_path: Path
) -> None:
    sp = site(venv_copy)
    _, clean = checks(sp, manifest, bytecode_cache, "--record")
    old = clean["startup"]["actual"]
    m = tmp_path / "m.yaml"
    m.write_text(manifest.read_text() + f"  startup_sha256: {old}\n", encoding="utf-8")
    script = venv_copy / "bin" / "vllm"
    replace_file(script, script.read_bytes() + b"# changed\n")
    assert checks(sp, m, bytecode_cache)[0] == 1
    proc = run_cli("pin", str(sp), "-m", str(m), "--in-place", "--format", "json",
                   env={"PP1AUDIT_CACHE_DIR": str(bytecode_cache)}, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    item = next(i for i in json.loads(proc.stdout)["items"] if i["id"] == "startup")
    assert item["outcome"] == "changed" and item["old"] == old and item["new"] != old
    assert checks(sp, m, bytecode_cache)[0] == 0


# --- review of the first version: size, the prefix as spelled, one interpreter's names ------

def test_a_script_over_the_cap_is_not_read_and_its_size_is_its_token(tmp_path: Path) -> None:
    """A 40 GB sparse ``bin/vllm`` held the run while it was hashed (the pin runs
    without ``--record`` too): over ``SCRIPT_MODULE_MAX`` it is not read."""
    from pp1audit.checks.startupscripts import SCRIPT_MODULE_MAX

    v, root = with_script(tmp_path)
    size = 40 << 30
    os.truncate(v / "bin" / "pkg", size)
    assert size > SCRIPT_MODULE_MAX
    assert startup(root)[SCRIPT_ROW] == f"too-large:{size}"


def test_scripts_are_read_in_the_prefix_the_site_directory_spells(tmp_path: Path) -> None:
    """With ``<prefix>/lib`` a link, the resolved root's ``../../..`` is another
    directory: the real ``<prefix>/bin/pkg`` (what runs) must be the one read."""
    header = b"#!" + os.fsencode(tmp_path / "venv") + b"/bin/python\n"
    v, root = with_script(tmp_path, header + BODY)
    real = tmp_path / "store" / "lib"
    real.parent.mkdir()
    (v / "lib").rename(real)
    (v / "lib").symlink_to(real)
    linked = v / "lib" / root.relative_to(v / "lib")
    files = dict(check_shadowing(DirInventory(str(linked)), "pkg", "pkg-1.0.dist-info",
                                 VerifiedCache(None), site_dir=str(linked)).startup_files())
    assert files[SCRIPT_ROW] == "script:" + hashlib.sha256(b"#!<prefix>/bin/python\n" + BODY).hexdigest()
    (v / "bin" / "pkg").write_bytes(header + b"import os; os.system('evil')\n")
    files = dict(check_shadowing(DirInventory(str(linked)), "pkg", "pkg-1.0.dist-info",
                                 VerifiedCache(None), site_dir=str(linked)).startup_files())
    assert files[SCRIPT_ROW] != "script:" + hashlib.sha256(b"#!<prefix>/bin/python\n" + BODY).hexdigest()


def test_the_venvs_names_of_one_interpreter_share_a_token(tmp_path: Path) -> None:
    """``python3 -m pip`` writes ``#!<prefix>/bin/python3``: the same interpreter as
    ``bin/python`` when it is the same file; another file keeps its own name."""
    prefix = os.fsencode(tmp_path / "venv")
    v, root = with_script(tmp_path, b"#!" + prefix + b"/bin/python\n" + BODY)
    plain = startup(root)[SCRIPT_ROW]
    (v / "bin" / "python3").symlink_to("python")
    (v / "bin" / "pkg").write_bytes(b"#!" + prefix + b"/bin/python3\n" + BODY)
    assert startup(root)[SCRIPT_ROW] == plain
    (v / "bin" / "python3").unlink()
    (v / "bin" / "python3").write_bytes(b"#!/bin/sh\necho other\n")
    assert startup(root)[SCRIPT_ROW] != plain


def test_a_long_prefix_with_equals_tilde_or_hash_reads_as_the_short_form() -> None:
    """pip leaves ``=``, ``~`` and ``#`` unquoted in its ``/bin/sh`` form (the shell
    reads them literally inside a word): a venv there shares the short form's token."""
    prefix = b"/srv/build=1~x#y/" + b"v" * 130
    sh = b"#!/bin/sh\n'''exec' " + prefix + b"/bin/python \"$0\" \"$@\"\n' '''\n"
    assert script_token([sh + BODY], [prefix]) == script_token([b"#!/opt/v/bin/python\n" + BODY],
                                                               [b"/opt/v"])


def test_modules_beside_the_scripts_are_looked_for_in_the_prefix_the_site_directory_spells(
        tmp_path: Path) -> None:
    """As the scripts themselves: with ``<prefix>/lib`` a link, a ``bin/torch.py`` in the
    real ``<prefix>/bin`` (first on ``sys.path`` when ``bin/pkg`` runs) is found."""
    v, root = with_script(tmp_path)
    (v / "bin" / "torch.py").write_text("print('evil')\n", encoding="utf-8")
    real = tmp_path / "store" / "lib"
    real.parent.mkdir()
    (v / "lib").rename(real)
    (v / "lib").symlink_to(real)
    linked = v / "lib" / root.relative_to(v / "lib")
    rep = check_shadowing(DirInventory(str(linked)), "pkg", "pkg-1.0.dist-info", VerifiedCache(None),
                          site_dir=str(linked))
    assert "../../../bin/torch.py" in dict(rep.startup_files())
    assert any("torch" in f.message for f in rep.findings), [f.message for f in rep.findings]
