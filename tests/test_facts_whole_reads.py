"""The dotted names a bound value reads whole (what a class alias follows), found for the
whole file at once by ``_WholeReads``: the same names as asking each value's own names for
their parents one by one (the reading it replaced, kept here as the oracle), on real vLLM
modules and on the forms each exclusion is for."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from ast_grep_py import SgNode, SgRoot

from pp1audit.facts.aliases import _DEFAULTED, _assigned_pairs, _WholeReads
from pp1audit.facts.shapes import _NAMES, _dotted
from pp1audit.syntaxtree import ASSIGNING, unparen


def oracle(value: SgNode) -> frozenset[str]:
    """Each name of ``value`` asked for its parent: not a callee, not an attribute's object
    or own name, not a keyword's name, not the value of ``default_factory=``."""
    out: set[str] = set()
    for node in [unparen(value), *value.find_all(_NAMES)]:
        parent = node.parent()
        if parent is not None:
            pk = parent.kind()
            if pk == "attribute" and node in (parent.field("object"), parent.field("attribute")):
                continue
            field = "function" if pk == "call" else "name" if pk == "keyword_argument" else None
            if field is not None and parent.field(field) == node:
                continue
            name = parent.field("name") if pk == "keyword_argument" else None
            if name is not None and name.text() == "default_factory":
                continue
        text = _dotted(node)
        if text is not None:
            out.add(text)
    return frozenset(out)


def values(root: SgNode) -> list[SgNode]:
    """Every value the file binds a name to, as ``_alias_pairs`` reads them."""
    out = [value for node in root.find_all(ASSIGNING) for _t, value in _assigned_pairs(node)]
    out += [v for p in root.find_all(_DEFAULTED) if (v := p.field("value")) is not None]
    return out


def test_real_modules_read_as_one_value_at_a_time(vllm_tree: Path) -> None:
    files = sorted((vllm_tree / "vllm").rglob("*.py"))
    sample = random.Random(6).sample(files, 120)
    compared = 0
    for path in sample:
        root = SgRoot(path.read_text(encoding="utf-8"), "python").root()
        reads = _WholeReads(root)
        for value in values(root):
            assert reads.within(value) == oracle(value), (path, value.text())
            compared += 1
    assert compared > 5000


@pytest.mark.parametrize(("code", "expected"), [
    ("C = Cls", {"Cls"}),
    ("C = a.b.c", {"a.b.c"}),
    ("C = Cls()", set()),  # what the call returns
    ("C = a.b()", set()),
    ("C = f(Cls)", {"Cls"}),
    ("C = f(key=Cls)", {"Cls"}),  # the keyword's own name is not read
    ("C = field(default_factory=Cls)", set()),  # the field holds what Cls() returns
    ("C = [Cls][0]", {"Cls"}),
    ("C = {'k': Cls}", {"Cls"}),
    ("C = Cls.helper", {"Cls.helper"}),
    ("C = (Cls).helper", {"Cls"}),  # parentheses: Cls is read, then its attribute
    ("C = X if t else Cls", {"X", "t", "Cls"}),
    ("C = f(g)(h).k", {"g", "h"}),  # f(g)(h) is called: f is not read whole
    ("for C in (Cls, Other): pass", {"Cls", "Other"}),
    ("def f(C=Cls): pass", {"Cls"}),
])
def test_each_form(code: str, expected: set[str]) -> None:
    root = SgRoot(code + "\n", "python").root()
    reads = _WholeReads(root)
    found = values(root)
    assert found
    assert set().union(*(reads.within(v) for v in found)) == expected
    assert all(reads.within(v) == oracle(v) for v in found)
