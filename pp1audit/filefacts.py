"""What one parsed file says beyond its syntax, memoised per node: which scope
owns a node, which code may not (or can never) run, which binding of a name is
in force after a body ran (and what replaces it from outside a class body),
what a decorator is, which statements lie in exclusive branches, and every
match of a pattern including its other assignment forms.

Separate from ``matcher`` because these facts belong to the file, not to a
rule: ``ParsedFile`` builds one ``Facts`` per file and every invariant on that
file shares its caches. The semantics it implements are set out in the
``matcher`` module docstring."""

from __future__ import annotations

import ast
import re
import symtable
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from pp1audit.patterns import Hit, Pat, assign_parts, at, find, parse_pattern
from pp1audit.syntaxtree import (
    ASSIGNING,
    Key,
    assigned,
    binding_statement,
    bound_names,
    branches,
    constant_string,
    constant_truth,
    flatten_targets,
    key,
    line,
    literal,
    named_items,
    parse_expression,
    short,
    unparen,
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
_HANDLERS = ("except_clause", "except_group_clause")
_WRITING: Any = {"rule": {"any": [
    *({"kind": k} for k in ("assignment", "augmented_assignment", "for_statement",
                            "for_in_clause", "as_pattern", "delete_statement",
                            "type_alias_statement")),
    {"kind": "call", "regex": "(set|del)attr"}]}}
"""Nodes that may bind or delete an attribute (calls: only those naming setattr/delattr)."""
_CODE_ATTRIBUTES = ("__code__", "__defaults__", "__kwdefaults__")
"""What a function object runs with: writing them changes its behaviour in place."""
_REPLACING = frozenset({
    "typing.overload", "typing_extensions.overload", "contextlib.contextmanager",
    "contextlib.asynccontextmanager", "functools.partial", "functools.partialmethod",
    "functools.cached_property"})
"""Imported decorators known to put something else in place of the function's body
(``overload`` a stub that raises, ``contextmanager`` a factory that does not run it)."""

Write = tuple["SgNode", "SgNode", str, "SgNode | None"]
"""(the binding node, the object whose attribute it binds, the attribute, the value or None)."""


class Facts:
    """What one parsed file says beyond its syntax: scopes, dead code, final bindings.

    Everything is memoised per node: every rule on the file shares the work.
    """

    def __init__(self, root: SgNode, source: str) -> None:
        """``source`` is the text ``root`` was parsed from, not the root node's own text,
        which starts at the first token (leading blank lines dropped): the stdlib tables
        built from it would number lines differently from the tree."""
        self.root = root
        self.source = source
        self._dead: dict[tuple[Key, bool], str | None] = {}
        self._ends: dict[tuple[Key, bool], bool] = {}
        self._exits: dict[tuple[Key, bool], SgNode | None] = {}
        self._writes: list[Write] | None = None
        self._symbols: symtable.SymbolTable | None = None
        self._module: ast.Module | None = None
        self._search: dict[tuple[object, ...], list[Hit]] = {}
        self._final: dict[tuple[Key, str], dict[Key, SgNode]] = {}
        self._binding_lists: dict[tuple[Key, str], list[SgNode]] = {}
        self._truths: dict[Key, bool | None] = {}

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

    def dead(self, node: SgNode, certain: bool = False) -> str | None:
        """Why ``node`` may not run whenever its scope runs (its block or branch is
        unreachable), or None.

        Two readings, because a rule looks in two directions. What a rule *requires*
        must certainly run, so by default code reached only when a context manager
        suppresses an exception (after ``with …: return``) does not count. What a
        rule *forbids* counts as soon as it can run, so with ``certain`` only code
        that can never run is dead (after ``with suppress(E): raise X()`` the code
        runs)."""
        path: list[tuple[SgNode, tuple[Key, bool], SgNode]] = []
        n = node
        while True:  # up to the nearest node already judged (or the root)
            k = (key(n), certain)
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
                verdict = self._edge_dead(child, parent, certain)
            self._dead[k] = verdict
        return verdict

    def _edge_dead(self, child: SgNode, parent: SgNode, certain: bool) -> str | None:
        kind = parent.kind()
        ck = key(child)
        if kind in ("block", "module"):
            stop = self._exit(parent, certain)
            if stop is None or child.range().start.index < stop.range().end.index:
                return None
            return "after " + self._leaves(stop, certain)
        if kind == "try_statement" and child.kind() == "else_clause":
            body = parent.field("body")
            if body is not None and self._exit(body, certain) is not None:
                return (f"in the `else` of the `try` at line {line(parent)}, whose body "
                        "always leaves it")
            return None
        if kind == "if_statement":
            always: str | None = None  # an earlier test that is always true
            for clause, test, body in branches(parent):
                if ck in (key(body), key(clause) if clause is not None else None):
                    if always is not None:
                        return f"after {always}, which is always true"
                    if test is not None and self.truth(test) is False and ck == key(body):
                        return f"under `if {short(test, 40)}:` at line {line(test)}, never true"
                    return None
                if test is not None and self.truth(test) is True:
                    word = "if" if clause is None else "elif"
                    always = f"`{word} {short(test, 40)}:` at line {line(test)}"
            return None
        if kind in ("elif_clause", "while_statement"):
            cond = parent.field("condition")
            inner = parent.field("consequence" if kind == "elif_clause" else "body")
            if cond is None:
                return None
            truth = self.truth(cond)
            word = "elif" if kind == "elif_clause" else "while"
            if inner is not None and ck == key(inner) and truth is False:
                return f"under `{word} {short(cond, 40)}:` at line {line(cond)}, never true"
            if kind == "while_statement" and child.kind() == "else_clause" and truth is True:
                return f"in the `else` of `while {short(cond, 40)}:` at line {line(cond)}"
            return None
        if kind == "conditional_expression":
            parts = named_items(parent.children())
            if len(parts) == 3:
                truth = self.truth(parts[1])
                if (ck == key(parts[0]) and truth is False) or (
                        ck == key(parts[2]) and truth is True):
                    return f"a branch of `{short(parent, 40)}` at line {line(parent)} never taken"
            return None
        if kind == "boolean_operator":
            left, right, op = parent.field("left"), parent.field("right"), parent.field("operator")
            if left is not None and right is not None and op is not None and ck == key(right):
                truth = self.truth(left)
                if (op.text() == "and" and truth is False) or (op.text() == "or" and truth is True):
                    return f"never evaluated in `{short(parent, 40)}` at line {line(parent)}"
        return None

    def _leaves(self, stop: SgNode, certain: bool) -> str:
        """How ``stop`` (a statement that never completes) leaves its block, for messages."""
        what = _TERMINATORS.get(stop.kind())
        if what:
            return f"the `{what}` at line {line(stop)}"
        if stop.kind() == "assert_statement":
            return (f"the `{short(stop, 40)}` at line {line(stop)}, which always raises "
                    "(unless Python runs with -O)")
        if stop.kind() == "with_statement":
            return (f"the `with` at line {line(stop)}, whose body always leaves the block (reached "
                    "only if its context manager suppresses an exception)")
        if stop.kind() in ("for_statement", "while_statement"):
            word = "for" if stop.kind() == "for_statement" else "while"
            alternative = stop.field("alternative")
            orelse = _block_of(alternative) if alternative is not None else None
            if orelse is not None and self._exit(orelse, certain) is not None:
                return f"the `{word}` at line {line(stop)}, whose `else` always leaves the block"
            cond = stop.field("condition") if word == "while" else None
            if cond is not None and self._endless(stop):
                return f"the `while {short(cond, 40)}:` at line {line(stop)}, which never ends"
            over = stop.field("right")
            runs = f" (`{short(over, 30)}` is not empty)" if over is not None else ""
            return (f"the `{word}` at line {line(stop)}, whose every pass leaves the function "
                    f"and which certainly runs{runs}")
        if stop.kind() == "try_statement":
            fin = _try_parts(stop)[3]
            if fin is not None and self._exit(fin, certain) is not None:
                return f"the `try` at line {line(stop)}, whose `finally` always leaves the block"
            if not _try_parts(stop)[1]:
                return f"the `try` at line {line(stop)}, whose body always leaves the block"
            return (f"the `try` at line {line(stop)}, whose body (or `else`) and every `except` "
                    "leave the block")
        return f"line {line(stop)}, whose every branch leaves the block"

    def _exit(self, block: SgNode, certain: bool = False) -> SgNode | None:
        """The block's first statement that never completes (all after it is dead), if any."""
        k = (key(block), certain)
        if k not in self._exits:
            self._exits[k] = next((s for s in named_items(block.children())
                                   if self.ends(s, certain)), None)
        return self._exits[k]

    def ends(self, stmt: SgNode, certain: bool = False) -> bool:
        """The statement never completes normally: return/raise/continue/break; an if
        chain whose every reachable branch (with an ``else`` or a constant-true test)
        ends; a ``try`` or a loop that ends (``_try_ends``, ``_loop_ends``); and, unless
        ``certain``, a ``with`` whose body ends (its context manager could suppress an
        exception) and an ``assert`` of a constant-false test (``python -O`` strips it,
        so what follows may still run: only for what a rule requires is it an exit)."""
        kind = stmt.kind()
        if kind == "assert_statement":
            return not certain and self._failing_assert(stmt)
        if kind not in ("if_statement", "try_statement", "with_statement", "for_statement",
                        "while_statement"):
            return kind in _TERMINATORS
        if kind == "with_statement" and certain:
            return False
        k = (key(stmt), certain)
        hit = self._ends.get(k)
        if hit is None:
            if kind == "if_statement":
                hit = self._if_ends(stmt, certain)
            elif kind == "try_statement":
                hit = self._try_ends(stmt, certain)
            elif kind in ("for_statement", "while_statement"):
                hit = self._loop_ends(stmt, certain)
            else:
                body = stmt.field("body")
                hit = body is not None and self._exit(body, certain) is not None
            self._ends[k] = hit
        return hit

    def _if_ends(self, stmt: SgNode, certain: bool) -> bool:
        for _clause, test, body in branches(stmt):
            truth = True if test is None else self.truth(test)
            if truth is False:
                continue
            if self._exit(body, certain) is None:
                return False
            if truth is True:
                return True
        return False

    def _loop_ends(self, loop: SgNode, certain: bool) -> bool:
        """A loop never completes when nothing ``break``s out of it and it cannot run out
        (a ``while`` with a constant-true test) or its ``else`` never completes; or when it
        certainly runs (``_runs``) and its pass leaves the function (no ``continue``).

        A loop that may run zero times (``while x:``, ``for i in xs:``) completes then,
        exactly like ``if x: return``: what follows it is code, in both directions."""
        body = loop.field("body")
        if body is None or self._jumps(loop, "break_statement", certain):
            return False
        alternative = loop.field("alternative")
        orelse = _block_of(alternative) if alternative is not None else None
        if orelse is not None and self._exit(orelse, certain) is not None:
            return True
        if self._endless(loop):
            return True
        return self._runs(loop) and self._exit(body, certain) is not None and \
            not self._jumps(loop, "continue_statement", certain)

    def truth(self, test: SgNode) -> bool | None:
        """``constant_truth`` of a test node, folded once per file: dead-code questions ask
        about the same test in both directions and from several places (a loop's fate,
        an ``assert``, a branch), and a long test (not in ``constant_truth``'s text cache)
        costs a multiple of its length each time."""
        k = key(test)
        if k not in self._truths:
            self._truths[k] = constant_truth(test.text())
        return self._truths[k]

    def _failing_assert(self, stmt: SgNode) -> bool:
        """``assert False`` / ``assert 0, "…"``: a test that is constant and false."""
        parts = named_items(stmt.children())
        return bool(parts) and self.truth(parts[0]) is False

    def _endless(self, loop: SgNode) -> bool:
        """A ``while`` whose test is constant and true: only a ``break`` (or an exit) ends it."""
        cond = loop.field("condition") if loop.kind() == "while_statement" else None
        return cond is not None and self.truth(cond) is True

    def _runs(self, loop: SgNode) -> bool:
        """The loop's body certainly runs at least once: a ``while`` with a constant-true
        test, or a ``for`` over a non-empty literal (``_non_empty``). A truthy iterable is
        not enough: ``for x in xs or [0]:`` iterates ``xs`` when it is truthy, and an empty
        iterator or generator is truthy."""
        if loop.kind() == "while_statement":
            return self._endless(loop)
        over = loop.field("right")
        return over is not None and _non_empty(over)

    def _jumps(self, loop: SgNode, kind: str, certain: bool) -> bool:
        """Some ``break``/``continue`` of this loop (not of a nested loop or function) may run.

        Reachability is judged inside the loop only (the loop's own fate is what is being
        decided)."""
        body = loop.field("body")
        for jump in body.find_all(kind=kind) if body is not None else []:
            if key(_loop_of(jump) or jump) != key(loop):
                continue
            child, live = jump, True
            for parent in jump.ancestors():
                if key(parent) == key(loop):
                    break
                if self._edge_dead(child, parent, certain) is not None:
                    live = False
                    break
                child = parent
            if live:
                return True
        return False

    def _try_ends(self, stmt: SgNode, certain: bool) -> bool:
        """A ``try`` never completes when its ``finally`` never does, or when neither its
        body-then-``else`` path nor any ``except`` can complete: an exception no handler
        catches leaves it too."""
        body, handlers, orelse, fin = _try_parts(stmt)
        if fin is not None and self._exit(fin, certain) is not None:
            return True
        if body is None or any(h is None for h in handlers):
            return False
        straight = self._exit(body, certain) is not None or (
            orelse is not None and self._exit(orelse, certain) is not None)
        return straight and all(self._exit(h, certain) is not None
                                for h in handlers if h is not None)

    # final bindings

    def final(self, scope: SgNode, name: str) -> dict[Key, SgNode]:
        """Statements of ``scope``'s body that may be the binding of ``name`` in force after
        the body ran: every live binding not followed, later in a block that holds it, by
        another binding (which then always runs after it). Bindings in different arms of
        a branch are all kept: which one is in force is decided at run time."""
        k = (key(scope), name)
        hit = self._final.get(k)
        if hit is None:
            found = self._bindings(scope, name)
            hit = self._final[k] = {
                key(s): s for i, s in enumerate(found)
                if not any(self._overrides(later, s) for later in found[i + 1:])}
        return hit

    def _bindings(self, scope: SgNode, name: str) -> list[SgNode]:
        """Every statement of ``scope``'s body that may run and binds ``name``, in order."""
        k = (key(scope), name)
        hit = self._binding_lists.get(k)
        if hit is None:
            body = scope if scope.kind() == "module" else scope.field("body")
            hit = self._binding_lists[k] = [
                s for s in self._statements(body) if self._binds(s, name)
                and self.dead(s, certain=True) is None] if body is not None else []
        return hit

    def in_force(self, scope: SgNode, name: str, at: SgNode) -> list[SgNode]:
        """Statements of ``scope``'s body that may be the binding of ``name`` in force when
        ``at`` (a node in that body) runs: those before it not overridden by a later one
        before it, and any after it in a loop that also holds ``at`` (a later pass sees
        them). Empty: nothing in the body binds it before ``at``."""
        start = at.range().start.index
        loops = [a for a in at.ancestors() if a.kind() in ("for_statement", "while_statement")
                 and within(a, scope)]
        before = [s for s in self._bindings(scope, name) if s.range().end.index <= start]
        again = [s for s in self._bindings(scope, name) if s.range().start.index >= start
                 and any(within(s, loop) for loop in loops)]
        return [s for i, s in enumerate(before)
                if not any(self._overrides(later, s) for later in before[i + 1:])] + again

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

    # attributes bound from outside a class body

    def class_path(self, cls: SgNode) -> str | None:
        """``Outer.Inner``: how module code names a class; None inside a function."""
        names: list[str] = []
        for node in (cls, *cls.ancestors()):
            if node.kind() in ("function_definition", "lambda"):
                return None
            if node.kind() == "class_definition":
                name = node.field("name")
                if name is None:
                    return None
                names.append(name.text())
        return ".".join(reversed(names))

    def attribute_binding(self, cls: SgNode, name: str, instance: bool) -> SgNode | None:
        """The first code that may run (``dead(certain=True)``: it is forbidden) and binds or
        deletes attribute ``name`` of class ``cls`` outside the class body's own statements.

        Python looks an attribute up when it is used, so ``Cls.name = f``,
        ``setattr(Cls, "name", f)`` or ``del Cls.name`` anywhere in the file (a function
        doing it may be called), and ``cls.name`` / ``type(self).name`` in the class's
        methods, replace the definition in the body. With ``instance`` (a method: an
        instance attribute shadows it) ``self.name = …`` in the class's methods counts too.
        """
        path = self.class_path(cls)
        for where, obj, attr, _value in self.attribute_writes():
            if attr == name and self._names_class(obj, where, cls, path, instance) and \
                    self.dead(where, certain=True) is None:
                return where
        return None

    def code_swap(self, name: str) -> SgNode | None:
        """The first write (that may run) of ``__code__``, ``__defaults__`` or
        ``__kwdefaults__`` on a function called ``name`` (``C.name.__code__ = …``,
        ``self.name.__func__.__code__ = …``): the body searched is no longer what runs."""
        for where, obj, attr, _value in self.attribute_writes():
            if attr not in _CODE_ATTRIBUTES:
                continue
            obj = unparen(obj)
            if obj.kind() == "attribute" and (a := obj.field("attribute")) is not None and \
                    a.text() == "__func__" and (inner := obj.field("object")) is not None:
                obj = unparen(inner)
            named = obj.field("attribute") if obj.kind() == "attribute" else obj
            if named is not None and named.text() == name and \
                    self.dead(where, certain=True) is None:
                return where
        return None

    def attached(self, classes: list[SgNode]) -> list[SgNode]:
        """Code the file attaches to these classes from outside their bodies
        (``Cls.reset = _reset``, ``setattr(Cls, "f", lambda self: …)``): the value, or the
        module-level function definitions the value names. Such code runs as their methods."""
        paths = {p for c in classes if (p := self.class_path(c)) is not None}
        out: list[SgNode] = []
        for where, obj, _attr, value in self.attribute_writes():
            if value is None or "".join(unparen(obj).text().split()) not in paths or \
                    self.dead(where, certain=True) is not None:
                continue
            value = unparen(value)
            if value.kind() == "identifier":
                for stmt in self.final(self.root, value.text()).values():
                    out.append(stmt)
            else:
                out.append(value)
        return out

    def subclasses(self, cls: SgNode) -> list[SgNode]:
        """``cls`` and every class of the file that names it (or one of these) among its bases
        (``base_names``): writes through their ``self`` are writes to instances of ``cls``."""
        family = [cls]
        names = {n.text() for n in [cls.field("name")] if n is not None} | {
            p for p in [self.class_path(cls)] if p is not None}
        seen = {key(cls)}
        classes = list(self.root.find_all(kind="class_definition"))
        grew = True
        while grew:
            grew = False
            for c in classes:
                bases = c.field("superclasses")
                if key(c) in seen or bases is None:
                    continue
                if any(b in names for b in base_names(c)):
                    family.append(c)
                    seen.add(key(c))
                    name, path = c.field("name"), self.class_path(c)
                    names |= {n for n in (name.text() if name else None, path) if n}
                    grew = True
        return family

    def bases(self, cls: SgNode) -> list[SgNode]:
        """The classes of this file ``cls`` derives from, nearest first, transitively: what
        they define runs for ``cls`` too (``__getattribute__``, ``__init_subclass__``).

        A base name is read when the class statement runs, so it is the binding in force
        there (``in_force``): in its enclosing body, else in the module, up to the class
        statement (or, in a function, run later, any binding the module ends with). A name
        last bound by an import (or anything but a class) is another module's: not here."""
        out: list[SgNode] = []
        seen = {key(cls)}
        todo = [cls]
        while todo:
            current = todo.pop(0)
            for name in base_names(current):
                for base in self._base_classes(current, name):
                    if key(base) not in seen:
                        seen.add(key(base))
                        out.append(base)
                        todo.append(base)
        return out

    def _base_classes(self, cls: SgNode, dotted: str) -> list[SgNode]:
        """The class definitions of this file the base ``dotted`` (``Base``, ``Outer.Base``)
        of the class statement ``cls`` may denote when that statement runs."""
        first, _, rest = dotted.partition(".")
        owner = self.owner(cls)
        called = any(a.kind() in ("function_definition", "lambda") for a in cls.ancestors())
        bound: list[SgNode] = []
        if owner is not None:
            bound = self.in_force(owner, first, cls)
        if not bound:
            bound = list(self.final(self.root, first).values()) if called else \
                self.in_force(self.root, first, cls)
        found = _class_definitions(bound)
        for part in rest.split(".") if rest else []:
            found = _class_definitions([stmt for s in found
                                        for stmt in self.final(s, part).values()])
        return found

    def attribute_writes(self) -> list[Write]:
        """Every place the file binds or deletes an attribute by name (memoised)."""
        if self._writes is None:
            self._writes = [w for node in self.root.find_all(_WRITING) for w in _writes_of(node)]
        return self._writes

    def _names_class(self, obj: SgNode, where: SgNode, cls: SgNode, path: str | None,
                     instance: bool) -> bool:
        """``obj`` (the object of an attribute write at ``where``) is the class ``cls``: its
        dotted name, ``locals()`` / ``vars()`` run in its own body (the namespace the class
        is made from), or in its own methods ``cls``, ``type(self)``, ``self.__class__``
        (and with ``instance`` ``self`` or the method's first parameter)."""
        obj = unparen(obj)
        if path is not None and "".join(obj.text().split()) == path:
            return True
        if _namespace_call(obj):
            owner = self.owner(where)
            return owner is not None and key(owner) == key(cls)
        nearest = next((a for a in where.ancestors() if a.kind() == "class_definition"), None)
        if nearest is None or key(nearest) != key(cls):
            return False
        selves = {"self", *self._first_parameters(where, cls)}
        if where.kind() == "type_alias_statement":  # `type(self).name = …` (_misread_type_call)
            return obj.text() in selves | {"cls"}
        if obj.kind() == "identifier":
            return obj.text() == "cls" or (instance and obj.text() in selves)
        if obj.kind() == "attribute":
            inner, attr = obj.field("object"), obj.field("attribute")
            return inner is not None and attr is not None and attr.text() == "__class__" and \
                unparen(inner).text() in selves
        if obj.kind() == "call":
            fn, args = obj.field("function"), obj.field("arguments")
            items = named_items(args.children()) if args is not None else []
            return _builtin(fn) == "type" and len(items) == 1 and \
                items[0].text() in selves | {"cls"}
        return False

    def _first_parameters(self, node: SgNode, cls: SgNode) -> set[str]:
        """The first parameter of the method of ``cls`` that holds ``node`` (how it names
        its instance), if any."""
        for anc in node.ancestors():
            if anc.kind() != "function_definition":
                continue
            owner = self.owner(anc)
            if owner is None or key(owner) != key(cls):
                continue
            params = anc.field("parameters")
            first = named_items(params.children())[:1] if params is not None else []
            if first and first[0].kind() == "identifier":
                return {first[0].text()}
            if first:
                name = first[0].field("name") or next(
                    (c for c in first[0].children() if c.kind() == "identifier"), None)
                return {name.text()} if name is not None else set()
        return set()

    # decorators

    @staticmethod
    def decorators(definition: SgNode) -> list[SgNode]:
        """The ``@…`` lines of a function or class definition, in order."""
        parent = definition.parent()
        if parent is None or parent.kind() != "decorated_definition":
            return []
        return [c for c in parent.children() if c.kind() == "decorator"]

    def foreign_decorator(self, decorator: SgNode) -> str | None:
        """Why a decorator is not plainly imported code (None when it is).

        A decorator can return any function in place of the one written. One the
        module imports (a dotted name, called with constant arguments at most) is
        code in another file, read no more than any function the body calls; one the
        file writes itself (a local name, a lambda, a name the module also assigns,
        a class-body name), a builtin (``staticmethod``, ``property``) or a known
        replacing one (``typing.overload``) is not accepted without ``decorators:``."""
        expr = named_items(decorator.children())
        tree = parse_expression(expr[0].text() if expr else "")
        if tree is None:
            return "not a decorator the matcher can read"
        if isinstance(tree, ast.Call):
            if any(isinstance(a, ast.Starred) for a in tree.args) or \
                    any(k.arg is None for k in tree.keywords):
                return "its arguments are not constants"
            for arg in [*tree.args, *(k.value for k in tree.keywords)]:
                try:
                    ast.literal_eval(arg)
                except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                    return "its arguments are not constants"
            tree = tree.func
        dotted: list[str] = []
        while isinstance(tree, ast.Attribute):
            dotted.insert(0, tree.attr)
            tree = tree.value
        if not isinstance(tree, ast.Name):
            return "it is an expression, not an imported name"
        return self._imported(tree.id, dotted, decorator)

    def _imported(self, name: str, rest: list[str], decorator: SgNode) -> str | None:
        """Why ``name`` (read where ``decorator`` is) is not a module-level import and nothing
        else, or why what it imports is known to replace the function."""
        table = self._table_of(decorator)
        if table is None:
            return "its scope could not be resolved"
        if table.get_type() != "module":
            try:
                local = table.lookup(name)
            except KeyError:
                return "its scope could not be resolved"
            if not local.is_global() or local.is_declared_global():
                return f"`{name}` is bound in the enclosing {table.get_type()}, not imported"
        try:
            sym = self._symtable().lookup(name)
        except KeyError:
            return f"`{name}` is not imported by the module"
        if not sym.is_imported():
            return f"`{name}` is not imported by the module (a builtin or defined in this file)"
        if sym.is_assigned() or sym.is_declared_global():
            return f"`{name}` is imported, but also bound otherwise in this file"
        sources = self._import_sources(name)
        if sources is None:
            return "the module has a `from … import *`, which may rebind it"
        for source in sources:
            full = ".".join([source, *rest])
            if full.split(".")[0] == "builtins":
                return f"`{full}` is a builtin (as `{full.split('.', 1)[-1]}`), not imported code"
            if full in _REPLACING:
                return f"`{full}` replaces the function it decorates"
        return None

    def _symtable(self) -> symtable.SymbolTable:
        if self._symbols is None:
            self._symbols = symtable.symtable(self.source, "<module>", "exec")
        return self._symbols

    def _table_of(self, decorator: SgNode) -> symtable.SymbolTable | None:
        """The symbol table of the scope a decorator is evaluated in (its definition's)."""
        owners: list[SgNode] = []
        node = self.owner(decorator)
        while node is not None:
            owners.insert(0, node)
            node = self.owner(node)
        table = self._symtable()
        for owner in owners:
            name = owner.field("name")
            found = next((t for t in table.get_children() if name is not None
                          and t.get_name() == name.text() and t.get_lineno() == line(owner)),
                         None)
            if found is None:
                return None
            table = found
        return table

    def _import_sources(self, name: str) -> list[str] | None:
        """What the module-level imports binding ``name`` import (``functools.partial``),
        or None when a star import could bind it too."""
        if self._module is None:
            self._module = ast.parse(self.source)
        out: list[str] = []
        stack: list[ast.stmt] = list(self._module.body)
        while stack:
            stmt = stack.pop()
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            if isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    if alias.asname == name:
                        out.append(alias.name)
                    elif alias.asname is None and alias.name.split(".")[0] == name:
                        out.append(name)
            elif isinstance(stmt, ast.ImportFrom):
                module = "." * stmt.level + (stmt.module or "")
                for alias in stmt.names:
                    if alias.name == "*":
                        return None
                    if (alias.asname or alias.name) == name:
                        out.append(f"{module}.{alias.name}")
            for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                for child in getattr(stmt, field, ()):
                    stack.extend(getattr(child, "body", []) if isinstance(
                        child, (ast.ExceptHandler, ast.match_case)) else [child])
        return out

    def rebinding(self, node: SgNode) -> tuple[str | None, list[SgNode]]:
        """For a match that is a class/module-level assignment or definition: why it is not
        the name's final binding (None if it is), and the other bindings that may be final
        instead (branches that cannot be ordered). A class member is also replaced by an
        attribute bound on its class from outside the body (``attribute_binding``; for a
        method, an instance attribute shadows it too)."""
        stmt = binding_statement(node)
        if stmt is None:
            return None, []
        scope = self.owner(stmt)
        if scope is not None and scope.kind() != "class_definition":
            return None, []  # a function's locals: data flow, not a definition
        scope = scope if scope is not None else self.root
        if scope.kind() == "class_definition":
            method = stmt.kind() in ("function_definition", "class_definition",
                                     "decorated_definition")
            for name in bound_names(stmt):
                outside = self.attribute_binding(scope, name, instance=method)
                if outside is not None:
                    return (f"`{name}` is bound again on its class at line {line(outside)} "
                            f"(`{short(outside, 50)}`), which replaces it"), []
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
                         f'object.__setattr__({obj}, "{attr}", {value})',
                         f'builtins.setattr({obj}, "{attr}", {value})',
                         f'__builtins__.setattr({obj}, "{attr}", {value})'):
                out += find(region, parse_pattern(call), bound)
        return out


