"""Edits that keep the cited code but take it out of what Python runs must fail.

A user test (the "claims" report) found three ways past the invariants:

* **The definition Python keeps is replaced after the class body**: ``Cls.meth = f``,
  ``setattr(Cls, "meth", f)``, ``del Cls.meth`` at module level, ``self.meth = …``
  in a method (an instance attribute shadows the method), or a decorator on the
  ``in:`` definition (it can return any function).
* **Unconditional exits other than return/raise/if**: code after ``with …: return``
  or after a ``try`` whose body and every handler leave. A context manager may
  suppress an exception, so the direction matters: what a rule requires must
  certainly run, what it forbids counts as soon as it may run.
* **``every`` missed a subclass in the same file** (and code attached to the class
  from outside its body).

Each is reproduced on the REAL vLLM 0.31.0 tree with the shipped PP1 rules, next
to a harmless edit of the same kind that must keep passing; language corners are
checked on small hand-made files.
"""

from __future__ import annotations

import dataclasses
import re
import textwrap
from pathlib import Path

import pytest
from test_invariants_rules import MakeFiles, manifest_text, one
from test_invariants_semantics import (
    CONFIG,
    GREEDY,
    GUARDED,
    MASK_FIRST,
    PASSES,
    REJECTION,
    RESAMPLE,
    RUNNER,
    SPECULATOR,
    VERIFY,
    Edit,
    FileEdit,
    judge,
    once,
    pp1,  # noqa: F401  (a fixture)
)

from pp1audit.audit import audit
from pp1audit.checks.invariants import check_invariant
from pp1audit.errors import ManifestError
from pp1audit.manifest import Manifest, parse
from pp1audit.matcher import Engine
from pp1audit.result import Check, Status
from pp1audit.sources import DirectorySource, open_target
from pp1audit.store import FileStore

LOGGER = "logger = init_logger(__name__)\n"  # model_runner.py and speculator.py, module level
SAMPLE_DEF = "    def sample(\n        self,\n        hidden_states: torch.Tensor,\n"
ASSERT_SPEC = "            assert self.speculator is not None\n"
INIT_ALLOC = "        self.draft_watermarker: DraftWatermarker | None = None\n"
ALL_RUNNER = [PASSES, MASK_FIRST]


def at_end(text: str) -> Edit:
    """Append module-level code at the end of the file."""
    return lambda old: old + "\n\n" + text


def judge_as(manifest: Manifest, target: Path, iid: str, **changes: object) -> Check:
    """Judge a shipped invariant with some of its keys changed (e.g. ``decorators``)."""
    inv = dataclasses.replace(manifest.invariants[iid], **changes)
    with open_target(target, "vllm") as source:
        return check_invariant(inv, Engine(FileStore(source)))


# --- A. the definition Python keeps ----------------------------------------------------

REPLACED = [
    pytest.param(RUNNER, at_end("def _bad(self, *a):\n    return None\n\n\n"
                                "GPUModelRunner.sample = _bad\n"), ALL_RUNNER,
                 "GPUModelRunner.sample is replaced at line 2417 (`GPUModelRunner.sample = _bad`)",
                 id="module-level-assignment"),
    pytest.param(RUNNER, at_end('setattr(GPUModelRunner, "sample", lambda self, *a: None)\n'),
                 ALL_RUNNER, "GPUModelRunner.sample is replaced at line 2413 (`setattr(",
                 id="module-level-setattr"),
    pytest.param(RUNNER, at_end("del GPUModelRunner.sample\n"), ALL_RUNNER,
                 "replaced at line 2413 (`del GPUModelRunner.sample`)", id="module-level-del"),
    pytest.param(RUNNER, at_end("def _patch():\n    GPUModelRunner.sample, _x = None, 1\n"),
                 ALL_RUNNER, "replaced at line 2414 (`GPUModelRunner.sample, _x = None, 1`)",
                 id="tuple-target-in-a-function"),
    pytest.param(SPECULATOR, at_end("_orig_init = DraftModelSpeculator.__init__\n\n\n"
                                    "def _init(self, *a, **k):\n    _orig_init(self, *a, **k)\n"
                                    "    self.draft_logits = torch.zeros(1)\n\n\n"
                                    "DraftModelSpeculator.__init__ = _init\n"), [GUARDED],
                 "DraftModelSpeculator.__init__ is replaced at line 549", id="init-wrapped"),
    pytest.param(RUNNER, once("        self.rejection_sampler: RejectionSampler | None = None\n",
                              "        self.rejection_sampler: RejectionSampler | None = None; "
                              "self.sample = lambda *a: None\n"), ALL_RUNNER,
                 "replaced at line 325 (`self.sample = lambda *a: None`)",
                 id="instance-attribute-shadows"),
    pytest.param(RUNNER, once(ASSERT_SPEC, ASSERT_SPEC + '            setattr(self, "sample", '
                              "None)\n"), ALL_RUNNER, 'replaced at line 1605 (`setattr(self, "sample"',
                 id="instance-setattr-in-the-method-itself"),
    pytest.param(RUNNER, once(ASSERT_SPEC, ASSERT_SPEC + "            type(self).sample = None\n"),
                 ALL_RUNNER, "replaced at line 1605 (`type(self).sample = None`)",
                 id="type-of-self"),
    pytest.param(RUNNER, at_end("def _bad(self, *a):\n    return None\n\n\n"
                                "GPUModelRunner.sample.__code__ = _bad.__code__\n"), ALL_RUNNER,
                 "GPUModelRunner.sample is changed in place at line 2417", id="code-swapped"),
    pytest.param(RUNNER, once(SAMPLE_DEF, "    def __getattribute__(self, n):\n        return "
                              "object.__getattribute__(self, n)\n\n" + SAMPLE_DEF), ALL_RUNNER,
                 "its class defines `__getattribute__` at line 1556", id="getattribute-hook"),
    pytest.param(CONFIG, at_end('SpeculativeConfig.draft_sample_method = "probabilistic"\n'),
                 [GREEDY], "`draft_sample_method` is bound again on its class at line",
                 id="field-rebound-from-outside"),
]


