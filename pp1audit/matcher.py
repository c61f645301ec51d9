"""Evaluating invariant rules on Python source, each file parsed once per run.

ast-grep (tree-sitter) finds pattern matches; the relations that ast-grep
defines between *siblings* (``follows`` / ``precedes``) are evaluated here in
source order within the same function, because an audit's "the mask is applied
before the sampler call" spans different blocks. ``guarded_by`` reads the
``if``/``elif`` condition of the block holding the match. A file is accepted only
when the stdlib parser accepts it: tree-sitter repairs broken code silently,
and an invariant "holding" on repaired code would prove nothing (the stdlib check
is the running interpreter's grammar: code needing a newer Python is refused).

``Engine`` is created once per run over the ``FileStore``: it caches each
file's parse (whatever the number of rules on it) and each invariant's outcome
(shared by the invariant check and by citations anchored on it).
"""

from __future__ import annotations

import ast
import re
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pp1audit.errors import SourceError
from pp1audit.rules import Constraint, Invariant, Pattern, Rule
from pp1audit.store import FileStore

if TYPE_CHECKING:  # pragma: no cover
    from ast_grep_py import SgNode

HOLDS = "holds"
VIOLATED = "violated"
BROKEN = "broken"

_DEFS = ("function_definition", "class_definition")
_COMPOUND = ("if_statement", "elif_clause", "else_clause", "try_statement", "except_clause",
             "finally_clause", "with_statement", "for_statement", "while_statement", "block",
             "decorated_definition", "match_statement", "case_clause")


@dataclass(frozen=True)
class Outcome:
    """What an invariant's evaluation found: status, reason and matching spans."""

    status: str  # HOLDS, VIOLATED or BROKEN
    message: str
    spans: tuple[tuple[int, int], ...] = ()
    """1-based inclusive lines of every match of the rule's pattern that satisfies it."""
    excerpts: tuple[str, ...] = ()
    missing_file: bool = False


@dataclass
class ParsedFile:
    """A file's tree-sitter root (from the store's bytes) with its line count."""

    path: str
    root: SgNode
    lines: list[str]


def _lines(node: SgNode) -> tuple[int, int]:
    r = node.range()
    return (r.start.line + 1, r.end.line + 1)


def _span_text(lines: tuple[int, int]) -> str:
    """``line 7`` / ``lines 7-9`` for messages."""
    a, b = lines
    return f"line {a}" if a == b else f"lines {a}-{b}"


