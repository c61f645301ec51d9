"""Every command's ``--help`` ends with real examples of itself."""

from __future__ import annotations

import click
import pytest

from pp1audit.cli import cli

COMMANDS = cli.list_commands(click.Context(cli))


@pytest.mark.parametrize("name", COMMANDS)
def test_help_ends_with_examples_of_the_command(name: str) -> None:
    command = cli.get_command(click.Context(cli), name)
    assert command is not None
    parent = click.Context(cli, info_name="pp1audit")
    text = command.get_help(click.Context(command, info_name=name, parent=parent))
    tail = text[text.rindex("Examples:"):].splitlines()[1:]
    assert 1 <= len(tail) <= 3
    assert all(line.strip().startswith(f"pp1audit {name}") for line in tail), tail
