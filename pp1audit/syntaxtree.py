"""What a tree-sitter node says as Python: identity, literal values, constant
conditions, if-chains and the names an assignment or definition binds.

These are the matcher's vocabulary over ast-grep's ``SgNode``, free of any rule
or pattern: ``patterns`` (matching), ``filefacts`` (scopes, dead code, final
bindings) and ``matcher`` (evaluating rules) all read code through them, so
they live below all three. Pure functions of the tree; anything cached is
cached by text."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from ast_grep_py import SgNode


Key = tuple[int, int, str]


def key(node: SgNode) -> Key:
    """Identity of a node across the separate ``SgNode`` objects ast-grep hands out."""
    r = node.range()
    return (r.start.index, r.end.index, node.kind())


def line(node: SgNode) -> int:
    return node.range().start.line + 1


def short(node: SgNode, limit: int = 60) -> str:
    text = " ".join(node.text().split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def within(inner: SgNode, outer: SgNode) -> bool:
    a, b = inner.range(), outer.range()
    return b.start.index <= a.start.index and a.end.index <= b.end.index


def named_items(nodes: Iterable[SgNode]) -> list[SgNode]:
    """Captured nodes without punctuation and comments (``$$$ARGS`` keeps commas)."""
    return [n for n in nodes if n.is_named() and n.kind() != "comment"]


def unparen(node: SgNode) -> SgNode:
    """``((x))`` → ``x``: redundant parentheses do not change the code."""
    while node.kind() == "parenthesized_expression":
        inner = named_items(node.children())
        if len(inner) != 1:
            break
        node = inner[0]
    return node


# --- literals: compared by value -------------------------------------------------------


def literal(node: SgNode) -> tuple[type, object] | None:
    """(type, value) of a string/number literal node; None for anything else (f-strings too)."""
    kind = node.kind()
    if kind not in ("string", "concatenated_string", "integer", "float"):
        return None
    text = node.text()
    if kind == "integer" and text.isdigit() and text.isascii():
        return (int, int(text))  # the common cases without the compiler
    if kind == "string" and len(text) > 1 and text[0] == text[-1] == '"' and \
            not text.startswith('"""') and "\\" not in text:
        return (str, text[1:-1])
    try:  # parenthesised: an implicit concatenation may span lines
        value = ast.literal_eval("(" + text + ")")
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return (type(value), value)


