"""`pp1audit report`: the PP1 audit regenerated from manifests/pp1.yaml."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import REPO, run_cli

from pp1audit.manifest.prose import Problem, validate

PP1 = REPO / "manifests" / "pp1.yaml"
SEED = REPO.parent / "shared" / "seeds" / "000_b8cc05a1b3d28d45.txt"


def normalise(lines: list[str]) -> list[str]:
    """Trailing spaces dropped, runs of blank lines folded to one, blank ends trimmed."""
    out: list[str] = []
    for line in lines:
        line = line.rstrip()
        if line == "" and out and out[-1] == "":
            continue
        out.append(line)
    while out and out[-1] == "":
        out.pop()
    while out and out[0] == "":
        out.pop(0)
    return out


def unwrap_seed(text: str) -> list[str]:
    """The seed's lines without their ``| … |`` wrapping."""
    out = []
    for line in text.splitlines():
        if line.strip() == "|":
            out.append("")
        else:
            out.append(re.sub(r"^\| ?(.*?) ?\|$", r"\1", line))
    return out


def assert_in_order(expected: list[str], actual: list[str]) -> None:
    pos = 0
    for line in expected:
        try:
            pos = actual.index(line, pos) + 1
        except ValueError:
            raise AssertionError(f"seed line not found in order: {line!r}") from None


def test_report_without_target_reproduces_the_seed() -> None:
    assert SEED.exists(), SEED
    proc = run_cli("report", "--manifest", str(PP1))
    assert proc.returncode == 0, proc.stderr
    seed = normalise(unwrap_seed(SEED.read_text(encoding="utf-8")))
    out = normalise(proc.stdout.splitlines())
    assert len([x for x in seed if x]) > 60
    assert_in_order(seed, out)
    # Nothing but the seed: no measured lines without a target.
    assert [x for x in out if x] == [x for x in seed if x]


def test_report_is_deterministic_and_check_detects_staleness(tmp_path: Path, vllm_wheel: Path) -> None:
    # PP1 pins a patched image: on public 0.31.0 the gate is closed, and the
    # report's exit code says so (the document is written all the same).
    first = run_cli("report", str(vllm_wheel), "--manifest", str(PP1))
    second = run_cli("report", str(vllm_wheel), "--manifest", str(PP1))
    assert first.returncode == second.returncode == 1, first.stderr
    assert first.stderr.startswith(f"pp1audit: {vllm_wheel}: FAIL (gate closed): ")
    assert first.stdout == second.stdout
    saved = tmp_path / "audit.md"
    assert run_cli("report", str(vllm_wheel), "-m", str(PP1), "-o", str(saved)).returncode == 1
    assert saved.read_text() == first.stdout
    ok = run_cli("report", str(vllm_wheel), "-m", str(PP1), "--check", str(saved))
    assert ok.returncode == 0 and "is stale" not in ok.stderr, ok.stdout + ok.stderr
    assert ok.stdout == ""  # current: no diff (the closed gate is only said on stderr)
    assert "FAIL (gate closed)" in ok.stderr
    both = run_cli("report", str(vllm_wheel), "-m", str(PP1), "--check", str(saved), "-o", "x.md")
    assert both.returncode == 2 and "drop --output" in both.stderr
    saved.write_text(first.stdout.replace("applies target sampling", "applies some sampling"))
    stale = run_cli("report", str(vllm_wheel), "-m", str(PP1), "--check", str(saved))
    assert stale.returncode == 1
    assert "-`gpu/spec_decode/rejection_sampler.py:244–287` applies some sampling" in stale.stdout.replace(
        "-  ", "-"
    )
    assert "+`gpu/spec_decode/rejection_sampler.py:244–287` applies target sampling" in stale.stdout.replace(
        "+  ", "+"
    )
    assert "is stale" in stale.stderr


