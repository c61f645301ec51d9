"""Rule patterns as ast-grep searches them, and the matches they yield.

A pattern's literals become metavariables compared by value (``'greedy'`` is
``"greedy"``); a metavariable already bound must capture the same code (equal
trees, not equal text); ``T = V`` and guard texts are read with the stdlib
parser. This is the one place that turns pattern text into ast-grep searches,
kept apart from the per-file facts and the rule evaluator, which only ask it
for ``Hit`` lists. Parsed patterns are cached by text across files."""

from __future__ import annotations

import ast
import bisect
import io
import tokenize
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from pp1audit.nodespans import span_of, start_of
from pp1audit.rules import assign_parts, metavariables
from pp1audit.syntaxtree import Key, constant_name, key, literal, named_items, unparen

if TYPE_CHECKING:  # pragma: no cover
    from ast_grep_py import SgNode


_LITERAL_KINDS = {str: ("string", "concatenated_string"), bytes: ("string", "concatenated_string"),
                  int: ("integer",), float: ("float",), complex: ("integer", "float")}
_LIT = "PP1LIT"
"""Prefix of the metavariables that stand for a pattern's literals."""


# --- pattern texts ---------------------------------------------------------------------------


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
class Pat:
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
def parse_pattern(text: str) -> Pat:
    single, multi = metavariables(text)
    literals: list[tuple[str, tuple[type, object]]] = []
    out = text
    if "$" + _LIT not in text:
        spans = _literal_spans(text)
        for i, (start, end, value) in reversed(list(enumerate(spans))):
            out = f"{out[:start]}${_LIT}{i}{out[end:]}"
            literals.append((f"{_LIT}{i}", value))
    return Pat(out, tuple(literals), single, multi)


@lru_cache(maxsize=512)
@lru_cache(maxsize=512)
def guard_forms(text: str) -> tuple[str, ...]:
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


# --- matches ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Hit:
    """One match: where it is, and what its metavariables captured."""

    node: SgNode
    caps: dict[str, SgNode] = field(default_factory=dict)
    multi: dict[str, list[SgNode]] = field(default_factory=dict)
    inexact: frozenset[str] = frozenset()
    """Captures of an assignment's value that are not the value its target gets: ``T += v``,
    ``T, U = v``, ``for T in v``, ``with v as T`` match ``T = $V`` with ``$V`` the ``v``
    there, which ``every``/``not`` must see, but ``T`` is not ``v``: what an ``every``'s
    ``require`` asks of ``$V`` cannot be shown to hold. A ``where`` reads ``v`` as the
    value's text, as it always has (PP1 allows ``accepted &= is_valid_draft`` so)."""

    def bindings(self, outer: dict[str, SgNode]) -> dict[str, SgNode]:
        """Outer bindings with this match's single captures added (outer ones win)."""
        return {**self.caps, **outer}


def _same(a: SgNode, b: SgNode) -> bool:
    """The same code: equal syntax trees, literals by value, parentheses and comments aside."""
    a, b = unparen(a), unparen(b)
    la, lb = literal(a), literal(b)
    if la is not None or lb is not None:
        return la == lb
    if a.kind() != b.kind():
        return False
    ca = [c for c in a.children() if c.kind() != "comment"]
    cb = [c for c in b.children() if c.kind() != "comment"]
    if not ca and not cb:
        return a.text() == b.text()
    return len(ca) == len(cb) and all(_same(x, y) for x, y in zip(ca, cb, strict=True))


def _capture(m: SgNode, pat: Pat, bound: dict[str, SgNode]) -> Hit | None:
    """The hit for an ast-grep match, if its literals and bound metavariables agree."""
    for name, value in pat.literals:
        got = m.get_match(name)
        if got is None or literal(got) != value:
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
    return Hit(m, caps, multi)


def _items(nodes: list[SgNode]) -> list[SgNode]:
    """A ``$$$`` capture's items; a body (``if c: $$$BODY``) captures its statements (ast-grep
    hands over the block, and with it any ``elif``/``else`` that follows: not the body's)."""
    items = named_items(nodes)
    if items and items[0].kind() == "block":
        return named_items(items[0].children())
    return items


def find(region: SgNode, pat: Pat, bound: dict[str, SgNode]) -> list[Hit]:
    """Matches of ``pat`` in ``region`` (itself included), in source order; an identifier
    that does not name a variable (``_not_a_variable``) is no match."""
    hits = (_capture(m, pat, bound) for m in region.find_all(pat.config())
            if not _not_a_variable(m))
    return [h for h in hits if h is not None]


