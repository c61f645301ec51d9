"""What counts as a match: scope, the binding in force, dead code, values, assignment forms.

The shipped PP1 rules on the REAL vLLM 0.31.0 files, each edited once the way a
reviewer's mutation test did: an edit that breaks the claim must ``fail`` (with
the reason), a harmless one must ``pass``. Language corners that vLLM does not
exercise are checked on small hand-made files.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import REPO
from test_invariants_rules import MakeFiles, manifest_text, one

from pp1audit.checks.invariants import check_invariant
from pp1audit.errors import ManifestError
from pp1audit.manifest import Manifest, load_manifest, parse
from pp1audit.matcher import MAX_PARSE_BYTES, Engine
from pp1audit.result import Check, Status
from pp1audit.sources import open_target
from pp1audit.store import FileStore

PP1 = REPO / "manifests" / "pp1.yaml"
RUNNER = "vllm/v1/worker/gpu/model_runner.py"
SPECULATOR = "vllm/v1/worker/gpu/spec_decode/speculator.py"
CONFIG = "vllm/config/speculative.py"
REJECTION = "vllm/v1/worker/gpu/spec_decode/rejection_sampler.py"
UTILS = "vllm/v1/worker/gpu/spec_decode/rejection_sampler_utils.py"
DSPARK = "vllm/v1/worker/gpu/spec_decode/dspark/speculator.py"

PASSES = "runner-sampler-gets-draft-logits"
MASK_FIRST = "runner-grammar-before-sampler"
GUARDED = "draft-logits-only-when-probabilistic"
GREEDY = "draft-sample-method-defaults-greedy"
VERIFY = "verify-applies-sampling-params"
GUMBEL = "dspark-sample-reaches-gumbel"
RESAMPLE = "resample-three-branches"

# Real 0.31.0 text the edits start from (each must occur exactly once).
CALL = """            sampler_output = self.rejection_sampler(
                logits,
                input_batch,
                # Draft logits are needed for probabilistic rejection sampling.
                self.speculator.draft_logits,
            )
"""
CALL_NONE = CALL.replace("self.speculator.draft_logits,", "None,")
ARG = "                self.speculator.draft_logits,\n"
MASK = """            self.structured_outputs_worker.apply_grammar_bitmask(
                logits,
                input_batch,
                grammar_output.structured_output_request_ids,
                grammar_output.grammar_bitmask,
            )
"""
GUARD = '        if self.speculative_config.draft_sample_method == "probabilistic":\n'
CACHE = "            # Pre-temperature logits"  # what follows the guard (the file has it twice)
INIT_NONE = "        self.draft_logits: torch.Tensor | None = None\n"
WATER = "        self.draft_watermarker: DraftWatermarker | None = None\n"
FIELD = '    draft_sample_method: DraftSampleMethod = "greedy"\n'
APPLY = "        processed_logits = self.sampler.apply_sampling_params(\n"
RSCALL = "        sampled, num_sampled = rejection_sample(\n            processed_logits,\n"
DSIF = ("        if self.draft_logits is None:\n            draft_ids = logits.argmax(dim=-1)\n"
        "            return self.model.map_draft_to_target(draft_ids)\n")
DSRET = "            return self.model.map_draft_to_target(draft_ids)\n"
GUMBEL_KW = "            logits_cache=self.draft_logits,\n"
BONUS = "        residual_logits = target_logits\n"
ONEHOT = """        residual_logits = tl.where(
            block != rejected_draft_token,
            target_logits,
            float("-inf"),
        ).to(tl.float32)
