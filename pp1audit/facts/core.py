"""The base of the file facts: the parsed file, which scope owns a node, and the file's
index of names (every identifier, and those that bind a variable).

Separate because every other part of ``pp1audit.facts`` builds on it: the scope a node
runs in and where a name is bound are the vocabulary in which dead code, bindings,
writes and hooks are all answered."""

from __future__ import annotations

from bisect import bisect_left
from typing import TYPE_CHECKING

from pp1audit.facts.shapes import _SCOPE_KINDS, _binds_here
from pp1audit.nodespans import span_of, start_of
from pp1audit.syntaxtree import (
    Key,
    key,
    within,
)

if TYPE_CHECKING:  # pragma: no cover
    from ast_grep_py import SgNode


class FactsCore:
    """The parsed file, its scopes and its index of names (the base of ``Facts``)."""

    def __init__(self, root: SgNode, source: str) -> None:
        """``source`` is the text ``root`` was parsed from, not the root node's own text,
        which starts at the first token (leading blank lines dropped): the stdlib tables
        built from it would number lines differently from the tree."""
        self.root = root
        self.source = source
        self._binder_memo: dict[tuple[Key, str], list[SgNode]] = {}
        self._names_index: dict[str, tuple[list[int], list[SgNode]]] | None = None
        self._nearest: dict[Key, SgNode | None] = {}

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

    def _nearest_class(self, node: SgNode) -> SgNode | None:
        """The innermost class definition holding ``node`` (memoised per node)."""
        k = key(node)
        if k not in self._nearest:
            self._nearest[k] = next(
                (a for a in node.ancestors() if a.kind() == "class_definition"), None)
        return self._nearest[k]

    def _occurrences(self, name: str, region: SgNode) -> list[SgNode]:
        """Every identifier of ``region`` spelled ``name``: one scan of the file, memoised,
        in source order, so a region's share is found by bisection (a name read in each of
        thousands of functions is not filtered thousands of times)."""
        if self._names_index is None:
            self._names_index = {}
            for ident in self.root.find_all(kind="identifier"):
                starts, nodes = self._names_index.setdefault(ident.text(), ([], []))
                starts.append(start_of(ident))
                nodes.append(ident)
        starts, nodes = self._names_index.get(name, ([], []))
        first, last = span_of(region)
        return nodes[bisect_left(starts, first):bisect_left(starts, last)]

    def _binders(self, region: SgNode, name: str) -> list[SgNode]:
        """Every identifier of ``region`` that binds the variable ``name`` (``_binds_here``),
        memoised: read from the file's index of names, not by scanning the region again."""
        memo = (key(region), name)
        hit = self._binder_memo.get(memo)
        if hit is None:
            hit = self._binder_memo[memo] = [i for i in self._occurrences(name, region)
                                             if _binds_here(i)]
        return hit
