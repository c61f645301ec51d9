"""Conditional code: which code of a function may be skipped when the code around it
runs, for a rule marked ``unconditional: true``.

A pattern that matches says the code is *there*; ``follows`` / ``precedes`` say it comes
before or after another match in the same pass. Neither says it *runs*: a call in the
body of ``if step < 0:``, in one arm of ``a if t else b``, after ``x and`` or in a
comprehension's element runs only sometimes, yet matches all the same. A claim such as
"with cached draft logits the method reaches gumbel_sample" needs the call to be made
whenever the method gets that far; ``unconditional`` asks exactly that.

Separate from ``reachability`` because dead code is code that may never run; this is
code that may run but need not, a weaker fact that only this key asks for. An early
exit before the match (``if x: return``) is not a condition on it here: the match runs
whenever the code reaches it, and a rule says what the early paths are with its own
``every``/``guarded_by``."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from pp1audit.facts.reachability import (
    _COMPREHENSIONS,
    _HANDLERS,
    Reachability,
    _first_clause,
    _loop_of,
    _try_parts,
)
from pp1audit.syntaxtree import (
    branches,
    constant_statement_completes,
    key,
    line,
    named_items,
    short,
    within,
)

if TYPE_CHECKING:  # pragma: no cover
    from ast_grep_py import SgNode

class Conditions(Reachability):
    """Where a node runs only on some passes through its function (``Facts``' part)."""

    def conditional(self, node: SgNode, region: SgNode, certain: bool = False) -> str | None:
        """Why ``node`` may be skipped when the code of ``region`` around it runs, or None
        when it runs whenever its statement is reached. ``region`` is its function (class,
        module) for the match itself; for a match related to another (``follows``,
        ``has``) the innermost node holding both: what is asked is that it runs on every
        pass that runs the other.

        Conditions: an ``if``/``elif``/``else`` arm (unless its tests are constant and
        select it), a ``for`` or ``while`` body (it may run no pass; ``while True:`` does run
        one), a loop's ``else`` a ``break`` may skip, a ``try`` body after its first statement
        when a handler may catch what an earlier one raises, an ``except`` or a ``try``'s
        ``else``, a ``case``, an arm of a conditional expression or the right operand of
        ``and`` / ``or`` (unless the test is constant), the per-item part of a comprehension
        (all but its first iterable), an ``assert`` (``python -O`` strips it), and the body
        of a ``def`` or ``lambda`` nested in ``region`` (it runs only if called). A
        ``with`` body counts as run: a context manager that swallows an exception raised
        before the match is not seen. ``certain`` is the direction, as for ``truth``."""
        child = node
        for parent in node.ancestors():
            if key(child) == key(region) or not within(parent, region):
                return None
            if parent.kind() in ("function_definition", "lambda") and key(parent) != key(region):
                body = parent.field("body")
                if body is not None and key(body) == key(child):
                    return (f"inside `{short(parent, 30)}` at line {line(parent)}, which runs "
                            "only if called")
            # The block two matches share orders them, it is no condition between them.
            shared = key(parent) == key(region) and parent.kind() == "block"
            why = None if shared else self._arm(child, parent, certain)
            if why is not None:
                return why
            child = parent
        return None

    def _arm(self, child: SgNode, parent: SgNode, certain: bool) -> str | None:
        """Why ``child`` runs only on some passes through ``parent``, or None."""
        kind = parent.kind()
        if kind == "if_statement":
            return self._if_arm(child, parent, certain)
        if kind in ("for_statement", "while_statement"):
            return self._loop_arm(child, parent, certain)
        if kind == "try_statement" or (kind == "block" and (stmt := parent.parent()) is not None
                                       and stmt.kind() == "try_statement"):
            return _try_arm(child, parent)
        if kind == "case_clause":
            match = next((a for a in parent.ancestors() if a.kind() == "match_statement"), parent)
            return f"in a `case` of the `match` at line {line(match)}"
        if kind in ("conditional_expression", "boolean_operator"):
            return self._operand_arm(child, parent, certain)
        if kind in _COMPREHENSIONS or kind == "for_in_clause":
            return _per_item(child, parent)
        if kind == "assert_statement":
            return f"in the `assert` at line {line(parent)}, which `python -O` strips"
        return None

    def _loop_arm(self, child: SgNode, loop: SgNode, certain: bool) -> str | None:
        """Why ``child`` of a ``for``/``while`` runs only on some passes: its body and target
        run once per pass (perhaps none; ``while True:`` runs one), its ``else`` unless a
        ``break`` of this loop leaves it; the iterable and the test run with the loop."""
        word = "for" if loop.kind() == "for_statement" else "while"
        if child.kind() == "else_clause":
            stop = next((j for j in loop.find_all(kind="break_statement")
                         if (of := _loop_of(j)) is not None and key(of) == key(loop)), None)
            return None if stop is None else (
                f"in the `else` of the `{word}` at line {line(loop)}, which the `break` at line "
                f"{line(stop)} skips")
        if key(child) not in {key(n) for n in (loop.field("body"), loop.field("left"))
                              if n is not None}:
            return None
        if word == "while":
            cond = loop.field("condition")
            if cond is not None and self.truth(cond, certain) is True:
                return None
            said = f"`while {short(cond, 30)}:`" if cond is not None else "the `while`"
            return f"in the body of {said} at line {line(loop)}, which may run no pass"
        over = loop.field("right")
        said = f"`{short(over, 30)}`" if over is not None else "its iterable"
        return (f"in the body of the `for` at line {line(loop)}, which runs once per item "
                f"of {said}, perhaps never")

    def _operand_arm(self, child: SgNode, expr: SgNode, certain: bool) -> str | None:
        """Why ``child`` of ``a if t else b`` or ``a and/or b`` may not be evaluated: an arm
        or the right operand, unless the test (the left operand) is constant and selects it."""
        if expr.kind() == "conditional_expression":
            parts = named_items(expr.children())
            if len(parts) != 3 or key(child) not in (key(parts[0]), key(parts[2])):
                return None
            taken = key(child) == key(parts[0])
            if self.truth(parts[1], certain) is taken:
                return None
            return (f"in an arm of `{short(expr, 40)}` at line {line(expr)}, taken only "
                    f"when `{short(parts[1], 30)}` is {'true' if taken else 'false'}")
        left, right, op = expr.field("left"), expr.field("right"), expr.field("operator")
        if left is None or right is None or op is None or key(child) != key(right):
            return None
        needs = op.text() == "and"  # the value of the left operand that evaluates the right
        if self.truth(left, certain) is needs:
            return None
        return (f"on the right of `{op.text()}` in `{short(expr, 40)}` at line {line(expr)}, "
                f"evaluated only when `{short(left, 30)}` is {'true' if needs else 'false'}")

    def _if_arm(self, child: SgNode, stmt: SgNode, certain: bool) -> str | None:
        """Why the arm of the if chain ``stmt`` holding ``child`` may be skipped: unless
        every earlier test is constant false and its own (if any) constant true."""
        ck = key(child)
        earlier_false = True
        for clause, test, body in branches(stmt):
            if ck in (key(body), key(clause) if clause is not None else None):
                if earlier_false and (test is None or self.truth(test, certain) is True):
                    return None
                if test is None:
                    return f"in the `else` of the `if` at line {line(stmt)}"
                word = "if" if clause is None else "elif"
                return f"in the body of `{word} {short(test, 40)}:` at line {line(test)}"
            if test is None or self.truth(test, certain) is not False:
                earlier_false = False
        return None  # the test itself: evaluated whenever the statement is


def _try_arm(child: SgNode, parent: SgNode) -> str | None:
    """Why ``child`` of a ``try`` (``parent``: the statement, or its body's block) may be
    skipped: a handler or the ``else`` runs only on one outcome of the body, and a body's
    statement after its first when a handler may catch what an earlier one raises
    (``finally`` always runs)."""
    if parent.kind() == "try_statement":
        if child.kind() in _HANDLERS:
            return f"in an `except` of the `try` at line {line(parent)}"
        if child.kind() == "else_clause":
            return (f"in the `else` of the `try` at line {line(parent)}, which runs only when "
                    "its body raised nothing")
        return None
    stmt = parent.parent()
    if stmt is None:  # pragma: no cover - _arm passes a try body's block
        return None
    body, handlers, _orelse, _fin = _try_parts(stmt)
    if not handlers or body is None or key(body) != key(parent):
        return None
    for earlier in named_items(parent.children()):
        if key(earlier) == key(child):
            return None
        if not _inert(earlier):
            return (f"in the body of the `try` at line {line(stmt)}, after "
                    f"`{short(earlier, 30)}` at line {line(earlier)}, whose exception an "
                    "`except` may catch")
    return None


_INERT_NODES = (ast.Expr, ast.Assign, ast.Pass, ast.Constant, ast.Tuple, ast.List, ast.Set,
                ast.Dict, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.Subscript,
                ast.Slice, ast.Load, ast.Store, ast.operator, ast.unaryop, ast.boolop,
                ast.cmpop, ast.expr_context)
"""The nodes of a statement made of constants only (and plain names it assigns)."""


def _inert(stmt: SgNode) -> bool:
    """``stmt`` certainly completes without raising: made of constants only (``1 / 1``,
    ``[0][0]``, ``_a, _b = 1, 2``, a string), folded without an exception
    (``syntaxtree.constant_statement_completes``). A ``try`` body's statement after it
    runs whenever the body does; after any other (a call, a name read), a handler may
    have caught what it raised."""
    try:
        tree = ast.parse(stmt.text())
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    if len(tree.body) != 1:
        return False
    for node in ast.walk(tree.body[0]):
        if isinstance(node, ast.Name):
            if not isinstance(node.ctx, ast.Store):
                return False
        elif not isinstance(node, _INERT_NODES):
            return False
    return constant_statement_completes(tree.body[0], len(stmt.text()))


def _per_item(child: SgNode, parent: SgNode) -> str | None:
    """Why ``child`` of a comprehension (``parent``: it, or one of its ``for`` clauses) may
    not run: all but the first iterable runs once per item, perhaps never."""
    comp = parent if parent.kind() in _COMPREHENSIONS else parent.parent()
    first = _first_clause(comp) if comp is not None else None
    if comp is not None and first is not None:
        if key(parent) == key(comp) and key(child) == key(first):
            return None  # judged one level down: only its iterable is evaluated in place
        over = first.field("right")
        if key(parent) == key(first) and over is not None and key(child) == key(over):
            return None
    shown = comp if comp is not None else parent
    return f"in `{short(shown, 40)}` at line {line(shown)}, run once per item, perhaps never"
