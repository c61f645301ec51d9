"""``every: {pattern, require}``: constraints each match of the pattern must meet.

Under ``every`` a ``where`` selects the matches judged; it requires nothing of them. A
claim such as "every launch of the kernel passes the draft's buffers, each for its
parameter" was therefore written twice: once as the invariant's ``where`` (one launch
does) and again under a ``not`` forbidding a launch that does not (``not: {all: …}``).
``require`` says it once, and a failure names the launch and the argument that broke it.
"""

from __future__ import annotations

import pytest
from test_invariants_rules import MakeFiles, one

from pp1audit.errors import ManifestError
from pp1audit.manifest import parse
from pp1audit.result import Status

EVERY_CALL = """\
    file: pkg/mod.py
    in: f
    pattern: lse($$$ARGS)
    every:
      pattern: lse($$$CALL_ARGS)
      require:
        CALL_ARGS:
          all:
            - argument: {name: max_ptr, of: lse, is: draft_max}
            - argument: {name: sum_ptr, of: lse, is: draft_sum}
"""


def refused(rule: str) -> str:
    """The one-line refusal of invariant ``r`` on pkg/mod.py whose keys after ``file:`` are
    ``rule`` (lines indented by four)."""
    text = "pp1audit: 1\ntarget: {package: pkg}\ninvariants:\n  r:\n    file: pkg/mod.py\n" + rule
    with pytest.raises(ManifestError) as caught:
        parse(text, "m.yaml")
    message = str(caught.value)
    assert message.startswith("m.yaml:") and "\n" not in message, message
    return message


def code(*calls: str, params: str = "max_ptr, sum_ptr, row") -> str:
    """A module with ``lse(params)`` and ``f`` making each of ``calls`` (a line each)."""
    body = "".join(f"    {c}\n" for c in calls)
    return (f"def lse({params}):\n    return 0\n\n\n"
            "def f(draft_max, draft_sum, target_sum, row, block):\n"
            f"{body}")


@pytest.mark.parametrize("calls", [
    ["lse(draft_max, draft_sum, row)"],
    ["lse(draft_max, draft_sum, row)", "lse(sum_ptr=draft_sum, max_ptr=draft_max, row=0)"],
])
def test_every_call_meeting_the_requirement_passes(make_files: MakeFiles,
                                                   calls: list[str]) -> None:
    c = one(make_files, EVERY_CALL, code(*calls))
    assert c.status is Status.PASS, c.message


def test_one_call_of_two_that_does_not_fails_naming_it_and_its_argument(
        make_files: MakeFiles) -> None:
    c = one(make_files, EVERY_CALL, code("lse(draft_max, draft_sum, row)",
                                         "lse(draft_max, target_sum, row)"))
    assert c.status is Status.FAIL, c.message
    assert "every: `lse($$$CALL_ARGS)` at line 7" in c.message, c.message
    assert "the argument for `sum_ptr`" in c.message, c.message
    assert "the argument for `max_ptr`" not in c.message, c.message
    assert "(required of every match)" in c.message, c.message


def test_a_call_on_one_path_only_counts(make_files: MakeFiles) -> None:
    """The match that may run is judged: the wrong one under an ``if`` still fails."""
    c = one(make_files, EVERY_CALL, code("if block:", "    lse(draft_max, row, draft_sum)",
                                         "lse(draft_max, draft_sum, row)"))
    assert c.status is Status.FAIL, c.message
    assert "at line 7" in c.message, c.message


def test_a_call_that_never_runs_is_not_judged(make_files: MakeFiles) -> None:
    c = one(make_files, EVERY_CALL, code("if False:", "    lse(draft_max, row, draft_sum)",
                                         "lse(draft_max, draft_sum, row)"))
    assert c.status is Status.PASS, c.message


def test_no_call_at_all_fails(make_files: MakeFiles) -> None:
    c = one(make_files, EVERY_CALL.replace("pattern: lse($$$ARGS)", "pattern: return $R"),
            code("return row"))
    assert c.status is Status.FAIL, c.message
    assert "needs at least one match" in c.message, c.message


def test_where_selects_and_require_judges(make_files: MakeFiles) -> None:
    """Only the calls with ``row`` last are judged: the other, wrong, is left out."""
    rule = EVERY_CALL.replace(
        "      require:",
        "      where: {CALL_ARGS: {argument: {name: row, of: lse, is: row}}}\n      require:")
    selected_ok = code("lse(draft_max, draft_sum, row)", "lse(draft_max, target_sum, 0)")
    assert one(make_files, rule, selected_ok).status is Status.PASS
    selected_bad = code("lse(draft_max, target_sum, row)", "lse(draft_max, draft_sum, 0)")
    c = one(make_files, rule, selected_bad)
    assert c.status is Status.FAIL and "at line 6" in c.message, c.message


