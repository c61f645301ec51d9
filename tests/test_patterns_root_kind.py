"""A node of another kind than a pattern's root is not asked to match it (``root_kind``):
the kind read off the pattern is the kind of every node ast-grep finds for it, on the
patterns the shipped manifests' invariants ask for, evaluated on real vLLM 0.31.0, and on
forms whose root is a metavariable (which match nodes of any kind: no kind is read)."""

from __future__ import annotations

from pathlib import Path

import pytest
from ast_grep_py import SgRoot
from conftest import REPO

from pp1audit import patterns
from pp1audit.manifest import load_manifest
from pp1audit.matcher import Engine
from pp1audit.sources import DirectorySource
from pp1audit.store import FileStore

MANIFESTS = [REPO / "manifests" / "pp1.yaml",
             REPO / "manifests" / "examples" / "vllm-0.31.0-invariants.yaml"]


def test_kinds_read_off_the_shipped_patterns_hold_on_vllm(
        vllm_tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    asked: dict[str, str | None] = {}
    original = patterns.root_kind

    def recording(text: str) -> str | None:
        asked[text] = kind = original(text)
        return kind

    monkeypatch.setattr(patterns, "root_kind", recording)
    files: set[str] = set()
    for path in MANIFESTS:
        engine = Engine(FileStore(DirectorySource(vllm_tree)))
        for inv in load_manifest(path).invariants.values():
            if (vllm_tree / inv.file).is_file():
                engine.outcome(inv)
                files.add(inv.file)
    kinds = {text: kind for text, kind in asked.items() if kind is not None}
    assert len(kinds) >= 10 and len(files) >= 5
    found = 0
    for file in sorted(files):
        root = SgRoot((vllm_tree / file).read_text(encoding="utf-8"), "python").root()
        for text, kind in kinds.items():
            hits = root.find_all(pattern=text)
            assert all(hit.kind() == kind for hit in hits), (file, text, kind)
            found += len(hits)
    assert found > 100


@pytest.mark.parametrize(("text", "kind"), [
    ("$X", None),  # matches any node
    ("$$$ARGS", None),
    ("$X.draft_logits", "attribute"),
    ("self.speculator.draft_logits", "attribute"),
    ("f($$$A)", "call"),
    ("$F($$$)", "call"),
    ("x = $V", "assignment"),
    ("($X)", "parenthesized_expression"),
    ("return $X", "return_statement"),
    ("a; b", None),  # not one node: ast-grep refuses it, every node is asked as before
])
def test_kind_of_each_form(text: str, kind: str | None) -> None:
    assert patterns.root_kind(text) == kind
    if kind is None:
        return
    code = "x = f(a, b)\nreturn (y)\nself.speculator.draft_logits\nz = (w.draft_logits)\n"
    root = SgRoot(code, "python").root()
    assert root.find_all(pattern=text)
    assert all(hit.kind() == kind for hit in root.find_all(pattern=text))


def test_a_metavariable_root_still_matches_every_kind() -> None:
    """With no kind read, ``at`` asks ast-grep: ``$X`` captures a call and a name alike."""
    root = SgRoot("f(a)\n", "python").root()
    call = root.find(kind="call")
    name = root.find(kind="identifier")
    assert call is not None and name is not None
    pat = patterns.parse_pattern("$X")
    assert patterns.at(call, pat, {}) is not None
    assert patterns.at(name, pat, {}) is not None
    assert patterns.at(name, patterns.parse_pattern("f($A)"), {}) is None
    assert patterns.at(call, patterns.parse_pattern("f($A)"), {}) is not None