def test_report_against_real_0310_carries_measurements(vllm_tree: Path) -> None:
    proc = run_cli("report", str(vllm_tree), "-m", str(PP1), "--excerpts")
    assert proc.returncode == 1, proc.stderr  # the gate is closed (see above)
    text = proc.stdout
    runner = (vllm_tree / "vllm/v1/worker/gpu/model_runner.py").read_text().splitlines()
    call = next(i for i, line in enumerate(runner, 1) if "sampler_output = self.rejection_sampler(" in line)
    # The claim's mark says where its span moved; its evidence, under its file, says it again.
    assert f"  ↳ **moved**: 1711–1718 → {call}–" in text
    assert f"  - **drift** `runner-passes-draft-logits` 1711–1718 → {call}–" in text
    assert "found `0.31.0`, pinned `0.31.1.dev0+g6e517b15.dsv41gb10`" in text
    # The hash table gains a measured column with the actual digests.
    assert "| File under `vllm/v1/worker/gpu/` | SHA256 | measured |" in text
    assert "**skip**" in text and "--repo lane=PATH" in text
    assert "## Evidence" in text and "| Verdict | **fail**, gate closed (" in text
    assert f"{call:5d}              sampler_output = self.rejection_sampler(" in text


def test_a_span_quoted_in_prose_must_be_evidence_of_its_block(tmp_path: Path) -> None:
    """Prose shows a citation where it was pinned; only the block's evidence
    says where it is now, so quoting it without listing it is refused."""
    m = tmp_path / "m.yaml"
    m.write_text(
        "pp1audit: 1\ntarget: {package: pkg}\ncitations:\n"
        "  c:\n    at: pkg/m.py:1\n    anchor: {exact: 'x = 1'}\n"
        "report:\n  sections:\n    - blocks:\n        - text: See [[cite:c]].\n", encoding="utf-8")
    proc = run_cli("report", "-m", str(m))
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == (f"pp1audit: error: {m}:10:21: cites 'c' but does not list it in evidence: "
                           "its measured place would not show (at report.sections[0].blocks[0].text)\n")


def test_files_in_the_hash_table_are_not_listed_again_as_uncited(vllm_wheel: Path) -> None:
    md = run_cli("report", str(vllm_wheel), "-m", str(PP1)).stdout
    assert "### Not cited by a claim" in md  # henryous:commit is in no block's evidence
    rest = md.split("### Not cited by a claim", 1)[-1]
    assert "| File under `vllm/v1/worker/gpu/` | SHA256 | measured |" in md
    assert "`file:vllm/v1/worker/gpu/" not in rest


def test_report_gate_options_are_those_of_check(tmp_path: Path, make_files) -> None:  # type: ignore[no-untyped-def]
    tree = make_files({"pkg/__init__.py": "", "pkg/m.py": "# moved\nx = 1\n"})
    m = tmp_path / "m.yaml"
    m.write_text("pp1audit: 1\ntarget: {package: pkg}\ncitations:\n"
                 "  c:\n    at: pkg/m.py:1\n    anchor: {exact: 'x = 1'}\n", encoding="utf-8")
    assert run_cli("check", str(tree), "-m", str(m)).returncode == 1  # drift
    assert run_cli("report", str(tree), "-m", str(m)).returncode == 1
    assert run_cli("check", str(tree), "-m", str(m), "--allow-drift").returncode == 0
    assert run_cli("report", str(tree), "-m", str(m), "--allow-drift").returncode == 0



