"""Invariant rules: the model an auditor writes in ``invariants:`` and its static checks.

A hash says "this file did not change"; an invariant says "this claim still
holds". Rules are written in ast-grep's vocabulary (code-like patterns with
``$X`` / ``$$$XS`` metavariables, relations ``inside`` / ``has`` / ``follows`` /
``precedes`` / ``not``) so that an auditor can read them as code. This module only
*models* and *validates* rules: everything that can be found wrong without the
audited file (a pattern that is not Python, a constraint on a metavariable the
pattern does not capture, a scope that is not a dotted name) is reported at load
time as a ``RuleError`` that the manifest loader turns into ``file:line:column``.
Matching lives in ``pp1audit.matcher``.

Record shape (one invariant)::

    file: vllm/v1/worker/gpu/model_runner.py   # path in the target
    in: GPUModelRunner.sample                   # the function/class whose own code is searched
                                                #   (optional: the whole file)
    pattern: self.rejection_sampler($$$ARGS)    # what must be there
    where: {ARGS: {has: self.speculator.draft_logits}}
                                                # a constraint: has / contains / is / regex /
                                                #   any (a list, one holds) / all (a
                                                #   list, each holds) / not /
                                                #   argument {name, at | of, <constraint>}: the
                                                #   argument binding that parameter /
                                                #   parameter {name, at}: a def's place
    follows: $X.apply_grammar_bitmask($$$)      # earlier in the same function
    precedes: <rule>                            # later in the same function
    inside: <rule>                              # an enclosing node matches
    has: <rule>                                 # a node within the match matches
    guarded_by: <condition pattern>             # match is in the body of `if <cond>:`
    not: <rule> | [<rule>, …]                   # nothing in the same function matches
    every: <rule> | [<rule>, …]                 # every match of its pattern in scope
                                                #   satisfies its relations (and >= 1 exists);
                                                #   its where selects the matches judged, so
                                                #   it needs a relation (refused without one)
                                                #   or a require: {VAR: <constraint>}, which
                                                #   each match judged must meet (every call
                                                #   of f passes x for p)
    decorators: ["@torch.inference_mode()"]     # decorators allowed on the `in:` definitions
                                                #   (absent: imported ones only; [] : none)
    claim: "..."                                # prose for the report

where ``<rule>`` is a pattern string or a mapping with ``pattern`` and any of
``where`` / ``inside`` / ``has`` / ``guarded_by`` / ``follows`` / ``precedes`` / ``not``;
the rule of a ``not`` or an ``every`` whose pattern is an assignment ``T = $V`` may add
``in_place: true``: each change of T's value in place (``T.copy_(…)``, ``T[i] = …``,
``out=T``: ``pp1audit.facts.inplace``) is then one of its assignments too. Any rule may
say ``unconditional: true``: its match must run whenever the code around it is reached,
not only on some passes (an ``if`` arm, a loop body, ``a if t else b``, the right of ``and``:
``pp1audit.facts.conditional``); beside ``guarded_by: C``, whenever C holds (in the body of
an ``if`` testing exactly C, on every pass of it: ``matcher._Eval.runs_whenever``).

Metavariables are named as ast-grep names them (``METAVAR_NAME_RE``: ``$ARGS``, not
``$args``, which ast-grep reads as code that never matches); a pattern or ``where`` key
breaking that rule is refused, not left to pass vacuously.
"""

from __future__ import annotations

import ast
import functools
import keyword
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pp1audit.identnorm import IdentifierError, nfkc_identifiers
from pp1audit.paths import path_problem
from pp1audit.schema import WHERE_KEY_MESSAGE, unknown_key
from pp1audit.syntaxtree import parse_expression

if TYPE_CHECKING:  # pragma: no cover
    from ast_grep_py import SgNode

SCOPE_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
"""``in:``: dotted names of classes/functions, from the module down."""

METAVAR_RE = re.compile(r"(\$\$\$|\$)([A-Z_][A-Z0-9_]*)?")
"""ast-grep metavariables: ``$NAME`` (one node), ``$$$NAME`` (zero or more), ``$_``."""

METAVAR_NAME_RE = re.compile(r"[A-Z_][A-Z0-9_]*")
"""ast-grep's rule for a metavariable's name (``is_valid_first_char`` /
``is_valid_meta_var_char`` in ast-grep-core): an uppercase ASCII letter or ``_``, then
uppercase letters, digits and ``_``. A name starting with ``_`` matches without
capturing (``$_``, ``$$$_REST``)."""

_DOLLAR_WORD = re.compile(r"(\$+)(\w*)")
"""A run of ``$`` and the word that follows it: a metavariable, or a slip that ast-grep
would read as plain code (``$code``, ``$1``, ``$``)."""

RELATIONS = ("inside", "has", "guarded_by", "follows", "precedes", "not")
"""Relations of a (sub)rule, in the order they are evaluated and reported."""

_EVERY_WITHOUT_RELATION = (
    "'every' needs a relation (" + ", ".join(RELATIONS) + "), 'require' or 'unconditional' "
    "saying what each match must satisfy")
"""An ``every`` with none would only check that one match exists, whatever the matches are:
under ``every``, ``where`` selects the matches judged, it requires nothing of them."""

RULE_KEYS = ("pattern", "where", "require", *RELATIONS, "in_place", "unconditional")
"""Keys of a nested rule mapping (the invariant itself adds file/in/every/claim/title)."""

