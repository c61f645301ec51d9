"""``unconditional: true`` beside ``guarded_by: C``: the match runs whenever C holds.

``guarded_by`` alone says the code runs *only* under the test, and so rightly holds for
a narrower one (``if cache is not None and PER_TOKEN_COL:``). A claim that the code runs
*whenever* the test holds ("the cache is stored whenever there is a cache") was broken
by that narrowing with no check moving: the PP1 review's ``and PER_TOKEN_COL`` edit. The
two keys never held together before (the guard's arm is a condition), so together they
now mean: in the body of an ``if`` testing exactly C, unconditional in that body, and the
``if`` unconditional in its function.
"""

from __future__ import annotations

import textwrap

import pytest
from test_invariants_rules import MakeFiles, one

from pp1audit.result import Status

RULE = """\
    file: pkg/mod.py
    in: f
    pattern: store($$$ARGS)
    guarded_by: cache is not None
    unconditional: true
"""


def body(code: str) -> str:
    """``f(cache, per_token, xs)`` whose body is ``code`` (from line 2)."""
    return "def f(cache, per_token, xs):\n" + textwrap.indent(textwrap.dedent(code), "    ")


@pytest.mark.parametrize("code", [
    "if cache is not None:\n    store(cache)\n",
    "if (cache is not None):\n    col = 1\n    store(cache, col)\n",
    "if None is not cache:\n    store(cache)\n",             # the test's other order
    "x = 1\nif cache is not None:\n    if per_token:\n        col = 2\n    store(cache)\n",
    # what leaves a loop or a definition inside the body does not leave the body
    "if cache is not None:\n    for x in xs:\n        if x:\n            break\n    store(cache)\n",
    "if cache is not None:\n    def h():\n        return 1\n    store(cache, h)\n",
    "if cache is not None:\n    assert per_token is not None\n    store(cache)\n",
])
def test_a_store_run_whenever_the_guard_holds_passes(make_files: MakeFiles, code: str) -> None:
    c = one(make_files, RULE, body(code))
    assert c.status is Status.PASS, c.message


@pytest.mark.parametrize(("code", "why"), [
    # a narrower test: the guard is among its terms
    ("if cache is not None and per_token:\n    store(cache)\n",
     "the `if` at line 2 tests `cache is not None and per_token`, narrower than the guard"),
    # under the guard, but only on some passes there
    ("if cache is not None:\n    if per_token:\n        store(cache)\n",
     "in the body of `if per_token:` at line 3"),
    ("if cache is not None:\n    for x in xs:\n        store(cache, x)\n",
     "in the body of the `for` at line 3"),
    # the guard's `if` itself on some passes only
    ("if per_token:\n    if cache is not None:\n        store(cache)\n",
     "in the body of `if per_token:` at line 2"),
    ("for x in xs:\n    if cache is not None:\n        store(cache)\n",
     "in the body of the `for` at line 2"),
    # an exit before it in the guard's body: `C and not per_token` (review R17 F1)
    ("if cache is not None:\n    if per_token:\n        return\n    store(cache)\n",
     "after `return` at line 4, which may leave first"),
    ("if cache is not None:\n    if per_token:\n        raise ValueError(cache)\n"
     "    store(cache)\n", "after `raise ValueError(cache)` at line 4"),
    ("if cache is not None:\n    try:\n        g()\n    except Exception:\n        return\n"
     "    store(cache)\n", "after `return` at line 6"),
    ("for x in xs:\n    if cache is not None:\n        if x:\n            continue\n"
     "        store(cache)\n", "after `continue` at line 5, which may leave first"),
    # an elif runs only when the tests above fail
    ("if per_token:\n    pass\nelif cache is not None:\n    store(cache)\n",
     "no `if` around it tests exactly the guard"),
])
def test_a_store_skipped_on_some_guarded_passes_fails(make_files: MakeFiles, code: str,
                                                      why: str) -> None:
    c = one(make_files, RULE, body(code))
    assert c.status is Status.FAIL, c.message
    assert "it runs only on some passes on which `cache is not None` holds" in c.message, \
        c.message
    assert why in c.message, c.message


@pytest.mark.parametrize("code", [
    "if cache is not None and per_token:\n    store(cache)\n",
    "if cache is not None:\n    if per_token:\n        store(cache)\n",
])
def test_guarded_by_alone_still_accepts_a_narrower_test(make_files: MakeFiles,
                                                        code: str) -> None:
    """What the guard alone claims (it runs only there) holds for a narrower test."""
    c = one(make_files, RULE.replace("    unconditional: true\n", ""), body(code))
    assert c.status is Status.PASS, c.message


def test_not_under_the_guard_at_all_says_so(make_files: MakeFiles) -> None:
    c = one(make_files, RULE, body("store(cache)\n"))
    assert c.status is Status.FAIL, c.message
    assert "is not inside an `if cache is not None:` block" in c.message, c.message


def test_under_every_each_store_runs_whenever_the_guard_holds(make_files: MakeFiles) -> None:
    rule = """\
        file: pkg/mod.py
        in: f
        pattern: return $R
        every:
          pattern: store($$$ARGS)
          guarded_by: cache is not None
          unconditional: true
    """
    ok = body("if cache is not None:\n    store(cache)\nreturn 1\n")
    assert one(make_files, rule, ok).status is Status.PASS
    narrowed = body("if cache is not None:\n    store(cache)\n"
                    "if cache is not None and per_token:\n    store(cache, 1)\nreturn 1\n")
    c = one(make_files, rule, narrowed)
    assert c.status is Status.FAIL and "every: `store($$$ARGS)` at line 5" in c.message, \
        c.message


# --- unconditional beside inside: whenever the enclosing match's code runs ------------

INSIDE = """\
    file: pkg/mod.py
    in: f
    pattern: mask(logits)
    inside: "if $TEST: $$$BODY"
    unconditional: true
"""


@pytest.mark.parametrize(("code", "why"), [
    ("if per_token:\n    mask(logits)\n", None),
    ("if per_token:\n    n = 1\n    mask(logits)\n", None),
    ("if per_token:\n    mask(logits) if xs else None\n", "in an arm of `mask(logits) if xs"),
    ("if per_token:\n    [mask(logits) for _ in xs]\n", "run once per item, perhaps never"),
    ("if per_token:\n    try:\n        assert xs\n        mask(logits)\n    except AssertionError:\n"
     "        pass\n", "try"),
    ("if per_token:\n    match xs:\n        case 0:\n            mask(logits)\n", "case"),
    ("if per_token:\n    if xs:\n        return\n    mask(logits)\n", "after `return` at line 4"),
])
def test_unconditional_inside_an_if_means_whenever_its_body_runs(
        make_files: MakeFiles, code: str, why: str | None) -> None:
    """PP1's grammar mask (review R18: skipped by `x if t else None`, a comprehension over
    nothing, an assert caught, a `case`) is asked to run whenever its `if`'s body does;
    before, `unconditional` there meant the function's every pass, which an `if` never is."""
    src = "def f(logits, per_token, xs):\n" + textwrap.indent(code, "    ")
    c = one(make_files, INSIDE, src)
    assert c.status is (Status.PASS if why is None else Status.FAIL), c.message
    if why is not None:
        assert "it runs only on some passes whenever `if $TEST: $$$BODY` runs" in c.message, \
            c.message
        assert why in c.message, c.message
