"""A ``regex:`` constraint reads string literals as Python does (``pp1audit.stringfold``).

Values were already compared as values everywhere else (``is:``, ``guarded_by``); a
regex read the code's spelling, so ``vars(self)['rejection' '_sampler']`` or
``'rejection\\x5fsampler'`` called the sampler past a rule naming it.
"""

from __future__ import annotations

import ast

import pytest
from test_invariants_rules import MakeFiles, one

from pp1audit.result import Status
from pp1audit.stringfold import fold_literals


@pytest.mark.parametrize(("text", "folded"), [
    # adjacent literals joined, whatever stands between them
    ("vars(self)['rejection' '_sampler']", "vars(self)['rejection_sampler']"),
    ("x = 'a' \\\n  'b' + y", "x = 'ab' + y"),
    ("('rejection'  # a comment\n '_sampler')", "('rejection_sampler')"),
    ("'a''b'", "'ab'"),
    ("u'x' 'y'", "'xy'"),
    ("r'a' r'\\d'", "'a\\\\d'"),                      # raw parts joined: the value spelled
    ("'''tri\nple''' 'x'", "'tri\\nplex'"),         # a newline written as Python's repr does
    ('"it\'s" \'a\'', '"it\'sa"'),                  # the first part's quote kept
    ("'#' 'x'", "'#x'"),                            # a `#` inside a literal is no comment
    ("x[(None)or'rejection' '_sampler']", "x[(None)or'rejection_sampler']"),  # after a keyword
    ("1 if c else'a' 'b'", "1 if c else'ab'"),
    ("'a'\n 'b'", "'ab'"),                          # one expression: its brackets are outside
    ("f(x,\n  'a'\n  'b')", "f(x,\n  'ab')"),
    # escapes written as the characters they stand for
    ("getattr(self, 'rejection\\x5fsampler')", "getattr(self, 'rejection_sampler')"),
    ("'\\N{LOW LINE}'", "'_'"),
    ("'é\\u00e9\\n'", "'éé\\n'"),
    ("'\\d+'", "'\\\\d+'"),                          # an invalid escape is a backslash
    ("b'\\x41' b'\\x00'", "b'A\\x00'"),
    ("\"say \\\"hi\\\"\"", "\"say \\\"hi\\\"\""),   # the quote escaped again, as it must be
])
def test_literals_are_spelled_as_python_reads_them(text: str, folded: str) -> None:
    assert fold_literals(text) == folded


@pytest.mark.parametrize("text", [
    "self.rejection_sampler(logits)",               # no literal
    "'a', 'b'",                                      # two literals, not joined by Python
    "f'{x}' 'y'",                                    # an f-string's parts are code
    "r'\\d+'",                                       # a raw literal says its value
    "'plain'",
    "# 'a' 'b'\n'c'",                                # literals in a comment are no literals
    "'unterminated",                                 # not code: left as it was
    "b'a' 'b'",                                      # bytes and str: Python refuses, so do we
    # a line break outside brackets ends a statement: an attribute's docstring is no part
    # of the value before it
    '    a: T = "greedy"\n    """Doc."""\n',
    "bar = 'x'  # it's\n'y'",
])
def test_what_already_says_its_value_is_left_as_written(text: str) -> None:
    assert fold_literals(text) == text


def test_every_folded_literal_has_the_value_python_gives_the_original() -> None:
    originals = ["'a' \"b\" '''c'''", "'\\t' '\\\\' '\\''", "b'\\xff' b'\"'", "'\\x00\\u2028' \"'\""]
    for text in originals:
        assert ast.literal_eval(fold_literals(text)) == ast.literal_eval(text)


RULE = """\
    file: pkg/mod.py
    in: Runner.sample
    pattern: self.rejection_sampler($$$ARGS)
    every:
      pattern: $SAMPLER($$$CALL_ARGS)
      where:
        SAMPLER: {regex: "['\\"]?rejection_sampler"}
      require:
        CALL_ARGS: {has: draft}
"""


def code(call: str) -> str:
    return ("class Runner:\n"
            "    def sample(self, logits, draft):\n"
            "        out = self.rejection_sampler(logits, draft)\n"
            f"        out = {call}\n"
            "        return out\n")


@pytest.mark.parametrize(("call", "status"), [
    ("vars(self)['rejection' '_sampler'](logits, None)", Status.FAIL),
    ("vars(self)['rejection\\x5fsampler'](logits, None)", Status.FAIL),
    ("getattr(self, ('rejection'\n            '_sampler'))(logits, None)", Status.FAIL),
    ("vars(self)['rejection' '_sampler'](logits, draft)", Status.PASS),
    ("vars(self)['rejection', '_sampler'](logits, None)", Status.PASS),  # a tuple key: no such name
])
def test_a_regex_constraint_sees_the_joined_name(make_files: MakeFiles, call: str,
                                                 status: Status) -> None:
    c = one(make_files, RULE, code(call))
    assert c.status is status, c.message


def test_two_captured_arguments_are_not_joined_into_one_literal(make_files: MakeFiles) -> None:
    # `$$$ARGS` captures two nodes; each is read on its own, so 'ab' appears in neither
    c = one(make_files, """\
        file: pkg/mod.py
        in: f
        pattern: g($$$ARGS)
        where:
          ARGS: {not: {regex: "'ab'"}}
    """, "def f():\n    g('a', 'b')\n")
    assert c.status is Status.PASS, c.message
