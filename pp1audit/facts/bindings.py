"""Final bindings: which statements of a body may bind a name, which of them is in force
after the body ran or at a given place, and what a dotted ``in:`` name resolves to.

Separate because it is the reading of names in order within one body, built on dead
code alone (a binding that cannot run binds nothing); writes from outside a body and
class-creation hooks are judged elsewhere, on top of it."""

from __future__ import annotations

import ast
from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from pp1audit.facts.reachability import Reachability
from pp1audit.facts.shapes import _COMPREHENSIONS, _SCOPE_KINDS
from pp1audit.nodespans import end_of, start_of
from pp1audit.syntaxtree import (
    Key,
    assigned,
    bound_names,
    key,
    line,
    named_items,
    short,
    within,
)

if TYPE_CHECKING:  # pragma: no cover
    from ast_grep_py import SgNode


_COMPOUND = ("if_statement", "elif_clause", "else_clause", "try_statement", "except_clause",
             "except_group_clause", "finally_clause", "with_statement", "for_statement",
             "while_statement", "block", "match_statement", "case_clause")
"""Statements whose blocks run in place (their bodies belong to the enclosing scope)."""


class _ForceTable:
    """The bindings of one name in one body, in source order, and when each stops being in
    force, for ``Facts.final`` and ``Facts.in_force``.

    ``kills[i]``: the end of the first binding that certainly overrides ``bindings[i]`` (a
    later one, not one that only may happen, in a block holding it), None when none does;
    ``certain``: (binding, its block) of each binding that is not one that only may happen.
    A binding is in force at a place when it ended before the place and its overrider did
    not, so the answer depends only on how many bindings ended before the place: each
    count's answer is kept, and found from the last one by a sweep when places are asked
    in source order (as a class body's calls are), so that thousands of ``H = H()`` cost
    each call the bindings it sees, not all those before it."""

    def __init__(self, bindings: list[SgNode], kills: list[int | None],
                 certain: list[tuple[SgNode, SgNode]]) -> None:
        self.bindings = bindings
        self.kills = kills
        self.certain = certain
        self._starts = [start_of(b) for b in bindings]
        self._order = sorted(range(len(bindings)), key=lambda i: end_of(bindings[i]))
        self._ends = [end_of(bindings[i]) for i in self._order]
        self._by_kill = sorted((end, i) for i, end in enumerate(kills) if end is not None)
        self._added = 0  # bindings swept in, by end
        self._killed = 0  # entries of _by_kill swept out
        self._alive: dict[int, None] = {}
        self._answers: dict[int, list[SgNode]] = {}

    def before(self, place: int) -> list[SgNode]:
        """The bindings in force at ``place`` (a source index), in source order."""
        count = bisect_right(self._ends, place)
        hit = self._answers.get(count)
        if hit is None:
            if count < self._added:  # asked out of order: sweep again from the start
                self._added, self._killed, self._alive = 0, 0, {}
            while self._added < count:
                self._alive[self._order[self._added]] = None
                self._added += 1
            limit = self._ends[count - 1] if count else -1
            while self._killed < len(self._by_kill) and self._by_kill[self._killed][0] <= limit:
                self._alive.pop(self._by_kill[self._killed][1], None)
                self._killed += 1
            hit = self._answers[count] = [self.bindings[i] for i in sorted(self._alive)]
        return hit

    def starting(self, low: int, high: int) -> list[SgNode]:
        """The bindings that start in ``[low, high)``."""
        return self.bindings[bisect_left(self._starts, low):bisect_left(self._starts, high)]