_IN_PLACE_WHERE = ("'in_place' is read on the rule of a 'not' or an 'every' whose pattern is "
                   "an assignment `T = $V`: it adds the in-place changes of T's value "
                   "(`T.copy_(…)`, `T[i] = …`, `out=T`) to its assignments")
"""Why ``in_place`` is refused elsewhere: a match found, or a relation that must hold, is
an assignment as written; only where an assignment is forbidden or quantified over does a
change that binds nothing break the same claim."""

CONSTRAINT_KEYS = ("has", "contains", "is", "regex", "any", "all", "not", "argument",
                   "parameter")
"""Keys of a ``where`` constraint (``any``: a list of constraints, one must hold; ``all``:
a list, each must hold, so one capture can be asked one thing twice: two ``argument``s)."""

ARGUMENT_KEYS = ("name", "at", "of")
"""Keys of an ``argument`` constraint besides the constraint on its value."""

PARAMETER_KEYS = ("name", "at")
"""Keys of a ``parameter`` constraint."""

_VALUE_KEYS = tuple(k for k in CONSTRAINT_KEYS if k not in ("argument", "parameter"))
"""The constraint keys that judge one argument's value (``argument``'s own besides
``ARGUMENT_KEYS``): a value is not itself a call's argument list or a definition."""


_REQUIRE_WHERE = ("'require' is read on the rule of an 'every': the constraints each match "
                  "it judges must meet (elsewhere a match's constraints are its 'where')")
"""Why ``require`` is refused elsewhere: a found match or a relation's is one that meets its
``where``, and a forbidden one is forbidden whatever its captures are unless its ``where``
says so; only where every match is judged do selecting and requiring differ."""


class RuleError(Exception):
    """A rule problem found at load time; ``keypath`` is relative to the invariant."""

    def __init__(self, keypath: tuple[str | int, ...], message: str, *, key: bool = False,
                 not_text: object = None) -> None:
        self.keypath = keypath
        self.message = message
        self.key = key
        """True when the problem is the key itself (point at the key, not its value)."""
        self.not_text = not_text
        """The number or boolean YAML made of what belongs there as text (None: not that
        problem): the manifest can then show what was written, as the schema's errors do."""
        super().__init__(message)


@dataclass(frozen=True)
class Pattern:
    """A validated ast-grep pattern and the metavariables it captures."""

    text: str
    single: frozenset[str]
    """Names captured by ``$NAME`` (one node each); ``_``-names never capture."""
    multi: frozenset[str]
    """Names captured by ``$$$NAME`` (a sequence of nodes)."""

    @property
    def short(self) -> str:
        """The pattern on one line, for messages."""
        return " ".join(self.text.split())


@dataclass(frozen=True)
class Argument:
    """The argument a captured call passes for one parameter (``pp1audit.signatures``):
    ``has:`` only says a value is among the arguments, so a swap of two positional ones
    keeps it."""

    name: str
    """The parameter: its keyword ``name=`` binds it."""
    at: int | None = None
    """Its place among the call's positional arguments (0: the first, counted from the
    call's first argument, not the capture's)."""
    of: str | None = None
    """A metavariable bound to the called definition: the place is read from it (a
    method's ``self`` not counted), so a parameter moved with its argument still holds."""
    callee: str | None = None
    """Or the called definition's dotted name in the file (``of: _kernel``): the binding
    in force, as ``in:`` resolves it; the place read from it likewise."""
    value: Constraint | None = None
    """What that argument must be (None: anything passed)."""

    def describe(self) -> str:
        """``the argument for `draft_logits` (keyword, or position 1) is `x```."""
        where = (f"position {self.at}" if self.at is not None
                 else f"its place in ${self.of}" if self.of is not None
                 else f"its place in `{self.callee}`" if self.callee is not None else None)
        said = f"the argument for `{self.name}` (keyword" + (f", or {where})" if where else ")")
        return said + (f" {self.value.describe()}" if self.value is not None else " is passed")


@dataclass(frozen=True)
class Parameter:
    """A captured definition takes ``name`` at position ``at`` (``self`` counted): pins
    where a callee in another file expects what its callers pass by position."""

    name: str
    at: int

    def describe(self) -> str:
        """``its positional parameter 1 is `draft_logits```."""
        return f"its positional parameter {self.at} is `{self.name}`"


@dataclass(frozen=True)
class Constraint:
    """A condition on what a metavariable captured (ast-grep's ``constraints``)."""

    has: Pattern | None = None
    """One captured node *is* this (for ``$$$ARGS``: one of the arguments)."""
    contains: Pattern | None = None
    """One captured node is or contains this at any depth."""
    is_: Pattern | None = None
    """The single captured node is this (``$X`` only)."""
    regex: str | None = None
    """The captured text contains a match of this regular expression (RE2 syntax:
    ``regex_matches``)."""
    not_: Constraint | None = None
    """This constraint must not hold."""
    any_: tuple[Constraint, ...] = ()
    """At least one of these holds: the same claim written two ways (a positional or a
    keyword argument)."""
    all_: tuple[Constraint, ...] = ()
    """Each of these holds: a mapping cannot hold one key twice, and a call's claim is
    often on several of its arguments (each ``argument`` of its own)."""
    argument: Argument | None = None
    """The argument the captured call passes for a parameter holds (``Argument``)."""
    parameter: Parameter | None = None
    """The captured definition takes that parameter at that place (``Parameter``)."""

    def describe(self) -> str:
        """Short prose for messages: ``has `x```."""
        parts = []
        if self.has is not None:
            parts.append(f"has `{self.has.short}`")
        if self.contains is not None:
            parts.append(f"contains `{self.contains.short}`")
        if self.is_ is not None:
            parts.append(f"is `{self.is_.short}`")
        if self.regex is not None:
            parts.append(f"matches /{self.regex}/")
        if self.any_:
            parts.append("any of (" + " / ".join(c.describe() for c in self.any_) + ")")
        if self.all_:
            parts.append("all of (" + " / ".join(c.describe() for c in self.all_) + ")")
        if self.not_ is not None:
            parts.append(f"not ({self.not_.describe()})")
        if self.argument is not None:
            parts.append(self.argument.describe())
        if self.parameter is not None:
            parts.append(self.parameter.describe())
        return " and ".join(parts)