def _block_of(clause: SgNode) -> SgNode | None:
    """The block of an except/else/finally clause (tree-sitter names only some of them)."""
    body = clause.field("body")
    return body if body is not None else next(
        (c for c in clause.children() if c.kind() == "block"), None)


def _try_parts(stmt: SgNode) -> tuple[SgNode | None, list[SgNode | None], SgNode | None,
                                      SgNode | None]:
    """(body, the block of each ``except``, the ``else`` block, the ``finally`` block)."""
    handlers: list[SgNode | None] = []
    orelse = fin = None
    for clause in stmt.children():
        kind = clause.kind()
        if kind in _HANDLERS:
            handlers.append(_block_of(clause))
        elif kind == "else_clause":
            orelse = _block_of(clause)
        elif kind == "finally_clause":
            fin = _block_of(clause)
    return stmt.field("body"), handlers, orelse, fin


def _writes_of(node: SgNode) -> Iterator[Write]:
    """The attribute writes one node makes: assignment targets of every form, ``del``,
    ``setattr``/``delattr`` (also ``object.__setattr__``), ``x.__dict__["a"]`` and
    ``vars(x)["a"]``."""
    kind = node.kind()
    if kind == "call":
        yield from _setattr_call(node)
        return
    if kind == "type_alias_statement":
        yield from _misread_type_call(node)
        return
    if kind == "delete_statement":
        items = [i for n in named_items(node.children()) for i in (
            named_items(n.children()) if n.kind() == "expression_list" else [n])]
        targets = [t for item in items for t, _ in flatten_targets(item)]
        value = None
    elif kind in ("assignment", "augmented_assignment"):
        left, right = node.field("left"), node.field("right")
        if left is None:
            return
        targets = [t for t, _ in flatten_targets(left)]
        while right is not None and right.kind() == "assignment":
            right = right.field("right")
        value = right
    else:  # for / comprehension / with … as targets
        targets = [t for _, t, _ in assigned(node)]
        value = None
    for target in targets:
        got = _attribute_of(target)
        if got is not None:
            yield node, got[0], got[1], value