class Bindings(Reachability):
    """The bindings of a name in a body and which is in force (``Facts``' part for names)."""

    def __init__(self, root: SgNode, source: str) -> None:
        super().__init__(root, source)
        self._final: dict[tuple[Key, str], dict[Key, SgNode]] = {}
        self._tables: dict[tuple[Key, str], _ForceTable] = {}
        self._stars: tuple[list[SgNode], list[int], list[int]] | None = None
        self._binding_lists: dict[tuple[Key, str], list[SgNode]] = {}
        self._binding_index: dict[Key, dict[str, list[SgNode]]] = {}
        self._maybe: set[tuple[Key, str]] = set()

    def final(self, scope: SgNode, name: str) -> dict[Key, SgNode]:
        """Statements of ``scope``'s body that may be the binding of ``name`` in force after
        the body ran: every live binding not followed, later in a block that holds it, by
        another binding (which then always runs after it). Bindings in different arms of
        a branch are all kept: which one is in force is decided at run time. Of the star
        imports that may be, the first and the last stand for all (``_stand_ins``)."""
        k = (key(scope), name)
        hit = self._final.get(k)
        if hit is None:
            table = self._force_table(scope, name)
            found = [s for s, end in zip(table.bindings, table.kills, strict=True) if end is None]
            found += self._stand_ins(scope, table, None)
            hit = self._final[k] = {key(s): s for s in sorted(
                found, key=start_of)}
        return hit

    def _force_table(self, scope: SgNode, name: str) -> _ForceTable:
        """``_ForceTable`` of ``name`` in ``scope`` (memoised): each binding's overriding end
        found in one backward pass, so that a body of thousands of bindings that only may
        happen (``case`` captures, ``except … as``), none of which hides another, costs
        each of them its depth, not the number of bindings after it."""
        k = (key(scope), name)
        table = self._tables.get(k)
        if table is None:
            found = self._bindings(scope, name)
            kills: list[int | None] = [None] * len(found)
            nearest: dict[Key, int] = {}  # a block → end of its next certain binding
            stop = key(scope)
            certain: list[tuple[SgNode, SgNode]] = []
            for i in range(len(found) - 1, -1, -1):
                stmt = found[i]
                ends = []
                for anc in stmt.ancestors():
                    if (end := nearest.get(key(anc))) is not None:
                        ends.append(end)
                    if key(anc) == stop:
                        break
                kills[i] = min(ends, default=None)
                parent = stmt.parent()
                if parent is not None and not self.may_only(stmt, name):
                    nearest[key(parent)] = end_of(stmt)
                    certain.append((stmt, parent))
            table = self._tables[k] = _ForceTable(found, kills, certain[::-1])
        return table

    def _stand_ins(self, scope: SgNode, table: _ForceTable, place: int | None) -> list[SgNode]:
        """The first and the last star import of ``scope`` that may be the binding of the
        name of ``table`` in force at ``place`` (None: after the body ran): one that ended
        before it and that no certain binding of the name ended before it hides (it follows
        the star import in a block that holds it).

        Each star import may bind any name, and which of them last did is not known: two
        stand for all, so that a module of thousands of them costs each name it is asked
        about its own bindings, not the star imports (what follows either is the same)."""
        stars, starts, ends = self._star_index(scope)
        if not stars:
            return []
        count = len(stars) if place is None else bisect_right(ends, place)
        hidden: list[tuple[int, int]] = []
        for stmt, parent in table.certain:
            if place is None or end_of(stmt) <= place:
                hidden.append((bisect_left(starts, start_of(parent)),
                               bisect_left(starts, start_of(stmt))))
        return [stars[i] for i in _uncovered(hidden, count)]

    def _star_index(self, scope: SgNode) -> tuple[list[SgNode], list[int], list[int]]:
        """The star imports of ``scope`` that may run, their starts and their ends (Python
        allows them at module level only; one never holds another, so both are in order)."""
        if scope.kind() != "module":
            return [], [], []
        if self._stars is None:
            stars = self._bindings(scope, _ANY_NAME)
            self._stars = (stars, [start_of(s) for s in stars],
                           [end_of(s) for s in stars])
        return self._stars

    def _bindings(self, scope: SgNode, name: str) -> list[SgNode]:
        """Every statement of ``scope``'s body that may run and binds ``name`` itself, in order
        (``_ANY_NAME``: the star imports, which may bind any name: ``_stand_ins``)."""
        k = (key(scope), name)
        hit = self._binding_lists.get(k)
        if hit is None:
            found = self._binders_of(scope).get(name, [])
            hit = self._binding_lists[k] = [s for s in found
                                            if self.dead(s, certain=True) is None]
        return hit

    def _binders_of(self, scope: SgNode) -> dict[str, list[SgNode]]:
        """Every name ``scope``'s body binds → the statements binding it, in order (memoised
        per scope: one walk of the body answers every name; a file that asks about thousands
        of names, ``setattr(A1, n1, v)``, ``setattr(A2, n2, v)``…, would otherwise walk it
        once per name).

        Besides what each statement binds itself (``_bound_by``), a statement binds what
        the expressions it evaluates bind (``_inner_binders``: ``(x := v)``, in a test too),
        and may bind a ``case`` capture of its ``match`` or an ``except … as`` name of its
        ``try``; ``from m import *`` may bind any name (``_ANY_NAME``). A binding that only
        may happen never hides an earlier one (``_maybe``, ``_force_table``)."""
        k = key(scope)
        index = self._binding_index.get(k)
        if index is None:
            index = self._binding_index[k] = {}
            body = scope if scope.kind() == "module" else scope.field("body")
            statements = list(self._statements(body)) if body is not None else []
            inner = self._inner_binders(body, statements) if body is not None else {}
            for stmt in statements:
                own = self._bound_by(stmt)
                extra = inner.get(key(stmt), {})
                if stmt.kind() == "import_from_statement" and \
                        stmt.find(kind="wildcard_import") is not None:
                    extra = {**extra, _ANY_NAME: False}
                for name in dict.fromkeys([*own, *extra]):
                    index.setdefault(name, []).append(stmt)
                    if name not in own and not extra[name]:
                        self._maybe.add((key(stmt), name))
        return index

    def _inner_binders(self, body: SgNode,
                       statements: list[SgNode]) -> dict[Key, dict[str, bool]]:
        """Names bound inside the expressions and clauses of the body's statements → whether
        the statement certainly binds them when it runs: ``(x := v)`` does (in a test, a
        default value or a decorator too, all evaluated where the statement is; not in a
        lambda or a nested body), unless it may not be evaluated (``_surely_evaluated``);
        a ``case`` capture (``case x:``, ``case [x]``,
        ``case {"k": x}``, ``case C(a=x)``, ``as x``, ``*x``, ``**x``) binds only when its
        case is the one that matches, and ``except … as x`` only when its handler runs
        (and deletes it after): they may."""
        own = {key(s) for s in statements}
        out: dict[Key, dict[str, bool]] = {}
        for node in body.find_all(_INNER_BINDING):
            stmt = _statement_of(node, own)
            if stmt is None:
                continue
            names = out.setdefault(key(stmt), {})
            if node.kind() == "named_expression":
                target = node.field("name")
                if target is not None:
                    names[target.text()] = names.get(target.text(), False) or \
                        _surely_evaluated(node, stmt)
            elif node.kind() == "case_clause":
                for name in _captures(node):
                    names.setdefault(name, False)
            else:
                for target in node.find_all(kind="as_pattern_target"):
                    for ident in target.find_all(kind="identifier"):
                        names.setdefault(ident.text(), False)
        return out

    def in_force(self, scope: SgNode, name: str, at: SgNode) -> list[SgNode]:
        """Statements of ``scope``'s body that may be the binding of ``name`` in force when
        ``at`` (a node in that body) runs: those before it not overridden by a later one
        before it (of the star imports, the first and the last: ``_stand_ins``), and any
        after it in a loop that also holds ``at`` (a later pass sees them). Empty: nothing
        in the body binds it before ``at``."""
        table = self._force_table(scope, name)
        start = start_of(at)
        found = [*table.before(start), *self._stand_ins(scope, table, start)]
        loops = [a for a in at.ancestors() if a.kind() in ("for_statement", "while_statement")
                 and within(a, scope)]
        stars, starts, _ends = self._star_index(scope)
        for loop in loops:
            end = end_of(loop)
            later = stars[bisect_left(starts, start):bisect_left(starts, end)]
            found += [s for s in [*table.starting(start, end), *later] if within(s, loop)]
        return list({key(s): s for s in found}.values())

    @staticmethod
    def _statements(body: SgNode) -> Iterator[SgNode]:
        """Statements of a body, through compound statements, not into nested scopes."""
        stack = list(reversed(named_items(body.children())))
        while stack:
            stmt = stack.pop()
            kind = stmt.kind()
            if kind.endswith(("statement", "definition")):
                yield stmt
            if kind in _COMPOUND:
                stack.extend(reversed(named_items(stmt.children())))

    @staticmethod
    def _bound_by(stmt: SgNode) -> list[str]:
        """The names one statement of a body binds itself (a compound statement's inner
        statements are statements of the body in their own right: ``_statements``)."""
        kind = stmt.kind()
        if kind in ("function_definition", "class_definition", "decorated_definition"):
            return bound_names(stmt)
        if kind in _COMPOUND and kind not in ("for_statement", "with_statement"):
            return []  # its statements are looked at one by one
        if kind in ("for_statement", "with_statement"):
            clauses = [c for c in stmt.children() if c.kind() == "with_clause"]
            forms = [stmt] if stmt.kind() == "for_statement" else [
                p for c in clauses for p in c.find_all(kind="as_pattern")]
            return [t.text() for node in forms for _, t, _ in assigned(node)
                    if t.kind() == "identifier"]
        return bound_names(stmt)

    def may_only(self, stmt: SgNode, name: str) -> bool:
        """``stmt`` (a binding ``final`` or ``in_force`` gave) only may bind ``name``: a
        ``case`` capture, an ``except … as`` name, a star import (``_binders_of``)."""
        return (key(stmt), name) in self._maybe or (key(stmt), _ANY_NAME) in self._maybe

    def scope_chain(self, scope: str) -> tuple[list[list[SgNode]], str | None]:
        """The definitions of each part of a dotted name after its module ran, outermost
        first, or why there is none: each part is the last binding of the name in the
        body above it; when branches leave several (``if …: def f … else: def f …``)
        all are kept. Decorators and replacements of the enclosing classes matter as
        much as the target's."""
        current = [self.root]
        chain: list[list[SgNode]] = []
        parts = scope.split(".")
        for i, part in enumerate(parts):
            where = ".".join(parts[:i]) or "the module"
            found: list[SgNode] = []
            for node in current:
                for stmt in self.final(node, part).values():
                    definition = stmt.field("definition") if stmt.kind() == "decorated_definition" \
                        else stmt
                    if definition is None or definition.kind() not in (
                            "function_definition", "class_definition"):
                        return [], (f"'{part}' in {where} is last bound at line {line(stmt)} by "
                                    f"`{short(stmt, 50)}`, not by a class or function definition")
                    found.append(definition)
            if not found:
                return [], f"no class or function '{part}' in {where}"
            chain.append(found)
            current = found
        return chain, None