def test_require_beside_a_relation_both_hold(make_files: MakeFiles) -> None:
    rule = EVERY_CALL.replace("      require:", "      follows: prepare()\n      require:")
    ok = code("prepare()", "lse(draft_max, draft_sum, row)")
    assert one(make_files, rule, ok).status is Status.PASS
    unprepared = one(make_files, rule, code("lse(draft_max, draft_sum, row)"))
    assert unprepared.status is Status.FAIL and "does not precede" in unprepared.message, \
        unprepared.message
    wrong = one(make_files, rule, code("prepare()", "lse(draft_sum, draft_max, row)"))
    assert wrong.status is Status.FAIL and "max_ptr" in wrong.message, wrong.message


def test_require_is_the_same_judgement_as_the_not_it_replaces(make_files: MakeFiles) -> None:
    """The long form: a ``where`` on the pattern and a ``not`` forbidding the rest."""
    long_form = """\
        file: pkg/mod.py
        in: f
        pattern: lse($$$ARGS)
        not:
          pattern: lse($$$DROPPED)
          where:
            DROPPED:
              not:
                all:
                  - argument: {name: max_ptr, of: lse, is: draft_max}
                  - argument: {name: sum_ptr, of: lse, is: draft_sum}
    """
    for calls in (["lse(draft_max, draft_sum, row)"],
                  ["lse(draft_max, draft_sum, row)", "lse(draft_max, target_sum, row)"],
                  ["lse(draft_sum, draft_max, row)"],
                  ["if block:", "    lse(row, draft_sum, draft_max)"],
                  ["lse(draft_max, draft_sum, row)", "if False:", "    lse(row, row, row)"]):
        short = one(make_files, EVERY_CALL, code(*calls)).status
        assert short is one(make_files, long_form, code(*calls)).status, calls


@pytest.mark.parametrize(("rule", "words"), [
    # elsewhere than on an every: refused, saying where it is read
    ("    pattern: f($$$X)\n    not:\n      pattern: g($$$Y)\n      require: {Y: {has: a}}\n",
     "'require' is read on the rule of an 'every'"),
    ("    pattern: f($$$X)\n    every:\n      pattern: g($$$Y)\n      has:\n"
     "        pattern: h($$$Z)\n        require: {Z: {has: a}}\n",
     "m.yaml:11:9: 'require' is read on the rule of an 'every': the constraints each match "
     "it judges must meet (elsewhere a match's constraints are its 'where') "
     "(at invariants.r.every.has.require)"),
    # a metavariable the every's pattern does not capture
    ("    pattern: f($$$X)\n    every:\n      pattern: g($$$Y)\n      require: {X: {has: a}}\n",
     "'X' is not a metavariable of the pattern `g($$$Y)` (it captures $$$Y) "
     "(at invariants.r.every.require.X)"),
    # not a mapping; a bad constraint in it
    ("    pattern: f($$$X)\n    every:\n      pattern: g($$$Y)\n      require: [a]\n",
     "'require' is a mapping of metavariable name -> constraint, not a list"),
    ("    pattern: f($$$X)\n    every:\n      pattern: g($$$Y)\n      require: {Y: {is: a}}\n",
     "'is' needs a single-node metavariable ($X); use 'has' for a $$$ list "
     "(at invariants.r.every.require.Y.is)"),
])
def test_a_misplaced_or_malformed_require_is_refused_with_its_place(rule: str,
                                                                    words: str) -> None:
    message = refused(rule)
    assert words in message, message


def test_an_every_with_only_require_is_accepted() -> None:
    text = ("pp1audit: 1\ntarget: {package: pkg}\ninvariants:\n  r:\n    file: pkg/mod.py\n"
            "    pattern: f($$$X)\n    every:\n      pattern: g($$$Y)\n"
            "      require: {Y: {has: a}}\n")
    (inv,) = parse(text, "m.yaml").invariants.values()
    (every,) = inv.every
    assert set(every.require) == {"Y"} and every.has_relation


# --- every: a list of rules, each judged ----------------------------------------------

