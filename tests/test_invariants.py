"""Invariants on the REAL vLLM 0.31.0 tree and wheel: passes, mutations, reformatting.

Each mutation changes one thing in a private copy of the real tree and must make
exactly one invariant fail, with a reason that names what broke; reformatting
the same code must fail none.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import REPO, run_cli

from pp1audit.audit import audit
from pp1audit.manifest import Manifest, load_manifest
from pp1audit.matcher import HOLDS, Engine
from pp1audit.result import Check, Status
from pp1audit.sources import open_target
from pp1audit.store import FileStore

EXAMPLE = REPO / "manifests" / "examples" / "vllm-0.31.0-invariants.yaml"
RUNNER = "vllm/v1/worker/gpu/model_runner.py"
SPECULATOR = "vllm/v1/worker/gpu/spec_decode/speculator.py"
CONFIG = "vllm/config/speculative.py"
REJECTION = "vllm/v1/worker/gpu/spec_decode/rejection_sampler.py"
DSPARK = "vllm/v1/worker/gpu/spec_decode/dspark/speculator.py"

RULES = {
    "runner-passes-draft-logits",
    "runner-grammar-before-sampler",
    "speculator-draft-logits-only-when-probabilistic",
    "config-default-greedy",
    "verify-applies-sampling-params",
    "dspark-sample-reaches-gumbel",
}

Edit = Callable[[Path, Callable[[str], str]], None]


@pytest.fixture(scope="module")
def manifest() -> Manifest:
    return load_manifest(EXAMPLE)


def invariant_checks(manifest: Manifest, target: Path) -> dict[str, Check]:
    with open_target(target, manifest.package) as source:
        result = audit(manifest, source)
    return {c.id: c for c in result.checks if c.kind == "invariant"}


def sub1(pattern: str, repl: str) -> Callable[[str], str]:
    """A text edit that must apply exactly once (so a mutation cannot silently miss)."""

    def fn(text: str) -> str:
        new, n = re.subn(pattern, repl, text, flags=re.S)
        assert n == 1, f"{pattern!r} matched {n} times"
        return new

    return fn


def span_text(target: Path, path: str, lines: tuple[int, int]) -> list[str]:
    text = (target / path).read_text(encoding="utf-8").splitlines()
    return text[lines[0] - 1 : lines[1]]


def assert_found_lines_hold_the_code(target: Path, checks: dict[str, Check]) -> None:
    """Every rule's found_lines, read from the file itself, hold the code it is about."""

    def lines(cid: str) -> list[str]:
        c = checks[cid]
        assert c.found_lines is not None
        return span_text(target, c.path or "", c.found_lines)

    runner = lines("runner-passes-draft-logits")
    assert "self.rejection_sampler(" in runner[0] and runner[-1].strip() == ")"
    assert any(ln.strip() == "self.speculator.draft_logits," for ln in runner)
    assert lines("runner-grammar-before-sampler") == runner
    assert lines("speculator-draft-logits-only-when-probabilistic") == [
        "        self.draft_logits: torch.Tensor | None = None"]
    assert lines("config-default-greedy") == [
        '    draft_sample_method: DraftSampleMethod = "greedy"']
    verify = lines("verify-applies-sampling-params")
    assert "rejection_sample(" in verify[0] and verify[1].strip() == "processed_logits,"
    gumbel = lines("dspark-sample-reaches-gumbel")
    assert "gumbel_sample(" in gumbel[0]
    assert any(ln.strip() == "logits_cache=self.draft_logits," for ln in gumbel)


def test_every_rule_passes_on_the_real_tree_and_wheel(
    manifest: Manifest, vllm_tree: Path, vllm_wheel: Path
) -> None:
    tree = invariant_checks(manifest, vllm_tree)
    wheel = invariant_checks(manifest, vllm_wheel)
    assert set(tree) == set(wheel) == RULES
    for cid in RULES:
        assert tree[cid].status is Status.PASS, tree[cid].message
        assert wheel[cid].status is Status.PASS, wheel[cid].message
        assert tree[cid].found_lines == wheel[cid].found_lines
        assert tree[cid].message == wheel[cid].message
    assert_found_lines_hold_the_code(vllm_tree, tree)


