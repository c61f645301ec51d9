"""``check --record`` on the real vLLM 0.31.0 wheel installed by pip into a fresh venv.

The venv is made once per session (``python -m venv`` + ``pip install --no-deps
--no-index <wheel>``), so RECORD, INSTALLER, direct_url.json, the console
script and the ~2,800 ``.pyc`` files are exactly what pip writes. Each
mutation test works on a hard-linked copy of the whole venv (so RECORD's
``../../../bin/vllm`` is there too) and changes one thing, replacing files
rather than writing through the links; then it asserts that exactly that one
problem is reported, with the right message, and nothing else.
"""

from __future__ import annotations

import hashlib
import json
import marshal
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, record_json, replace_file, run_cli, site

pytestmark = pytest.mark.vllm

TAG = sys.implementation.cache_tag
SO = "vllm/_flashmla_extension_C.abi3.so"
VERSION_PY = "vllm/_version.py"
VERSION_PYC = f"vllm/__pycache__/_version.{TAG}.pyc"
SUMMARIES = {"record", "tree", "bytecode", "shadowing", "startup"}










def flagged(result: dict) -> dict[str, dict]:
    return {c["id"]: c for c in result["checks"] if c["status"] != "pass"}


def by_id(result: dict) -> dict[str, dict]:
    return {c["id"]: c for c in result["checks"]}


def test_fresh_pip_install_passes(vllm_venv: Path, manifest: Path, bytecode_cache: Path) -> None:
    rc, result = record_json(site(vllm_venv), manifest, bytecode_cache)
    assert rc == 0, flagged(result)
    checks = by_id(result)
    assert set(checks) == {"version"} | SUMMARIES
    assert all(c["kind"] == "record" for c in checks.values() if c["id"] in SUMMARIES)
    record = checks["record"]["message"]
    # pip's RECORD: every vllm file, the dist-info files and the console script.
    m = re.match(r"([\d,]+) of ([\d,]+) files match vllm-0.31.0.dist-info/RECORD", record)
    assert m and m[1] == m[2] and int(m[1].replace(",", "")) > 5190, record
    assert "2,771 bytecode entries left to the bytecode check" in record
    assert checks["bytecode"]["message"].startswith(
        f"2,771 bytecode files Python ({TAG}) would load are their sources compiled"), checks["bytecode"]
    shadow = checks["shadowing"]["message"]
    assert "distutils-precedence.pth executes code at startup, vouched for by setuptools" in shadow


def test_tree_digest_same_for_installed_tree_wheel_and_extracted_tree(
    vllm_venv: Path, vllm_wheel: Path, vllm_tree: Path, manifest: Path, bytecode_cache: Path
) -> None:
    digests = {}
    for target in (site(vllm_venv), vllm_wheel, vllm_tree):
        rc, result = record_json(target, manifest, bytecode_cache)
        assert rc == 0, flagged(result)
        digests[target] = by_id(result)["tree"]["actual"]
    assert len(set(digests.values())) == 1, digests
    assert len(next(iter(digests.values()))) == 64


def test_pinned_tree_digest_mismatch_names_the_changed_file(
    venv_copy: Path, manifest: Path, bytecode_cache: Path, tmp_path: Path
) -> None:
    _, clean = record_json(site(venv_copy), manifest, bytecode_cache)
    pin = by_id(clean)["tree"]["actual"]
    pinned = tmp_path / "pinned.yaml"
    pinned.write_text(manifest.read_text() + f"  tree_sha256: {pin}\n", encoding="utf-8")
    # Without --record the pin alone asks for the tree check (and only that).
    proc = run_cli("check", str(site(venv_copy)), "-m", str(pinned), "--format", "json",
                   env={"PP1AUDIT_CACHE_DIR": str(bytecode_cache)})
    assert proc.returncode == 0, proc.stdout
    assert [c["id"] for c in json.loads(proc.stdout)["checks"]] == ["version", "tree"]

    path = site(venv_copy) / "vllm" / "envs.py"
    replace_file(path, path.read_bytes() + b"\n# one more line\n")
    proc = run_cli("check", str(site(venv_copy)), "-m", str(pinned), "--format", "json",
                   env={"PP1AUDIT_CACHE_DIR": str(bytecode_cache)})
    assert proc.returncode == 1
    tree = by_id(json.loads(proc.stdout))["tree"]
    assert tree["status"] == "fail"
    assert tree["expected"] == pin and tree["actual"] != pin
    assert "differs from the pin; explained by RECORD: modified vllm/envs.py" in tree["message"]


def test_one_byte_flipped_in_a_shared_object(venv_copy: Path, manifest: Path,
                                             bytecode_cache: Path) -> None:
    _, clean = record_json(site(venv_copy), manifest, bytecode_cache)
    path = site(venv_copy) / SO
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    replace_file(path, bytes(data))
    rc, result = record_json(site(venv_copy), manifest, bytecode_cache)
    assert rc == 1
    bad = flagged(result)
    assert list(bad) == [f"record:{SO}"]
    check = bad[f"record:{SO}"]
    assert check["status"] == "fail" and check["kind"] == "record"
    assert check["message"] == "Modified: content differs from RECORD (same size)"
    assert check["expected"] != check["actual"]
    assert by_id(result)["tree"]["actual"] != by_id(clean)["tree"]["actual"]


def test_deleted_module(venv_copy: Path, manifest: Path, bytecode_cache: Path) -> None:
    (site(venv_copy) / "vllm" / "envs.py").unlink()
    rc, result = record_json(site(venv_copy), manifest, bytecode_cache)
    assert rc == 1
    bad = flagged(result)
    assert list(bad) == ["record:vllm/envs.py"]
    assert bad["record:vllm/envs.py"]["message"] == "Listed in RECORD but missing from the target"
    # Its leftover __pycache__ file is never loaded without the source: not a finding.
    assert "1 without source are ignored by Python" in by_id(result)["bytecode"]["message"]