@dataclass(frozen=True)
class Rule:
    """A pattern with constraints and relations; the unit the matcher evaluates."""

    pattern: Pattern
    where: dict[str, Constraint] = field(default_factory=dict)
    require: dict[str, Constraint] = field(default_factory=dict)
    """Under ``every`` only: constraints each match its ``where`` selects must meet. Without
    it, "every launch of K passes x for p" was written twice: the pattern with the
    constraint, and again under a ``not`` forbidding a launch that does not meet it."""
    inside: Rule | None = None
    has: Rule | None = None
    guarded_by: Pattern | None = None
    follows: Rule | None = None
    precedes: Rule | None = None
    not_: tuple[Rule, ...] = ()
    """The ``not`` rules (a rule or a list of them): none may match. A list, because one
    claim often forbids two shapes (a call handing the value on, a name bound to it) and a
    mapping holds ``not`` once."""
    in_place: bool = False
    """``T = $V`` also matches each in-place change of ``T``'s value
    (``facts.inplace``): for a claim on the value (the logits sampled are the ones
    masked), not on what the name is bound to (``draft_logits`` stays None)."""
    unconditional: bool = False
    """The match must run whenever its function reaches it (``facts.conditional``): not in
    an ``if`` arm, a loop body, one arm of ``a if t else b``, after ``x and``: for a claim
    that the code *runs* (the method reaches gumbel_sample), not only that it is there."""

    @property
    def has_relation(self) -> bool:
        """Whether the rule asks anything of a match beyond its pattern and ``where``: what an
        ``every`` requires of each match it selects."""
        return self.unconditional or bool(self.require) or bool(self.not_) or any(
            getattr(self, r) is not None for r in RELATIONS if r != "not")


@dataclass(frozen=True)
class Invariant:
    """One claim about code structure, checked as kind ``invariant``."""

    id: str
    file: str
    scope: str | None
    rule: Rule
    every: tuple[Rule, ...]
    """The ``every`` rules (a rule or a list of them), each judged on its own; () : none."""
    claim: str | None
    title: str | None
    source: str | None = None
    """A named git source or remote pin ``file`` lives in; None: the target."""
    decorators: tuple[str, ...] | None = None
    """Decorators allowed on the definitions ``in:`` names (and the classes holding them),
    compared as syntax trees; None: only decorators the module imports (a decorator can
    return any function in place of the one searched)."""


def _placeholder(m: re.Match[str]) -> str:
    name = m.group(2) or "_"
    return f"__pp1_{'m' if m.group(1) == '$$$' else 's'}_{name}"


def metavariables(text: str) -> tuple[frozenset[str], frozenset[str]]:
    """(single, multi) capturing metavariable names of a pattern text."""
    single: set[str] = set()
    multi: set[str] = set()
    for m in METAVAR_RE.finditer(text):
        name = m.group(2)
        if not name or name.startswith("_"):
            continue
        (multi if m.group(1) == "$$$" else single).add(name)
    return frozenset(single), frozenset(multi)


EXPANDO = "\u00b5"
"""The character ast-grep puts in place of a metavariable's ``$`` for Python (``µ``, its
``expando_char``): an identifier character, so that ``$ARGS`` parses as a name."""

_TEXT_KINDS = frozenset({"string_content", "comment", "format_specifier"})
"""tree-sitter nodes whose characters are text, not code: a ``$`` there is a dollar sign.
An f-string's interpolations are code (``{$N}`` is a metavariable; ``{$n}`` a slip): they
are ``interpolation`` / ``format_expression`` nodes, whose names are identifiers."""


@dataclass(frozen=True)
class _DollarPlaces:
    """Where a pattern's ``$`` signs fall, read as ast-grep reads the pattern."""

    names: dict[int, tuple[int, int]]
    """(start, end) of each identifier that holds a ``$``, by each of its offsets."""
    text: list[tuple[int, int]]
    """(start, end) of the text (string contents, comments, format specs)."""


@functools.lru_cache(maxsize=64)
def _pattern_tree(text: str) -> SgNode:
    """``text`` as ast-grep's grammar reads it as a pattern: each ``$`` made ``EXPANDO``
    (same offsets), parsed once for every check of it (``_dollar_places``,
    ``_expando_problem``); ast-grep's own verdict (``_agrep_problem``) is its compile of
    the pattern, not a tree this module could share."""
    from ast_grep_py import SgRoot

    return SgRoot(text.replace("$", EXPANDO), "python").root()