def _misread_type_call(node: SgNode) -> Iterator[Write]:
    """``type(self).name = v``, which tree-sitter reads as a ``type`` alias statement
    (``type (self).name = v``): the object written is the class of ``(self)``."""
    parts = [c for c in node.children() if c.kind() == "type" and c.is_named()]
    target = named_items(parts[0].children()) if parts else []
    value = named_items(parts[1].children()) if len(parts) > 1 else []
    if len(target) == 1 and target[0].kind() == "attribute":
        obj, attr = target[0].field("object"), target[0].field("attribute")
        if obj is not None and attr is not None and obj.kind() == "parenthesized_expression":
            yield node, obj, attr.text(), value[0] if value else None


def _attribute_of(target: SgNode) -> tuple[SgNode, str] | None:
    """(object, attribute name) a target assigns: ``o.a``, ``o.__dict__["a"]``,
    ``vars(o)["a"]``; ``locals()["a"]`` / ``vars()["a"]`` with the call as the object (in a
    class body it is the class's namespace)."""
    target = unparen(target)
    if target.kind() == "attribute":
        obj, attr = target.field("object"), target.field("attribute")
        return (obj, attr.text()) if obj is not None and attr is not None else None
    if target.kind() != "subscript":
        return None
    holder, index = target.field("value"), target.field("subscript")
    name = constant_name(index) if index is not None else None
    if holder is None or name is None:
        return None
    if holder.kind() == "attribute":
        obj, attr = holder.field("object"), holder.field("attribute")
        if obj is not None and attr is not None and attr.text() == "__dict__":
            return obj, name
    if holder.kind() == "call":
        fn, args = holder.field("function"), holder.field("arguments")
        items = named_items(args.children()) if args is not None else []
        if _builtin(fn) == "vars" and len(items) == 1:
            return items[0], name
        if _builtin(fn) in ("vars", "locals") and not items:
            return holder, name  # the namespace being run: a class body's (_names_class)
    return None