_NAME_FIELDS = {"attribute": "attribute", "keyword_argument": "name"}
"""Parents whose identifier in that field names an attribute or a parameter, not a variable."""


def _not_a_variable(node: SgNode) -> bool:
    """``node`` is an identifier that, in Python, is not the variable it spells: the
    ``verify`` of ``self.verify``, of ``f(verify=x)``, of ``case P(verify=1)`` (a keyword
    pattern), of ``from verify import x`` / ``import verify as v`` / ``import a.verify``
    (a module's path: what is bound is ``a`` or ``v``). tree-sitter makes each an
    identifier, which a pattern ``verify`` matches; a ``where`` constraint, reading whole
    captured nodes, never sees them either. ``import verify`` and ``from x import
    verify`` bind the name: they count."""
    if node.kind() != "identifier":
        return False
    parent = node.parent()
    if parent is None:
        return False
    kind = parent.kind()
    if kind in _NAME_FIELDS:
        named = parent.field(_NAME_FIELDS[kind])
        return named is not None and key(named) == key(node)
    if kind == "keyword_pattern":
        return key(named_items(parent.children())[0]) == key(node)
    if kind == "dotted_name":
        return _module_path_part(parent, node)
    return False


def _module_path_part(dotted: SgNode, node: SgNode) -> bool:
    """``node``, a part of the dotted name ``dotted``, is a module path's and binds no
    variable of its name: any part but the first; the first of ``from M import …``'s
    module, of a relative import, of ``import M as v``. The first of ``import a.b`` (it
    binds ``a``), of a name ``from m import`` binds, or of ``case a.B()`` (it reads the
    variable ``a``) is a variable."""
    parts = named_items(dotted.children())
    if key(parts[0]) != key(node):
        return True
    holder = dotted.parent()
    if holder is None:
        return False
    if holder.kind() == "import_from_statement":
        module = holder.field("module_name")
        return module is not None and key(module) == key(dotted)
    return holder.kind() in ("relative_import", "aliased_import")


def keyword_hits(region: SgNode, text: str, bound: dict[str, SgNode], *,
                 anywhere: bool) -> list[Hit]:
    """For a pattern ``name=value``: the keyword arguments that are it, as a ``where``
    constraint reads them (``is_``): the name as Python reads it (NFKC), the value
    matching ``value`` (redundant parentheses aside). Empty for any other pattern.

    Which keyword arguments: with ``anywhere``, every one in ``region``, and each
    ``"name": value`` of a ``**{…}`` passed to a call with constant string keys, which
    Python passes as the keyword ``name`` (a forbidding reading, ``not``: widening it
    can only close the gate);
    without it, only ``region``'s own (``own_keywords``): a required ``has:
    verify=False`` must not be satisfied by ``self.send(cb=g(verify=False))``, whose
    ``send`` never receives it, nor ``contains: x = y`` by ``x = f(x=y)``, an
    assignment that is not ``x = y``."""
    kw = _keyword_pattern(text)
    if kw is None:
        return []
    name, value = kw
    pat = parse_pattern(value)
    pairs = [(n, n.field("name"), n.field("value"))
             for n in (region.find_all(kind="keyword_argument") if anywhere
                       else own_keywords(region))]
    if anywhere:
        pairs += _splat_pairs(region)
    out: list[Hit] = []
    for node, label, given in pairs:
        if label is None or given is None or _keyword_name(label) != name:
            continue
        hit = _value_hit(given, pat, bound)
        if hit is not None:
            out.append(Hit(node, hit.caps, hit.multi))
    out.sort(key=lambda h: start_of(h.node))
    return out


def _keyword_name(label: SgNode) -> str | None:
    """The keyword a keyword argument's name or a ``**{…}`` key passes (None: not known)."""
    return label.text() if label.kind() == "identifier" else constant_name(label)


def _argument_splats(region: SgNode) -> list[SgNode]:
    """The ``**expr`` arguments of the calls in ``region`` (not the ``**`` of a dict)."""
    return [s for s in region.find_all(kind="dictionary_splat")
            if (p := s.parent()) is not None and p.kind() == "argument_list"]


def _splat_dict(splat: SgNode) -> SgNode | None:
    """The ``{…}`` a ``**`` argument passes when Python reads its keywords from the text
    (every item a ``"name": value`` with a constant string key), else None."""
    items = named_items(splat.children())
    inner = unparen(items[0]) if items else None
    if inner is None or inner.kind() != "dictionary":
        return None
    pairs = named_items(inner.children())
    ok = all(p.kind() == "pair" and (k := p.field("key")) is not None and
             constant_name(unparen(k)) is not None for p in pairs)
    return inner if ok else None