TWO_EVERY = """\
    file: pkg/mod.py
    in: f
    pattern: lse($$$ARGS)
    every:
      - pattern: lse($$$CALL_ARGS)
        require:
          CALL_ARGS: {argument: {name: max_ptr, of: lse, is: draft_max}}
      - pattern: emit($$$EMITTED)
        follows: lse($$$BEFORE)
"""


@pytest.mark.parametrize(("calls", "broken"), [
    (["lse(draft_max, draft_sum, row)", "emit(row)"], None),
    (["lse(row, draft_sum, draft_max)", "emit(row)"], "every: `lse($$$CALL_ARGS)`"),
    (["emit(row)", "lse(draft_max, draft_sum, row)"], "every: `emit($$$EMITTED)`"),
    (["lse(draft_max, draft_sum, row)"], "every: `emit($$$EMITTED)` not found"),
])
def test_each_rule_of_an_every_list_is_judged(make_files: MakeFiles, calls: list[str],
                                              broken: str | None) -> None:
    c = one(make_files, TWO_EVERY, code(*calls))
    assert c.status is (Status.PASS if broken is None else Status.FAIL), c.message
    if broken is not None:
        assert c.message.startswith(broken), c.message


@pytest.mark.parametrize(("every", "words"), [
    ("every: []", "'every' is a rule or a non-empty list of rules (at invariants.r.every)"),
    ("every: [g($$$Y)]", "'every' needs a relation (inside, has, guarded_by, follows, "
     "precedes, not), 'require' or 'unconditional' saying what each match must satisfy "
     "(at invariants.r.every[0])"),
    ("every: [{pattern: g($$$Y), has: h()}, 3]",
     "a rule is a pattern, or a mapping with a 'pattern' (at invariants.r.every[1])"),
    ("every: [{pattern: g($$$Y), requires: {Y: {has: a}}}]",
     "unknown key 'requires' (a rule has pattern, where, require, inside, has, guarded_by, "
     "follows, precedes, not, in_place, unconditional; did you mean 'require'?) "
     "(at invariants.r.every[0].requires)"),
    ("every: 3", "3 is read as a number, not as text: quote it ('3') (at invariants.r.every)"),
])
def test_a_malformed_every_list_is_refused_with_its_place(every: str, words: str) -> None:
    message = refused(f"    pattern: f($$$X)\n    {every}\n")
    assert words in message and message.startswith("m.yaml:7:"), message


@pytest.mark.parametrize(("call", "status"), [
    ("get(url, timeout=30)", Status.PASS),
    ("get(url, timeout=5)", Status.FAIL),
    ("get(url, **{'timeout': 5})", Status.FAIL),
])
def test_every_on_a_keyword_pattern_judges_keyword_arguments(
        make_files: MakeFiles, call: str, status: Status) -> None:
    """``name=value`` is also a keyword argument, under ``every`` as under ``not``
    (review R17 F2: ``timeout = 30`` alone made every ``timeout=$T`` hold)."""
    rule = """\
        file: pkg/mod.py
        in: f
        pattern: return $R
        every:
          pattern: timeout=$T
          require: {T: {is: '30'}}
    """
    c = one(make_files, rule, f"def f(url):\n    timeout = 30\n    {call}\n    return 1\n")
    assert c.status is status, c.message
    if status is Status.FAIL:
        assert "at line 3" in c.message, c.message


@pytest.mark.parametrize(("write", "status"), [
    ("self.x = good()", Status.PASS),
    ("self.x, self.y = good(), other()", Status.PASS),   # paired: self.x gets good()
    ("self.x += good()", Status.FAIL),
    ("self.x, y = good()", Status.FAIL),                 # self.x gets good()[0]
    ("for self.x in good(): pass", Status.FAIL),
    ("with good() as self.x: pass", Status.FAIL),
])
def test_require_on_a_value_that_is_not_the_one_given_fails(
        make_files: MakeFiles, write: str, status: Status) -> None:
    """``T += v``, ``T, U = v``, ``for T in v``, ``with v as T`` are assignments of ``T``
    ``every`` must judge, but ``T`` does not get ``v`` (review R17 F3)."""
    rule = """\
        file: pkg/mod.py
        in: C.__init__
        pattern: self.x = good()
        every:
          pattern: self.x = $V
          require: {V: {is: good()}}
    """
    src = f"class C:\n    def __init__(self):\n        self.x = good()\n        {write}\n"
    c = one(make_files, rule, src)
    assert c.status is status, c.message
    if status is Status.FAIL:
        assert "does not give its target that value itself" in c.message, c.message

