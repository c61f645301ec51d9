"""A call under a ``*`` in a display is read as Python reads it.

tree-sitter-python reads ``*f(x)`` in a tuple, list, set, subscript or ``for`` iterable
(not in a call's arguments) as the call of ``*f``: no ``call`` of ``f`` existed in the
tree, so ``return a, *f(…)`` hid a call from every pattern, and ``for _ in [*xs()]:``
looked like a loop over a non-empty display (``syntaxtree.python_tree`` repairs it).
"""

from __future__ import annotations

import pytest
from test_rules_polarity import MakeFiles, one

from pp1audit.result import Status
from pp1audit.syntaxtree import python_tree

HAS = "file: pkg/mod.py\npattern: 'def h($$$P): $$$B'\nhas: {pattern}\n"


@pytest.mark.parametrize(("code", "pattern"), [
    ("return a, *f(x)", "f($X)"),
    ("y = [*f(x)]", "f($X)"),
    ("y = {*f(x)}", "f($X)"),
    ("return *f(x),", "f($X)"),
    ("y = a[*f(x)]", "f($X)"),
    ("for q in a, *f(x):\n        pass", "f($X)"),
    ("yield a, *f(x)", "f($X)"),
    ("y = [*a.f(x)]", "a.f($X)"),
    ("y = [*f(x).z]", "f($X)"),
    ("y = [*f(x)(z)]", "f($X)"),
    ("y = [*f(x, [*f(b)])]", "f(b)"),
    ("return a, *f(x)", "return $A, *f($X)"),  # a pattern is read the same way
    ("y = [*f(x)]", "[*f($X)]"),
    ("y = [*(f(x))]", "[*f($X)]"),
])
def test_a_starred_call_is_found(make_files: MakeFiles, code: str, pattern: str) -> None:
    rule = HAS.format(pattern=f"'{pattern}'")
    c = one(make_files, rule, f"def h(a, x, b):\n    {code}\n")
    assert c.status is Status.PASS, c.message
    c = one(make_files, rule, f"def h(a, x, b):\n    {code.replace('f(', 'g(')}\n")
    assert c.status is Status.FAIL, c.message


def test_not_sees_a_starred_call(make_files: MakeFiles) -> None:
    rule = "file: pkg/mod.py\nin: h\npattern: return 0\nnot: f($X)\n"
    c = one(make_files, rule, "def h(a, x):\n    y = a, *f(x)\n    return 0\n")
    assert c.status is Status.FAIL and "is present" in c.message, c.message


def test_a_display_of_only_a_starred_call_may_be_empty(make_files: MakeFiles) -> None:
    """``for _ in [*xs()]: return`` may run zero times: what follows may run, and a ``not:``
    sees it (read as a call, the display had an element and the loop "certainly ran")."""
    rule = "file: pkg/mod.py\nin: h\npattern: return 0\nnot: forbidden()\n"
    code = "def h():\n    for _ in [*xs()]:\n        return 1\n    forbidden()\n    return 0\n"
    c = one(make_files, rule, code)
    assert c.status is Status.FAIL and "is present" in c.message, c.message


def test_the_excerpt_is_the_file_as_written(make_files: MakeFiles) -> None:
    rule = "file: pkg/mod.py\npattern: 'return $A, *f($X)'\n"
    c = one(make_files, rule, "def h(a, x):\n    return a, *f(x)\n")
    assert c.status is Status.PASS and c.found_lines == (2, 2), c.message
    assert c.excerpt is not None and "return a, *f(x)" in c.excerpt, c.excerpt


@pytest.mark.parametrize("text", ["print(*f(x))", "y = [*f(x), 1]", "y = [*(f(x))]", "y = 1"])
def test_code_read_right_is_left_as_written(text: str) -> None:
    assert python_tree(text)[0] == text


def test_lines_do_not_move() -> None:
    text = "y = [\n    *f(\n        x)\n]\nz = [*g(y)]\n"
    fixed, root = python_tree(text)
    assert fixed.count("\n") == text.count("\n")
    calls = {c.text(): c.range().start.line for c in root.find_all(kind="call")}
    assert calls == {"f(\n        x)": 1, "g(y)": 4}
