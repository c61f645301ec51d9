"""A claim's rules as the manifest writes them: ast-grep rule configs, checked at load time.

An invariant backs one sentence of the audit (``claim``) with rules written in
ast-grep's own rule language (``rule`` / ``constraints`` / ``utils``, exactly as
https://ast-grep.github.io/reference/rule.html documents them), so a rule can be
pasted into ast-grep's playground or CLI and behave the same. pp1audit adds only
what a manifest needs and ast-grep has no word for:

* ``file``: the Python file the rules read (``source``: a git source holding it);
* ``in: Class.method``: a scope shorthand, the definitions searched (ast-grep
  would need an ``inside`` on every rule for it);
* a *role* for each rule: ``evidence`` must match (gone: ``stale``, a person
  must look again) and ``counterexample`` must not (found: ``fail``);
* ``utils`` at the invariant's level, shared by all its rules (ast-grep keeps
  global utils in a project's ``sgconfig``; here the invariant is the project).

Everything that can be found wrong without the audited file is refused here with
the key that is wrong, so the loader can point at ``file:line:column``: ast-grep
compiles each config once against an empty tree, and a ``pattern`` that is not
Python is refused (ast-grep would silently match nothing).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pp1audit.manifest.paths import path_problem

SCOPE_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
"""``in:``: dotted names of classes/functions, from the module down."""

ROLES = ("evidence", "counterexample")
"""The two roles a rule can play for its claim, in the order they are written."""


class RuleError(Exception):
    """A rule problem found at load time; ``keypath`` is relative to the invariant."""

    def __init__(self, keypath: tuple[str | int, ...], message: str, *, key: bool = False) -> None:
        super().__init__(message)
        self.keypath = keypath
        self.message = message
        self.key = key
        """Whether the problem is the key itself (an unknown name), not its value."""


@dataclass(frozen=True)
class RuleConfig:
    """One ast-grep rule config (``rule`` plus optional ``constraints`` / ``utils``)."""

    config: Mapping[str, Any]
    """Exactly what ``SgNode.find_all(config)`` is given."""
    role: str
    """``evidence`` or ``counterexample``."""
    index: int
    """Its place in its role's list (0 when the role holds a single config)."""

    @property
    def name(self) -> str:
        """How messages name it: its pattern or kind, else its role and place."""
        rule = self.config.get("rule", {})
        for key in ("pattern", "kind", "regex"):
            value = rule.get(key)
            if isinstance(value, str):
                return value if len(value) <= 60 else value[:57] + "..."
            if isinstance(value, Mapping) and isinstance(value.get("context"), str):
                return str(value["context"])[:60]
        return f"{self.role} rule {self.index + 1}"


@dataclass(frozen=True)
class Invariant:
    """One claim about code structure, checked as kind ``invariant``."""

    id: str
    file: str
    evidence: tuple[RuleConfig, ...]
    counterexample: tuple[RuleConfig, ...] = ()
    scope: str | None = None
    claim: str | None = None
    title: str | None = None
    source: str | None = None
    """A named git source or remote pin ``file`` lives in; None: the target."""

    @property
    def summary(self) -> str:
        """The first evidence rule's name: what ``expected`` shows in results."""
        return self.evidence[0].name


def parse_invariant(iid: str, raw: Mapping[str, Any]) -> Invariant:
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
    shared = dict(raw.get("utils") or {})
    roles = {role: _configs(raw.get(role), role, shared) for role in ROLES}
    if not roles["evidence"]:
        raise RuleError(("evidence",), "a claim needs at least one evidence rule", key=True)
    source = raw.get("source", "target")
    return Invariant(
        id=iid, file=raw["file"], evidence=roles["evidence"],
        counterexample=roles["counterexample"], scope=scope,
        claim=raw.get("claim"), title=raw.get("title"),
        source=None if source == "target" else source,
    )


def _configs(raw: Any, role: str, shared: Mapping[str, Any]) -> tuple[RuleConfig, ...]:
    """A role's configs (one mapping or a list of them), each compiled by ast-grep."""
    if raw is None:
        return ()
    items = raw if isinstance(raw, list) else [raw]
    out = []
    for i, item in enumerate(items):
        keypath: tuple[str | int, ...] = (role, i) if isinstance(raw, list) else (role,)
        config = dict(item)
        if shared:
            config["utils"] = {**shared, **(item.get("utils") or {})}
        _compile(config, keypath)
        out.append(RuleConfig(config, role, i))
    return tuple(out)


def _compile(config: Mapping[str, Any], keypath: tuple[str | int, ...]) -> None:
    """Refuse what ast-grep refuses (unknown keys, a bad regex, an undefined util or
    metavariable), and a pattern that is not Python, which ast-grep would accept and
    never match: a claim whose evidence can never be found would be stale forever."""
    from ast_grep_py import SgRoot

    for where, pattern in _patterns(config.get("rule"), (*keypath, "rule")):
        problem = pattern_problem(pattern)
        if problem is not None:
            raise RuleError(where, problem)
    try:
        SgRoot("", "python").root().find_all(config)  # type: ignore[call-overload]
    except Exception as exc:  # ast-grep raises Exception/RuntimeError with its reason
        raise RuleError(keypath, f"ast-grep refuses this rule: {ast_grep_reason(exc)}") from None


def ast_grep_reason(exc: BaseException) -> str:
    """ast-grep's own words for a refusal, without its stack trace: the innermost
    ``Caused by`` line, which names the problem (``Rule `x` is not defined``)."""
    lines = [ln.strip() for ln in str(exc).split("Stack backtrace:")[0].splitlines() if ln.strip()]
    causes = [re.sub(r"^\d+:\s*", "", ln) for ln in lines if ln != "Caused by:"]
    return causes[-1] if causes else type(exc).__name__


def pattern_problem(pattern: str) -> str | None:
    """Why ``pattern`` is not Python code with metavariables (None when it is)."""
    from ast_grep_py import SgRoot

    # ast-grep reads `$` as its Python expando `µ`: parse the pattern the way it does.
    node = SgRoot(pattern.replace("$", "µ"), "python").root().find(kind="ERROR")
    if node is None:
        return None
    col = node.range().start.column + 1
    return (f"pattern is not Python code (tree-sitter cannot read it at column {col}); "
            "ast-grep would never match it")


def _patterns(rule: Any, keypath: tuple[str | int, ...]) -> list[tuple[tuple[str | int, ...], str]]:
    """Every ``pattern`` string in a rule, with its key path (relations and lists too)."""
    found: list[tuple[tuple[str | int, ...], str]] = []
    if isinstance(rule, Mapping):
        for key, value in rule.items():
            if key == "pattern" and isinstance(value, str):
                found.append(((*keypath, key), value))
            elif key == "pattern" and isinstance(value, Mapping) and isinstance(value.get("context"), str):
                continue  # a context pattern is a fragment by design (its selector picks the node)
            else:
                found += _patterns(value, (*keypath, key))
    elif isinstance(rule, list):
        for i, item in enumerate(rule):
            found += _patterns(item, (*keypath, i))
    return found
