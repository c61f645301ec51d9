"""Decorators and imports: what a decorator is (imported code, or something the file
writes), which module-level imports bind a name, and the stdlib symbol table that says
whether a name is imported, bound otherwise or an unshadowed builtin.

Separate because it reads the file through the stdlib (``ast``, ``symtable``) rather
than the syntax tree, to answer one question: is a name another module's code."""

from __future__ import annotations

import ast
import builtins
import symtable
from typing import TYPE_CHECKING

from pp1audit.facts.core import FactsCore
from pp1audit.facts.shapes import _name_chain
from pp1audit.syntaxtree import (
    line,
    named_items,
    parse_expression,
)

if TYPE_CHECKING:  # pragma: no cover
    from ast_grep_py import SgNode


_REPLACING = frozenset({
    "typing.overload", "typing_extensions.overload", "contextlib.contextmanager",
    "contextlib.asynccontextmanager", "functools.partial", "functools.partialmethod",
    "functools.cached_property"})
"""Imported decorators known to put something else in place of the function's body
(``overload`` a stub that raises, ``contextmanager`` a factory that does not run it)."""


class Imports(FactsCore):
    """Decorators and imports, read through the stdlib's ``ast`` and ``symtable``."""

    def __init__(self, root: SgNode, source: str) -> None:
        super().__init__(root, source)
        self._symbols: symtable.SymbolTable | None = None
        self._module: ast.Module | None = None

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
