"""The claim engine on small hand-made files: roles, scope, and what it refuses.

Each PP1 claim is tried on the real tree in tests/acceptance; here the mechanism
itself: evidence gone is ``stale``, a counterexample found is ``fail`` (with where),
``in:`` searches the named definitions only, rules are ast-grep's own (a rule
ast-grep refuses, or a pattern that is not Python, is refused at load time with the
manifest's line and column).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from ast_grep_py import SgRoot
from conftest import run_cli

from pp1audit.rules.engine import FAIL, PASS, STALE, judge, scope_nodes
from pp1audit.rules.model import Invariant, RuleError, parse_invariant

CODE = '''\
class Runner:
    def sample(self, logits):
        self.mask(logits)
        return self.sampler(logits, self.draft)

    def other(self, logits):
        return self.sampler(logits)


def sample(x):
    return x
'''

CLAIM = {
    "file": "pkg/mod.py",
    "in": "Runner.sample",
    "evidence": {"rule": {"pattern": "self.sampler($$$ARGS)",
                          "has": {"pattern": "self.draft", "stopBy": "end"}}},
    "counterexample": {"rule": {"pattern": "self.sampler($$$ARGS)",
                                "not": {"has": {"pattern": "self.draft", "stopBy": "end"}}}},
}


def claim(**changes: object) -> Invariant:
    return parse_invariant("c", {**CLAIM, **changes})


def verdict(code: str, inv: Invariant) -> tuple[str, str, tuple[tuple[int, int], ...]]:
    out = judge(SgRoot(code, "python").root(), inv)
    return out.status, out.message, out.spans


def test_evidence_found_and_no_counterexample_passes_with_its_lines() -> None:
    status, _, spans = verdict(CODE, claim())
    assert (status, spans) == (PASS, ((4, 4),))


def test_scope_is_the_named_method_only() -> None:
    """Runner.other calls the sampler without the draft: outside the scope, so it is not
    a counterexample; without the scope it is."""
    assert verdict(CODE, claim())[0] == PASS
    status, message, _ = verdict(CODE, claim(**{"in": None}))
    assert status == FAIL and "line 7" in message


def test_counterexample_found_fails_and_says_where() -> None:
    code = CODE.replace("        self.mask(logits)\n", "        self.sampler(logits)\n")
    status, message, _ = verdict(code, claim())
    assert status == FAIL
    assert message.startswith("counterexample found at line 3: self.sampler(logits)")


def test_evidence_gone_is_stale_not_fail() -> None:
    code = CODE.replace("return self.sampler(logits, self.draft)", "return self.draw(logits)")
    status, message, _ = verdict(code, claim())
    assert status == STALE and "no longer found in Runner.sample" in message


def test_scope_gone_is_stale() -> None:
    status, message, _ = verdict(CODE.replace("def sample(self", "def draw(self"), claim())
    assert status == STALE and "no definition Runner.sample" in message


def test_every_evidence_rule_must_match() -> None:
    inv = claim(evidence=[CLAIM["evidence"], {"rule": {"pattern": "self.mask($X)"}}])
    assert verdict(CODE, inv)[0] == PASS
    assert verdict(CODE.replace("self.mask(logits)", "pass"), inv)[0] == STALE


def test_scope_resolves_each_definition_of_a_redefined_name() -> None:
    code = "if A:\n    def f():\n        g(1)\nelse:\n    def f():\n        g(2)\n"
    nodes = scope_nodes(SgRoot(code, "python").root(), "f")
    assert [n.range().start.line for n in nodes] == [1, 4]


def test_a_module_function_is_not_a_method_of_the_same_name() -> None:
    nodes = scope_nodes(SgRoot(CODE, "python").root(), "sample")
    assert [n.range().start.line for n in nodes] == [9]


def test_harmless_spellings_hold() -> None:
    """Keyword argument, reformatting, parentheses: the claim's evidence still matches."""
    for code in (CODE.replace("self.sampler(logits, self.draft)", "self.sampler(logits, draft=self.draft)"),
                 CODE.replace("self.sampler(logits, self.draft)", "self.sampler(\n            logits,\n"
                              "            (self.draft),\n        )")):
        assert verdict(code, claim())[0] == PASS, code