def _dollar_places(text: str) -> _DollarPlaces:
    """The identifiers and text of ``text`` parsed as ast-grep parses a pattern: each ``$``
    made ``EXPANDO`` and the result read by the same tree-sitter grammar (``SgRoot``), not
    by ``tokenize``, whose f-string tokens differ between Python versions (3.12 splits an
    f-string into parts; 3.11 gives one STRING token, hiding its interpolations).
    Offsets are characters, as ``SgNode.range`` gives them; ``$`` → ``µ`` keeps them."""
    names: dict[int, tuple[int, int]] = {}
    spans: list[tuple[int, int]] = []
    todo = [_pattern_tree(text)]
    while todo:  # iterative: a deeply nested pattern must not exhaust the stack
        node = todo.pop()
        r = node.range()
        start, end = r.start.index, r.end.index
        if node.kind() == "identifier" and "$" in text[start:end]:
            names.update(dict.fromkeys(range(start, end), (start, end)))
        elif node.kind() in _TEXT_KINDS:
            spans.append((start, end))
        todo.extend(node.children())
    return _DollarPlaces(names, spans)


_METAVAR_WORD = re.compile(r"(\$|\$\$\$)[A-Z_][A-Z0-9_]*|\$\$\$|\$\$[A-Z_][A-Z0-9_]*")
"""A whole identifier that ast-grep reads as a metavariable (``METAVAR_NAME_RE``
after one, two or three ``$``; ``$$$`` alone)."""


def metavariable_problem(text: str) -> str | None:
    """Why a ``$`` in a pattern's code is not an ast-grep metavariable, or None.

    ast-grep reads ``$code`` (lowercase), ``$1X``, a lone ``$`` or ``a$B`` as plain code,
    a name no Python file contains: such a pattern silently never matches, so a ``not:``
    built on it always holds. Each is refused here, with the spelling ast-grep reads
    (``METAVAR_NAME_RE``). Where a ``$`` is code is decided by ast-grep's own grammar
    (``_dollar_places``), the same on every Python version: a ``$`` in a string's text
    or a comment is text; one in an f-string's ``{…}`` is code. A ``$`` the grammar
    puts in neither an identifier nor text is refused too (fail closed)."""
    if "$" not in text:
        return None
    places = _dollar_places(text)
    for m in _DOLLAR_WORD.finditer(text):
        name_span = places.names.get(m.start())
        if name_span is None and any(a <= m.start() < b for a, b in places.text):
            continue  # a dollar sign in a string or a comment
        dollars, name = m.group(1), m.group(2)
        whole = text[name_span[0]:name_span[1]] if name_span is not None else m.group(0)
        if name_span is not None and _METAVAR_WORD.fullmatch(whole):
            continue
        if whole != m.group(0) and _METAVAR_WORD.fullmatch(m.group(0)):
            return (f"`{whole}` is not a metavariable: a metavariable is a whole name "
                    "($ or $$$ and an UPPERCASE name), not part of one")
        return f"`{m.group(0)}` is not a metavariable: {_metavariable_hint(dollars, name)}"
    return None


def _metavariable_hint(dollars: str, name: str) -> str:
    """What to write instead of a ``$`` slip, for ``metavariable_problem``."""
    rule = "metavariables are $ or $$$ and an UPPERCASE name (A-Z, digits, _)"
    if len(dollars) > 3:
        return f"{rule}; `{dollars}` has {len(dollars)} dollar signs"
    if not name:
        return f"{rule}, or $$$ alone for any number of nodes"
    upper = name.upper()
    if METAVAR_NAME_RE.fullmatch(upper):
        return f"{rule} (write `{dollars}{upper}`)"
    if name[0].isdigit():
        return f"{rule}, not starting with a digit"
    return f"{rule}: ASCII letters only"


def _agrep_problem(text: str) -> str | None:
    """ast-grep's own verdict on a pattern (e.g. several statements), or None."""
    from ast_grep_py import SgRoot

    try:
        SgRoot("", "python").root().find(pattern=text)
    except (RuntimeError, ValueError) as exc:
        said = str(exc).split("Stack backtrace")[0]
        # ast-grep quotes the pattern with each `$` made its EXPANDO: show it as written
        text = said if EXPANDO in text else said.replace(EXPANDO, "$")
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        # ast-grep's error is "cannot get matcher / Caused by: 0: … 2: <reason> /
        # Stack backtrace: …": keep the innermost cause, drop the backtrace.
        causes = [ln.split(":", 1)[1].strip() for ln in lines if re.match(r"^\d+:\s", ln)]
        causes = [c for c in causes if c]
        return causes[-1] if causes else (lines[0] if lines else "not a valid pattern")
    return None


def _python_names(text: str, keypath: tuple[str | int, ...]) -> str:
    """``text`` with each identifier in its NFKC form (``nfkc_identifiers``), as Python
    reads it and as the matcher reads files: ``ſcale`` is ``scale``; ``µ`` (U+00B5,
    ast-grep's stand-in for ``$``) is ``μ`` (U+03BC), a plain name. A spelling that
    cannot be rewritten so is refused."""
    try:
        return nfkc_identifiers(text)
    except IdentifierError as exc:
        raise RuleError(keypath, f"invalid pattern `{' '.join(text.split())}`: {exc}") from None