def _setattr_call(call: SgNode) -> Iterator[Write]:
    """``setattr(o, "a", v)``, ``delattr(o, "a")``, ``object.__setattr__(o, "a", v)`` and
    ``o.__setattr__("a", v)`` as writes of ``o.a`` (also ``builtins.setattr``, and a name
    spelled as a constant expression, ``"sam" + "ple"``)."""
    fn, args = call.field("function"), call.field("arguments")
    if fn is None or args is None:
        return
    items = named_items(args.children())
    if _builtin(fn) in ("setattr", "delattr"):
        obj_items = items
    elif fn.kind() == "attribute" and (attr := fn.field("attribute")) is not None and \
            attr.text() in ("__setattr__", "__delattr__"):
        holder = fn.field("object")
        if holder is None:
            return
        obj_items = items if _builtin(holder) in ("object", "type") else [holder, *items]
    else:
        return
    if len(obj_items) < 2:
        return
    name = constant_name(obj_items[1])
    if name is not None:
        yield call, obj_items[0], name, obj_items[2] if len(obj_items) > 2 else None


_NAME_ATTRIBUTES = frozenset({"__name__", "__qualname__", "__module__"})
"""Attributes of a class that are only its names: reading them changes nothing."""


def class_hook_use(hook: SgNode) -> SgNode | None:
    """Where an ``__init_subclass__`` binding (``hook``: the statement ``Facts.final``
    gives) may replace attributes of the class it is called for, or None when it cannot.

    The hook gets the new class as its first parameter; it can only change that class's
    methods through it (a write naming the class itself is found by
    ``Facts.attribute_binding``). So the hook is harmless when every use of that
    parameter is one of: a read of a name attribute (``cls.__name__``, ``__qualname__``,
    ``__module__``), the whole value stored into a subscript (the registry idiom
    ``registry[cls.__name__] = cls``), or an argument of ``super().__init_subclass__(…)``
    (a same-file base's hook is read on its own). Any other use (``cls.x = …``,
    ``setattr(cls, …)``, ``vars(cls)``, ``cls.__dict__``, passing it to any other call,
    ``registry.append(cls)`` included, an alias ``c = cls``) may replace them: the hook
    itself is returned when it is not a plain ``def`` (``classmethod(lambda c: …)``,
    one bound from outside the body, a decorator other than ``@classmethod``) or has no
    plain first parameter, since what it runs is not read."""
    definition = hook
    if hook.kind() == "decorated_definition":
        definition = hook.field("definition") or hook
        if any("".join(d.text().split()) != "@classmethod"
               for d in hook.children() if d.kind() == "decorator"):
            return hook
    params = definition.field("parameters") if definition.kind() == "function_definition" \
        else None
    first = named_items(params.children())[:1] if params is not None else []
    body = definition.field("body")
    if body is None or not first or first[0].kind() != "identifier":
        return hook
    name = first[0].text()
    return next((n for n in body.find_all(kind="identifier")
                 if n.text() == name and not _harmless_class_use(n)), None)


