"""``all:``: one capture asked several things of one kind (two arguments of one call).

A YAML mapping cannot hold ``argument`` twice, so before ``all`` a claim on a call's
several arguments could pin one by its parameter and had to read the others with
``has`` (among the arguments, in any place): PP1's draft logsumexp kept its claim with
the target's sums passed for the draft's. ``all`` lists constraints of which each
holds, as ``any`` lists ones of which one does.
"""

from __future__ import annotations

import pytest
from test_invariants_rules import MakeFiles, one

from pp1audit.errors import ManifestError
from pp1audit.manifest import parse
from pp1audit.result import Status

BOTH = """\
    file: pkg/mod.py
    in: f
    pattern: lse($$$ARGS)
    where:
      ARGS:
        all:
          - argument: {name: max_ptr, of: lse, is: draft_max}
          - argument: {name: sum_ptr, of: lse, is: draft_sum}
"""


def code(call: str, params: str = "max_ptr, sum_ptr, row") -> str:
    """A module with ``lse(params)`` and ``f`` making ``call``."""
    return (f"def lse({params}):\n    return 0\n\n\n"
            "def f(draft_max, draft_sum, target_sum, row):\n"
            f"    return {call}\n")


@pytest.mark.parametrize("call", [
    "lse(draft_max, draft_sum, row)",
    "lse(sum_ptr=draft_sum, max_ptr=draft_max, row=row)",   # by keyword, in another order
    "lse(draft_max, row=row, sum_ptr=draft_sum)",
])
def test_each_argument_for_its_parameter_holds(make_files: MakeFiles, call: str) -> None:
    c = one(make_files, BOTH, code(call))
    assert c.status is Status.PASS, c.message


def test_the_parameters_moved_with_their_arguments_hold(make_files: MakeFiles) -> None:
    c = one(make_files, BOTH, code("lse(row, draft_sum, draft_max)", "row, sum_ptr, max_ptr"))
    assert c.status is Status.PASS, c.message


@pytest.mark.parametrize(("call", "params", "unmet"), [
    # another value for one of them: that one named, the other said to hold
    ("lse(draft_max, target_sum, row)", "max_ptr, sum_ptr, row", ["sum_ptr"]),
    ("lse(draft_max, row, draft_sum)", "max_ptr, sum_ptr, row", ["sum_ptr"]),
    # one parameter moved alone: its argument now binds another
    ("lse(draft_max, draft_sum, row)", "sum_ptr, max_ptr, row", ["max_ptr", "sum_ptr"]),
    ("lse(draft_max, draft_sum, row)", "max_ptr, row, sum_ptr", ["sum_ptr"]),
])
def test_a_member_that_fails_fails_the_rule_and_is_named(
        make_files: MakeFiles, call: str, params: str, unmet: list[str]) -> None:
    c = one(make_files, BOTH, code(call, params))
    assert c.status is Status.FAIL, c.message
    for name in ("max_ptr", "sum_ptr"):
        assert (f"the argument for `{name}`" in c.message) is (name in unmet), c.message
    if len(unmet) == 1:
        assert "(the other 1 of the 2 asked hold)" in c.message, c.message
    else:  # none holds: the whole constraint, as written
        assert "all of (the argument for `max_ptr`" in c.message, c.message
        assert "asked hold" not in c.message, c.message


def test_has_let_the_same_swap_through(make_files: MakeFiles) -> None:
    """What ``all`` of ``argument``s replaces: each value among the arguments, anywhere."""
    swapped = code("lse(draft_sum, draft_max, row)")
    loose = BOTH.replace("argument: {name: max_ptr, of: lse, is: draft_max}", "has: draft_max") \
        .replace("argument: {name: sum_ptr, of: lse, is: draft_sum}", "has: draft_sum")
    assert one(make_files, loose, swapped).status is Status.PASS
    assert one(make_files, BOTH, swapped).status is Status.FAIL


@pytest.mark.parametrize(("call", "status"), [
    ("g(a, b)", Status.FAIL),    # both of the forbidden ones: forbidden
    ("g(a, c)", Status.PASS),    # one of them only: not
    ("g(c, b)", Status.PASS),
])
def test_not_all_forbids_only_every_member_together(
        make_files: MakeFiles, call: str, status: Status) -> None:
    rule = """\
        file: pkg/mod.py
        in: f
        pattern: g($$$ARGS)
        where:
          ARGS: {not: {all: [{has: a}, {has: b}]}}
    """
    c = one(make_files, rule, f"def f(a, b, c):\n    return {call}\n")
    assert c.status is status, c.message


def test_all_judges_an_arguments_value_and_sits_beside_other_keys(make_files: MakeFiles) -> None:
    rule = """\
        file: pkg/mod.py
        in: f
        pattern: g($$$ARGS)
        where:
          ARGS:
            regex: "^x"
            argument:
              name: d
              at: 1
              all: [{regex: "^d"}, {not: {is: d_stale}}]
    """
    assert one(make_files, rule, "def f(x, d):\n    return g(x, d)\n").status is Status.PASS
    stale = one(make_files, rule, "def f(x, d_stale):\n    return g(x, d_stale)\n")
    assert stale.status is Status.FAIL, stale.message
    # beside another key the whole constraint is said (its members alone would mislead)
    assert "matches /^x/ and the argument for `d`" in stale.message, stale.message
    other = one(make_files, rule, "def f(y, d):\n    return g(y, d)\n")
    assert other.status is Status.FAIL, other.message


@pytest.mark.parametrize(("where", "words"), [
    ("{X: {all: []}}", "[] should be non-empty (at invariants.r.where.X.all)"),
    ("{X: {not: {all: []}}}", "'all' is a non-empty list of constraints "
     "(at invariants.r.where.X.not.all)"),
    ("{X: {all: {has: a}}}", "invariants.r.where.X.all"),
    ("{X: {not: {all: x}}}", "'all' is a non-empty list of constraints "
     "(at invariants.r.where.X.not.all)"),
    ("{X: {all: [{hass: a}]}}", "unknown key 'hass' (a constraint has has, contains, is, "
     "regex, any, all, not, argument, parameter; did you mean 'has'?) "
     "(at invariants.r.where.X.all[0].hass)"),
    ("{X: {all: [{is: a}]}}", "'is' needs a single-node metavariable ($X); use 'has' for a "
     "$$$ list (at invariants.r.where.X.all[0].is)"),
])
def test_a_malformed_all_is_refused_at_load_with_its_place(where: str, words: str) -> None:
    text = ("pp1audit: 1\ntarget: {package: pkg}\ninvariants:\n  r:\n"
            f"    file: pkg/mod.py\n    pattern: f($$$X)\n    where: {where}\n")
    with pytest.raises(ManifestError) as caught:
        parse(text, "m.yaml")
    said = str(caught.value)
    assert said.startswith("m.yaml:7:"), said
    assert words in said, said
    assert "\n" not in said.strip(), said