@pytest.mark.parametrize(("path", "mutate", "iids", "words"), REPLACED)
def test_a_definition_replaced_after_the_class_body_fails(
    pp1: Manifest, tree_copy: Path, edit: FileEdit, path: str, mutate: Edit,  # noqa: F811
    iids: list[str], words: str,
) -> None:
    edit(tree_copy / path, mutate)
    for iid in iids:
        check = judge(pp1, tree_copy, iid)
        assert check.status is Status.FAIL, (iid, check.message)
        assert words in check.message, check.message


HARMLESS_ATTRIBUTES = [
    pytest.param(RUNNER, at_end("GPUModelRunner.sample_count = 0\n"), PASSES, id="another-name"),
    pytest.param(RUNNER, at_end("_r = object()\n_r.sample = None\n"), PASSES,
                 id="another-object"),
    pytest.param(RUNNER, once(ASSERT_SPEC, ASSERT_SPEC + "            self.sampled = None\n"),
                 PASSES, id="another-instance-attribute"),
    pytest.param(RUNNER, at_end("if False:\n    GPUModelRunner.sample = None\n"), PASSES,
                 id="dead-replacement"),
    pytest.param(SPECULATOR, once(INIT_ALLOC, INIT_ALLOC + "        self.draft_logits_spec_cache "
                                  "= None\n"), GUARDED, id="similar-name"),
]


@pytest.mark.parametrize(("path", "mutate", "iid"), HARMLESS_ATTRIBUTES)
def test_a_harmless_attribute_write_passes(
    pp1: Manifest, tree_copy: Path, edit: FileEdit, path: str, mutate: Edit,  # noqa: F811
    iid: str,
) -> None:
    edit(tree_copy / path, mutate)
    check = judge(pp1, tree_copy, iid)
    assert check.status is Status.PASS, check.message


def test_a_matched_method_replaced_from_outside_fails(
    pp1: Manifest, tree_copy: Path, edit: FileEdit,  # noqa: F811
) -> None:
    edit(tree_copy / REJECTION, at_end("RejectionSampler._verify = RejectionSampler._verify_in_"
                                       "chunks\n"))
    method = judge(pp1, tree_copy, "verify-method")  # in: RejectionSampler, pattern: def _verify
    assert method.status is Status.FAIL
    assert "`_verify` is bound again on its class at line" in method.message, method.message
    scoped = judge(pp1, tree_copy, VERIFY)  # in: RejectionSampler._verify
    assert scoped.status is Status.FAIL and "RejectionSampler._verify is replaced" in scoped.message


def test_a_local_decorator_fails_and_says_how_to_allow_it(
    pp1: Manifest, tree_copy: Path, edit: FileEdit,  # noqa: F811
) -> None:
    edit(tree_copy / RUNNER, lambda t: once(LOGGER, LOGGER.rstrip() + "; _drop_draft = lambda f: "
                                            "(lambda self, *a: None)\n")(
        once(SAMPLE_DEF, "    @_drop_draft\n" + SAMPLE_DEF)(t)))
    for iid in ALL_RUNNER:
        check = judge(pp1, tree_copy, iid)
        assert check.status is Status.FAIL, check.message
        assert ("GPUModelRunner.sample is decorated with `@_drop_draft` at line 1556: "
                "`_drop_draft` is not imported by the module") in check.message
        assert 'allow it: `decorators: ["@_drop_draft"]`' in check.message
    # An auditor who read it may allow it; then it is accepted, and said.
    allowed = judge_as(pp1, tree_copy, PASSES, decorators=("@_drop_draft",))
    assert allowed.status is Status.PASS, allowed.message
    assert "decorated with `@_drop_draft` (allowed by `decorators:`)" in allowed.message


@pytest.mark.parametrize(("imports", "decorator", "words"), [
    ("from typing import overload", "@overload", "`typing.overload` replaces the function"),
    ("import contextlib as _cl", "@_cl.contextmanager",
     "`contextlib.contextmanager` replaces the function"),
    ("", "@staticmethod", "`staticmethod` is not imported by the module"),
    ("import functools", "@functools.lru_cache(maxsize=_n)", "its arguments are not constants"),
    ("", "@(lambda f: f)", "an expression, not an imported name"),
    ("from torch import no_grad\nno_grad = None", "@no_grad()", "also bound otherwise"),
])
def test_a_decorator_that_may_replace_the_method_fails(
    pp1: Manifest, tree_copy: Path, edit: FileEdit, imports: str, decorator: str,  # noqa: F811
    words: str,
) -> None:
    edit(tree_copy / RUNNER, lambda t: once(LOGGER, LOGGER + imports + "\n")(
        once(SAMPLE_DEF, f"    {decorator}\n" + SAMPLE_DEF)(t)))
    check = judge(pp1, tree_copy, PASSES)
    assert check.status is Status.FAIL, check.message
    assert words in check.message, check.message


def test_an_imported_decorator_passes_and_is_reported(
    pp1: Manifest, tree_copy: Path, edit: FileEdit,  # noqa: F811
) -> None:
    edit(tree_copy / RUNNER, once(SAMPLE_DEF, "    @torch.inference_mode()\n" + SAMPLE_DEF))
    check = judge(pp1, tree_copy, PASSES)
    assert check.status is Status.PASS, check.message
    assert "decorated with `@torch.inference_mode()` (imported code, not read)" in check.message
    # `decorators:` is an allow-list: what it does not name fails, even imported.
    strict = judge_as(pp1, tree_copy, PASSES, decorators=())
    assert strict.status is Status.FAIL
    assert "`@torch.inference_mode()` at line 1556, which its `decorators:` does not allow" \
        in strict.message
    spelled = judge_as(pp1, tree_copy, PASSES, decorators=("torch.inference_mode( )",))
    assert spelled.status is Status.PASS, spelled.message  # compared as code, not text