def test_each_file_is_parsed_once_whatever_the_number_of_rules(
    manifest: Manifest, vllm_tree: Path
) -> None:
    with open_target(vllm_tree, "vllm") as source:
        engine = Engine(FileStore(source))
        for _ in range(3):
            for inv in manifest.invariants.values():
                assert engine.outcome(inv).status == HOLDS
    files = {inv.file for inv in manifest.invariants.values()}
    assert len(files) == 5 < len(manifest.invariants)
    assert engine.parse_count == len(files)


def test_cli_json_on_tree_and_wheel(vllm_tree: Path, vllm_wheel: Path) -> None:
    for target in (vllm_tree, vllm_wheel):
        proc = run_cli("check", str(target), "-m", str(EXAMPLE), "--format", "json")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        result = json.loads(proc.stdout)
        inv = [c for c in result["checks"] if c["kind"] == "invariant"]
        assert {c["id"] for c in inv} == RULES
        assert all(c["status"] == "pass" and c["found_lines"] for c in inv)
        assert all(c["lines"] is None and c["path"].endswith(".py") for c in inv)


# --- mutations: each breaks exactly one claim ----------------------------------------

MUTATIONS = [
    pytest.param(
        RUNNER,
        sub1(r"(# Draft logits are needed for probabilistic rejection sampling\.\n\s*)"
             r"self\.speculator\.draft_logits,", r"\1None,"),
        "runner-passes-draft-logits",
        ["$$$ARGS", "None", "has `self.speculator.draft_logits`"],
        id="draft-logits-argument-replaced-by-None",
    ),
    pytest.param(
        RUNNER,
        # Cut the grammar-bitmask block and paste it after the sampler if/elif/else.
        lambda t: sub1(
            r"(\n        # A diffusion prefill has no logit rows.*?grammar_output\.grammar_bitmask,\n"
            r"            \)\n)(.*?self\.speculator\.draft_logits,\n            \)\n)",
            r"\2\1",
        )(t),
        "runner-grammar-before-sampler",
        ["apply_grammar_bitmask", "does not precede"],
        id="grammar-bitmask-moved-after-sampler-call",
    ),
    pytest.param(
        SPECULATOR,
        # Remove the "probabilistic" guard: the tensor is always allocated.
        sub1(r'        if self\.speculative_config\.draft_sample_method == "probabilistic":\n'
             r"(.*?)\n\n        self\.draft_watermarker",
             lambda m: "\n".join(ln[4:] if ln.strip() else ln for ln in m.group(1).split("\n"))
             + "\n\n        self.draft_watermarker"),
        "speculator-draft-logits-only-when-probabilistic",
        ["self.draft_logits = $VALUE", "not inside an `if", "probabilistic"],
        id="probabilistic-guard-removed",
    ),
    pytest.param(
        CONFIG,
        sub1(r'draft_sample_method: DraftSampleMethod = "greedy"',
             'draft_sample_method: DraftSampleMethod = "probabilistic"'),
        "config-default-greedy",
        ["$DEFAULT", '"probabilistic"', 'is `"greedy"`'],
        id="default-changed-to-probabilistic",
    ),
    pytest.param(
        REJECTION,
        sub1(r"processed_logits = self\.sampler\.apply_sampling_params\(\n.*?\n        \)\n",
             "processed_logits = logits\n"),
        "verify-applies-sampling-params",
        ["apply_sampling_params", "does not precede"],
        id="apply-sampling-params-removed",
    ),
    pytest.param(
        DSPARK,
        sub1(r"logits_cache=self\.draft_logits,", "logits_cache=None,"),
        "dspark-sample-reaches-gumbel",
        ["logits_cache=self.draft_logits", "$$$ARGS"],
        id="dspark-gumbel-without-cache",
    ),
]


