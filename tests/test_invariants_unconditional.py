"""``unconditional: true``: the match must run whenever the code around it is reached.

Mutating the PP1 files found claims that code *runs* ("with cached draft logits the
method reaches gumbel_sample", "the sampling parameters are applied before
rejection_sample") that a rule let pass when the code was only *there*: in one arm of
``a if t else b``, after ``x and``, under ``if step == 0:``, in a loop that may run no
pass. Opt-in, because many claims are rightly about a branch (the grammar mask applies
when there is a grammar).
"""

from __future__ import annotations

import textwrap

import pytest
from test_invariants_rules import MakeFiles, manifest_text, one

from pp1audit.errors import ManifestError
from pp1audit.manifest import parse
from pp1audit.result import Status

RULE = """\
    file: pkg/mod.py
    in: f
    pattern: g($$$ARGS)
    unconditional: true
"""


def body(code: str) -> str:
    """``f(t, xs, m)`` whose body is ``code`` (from line 2)."""
    return "def f(t, xs, m):\n" + textwrap.indent(textwrap.dedent(code), "    ")


@pytest.mark.parametrize(("code", "why"), [
    ("if t:\n    g(1)\n", "in the body of `if t:` at line 2"),
    ("if t:\n    pass\nelse:\n    g(1)\n", "in the `else` of the `if` at line 2"),
    ("if t:\n    pass\nelif m:\n    g(1)\n", "in the body of `elif m:` at line 4"),
    ("for x in xs:\n    g(x)\n",
     "in the body of the `for` at line 2, which runs once per item of `xs`, perhaps never"),
    ("while t:\n    g(1)\n", "in the body of `while t:` at line 2, which may run no pass"),
    ("for x in xs:\n    if x:\n        break\nelse:\n    g(1)\n",
     "in the `else` of the `for` at line 2, which the `break` at line 4 skips"),
    ("try:\n    h()\n    g(1)\nexcept E:\n    pass\n",
     "in the body of the `try` at line 2, after `h()` at line 3, whose exception an `except` "
     "may catch"),
    ("try:\n    h()\nexcept E:\n    g(1)\n", "in an `except` of the `try` at line 2"),
    ("try:\n    h()\nexcept E:\n    pass\nelse:\n    g(1)\n",
     "in the `else` of the `try` at line 2, which runs only when its body raised nothing"),
    ("match t:\n    case 1:\n        g(1)\n", "in a `case` of the `match` at line 2"),
    ("x = g(1) if t else 0\n", "in an arm of `g(1) if t else 0` at line 2, taken only when "
     "`t` is true"),
    ("x = 0 if t else g(1)\n", "in an arm of `0 if t else g(1)` at line 2, taken only when "
     "`t` is false"),
    ("x = t and g(1)\n", "on the right of `and` in `t and g(1)` at line 2, evaluated only "
     "when `t` is true"),
    ("x = t or g(1)\n", "on the right of `or` in `t or g(1)` at line 2, evaluated only when "
     "`t` is false"),
    ("x = [g(y) for y in xs]\n", "in `[g(y) for y in xs]` at line 2, run once per item, "
     "perhaps never"),
    ("x = [y for y in xs if g(y)]\n", "in `[y for y in xs if g(y)]` at line 2, run once per "
     "item, perhaps never"),
    ("x = [y for z in xs for y in g(z)]\n", "in `[y for z in xs for y in g(z)]` at line 2"),
    ("assert g(1)\n", "in the `assert` at line 2, which `python -O` strips"),
    ("assert t, g(1)\n", "in the `assert` at line 2"),
])
def test_a_match_that_runs_only_on_some_passes_fails_and_says_where(
        make_files: MakeFiles, code: str, why: str) -> None:
    c = one(make_files, RULE, body(code))
    assert c.status is Status.FAIL, c.message
    assert f"it runs only on some passes: {why}" in c.message, c.message
    assert c.message.endswith("(the rule is unconditional)"), c.message
    # without the key, the same code holds the rule: the key is what asks for more
    plain = one(make_files, RULE.replace("    unconditional: true\n", ""), body(code))
    assert plain.status is Status.PASS, plain.message


