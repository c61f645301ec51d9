"""Snippet tests for the PP1 claims' rules, as ast-grep and semgrep keep them beside a rule.

Each claim of ``manifests/pp1.yaml`` has a file ``tests/rules/pp1/<claim-id>.yaml``
of small Python snippets modelled on real vLLM code, under the verdict the claim's
rules must give on them:

* ``pass``: the real code's shape, and harmless refactors the rules must survive;
* ``fail``: a counterexample present (every counterexample rule hit at least once);
* ``stale``: the evidence changed shape or is gone;
* ``known_gaps``: a harmless refactor the rules misjudge, with ``expect`` (the verdict
  they give today) and ``why``; the test asserts that verdict, so it notices when the
  rule changes and the gap can be moved to ``pass``.

Each snippet is judged alone (``judge`` on the snippet as the claim's whole file).
"""

from __future__ import annotations

import ast
from dataclasses import replace
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from ast_grep_py import SgRoot

from pp1audit.manifest import load_manifest
from pp1audit.rules.engine import FAIL, PASS, STALE, judge
from pp1audit.rules.model import Invariant

HERE = Path(__file__).resolve().parent
SNIPPETS = HERE / "pp1"
MANIFEST = HERE.parent.parent / "manifests" / "pp1.yaml"

VERDICTS = {"pass": PASS, "fail": FAIL, "stale": STALE}
SECTIONS = (*VERDICTS, "known_gaps")


@lru_cache(maxsize=1)
def invariants() -> dict[str, Invariant]:
    """The manifest's claims, loaded once per process."""
    return load_manifest(MANIFEST).invariants


@cache
def snippet_file(claim: str) -> dict[str, list[dict[str, Any]]]:
    """One claim's snippet file, its shape checked (sections, keys, unique names)."""
    path = SNIPPETS / f"{claim}.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    assert isinstance(data, dict), f"{path.name}: a mapping of sections"
    unknown = set(data) - set(SECTIONS)
    assert not unknown, f"{path.name}: unknown sections {sorted(unknown)} (use {SECTIONS})"
    names: set[str] = set()
    for section, items in data.items():
        assert isinstance(items, list) and items, f"{path.name}: '{section}' is a non-empty list"
        for item in items:
            keys = {"name", "code", "expect", "why"} if section == "known_gaps" else {"name", "code"}
            assert isinstance(item, dict) and set(item) == keys, (
                f"{path.name}: each '{section}' entry has exactly {sorted(keys)}")
            if section == "known_gaps":
                assert item["expect"] in VERDICTS.values() or item["expect"] == "error", item
            assert item["name"] not in names, f"{path.name}: name '{item['name']}' twice"
            names.add(item["name"])
    return data


def snippet_claims() -> list[str]:
    return sorted(p.stem for p in SNIPPETS.glob("*.yaml"))


def all_snippets() -> list[Any]:
    out = []
    for claim in snippet_claims():
        for section, items in snippet_file(claim).items():
            for item in items:
                expect = item["expect"] if section == "known_gaps" else VERDICTS[section]
                out.append(pytest.param(claim, item["code"], expect,
                                        id=f"{claim}/{section}/{item['name']}"))
    return out


def verdict(code: str, inv: Invariant) -> tuple[str, str]:
    out = judge(SgRoot(code, "python").root(), inv)
    return out.status, out.message


@pytest.mark.parametrize(("claim", "code", "expect"), all_snippets())
def test_snippet_verdict(claim: str, code: str, expect: str) -> None:
    # A snippet must be Python (and read by tree-sitter without repair): the
    # verdict on a broken snippet would say nothing of the rule.
    ast.parse(code)
    assert SgRoot(code, "python").root().find(kind="ERROR") is None, "tree-sitter cannot read it"
    inv = invariants().get(claim)
    assert inv is not None, f"no claim '{claim}' in {MANIFEST.name}"
    status, message = verdict(code, inv)
    assert status == expect, message


@pytest.mark.parametrize("claim", sorted(invariants()))
def test_every_claim_has_snippets(claim: str) -> None:
    path = SNIPPETS / f"{claim}.yaml"
    assert path.is_file(), f"claim '{claim}' has no snippet file {path.relative_to(HERE)}"
    data = snippet_file(claim)
    assert data.get("pass") and data.get("stale"), f"{path.name}: needs 'pass' and 'stale' snippets"
    assert bool(data.get("fail")) == bool(invariants()[claim].counterexample), (
        f"{path.name}: 'fail' snippets exactly when the claim has counterexample rules")


@pytest.mark.parametrize("claim", snippet_claims())
def test_every_snippet_file_names_a_claim(claim: str) -> None:
    assert claim in invariants(), f"pp1/{claim}.yaml: no such claim in {MANIFEST.name}"


@pytest.mark.parametrize("claim", [c for c in snippet_claims() if snippet_file(c).get("fail")])
def test_every_counterexample_rule_is_hit(claim: str) -> None:
    inv = invariants().get(claim)
    assert inv is not None
    codes = [item["code"] for item in snippet_file(claim)["fail"]]
    for rule in inv.counterexample:
        alone = replace(inv, counterexample=(rule,))
        assert any(verdict(code, alone)[0] == FAIL for code in codes), (
            f"no 'fail' snippet hits counterexample rule {rule.index + 1} ({rule.name})")