@pytest.mark.parametrize(("path", "mutate", "broken", "reason"), MUTATIONS)
def test_a_mutation_fails_exactly_one_invariant(
    manifest: Manifest, tree_copy: Path, edit: Edit,
    path: str, mutate: Callable[[str], str], broken: str, reason: list[str],
) -> None:
    edit(tree_copy / path, mutate)
    checks = invariant_checks(manifest, tree_copy)
    failing = {cid: c for cid, c in checks.items() if c.status is not Status.PASS}
    assert list(failing) == [broken], {k: c.message for k, c in failing.items()}
    check = failing[broken]
    assert check.status is Status.FAIL and check.found_lines is None
    for words in reason:
        assert words in check.message, check.message


def test_mutations_close_the_gate_with_exit_1(tree_copy: Path, edit: Edit) -> None:
    edit(tree_copy / CONFIG, sub1(r'DraftSampleMethod = "greedy"', 'DraftSampleMethod = "probabilistic"'))
    proc = run_cli("check", str(tree_copy), "-m", str(EXAMPLE))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "config-default-greedy" in proc.stdout and '"probabilistic"' in proc.stdout
    assert "Traceback" not in proc.stderr


def test_a_fourth_argument_still_passes(manifest: Manifest, tree_copy: Path, edit: Edit) -> None:
    edit(tree_copy / RUNNER, sub1(
        r"(                self\.speculator\.draft_logits,\n)",
        r"\1                self.num_speculative_steps,\n",
    ))
    checks = invariant_checks(manifest, tree_copy)
    assert all(c.status is Status.PASS for c in checks.values()), \
        {k: c.message for k, c in checks.items()}
    runner = span_text(tree_copy, RUNNER, checks["runner-passes-draft-logits"].found_lines or (0, 0))
    assert "self.num_speculative_steps," in runner[-2]


def test_reformatting_fails_no_rule(manifest: Manifest, tree_copy: Path, edit: Edit) -> None:
    """Line breaks, comments and trailing commas change; the code does not."""
    # Runner: sampler call on one line (no trailing comma, comment moved out);
    # grammar call with its arguments re-wrapped and a comment inside.
    edit(tree_copy / RUNNER, lambda t: sub1(
        r"sampler_output = self\.rejection_sampler\(\n.*?self\.speculator\.draft_logits,\n"
        r"            \)",
        "# Draft logits are needed for probabilistic rejection sampling.\n"
        "            sampler_output = self.rejection_sampler("
        "logits, input_batch, self.speculator.draft_logits)",
    )(sub1(
        r"apply_grammar_bitmask\(\n\s*logits,\n\s*input_batch,\n",
        "apply_grammar_bitmask(  # mask first\n                logits, input_batch,\n",
    )(t)))
    # Speculator: the guard's test in parentheses, the assignment on fewer lines.
    edit(tree_copy / SPECULATOR, lambda t: sub1(
        r'if self\.speculative_config\.draft_sample_method == "probabilistic":'
        r"(\n\s*# Pre-temperature logits)",
        'if (\n            self.speculative_config.draft_sample_method\n'
        '            == "probabilistic"  # opt-in\n        ):\\1',
    )(sub1(
        r"self\.draft_logits = torch\.full\(\n\s*\(\n\s*self\.max_num_reqs,\n"
        r"\s*self\.num_speculative_steps,\n\s*self\.vocab_size,\n\s*\),",
        "self.draft_logits = torch.full(\n"
        "                (self.max_num_reqs, self.num_speculative_steps, self.vocab_size),",
    )(t)))
    # Config: a trailing comment and extra spaces.
    edit(tree_copy / CONFIG, sub1(
        r'draft_sample_method: DraftSampleMethod = "greedy"',
        'draft_sample_method:   DraftSampleMethod   =   "greedy"  # safe default',
    ))
    # Rejection sampler: arguments joined, trailing comma dropped, a comment inserted.
    edit(tree_copy / REJECTION, sub1(
        r"processed_logits = self\.sampler\.apply_sampling_params\(\n\s*logits,\n"
        r"(.*?)seq_lens_upper_bound_np,\n        \)",
        lambda m: "# Target sampling parameters first.\n        processed_logits = "
        "self.sampler.apply_sampling_params(logits, "
        + " ".join(m.group(1).split()) + " seq_lens_upper_bound_np)",
    ))
    # DSpark: the early return's test wrapped, keyword arguments on one line.
    edit(tree_copy / DSPARK, lambda t: sub1(
        r"if self\.draft_logits is None:\n",
        "if self.draft_logits is None:  # greedy drafting\n",
    )(sub1(
        r"is_drafting=True,\n\s*logits_cache=self\.draft_logits,\n",
        "is_drafting=True, logits_cache=self.draft_logits,\n",
    )(t)))
    checks = invariant_checks(manifest, tree_copy)
    assert set(checks) == RULES
    assert all(c.status is Status.PASS for c in checks.values()), \
        {k: c.message for k, c in checks.items() if c.status is not Status.PASS}
    one_line = span_text(tree_copy, RUNNER, checks["runner-passes-draft-logits"].found_lines
                         or (0, 0))
    assert len(one_line) == 1 and "self.speculator.draft_logits)" in one_line[0]


