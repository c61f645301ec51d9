"""The documentation site builds, and its command reference says what ``--help`` says.

The rule for options: ``docs/cli.md`` opens with one synopsis block naming every
command; the lines of a command (its ``pp1audit NAME`` line and the indented lines
under it) name every long option of that command (``--help`` aside, which every
command has), and no long option the command lacks. Other pages explain options
at length; the synopsis is the one place that must be complete, so that is where
the test looks. The options are read from click's own command objects, as
``--help`` prints them.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import click
import pytest
from conftest import REPO

from pp1audit.cli import cli

CLI_DOC = REPO / "docs" / "cli.md"
LONG = re.compile(r"(?<![\w-])--[a-z][a-z-]*")


def _commands() -> dict[str, click.Command]:
    ctx = click.Context(cli)
    found = {name: cli.get_command(ctx, name) for name in cli.list_commands(ctx)}
    return {name: cmd for name, cmd in found.items() if cmd is not None}


def _long_options(cmd: click.Command) -> set[str]:
    return {o for p in cmd.params if isinstance(p, click.Option)
            for o in (*p.opts, *p.secondary_opts) if o.startswith("--")}


def _synopsis() -> dict[str, str]:
    """``docs/cli.md``'s first indented block, as each command's lines (the
    ``pp1audit NAME`` line and the deeper-indented ones under it), comments cut."""
    text = CLI_DOC.read_text(encoding="utf-8")
    block = re.search(r"\n\n((?:    .*\n)+)", text)
    assert block, "docs/cli.md lost its synopsis block"
    lines: dict[str, str] = {}
    name = None
    for line in block.group(1).splitlines():
        code = line.split("#", 1)[0]
        head = re.match(r"    pp1audit (\S+)", code)
        if head:
            name = head.group(1)
            lines[name] = lines.get(name, "") + code
        else:
            assert name is not None and line.startswith("     "), line
            lines[name] += "\n" + code
    return lines


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    """Every page in the nav, every link and anchor resolves (mkdocs.yml is strict)."""
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                           str(tmp_path / "site")], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    for page in ("index.html", "cli/index.html", "formats/index.html", "security/index.html"):
        assert (tmp_path / "site" / page).is_file(), page
    assert (tmp_path / "site" / "check.svg").is_file()


@pytest.mark.parametrize("name", sorted(_commands()))
def test_every_option_of_a_command_is_in_its_synopsis(name: str) -> None:
    documented = _synopsis()
    assert name in documented, f"docs/cli.md has no synopsis of `pp1audit {name}`"
    named = set(LONG.findall(documented[name]))
    options = _long_options(_commands()[name])
    assert options - named == set(), f"pp1audit {name}: options missing from docs/cli.md"
    assert named - options == set(), f"pp1audit {name}: docs/cli.md names options it lacks"


def test_the_synopsis_names_only_real_commands_and_the_group_options() -> None:
    documented = _synopsis()
    assert set(documented) - {"--version"} == set(_commands())
    assert _long_options(cli) <= set(LONG.findall(documented["--version"]))


def test_the_readme_shows_the_generated_picture() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "](docs/check.svg)" in readme
    svg = (REPO / "docs" / "check.svg").read_text(encoding="utf-8")
    assert svg.startswith("<svg") and "FAIL&#160;(gate&#160;closed)" in svg