@pytest.mark.parametrize("code", [
    "g(1)\n",
    "if t:\n    return 0\ng(1)\n",                  # an early exit before it: it runs when reached
    "x = h(g(1))\n",
    "if g(1):\n    pass\n",                          # a test is evaluated whenever its `if` is
    "for x in g(1):\n    pass\n",                    # so is a loop's iterable
    "while g(1):\n    pass\n",
    "x = [y for y in g(1)]\n",                       # and a comprehension's first iterable
    "x = 0 if g(1) else 0\n",                        # and its test
    "x = g(1) and t\n",                              # and the left of `and`
    "x = True and g(1)\n",                           # a constant that selects the operand
    "x = False or g(1)\n",
    "x = g(1) if True else 0\n",
    "if True:\n    g(1)\n",
    "if False:\n    pass\nelse:\n    g(1)\n",
    "while True:\n    g(1)\n    break\n",
    "for x in xs:\n    pass\nelse:\n    g(1)\n",      # no `break`: the `else` always runs
    "try:\n    g(1)\nexcept E:\n    pass\n",        # the first statement of the body
    "try:\n    1 / 1\n    n = [0][0]\n    g(1)\nexcept E:\n    pass\n",  # after constants only
    "try:\n    h()\n    g(1)\nfinally:\n    pass\n",  # no handler: an exception leaves f
    "try:\n    h()\nfinally:\n    g(1)\n",
    "with m:\n    h()\n    g(1)\n",
])
def test_a_match_that_runs_whenever_reached_holds(make_files: MakeFiles, code: str) -> None:
    c = one(make_files, RULE, body(code))
    assert c.status is Status.PASS, c.message


def test_a_dead_match_is_still_not_code(make_files: MakeFiles) -> None:
    c = one(make_files, RULE, body("if False:\n    g(1)\n"))
    assert c.status is Status.FAIL and "never" in c.message, c.message


def test_a_relation_is_unconditional_on_the_passes_of_its_match(make_files: MakeFiles) -> None:
    """A ``follows`` candidate must run on every pass that runs the match: in the same
    loop body it does (the loop is a condition of both); under an ``if`` in it, not."""
    rule = """\
        file: pkg/mod.py
        in: f
        pattern: g($X)
        follows:
          pattern: $X = h($$$ARGS)
          unconditional: true
    """
    same = body("for y in xs:\n    x = h(y)\n    g(x)\n")
    assert one(make_files, rule, same).status is Status.PASS
    guarded = body("for y in xs:\n    x = y\n    if y:\n        x = h(y)\n    g(x)\n")
    c = one(make_files, rule, guarded)
    assert c.status is Status.FAIL, c.message
    assert "(the one at line 5: it runs only on some passes: in the body of `if y:` at " \
        "line 4" in c.message, c.message
    in_arm = body("x = h(t) if t else t\ng(x)\n")   # the pattern is then not an assignment
    assert one(make_files, rule, in_arm).status is Status.FAIL


def test_precedes_asks_the_later_match_to_run_on_the_passes_of_the_first(
        make_files: MakeFiles) -> None:
    rule = """\
        file: pkg/mod.py
        in: f
        pattern: x = h($$$ARGS)
        precedes:
          pattern: g(x)
          unconditional: true
    """
    assert one(make_files, rule, body("x = h(t)\ng(x)\n")).status is Status.PASS
    c = one(make_files, rule, body("x = h(t)\nif m:\n    g(x)\n"))
    assert c.status is Status.FAIL and "in the body of `if m:` at line 3" in c.message, c.message
    c = one(make_files, rule, body("x = h(t)\ny = m or g(x)\n"))
    assert c.status is Status.FAIL and "on the right of `or`" in c.message, c.message


