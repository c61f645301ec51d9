"""Evaluating invariant rules on Python source, each file parsed once per run.

ast-grep (tree-sitter) finds pattern matches; everything Python's semantics
adds on top of a syntax tree is decided here, syntactically, so that a rule
cannot hold on code that never runs or is not where the rule says:

* **Scope.** ``in:`` names a function (its own body: not the functions, lambdas
  or classes nested in it, which run only if called) or a class (its own
  statements: fields and method definitions; a method is a scope of its own).
  ``follows`` / ``precedes`` look in the match's own function, in source order,
  and not in a branch that excludes the match (the other arm of its ``if``).
* **The last binding.** Python keeps the last definition of a name: ``in:``
  resolves to the definition that is in force after the enclosing body ran, and
  a field or module constant matched by the pattern must not be re-bound later
  in its class/module. When branches leave several possible final bindings
  (``if TYPE_CHECKING: … else: …``), the rule must hold for each.
* **Dead code.** A match under a constant-false test (``if False:``, ``while 0:``,
  after an ``elif True:``), or after an unconditional ``return`` / ``raise`` /
  ``continue`` / ``break`` in its block, is not code: it is not a match.
* **Values, not spellings.** String and number literals in a pattern match by
  value (``'greedy'`` is ``"greedy"``), redundant parentheses around a captured
  node do not matter, and a ``guarded_by`` equality may be written either way
  round. A metavariable bound by the main pattern must capture the same code in
  the relations (compared as syntax trees, never substituted as text).
* **Assignments.** A pattern ``T = V`` also matches ``T: A = V``; under
  ``every`` and ``not`` (which must see every assignment) it also matches tuple
  targets, augmented assignments, ``for`` / ``with … as`` targets, ``:=`` and
  ``setattr(obj, "name", V)``; ``every`` on ``self.<attr>`` looks in every
  method of the class.

Data flow is out of reach of a syntactic matcher: a value overwritten between
two matched statements is not noticed (the README says so).

A file is accepted only when the stdlib parser accepts it: tree-sitter repairs
broken code silently, and an invariant "holding" on repaired code would prove
nothing (the stdlib check is the running interpreter's grammar: code needing a
newer Python is refused). Files over ``MAX_PARSE_BYTES`` are refused too.

``Engine`` is created once per run over the ``FileStore``: it caches each
file's parse (whatever the number of rules on it) and each invariant's outcome
(shared by the invariant check and by citations anchored on it).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from pp1audit.errors import SourceError
from pp1audit.rules import Constraint, Invariant, Rule, metavariables
from pp1audit.store import FileStore

if TYPE_CHECKING:  # pragma: no cover
    from ast_grep_py import SgNode

HOLDS = "holds"
VIOLATED = "violated"
BROKEN = "broken"

MAX_PARSE_BYTES = 8 * 1024 * 1024
"""Largest file the matcher parses. The stdlib compile, tree-sitter and scope
resolution grow with the file (an 18 MB file took 38 s); vLLM's largest module
is a few hundred KiB."""

_SCOPE_KINDS = ("function_definition", "class_definition", "lambda")
"""Nodes whose body is a scope of its own: it runs when called, not in place."""
_TERMINATORS = {"return_statement": "return", "raise_statement": "raise",
                "continue_statement": "continue", "break_statement": "break"}
_COMPOUND = ("if_statement", "elif_clause", "else_clause", "try_statement", "except_clause",
             "except_group_clause", "finally_clause", "with_statement", "for_statement",
             "while_statement", "block", "match_statement", "case_clause")
"""Statements whose blocks run in place (their bodies belong to the enclosing scope)."""
_LITERAL_KINDS = {str: ("string", "concatenated_string"), bytes: ("string", "concatenated_string"),
                  int: ("integer",), float: ("float",), complex: ("integer", "float")}
_LIT = "PP1LIT"
"""Prefix of the metavariables that stand for a pattern's literals."""

_Key = tuple[int, int, str]


@dataclass(frozen=True)
class Outcome:
    """What an invariant's evaluation found: status, reason and matching spans."""

    status: str  # HOLDS, VIOLATED or BROKEN
    message: str
    spans: tuple[tuple[int, int], ...] = ()
    """1-based inclusive lines of every match of the rule's pattern that satisfies it."""
    excerpts: tuple[str, ...] = ()
    missing_file: bool = False


def _key(node: SgNode) -> _Key:
    """Identity of a node across the separate ``SgNode`` objects ast-grep hands out."""
    r = node.range()
    return (r.start.index, r.end.index, node.kind())


def _lines(node: SgNode) -> tuple[int, int]:
    r = node.range()
    return (r.start.line + 1, r.end.line + 1)


def _line(node: SgNode) -> int:
    return node.range().start.line + 1


def _span_text(lines: tuple[int, int]) -> str:
    """``line 7`` / ``lines 7-9`` for messages."""
    a, b = lines
    return f"line {a}" if a == b else f"lines {a}-{b}"


