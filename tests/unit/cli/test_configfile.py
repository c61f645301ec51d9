"""One lookup of the run's config file, used by the CLI and by ``runconfig`` alike.

The CLI validates ``./pp1audit.toml`` before every command and ``runconfig`` reads
it for provenance; each used to spell the lookup (and the name) itself, kept alike
only by a test. Now both ask ``configfile.config_file``, a module light enough that
a plain ``check`` imports it and never ``runconfig``.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pp1audit.cli import configfile, options
from pp1audit.errors import Pp1Error
from pp1audit.sources import runconfig


@pytest.fixture
def renamed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A broken config under another name in the working directory, that name made
    the one looked for: only a lookup that reads ``configfile`` can find it."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(configfile, "CONFIG_NAME", "elsewhere.toml")
    (tmp_path / "elsewhere.toml").write_text("[foo]\n")
    (tmp_path / "pp1audit.toml").write_text("[cache]\n")
    return tmp_path


def test_the_cli_and_runconfig_find_the_same_file(renamed: Path) -> None:
    message = re.escape("elsewhere.toml: unknown section 'foo' (known: cache, fetch, repos)")
    with pytest.raises(Pp1Error, match=message):
        options.validate_config(None)
    with pytest.raises(Pp1Error, match=message):
        runconfig.resolve_options(None, (), None)


def test_given_wins_and_nothing_there_is_none(renamed: Path) -> None:
    given = renamed / "given.toml"
    assert configfile.config_file(given) == given
    (renamed / "elsewhere.toml").unlink()
    assert configfile.config_file(None) is None
    (renamed / "elsewhere.toml").symlink_to(renamed / "nowhere")  # dangling: found, refused later
    assert configfile.config_file(None) == Path("elsewhere.toml")


def _plain_check(cwd: Path) -> subprocess.CompletedProcess[str]:
    """``check`` of a one-file tree that passes, no provenance asked for, run in
    ``cwd`` with ``-X importtime`` (stderr lists every module imported)."""
    tree = cwd / "tree"
    (tree / "pkg").mkdir(parents=True)
    (tree / "pkg" / "__init__.py").write_text("")
    digest = hashlib.sha256(b"").hexdigest()
    m = cwd / "m.yaml"
    m.write_text(f"pp1audit: 1\ntarget: {{package: pkg}}\nfiles:\n  pkg/__init__.py: {digest}\n")
    return subprocess.run([sys.executable, "-X", "importtime", "-m", "pp1audit", "check", str(tree),
                           "-m", str(m)], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, "NO_COLOR": "1"}, timeout=120, check=False)


def _imported(proc: subprocess.CompletedProcess[str]) -> set[str]:
    return {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines()}


def test_a_plain_check_without_a_config_file_imports_neither_runconfig_nor_the_cache(
        tmp_path: Path) -> None:
    """No ``./pp1audit.toml``: the lookup (``configfile``) is all a plain check loads,
    never ``runconfig`` and the cache and TOML code behind it."""
    proc = _plain_check(tmp_path)
    assert proc.returncode == 0, proc.stderr
    imported = _imported(proc)
    assert "pp1audit.cli.configfile" in imported
    assert not {"pp1audit.sources.runconfig", "pp1audit.sources.cache", "tomllib"} & imported


def test_a_plain_check_finds_the_config_file_in_its_working_directory(tmp_path: Path) -> None:
    """``./pp1audit.toml`` configuring only ``[fetch]``, which a plain check never
    uses, is still found and read: a bad value in it is exit 2 naming the file."""
    (tmp_path / "pp1audit.toml").write_text("[fetch]\ntimeout = 0\n", encoding="utf-8")
    proc = _plain_check(tmp_path)
    assert proc.returncode == 2, proc.stderr
    error = [line for line in proc.stderr.splitlines() if "pp1audit.toml" in line]
    assert error and error[0].startswith("pp1audit: error: pp1audit.toml: "), proc.stderr
