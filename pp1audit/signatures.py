"""Which argument of a call binds which parameter: calls and definitions read as Python binds them.

``has: draft_logits`` on a call's ``$$$ARGS`` says the name is *among* the arguments:
``rejection_sample(processed_logits, draft_sampled, draft_logits, …)`` has it, and
hands the draft logits to the parameter that expects the sampled ids. The audit's
claim is that they reach the ``draft_logits`` parameter, so a rule can ask for the
argument that binds it (``where: {A: {argument: …}}``): the keyword ``name=``, or the
positional argument at the parameter's place, taken from the manifest (``at: N``) or
from the definition the rule found (``of: DEF``, which keeps holding when a parameter
and its argument move together). A ``*splat`` before that place hides which argument
binds it (``unknown``); what is done with that is the matcher's direction to choose.
A definition's own positions are read by ``positional_parameters`` (``parameter:``
pins that a callee in another file takes the value at the place its callers pass it).

Pure functions of the tree, below the matcher."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from pp1audit.syntaxtree import key

if TYPE_CHECKING:  # pragma: no cover
    from ast_grep_py import SgNode

_POSITIONAL_KINDS = frozenset({"identifier", "typed_parameter", "default_parameter",
                               "typed_default_parameter"})
"""A parameter that may be passed by position (before any ``*`` / ``*args``)."""

_ENDS_POSITIONAL = frozenset({"list_splat_pattern", "keyword_separator",
                              "dictionary_splat_pattern"})
"""``*args``, a bare ``*`` and ``**kw``: no parameter after one is passed by position."""


@dataclass(frozen=True)
class Passed:
    """What a call passes for one parameter."""

    values: tuple[SgNode, ...]
    """The value nodes that bind it (a keyword's value; the positional argument itself)."""
    unknown: bool
    """A ``*splat`` (at or before the place) or ``**kw`` may bind it instead: not known
    from the text which argument does."""


def _name_of(param: SgNode) -> str | None:
    if param.kind() == "identifier":
        return param.text()
    named = param.field("name")
    if named is not None:
        return named.text()
    first = next((c for c in param.children() if c.kind() == "identifier"), None)
    return first.text() if first is not None else None


def function_of(node: SgNode) -> SgNode | None:
    """The function definition ``node`` is (a decorated one's inner ``def``), or None."""
    if node.kind() == "decorated_definition":
        node = node.field("definition") or node
    return node if node.kind() == "function_definition" else None


def positional_parameters(definition: SgNode) -> tuple[list[str], list[str]] | None:
    """(names passed by position, in order, ``self`` included; keyword-only names) of a
    function definition, or None when ``definition`` is not one. A ``/`` marker only
    separates; ``*args`` and a bare ``*`` end the positional ones."""
    fn = function_of(definition)
    params = fn.field("parameters") if fn is not None else None
    if params is None:
        return None
    positional: list[str] = []
    keyword_only: list[str] = []
    ended = False
    for p in params.children():
        kind = p.kind()
        if kind in _ENDS_POSITIONAL or (kind == "typed_parameter" and any(
                c.kind() in _ENDS_POSITIONAL for c in p.children())):  # `*args: T`, `**kw: T`
            ended = True
        elif kind in _POSITIONAL_KINDS:
            name = _name_of(p)
            if name is not None:
                (keyword_only if ended else positional).append(name)
    return positional, keyword_only


def _bound_first(fn: SgNode) -> bool:
    """A method called on its instance or class (``self.m(…)``): its first parameter is bound
    and is not among the call's arguments. A ``@staticmethod``'s is not."""
    holder = fn.parent()
    decorators: list[str] = []
    if holder is not None and holder.kind() == "decorated_definition":
        decorators = [d.text().lstrip("@").strip() for d in holder.children()
                      if d.kind() == "decorator"]
    if "staticmethod" in decorators:
        return False
    for outer in fn.ancestors():  # the class body, through an `if` or `try` in it
        if outer.kind() in ("function_definition", "lambda"):
            return False
        if outer.kind() == "class_definition":
            return True
    return False


def place_in(definition: SgNode, name: str) -> int | None:
    """Where a call of ``definition`` passes ``name`` by position (0: the call's first
    argument; a method's bound ``self`` not counted), or None when it cannot (keyword-only,
    or no such parameter: then only ``name=`` binds it)."""
    fn = function_of(definition)
    read = positional_parameters(definition)
    if fn is None or read is None or name not in read[0]:
        return None
    return read[0].index(name) - (1 if _bound_first(fn) else 0)


def arguments_of(nodes: list[SgNode]) -> tuple[SgNode, set[tuple[int, int, str]] | None] | None:
    """The argument list a capture's arguments belong to, and which of its arguments were
    captured (None: all count): ``$$$ARGS`` of ``f($$$ARGS)`` is arguments of that call;
    a single ``$X`` that is a call is asked about its own arguments. None: neither."""
    if not nodes:
        return None
    holder = nodes[0].parent()
    if holder is not None and holder.kind() == "argument_list":
        return holder, {key(n) for n in nodes}
    if len(nodes) == 1:
        node = nodes[0]
        while node.kind() == "parenthesized_expression":
            inner = [c for c in node.children() if c.is_named() and c.kind() != "comment"]
            if len(inner) != 1:
                return None
            node = inner[0]
        args = node.field("arguments") if node.kind() == "call" else None
        if args is not None and args.kind() == "argument_list":
            return args, None
    return None


def passed_for(args: SgNode, captured: set[tuple[int, int, str]] | None, name: str,
               at: int | None) -> Passed:
    """What the call whose argument list is ``args`` passes for the parameter ``name``
    at position ``at`` (None: keyword only), among the ``captured`` arguments."""
    values: list[SgNode] = []
    unknown = False
    position = 0
    splat_before = False
    for arg in args.children():
        if not arg.is_named() or arg.kind() == "comment":
            continue
        counts = captured is None or key(arg) in captured
        kind = arg.kind()
        if kind == "keyword_argument":
            label, value = arg.field("name"), arg.field("value")
            if counts and label is not None and value is not None and label.text() == name:
                values.append(value)
        elif kind == "dictionary_splat":
            unknown = unknown or counts
        elif kind == "list_splat":
            splat_before = True
            if at is not None and position <= at:
                unknown = unknown or counts
        else:
            if at is not None and position == at and counts:
                if splat_before:
                    unknown = True
                else:
                    values.append(arg)
            position += 1
    return Passed(tuple(values), unknown)
