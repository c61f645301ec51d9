"""Code the file runs from text: every use of the builtin ``exec`` / ``eval``, however it
is reached (``b.exec`` after ``import builtins as b``, ``getattr(x, "exec")``,
``from builtins import exec as run``, a name bound to one), and only the builtin (a name
the file binds where it is read is not).

Separate because such code may bind any name of the module or of a class: the other
parts read what the file shows, and this one finds where that reading stops."""

from __future__ import annotations

import symtable
from bisect import bisect_left
from typing import TYPE_CHECKING, Any

from pp1audit.facts.aliases import Aliases, AliasPair
from pp1audit.facts.reachability import Reachability
from pp1audit.facts.shapes import _binds_here, _may_be, _named_only, _namespace_of
from pp1audit.nodespans import span_of, start_of
from pp1audit.syntaxtree import (
    Key,
    constant_name,
    flatten_targets,
    key,
    line,
    named_items,
    unparen,
    within,
)

if TYPE_CHECKING:  # pragma: no cover
    from ast_grep_py import SgNode


class CodeRunners(Aliases, Reachability):
    """Uses of the builtin ``exec`` / ``eval``, which run code the file does not show."""

    def __init__(self, root: SgNode, source: str) -> None:
        super().__init__(root, source)
        self._runners: tuple[list[int], list[SgNode]] | None = None
        self._builtins: frozenset[str] | None = None
        self._scope_tables: dict[Key, symtable.SymbolTable | None] = {}
        self._child_tables: dict[Key | None, dict[tuple[str, int], list[symtable.SymbolTable]]] = {}

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
                           key=start_of)
            self._runners = ([start_of(n) for n in found], found)
        starts, runners = self._runners
        first, last = span_of(region)
        return [n for n in runners[bisect_left(starts, first):
                                   bisect_left(starts, last)] if within(n, region)]

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


def _symbol(table: symtable.SymbolTable, name: str) -> symtable.Symbol | None:
    """``name`` in a symbol table, None when the scope does not use it."""
    try:
        return table.lookup(name)
    except KeyError:
        return None


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