"""


def indent(text: str) -> str:
    return "".join("    " + ln if ln.strip() else ln for ln in text.splitlines(True))


Edit = Callable[[str], str]
FileEdit = Callable[[Path, Edit], None]


def once(old: str, new: str) -> Edit:
    """Replace text that occurs exactly once (a mutation cannot silently miss)."""

    def fn(text: str) -> str:
        assert text.count(old) == 1, f"{old[:60]!r} occurs {text.count(old)} times"
        return text.replace(old, new)

    return fn


def then(*edits: Edit) -> Edit:
    def fn(text: str) -> str:
        for e in edits:
            text = e(text)
        return text

    return fn


def second_sample(text: str) -> str:
    """A second ``def sample`` after the real one, passing None: Python keeps the second."""
    method = re.search(r"\n    def sample\(\n.*?\n(?=\n    def )", text, flags=re.S)
    assert method is not None
    copy = method.group(0).replace("self.speculator.draft_logits,", "None,")
    return text[: method.end()] + "\n" + copy + text[method.end():]


@pytest.fixture(scope="module")
def pp1() -> Manifest:
    return load_manifest(PP1)


def judge(manifest: Manifest, target: Path, iid: str) -> Check:
    with open_target(target, "vllm") as source:
        return check_invariant(manifest.invariants[iid], Engine(FileStore(source)))


FALSE_PASSES = [
    # 1. every: all assignment forms, and every method of the class for self.<attr>.
    pytest.param(SPECULATOR, once(WATER, "        self.draft_logits: torch.Tensor = torch.empty(1)\n"
                                  + WATER), GUARDED, ["every:", "line 192", "not inside an `if"],
                 id="every-annotated"),
    pytest.param(SPECULATOR, once(WATER, "        self.draft_logits, _unused = torch.empty(1), 0\n"
                                  + WATER), GUARDED, ["every:", "line 192"], id="every-tuple-target"),
    pytest.param(SPECULATOR, once(WATER, "        for self.draft_logits in [torch.empty(1)]:\n"
                                  "            pass\n" + WATER), GUARDED, ["every:", "line 192"],
                 id="every-for-target"),
    pytest.param(SPECULATOR, once(WATER, "        self.draft_logits += 1\n" + WATER), GUARDED,
                 ["every:", "line 192"], id="every-augmented"),
    pytest.param(SPECULATOR, once(WATER, '        setattr(self, "draft_logits", torch.empty(1))\n'
                                  + WATER), GUARDED, ["every:", "line 192"], id="every-setattr"),
    pytest.param(SPECULATOR, once("    def draft_logits_spec(self", "    def reset_cache(self):\n"
                                  "        self.draft_logits = torch.empty(1)\n\n"
                                  "    def draft_logits_spec(self"), GUARDED,
                 ["every:", "line 377"], id="every-other-method"),
    # 2. in / follows: code moved into a nested function never called.
    pytest.param(RUNNER, once(CALL, "            def _never():\n" + indent(CALL) + CALL_NONE),
                 PASSES, ["(logits, input_batch, None)", "inside `def _never` at line 1605, not in "
                          "GPUModelRunner.sample itself"], id="call-in-nested-def"),
    pytest.param(RUNNER, once(MASK, "            def _never():\n" + indent(MASK)), MASK_FIRST,
                 ["apply_grammar_bitmask($$$MASK_ARGS)` does not precede it (the one at lines "
                  "1587-1592: inside `def _never` at line 1586)"], id="mask-in-nested-def"),
    pytest.param(REJECTION, once(APPLY, "        processed_logits = logits\n        def _never():\n"
                                 "            processed_logits = self.sampler.apply_sampling_params(\n"),
                 VERIFY, ["does not precede it"], id="apply-in-nested-def"),
    pytest.param(CONFIG, once(FIELD, "    def _never(self):\n        draft_sample_method: "
                              'DraftSampleMethod = "greedy"\n' + FIELD.replace("greedy", "probabilistic")),
                 GREEDY, ['$DEFAULT ("probabilistic")'], id="field-only-in-a-method"),
    # 3. The binding in force: the last definition, both arms of an if/else.
    pytest.param(RUNNER, second_sample, PASSES, ["(logits, input_batch, None)"],
                 id="later-def-sample-overrides"),
    pytest.param(RUNNER, once("\n    def postprocess_sampled(", "\n    sample = None\n\n"
                              "    def postprocess_sampled("), PASSES,
                 ["GPUModelRunner.sample is not defined", "last bound at line 1636 by `sample = None`"],
                 id="method-rebound-to-None"),
    pytest.param(CONFIG, once(FIELD, FIELD + FIELD.replace("greedy", "probabilistic")), GREEDY,
                 ["line 601", "`draft_sample_method` is bound again at line 602"],
                 id="field-declared-twice"),
    pytest.param(CONFIG, once(FIELD, "    if TYPE_CHECKING:\n    " + FIELD + "    else:\n    "
                              + FIELD.replace("greedy", "probabilistic")), GREEDY,
                 # the file passes `globals()` to LazyLoader (line 34), which may set a
                 # TYPE_CHECKING: not folded, both arms may be the binding, each must hold
                 ["holds at line 602, but line 604", "may be the binding in force instead "
                  "(branches that cannot be ordered)"], id="type-checking-else"),
    # 4. Dead code.
    pytest.param(RUNNER, once("        shard_metadata = None\n        global_input_batch",
                              "        shard_metadata = None\n        return None  # type: ignore\n"
                              "        global_input_batch"), PASSES,
                 ["unreachable, after the `return` at line 1563"], id="early-return"),
    pytest.param(RUNNER, once("        elif input_batch.num_draft_tokens == 0 or "
                              "self.rejection_sampler is None:\n", "        elif True:\n"), PASSES,
                 ["unreachable, after `elif True:` at line 1598, which is always true"],
                 id="else-after-elif-true"),
    pytest.param(RUNNER, once(CALL, "            if False:\n" + indent(CALL) + CALL_NONE), PASSES,
                 ["(logits, input_batch, None)", "unreachable, under `if False:`"],
                 id="call-under-if-false"),
    pytest.param(RUNNER, once(MASK, "            if False:\n" + indent(MASK)), MASK_FIRST,
                 ["does not precede it (the one at lines 1587-1592: unreachable, under `if False:`"],
                 id="mask-under-if-false"),
    pytest.param(RUNNER, then(once(MASK, "            pass\n"),
                              once("            sampler_output = None\n",
                                   "            sampler_output = None\n" + MASK)), MASK_FIRST,
                 ["does not precede it (the one at lines 1593-1598: in another arm of "
                  "`if input_batch.num_reqs == 0:…` at line 1589 than it)"],
                 id="mask-in-exclusive-branch"),
    pytest.param(REJECTION, once(APPLY, "        processed_logits = logits\n        if False:\n"
                                 "            processed_logits = self.sampler.apply_sampling_params(\n"),
                 VERIFY, ["does not precede it"], id="apply-under-if-false"),
    pytest.param(SPECULATOR, once(INIT_NONE, "        if False:\n    " + INIT_NONE), GUARDED,
                 ["unreachable, under `if False:` at line 177"], id="init-none-under-if-false"),
    pytest.param(DSPARK, once(DSIF, "        return self.model.map_draft_to_target("
                              "logits.argmax(dim=-1))\n" + DSIF), GUMBEL,
                 ["unreachable, after the `return` at line 124"], id="unconditional-early-return"),
    pytest.param(DSPARK, once(DSIF, "        if False:\n" + indent(DSIF) + "        return "
                              "self.model.map_draft_to_target(logits.argmax(dim=-1))\n"), GUMBEL,
                 ["unreachable, after the `return` at line 128"], id="guard-under-if-false"),
    # 5. Rule fixes: the early return must return; each resample branch does its own thing.
    pytest.param(DSPARK, once(DSRET, "            pass\n"), GUMBEL,
                 ["`if self.draft_logits is None: $$$GREEDY` does not precede it",
                  "does not satisfy: has `return $DRAFT_IDS`"], id="guard-without-return"),
    pytest.param(UTILS, then(once(BONUS, "        residual_logits = tl.where(block != "
                                  'rejected_draft_token, target_logits, float("-inf"))\n'),
                             once(ONEHOT, BONUS)), RESAMPLE,
                 ["$$$BONUS", "does not satisfy: contains `residual_logits = target_logits`"],
                 id="one-hot-and-bonus-swapped"),
    # 6. A bound metavariable the relation's pattern cannot contain: fail, not error.
    pytest.param(REJECTION, once(RSCALL, RSCALL.replace("processed_logits,",
                                                        "processed_logits if True else logits,")),
                 VERIFY, ["`processed_logits if True else logits = self.sampler.apply_sampling_"
                          "params($$$ARGS)` does not precede it"], id="ternary-argument"),
]


@pytest.mark.parametrize(("path", "mutate", "iid", "words"), FALSE_PASSES)
def test_an_edit_that_breaks_the_claim_fails(
    pp1: Manifest, tree_copy: Path, edit: FileEdit, path: str, mutate: Edit, iid: str,
    words: list[str],
) -> None:
    edit(tree_copy / path, mutate)
    check = judge(pp1, tree_copy, iid)
    assert check.status is Status.FAIL, check.message
    for w in words:
        assert w in check.message, check.message


HARMLESS = [
    pytest.param(RUNNER, once(ARG, "                draft_logits=self.speculator.draft_logits,\n"),
                 PASSES, id="keyword-argument"),
    pytest.param(RUNNER, once(ARG, "                (self.speculator.draft_logits),\n"), PASSES,
                 id="argument-in-parentheses"),
    pytest.param(RUNNER, once("    def sample(\n", "    def sample(self, *a, **k):\n        return "
                              "self.rejection_sampler(None, None, self.speculator.draft_logits)\n\n"
                              "    def sample(\n"), PASSES, id="earlier-def-replaced-by-the-real-one"),
    pytest.param(SPECULATOR, once(GUARD + CACHE, GUARD.replace('"probabilistic"', "'probabilistic'")
                                  + CACHE), GUARDED, id="guard-single-quotes"),
    pytest.param(SPECULATOR, once(GUARD + CACHE, '        if "probabilistic" == '
                                  "self.speculative_config.draft_sample_method:\n" + CACHE),
                 GUARDED, id="guard-reversed-equality"),
    pytest.param(SPECULATOR, once(GUARD + CACHE, "        if (\n            self.speculative_config."
                                  'draft_sample_method == "probabilistic"\n        ):\n' + CACHE),
                 GUARDED, id="guard-in-parentheses"),
    pytest.param(SPECULATOR, once(INIT_NONE, "        self.draft_logits = None\n"), GUARDED,
                 id="init-without-annotation"),
    pytest.param(SPECULATOR, once("    def draft_logits_spec(self", "    def drop_cache(self):\n"
                                  "        self.draft_logits = None\n\n"
                                  "    def draft_logits_spec(self"), GUARDED,
                 id="reset-to-None-in-another-method"),
    pytest.param(CONFIG, once(FIELD, FIELD.replace('"greedy"', "'greedy'")), GREEDY,
                 id="default-single-quotes"),
    pytest.param(DSPARK, once(DSIF, DSIF + "        else:\n            pass\n"), GUMBEL,
                 id="guard-with-else"),
    pytest.param(REJECTION, then(once(APPLY, APPLY.replace("processed_logits =", "self.buf[0] =")),
                                 once(RSCALL, RSCALL.replace("processed_logits,", "self.buf[0],"))),
                 VERIFY, id="subscript-target"),
]


@pytest.mark.parametrize(("path", "mutate", "iid"), HARMLESS)
def test_a_harmless_edit_passes(
    pp1: Manifest, tree_copy: Path, edit: FileEdit, path: str, mutate: Edit, iid: str,
) -> None:
    edit(tree_copy / path, mutate)
    check = judge(pp1, tree_copy, iid)
    assert check.status is Status.PASS, check.message


# --- language corners on small files -------------------------------------------------


def test_a_class_scope_is_its_own_statements_not_its_methods(make_files: MakeFiles) -> None:
    code = "class C:\n    x = 1\n    def m(self):\n        y = 2\n"
    field = one(make_files, "file: pkg/mod.py\nin: C\npattern: x = $V\n", code)
    assert field.status is Status.PASS and field.found_lines == (2, 2)
    local = one(make_files, "file: pkg/mod.py\nin: C\npattern: y = $V\n", code)
    assert local.status is Status.FAIL
    assert "inside `def m` at line 3, not in C itself" in local.message
    anywhere = one(make_files, 'file: pkg/mod.py\npattern: y = $V\ninside: "class C: $$$B"\n', code)
    assert anywhere.status is Status.PASS


@pytest.mark.parametrize(("code", "words"), [
    ("def f(x):\n    while False:\n        g(1)\n", "under `while False:` at line 2"),
    ("def f(x):\n    if 0:\n        pass\n    elif not True:\n        g(1)\n", "under `elif not True:`"),
    ("def f(x):\n    if x:\n        return 1\n    else:\n        raise E\n    g(1)\n",
     "after line 2, whose every branch leaves the block"),
    ("def f(x):\n    for y in x:\n        continue\n        g(1)\n", "after the `continue` at line 3"),
    ("def f(x):\n    h(g(1) if False else 0)\n", "never taken"),
])
def test_dead_code_is_not_a_match(make_files: MakeFiles, code: str, words: str) -> None:
    c = one(make_files, "file: pkg/mod.py\nin: f\npattern: g(1)\n", code)
    assert c.status is Status.FAIL and "unreachable" in c.message and words in c.message, c.message


def test_not_sees_nested_functions_but_not_dead_code(make_files: MakeFiles) -> None:
    rule = "file: pkg/mod.py\nin: f\npattern: start()\nnot: forbidden()\n"
    nested = "def f():\n    start()\n    def later():\n        forbidden()\n    return later\n"
    assert one(make_files, rule, nested).status is Status.FAIL
    dead = "def f():\n    start()\n    if False:\n        forbidden()\n"
    assert one(make_files, rule, dead).status is Status.PASS


@pytest.mark.parametrize("assignment", [
    "with open(p) as self.x:\n            pass",
    "print([0 for self.x in range(2)])",
    "self.x, *rest = make(), 1",
    "object.__setattr__(self, 'x', make())",
])
def test_every_sees_each_assignment_form(make_files: MakeFiles, assignment: str) -> None:
    code = textwrap.dedent("""\
        class S:
            def __init__(self, cfg, p):
                self.x = None
                if cfg.on:
                    self.x = make()
                {assignment}
    """).format(assignment=assignment)
    rule = ("file: pkg/mod.py\nin: S.__init__\npattern: self.x = None\n"
            "every: {pattern: self.x = $V, where: {V: {not: {is: None}}}, guarded_by: $C.on}\n")
    c = one(make_files, rule, code)
    assert c.status is Status.FAIL and "every: `self.x = $V` at line 6" in c.message, c.message


def test_literals_match_by_value(make_files: MakeFiles) -> None:
    code = "X = 0x10\nY = 'a' 'b'\nZ = f'ab'\n"
    assert one(make_files, "file: pkg/mod.py\npattern: X = 16\n", code).status is Status.PASS
    assert one(make_files, 'file: pkg/mod.py\npattern: Y = "ab"\n', code).status is Status.PASS
    f_string = one(make_files, 'file: pkg/mod.py\npattern: Z = "ab"\n', code)
    assert f_string.status is Status.FAIL  # an f-string is computed, not a literal


def test_follows_skips_the_other_arm_of_a_try(make_files: MakeFiles) -> None:
    code = ("def f():\n    try:\n        pass\n    except A:\n        prep()\n"
            "    except B:\n        use()\n")
    c = one(make_files, "file: pkg/mod.py\nin: f\npattern: use()\nfollows: prep()\n", code)
    assert c.status is Status.FAIL and "`prep()` does not precede it" in c.message


def test_any_is_a_list_of_checked_constraints() -> None:
    for where, words in [
        ("{A: {any: []}}", "should be non-empty"),
        ("{A: {any: [{hass: x}]}}", "unknown key 'hass' (a constraint has has, contains, is"),
        ("{A: {not: {}}}", "an empty constraint"),
    ]:
        with pytest.raises(ManifestError) as info:
            parse(manifest_text(f"r: {{file: pkg/mod.py, pattern: f($A), where: {where}}}\n"),
                  "m.yaml")
        assert words in str(info.value), str(info.value)


def test_a_file_over_the_size_cap_is_an_error_without_parsing(make_files: MakeFiles) -> None:
    big = "x = 1\n" + "#" * 99 + "\n"
    code = big * (MAX_PARSE_BYTES // 100 + 1)
    assert len(code) > MAX_PARSE_BYTES
    root = make_files({"pkg/__init__.py": "", "pkg/mod.py": code})
    inv = parse(manifest_text("r: {file: pkg/mod.py, pattern: x = 1}\n"), "m.yaml").invariants["r"]
    with open_target(root / "pkg", "pkg") as source:
        engine = Engine(FileStore(source))
        c = check_invariant(inv, engine)
    assert engine.parse_count == 0  # never compiled nor parsed (that took tens of seconds)
    assert c.status is Status.ERROR
    assert re.fullmatch(r"pkg/mod\.py is 8\.\d MiB, over the 8 MiB the invariant matcher parses; "
                        r"invariants cannot be judged on it", c.message), c.message
