"""Two small corpora of edits of the real vLLM 0.31.0 tree, judged by the PP1 claims.

* ``tests/data/pp1_breaks.yaml``: realistic semantic breaks. Each makes its claim
  ``fail`` (contradicted) or ``stale`` (evidence gone: re-review) and leaves every
  other claim on the edited file ``pass``.
* ``tests/data/pp1_refactors.yaml``: harmless refactors. Each leaves every claim on
  the edited file ``pass`` (``stale`` only where the case allows it), never ``fail``.

Each edit is applied over an in-memory overlay of the wheel (no copy of the tree) and
only the claims that read the edited file are judged again: the others read bytes the
edit did not touch.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import yaml
from conftest import REPO

from pp1audit.checks.invariants import check_invariant
from pp1audit.manifest import Manifest, load_manifest
from pp1audit.result import Check, Status
from pp1audit.rules.engine import Engine
from pp1audit.sources import Source, open_target
from pp1audit.sources.store import FileStore

pytestmark = pytest.mark.vllm

BREAKS = yaml.safe_load((REPO / "tests" / "data" / "pp1_breaks.yaml").read_text(encoding="utf-8"))
REFACTORS = yaml.safe_load((REPO / "tests" / "data" / "pp1_refactors.yaml").read_text(encoding="utf-8"))


class Overlay(Source):
    """A source that answers some paths from memory and the rest from another source."""

    def __init__(self, base: Source, files: dict[str, bytes]) -> None:
        self.base, self.files = base, files
        self.kind, self.location = base.kind, base.location

    def read(self, path: str) -> bytes:
        return self.files[path] if path in self.files else self.base.read(path)

    def exists(self, path: str) -> bool:
        return path in self.files or self.base.exists(path)

    def iter_files(self, under: str = "") -> Iterator[str]:
        return self.base.iter_files(under)


@pytest.fixture(scope="module")
def manifest() -> Manifest:
    return load_manifest(REPO / "manifests" / "pp1.yaml")


@pytest.fixture(scope="module")
def wheel_source(vllm_wheel) -> Iterator[Source]:  # type: ignore[no-untyped-def]
    with open_target(vllm_wheel, "vllm") as source:
        yield source


def edited(source: Source, case: dict[str, object]) -> dict[str, bytes]:
    """The case's file with its edit(s) applied; each old text must be there."""
    path = str(case["file"])
    text = source.read(path).decode("utf-8")
    for edit in [case, *([case["also"]] if "also" in case else [])]:
        old, new = str(edit["old"]), str(edit["new"])  # type: ignore[index]
        assert old in text, f"the edit's old text is not in {path}: {old!r}"
        text = text.replace(old, new, 1)
    return {path: text.encode("utf-8")}


def judge_file(manifest: Manifest, source: Source, path: str) -> dict[str, Check]:
    """Only the claims that read ``path``, on a fresh engine over ``source``."""
    engine = Engine(FileStore(source))
    return {iid: check_invariant(inv, engine) for iid, inv in manifest.invariants.items()
            if inv.file == path and inv.source is None}


def test_every_claim_passes_on_the_unedited_tree(manifest: Manifest, wheel_source: Source) -> None:
    for path in {inv.file for inv in manifest.invariants.values() if inv.source is None}:
        for iid, check in judge_file(manifest, wheel_source, path).items():
            assert check.status is Status.PASS, (iid, check.message)


def test_the_corpora_have_the_size_the_issue_asks() -> None:
    assert len(BREAKS) <= 40 and len(REFACTORS) >= 10
    claims = {case["claim"] for case in BREAKS.values()}
    manifest = load_manifest(REPO / "manifests" / "pp1.yaml")
    target = {i for i, inv in manifest.invariants.items() if inv.source is None}
    assert claims == target, f"claims no break exercises: {sorted(target - claims)}"


@pytest.mark.parametrize("name", sorted(BREAKS))
def test_a_break_closes_its_claim_and_nothing_else(name: str, manifest: Manifest,
                                                   wheel_source: Source) -> None:
    case = BREAKS[name]
    overlay = Overlay(wheel_source, edited(wheel_source, case))
    judged = judge_file(manifest, overlay, case["file"])
    assert judged[case["claim"]].status in (Status.FAIL, Status.STALE), judged[case["claim"]]
    others = {i: c.status.value for i, c in judged.items()
              if i != case["claim"] and c.status is not Status.PASS}
    assert not others, f"{name} also changed {others}"


@pytest.mark.parametrize("name", sorted(REFACTORS))
def test_a_refactor_fails_no_claim(name: str, manifest: Manifest, wheel_source: Source) -> None:
    case = REFACTORS[name]
    overlay = Overlay(wheel_source, edited(wheel_source, case))
    judged = judge_file(manifest, overlay, case["file"])
    assert judged, f"no claim reads {case['file']}"
    allowed = set(case.get("allow_stale", ()))
    wrong = {i: f"{c.status.value}: {c.message}" for i, c in judged.items()
             if not (c.status is Status.PASS or (c.status is Status.STALE and i in allowed))}
    assert not wrong, f"{name}: {wrong}"
