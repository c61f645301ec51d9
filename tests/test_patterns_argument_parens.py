"""Redundant parentheses around a call's argument do not change what a rule reads.

The README promises it ("redundant parentheses around an argument … do not
matter"), but a pattern's argument is a fixed node kind to ast-grep:
``is: tl.constexpr(1 << $BITS)`` failed on ``tl.constexpr((1 << 30))``, the same
value (the user test of the invariants, item 13). ``patterns.is_`` now reads the
node again without those parentheses; parentheses that are code (a tuple, a
generator, a shift's operand) still count.
"""

from __future__ import annotations

import pytest
from ast_grep_py import SgNode, SgRoot
from test_invariants_rules import MakeFiles, one

from pp1audit import patterns
from pp1audit.patterns import is_
from pp1audit.result import Status


def value_of(code: str) -> SgNode:
    """The right-hand side of ``x = <code>``, as the matcher sees a captured value."""
    root = SgRoot(f"x = {code}\n", "python").root()
    node = root.find(kind="assignment")
    assert node is not None
    right = node.field("right")
    assert right is not None
    return right


@pytest.mark.parametrize(("code", "pattern"), [
    ("tl.constexpr((1 << 30))", "tl.constexpr(1 << $BITS)"),
    ("tl.constexpr(((1 << 30)))", "tl.constexpr(1 << $BITS)"),
    ("tl.constexpr(  ( 1 << 30 )  )", "tl.constexpr(1 << 30)"),
    ("f(k=(1), j=((2)))", "f(k=1, j=2)"),
    ("f((a), b)", "f(a, $B)"),
    ("f(\n    (a  # why\n     + b),\n)", "f(a + b)"),
    ("g(f((1)))", "g(f(1))"),
    ("'é' + f((1))", "'é' + f(1)"),  # offsets are characters, not bytes
])
def test_parentheses_around_an_argument_do_not_matter(code: str, pattern: str) -> None:
    assert is_(value_of(code), pattern, {})


@pytest.mark.parametrize(("code", "pattern"), [
    ("tl.constexpr(1 << (30 - 30))", "tl.constexpr(1 << 30)"),  # an operand's, not an argument's
    ("f((a, b))", "f(a, b)"),  # a tuple is one argument
    ("f((1 << 30) - 30)", "f(1 << 30)"),  # parentheses inside the argument
    ("tl.constexpr((1 << 30 - 30))", "tl.constexpr(1 << 30)"),
])
def test_parentheses_that_are_code_still_count(code: str, pattern: str) -> None:
    assert not is_(value_of(code), pattern, {})


def test_a_bound_metavariable_compares_as_code_through_the_reparsed_copy() -> None:
    bound = {"BITS": value_of("30")}
    assert is_(value_of("tl.constexpr((1 << 30))"), "tl.constexpr(1 << $BITS)", bound)
    bound = {"BITS": value_of("31")}
    assert not is_(value_of("tl.constexpr((1 << 30))"), "tl.constexpr(1 << $BITS)", bound)


SALT_RULE = """\
    file: pkg/mod.py
    pattern: _SALT = $SALT
    where:
      SALT: {is: tl.constexpr(1 << $BITS)}
"""


@pytest.mark.parametrize("salt", ["tl.constexpr(1 << 30)", "tl.constexpr((1 << 30))",
                                  "tl.constexpr(\n    (1 << 30)  # past any position\n)"])
def test_an_is_constraint_passes_with_the_argument_in_parentheses(
    make_files: MakeFiles, salt: str
) -> None:
    check = one(make_files, SALT_RULE, f"import tl\n_SALT = {salt}\n")
    assert check.status is Status.PASS, check.message


def test_an_is_constraint_still_fails_on_another_call(make_files: MakeFiles) -> None:
    check = one(make_files, SALT_RULE, "import tl\n_SALT = tl.constexpr((1, 30))\n")
    assert check.status is Status.FAIL, check.message
    assert "does not satisfy: is `tl.constexpr(1 << $BITS)`" in check.message


def test_each_node_is_read_again_at_most_once_and_only_with_a_parenthesised_argument(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Work, not time: the review of 401f9ea found every failing ``is_`` parsing its
    node's text again, quadratic on a file of nested calls (33 KB: 2 s → 16 s)."""
    reparsed: list[str] = []
    original = patterns._reparsed

    def counting(node: SgNode, spans: list[tuple[int, int, int, int]]) -> SgNode | None:
        reparsed.append(node.text())
        return original(node, spans)

    monkeypatch.setattr(patterns, "_reparsed", counting)
    nested = "a"
    for _ in range(6):
        nested = f"g(({nested}), (b))"
    source = f"x = {nested}\ny = h(c, d)\nz = h((c), d)\n"
    root = SgRoot(source, "python").root()
    calls = root.find_all(kind="call")
    for _ in range(5):  # rules try each node many times
        for call in calls:
            assert not is_(call, "nothing($A)", {})
    with_parens = [c.text() for c in calls if "((" in c.text() or "(c)" in c.text()]
    assert sorted(reparsed) == sorted(with_parens)  # h(c, d): never; the rest: once each
    assert len(reparsed) == 7


def test_a_node_without_a_parenthesised_argument_is_never_read_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[str] = []
    monkeypatch.setattr(patterns, "_reparsed",
                        lambda node, spans: calls.append(node.text()))
    assert not is_(value_of("f(g(a), (b) + c, (d, e), -(f))"), "f(a)", {})
    assert calls == []
