"""Hostile manifests that used to escape the one-line error contract.

Each is well under the 16 MiB input cap: nesting deep enough to overflow the C
stack of libyaml's recursive composer (the process died with SIGSEGV, no message),
a control character (a two-line message at 1:1) and an integer over Python's
4,300-digit conversion limit or a scalar its explicit tag does not fit (an
"internal error"). All must be exit 2 with one line naming ``file:line:column``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import run_cli

from pp1audit.errors import ManifestError
from pp1audit.manifest import yamlpos

GOOD = "pp1audit: 1\ntarget:\n  package: pkg\n"


def manifest_error(tmp_path: Path, text: str, command: str = "check") -> str:
    """Run the CLI on a manifest with ``text``; assert the contract and return the line."""
    manifest = tmp_path / "bad.yaml"
    manifest.write_text(text, encoding="utf-8")
    target = [str(tmp_path)] if command == "check" else []
    proc = run_cli(command, *target, "-m", str(manifest), timeout=30)
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-500:])
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert f"{manifest}:" in lines[0]
    return lines[0].split(f"{manifest}:", 1)[1]


@pytest.mark.parametrize("command", ["check", "report"])
def test_flow_nesting_past_the_c_stack_is_refused_before_composing(
    tmp_path: Path, command: str
) -> None:
    # 100,000 levels: libyaml's composer overflows an 8 MB stack at ~25,000.
    text = GOOD + "x: " + "[" * 100_000 + "]" * 100_000 + "\n"
    # The node 33 levels down: 'x' is level 1, its 32nd nested '[' is at column 4 + 32.
    assert manifest_error(tmp_path, text, command) == "4:36: nested deeper than 32"


def test_flow_nesting_past_libyamls_own_limit_is_ours(tmp_path: Path) -> None:
    # 1,000 levels: libyaml 0.2.6 (PyYAML 6.0.4's wheels) stops there by itself, looking
    # ahead for a key before its parser hands on level 33; once, its message came out.
    text = GOOD + "x: " + "[" * 1000 + "]" * 1000 + "\n"
    assert manifest_error(tmp_path, text) == "4:36: nested deeper than 32"


def test_composed_nesting_has_the_walks_message(tmp_path: Path) -> None:
    # Too few collection characters to be walked: build() finds it, and says the same.
    text = GOOD + "x: " + "[" * 40 + "]" * 40 + "\n"
    assert manifest_error(tmp_path, text) == "4:36: nested deeper than 32"


class NestLimitedLoader(yaml.SafeLoader):
    """libyaml 0.2.6's nesting limit on PyYAML's Python scanner, for any PyYAML installed.

    Same look-ahead as libyaml's scanner (up to 1,024 characters for a key), so flow
    nesting past ``limit`` is refused before level 33 is handed on, as libyaml does.
    """

    limit = 1000

    def fetch_flow_collection_start(self, TokenClass: type[yaml.Token]) -> None:
        if self.flow_level + 1 >= self.limit:
            raise yaml.scanner.ScannerError(None, None, "exceeded maximum nesting depth", self.get_mark())
        super().fetch_flow_collection_start(TokenClass)  # type: ignore[misc]


class LowLimitLoader(NestLimitedLoader):
    """A limit set below ours in the process."""

    limit = 10


def flow(levels: int) -> str:
    return GOOD + "x: " + "[" * levels + "]" * levels + "\n"


@pytest.mark.parametrize(
    ("text", "place"),
    [
        (flow(100), "4:36"),  # composed
        (flow(998), "4:36"),  # composed: past the Python composer's recursion
        (GOOD + "x:\n" + "- " * 990 + "a\n", "5:65"),  # composed, block
        (flow(1000), "4:36"),  # walked
        (flow(100_000), "4:36"),  # walked
    ],
    ids=["flow-100", "flow-998", "block-990", "flow-1000", "flow-100000"],
)
@pytest.mark.parametrize("loader", [yaml.SafeLoader, NestLimitedLoader], ids=["python", "nest-limit"])
def test_nesting_message_does_not_depend_on_the_parser(
    monkeypatch: pytest.MonkeyPatch, loader: type[yaml.SafeLoader], text: str, place: str
) -> None:
    monkeypatch.setattr(yamlpos, "_LOADER", loader)
    with pytest.raises(ManifestError) as caught:
        yamlpos.load(text, "m.yaml")
    assert str(caught.value) == f"m.yaml:{place}: nested deeper than 32"


def test_a_parser_limit_below_ours_keeps_the_parsers_message(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(yamlpos, "_LOADER", LowLimitLoader)
    with pytest.raises(ManifestError) as caught:
        yamlpos.load(flow(20), "m.yaml")
    assert str(caught.value).startswith("m.yaml:4:")
    assert str(caught.value).endswith(": invalid YAML: exceeded maximum nesting depth")


def test_block_nesting_past_the_c_stack_is_refused_before_composing(tmp_path: Path) -> None:
    # Compact block sequences ("- - - ...") nest one level per two characters.
    text = GOOD + "x:\n" + "- " * 60_000 + "a\n"
    # Level k starts at column 2k - 1 ('x' is level 1): level 33 at column 65.
    assert manifest_error(tmp_path, text) == "5:65: nested deeper than 32"


@pytest.mark.parametrize(("char", "name"), [("\x01", "U+0001"), ("\x00", "U+0000")])
def test_control_character_is_one_line_at_its_place(tmp_path: Path, char: str, name: str) -> None:
    # Non-ASCII before it: libyaml reports a byte offset, the column counts characters.
    text = GOOD + f'audit: {{id: x, title: "é€{char}"}}\n'
    assert manifest_error(tmp_path, text) == f"4:26: control character {name} not allowed"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("9" * 5000, "integer longer than 4300 digits"),  # int() refuses it
        ("0x" + "f" * 3572, "integer longer than 4300 digits"),  # int() takes it, str() would not
        ("!!int abc", "not a valid !!int"),
        ("!!bool maybe", "not a valid !!bool"),
    ],
    ids=["decimal", "hex", "tagged-int", "tagged-bool"],
)
def test_unreadable_scalar_is_a_manifest_error(tmp_path: Path, value: str, message: str) -> None:
    text = GOOD + "audit: {id: x, n: " + value + "}\n"
    assert manifest_error(tmp_path, text) == f"4:19: {message} (at audit.n)"