def _harmless_class_use(node: SgNode) -> bool:
    """An identifier that is no use of the variable (an attribute's or keyword's name), or a
    use ``class_hook_use`` accepts."""
    parent = node.parent()
    if parent is None:
        return False
    kind = parent.kind()
    if kind == "attribute":
        attribute, obj = parent.field("attribute"), parent.field("object")
        if attribute is not None and key(attribute) == key(node):
            return True  # x.cls: an attribute named like it
        above = parent.parent()
        target = above is not None and above.kind() in ("assignment", "augmented_assignment") and (
            (left := above.field("left")) is not None and key(left) == key(parent))
        return obj is not None and key(obj) == key(node) and attribute is not None and \
            attribute.text() in _NAME_ATTRIBUTES and not target
    if kind == "keyword_argument":
        name = parent.field("name")
        if name is not None and key(name) == key(node):
            return True  # f(cls=…): the keyword, not the variable
        parent = parent.parent() or parent
        kind = parent.kind()
    if kind == "assignment":
        left, right = parent.field("left"), parent.field("right")
        return right is not None and key(right) == key(node) and left is not None and \
            unparen(left).kind() == "subscript"
    if kind == "argument_list":
        call = parent.parent()
        function = call.field("function") if call is not None else None
        return function is not None and \
            "".join(function.text().split()) == "super().__init_subclass__"
    return False


