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
  in its class/module, by any form (``:=`` too, also in a test; ``del a, x``), nor
  may it be by a binding that only may happen (a ``case`` capture, an
  ``except … as``, a star import). When branches leave several possible final
  bindings (``if TYPE_CHECKING: … else: …``), the rule must hold for each. The
  builtin ``exec`` / ``eval`` anywhere in the file may bind any name, however it is
  reached (``b.exec`` after ``import builtins as b``, ``getattr(x, "exec")``,
  ``from builtins import exec as run``); a name the file binds is not the builtin.
* **What runs.** A class attribute bound from outside the class body
  (``Cls.meth = f``, ``setattr(Cls, "meth", f)``, ``del Cls.meth`` anywhere in the
  file; ``cls.meth`` / ``type(self).meth`` and, for a method, ``self.meth`` in the
  class's methods), a swapped ``__code__`` or a ``__getattribute__`` on the class
  replaces the ``in:`` definition (and a matched class member), as does a same-file
  base class's (the one bound when the class statement runs) ``__getattribute__``
  or an ``__init_subclass__`` that may write the new class (any use of it but
  reading its name, storing it into a registry, passing it to
  ``super().__init_subclass__``), an instance made in the class body whose
  same-file class has a ``__set_name__`` that may write its ``owner`` (read the
  same way, or stored on the instance; made by any call reading the class or a name
  bound to it, or held through a name bound to an instance), or a metaclass; for
  ``in: Cls`` the same class-creation hooks count against the members searched; so may a
  decorator: only those the invariant's ``decorators:`` lists, or without it
  those the module imports (called with constants at most), are accepted.
* **Dead code.** A match under a constant-false test (``if False:``, ``while 0:``,
  after an ``elif True:``), or after a statement that never completes in its
  block (``return`` / ``raise`` / ``continue`` / ``break``, a statement that
  certainly evaluates a part of constants that raises, such as ``1 / 0``,
  ``print([][0])``, ``if None.x:`` or ``a, b = 1``, an ``if`` whose every
  arm leaves, a ``try`` whose body-or-``else`` and every handler leave or whose
  ``finally`` leaves, ``while True:`` without ``break``, a loop that certainly
  runs, ``for _ in [0]:``, and whose pass leaves; not ``while x: return``, which
  may run zero times like ``if x: return``) is not code. Two
  readings: what a rule requires must *certainly* run, so it also excludes code
  after ``with …:`` whose body leaves (a context manager may suppress an
  exception, but need not) and after ``assert False`` (``python -O`` strips
  it); what a rule
  forbids (``not``, the matches ``every`` quantifies over) counts when it *may*
  run. Each ``not`` turns the direction round.
* **Code that may run but need not.** ``unconditional: true`` on a rule asks its match to
  run on every pass that reaches it (``facts.conditional``: not an ``if`` arm, a loop body,
  an arm of ``a if t else b``, the right of ``and``): relative to its function for the
  main pattern, to the innermost code holding both matches for a relation.
* **Code that runs only for type checkers, or only when iterated.** What a rule requires
  reads ``typing.TYPE_CHECKING`` as the ``False`` it is at run time: the body of ``if
  TYPE_CHECKING:`` does not count, its ``else`` does (``not`` still sees both). Only when
  nothing in the file may set it: the name (or ``typing``) bound nowhere but by a
  module-level import from ``typing`` / ``typing_extensions``, read only in tests, and no
  ``globals`` / ``vars`` / ``setattr`` / ``__dict__`` / ``sys.modules`` / ``exec`` or string
  holding the word in the file; otherwise both arms count. Another module setting it is not
  seen, so an ``in:`` definition under ``if TYPE_CHECKING:`` is still judged: each
  definition the name may hold must hold the rule. A generator expression runs nothing
  until iterated: for what a rule requires, its element, ``if`` and later ``for`` clauses
  count only where the syntax shows it iterated (a call's argument, a ``for`` or
  comprehension iterable, searched by ``in`` / ``not in``, ``*gen``, unpacked by ``a, b =
  gen``, ``lst += gen``, ``yield`` / ``yield from``, ``return``), never bound to a name or
  left as a statement; a failure says "in a generator expression nothing iterates". A
  loop or comprehension over an empty literal (``for _ in ():``) runs nothing, in both
  directions.
* **Values, not spellings.** String and number literals in a pattern match by
  value (``'greedy'`` is ``"greedy"``), redundant parentheses around a captured
  node do not matter, and a ``guarded_by`` equality may be written either way
  round. A metavariable bound by the main pattern must capture the same code in
  the relations (compared as syntax trees, never substituted as text).
* **Keywords by direction.** ``name=value`` is an assignment to ast-grep; it also reads
  as a keyword argument (``patterns.keyword_hits``). What a rule requires (``has``,
  ``contains``, ``where``, ``every``'s relations) is never widened by that: only the
  matched call's own keyword argument counts, not one of a call nested in it (nor, for a
  captured argument of the call, one of a call passed positionally), and an assignment
  must be one. What a rule forbids (``not``) reads both, anywhere in its region, and
  a ``"name": value`` of a ``**{…}`` with constant string keys as the keyword ``name``:
  widening it can only close the gate.
* **Nested code in a match.** What a rule requires of a match (``has``, a ``where``'s
  ``contains``) is not satisfied by code in a function, lambda or class nested in the
  match (``_Eval.runs_with``): a function or lambda runs only if called; a class body runs
  with its ``class`` statement, but is a namespace of its own (its names are the class's
  attributes, not the match's variables), and ``in:`` and ``follows`` / ``precedes`` do
  not read it as the enclosing code either: one reading for every relation, on the safe
  side for a requirement. ``not`` sees all of it (it may be called). A failure names the
  text found there and why it does not count (``_Eval.skip``).
* **Assignments.** A pattern ``T = V`` also matches ``T: A = V``; under
  ``every`` and ``not`` (which must see every assignment) it also matches tuple
  targets, augmented assignments, ``for`` / ``with … as`` targets, ``:=`` and
  ``setattr(obj, "name", V)``, and writes through a namespace or a name made of
  constants (``obj.__dict__.update(name=V)``, ``vars(obj)["name"] = V``,
  ``setattr(obj, "na" + "me", V)``, ``operator.setitem(vars(obj), "name", V)``,
  ``super().__setattr__("name", V)`` on ``self``); a write whose name or value cannot
  be read (``setattr(obj, key, V)``, ``update(**d)``, ``setattr(*args)``) or an
  ``exec`` / ``eval`` in the region
  may make the assignment, which both fail on (``Facts.may_assign``); ``every`` on
  ``self.<attr>`` looks in every method of the class, of its subclasses in the
  same file, and in code the file attaches to them (``Cls.reset = _reset``).

Data flow is out of reach of a syntactic matcher: a value overwritten between
two matched statements is not noticed (the README says so). A blind spot of the grammar:
tree-sitter reads ``*f(x)`` in a bare tuple or a display (``return a, *f(x)``,
``[*f(x)]``) as a call of ``*f``, so no pattern ``f($X)`` matches there: a requirement
fails (safe), but a ``not:`` does not see such a call.

A file is accepted only when the stdlib parser accepts it: tree-sitter repairs
broken code silently, and an invariant "holding" on repaired code would prove
nothing (the stdlib check is the running interpreter's grammar: code needing a
newer Python is refused). Files over ``MAX_PARSE_BYTES`` are refused too. The
other way round, a file Python accepts but tree-sitter cannot read (an ``ERROR`` node in
its tree: ``return a, *(b)``, ``y = a, *-x``) is not judged either: tree-sitter skips what
it cannot read, and a ``not:`` would miss forbidden code hidden there (``_unread_line``).

``Engine`` is created once per run over the ``FileStore``: it caches each
file's parse (whatever the number of rules on it) and each invariant's outcome
(shared by the invariant check and by citations anchored on it).

The reading of code is below this module: ``syntaxtree`` (what a node says as
Python), ``patterns`` (pattern texts and their matches) and ``facts`` (one
file's scopes, dead code and final bindings). This module evaluates rules with
them and is the API the checks import.
"""

from __future__ import annotations

import io
import json
import re
import tokenize
import warnings
from dataclasses import InitVar, dataclass, field
from typing import TYPE_CHECKING

from pp1audit import nodespans, signatures
from pp1audit.errors import SourceError
from pp1audit.facts import Facts, class_hook_use
from pp1audit.facts.reachability import not_run
from pp1audit.identnorm import IdentifierError, nfkc_identifiers
from pp1audit.nodespans import lines_of, span_of, start_of
from pp1audit.patterns import (
    Hit,
    at,
    find,
    guard_forms,
    is_,
    is_keyword_pattern,
    keyword_hits,
    parse_pattern,
)
from pp1audit.rules import (
    Argument,
    Constraint,
    Invariant,
    Rule,
    assign_parts,
    decorator_key,
    regex_matches,
)
from pp1audit.store import FileStore
from pp1audit.stringfold import fold_literals
from pp1audit.syntaxtree import (
    Key,
    binding_statement,
    conjuncts,
    key,
    line,
    short,
    unparen,
    within,
)

if TYPE_CHECKING:  # pragma: no cover
    from ast_grep_py import SgNode

HOLDS = "holds"
VIOLATED = "violated"
BROKEN = "broken"

MAX_PARSE_BYTES = 8 * 1024 * 1024
"""Largest file the matcher parses. The stdlib compile, tree-sitter and scope
resolution grow with the file (an 18 MB file took 38 s); vLLM's largest module
is a few hundred KiB."""


@dataclass(frozen=True)
class Outcome:
    """What an invariant's evaluation found: status, reason and matching spans."""

    status: str  # HOLDS, VIOLATED or BROKEN
    message: str
    spans: tuple[tuple[int, int], ...] = ()
    """1-based inclusive lines of every match of the rule's pattern that satisfies it."""
    excerpts: tuple[str, ...] = ()
    missing_file: bool = False


def _span_text(lines: tuple[int, int]) -> str:
    """``line 7`` / ``lines 7-9`` for messages."""
    a, b = lines
    return f"line {a}" if a == b else f"lines {a}-{b}"


def _describe(scope: SgNode) -> str:
    name = scope.field("name")
    word = {"function_definition": "def", "class_definition": "class"}.get(scope.kind(), "lambda")
    return f"{word} {name.text()}" if name is not None else word


@dataclass
class ParsedFile:
    """A file's tree-sitter root (from the store's bytes), its lines and what is known of it."""

    path: str
    root: SgNode
    lines: list[str]
    spans: InitVar[nodespans.Table | None] = None
    """Where its nodes lie, when it has long lines (``nodespans``): held from its first
    question (the facts' indexes) on, and for as long as this parse lives."""
    facts: Facts = field(init=False)

    def __post_init__(self, spans: nodespans.Table | None) -> None:
        if spans is not None:
            nodespans.hold(self, spans)
        self.facts = Facts(self.root, "\n".join(self.lines))


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
    """Evaluation of rules inside one scope node (a def, a class or the module).

    ``forbid`` says which way the rule being evaluated looks: what a rule requires
    (the main pattern, ``has``, ``follows``, ``contains``) must certainly run, so
    code that may be skipped (after ``with …: return``) does not satisfy it; what it
    forbids (``not``, the matches ``every`` quantifies over) counts as soon as it
    may run. Each ``not`` turns the direction round.
    """

    facts: Facts
    scope: SgNode
    notes: list[str] = field(default_factory=list)
    forbid: bool = False
    skipped: list[str] = field(default_factory=list)
    """Matches left out because they never run here (``left_out``), for the message of a
    requirement that then fails: the text is there, and the user is told why it does not
    count."""

    def flipped(self) -> _Eval:
        """The evaluator for what a ``not`` holds: the other direction, its own notes."""
        return _Eval(self.facts, self.scope, [], not self.forbid)

    def dead(self, node: SgNode) -> str | None:
        """Why ``node`` does not count in this direction (``Facts.dead``)."""
        return self.facts.dead(node, certain=self.forbid)

    def runs_with(self, node: SgNode, anchor: SgNode) -> bool:
        """``node`` counts for what a rule requires of ``anchor`` (the node it matched):
        it is not in a function, lambda or class nested in ``anchor``, code that runs only
        if called (a class body binds class attributes, not the names of ``anchor``'s
        code), as ``follows`` / ``precedes`` read it. What a rule forbids counts there
        too (``forbid``): widening a ``not`` can only close the gate."""
        if self.forbid:
            return True
        owner = self.facts.owner(node)
        if owner is None or not within(owner, anchor) or key(owner) == key(anchor):
            return True
        inner = anchor.field("definition") if anchor.kind() == "decorated_definition" else None
        return inner is not None and key(owner) == key(inner)

    def constraint(self, nodes: list[SgNode], c: Constraint, b: dict[str, SgNode],
                   anchor: SgNode, multi: bool = False) -> bool:
        """``nodes`` (what a metavariable of the match ``anchor`` captured: a ``$$$`` one
        when ``multi``) satisfy ``c``."""
        ok = True
        if c.has is not None:
            ok = ok and any(is_(n, c.has.text, b) for n in nodes)
        if c.contains is not None:
            ok = ok and any(self.contains(n, c.contains.text, b, anchor, multi) for n in nodes)
        if c.is_ is not None:
            ok = ok and len(nodes) == 1 and is_(nodes[0], c.is_.text, b)
        if c.regex is not None:
            # each node on its own: two arguments side by side are not one joined literal
            ok = ok and regex_matches(c.regex, " ".join(fold_literals(n.text()) for n in nodes))
        if c.any_:
            ok = ok and any(self.constraint(nodes, alt, b, anchor, multi) for alt in c.any_)
        if c.all_:
            ok = ok and all(self.constraint(nodes, each, b, anchor, multi) for each in c.all_)
        if c.not_ is not None:
            ok = ok and not self.flipped().constraint(nodes, c.not_, b, anchor, multi)
        if c.argument is not None:
            ok = ok and self.argument(nodes, c.argument, b, anchor, multi)
        if c.parameter is not None:
            ok = ok and len(nodes) == 1 and _takes(nodes[0], c.parameter.name, c.parameter.at)
        return ok

    def unmet(self, nodes: list[SgNode], c: Constraint, b: dict[str, SgNode],
              anchor: SgNode, multi: bool) -> str:
        """What of ``c`` the capture fails, for the message: of an ``all`` alone, the
        members that fail (five arguments asked, one swapped: that one named), else all
        of ``c``."""
        if not c.all_ or c != Constraint(all_=c.all_):
            return c.describe()
        unmet = [e for e in c.all_ if not self.constraint(nodes, e, b, anchor, multi)]
        if not unmet or len(unmet) == len(c.all_):
            return c.describe()
        return (" and ".join(e.describe() for e in unmet)
                + f" (the other {len(c.all_) - len(unmet)} of the {len(c.all_)} asked hold)")

    def argument(self, nodes: list[SgNode], a: Argument, b: dict[str, SgNode],
                 anchor: SgNode, multi: bool) -> bool:
        """The call ``nodes`` are the arguments of (``multi``) or are passes for ``a.name``
        what ``a.value`` asks. Where the text cannot tell which argument binds it (a
        ``*splat`` before its place, a ``**kw``, a callee not found or defined in branches
        that disagree) a requirement does not hold and what is forbidden does (``forbid``):
        either way the gate can only close."""
        call = signatures.arguments_of(nodes, multi)
        if call is None:
            return False
        at, by_keyword = a.at, True
        if a.of is not None or a.callee is not None:
            definitions, why = self._callees(a, b)
            read = {(signatures.place_in(d, a.name, signatures.called(call[0])),
                     sig.by_keyword(a.name))
                    for d in definitions if (sig := signatures.signature_of(d)) is not None}
            if why is None and len(read) > 1:
                why = "its definitions (in branches) take it at different places"
            if why is not None:
                self.skip(call[0].parent() or call[0], why)
                return self.forbid
            at, by_keyword = read.pop()
        passed = signatures.passed_for(call[0], call[1], a.name, at, by_keyword)
        if passed.unknown and self.forbid:
            return True
        return any(a.value is None or self.constraint([v], a.value, b, anchor)
                   for v in passed.values)

    def _callees(self, a: Argument, b: dict[str, SgNode]) -> tuple[list[SgNode], str | None]:
        """The definitions an ``argument``'s ``of`` names (the bound one, or each the dotted
        name may hold), or why there are none to read."""
        if a.of is not None:
            found = [b[a.of]] if a.of in b else []
            said = f"${a.of}"
            missing = None if found else "it is not bound here"
        else:
            chain, missing = self.facts.scope_chain(a.callee or "")
            found = chain[-1] if missing is None and chain else []
            said = f"`{a.callee}`"
        bad = next((d for d in found if signatures.function_of(d) is None), None)
        if missing is None and bad is not None:
            missing = f"it is `{short(bad, 40)}` at line {line(bad)}, not a function definition"
        return found, (None if missing is None else
                       f"where it binds `{a.name}` is not known: {said} ({missing})")

    def contains(self, node: SgNode, text: str, b: dict[str, SgNode], anchor: SgNode,
                 multi: bool = False) -> bool:
        """``node``, captured by the match ``anchor``, is or holds (live) ``text``, not in
        code nested in ``anchor`` that runs only if called (``runs_with``); ``name=value``
        also as a keyword argument (``keyword_hits``: the node's own, or anywhere in it where
        the rule forbids). An argument ``$$$A`` captured of a call (``self.send($$$A)``:
        ``multi``) is read as that call's argument: only when it is itself a keyword
        argument, never through the keywords of a call passed positionally
        (``dict(verify=False)``). A single ``$X`` that is a call is asked about its own
        argument list (``s.mount($P, $ADAPTER)``: ``HTTPAdapter(max_retries=3)``)."""
        if is_(node, text, b):
            return True
        kws = [] if not self.forbid and multi and _positional(node) \
            else keyword_hits(node, text, b, anywhere=self.forbid)
        found = False
        for h in [*find(node, parse_pattern(text), b), *kws]:
            why = self.left_out(h.node, anchor)
            if why is None:
                found = True
                break
            self.skip(h.node, why)
        return found

    def find(self, region: SgNode, rule: Rule, outer: dict[str, SgNode],
             every_form: bool = False) -> list[Hit]:
        """Live nodes of ``region`` that satisfy ``rule`` completely (region itself included),
        in source order; ``name=value`` also as a keyword argument (``keyword_hits``)."""
        hits = _with_keywords(self.facts, region, rule, outer, every_form, self.forbid)
        out: list[Hit] = []
        for h in hits:
            why = self.left_out(h.node, region)
            if why is None:
                if self.check(h, rule, outer, region) is None:
                    out.append(h)
            elif _Eval(self.facts, self.scope, [], self.forbid).check(h, rule, outer,
                                                                      region) is None:
                self.skip(h.node, why)  # it would hold, were it code that runs here
        return out

    def failed_within(self, node: SgNode, rule: Rule, b: dict[str, SgNode]) -> str:
        """Why the first node within ``node`` that matches a ``has`` rule's pattern does not
        satisfy the rule, for its message: "it has no X within it" alone reads as if X
        were missing when it is there and one of its own relations broke (the config's
        field is there; a keyword gives it another value)."""
        for h in self.facts.search(node, rule.pattern.text, b, every_form=False):
            if self.left_out(h.node, node) is None:
                why = self.check(h, rule, b, node)
                if why is not None:
                    return f" (the one at {_span_text(lines_of(h.node))}: {why})"
        return ""

    def left_out(self, node: SgNode, anchor: SgNode) -> str | None:
        """Why ``node``, found in the match ``anchor``, does not count for it: code that does not
        run in this direction (``dead``), or code nested in ``anchor`` that runs only if called
        (``runs_with``); None when it counts."""
        why = self.dead(node)
        if why is not None:
            return not_run(why)
        if self.runs_with(node, anchor):
            return None
        owner = self.facts.owner(node)
        if owner is None:  # pragma: no cover - runs_with holds outside any scope
            return "in nested code"
        if owner.kind() == "class_definition":
            return (f"inside `{_describe(owner)}` at line {line(owner)}, a class body nested in "
                    "this match: its names are the class's attributes, not this code's")
        what = "function" if owner.kind() == "function_definition" else "lambda"
        return (f"inside `{_describe(owner)}` at line {line(owner)}, a nested {what} that this "
                "match never runs (it runs only if called)")

    def skip(self, node: SgNode, why: str) -> None:
        """Remember a match left out (``skipped``): the first few, once each."""
        said = f"`{short(node, 40)}` found at {_span_text(lines_of(node))}, but {why}"
        if said not in self.skipped and len(self.skipped) < 3:
            self.skipped.append(said)

    def skipped_since(self, start: int) -> str:
        """`` (… found at line N, but …)`` for the matches left out since ``start``."""
        said = self.skipped[start:]
        return f" ({'; '.join(said[:2])})" if said else ""

    def check(self, hit: Hit, rule: Rule, outer: dict[str, SgNode],
              runs_on: SgNode | None = None) -> str | None:
        """Why ``hit`` (already matching the pattern) does not satisfy ``rule``; None if it does.
        ``runs_on``: the code on whose every pass an ``unconditional`` match must run (the
        match a relation is asked of, or the innermost node holding both); default its
        function."""
        return self.check_where(hit, rule, outer) or self.check_relations(hit, rule, outer,
                                                                          runs_on)

    def check_where(self, hit: Hit, rule: Rule, outer: dict[str, SgNode],
                    required: bool = False) -> str | None:
        """Why the metavariable constraints of ``rule`` fail on ``hit``; None if they hold.

        ``required``: its ``require`` instead of its ``where`` (an ``every``'s matches)."""
        b = hit.bindings(outer)
        for name, c in (rule.require if required else rule.where).items():
            multi = name in rule.pattern.multi
            nodes = hit.multi.get(name, []) if multi else (
                [hit.caps[name]] if name in hit.caps else [])
            if required and name in hit.inexact:
                return (f"{'$$$' if multi else '$'}{name}: `{short(hit.node, 50)}` does not "
                        "give its target that value itself (an augmented assignment, an "
                        "unpacking, a `for` or `with` target), so it cannot be shown to "
                        f"satisfy: {c.describe()}")
            start = len(self.skipped)
            if not self.constraint(nodes, c, b, hit.node, multi):
                shown = ", ".join(short(n, 40) for n in nodes) or "nothing"
                return (f"{'$$$' if multi else '$'}{name} ({shown}) does not satisfy: "
                        f"{self.unmet(nodes, c, b, hit.node, multi)}{_contains_hint(c)}"
                        f"{self.skipped_since(start)}")
        return None

    def check_relations(self, hit: Hit, rule: Rule, outer: dict[str, SgNode],
                        runs_on: SgNode | None = None) -> str | None:
        """Why the relations of ``rule`` fail on ``hit``; None if they all hold."""
        node = hit.node
        b = hit.bindings(outer)
        if rule.require:
            why = self.check_where(hit, rule, outer, required=True)
            if why is not None:
                return f"{why} (required of every match)"
        holder: SgNode | None = None
        if rule.inside is not None:
            for anc in node.ancestors():
                if not within(anc, self.scope):
                    break
                got = at(anc, parse_pattern(rule.inside.pattern.text), b)
                if got is not None and self.check(got, rule.inside, b) is None:
                    holder = anc
                    break
            if holder is None:
                return f"it is not inside `{rule.inside.pattern.short}`"
        if rule.unconditional and rule.guarded_by is None:
            region = runs_on if runs_on is not None else self.facts.function_of(node, self.scope)
            if holder is not None:
                region = _part_holding(holder, node)
            why = self.facts.conditional(node, region, certain=self.forbid)
            if why is None and holder is not None:
                why = _leaves_before(node, region)   # as under a guard: no narrowing exit
            if why is not None:
                around = (f" whenever `{rule.inside.pattern.short}` runs"
                          if rule.inside is not None else "")
                return (f"it runs only on some passes{around}: {why} (the rule is "
                        "unconditional)")
        start = len(self.skipped)
        if rule.has is not None and not self.find(node, rule.has, b):
            return (f"it has no `{rule.has.pattern.short}` within it{_has_hint(node, rule.has)}"
                    f"{self.failed_within(node, rule.has, b)}{self.skipped_since(start)}")
        if rule.guarded_by is not None and not self.guarded(node, rule.guarded_by.text, b):
            return f"it is not inside an `if {rule.guarded_by.short}:` block"
        if rule.unconditional and rule.guarded_by is not None:
            why = self.runs_whenever(node, rule.guarded_by.text, b)
            if why is not None:
                return (f"it runs only on some passes on which `{rule.guarded_by.short}` "
                        f"holds: {why} (the rule is unconditional under its guard)")
        for relation, earlier in ((rule.follows, True), (rule.precedes, False)):
            if relation is None:
                continue
            said = _said(relation, b)
            found, why = self.related(node, relation, b, earlier)
            if not found:
                detail = f" ({why})" if why else ""
                return f"`{said}` does not {'precede' if earlier else 'follow'} it{detail}"
            where = _span_text(lines_of(found[-1 if earlier else 0].node))
            self.notes.append(f"{'after' if earlier else 'before'} `{said}` at {where}")
        for forbidden in rule.not_:
            region = self.facts.function_of(node, self.scope)
            bad = self.flipped().find(region, forbidden, b, every_form=True)
            if bad:
                shown = f" (`{short(bad[0].node, 50)}`)" if forbidden.in_place else ""
                return (f"`{_said(forbidden, b)}` is present {_present_as(bad[0].node)}{shown}"
                        " (must be absent)")
            maybe = self.unreadable(region, forbidden, b)
            if maybe is not None:
                return maybe
        return None

    def unreadable(self, region: SgNode, rule: Rule, b: dict[str, SgNode]) -> str | None:
        """Why a forbidden ``obj.attr = v`` may be made in ``region`` by code that cannot be
        read as one (``Facts.may_assign``: a name or value not known, ``exec``), or None.

        Only when the ``not`` forbids (this evaluator requires): under a ``not`` that is
        itself forbidden, a ``not`` whose absence cannot be shown leaves the forbidden
        match counted, the safe reading there."""
        if self.forbid:
            return None
        for where, why in self.facts.may_assign(region, rule.pattern.text, b):
            if self.flipped().dead(where) is None:
                return (f"`{_said(rule, b)}` may be made at line {line(where)} by "
                        f"`{short(where, 50)}` ({why}), so it cannot be shown absent")
        return None

    def related(self, node: SgNode, rule: Rule, b: dict[str, SgNode],
                earlier: bool) -> tuple[list[Hit], str | None]:
        """Matches of a follows (``earlier``) / precedes rule that run before (after) ``node``
        in the same pass of the same function; and why the first other candidate does not."""
        region = self.facts.function_of(node, self.scope)
        own = self.facts.owner(node)
        here_start, here_end = span_of(node)
        out: list[Hit] = []
        why: str | None = None
        for h in self.facts.search(region, rule.pattern.text, b, every_form=False):
            their_start, their_end = span_of(h.node)
            if (their_end > here_start) if earlier else (their_start < here_end):
                continue
            theirs = self.facts.owner(h.node)
            if theirs is not None and (own is None or key(theirs) != key(own)):
                fault: str | None = f"inside `{_describe(theirs)}` at line {line(theirs)}"
            elif (fork := self.facts.exclusive(node, h.node)) is not None:
                fault = f"in another arm of `{short(fork, 30)}` at line {line(fork)} than it"
            else:
                fault = self.dead(h.node)
                fault = not_run(fault) if fault else self.check(h, rule, b,
                                                                _holding(node, h.node))
            if fault is None:
                out.append(h)
            elif why is None:
                why = f"the one at {_span_text(lines_of(h.node))}: {fault}"
        return out, why

    def runs_whenever(self, node: SgNode, guard: str, b: dict[str, SgNode]) -> str | None:
        """Why ``node`` may be skipped on a pass of its function on which ``guard`` holds,
        or None: it is in the body of an ``if`` testing exactly ``guard`` (not ``guard and
        x``, which narrows it, nor an ``elif``, which runs only when the tests above fail),
        unconditional in that body, and that ``if`` unconditional in the function.

        What ``unconditional`` means beside ``guarded_by`` (the two would otherwise never
        hold together): "the cache is stored whenever there is a cache" is broken by
        ``if cache is not None and PER_TOKEN_COL:`` as surely as by no store, while
        ``guarded_by`` alone, a claim that the code runs *only* under the test, rightly
        holds for a narrower one."""
        forms = guard_forms(guard)
        function = self.facts.function_of(node, self.scope)
        why: str | None = None
        for anc in node.ancestors():
            if not within(anc, function):
                break
            body = anc.field("consequence") if anc.kind() == "if_statement" else None
            cond = anc.field("condition") if body is not None else None
            if body is None or cond is None or not within(node, body):
                continue
            if not any(is_(unparen(cond), form, b) for form in forms):
                if why is None and any(is_(t, f, b) for t in conjuncts(cond) for f in forms):
                    why = (f"the `if` at line {line(anc)} tests `{short(cond, 60)}`, narrower "
                           "than the guard")
                continue
            why = (self.facts.conditional(node, body, certain=self.forbid)
                   or _leaves_before(node, body)
                   or self.facts.conditional(anc, function, certain=self.forbid))
            if why is None:
                return None
        return why or ("no `if` around it tests exactly the guard (an `elif` runs only when "
                       "the tests above it fail)")

    def guarded(self, node: SgNode, guard: str, b: dict[str, SgNode]) -> bool:
        """The node lies in the body (not the else) of an ``if``/``elif`` testing ``guard``."""
        forms = guard_forms(guard)
        for anc in node.ancestors():
            if anc.kind() not in ("if_statement", "elif_clause"):
                continue
            body = anc.field("consequence")
            cond = anc.field("condition")
            if body is None or cond is None or not within(node, body):
                continue
            if any(is_(term, form, b) for term in conjuncts(cond) for form in forms):
                return True
        return False


def _part_holding(holder: SgNode, node: SgNode) -> SgNode:
    """The code of ``holder`` (an ``inside`` match) on whose every pass ``unconditional``
    asks ``node`` to run: a definition's whole code; of a compound statement, the part
    holding ``node`` (an ``if``'s body, a loop's body: ``inside: if T: $$$BODY`` with
    ``unconditional`` says "whenever that body runs", not "whenever the function does")."""
    if holder.kind() in _OWN_CODE_ENDS or holder.kind() in ("module", "decorated_definition"):
        return holder
    return next((c for c in holder.children() if within(node, c) and key(c) != key(node)),
                holder)


_LEAVING = ("return_statement", "raise_statement", "break_statement", "continue_statement")
"""Statements that leave the code around them (a ``break``/``continue`` its loop)."""

_OWN_CODE_ENDS = ("function_definition", "lambda", "class_definition")
"""Where a statement's own code ends: a ``return`` in a nested ``def`` leaves that."""


def _leaves_before(node: SgNode, region: SgNode) -> str | None:
    """A statement before ``node`` in ``region`` that may leave it first, said, or None.

    ``if C: (if x: return) store()`` stores only when C holds and x does not: the
    narrowing ``C and not x`` that ``unconditional`` beside ``guarded_by`` refuses, which
    the arms around ``node`` (``facts.conditional``) do not show. A ``break`` or
    ``continue`` whose loop lies in that statement stays in it; an ``assert`` does not
    count (``python -O`` strips it, and one states what holds)."""
    child = node
    for parent in node.ancestors():
        if parent.kind() in ("block", "module"):
            for stmt in parent.children():
                if key(stmt) == key(child):
                    break
                leaving = _leaving(stmt)
                if leaving is not None:
                    return (f"after `{short(leaving, 40)}` at line {line(leaving)}, which may "
                            "leave first")
        if key(parent) == key(region):
            return None
        child = parent
    return None


def _leaving(stmt: SgNode) -> SgNode | None:
    """The first statement in ``stmt`` (itself included) that leaves the code holding
    ``stmt``, or None."""
    found = [stmt] if stmt.kind() in _LEAVING else []
    for kind in _LEAVING:
        found += stmt.find_all(kind=kind)
    for leaving in sorted(found, key=start_of):
        between = [a for a in leaving.ancestors() if within(a, stmt)]
        if any(a.kind() in _OWN_CODE_ENDS for a in between):
            continue  # it leaves a nested definition, not this code
        if leaving.kind() in ("break_statement", "continue_statement") and any(
                a.kind() in ("for_statement", "while_statement") for a in between):
            continue  # it leaves a loop within the statement
        return leaving
    return None


def _takes(definition: SgNode, name: str, at: int) -> bool:
    """``definition`` takes ``name`` at positional place ``at`` (``self`` counted), a
    parameter its keyword binds too (not before a ``/``): what ``parameter:`` pins."""
    sig = signatures.signature_of(definition)
    return sig is not None and sig.positional[at:at + 1] == (name,) and at >= sig.positional_only


def _holding(a: SgNode, b: SgNode) -> SgNode:
    """The innermost node holding both ``a`` and ``b`` (the file's root at worst)."""
    mine = {key(n) for n in (a, *a.ancestors())}
    return next(n for n in (b, *b.ancestors()) if key(n) in mine)


def _positional(node: SgNode) -> bool:
    """``node`` is a call's argument other than a keyword argument (parentheses aside)."""
    if node.kind() == "keyword_argument":
        return False
    holder = node.parent()
    while holder is not None and holder.kind() == "parenthesized_expression":
        holder = holder.parent()
    return holder is not None and holder.kind() == "argument_list"


def _present_as(node: SgNode) -> str:
    """Where a forbidden ``name = value`` is, for a message: a keyword argument of a call
    or class statement (or a ``"name": value`` of a ``**{…}`` passed to one) is said to
    be one, not an assignment."""
    at = f"at {_span_text(lines_of(node))}"
    if node.kind() not in ("keyword_argument", "pair"):
        return at
    args = next((a for a in node.ancestors() if a.kind() == "argument_list"), None)
    holder = args.parent() if args is not None else None
    if holder is None:
        return at
    if holder.kind() == "class_definition":
        title = holder.field("name")
        to = f"class {title.text() if title is not None else '?'}(…)"
    else:
        fn = holder.field("function")
        to = f"{short(fn, 40) if fn is not None else '?'}(…)"
    if node.kind() == "pair":
        return f"as the keyword `{short(node, 40)}` passed by `**{{…}}` to `{to}` {at}"
    label = node.field("name")
    return f"as the keyword argument `{label.text() if label else '?'}=…` of `{to}` {at}"


def _has_hint(node: SgNode, has: Rule) -> str:
    """How ``has: name=value`` was read, when it failed: as the matched call's own keyword
    argument, or (the match not being a call) only as an assignment."""
    if not is_keyword_pattern(has.pattern.text):
        return ""
    if unparen(node).kind() == "call":
        return " (a keyword argument counts only in the call's own argument list)"
    return " (read as an assignment: a keyword argument counts only in a matched call's own " \
        "argument list, and this match is not a call)"


def _contains_hint(c: Constraint) -> str:
    """How ``contains: name=value`` was read, when a ``where`` failed on it."""
    if c.contains is None or not is_keyword_pattern(c.contains.text):
        return ""
    return (" (a keyword argument counts only as a captured argument itself or in a captured "
            "call's own argument list; not in code nested in a def, lambda or class)")


def _other_encoding(data: bytes, text: str) -> str | None:
    """Why Python would read ``data`` as other text than its UTF-8 decoding ``text``
    (None when it reads the same). A coding cookie decides: ``# coding: utf-7`` or
    ``unicode_escape`` turn ``+AAo-`` / ``\\u000a`` inside a comment into a line
    break for Python only, so code the matcher sees as a comment would run."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:  # an unknown codec, or a cookie that contradicts a BOM
        return f"declares an encoding Python refuses ({exc.msg})"
    if encoding in ("utf-8", "utf-8-sig"):
        return None
    try:
        same = data.decode(encoding) == text
    except (UnicodeDecodeError, LookupError):
        same = False
    return None if same else \
        f"declares `coding: {encoding}`, which Python reads as other text than UTF-8"


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
        why = _other_encoding(data, text)
        if why is not None:
            return SourceError(path, f"{why}; invariants cannot be judged on it")
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
            return SourceError(path, f"is not valid Python ({exc.msg}{_syntax_error_place(exc, text)}); "
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
        try:
            text = nfkc_identifiers(text)  # names as Python reads them: `ſample` is `sample`
        except IdentifierError as exc:
            return SourceError(path, f"cannot be read as Python reads it: {exc}; "
                               "invariants cannot be judged on it")
        except (MemoryError, RecursionError):  # an f-string nested thousands deep
            return SourceError(path, "its identifiers could not be read (too deeply nested "
                               "code); invariants cannot be judged on it")
        root = SgRoot(text, "python").root()
        unread = _unread_line(root)
        if unread is not None:
            return SourceError(path, f"line {unread}: the parser used for rules cannot read this "
                               "code (Python can); not judged")
        return ParsedFile(path, root, text.split("\n"), nodespans.place(root, text))

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
            return Outcome(BROKEN, exc.sentence,
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
    scope_notes: list[str] = []
    if inv.scope:
        chain, missing = facts.scope_chain(inv.scope)
        if missing is not None:
            return Outcome(VIOLATED, f"{inv.scope} is not defined in {inv.file}: {missing}")
        why, scope_notes = _kept(inv, inv.scope, facts, chain)
        if why is not None:
            return Outcome(VIOLATED, why)
        # Every definition the name may hold must hold the rule, one in `if TYPE_CHECKING:`
        # too: which arm runs is not known for certain (a TYPE_CHECKING set at run time).
        scopes = chain[-1]
    else:
        scopes = [parsed.root]
    found: list[Hit] = []
    first_notes: list[str] = []
    for scope in scopes:
        why, good, notes = _evaluate_scope(inv, facts, scope, where)
        if why is not None:
            if len(scopes) > 1:
                why += (f" ({inv.scope} has {len(scopes)} definitions in branches that cannot be "
                        f"ordered, at lines {', '.join(str(line(s)) for s in scopes)}: "
                        "the rule must hold in each)")
            return Outcome(VIOLATED, why)
        if not found:
            first_notes = notes
        found += good
    lines = lines_of(found[0].node)
    notes = [*first_notes, *scope_notes]
    for every in inv.every:
        notes.append(f"every `{every.pattern.short}` satisfies its relations")
    if len(scopes) > 1:
        notes.append(f"holds in each of the {len(scopes)} definitions of {inv.scope}")
    if len(found) > 1:
        notes.append(f"{len(found)} matches; the first shown")
    detail = f" ({'; '.join(notes)})" if notes else ""
    spans = tuple(lines_of(h.node) for h in found)
    return Outcome(
        HOLDS,
        f"`{inv.rule.pattern.short}` holds {where} at {_span_text(lines)}{detail}",
        spans=spans,
        excerpts=tuple("\n".join(parsed.lines[a - 1 : b]) for a, b in spans),
    )


def _kept(inv: Invariant, scope: str, facts: Facts,
          chain: list[list[SgNode]]) -> tuple[str | None, list[str]]:
    """Why the definitions ``in:`` resolved to are not what Python runs (or None), and notes.

    Python runs what the name holds when it is called (``_replaced``), and a
    decorator can return any function in place of the one written (``_decorated``); for
    ``in: Cls``, the members searched are those of the class Python creates
    (``_built``); an ``exec`` / ``eval`` anywhere in the file (``Facts.code_runner``) may
    bind any name, of the module or of any class, so it may replace any part of the chain.
    """
    parts = scope.split(".")
    seen: list[str] = []
    for i, definitions in enumerate(chain):
        name = ".".join(parts[: i + 1])
        why = _replaced(facts, name, chain[i - 1] if i else [])
        for definition in definitions:
            why = why or _decorated(inv, facts, name, definition, seen)
        if why is not None:
            return why, []
    for cls in chain[-1] if chain else []:  # `in: Cls`: the members searched are the class's
        why = _built(facts, scope, cls) if cls.kind() == "class_definition" else None
        if why is not None:
            return why, []
    runner = facts.code_runner(facts.root)
    if runner is not None:
        return (f"{scope} may be replaced at line {line(runner)} (`{short(runner, 50)}`): "
                "exec/eval run code the file does not show, which may bind any name"), []
    if not seen:
        return None, []
    how = "allowed by `decorators:`" if inv.decorators is not None else "imported code, not read"
    return None, [f"decorated with {', '.join(seen)} ({how})"]


def _replaced(facts: Facts, name: str, holders: list[SgNode]) -> str | None:
    """Why the definition ``name`` (held by the classes ``holders``) is not what runs: its
    code swapped in place (``f.__code__ = …``); an attribute bound on its class from
    outside the body (``Cls.meth = f``, ``setattr``, ``del``, ``self.meth = …`` in its
    methods); or a ``__getattribute__`` on its class, which decides every lookup, or on a
    base class in the file, or a base's ``__init_subclass__``, which may rebind it when
    the class is created; or a metaclass of the class or of a base in the file (other
    than the stdlib's plain ones), which builds the class from its body; or an instance
    made in the class body whose ``__set_name__`` may (``_set_name_hook``)."""
    attr = name.rpartition(".")[2]
    swap = facts.code_swap(attr)
    if swap is not None:
        return (f"{name} is changed in place at line {line(swap)} (`{short(swap, 60)}`): "
                "the code searched is not what runs")
    for cls in holders:
        if cls.kind() != "class_definition":
            continue
        outside = facts.attribute_binding(cls, attr, instance=True) or \
            facts.attribute_binding(cls, "__class__", instance=True)
        if outside is not None:
            return (f"{name} is replaced at line {line(outside)} (`{short(outside, 60)}`): "
                    "Python runs what that binds, not the definition searched")
        hook = facts.member_hook(cls, "__getattribute__")
        if hook is not None:
            return (f"{name}: its class defines {_where(hook, '__getattribute__')}, "
                    f"which decides what `{attr}` is when it is looked up")
        why = _built(facts, name, cls)
        if why is not None:
            return why
    return None


def _built(facts: Facts, name: str, cls: SgNode) -> str | None:
    """Why the class ``cls`` Python creates may not hold the body as written, for ``name`` (a
    member of it, or the class itself): a same-file base's ``__getattribute__`` or
    ``__init_subclass__`` (``_base_hook``), a metaclass of the class or of such a base, an
    instance in its body whose ``__set_name__`` may rebind its members
    (``_set_name_hook``). All run, or decide lookups, as the class is created."""
    bases = facts.bases(cls)
    for base in bases:
        why = _base_hook(facts, base)
        if why is not None:
            return f"{name}: its base class {_title(base)} (line {line(base)}) defines {why}"
    made = facts.metaclass(cls)
    if made is not None:
        return f"{name}: its class statement (line {line(cls)}): {made}"
    for base in bases:
        made = facts.metaclass(base)
        if made is not None:
            return f"{name}: its base class {_title(base)} (line {line(base)}): {made}"
    why = _set_name_hook(facts, cls)
    if why is not None:
        return f"{name}: its class body (line {line(cls)}) {why}"
    return None


def _set_name_hook(facts: Facts, cls: SgNode) -> str | None:
    """What in ``cls``'s body may replace its methods as Python creates the class: code that
    may make or hold an instance of a class of this file (``Facts.instances_made``) whose
    ``__set_name__`` (its own or a base's in the file) uses the class it is given
    (``Facts.set_name_hook``: reading its name, storing it in a registry or on the
    instance does not count). A class imported from another file, or an instance a
    function returns, is not read."""
    for code, made in facts.instances_made(cls):
        found = facts.set_name_hook(made)
        if found is None:
            continue
        _holder, hook, use = found
        stmt = next((a for a in use.ancestors() if a.kind().endswith("statement")), use)
        how = "" if key(use) == key(hook) else \
            f" (it uses the class at line {line(use)}: `{short(stmt, 50)}`)"
        verb = "makes" if code.kind() in ("call", "decorator") else "holds"
        return (f"{verb} `{short(code, 40)}` at line {line(code)}, an instance of {_title(made)} "
                f"(line {line(made)}), whose {_where(hook, '__set_name__')} runs when the "
                f"class is created and may replace its methods{how}")
    return None


def _title(cls: SgNode) -> str:
    title = cls.field("name")
    return title.text() if title is not None else "?"


def _base_hook(facts: Facts, base: SgNode) -> str | None:
    """What ``base`` defines that may change its subclasses' methods: a
    ``__getattribute__`` (it decides every lookup), or an ``__init_subclass__`` that may
    replace the new class's attributes (``class_hook_use``: a registry that only stores
    the class does not)."""
    hook = facts.member_hook(base, "__getattribute__")
    if hook is not None:
        return (f"{_where(hook, '__getattribute__')}, which decides what every attribute is "
                "when it is looked up")
    hook = facts.member_hook(base, "__init_subclass__")
    use = class_hook_use(facts, hook) if hook is not None else None
    if hook is None or use is None:
        return None
    stmt = next((a for a in use.ancestors() if a.kind().endswith("statement")), use)
    how = "" if key(use) == key(hook) else \
        f" (it uses the class at line {line(use)}: `{short(stmt, 50)}`)"
    return (f"`__init_subclass__` at line {line(hook)}, which runs when the subclass is "
            f"created and may replace its methods{how}")


def _where(hook: SgNode, method: str) -> str:
    """Where the class gets ``method``: its line, for a definition in the class body; a
    binding from outside it may not spell the name (``setattr(cls, name, f)``), so its
    code is shown too, marked as one that may bind it."""
    if hook.kind() in ("function_definition", "decorated_definition"):
        return f"`{method}` at line {line(hook)}"
    return f"`{method}` at line {line(hook)} (`{short(hook, 50)}`, which may bind it)"


def _decorated(inv: Invariant, facts: Facts, name: str, definition: SgNode,
               seen: list[str]) -> str | None:
    """Why a decorator of ``definition`` may put another function in its place (None: each
    is accepted, and added to ``seen``). With ``decorators:`` only those listed are
    accepted; without it, only imported ones (``Facts.foreign_decorator``)."""
    allowed = None if inv.decorators is None else {decorator_key(t) for t in inv.decorators}
    for deco in facts.decorators(definition):
        text = " ".join(deco.text().split())
        at = f"{name} is decorated with `{short(deco, 60)}` at line {line(deco)}"
        if allowed is not None:
            if decorator_key(text) not in allowed:
                return (f"{at}, which its `decorators:` does not allow (a decorator can "
                        "replace the function searched)")
        elif (problem := facts.foreign_decorator(deco)) is not None:
            return (f"{at}: {problem}; a decorator can replace the function searched (if this "
                    f"one is harmless, allow it: `decorators: [{json.dumps(text)}]`)")
        seen.append(f"`{short(deco, 60)}`")
    return None


def _evaluate_scope(inv: Invariant, facts: Facts, scope: SgNode,
                    where: str) -> tuple[str | None, list[Hit], list[str]]:
    """(why the rule fails in this scope or None, the satisfying hits, the first one's notes)."""
    rule = inv.rule
    good: list[tuple[Hit, _Eval, list[SgNode]]] = []
    reasons: list[str] = []
    elsewhere: list[str] = []  # candidates that do not count (nested, unreachable, re-bound)
    hits = facts.search(scope, rule.pattern.text, {}, every_form=False)
    for h in hits:
        at = f"`{rule.pattern.short}` at {_span_text(lines_of(h.node))}"
        owner = facts.owner(h.node)
        if inv.scope and not facts.owned_by(h.node, scope):
            inside = f"inside `{_describe(owner)}` at line {line(owner)}" if owner is not None \
                else "at module level"
            elsewhere.append(f"{at}: {inside}, not in {inv.scope} itself")
            continue
        dead = facts.dead(h.node)
        if dead is not None:
            elsewhere.append(f"{at}: {not_run(dead)}")
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
    holding = {key(s) for h, _, _ in good if (s := binding_statement(h.node)) is not None}
    for h, _, others in good:
        for other in others:
            if key(other) not in holding:
                return (f"`{rule.pattern.short}` holds at {_span_text(lines_of(h.node))}, but "
                        f"line {line(other)} (`{short(other, 50)}`) may be the binding in force "
                        "instead (branches that cannot be ordered), and the rule does not hold "
                        "there"), [], []
    for every in inv.every:
        why = _every(every, facts, scope, where)
        if why is not None:
            return why, [], []
    return None, [h for h, _, _ in good], good[0][1].notes


def _every_regions(facts: Facts, scope: SgNode,
                   rule: Rule) -> tuple[list[SgNode], set[Key] | None, list[SgNode]]:
    """Where ``every`` looks: (the regions, whose ``self`` they mean (None: any), code attached
    to those classes from outside, where any ``self`` counts).

    The scope itself; for ``self.<attr>`` in a method, its whole class, since any of
    its methods can assign it, and the file's subclasses of it (their ``self`` is an
    instance of it too), and functions the file attaches to any of them
    (``Cls.reset = _reset``)."""
    parts = assign_parts(rule.pattern.text)
    if parts is None or not parts[0].startswith("self."):
        return [scope], None, []
    cls: SgNode | None = scope
    if scope.kind() == "function_definition":
        cls = facts.owner(scope)
    if cls is None or cls.kind() != "class_definition":
        return [scope], None, []
    family = facts.subclasses(cls)
    keys = {key(c) for c in family} if scope.kind() == "function_definition" else None
    return family, keys, facts.attached(family)


def _every(rule: Rule, facts: Facts, scope: SgNode, where: str) -> str | None:
    """Why some match of ``rule`` breaks its relations, or None (at least one must exist).

    The matches are what the rule forbids unless their relations hold: one that may
    run counts (``dead(certain=True)``), and its relations must certainly hold."""
    regions, family, attached = _every_regions(facts, scope, rule)
    seen = 0
    unselected: list[tuple[Hit, str]] = []  # matches its `where` leaves out, and why
    done: set[Key] = set()
    for region, any_self in [*((r, False) for r in regions), *((r, True) for r in attached)]:
        for hit in _with_keywords(facts, region, rule, {}, every_form=True, anywhere=True):
            if key(hit.node) in done or facts.dead(hit.node, certain=True) is not None:
                continue  # already judged, or never runs
            nearest = _nearest_class(hit.node)
            if _foreign(nearest, family, any_self):
                continue  # another class's `self`
            done.add(key(hit.node))
            left_out = _Eval(facts, region, forbid=True).check_where(hit, rule, {})
            if left_out is not None:
                unselected.append((hit, left_out))
                continue  # not one of the nodes the rule speaks about
            seen += 1
            why = _Eval(facts, region).check_relations(hit, rule, {})
            if why is not None:
                home = _home(region, nearest, any_self, regions)
                return (f"every: `{rule.pattern.short}` at {_span_text(lines_of(hit.node))}"
                        f"{home}: {why}")
        for made, why in facts.may_assign(region, rule.pattern.text, {}):
            nearest = _nearest_class(made)
            if facts.dead(made, certain=True) is not None or _foreign(nearest, family, any_self):
                continue  # never runs, or another class's `self`
            home = _home(region, nearest, any_self, regions)
            return (f"every: `{rule.pattern.short}` may be made at line {line(made)} by "
                    f"`{short(made, 50)}`{home} ({why}): it cannot be shown to satisfy "
                    "its relations")
    if seen == 0:
        return _none_selected(rule, where, unselected)
    return None


def _with_keywords(facts: Facts, region: SgNode, rule: Rule, outer: dict[str, SgNode],
                   every_form: bool, anywhere: bool) -> list[Hit]:
    """The pattern's matches in ``region`` (``Facts.search``) and, for ``name=value``, the
    keyword arguments that pass it (``keyword_hits``; ``anywhere``: ``**{"name": v}`` too,
    where a rule forbids or quantifies), in source order: what ``find`` and ``every`` read
    alike (``every`` read no keyword arguments until review R17: `timeout = 30` alone made
    every ``timeout=$T`` hold)."""
    text = rule.pattern.text
    hits = facts.search(region, text, outer, every_form, rule.in_place)
    seen = {key(h.node) for h in hits}
    extra = [h for h in keyword_hits(region, text, outer, anywhere=anywhere)
             if key(h.node) not in seen]
    return sorted([*hits, *extra], key=lambda h: start_of(h.node)) if extra else hits


def _none_selected(rule: Rule, where: str, unselected: list[tuple[Hit, str]]) -> str:
    """Why an ``every`` rule has no match to judge: its pattern is not found, or each match
    is one its ``where`` leaves out (said, with the first, so that a call that is there
    but lacks what the ``where`` asks is not reported as missing)."""
    if not unselected:
        return (f"every: `{rule.pattern.short}` not found {where} "
                "(an 'every' rule needs at least one match)")
    hit, why = unselected[0]
    count = (f"its {len(unselected)} matches are" if len(unselected) > 1
             else "its one match is")
    return (f"every: `{rule.pattern.short}` {where}: {count} left out by its 'where' (the one "
            f"at {_span_text(lines_of(hit.node))}: {why}), and an 'every' rule needs at least "
            "one match it selects")


def _nearest_class(node: SgNode) -> SgNode | None:
    """The innermost class holding ``node``: whose ``self`` a write there means."""
    return next((a for a in node.ancestors() if a.kind() == "class_definition"), None)


def _foreign(nearest: SgNode | None, family: set[Key] | None, any_self: bool) -> bool:
    """A ``self`` in the class ``nearest`` is not an instance of ``family`` (None: any
    class's counts; ``any_self``: code attached to the family from outside)."""
    return family is not None and not any_self and (nearest is None or key(nearest) not in family)


def _home(region: SgNode, nearest: SgNode | None, attached: bool, regions: list[SgNode]) -> str:
    """Where an ``every`` match outside the scope's own class is, for its message."""
    base = regions[0].field("name")
    if attached:
        return f" (in code attached to class {base.text() if base else '?'} at line {line(region)})"
    if len(regions) > 1 and nearest is not None and key(nearest) != key(regions[0]):
        name = nearest.field("name")
        return (f" (in class {name.text() if name else '?'}, a subclass of "
                f"{base.text() if base else '?'} in this file)")
    return ""


def _unread_line(root: SgNode) -> int | None:
    """The first line of code Python accepts but tree-sitter could not read (an ``ERROR``
    node: ``return a, *(b)``, ``y = a, *-x``), or None.

    tree-sitter recovers by skipping what it cannot read, and reads the rest as it can:
    the statement, and sometimes the code after it, become fragments no pattern sees, so
    a ``not:`` would miss forbidden code written there (an evasion anyone can write),
    and scopes, bindings and dead code would be read from garbage. No rule is judged on
    such a file (what a rule reads of it is not bounded by the rule's scope: bindings,
    ``exec`` and attribute writes are looked for in the whole file)."""
    error = root.find(kind="ERROR")
    return None if error is None else error.range().start.line + 1


def _syntax_error_place(exc: SyntaxError, text: str) -> str:
    """`` at line L, column C`` of a syntax error in ``text`` (its line endings made
    ``\\n``, as ``spans.decode_lines`` counts lines). A NUL byte is reported by
    CPython with no place at all (``lineno`` None): the first one's is said, not
    "at line None"; a place still unknown is left out."""
    line, column = exc.lineno, exc.offset
    if line is None and "\0" in text:
        at = text.index("\0")
        line = text.count("\n", 0, at) + 1
        column = at - text.rfind("\n", 0, at)
    if line is None:
        return ""
    return f" at line {line}" + (f", column {column}" if column else "")