def _expando_problem(text: str) -> str | None:
    """Why a ``µ`` (U+00B5) left in a pattern (identifiers are NFKC: ``μ`` there) may be
    read by ast-grep as a metavariable's ``$``, or None: one in a plain string is a
    value (``patterns`` compares literals by value); in an f-string's text or a comment
    ast-grep would see it."""
    if EXPANDO not in text:
        return None
    todo = [_pattern_tree(text)]  # a `$` is `µ` there: the text itself tells them apart
    while todo:  # iterative: a deeply nested pattern must not exhaust the stack
        node = todo.pop()
        children = node.children()
        r = node.range()
        if not children and EXPANDO in text[r.start.index:r.end.index]:
            string = node.parent()
            if not (node.kind() == "string_content" and string is not None
                    and _plain_string(string)):
                return ("`µ` (U+00B5) in an f-string or a comment is read by ast-grep as `$` "
                        "(its stand-in for it): write it `\\u00b5`")
        todo.extend(children)
    return None


def _plain_string(string: SgNode) -> bool:
    """``string`` is a literal compared by value: not an f-string, nor part of an implicit
    concatenation with one (the whole is then computed, and read as code)."""
    group = string.parent()
    parts = group.children() if group is not None and group.kind() == "concatenated_string" \
        else [string]
    return not any((first := p.child(0)) is not None and "f" in first.text().lower()
                   for p in parts if p.kind() == "string")


def parse_pattern(value: object, keypath: tuple[str | int, ...]) -> Pattern:
    """Validate a pattern: Python syntax once metavariables are named, then ast-grep."""
    if not isinstance(value, str) or not value.strip():
        raise RuleError(keypath, "a pattern must be non-empty Python code")
    text = value.strip()
    python = METAVAR_RE.sub(_placeholder, text)
    try:
        ast.parse(python)
    except SyntaxError as exc:
        col = f" (column {exc.offset})" if exc.offset else ""
        raise RuleError(keypath, f"invalid pattern `{' '.join(text.split())}`: "
                        f"not Python code: {exc.msg}{col}") from None
    except (MemoryError, RecursionError):  # pathological nesting exhausts the parser
        raise RuleError(keypath, f"invalid pattern `{' '.join(text.split())[:80]}`: "
                        "too deeply nested to parse") from None
    text = _python_names(text, keypath)
    problem = metavariable_problem(text) or _expando_problem(text) or _agrep_problem(text)
    if problem:
        raise RuleError(keypath, f"invalid pattern `{' '.join(text.split())}`: {problem}")
    single, multi = metavariables(text)
    both = single & multi
    if both:
        name = sorted(both)[0]
        raise RuleError(keypath, f"metavariable {name} is used both as ${name} and $$${name}")
    return Pattern(text, single, multi)


@functools.cache
def _re2() -> tuple[Any, Any]:
    """The ``re2`` module and our options, imported on first use (10 ms: a manifest
    without regexes does not pay it). Errors are returned to us, never logged to
    stderr by the library (a message is one line)."""
    import re2  # type: ignore[import-untyped]  # google-re2 ships no type information

    options = re2.Options()
    options.log_errors = False
    return re2, options


_UNSUPPORTED = (
    (re.compile(r"^invalid perl operator: \(\?(=|!)"), "lookahead `(?{0}`"),
    (re.compile(r"^invalid perl operator: \(\?<(=|!)"), "lookbehind `(?<{0}`"),
    (re.compile(r"^invalid perl operator: \(\?P$"), "a named group reference `(?P=…)`"),
    (re.compile(r"^invalid escape sequence: \\([1-9])"), "backreference `\\{0}`"),
    (re.compile(r"^invalid escape sequence: \\([gk])"), "backreference `\\{0}`"),
    (re.compile(r"^invalid perl operator: \(\?>"), "an atomic group `(?>…)`"),
    (re.compile(r"^invalid perl operator: \(\?\("), "a conditional group `(?(…)`"),
    (re.compile(r"^invalid perl operator: \(\?#"), "a comment group `(?#…)`"),
    (re.compile(r"^bad repetition operator: ([*+?}]\+)"), "a possessive quantifier `{0}`"),
    (re.compile(r"^invalid perl operator: \(\?([A-Za-z])"),
     "the flag `(?{0}` (RE2 has i, m, s and U)"),
    (re.compile(r"^invalid escape sequence: \\Z"), "`\\Z` (RE2 writes `\\z`)"),
)
"""RE2's messages for what Python's ``re`` accepts but a linear-time engine cannot do."""

_SURROGATE = re.compile("[\ud800-\udfff]")
"""Lone surrogates (``surrogateescape``'s undecodable bytes): not UTF-8, so not RE2's."""

_WHY_RE2 = ("regexes are RE2 syntax, which runs in linear time on the target's text: "
            "no lookaround or backreferences")

_BRACE = re.compile(r"\{,\d+\}")
"""``{,n}``: a repetition in Python's ``re`` (3.11), literal text in RE2."""


def _literal_brace(pattern: str) -> str | None:
    """The first ``{,n}`` outside a class: Python reads it as ``{0,n}``, RE2 as literal
    text, so the same regex would silently mean something else."""
    i, n, in_class = 0, len(pattern), False
    while i < n:
        ch = pattern[i]
        if ch == "\\":
            if pattern.startswith("\\Q", i):  # literal text up to \E
                end = pattern.find("\\E", i + 2)
                i = n if end < 0 else end + 2
                continue
            i += 2
            continue
        if in_class:
            if pattern.startswith("[:", i):  # [:alpha:] inside a class
                end = pattern.find(":]", i + 2)
                i = n if end < 0 else end + 2
                continue
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
            i += 1  # a ']' right after '[' or '[^' is a member, not the end
            if pattern.startswith("^", i):
                i += 1
            if pattern.startswith("]", i):
                i += 1
            continue
        else:
            m = _BRACE.match(pattern, i)
            if m:
                return m.group(0)
        i += 1
    return None


