"""What a rule requires is not satisfied by code that never runs: the body of ``if
TYPE_CHECKING:``, a generator expression nothing iterates, a loop over an empty literal.

From session 9's open items: the real 0.31.0 ``rejection_sampler.py`` with the sampler's
result made up and the correct ``rejection_sample(…)`` call kept in ``(… for _ in ())``
or under ``if TYPE_CHECKING:`` passed PP1's ``verify-passes-draft-logits``. What a rule
forbids (``not:``) still sees such code (fail closed).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import REPO
from test_rules_polarity import MakeFiles, one

from pp1audit.audit import audit
from pp1audit.manifest import load_manifest
from pp1audit.result import Status
from pp1audit.sources import DirectorySource

HAS_CALL = "file: pkg/mod.py\npattern: 'def f($$$P): $$$B'\nhas: g($X)\n"
NOT_CALL = "file: pkg/mod.py\nin: f\npattern: return 0\nnot: g($X)\n"


def body(code: str, head: str = "") -> str:
    """A module with ``head`` and ``def f(x):`` running ``code`` (indented), then ``return 0``."""
    inner = "".join(f"    {ln}\n" if ln else "\n" for ln in code.splitlines())
    return f"{head}def f(x):\n{inner}    return 0\n"


# --- 1. if TYPE_CHECKING: ------------------------------------------------------------------

@pytest.mark.parametrize(("head", "test"), [
    ("from typing import TYPE_CHECKING\n", "TYPE_CHECKING"),
    ("from typing_extensions import TYPE_CHECKING\n", "TYPE_CHECKING"),
    ("import typing\n", "typing.TYPE_CHECKING"),
    ("import typing as t\n", "t.TYPE_CHECKING"),
    ("from typing import TYPE_CHECKING\n", "TYPE_CHECKING and x"),
    ("from typing import TYPE_CHECKING\n", "(TYPE_CHECKING)"),
])
def test_a_call_only_under_type_checking_does_not_count(make_files: MakeFiles, head: str,
                                                        test: str) -> None:
    assert one(make_files, HAS_CALL, body("g(x)", head)).status is Status.PASS
    c = one(make_files, HAS_CALL, body(f"if {test}:\n    g(x)", head))
    assert c.status is Status.FAIL, c.message
    assert "(`g(x)` found at line 4, but unreachable, under `if " in c.message, c.message
    assert "never true when the code runs (`TYPE_CHECKING` is False" in c.message, c.message


def test_the_else_of_type_checking_counts(make_files: MakeFiles) -> None:
    head = "from typing import TYPE_CHECKING\n"
    code = "if TYPE_CHECKING:\n    pass\nelse:\n    g(x)"
    assert one(make_files, HAS_CALL, body(code, head)).status is Status.PASS
    code = "if not TYPE_CHECKING:\n    g(x)"
    assert one(make_files, HAS_CALL, body(code, head)).status is Status.PASS


def test_after_if_not_type_checking_return_nothing_runs(make_files: MakeFiles) -> None:
    head = "from typing import TYPE_CHECKING\n"
    c = one(make_files, HAS_CALL, body("if not TYPE_CHECKING:\n    return 1\ng(x)", head))
    assert c.status is Status.FAIL, c.message


@pytest.mark.parametrize("head", [
    "TYPE_CHECKING = True\n",  # a variable of the file: not typing's
    "from typing import TYPE_CHECKING\nTYPE_CHECKING = True\n",  # bound otherwise too
    "from mytyping import TYPE_CHECKING\n",  # another module's
    "import mytyping as typing\n",
])
def test_a_type_checking_not_from_typing_is_unknown(make_files: MakeFiles, head: str) -> None:
    test = "typing.TYPE_CHECKING" if "as typing" in head else "TYPE_CHECKING"
    c = one(make_files, HAS_CALL, body(f"if {test}:\n    g(x)", head))
    assert c.status is Status.PASS, c.message


def test_not_still_sees_code_under_type_checking(make_files: MakeFiles) -> None:
    head = "from typing import TYPE_CHECKING\n"
    c = one(make_files, NOT_CALL, body("if TYPE_CHECKING:\n    g(x)", head))
    assert c.status is Status.FAIL and "is present" in c.message, c.message


def test_an_in_scope_defined_in_both_arms_must_hold_in_each(make_files: MakeFiles) -> None:
    """``in:`` candidates in branches: each must hold the rule, the one under ``if
    TYPE_CHECKING:`` too (which arm runs is not known for certain: review cases tc1-tc5,
    where TYPE_CHECKING is set at run time, passed when only the ``else`` one was judged)."""
    rule = "file: pkg/mod.py\nin: f\npattern: g($X)\n"
    code = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    def f(x): ...\n"
            "else:\n    def f(x):\n        g(x)\n")
    c = one(make_files, rule, code)
    assert c.status is Status.FAIL, c.message
    assert "f has 2 definitions in branches that cannot be ordered, at lines 3, 5" in c.message
    code = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    def f(x):\n        g(x)\n"
            "else:\n    def f(x): ...\n")
    assert one(make_files, rule, code).status is Status.FAIL


TC_IN_CLASS = """\
class C:
{set}    if {test}:
        def sample(self):
            self.evil()
    else:
        def sample(self):
            self.good()