def test_extra_module_dropped_into_the_package(venv_copy: Path, manifest: Path,
                                               bytecode_cache: Path) -> None:
    (site(venv_copy) / "vllm" / "telemetry_helper.py").write_text("import os\n", encoding="utf-8")
    rc, result = record_json(site(venv_copy), manifest, bytecode_cache)
    assert rc == 1
    bad = flagged(result)
    assert list(bad) == ["record:vllm/telemetry_helper.py"]
    assert bad["record:vllm/telemetry_helper.py"]["message"].startswith(
        "Unlisted: in the package directory but not in RECORD")


def test_tampered_bytecode_that_python_would_run(venv_copy: Path, manifest: Path,
                                                 bytecode_cache: Path) -> None:
    root = site(venv_copy)
    source = (root / VERSION_PY).read_text(encoding="utf-8")
    pyc = root / VERSION_PYC
    original = pyc.read_bytes()
    code = marshal.loads(original[16:])
    evil = source.replace("'0.31.0'", "'6.6.6'")
    assert evil != source
    tampered = compile(evil, code.co_filename, "exec", dont_inherit=True)
    # Keep the original header: the source's mtime and size, so Python trusts the pyc.
    replace_file(pyc, original[:16] + marshal.dumps(tampered))

    # Python really runs it: import the module through the normal import system.
    probe = (f"import sys; sys.path.insert(0, {str(root / 'vllm')!r}); "
             "sys.dont_write_bytecode = True; import _version; "
             "print(_version.__version__, _version.__cached__)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    version, cached = out.stdout.split()
    assert version == "6.6.6"
    assert cached == str(pyc)

    rc, result = record_json(root, manifest, bytecode_cache)
    assert rc == 1
    bad = flagged(result)
    assert list(bad) == [f"bytecode:{VERSION_PYC}"]
    msg = bad[f"bytecode:{VERSION_PYC}"]["message"]
    assert msg.startswith("Tampered bytecode: Python would run this instead of "
                          f"{VERSION_PY} (its header matches the source's mtime and size)"), msg
    assert "only in the bytecode: '6.6.6'" in msg and "only in the source: '0.31.0'" in msg
    # The source-level version check still reads 0.31.0: that is what the audit saw.
    assert by_id(result)["version"]["status"] == "pass"


def test_pth_file_with_an_import_line(venv_copy: Path, manifest: Path, bytecode_cache: Path) -> None:
    line = "import os; os.environ.setdefault('VLLM_PLUGINS', 'evil')"
    (site(venv_copy) / "zz-vllm-plugins.pth").write_text(line + "\n", encoding="utf-8")
    rc, result = record_json(site(venv_copy), manifest, bytecode_cache)
    assert rc == 1
    bad = flagged(result)
    assert list(bad) == ["pth:zz-vllm-plugins.pth"]
    assert bad["pth:zz-vllm-plugins.pth"]["message"] == (
        "zz-vllm-plugins.pth executes code at every interpreter start (no installed "
        f"distribution's RECORD lists it): line 1: {line}; file sha256 "
        + hashlib.sha256((line + "\n").encode()).hexdigest()[:12])


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifo_in_the_package_is_reported_not_opened(venv_copy: Path, manifest: Path,
                                                    bytecode_cache: Path) -> None:
    os.mkfifo(site(venv_copy) / "vllm" / "model_cache")
    # run_cli has a timeout: opening the FIFO would block forever (nobody writes to it).
    rc, result = record_json(site(venv_copy), manifest, bytecode_cache)
    assert rc == 1
    bad = flagged(result)
    assert list(bad) == ["record:vllm/model_cache"]
    assert bad["record:vllm/model_cache"]["message"] == (
        "Is a FIFO in the package directory, not in RECORD; not opened")


def test_manifest_record_key_equals_the_option(venv_copy: Path, manifest: Path,
                                               bytecode_cache: Path, tmp_path: Path) -> None:
    keyed = tmp_path / "keyed.yaml"
    keyed.write_text(manifest.read_text() + "  record: true\n", encoding="utf-8")
    replace_file(site(venv_copy) / SO, b"not the library")
    proc = run_cli("check", str(site(venv_copy)), "-m", str(keyed), "--format", "json",
                   env={"PP1AUDIT_CACHE_DIR": str(bytecode_cache)})
    assert proc.returncode == 1
    result = json.loads(proc.stdout)
    assert list(flagged(result)) == [f"record:{SO}"]
    assert "(size 15, RECORD says 214040)" in flagged(result)[f"record:{SO}"]["message"]
    assert set(by_id(result)) >= SUMMARIES


def test_tree_digest_is_the_documented_sha256sum_pipeline(vllm_tree: Path, manifest: Path,
                                                          bytecode_cache: Path) -> None:
    _, result = record_json(vllm_tree, manifest, bytecode_cache)
    find = subprocess.run(
        ["find", "vllm", "-name", "__pycache__", "-prune", "-o", "-type", "f", "-print0"],
        cwd=vllm_tree, capture_output=True, check=True).stdout
    paths = sorted(p for p in find.split(b"\0") if p)
    lines = b"".join(
        hashlib.sha256((vllm_tree / p.decode()).read_bytes()).hexdigest().encode() + b"  " + p + b"\n"
        for p in paths)
    assert by_id(result)["tree"]["actual"] == hashlib.sha256(lines).hexdigest()


def test_readme_documents_the_record_option() -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert "--record" in text and "tree_sha256" in text