def _short(node: SgNode, limit: int = 60) -> str:
    text = " ".join(node.text().split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _within(inner: SgNode, outer: SgNode) -> bool:
    a, b = inner.range(), outer.range()
    return b.start.index <= a.start.index and a.end.index <= b.end.index


def _named_items(nodes: Iterable[SgNode]) -> list[SgNode]:
    """Captured nodes without punctuation and comments (``$$$ARGS`` keeps commas)."""
    return [n for n in nodes if n.is_named() and n.kind() != "comment"]


def _unparen(node: SgNode) -> SgNode:
    """``((x))`` → ``x``: redundant parentheses do not change the code."""
    while node.kind() == "parenthesized_expression":
        inner = _named_items(node.children())
        if len(inner) != 1:
            break
        node = inner[0]
    return node


# --- literals: compared by value -------------------------------------------------------


def _literal(node: SgNode) -> tuple[type, object] | None:
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


def _literal_spans(text: str) -> list[tuple[int, int, tuple[type, object]]]:
    """(start, end, value) of each string/number literal of a pattern, in order.

    Metavariables are read as identifiers (``$`` → ``_``: same length, so token
    positions are positions in ``text``); implicitly concatenated strings are one
    literal; f-strings are code, not literals. Any tokenizer trouble: none.
    """
    probe = text.replace("$", "_")
    lines = io.StringIO(probe).readlines()
    starts = [0]
    for ln in lines:
        starts.append(starts[-1] + len(ln))
    groups: list[list[tokenize.TokenInfo]] = []
    out: list[tuple[int, int, tuple[type, object]]] = []
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(probe).readline))
    except (tokenize.TokenError, SyntaxError, ValueError):
        return []
    previous_string = False
    for tok in tokens:
        if tok.type == tokenize.STRING:
            if previous_string:
                groups[-1].append(tok)
            else:
                groups.append([tok])
            previous_string = True
        elif tok.type == tokenize.NUMBER:
            groups.append([tok])
            previous_string = False
        elif tok.type not in (tokenize.NL, tokenize.COMMENT):
            previous_string = False
    for group in groups:
        start = starts[group[0].start[0] - 1] + group[0].start[1]
        end = starts[group[-1].end[0] - 1] + group[-1].end[1]
        if any("f" in t.string[: t.string.find(t.string[-1])].lower() for t in group
               if t.type == tokenize.STRING):
            continue  # an f-string is computed, not a literal
        try:
            value = ast.literal_eval("(" + text[start:end] + ")")
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        out.append((start, end, (type(value), value)))
    return out


@dataclass(frozen=True)
class _Pat:
    """A pattern as ast-grep searches it: literals replaced by metavariables checked by value."""

    text: str
    literals: tuple[tuple[str, tuple[type, object]], ...]
    single: frozenset[str]
    multi: frozenset[str]

    def config(self) -> Any:
        """ast-grep's search: the pattern, each literal's metavariable limited to literal kinds."""
        if not self.literals:
            return {"rule": {"pattern": self.text}}
        return {"rule": {"pattern": self.text}, "constraints": {
            name: {"any": [{"kind": k} for k in _LITERAL_KINDS.get(value[0], ("string",))]}
            for name, value in self.literals}}


@lru_cache(maxsize=2048)
def _pat(text: str) -> _Pat:
    single, multi = metavariables(text)
    literals: list[tuple[str, tuple[type, object]]] = []
    out = text
    if "$" + _LIT not in text:
        spans = _literal_spans(text)
        for i, (start, end, value) in reversed(list(enumerate(spans))):
            out = f"{out[:start]}${_LIT}{i}{out[end:]}"
            literals.append((f"{_LIT}{i}", value))
    return _Pat(out, tuple(literals), single, multi)


@lru_cache(maxsize=512)
def _assign_parts(text: str) -> tuple[str, str] | None:
    """(target, value) texts when a pattern is one plain assignment ``T = V`` (T not a tuple)."""
    probe = text.replace("$", "_")  # same byte offsets: segments of `text` come out
    try:
        tree = ast.parse(probe)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.Assign):
        return None
    stmt = tree.body[0]
    if len(stmt.targets) != 1 or not isinstance(stmt.targets[0], (ast.Name, ast.Attribute,
                                                                    ast.Subscript)):
        return None
    target = ast.get_source_segment(text, stmt.targets[0])
    value = ast.get_source_segment(text, stmt.value)
    return (target, value) if target is not None and value is not None else None


