"""Judging claims on Python source: ast-grep evaluates the rules, each file parsed once.

ast-grep-py evaluates every rule natively (``SgNode.find_all(config)``); this
module adds only the roles and the scope:

* the file is parsed once per run (``Engine.parse``) and each invariant judged once
  (its check and the citations anchored on it share the outcome);
* ``in: A.b`` is resolved to the definitions of that dotted name (every one, when
  a name is defined twice) and the rules are searched in each;
* a counterexample found → ``fail`` (the claim is contradicted, with where); an
  evidence rule matching nothing → ``stale`` (the claim may still hold, but its
  evidence changed shape: a person must look again); otherwise ``pass``, with the
  first evidence rule's matches as the claim's places.

What a syntactic rule cannot see (values flowing through names, code reached by
``getattr`` or ``exec``, a method replaced after its class) is a blind spot by
design: the threat it answers is an honest refactor, and deliberate edits change
the file's pinned digest (docs/threat-model.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from pp1audit.errors import MissingFile, SourceError
from pp1audit.rules.model import Invariant, RuleConfig, ast_grep_reason

if TYPE_CHECKING:
    from ast_grep_py import SgNode

    from pp1audit.sources.store import FileStore

PASS, STALE, FAIL, ERROR = "pass", "stale", "fail", "error"
"""An outcome's status, named as the result statuses it becomes."""

_DEFINITIONS = ("class_definition", "function_definition")


@dataclass(frozen=True)
class Outcome:
    """What an invariant's evaluation found: status, reason and the claim's places."""

    status: str
    message: str
    spans: tuple[tuple[int, int], ...] = ()
    """1-based inclusive lines of each match of the first evidence rule (pass only)."""
    excerpts: tuple[str, ...] = ()


def _lines(node: SgNode) -> tuple[int, int]:
    r = node.range()
    return (r.start.line + 1, r.end.line + 1)


def _where(span: tuple[int, int]) -> str:
    a, b = span
    return f"line {a}" if a == b else f"lines {a}-{b}"


class Engine:
    """Per-run evaluator over a ``FileStore``: one parse per file, one outcome per invariant."""

    def __init__(self, store: FileStore) -> None:
        self.store = store
        self._parsed: dict[str, SgNode | SourceError] = {}
        self._outcomes: dict[tuple[str, bool], Outcome] = {}
        self._scope_cache: dict[tuple[str, str | None], list[SgNode]] = {}

    def parse(self, path: str) -> SgNode:
        """The file's tree-sitter root; ``SourceError`` (cached too) when it cannot be read."""
        hit = self._parsed.get(path)
        if hit is None:
            hit = self._parse(path)
            self._parsed[path] = hit
        if isinstance(hit, SourceError):
            raise hit
        return hit

    def _parse(self, path: str) -> SgNode | SourceError:
        from ast_grep_py import SgRoot

        try:
            text = self.store.get(path).text().removeprefix("\ufeff")
        except SourceError as exc:
            return exc
        # Lines as spans.decode_lines numbers them: CRLF and a lone CR end a line.
        root = SgRoot(text.replace("\r\n", "\n").replace("\r", "\n"), "python").root()
        broken = root.find(kind="ERROR")
        if broken is not None:
            # tree-sitter repairs what it cannot read; a rule judged on the repair
            # would say nothing of the code, so the file is not judged.
            line = broken.range().start.line + 1
            return SourceError(path, f"line {line}: not Python that the rules' parser can read; "
                               "claims on it cannot be judged")
        return root

    def outcome(self, inv: Invariant) -> Outcome:
        """Evaluate (once) an invariant against the store's version of its file."""
        return self._cached(inv, True)

    def evidence(self, inv: Invariant) -> Outcome:
        """Where the claim's evidence is, counterexamples aside: a citation anchored on
        the invariant follows its evidence; whether the claim holds is its own check."""
        return self._cached(inv, False)

    def _cached(self, inv: Invariant, counter: bool) -> Outcome:
        hit = self._outcomes.get((inv.id, counter))
        if hit is None:
            hit = self._outcomes[(inv.id, counter)] = self._evaluate(inv, counter)
        return hit

    def _evaluate(self, inv: Invariant, counter: bool) -> Outcome:
        """The evidence is looked for once per run; the full verdict adds the
        counterexamples to it (a citation asks for the first, the check for both)."""
        try:
            root = self.parse(inv.file)
        except SourceError as exc:
            return Outcome(FAIL if isinstance(exc, MissingFile) else ERROR, exc.sentence)
        if counter:
            found = self._rules(lambda: counterexample(self._scopes(root, inv), inv), inv)
            return found if found is not None else self._cached(inv, False)
        out = self._rules(lambda: evidence(self._scopes(root, inv), inv), inv)
        assert out is not None
        if not out.spans:
            return out
        # Whole lines, as a citation quotes them (a node's text starts at its column).
        lines = self.store.get(inv.file).text_lines()
        return replace(out, excerpts=tuple("\n".join(lines[a - 1 : b]) for a, b in out.spans))

    def _scopes(self, root: SgNode, inv: Invariant) -> list[SgNode]:
        """``scope_nodes``, once per file and scope (claims share their ``in:``)."""
        key = (inv.file, inv.scope)
        if key not in self._scope_cache:
            self._scope_cache[key] = scope_nodes(root, inv.scope)
        return self._scope_cache[key]

    @staticmethod
    def _rules(run: Callable[[], Outcome | None], inv: Invariant) -> Outcome | None:
        """``run`` with ast-grep's run-time refusals turned into an ``error`` outcome."""
        try:
            return run()
        except RecursionError:  # the file's fault (nesting), not the rule's
            return Outcome(ERROR, f"{inv.file} is nested too deeply to be judged")
        except Exception as exc:  # ast-grep refused at run time: a rule bug
            return Outcome(ERROR, f"rule could not be evaluated: {ast_grep_reason(exc)}")


