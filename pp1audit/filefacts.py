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
import builtins
import re
import symtable
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator
from dataclasses import dataclass
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
    short_text,
    statement_raises,
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
    {"kind": "call", "regex": "(set|del)attr|update|setdefault|(set|del)item|pop|clear|ior"}]}}
"""Nodes that may bind or delete an attribute (calls: only those naming setattr/delattr or a
method of a dict that binds or deletes keys, ``_MUTATORS``)."""
_MUTATORS = frozenset({"update", "setdefault", "__setitem__", "__delitem__", "pop", "popitem",
                       "clear", "__ior__"})
"""Dict methods that bind or delete keys: called on a namespace (``locals()``, ``globals()``,
``x.__dict__``, ``vars(x)``) they bind or delete attributes (or module globals)."""
_KEYED = frozenset({"setdefault", "__setitem__", "__delitem__", "pop"})
"""The ``_MUTATORS`` whose first argument is the one key they write."""
_PURE_READERS = frozenset({"sorted", "len", "list", "tuple", "set", "frozenset", "str", "repr"})
"""Builtins that only read a container passed to them: a constant set of names given to one
stays that set (``", ".join(sorted(allowed))`` in an error message)."""
_CODE_ATTRIBUTES = ("__code__", "__defaults__", "__kwdefaults__")
"""What a function object runs with: writing them changes its behaviour in place."""
_REPLACING = frozenset({
    "typing.overload", "typing_extensions.overload", "contextlib.contextmanager",
    "contextlib.asynccontextmanager", "functools.partial", "functools.partialmethod",
    "functools.cached_property"})
"""Imported decorators known to put something else in place of the function's body
(``overload`` a stub that raises, ``contextmanager`` a factory that does not run it)."""

_PLAIN_METACLASSES = frozenset({"abc.ABCMeta", "enum.EnumMeta", "enum.EnumType"})
"""Metaclasses of the standard library that build the class from its body as written."""

Write = tuple["SgNode", "SgNode", "str | None", "SgNode | None"]
"""(the binding node, the object whose attribute it binds, the attribute, the value or None).

The attribute is None when the file does not say which: a name not made of constants
(``setattr(C, name, f)``) whose values are not visible (``Facts._spelled``), or a whole
namespace updated (``locals().update(…)``). Such a write may bind any attribute."""
Alias = tuple[str, "SgNode | None"]
"""A name (dotted, without spaces) that may denote a class or an instance, and the function it
holds in (None: anywhere)."""
RawWrite = tuple["SgNode", "SgNode", "str | SgNode | None", "SgNode | None"]
"""A ``Write`` as one node spells it: the attribute may still be the expression that computes
it (``Facts._resolved`` reads which names it can be)."""
Resolve = Callable[["SgNode", "SgNode"], "list[SgNode]"]
"""The namespaces a name read at a place may hold (``g = globals()`` … ``g[k] = v``): the
objects whose attributes writing through it binds, as ``_namespace_of`` gives them."""