def test_the_real_decorated_scopes_pass_and_name_their_decorators(
    pp1: Manifest, vllm_tree: Path,  # noqa: F811
) -> None:
    greedy = judge(pp1, vllm_tree, GREEDY)
    assert greedy.status is Status.PASS and "decorated with `@config`" in greedy.message
    resample = judge(pp1, vllm_tree, RESAMPLE)
    assert resample.status is Status.PASS and "`@triton.jit(" in resample.message
    exact = '@triton.jit(do_not_specialize=["watermark_key_0", "watermark_key_1"])'
    listed = judge_as(pp1, vllm_tree, RESAMPLE, decorators=(exact,))
    assert listed.status is Status.PASS, listed.message
    other = judge_as(pp1, vllm_tree, RESAMPLE, decorators=("@triton.jit",))
    assert other.status is Status.FAIL and "does not allow" in other.message


def test_the_shipped_manifest_allows_only_the_real_decorators(
    pp1: Manifest, tree_copy: Path, edit: FileEdit,  # noqa: F811
) -> None:
    """PP1 lists the decorators its scopes carry in 0.31.0 (``decorators:``): another
    decorator the module imports, which the default would let through, fails."""
    assert pp1.invariants[GREEDY].decorators == ("@config",)
    edit(tree_copy / CONFIG, once("\n@config\nclass SpeculativeConfig:",
                                  "\n@replace\nclass SpeculativeConfig:"))
    check = judge(pp1, tree_copy, GREEDY)
    assert check.status is Status.FAIL
    assert "which its `decorators:` does not allow" in check.message, check.message
    default = judge_as(pp1, tree_copy, GREEDY, decorators=None)
    assert default.status is Status.PASS, default.message  # imported: the default's blind spot


def test_a_class_decorator_on_the_scope_path_is_judged_too(
    pp1: Manifest, tree_copy: Path, edit: FileEdit,  # noqa: F811
) -> None:
    edit(tree_copy / RUNNER, once("\nclass GPUModelRunner(", "\n@_wrap\nclass GPUModelRunner("))
    check = judge(pp1, tree_copy, PASSES)
    assert check.status is Status.FAIL
    assert "GPUModelRunner is decorated with `@_wrap`" in check.message


def test_decorators_key_is_checked_when_the_manifest_loads() -> None:
    ok = parse(manifest_text("r: {file: pkg/mod.py, in: f, pattern: g(), "
                             'decorators: ["@torch.inference_mode()", "functools.cache"]}\n'),
               "m.yaml")
    assert ok.invariants["r"].decorators == ("@torch.inference_mode()", "functools.cache")
    for record, words in [
        ('{file: pkg/mod.py, pattern: g(), decorators: ["@x"]}', "this invariant has no 'in'"),
        ('{file: pkg/mod.py, in: f, pattern: g(), decorators: ["@x("]}', "'@x(' is not a decorator"),
        ("{file: pkg/mod.py, in: f, pattern: g(), decorators: '@x'}", "decorators"),
    ]:
        with pytest.raises(ManifestError) as info:
            parse(manifest_text(f"r: {record}\n"), "m.yaml")
        assert words in str(info.value), str(info.value)


# --- B. exits through with / try / loops ----------------------------------------------

RETURN_NONE = "return self.rejection_sampler(logits, input_batch, None), None, None"
EXITS = [
    pytest.param(f"            with torch.no_grad(): {RETURN_NONE}\n",
                 "unreachable, after the `with` at line 1605, whose body always leaves the block "
                 "(reached only if its context manager suppresses an exception)", id="with-return"),
    pytest.param(f"            try: {RETURN_NONE}\n            except Exception: return None\n",
                 "after the `try` at line 1605, whose body (or `else`) and every `except` leave",
                 id="try-return-except-return"),
    pytest.param(f"            try:\n                pass\n            finally:\n                "
                 f"{RETURN_NONE}\n", "whose `finally` always leaves the block", id="finally-return"),
    pytest.param(f"            for _ in [0]:\n                {RETURN_NONE}\n",
                 "after the `for` at line 1605, whose every pass leaves the function",
                 id="for-return"),
    pytest.param(f"            while True:\n                {RETURN_NONE}\n",
                 "after the `while True:` at line 1605, which never ends", id="while-true-return"),
]


@pytest.mark.parametrize(("inserted", "words"), EXITS)
def test_code_after_an_exit_through_with_try_or_a_loop_does_not_count(
    pp1: Manifest, tree_copy: Path, edit: FileEdit, inserted: str, words: str,  # noqa: F811
) -> None:
    edit(tree_copy / RUNNER, once(ASSERT_SPEC, ASSERT_SPEC + inserted))
    check = judge(pp1, tree_copy, PASSES)
    assert check.status is Status.FAIL, check.message
    assert "(logits, input_batch, None)" in check.message  # the live call is the one judged
    assert words in check.message, check.message


@pytest.mark.parametrize("inserted", [
    "            try:\n                pass\n            except Exception:\n                return None\n",
    "            with torch.no_grad():\n                pass\n",
    "            for _ in []:\n                if _:\n                    break\n"
    "                return None\n",
    "            while True:\n                break\n",
    "            try:\n                return None\n            except Exception:\n"
    "                pass\n",
], ids=["handler-returns-only", "with-falls-through", "loop-may-break", "while-breaks",
        "handler-falls-through"])
def test_an_exit_that_may_fall_through_keeps_the_code_after_it(
    pp1: Manifest, tree_copy: Path, edit: FileEdit, inserted: str,  # noqa: F811
) -> None:
    edit(tree_copy / RUNNER, once(ASSERT_SPEC, ASSERT_SPEC + inserted))
    check = judge(pp1, tree_copy, PASSES)
    assert check.status is Status.PASS, check.message


