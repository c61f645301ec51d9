"""The names a computed attribute may be: the constants a variable takes in a ``for``
over a display, under a guard ``if name in ALLOWED:``, or in an f-string of such
variables (``setattr(C, f"{attr}_x", v)``).

Separate because it is value tracking of one variable within its function, a job of
its own that the attribute writes consult only when a name is not spelled out."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pp1audit.facts.reachability import Reachability
from pp1audit.facts.shapes import _COMPREHENSIONS, _SCOPE_KINDS, _SPLATS, _builtin
from pp1audit.nodespans import end_of, start_of
from pp1audit.syntaxtree import (
    Key,
    constant_name,
    flatten_targets,
    key,
    named_items,
    unparen,
)

if TYPE_CHECKING:  # pragma: no cover
    from ast_grep_py import SgNode


_PURE_READERS = frozenset({"sorted", "len", "list", "tuple", "set", "frozenset", "str", "repr"})
"""Builtins that only read a container passed to them: a constant set of names given to one
stays that set (``", ".join(sorted(allowed))`` in an error message)."""


class Spelling(Reachability):
    """The names a computed attribute name may be, when the file shows them all."""

    def __init__(self, root: SgNode, source: str) -> None:
        super().__init__(root, source)
        self._displays: dict[tuple[Key, str], SgNode | None] = {}
        self._guard_memo: dict[Key, dict[str, list[tuple[int, SgNode, SgNode]]]] = {}

    def _spelled(self, expr: SgNode, where: SgNode) -> list[str] | None:
        """The names a computed attribute name (``expr``, used at ``where``) may be, when the
        file shows them all, else None: a variable of a ``for`` over constants or one a
        guard restricts (``_variable_values``), or an f-string of such variables
        (``f"{attr}_staged"``)."""
        expr = unparen(expr)
        if expr.kind() == "identifier":
            return self._variable_values(expr.text(), where)
        if expr.kind() == "binary_operator" and (op := expr.field("operator")) is not None \
                and op.text() == "+" and (left := expr.field("left")) is not None and \
                (right := expr.field("right")) is not None:  # "x_" + name
            heads, tails = self._spelled_part(left, where), self._spelled_part(right, where)
            if heads is None or tails is None or len(heads) * len(tails) > 64:
                return None
            return [h + t for h in heads for t in tails]
        parts = expr.children() if expr.kind() == "string" else []
        if not parts or parts[0].kind() != "string_start" or \
                parts[0].text().lower() not in ('f"', "f'"):
            return None
        texts = [""]
        for part in parts[1:]:
            if part.kind() == "string_content" and not named_items(part.children()):
                texts = [t + part.text() for t in texts]
            elif part.kind() == "interpolation":
                inner = named_items(part.children())
                values = self._variable_values(inner[0].text(), where) \
                    if len(inner) == 1 and inner[0].kind() == "identifier" else None
                if values is None or len(texts) * len(values) > 64:
                    return None
                texts = [t + v for t in texts for v in values]
            elif part.kind() != "string_end":
                return None  # an escape, a conversion or a format: not read
        return texts

    def _spelled_part(self, expr: SgNode, where: SgNode) -> list[str] | None:
        """``_spelled`` of a part of a name that may also be a constant (``"x_"``)."""
        constant = constant_name(expr)
        return [constant] if constant is not None else self._spelled(expr, where)

    def _variable_values(self, name: str, where: SgNode) -> list[str] | None:
        """The strings the variable ``name`` may hold at ``where``, when its own function
        shows them all: the nearest enclosing ``for`` (of that function) that binds it runs
        over a display of constants, or a display of tuples whose column it takes
        (``for attr, dtype in [("a", x), ("b", y)]:``), and nothing else in the loop binds
        it (a comprehension's ``for`` clause the same); or a guard restricts it: the write
        under ``if name in ALLOWED:`` (or ``elif``, or a comprehension's ``if``), or after
        ``if name not in ALLOWED:`` whose body certainly leaves (``raise``, ``continue``…),
        with nothing binding it again after the test. ``ALLOWED`` is a display of
        constants or a name bound once to one and otherwise only read
        (``_container_items``); a guard by anything else (``if name in kw:``) restricts
        nothing, and an enclosing loop or guard is looked for. Else None: the name may be
        any."""
        region = next((a for a in where.ancestors() if a.kind() in _SCOPE_KINDS), self.root)
        child = where
        for parent in where.ancestors():
            if key(parent) == key(region):
                break
            kind, body = parent.kind(), parent.field("body")
            inside = body is not None and key(child) == key(body)
            if kind == "for_statement" and inside:
                binds, values = self._loop_values(parent, name, region)
                if binds:
                    return values
            guards: list[tuple[SgNode, SgNode | None]] = []
            if kind in ("if_statement", "elif_clause") and (
                    then := parent.field("consequence")) is not None \
                    and key(child) == key(then) and (cond := parent.field("condition")):
                guards = [(parent, _membership(cond, name, "in"))]
            elif kind == "block":
                guards = [next(((s, c) for end, s, c in self._guards(parent).get(name, [])
                                if end <= start_of(child)), (parent, None))]
            elif kind in _COMPREHENSIONS and inside:
                clauses = [c for c in parent.children() if c.kind() == "if_clause"]
                guards = [(c, _membership(t, name, "in")) for c in clauses
                          if (t := next(iter(named_items(c.children())), None)) is not None]
                for clause in reversed([c for c in parent.children()
                                        if c.kind() == "for_in_clause"]):
                    binds, values = self._loop_values(clause, name, region)
                    if binds and values is not None:
                        return values
            for test, container in guards:
                items = self._container_items(container, region) \
                    if container is not None else None
                if items is None:
                    continue  # not a restriction the file shows: look further out
                if any(start_of(b) > start_of(test)
                       for b in self._binders(region, name)):
                    return None
                values = [v for i in items if (v := constant_name(i)) is not None]
                if len(values) == len(items):
                    return values
            child = parent
        return None

    def _guards(self, block: SgNode) -> dict[str, list[tuple[int, SgNode, SgNode]]]:
        """Each name a ``_refusing`` guard among the block's statements restricts → (end,
        statement, container) of those guards, memoised per block: one pass over the block
        answers every write in it, whatever the number of names they use."""
        k = key(block)
        hit = self._guard_memo.get(k)
        if hit is None:
            hit = self._guard_memo[k] = {}
            for stmt in named_items(block.children()):
                got = self._refusing(stmt)
                if got is not None:
                    hit.setdefault(got[0], []).append((end_of(stmt), stmt, got[1]))
        return hit

    def _refusing(self, stmt: SgNode) -> tuple[str, SgNode] | None:
        """(name, container) of ``if name not in C:`` (no ``elif``/``else``) whose body
        certainly leaves its block, else None."""
        if stmt.kind() != "if_statement" or stmt.field("alternative") is not None:
            return None
        cond, then = stmt.field("condition"), stmt.field("consequence")
        found = _tested(cond, "not in") if cond is not None else None
        if found is None or then is None or self._exit(then, certain=True) is None:
            return None
        return found

    def _loop_values(self, loop: SgNode, name: str,
                     region: SgNode) -> tuple[bool, list[str] | None]:
        """(whether this ``for`` (or a comprehension's ``for`` clause) binds ``name``, the
        constants it takes, or None)."""
        left, right, body = loop.field("left"), loop.field("right"), loop.field("body")
        if left is None or right is None or (body is None and loop.kind() == "for_statement"):
            return False, None
        targets = [unparen(t) for t, _ in flatten_targets(unparen(left))]
        if not any(t.kind() == "identifier" and t.text() == name for t in targets):
            return False, None
        single = unparen(left).kind() == "identifier"
        rows = self._container_items(right, region)
        if rows is None or (body is not None and self._binders(body, name)) or not all(
                t.kind() == "identifier" for t in targets):
            return True, None
        index = [t.text() for t in targets].index(name)
        values: list[str] = []
        for row in rows:
            row = unparen(row)
            cells = [row] if single else named_items(row.children()) if row.kind() in (
                "tuple", "list") else []
            value = constant_name(cells[index]) if len(cells) == len(targets) and not any(
                c.kind() in _SPLATS for c in cells) else None
            if value is None:
                return True, None
            values.append(value)
        return True, values

    def _container_items(self, node: SgNode, region: SgNode) -> list[SgNode] | None:
        """The items of a display without ``*``/``**`` (``("a", "b")``, ``{"a", "b"}``), or of
        the one display a name is bound to, in ``region`` or else in the module, when that
        is its only binding and every other use of it only reads it (``_only_read``)."""
        node = unparen(node)
        if node.kind() in _LITERAL_DISPLAYS:
            items = named_items(node.children())
            return None if any(i.kind() in _SPLATS for i in items) else items
        if node.kind() != "identifier":
            return None
        name = node.text()
        scope = region if self._binders(region, name) else self.root
        memo = (key(scope), name)
        if memo not in self._displays:
            self._displays[memo] = self._bound_display(scope, name)
        value = self._displays[memo]
        return None if value is None else self._container_items(value, region)

    def _bound_display(self, scope: SgNode, name: str) -> SgNode | None:
        """The display the variable ``name`` is bound to by its one binding in ``scope``
        (``allowed = {"a", "b"}``), when every other use of it only reads it, else None."""
        bindings = self._binders(scope, name)
        if len(bindings) != 1:
            return None
        target = bindings[0]
        stmt = target.parent()
        value = stmt.field("right") if stmt is not None and stmt.kind() == "assignment" and (
            left := stmt.field("left")) is not None and key(left) == key(target) else None
        if value is None or unparen(value).kind() not in _LITERAL_DISPLAYS or not all(
                key(i) == key(target) or _only_read(i)
                for i in self._occurrences(name, scope)):
            return None
        return value


_LITERAL_DISPLAYS = ("list", "tuple", "set", "expression_list")
"""Displays whose items are what iterating them gives (not a dict's pairs)."""


def _membership(test: SgNode, name: str, operator: str) -> SgNode | None:
    """The container ``C`` of the test ``name in C`` (or ``name not in C``), else None."""
    found = _tested(test, operator)
    return found[1] if found is not None and found[0] == name else None


def _tested(test: SgNode, operator: str) -> tuple[str, SgNode] | None:
    """(the variable, the container) of the test ``x in C`` (or ``x not in C``), else None."""
    test = unparen(test)
    if test.kind() != "comparison_operator":
        return None
    parts = named_items(test.children())
    ops = [c.text() for c in test.children() if not c.is_named()]
    if len(parts) != 2 or ops != [operator] or unparen(parts[0]).kind() != "identifier":
        return None
    return unparen(parts[0]).text(), parts[1]


def _only_read(ident: SgNode) -> bool:
    """An identifier that is no use of the variable (an attribute's or keyword's name), or a
    use that cannot change what the variable holds: an operand of a comparison, what a
    ``for`` runs over, an argument of a builtin that only reads it (``_PURE_READERS``)."""
    parent = ident.parent()
    if parent is None:
        return False
    kind = parent.kind()
    if kind == "attribute":
        attribute = parent.field("attribute")
        return attribute is not None and key(attribute) == key(ident)
    if kind == "keyword_argument":
        named = parent.field("name")
        return named is not None and key(named) == key(ident)
    if kind == "comparison_operator":
        return True
    if kind in ("for_statement", "for_in_clause"):
        over = parent.field("right")
        return over is not None and key(over) == key(ident)
    if kind == "argument_list":
        call = parent.parent()
        return call is not None and _builtin(call.field("function")) in _PURE_READERS
    return False
