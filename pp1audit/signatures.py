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
A definition's own positions are read by ``signature_of`` (``parameter:``
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


@dataclass(frozen=True)
class Signature:
    """A definition's parameters as a call binds them."""

    positional: tuple[str, ...]
    """Names passed by position, in order (``self`` included)."""
    positional_only: int
    """How many of them come before a ``/``: a keyword does not bind those (``d=`` then
    lands in a ``**kw``)."""
    keyword_only: tuple[str, ...]

    def by_keyword(self, name: str) -> bool:
        """``name=`` binds the parameter ``name``."""
        return name in self.keyword_only or name in self.positional[self.positional_only:]


_SKIPPED = frozenset({"comment", "line_continuation"})
"""Named nodes of an argument or parameter list that are neither (a ``#`` comment, a
backslash ending a line)."""


def signature_of(definition: SgNode) -> Signature | None:
    """The parameters of a function definition, or None when ``definition`` is not one.
    A ``/`` marker makes those before it positional-only; ``*args`` and a bare ``*`` end
    the positional ones."""
    fn = function_of(definition)
    params = fn.field("parameters") if fn is not None else None
    if params is None:
        return None
    positional: list[str] = []
    keyword_only: list[str] = []
    only = 0
    ended = False
    for p in params.children():
        kind = p.kind()
        if kind == "positional_separator":
            only = len(positional)
        elif kind in _ENDS_POSITIONAL or (kind == "typed_parameter" and any(
                c.kind() in _ENDS_POSITIONAL for c in p.children())):  # `*args: T`, `**kw: T`
            ended = True
        elif kind in _POSITIONAL_KINDS:
            name = _name_of(p)
            if name is not None:
                (keyword_only if ended else positional).append(name)
    return Signature(tuple(positional), only, tuple(keyword_only))


def _decorator_names(fn: SgNode) -> set[str]:
    """The decorators on ``fn`` as written, comments aside (``staticmethod``, ``builtins.staticmethod``)."""
    holder = fn.parent()
    if holder is None or holder.kind() != "decorated_definition":
        return set()
    out = set()
    for d in holder.children():
        if d.kind() == "decorator":
            expr = next((c for c in d.children() if c.is_named() and c.kind() not in _SKIPPED), None)
            if expr is not None:
                out.add("".join(expr.text().split()))
    return out


_STATIC = frozenset({"staticmethod", "builtins.staticmethod"})
_CLASS = frozenset({"classmethod", "builtins.classmethod"})
_IMPLICIT_STATIC = frozenset({"__new__"})
"""Python makes these static: ``super().__new__(cls, …)`` passes ``cls`` itself."""
_IMPLICIT_CLASS = frozenset({"__init_subclass__", "__class_getitem__"})


def _class_of(fn: SgNode) -> SgNode | None:
    """The class whose body defines ``fn`` (through an ``if`` or ``try`` in it), or None."""
    for outer in fn.ancestors():
        if outer.kind() in ("function_definition", "lambda"):
            return None
        if outer.kind() == "class_definition":
            return outer
    return None


def _bound_first(fn: SgNode, callee: SgNode | None) -> bool:
    """The call (its function ``callee``) does not pass ``fn``'s first parameter: a method
    called on an instance (``self.m(…)``, ``super().m(…)``), a classmethod on anything. Not
    a ``@staticmethod`` (nor ``__new__``), and not a plain method called through its class
    by name (``C.m(self, …)`` passes ``self`` itself)."""
    cls = _class_of(fn)
    if cls is None:
        return False
    name = fn.field("name")
    title = name.text() if name is not None else ""
    decorators = _decorator_names(fn)
    if decorators & _STATIC or title in _IMPLICIT_STATIC:
        return False
    if decorators & _CLASS or title in _IMPLICIT_CLASS:
        return True
    owner = callee.field("object") if callee is not None and callee.kind() == "attribute" else None
    cls_name = cls.field("name")
    return not (owner is not None and cls_name is not None and owner.text() == cls_name.text())


def place_in(definition: SgNode, name: str, callee: SgNode | None = None) -> int | None:
    """Where a call of ``definition`` (whose function is ``callee``) passes ``name`` by
    position (0: the call's first argument; a bound ``self`` not counted), or None when it
    cannot (keyword-only, or no such parameter: then only ``name=`` binds it)."""
    fn = function_of(definition)
    sig = signature_of(definition)
    if fn is None or sig is None or name not in sig.positional:
        return None
    return sig.positional.index(name) - (1 if _bound_first(fn, callee) else 0)


def arguments_of(nodes: list[SgNode], multi: bool) -> tuple[SgNode, set[tuple[int, int, str]] | None] | None:
    """The arguments a capture's nodes are, and which of them were captured (None: all
    count): a ``$$$ARGS`` of ``f($$$ARGS)`` (``multi``) is arguments of that call; a single
    ``$X`` that is a call is asked about its own arguments. None: neither. The arguments are
    an ``argument_list``, or the bare generator of ``sum(x for x in xs)``."""
    if not nodes:
        return None
    if multi:
        holder = nodes[0].parent()
        if holder is not None and (holder.kind() == "argument_list" or (
                holder.kind() == "call" and nodes[0].kind() == "generator_expression")):
            return (holder if holder.kind() == "argument_list" else nodes[0]), {key(n) for n in nodes}
        return None
    if len(nodes) != 1:
        return None
    node = nodes[0]
    while node.kind() == "parenthesized_expression":
        inner = [c for c in node.children() if c.is_named() and c.kind() not in _SKIPPED]
        if len(inner) != 1:
            return None
        node = inner[0]
    args = node.field("arguments") if node.kind() == "call" else None
    if args is not None and args.kind() in ("argument_list", "generator_expression"):
        return args, None
    return None


def called(args: SgNode) -> SgNode | None:
    """The function of the call whose arguments are ``args`` (``self.m`` of ``self.m(…)``)."""
    call = args.parent()
    return call.field("function") if call is not None and call.kind() == "call" else None


def passed_for(args: SgNode, captured: set[tuple[int, int, str]] | None, name: str,
               at: int | None, by_keyword: bool = True) -> Passed:
    """What the call whose arguments are ``args`` passes for the parameter ``name`` at
    position ``at`` (None: keyword only), among the ``captured`` arguments; ``by_keyword``:
    ``name=`` binds it (not a positional-only parameter)."""
    if args.kind() == "generator_expression":  # `f(x for x in xs)`: one positional argument
        counts = captured is None or key(args) in captured
        return Passed((args,) if at == 0 and counts else (), False)
    values: list[SgNode] = []
    unknown = False
    position = 0
    splat_before = False
    for arg in args.children():
        if not arg.is_named() or arg.kind() in _SKIPPED:
            continue
        counts = captured is None or key(arg) in captured
        kind = arg.kind()
        if kind == "keyword_argument":
            label, value = arg.field("name"), arg.field("value")
            if counts and by_keyword and label is not None and value is not None \
                    and label.text() == name:
                values.append(value)
        elif kind == "dictionary_splat":
            unknown = unknown or (counts and by_keyword)
        elif kind == "list_splat":
            splat_before = True
            if at is not None and position <= at:
                unknown = unknown or counts
        else:
            if at is not None and counts and position <= at and splat_before:
                unknown = True  # after a `*splat` it may land anywhere from here on
            elif at is not None and position == at and counts:
                values.append(arg)
            position += 1
    return Passed(tuple(values), unknown)
