"""``not: [rule, …]``: none of several forbidden shapes may be present.

A mapping holds ``not`` once, and one claim often forbids two shapes: PP1's "the logits
drawn are handed to nothing that may scale them" forbids a call passing them and a
name bound to them (through which a call would pass them unseen).
"""

from __future__ import annotations

import pytest
from test_invariants_require import refused
from test_invariants_rules import MakeFiles, one

from pp1audit.result import Status

RULE = """\
    file: pkg/mod.py
    in: f
    pattern: draw(logits)
    not:
      - pattern: $CALLEE($$$PASSED)
        where:
          PASSED: {has: logits}
          CALLEE: {not: {is: draw}}
      - pattern: $ALIAS = logits
"""


def code(*lines: str) -> str:
    return "def f(logits, t):\n" + "".join(f"    {x}\n" for x in lines)


@pytest.mark.parametrize(("lines", "status", "words"), [
    (["draw(logits)"], Status.PASS, None),
    (["n = logits.shape[0]", "draw(logits)"], Status.PASS, None),
    (["scale(logits, t)", "draw(logits)"], Status.FAIL, "`$CALLEE($$$PASSED)` is present at line 2"),
    (["other = logits", "scale(other, t)", "draw(logits)"], Status.FAIL,
     "`$ALIAS = logits` is present at line 2"),
])
def test_each_rule_of_the_list_is_forbidden(make_files: MakeFiles, lines: list[str],
                                            status: Status, words: str | None) -> None:
    c = one(make_files, RULE, code(*lines))
    assert c.status is status, c.message
    if words is not None:
        assert words in c.message, c.message


def test_a_nested_not_list_and_in_place_in_it(make_files: MakeFiles) -> None:
    rule = """\
        file: pkg/mod.py
        in: f
        pattern: draw(logits)
        follows:
          pattern: logits = load()
          not:
            - pattern: logits = $OTHER
              in_place: true
              where: {OTHER: {not: {is: load()}}}
            - scale(logits, t)
    """
    ok = code("logits = load()", "draw(logits)")
    assert one(make_files, rule, ok).status is Status.PASS
    changed = one(make_files, rule, code("logits = load()", "logits.mul_(t)", "draw(logits)"))
    assert changed.status is Status.FAIL and "line 3" in changed.message, changed.message
    scaled = one(make_files, rule, code("logits = load()", "scale(logits, t)", "draw(logits)"))
    assert scaled.status is Status.FAIL and "`scale(logits, t)` is present" in scaled.message, \
        scaled.message


@pytest.mark.parametrize(("value", "words"), [
    ("[]", "'not' is a rule or a non-empty list of rules (at invariants.r.not)"),
    ("[g(), 3]", "a rule is a pattern, or a mapping with a 'pattern' (at invariants.r.not[1])"),
    ("[{pattern: g(), nott: h()}]", "unknown key 'nott'"),
    ("[{pattern: g($X), in_place: true}]", "'in_place' is read on the rule of a 'not' or an "
     "'every' whose pattern is an assignment"),
])
def test_a_malformed_not_list_is_refused_with_its_place(value: str, words: str) -> None:
    message = refused(f"    pattern: f($$$X)\n    not: {value}\n")
    assert words in message and message.startswith("m.yaml:7:"), message
