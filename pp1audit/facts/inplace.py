"""Code that changes a value in place, without binding its name: what an ``in_place: true``
rule (``T = $V`` under ``not`` / ``every``) adds to the assignments of ``T``.

A claim that the logits sampled are the logits masked, or that the processed logits
reach the sampler unchanged, is broken as surely by ``logits.copy_(other)``,
``torch.Tensor.zero_(logits)``, ``logits[:] = 0`` or ``f(x, out=logits)`` as by
``logits = other``, and a pattern on the assignment sees none of them (mutating the PP1
files found each). Separate because it is a plain reading of syntax, one pass over a
region, that the matcher asks only for rules that say the value, not the binding, counts
(``self.draft_logits`` stays None unless …: writing into the tensor does not bind it).

Read from the syntax alone, on the safe side: a method whose name ends in one ``_``
(torch's convention: ``div_``, ``copy_``, ``masked_fill_``) or that mutates a builtin
container changes its object; a view of a name (``x[i]``, ``x.view(…)``, ``x.T``,
``x.data``) is that name; a local bound to a name or to a view of it (``row =
logits[i]``), anywhere in the region, is that name too, so an in-place change through
it (``row += bias``: in place on a tensor) counts as one of the name, even when the local
was bound to something else in between."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pp1audit.facts.shapes import _may_be
from pp1audit.nodespans import end_of, start_of
from pp1audit.syntaxtree import flatten_targets, named_items, unparen

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Iterator

    from ast_grep_py import SgNode

Change = tuple["SgNode", "SgNode", "SgNode"]
"""(where, changed, change): the statement or call that changes a value in place, the
node naming the value changed (a name or attribute chain, as written at ``where`` or in
the alias's binding), and the code that changes it (what ``$V`` captures)."""

_CONTAINER_METHODS = frozenset({
    "append", "extend", "insert", "remove", "pop", "clear", "reverse", "update",
    "setdefault", "popitem", "discard", "difference_update", "intersection_update",
    "symmetric_difference_update", "__setitem__", "__delitem__", "__setattr__",
    "__delattr__"})
"""Methods of builtin containers (and the item/attribute protocol) that change their
object. ``sort`` and ``add`` are left out: on a tensor they return a new one."""

_VIEW_METHODS = frozenset({
    "view", "view_as", "narrow", "select", "expand", "expand_as", "unsqueeze", "squeeze",
    "transpose", "permute", "t", "flatten", "unflatten", "reshape", "diagonal", "detach",
    "as_strided", "unfold", "movedim", "moveaxis", "swapaxes", "swapdims", "contiguous",
    "__getitem__"})
"""Tensor methods whose result may share the tensor's storage: writing into it writes
into the tensor (``reshape`` / ``contiguous`` copy only when they must)."""

_VIEW_ATTRIBUTES = frozenset({"data", "T", "mT", "H", "mH", "real", "imag"})
"""Tensor attributes that are views of the tensor (``x.data = y`` replaces its values)."""

_OPERATOR_FUNCTIONS = frozenset({
    "setitem", "delitem", "iadd", "iand", "iconcat", "ifloordiv", "ilshift", "imod",
    "imul", "imatmul", "ior", "ipow", "irshift", "isub", "itruediv", "ixor"})
"""``operator`` functions that change their first argument (on a mutable value)."""

_CLASS_ATTRIBUTE_CALLS = ("setattr", "delattr", "object.__setattr__", "object.__delattr__")
"""Calls that write an attribute of their first argument."""


def in_place_method(name: str) -> bool:
    """``name`` changes the object it is called on: torch's trailing ``_`` (not a dunder),
    a builtin container's mutator, ``__setitem__`` / ``__i<op>__``."""
    if name.startswith("__") and name.endswith("__"):
        return name in _CONTAINER_METHODS or (name.startswith("__i") and
                                              name[3:-2] in _IN_PLACE_OPERATORS)
    return (name.endswith("_") and not name.endswith("__") and len(name) > 1) or \
        name in _CONTAINER_METHODS


_IN_PLACE_OPERATORS = frozenset({
    "add", "and", "concat", "floordiv", "lshift", "mod", "mul", "matmul", "or", "pow",
    "rshift", "sub", "truediv", "xor"})
"""The ``<op>`` of ``__i<op>__`` methods (``x.__iadd__(y)`` is ``x += y``)."""


def base_of(node: SgNode) -> SgNode:
    """The value a view is of: ``logits`` for ``(logits[:, :n].view(-1)).data``; ``node``
    itself when it is no view."""
    node = unparen(node)
    while True:
        kind = node.kind()
        inner: SgNode | None = None
        if kind in ("named_expression", "subscript"):  # (row := logits[0]), logits[0]
            inner = node.field("value")
        elif kind == "attribute":
            attr = node.field("attribute")
            if attr is not None and attr.text() in _VIEW_ATTRIBUTES:
                inner = node.field("object")
        elif kind == "call":
            fn = node.field("function")
            if fn is not None and fn.kind() == "attribute" and \
                    (attr := fn.field("attribute")) is not None and attr.text() in _VIEW_METHODS:
                inner = fn.field("object")
        if inner is None:
            return node
        node = unparen(inner)


def _bases(node: SgNode) -> list[SgNode]:
    """The values ``node`` may be a view of: each arm of a conditional, each operand of
    ``or`` / ``and`` (``_may_be``), through views (``base_of``)."""
    return [base_of(m) for m in _may_be(node)]


def _first_argument(call: SgNode) -> SgNode | None:
    args = call.field("arguments")
    items = named_items(args.children()) if args is not None else []
    return items[0] if items and items[0].kind() not in (
        "keyword_argument", "list_splat", "dictionary_splat") else None


def _is_namespace(node: SgNode) -> bool:
    """``node`` names a module or class, not a value (``torch.Tensor``, ``torch.nn.init``,
    ``list``, ``operator``): a method called on it changes its first argument instead."""
    text = "".join(node.text().split())
    parts = text.split(".")
    if not all(p.isidentifier() for p in parts):
        return False
    if len(parts) > 1 and parts[-1] in _VIEW_ATTRIBUTES:
        return False  # `logits.T`, `x.H`: a view of a value, capitalised as torch names it
    return parts[0] in ("torch", "operator", "list", "dict", "set", "bytearray", "object") \
        or parts[-1][:1].isupper()


def _call_changes(call: SgNode) -> Iterator[SgNode]:
    """The values a call changes in place (their nodes as written in it)."""
    fn = call.field("function")
    if fn is None:
        return
    fn = unparen(fn)
    text = "".join(fn.text().split())
    name = text.rpartition(".")[2]
    first = _first_argument(call)
    if fn.kind() == "attribute" and in_place_method(name):
        obj = fn.field("object")
        if obj is not None and _is_namespace(obj):
            if first is not None:
                yield first
        elif obj is not None:
            yield obj
    elif first is not None and (
            (fn.kind() == "identifier" and in_place_method(name) and not name.startswith("__"))
            or text in _CLASS_ATTRIBUTE_CALLS
            or (text.removeprefix("operator.") in _OPERATOR_FUNCTIONS
                and (text.startswith("operator.") or fn.kind() == "identifier"))):
        yield first
    args = call.field("arguments")
    for item in named_items(args.children()) if args is not None else []:
        if item.kind() == "keyword_argument" and (kw := item.field("name")) is not None \
                and kw.text() == "out" and (value := item.field("value")) is not None:
            value = unparen(value)
            yield from (named_items(value.children()) if value.kind() in ("tuple", "list")
                        else [value])


def _store_changes(stmt: SgNode) -> Iterator[SgNode]:
    """The values an assignment, augmented assignment or ``del`` writes into (``x[i] =``,
    ``x.data =``, ``del x[i]``): the object of each subscript/attribute target; and what a
    ``del`` drops (``del x``, ``del self.x``), which no assignment pattern matches either."""
    if stmt.kind() == "delete_statement":
        targets = [t for item in named_items(stmt.children())
                   for t, _ in flatten_targets(unparen(item))]
    else:
        left = stmt.field("left")
        targets = [t for t, _ in flatten_targets(left)] if left is not None else []
    for target in targets:
        target = unparen(target)
        if stmt.kind() == "delete_statement" and target.kind() in ("identifier", "attribute"):
            yield target  # del T: its value dropped (`del self._draft_prob_req_ids`)
        if target.kind() == "subscript":
            inner = target.field("value")
        elif target.kind() == "attribute":
            inner = target.field("object")
        else:
            continue
        if inner is not None:
            yield inner


_CHANGING: Any = {"rule": {"any": [{"kind": k} for k in (
    "call", "assignment", "augmented_assignment", "delete_statement", "for_statement")]}}
"""Nodes that may change a value in place, or bind a local to one."""


def in_place_changes(region: SgNode) -> list[Change]:
    """Each in-place change in ``region`` (nested functions included: they may be called),
    in source order: once as written, once per value a local changed holds (``row =
    logits[i]; row += b`` changes ``logits``), and once per local holding a value changed
    after it was bound (``kept = logits; logits.zero_()`` changes ``kept``; before the
    binding, the local held something else: DSpark's ``buf.index_copy_(…); logits = buf``)."""
    direct: list[Change] = []
    augmented: list[SgNode] = []
    aliases: list[_Alias] = []
    for node in region.find_all(_CHANGING):
        kind = node.kind()
        if kind == "call":
            direct += [(node, b, node) for v in _call_changes(node) for b in _bases(v)]
            continue
        left, right = node.field("left"), node.field("right")
        if kind != "for_statement":
            direct += [(node, b, node) for v in _store_changes(node) for b in _bases(v)]
        if kind == "augmented_assignment" and left is not None:
            augmented.append(node)
        elif kind in ("assignment", "for_statement") and left is not None and right is not None \
                and unparen(left).kind() == "identifier":
            while right is not None and right.kind() == "assignment":
                right = right.field("right")  # a = b = logits: both hold it
            held = base_of(right) if right is not None else None  # for row in logits: a view
            if held is not None and held.kind() in ("identifier", "attribute"):
                aliases.append((unparen(left), held, node))
    for node in region.find_all(kind="named_expression"):
        name, value = node.field("name"), node.field("value")
        if name is not None and value is not None and \
                (of := base_of(value)).kind() in ("identifier", "attribute"):
            aliases.append((name, of, node))
    changes = list(direct)
    for node in augmented:
        left = node.field("left")
        if left is not None and unparen(left).kind() == "identifier":
            changes += [(node, held, node) for held in _held(unparen(left).text(), aliases)]
    for where, changed, change in direct:
        if changed.kind() == "identifier":
            changes += [(where, held, change) for held in _held(changed.text(), aliases)]
        text = _text(changed)
        changes += [(where, name, change) for name, held, bound in aliases
                    if _text(held) == text and start_of(where) >= end_of(bound)]
    return sorted(changes, key=lambda c: start_of(c[0]))


_Alias = tuple["SgNode", "SgNode", "SgNode"]
"""(name, held, binding): a local, the value (or the value a view is of) it is bound to,
and the statement binding it."""


def _text(node: SgNode) -> str:
    return "".join(node.text().split())


def _held(name: str, aliases: list[_Alias]) -> list[SgNode]:
    """The values the local ``name`` may hold (as written where it was bound), through
    other locals too (``a = logits; b = a``)."""
    out: list[SgNode] = []
    seen = {name}
    todo = [name]
    while todo:
        current = todo.pop()
        for alias, held, _bound in aliases:
            if alias.text() != current:
                continue
            out.append(held)
            if held.kind() == "identifier" and held.text() not in seen:
                seen.add(held.text())
                todo.append(held.text())
    return out
