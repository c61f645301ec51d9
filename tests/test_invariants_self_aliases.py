"""``every`` on ``self.<attr>`` sees a write through another name of the instance.

Mutating the PP1 files found two ways to give ``self.draft_logits`` a tensor, outside
the ``probabilistic`` guard, that the base speculator's rule let pass: through an alias
of the instance (``me = self; me.draft_logits = …``) and through an expression that
evaluates to it (``(self).draft_logits = …``, ``(me := self).…``, ``(x or self).…``).
Each must now fail, naming the line; the same writes under the guard, or giving None,
must keep passing; and a name that is not the instance must not count.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from test_invariants_rules import MakeFiles, one

from pp1audit.audit import audit
from pp1audit.manifest import load_manifest
from pp1audit.result import Status
from pp1audit.sources import open_target

RULE = """\
    file: pkg/mod.py
    in: Spec.__init__
    pattern: self.cache = None
    every:
      pattern: self.cache = $VALUE
      where:
        VALUE: {not: {is: None}}
      guarded_by: $CONFIG.method == "probabilistic"
"""

SPEC = """\
class Spec:
    def __init__(self, config):
        self.cache = None
        if config.method == "probabilistic":
            self.cache = [0.0]

    def reset(self, config):
"""


def spec(body: str) -> str:
    """``Spec`` with a ``reset`` method of this body."""
    return SPEC + textwrap.indent(textwrap.dedent(body), "        ")


@pytest.mark.parametrize(("body", "line"), [
    ("me = self\nme.cache = [1.0]\n", 9),
    ("me: Spec = self\nme.cache = [1.0]\n", 9),
    ("me = it = self\nit.cache = [1.0]\n", 9),
    ("me = self\nthem = me\nthem.cache = [1.0]\n", 10),
    ("(me := self)\nme.cache = [1.0]\n", 9),
    ("me = self\nsetattr(me, 'cache', [1.0])\n", 9),
    ("me = self\nme.cache, x = [1.0], 2\n", 9),
    ("me = self\nfor me.cache in [[1.0]]:\n    pass\n", 9),
    ("(self).cache = [1.0]\n", 8),
    ("(me := self).cache = [1.0]\n", 8),
    ("(self if config else None).cache = [1.0]\n", 8),
    ("(config or self).cache = [1.0]\n", 8),
    ("(self).cache += [1.0]\n", 8),
    ("(self).cache, x = [1.0], 2\n", 8),
])
def test_a_write_through_another_name_of_the_instance_fails(make_files: MakeFiles, body: str,
                                                            line: int) -> None:
    c = one(make_files, RULE, spec(body))
    assert c.status is Status.FAIL, c.message
    assert f"at line {line}" in c.message and "is not inside an `if" in c.message, c.message


@pytest.mark.parametrize("body", [
    "me = self\nif config.method == 'probabilistic':\n    me.cache = [1.0]\n",
    "me = self\nme.cache = None\n",
    "(self).cache = None\n",
    "if config.method == 'probabilistic':\n    (me := self).cache = [1.0]\n",
    "other = config\nother.cache = [1.0]\n",            # not the instance
    "(config or None).cache = [1.0]\n",                  # may be neither
    "me = self\nreturn me.cache\n",                     # a read
])
def test_the_same_write_guarded_or_of_none_or_not_the_instance_passes(
        make_files: MakeFiles, body: str) -> None:
    c = one(make_files, RULE, spec(body))
    assert c.status is Status.PASS, c.message


def test_an_alias_holds_only_in_its_own_method(make_files: MakeFiles) -> None:
    # `me` is the instance in reset only; another method's `me` is a parameter.
    code = spec("me = self\nreturn me\n") + \
        "\n    def other(self, me):\n        me.cache = [1.0]\n"
    assert one(make_files, RULE, code).status is Status.PASS
    code = spec("me = self\nreturn me\n") + \
        "\n    def other(self, me):\n        me = self\n        me.cache = [1.0]\n"
    c = one(make_files, RULE, code)
    assert c.status is Status.FAIL and "at line 13" in c.message, c.message


def test_an_alias_write_in_a_subclass_in_the_file_fails(make_files: MakeFiles) -> None:
    code = SPEC + "        pass\n\n\nclass Sub(Spec):\n    def more(self):\n" \
        "        me = self\n        me.cache = [2.0]\n"
    c = one(make_files, RULE, code)
    assert c.status is Status.FAIL and "at line 14" in c.message and "subclass" in c.message, \
        c.message


SPECULATOR = "vllm/v1/worker/gpu/spec_decode/speculator.py"
LATER = "    def _validate_local_argmax_reduction(self) -> None:\n"


@pytest.mark.parametrize("write", [
    "        me = self\n        me.draft_logits = torch.zeros(1)\n",
    "        (self).draft_logits = torch.zeros(1)\n",
])
def test_pp1_base_rule_sees_an_instance_alias_in_the_real_speculator(
        tree_copy: Path, edit: Callable[[Path, Callable[[str], str]], None], write: str) -> None:
    text = (tree_copy / SPECULATOR).read_text(encoding="utf-8")
    assert text.count(LATER) == 1
    edit(tree_copy / SPECULATOR, lambda t: t.replace(LATER, LATER + write))
    manifest = load_manifest(Path(__file__).parent.parent / "manifests" / "pp1.yaml")
    with open_target(tree_copy, manifest.package) as source:
        checks = {c.id: c for c in audit(manifest, source).checks}
    c = checks["draft-logits-only-when-probabilistic"]
    assert c.status is Status.FAIL, c.message
    written = text[: text.index(LATER)].count("\n") + 1 + write.count("\n")  # its last line
    assert f"at line {written}" in c.message, c.message


NOT_RULE = """\
    file: pkg/mod.py
    in: Runner.propose
    pattern: self.probs = $PROBS
    not:
      pattern: self.probs = $REPLACED
      follows: self.probs = $PROBS
"""

RUNNER = """\
class Runner:
    def propose(self, drafter):
        probs = drafter.take()
        self.probs = probs
"""


@pytest.mark.parametrize(("tail", "line"), [
    ("        me = self\n        me.probs = None\n", 6),
    ("        (self).probs = None\n", 5),
    ("        me = self\n        setattr(me, 'probs', None)\n", 6),
    ("        me = self\n        setattr(me, drafter.name, None)\n", 6),  # may be `probs`
])
def test_a_forbidden_write_through_another_name_of_the_instance_fails(
        make_files: MakeFiles, tail: str, line: int) -> None:
    c = one(make_files, NOT_RULE, RUNNER + tail)
    assert c.status is Status.FAIL and f"line {line}" in c.message, c.message


@pytest.mark.parametrize("tail", [
    "        me = drafter\n        me.probs = None\n",
    "        me = self\n        me.other = None\n",
    "        me = self\n        return me.probs\n",
])
def test_a_write_of_another_object_or_attribute_is_not_forbidden(make_files: MakeFiles,
                                                                 tail: str) -> None:
    assert one(make_files, NOT_RULE, RUNNER + tail).status is Status.PASS