def _splat_pairs(region: SgNode) -> list[tuple[SgNode, SgNode | None, SgNode | None]]:
    """(pair, key, value) of each ``"name": value`` a ``**{…}`` argument in ``region`` passes."""
    out: list[tuple[SgNode, SgNode | None, SgNode | None]] = []
    for splat in _argument_splats(region):
        d = _splat_dict(splat)
        for pair in named_items(d.children()) if d is not None else []:
            k = pair.field("key")
            out.append((pair, unparen(k) if k is not None else None, pair.field("value")))
    return out


def own_keywords(node: SgNode) -> list[SgNode]:
    """The keyword arguments ``node`` itself holds (redundant parentheses around it aside):
    itself, when it is one; a call's own argument list (not those of the calls nested in
    it); nothing else."""
    node = unparen(node)
    if node.kind() == "keyword_argument":
        return [node]
    args = node.field("arguments") if node.kind() == "call" else None
    if args is None or args.kind() != "argument_list":
        return []
    return [a for a in args.children() if a.kind() == "keyword_argument"]


def _value_hit(node: SgNode, pat: Pat, bound: dict[str, SgNode], *,
               reparse: bool = True) -> Hit | None:
    """``node`` as a match of ``pat``, parentheses around it aside, and (``reparse``)
    around its calls' arguments (``_without_argument_parens``): how ``is_`` reads a
    node, and ``keyword_hits`` an argument's value."""
    bare = unparen(node)
    for candidate in [node] if key(bare) == key(node) else [node, bare]:
        hit = at(candidate, pat, bound)
        if hit is not None:
            return hit
    plain = _without_argument_parens(bare) if reparse else None
    return at(plain, pat, bound) if plain is not None else None


def at(node: SgNode, pat: Pat, bound: dict[str, SgNode]) -> Hit | None:
    """``node`` itself as a match of ``pat``, or None. A node of another kind than the
    pattern's root is none (``root_kind``): ast-grep compiles the pattern text again for
    every ``matches``, ~20 µs, and a rule's constraints ask thousands of nodes."""
    kind = root_kind(pat.text)
    if kind is not None and node.kind() != kind:
        return None
    if not node.matches(pattern=pat.text):
        return None
    m = node.find(pattern=pat.text)  # pre-order: the node itself comes first
    if m is None or key(m) != key(node):
        return None
    return _capture(m, pat, bound)


@lru_cache(maxsize=2048)
def root_kind(text: str) -> str | None:
    """The kind of every node the pattern ``text`` matches, or None when that is not one
    kind (or not known).

    ast-grep matches a node against a pattern's root only when their kinds are equal,
    unless the root is a metavariable (``$X``), which matches any node. The pattern is
    matched against its own text, with ast-grep's stand-in for ``$`` (``µ``) so that its
    metavariables parse as names: the first node found, in pre-order, has the root's
    kind, and a metavariable root matches the module first (None). A pattern that does
    not find itself (another stand-in, a text ast-grep refuses) gives None: every node is
    then asked, as before."""
    from ast_grep_py import SgRoot

    try:
        found = SgRoot(text.replace("$", "\u00b5"), "python").root().find(pattern=text)
    except RuntimeError:
        return None
    return None if found is None or found.kind() == "module" else found.kind()


def _keyword_pattern(text: str) -> tuple[str, str] | None:
    """``name=value`` read as a keyword argument (an assignment as Python parses it): the
    name NFKC-normalised, as Python reads it and as the matcher reads files (any Python
    identifier: ``größe=1``); a metavariable (``$K=1``) names no keyword."""
    parts = assign_parts(text)
    if parts is None or not parts[0].isidentifier():
        return None
    return unicodedata.normalize("NFKC", parts[0]), parts[1]


def is_keyword_pattern(text: str) -> bool:
    """The pattern is ``name=value``, which also reads as a keyword argument (messages)."""
    return _keyword_pattern(text) is not None


def is_(node: SgNode, text: str, bound: dict[str, SgNode]) -> bool:
    """The node (parentheses aside) matches the pattern; ``name=value`` also a keyword argument.

    Redundant parentheses around a call's argument do not matter either:
    ``tl.constexpr((1 << 30))`` is ``tl.constexpr(1 << $BITS)``. A pattern's argument
    is a fixed node kind, so ast-grep alone would compare ``(1 << 30)`` with ``1 << …``
    and fail; the node is read again without those parentheses (``_without_argument_parens``).
    """
    keyword = node.kind() == "keyword_argument"
    if _value_hit(node, parse_pattern(text), bound, reparse=not keyword) is not None:
        return True
    if keyword:
        kw = _keyword_pattern(text)
        name, value = node.field("name"), node.field("value")
        if kw is not None and name is not None and value is not None and name.text() == kw[0]:
            return is_(value, kw[1], bound)
    return False