def _class_definitions(statements: list[SgNode]) -> list[SgNode]:
    """The class definitions among binding statements (through their decorators)."""
    return [d for stmt in statements
            if (d := stmt.field("definition") if stmt.kind() == "decorated_definition"
                else stmt) is not None and d.kind() == "class_definition"]


_DISPLAYS = ("list", "tuple", "set", "dictionary", "expression_list")
"""Container displays: one with an element that is not unpacked has at least one item."""
_SPLATS = ("list_splat", "dictionary_splat", "parenthesized_list_splat")
"""``*xs`` / ``**d`` in a display: may add nothing."""


def _non_empty(node: SgNode) -> bool:
    """``node`` is a display with an element that is not unpacked (``[0]``, ``(1, 2)``,
    ``{"a": 1}``, ``[*xs, 0]``, ``for _ in 1, 2:``) or a non-empty string/bytes literal:
    iterating it certainly yields something. Anything else (a name, a call, ``xs or [0]``,
    a comprehension, an f-string) may be empty."""
    node = unparen(node)
    if node.kind() in _DISPLAYS:
        return any(n.kind() not in _SPLATS for n in named_items(node.children()))
    got = literal(node)
    return got is not None and got[0] in (str, bytes) and bool(got[1])


def base_names(cls: SgNode) -> list[str]:
    """The bases a class statement names as ``Name``, ``Outer.Name`` or ``Name[...]``
    (a generic alias of that class), without spaces; keyword arguments (``metaclass=``)
    and anything computed are not bases by name."""
    bases = cls.field("superclasses")
    out: list[str] = []
    for item in named_items(bases.children()) if bases is not None else []:
        item = unparen(item)
        if item.kind() == "subscript" and (value := item.field("value")) is not None:
            item = unparen(value)
        if item.kind() in ("identifier", "attribute"):
            text = "".join(item.text().split())
            if all(part.isidentifier() for part in text.split(".")):
                out.append(text)
    return out