@lru_cache(maxsize=512)
def _guard_forms(text: str) -> tuple[str, ...]:
    """A guard and, for ``a == b`` / ``!=`` / ``is`` / ``is not``, the same test written ``b == a``."""
    probe = text.replace("$", "_")
    try:
        tree = ast.parse(probe, mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return (text,)
    node = tree.body
    simple = (ast.Name, ast.Attribute, ast.Constant, ast.Call, ast.Subscript)
    if not (isinstance(node, ast.Compare) and len(node.ops) == 1
            and isinstance(node.ops[0], (ast.Eq, ast.NotEq, ast.Is, ast.IsNot))
            and isinstance(node.left, simple) and isinstance(node.comparators[0], simple)):
        return (text,)
    left = ast.get_source_segment(text, node.left)
    right = ast.get_source_segment(text, node.comparators[0])
    op = {ast.Eq: "==", ast.NotEq: "!=", ast.Is: "is", ast.IsNot: "is not"}[type(node.ops[0])]
    if left is None or right is None:
        return (text,)
    return (text, f"{right} {op} {left}")


@lru_cache(maxsize=1024)
def _truth(text: str) -> bool | None:
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


# --- matches ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Hit:
    """One match: where it is, and what its metavariables captured."""

    node: SgNode
    caps: dict[str, SgNode] = field(default_factory=dict)
    multi: dict[str, list[SgNode]] = field(default_factory=dict)

    def bindings(self, outer: dict[str, SgNode]) -> dict[str, SgNode]:
        """Outer bindings with this match's single captures added (outer ones win)."""
        return {**self.caps, **outer}


def _same(a: SgNode, b: SgNode) -> bool:
    """The same code: equal syntax trees, literals by value, parentheses and comments aside."""
    a, b = _unparen(a), _unparen(b)
    la, lb = _literal(a), _literal(b)
    if la is not None or lb is not None:
        return la == lb
    if a.kind() != b.kind():
        return False
    ca = [c for c in a.children() if c.kind() != "comment"]
    cb = [c for c in b.children() if c.kind() != "comment"]
    if not ca and not cb:
        return a.text() == b.text()
    return len(ca) == len(cb) and all(_same(x, y) for x, y in zip(ca, cb, strict=True))


def _capture(m: SgNode, pat: _Pat, bound: dict[str, SgNode]) -> _Hit | None:
    """The hit for an ast-grep match, if its literals and bound metavariables agree."""
    for name, value in pat.literals:
        got = m.get_match(name)
        if got is None or _literal(got) != value:
            return None
    caps: dict[str, SgNode] = {}
    for name in pat.single:
        got = m.get_match(name)
        if got is None:
            continue
        if name in bound and not _same(got, bound[name]):
            return None
        caps[name] = got
    multi = {name: _items(m.get_multiple_matches(name)) for name in pat.multi}
    return _Hit(m, caps, multi)


def _items(nodes: list[SgNode]) -> list[SgNode]:
    """A ``$$$`` capture's items; a body (``if c: $$$BODY``) captures its statements (ast-grep
    hands over the block, and with it any ``elif``/``else`` that follows: not the body's)."""
    items = _named_items(nodes)
    if items and items[0].kind() == "block":
        return _named_items(items[0].children())
    return items


def _find(region: SgNode, pat: _Pat, bound: dict[str, SgNode]) -> list[_Hit]:
    """Matches of ``pat`` in ``region`` (itself included), in source order."""
    hits = (_capture(m, pat, bound) for m in region.find_all(pat.config()))
    return [h for h in hits if h is not None]


def _at(node: SgNode, pat: _Pat, bound: dict[str, SgNode]) -> _Hit | None:
    """``node`` itself as a match of ``pat``, or None."""
    if not node.matches(pattern=pat.text):
        return None
    m = node.find(pattern=pat.text)  # pre-order: the node itself comes first
    if m is None or _key(m) != _key(node):
        return None
    return _capture(m, pat, bound)


def _keyword_pattern(text: str) -> tuple[str, str] | None:
    """``name=value`` read as a keyword argument (an assignment as Python parses it)."""
    parts = _assign_parts(text)
    if parts is None or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", parts[0]):
        return None
    return parts


def _is(node: SgNode, text: str, bound: dict[str, SgNode]) -> bool:
    """The node (parentheses aside) matches the pattern; ``name=value`` also a keyword argument."""
    bare = _unparen(node)
    candidates = [node] if _key(bare) == _key(node) else [node, bare]
    if any(_at(c, _pat(text), bound) is not None for c in candidates):
        return True
    if node.kind() == "keyword_argument":
        kw = _keyword_pattern(text)
        name, value = node.field("name"), node.field("value")
        if kw is not None and name is not None and value is not None and name.text() == kw[0]:
            return _is(value, kw[1], bound)
    return False


def _conjuncts(cond: SgNode) -> list[SgNode]:
    """``a and (b and c)`` → [a, b, c]; any other condition is its own single term."""
    cond = _unparen(cond)
    op = cond.field("operator")
    if cond.kind() == "boolean_operator" and op is not None and op.text() == "and":
        left, right = cond.field("left"), cond.field("right")
        out = []
        for side in (left, right):
            if side is not None:
                out.extend(_conjuncts(side))
        return out
    return [cond]


def _branches(stmt: SgNode) -> list[tuple[SgNode | None, SgNode | None, SgNode]]:
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


def _flatten_targets(target: SgNode) -> Iterator[tuple[SgNode, bool]]:
    """Each name/attribute/subscript a target assigns, with True when it is a direct element
    (so that ``a, b = x, y`` can pair it with its value)."""
    kind = target.kind()
    if kind in ("pattern_list", "tuple_pattern", "list_pattern", "expression_list", "tuple",
                "list", "parenthesized_expression"):
        for item in _named_items(target.children()):
            if item.kind() in ("list_splat_pattern", "list_splat"):
                for inner in _named_items(item.children()):
                    yield from ((n, False) for n, _ in _flatten_targets(inner))
            elif item.kind() in ("pattern_list", "tuple_pattern", "list_pattern", "tuple", "list"):
                yield from ((n, False) for n, _ in _flatten_targets(item))
            else:
                yield item, True
    else:
        yield target, False


def _assigned(node: SgNode) -> Iterator[tuple[SgNode, SgNode, SgNode]]:
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
        items = list(_flatten_targets(left))
        values = _named_items(right.children()) if right.kind() in (
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
            for target, _ in _flatten_targets(left):
                yield (target if kind == "for_statement" else node), target, right
    elif kind == "as_pattern":
        parts = _named_items(node.children())
        if len(parts) == 2 and parts[1].kind() == "as_pattern_target":
            for inner in _named_items(parts[1].children()) or [parts[1]]:
                for target, _ in _flatten_targets(inner):
                    yield node, target, parts[0]
    elif kind == "named_expression":
        name, value = node.field("name"), node.field("value")
        if name is not None and value is not None:
            yield node, name, value


_ASSIGNING: Any = {"rule": {"any": [{"kind": k} for k in (
    "assignment", "augmented_assignment", "for_statement", "for_in_clause", "as_pattern",
    "named_expression")]}}


def _bound_names(stmt: SgNode) -> list[str]:
    """Names a simple statement binds in its scope (definitions, assignments, imports, del)."""
    kind = stmt.kind()
    if kind == "decorated_definition":
        inner = stmt.field("definition")
        return _bound_names(inner) if inner is not None else []
    if kind in ("function_definition", "class_definition", "type_alias_statement"):
        name = stmt.field("name")
        return [name.text()] if name is not None else []
    names: list[str] = []
    if kind == "expression_statement":
        for expr in _named_items(stmt.children()):
            while expr.kind() in ("assignment", "augmented_assignment"):
                left, right = expr.field("left"), expr.field("right")
                if left is None or right is None:
                    break  # `x: int` declares, binds nothing
                names += [t.text() for t, _ in _flatten_targets(left) if t.kind() == "identifier"]
                expr = right
    elif kind in ("import_statement", "import_from_statement"):
        for item in stmt.field_children("name"):
            if item.kind() == "aliased_import":
                alias = item.field("alias")
                names += [alias.text()] if alias is not None else []
            else:
                names.append(item.text().split(".")[0].strip())
    elif kind == "delete_statement":
        names += [n.text() for n in _named_items(stmt.children()) if n.kind() == "identifier"]
    return names


def _binding_statement(node: SgNode) -> SgNode | None:
    """The statement a match *is* when the match is a whole assignment or definition."""
    kind = node.kind()
    if kind in ("function_definition", "class_definition"):
        parent = node.parent()
        return parent if parent is not None and parent.kind() == "decorated_definition" else node
    if kind == "decorated_definition":
        return node
    if kind == "expression_statement":
        inner = _named_items(node.children())
        return node if len(inner) == 1 and inner[0].kind() == "assignment" else None
    if kind == "assignment":
        parent = node.parent()
        while parent is not None and parent.kind() == "assignment":
            parent = parent.parent()
        return parent if parent is not None and parent.kind() == "expression_statement" else None
    return None


def _describe(scope: SgNode) -> str:
    name = scope.field("name")
    word = {"function_definition": "def", "class_definition": "class"}.get(scope.kind(), "lambda")
    return f"{word} {name.text()}" if name is not None else word


class _Facts:
    """What one parsed file says beyond its syntax: scopes, dead code, final bindings.

    Everything is memoised per node: every rule on the file shares the work.
    """

    def __init__(self, root: SgNode) -> None:
        self.root = root
        self._dead: dict[_Key, str | None] = {}
        self._ends: dict[_Key, bool] = {}
        self._exits: dict[_Key, SgNode | None] = {}
        self._search: dict[tuple[object, ...], list[_Hit]] = {}
        self._final: dict[tuple[_Key, str], dict[_Key, SgNode]] = {}

    # scopes

    def owner(self, node: SgNode) -> SgNode | None:
        """The function/lambda/class whose body holds ``node`` (None: module level).

        Decorators, defaults and annotations belong to the enclosing scope: they
        run where the definition is, not when it is called.
        """
        child = node
        for anc in node.ancestors():
            if anc.kind() in _SCOPE_KINDS:
                body = anc.field("body")
                if body is not None and _key(body) == _key(child):
                    return anc
            child = anc
        return None

    def owned_by(self, node: SgNode, scope: SgNode) -> bool:
        found = self.owner(node)
        return (found is None and scope.kind() == "module") or (
            found is not None and _key(found) == _key(scope))

    def function_of(self, node: SgNode, scope: SgNode) -> SgNode:
        """The match's own function (or class/lambda) inside ``scope``, else ``scope``."""
        found = self.owner(node)
        return found if found is not None and _within(found, scope) else scope

    # dead code

    def dead(self, node: SgNode) -> str | None:
        """Why ``node`` can never run (its block or branch is unreachable), or None."""
        path: list[tuple[SgNode, _Key, SgNode]] = []
        n = node
        while True:  # up to the nearest node already judged (or the root)
            k = _key(n)
            if k in self._dead:
                verdict = self._dead[k]
                break
            parent = n.parent()
            if parent is None:
                verdict = self._dead[k] = None
                break
            path.append((n, k, parent))
            n = parent
        for child, k, parent in reversed(path):
            if verdict is None:
                verdict = self._edge_dead(child, parent)
            self._dead[k] = verdict
        return verdict

    def _edge_dead(self, child: SgNode, parent: SgNode) -> str | None:
        kind = parent.kind()
        ck = _key(child)
        if kind in ("block", "module"):
            stop = self._exit(parent)
            if stop is None or child.range().start.index < stop.range().end.index:
                return None
            what = _TERMINATORS.get(stop.kind())
            return (f"after the `{what}` at line {_line(stop)}" if what else
                    f"after line {_line(stop)}, whose every branch leaves the block")
        if kind == "if_statement":
            always: str | None = None  # an earlier test that is always true
            for clause, test, body in _branches(parent):
                if ck in (_key(body), _key(clause) if clause is not None else None):
                    if always is not None:
                        return f"after {always}, which is always true"
                    if test is not None and _truth(test.text()) is False and ck == _key(body):
                        return f"under `if {_short(test, 40)}:` at line {_line(test)}, never true"
                    return None
                if test is not None and _truth(test.text()) is True:
                    word = "if" if clause is None else "elif"
                    always = f"`{word} {_short(test, 40)}:` at line {_line(test)}"
            return None
        if kind in ("elif_clause", "while_statement"):
            cond = parent.field("condition")
            inner = parent.field("consequence" if kind == "elif_clause" else "body")
            if cond is None:
                return None
            truth = _truth(cond.text())
            word = "elif" if kind == "elif_clause" else "while"
            if inner is not None and ck == _key(inner) and truth is False:
                return f"under `{word} {_short(cond, 40)}:` at line {_line(cond)}, never true"
            if kind == "while_statement" and child.kind() == "else_clause" and truth is True:
                return f"in the `else` of `while {_short(cond, 40)}:` at line {_line(cond)}"
            return None
        if kind == "conditional_expression":
            parts = _named_items(parent.children())
            if len(parts) == 3:
                truth = _truth(parts[1].text())
                if (ck == _key(parts[0]) and truth is False) or (
                        ck == _key(parts[2]) and truth is True):
                    return f"a branch of `{_short(parent, 40)}` at line {_line(parent)} never taken"
            return None
        if kind == "boolean_operator":
            left, right, op = parent.field("left"), parent.field("right"), parent.field("operator")
            if left is not None and right is not None and op is not None and ck == _key(right):
                truth = _truth(left.text())
                if (op.text() == "and" and truth is False) or (op.text() == "or" and truth is True):
                    return f"never evaluated in `{_short(parent, 40)}` at line {_line(parent)}"
        return None

    def _exit(self, block: SgNode) -> SgNode | None:
        """The block's first statement that never completes (all after it is dead), if any."""
        k = _key(block)
        if k not in self._exits:
            self._exits[k] = next((s for s in _named_items(block.children()) if self.ends(s)),
                                  None)
        return self._exits[k]

    def ends(self, stmt: SgNode) -> bool:
        """The statement never completes normally: return/raise/continue/break, or an if
        chain whose every reachable branch (with an ``else`` or a constant-true test) ends."""
        kind = stmt.kind()
        if kind != "if_statement":
            return kind in _TERMINATORS
        k = _key(stmt)
        hit = self._ends.get(k)
        if hit is None:
            hit = self._ends[k] = self._if_ends(stmt)
        return hit

    def _if_ends(self, stmt: SgNode) -> bool:
        for _clause, test, body in _branches(stmt):
            truth = True if test is None else _truth(test.text())
            if truth is False:
                continue
            if not any(self.ends(s) for s in _named_items(body.children())):
                return False
            if truth is True:
                return True
        return False

    # final bindings

    def final(self, scope: SgNode, name: str) -> dict[_Key, SgNode]:
        """Statements of ``scope``'s body that may be the binding of ``name`` in force after
        the body ran: every live binding not followed, later in a block that holds it, by
        another binding (which then always runs after it). Bindings in different arms of
        a branch are all kept: which one is in force is decided at run time."""
        k = (_key(scope), name)
        hit = self._final.get(k)
        if hit is None:
            body = scope if scope.kind() == "module" else scope.field("body")
            found = [s for s in self._statements(body) if self._binds(s, name)
                     and self.dead(s) is None] if body is not None else []
            hit = self._final[k] = {
                _key(s): s for i, s in enumerate(found)
                if not any(self._overrides(later, s) for later in found[i + 1:])}
        return hit

    @staticmethod
    def _statements(body: SgNode) -> Iterator[SgNode]:
        """Statements of a body, through compound statements, not into nested scopes."""
        stack = list(reversed(_named_items(body.children())))
        while stack:
            stmt = stack.pop()
            kind = stmt.kind()
            if kind.endswith(("statement", "definition")):
                yield stmt
            if kind in _COMPOUND:
                stack.extend(reversed(_named_items(stmt.children())))

    @staticmethod
    def _binds(stmt: SgNode, name: str) -> bool:
        kind = stmt.kind()
        if kind in ("function_definition", "class_definition", "decorated_definition"):
            return name in _bound_names(stmt)
        if kind in _COMPOUND and kind not in ("for_statement", "with_statement"):
            return False  # its statements are looked at one by one
        if name not in stmt.text():  # cheap: most statements do not mention it at all
            return False
        if kind in ("for_statement", "with_statement"):
            clauses = [c for c in stmt.children() if c.kind() == "with_clause"]
            forms = [stmt] if stmt.kind() == "for_statement" else [
                p for c in clauses for p in c.find_all(kind="as_pattern")]
            return any(t.kind() == "identifier" and t.text() == name
                       for node in forms for _, t, _ in _assigned(node))
        return name in _bound_names(stmt)

    @staticmethod
    def _overrides(later: SgNode, earlier: SgNode) -> bool:
        block = later.parent()
        return block is not None and _within(earlier, block) and \
            later.range().start.index >= earlier.range().end.index

    def resolve_scope(self, scope: str) -> tuple[list[SgNode], str | None]:
        """The definitions a dotted name denotes after its module ran, or why there is none.

        Each part is the last binding of the name in the body above it; when
        branches leave several (``if …: def f … else: def f …``) all are returned.
        """
        current = [self.root]
        parts = scope.split(".")
        for i, part in enumerate(parts):
            where = ".".join(parts[:i]) or "the module"
            found: list[SgNode] = []
            for node in current:
                for stmt in self.final(node, part).values():
                    definition = stmt.field("definition") if stmt.kind() == "decorated_definition" \
                        else stmt
                    if definition is None or definition.kind() not in (
                            "function_definition", "class_definition"):
                        return [], (f"'{part}' in {where} is last bound at line {_line(stmt)} by "
                                    f"`{_short(stmt, 50)}`, not by a class or function definition")
                    found.append(definition)
            if not found:
                return [], f"no class or function '{part}' in {where}"
            current = found
        return current, None

    def rebinding(self, node: SgNode) -> tuple[str | None, list[SgNode]]:
        """For a match that is a class/module-level assignment or definition: why it is not
        the name's final binding (None if it is), and the other bindings that may be final
        instead (branches that cannot be ordered)."""
        stmt = _binding_statement(node)
        if stmt is None:
            return None, []
        scope = self.owner(stmt)
        if scope is not None and scope.kind() != "class_definition":
            return None, []  # a function's locals: data flow, not a definition
        scope = scope if scope is not None else self.root
        others: dict[_Key, SgNode] = {}
        for name in _bound_names(stmt):
            final = self.final(scope, name)
            if not final:
                continue  # not reachable from the body's start (e.g. dead): judged elsewhere
            if _key(stmt) not in final:
                last = max(final.values(), key=lambda s: s.range().start.index)
                return (f"`{name}` is bound again at line {_line(last)} "
                        f"(`{_short(last, 50)}`), which is the binding in force"), []
            others.update({k: s for k, s in final.items() if k != _key(stmt)})
        return None, list(others.values())

    # exclusive branches

    def exclusive(self, a: SgNode, b: SgNode) -> SgNode | None:
        """The statement in whose different arms ``a`` and ``b`` lie (if/elif/else, try
        handlers/else, match cases, a conditional expression: never both run in one
        pass), or None."""
        pa = [a, *a.ancestors()]
        index = {_key(n): i for i, n in enumerate(pa)}
        pb = [b, *b.ancestors()]
        for j, n in enumerate(pb):
            i = index.get(_key(n))
            if i is None:
                continue
            if i == 0 or j == 0:
                return None  # one contains the other
            ca, cb, kind = pa[i - 1], pb[j - 1], n.kind()
            if kind == "if_statement":
                arms = {_key(body) for _c, _t, body in _branches(n)} | {
                    _key(c) for c in n.children() if c.kind() in ("elif_clause", "else_clause")}
                apart = _key(ca) in arms and _key(cb) in arms
            elif kind == "try_statement":
                handlers = ("except_clause", "except_group_clause", "else_clause")
                apart = ca.kind() in handlers and cb.kind() in handlers
            elif kind == "conditional_expression":
                parts = _named_items(n.children())
                apart = len(parts) == 3 and {_key(ca), _key(cb)} == {_key(parts[0]),
                                                                      _key(parts[2])}
            else:
                apart = kind == "block" and ca.kind() == cb.kind() == "case_clause"
            return n if apart else None
        return None

    # searching

    def search(self, region: SgNode, text: str, bound: dict[str, SgNode],
               every_form: bool) -> list[_Hit]:
        """Matches of a pattern in ``region``, assignment forms included (see the module
        docstring); ``every_form`` adds the forms only ``every``/``not`` must see.

        Memoised: a relation searched once per match of the rule (``every`` × ``not``)
        would otherwise rescan its region for each."""
        pat = _pat(text)
        used = sorted(n for n in pat.single if n in bound)
        memo = (_key(region), text, every_form, tuple((n, _key(bound[n])) for n in used))
        hit = self._search.get(memo)
        if hit is None:
            hit = self._search[memo] = self._search_all(region, pat, text, bound, every_form)
        return hit

    def _search_all(self, region: SgNode, pat: _Pat, text: str, bound: dict[str, SgNode],
                    every_form: bool) -> list[_Hit]:
        hits = _find(region, pat, bound)
        parts = _assign_parts(text)
        if parts is not None:
            target, value = parts
            hits += _find(region, _pat(f"{target}: $PP1ANNOTATION = {value}"), bound)
            if every_form:
                hits += self._assignment_forms(region, target, value, bound)
        seen: set[_Key] = set()
        out = []
        for h in sorted(hits, key=lambda h: h.node.range().start.index):
            if _key(h.node) not in seen:
                seen.add(_key(h.node))
                out.append(h)
        return out

    def _assignment_forms(self, region: SgNode, target: str, value: str,
                          bound: dict[str, SgNode]) -> list[_Hit]:
        tpat, vpat = _pat(target), _pat(value)
        out: list[_Hit] = []
        for node in region.find_all(_ASSIGNING):
            for where, tnode, vnode in _assigned(node):
                th = _at(tnode, tpat, bound)
                if th is None:
                    continue
                vh = _at(vnode, vpat, {**bound, **th.caps})
                if vh is not None:
                    out.append(_Hit(where, {**th.caps, **vh.caps}, {**th.multi, **vh.multi}))
        obj, dot, attr = target.rpartition(".")
        if dot and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", attr):
            for call in (f'setattr({obj}, "{attr}", {value})',
                         f'object.__setattr__({obj}, "{attr}", {value})'):
                out += _find(region, _pat(call), bound)
        return out


@dataclass
class ParsedFile:
    """A file's tree-sitter root (from the store's bytes), its lines and what is known of it."""

    path: str
    root: SgNode
    lines: list[str]
    facts: _Facts = field(init=False)

    def __post_init__(self) -> None:
        self.facts = _Facts(self.root)


def _substitute(text: str, bindings: dict[str, SgNode]) -> str:
    """A pattern with its bound metavariables written out, for messages only."""
    if not bindings:
        return text
    return re.sub(r"(?<!\$)\$([A-Z][A-Z0-9_]*)",
                  lambda m: bindings[m.group(1)].text() if m.group(1) in bindings else m.group(0),
                  text)


def _said(rule: Rule, bindings: dict[str, SgNode]) -> str:
    """A relation's pattern as it was searched for (bound metavariables filled in)."""
    return " ".join(_substitute(rule.pattern.text, bindings).split())


@dataclass
class _Eval:
    """Evaluation of rules inside one scope node (a def, a class or the module)."""

    facts: _Facts
    scope: SgNode
    notes: list[str] = field(default_factory=list)

    def constraint(self, nodes: list[SgNode], c: Constraint, b: dict[str, SgNode]) -> bool:
        ok = True
        if c.has is not None:
            ok = ok and any(_is(n, c.has.text, b) for n in nodes)
        if c.contains is not None:
            ok = ok and any(self.contains(n, c.contains.text, b) for n in nodes)
        if c.is_ is not None:
            ok = ok and len(nodes) == 1 and _is(nodes[0], c.is_.text, b)
        if c.regex is not None:
            ok = ok and re.search(c.regex, " ".join(n.text() for n in nodes)) is not None
        if c.any_:
            ok = ok and any(self.constraint(nodes, alt, b) for alt in c.any_)
        if c.not_ is not None:
            ok = ok and not self.constraint(nodes, c.not_, b)
        return ok

    def contains(self, node: SgNode, text: str, b: dict[str, SgNode]) -> bool:
        return _is(node, text, b) or any(self.facts.dead(h.node) is None
                                         for h in _find(node, _pat(text), b))

    def find(self, region: SgNode, rule: Rule, outer: dict[str, SgNode],
             every_form: bool = False) -> list[_Hit]:
        """Live nodes of ``region`` that satisfy ``rule`` completely (region itself included)."""
        return [h for h in self.facts.search(region, rule.pattern.text, outer, every_form)
                if self.facts.dead(h.node) is None and self.check(h, rule, outer) is None]

    def check(self, hit: _Hit, rule: Rule, outer: dict[str, SgNode]) -> str | None:
        """Why ``hit`` (already matching the pattern) does not satisfy ``rule``; None if it does."""
        return self.check_where(hit, rule, outer) or self.check_relations(hit, rule, outer)

    def check_where(self, hit: _Hit, rule: Rule, outer: dict[str, SgNode]) -> str | None:
        """Why the metavariable constraints of ``rule`` fail on ``hit``; None if they hold."""
        b = hit.bindings(outer)
        for name, c in rule.where.items():
            multi = name in rule.pattern.multi
            nodes = hit.multi.get(name, []) if multi else (
                [hit.caps[name]] if name in hit.caps else [])
            if not self.constraint(nodes, c, b):
                shown = ", ".join(_short(n, 40) for n in nodes) or "nothing"
                return f"{'$$$' if multi else '$'}{name} ({shown}) does not satisfy: {c.describe()}"
        return None

    def check_relations(self, hit: _Hit, rule: Rule, outer: dict[str, SgNode]) -> str | None:
        """Why the relations of ``rule`` fail on ``hit``; None if they all hold."""
        node = hit.node
        b = hit.bindings(outer)
        if rule.inside is not None:
            ok = False
            for anc in node.ancestors():
                if not _within(anc, self.scope):
                    break
                got = _at(anc, _pat(rule.inside.pattern.text), b)
                if got is not None and self.check(got, rule.inside, b) is None:
                    ok = True
                    break
            if not ok:
                return f"it is not inside `{rule.inside.pattern.short}`"
        if rule.has is not None and not self.find(node, rule.has, b):
            return f"it has no `{rule.has.pattern.short}` within it"
        if rule.guarded_by is not None and not self.guarded(node, rule.guarded_by.text, b):
            return f"it is not inside an `if {rule.guarded_by.short}:` block"
        for relation, earlier in ((rule.follows, True), (rule.precedes, False)):
            if relation is None:
                continue
            said = _said(relation, b)
            found, why = self.related(node, relation, b, earlier)
            if not found:
                detail = f" ({why})" if why else ""
                return f"`{said}` does not {'precede' if earlier else 'follow'} it{detail}"
            where = _span_text(_lines(found[-1 if earlier else 0].node))
            self.notes.append(f"{'after' if earlier else 'before'} `{said}` at {where}")
        if rule.not_ is not None:
            bad = self.find(self.facts.function_of(node, self.scope), rule.not_, b, every_form=True)
            if bad:
                return (f"`{_said(rule.not_, b)}` is present at "
                        f"{_span_text(_lines(bad[0].node))} (must be absent)")
        return None

    def related(self, node: SgNode, rule: Rule, b: dict[str, SgNode],
                earlier: bool) -> tuple[list[_Hit], str | None]:
        """Matches of a follows (``earlier``) / precedes rule that run before (after) ``node``
        in the same pass of the same function; and why the first other candidate does not."""
        region = self.facts.function_of(node, self.scope)
        own = self.facts.owner(node)
        here = node.range()
        out: list[_Hit] = []
        why: str | None = None
        for h in self.facts.search(region, rule.pattern.text, b, every_form=False):
            r = h.node.range()
            if (r.end.index > here.start.index) if earlier else (r.start.index < here.end.index):
                continue
            theirs = self.facts.owner(h.node)
            if theirs is not None and (own is None or _key(theirs) != _key(own)):
                fault: str | None = f"inside `{_describe(theirs)}` at line {_line(theirs)}"
            elif (fork := self.facts.exclusive(node, h.node)) is not None:
                fault = f"in another arm of `{_short(fork, 30)}` at line {_line(fork)} than it"
            else:
                fault = self.facts.dead(h.node)
                fault = f"unreachable, {fault}" if fault else self.check(h, rule, b)
            if fault is None:
                out.append(h)
            elif why is None:
                why = f"the one at {_span_text(_lines(h.node))}: {fault}"
        return out, why

    def guarded(self, node: SgNode, guard: str, b: dict[str, SgNode]) -> bool:
        """The node lies in the body (not the else) of an ``if``/``elif`` testing ``guard``."""
        forms = _guard_forms(guard)
        for anc in node.ancestors():
            if anc.kind() not in ("if_statement", "elif_clause"):
                continue
            body = anc.field("consequence")
            cond = anc.field("condition")
            if body is None or cond is None or not _within(node, body):
                continue
            if any(_is(term, form, b) for term in _conjuncts(cond) for form in forms):
                return True
        return False


class Engine:
    """Per-run evaluator: one parse per file, one evaluation per invariant."""

    def __init__(self, store: FileStore) -> None:
        self.store = store
        self._parsed: dict[str, ParsedFile | SourceError] = {}
        self._outcomes: dict[str, Outcome] = {}
        self.parse_count = 0
        """How many files were parsed (the bench reports it: one per distinct file)."""

    def parse(self, path: str) -> ParsedFile:
        """The file's tree; ``SourceError`` (cached too) when unreadable or not Python."""
        hit = self._parsed.get(path)
        if hit is None:
            hit = self._parse(path)
            self._parsed[path] = hit
        if isinstance(hit, SourceError):
            raise hit
        return hit

    def _parse(self, path: str) -> ParsedFile | SourceError:
        from ast_grep_py import SgRoot

        try:
            data = self.store.get(path).data
        except SourceError as exc:
            return exc
        if len(data) > MAX_PARSE_BYTES:
            return SourceError(path, f"is {len(data) / 2**20:.1f} MiB, over the "
                               f"{MAX_PARSE_BYTES // 2**20} MiB the invariant matcher parses; "
                               "invariants cannot be judged on it")
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            return SourceError(path, "is not UTF-8 text; cannot be parsed as Python")
        # Line numbering as in spans.decode_lines: CRLF and lone CR end a line.
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        self.parse_count += 1
        try:
            # Byte-compiling (never running) is the stdlib's full syntax check, and
            # about twice as fast as building an ``ast`` tree we would not use.
            with warnings.catch_warnings():  # e.g. invalid escapes: not ours to print
                warnings.simplefilter("ignore")
                compile(text, path, "exec", dont_inherit=True)
        except SyntaxError as exc:
            where = f"line {exc.lineno}" + (f", column {exc.offset}" if exc.offset else "")
            return SourceError(path, f"is not valid Python ({exc.msg} at {where}); "
                               "invariants cannot be judged on it")
        except ValueError as exc:  # e.g. NUL bytes
            return SourceError(path, f"is not valid Python ({exc})")
        except (MemoryError, RecursionError) as exc:
            # Pathologically nested code (``x = ----…1``) exhausts the compiler:
            # this file cannot be judged, the rest of the run can.
            why = ("the compiler ran out of memory" if isinstance(exc, MemoryError)
                   else str(exc) or "maximum recursion depth exceeded")
            return SourceError(path, f"could not be parsed as Python ({why}, e.g. on too deeply "
                               "nested code); invariants cannot be judged on it")
        return ParsedFile(path, SgRoot(text, "python").root(), text.split("\n"))

    def outcome(self, inv: Invariant) -> Outcome:
        """Evaluate (once) an invariant against the store's version of its file."""
        hit = self._outcomes.get(inv.id)
        if hit is None:
            hit = self._evaluate(inv)
            self._outcomes[inv.id] = hit
        return hit

    def _evaluate(self, inv: Invariant) -> Outcome:
        from pp1audit.errors import MissingFile

        try:
            parsed = self.parse(inv.file)
        except SourceError as exc:
            return Outcome(BROKEN, f"{exc.path} {exc.message}",
                           missing_file=isinstance(exc, MissingFile))
        try:
            return _evaluate_in(inv, parsed)
        except RecursionError:  # a RuntimeError, but the file's fault, not the rule's
            return Outcome(BROKEN, f"{inv.file} is nested too deeply to be judged")
        except (RuntimeError, ValueError) as exc:  # ast-grep refused something: a rule bug
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            return Outcome(BROKEN, f"rule could not be evaluated: {first}")


def _evaluate_in(inv: Invariant, parsed: ParsedFile) -> Outcome:
    facts = parsed.facts
    where = f"in {inv.scope}" if inv.scope else f"in {inv.file}"
    if inv.scope:
        scopes, missing = facts.resolve_scope(inv.scope)
        if missing is not None:
            return Outcome(VIOLATED, f"{inv.scope} is not defined in {inv.file}: {missing}")
    else:
        scopes = [parsed.root]
    found: list[_Hit] = []
    first_notes: list[str] = []
    for scope in scopes:
        why, good, notes = _evaluate_scope(inv, facts, scope, where)
        if why is not None:
            if len(scopes) > 1:
                why += (f" ({inv.scope} has {len(scopes)} definitions in branches that cannot be "
                        f"ordered, at lines {', '.join(str(_line(s)) for s in scopes)}: "
                        "the rule must hold in each)")
            return Outcome(VIOLATED, why)
        if not found:
            first_notes = notes
        found += good
    lines = _lines(found[0].node)
    notes = [*first_notes]
    if inv.every is not None:
        notes.append(f"every `{inv.every.pattern.short}` satisfies its relations")
    if len(scopes) > 1:
        notes.append(f"holds in each of the {len(scopes)} definitions of {inv.scope}")
    if len(found) > 1:
        notes.append(f"{len(found)} matches; the first shown")
    detail = f" ({'; '.join(notes)})" if notes else ""
    spans = tuple(_lines(h.node) for h in found)
    return Outcome(
        HOLDS,
        f"`{inv.rule.pattern.short}` holds {where} at {_span_text(lines)}{detail}",
        spans=spans,
        excerpts=tuple("\n".join(parsed.lines[a - 1 : b]) for a, b in spans),
    )


def _evaluate_scope(inv: Invariant, facts: _Facts, scope: SgNode,
                    where: str) -> tuple[str | None, list[_Hit], list[str]]:
    """(why the rule fails in this scope or None, the satisfying hits, the first one's notes)."""
    rule = inv.rule
    good: list[tuple[_Hit, _Eval, list[SgNode]]] = []
    reasons: list[str] = []
    elsewhere: list[str] = []  # candidates that do not count (nested, unreachable, re-bound)
    hits = facts.search(scope, rule.pattern.text, {}, every_form=False)
    for h in hits:
        at = f"`{rule.pattern.short}` at {_span_text(_lines(h.node))}"
        owner = facts.owner(h.node)
        if inv.scope and not facts.owned_by(h.node, scope):
            inside = f"inside `{_describe(owner)}` at line {_line(owner)}" if owner is not None \
                else "at module level"
            elsewhere.append(f"{at}: {inside}, not in {inv.scope} itself")
            continue
        dead = facts.dead(h.node)
        if dead is not None:
            elsewhere.append(f"{at}: unreachable, {dead}")
            continue
        rebound, others = facts.rebinding(h.node)
        if rebound is not None:
            elsewhere.append(f"{at}: {rebound}")
            continue
        ev = _Eval(facts, scope)
        why = ev.check(h, rule, {})
        if why is None:
            good.append((h, ev, others))
        else:
            reasons.append(f"{at}: {why}")
    if not good:
        if not hits:
            return f"`{rule.pattern.short}` not found {where}", [], []
        said = reasons + elsewhere  # the candidates that are code of the scope first
        more = f" ({len(hits)} candidates, none holds)" if len(hits) > 1 else ""
        return "; ".join(said[:3]) + ("; …" if len(said) > 3 else "") + more, [], []
    holding = {_key(s) for h, _, _ in good if (s := _binding_statement(h.node)) is not None}
    for h, _, others in good:
        for other in others:
            if _key(other) not in holding:
                return (f"`{rule.pattern.short}` holds at {_span_text(_lines(h.node))}, but "
                        f"line {_line(other)} (`{_short(other, 50)}`) may be the binding in force "
                        "instead (branches that cannot be ordered), and the rule does not hold "
                        "there"), [], []
    if inv.every is not None:
        why = _every(inv.every, facts, scope, where)
        if why is not None:
            return why, [], []
    return None, [h for h, _, _ in good], good[0][1].notes


def _every_region(facts: _Facts, scope: SgNode, rule: Rule) -> tuple[SgNode, SgNode | None]:
    """Where ``every`` looks, and whose ``self`` it means (None: any): the scope, or for
    ``self.<attr>`` in a method the whole class, since any of its methods can assign it."""
    parts = _assign_parts(rule.pattern.text)
    if parts is not None and parts[0].startswith("self.") and \
            scope.kind() == "function_definition":
        cls = facts.owner(scope)
        if cls is not None and cls.kind() == "class_definition":
            return cls, cls
    return scope, None


def _every(rule: Rule, facts: _Facts, scope: SgNode, where: str) -> str | None:
    """Why some match of ``rule`` breaks its relations, or None (at least one must exist)."""
    region, cls = _every_region(facts, scope, rule)
    seen = 0
    for hit in facts.search(region, rule.pattern.text, {}, every_form=True):
        if facts.dead(hit.node) is not None:
            continue  # never runs
        if cls is not None:
            nearest = next((a for a in hit.node.ancestors() if a.kind() == "class_definition"), None)
            if nearest is None or _key(nearest) != _key(cls):
                continue  # another class's `self`
        ev = _Eval(facts, region)
        if ev.check_where(hit, rule, {}) is not None:
            continue  # not one of the nodes the rule speaks about
        seen += 1
        why = ev.check_relations(hit, rule, {})
        if why is not None:
            return f"every: `{rule.pattern.short}` at {_span_text(_lines(hit.node))}: {why}"
    if seen == 0:
        return (f"every: `{rule.pattern.short}` not found {where} "
                "(an 'every' rule needs at least one match)")
    return None
