"""A measured report is the same document wherever it is generated or checked.

It held the manifest path and the target location as typed (``drift.yaml`` or
``../drift.yaml``, ``/home/runner/work/…``, a symlink's name), so ``report --check``
said "stale" from another working directory or checkout although nothing had
changed. The rule now: the summary table names each by the file name of
what its path resolves to (a wheel's file name, a directory's own name such as
``site-packages`` or the package directory, the manifest's file name); the
manifest's SHA-256 and the target's kind, package and version stay beside them.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import zipfile
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, cast

import pytest
from conftest import run_cli

from pp1audit.cli.audit_cmds import _names

if TYPE_CHECKING:
    from pp1audit.manifest import Manifest


@pytest.fixture
def checkout(tmp_path: Path, make_files: Callable[..., Path]) -> Path:
    """A repository as a user lays it out: ``man/m.yaml``, ``site/site-packages/pkg``,
    a wheel of the same package, and ``docs/`` for the audit."""
    root = tmp_path / "one" / "repo"
    site = make_files({
        "pkg/__init__.py": "",
        "pkg/_version.py": '__version__ = "1.0"\n',
        "pkg/a.py": 'def f():\n    return "é — →"\n\nx = 2\n',
    }, root / "site" / "site-packages")
    with zipfile.ZipFile(root / "pkg-1.0-py3-none-any.whl", "w") as zf:
        for name in ("pkg/__init__.py", "pkg/_version.py", "pkg/a.py"):
            zf.write(site / name, name)
    (root / "man").mkdir()
    (root / "docs").mkdir()
    made = run_cli("init", str(site), "-p", "pkg", "--cite", "c=pkg/a.py:1-2",
                   "-o", str(root / "man" / "m.yaml"))
    assert made.returncode == 0, made.stderr
    with open(root / "man" / "m.yaml", "a", encoding="utf-8") as fh:
        fh.write("report:\n  sections:\n    - blocks:\n        - text: f.\n          evidence: [c]\n")
    return root


TARGETS = {
    "site-packages": ("site/site-packages", "directory `site-packages`"),
    "package directory": ("site/site-packages/pkg", "directory `pkg`"),
    "wheel": ("pkg-1.0-py3-none-any.whl", "wheel `pkg-1.0-py3-none-any.whl`"),
}


@pytest.mark.parametrize("target", list(TARGETS))
def test_check_passes_from_any_cwd_and_checkout(target: str, checkout: Path, tmp_path: Path) -> None:
    rel, named = TARGETS[target]
    made = run_cli("report", rel, "-m", "man/m.yaml", "-o", "docs/audit.md", cwd=checkout)
    assert made.returncode == 0, made.stderr
    document = (checkout / "docs" / "audit.md").read_text(encoding="utf-8")
    sha = hashlib.sha256((checkout / "man" / "m.yaml").read_bytes()).hexdigest()
    assert f"| Target | {named} — pkg `1.0` |" in document.splitlines()
    assert f"| Manifest | `m.yaml`, SHA-256 `{sha}` |" in document.splitlines()
    assert str(tmp_path) not in document
    if rel.endswith(".whl"):  # a wheel is also named by its bytes; a directory has no one digest
        wheel = hashlib.sha256((checkout / rel).read_bytes()).hexdigest()
        assert f"| Target SHA-256 | `{wheel}` |" in document.splitlines()
    else:
        assert "Target SHA-256" not in document

    moved = tmp_path / "elsewhere" / "deeper" / "clone"
    shutil.copytree(checkout, moved, symlinks=True)
    link = "link.whl" if rel.endswith(".whl") else "link"  # a wheel is known by its suffix
    (tmp_path / link).symlink_to(moved / rel)
    spellings = [  # (cwd, target, manifest, document)
        (moved, rel, "man/m.yaml", "docs/audit.md"),
        (moved / "docs", f"../{rel}", "../man/m.yaml", "audit.md"),
        (moved / "man", str(moved / rel), "m.yaml", str(moved / "docs" / "audit.md")),
        (tmp_path, link, str(moved / "man" / "m.yaml"),
         os.path.relpath(moved / "docs" / "audit.md", tmp_path)),
        (moved / "site", os.path.relpath(moved / rel, moved / "site"), "./../man/../man/m.yaml",
         "../docs/audit.md"),
    ]
    for cwd, t, m, doc in spellings:
        proc = run_cli("report", t, "-m", m, "--check", doc, cwd=cwd)
        assert proc.returncode == 0, (cwd, t, m, proc.stdout, proc.stderr)
        out = run_cli("report", t, "-m", m, cwd=cwd)  # stdout: the same document
        assert out.returncode == 0 and out.stdout == document, (cwd, t, m)


def test_a_changed_manifest_is_still_stale(checkout: Path) -> None:
    """What the names leave out, the digest says: another manifest of the same name
    (one more pin) makes the document stale, from anywhere."""
    assert run_cli("report", "site/site-packages", "-m", "man/m.yaml", "-o", "docs/audit.md",
                   cwd=checkout).returncode == 0
    with open(checkout / "man" / "m.yaml", "a", encoding="utf-8") as fh:
        fh.write("# one more line\n")
    proc = run_cli("report", "../site/site-packages", "-m", "../man/m.yaml", "--check", "audit.md",
                   cwd=checkout / "docs")
    assert proc.returncode == 1
    assert "-| Manifest | `m.yaml`, SHA-256 `" in proc.stdout


def test_the_shipped_manifest_is_named_by_its_file_name() -> None:
    """No ``-m``: the shipped manifest is named ``pp1.yaml`` in the Markdown, as
    ``-m manifests/pp1.yaml`` names it (its ``pp1audit:`` name is JSON's); ``/`` as a
    target has no last component and stays ``/``."""
    shipped = cast("Manifest", SimpleNamespace(path="pp1audit:manifests/pp1.yaml"))
    names = _names(shipped, None, Path("/"))
    assert (names.manifest, names.target) == ("pp1.yaml", "/")


def test_default_and_named_shipped_manifest_make_the_same_document(
        make_files: Callable[..., Path], tmp_path: Path) -> None:
    """A report made with ``-m manifests/pp1.yaml`` (scripts/main-job.sh) is current
    when checked with the default manifest, and the other way round."""
    from pp1audit.manifest.defaults import default_manifest_path

    target = make_files({"vllm/__init__.py": "", "vllm/_version.py": '__version__ = "0.0.1"\n'},
                        tmp_path / "site")
    shipped = str(default_manifest_path())
    with_m, without_m = tmp_path / "with_m.md", tmp_path / "without_m.md"
    assert run_cli("report", str(target), "-m", shipped, "-o", str(with_m)).returncode in (0, 1)
    assert run_cli("report", str(target), "-o", str(without_m)).returncode in (0, 1)
    assert "| Manifest | `pp1.yaml`, SHA-256 `" in without_m.read_text(encoding="utf-8")
    for flags, doc in (([], with_m), (["-m", shipped], without_m)):
        proc = run_cli("report", str(target), *flags, "--check", str(doc))
        assert proc.returncode == 0, (flags, proc.stdout, proc.stderr)
    as_json = run_cli("check", str(target), "--format", "json")
    assert '"path": "pp1audit:manifests/pp1.yaml"' in as_json.stdout