def _builtin(node: SgNode | None) -> str | None:
    """The builtin ``X`` a name denotes, spelled ``X``, ``builtins.X`` or
    ``__builtins__.X`` (else None). A local shadowing it is not looked for: a write read
    where there is none errs on the safe side."""
    if node is None:
        return None
    text = "".join(unparen(node).text().split())
    for prefix in ("builtins.", "__builtins__."):
        if text.startswith(prefix):
            text = text[len(prefix):]
            break
    return text if text.isidentifier() else None


def _namespace_call(node: SgNode) -> bool:
    """``locals()`` or ``vars()``: the namespace of the code that runs it."""
    node = unparen(node)
    if node.kind() != "call":
        return False
    args = node.field("arguments")
    return _builtin(node.field("function")) in ("locals", "vars") and \
        not (args is not None and named_items(args.children()))


def constant_name(node: SgNode) -> str | None:
    """The string a constant expression spells (``"a"``, ``"sam" "ple"``, ``"sam" + "ple"``,
    ``f"sample"`` without fields), else None: an attribute named that way is named."""
    got = literal(node)
    if got is not None:
        return str(got[1]) if got[0] is str else None
    return constant_string(node.text())


def _loop_of(jump: SgNode) -> SgNode | None:
    """The loop a ``break``/``continue`` leaves: the nearest whose body (not its ``else``)
    holds it, within the same function."""
    child = jump
    for anc in jump.ancestors():
        if anc.kind() in _SCOPE_KINDS:
            return None
        if anc.kind() in ("for_statement", "while_statement") and child.kind() != "else_clause":
            return anc
        child = anc
    return None