def regex_problem(pattern: str) -> str | None:
    """Why ``pattern`` cannot be a ``regex:`` constraint, or None.

    Constraints read text from the target, which may be hostile: a backtracking
    engine (Python's ``re``) on ``(a+)+$`` and 50,000 ``a`` never finishes, so
    regexes run on RE2, whose time is linear in the text (a verdict never waits
    on a timeout). What RE2 cannot compile is refused here, saying why."""
    try:
        compiled(pattern)
    except _re2()[0].error as exc:
        raw = exc.args[0] if exc.args else b""
        said = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
        for shape, what in _UNSUPPORTED:
            m = shape.match(said)
            if m:
                return f"{what.format(*m.groups())} is not supported ({_WHY_RE2})"
        return f"{said} (RE2 syntax)"
    except UnicodeEncodeError:  # a lone surrogate: YAML can spell one, UTF-8 cannot
        return "it holds a character that is not Unicode text (a lone surrogate)"
    brace = _literal_brace(pattern)
    if brace:
        return (f"`{brace}` is literal text in RE2 (write `{{0{brace[1:]}` for 0 to "
                f"{brace[2:-1]} repetitions, or `\\{brace}` for the text)")
    return None


@functools.lru_cache(maxsize=4096)
def compiled(pattern: str) -> Any:
    """The RE2 program of a pattern, compiled once per run (``re2.error`` if it is not one)."""
    re2, options = _re2()
    return re2.compile(pattern, options)


def regex_matches(pattern: str, text: str) -> bool:
    """True when ``text`` contains a match of ``pattern`` (a search, as ``re.search``).

    Time is linear in the text (RE2). ``\\w``, ``\\d``, ``\\s`` and ``\\b`` are ASCII,
    ``(?i)`` folds Unicode case, ``$`` is the end of the text only (no final newline
    before it) and ``.`` is one character. Text that cannot be UTF-8 (a lone surrogate)
    is searched with that character as U+FFFD."""
    try:
        return compiled(pattern).search(text) is not None
    except UnicodeEncodeError:
        return compiled(pattern).search(_SURROGATE.sub("\ufffd", text)) is not None


def _constraint(raw: Any, keypath: tuple[str | int, ...], multi: bool,
                bound: frozenset[str] = frozenset()) -> Constraint:
    if not isinstance(raw, dict):  # the schema says so too; kept for direct callers
        raise RuleError(keypath, "a constraint is a mapping (has / contains / is / regex / "
                        "any / all / not / argument / parameter)")
    for key in raw:  # the schema checks the outer mapping; nested ones (not / any / all) here
        if key not in CONSTRAINT_KEYS:
            raise RuleError((*keypath, key), unknown_key(str(key), list(CONSTRAINT_KEYS),
                                                         "a constraint has"), key=True)
    if not raw:
        raise RuleError(keypath, "an empty constraint: give one of "
                        f"{', '.join(CONSTRAINT_KEYS)}")
    for listed in ("any", "all"):
        if listed in raw and (not isinstance(raw[listed], list) or not raw[listed]):
            raise RuleError((*keypath, listed), f"'{listed}' is a non-empty list of constraints")
    regex = raw.get("regex")
    if "regex" in raw and not isinstance(regex, str):  # nested (not / any): no schema saw it
        raise RuleError((*keypath, "regex"), f"a regex is text (RE2 syntax), not {_kind(regex)}",
                        not_text=regex if isinstance(regex, int | float) else None)
    if regex is not None:
        problem = regex_problem(regex)
        if problem:
            raise RuleError((*keypath, "regex"), f"invalid regular expression: {problem}")
    if "is" in raw and multi:
        raise RuleError((*keypath, "is"), "'is' needs a single-node metavariable ($X); "
                        "use 'has' for a $$$ list")
    return Constraint(
        has=parse_pattern(raw["has"], (*keypath, "has")) if "has" in raw else None,
        contains=parse_pattern(raw["contains"], (*keypath, "contains")) if "contains" in raw else None,
        is_=parse_pattern(raw["is"], (*keypath, "is")) if "is" in raw else None,
        regex=regex,
        not_=_constraint(raw["not"], (*keypath, "not"), multi, bound) if "not" in raw else None,
        any_=tuple(_constraint(alt, (*keypath, "any", i), multi, bound)
                   for i, alt in enumerate(raw.get("any", ()))),
        all_=tuple(_constraint(each, (*keypath, "all", i), multi, bound)
                   for i, each in enumerate(raw.get("all", ()))),
        argument=_argument(raw["argument"], (*keypath, "argument"), bound)
        if "argument" in raw else None,
        parameter=_parameter(raw["parameter"], (*keypath, "parameter"))
        if "parameter" in raw else None,
    )


def _place(raw: Any, keypath: tuple[str | int, ...]) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise RuleError(keypath, f"'at' is a position counted from 0, not {_kind(raw)}")
    if raw < 0:
        raise RuleError(keypath, f"'at' is a position counted from 0 (the first), not {raw}")
    return raw


def _parameter_name(raw: Any, keypath: tuple[str | int, ...]) -> str:
    if not isinstance(raw, str) or not raw.isidentifier() or keyword.iskeyword(raw):
        raise RuleError(keypath, "'name' is a parameter's name (a Python identifier), not "
                        + (repr(raw) if isinstance(raw, str) else _kind(raw)),
                        not_text=raw if isinstance(raw, int | float) else None)
    return nfkc_identifiers(raw)