def test_a_mask_after_a_with_return_does_not_precede(
    pp1: Manifest, tree_copy: Path, edit: FileEdit,  # noqa: F811
) -> None:
    mask = "            self.structured_outputs_worker.apply_grammar_bitmask(\n"
    edit(tree_copy / RUNNER, once(mask, "            with torch.no_grad():\n                "
                                  "pass\n" + mask))  # harmless first: still precedes
    assert judge(pp1, tree_copy, MASK_FIRST).status is Status.PASS
    edit(tree_copy / RUNNER, once("                pass\n" + mask,
                                  "                return None  # type: ignore\n" + mask))
    check = judge(pp1, tree_copy, MASK_FIRST)
    assert check.status is Status.FAIL
    assert "does not precede it" in check.message and "after the `with`" in check.message


REQUIRED = "file: pkg/mod.py\nin: f\npattern: g(1)\n"
FORBIDDEN = "file: pkg/mod.py\nin: f\npattern: start()\nnot: forbidden()\n"
EVERY = ("file: pkg/mod.py\nin: S.__init__\npattern: self.x = None\n"
         "every: {pattern: self.x = $V, where: {V: {not: {is: None}}}, guarded_by: $C.on}\n")


def body(code: str) -> str:
    return "from contextlib import nullcontext, suppress\n\n\ndef f():\n" + textwrap.indent(
        textwrap.dedent(code), "    ")


@pytest.mark.parametrize(("code", "words"), [
    ("with nullcontext():\n    return 0\ng(1)\n", "after the `with` at line 5"),
    ("try:\n    return h()\nexcept E:\n    return 1\ng(1)\n", "after the `try` at line 5"),
    ("try:\n    h()\nexcept E:\n    raise\nelse:\n    return 2\ng(1)\n", "after the `try`"),
    ("try:\n    return 0\nfinally:\n    pass\ng(1)\n", "whose body always leaves the block"),
    ("try:\n    h()\nexcept E:\n    pass\nfinally:\n    return 1\ng(1)\n", "`finally` always"),
    ("try:\n    return h()\nexcept E:\n    pass\nelse:\n    g(1)\n", "in the `else` of the `try`"),
    ("try:\n    with nullcontext():\n        return 0\nexcept E:\n    return 1\ng(1)\n",
     "after the `try`"),
    ("while 1:\n    h()\ng(1)\n", "which never ends"),
    ("while True:\n    return 1\n    break\ng(1)\n", "which never ends"),  # the break is dead
    ("for x in y:\n    pass\nelse:\n    return 0\ng(1)\n", "whose `else` always leaves"),
])
def test_a_required_match_must_certainly_run(make_files: MakeFiles, code: str,
                                             words: str) -> None:
    c = one(make_files, REQUIRED, body(code))
    assert c.status is Status.FAIL and "unreachable" in c.message and words in c.message, c.message


@pytest.mark.parametrize("code", [
    "try:\n    return h()\nexcept E:\n    pass\ng(1)\n",
    "try:\n    h()\nexcept E:\n    return 1\ng(1)\n",
    "with suppress(E):\n    h()\ng(1)\n",
    "for x in y:\n    continue\ng(1)\n",
    "for x in y:\n    if x:\n        break\n    return 1\ng(1)\n",
    "while True:\n    for z in x:\n        break\n    else:\n        break\ng(1)\n",
])
def test_code_after_an_exit_that_may_complete_is_live(make_files: MakeFiles, code: str) -> None:
    c = one(make_files, REQUIRED, body(code))
    assert c.status is Status.PASS, c.message


@pytest.mark.parametrize(("code", "found"), [
    # A context manager may swallow the raise: the forbidden call may run.
    ("start()\nwith suppress(Exception):\n    raise X()\nforbidden()\n", True),
    ("start()\nwith nullcontext():\n    return 0\nforbidden()\n", True),
    # Every arm of the try leaves: the call can never run.
    ("start()\ntry:\n    return 0\nexcept E:\n    return 1\nforbidden()\n", False),
    ("start()\nwhile True:\n    return 0\nforbidden()\n", False),
    # A loop that may not run at all: the call after it may run.
    ("start()\nfor x in y:\n    return 0\nforbidden()\n", True),
])
def test_a_forbidden_match_counts_when_it_may_run(make_files: MakeFiles, code: str,
                                                  found: bool) -> None:
    c = one(make_files, FORBIDDEN, body(code))
    assert c.status is (Status.FAIL if found else Status.PASS), c.message
    if found:
        assert "`forbidden()` is present" in c.message


def test_every_finds_a_write_after_a_suppressed_raise(make_files: MakeFiles) -> None:
    code = textwrap.dedent("""\
        from contextlib import suppress

        class S:
            def __init__(self, cfg):
                self.x = None
                if cfg.on:
                    self.x = make()
                with suppress(Exception):
                    raise ValueError()
                self.x = make()
    """)
    c = one(make_files, EVERY, code)
    assert c.status is Status.FAIL and "every: `self.x = $V` at line 10" in c.message, c.message
    dead = code.replace("with suppress(Exception):", "try:").replace(
        "raise ValueError()", "raise ValueError()\n        except ValueError:\n            "
        "return")
    assert one(make_files, EVERY, dead).status is Status.PASS


def test_each_not_turns_the_direction_round(make_files: MakeFiles) -> None:
    # "no forbidden() unless ok() runs too": inside the second `not`, ok() is required
    # again, so an ok() that may be skipped does not excuse forbidden().
    rule = ("file: pkg/mod.py\nin: f\npattern: start()\n"
            "not: {pattern: forbidden(), not: ok()}\n")
    assert one(make_files, rule, body("start()\nforbidden()\nok()\n")).status is Status.PASS
    skipped = body("start()\nforbidden()\nwith nullcontext():\n    return 0\nok()\n")
    assert one(make_files, rule, skipped).status is Status.FAIL
    # A `where` constraint's `not` is forbidden: what may run counts there.
    where = ("file: pkg/mod.py\nin: f\npattern: \"if c: $$$BODY\"\n"
             "where: {BODY: {not: {contains: bad()}}}\n")
    hidden = body("if c:\n    with suppress(E):\n        raise X()\n    bad()\n")
    c = one(make_files, where, hidden)
    assert c.status is Status.FAIL and "does not satisfy: not (contains `bad()`)" in c.message, \
        c.message
    gone = body("if c:\n    with suppress(E):\n        raise X()\n    if False:\n        bad()\n")
    assert one(make_files, where, gone).status is Status.PASS