@lru_cache(maxsize=1024)
def constant_truth(text: str) -> bool | None:
    """The truth value of a condition made of constants (``False``, ``0``, ``not 1``,
    ``False and x``), or None when it depends on anything at run time."""
    try:
        tree = ast.parse("(" + text + ")", mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None

    def value(node: ast.expr) -> bool | None:
        if isinstance(node, ast.Constant):
            return bool(node.value)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            inner = value(node.operand)
            return None if inner is None else not inner
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return bool(node.elts)
        if isinstance(node, ast.Dict):
            return bool(node.keys)
        if isinstance(node, ast.BoolOp):
            values = [value(v) for v in node.values]
            decisive = isinstance(node.op, ast.Or)  # `or` is decided by a True, `and` by a False
            for v in values:
                if v is decisive:
                    return decisive
                if v is None:
                    return None
            return not decisive
        return None

    return value(tree.body)


# --- conditions and bindings ---------------------------------------------------------------


def conjuncts(cond: SgNode) -> list[SgNode]:
    """``a and (b and c)`` → [a, b, c]; any other condition is its own single term."""
    cond = unparen(cond)
    op = cond.field("operator")
    if cond.kind() == "boolean_operator" and op is not None and op.text() == "and":
        left, right = cond.field("left"), cond.field("right")
        out = []
        for side in (left, right):
            if side is not None:
                out.extend(conjuncts(side))
        return out
    return [cond]


def branches(stmt: SgNode) -> list[tuple[SgNode | None, SgNode | None, SgNode]]:
    """(clause, test or None for ``else``, body) of an if/elif/else chain, in order."""
    out: list[tuple[SgNode | None, SgNode | None, SgNode]] = []
    body = stmt.field("consequence")
    if body is not None:
        out.append((None, stmt.field("condition"), body))
    for clause in stmt.children():
        if clause.kind() in ("elif_clause", "else_clause"):
            inner = next((c for c in clause.children() if c.kind() == "block"), None)
            if inner is not None:
                out.append((clause, clause.field("condition"), inner))
    return out


def flatten_targets(target: SgNode) -> Iterator[tuple[SgNode, bool]]:
    """Each name/attribute/subscript a target assigns, with True when it is a direct element
    (so that ``a, b = x, y`` can pair it with its value)."""
    kind = target.kind()
    if kind in ("pattern_list", "tuple_pattern", "list_pattern", "expression_list", "tuple",
                "list", "parenthesized_expression"):
        for item in named_items(target.children()):
            if item.kind() in ("list_splat_pattern", "list_splat"):
                for inner in named_items(item.children()):
                    yield from ((n, False) for n, _ in flatten_targets(inner))
            elif item.kind() in ("pattern_list", "tuple_pattern", "list_pattern", "tuple", "list"):
                yield from ((n, False) for n, _ in flatten_targets(item))
            else:
                yield item, True
    else:
        yield target, False


def assigned(node: SgNode) -> Iterator[tuple[SgNode, SgNode, SgNode]]:
    """(where, target, value) for each assignment ``node`` makes that a plain ``T = V``
    pattern does not match: tuple targets, ``+=``, ``for``/``with`` targets, ``:=``."""
    kind = node.kind()
    if kind == "assignment":
        left, right = node.field("left"), node.field("right")
        if left is None or right is None or node.field("type") is not None:
            return
        if left.kind() in ("identifier", "attribute", "subscript"):
            return  # the plain form: ast-grep matches it
        while right.kind() == "assignment":
            inner = right.field("right")
            if inner is None:
                break
            right = inner
        items = list(flatten_targets(left))
        values = named_items(right.children()) if right.kind() in (
            "expression_list", "tuple", "list") else []
        pair = len(values) == len(items) and all(direct for _, direct in items)
        for i, (target, _direct) in enumerate(items):
            yield node, target, values[i] if pair else right
    elif kind == "augmented_assignment":
        left, right = node.field("left"), node.field("right")
        if left is not None and right is not None:
            yield node, left, right
    elif kind in ("for_statement", "for_in_clause"):
        left, right = node.field("left"), node.field("right")
        if left is not None and right is not None:
            for target, _ in flatten_targets(left):
                yield (target if kind == "for_statement" else node), target, right
    elif kind == "as_pattern":
        parts = named_items(node.children())
        if len(parts) == 2 and parts[1].kind() == "as_pattern_target":
            for inner in named_items(parts[1].children()) or [parts[1]]:
                for target, _ in flatten_targets(inner):
                    yield node, target, parts[0]
    elif kind == "named_expression":
        name, value = node.field("name"), node.field("value")
        if name is not None and value is not None:
            yield node, name, value


ASSIGNING: Any = {"rule": {"any": [{"kind": k} for k in (
    "assignment", "augmented_assignment", "for_statement", "for_in_clause", "as_pattern",
    "named_expression")]}}


def bound_names(stmt: SgNode) -> list[str]:
    """Names a simple statement binds in its scope (definitions, assignments, imports, del)."""
    kind = stmt.kind()
    if kind == "decorated_definition":
        inner = stmt.field("definition")
        return bound_names(inner) if inner is not None else []
    if kind in ("function_definition", "class_definition", "type_alias_statement"):
        name = stmt.field("name")
        return [name.text()] if name is not None else []
    names: list[str] = []
    if kind == "expression_statement":
        for expr in named_items(stmt.children()):
            while expr.kind() in ("assignment", "augmented_assignment"):
                left, right = expr.field("left"), expr.field("right")
                if left is None or right is None:
                    break  # `x: int` declares, binds nothing
                names += [t.text() for t, _ in flatten_targets(left) if t.kind() == "identifier"]
                expr = right
    elif kind in ("import_statement", "import_from_statement"):
        for item in stmt.field_children("name"):
            if item.kind() == "aliased_import":
                alias = item.field("alias")
                names += [alias.text()] if alias is not None else []
            else:
                names.append(item.text().split(".")[0].strip())
    elif kind == "delete_statement":
        names += [n.text() for n in named_items(stmt.children()) if n.kind() == "identifier"]
    return names


def binding_statement(node: SgNode) -> SgNode | None:
    """The statement a match *is* when the match is a whole assignment or definition."""
    kind = node.kind()
    if kind in ("function_definition", "class_definition"):
        parent = node.parent()
        return parent if parent is not None and parent.kind() == "decorated_definition" else node
    if kind == "decorated_definition":
        return node
    if kind == "expression_statement":
        inner = named_items(node.children())
        return node if len(inner) == 1 and inner[0].kind() == "assignment" else None
    if kind == "assignment":
        parent = node.parent()
        while parent is not None and parent.kind() == "assignment":
            parent = parent.parent()
        return parent if parent is not None and parent.kind() == "expression_statement" else None
    return None