def _short(node: SgNode, limit: int = 60) -> str:
    text = " ".join(node.text().split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


_BOUND = re.compile(r"(?<!\$)\$([A-Z][A-Z0-9_]*)")


def _substitute(text: str, bindings: dict[str, str]) -> str:
    """Replace single metavariables already bound by an outer match with their text.

    This is how ``$LOGITS`` in a relation means *the same* expression as in the
    main pattern (ast-grep shares metavariables between a rule and its relations).
    """
    if not bindings:
        return text
    return _BOUND.sub(lambda m: bindings.get(m.group(1), m.group(0)), text)


def _said(rule: Rule, bindings: dict[str, str]) -> str:
    """A relation's pattern as it was searched for (bound metavariables filled in)."""
    return " ".join(_substitute(rule.pattern.text, bindings).split())


def _named_items(nodes: Iterable[SgNode]) -> list[SgNode]:
    """Captured nodes without punctuation and comments (``$$$ARGS`` keeps commas)."""
    return [n for n in nodes if n.is_named() and n.kind() != "comment"]


def _keyword_pattern(text: str) -> tuple[str, str] | None:
    """``name=value`` read as a keyword argument (an assignment as Python parses it)."""
    try:
        tree = ast.parse(re.sub(r"\$+([A-Z_][A-Z0-9_]*)", r"__pp1_\1", text))
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    body = tree.body
    if (len(body) == 1 and isinstance(body[0], ast.Assign) and len(body[0].targets) == 1
            and isinstance(body[0].targets[0], ast.Name) and "=" in text):
        name, _, value = text.partition("=")
        return name.strip(), value.strip()
    return None


def _is(node: SgNode, pattern: str) -> bool:
    """The node matches the pattern; ``name=value`` also matches a keyword argument."""
    if node.matches(pattern=pattern):
        return True
    if node.kind() == "keyword_argument":
        kw = _keyword_pattern(pattern)
        name, value = node.field("name"), node.field("value")
        if kw is not None and name is not None and value is not None:
            return name.text() == kw[0] and value.matches(pattern=kw[1])
    return False


def _contains(node: SgNode, pattern: str) -> bool:
    return _is(node, pattern) or node.find(pattern=pattern) is not None


@dataclass
class _Eval:
    """Evaluation of rules inside one scope node (a def, a class or the module)."""

    scope: SgNode
    notes: list[str] = field(default_factory=list)

    def captures(self, node: SgNode, name: str, multi: bool) -> list[SgNode]:
        if multi:
            return _named_items(node.get_multiple_matches(name))
        got = node.get_match(name)
        return [got] if got is not None else []

    def constraint(self, nodes: list[SgNode], c: Constraint, b: dict[str, str]) -> bool:
        ok = True
        if c.has is not None:
            ok = ok and any(_is(n, _substitute(c.has.text, b)) for n in nodes)
        if c.contains is not None:
            ok = ok and any(_contains(n, _substitute(c.contains.text, b)) for n in nodes)
        if c.is_ is not None:
            ok = ok and len(nodes) == 1 and _is(nodes[0], _substitute(c.is_.text, b))
        if c.regex is not None:
            ok = ok and re.search(c.regex, " ".join(n.text() for n in nodes)) is not None
        if c.not_ is not None:
            ok = ok and not self.constraint(nodes, c.not_, b)
        return ok

    def bindings(self, node: SgNode, pattern: Pattern, outer: dict[str, str]) -> dict[str, str]:
        out = dict(outer)
        for name in pattern.single:
            got = node.get_match(name)
            if got is not None and name not in out:
                out[name] = got.text()
        return out

    def function_of(self, node: SgNode) -> SgNode:
        """The nearest enclosing function of ``node`` inside the scope, else the scope."""
        limit = self.scope.range()
        for anc in node.ancestors():
            r = anc.range()
            if r.start.index < limit.start.index or r.end.index > limit.end.index:
                break
            if anc.kind() == "function_definition":
                return anc
        return self.scope

    def find(self, region: SgNode, rule: Rule, outer: dict[str, str]) -> list[SgNode]:
        """Nodes of ``region`` that satisfy ``rule`` completely (region itself included)."""
        text = _substitute(rule.pattern.text, outer)
        nodes = region.find_all(pattern=text)
        if region.matches(pattern=text) and not any(n.range() == region.range() for n in nodes):
            nodes.insert(0, region)
        return [n for n in nodes if self.check(n, rule, outer) is None]

    def check(self, node: SgNode, rule: Rule, outer: dict[str, str]) -> str | None:
        """Why ``node`` (already matching the pattern) does not satisfy ``rule``; None if it does."""
        return self.check_where(node, rule, outer) or self.check_relations(node, rule, outer)

    def check_where(self, node: SgNode, rule: Rule, outer: dict[str, str]) -> str | None:
        """Why the metavariable constraints of ``rule`` fail on ``node``; None if they hold."""
        b = self.bindings(node, rule.pattern, outer)
        for name, c in rule.where.items():
            multi = name in rule.pattern.multi
            nodes = self.captures(node, name, multi)
            if not self.constraint(nodes, c, b):
                shown = ", ".join(_short(n, 40) for n in nodes) or "nothing"
                return f"{'$$$' if multi else '$'}{name} ({shown}) does not satisfy: {c.describe()}"
        return None

    def check_relations(self, node: SgNode, rule: Rule, outer: dict[str, str]) -> str | None:
        """Why the relations of ``rule`` fail on ``node``; None if they all hold."""
        b = self.bindings(node, rule.pattern, outer)
        if rule.inside is not None:
            ok = False
            limit = self.scope.range()
            for anc in node.ancestors():
                r = anc.range()
                if r.start.index < limit.start.index or r.end.index > limit.end.index:
                    break
                if anc.matches(pattern=_substitute(rule.inside.pattern.text, b)) and \
                        self.check(anc, rule.inside, b) is None:
                    ok = True
                    break
            if not ok:
                return f"it is not inside `{rule.inside.pattern.short}`"
        if rule.has is not None and not self.find(node, rule.has, b):
            return f"it has no `{rule.has.pattern.short}` within it"
        if rule.guarded_by is not None:
            guard = _substitute(rule.guarded_by.text, b)
            if not self.guarded(node, guard):
                return f"it is not inside an `if {rule.guarded_by.short}:` block"
        here = node.range()
        if rule.follows is not None:
            before = [n for n in self.find(self.function_of(node), rule.follows, b)
                      if n.range().end.index <= here.start.index]
            if not before:
                return f"`{_said(rule.follows, b)}` does not precede it"
            self.notes.append(f"after `{_said(rule.follows, b)}` at "
                              f"{_span_text(_lines(before[-1]))}")
        if rule.precedes is not None:
            after = [n for n in self.find(self.function_of(node), rule.precedes, b)
                     if n.range().start.index >= here.end.index]
            if not after:
                return f"`{_said(rule.precedes, b)}` does not follow it"
            self.notes.append(f"before `{_said(rule.precedes, b)}` at "
                              f"{_span_text(_lines(after[0]))}")
        if rule.not_ is not None:
            bad = self.find(self.function_of(node), rule.not_, b)
            if bad:
                return (f"`{_said(rule.not_, b)}` is present at "
                        f"{_span_text(_lines(bad[0]))} (must be absent)")
        return None

    def guarded(self, node: SgNode, guard: str) -> bool:
        """The node lies in the body (not the else) of an ``if``/``elif`` testing ``guard``."""
        here = node.range()
        for anc in node.ancestors():
            if anc.kind() not in ("if_statement", "elif_clause"):
                continue
            body = anc.field("consequence")
            cond = anc.field("condition")
            if body is None or cond is None:
                continue
            r = body.range()
            if not (r.start.index <= here.start.index and here.end.index <= r.end.index):
                continue
            if any(_is(term, guard) for term in _conjuncts(cond)):
                return True
        return False


def _conjuncts(cond: SgNode) -> list[SgNode]:
    """``a and (b and c)`` → [a, b, c]; any other condition is its own single term."""
    while cond.kind() == "parenthesized_expression":
        inner = [c for c in cond.named_children() if c.kind() != "comment"]
        if len(inner) != 1:
            break
        cond = inner[0]
    op = cond.field("operator")
    if cond.kind() == "boolean_operator" and op is not None and op.text() == "and":
        left, right = cond.field("left"), cond.field("right")
        out = []
        for side in (left, right):
            if side is not None:
                out.extend(_conjuncts(side))
        return out
    return [cond]


def _definitions(node: SgNode, name: str) -> list[SgNode]:
    """Classes/functions called ``name`` directly in ``node``'s body (through if/try/…)."""
    body = node.field("body") if node.kind() in _DEFS else node
    out: list[SgNode] = []
    stack = list(reversed(body.named_children())) if body is not None else []
    while stack:
        child = stack.pop()
        kind = child.kind()
        if kind in _DEFS:
            ident = child.field("name")
            if ident is not None and ident.text() == name:
                out.append(child)
        elif kind in _COMPOUND:
            stack.extend(reversed(child.named_children()))
    return out


def resolve_scope(root: SgNode, scope: str) -> tuple[list[SgNode], str | None]:
    """The definitions a dotted name denotes, or a reason naming the missing part."""
    current = [root]
    for i, part in enumerate(scope.split(".")):
        found = [d for node in current for d in _definitions(node, part)]
        if not found:
            where = ".".join(scope.split(".")[:i]) or "the module"
            return [], f"no class or function '{part}' in {where}"
        current = found
    return current, None


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
        except (RuntimeError, ValueError) as exc:  # ast-grep refused something: a rule bug
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            return Outcome(BROKEN, f"rule could not be evaluated: {first}")


def _evaluate_in(inv: Invariant, parsed: ParsedFile) -> Outcome:
    root = parsed.root
    rule = inv.rule
    where = f"in {inv.scope}" if inv.scope else f"in {inv.file}"
    if inv.scope:
        scopes, missing = resolve_scope(root, inv.scope)
        if missing is not None:
            return Outcome(VIOLATED, f"{inv.scope} is not defined in {inv.file}: {missing}")
    else:
        scopes = [root]
    good: list[tuple[SgNode, _Eval]] = []
    reasons: list[str] = []
    candidates = 0
    for scope in scopes:
        for node in scope.find_all(pattern=rule.pattern.text):
            candidates += 1
            ev = _Eval(scope)
            why = ev.check(node, rule, {})
            if why is None:
                good.append((node, ev))
            else:
                reasons.append(f"`{rule.pattern.short}` at {_span_text(_lines(node))}: {why}")
    if not good:
        if candidates == 0:
            return Outcome(VIOLATED, f"`{rule.pattern.short}` not found {where}")
        more = f" ({candidates} candidates, none holds)" if candidates > 1 else ""
        return Outcome(VIOLATED, reasons[0] + more)
    if inv.every is not None:
        seen = 0
        for scope in scopes:
            why, n = _every(inv.every, scope)
            if why is not None:
                return Outcome(VIOLATED, why)
            seen += n
        if seen == 0:
            return Outcome(VIOLATED, f"every: `{inv.every.pattern.short}` not found {where} "
                           "(an 'every' rule needs at least one match)")
    first, ev = good[0]
    lines = _lines(first)
    notes = [*ev.notes]
    if inv.every is not None:
        notes.append(f"every `{inv.every.pattern.short}` satisfies its relations")
    if len(good) > 1:
        notes.append(f"{len(good)} matches; the first shown")
    detail = f" ({'; '.join(notes)})" if notes else ""
    return Outcome(
        HOLDS,
        f"`{rule.pattern.short}` holds {where} at {_span_text(lines)}{detail}",
        spans=tuple(_lines(n) for n, _ in good),
        excerpts=tuple("\n".join(parsed.lines[a - 1 : b]) for a, b in (_lines(n) for n, _ in good)),
    )


def _every(rule: Rule, scope: SgNode) -> tuple[str | None, int]:
    """(why some match of ``rule`` in scope breaks its relations or None, how many matched)."""
    seen = 0
    for node in scope.find_all(pattern=rule.pattern.text):
        ev = _Eval(scope)
        if ev.check_where(node, rule, {}) is not None:
            continue  # not one of the nodes the rule speaks about
        seen += 1
        why = ev.check_relations(node, rule, {})
        if why is not None:
            return f"every: `{rule.pattern.short}` at {_span_text(_lines(node))}: {why}", seen
    return None, seen
