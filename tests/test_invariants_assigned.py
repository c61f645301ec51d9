"""``assigned`` with ``plain``: every binding and its value, the plain and annotated forms
too, which the file facts' alias reading (``_assigned_pairs``) builds on."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from ast_grep_py import SgRoot
from conftest import run_cli

from pp1audit.facts.aliases import _assigned_pairs
from pp1audit.syntaxtree import ASSIGNING, assigned


def pairs(code: str, plain: bool) -> list[tuple[str, str]]:
    root = SgRoot(code, "python").root()
    return [(t.text(), v.text()) for node in root.find_all(ASSIGNING)
            for _, t, v in assigned(node, plain=plain)]


def test_plain_and_annotated_forms_only_with_plain() -> None:
    code = "a = 1\nb: int = 2\nc.x = 3\nd[0] = 4\ne, f = 5, 6\n"
    assert pairs(code, plain=False) == [("e", "5"), ("f", "6")]
    assert pairs(code, plain=True) == [("a", "1"), ("b", "2"), ("c.x", "3"), ("d[0]", "4"),
                                       ("e", "5"), ("f", "6")]


def test_chained_assignment_pairs_each_target_with_the_last_value() -> None:
    assert pairs("C = D = Cls\n", plain=True) == [("C", "Cls"), ("D", "Cls")]  # D = Cls: a node
    root = SgRoot("C = D = Cls\n", "python").root()
    outer = root.find_all(ASSIGNING)[0]
    assert [(t.text(), v.text()) for t, v in _assigned_pairs(outer)] == [("C", "Cls")]


def test_a_name_run_over_a_display_is_each_element_too() -> None:
    node = SgRoot("for k in (A, *more, B):\n    pass\n", "python").root().find_all(ASSIGNING)[0]
    assert [(t.text(), v.text()) for t, v in _assigned_pairs(node)] == [
        ("k", "(A, *more, B)"), ("k", "A"), ("k", "B")]


@pytest.mark.parametrize("write", ["p, _ = logits, None", "(p, _) = (logits, None)",
                                   "[p, _] = [logits, None]", "p, = (logits,)"])
def test_a_not_whose_target_is_constrained_sees_each_target_of_a_tuple(
        make_files: Callable[..., Path], tmp_path: Path, write: str) -> None:
    """``not: {pattern: $T = $U, where: {T: {is: $P}}}``: ast-grep matches the tuple
    assignment whole (T the target list) and the assignment forms once per target; the
    first alone was kept, so ``p`` was never seen (a PP1 invariant passed with its
    processed logits thrown away this way)."""
    rule = ("pp1audit: 1\ntarget: {package: pkg}\ninvariants:\n  i:\n    file: pkg/m.py\n"
            "    pattern: h($P)\n    follows: $P = g($$$A)\n    not:\n      pattern: $T = $U\n"
            "      where: {T: {is: $P}}\n      follows: $P = g($$$B)\n")
    for body, status in ((write, "fail"), ("q, r = logits, None", "pass")):
        root = make_files({"pkg/__init__.py": "",
                           "pkg/m.py": f"def f(logits):\n    p = g(logits)\n    {body}\n    return h(p)\n"})
        m = tmp_path / "m.yaml"
        m.write_text(rule)
        proc = run_cli("check", str(root), "-m", str(m), "--format", "json")
        (check,) = [c for c in json.loads(proc.stdout)["checks"] if c["id"] == "i"]
        assert check["status"] == status, (body, check)
