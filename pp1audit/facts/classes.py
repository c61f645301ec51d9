"""Class building, the classes: which same-file classes a class statement derives from
(and which derive from it), which bases are not read, and whether its metaclass builds
the class from its body as written.

Separate because a class Python creates is more than its body: its bases and its
metaclass take part, and they are resolved as the class statement reads them (the
binding in force where it runs)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pp1audit.facts.shapes import _dotted, _name_chain
from pp1audit.facts.writes import Writes
from pp1audit.syntaxtree import (
    key,
    line,
    named_items,
    parse_expression,
    short,
    unparen,
)

if TYPE_CHECKING:  # pragma: no cover
    from ast_grep_py import SgNode


_PLAIN_METACLASSES = frozenset({"abc.ABCMeta", "enum.EnumMeta", "enum.EnumType"})
"""Metaclasses of the standard library that build the class from its body as written."""


class ClassBases(Writes):
    """A class statement's same-file bases and subclasses, and its metaclass."""

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

    def _members(self, found: list[SgNode], rest: str) -> list[SgNode]:
        """The class definitions ``Outer.Inner`` names: ``rest`` (``Inner``, dotted) read in
        the classes ``found`` (``Outer``), each part the binding its body ends with."""
        for part in rest.split(".") if rest else []:
            found = _class_definitions([stmt for s in found
                                        for stmt in self.final(s, part).values()])
        return found

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


def _class_definitions(statements: list[SgNode]) -> list[SgNode]:
    """The class definitions among binding statements (through their decorators)."""
    return [d for stmt in statements
            if (d := stmt.field("definition") if stmt.kind() == "decorated_definition"
                else stmt) is not None and d.kind() == "class_definition"]


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
