"""Names of a class: every spelling by which the file may denote a class (its path, an
alias ``C = Cls`` to a fixed point, ``cls`` / ``type(self)`` in its methods) or an
instance of it (``self``, ``s = self``), and where each holds.

Separate because both the attribute writes (which class a write hits) and the code
runners (which names hold the builtins module) follow the same bindings of a name to a
value (``AliasPair``), read once per file here."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pp1audit.facts.imports import Imports
from pp1audit.facts.shapes import _DISPLAYS, _NAMES, _SPLATS, _builtin, _dotted, _may_be
from pp1audit.nodespans import span_of, start_of
from pp1audit.syntaxtree import (
    ASSIGNING,
    Key,
    assigned,
    key,
    named_items,
    unparen,
    within,
)

if TYPE_CHECKING:  # pragma: no cover
    from ast_grep_py import SgNode


Alias = tuple[str, "SgNode | None"]
"""A name (dotted, without spaces) that may denote a class or an instance, and the function it
holds in (None: anywhere)."""


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
    not ``Cls()`` or ``Cls.x``: ``_WholeReads``): what a class alias follows."""


class Aliases(Imports):
    """The names the file may denote a class or its instance by (``_class_names``)."""

    def __init__(self, root: SgNode, source: str) -> None:
        super().__init__(root, source)
        self._aliases: dict[Key, tuple[list[Alias], list[Alias]]] = {}
        self._pairs: list[AliasPair] | None = None
        self._by_value: dict[tuple[str, bool], tuple[list[int], list[AliasPair]]] | None = None
        self._by_class: dict[Key, list[AliasPair]] | None = None
        self._declared: dict[tuple[Key, str], frozenset[str]] = {}
        self._bindings_made: list[tuple[SgNode, SgNode, SgNode]] = []

    def _own_reference(self, obj: SgNode, where: SgNode, cls: SgNode, instance: bool) -> bool:
        """``obj`` is how a method of ``cls`` (holding ``where``) names its class (``cls``,
        ``type(self)``, ``self.__class__``) or, with ``instance``, its instance. Callers
        give the class nearest ``where`` (``_nearest_class``): only its methods' ``cls`` and
        ``self`` name it."""
        obj = unparen(obj)

        def a_self(text: str) -> bool:  # asked last: finding the method walks the ancestors
            return text == "self" or text in self._first_parameters(where, cls)

        if where.kind() == "type_alias_statement":  # `type(self).name = …` (_misread_type_call)
            return obj.text() == "cls" or a_self(obj.text())
        if obj.kind() == "identifier":
            return obj.text() == "cls" or (instance and a_self(obj.text()))
        if obj.kind() == "attribute":
            inner, attr = obj.field("object"), obj.field("attribute")
            return inner is not None and attr is not None and attr.text() == "__class__" and \
                a_self(unparen(inner).text())
        if obj.kind() == "call":
            fn, args = obj.field("function"), obj.field("arguments")
            items = named_items(args.children()) if args is not None else []
            return _builtin(fn) == "type" and len(items) == 1 and \
                (items[0].text() == "cls" or a_self(items[0].text()))
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

    def instance_names(self, cls: SgNode) -> list[Alias]:
        """The other names an instance of ``cls`` has in its methods (``s = self``,
        ``(s := self)``), each with the function it holds in: what a rule on ``self.<attr>``
        must also read (``matcher._self_spellings``)."""
        return self._class_names(cls)[1]

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
            reads = _WholeReads(self.root)
            self._pairs = [p for where, target, value in found
                           if (p := _alias_pair(where, target, value, reads)) is not None]
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
            for pair in sorted(self._alias_pairs(), key=lambda p: start_of(p.where)):
                start = start_of(pair.where)
                for k in [*((t, False) for t in pair.mentions), *((t, True) for t in pair.maybe)]:
                    starts, pairs = self._by_value.setdefault(k, ([], []))
                    starts.append(start)
                    pairs.append(pair)
        starts, pairs = self._by_value.get(value, ([], []))
        if scope is None:
            return pairs
        first, last = span_of(scope)
        return [p for p in pairs[bisect_left(starts, first):
                                 bisect_left(starts, last)] if within(p.where, scope)]


def _alias_pair(where: SgNode, target: SgNode, value: SgNode,
                reads: _WholeReads) -> AliasPair | None:
    """One binding as ``_alias_pairs`` keeps it: its target can be named (a name or a dotted
    name) and its value names something (or may be ``type(self)``)."""
    target = unparen(target)
    if target.kind() not in ("identifier", "attribute"):
        return None
    maybe = _may_be(value)
    texts = frozenset(t for v in maybe if (t := _dotted(v)) is not None)
    mentions = texts | reads.within(value)
    if not mentions and not any(v.kind() == "call" for v in maybe):
        return None
    return AliasPair(where, target, unparen(value), texts, mentions)


_DEFAULTED: Any = {"rule": {"any": [{"kind": "default_parameter"},
                                     {"kind": "typed_default_parameter"}]}}
"""Parameters with a default value: ``C=Cls`` binds ``C`` to it unless the caller passes one."""


class _WholeReads:
    """The dotted names a value reads whole, for every value of the file at once: not a
    callee (``Cls()`` is what the call returns), nor a ``default_factory=Cls`` (a field's
    factory: the field holds what calling it returns), not the object of an attribute
    (``Cls.helper`` is another thing), not an attribute's or a keyword's own name.

    Whether a name is read whole depends on its parent alone, so the file's names are
    found by one search, in source order, and a value's share by bisection. The names not
    read whole are found from their parents' fields: asking each name for its parent costs
    tree-sitter a walk down from the root, and asking each of a file's thousands of values
    to search itself, then each of its names for its parent, took most of the time spent
    reading aliases."""

    def __init__(self, root: SgNode) -> None:
        skip: set[SgNode | None] = set()  # a field a node lacks adds None: harmless
        for call in root.find_all(kind="call"):
            skip.add(call.field("function"))
        for argument in root.find_all(kind="keyword_argument"):
            name = argument.field("name")
            skip.add(name)
            if name is not None and name.text() == "default_factory":
                skip.add(argument.field("value"))
        self._starts: list[int] = []
        self._reads: list[tuple[int, str]] = []  # (end, dotted text), as _starts orders
        for node in root.find_all(_NAMES):  # an attribute comes before its parts
            if node.kind() == "attribute":
                skip.add(node.field("object"))
                skip.add(node.field("attribute"))
            if node in skip:
                continue
            text = _dotted(node)
            if text is not None:
                start, end = span_of(node)
                self._starts.append(start)
                self._reads.append((end, text))

    def within(self, value: SgNode) -> frozenset[str]:
        """The names ``value`` (or a part of it) reads whole."""
        first, last = span_of(value)
        return frozenset(text for end, text in self._reads[
            bisect_left(self._starts, first):bisect_left(self._starts, last)] if end <= last)


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
