"""``assigned`` with ``plain``: every binding and its value, the plain and annotated forms
too, which the file facts' alias reading (``_assigned_pairs``) builds on."""

from __future__ import annotations

from ast_grep_py import SgRoot

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