# --- C. every: subclasses and attached code in the same file --------------------------

SUBCLASS = """

class _Sub(DraftModelSpeculator):
    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.draft_logits = {value}
"""


def test_every_sees_a_subclass_in_the_same_file(
    pp1: Manifest, tree_copy: Path, edit: FileEdit,  # noqa: F811
) -> None:
    edit(tree_copy / SPECULATOR, at_end(SUBCLASS.format(value="torch.zeros(1)")))
    check = judge(pp1, tree_copy, GUARDED)
    assert check.status is Status.FAIL, check.message
    assert ("every: `self.draft_logits = $VALUE` at line 546 (in class _Sub, a subclass of "
            "DraftModelSpeculator in this file): it is not inside an `if") in check.message


@pytest.mark.parametrize("value", ["None", 'None\n        if self.speculative_config.'
                                   'draft_sample_method == "probabilistic":\n            '
                                   "self.draft_logits = torch.zeros(1)"])
def test_a_subclass_that_keeps_the_claim_passes(
    pp1: Manifest, tree_copy: Path, edit: FileEdit, value: str,  # noqa: F811
) -> None:
    edit(tree_copy / SPECULATOR, at_end(SUBCLASS.format(value=value)))
    check = judge(pp1, tree_copy, GUARDED)
    assert check.status is Status.PASS, check.message


def test_every_sees_a_grandchild_and_code_attached_to_the_class(
    pp1: Manifest, tree_copy: Path, edit: FileEdit, make_files: MakeFiles,  # noqa: F811
) -> None:
    edit(tree_copy / SPECULATOR, at_end("def _reset(self):\n    self.draft_logits = "
                                        "torch.zeros(1)\n\n\nDraftModelSpeculator.reset = _reset\n"))
    check = judge(pp1, tree_copy, GUARDED)
    assert check.status is Status.FAIL, check.message
    assert "(in code attached to class DraftModelSpeculator at line 541)" in check.message
    code = textwrap.dedent("""\
        class S:
            def __init__(self, cfg):
                self.x = None
                if cfg.on:
                    self.x = make()

        class Mid(S):
            pass

        class Leaf(Mid):
            def grow(self):
                self.x = make()

        class Other:
            def grow(self):
                self.x = make()  # another class's self: not S's
    """)
    c = one(make_files, EVERY, code)
    assert c.status is Status.FAIL and "line 12 (in class Leaf, a subclass of S" in c.message
    unrelated = re.sub(r"class Leaf\(Mid\):\n    def grow\(self\):\n        self.x = make\(\)\n",
                       "", code)
    assert one(make_files, EVERY, unrelated).status is Status.PASS
    lam = code.replace("class Leaf(Mid):", "S.grow = lambda self: setattr(self, 'x', make())\n\n"
                       "class Leaf(Other):")
    c = one(make_files, EVERY, lam)
    assert c.status is Status.FAIL and "in code attached to class S" in c.message, c.message


def test_the_shipped_rules_still_pass_on_the_real_tree(pp1: Manifest, vllm_tree: Path) -> None:  # noqa: F811
    for iid, inv in pp1.invariants.items():
        if inv.source is None:
            check = judge(pp1, vllm_tree, iid)
            assert check.status is Status.PASS, (iid, check.message)


# --- D. review of 0af74b8: false alarms and further replacements ------------------------

SAMPLER = "file: pkg/mod.py\nin: Runner.sample\npattern: self.rejection_sampler($$$ARGS)\n"
DECORATED = ("import torch\n\n\nclass Runner:\n    @torch.inference_mode()\n"
             "    def sample(self):\n        self.rejection_sampler(1)\n")


def one_bytes(make_files: MakeFiles, invariant: str, data: bytes) -> Check:
    """``one`` on a file given as bytes (a BOM, CRLF line ends)."""
    root = make_files({"pkg/__init__.py": "", "pkg/mod.py": data})
    m = parse(manifest_text("r:\n" + textwrap.indent(invariant, "  ")), "m.yaml")
    return {c.id: c for c in audit(m, DirectorySource(root)).checks}["r"]


@pytest.mark.parametrize("data", [
    b"\n" + DECORATED.encode(),
    b"\n\n  \n\t\n" + DECORATED.encode(),
    b"# a comment\n\n" + DECORATED.encode(),
    b"\xef\xbb\xbf\n" + DECORATED.encode(),
    ("\n" + DECORATED).replace("\n", "\r\n").encode(),
], ids=["blank-line", "blank-lines-and-spaces", "comment", "bom", "crlf"])
def test_a_file_not_starting_with_code_still_resolves_its_decorators(
        make_files: MakeFiles, data: bytes) -> None:
    """The stdlib symbol table is numbered from the file's first line, the tree's root
    text from its first token: they must agree, or every decorator is "unresolved"."""
    c = one_bytes(make_files, SAMPLER, data)
    assert c.status is Status.PASS, c.message
    assert "decorated with `@torch.inference_mode()` (imported code, not read)" in c.message


@pytest.mark.parametrize("code", [
    "while x:\n    return 0\ng(1)\n",
    "for item in xs:\n    return item\ng(1)\n",
    "for item in xs:\n    raise E()\ng(1)\n",
    "while h():\n    with nullcontext():\n        return 0\ng(1)\n",
    "for item in []:\n    return item\ng(1)\n",
])
def test_code_after_a_loop_that_may_not_run_counts(make_files: MakeFiles, code: str) -> None:
    """``while x: return`` may run zero times, exactly like ``if x: return``: what
    follows is code that runs whenever the loop does not."""
    c = one(make_files, REQUIRED, body(code))
    assert c.status is Status.PASS, c.message