def judge(root: SgNode, inv: Invariant, counter: bool = True) -> Outcome:
    """The verdict of ``inv``'s rules on one parsed file (pure: no store, no cache);
    ``counter=False`` looks for the evidence alone."""
    scopes = scope_nodes(root, inv.scope)
    found = counterexample(scopes, inv) if counter else None
    return found if found is not None else evidence(scopes, inv)


def counterexample(scopes: list[SgNode], inv: Invariant) -> Outcome | None:
    """``fail`` with where, when a counterexample rule matches in the scopes; else None."""
    for rule in inv.counterexample:
        found = _matches(scopes, rule)
        if found:
            span = _lines(found[0])
            more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
            return Outcome(FAIL, f"counterexample found at {_where(span)}{more}: "
                           f"{_first_line(found[0])}")
    return None


def evidence(scopes: list[SgNode], inv: Invariant) -> Outcome:
    """``pass`` with the first evidence rule's places when every evidence rule matches in
    the scopes; ``stale`` naming the first that does not (or the scope that is gone)."""
    if not scopes:
        return Outcome(STALE, f"no definition {inv.scope} in {inv.file}: the evidence's scope "
                       "changed shape; re-review the claim")
    first: list[SgNode] = []
    for rule in inv.evidence:
        found = _matches(scopes, rule)
        if not found:
            where = f" in {inv.scope}" if inv.scope else ""
            return Outcome(STALE, f"evidence '{rule.name}' no longer found{where}: the code "
                           "changed shape; re-review the claim")
        first = first or found
    spans = tuple(_lines(n) for n in first)
    several = f" ({len(first)} places)" if len(first) > 1 else ""
    return Outcome(PASS, f"holds: evidence at {_where(spans[0])}{several}",
                   spans=spans, excerpts=tuple(n.text() for n in first))


def _matches(scopes: list[SgNode], rule: RuleConfig) -> list[SgNode]:
    """Matches of one config in every scope, in source order, each once."""
    found: dict[tuple[int, int], SgNode] = {}
    for scope in scopes:
        for node in scope.find_all(rule.config):  # type: ignore[call-overload]
            r = node.range()
            found.setdefault((r.start.index, r.end.index), node)
    return [found[k] for k in sorted(found)]


def _first_line(node: SgNode) -> str:
    text = node.text().strip().splitlines()[0] if node.text().strip() else node.kind()
    return text if len(text) <= 100 else text[:97] + "..."


def scope_nodes(root: SgNode, scope: str | None) -> list[SgNode]:
    """The definitions a dotted ``in:`` names (each one, when redefined), or the module.

    Each step looks for a class or function of that name whose nearest enclosing
    definition is the previous step's (at the first step, none: a module-level name,
    also under an ``if``), so ``A.f`` is A's own method, not a function nested in it.
    """
    if scope is None:
        return [root]
    nodes = [root]
    for part in scope.split("."):
        nodes = [d for n in nodes for d in _defined_in(n, part)]
    return nodes


def _defined_in(holder: SgNode, name: str) -> list[SgNode]:
    rule = {"any": [{"kind": k} for k in _DEFINITIONS],
            "has": {"field": "name", "regex": f"^{name}$"}}
    out = []
    for node in holder.find_all({"rule": rule}):  # type: ignore[call-overload]
        if node == holder:
            continue
        parent = node.parent()
        while parent is not None and parent.kind() not in _DEFINITIONS:
            parent = parent.parent()
        if (parent is None and holder.kind() == "module") or parent == holder:
            out.append(node)
    return out