# --- citations anchored on an invariant --------------------------------------------


def citation(manifest: Manifest, target: Path) -> Check:
    with open_target(target, manifest.package) as source:
        result = audit(manifest, source)
    return next(c for c in result.checks if c.kind == "citation")


def test_citation_anchored_on_invariant_passes_then_drifts_with_the_code(
    manifest: Manifest, vllm_tree: Path, tree_copy: Path, edit: Edit
) -> None:
    here = citation(manifest, vllm_tree)
    assert here.status is Status.PASS and here.found_lines == here.lines == (1605, 1610)
    edit(tree_copy / RUNNER, sub1(r"(\n    def sample\(\n)", r"\n    # one\n    # two\n\1"))
    moved = citation(manifest, tree_copy)
    assert moved.status is Status.DRIFT
    assert moved.lines == (1605, 1610) and moved.found_lines == (1608, 1613)
    assert "moved to 1608-1613 (3 lines later)" in moved.message
    assert "runner-passes-draft-logits" in moved.message
    assert moved.excerpt is not None and "self.speculator.draft_logits," in moved.excerpt


def test_citation_anchored_on_a_broken_invariant_fails(
    manifest: Manifest, tree_copy: Path, edit: Edit
) -> None:
    edit(tree_copy / RUNNER, sub1(r"(rejection sampling\.\n\s*)self\.speculator\.draft_logits,",
                                  r"\1None,"))
    c = citation(manifest, tree_copy)
    assert c.status is Status.FAIL and c.found_lines is None
    assert "anchor invariant 'runner-passes-draft-logits' does not hold" in c.message


def test_syntax_error_in_the_real_runner_is_an_error_check(
    manifest: Manifest, tree_copy: Path, edit: Edit
) -> None:
    edit(tree_copy / RUNNER, sub1(r"    def sample\(\n", "    def sample(:\n"))
    checks = invariant_checks(manifest, tree_copy)
    for cid in ("runner-passes-draft-logits", "runner-grammar-before-sampler"):
        assert checks[cid].status is Status.ERROR
        assert "is not valid Python" in checks[cid].message and "line 1556" in checks[cid].message
    others = RULES - {"runner-passes-draft-logits", "runner-grammar-before-sampler"}
    assert all(checks[cid].status is Status.PASS for cid in others)
    proc = run_cli("check", str(tree_copy), "-m", str(EXAMPLE))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