@pytest.mark.parametrize(("code", "words"), [
    ("for _ in (1, 2):\n    return 0\ng(1)\n",
     "whose every pass leaves the function and which certainly runs (`(1, 2)` is not empty)"),
    ("for _ in 'ab':\n    raise E()\ng(1)\n", "which certainly runs"),
    ("while 1 == 1:\n    return 0\ng(1)\n", "which never ends"),
])
def test_code_after_a_loop_that_certainly_runs_and_leaves_does_not_count(
        make_files: MakeFiles, code: str, words: str) -> None:
    c = one(make_files, REQUIRED, body(code))
    assert c.status is Status.FAIL and "unreachable" in c.message and words in c.message, c.message


def test_a_forbidden_match_after_a_loop_counts_unless_the_loop_certainly_leaves(
        make_files: MakeFiles) -> None:
    may = one(make_files, FORBIDDEN, body("start()\nwhile x:\n    return 0\nforbidden()\n"))
    assert may.status is Status.FAIL and "`forbidden()` is present" in may.message, may.message
    never = one(make_files, FORBIDDEN, body("start()\nfor _ in [0]:\n    return 0\nforbidden()\n"))
    assert never.status is Status.PASS, never.message


RUNNER_CLASS = "class Runner:\n    def sample(self):\n        self.rejection_sampler(1)\n"


@pytest.mark.parametrize(("code", "words"), [
    (f"import builtins\n\n{RUNNER_CLASS}builtins.setattr(Runner, 'sample', None)\n",
     "Runner.sample is replaced at line 6 (`builtins.setattr("),
    (f"{RUNNER_CLASS}__builtins__.setattr(Runner, 'sample', None)\n",
     "replaced at line 4 (`__builtins__.setattr("),
    (f"import builtins\n\n{RUNNER_CLASS}builtins.object.__setattr__(Runner, 'sample', None)\n",
     "replaced at line 6 (`builtins.object.__setattr__("),
    (f"{RUNNER_CLASS}setattr(Runner, 'sam' + 'ple', None)\n",
     "replaced at line 4 (`setattr(Runner, 'sam' + 'ple', None)`)"),
    (f"{RUNNER_CLASS}setattr(Runner, f'sample', None)\n", "replaced at line 4"),
    (f"{RUNNER_CLASS}delattr(Runner, ('sa' 'm') + f'ple')\n", "replaced at line 4"),
    (f"{RUNNER_CLASS}vars(Runner)['sam' + 'ple'] = None\n", "replaced at line 4"),
    (f"{RUNNER_CLASS}    locals()['sample'] = None\n",
     "replaced at line 4 (`locals()['sample'] = None`)"),
    (f"{RUNNER_CLASS}    vars()['sample'] = lambda self: None\n", "replaced at line 4"),
    (f"{RUNNER_CLASS}    del builtins.locals()['sample']\n", "replaced at line 4"),
], ids=["builtins-setattr", "__builtins__-setattr", "builtins-object-setattr", "concatenated",
        "f-string", "delattr-folded", "vars-of-class-folded", "locals-in-class-body",
        "vars-in-class-body", "del-locals"])
def test_a_replacement_spelled_through_builtins_or_a_folded_name_fails(
        make_files: MakeFiles, code: str, words: str) -> None:
    c = one(make_files, SAMPLER, code)
    assert c.status is Status.FAIL and words in c.message, c.message


@pytest.mark.parametrize("code", [
    f"{RUNNER_CLASS}setattr(Runner, 'sam' + 'ples', None)\n",
    f"{RUNNER_CLASS}    locals()['other'] = None\n",
    "class Runner:\n    def sample(self):\n        self.rejection_sampler(1)\n"
    "        locals()['sample'] = None\n",  # a function's locals: not the class
    f"{RUNNER_CLASS}builtins.getattr(Runner, 'sample')\n",
])
def test_a_similar_write_that_replaces_nothing_passes(make_files: MakeFiles, code: str) -> None:
    c = one(make_files, SAMPLER, code)
    assert c.status is Status.PASS, c.message


@pytest.mark.parametrize(("imports", "decorator", "words"), [
    ("import builtins", "@builtins.staticmethod",
     "`builtins.staticmethod` is a builtin (as `staticmethod`), not imported code"),
    ("import builtins as b", "@b.property", "`builtins.property` is a builtin"),
    ("from builtins import classmethod as cm", "@cm", "`builtins.classmethod` is a builtin"),
    ("", "@__builtins__.staticmethod", "`__builtins__` is not imported by the module"),
])
def test_a_builtin_decorator_spelled_through_builtins_fails(
        make_files: MakeFiles, imports: str, decorator: str, words: str) -> None:
    code = (f"{imports}\n\n\nclass Runner:\n    {decorator}\n    def sample(self):\n"
            "        self.rejection_sampler(1)\n")
    c = one(make_files, SAMPLER, code)
    assert c.status is Status.FAIL and words in c.message, c.message


@pytest.mark.parametrize(("bases", "words"), [
    ("class Base:\n    def __init_subclass__(cls):\n        cls.sample = None\n\n\n"
     "class Runner(Base):\n",
     "Runner.sample: its base class Base (line 1) defines `__init_subclass__` at line 2, "
     "which runs when the subclass is created"),
    ("class Base:\n    def __getattribute__(self, n):\n        return None\n\n\n"
     "class Mid(Base):\n    pass\n\n\nclass Runner(Mid[int], metaclass=Meta):\n",
     "its base class Base (line 1) defines `__getattribute__` at line 2"),
    ("class Outer:\n    class Base:\n        __init_subclass__ = classmethod(lambda c: None)\n\n\n"
     "class Runner(Outer.Base):\n", "its base class Base (line 2) defines `__init_subclass__`"),
    ("class Base:\n    pass\n\n\nBase.__init_subclass__ = classmethod(lambda c: None)\n\n\n"
     "class Runner(Base):\n", "defines `__init_subclass__` at line 5"),
])
def test_a_base_class_in_the_file_with_a_hook_fails(make_files: MakeFiles, bases: str,
                                                    words: str) -> None:
    code = bases + "    def sample(self):\n        self.rejection_sampler(1)\n"
    c = one(make_files, SAMPLER, code)
    assert c.status is Status.FAIL and words in c.message, c.message


