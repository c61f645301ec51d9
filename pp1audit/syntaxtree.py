"""What a tree-sitter node says as Python: identity, literal values, constant
conditions, if-chains and the names an assignment or definition binds.

These are the matcher's vocabulary over ast-grep's ``SgNode``, free of any rule
or pattern: ``patterns`` (matching), ``filefacts`` (scopes, dead code, final
bindings) and ``matcher`` (evaluating rules) all read code through them, so
they live below all three. Pure functions of the tree; anything cached is
cached by text."""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Iterable, Iterator
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
    """The truth value of a condition made of constants, or None when it depends on
    anything at run time or is too costly to work out.

    ``False``, ``0``, ``not 1``, ``False and x`` (``x`` is never evaluated), but also
    ``1 == 2``, ``0 * 1``, ``2 > 1 > 0``, ``"a" in ("a", "b")``, ``None is None``,
    ``f"" or ()``: a test spelled as an expression of constants is as dead (or as
    certain) as a literal one, and an edit that hides code under ``if 1 == 2:`` must
    not count it. The expression is folded with Python's own operators on the
    constants' values (never ``eval``), within bounds (``_Folder``), so a hostile
    ``10**10**10`` is refused, not computed."""
    try:
        tree = ast.parse("(\n" + text + "\n)", mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    return _Folder(len(text)).truth(tree.body)


class _Refuse(Exception):
    """Folding stops: not made of constants, not certain, or too costly."""


MAX_INT_BITS = 4096
"""The largest integer a fold may produce: constants in real tests are small; a
``10**10**10`` in a hostile file would take minutes and gigabytes."""

MAX_WEIGHT = 4096
"""The largest value (items, characters, 64-bit words) an operator may produce."""

_SINGLETONS = (None, True, False, Ellipsis)
"""Objects whose identity Python guarantees: ``is`` is certain only against these."""


def _cmp(op: ast.cmpop, a: Any, b: Any) -> Any:
    """One comparison with Python's semantics; ``is`` only where its answer is certain."""
    if isinstance(op, (ast.Is, ast.IsNot)):
        if not any(a is s or b is s for s in _SINGLETONS):
            raise _Refuse  # `1 is 1`, `() is ()`: an implementation detail, not a constant
        return (a is b) == isinstance(op, ast.Is)
    if isinstance(op, (ast.In, ast.NotIn)):
        return (a in b) == isinstance(op, ast.In)
    return _COMPARE[type(op)](a, b)


_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt,
    ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
}


_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
    ast.Pow: operator.pow, ast.LShift: operator.lshift, ast.RShift: operator.rshift,
    ast.BitAnd: operator.and_, ast.BitOr: operator.or_, ast.BitXor: operator.xor,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.Not: operator.not_, ast.USub: operator.neg, ast.UAdd: operator.pos,
    ast.Invert: operator.invert,
}
_NUMBERS = (int, float, complex)  # bool is an int