def test_shared_utils_reach_every_rule() -> None:
    inv = parse_invariant("c", {
        "file": "m.py",
        "utils": {"draft": {"pattern": "self.draft"}},
        "evidence": {"rule": {"pattern": "self.sampler($$$A)", "has": {"matches": "draft", "stopBy": "end"}}},
        "counterexample": {"rule": {"matches": "draft", "inside": {"pattern": "del $X", "stopBy": "end"}}},
    })
    assert verdict(CODE, inv)[0] == PASS


@pytest.mark.parametrize(("evidence", "where", "words"), [
    ({"rule": {"patern": "x"}}, ("evidence",), "unknown field `patern`"),
    ({"rule": {"matches": "nowhere"}}, ("evidence",), "Rule `nowhere` is not defined"),
    ({"rule": {"pattern": "f($A)"}, "constraints": {"B": {"regex": "x"}}}, ("evidence",),
     "Undefined meta var `B`"),
    ({"rule": {"pattern": "f($A"}}, ("evidence", "rule", "pattern"), "not Python code"),
    ({"rule": {"regex": "("}}, ("evidence",), "unclosed group"),
])
def test_a_rule_ast_grep_refuses_is_refused_at_load(evidence: dict[str, object],
                                                     where: tuple[str, ...], words: str) -> None:
    with pytest.raises(RuleError) as info:
        parse_invariant("c", {"file": "m.py", "evidence": evidence})
    assert info.value.keypath == where
    assert words in info.value.message


def test_a_non_python_file_or_a_bad_scope_is_refused() -> None:
    with pytest.raises(RuleError, match=r"name a \.py file"):
        parse_invariant("c", {**CLAIM, "file": "m.txt"})
    with pytest.raises(RuleError, match="not a dotted name"):
        parse_invariant("c", {**CLAIM, "in": "Runner.sample()"})


MANIFEST = '''\
pp1audit: 1
audit: {{id: t, title: t, date: 2026-10-23}}
target: {{package: pkg}}
invariants:
  c:
    file: pkg/mod.py
    in: Runner.sample
    evidence:
      rule: {rule}
'''


def test_check_exits_1_on_stale_and_says_so(make_files: Callable[[dict[str, str | bytes]], Path]) -> None:
    root = make_files({"pkg/__init__.py": "", "pkg/mod.py": CODE,
                       "m.yaml": MANIFEST.format(rule="{pattern: self.draw($$$A)}")})
    proc = run_cli("check", str(root), "--manifest", str(root / "m.yaml"), "--format", "json")
    assert proc.returncode == 1, proc.stderr
    result = json.loads(proc.stdout)
    assert result["format"] == "pp1audit.result/2"
    assert result["counts"]["stale"] == 1 and result["checks"][0]["status"] == "stale"


def test_check_refuses_a_bad_rule_with_line_and_column(
        make_files: Callable[[dict[str, str | bytes]], Path]) -> None:
    root = make_files({"pkg/__init__.py": "", "pkg/mod.py": CODE,
                       "m.yaml": MANIFEST.format(rule="{pattern: 'self.draw($A'}")})
    proc = run_cli("check", str(root), "--manifest", str(root / "m.yaml"))
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"pp1audit: error: {root / 'm.yaml'}:9:")
    assert "not Python code" in proc.stderr and len(proc.stderr.splitlines()) == 1


def test_a_file_tree_sitter_cannot_read_is_an_error(
        make_files: Callable[[dict[str, str | bytes]], Path]) -> None:
    """A rule judged on tree-sitter's repair of broken code would say nothing of the
    code. (A repair by an invisible missing token, ``def f(:``, is not seen: Python
    would refuse to import such a file, and its digest changed: docs/threat-model.md.)"""
    root = make_files({"pkg/__init__.py": "", "pkg/mod.py": CODE + "x = (1,\n",
                       "m.yaml": MANIFEST.format(rule="{pattern: self.mask($$$A)}")})
    proc = run_cli("check", str(root), "--manifest", str(root / "m.yaml"), "--format", "json")
    assert proc.returncode == 1
    check = json.loads(proc.stdout)["checks"][0]
    assert check["status"] == "error" and "line 12" in check["message"]
