"""What one parsed file says beyond its syntax, memoised per node: which scope
owns a node, which code can never run, which binding of a name is in force
after a body ran, which statements lie in exclusive branches, and every match
of a pattern including its other assignment forms.

Separate from ``matcher`` because these facts belong to the file, not to a
rule: ``ParsedFile`` builds one ``Facts`` per file and every invariant on that
file shares its caches. The semantics it implements are set out in the
``matcher`` module docstring."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from pp1audit.patterns import Hit, Pat, assign_parts, at, find, parse_pattern
from pp1audit.syntaxtree import (
    ASSIGNING,
    Key,
    assigned,
    binding_statement,
    bound_names,
    branches,
    constant_truth,
    key,
    line,
    named_items,
    short,
    within,
)

if TYPE_CHECKING:  # pragma: no cover
    from ast_grep_py import SgNode


_SCOPE_KINDS = ("function_definition", "class_definition", "lambda")
"""Nodes whose body is a scope of its own: it runs when called, not in place."""
_TERMINATORS = {"return_statement": "return", "raise_statement": "raise",
                "continue_statement": "continue", "break_statement": "break"}
_COMPOUND = ("if_statement", "elif_clause", "else_clause", "try_statement", "except_clause",
             "except_group_clause", "finally_clause", "with_statement", "for_statement",
             "while_statement", "block", "match_statement", "case_clause")
"""Statements whose blocks run in place (their bodies belong to the enclosing scope)."""


class Facts:
    """What one parsed file says beyond its syntax: scopes, dead code, final bindings.

    Everything is memoised per node: every rule on the file shares the work.
    """

    def __init__(self, root: SgNode) -> None:
        self.root = root
        self._dead: dict[Key, str | None] = {}
        self._ends: dict[Key, bool] = {}
        self._exits: dict[Key, SgNode | None] = {}
        self._search: dict[tuple[object, ...], list[Hit]] = {}
        self._final: dict[tuple[Key, str], dict[Key, SgNode]] = {}

    # scopes

    def owner(self, node: SgNode) -> SgNode | None:
        """The function/lambda/class whose body holds ``node`` (None: module level).

        Decorators, defaults and annotations belong to the enclosing scope: they
        run where the definition is, not when it is called.
        """
        child = node
        for anc in node.ancestors():
            if anc.kind() in _SCOPE_KINDS:
                body = anc.field("body")
                if body is not None and key(body) == key(child):
                    return anc
            child = anc
        return None

    def owned_by(self, node: SgNode, scope: SgNode) -> bool:
        found = self.owner(node)
        return (found is None and scope.kind() == "module") or (
            found is not None and key(found) == key(scope))

    def function_of(self, node: SgNode, scope: SgNode) -> SgNode:
        """The match's own function (or class/lambda) inside ``scope``, else ``scope``."""
        found = self.owner(node)
        return found if found is not None and within(found, scope) else scope

    # dead code

    def dead(self, node: SgNode) -> str | None:
        """Why ``node`` can never run (its block or branch is unreachable), or None."""
        path: list[tuple[SgNode, Key, SgNode]] = []
        n = node
        while True:  # up to the nearest node already judged (or the root)
            k = key(n)
            if k in self._dead:
                verdict = self._dead[k]
                break
            parent = n.parent()
            if parent is None:
                verdict = self._dead[k] = None
                break
            path.append((n, k, parent))
            n = parent
        for child, k, parent in reversed(path):
            if verdict is None:
                verdict = self._edge_dead(child, parent)
            self._dead[k] = verdict
        return verdict

    def _edge_dead(self, child: SgNode, parent: SgNode) -> str | None:
        kind = parent.kind()
        ck = key(child)
        if kind in ("block", "module"):
            stop = self._exit(parent)
            if stop is None or child.range().start.index < stop.range().end.index:
                return None
            what = _TERMINATORS.get(stop.kind())
            return (f"after the `{what}` at line {line(stop)}" if what else
                    f"after line {line(stop)}, whose every branch leaves the block")
        if kind == "if_statement":
            always: str | None = None  # an earlier test that is always true
            for clause, test, body in branches(parent):
                if ck in (key(body), key(clause) if clause is not None else None):
                    if always is not None:
                        return f"after {always}, which is always true"
                    if test is not None and constant_truth(test.text()) is False and ck == key(body):
                        return f"under `if {short(test, 40)}:` at line {line(test)}, never true"
                    return None
                if test is not None and constant_truth(test.text()) is True:
                    word = "if" if clause is None else "elif"
                    always = f"`{word} {short(test, 40)}:` at line {line(test)}"
            return None
        if kind in ("elif_clause", "while_statement"):
            cond = parent.field("condition")
            inner = parent.field("consequence" if kind == "elif_clause" else "body")
            if cond is None:
                return None
            truth = constant_truth(cond.text())
            word = "elif" if kind == "elif_clause" else "while"
            if inner is not None and ck == key(inner) and truth is False:
                return f"under `{word} {short(cond, 40)}:` at line {line(cond)}, never true"
            if kind == "while_statement" and child.kind() == "else_clause" and truth is True:
                return f"in the `else` of `while {short(cond, 40)}:` at line {line(cond)}"
            return None
        if kind == "conditional_expression":
            parts = named_items(parent.children())
            if len(parts) == 3:
                truth = constant_truth(parts[1].text())
                if (ck == key(parts[0]) and truth is False) or (
                        ck == key(parts[2]) and truth is True):
                    return f"a branch of `{short(parent, 40)}` at line {line(parent)} never taken"
            return None
        if kind == "boolean_operator":
            left, right, op = parent.field("left"), parent.field("right"), parent.field("operator")
            if left is not None and right is not None and op is not None and ck == key(right):
                truth = constant_truth(left.text())
                if (op.text() == "and" and truth is False) or (op.text() == "or" and truth is True):
                    return f"never evaluated in `{short(parent, 40)}` at line {line(parent)}"
        return None

    def _exit(self, block: SgNode) -> SgNode | None:
        """The block's first statement that never completes (all after it is dead), if any."""
        k = key(block)
        if k not in self._exits:
            self._exits[k] = next((s for s in named_items(block.children()) if self.ends(s)),
                                  None)
        return self._exits[k]

    def ends(self, stmt: SgNode) -> bool:
        """The statement never completes normally: return/raise/continue/break, or an if
        chain whose every reachable branch (with an ``else`` or a constant-true test) ends."""
        kind = stmt.kind()
        if kind != "if_statement":
            return kind in _TERMINATORS
        k = key(stmt)
        hit = self._ends.get(k)
        if hit is None:
            hit = self._ends[k] = self._if_ends(stmt)
        return hit

    def _if_ends(self, stmt: SgNode) -> bool:
        for _clause, test, body in branches(stmt):
            truth = True if test is None else constant_truth(test.text())
            if truth is False:
                continue
            if not any(self.ends(s) for s in named_items(body.children())):
                return False
            if truth is True:
                return True
        return False

    # final bindings

    def final(self, scope: SgNode, name: str) -> dict[Key, SgNode]:
        """Statements of ``scope``'s body that may be the binding of ``name`` in force after
        the body ran: every live binding not followed, later in a block that holds it, by
        another binding (which then always runs after it). Bindings in different arms of
        a branch are all kept: which one is in force is decided at run time."""
        k = (key(scope), name)
        hit = self._final.get(k)
        if hit is None:
            body = scope if scope.kind() == "module" else scope.field("body")
            found = [s for s in self._statements(body) if self._binds(s, name)
                     and self.dead(s) is None] if body is not None else []
            hit = self._final[k] = {
                key(s): s for i, s in enumerate(found)
                if not any(self._overrides(later, s) for later in found[i + 1:])}
        return hit

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
    def _binds(stmt: SgNode, name: str) -> bool:
        kind = stmt.kind()
        if kind in ("function_definition", "class_definition", "decorated_definition"):
            return name in bound_names(stmt)
        if kind in _COMPOUND and kind not in ("for_statement", "with_statement"):
            return False  # its statements are looked at one by one
        if name not in stmt.text():  # cheap: most statements do not mention it at all
            return False
        if kind in ("for_statement", "with_statement"):
            clauses = [c for c in stmt.children() if c.kind() == "with_clause"]
            forms = [stmt] if stmt.kind() == "for_statement" else [
                p for c in clauses for p in c.find_all(kind="as_pattern")]
            return any(t.kind() == "identifier" and t.text() == name
                       for node in forms for _, t, _ in assigned(node))
        return name in bound_names(stmt)

    @staticmethod
    def _overrides(later: SgNode, earlier: SgNode) -> bool:
        block = later.parent()
        return block is not None and within(earlier, block) and \
            later.range().start.index >= earlier.range().end.index

    def resolve_scope(self, scope: str) -> tuple[list[SgNode], str | None]:
        """The definitions a dotted name denotes after its module ran, or why there is none.

        Each part is the last binding of the name in the body above it; when
        branches leave several (``if …: def f … else: def f …``) all are returned.
        """
        current = [self.root]
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
            current = found
        return current, None

    def rebinding(self, node: SgNode) -> tuple[str | None, list[SgNode]]:
        """For a match that is a class/module-level assignment or definition: why it is not
        the name's final binding (None if it is), and the other bindings that may be final
        instead (branches that cannot be ordered)."""
        stmt = binding_statement(node)
        if stmt is None:
            return None, []
        scope = self.owner(stmt)
        if scope is not None and scope.kind() != "class_definition":
            return None, []  # a function's locals: data flow, not a definition
        scope = scope if scope is not None else self.root
        others: dict[Key, SgNode] = {}
        for name in bound_names(stmt):
            final = self.final(scope, name)
            if not final:
                continue  # not reachable from the body's start (e.g. dead): judged elsewhere
            if key(stmt) not in final:
                last = max(final.values(), key=lambda s: s.range().start.index)
                return (f"`{name}` is bound again at line {line(last)} "
                        f"(`{short(last, 50)}`), which is the binding in force"), []
            others.update({k: s for k, s in final.items() if k != key(stmt)})
        return None, list(others.values())

    # exclusive branches

    def exclusive(self, a: SgNode, b: SgNode) -> SgNode | None:
        """The statement in whose different arms ``a`` and ``b`` lie (if/elif/else, try
        handlers/else, match cases, a conditional expression: never both run in one
        pass), or None."""
        pa = [a, *a.ancestors()]
        index = {key(n): i for i, n in enumerate(pa)}
        pb = [b, *b.ancestors()]
        for j, n in enumerate(pb):
            i = index.get(key(n))
            if i is None:
                continue
            if i == 0 or j == 0:
                return None  # one contains the other
            ca, cb, kind = pa[i - 1], pb[j - 1], n.kind()
            if kind == "if_statement":
                arms = {key(body) for _c, _t, body in branches(n)} | {
                    key(c) for c in n.children() if c.kind() in ("elif_clause", "else_clause")}
                apart = key(ca) in arms and key(cb) in arms
            elif kind == "try_statement":
                handlers = ("except_clause", "except_group_clause", "else_clause")
                apart = ca.kind() in handlers and cb.kind() in handlers
            elif kind == "conditional_expression":
                parts = named_items(n.children())
                apart = len(parts) == 3 and {key(ca), key(cb)} == {key(parts[0]),
                                                                      key(parts[2])}
            else:
                apart = kind == "block" and ca.kind() == cb.kind() == "case_clause"
            return n if apart else None
        return None

    # searching

    def search(self, region: SgNode, text: str, bound: dict[str, SgNode],
               every_form: bool) -> list[Hit]:
        """Matches of a pattern in ``region``, assignment forms included (see the module
        docstring); ``every_form`` adds the forms only ``every``/``not`` must see.

        Memoised: a relation searched once per match of the rule (``every`` × ``not``)
        would otherwise rescan its region for each."""
        pat = parse_pattern(text)
        used = sorted(n for n in pat.single if n in bound)
        memo = (key(region), text, every_form, tuple((n, key(bound[n])) for n in used))
        hit = self._search.get(memo)
        if hit is None:
            hit = self._search[memo] = self._search_all(region, pat, text, bound, every_form)
        return hit

    def _search_all(self, region: SgNode, pat: Pat, text: str, bound: dict[str, SgNode],
                    every_form: bool) -> list[Hit]:
        hits = find(region, pat, bound)
        parts = assign_parts(text)
        if parts is not None:
            target, value = parts
            hits += find(region, parse_pattern(f"{target}: $PP1ANNOTATION = {value}"), bound)
            if every_form:
                hits += self._assignment_forms(region, target, value, bound)
        seen: set[Key] = set()
        out = []
        for h in sorted(hits, key=lambda h: h.node.range().start.index):
            if key(h.node) not in seen:
                seen.add(key(h.node))
                out.append(h)
        return out

    def _assignment_forms(self, region: SgNode, target: str, value: str,
                          bound: dict[str, SgNode]) -> list[Hit]:
        tpat, vpat = parse_pattern(target), parse_pattern(value)
        out: list[Hit] = []
        for node in region.find_all(ASSIGNING):
            for where, tnode, vnode in assigned(node):
                th = at(tnode, tpat, bound)
                if th is None:
                    continue
                vh = at(vnode, vpat, {**bound, **th.caps})
                if vh is not None:
                    out.append(Hit(where, {**th.caps, **vh.caps}, {**th.multi, **vh.multi}))
        obj, dot, attr = target.rpartition(".")
        if dot and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", attr):
            for call in (f'setattr({obj}, "{attr}", {value})',
                         f'object.__setattr__({obj}, "{attr}", {value})'):
                out += find(region, parse_pattern(call), bound)
        return out