def _argument(raw: Any, keypath: tuple[str | int, ...], bound: frozenset[str]) -> Argument:
    """``argument: {name: P, at: N | of: DEF, <constraint on the value>}``."""
    if not isinstance(raw, dict):
        raise RuleError(keypath, "'argument' is a mapping: name (the parameter), at (its "
                        "position) or of (a metavariable bound to the called def), and "
                        "a constraint on the value (is / has / contains / regex / any / all / not)")
    if "name" not in raw:
        raise RuleError(keypath, "'argument' needs 'name': the parameter whose argument is "
                        "meant (its keyword always binds it)")
    if "at" in raw and "of" in raw:
        raise RuleError((*keypath, "of"), "'argument' takes its position from 'at' or from "
                        "'of', not both", key=True)
    name = _parameter_name(raw["name"], (*keypath, "name"))
    at = _place(raw["at"], (*keypath, "at")) if "at" in raw else None
    of = raw.get("of")
    callee = None
    if "of" in raw:
        of_name = of.lstrip("$") if isinstance(of, str) else None
        if of_name is not None and of_name == of and not METAVAR_NAME_RE.fullmatch(of) \
                and SCOPE_RE.match(of):
            if of.split(".")[0] in ("self", "cls"):
                raise RuleError((*keypath, "of"), f"'of' names a definition of the file by "
                                f"its dotted name from the module: its class, not "
                                f"'{of.split('.')[0]}' (e.g. Sampler._verify)")
            callee, of = of, None  # a function of the file, by its dotted name
        elif of_name is None or of_name not in bound:
            said = ", ".join(f"${n}" for n in sorted(bound)) or "none"
            raise RuleError((*keypath, "of"), "'of' names the called definition: a single "
                            "metavariable ($DEF) bound to it by this rule's pattern or an "
                            f"enclosing one (bound here: {said}), or its dotted name in the "
                            "file (_kernel, Sampler._verify)")
        else:
            of = of_name
    rest = {k: v for k, v in raw.items() if k not in ARGUMENT_KEYS}
    for k in rest:
        if k not in _VALUE_KEYS:
            raise RuleError((*keypath, k), unknown_key(
                str(k), [*ARGUMENT_KEYS, *_VALUE_KEYS], "an argument has"), key=True)
    value = _constraint(rest, keypath, False, bound) if rest else None
    return Argument(name=name, at=at, of=of, callee=callee, value=value)


def _parameter(raw: Any, keypath: tuple[str | int, ...]) -> Parameter:
    """``parameter: {name: P, at: N}``."""
    if not isinstance(raw, dict) or set(raw) != set(PARAMETER_KEYS):
        for k in raw if isinstance(raw, dict) else ():
            if k not in PARAMETER_KEYS:
                raise RuleError((*keypath, k), unknown_key(str(k), list(PARAMETER_KEYS),
                                                           "a parameter has"), key=True)
        raise RuleError(keypath, "'parameter' is a mapping of name (the parameter) and at "
                        "(its position among the positional ones, self counted, from 0)")
    return Parameter(name=_parameter_name(raw["name"], (*keypath, "name")),
                     at=_place(raw["at"], (*keypath, "at")))