def _uncovered(spans: list[tuple[int, int]], count: int) -> list[int]:
    """The first and the last of ``0 … count-1`` that no span ``[low, high)`` covers (one
    when they are the same, none when all are covered)."""
    first, last = 0, count - 1
    for low, high in sorted(spans):
        if low > first:
            break
        first = max(first, high)
    for low, high in sorted(spans, key=lambda span: -span[1]):
        if high <= last:
            break
        last = min(last, low - 1)
    if first > last:
        return []
    return [first] if first == last else [first, last]


_ANY_NAME = "*"
"""The key under which ``Facts._binders_of`` lists statements that may bind any name."""
_INNER_BINDING: Any = {"rule": {"any": [{"kind": k} for k in (
    "named_expression", "case_clause", "except_clause")]}}
"""Nodes inside a statement that bind names in its scope (``Facts._inner_binders``)."""


def _statement_of(node: SgNode, own: set[Key]) -> SgNode | None:
    """The statement among ``own`` (a body's statements) that evaluates ``node``, or None when
    ``node`` is in a nested body (a function's, a class's or a lambda's) and binds there. A
    lambda's default values are evaluated where the lambda is written, like a ``def``'s:
    ``lambda a=(x := v): a`` binds ``x`` in the enclosing body."""
    child = node
    for anc in node.ancestors():
        if anc.kind() in _SCOPE_KINDS and (body := anc.field("body")) is not None and \
                key(body) == key(child):
            return None
        if key(anc) in own:
            return anc
        child = anc
    return None