def test_an_unknown_id_in_a_well_formed_reference_is_said_as_such(tmp_path: Path) -> None:
    """``[[cite:nope]]`` is a reference; what is wrong is the id, as for ``[[=a.nope]]``."""
    m = tmp_path / "m.yaml"
    head = ("pp1audit: 1\ntarget: {package: pkg}\ncitations:\n"
            "  c:\n    at: pkg/m.py:1\n    anchor: {exact: 'x = 1'}\n"
            "invariants:\n  inv: {file: pkg/m.py, evidence: {rule: {pattern: x = 1}}}\n"
            "report:\n  sections:\n    - blocks:\n        - text: ")
    cases = {
        "See [[cite:nope]].": "[[cite:nope]]: no citation 'nope' in the manifest",
        "Lines [[lines:nope-id]].": "[[lines:nope-id]]: no citation 'nope-id' in the manifest",
        "See [[cite:inv]].": "[[cite:inv]]: 'inv' names an invariant, not a citation "
                             "(only citations have lines to show)",
        "See [[cite:]].": "[[cite:]]: no citation id",
        "See [[site:c]].": "[[site:c]]: not a reference ([[=key.path]], [[cite:ID]], [[lines:ID]])",
        "See [[=audit.nope]].": "[[=audit.nope]]: no such key in the manifest",
    }
    for text, said in cases.items():
        m.write_text(head + text + "\n", encoding="utf-8")
        proc = run_cli("report", "-m", str(m))
        assert proc.returncode == 2 and proc.stdout == "", (text, proc.stderr)
        col = len("        - text: ") + text.index("[[") + 1  # the reference's own column
        assert proc.stderr == (f"pp1audit: error: {m}:12:{col}: {said} "
                               "(at report.sections[0].blocks[0].text)\n")
    # said once: not also "cites 'nope' but does not list it in evidence"
    raw = {"report": {"sections": [{"blocks": [{"text": "[[cite:nope]]"}]}]}}
    assert validate(raw) == [Problem(("report", "sections", 0, "blocks", 0, "text"),
                                     "[[cite:nope]]: no citation 'nope' in the manifest", 0, "[[cite:nope]]")]


def test_report_check_of_a_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    """"Is FILE current" has no answer when there is no FILE: exit 2, not 1 (stale)."""
    missing = tmp_path / "audit.md"
    proc = run_cli("report", "-m", str(PP1), "--check", str(missing))
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == f"pp1audit: error: {missing}: report to check not found\n"


def _strings(node: object, path: tuple[object, ...] = ()) -> list[tuple[tuple[object, ...], str]]:
    """Every string value of a YAML document, with its key path."""
    if isinstance(node, dict):
        return [s for k, v in node.items() for s in _strings(v, (*path, k))]
    if isinstance(node, list):
        return [s for i, v in enumerate(node) for s in _strings(v, (*path, i))]
    return [(path, node)] if isinstance(node, str) else []


def test_pp1_types_the_audit_date_once_and_renders_it_everywhere(tmp_path: Path) -> None:
    """The ls-remote date was typed in the prose and again in a note nobody rendered:
    the prose now renders it from audit.date, and the note is gone."""
    from pp1audit.manifest import load_manifest

    raw = load_manifest(PP1).raw
    date = raw["audit"]["date"]
    assert [p for p, s in _strings(raw) if date in s] == [("audit", "date")]
    assert "note" not in raw["references"]["vllm-rejection-sampler"]
    moved = tmp_path / "pp1-date.yaml"
    moved.write_text(PP1.read_text(encoding="utf-8").replace(f"  date: {date}\n", "  date: 2027-01-02\n"),
                     encoding="utf-8")
    out = run_cli("report", "-m", str(moved)).stdout
    assert date not in out
    assert out.startswith("# PP1 probability-path audit — 2027-01-02\n")
    assert "The latter HEAD was resolved via git ls-remote on 2027-01-02; the local image" in out


def test_every_pp1_block_has_evidence_or_says_why_it_is_unchecked() -> None:
    """A block that names no check carries an ``# unchecked: why`` comment right above it
    (the schema has no key for it); the hash table is its own evidence."""
    from pp1audit.manifest import load_manifest

    m = load_manifest(PP1)
    lines = PP1.read_text(encoding="utf-8").splitlines()
    unchecked = []
    for si, section in enumerate(m.raw["report"]["sections"]):
        for bi, block in enumerate(section["blocks"]):
            if block.get("evidence") or "table" in block:
                continue
            line, _ = m.loaded.where(("report", "sections", si, "blocks", bi))
            above = []
            for text in reversed(lines[: line - 1]):
                if not text.strip().startswith("#"):
                    break
                above.insert(0, text.strip())
            assert above and above[0].startswith("# unchecked: "), (si, bi, block)
            unchecked.append((si, bi))
    assert unchecked == [(0, 0), (4, 3)]  # the status line; the algorithm references
    with_evidence = [b for s in m.raw["report"]["sections"] for b in s["blocks"] if b.get("evidence")]
    assert len(with_evidence) == 13
