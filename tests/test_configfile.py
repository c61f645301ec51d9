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

from pp1audit import cli, configfile, runconfig
from pp1audit.errors import Pp1Error


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
        cli._validate_config(None)
    with pytest.raises(Pp1Error, match=message):
        runconfig.resolve_options(None, (), None)


def test_given_wins_and_nothing_there_is_none(renamed: Path) -> None:
    given = renamed / "given.toml"
    assert configfile.config_file(given) == given
    (renamed / "elsewhere.toml").unlink()
    assert configfile.config_file(None) is None
    (renamed / "elsewhere.toml").symlink_to(renamed / "nowhere")  # dangling: found, refused later
    assert configfile.config_file(None) == Path("elsewhere.toml")


def test_a_plain_check_finds_the_file_without_importing_runconfig(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "pkg").mkdir(parents=True)
    (tree / "pkg" / "__init__.py").write_text("")
    digest = hashlib.sha256(b"").hexdigest()
    m = tmp_path / "m.yaml"
    m.write_text(f"pp1audit: 1\ntarget: {{package: pkg}}\nfiles:\n  pkg/__init__.py: {digest}\n")
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "pp1audit", "check", str(tree),
                           "-m", str(m)], capture_output=True, text=True, cwd=tmp_path,
                          env={**os.environ, "NO_COLOR": "1"}, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines()}
    assert "pp1audit.configfile" in imported
    assert not {"pp1audit.runconfig", "pp1audit.cache", "tomllib"} & imported