def _surely_evaluated(node: SgNode, stmt: SgNode) -> bool:
    """Running ``stmt`` certainly evaluates ``node``: it is not behind a short circuit (the
    right of ``and`` / ``or``, an arm of ``a if t else b``), in a comprehension (which may
    run zero times), a ``case`` guard, an ``elif`` test or an ``assert`` (``python -O``
    strips it)."""
    child = node
    for anc in node.ancestors():
        if key(anc) == key(stmt):
            return anc.kind() != "assert_statement"
        kind = anc.kind()
        if kind in (*_COMPREHENSIONS, "case_clause", "elif_clause"):
            return False
        if kind == "boolean_operator" and (right := anc.field("right")) is not None and \
                key(right) == key(child):
            return False
        if kind == "conditional_expression":
            parts = named_items(anc.children())
            if len(parts) != 3 or key(parts[1]) != key(child):
                return False
        child = anc
    return False


def _captures(case: SgNode) -> list[str]:
    """The names a ``case`` clause's pattern binds (captures, ``as``, ``*rest``, ``**rest``),
    read by the stdlib parser; every name in the pattern if it cannot be read that way."""
    patterns = [c for c in case.children() if c.kind() == "case_pattern"]
    text = ", ".join(" ".join(p.text().split()) for p in patterns)
    try:
        tree = ast.parse(f"match _:\n case {text}:\n  pass\n")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return [i.text() for p in patterns for i in p.find_all(kind="identifier")]
    out: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            out.append(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            out.append(node.rest)
    return out
