"""Node shapes the file facts read in more than one place: what a name, a dotted name, a
builtin, a namespace or a constant is as tree-sitter spells it.

Separate because they are plain functions of one node (no file, no memo): every part of
the file facts (``pp1audit.facts``) reads code through them, and a part that owns a
helper alone keeps it in its own module."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from pp1audit.syntaxtree import (
    key,
    named_items,
    unparen,
)

if TYPE_CHECKING:  # pragma: no cover
    from ast_grep_py import SgNode


_SCOPE_KINDS = ("function_definition", "class_definition", "lambda")
"""Nodes whose body is a scope of its own: it runs when called, not in place."""


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


_DISPLAYS = ("list", "tuple", "set", "dictionary", "expression_list")
"""Container displays: one with an element that is not unpacked has at least one item."""


_SPLATS = ("list_splat", "dictionary_splat", "parenthesized_list_splat")
"""``*xs`` / ``**d`` in a display: may add nothing."""


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


_COMPREHENSIONS = ("list_comprehension", "set_comprehension", "dictionary_comprehension",
                   "generator_expression")
"""Expressions whose body runs once per pass of their ``for`` clauses."""


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


def _parameter_name(param: SgNode) -> str | None:
    """The name a plain parameter binds (``name``, ``name: str``), else None."""
    if param.kind() == "identifier":
        return param.text()
    if param.kind() != "typed_parameter":
        return None
    inner = [c for c in param.children() if c.kind() == "identifier"][:1]
    return inner[0].text() if inner else None


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


def _name_chain(tree: ast.expr | None) -> tuple[str | None, list[str]]:
    """``a.b.c`` as (``a``, [``b``, ``c``]); (None, …) when the chain does not start
    with a plain name (a call, a subscript: an expression, not a name to look up)."""
    dotted: list[str] = []
    while isinstance(tree, ast.Attribute):
        dotted.insert(0, tree.attr)
        tree = tree.value
    return (tree.id, dotted) if isinstance(tree, ast.Name) else (None, dotted)