_NOT_BARE = frozenset({"yield", "named_expression"})
"""Parenthesised arguments kept as written: ``f((yield))`` needs them, and
``f(k=(x := 1))`` would not parse without them (a positional walrus would, but it is
left alone too: one rule for both, and no pattern relies on it)."""

_Span = tuple[int, int, int, int]
"""A parenthesised argument: where its ``(`` starts, its content starts and ends, its ``)`` ends."""


def _argument_span(paren: SgNode) -> _Span | None:
    """The span of ``paren`` when it is a call's argument (positional or a keyword's
    value) in redundant parentheses, else None."""
    parent = paren.parent()
    if parent is None:
        return None
    holder: SgNode | None = parent
    if parent.kind() == "keyword_argument":
        value = parent.field("value")
        if value is None or key(value) != key(paren):
            return None
        holder = parent.parent()
    if holder is None or holder.kind() != "argument_list":
        return None
    inner = unparen(paren)
    if key(inner) == key(paren) or inner.kind() in _NOT_BARE:
        return None
    (outer, after), (core, core_end) = span_of(paren), span_of(inner)
    return (outer, core, core_end, after)


@dataclass
class _FileParens:
    """One parsed file's parenthesised arguments, found once, and the copies read
    without them, made at most once per node: ``is_`` asks for them on every node a
    rule tries and fails, so a scan or a parse per call is quadratic on a file of
    nested calls (the review of 401f9ea: 33 KB, 2 s → 16 s)."""

    root: Any
    """The file's ``SgRoot``, kept alive so that its ``id`` names it alone."""
    spans: list[_Span]
    starts: list[int]
    plain: dict[Key, SgNode | None] = field(default_factory=dict)

    def within(self, node: SgNode) -> list[_Span]:
        """The spans that lie inside ``node`` (itself included)."""
        begin, end = span_of(node)
        first = bisect.bisect_left(self.starts, begin)
        last = bisect.bisect_right(self.starts, end)
        return [s for s in self.spans[first:last] if s[3] <= end]


_FILES: dict[int, _FileParens] = {}
_FILES_KEPT = 16
"""Files whose parenthesised arguments are remembered (the oldest is forgotten first)."""


def _file_parens(node: SgNode) -> _FileParens:
    """The remembered parenthesised arguments of ``node``'s file."""
    root = node.get_root()
    known = _FILES.get(id(root))
    if known is not None and known.root is root:
        return known
    spans = sorted(s for paren in root.root().find_all(kind="parenthesized_expression")
                   if (s := _argument_span(paren)) is not None)
    known = _FileParens(root, spans, [s[0] for s in spans])
    _FILES[id(root)] = known
    while len(_FILES) > _FILES_KEPT:
        del _FILES[next(iter(_FILES))]
    return known


def _without_argument_parens(node: SgNode) -> SgNode | None:
    """``node``, an expression, read again without the redundant parentheses around its
    calls' arguments, or None when it has none or is not an expression. Only a node
    that has such an argument is parsed again, and only once (``_FileParens``)."""
    parens = _file_parens(node)
    k = key(node)
    if k in parens.plain:
        return parens.plain[k]
    spans = parens.within(node)
    plain = _reparsed(node, spans) if spans else None
    parens.plain[k] = plain
    return plain


def _reparsed(node: SgNode, spans: list[_Span]) -> SgNode | None:
    """``node`` parsed again with the parentheses of ``spans`` (and what lies between them
    and the argument: spaces, comments) blanked out (same length, so nothing else
    moves). The copy is only ever matched, never reported: bound metavariables compare
    with it as syntax (``_same``), not by position."""
    from ast_grep_py import SgRoot

    origin = start_of(node)
    chars = list(node.text())
    for outer_start, core_start, core_end, outer_end in spans:
        for start, end in ((outer_start, core_start), (core_end, outer_end)):
            start, end = start - origin, end - origin
            chars[start:end] = [c if c == "\n" else " " for c in chars[start:end]]
    text = "(" + "".join(chars) + ")"  # bracketed: an argument may span lines
    try:
        ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None  # a statement, or not the same code without them: as written only
    statement = SgRoot(text, "python").root().child(0)
    wrapper = statement.child(0) if statement is not None else None
    if wrapper is None or wrapper.kind() != "parenthesized_expression":
        return None
    inner = named_items(wrapper.children())
    return inner[0] if len(inner) == 1 else None