def test_a_hook_on_an_unrelated_or_another_modules_class_passes(make_files: MakeFiles) -> None:
    code = ("import other\n\n\nclass Base:\n    def __init_subclass__(cls):\n        pass\n\n\n"
            "class Plain:\n    pass\n\n\n"
            "class Runner(other.Base, Plain):\n    def sample(self):\n"
            "        self.rejection_sampler(1)\n")
    c = one(make_files, SAMPLER, code)
    assert c.status is Status.PASS, c.message


@pytest.mark.parametrize("code", [
    "assert False\ng(1)\n",
    "assert 0, 'never here'\ng(1)\n",
    "if x:\n    return 0\nelse:\n    assert 1 == 2\ng(1)\n",
])
def test_a_required_match_after_a_failing_assert_does_not_count(make_files: MakeFiles,
                                                                code: str) -> None:
    c = one(make_files, REQUIRED, body(code))
    assert c.status is Status.FAIL and "unreachable" in c.message, c.message
    assert "which always raises (unless Python runs with -O)" in c.message or \
        "every branch leaves" in c.message, c.message


def test_a_forbidden_match_after_a_failing_assert_counts(make_files: MakeFiles) -> None:
    """``python -O`` strips asserts: what follows ``assert False`` may run."""
    c = one(make_files, FORBIDDEN, body("start()\nassert False\nforbidden()\n"))
    assert c.status is Status.FAIL and "`forbidden()` is present" in c.message, c.message
    live = one(make_files, REQUIRED, body("assert x\ng(1)\n"))
    assert live.status is Status.PASS, live.message


EVERY_BASE = """\
import other


class S:
    def __init__(self, cfg):
        self.x = None
        if cfg.on:
            self.x = make()


class Sub({bases}):
    def grow(self):
        self.x = make()
"""


@pytest.mark.parametrize(("bases", "subclass"), [
    ("S", True),
    ("S[int]", True),  # a generic alias of S: still S
    ("(S)", True),
    ("other.S", False),  # another module's S is not this class
    ("object, metaclass=S", False),  # a keyword argument is not a base
    ("Base[S]", False),  # S as a type argument only
])
def test_every_counts_only_a_base_that_is_the_class(make_files: MakeFiles, bases: str,
                                                    subclass: bool) -> None:
    c = one(make_files, EVERY, EVERY_BASE.format(bases=bases))
    if subclass:
        assert c.status is Status.FAIL and "(in class Sub, a subclass of S" in c.message, \
            c.message
    else:
        assert c.status is Status.PASS, c.message


@pytest.mark.parametrize("over", [
    "rows or [None]",  # rows may be a truthy empty iterator: it is what is iterated
    "iter([0]) if x else [0]",
    "[*rows]",
    "{**d}",
    "[r for r in [0]]",
    "f'{x}'",
    "(*rows,)",
])
def test_a_loop_over_a_truthy_iterable_may_run_zero_times(make_files: MakeFiles,
                                                           over: str) -> None:
    """``for r in rows or [None]: return r`` iterates ``rows`` whenever it is truthy, and
    an empty generator is: only a non-empty literal certainly yields something."""
    required = one(make_files, REQUIRED, body(f"for r in {over}:\n    return r\ng(1)\n"))
    assert required.status is Status.PASS, required.message
    forbidden = one(make_files, FORBIDDEN,
                    body(f"start()\nfor r in {over}:\n    return r\nforbidden()\n"))
    assert forbidden.status is Status.FAIL and "`forbidden()` is present" in forbidden.message, \
        forbidden.message


@pytest.mark.parametrize("over", ["[*rows, 0]", "1, 2", "{'a': 1}", "b'ab'", "'a' 'b'",
                                  "((0,))", "{0}"])
def test_a_loop_over_a_non_empty_literal_certainly_runs(make_files: MakeFiles,
                                                        over: str) -> None:
    c = one(make_files, REQUIRED, body(f"for r in {over}:\n    return r\ng(1)\n"))
    assert c.status is Status.FAIL and "which certainly runs" in c.message, c.message
    forbidden = one(make_files, FORBIDDEN,
                    body(f"start()\nfor r in {over}:\n    return r\nforbidden()\n"))
    assert forbidden.status is Status.PASS, forbidden.message


HOOKED_BASE = "class Base:\n    def __getattribute__(self, n):\n        return lambda *a: None\n"
RUNNER_OF_BASE = "class Runner(Base):\n    def sample(self):\n        self.rejection_sampler(1)\n"


@pytest.mark.parametrize("code", [
    f"{HOOKED_BASE}\n\n{RUNNER_OF_BASE}\n\nBase = None\n",  # rebound after: too late
    f"{HOOKED_BASE}\n\n{RUNNER_OF_BASE}\n\nfrom lib import Base\n",
    f"from lib import Base\n{HOOKED_BASE}\n\n{RUNNER_OF_BASE}",  # the class rebinds the import
    f"from lib import Base\nif flag:\n{textwrap.indent(HOOKED_BASE, '    ')}\n\n{RUNNER_OF_BASE}",
    f"Base = None\nfor _ in range(2):\n{textwrap.indent(RUNNER_OF_BASE + HOOKED_BASE, '    ')}",
    f"def make():\n{textwrap.indent(RUNNER_OF_BASE, '    ')}\n\n{HOOKED_BASE}",  # runs later
], ids=["rebound-after", "imported-after", "class-after-import", "maybe-class",
        "second-pass-of-a-loop", "in-a-function"])