def _kind(value: object) -> str:
    """What YAML made of a value, for "not text" and "not a mapping" messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return "text"


def _where(raw: Any, pattern: Pattern, keypath: tuple[str | int, ...],
           bound: frozenset[str] = frozenset(), key_name: str = "where") -> dict[str, Constraint]:
    """The constraints of a ``where`` (or of an ``every``'s ``require``, the same shape)."""
    if raw is not None and not isinstance(raw, dict):  # a nested rule's: no schema saw it
        raise RuleError(keypath, f"'{key_name}' is a mapping of metavariable name -> "
                        f"constraint, not {_kind(raw)}")
    out: dict[str, Constraint] = {}
    for key, value in (raw or {}).items():
        name = key.lstrip("$")
        if not METAVAR_NAME_RE.fullmatch(name) or name.startswith("_"):
            raise RuleError((*keypath, key), f"'{key}': {WHERE_KEY_MESSAGE}", key=True)
        if name not in pattern.single and name not in pattern.multi:
            captured = sorted([f"${n}" for n in pattern.single] + [f"$$${n}" for n in pattern.multi])
            said = ", ".join(captured) if captured else "nothing"
            raise RuleError((*keypath, key), f"'{key}' is not a metavariable of the pattern "
                            f"`{pattern.short}` (it captures {said})")
        out[name] = _constraint(value, (*keypath, key), name in pattern.multi,
                                bound | pattern.single)
    return out


def assign_parts(text: str) -> tuple[str, str] | None:
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


def parse_rule(raw: Any, keypath: tuple[str | int, ...],
               bound: frozenset[str] = frozenset()) -> Rule:
    """A pattern string, or a mapping with ``pattern`` and optional relations; ``bound``:
    the single metavariables enclosing rules capture (what an ``argument``'s ``of`` may name)."""
    if isinstance(raw, str):
        return Rule(parse_pattern(raw, keypath))
    if not isinstance(raw, dict) or "pattern" not in raw:
        raise RuleError(keypath, "a rule is a pattern, or a mapping with a 'pattern'")
    if keypath:  # a nested rule: the schema leaves its keys to us
        for key in raw:
            if key not in RULE_KEYS:
                raise RuleError((*keypath, key), unknown_key(str(key), list(RULE_KEYS),
                                                             "a rule has"), key=True)
    pattern = parse_pattern(raw["pattern"], (*keypath, "pattern"))

    def sub(key: str) -> Rule | None:
        return parse_rule(raw[key], (*keypath, key), bound | pattern.single) if key in raw else None

    guard = raw.get("guarded_by")
    in_place = raw.get("in_place", False)
    if "in_place" in raw:
        if not isinstance(in_place, bool):
            raise RuleError((*keypath, "in_place"), "'in_place' is true or false, not "
                            f"{_kind(in_place)}")
        under = bool(keypath) and (keypath[-1] == "not" or _is_every(keypath) or (
            len(keypath) >= 2 and keypath[-2] == "not" and isinstance(keypath[-1], int)))
        if not under or assign_parts(pattern.text) is None:
            raise RuleError((*keypath, "in_place"), _IN_PLACE_WHERE, key=True)
    if "require" in raw and not _is_every(keypath):
        raise RuleError((*keypath, "require"), _REQUIRE_WHERE, key=True)
    unconditional = raw.get("unconditional", False)
    if not isinstance(unconditional, bool):  # a nested rule's: no schema saw it
        raise RuleError((*keypath, "unconditional"), "'unconditional' is true or false, not "
                        f"{_kind(unconditional)}")
    return Rule(
        pattern=pattern,
        where=_where(raw.get("where"), pattern, (*keypath, "where"), bound),
        require=_where(raw.get("require"), pattern, (*keypath, "require"), bound,
                       "require"),
        inside=sub("inside"),
        has=sub("has"),
        guarded_by=parse_pattern(guard, (*keypath, "guarded_by")) if guard is not None else None,
        follows=sub("follows"),
        precedes=sub("precedes"),
        not_=tuple(r for _, r in _rule_list(raw.get("not"), (*keypath, "not"),
                                             bound | pattern.single)),
        in_place=in_place,
        unconditional=unconditional,
    )


def decorator_key(text: str) -> str | None:
    """A decorator as a syntax tree (``@f(x=1)``, ``f( x = 1 )`` and ``f(x=1)`` are one), or
    None when it is not an expression."""
    tree = parse_expression(text.strip().removeprefix("@"))
    return None if tree is None else ast.dump(tree)


def _decorators(raw: Any) -> tuple[str, ...] | None:
    if raw is None:
        return None
    if not isinstance(raw, list):  # the schema says so too; kept for direct callers
        raise RuleError(("decorators",), "'decorators' is a list of decorators, e.g. "
                        '["@torch.inference_mode()"]')
    for i, text in enumerate(raw):
        if not isinstance(text, str) or decorator_key(text) is None:
            raise RuleError(("decorators", i), f"'{text}' is not a decorator (Python code such "
                            "as @torch.inference_mode())")
    return tuple(raw)


def _rule_list(raw: Any, keypath: tuple[str | int, ...],
               bound: frozenset[str] = frozenset()) -> list[tuple[tuple[str | int, ...], Rule]]:
    """``every`` / ``not`` (the last key of ``keypath``): one rule, or a non-empty list of
    them, each with its own key path (``every[1]``) for what is said of it."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        return [(keypath, parse_rule(raw, keypath, bound))]
    if not raw:
        raise RuleError(keypath, f"'{keypath[-1]}' is a rule or a non-empty list of rules")
    return [((*keypath, i), parse_rule(r, (*keypath, i), bound)) for i, r in enumerate(raw)]


def _every_rules(raw: Any) -> tuple[Rule, ...]:
    """``every``: one rule, or a list of them (one invariant may quantify over two patterns:
    every launch of a kernel passes the flag, and every launch of another its buffers)."""
    rules = _rule_list(raw, ("every",))
    for keypath, rule in rules:
        if not rule.has_relation:
            raise RuleError(keypath, _EVERY_WITHOUT_RELATION + (
                ": its 'where' only selects which matches count" if rule.where else ""),
                key=True)
    return tuple(rule for _, rule in rules)


def _is_every(keypath: tuple[str | int, ...]) -> bool:
    """Whether ``keypath`` is an ``every`` rule's own (``every`` or ``every[i]``)."""
    return keypath == ("every",) or (len(keypath) == 2 and keypath[0] == "every"
                                     and isinstance(keypath[1], int))


def parse_invariant(iid: str, raw: dict[str, Any]) -> Invariant:
    """Build one invariant from its (schema-valid) record; ``RuleError`` on a bad rule."""
    problem = path_problem(raw["file"])
    if problem:
        raise RuleError(("file",), problem)
    if not raw["file"].endswith(".py"):
        raise RuleError(("file",), "invariants are rules on Python source: name a .py file")
    scope = raw.get("in")
    if scope is not None and not SCOPE_RE.match(scope):
        raise RuleError(("in",), f"'{scope}' is not a dotted name of classes/functions "
                        "(write e.g. GPUModelRunner.sample)")
    decorators = _decorators(raw.get("decorators"))
    if decorators is not None and scope is None:
        raise RuleError(("decorators",), "'decorators' are those allowed on the `in:` "
                        "definition: this invariant has no 'in'", key=True)
    rule = parse_rule(raw, ())
    every = _every_rules(raw.get("every"))
    return Invariant(
        id=iid, file=raw["file"], scope=scope, rule=rule, every=every,
        claim=raw.get("claim"), title=raw.get("title"),
        source=raw["source"] if raw.get("source", "target") != "target" else None,
        decorators=decorators,
    )