def test_has_asks_it_of_the_match_not_of_the_function(make_files: MakeFiles) -> None:
    """Within a matched ``with`` in a loop, the call runs whenever the ``with`` does (the
    loop around both is no condition between them); an ``if`` inside it is. A matched
    ``for`` may itself run no pass of its body."""
    rule = """\
        file: pkg/mod.py
        in: f
        pattern: "with $CM: $$$BODY"
        has:
          pattern: g($$$CALLED)
          unconditional: true
    """
    assert one(make_files, rule, body("for y in xs:\n    with m:\n        g(y)\n")).status \
        is Status.PASS
    c = one(make_files, rule, body("with m:\n    if t:\n        g(1)\n"))
    assert c.status is Status.FAIL and "in the body of `if t:` at line 3" in c.message, \
        c.message
    c = one(make_files, rule.replace('"with $CM: $$$BODY"', '"for $Y in xs: $$$BODY"'),
            body("for y in xs:\n    g(y)\n"))
    assert c.status is Status.FAIL and "in the body of the `for` at line 2" in c.message, \
        c.message


def after_h(relation: str) -> str:
    """``f``'s call of ``h`` with ``relation`` an unconditional rule on calls of ``g``."""
    return ("file: pkg/mod.py\nin: f\npattern: h($$$ARGS)\n"
            f"{relation}:\n  pattern: g($$$CALLED)\n  unconditional: true\n")


def test_every_match_can_be_asked_to_run_unconditionally(make_files: MakeFiles) -> None:
    rule = after_h("every")
    assert one(make_files, rule, body("h(1)\ng(1)\ng(2)\n")).status is Status.PASS
    c = one(make_files, rule, body("h(1)\ng(1)\nif t:\n    g(2)\n"))
    assert c.status is Status.FAIL, c.message
    assert "every: `g($$$CALLED)` at line 5" in c.message and "`if t:`" in c.message, c.message


def test_a_nested_function_is_not_the_code_around_it(make_files: MakeFiles) -> None:
    """Under ``not`` (which reads nested code too), an unconditional rule forbids only what
    the function itself runs on every pass: a call in a nested def is not that."""
    rule = after_h("not")
    assert one(make_files, rule, body("h(1)\ndef inner():\n    g(1)\n")).status is Status.PASS
    assert one(make_files, rule, body("h(1)\nif t:\n    g(1)\n")).status is Status.PASS
    c = one(make_files, rule, body("h(1)\ng(1)\n"))
    assert c.status is Status.FAIL and "must be absent" in c.message, c.message


@pytest.mark.parametrize(("invariant", "where", "words"), [
    ("file: pkg/mod.py\npattern: g()\nunconditional: 1\n", "m.yaml:7:20",
     "1 is not of type 'boolean'"),
    ("file: pkg/mod.py\npattern: g()\nfollows: {pattern: h(), unconditional: yes please}\n",
     "m.yaml:7:44", "'unconditional' is true or false, not text"),
])
def test_unconditional_is_a_boolean(invariant: str, where: str, words: str) -> None:
    text = manifest_text("r:\n" + textwrap.indent(invariant, "  "))
    with pytest.raises(ManifestError) as err:
        parse(text, "m.yaml")
    said = str(err.value)
    assert said.startswith(where) and words in said, said


def test_every_with_only_unconditional_is_a_requirement(make_files: MakeFiles) -> None:
    """``unconditional`` alone is something an ``every`` asks of each match (not refused as
    a relation-less ``every``)."""
    rule = """\
        file: pkg/mod.py
        in: f
        pattern: h($$$ARGS)
        every: {pattern: "g($$$CALLED)", unconditional: true}
    """
    assert one(make_files, rule, body("h(1)\ng(1)\n")).status is Status.PASS
    assert one(make_files, rule, body("h(1)\nx = t and g(1)\n")).status is Status.FAIL
