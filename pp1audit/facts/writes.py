"""Attribute writes: every place the file binds or deletes an attribute (assignment
targets, ``setattr``, a namespace written through ``globals()`` / ``vars(x)`` /
``x.__dict__``), and which of them replace a class member, a module global or a
function's code from outside the class body.

Separate because Python looks an attribute up when it is used: a write anywhere in the
file may replace what a class body says, and every question about what a class holds
(the ``in:`` definition, its hooks, its metaclass) starts from this one list."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from pp1audit.facts.aliases import Aliases
from pp1audit.facts.bindings import Bindings
from pp1audit.facts.shapes import (
    _SCOPE_KINDS,
    _SPLATS,
    _builtin,
    _dotted,
    _may_be,
    _namespace_of,
    _parameter_name,
)
from pp1audit.facts.spelling import Spelling
from pp1audit.syntaxtree import (
    Key,
    assigned,
    constant_name,
    flatten_targets,
    key,
    named_items,
    unparen,
    within,
)

if TYPE_CHECKING:  # pragma: no cover
    from ast_grep_py import SgNode


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


_CODE_ATTRIBUTES = ("__code__", "__defaults__", "__kwdefaults__")
"""What a function object runs with: writing them changes its behaviour in place."""


Write = tuple["SgNode", "SgNode", "str | None", "SgNode | None"]
"""(the binding node, the object whose attribute it binds, the attribute, the value or None).

The attribute is None when the file does not say which: a name not made of constants
(``setattr(C, name, f)``) whose values are not visible (``Facts._spelled``), or a whole
namespace updated (``locals().update(…)``). Such a write may bind any attribute."""


RawWrite = tuple["SgNode", "SgNode", "str | SgNode | None", "SgNode | None"]
"""A ``Write`` as one node spells it: the attribute may still be the expression that computes
it (``Facts._resolved`` reads which names it can be)."""
Resolve = Callable[["SgNode", "SgNode"], "list[SgNode]"]
"""The namespaces a name read at a place may hold (``g = globals()`` … ``g[k] = v``): the
objects whose attributes writing through it binds, as ``_namespace_of`` gives them."""


class Writes(Bindings, Aliases, Spelling):
    """The file's attribute writes, and those that replace a class's or module's names."""

    def __init__(self, root: SgNode, source: str) -> None:
        super().__init__(root, source)
        self._writes: list[Write] | None = None
        self._raw_writes: list[RawWrite] | None = None
        self._spaces: dict[tuple[str, Key | None], list[SgNode]] | None = None
        self._class_texts: dict[str, bool] = {}

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

    def _spelled_writes(self) -> list[RawWrite]:
        """The attribute writes before a computed name is resolved to the values the file
        shows (``attribute_writes`` resolves them): for trusting a registry, a name the
        file computes is any name, since what it may hold at run time (a loop variable
        rebound by a called function's ``global``) is beyond a syntactic reading."""
        if self._raw_writes is None:
            self._raw_writes = [raw for node in self.root.find_all(_WRITING)
                                for raw in _writes_of(node, self._namespace_names)]
        return self._raw_writes


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


def _namespace_call(node: SgNode) -> bool:
    """``locals()`` or ``vars()``: the namespace of the code that runs it."""
    node = unparen(node)
    if node.kind() != "call":
        return False
    args = node.field("arguments")
    return _builtin(node.field("function")) in ("locals", "vars") and \
        not (args is not None and named_items(args.children()))


def _forwarded(function: SgNode, name: str) -> bool:
    """``name`` is the attribute-name parameter of a ``__setattr__`` / ``__delattr__``."""
    title, params = function.field("name"), function.field("parameters")
    if function.kind() != "function_definition" or title is None or params is None or \
            title.text() not in ("__setattr__", "__delattr__"):
        return False
    second = named_items(params.children())[1:2]
    return bool(second) and _parameter_name(second[0]) == name