def test_a_base_is_the_class_bound_when_the_class_statement_runs(make_files: MakeFiles,
                                                                 code: str) -> None:
    c = one(make_files, SAMPLER.replace("Runner.sample", "make.Runner.sample")
            if code.startswith("def make") else SAMPLER, code)
    assert c.status is Status.FAIL and "defines `__getattribute__`" in c.message, c.message


@pytest.mark.parametrize("code", [
    f"from lib import Base\n\n\n{RUNNER_OF_BASE}\n\n{HOOKED_BASE}",  # a later, unrelated Base
    f"{HOOKED_BASE}\n\nfrom lib import Base\n\n\n{RUNNER_OF_BASE}",  # the import rebinds it
    f"{HOOKED_BASE}\n\nBase = object\n\n\n{RUNNER_OF_BASE}",
])
def test_a_base_bound_elsewhere_when_the_class_statement_runs_passes(make_files: MakeFiles,
                                                                     code: str) -> None:
    c = one(make_files, SAMPLER, code)
    assert c.status is Status.PASS, c.message


def hooked(hook_body: str, head: str = "def __init_subclass__(cls, **kw):") -> str:
    """A base with an ``__init_subclass__`` of this body, and ``Runner(Base)`` after it."""
    return (f"class Base:\n    registry = {{}}\n\n    {head}\n"
            f"{textwrap.indent(textwrap.dedent(hook_body), '        ')}\n\n{RUNNER_OF_BASE}")


@pytest.mark.parametrize("hook_body", [
    "super().__init_subclass__(**kw)\nBase.registry[cls.__name__] = cls\n",
    "Base.registry[(cls.__module__, cls.__qualname__)] = cls\n",
    "super().__init_subclass__(name=cls.__name__, **kw)\nlog(cls.__name__)\n",
    "print(kw.cls)\n",
    "registry.append(cls)\n",
    "super().__init_subclass__(**kw)\nBase.registry.setdefault(cls.__name__, cls)\n"
    "log(cls.__qualname__)\n",
    "cls.registry.setdefault(0, cls)\n",
])
def test_a_base_hook_that_only_registers_the_class_passes(make_files: MakeFiles,
                                                          hook_body: str) -> None:
    """The registry idiom reads the class's name and stores the class: it cannot replace
    what ``Runner.sample`` is."""
    c = one(make_files, SAMPLER, hooked(hook_body))
    assert c.status is Status.PASS, c.message
    decorated = one(make_files, SAMPLER, hooked(hook_body, "@classmethod\n    def "
                                                "__init_subclass__(cls, **kw):"))
    assert decorated.status is Status.PASS, decorated.message


@pytest.mark.parametrize(("hook_body", "words"), [
    ("cls.sample = None\n", "(it uses the class at line 5: `cls.sample = None`)"),
    ("setattr(cls, 'sample', None)\n", "it uses the class at line 5"),
    ("vars(cls)['sample'] = None\n", "it uses the class at line 5"),
    ("cls.__dict__['sample'] = None\n", "it uses the class at line 5"),
    ("super().__init_subclass__(**kw)\nBase.registry[cls.__name__] = cls\npatch(cls)\n",
     "it uses the class at line 7: `patch(cls)`"),
    ("c = cls\nc.sample = None\n", "it uses the class at line 5"),
    ("registry.append(cls)\ncls.sample = None\n", "it uses the class at line 6"),
    ("registry.append(cls.sample)\n", "it uses the class at line 5"),
    ("Base.registry[cls] = cls.sample\n", "it uses the class at line 5"),
    ("cls.__name__ = 'x'\ncls.sample = None\n", "it uses the class at line 5"),
])
def test_a_base_hook_that_may_replace_attributes_of_the_class_fails(
        make_files: MakeFiles, hook_body: str, words: str) -> None:
    c = one(make_files, SAMPLER, hooked(hook_body))
    assert c.status is Status.FAIL and "defines `__init_subclass__` at line 4" in c.message \
        and words in c.message, c.message


@pytest.mark.parametrize("head", [
    "@some.decorator\n    def __init_subclass__(cls, **kw):",  # what runs is not read
    "def __init_subclass__(*args):",  # no plain first parameter
])
def test_a_base_hook_that_cannot_be_read_fails(make_files: MakeFiles, head: str) -> None:
    c = one(make_files, SAMPLER, hooked("pass\n", head))
    assert c.status is Status.FAIL and "defines `__init_subclass__`" in c.message, c.message


def test_each_long_test_is_folded_once_per_file(make_files: MakeFiles,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test is folded once per node of a file, however many questions (a loop's
    fate in both directions, a branch, an ``assert``) ask about it: a hostile file of
    long tests otherwise costs a fold per question."""
    import pp1audit.facts.reachability as reachability

    folded: list[str] = []
    real = reachability.constant_truth

    def counting(text: str) -> bool | None:
        folded.append(text)
        return real(text)

    monkeypatch.setattr(reachability, "constant_truth", counting)
    unknown = "x == (" + ", ".join(["1"] * 400) + ")"
    false = "0 * (" + " + ".join(["1"] * 400) + ")"
    code = (f"start()\nwhile {unknown}:\n    return 0\nif {false}:\n    return 1\n"
            f"assert {unknown}\nfor _ in [0]:\n    while {false}:\n        break\n"
            "    g()\nforbidden()\n")
    c = one(make_files, FORBIDDEN, body(code))
    assert c.status is Status.FAIL and "`forbidden()` is present" in c.message, c.message
    counts = {name: folded.count(text) for name, text in (("unknown", unknown), ("false", false))}
    assert 1 <= counts["unknown"] <= 2 and 1 <= counts["false"] <= 2, counts  # each is in two nodes
    # (at least once: a counter on a function the engine no longer calls counts nothing)