class _Folder:
    """Folds one expression of constants to its value, with bounded work.

    Each value is carried with its weight (``_weigh``); an operator whose result
    would pass ``MAX_WEIGHT`` or ``MAX_INT_BITS`` is refused before it runs (``*``,
    ``**``, ``<<``) or after (the others cannot blow up), and every comparison or
    operator spends its operands' weight from a budget proportional to the text, so
    that no text costs more than a small multiple of its own parsing. Only
    builtin values ever occur (the constants' and what operators make of them), so
    the operators run no user code."""

    def __init__(self, size: int) -> None:
        self.budget = 16 * MAX_WEIGHT + 64 * size

    def truth(self, node: ast.expr) -> bool | None:
        try:
            return bool(self.fold(node)[0])
        except _Refuse:
            return None
        except Exception:  # 1 / 0, 1 < "a", {[]}, too deep: not a constant test
            return None

    def spend(self, cost: int) -> None:
        self.budget -= cost
        if self.budget < 0:
            raise _Refuse

    def _weigh(self, value: Any) -> int:
        """Size of a value in work units: what comparing or copying it costs."""
        if isinstance(value, int):
            return 1 + value.bit_length() // 64
        if isinstance(value, (str, bytes)):
            return 1 + len(value) // 8
        if isinstance(value, (tuple, list, set, frozenset)):
            self.spend(len(value))
            return 1 + sum(self._weigh(v) for v in value)
        if isinstance(value, dict):
            self.spend(len(value))
            return 1 + sum(self._weigh(k) + self._weigh(v) for k, v in value.items())
        return 1

    def _result(self, value: Any) -> tuple[Any, int]:
        """An operator's result, refused when it is larger than any constant test needs."""
        if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
            raise _Refuse
        weight = self._weigh(value)
        if weight > MAX_WEIGHT:
            raise _Refuse
        return value, weight

    def fold(self, node: ast.expr) -> tuple[Any, int]:
        """(value, weight) of a constant expression; ``_Refuse`` for anything else."""
        self.spend(1)
        if isinstance(node, ast.Constant):
            return node.value, self._weigh(node.value)
        if isinstance(node, ast.JoinedStr):  # f"..." without fields is a string
            parts = [v.value for v in node.values if isinstance(v, ast.Constant)]
            if len(parts) != len(node.values) or not all(isinstance(v, str) for v in parts):
                raise _Refuse  # a field: its value is known at run time only
            text = "".join(str(v) for v in parts)
            return text, self._weigh(text)
        if isinstance(node, (ast.Tuple, ast.List, ast.Set, ast.Dict)):
            return self._display(node)
        if isinstance(node, ast.BoolOp):
            return self._boolop(node)
        if isinstance(node, ast.Compare):
            return self._compare(node)
        if isinstance(node, ast.UnaryOp):
            value, weight = self.fold(node.operand)
            self.spend(weight)
            return self._result(_UNARY[type(node.op)](value))
        if isinstance(node, ast.BinOp):
            return self._binop(node)
        if isinstance(node, ast.IfExp):
            test = self.fold(node.test)[0]
            return self.fold(node.body if test else node.orelse)
        raise _Refuse  # names, calls, attributes, subscripts, walruses, ...

    def _display(self, node: ast.Tuple | ast.List | ast.Set | ast.Dict) -> tuple[Any, int]:
        if isinstance(node, ast.Dict):
            if any(k is None for k in node.keys):
                raise _Refuse  # {**x}
            keys = [self.fold(k) for k in node.keys if k is not None]
            values = [self.fold(v) for v in node.values]
            weight = 1 + sum(w for _, w in keys) + sum(w for _, w in values)
            self.spend(weight)
            return {k: v for (k, _), (v, _) in zip(keys, values, strict=True)}, weight
        if any(isinstance(e, ast.Starred) for e in node.elts):
            raise _Refuse  # [*x]
        items = [self.fold(e) for e in node.elts]
        weight = 1 + sum(w for _, w in items)
        self.spend(weight)
        values = [v for v, _ in items]
        kind: type = {ast.Tuple: tuple, ast.List: list, ast.Set: set}[type(node)]
        return kind(values), weight

    def _boolop(self, node: ast.BoolOp) -> tuple[Any, int]:
        """``and``/``or`` with short-circuit: operands after the deciding one are never
        evaluated (``False and x`` is False whatever ``x`` is); an unknown operand
        before it leaves the whole unknown (``x and False``: ``x`` is tested twice)."""
        is_or = isinstance(node.op, ast.Or)
        result: tuple[Any, int] = (None, 1)
        for operand in node.values:
            result = self.fold(operand)
            if bool(result[0]) == is_or:
                return result
        return result

    def _compare(self, node: ast.Compare) -> tuple[Any, int]:
        """``a < b < c``: pairwise, stopping at the first false one (as Python does)."""
        left, lw = self.fold(node.left)
        result: Any = True
        for op, comparator in zip(node.ops, node.comparators, strict=True):
            right, rw = self.fold(comparator)
            self.spend(lw + rw)
            result = _cmp(op, left, right)
            if not result:
                break
            left, lw = right, rw
        return self._result(result)

    def _binop(self, node: ast.BinOp) -> tuple[Any, int]:
        (a, aw), (b, bw) = self.fold(node.left), self.fold(node.right)
        op = type(node.op)
        if op not in _BINARY:
            raise _Refuse  # `@`
        self.spend(aw + bw)
        if op is ast.Mod and not isinstance(a, _NUMBERS):
            raise _Refuse  # "%*d" % (10**9, 1): string formatting can make any size
        self._check_growth(op, a, aw, b, bw)
        return self._result(_BINARY[op](a, b))

    @staticmethod
    def _check_growth(op: type[ast.operator], a: Any, aw: int, b: Any, bw: int) -> None:
        """Refuse, before computing it, a result that would be too large to compute."""
        if op is ast.Mult:
            if isinstance(a, int) and isinstance(b, int):
                if a.bit_length() + b.bit_length() > MAX_INT_BITS:
                    raise _Refuse
            elif isinstance(b, int) and b > 0 and aw * b > MAX_WEIGHT:
                raise _Refuse  # "a" * 10**12
            elif isinstance(a, int) and a > 0 and bw * a > MAX_WEIGHT:
                raise _Refuse
        elif op is ast.Pow and isinstance(a, int) and isinstance(b, int) and b > 0 \
                and abs(a) > 1 and (b > MAX_INT_BITS or (a.bit_length() - 1) * b > MAX_INT_BITS):
            raise _Refuse  # 10 ** 10 ** 10 (a ** b has more than (bits(a) - 1) * b bits)
        elif op is ast.LShift and isinstance(a, int) and isinstance(b, int) and a != 0 \
                and b > 0 and a.bit_length() + b > MAX_INT_BITS:
            raise _Refuse  # 1 << 10 ** 9


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