@dataclass(frozen=True, eq=False)
class AliasPair:
    """One binding that may make a name denote what its value denotes (``_class_names``)."""

    where: SgNode
    """The binding node (for a parameter's default, the function's body: where it holds)."""
    target: SgNode
    value: SgNode
    maybe: frozenset[str]
    """Dotted names the value may evaluate to: itself, an arm of ``a if t else b``, an
    operand of ``or`` / ``and``, the value of ``:=`` (what an instance alias follows)."""
    mentions: frozenset[str]
    """Every dotted name the value reads whole (``f(Cls)``, ``[Cls][0]``, ``{"k": Cls}``,
    not ``Cls()`` or ``Cls.x``: ``_mentions``): what a class alias follows."""


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
        self._starts = [b.range().start.index for b in bindings]
        self._order = sorted(range(len(bindings)), key=lambda i: bindings[i].range().end.index)
        self._ends = [bindings[i].range().end.index for i in self._order]
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
        self._raw_writes: list[RawWrite] | None = None
        self._no_namespace: bool | None = None
        self._symbols: symtable.SymbolTable | None = None
        self._module: ast.Module | None = None
        self._search: dict[tuple[object, ...], list[Hit]] = {}
        self._final: dict[tuple[Key, str], dict[Key, SgNode]] = {}
        self._tables: dict[tuple[Key, str], _ForceTable] = {}
        self._stars: tuple[list[SgNode], list[int], list[int]] | None = None
        self._binding_lists: dict[tuple[Key, str], list[SgNode]] = {}
        self._truths: dict[Key, bool | None] = {}
        self._aliases: dict[Key, tuple[list[Alias], list[Alias]]] = {}
        self._pairs: list[AliasPair] | None = None
        self._by_value: dict[tuple[str, bool], tuple[list[int], list[AliasPair]]] | None = None
        self._by_class: dict[Key, list[AliasPair]] | None = None
        self._binder_memo: dict[tuple[Key, str], list[SgNode]] = {}
        self._displays: dict[tuple[Key, str], SgNode | None] = {}
        self._names_index: dict[str, tuple[list[int], list[SgNode]]] | None = None
        self._guard_memo: dict[Key, dict[str, list[tuple[int, SgNode, SgNode]]]] = {}
        self._binding_index: dict[Key, dict[str, list[SgNode]]] = {}
        self._declared: dict[tuple[Key, str], frozenset[str]] = {}
        self._spaces: dict[tuple[str, Key | None], list[SgNode]] | None = None
        self._class_texts: dict[str, bool] = {}
        self._nearest: dict[Key, SgNode | None] = {}
        self._containers: dict[tuple[str, bool], bool] = {}
        self._raising: dict[Key, str | None] = {}
        self._maybe: set[tuple[Key, str]] = set()
        self._runners: tuple[list[int], list[SgNode]] | None = None
        self._builtins: frozenset[str] | None = None
        self._scope_tables: dict[Key, symtable.SymbolTable | None] = {}
        self._write_starts: list[int] | None = None
        self._made: dict[Key, list[tuple[SgNode, SgNode]]] = {}
        self._bindings_made: list[tuple[SgNode, SgNode, SgNode]] = []
        self._by_target: dict[str, list[SgNode]] | None = None
        self._reads: dict[Key, list[tuple[str, bool]]] = {}
        self._hook_names: dict[str, tuple[SgNode | None, SgNode | None]] = {}
        self._set_names: dict[Key, tuple[SgNode, SgNode, SgNode] | None] = {}
        self._call_backs: dict[Key, bool] = {}
        self._classes_by_name: dict[str, list[SgNode]] | None = None
        self._set_name_spelled: bool | None = None
        self._child_tables: dict[Key | None, dict[tuple[str, int], list[symtable.SymbolTable]]] = {}

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
        raised = self.raises(stop)
        if raised is not None:
            return (f"`{short_text(self._header(stop) or '', 40)}` at line {line(stop)}, which "
                    f"always raises {raised}")
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
        """The statement never completes normally: return/raise/continue/break; one that
        certainly raises (a part of it that is certainly evaluated is made of constants and
        raises, ``print(1 / 0)``, ``if 1 / 0:``, ``a, b = 1``: ``raises``); an if
        chain whose every reachable branch (with an ``else`` or a constant-true test)
        ends; a ``try`` or a loop that ends (``_try_ends``, ``_loop_ends``); and, unless
        ``certain``, a ``with`` whose body ends (its context manager could suppress an
        exception) and an ``assert`` of a constant-false test (``python -O`` strips it,
        so what follows may still run: only for what a rule requires is it an exit)."""
        kind = stmt.kind()
        if kind == "assert_statement":
            return not certain and self._failing_assert(stmt)
        if kind in _TERMINATORS:
            return True
        if self.raises(stmt) is not None:
            return True
        if kind not in ("if_statement", "try_statement", "with_statement", "for_statement",
                        "while_statement"):
            return False
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

    def raises(self, stmt: SgNode) -> str | None:
        """The exception a statement certainly raises when it runs, or None: a simple
        statement, or the header of an ``if`` / ``while`` / ``for`` / ``with`` / ``match``,
        certainly evaluates a part made of constants that raises (``statement_raises``:
        ``1 / 0``, ``print([][0])``, ``if None.x:``, ``None()``, ``a, b = 1``,
        ``for _ in 1:``). Such a statement ends its block exactly as ``raise`` does, in
        both directions: it never completes, so what follows it never runs (memoised per
        statement; an ``assert`` is not one: ``python -O`` strips it)."""
        k = key(stmt)
        if k not in self._raising:
            text = self._evaluated_text(stmt)
            self._raising[k] = statement_raises(text) \
                if text is not None and _CONSTANT_TEXT.search(text) else None
        return self._raising[k]

    def _evaluated_text(self, stmt: SgNode) -> str | None:
        """What Python evaluates of ``stmt`` before its body, as a statement the stdlib
        parses: a simple statement, or a compound statement's header with a body of
        ``pass`` (``_header``); else None."""
        header = self._header(stmt)
        if header is None or stmt.kind() not in _HEADED:
            return header
        return header + ("\n case _:\n  pass\n" if stmt.kind() == "match_statement" else
                         "\n pass\n")

    def _header(self, stmt: SgNode) -> str | None:
        """A simple statement's text, or a compound statement's header (``if 1 / 0:``), read
        from the file's text: the header, not the whole body; None for other statements."""
        kind = stmt.kind()
        if kind in ("expression_statement", "delete_statement"):
            return stmt.text()
        body = stmt.field("consequence" if kind == "if_statement" else "body") \
            if kind in _HEADED else None
        if body is None:
            return None
        return self.source[stmt.range().start.index:body.range().start.index].rstrip()

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
        a branch are all kept: which one is in force is decided at run time. Of the star
        imports that may be, the first and the last stand for all (``_stand_ins``)."""
        k = (key(scope), name)
        hit = self._final.get(k)
        if hit is None:
            table = self._force_table(scope, name)
            found = [s for s, end in zip(table.bindings, table.kills, strict=True) if end is None]
            found += self._stand_ins(scope, table, None)
            hit = self._final[k] = {key(s): s for s in sorted(
                found, key=lambda s: s.range().start.index)}
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
                    nearest[key(parent)] = stmt.range().end.index
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
            if place is None or stmt.range().end.index <= place:
                hidden.append((bisect_left(starts, parent.range().start.index),
                               bisect_left(starts, stmt.range().start.index)))
        return [stars[i] for i in _uncovered(hidden, count)]

    def _star_index(self, scope: SgNode) -> tuple[list[SgNode], list[int], list[int]]:
        """The star imports of ``scope`` that may run, their starts and their ends (Python
        allows them at module level only; one never holds another, so both are in order)."""
        if scope.kind() != "module":
            return [], [], []
        if self._stars is None:
            stars = self._bindings(scope, _ANY_NAME)
            self._stars = (stars, [s.range().start.index for s in stars],
                           [s.range().end.index for s in stars])
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
        start = at.range().start.index
        found = [*table.before(start), *self._stand_ins(scope, table, start)]
        loops = [a for a in at.ancestors() if a.kind() in ("for_statement", "while_statement")
                 and within(a, scope)]
        stars, starts, _ends = self._star_index(scope)
        for loop in loops:
            end = loop.range().end.index
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

        The class may be named through an alias (``C = Cls``, ``_class_names``); a write
        whose name the file does not give (``setattr(C, name, f)``, ``locals().update(…)``
        in the body: ``Write``) may bind ``name``; and a write to the module's namespace
        that may rebind the class's own name (``globals()[…] = …``, ``globals().update(…)``:
        ``_module_namespace``) replaces every attribute of it.
        """
        path = self.class_path(cls)
        top = path.split(".")[0] if path is not None else None
        family, table = {key(cls): cls}, self._name_map([cls], instance)
        for where, obj, attr, _value in self.attribute_writes():
            if self._module_namespace(obj, where):
                hit = attr is None or attr == top
            else:
                hit = attr in (None, name) and self._names_class(obj, where, family, table,
                                                                 instance)
            if hit and self.dead(where, certain=True) is None:
                return where
        return None

    def namespace_binding(self, name: str) -> SgNode | None:
        """The first write (that may run) to the module's namespace that may bind or delete the
        global ``name``: ``globals()["name"] = …``, a key not made of constants,
        ``globals().update(…)``, ``del globals()[…]`` (``locals()`` / ``vars()`` at module
        level are the same namespace). Wherever it is, a function doing it may be called
        after the definition ran."""
        for where, obj, attr, _value in self.attribute_writes():
            if attr in (None, name) and self._module_namespace(obj, where) and \
                    self.dead(where, certain=True) is None:
                return where
        return None

    def code_swap(self, name: str) -> SgNode | None:
        """The first write (that may run) of ``__code__``, ``__defaults__`` or
        ``__kwdefaults__`` on a function called ``name`` (``C.name.__code__ = …``,
        ``self.name.__func__.__code__ = …``; ``setattr`` with a name not made of constants
        may be one of them, unless its object is a class of the file, which has no code of
        its own: ``attribute_binding`` judges what it replaces): the body searched is no
        longer what runs. So does a write to the module's namespace that may rebind the
        global ``name`` (``namespace_binding``)."""
        for where, obj, attr, _value in self.attribute_writes():
            if (attr is not None and attr not in _CODE_ATTRIBUTES) or \
                    self._module_namespace(obj, where) or (attr is None and self._a_class(obj)):
                continue
            obj = unparen(obj)
            if obj.kind() == "attribute" and (a := obj.field("attribute")) is not None and \
                    a.text() == "__func__" and (inner := obj.field("object")) is not None:
                obj = unparen(inner)
            named = obj.field("attribute") if obj.kind() == "attribute" else obj
            if named is not None and named.text() == name and \
                    self.dead(where, certain=True) is None:
                return where
        return self.namespace_binding(name)

    def _a_class(self, obj: SgNode) -> bool:
        """``obj`` is a dotted name that denotes only class definitions of the file after its
        module ran (``scope_chain``; memoised per name: every write asks)."""
        text = _dotted(unparen(obj))
        if text is None:
            return False
        hit = self._class_texts.get(text)
        if hit is None:
            chain, why = self.scope_chain(text)
            hit = self._class_texts[text] = why is None and bool(chain) and all(
                d.kind() == "class_definition" for d in chain[-1])
        return hit

    def attached(self, classes: list[SgNode]) -> list[SgNode]:
        """Code the file attaches to these classes from outside their bodies
        (``Cls.reset = _reset``, ``setattr(Cls, "f", lambda self: …)``): the value, or the
        module-level function definitions the value names. Such code runs as their methods.
        The class may be named as ``attribute_binding`` reads it (an alias, ``cls``)."""
        out: list[SgNode] = []
        family, table = {key(c): c for c in classes}, self._name_map(classes, False)
        for where, obj, _attr, value in self.attribute_writes():
            if value is None or self._module_namespace(obj, where) or not self._names_class(
                    obj, where, family, table, False) or \
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
        return self._members(_class_definitions(self._base_bindings(cls, first)), rest)

    def _base_bindings(self, cls: SgNode, first: str) -> list[SgNode]:
        """The statements binding ``first`` that the class statement ``cls`` may read it
        from: its enclosing body's, else the module's (any it ends with, when the class
        statement runs later, in a function)."""
        owner = self.owner(cls)
        called = any(a.kind() in ("function_definition", "lambda") for a in cls.ancestors())
        bound: list[SgNode] = []
        if owner is not None:
            bound = self.in_force(owner, first, cls)
        if not bound:
            bound = list(self.final(self.root, first).values()) if called else \
                self.in_force(self.root, first, cls)
        return bound

    def unread_base(self, cls: SgNode) -> str | None:
        """A base of the class statement ``cls`` whose class is not known here (None when
        every base is known): Python takes the metaclass from the bases (``type(base)``),
        and a base's ``__init_subclass__`` runs too, so a base must be a class statement
        of this file (read on its own: ``bases``), an imported name and nothing else
        (code in another file, as for any call), or an unshadowed builtin (``object``).
        A class made by a call (``M("Base", (), {})``, six's ``with_metaclass(M)``), an
        alias (``B = Base``), a conditional or a subscript of a container is not read."""
        bases = cls.field("superclasses")
        for item in named_items(bases.children()) if bases is not None else []:
            if item.kind() in ("keyword_argument", "list_splat", "dictionary_splat"):
                continue  # ``metaclass`` reads those
            node = unparen(item)
            if node.kind() == "subscript" and (value := node.field("value")) is not None:
                node = unparen(value)  # ``Generic[T]``, ``Base[int]``: that class
            dotted = _dotted(node)
            if dotted is None:
                return f"`{short(item, 40)}`, a base computed by an expression"
            first, _, rest = dotted.partition(".")
            bound = self._base_bindings(cls, first)
            if bound and len(_class_definitions(bound)) == len(bound):
                continue  # a class statement of this file: read through ``bases``
            if bound and all(b.kind() in ("import_statement", "import_from_statement")
                             or self._foreign_alias(b, cls) for b in bound):
                continue  # the import in force when the class statement runs, or its alias
            if self._imported(first, rest.split(".") if rest else [], cls) is None:
                continue
            if not rest and not bound and self._builtin_unbound(first):
                continue
            return f"`{dotted}`, a base that is neither a class statement of this file nor " \
                "an imported name (its class and hooks are not read)"
        return None

    def _foreign_alias(self, stmt: SgNode, cls: SgNode) -> bool:
        """``stmt`` is ``Name = X`` with ``X`` an unshadowed builtin or an imported name
        (``Base = object``): a class not of this file, as if named directly. An alias of a
        class of this file is not (``bases`` does not follow it to read its hooks)."""
        assign = next(iter(named_items(stmt.children())), None) \
            if stmt.kind() == "expression_statement" else None
        if assign is None or assign.kind() != "assignment" or assign.field("type") is not None:
            return False
        left, right = assign.field("left"), assign.field("right")
        if left is None or left.kind() != "identifier" or right is None:
            return False
        dotted = _dotted(unparen(right))
        if dotted is None:
            return False
        first, _, rest = dotted.partition(".")
        if not rest and self._builtin_unbound(first):
            return True
        return self._imported(first, rest.split(".") if rest else [], cls) is None

    def _builtin_unbound(self, name: str) -> bool:
        """``name`` is a builtin the module never binds (``object``, ``Exception``)."""
        if not hasattr(builtins, name):
            return False
        try:
            sym = self._symtable().lookup(name)
        except KeyError:
            return True
        return not (sym.is_assigned() or sym.is_imported() or sym.is_declared_global()
                    or sym.is_namespace())

    def _members(self, found: list[SgNode], rest: str) -> list[SgNode]:
        """The class definitions ``Outer.Inner`` names: ``rest`` (``Inner``, dotted) read in
        the classes ``found`` (``Outer``), each part the binding its body ends with."""
        for part in rest.split(".") if rest else []:
            found = _class_definitions([stmt for s in found
                                        for stmt in self.final(s, part).values()])
        return found

    def instances_made(self, cls: SgNode) -> list[tuple[SgNode, SgNode]]:
        """(code, class) for each place in ``cls``'s own body (what runs as its class statement
        runs, not its methods) that may make or hold an instance of a class of this file
        whose ``__set_name__`` may write the class it is given (``set_name_hook``): Python
        calls it with the new class as the class is created. Read on the safe side
        (``_hook_kinds``): a call whose callee reads a name that may be such a class, or an
        instance of one (``Hook()``, ``Alias()``, ``(H := Hook)()``, ``Hook.__new__(Hook)``,
        ``Hook.make()``, ``_HOOK.copy()``); a decorator naming one (``@Hook`` calls it with
        the function; ``@Hook()`` stores what the instance returns, the instance only when
        its ``__call__`` may return it: ``_calls_back``); and any read of a name that may
        hold an instance (``_hook = _HOOK``). A function that returns one (``make()``) is
        not followed. Memoised per class."""
        k = key(cls)
        hit = self._made.get(k)
        if hit is None:
            hit = self._made[k] = []
            body = cls.field("body")
            if body is None or not self._may_set_name():
                return hit
            reads = [(node, dotted) for node in (body.find_all(_NAMES) if body is not None else [])
                     if (dotted := _read_name(node)) is not None and key(self.owner(node) or
                                                                        self.root) == k]
            kinds = self._hook_kinds({dotted for _, dotted in reads})
            for node, dotted in reads:
                made_as, instance = kinds.get(dotted, (None, None))
                called = _callee_of(node, body) if body is not None else None
                if called is not None and made_as is not None and \
                        not self._decorator_result(called, node, made_as):
                    hit.append((called, made_as))
                elif instance is not None:
                    hit.append((called or node, instance))
        return hit

    def _may_set_name(self) -> bool:
        """Some class of the file may have a ``__set_name__``: the name is spelled somewhere, or
        an attribute write may bind it (by that name, or by a name not known on anything but
        an instance, ``self``, which ``attribute_binding`` never reads as the class). Else no
        class statement of the file can call one, and ``instances_made`` has nothing to
        find (memoised)."""
        if self._set_name_spelled is None:
            self._set_name_spelled = bool(self._occurrences("__set_name__", self.root)) or any(
                attr == "__set_name__" or (attr is None and unparen(obj).text() != "self")
                for _where, obj, attr, _value in self.attribute_writes())
        return self._set_name_spelled

    def _decorator_result(self, called: SgNode, node: SgNode, made: SgNode) -> bool:
        """``called`` is ``@Hook(…)`` with ``Hook`` (``node``) the class ``made`` itself, whose
        ``__call__`` returns what it decorates, not the instance (``_calls_back``): the
        class body holds that, and the instance is gone."""
        parent = called.parent()
        return called.kind() == "call" and parent is not None and \
            parent.kind() == "decorator" and (fn := called.field("function")) is not None and \
            key(unparen(fn)) == key(node) and \
            (title := made.field("name")) is not None and node.text() == title.text() and \
            self._calls_back(made)

    def _calls_back(self, cls: SgNode) -> bool:
        """``cls``'s ``__call__`` (its own, or the nearest same-file base's) is a plain ``def``
        that returns only its argument (not rebound) or a function it defines itself: a
        decorator ``@cls()`` then stores what it decorates (or a wrapper), never the
        instance. Memoised per class."""
        k = key(cls)
        if k not in self._call_backs:
            self._call_backs[k] = False
            hook = next((h for holder in [cls, *self.bases(cls)]
                         if (h := self.member_hook(holder, "__call__")) is not None), None)
            params = hook.field("parameters") if hook is not None and \
                hook.kind() == "function_definition" else None
            taken = named_items(params.children())[1:2] if params is not None else []
            body = hook.field("body") if hook is not None else None
            name = _parameter_name(taken[0]) if taken else None
            if hook is not None and body is not None and name is not None and \
                    len(self._binders(body, name)) == 0 and \
                    body.find(kind="yield") is None:
                own = {f.text() for d in body.find_all(kind="function_definition")
                       if self.owner(d) is not None and key(self.owner(d) or d) == key(hook)
                       and (f := d.field("name")) is not None}
                returns = [r for r in body.find_all(kind="return_statement")
                           if key(next((a for a in r.ancestors() if a.kind() in _SCOPE_KINDS),
                                       r)) == key(hook)]
                self._call_backs[k] = all(
                    len(values := named_items(r.children())) == 1 and
                    unparen(values[0]).kind() == "identifier" and
                    unparen(values[0]).text() in {name, *own} for r in returns)
        return self._call_backs[k]

    def member_hook(self, cls: SgNode, method: str) -> SgNode | None:
        """Where ``cls`` gets ``method``: its body's binding in force, or one from outside the
        body (``attribute_binding``), else None."""
        lookup = [*self.final(cls, method).values(),
                  self.attribute_binding(cls, method, instance=False)]
        return next((n for n in lookup if n is not None), None)

    def set_name_hook(self, cls: SgNode) -> tuple[SgNode, SgNode, SgNode] | None:
        """(holder, hook, use) when an instance of ``cls`` has a ``__set_name__`` (``cls``'s own
        or a same-file base's: ``holder``) that may write the class it is given: the use of
        its ``owner`` parameter that may (``class_hook_use``), or the hook itself when what it
        runs is not read. Storing the class on the instance (``self.owner = owner``),
        reading its name or storing it in a registry does not. Memoised per class."""
        k = key(cls)
        if k not in self._set_names:
            self._set_names[k] = None
            for holder in [cls, *self.bases(cls)]:
                hook = self.member_hook(holder, "__set_name__")
                use = class_hook_use(self, hook, parameter=1, implicit=frozenset(),
                                     instance=0) if hook is not None else None
                if hook is not None and use is not None:
                    self._set_names[k] = (holder, hook, use)
                    break
        return self._set_names[k]

    def _hook_kinds(self, names: set[str]) -> dict[str, tuple[SgNode | None, SgNode | None]]:
        """For each dotted name: (the class with a writing ``__set_name__`` it may denote, the
        class it may hold an instance of), each None when it may not. Followed through every
        binding of the file (``_bindings_made``), whatever the scope (a name bound anywhere
        may be the one read), to a fixed point: a class of this file with such a hook
        (``set_name_hook``) is one by its name and path; a name bound to a value that reads
        one other than as a callee (``Alias = Hook``, ``A = [Hook][0]``, ``make =
        Hook.make``) may be one too (or make an instance when called); a name bound to a
        value that calls one or an instance (``_HOOK = Hook()``, ``h = Alias.make()``), or
        reads an instance at all (``h = _HOOK``), may hold an instance. Memoised per name:
        the names a query reaches are closed under what their values read."""
        todo = [n for n in names if n not in self._hook_names]
        reached = set(todo)
        while todo:  # every name the values bound to these read, not yet decided
            for value in self._values_of(todo.pop()):
                for read, _called in self._value_reads(value):
                    if read not in reached and read not in self._hook_names:
                        reached.add(read)
                        todo.append(read)
        classes: dict[str, SgNode] = {}
        instances: dict[str, SgNode] = {}
        readers: dict[str, list[tuple[str, SgNode]]] = {}
        queue: list[tuple[str, bool, SgNode]] = []
        for name in reached:
            made = next((c for c in self._class_definitions_named(name)
                         if self.set_name_hook(c) is not None), None)
            if made is not None:
                classes[name] = made
                queue.append((name, False, made))
            for value in self._values_of(name):
                for read, _called in self._value_reads(value):
                    readers.setdefault(read, []).append((name, value))
                    for instance, origin in enumerate(self._hook_names.get(read, (None, None))):
                        if origin is not None:
                            queue.append((read, bool(instance), origin))
        while queue:  # what each value bound to a name is, once the names it reads are known
            read, instance, origin = queue.pop()
            for name, value in readers.get(read, []):
                reads = self._value_reads(value)
                if not instance and name not in classes and (read, False) in reads:
                    classes[name] = origin  # Alias = Hook, make = Hook.make
                    queue.append((name, False, origin))
                if name not in instances and (instance or (read, True) in reads):
                    instances[name] = origin  # _HOOK = Hook(), h = _HOOK
                    queue.append((name, True, origin))
        for name in reached:
            self._hook_names[name] = (classes.get(name), instances.get(name))
        return {n: self._hook_names[n] for n in names}

    def _values_of(self, name: str) -> list[SgNode]:
        """The values the file binds the dotted name ``name`` to (``_bindings_made``)."""
        if self._by_target is None:
            self._alias_pairs()
            self._by_target = {}
            for _where, target, value in self._bindings_made:
                dotted = _dotted(unparen(target))
                if dotted is not None:
                    self._by_target.setdefault(dotted, []).append(value)
        return self._by_target.get(name, [])

    def _value_reads(self, value: SgNode) -> list[tuple[str, bool]]:
        """(dotted name, whether a callee reads it) for each name ``value`` reads
        (``_read_name``), memoised per value."""
        k = key(value)
        hit = self._reads.get(k)
        if hit is None:
            hit = self._reads[k] = [
                (dotted, _callee_of(node, value) is not None)
                for node in [value, *value.find_all(_NAMES)]
                if (dotted := _read_name(node)) is not None]
        return hit

    def _class_definitions_named(self, name: str) -> list[SgNode]:
        """The class statements of the file called ``name`` (by their own name, or their path
        from the module: ``Outer.Inner``)."""
        if self._classes_by_name is None:
            self._classes_by_name = {}
            for cls in self.root.find_all(kind="class_definition"):
                title, path = cls.field("name"), self.class_path(cls)
                for text in dict.fromkeys(t for t in (title.text() if title else None, path) if t):
                    self._classes_by_name.setdefault(text, []).append(cls)
        return self._classes_by_name.get(name, [])

    def attribute_writes(self) -> list[Write]:
        """Every place the file binds or deletes an attribute (memoised); a name computed
        from values the file shows is each of them (``_resolved``)."""
        if self._writes is None:
            self._writes = [w for node in self.root.find_all(_WRITING)
                            for raw in _writes_of(node, self._namespace_names)
                            for w in self._resolved(raw)]
        return self._writes

    def _namespace_names(self, holder: SgNode, where: SgNode) -> list[SgNode]:
        """``Resolve`` for the file: what a name read at ``where`` may hold of the namespaces
        it is bound to (``g = globals()``, ``ns = locals()`` in a class body,
        ``d = self.__dict__``, ``v = vars(x)``, and a name bound to one of these names in
        turn), where that binding holds (``_alias_entries``)."""
        holder = unparen(holder)
        if holder.kind() != "identifier":
            return []
        if self._spaces is None:
            self._spaces = {}
            for pair in self._alias_pairs():  # in source order: `h = g` after `g = globals()`
                if pair.target.kind() != "identifier":
                    continue
                spaces = [n for v in _may_be(pair.value)
                          for n in _namespaces(v, pair.where, self._namespace_names)]
                for text, scope in self._alias_entries(pair.target, pair.where) if spaces else []:
                    if text == pair.target.text():
                        self._spaces.setdefault(
                            (text, key(scope) if scope is not None else None), []).extend(spaces)
        scopes: list[Key | None] = [None]  # where a binding holds: anywhere, or a function
        node: SgNode | None = where
        while node is not None and (node := self.owner(node)) is not None:
            scopes.append(key(node))
        return [space for k in scopes for space in self._spaces.get((holder.text(), k), [])]

    def _resolved(self, raw: RawWrite) -> list[Write]:
        """One write per name a computed attribute may be (``_spelled``), or one of any name
        (None) when they are not visible."""
        where, obj, attr, value = raw
        if attr == "__dict__":  # `self.__dict__ = kw`, `|= kw`: a namespace replaced whole
            return [(where, obj, None, value)]
        if attr is None or isinstance(attr, str):
            return [(where, obj, attr, value)]
        if self._forwarding(obj, attr, where):
            return []
        names = self._spelled(attr, where)
        if names is None:
            return [(where, obj, None, value)]
        return [(where, obj, n, value) for n in names]

    def _forwarding(self, obj: SgNode, attr: SgNode, where: SgNode) -> bool:
        """In ``__setattr__`` / ``__delattr__``, a write on the instance itself (its first
        parameter, or ``super()``) of the name parameter, neither rebound: the write its caller
        makes (``obj.x = v``), which is read where the caller is. On any other object
        (``setattr(Cls, name, value)``, ``globals()[name] = value``) the name may be any."""
        region = next((a for a in where.ancestors() if a.kind() in _SCOPE_KINDS), self.root)
        attr, obj = unparen(attr), unparen(obj)
        if attr.kind() != "identifier" or not _forwarded(region, attr.text()) or \
                len(self._binders(region, attr.text())) != 1:
            return False
        if obj.kind() == "call":
            return _builtin(obj.field("function")) == "super"
        params = region.field("parameters")
        first = named_items(params.children())[:1] if params is not None else []
        return bool(first) and obj.kind() == "identifier" and \
            _parameter_name(first[0]) == obj.text() and \
            len(self._binders(region, obj.text())) == 1

    def _module_namespace(self, obj: SgNode, where: SgNode) -> bool:
        """``obj`` (written at ``where``) is the module's namespace: ``globals()``, or
        ``locals()`` / ``vars()`` run at module level."""
        obj = unparen(obj)
        if obj.kind() != "call":
            return False
        args = obj.field("arguments")
        if args is not None and named_items(args.children()):
            return False
        name = _builtin(obj.field("function"))
        return name == "globals" or (name in ("locals", "vars") and self.owner(where) is None)

    def _name_map(self, classes: list[SgNode], instance: bool) -> dict[str, list[SgNode | None]]:
        """Every name of these classes (``_class_names``; with ``instance`` of their
        instances too) → where it holds (None: anywhere), for one lookup per write."""
        table: dict[str, list[SgNode | None]] = {}
        for cls in classes:
            names, selves = self._class_names(cls)
            for text, scope in names + selves if instance else names:
                table.setdefault(text, []).append(scope)
        return table

    def _names_class(self, obj: SgNode, where: SgNode, family: dict[Key, SgNode],
                     table: dict[str, list[SgNode | None]], instance: bool) -> bool:
        """``obj`` (the object of an attribute write at ``where``) is one of the classes
        ``family`` (``table`` their ``_name_map``): a dotted name or an alias of one,
        ``locals()`` / ``vars()`` run in its own body (the namespace the class is made from),
        or in its own methods ``cls``, ``type(self)``, ``self.__class__`` (and with
        ``instance`` ``self``, the method's first parameter or an alias of them: an instance
        attribute shadows a method)."""
        obj = unparen(obj)
        if _namespace_call(obj):
            owner = self.owner(where)
            return owner is not None and key(owner) in family
        scopes = table.get("".join(obj.text().split()), [])
        if any(s is None or within(where, s) for s in scopes):
            return True
        nearest = self._nearest_class(where)
        return nearest is not None and key(nearest) in family and \
            self._own_reference(obj, where, nearest, instance)

    def _own_reference(self, obj: SgNode, where: SgNode, cls: SgNode, instance: bool) -> bool:
        """``obj`` is how a method of ``cls`` (holding ``where``) names its class (``cls``,
        ``type(self)``, ``self.__class__``) or, with ``instance``, its instance. Callers
        give the class nearest ``where`` (``_nearest_class``): only its methods' ``cls`` and
        ``self`` name it."""
        obj = unparen(obj)
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
        its instance), if any; a ``@staticmethod`` has none (its first parameter is whatever
        the caller passes, ``_take_scale(layer, name)``)."""
        for anc in node.ancestors():
            if anc.kind() != "function_definition":
                continue
            owner = self.owner(anc)
            if owner is None or key(owner) != key(cls):
                continue
            if any(_builtin(named_items(d.children())[0]) == "staticmethod"
                   for d in self.decorators(anc) if named_items(d.children())):
                return set()
            params = anc.field("parameters")
            first = named_items(params.children())[:1] if params is not None else []
            if first and first[0].kind() == "identifier":
                return {first[0].text()}
            if first:
                name = first[0].field("name") or next(
                    (c for c in first[0].children() if c.kind() == "identifier"), None)
                return {name.text()} if name is not None else set()
        return set()

    # names of a class, and the names a computed attribute may be

    def _class_names(self, cls: SgNode) -> tuple[list[Alias], list[Alias]]:
        """How the file may name ``cls``, and in its methods an instance of it, besides the
        forms ``_own_reference`` reads: (names of the class, names of an instance), each with
        the function it holds in (None: anywhere).

        The dotted path; an enclosing class's name followed by this one's (``O.Inner`` after
        ``O = Outer``); and, to a fixed point, every name or dotted target assigned one of
        these (``C = Cls``, ``C: type = Cls``, ``C = D = Cls``, ``C, x = Cls, 1``,
        ``(C := Cls)``, ``for C in (Cls, Other)``; ``c = cls`` or ``T = type(self)`` in a
        method; ``s = self`` for the instance). A name assigned in a function holds there
        and in the functions nested in it, unless declared ``global``; one assigned at module
        level or in a class body holds everywhere. A later rebinding of the alias is not
        looked for: a write read where there is none errs on the safe side."""
        k = key(cls)
        hit = self._aliases.get(k)
        if hit is not None:
            return hit
        todo: list[tuple[Alias, bool]] = []  # (a name, whether it names an instance)
        path = self.class_path(cls)
        if path is not None:
            todo.append(((path, None), False))
        owner, title = self.owner(cls), cls.field("name")
        if owner is not None and owner.kind() == "class_definition" and title is not None:
            todo += [((f"{outer}.{title.text()}", scope), False)
                     for outer, scope in self._class_names(owner)[0]]
        for pair in self._pairs_in_class().get(k, []):
            for instance in (False, True):
                if any(self._own_reference(v, pair.where, cls, instance)
                       for v in _may_be(pair.value)):
                    todo += [(e, instance) for e in self._alias_entries(pair.target, pair.where)]
                    break
        names: list[Alias] = []
        selves: list[Alias] = []
        seen: set[tuple[Alias, bool]] = set()
        while todo:  # each name once: what is assigned it names the same
            entry, instance = todo.pop()
            if (entry, instance) in seen:
                continue
            seen.add((entry, instance))
            (selves if instance else names).append(entry)
            text, scope = entry
            for pair in self._pairs_within((text, instance), scope):
                todo += [(e, instance) for e in self._alias_entries(pair.target, pair.where)]
        self._aliases[k] = (names, selves)
        return names, selves

    def _alias_entries(self, target: SgNode, where: SgNode) -> list[Alias]:
        """Where a name bound at ``where`` holds (``_class_names``): a dotted target and a
        name bound at module level anywhere; a class-body name anywhere, also as
        ``Path.name``; a function's name in that function, unless declared ``global``."""
        text = _dotted(target)
        if text is None:
            return []
        owner = self.owner(where)
        if target.kind() != "identifier" or owner is None:
            return [(text, None)]
        if owner.kind() == "class_definition":
            path = self.class_path(owner)
            return [(text, None), (f"self.{text}", None), (f"cls.{text}", None),
                    *([(f"{path}.{text}", None)] if path is not None else [])]
        if text in self._declared_in(owner, "global_statement"):
            return [(text, None)]
        scope: SgNode | None = owner
        while scope is not None and text in self._declared_in(scope, "nonlocal_statement"):
            scope = self.owner(scope)  # the variable is an enclosing function's
            if scope is not None and scope.kind() == "class_definition":
                scope = None
        return [(text, scope)]

    def _declared_in(self, function: SgNode, kind: str) -> frozenset[str]:
        """The names a ``global`` (or ``nonlocal``: ``kind``) statement in ``function``
        (nested functions included) declares, memoised per function: a chain of thousands
        of aliases in one function asks for each of them."""
        k = (key(function), kind)
        hit = self._declared.get(k)
        if hit is None:
            hit = self._declared[k] = frozenset(
                i.text() for g in function.find_all(kind=kind)
                for i in g.children() if i.kind() == "identifier")
        return hit

    def _alias_pairs(self) -> list[AliasPair]:
        """Each name or dotted target the file binds to a value that names something
        (``AliasPair``), by any binding form: assignments of every shape (``*_, C = 1, Cls``,
        ``(a, (C, b)) = …``), ``+=``, ``:=``, ``for`` and comprehension targets (paired with
        what they run over), ``with … as`` / ``except … as``, and a parameter's default
        (``def f(C=Cls)``, holding in the function). Memoised."""
        if self._pairs is None:
            found = [(node, target, value) for node in self.root.find_all(ASSIGNING)
                     for target, value in _assigned_pairs(node)]
            for param in self.root.find_all(_DEFAULTED):
                name, value, params = param.field("name"), param.field("value"), param.parent()
                function = params.parent() if params is not None else None
                body = function.field("body") if function is not None else None
                if name is not None and value is not None and body is not None:
                    found.append((body, name, value))
            self._bindings_made = found
            self._pairs = [p for where, target, value in found
                           if (p := _alias_pair(where, target, value)) is not None]
        return self._pairs

    def _pairs_in_class(self) -> dict[Key, list[AliasPair]]:
        """``_alias_pairs`` by the innermost class holding them (memoised): only there can
        ``cls`` or ``self`` name that class."""
        if self._by_class is None:
            self._by_class = {}
            for pair in self._alias_pairs():
                nearest = self._nearest_class(pair.where)
                if nearest is not None:
                    self._by_class.setdefault(key(nearest), []).append(pair)
        return self._by_class

    def _pairs_within(self, value: tuple[str, bool], scope: SgNode | None) -> list[AliasPair]:
        """The ``_alias_pairs`` whose value mentions a dotted name (a class:
        ``AliasPair.mentions``) or may be it (an instance, ``value[1]``: ``AliasPair.maybe``),
        made in ``scope`` (None: anywhere). Indexed once, in source order, so a scope's share
        is found by bisection (thousands of functions each binding ``C`` ask for theirs)."""
        if self._by_value is None:
            self._by_value = {}
            for pair in sorted(self._alias_pairs(), key=lambda p: p.where.range().start.index):
                start = pair.where.range().start.index
                for k in [*((t, False) for t in pair.mentions), *((t, True) for t in pair.maybe)]:
                    starts, pairs = self._by_value.setdefault(k, ([], []))
                    starts.append(start)
                    pairs.append(pair)
        starts, pairs = self._by_value.get(value, ([], []))
        if scope is None:
            return pairs
        span = scope.range()
        return [p for p in pairs[bisect_left(starts, span.start.index):
                                 bisect_left(starts, span.end.index)] if within(p.where, scope)]

    def _nearest_class(self, node: SgNode) -> SgNode | None:
        """The innermost class definition holding ``node`` (memoised per node)."""
        k = key(node)
        if k not in self._nearest:
            self._nearest[k] = next(
                (a for a in node.ancestors() if a.kind() == "class_definition"), None)
        return self._nearest[k]

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
                                if end <= child.range().start.index), (parent, None))]
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
                if any(b.range().start.index > test.range().start.index
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
                    hit.setdefault(got[0], []).append((stmt.range().end.index, stmt, got[1]))
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

    def _occurrences(self, name: str, region: SgNode) -> list[SgNode]:
        """Every identifier of ``region`` spelled ``name``: one scan of the file, memoised,
        in source order, so a region's share is found by bisection (a name read in each of
        thousands of functions is not filtered thousands of times)."""
        if self._names_index is None:
            self._names_index = {}
            for ident in self.root.find_all(kind="identifier"):
                starts, nodes = self._names_index.setdefault(ident.text(), ([], []))
                starts.append(ident.range().start.index)
                nodes.append(ident)
        starts, nodes = self._names_index.get(name, ([], []))
        span = region.range()
        return nodes[bisect_left(starts, span.start.index):bisect_left(starts, span.end.index)]

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

    def _binders(self, region: SgNode, name: str) -> list[SgNode]:
        """Every identifier of ``region`` that binds the variable ``name`` (``_binds_here``),
        memoised: read from the file's index of names, not by scanning the region again."""
        memo = (key(region), name)
        hit = self._binder_memo.get(memo)
        if hit is None:
            hit = self._binder_memo[memo] = [i for i in self._occurrences(name, region)
                                             if _binds_here(i)]
        return hit

    def builtin_container(self, receiver: SgNode) -> bool:
        """``receiver`` is certainly a builtin container, so its storing methods only store
        (``_STORING``): a name every binding of which in the file is an assignment of one
        (``_container_value``), or ``X.name`` (``cls.registry``) where every binding of
        ``name`` is such an assignment in a class body. Nothing may rebind it: no star
        import, no attribute write naming it or any name (``attribute_writes``). Memoised
        per name: a hook may store into one thousands of times."""
        receiver = unparen(receiver)
        if receiver.kind() == "identifier":
            name, in_class = receiver.text(), False
        elif receiver.kind() == "attribute" and (obj := receiver.field("object")) is not None \
                and unparen(obj).kind() == "identifier" and \
                (attr := receiver.field("attribute")) is not None:
            name, in_class = attr.text(), True
        else:
            return False
        memo = (name, in_class)
        if memo not in self._containers:
            binders = self._binders(self.root, name)
            self._containers[memo] = bool(binders) and all(
                self._container_binding(i, in_class) for i in binders) and \
                self.root.find(kind="wildcard_import") is None and \
                self._namespace_free() and \
                all(isinstance(attr, str) and attr != name for _, _, attr, _ in self._spelled_writes())
        return self._containers[memo]

    def _spelled_writes(self) -> list[RawWrite]:
        """The attribute writes before a computed name is resolved to the values the file
        shows (``attribute_writes`` resolves them): for trusting a registry, a name the
        file computes is any name, since what it may hold at run time (a loop variable
        rebound by a called function's ``global``) is beyond a syntactic reading."""
        if self._raw_writes is None:
            self._raw_writes = [raw for node in self.root.find_all(_WRITING)
                                for raw in _writes_of(node, self._namespace_names)]
        return self._raw_writes

    def _namespace_free(self) -> bool:
        """The file never names a namespace it could rebind a module name through
        (``globals``, ``__globals__``, ``sys.modules``, ``exec``/``eval``, ``vars``/``locals``):
        a namespace handed to a function, returned from one or bound by ``:=`` or
        ``with`` is not followed, so a registry in such a file is not trusted."""
        if self._no_namespace is None:
            self._no_namespace = not any(
                n.text() in _NAMESPACE_WORDS for n in self.root.find_all(kind="identifier"))
        return self._no_namespace

    def _container_binding(self, ident: SgNode, in_class: bool) -> bool:
        """``ident`` is the whole target of an assignment of a builtin container
        (``_container_value``), in a class body when ``in_class``."""
        stmt = ident.parent()
        if stmt is None or stmt.kind() != "assignment" or \
                (left := stmt.field("left")) is None or key(left) != key(ident) or \
                (value := stmt.field("right")) is None or not self._container_value(value):
            return False
        return not in_class or [a.kind() for a in stmt.ancestors()[:3]] == [
            "expression_statement", "block", "class_definition"]

    def _container_value(self, value: SgNode) -> bool:
        """A display (``[]``, ``{}``, ``{1}``), ``list()`` / ``set()`` / ``dict()`` with the
        builtin not bound in the file, or ``defaultdict(…)`` / ``OrderedDict(…)`` /
        ``deque(…)`` spelled ``collections.X`` or imported from ``collections``, the name
        bound by module-level imports only (``_import_sources``)."""
        value = unparen(value)
        if value.kind() in ("list", "set", "dictionary", "list_comprehension",
                            "set_comprehension", "dictionary_comprehension"):
            return True
        if value.kind() != "call" or (fn := value.field("function")) is None:
            return False
        prefix, _, name = "".join(unparen(fn).text().split()).rpartition(".")
        if name in _CONTAINER_TYPES and not prefix:
            return not self._binders(self.root, name)
        if name not in _COLLECTIONS or prefix not in ("", "collections"):
            return False
        bound = prefix or name  # `collections` (import collections) or `deque`
        binders = self._binders(self.root, bound)
        return bool(binders) and all(self.owner(i) is None and any(
            a.kind() in ("import_statement", "import_from_statement") for a in i.ancestors())
            for i in binders) and \
            set(self._import_sources(bound) or [""]) == {prefix or f"collections.{name}"}

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
        root, dotted = _name_chain(tree)
        if root is None:
            return "it is an expression, not an imported name"
        return self._imported(root, dotted, decorator)

    def metaclass(self, cls: SgNode) -> str | None:
        """Why the class statement ``cls`` may not create its class from its body as
        written (None when it does): a metaclass runs with the body's namespace and may
        put anything in place of a method. Only ``abc.ABCMeta`` and ``enum``'s, imported
        as such and bound nothing else in the file, are read as plain; ``*bases`` or
        ``**kwargs`` may bring any metaclass. (A base class in another file may still
        bring one: not read.)"""
        build = next((w for w in self.attribute_writes() if w[2] == "__build_class__"), None)
        if build is not None:
            return f"`{short(build[0], 40)}` at line {line(build[0])}: `__build_class__` " \
                "makes every class"
        bases = cls.field("superclasses")
        for item in named_items(bases.children()) if bases is not None else []:
            if item.kind() in ("list_splat", "dictionary_splat"):
                return f"`{short(item, 40)}` may bring any metaclass"
            name = item.field("name") if item.kind() == "keyword_argument" else None
            value = item.field("value") if item.kind() == "keyword_argument" else None
            if name is None or value is None or name.text() != "metaclass":
                continue
            why = self._plain_metaclass(value, cls)
            if why is not None:
                return f"`metaclass={short(value, 40)}`, which builds the class: {why}"
        base = self.unread_base(cls)
        return None if base is None else f"{base}, which may bring a metaclass"

    def _plain_metaclass(self, value: SgNode, cls: SgNode) -> str | None:
        """Why the metaclass expression ``value`` is not a plain one of the stdlib."""
        root, dotted = _name_chain(parse_expression(value.text()))
        if root is None:
            return "an expression, not an imported name"
        if root == "type" and not dotted and self._builtin_unbound("type"):
            return None  # the default metaclass, spelled out
        why = self._imported(root, dotted, cls)
        if why is not None:
            return why
        changed = next((w for w in self.attribute_writes()
                        if (_dotted(unparen(w[1])) or "").split(".")[0] == root), None)
        if changed is not None:
            return f"the file changes `{short(changed[1], 30)}` at line {line(changed[0])}"
        sources = self._import_sources(root) or []
        full = [".".join([source, *dotted]) for source in sources]
        if not full or any(f not in _PLAIN_METACLASSES for f in full):
            return f"`{' or '.join(full) or root}` is code not read (only "\
                f"{', '.join(sorted(_PLAIN_METACLASSES))} are known to keep the body)"
        return None

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
        else:
            for name in bound_names(stmt):
                outside = self.namespace_binding(name)
                if outside is not None:
                    return (f"`{name}` may be bound again through the module's namespace at line "
                            f"{line(outside)} (`{short(outside, 50)}`), which replaces it"), []
        others: dict[Key, SgNode] = {}
        for name in bound_names(stmt):
            final = self.final(scope, name)
            if not final:
                continue  # not reachable from the body's start (e.g. dead): judged elsewhere
            if key(stmt) not in final:
                last = max(final.values(), key=lambda s: s.range().start.index)
                return (f"`{name}` is bound again at line {line(last)} "
                        f"(`{short(last, 50)}`), which is the binding in force"), []
            after = [s for s in final.values() if self.may_only(s, name) and
                     s.range().start.index >= stmt.range().end.index]
            if after:
                return (f"`{name}` may be bound again at line {line(after[0])} "
                        f"(`{short(after[0], 50)}`: {_maybe_how(after[0])}), which may then be "
                        "the binding in force"), []
            others.update({k: s for k, s in final.items() if k != key(stmt)})
        runner = self.code_runner(self.root)
        if runner is not None:
            return (f"`{', '.join(bound_names(stmt)) or short(stmt, 30)}` may be bound again at "
                    f"line {line(runner)} (`{short(runner, 50)}`): exec/eval run code the file "
                    "does not show, which may bind any name, of any class or of the module"), []
        return None, list(others.values())

    # code the file runs from text

    def code_runner(self, region: SgNode) -> SgNode | None:
        """The first use of the builtin ``exec`` / ``eval`` in ``region`` that may run
        (``dead(certain=True)``), called or taken as a value (``run = exec``): the code it
        runs is a string, not read, and may bind anything (in a class body, with no
        namespace given, the class's own names). See ``_all_runners`` for its spellings."""
        return next((n for n in self._runners_in(region)
                     if self.dead(n, certain=True) is None), None)

    def _runners_in(self, region: SgNode) -> list[SgNode]:
        """Every use of ``exec`` / ``eval`` in ``region`` (``_all_runners``), in source order:
        the file's are found once, and a region's share by bisection."""
        if self._runners is None:
            found = sorted({key(n): n for n in self._all_runners()}.values(),
                           key=lambda n: n.range().start.index)
            self._runners = ([n.range().start.index for n in found], found)
        starts, runners = self._runners
        span = region.range()
        return [n for n in runners[bisect_left(starts, span.start.index):
                                   bisect_left(starts, span.end.index)] if within(n, region)]

    def _all_runners(self) -> list[SgNode]:
        """Every place the file uses the builtin ``exec`` / ``eval`` (the call, or the value
        taken): the name read where the file does not bind it (``_shadowed``: a parameter
        or a local called ``eval``, ``from lib import eval as e``, ``import some.eval`` are
        other things); an attribute ``exec`` / ``eval`` of the builtins module
        (``_builtins_module``: ``builtins.exec``, ``b.exec`` after ``import builtins as b``,
        ``__import__("builtins").exec``), or its item in a namespace of it
        (``__builtins__["exec"]``, ``vars(b)["eval"]``); ``getattr(x, "exec")`` on any
        object; ``from builtins import exec``; and, to a fixed point, every read of a name
        bound to one of these (``run = exec`` … ``run(code)``)."""
        modules = self._builtins_names()
        taken: list[SgNode] = []  # each runner, as the value the code takes
        for name in _RUNNER_NAMES:
            taken += [use for ident in self._occurrences(name, self.root)
                      if (use := self._runner_use(ident, modules)) is not None]
        for ident in self._occurrences("getattr", self.root):
            call = _call_of(ident)
            args = call.field("arguments") if call is not None else None
            items = named_items(args.children()) if args is not None else []
            if call is not None and len(items) >= 2 and constant_name(items[1]) in _RUNNER_NAMES:
                taken.append(call)
        for item in self.root.find_all(_NAMED_ITEM):
            holder, index = item.field("value"), item.field("subscript")
            if holder is not None and index is not None and \
                    constant_name(index) in _RUNNER_NAMES and \
                    self._builtins_namespace(holder, modules):
                taken.append(item)
        todo, names = list(taken), set(_RUNNER_NAMES)
        while todo:  # what a name bound to a runner is read as
            for alias in _aliases_of(todo.pop()):
                if alias in names:
                    continue
                names.add(alias)
                reads = [i for i in self._occurrences(alias, self.root)
                         if not _binds_here(i) and not _named_only(i)]
                taken += reads
                todo += reads
        return [_used(n) if n.kind() != "import_from_statement" else n for n in taken]

    def _runner_use(self, ident: SgNode, modules: frozenset[str]) -> SgNode | None:
        """The builtin ``exec`` / ``eval`` as the identifier ``ident`` (spelled so) takes it
        (``_all_runners``: the name, ``b.exec``, the import binding it), or None."""
        parent = ident.parent()
        if parent is None:
            return ident
        if parent.kind() == "attribute" and (attr := parent.field("attribute")) is not None \
                and key(attr) == key(ident):
            holder = parent.field("object")
            return parent if holder is not None and \
                self._builtins_module(holder, modules) else None  # x.eval: another object's
        statement = next((a for a in ident.ancestors() if a.kind() in (
            "import_statement", "import_from_statement")), None)
        if statement is not None:  # `from builtins import exec`: the name bound to it
            module = statement.field("module_name")
            return statement if module is not None and module.text() in _BUILTINS_MODULES \
                and not within(ident, module) else None
        if _named_only(ident) or _binds_here(ident) or self._shadowed(ident):
            return None
        return ident

    def _shadowed(self, ident: SgNode) -> bool:
        """The name read at ``ident`` is one the file binds where it is read (a parameter, an
        assignment, an import, a definition, in its own scope, an enclosing function's, or
        the module), so not the builtin of that name. Read from the stdlib's symbol tables
        (``_scope_table``); a scope they cannot be matched with is read as not binding it,
        the safe side for a name that may run code."""
        name = ident.text()
        scope, first = self.owner(ident), True
        while scope is not None:
            table = self._scope_table(scope)
            if table is None:
                return False
            sym = _symbol(table, name)  # None: read in a comprehension only, look further out
            if sym is not None and (first or table.get_type() != "class"):
                if sym.is_global():  # declared so, or not bound in a function: the module's
                    break
                if sym.is_local() or sym.is_free():
                    return True
            scope, first = self.owner(scope), False
        sym = _symbol(self._symtable(), name)
        return sym is not None and sym.is_local()

    def _scope_table(self, scope: SgNode | None) -> symtable.SymbolTable | None:
        """The stdlib symbol table of a function, lambda or class (None: the module's), found
        by name and line among its enclosing scope's (memoised, each scope's children indexed
        once); None when none or several match (two lambdas on one line, a function in a
        comprehension)."""
        if scope is None:
            return self._symtable()
        k = key(scope)
        if k not in self._scope_tables:
            owner = self.owner(scope)
            outer = self._scope_table(owner)
            outer_key = key(owner) if owner is not None else None
            if outer is not None and outer_key not in self._child_tables:
                index: dict[tuple[str, int], list[symtable.SymbolTable]] = {}
                for table in outer.get_children():
                    index.setdefault((table.get_name(), table.get_lineno()), []).append(table)
                self._child_tables[outer_key] = index
            title = scope.field("name")
            found = self._child_tables.get(outer_key, {}).get(
                (title.text() if title is not None else "lambda", line(scope)), []) \
                if outer is not None else []
            self._scope_tables[k] = found[0] if len(found) == 1 else None
        return self._scope_tables[k]

    def _builtins_names(self) -> frozenset[str]:
        """Names the file binds to the builtins module: ``import builtins as b``, and, to a
        fixed point, every name assigned one (``b = builtins``, ``b = __import__("builtins")``),
        wherever it is bound (memoised)."""
        if self._builtins is None:
            names: set[str] = set()
            for stmt in self.root.find_all(kind="import_statement"):
                for item in stmt.field_children("name"):
                    alias = item.field("alias") if item.kind() == "aliased_import" else None
                    inner = item.field("name") if alias is not None else None
                    if alias is not None and inner is not None and \
                            inner.text() in _BUILTINS_MODULES:
                        names.add(alias.text())
            by_value: dict[str, list[AliasPair]] = {}
            todo: list[AliasPair] = []
            for pair in self._alias_pairs():
                if pair.target.kind() != "identifier":
                    continue
                for value in _may_be(pair.value):
                    if value.kind() == "identifier":
                        by_value.setdefault(value.text(), []).append(pair)
                    if self._builtins_module(value, frozenset(names)):
                        todo.append(pair)
            todo += [p for n in names for p in by_value.get(n, [])]
            while todo:
                target = todo.pop().target.text()
                if target not in names:
                    names.add(target)
                    todo += by_value.get(target, [])
            self._builtins = frozenset(names)
        return self._builtins

    @staticmethod
    def _builtins_module(node: SgNode, modules: frozenset[str]) -> bool:
        """``node`` may be the builtins module: ``builtins``, ``__builtins__``, a name bound to
        it (``modules``), ``__import__(…)`` / ``importlib.import_module(…)`` of ``"builtins"``
        or of a name not spelled, ``sys.modules["builtins"]``."""
        node = unparen(node)
        if node.kind() == "identifier":
            return node.text() in ("builtins", "__builtins__") or node.text() in modules
        if node.kind() == "call" and (fn := node.field("function")) is not None:
            args = node.field("arguments")
            items = named_items(args.children()) if args is not None else []
            name = constant_name(items[0]) if items else None
            return "".join(fn.text().split()).rpartition(".")[2] in (
                "__import__", "import_module") and name in (None, *_BUILTINS_MODULES)
        if node.kind() == "subscript" and (holder := node.field("value")) is not None and \
                (index := node.field("subscript")) is not None:
            return "".join(holder.text().split()).endswith("modules") and \
                constant_name(index) in _BUILTINS_MODULES
        return False

    def _builtins_namespace(self, holder: SgNode, modules: frozenset[str]) -> bool:
        """``holder`` may be the builtins module's namespace: ``__builtins__`` (a dict outside
        ``__main__``), ``vars(b)`` / ``b.__dict__`` of the module (``_builtins_module``)."""
        holder = unparen(holder)
        if holder.kind() == "identifier" and holder.text() == "__builtins__":
            return True
        space = _namespace_of(holder)
        return space is not None and space.kind() != "call" and \
            self._builtins_module(space, modules)

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
            objpat = parse_pattern(obj)
            for where, holder, name, stored in self._namespace_writes(region):
                if name != attr or stored is None:
                    continue
                th = at(unparen(holder), objpat, bound)
                vh = at(stored, vpat, {**bound, **th.caps}) if th is not None else None
                if th is not None and vh is not None:
                    out.append(Hit(where, {**th.caps, **vh.caps}, {**th.multi, **vh.multi}))
        return out

    def _namespace_writes(self, region: SgNode) -> list[Write]:
        """The ``attribute_writes`` of ``region`` that a pattern ``obj.attr = v`` does not
        spell, deletions aside: a name made of constants (``setattr(o, "a" + "b", v)``), a
        namespace written (``o.__dict__.update(a=v)``, ``vars(o)["a"] = v``,
        ``o.__dict__ = d``), a name not known (``setattr(o, name, v)``: None). Found by
        bisection in the file's writes, which are in source order."""
        writes = self.attribute_writes()
        if self._write_starts is None:
            self._write_starts = [w[0].range().start.index for w in writes]
        span = region.range()
        return [w for w in writes[bisect_left(self._write_starts, span.start.index):
                                  bisect_left(self._write_starts, span.end.index)]
                if within(w[0], region) and not _deletes(w[0]) and not _plain_target(w)]

    def may_assign(self, region: SgNode, text: str,
                   bound: dict[str, SgNode]) -> list[tuple[SgNode, str]]:
        """For a pattern ``obj.attr = v``: the code of ``region`` that may make that assignment
        although no form of it can be matched, and why (in source order). A write on an
        object ``obj`` matches whose name is not known (``setattr(self, name, v)``,
        ``self.__dict__.update(d)`` / ``(**d)``, ``vars(self)[k] = v``, ``self.__dict__ =
        d``) or whose value is not shown (``vars(self).update({"attr": v}, **more)`` reads
        as any name), or whose object is not known either (``setattr(*args)``); and any
        ``exec`` / ``eval`` (``code_runner``), which may do anything.
        The caller decides what may run (``dead``)."""
        parts = assign_parts(text)
        obj, dot, attr = parts[0].rpartition(".") if parts is not None else ("", "", "")
        if not dot or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", attr):
            return []
        objpat = parse_pattern(obj)
        out = [(where, "its object and attribute are not known" if holder.kind() in _SPLATS
                else "its attribute's name is not known" if name is None else
                "the value it gives is not known")
               for where, holder, name, stored in self._namespace_writes(region)
               if (name is None or (name == attr and stored is None))
               and (holder.kind() in _SPLATS or at(unparen(holder), objpat, bound) is not None)]
        out += [(n, "exec/eval run code the file does not show")
                for n in self._runners_in(region)]
        return sorted(out, key=lambda pair: pair[0].range().start.index)


def _symbol(table: symtable.SymbolTable, name: str) -> symtable.Symbol | None:
    """``name`` in a symbol table, None when the scope does not use it."""
    try:
        return table.lookup(name)
    except KeyError:
        return None


def _read_name(node: SgNode) -> str | None:
    """The dotted name an identifier or attribute node reads (``Hook``, ``Outer.Hook``), or
    None: an attribute's or a keyword's own name, a name bound there (a target, a
    parameter), or an attribute not made of names (``f().x``)."""
    if node.kind() == "identifier" and (_named_only(node) or _binds_here(node)):
        return None
    return _dotted(node)


def _callee_of(node: SgNode, top: SgNode) -> SgNode | None:
    """The call (or decorator) within ``top`` whose callee holds ``node``: what calling it
    makes (``Hook()``, ``Hook.make()``, ``(H := Hook)()``, ``@Hook``), else None."""
    if key(node) == key(top):
        return None
    child = node
    for anc in node.ancestors():
        if anc.kind() == "call" and (fn := anc.field("function")) is not None and \
                within(child, fn):
            return anc
        if anc.kind() == "decorator":
            return anc if next(iter(named_items(anc.children())), anc).kind() != "call" else None
        if key(anc) == key(top) or anc.kind() in _SCOPE_KINDS:
            return None
        child = anc
    return None


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


_DELETING = frozenset({"delattr", "__delattr__", "pop", "popitem", "__delitem__", "clear"})
"""Calls among the attribute writes that only delete (``Facts._namespace_writes``)."""


def _deletes(where: SgNode) -> bool:
    """The attribute write ``where`` only deletes: ``del``, ``delattr``, ``ns.pop(…)``…"""
    if where.kind() == "delete_statement":
        return True
    fn = where.field("function") if where.kind() == "call" else None
    if fn is None:
        return False
    name = fn.field("attribute") if fn.kind() == "attribute" else fn
    return name is not None and name.text() in _DELETING


def _plain_target(write: Write) -> bool:
    """The write is an assignment target ``obj.attr`` (of any form: ``=``, ``+=``, a tuple,
    ``for``, ``with … as``): what an ``obj.attr = v`` pattern and ``assigned`` find."""
    where, obj, attr, _value = write
    parent = obj.parent()
    return where.kind() != "call" and parent is not None and parent.kind() == "attribute" and \
        (inner := parent.field("object")) is not None and key(inner) == key(obj) and \
        (name := parent.field("attribute")) is not None and name.text() == attr


def _maybe_how(stmt: SgNode) -> str:
    """Why a binding ``Facts.may_only`` gives only may happen, for messages."""
    if stmt.kind() == "match_statement":
        return "a `case` capture, which binds when its case matches"
    if stmt.kind() == "try_statement":
        return "an `except … as` name, bound (then deleted) when its handler runs"
    if stmt.kind() == "import_from_statement":
        return "a star import, which may bind any name"
    return "a binding that may happen"


_RUNNER_NAMES = ("exec", "eval")
"""Builtins that run code given as text."""
_BUILTINS_MODULES = ("builtins", "__builtin__")
"""The module of the builtins (``__builtin__``: its Python 2 name, still importable by some)."""
_NAMED_ITEM: Any = {"rule": {"kind": "subscript", "regex": "exec|eval"}}
"""Subscripts that may take ``exec`` / ``eval`` from a namespace by name."""


def _used(node: SgNode) -> SgNode:
    """The call that calls ``node`` (through parentheses: ``(exec)(code)``), else ``node``
    itself, taken as a value."""
    outer = node
    while (parent := outer.parent()) is not None and parent.kind() == "parenthesized_expression":
        outer = parent
    if parent is not None and parent.kind() == "call" and \
            (fn := parent.field("function")) is not None and key(fn) == key(outer):
        return parent
    return node


def _call_of(ident: SgNode) -> SgNode | None:
    """The call whose callee is ``ident`` (``getattr(…)``) or ends with it
    (``builtins.getattr(…)``), else None."""
    callee = ident
    parent = ident.parent()
    if parent is not None and parent.kind() == "attribute" and \
            (attr := parent.field("attribute")) is not None and key(attr) == key(ident):
        callee, parent = parent, parent.parent()
    if parent is None or parent.kind() != "call" or \
            (fn := parent.field("function")) is None or key(fn) != key(callee):
        return None
    return parent


def _named_only(ident: SgNode) -> bool:
    """``ident`` names no variable: an attribute's name, a keyword's, a parameter's, or a
    definition's (``f(eval=x)``, ``def f(eval=False)``, ``def eval(…)``)."""
    parent = ident.parent()
    if parent is None:
        return False
    kind = parent.kind()
    if kind == "attribute":
        return (attr := parent.field("attribute")) is not None and key(attr) == key(ident)
    if kind in ("parameters", "lambda_parameters", "typed_parameter", "list_splat_pattern",
                "dictionary_splat_pattern"):
        return True  # the parameter's own name (an annotation is inside a `type` node)
    return kind in ("keyword_argument", "function_definition", "class_definition",
                    "default_parameter", "typed_default_parameter") and \
        (named := parent.field("name")) is not None and key(named) == key(ident)


def _aliases_of(use: SgNode) -> list[str]:
    """Names a runner taken as a value (``use``) is bound to: ``run = exec``,
    ``(run := b.exec)``, ``def f(run=exec)``, the names ``from builtins import exec as run``
    binds."""
    if use.kind() == "import_from_statement":
        out = []
        for item in use.field_children("name"):
            alias = item.field("alias") if item.kind() == "aliased_import" else None
            name = item.field("name") if alias is not None else item
            if name is not None and name.text() in _RUNNER_NAMES:
                out.append((alias or name).text())
        return out
    outer = use
    while (parent := outer.parent()) is not None and parent.kind() in (
            "parenthesized_expression", "conditional_expression", "boolean_operator"):
        outer = parent
    if parent is None:
        return []
    field = {"assignment": ("right", "left"), "named_expression": ("value", "name"),
             "default_parameter": ("value", "name"),
             "typed_default_parameter": ("value", "name")}.get(parent.kind())
    if field is None or (value := parent.field(field[0])) is None or \
            key(value) != key(outer) or (target := parent.field(field[1])) is None:
        return []
    return [t.text() for t, _ in flatten_targets(target) if t.kind() == "identifier"]


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


_HEADED = ("if_statement", "while_statement", "for_statement", "with_statement",
           "match_statement")
"""Compound statements that evaluate a header before their body (``Facts.raises``)."""
_CONSTANT_TEXT = re.compile(r"""[0-9'"\[{]|\(\s*\)|\b(?:None|True|False)\b|\.\.\.""")
"""Text without any of these holds no constant a statement could raise on: not parsed."""


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


def _writes_of(node: SgNode, resolve: Resolve) -> Iterator[RawWrite]:
    """The attribute writes one node makes: assignment targets of every form, ``del``,
    ``setattr``/``delattr`` (also ``object.__setattr__``), ``x.__dict__["a"]``,
    ``vars(x)["a"]``, ``globals()["a"]``, the dict methods that write a namespace
    (``_namespace_mutation``), and the same through a name holding one (``resolve``;
    ``g |= kw`` updates it in place)."""
    kind = node.kind()
    if kind == "call":
        yield from _setattr_call(node)
        yield from _namespace_mutation(node, resolve)
        return
    if kind == "augmented_assignment" and (left := node.field("left")) is not None and \
            unparen(left).kind() == "identifier":
        for space in resolve(left, node):
            yield node, space, None, node.field("right")
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
        for obj, attr in _attribute_of(target, node, resolve):
            yield node, obj, attr, value


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


def _attribute_of(target: SgNode, where: SgNode,
                  resolve: Resolve) -> list[tuple[SgNode, str | SgNode]]:
    """(object, attribute name) a target (at ``where``) assigns: ``o.a``,
    ``o.__dict__["a"]``, ``vars(o)["a"]``; ``locals()["a"]`` / ``vars()["a"]`` /
    ``globals()["a"]`` with the call as the object (in a class body it is the class's
    namespace, at module level and for ``globals()`` the module's); ``g["a"]`` for each
    namespace the name ``g`` may hold (``resolve``). A subscript not made of constants is
    given as its node."""
    target = unparen(target)
    if target.kind() == "attribute":
        obj, attr = target.field("object"), target.field("attribute")
        return [(obj, attr.text())] if obj is not None and attr is not None else []
    if target.kind() != "subscript":
        return []
    holder, index = target.field("value"), target.field("subscript")
    if holder is None or index is None:
        return []
    constant = constant_name(index)
    name: str | SgNode = index if constant is None else constant
    return [(space, name) for space in _namespaces(holder, where, resolve)]


def _namespaces(holder: SgNode, where: SgNode, resolve: Resolve) -> list[SgNode]:
    """The objects whose namespace ``holder`` (read at ``where``) may be: the one it spells
    (``_namespace_of``), else those a name holds (``resolve``)."""
    space = _namespace_of(holder)
    return [space] if space is not None else resolve(holder, where)


def _setattr_call(call: SgNode) -> Iterator[RawWrite]:
    """``setattr(o, "a", v)``, ``delattr(o, "a")``, ``object.__setattr__(o, "a", v)`` and
    ``o.__setattr__("a", v)`` as writes of ``o.a`` (also ``builtins.setattr``, and a name
    spelled as a constant expression, ``"sam" + "ple"``; ``super().__setattr__("a", v)``
    writes the instance, the method's first parameter: ``_super_instance``); a name not made
    of constants is given as its node. Arguments unpacked from a display are its items
    (``setattr(*(o, "a", v))``); an object unpacked from anything else is not known: the
    splat is given as the object, with any name."""
    fn, args = call.field("function"), call.field("arguments")
    if fn is None or args is None:
        return
    items = _call_items(args)
    if _builtin(fn) in ("setattr", "delattr"):
        obj_items = items
    elif fn.kind() == "attribute" and (attr := fn.field("attribute")) is not None and \
            attr.text() in ("__setattr__", "__delattr__"):
        holder = fn.field("object")
        if holder is None:
            return
        instance = _super_instance(holder)
        obj_items = items if _builtin(holder) in ("object", "type") else [
            instance if instance is not None else holder, *items]
    else:
        return
    if not obj_items:
        return
    if obj_items[0].kind() in _SPLATS:  # setattr(*args): any attribute of any object
        yield call, obj_items[0], None, None
        return
    if len(obj_items) < 2:
        return
    if obj_items[1].kind() in _SPLATS:  # setattr(C, *pair): a name and a value not read
        yield call, obj_items[0], None, None
        return
    constant = constant_name(obj_items[1])
    yield (call, obj_items[0], obj_items[1] if constant is None else constant,
           obj_items[2] if len(obj_items) > 2 else None)


def _call_items(args: SgNode) -> list[SgNode]:
    """A call's arguments, those unpacked from a display of items replaced by its items
    (``f(*(a, b))`` is ``f(a, b)``); any other ``*x`` / ``**x`` stays as it is."""
    out: list[SgNode] = []
    for item in named_items(args.children()):
        inner = named_items(item.children()) if item.kind() == "list_splat" else []
        shown = unparen(inner[0]) if len(inner) == 1 else None
        if shown is not None and shown.kind() in ("tuple", "list"):
            out += _call_items(shown)
        else:
            out.append(item)
    return out


def _super_instance(holder: SgNode) -> SgNode | None:
    """For ``super()`` (or ``super(C, obj)``), the instance it writes through: the first
    parameter of the function it is called in (or ``obj``), else None."""
    holder = unparen(holder)
    if holder.kind() != "call" or _builtin(holder.field("function")) != "super":
        return None
    args = holder.field("arguments")
    items = named_items(args.children()) if args is not None else []
    if len(items) == 2:
        return items[1]
    function = next((a for a in holder.ancestors() if a.kind() in _SCOPE_KINDS), None)
    params = function.field("parameters") if function is not None and \
        function.kind() == "function_definition" else None
    first = named_items(params.children())[:1] if params is not None else []
    if not first or items:
        return None
    if first[0].kind() == "identifier":
        return first[0]
    return next((c for c in first[0].children() if c.kind() == "identifier"), None)


def _namespace_mutation(call: SgNode, resolve: Resolve) -> Iterator[RawWrite]:
    """``ns.update(…)``, ``ns.setdefault("a", v)``, ``ns.pop("a")``… (``_MUTATORS``) on a
    namespace (``_namespaces``; also ``dict.update(ns, …)``, and ``operator.setitem(ns, "a",
    v)`` / ``delitem``, however ``operator`` is named): a write of each key named, or of any
    name (``clear``, ``update`` of anything but keywords and a display of constant keys; the
    value given is what ``attached`` reads)."""
    fn, args = call.field("function"), call.field("arguments")
    if fn is None or args is None:
        return
    items = _call_items(args)
    named = fn.field("attribute") if fn.kind() == "attribute" else fn
    method = _ITEM_FUNCTIONS.get(named.text()) if named is not None else None
    holder: SgNode | None
    if method is not None:  # operator.setitem(ns, k, v): the namespace comes first
        holder = None
    elif fn.kind() == "attribute" and named is not None and named.text() in _MUTATORS:
        method, holder = named.text(), fn.field("object")
        if holder is None:
            return
        if _builtin(holder) == "dict" or "".join(holder.text().split()) == "operator":
            holder = None  # dict.update(globals(), …), operator.__setitem__(ns, …)
    else:
        return
    if holder is None:
        if not items or items[0].kind() in (*_SPLATS, "keyword_argument"):
            return
        holder, items = items[0], items[1:]
    spaces = _namespaces(holder, call, resolve)
    for name, value in _keys_written(method, items) if spaces else []:
        for space in spaces:
            yield call, space, name, value


_ITEM_FUNCTIONS = {"setitem": "__setitem__", "delitem": "__delitem__", "ior": "__ior__"}
"""``operator``'s functions that write an item of their first argument, as its method."""


def _keys_written(method: str, items: list[SgNode]) -> list[tuple[str | SgNode | None,
                                                                  SgNode | None]]:
    """(key, value) for each key a dict method called with ``items`` binds or deletes: the
    first argument of a ``_KEYED`` one (a node when not made of constants), each keyword and
    each constant key of a display given to ``update`` / ``__ior__`` (``update(a=1)``,
    ``update({"a": 1})``), else one of any name (None)."""
    first = items[0] if items and items[0].kind() not in (*_SPLATS, "keyword_argument") \
        else None
    if method in _KEYED:
        if first is None:
            return [(None, None)]
        constant = constant_name(first)
        value = items[1] if method in ("setdefault", "__setitem__") and len(items) > 1 else None
        return [(first if constant is None else constant, value)]
    if method not in ("update", "__ior__"):
        return [(None, None)]
    named: list[tuple[str | SgNode | None, SgNode | None]] = []
    for item in items:
        if item.kind() == "keyword_argument" and (k := item.field("name")) is not None:
            named.append((k.text(), item.field("value")))
        elif item.kind() == "dictionary" and (pairs := _constant_pairs(item)) is not None:
            named += pairs
        else:
            return [(None, first)]
    return named


def _constant_pairs(display: SgNode) -> list[tuple[str | SgNode | None, SgNode | None]] | None:
    """(key, value) of a dict display whose every key is a constant string, else None."""
    out: list[tuple[str | SgNode | None, SgNode | None]] = []
    for pair in named_items(display.children()):
        k, v = pair.field("key"), pair.field("value")
        name = constant_name(k) if pair.kind() == "pair" and k is not None else None
        if name is None:
            return None
        out.append((name, v))
    return out


def _namespace_of(holder: SgNode) -> SgNode | None:
    """The object whose attributes a dict is: ``x`` for ``x.__dict__`` / ``vars(x)``, the call
    itself for ``locals()`` / ``vars()`` / ``globals()`` (the namespace being run, or the
    module's); None for any other dict."""
    holder = unparen(holder)
    while holder.kind() == "named_expression" and (value := holder.field("value")) is not None:
        holder = unparen(value)  # (d := self.__dict__).update(…): the namespace itself
    if holder.kind() == "attribute":
        attr = holder.field("attribute")
        return holder.field("object") if attr is not None and attr.text() == "__dict__" else None
    if holder.kind() != "call":
        return None
    args = holder.field("arguments")
    items = named_items(args.children()) if args is not None else []
    name = _builtin(holder.field("function"))
    if name == "vars" and len(items) == 1 and items[0].kind() not in _SPLATS:
        return items[0]
    return holder if name in ("vars", "locals", "globals") and not items else None


_NAME_ATTRIBUTES = frozenset({"__name__", "__qualname__", "__module__"})
"""Attributes of a class that are only its names: reading them changes nothing."""


def class_hook_use(facts: Facts, hook: SgNode, parameter: int = 0,
                   implicit: frozenset[str] = frozenset({"@classmethod"}),
                   instance: int | None = None) -> SgNode | None:
    """Where an ``__init_subclass__`` binding (``hook``: the statement ``Facts.final``
    gives) may replace attributes of the class it is called for, or None when it cannot.
    The same for a ``__set_name__`` (``parameter=1``: ``(self, owner, name)``, no
    decorator ``implicit``), which gets the class being created as ``owner``.

    The hook gets the new class as its first parameter; it can only change that class's
    methods through it (a write naming the class itself is found by
    ``Facts.attribute_binding``). So the hook is harmless when every use of that
    parameter is one of: a read of a name attribute (``cls.__name__``, ``__qualname__``,
    ``__module__``), the whole value stored into a subscript (the registry idiom
    ``registry[cls.__name__] = cls``), or an argument of ``super().__init_subclass__(…)``
    (a same-file base's hook is read on its own), or the value a container method stores
    (``registry.append(cls)``, ``.add(cls)``, ``.insert(i, cls)``: ``_STORING``), or, for a
    ``__set_name__`` (``instance``: the place of its ``self``), the whole value stored on the
    instance (``self.owner = owner``: harmless as the class is created). Any other
    use (``cls.x = …``, ``setattr(cls, …)``, ``vars(cls)``, ``cls.__dict__``, passing it to
    any other call, an alias ``c = cls``) may replace them: the hook
    itself is returned when it is not a plain ``def`` (``classmethod(lambda c: …)``,
    one bound from outside the body, a decorator other than ``@classmethod``) or has no
    plain first parameter, since what it runs is not read."""
    definition = hook
    if hook.kind() == "decorated_definition":
        definition = hook.field("definition") or hook
        if any("".join(d.text().split()) not in implicit
               for d in hook.children() if d.kind() == "decorator"):
            return hook
    params = definition.field("parameters") if definition.kind() == "function_definition" \
        else None
    wanted = named_items(params.children())[parameter:parameter + 1] if params is not None \
        else []
    body = definition.field("body")
    name = _parameter_name(wanted[0]) if wanted else None
    if body is None or name is None:
        return hook
    selves = named_items(params.children())[instance:instance + 1] \
        if params is not None and instance is not None else []
    self_name = _parameter_name(selves[0]) if selves else None
    return next((n for n in body.find_all(kind="identifier")
                 if n.text() == name and not _harmless_class_use(n, facts, self_name)), None)


def _harmless_class_use(node: SgNode, facts: Facts, self_name: str | None = None) -> bool:
    """An identifier that is no use of the variable (an attribute's or keyword's name), or a
    use ``class_hook_use`` accepts (``self_name``: the hook's instance parameter, on which
    storing the class whole is harmless)."""
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
        if obj is None or key(obj) != key(node) or attribute is None or target:
            return False
        return attribute.text() in _NAME_ATTRIBUTES or _storing_into(parent, facts)
    if kind == "keyword_argument":
        name = parent.field("name")
        if name is not None and key(name) == key(node):
            return True  # f(cls=…): the keyword, not the variable
        parent = parent.parent() or parent
        kind = parent.kind()
    if kind == "assignment":
        left, right = parent.field("left"), parent.field("right")
        stored = unparen(left) if left is not None else None
        holder = stored.field("object") if stored is not None and \
            stored.kind() == "attribute" else None
        return right is not None and key(right) == key(node) and stored is not None and (
            stored.kind() == "subscript" or (
                holder is not None and self_name is not None and
                unparen(holder).kind() == "identifier" and unparen(holder).text() == self_name))
    if kind == "argument_list":
        call = parent.parent()
        function = call.field("function") if call is not None else None
        return function is not None and (
            "".join(function.text().split()) == "super().__init_subclass__"
            or _stored(function, named_items(parent.children()), node, facts))
    return False


_STORING = {"append": 0, "appendleft": 0, "add": 0, "insert": 1, "setdefault": 1}
"""Container methods that store a value, and the place of the value among two arguments
(``insert(i, x)``, ``setdefault(k, x)``) or alone (``append(x)``)."""


def _stored(function: SgNode, items: list[SgNode], node: SgNode,
            facts: Facts) -> bool:
    """``registry.append(cls)`` and the like (``_STORING``): ``node`` is the whole value a
    container method stores, as ``registry[k] = cls`` stores it, and the container is one
    whose method is the builtin's (``Facts.builtin_container``): a same-file ``class Reg`` with
    ``def append(self, c): c.sample = None`` is not a registry."""
    method = function.field("attribute") if function.kind() == "attribute" else None
    receiver = function.field("object") if method is not None else None
    place = _STORING.get(method.text()) if method is not None else None
    return place is not None and receiver is not None and len(items) == place + 1 and \
        key(items[place]) == key(node) and facts.builtin_container(receiver)


def _storing_into(container: SgNode, facts: Facts) -> bool:
    """``container`` (``cls.registry``) is the receiver of a storing method
    (``cls.registry.append(…)``, ``_STORING``) and certainly a builtin container
    (``Facts.builtin_container``): reading it there runs no code of the class."""
    method = container.parent()
    if method is None or method.kind() != "attribute" or \
            (name := method.field("attribute")) is None or name.text() not in _STORING:
        return False
    call = method.parent()
    return call is not None and call.kind() == "call" and \
        (fn := call.field("function")) is not None and key(fn) == key(method) and \
        facts.builtin_container(container)


_NAMESPACE_WORDS = frozenset({"globals", "__globals__", "modules", "exec", "eval", "vars", "locals"})
"""Names through which code may rebind a module-level name without assigning it."""

_CONTAINER_TYPES = frozenset({"list", "set", "dict"})
"""Builtins that make a container whose storing methods only store."""
_COLLECTIONS = frozenset({"defaultdict", "OrderedDict", "deque"})
"""``collections`` types that make one."""


def _class_definitions(statements: list[SgNode]) -> list[SgNode]:
    """The class definitions among binding statements (through their decorators)."""
    return [d for stmt in statements
            if (d := stmt.field("definition") if stmt.kind() == "decorated_definition"
                else stmt) is not None and d.kind() == "class_definition"]


_DISPLAYS = ("list", "tuple", "set", "dictionary", "expression_list")
"""Container displays: one with an element that is not unpacked has at least one item."""
_LITERAL_DISPLAYS = ("list", "tuple", "set", "expression_list")
"""Displays whose items are what iterating them gives (not a dict's pairs)."""
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
        if (text := _dotted(item)) is not None:
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


def _alias_pair(where: SgNode, target: SgNode, value: SgNode) -> AliasPair | None:
    """One binding as ``_alias_pairs`` keeps it: its target can be named (a name or a dotted
    name) and its value names something (or may be ``type(self)``)."""
    target = unparen(target)
    if target.kind() not in ("identifier", "attribute"):
        return None
    maybe = _may_be(value)
    texts = frozenset(t for v in maybe if (t := _dotted(v)) is not None)
    mentions = texts | _mentions(value)
    if not mentions and not any(v.kind() == "call" for v in maybe):
        return None
    return AliasPair(where, target, unparen(value), texts, mentions)


_COMPREHENSIONS = ("list_comprehension", "set_comprehension", "dictionary_comprehension",
                   "generator_expression")
"""Expressions whose body runs once per pass of their ``for`` clauses."""
_DEFAULTED: Any = {"rule": {"any": [{"kind": "default_parameter"},
                                     {"kind": "typed_default_parameter"}]}}
"""Parameters with a default value: ``C=Cls`` binds ``C`` to it unless the caller passes one."""
_NAMES: Any = {"rule": {"any": [{"kind": "identifier"}, {"kind": "attribute"}]}}


def _may_be(value: SgNode) -> list[SgNode]:
    """What ``value`` may evaluate to, as far as its form shows: an arm of a conditional
    expression, an operand of ``or`` / ``and``, the value of ``:=``, else itself."""
    value = unparen(value)
    kind = value.kind()
    if kind == "conditional_expression":
        parts = named_items(value.children())
        if len(parts) == 3:
            return [*_may_be(parts[0]), *_may_be(parts[2])]
    if kind == "boolean_operator":
        left, right = value.field("left"), value.field("right")
        if left is not None and right is not None:
            return [*_may_be(left), *_may_be(right)]
    if kind == "named_expression" and (inner := value.field("value")) is not None:
        return _may_be(inner)
    return [value]


def _dotted(node: SgNode) -> str | None:
    """``a.b.c`` without spaces when ``node`` is a name or a chain of attributes of names."""
    if node.kind() not in ("identifier", "attribute"):
        return None
    text = "".join(node.text().split())
    return text if all(part.isidentifier() for part in text.split(".")) else None


def _mentions(value: SgNode) -> frozenset[str]:
    """The dotted names ``value`` reads whole: not a callee (``Cls()`` is what the call
    returns), nor a ``default_factory=Cls`` (a field's factory: the field holds what calling
    it returns), not the object of an attribute (``Cls.helper`` is another thing), not an
    attribute's or a keyword's own name."""
    out: set[str] = set()
    seen: set[Key] = set()
    for node in [unparen(value), *value.find_all(_NAMES)]:
        if key(node) in seen:
            continue
        seen.add(key(node))
        parent = node.parent()
        if parent is not None:
            pk = parent.kind()
            field = "function" if pk == "call" else "name" if pk == "keyword_argument" else None
            if pk == "attribute":
                if any((f := parent.field(n)) is not None and key(f) == key(node)
                       for n in ("object", "attribute")):
                    continue
            elif field is not None and (f := parent.field(field)) is not None and \
                    key(f) == key(node):
                continue
            if pk == "keyword_argument" and (k := parent.field("name")) is not None and \
                    k.text() == "default_factory":
                continue
        text = _dotted(node)
        if text is not None:
            out.add(text)
    return frozenset(out)


def _assigned_pairs(node: SgNode) -> Iterator[tuple[SgNode, SgNode]]:
    """(target, value) for each target ``node`` binds, paired with its own value where the
    form shows it (``assigned`` with its plain forms: ``C = D = Cls``, a tuple target against
    a display of the same length, ``+=``, ``:=``, ``with … as``, a ``for`` target with what
    it runs over), and, for one name run over a display, each element."""
    for _where, target, value in assigned(node, plain=True):
        yield target, value
    if node.kind() in ("for_statement", "for_in_clause") and \
            (left := node.field("left")) is not None and \
            (right := node.field("right")) is not None and \
            unparen(left).kind() == "identifier" and unparen(right).kind() in _DISPLAYS:
        for item in named_items(unparen(right).children()):
            if item.kind() not in _SPLATS:
                yield unparen(left), item


def _forwarded(function: SgNode, name: str) -> bool:
    """``name`` is the attribute-name parameter of a ``__setattr__`` / ``__delattr__``."""
    title, params = function.field("name"), function.field("parameters")
    if function.kind() != "function_definition" or title is None or params is None or \
            title.text() not in ("__setattr__", "__delattr__"):
        return False
    second = named_items(params.children())[1:2]
    return bool(second) and _parameter_name(second[0]) == name


def _parameter_name(param: SgNode) -> str | None:
    """The name a plain parameter binds (``name``, ``name: str``), else None."""
    if param.kind() == "identifier":
        return param.text()
    if param.kind() != "typed_parameter":
        return None
    inner = [c for c in param.children() if c.kind() == "identifier"][:1]
    return inner[0].text() if inner else None


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


_PARAMETERS = ("parameters", "lambda_parameters", "default_parameter", "typed_parameter",
               "typed_default_parameter", "list_splat_pattern", "dictionary_splat_pattern")
"""Nodes whose own name (not a default value or annotation) is a parameter."""
_TARGET_SHAPES = ("pattern_list", "tuple_pattern", "list_pattern", "list_splat_pattern",
                  "tuple", "list", "parenthesized_expression", "expression_list")
"""Nodes a target name may sit in below the statement that binds it (``a, (b, *c) = …``)."""


def _binds_here(ident: SgNode) -> bool:
    """The identifier is a place that binds its variable: an assignment, ``for`` or ``with``
    target of any form, ``:=``, ``except … as``, a parameter, a definition's name, a
    ``global``/``nonlocal`` declaration (its value may come from elsewhere), and, read
    loosely (a binding read where there is none only loses a resolution), any name of an
    import or a ``case`` pattern."""
    node, parent = ident, ident.parent()
    while parent is not None and parent.kind() in _TARGET_SHAPES:
        node, parent = parent, parent.parent()
    if parent is None:
        return False
    kind = parent.kind()
    if kind in ("assignment", "augmented_assignment", "for_statement", "for_in_clause"):
        return (left := parent.field("left")) is not None and key(left) == key(node)
    if kind in ("named_expression", "function_definition", "class_definition"):
        return (name := parent.field("name")) is not None and key(name) == key(node)
    if kind in ("as_pattern_target", "global_statement", "nonlocal_statement"):
        return True
    if kind in _PARAMETERS:
        return key(node) == key(parent.field("name") or node)
    return any(a.kind() in ("import_statement", "import_from_statement", "case_pattern")
               for a in ident.ancestors())


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


def _name_chain(tree: ast.expr | None) -> tuple[str | None, list[str]]:
    """``a.b.c`` as (``a``, [``b``, ``c``]); (None, …) when the chain does not start
    with a plain name (a call, a subscript: an expression, not a name to look up)."""
    dotted: list[str] = []
    while isinstance(tree, ast.Attribute):
        dotted.insert(0, tree.attr)
        tree = tree.value
    return (tree.id, dotted) if isinstance(tree, ast.Name) else (None, dotted)
