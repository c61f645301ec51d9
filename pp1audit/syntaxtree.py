"""What a tree-sitter node says as Python: identity, literal values, constant
conditions, if-chains and the names an assignment or definition binds.

These are the matcher's vocabulary over ast-grep's ``SgNode``, free of any rule
or pattern: ``patterns`` (matching), ``facts`` (scopes, dead code, final
bindings) and ``matcher`` (evaluating rules) all read code through them, so
they live below all three. Pure functions of the tree; anything cached is
cached by text."""

from __future__ import annotations

import ast
import operator
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from pp1audit.nodespans import lines_of, span_of

if TYPE_CHECKING:  # pragma: no cover
    from ast_grep_py import SgNode


Key = tuple[int, int, str]


def parse_expression(text: str) -> ast.expr | None:
    """``text`` as one Python expression (a test, a decorator, a name spelled by
    constants), or None when it is not one. Wrapped in brackets on lines of their
    own, so a test written over several lines, or ending in a comment, still parses;
    whatever the parser raises on hostile text (too deep, too long) means "not one"."""
    try:
        return ast.parse("(\n" + text + "\n)", mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None


def key(node: SgNode) -> Key:
    """Identity of a node across the separate ``SgNode`` objects ast-grep hands out."""
    return (*span_of(node), node.kind())


def line(node: SgNode) -> int:
    return lines_of(node)[0]


def short(node: SgNode, limit: int = 60) -> str:
    return short_text(node.text(), limit)


def short_text(text: str, limit: int = 60) -> str:
    """``text`` on one line, cut to ``limit`` characters (for messages)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def within(inner: SgNode, outer: SgNode) -> bool:
    (a, b), (c, d) = span_of(inner), span_of(outer)
    return c <= a and b <= d


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


def constant_truth(text: str) -> bool | None:
    """Whether a test is certainly true or certainly false whenever it is tested, or
    None when that depends on anything at run time or is too costly to work out.

    ``False``, ``0``, ``not 1``, ``False and x`` (``x`` is never evaluated), but also
    ``1 == 2``, ``0 * 1``, ``2 > 1 > 0``, ``"a" in ("a", "b")``, ``None is None``,
    ``f"" or ()``: a test spelled as an expression of constants is as dead (or as
    certain) as a literal one, and an edit that hides code under ``if 1 == 2:`` must
    not count it. The expression is folded with Python's own operators on the
    constants' values (never ``eval``), within bounds (``_Folder``): a hostile
    ``10**10**10`` is never computed, but still known to be a non-zero int.

    Unknown operands (names, calls, ...) leave the test unknown unless Python's
    semantics decide it whatever they are (``_Folder.truth``): ``x and False``,
    ``x in ()``, ``not (x or True)``, ``__debug__ and False`` are false. An exception
    raised while testing (by ``x``'s ``__bool__``, ``__hash__``, a ``1 / 0``) runs
    neither the body nor anything after the statement, so it never makes a dead
    body live. The answer is for a test as ``if``/``elif``/``while``/``assert`` and
    the test of ``a if t else b`` evaluate it: CPython compiles its ``and``/``or``/
    ``not`` to jumps, asking each operand's truth once, so a ``__bool__`` that
    changes its answer on a second call cannot run ``if x and False:``'s body.

    Not cached here: ``facts.Facts.truth`` asks once per node of a file,
    whichever direction a rule reads it in."""
    tree = parse_expression(text)
    return None if tree is None else _Folder(len(text)).truth(tree)


def constant_name(node: SgNode) -> str | None:
    """The string a constant expression spells (``"a"``, ``"sam" "ple"``, ``"sam" + "ple"``,
    ``f"sample"`` without fields), else None: an attribute (or a keyword passed by
    ``**{…}``) named that way is named."""
    got = literal(node)
    if got is not None:
        return str(got[1]) if got[0] is str else None
    return constant_string(node.text())


def constant_string(text: str) -> str | None:
    """The string an expression of constants spells (``"sam" + "ple"``, ``f"sample"``,
    ``"s" * 2``), folded as ``constant_truth`` folds a test, within the same bounds;
    None for anything else: a name a ``setattr`` spells that way is named."""
    tree = parse_expression(text)
    if tree is None:
        return None
    try:
        value, _ = _Folder(len(text)).fold(tree)
    except Exception:  # not constant, too costly
        return None
    return value if isinstance(value, str) else None


def statement_raises(text: str) -> str | None:
    """The exception a statement certainly raises when it runs, named, or None: some part
    of it that is certainly evaluated whenever it runs (not the right of ``and`` / ``or``,
    an arm of ``a if t else b``, a lambda, a comprehension's body) is an expression of
    constants that raises (``print(1 / 0)``, ``if 1 / 0:``, ``(z := 1 / 0)``,
    ``f"{1 / 0}"``, ``x + [][0]``), calls a constant (``None()``), unpacks one into a
    target of another shape (``a, b = 1``), iterates one that is not iterable
    (``for _ in 1:``, ``[*None]``), enters one (``with 1:``) or sets an attribute or an
    item of one (``None.x = 1``). What comes before that part either completes or leaves
    the statement too: either way the statement never completes, and what follows it in
    its block never runs.

    ``text`` is a simple statement, or a compound statement's header closed by a body of
    ``pass``; an ``assert`` is never read (``python -O`` strips it). Folded as
    ``constant_truth`` folds a test, operands in Python's order of evaluation and within
    the same bounds (``_Certain``): a part not made of constants, or too costly to fold
    (``"a" * 10**12`` may or may not exhaust memory), is unknown. Only builtin values ever
    meet an operator, so the exception is the one Python raises."""
    try:
        with warnings.catch_warnings():  # `"\d"`: the file's to warn about, not ours
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    if len(tree.body) != 1:
        return None
    try:
        _Certain(len(text)).statement(tree.body[0])
    except _Refuse:  # not constant, too costly (the budget spent, too)
        return None
    except _RAISED as exc:
        return type(exc).__name__
    except Exception:  # RecursionError, MemoryError: the fold's own limits, not Python's
        return None
    return None


def constant_statement_completes(stmt: ast.stmt, budget: int) -> bool:
    """A statement of constants only (``facts.conditional._inert`` checks that) completes:
    folded as ``statement_raises`` folds, nothing raised and nothing refused (too costly:
    ``"a" * 10**12`` is unknown, so not known to complete)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _Certain(budget).statement(stmt)
    except Exception:  # _Refuse, a raised constant, the fold's own limits
        return False
    return True


class _Refuse(Exception):
    """Folding stops: not made of constants, not certain, or too costly."""


class _Exhausted(_Refuse):
    """The budget is spent: the whole test is unknown, not just the operand at hand."""


class _Big:
    """A non-zero int too large to compute (``10**10**10``, ``1 << 10**9``): only its
    truth is known. It never reaches a comparison, a container or an operator other
    than those in ``_Folder._big_binop`` (its identity would make ``==`` true)."""

    __slots__ = ()

    def __bool__(self) -> bool:
        return True


BIG = _Big()

MAX_INT_BITS = 4096
"""The largest integer a fold computes: constants in real tests are small; a
``10**10**10`` in a hostile file would take minutes and gigabytes (it is ``BIG``)."""

MAX_WEIGHT = 4096
"""The largest value (items, characters, 64-bit words) an operator may produce."""

BUDGET_FLOOR = 128
BUDGET_PER_CHAR = 4
"""Work units a test may spend: a few per character of its text, plus a small floor
for short tests such as ``2 ** 4000 > 2 ** 3999``. A unit is about one Python-level
step (a node visited, an item weighed), so folding any test costs at most about
three times parsing it (measured on hostile forms such as ``not (1,)*60``), and a
5 MB file of costly tests is folded in about 1.5 times its tests' parsing."""

_RAISED = (ArithmeticError, LookupError, TypeError, ValueError, AttributeError)
"""What Python's operators raise on builtin constants (``1 / 0``, ``[][0]``, ``{}["k"]``,
``1 < "a"``, ``1 << -1``, ``None.x``); anything else a fold raises is its own limit."""

_SINGLETONS = (None, True, False, Ellipsis)
"""Objects whose identity Python guarantees: ``is`` is certain only against these."""

_EMPTIES = (tuple, list, dict, set, frozenset)
"""Containers that hold nothing when empty (``"" in ""`` is true: not strings)."""


def _cmp(op: ast.cmpop, a: Any, b: Any) -> Any:
    """One comparison with Python's semantics; ``is`` only where its answer is certain."""
    if a is BIG or b is BIG:
        raise _Refuse  # its value is unknown
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
_SEQUENCES = (str, bytes, tuple, list)  # what `*` repeats


def _is_int(value: Any) -> bool:
    return value is BIG or isinstance(value, int)


class _Folder:
    """Folds one expression to its truth, with bounded work.

    Constants are folded to their values (``fold``), each carried with its weight
    (``_weigh``); an operator whose result would pass ``MAX_WEIGHT`` is refused
    before it runs (``*``) or after (the others cannot blow up), an int past
    ``MAX_INT_BITS`` is ``BIG``, and every value made, comparison or operator spends
    its weight from a budget proportional to the text (``BUDGET_PER_CHAR``), so that
    no text costs more than a small multiple of its own parsing. Only builtin values
    ever occur (the constants' and what operators make of them), so the operators
    run no user code."""

    def __init__(self, size: int, lookups: bool = False) -> None:
        self.budget = BUDGET_FLOOR + BUDGET_PER_CHAR * size
        # Fold subscripts and attributes of constants too (statement_raises: `[][0]`,
        # `None.x`); a test or a name spelled that way stays unknown, as it always was.
        self.lookups = lookups

    def truth(self, node: ast.expr) -> bool | None:
        """The test's truth, three-valued (None: unknown), by these rules:

        - constants fold to their value (``fold``); a name, call, attribute, ... is
          unknown, and so is ``__debug__`` (``python -O`` turns it off);
        - ``a and b and …`` is false when any operand is certainly false (operands
          before it are true, or false and end the test), true when all are
          certainly true; ``or`` the same way round; ``not`` inverts;
        - a comparison chain is false when any link is certainly false (the chain
          stops at a false link), true when all are certainly true; ``x in e`` with
          ``e`` an empty tuple, list, dict or set is false whatever ``x`` is (only
          the container's own ``__contains__`` runs), ``x not in e`` true;
        - ``a if t else b`` is the chosen branch's truth, or both branches' when
          they agree;
        - a product with a zero int is 0 when the other operand is a known int
          however large (``0 * 10**10**10``); a power of a non-zero int base
          (positive exponent) and a shift of a non-zero int are non-zero ints,
          never computed. ``x * 0`` stays unknown: ``float("inf") * 0`` is a true
          NaN and a class's ``__mul__`` returns anything."""
        try:
            return self._truth(node)
        except Exception:  # budget spent, too deep: unknown
            return None

    def spend(self, cost: int) -> None:
        self.budget -= cost
        if self.budget < 0:
            raise _Exhausted

    def _truth(self, node: ast.expr) -> bool | None:
        self.spend(1)
        if isinstance(node, ast.BoolOp):
            return self._boolop_truth(node)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            inner = self._truth(node.operand)
            return None if inner is None else not inner
        if isinstance(node, ast.Compare):
            return self._compare_truth(node)
        if isinstance(node, ast.IfExp):
            test = self._truth(node.test)
            if test is not None:
                return self._truth(node.body if test else node.orelse)
            body, orelse = self._truth(node.body), self._truth(node.orelse)
            return body if body == orelse else None
        found = self._value(node)
        return None if found is None else bool(found[0])

    def _value(self, node: ast.expr) -> tuple[Any, int] | None:
        """(value, weight) of a constant operand, None when unknown (not a constant,
        or it raises: ``1 / 0``). Spending the whole budget ends the test."""
        try:
            return self.fold(node)
        except (_Exhausted, RecursionError, MemoryError):
            raise
        except Exception:  # _Refuse, 1 / 0, 1 < "a", {[]}
            return None

    def _boolop_truth(self, node: ast.BoolOp) -> bool | None:
        is_or = isinstance(node.op, ast.Or)
        unknown = False
        for operand in node.values:
            truth = self._truth(operand)
            if truth is is_or:  # `or` is decided by a true operand, `and` by a false one
                return is_or
            unknown = unknown or truth is None
        return None if unknown else not is_or

    def _compare_truth(self, node: ast.Compare) -> bool | None:
        """Link by link, as Python evaluates a chain: the first certainly false link
        decides; an unknown one leaves the chain unknown unless a later link is false.
        Each operand is folded once, and none after the deciding link."""
        left = self._value(node.left)
        unknown = False
        for op, comparator in zip(node.ops, node.comparators, strict=True):
            right = self._value(comparator)
            link = self._link(op, left, right)
            if link is False:
                return False
            unknown = unknown or link is None
            left = right
        return None if unknown else True

    def _link(self, op: ast.cmpop, left: tuple[Any, int] | None,
              right: tuple[Any, int] | None) -> bool | None:
        if left is not None and right is not None:
            self.spend(left[1] + right[1])
            try:
                return bool(_cmp(op, left[0], right[0]))
            except _Exhausted:
                raise
            except Exception:
                return None
        if isinstance(op, (ast.In, ast.NotIn)) and right is not None and \
                type(right[0]) in _EMPTIES and not right[0]:
            return isinstance(op, ast.NotIn)  # nothing is in an empty container
        return None

    def _weigh(self, value: Any) -> int:
        """Size of a value in work units: what comparing or copying it costs."""
        if isinstance(value, int):  # at most MAX_INT_BITS, each 512 bits cheap C work
            return 1 + value.bit_length() // 512
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
        """An operator's result, paid for; refused when it is larger than any constant
        test needs; an int too large to keep is ``BIG`` (it has bits: non-zero)."""
        if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
            return BIG, 1
        weight = self._weigh(value)
        if weight > MAX_WEIGHT:
            raise _Refuse
        self.spend(weight)
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
            return self._unary(node)
        if isinstance(node, ast.BinOp):
            return self._binop(node)
        if isinstance(node, ast.IfExp):
            test = self.fold(node.test)[0]
            return self.fold(node.body if test else node.orelse)
        if isinstance(node, ast.Subscript) and self.lookups:
            return self._subscript(node)
        if isinstance(node, ast.Attribute) and self.lookups:
            return self._attribute(node)
        raise _Refuse  # names, calls, walruses, ...

    def _subscript(self, node: ast.Subscript) -> tuple[Any, int]:
        """``(1, 2)[0]``, ``{"a": 1}["a"]``, and ``[][0]`` / ``{}["k"]``, which raise as
        Python raises (the container and the key are builtin values). A slice is refused:
        a step of ``10**9`` over a long sequence is work not worth doing."""
        if isinstance(node.slice, ast.Slice):
            raise _Refuse
        container, cw = self.fold(node.value)
        index, iw = self.fold(node.slice)
        if container is BIG or index is BIG:
            raise _Refuse
        self.spend(cw + iw)
        return self._result(container[index])

    def _attribute(self, node: ast.Attribute) -> tuple[Any, int]:
        """``None.x``: an attribute a builtin constant does not have raises
        ``AttributeError``; one it has (a method, ``(1).real``) is not folded."""
        value, _ = self.fold(node.value)
        if value is BIG or hasattr(value, node.attr):
            raise _Refuse
        raise AttributeError(f"{type(value).__name__!r} object has no attribute {node.attr!r}")

    def _item(self, node: ast.expr) -> tuple[Any, int]:
        """A container's item: never ``BIG`` (``(a,) == (b,)`` compares identity first)."""
        found = self.fold(node)
        if found[0] is BIG:
            raise _Refuse
        return found

    def _display(self, node: ast.Tuple | ast.List | ast.Set | ast.Dict) -> tuple[Any, int]:
        if isinstance(node, ast.Dict):
            if any(k is None for k in node.keys):
                raise _Refuse  # {**x}
            pairs = [(self._item(k), self._item(v))  # key, value, key…: Python's order
                     for k, v in zip(node.keys, node.values, strict=True) if k is not None]
            weight = 1 + sum(kw + vw for (_, kw), (_, vw) in pairs)
            self.spend(weight)
            return {k: v for (k, _), (v, _) in pairs}, weight
        if any(isinstance(e, ast.Starred) for e in node.elts):
            raise _Refuse  # [*x]
        items = [self._item(e) for e in node.elts]
        weight = 1 + sum(w for _, w in items)
        self.spend(weight)
        values = [v for v, _ in items]
        kind: type = {ast.Tuple: tuple, ast.List: list, ast.Set: set}[type(node)]
        return kind(values), weight

    def _boolop(self, node: ast.BoolOp) -> tuple[Any, int]:
        """The value of ``and``/``or`` of constants, with short-circuit: operands after
        the deciding one are never evaluated (``False and x`` is False)."""
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

    def _unary(self, node: ast.UnaryOp) -> tuple[Any, int]:
        value, weight = self.fold(node.operand)
        if value is BIG:  # -n, +n, ~n (-n - 1) of a huge n: non-zero
            return (False, 1) if isinstance(node.op, ast.Not) else (BIG, 1)
        self.spend(weight)
        return self._result(_UNARY[type(node.op)](value))

    def _binop(self, node: ast.BinOp) -> tuple[Any, int]:
        (a, aw), (b, bw) = self.fold(node.left), self.fold(node.right)
        op = type(node.op)
        if op not in _BINARY:
            raise _Refuse  # `@`
        if a is BIG or b is BIG:
            return self._big_binop(op, a, b), 1
        self.spend(aw + bw)
        if op is ast.Mod and not isinstance(a, _NUMBERS):
            raise _Refuse  # "%*d" % (10**9, 1): string formatting can make any size
        if _huge_int(op, a, b):
            return BIG, 1
        self._check_growth(op, a, aw, b, bw)
        return self._result(_BINARY[op](a, b))

    @staticmethod
    def _big_binop(op: type[ast.operator], a: Any, b: Any) -> Any:
        """What is known of an operation on ``BIG`` without computing it."""
        if op is ast.Mult and _is_int(a) and _is_int(b):
            return 0 if (a is not BIG and a == 0) or (b is not BIG and b == 0) else BIG
        if op in (ast.Pow, ast.LShift) and a is BIG and isinstance(b, int) and b >= 0:
            return 1 if op is ast.Pow and b == 0 else BIG
        raise _Refuse  # its value is unknown, and Python may raise (1 << 10**100)

    def _check_growth(self, op: type[ast.operator], a: Any, aw: int, b: Any, bw: int) -> None:
        """Refuse, before computing it, a repeated sequence too large to compute or pay for."""
        if op is not ast.Mult:
            return
        limit = min(MAX_WEIGHT, self.budget)
        if isinstance(a, _SEQUENCES) and isinstance(b, int) and b > 0 and aw * b > limit:
            raise _Refuse  # "a" * 10**12
        if isinstance(b, _SEQUENCES) and isinstance(a, int) and a > 0 and bw * a > limit:
            raise _Refuse


def _huge_int(op: type[ast.operator], a: Any, b: Any) -> bool:
    """An int result certainly non-zero and past ``MAX_INT_BITS``, known before computing
    it: a product of such sizes (neither is 0), a power of a base other than 0, 1, -1,
    a left shift of a non-zero int."""
    if not (isinstance(a, int) and isinstance(b, int)):
        return False
    if op is ast.Mult:
        return a.bit_length() + b.bit_length() > MAX_INT_BITS + 1
    if op is ast.Pow:
        return b > 0 and abs(a) > 1 and (b > MAX_INT_BITS or (a.bit_length() - 1) * b > MAX_INT_BITS)
    if op is ast.LShift:
        return a != 0 and b > 0 and a.bit_length() + b > MAX_INT_BITS
    return False


_ITERABLE = (str, bytes, tuple, list, dict, set, frozenset)
"""The builtin constants iterating (or unpacking, or ``*``) accepts."""
_IMMUTABLE = (str, bytes, tuple, frozenset, set, int, float, complex, type(None), type(...))
"""Builtin constants whose items cannot be set (``()[0] = 1``: TypeError); ``set`` has no
items to set."""
_Folded = tuple[Any, int]


class _Certain(_Folder):
    """Evaluates what a statement certainly evaluates (``statement_raises``), in Python's
    order: a constant part is folded, and raises as Python raises; any other part is
    unknown, but what it evaluates whatever it is (the operands of ``x + y``, a call's
    callee and arguments, the items of a display, an f-string's fields, the test of
    ``a if t else b``, the first operand of ``and`` / ``or`` or of a comparison, a
    comprehension's first iterable) is still evaluated. Each node is folded once
    (memoised), so a part read both on its own and inside its parent costs nothing more."""

    def __init__(self, size: int) -> None:
        super().__init__(size, lookups=True)
        self._memo: dict[int, _Folded | Exception] = {}

    def fold(self, node: ast.expr) -> _Folded:
        got = self._memo.get(id(node))
        if got is None:
            try:
                got = self._fold(node)
            except _Exhausted:
                raise
            except (_Refuse, *_RAISED) as exc:
                got = exc
            self._memo[id(node)] = got
        if isinstance(got, Exception):
            raise got
        return got

    def known(self, node: ast.expr | None) -> _Folded | None:
        """The value of a part that is certainly evaluated, None when it is not known (or
        absent); an exception it certainly raises goes on."""
        if node is None:
            return None
        try:
            return self.fold(node)
        except _Exhausted:
            raise
        except _Refuse:
            return None

    def _fold(self, node: ast.expr) -> _Folded:
        for part in _evaluated_first(node):
            if isinstance(part, ast.Starred):
                self._iterated(part.value)
            else:
                self.known(part)
        if isinstance(node, ast.Call):
            for keyword in node.keywords:
                got = self.known(keyword.value)
                if keyword.arg is None and got is not None and not isinstance(got[0], dict):
                    raise TypeError("argument after ** must be a mapping")
            if self.known(node.func) is not None:
                raise TypeError("a constant is not callable")
            raise _Refuse
        if isinstance(node, ast.NamedExpr):
            return self.fold(node.value)
        if isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values, strict=True):
                got = self.known(v) if k is None else None
                if got is not None and not isinstance(got[0], dict):
                    raise TypeError("'**' needs a mapping")
        return super().fold(node)

    def _iterated(self, node: ast.expr) -> None:
        """``node`` is iterated (``*node``, ``for _ in node``): a constant that is not
        iterable raises."""
        got = self.known(node)
        if got is not None and not isinstance(got[0], _ITERABLE):
            raise TypeError(f"{type(got[0]).__name__!r} object is not iterable")

    def statement(self, stmt: ast.stmt) -> None:
        """Evaluate what ``stmt`` certainly evaluates, as Python runs it."""
        if isinstance(stmt, ast.Expr):
            self.known(stmt.value)
        elif isinstance(stmt, ast.Assign):
            value = self.known(stmt.value)
            for target in stmt.targets:
                self._store(target, value)
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is None:
            # An annotation alone stores nothing (``None.x: int`` runs): only the
            # target's parts are evaluated.
            if isinstance(stmt.target, (ast.Attribute, ast.Subscript)):
                self.known(stmt.target.value)
            if isinstance(stmt.target, ast.Subscript) and not isinstance(stmt.target.slice, ast.Slice):
                self.known(stmt.target.slice)
        elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
            self._store(stmt.target, None, load=isinstance(stmt, ast.AugAssign))
            if stmt.value is not None:
                self.known(stmt.value)
        elif isinstance(stmt, ast.Delete):  # deleting an item fails where reading it does
            for target in stmt.targets:
                self._store(target, None, load=True)
        elif isinstance(stmt, (ast.If, ast.While)):
            self.known(stmt.test)
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            self._iterated(stmt.iter)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            for item in stmt.items:
                if self.known(item.context_expr) is not None:
                    raise TypeError("a constant is not a context manager")
        elif isinstance(stmt, ast.Match):
            self.known(stmt.subject)

    def _store(self, target: ast.expr, value: _Folded | None, load: bool = False) -> None:
        """Bind (or delete) ``target`` (``value``: what is stored, when known): unpacking a
        constant of another shape, or writing an attribute or an item of a constant,
        raises; the parts of a target are evaluated either way (``d[1 / 0] = v``)."""
        if isinstance(target, (ast.Tuple, ast.List)):
            self._unpack(target, value)
        elif isinstance(target, ast.Starred):
            self._store(target.value, None)
        elif isinstance(target, ast.Attribute):
            if self.known(target.value) is not None:
                raise AttributeError("a constant's attributes cannot be set")
        elif isinstance(target, ast.Subscript):
            holder = self.known(target.value)
            if not isinstance(target.slice, ast.Slice):
                self.known(target.slice)
            if holder is not None and isinstance(holder[0], _IMMUTABLE):
                raise TypeError(f"{type(holder[0]).__name__!r} object has no items to set")
            if load and holder is not None:
                self.fold(target)  # `[][0] += 1` reads the item first, `del [][0]` finds it

    def _unpack(self, target: ast.Tuple | ast.List, value: _Folded | None) -> None:
        items = None
        if value is not None:
            if not isinstance(value[0], _ITERABLE):
                raise TypeError(f"cannot unpack non-iterable {type(value[0]).__name__}")
            stars = sum(isinstance(e, ast.Starred) for e in target.elts)
            size, wanted = len(value[0]), len(target.elts) - stars
            if size < wanted or (size > wanted and not stars):
                raise ValueError(f"{size} values to unpack into {wanted} targets")
            if not stars and isinstance(value[0], (tuple, list, str, bytes)):
                items = list(value[0])
        for i, element in enumerate(target.elts):
            self._store(element, (items[i], 1) if items is not None else None)


def _evaluated_first(node: ast.expr) -> list[ast.expr]:
    """The parts of ``node`` Python evaluates whenever it evaluates ``node``, in order."""
    if isinstance(node, ast.BinOp):
        return [node.left, node.right]
    if isinstance(node, ast.UnaryOp):
        return [node.operand]
    if isinstance(node, ast.BoolOp):
        return node.values[:1]
    if isinstance(node, ast.Compare):
        return [node.left, *node.comparators[:1]]
    if isinstance(node, ast.IfExp):
        return [node.test]
    if isinstance(node, ast.Attribute):
        return [node.value]
    if isinstance(node, ast.Subscript):
        return [node.value, *_slice_parts(node.slice)]
    if isinstance(node, ast.Call):
        return [node.func, *node.args]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return list(node.elts)
    if isinstance(node, ast.Dict):
        return [part for k, v in zip(node.keys, node.values, strict=True)
                for part in ([v] if k is None else [k, v])]
    if isinstance(node, ast.JoinedStr):
        return [v for v in node.values if isinstance(v, ast.FormattedValue)]
    if isinstance(node, ast.FormattedValue):
        return [node.value, *([node.format_spec] if node.format_spec is not None else [])]
    if isinstance(node, (ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom, ast.Starred)):
        return [node.value] if node.value is not None else []
    if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
        return [node.generators[0].iter]
    return []


def _slice_parts(node: ast.expr) -> list[ast.expr]:
    if isinstance(node, ast.Slice):
        return [p for p in (node.lower, node.upper, node.step) if p is not None]
    return [node]


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
    (so that ``a, b = x, y`` can pair it with its value). Parentheses around an element do
    not change what it assigns (``del (x), y``, ``del ((x))``, ``a, (b) = …``)."""
    kind = target.kind()
    if kind in _TARGET_LISTS:
        for item in named_items(target.children()):
            item = unparen(item)
            if item.kind() in ("list_splat_pattern", "list_splat"):
                for inner in named_items(item.children()):
                    yield from ((n, False) for n, _ in flatten_targets(unparen(inner)))
            elif item.kind() in _TARGET_LISTS:
                yield from ((n, False) for n, _ in flatten_targets(item))
            else:
                yield item, True
    else:
        yield target, False


_TARGET_LISTS = ("pattern_list", "tuple_pattern", "list_pattern", "expression_list", "tuple",
                 "list", "parenthesized_expression")
"""Targets that hold targets (``a, b``, ``(a, b)``, ``[a, b]``, ``(a)``)."""


def assigned(node: SgNode, plain: bool = False) -> Iterator[tuple[SgNode, SgNode, SgNode]]:
    """(where, target, value) for each assignment ``node`` makes that a plain ``T = V``
    pattern does not match: tuple targets, ``+=``, ``for``/``with`` targets, ``:=``; with
    ``plain``, also the plain and annotated forms (``T = V``, ``T: A = V``), for a reader
    that wants every binding and its value, not only those a pattern misses."""
    kind = node.kind()
    if kind == "assignment":
        left, right = node.field("left"), node.field("right")
        if left is None or right is None or (node.field("type") is not None and not plain):
            return
        if left.kind() in ("identifier", "attribute", "subscript") and not plain:
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
    elif kind == "delete_statement":  # `del x`, `del x, y`, `del (x)`, `del [x, y]`
        names += [t.text() for n in named_items(stmt.children())
                  for t, _ in flatten_targets(n) if t.kind() == "identifier"]
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
