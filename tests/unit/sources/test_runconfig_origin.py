"""Where a clone path came from, for the messages about it.

A path from ``[repos]`` in a config file that is no clone was reported as
``/nonexistent: --repo lane: no such directory`` to a user who typed no --repo:
the options say which file and key gave each path, and --repo overrides it.
"""

from __future__ import annotations

from pathlib import Path

from pp1audit.sources.runconfig import resolve_options


def test_repo_origin_names_the_config_file_and_key_or_the_option(tmp_path: Path) -> None:
    cfg = tmp_path / "cfg.toml"
    cfg.write_text('[repos]\nlane = "/nonexistent"\nother = "rel"\nmine = "/from-file"\n')
    opts = resolve_options(cfg, ("mine=/from-option",), None)
    assert opts.repo_origin("lane") == f"{cfg}: [repos] lane: /nonexistent"
    assert opts.repo_origin("other") == f"{cfg}: [repos] other: {tmp_path / 'rel'}"  # as resolved
    assert opts.repo_origin("mine") == "/from-option: --repo mine"  # the command line wins
    assert resolve_options(None, ("lane=/x",), None).repo_origin("lane") == "/x: --repo lane"