"""


@pytest.mark.parametrize(("head", "set_", "test"), [
    ("from typing import TYPE_CHECKING\n", "", "TYPE_CHECKING"),  # tc2
    ("from typing import TYPE_CHECKING\n", "    TYPE_CHECKING = True\n", "TYPE_CHECKING"),  # tc1
    ("import typing\ntyping.TYPE_CHECKING = True\nfrom typing import TYPE_CHECKING\n", "",
     "TYPE_CHECKING"),  # tc3
    ("from typing import TYPE_CHECKING\nglobals()['TYPE_CHECKING'] = True\n", "",
     "TYPE_CHECKING"),  # tc4
    ("import typing\n", "    typing = __import__('os')\n", "typing.TYPE_CHECKING"),  # tc5
])
def test_review_cases_the_type_checking_definition_is_judged(
        make_files: MakeFiles, head: str, set_: str, test: str) -> None:
    rule = "file: pkg/mod.py\nin: C.sample\npattern: self.good()\n"
    c = one(make_files, rule, head + TC_IN_CLASS.format(set=set_, test=test))
    assert c.status is Status.FAIL, c.message
    assert "C.sample has 2 definitions in branches" in c.message, c.message


@pytest.mark.parametrize("head", [
    "from typing import TYPE_CHECKING\nclass C:\n    TYPE_CHECKING = True\n",  # class-local
    "from typing import TYPE_CHECKING\ndef k(TYPE_CHECKING):\n    pass\n",  # a parameter
    "from typing import TYPE_CHECKING\ndef k():\n    global TYPE_CHECKING\n"
    "    TYPE_CHECKING = 1\n",
    "import typing\ntyping.TYPE_CHECKING = True\nfrom typing import TYPE_CHECKING\n",
    "from typing import TYPE_CHECKING\nglobals()['TYPE_CHECKING'] = True\n",
    "from typing import TYPE_CHECKING\nsetattr(sys.modules[__name__], 'TYPE_' + 'CHECKING', 1)\n",
    "from typing import TYPE_CHECKING\nvars(m).update(d)\n",
    "from typing import TYPE_CHECKING\nif (TYPE_CHECKING := True):\n    pass\n",
    "from typing import TYPE_CHECKING\nfor TYPE_CHECKING in [1]:\n    pass\n",
])
def test_a_type_checking_the_file_may_set_is_not_folded(make_files: MakeFiles,
                                                        head: str) -> None:
    """Then both arms count, as for any test not known (and as before the fold)."""
    c = one(make_files, HAS_CALL, body("if TYPE_CHECKING:\n    g(x)", head))
    assert c.status is Status.PASS, c.message


@pytest.mark.parametrize("head", [
    "import typing\nclass C:\n    typing = __import__('os')\n",
    "import typing\ndef q():\n    global typing\n    typing = 1\n",
    "import typing\nx = [0 for typing in ()]\n",
])
def test_a_typing_module_name_the_file_rebinds_is_not_folded(make_files: MakeFiles,
                                                             head: str) -> None:
    c = one(make_files, HAS_CALL, body("if typing.TYPE_CHECKING:\n    g(x)", head))
    assert c.status is Status.PASS, c.message


def test_a_type_checking_read_elsewhere_still_folds(make_files: MakeFiles) -> None:
    """Docstrings, ``model.eval()`` and a conditional expression set nothing."""
    head = ('from typing import TYPE_CHECKING\n"""About TYPE_CHECKING."""\nmodel.eval()\n'
            "y = 1 if TYPE_CHECKING else 2\n")
    c = one(make_files, HAS_CALL, body("if TYPE_CHECKING:\n    g(x)", head))
    assert c.status is Status.FAIL, c.message


# --- 2. generators nothing iterates; loops over nothing -----------------------------------

@pytest.mark.parametrize("code", [
    "(g(x) for _ in range(3))",  # an expression statement: nothing iterates it
    "gen = (g(x) for _ in range(3))",  # bound to a name: no iteration shown
    "gen = (y for y in range(3) if g(x))",  # its `if` runs per item too
    "gen = (y for y in range(3) for z in g(x))",  # so does a later iterable
    "list(g(x) for _ in ())",  # iterated, but over nothing
    "[g(x) for _ in ()]",
    "{g(x): 1 for _ in ''}",
    "for _ in []:\n    g(x)",
    "sum(y for y in range(3) for z in () if g(x))",
])
def test_a_call_that_never_runs_per_item_does_not_count(make_files: MakeFiles,
                                                         code: str) -> None:
    c = one(make_files, HAS_CALL, body(code))
    assert c.status is Status.FAIL, c.message
    assert "it has no `g($X)` within it" in c.message


@pytest.mark.parametrize("code", [
    "list(g(x) for _ in range(3))",  # the call's only argument
    "torch.cat([y], (g(x) for _ in range(3)))",  # a positional argument
    "f2(items=(g(x) for _ in range(3)))",  # a keyword argument
    "for y in (g(x) for _ in range(3)):\n    pass",
    "z = [y for y in (g(x) for _ in range(3))]",  # iterated by an eager comprehension
    "z = [*(g(x) for _ in range(3))]",
    "return (g(x) for _ in range(3))",
    "gen = (y for y in g(x))",  # the first iterable is evaluated in place
    "[g(x) for _ in range(3)]",
    "for _ in [0]:\n    g(x)",
])
def test_a_call_that_runs_per_item_counts(make_files: MakeFiles, code: str) -> None:
    c = one(make_files, HAS_CALL, body(code))
    assert c.status is Status.PASS, c.message


@pytest.mark.parametrize("code", [
    "y in (g(x) for _ in range(3))",  # review g1: `in` iterates what it searches
    "y not in (g(x) for _ in range(3))",
    "a, b = (g(x) for _ in range(2))",  # review g2: unpacked
    "[a] = (g(x) for _ in range(1))",
    "z = a, b = (g(x) for _ in range(2))",
    "lst += (g(x) for _ in range(3))",  # review g3: list.__iadd__ iterates
])
def test_a_generator_visibly_iterated_counts(make_files: MakeFiles, code: str) -> None:
    c = one(make_files, HAS_CALL, body(f"lst = []\n{code}"))
    assert c.status is Status.PASS, c.message


@pytest.mark.parametrize("code", [
    "(g(x) for _ in range(3)) in ys",  # searched in, not searched
    "a = (g(x) for _ in range(2))",  # bound to a name: data flow
    "a, b = y, (g(x) for _ in range(2))",  # unpacks the tuple, not the generator
])
def test_a_generator_not_visibly_iterated_does_not_count(make_files: MakeFiles,
                                                         code: str) -> None:
    c = one(make_files, HAS_CALL, body(code))
    assert c.status is Status.FAIL, c.message
    assert "but in a generator expression nothing iterates (" in c.message, c.message
    assert "unreachable" not in c.message, c.message


@pytest.mark.parametrize("word", ["yield from", "yield"])  # review g8: `yield gen` too
def test_yield_hands_a_generator_on(make_files: MakeFiles, word: str) -> None:
    code = f"def f(x):\n    {word} (g(x) for _ in range(3))\n"
    assert one(make_files, HAS_CALL, code).status is Status.PASS


@pytest.mark.parametrize("code", ["(g(x) for _ in range(3))", "gen = (g(x) for _ in xs)"])
def test_not_still_sees_a_generator_nothing_iterates(make_files: MakeFiles, code: str) -> None:
    c = one(make_files, NOT_CALL, body(code))
    assert c.status is Status.FAIL and "is present" in c.message, c.message


def test_not_does_not_see_a_loop_over_nothing(make_files: MakeFiles) -> None:
    """An empty literal iterates nothing in both directions: that code can never run."""
    c = one(make_files, NOT_CALL, body("for _ in ():\n    g(x)"))
    assert c.status is Status.PASS, c.message


# --- 3. the real file ----------------------------------------------------------------------

REJECTION = "vllm/v1/worker/gpu/spec_decode/rejection_sampler.py"
CALL_START = "        sampled, num_sampled = rejection_sample(\n"
CALL_END = "        return processed_logits, sampled, num_sampled"
MADE_UP = "        sampled, num_sampled = draft_sampled, None\n"


def _kept_generator(call: str) -> str:
    return call.replace("sampled, num_sampled = rejection_sample(", "(rejection_sample(") \
        .replace("        )\n", "        ) for _ in ())\n")


def _kept_type_checking(call: str) -> str:
    return "        if TYPE_CHECKING:\n" + "".join(
        f"    {ln}" if ln.strip() else ln for ln in call.splitlines(keepends=True))


@pytest.mark.parametrize("keep", [_kept_generator, _kept_type_checking])
def test_real_sampler_with_the_call_kept_where_it_never_runs(
        vllm_tree: Path, tmp_path: Path, keep: Callable[[str], str]) -> None:
    text = (vllm_tree / REJECTION).read_text(encoding="utf-8")
    call = text[text.index(CALL_START):text.index(CALL_END)]
    tampered = text.replace(call, keep(call) + MADE_UP).replace(
        "from typing import Any\n", "from typing import TYPE_CHECKING, Any\n")
    pp1 = load_manifest(REPO / "manifests" / "pp1.yaml")
    # The control: the made-up line and import with the call left where it runs pass, so the
    # tampered file fails for where the call is kept, not for the made-up line.
    live = text.replace(call, MADE_UP + call).replace(
        "from typing import Any\n", "from typing import TYPE_CHECKING, Any\n")
    for name, code in (("same", text), ("live", live), ("tampered", tampered)):
        target = tmp_path / name / REJECTION
        target.parent.mkdir(parents=True)
        target.write_text(code, encoding="utf-8")
        check = next(c for c in audit(pp1, DirectorySource(tmp_path / name)).checks
                     if c.id == "verify-passes-draft-logits")
        want = Status.FAIL if name == "tampered" else Status.PASS
        assert check.status is want, check.message


# --- 4. a failure says where the text is, and why it does not count ------------------------

WHERE_CALL = "file: pkg/mod.py\npattern: 'def f($$$P): $$$B'\nwhere: {B: {contains: g($X)}}\n"


@pytest.mark.parametrize(("code", "why"), [
    ("def inner():\n    g(x)", "inside `def inner` at line 2, a nested function that this "
     "match never runs (it runs only if called)"),
    ("h = lambda: g(x)", "inside `lambda` at line 2, a nested lambda"),
    ("class K:\n    y = g(x)", "inside `class K` at line 2, a class body nested in this match"),
    ("(g(x) for _ in range(3))", "in a generator expression nothing iterates (`(g(x) for _ "
     "in range(3))` at line 2; a generator runs only when iterated"),
    ("for _ in ():\n    g(x)", "unreachable, in the body of the `for` at line 2, which "
     "iterates `()`: nothing"),
    ("return 1\ng(x)", "unreachable, after the `return` at line 2"),
])
@pytest.mark.parametrize("rule", [HAS_CALL, WHERE_CALL])
def test_a_requirement_says_why_the_text_found_does_not_count(
        make_files: MakeFiles, code: str, why: str, rule: str) -> None:
    c = one(make_files, rule, body(code))
    assert c.status is Status.FAIL, c.message
    assert "`g(x)` found at line " in c.message and f", but {why}" in c.message, c.message


def test_a_left_out_match_that_would_not_hold_anyway_is_not_named(
        make_files: MakeFiles) -> None:
    """Only a match that would satisfy the relation were it live is named: ``g(y)`` in a
    nested function does not pass ``x``, and saying it was found would mislead."""
    rule = "file: pkg/mod.py\npattern: 'def f(x): $$$B'\nhas: g(x)\n"
    c = one(make_files, rule, body("def inner(y):\n    g(y)"))
    assert c.status is Status.FAIL and "found at" not in c.message, c.message


# --- 5. a class body nested in a match: one reading for every relation ---------------------

CLASS_BODY = "def f(x):\n    class K:\n        y = g(x)\n    return 0\n"
"""A class body runs when its ``class`` statement does, but it is a namespace of its own
(``y`` is ``K.y``, not ``f``'s): ``in:``, ``follows`` and ``has`` alike do not read it as
the enclosing code's (a requirement, so failing is the safe side)."""


@pytest.mark.parametrize(("rule", "said"), [
    (HAS_CALL, "inside `class K` at line 2, a class body nested in this match"),
    (WHERE_CALL, "inside `class K` at line 2, a class body nested in this match"),
    ("file: pkg/mod.py\nin: f\npattern: g($X)\n", "inside `class K` at line 2, not in f itself"),
    ("file: pkg/mod.py\nin: f\npattern: return 0\nfollows: y = g($X)\n",
     "inside `class K` at line 2"),
])
def test_a_nested_class_body_is_not_the_enclosing_code(make_files: MakeFiles, rule: str,
                                                       said: str) -> None:
    c = one(make_files, rule, CLASS_BODY)
    assert c.status is Status.FAIL and said in c.message, c.message
    live = CLASS_BODY.replace("    class K:\n        y", "    y")
    assert one(make_files, rule, live).status is Status.PASS
