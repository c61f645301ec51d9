"""Manifest edges: a key longer than YAML reads as a key is named as the problem.

YAML looks no further than 1,024 characters for the ``:`` of a key. Past that the
key is read as text and its ``:`` gives "mapping values are not allowed in this
context", which is true and no help: the message says the key is too long, and
points at it. A long value or a real misuse of ``:`` keeps YAML's own message.
"""

from __future__ import annotations

import pytest

from pp1audit.errors import ManifestError
from pp1audit.manifest import MAX_SIMPLE_KEY, parse

HEAD = "pp1audit: 1\ntarget: {package: pkg}\ncitations:\n"
KEY = "k" * (MAX_SIMPLE_KEY + 76)
CITE = '{at: "pkg/a.py:1", anchor: {exact: "x"}}'


@pytest.mark.parametrize(("body", "where"), [
    (f"  {KEY}: {CITE}\n", "4:3"),                     # a block mapping's key
    (f"  '{KEY}': {CITE}\n", "4:3"),                   # quoted
    (f"  c: {{at: 'pkg/a.py:1', {KEY}: 1}}\n", "4:25"),  # in a flow mapping
    (f"  c: [{KEY}: 1]\n", "4:7"),                     # a pair in a flow sequence
], ids=["block", "quoted", "flow-mapping", "flow-sequence"])
def test_a_key_over_1024_characters_is_named(body: str, where: str) -> None:
    with pytest.raises(ManifestError) as info:
        parse(HEAD + body, "m.yaml")
    text = str(info.value)
    assert text.startswith(f"m.yaml:{where}: invalid YAML: a key of "), text
    assert f"YAML reads at most {MAX_SIMPLE_KEY:,} characters as a key" in text
    assert len(text) < 200


def test_a_10_mib_key_is_named_in_one_short_line() -> None:
    with pytest.raises(ManifestError) as info:
        parse(HEAD + "  " + "k" * (10 << 20) + f": {CITE}\n", "m.yaml")
    assert str(info.value).startswith("m.yaml:4:3: invalid YAML: a key of 10,485,760 characters")


@pytest.mark.parametrize("body", [
    "  c: x: 1\n",                               # a ': ' in a plain value: not a key problem
    f"  c:\n    at: {KEY}: 1\n",                 # the same with a long value
    f"  c: {{at: {KEY}: 1}}\n",
], ids=["short-value", "long-value", "long-flow-value"])
def test_other_colon_errors_keep_yamls_message(body: str) -> None:
    with pytest.raises(ManifestError) as info:
        parse(HEAD + body, "m.yaml")
    assert "a key of" not in str(info.value)
    assert "invalid YAML: " in str(info.value)


def test_a_key_of_1024_characters_loads() -> None:
    manifest = parse(HEAD + "  " + "k" * MAX_SIMPLE_KEY + f": {CITE}\n", "m.yaml")
    assert list(manifest.citations) == ["k" * MAX_SIMPLE_KEY]
