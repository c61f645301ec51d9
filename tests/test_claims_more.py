"""The audit's claims under attack (user test "claims"): constant tests spelled as
expressions, text anchors moved into another block by re-indentation, and the
grammar rule's binding of the masked logits to the sampled ones.

Each edit that breaks a claim is made on the REAL vLLM 0.31.0 files where the
user test made it; language corners are checked on small hand-made files.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest
from conftest import REPO, run_cli
from test_invariants_semantics import (
    CALL,
    MASK,
    MASK_FIRST,
    PASSES,
    REJECTION,
    RUNNER,
    SPECULATOR,
    VERIFY,
    indent,
    judge,
    once,
)

from pp1audit.anchortext import anchor_text
from pp1audit.audit import audit
from pp1audit.manifest import Manifest, load_manifest, parse
from pp1audit.result import Check, Status
from pp1audit.sources import DirectorySource
from pp1audit.spans import _lex, reindented_by
from pp1audit.syntaxtree import constant_truth

PP1 = REPO / "manifests" / "pp1.yaml"
Edit = Callable[[Path, Callable[[str], str]], None]
MakeFiles = Callable[[dict[str, str | bytes]], Path]


@pytest.fixture(scope="module")
def pp1() -> Manifest:
    return load_manifest(PP1)


# --- A. constant tests written as expressions -------------------------------------------

FOLDED = [
    ("1 == 2", False), ("1 > 2", False), ("0 * 1", False), ("1 == 1", True), ("2 > 1 > 0", True),
    ("1 > 2 < x", False),  # a chain stops at its first false link: x is never evaluated
    ("'a' in ('a', 'b')", True), ("3 not in [1, 2]", True), ("1 in {1: 2}", True),
    ("'' in 'abc'", True), ("None is None", True), ("None is not None", False),
    ("(1 == 1) is True", True), ("f''", False), ("f'a'", True), ("False and x", False),
    ("0 or 5", True), ("[] or ()", False), ("-1 + 1", False), ("~0", True), ("~-1", False),
    ("not 1 == 2", True), ("0x10 == 16", True), ("5 % 2", True), ("0.1 + 0.2 == 0.3", False),
    ("1 if 0 else 0", False), ("'ab' * 3 == 'ababab'", True), ("b'' + b''", False),
    ("1j * 1j == -1", True), ("2 ** -1", True), ("(1, 2) < (1, 3)", True), ("{1: 2}", True),
    ("{}", False), ("True + True == 2", True), ("1e400 > 1", True), ("2 ** 64 - 2 ** 64", False),
    ("1 << 100", True), ("0 * 1 or 1 == 2", False), ("1 == 2  # a comment", False),
    ("(1 ==\n 2)", False), ("{1, 2} & {3}", False), ("2 ** 4000 > 2 ** 3999", True),
]

UNKNOWN = [
    "x", "1 < 2 < x", "f'{x}'", "__debug__", "(x := 0)", "[*()]", "{**{}}",
    "set()", "len('')", "(1, 2)[0]", "1 is 1",  # identity of equal ints: an implementation detail
    "() is ()", "1 / 0", "0 ** -1", "1 < 'a'", "{[]: 1}", "{[]}", "1 @ 2", "- 'a'",
    "'%s' % 1", "'%*d' % (10 ** 9, 1)",  # formatting can make any size: refused
    # Hostile: refused (None) before any large value is made, not computed (a huge
    # non-zero int is known to be true without computing it: HUGE_BUT_KNOWN below).
    "'a' * 10 ** 12", "[0] * 10 ** 12", "10 ** 12 * b'a'", "(1,) * 5000 == (1,) * 5000",
    "[[1] * 60] * 100 == 0", "10 ** 10 ** 10 == 9 ** 9 ** 9", "(10 ** 10 ** 10,) == (9 ** 9 ** 9,)",
    "+".join(["1"] * 5000),  # deeper than the recursion limit
    "[" * 300 + "]" * 300,  # deeper than the parser's nesting limit
    " and ".join(["(1,) * 2000 == (1,) * 2000"] * 3000),  # each link small, the sum large
]


@pytest.mark.parametrize(("text", "truth"), FOLDED)
def test_an_expression_of_constants_is_folded_as_python_does(text: str, truth: bool) -> None:
    assert constant_truth(text) is truth
    assert bool(eval(text, {"x": object()})) is truth  # the test's own oracle: Python itself


@pytest.mark.parametrize("text", UNKNOWN, ids=lambda t: t[:40])
def test_anything_not_certainly_constant_or_too_large_is_unknown(text: str) -> None:
    assert constant_truth(text) is None


RUNNER_DEAD_CALL = [
    pytest.param(test, id=test) for test in ("1 == 2", "1 > 2", "0 * 1", "2 < 1 < 3", "'a' in ()")
]


def _dead_call(test: str) -> Callable[[str], str]:
    """The user test's open-if-1eq2: the real call kept under a dead test, a live one
    passing None after it."""
    return once(CALL, f"            if {test}:\n" + indent(CALL)
                + "            sampler_output = self.rejection_sampler(logits, input_batch, None)\n")


@pytest.mark.vllm
@pytest.mark.parametrize("test", RUNNER_DEAD_CALL)
def test_the_real_call_under_a_constant_false_expression_does_not_count(
    pp1: Manifest, tree_copy: Path, edit: Edit, test: str
) -> None:
    edit(tree_copy / RUNNER, _dead_call(test))
    check = judge(pp1, tree_copy, PASSES)
    assert check.status is Status.FAIL, check.message
    assert "(logits, input_batch, None)" in check.message


@pytest.mark.vllm
@pytest.mark.parametrize("test", ["1 == 2", "1 > 2", "0 * 1"])
def test_the_grammar_mask_under_a_constant_false_expression_does_not_count(
    pp1: Manifest, tree_copy: Path, edit: Edit, test: str
) -> None:
    edit(tree_copy / RUNNER, once("        if grammar_output is not None and logits.shape[0] > 0:\n",
                                  f"        if {test}:\n"))
    check = judge(pp1, tree_copy, MASK_FIRST)
    assert check.status is Status.FAIL, check.message
    assert f"unreachable, under `if {test}:` at line 1583, never true" in check.message


@pytest.mark.vllm
def test_the_grammar_mask_under_a_constant_true_expression_counts(
    pp1: Manifest, tree_copy: Path, edit: Edit
) -> None:
    edit(tree_copy / RUNNER, once("        if grammar_output is not None and logits.shape[0] > 0:\n",
                                  "        if 2 > 1:\n"))
    check = judge(pp1, tree_copy, MASK_FIRST)
    assert check.status is Status.PASS, check.message


@pytest.mark.vllm
def test_sampling_params_applied_only_under_a_dead_expression_fail(
    pp1: Manifest, tree_copy: Path, edit: Edit
) -> None:
    apply = ("        processed_logits = self.sampler.apply_sampling_params(\n"
             "            logits,\n")
    edit(tree_copy / REJECTION, once(apply, "        processed_logits = logits\n        if 1 == 2:\n"
                                     "            processed_logits = self.sampler.apply_sampling_params(\n"
                                     "            logits,\n"))
    check = judge(pp1, tree_copy, VERIFY)
    assert check.status is Status.FAIL, check.message
    assert "under `if 1 == 2:`" in check.message


# --- C. the grammar rule binds the masked logits to the sampled ones ----------------------


@pytest.mark.vllm
def test_the_grammar_rule_holds_on_real_0_31_0_naming_the_masked_logits(
    pp1: Manifest, vllm_tree: Path
) -> None:
    check = judge(pp1, vllm_tree, MASK_FIRST)
    assert check.status is Status.PASS, check.message
    assert check.found_lines == (1605, 1610)
    assert "after `$WORKER.apply_grammar_bitmask($$$MASK_ARGS)` at lines 1586-1591" in check.message


@pytest.mark.vllm
@pytest.mark.parametrize("masked", ["logits.clone()", "logits[:]", "other_logits"])
def test_masking_other_logits_than_the_sampled_ones_fails(
    pp1: Manifest, tree_copy: Path, edit: Edit, masked: str
) -> None:
    edit(tree_copy / RUNNER, once(MASK, MASK.replace("                logits,\n",
                                                     f"                {masked},\n", 1)))
    check = judge(pp1, tree_copy, MASK_FIRST)
    assert check.status is Status.FAIL, check.message
    # the mask found is judged by its arguments: the logits it masks are not the ones sampled
    assert "apply_grammar_bitmask($$$MASK_ARGS)` does not" in check.message
    assert "the argument for `logits` (keyword, or position 0) is `$LOGITS`" in check.message


@pytest.mark.vllm
def test_sampling_other_logits_than_the_masked_ones_fails(
    pp1: Manifest, tree_copy: Path, edit: Edit
) -> None:
    edit(tree_copy / RUNNER, once(CALL, CALL.replace("                logits,\n",
                                                     "                logits.clone(),\n", 1)))
    check = judge(pp1, tree_copy, MASK_FIRST)
    assert check.status is Status.FAIL, check.message


# --- B. a Python span re-indented is in another block ------------------------------------

HEAD = '''    def draft_logits_spec(self, vllm_config: VllmConfig) -> tuple[torch.dtype, float]:
        """Dtype and fill for the cached proposal distribution.

        Speculators that write only a subset of columns each step override this.
        """
        return vllm_config.model_config.head_dtype, 0.0
'''


def text_manifest(path: str, lines: list[str], start: int, end: int, package: str,
                  version: str | None = None) -> str:
    """A manifest (JSON is YAML) with one text-anchored citation quoting the lines."""
    quote = anchor_text(lines, start, end)
    target: dict[str, str] = {"package": package}
    if version:
        target["version"] = version
    return json.dumps({"pp1audit": 1, "target": target, "citations": {"c": {
        "at": f"{path}:{start}-{end}",
        "anchor": {"prefix": quote.prefix, "exact": quote.exact, "suffix": quote.suffix}}}})


def cite(make_files: MakeFiles, path: str, before: str, after: str, start: int, end: int) -> Check:
    """The citation of lines start-end of ``before``, judged against ``after``."""
    root = make_files({"pkg/__init__.py": "", path: after})
    m = parse(text_manifest(path, before.splitlines(), start, end, "pkg"), "m.yaml")
    return next(c for c in audit(m, DirectorySource(root)).checks if c.kind == "citation")


@pytest.mark.vllm
def test_a_cited_method_re_indented_under_a_dead_if_is_drift_on_the_real_tree(
    tree_copy: Path, edit: Edit, tmp_path: Path
) -> None:
    lines = (tree_copy / SPECULATOR).read_text(encoding="utf-8").splitlines()
    assert "\n".join(lines[375:381]) + "\n" == HEAD and lines[374] == ""
    manifest = tmp_path / "m.yaml"
    manifest.write_text(text_manifest(SPECULATOR, lines, 376, 381, "vllm", "0.31.0"))
    proc = run_cli("check", str(tree_copy), "-m", str(manifest))
    assert proc.returncode == 0, proc.stdout  # the pristine tree passes
    # The user test's head-dtype-dead-wrapped: the blank line 375 becomes `if False:`
    # and the method moves into it, every line kept in place.
    edit(tree_copy / SPECULATOR, once("\n\n" + HEAD, "\n    if False:\n" + indent(HEAD)))
    proc = run_cli("check", str(tree_copy), "-m", str(manifest), "--format", "json")
    assert proc.returncode == 1, proc.stdout
    check = json.loads(proc.stdout)["checks"][-1]
    assert (check["id"], check["status"], check["found_lines"]) == ("c", "drift", [376, 381])
    assert check["message"] == (
        f"{SPECULATOR}:376-381 still holds the anchored text, re-indented by +4 columns: it "
        "may sit in another block now; re-pin after review")
    assert run_cli("check", str(tree_copy), "-m", str(manifest), "--allow-drift").returncode == 0


CODE = "def f(x):\n    if x:\n        return  g(x)\n    y = 1\n    return y\n"


def test_whitespace_within_lines_still_passes_in_place(make_files: MakeFiles) -> None:
    check = cite(make_files, "pkg/a.py", CODE, CODE.replace("return  g(x)", "return g(x)"), 3, 3)
    assert check.status is Status.PASS, check.message
    assert check.message.endswith("still holds the anchored text (whitespace differs)")


def test_a_span_moved_out_of_its_block_is_drift(make_files: MakeFiles) -> None:
    after = CODE.replace("    if x:\n        return  g(x)\n", "    if x: pass\n    return  g(x)\n")
    check = cite(make_files, "pkg/a.py", CODE, after, 3, 3)  # now runs when x is false too
    assert check.status is Status.DRIFT, check.message
    assert check.found_lines == (3, 3)
    assert "re-indented by -4 columns: it may sit in another block now" in check.message


def test_a_file_re_indented_as_a_whole_is_drift_said_as_a_possibility(
    make_files: MakeFiles,
) -> None:
    """4 spaces to 2, the same blocks: the span's columns moved, its block did not.
    Only a reader can tell that from a move into another block, so it is drift,
    and the message does not claim the block changed."""
    after = CODE.replace("    ", "  ")
    check = cite(make_files, "pkg/a.py", CODE, after, 4, 4)
    assert check.status is Status.DRIFT, check.message
    assert check.message.endswith("re-indented by -2 columns: it may sit in another block now; "
                                  "re-pin after review")


def test_a_relocated_and_re_indented_span_says_so(make_files: MakeFiles) -> None:
    after = "import os\n\n" + CODE.replace("    y = 1\n    return y\n",
                                           "    if os:\n        y = 1\n        return y\n")
    check = cite(make_files, "pkg/a.py", CODE, after, 4, 5)
    assert check.status is Status.DRIFT, check.message
    assert check.found_lines == (7, 8)
    assert check.message.endswith("moved to 7-8 (3 lines later) (re-indented by +4 columns: it "
                                  "may sit in another block now; re-pin after review)")


def test_re_indented_continuation_lines_and_other_files_still_pass(make_files: MakeFiles) -> None:
    call = "x = g(\n    1,\n    2,\n)\n"
    check = cite(make_files, "pkg/a.py", call, call.replace("    ", "        "), 2, 3)
    assert check.status is Status.PASS, check.message  # inside brackets: layout, not blocks
    text = "title\n  item one\n  item two\n"
    check = cite(make_files, "pkg/notes.txt", text, text.replace("  ", "      "), 2, 3)
    assert check.status is Status.PASS, check.message  # not Python: indentation is not blocks
    assert "whitespace differs" in check.message


def test_reindented_by_measures_the_first_statement() -> None:
    old = ["    # a comment", "    def f():", '        """doc', "  more", '        """']
    top = partial(_lex, [])  # the lexer's state at the top of a file
    assert reindented_by(old, ["        # a comment", *old[1:]], top) == 0  # comments do not count
    assert reindented_by(old, ["    " + ln for ln in old], top) == 4
    assert reindented_by(old, [ln[2:] if ln.startswith("  ") else ln for ln in old], top) == -2
    assert reindented_by(["\tx = 1"], ["        x = 1"], top) == 0  # a tab is 8 columns
    # A span that starts inside a string or brackets opened above it has no statement.
    assert reindented_by(["  a", "  b"], ["      a", "      b"], lambda: _lex(['s = """'])) == 0
    assert reindented_by(["  a,", "  b"], ["      a,", "      b"], lambda: _lex(["f("])) == 0
    assert reindented_by(["  a", "  b"], ["      a", "      b"], lambda: _lex(["f()"])) == 4


def test_pin_re_quotes_a_re_indented_span_and_the_result_passes(
    make_files: MakeFiles, tmp_path: Path
) -> None:
    """The drift's advice ("re-pin after review"): ``pin`` holds it unresolved until
    the reviewer accepts it (``--accept``), then carries it in place."""
    root = make_files({"pkg/__init__.py": "", "pkg/a.py": CODE})
    manifest = tmp_path / "m.yaml"
    manifest.write_text(text_manifest("pkg/a.py", CODE.splitlines(), 4, 5, "pkg"))
    (root / "pkg" / "a.py").write_text(CODE.replace("    y = 1\n    return y\n",
                                                    "    if x:\n        y = 1\n        return y\n"
                                                    ).replace("    if x:\n        return  g(x)\n",
                                                              "    if x: return  g(x)\n"))
    proc = run_cli("check", str(root), "-m", str(manifest))
    assert proc.returncode == 1 and "re-indented by +4 columns" in proc.stdout, proc.stdout
    out = tmp_path / "out.yaml"
    proc = run_cli("pin", str(root), "-m", str(manifest), "-o", str(out))
    assert proc.returncode == 1 and "--accept c" in proc.stdout and not out.exists(), proc.stdout
    proc = run_cli("pin", str(root), "-m", str(manifest), "-o", str(out), "--accept", "c")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    anchor = load_manifest(out).citations["c"].anchor
    assert anchor is not None and anchor.exact == ["        y = 1", "        return y"]
    assert run_cli("check", str(root), "-m", str(out)).returncode == 0


# --- D. tests decided whatever their unknown operands are; the folding's cost -------------

THREE_VALUED = [
    ("x and False", False), ("x in ()", False), ("not (x or True)", False),
    ("__debug__ and False", False), ("x not in []", True), ("x in {}", False), ("x or True", True),
    ("a < x in ()", False),  # a chain is false at any certainly false link
    ("x in () < a", False), ("1 if x else 2", True), ("0 if x else ''", False),
    ("x and 1 / 0 and False", False),  # x false, or 1 / 0 raises: the body never runs
    ("x is None and False", False), ("not (x and False)", True), ("(x or True) and 1 == 1", True),
]


@pytest.mark.parametrize(("text", "truth"), THREE_VALUED)
def test_a_test_decided_whatever_its_unknown_operands_are_is_folded(text: str,
                                                                     truth: bool) -> None:
    assert constant_truth(text) is truth
    for x in (object(), 0, 1, "", "a", [], None, float("nan")):  # Python agrees, whatever x is
        # The test may raise instead (1 / 0, hash([]), 0 < object()): no branch runs.
        with contextlib.suppress(ZeroDivisionError, TypeError):
            assert bool(eval(text, {"x": x, "a": 0})) is truth, x


HUGE_BUT_KNOWN = [
    ("not 1 << 10 ** 9", False), ("0 * 10 ** 10 ** 10", False), ("10 ** 10 ** 10 * 0", False),
    ("10 ** 10 ** 10", True), ("9 ** 9 ** 9", True), ("1 << 10 ** 9", True), ("1 << 10 ** 100", True),
    ("(2 ** 4000) * (2 ** 4000)", True), ("-(10 ** 4000) * -(10 ** 4000)", True),
    ("not -(10 ** 10 ** 10)", False), ("(10 ** 10 ** 10) ** 0", True), ("(3 ** 10 ** 10) << 5", True),
    ("False * 9 ** 9 ** 9 or x in ()", False),
]


@pytest.mark.parametrize(("text", "truth"), HUGE_BUT_KNOWN)
def test_a_huge_int_is_known_non_zero_without_computing_it(text: str, truth: bool) -> None:
    assert constant_truth(text) is truth
    # Its rule on values Python computes at once: a non-zero product, power or shift.
    assert bool(eval(text.replace("10 ** 10 ** 10", "10 ** 99").replace("9 ** 9 ** 9", "9 ** 99")
                     .replace("10 ** 9", "99").replace("10 ** 100", "99").replace("3 ** 10 ** 10", "3")
                     .replace("4000", "9"), {"x": object()})) is truth


STILL_UNKNOWN = [
    "x * 0", "0 * x",  # float("inf") * 0 is a (true) NaN; a class's __mul__ returns anything
    "x in ''",  # "" in "" is true
    "x and True", "not x", "1 if x else 0", "x in (1,)", "x < 1 < 2",
    "10 ** 10 ** 10 - 10 ** 10 ** 10", "1 >> 10 ** 10 ** 10", "0 ** 10 ** 10 ** 10",
    "0.0 * 10 ** 10 ** 10",  # OverflowError in Python: refused, not guessed
    "(1,) * 2000 == (1,) * 2000",  # 4,000 items of work for 25 characters: over its budget
]


@pytest.mark.parametrize("text", STILL_UNKNOWN)
def test_what_python_leaves_in_doubt_stays_unknown(text: str) -> None:
    assert constant_truth(text) is None


def test_a_long_chain_of_costly_links_is_still_decided_by_its_false_link() -> None:
    # The reviewer's hostile file: each link over its budget, the last one false.
    text = " and ".join(["(1,)*2000==(1,)*2000"] * 8 + ["7 == -1"])
    assert constant_truth(text) is False
    assert constant_truth(text.replace("7 == -1", "x")) is None


RUNNER_CALL = "self.rejection_sampler(x, self.draft_logits)"


@pytest.mark.parametrize("test", ["self.debug and False", "x in ()", "not (x or True)",
                                  "__debug__ and False", "not 1 << 10 ** 9", "0 * 10 ** 10 ** 10"])
def test_a_required_call_under_such_a_test_fails_through_the_cli(
    make_files: MakeFiles, tmp_path: Path, test: str
) -> None:
    root = make_files({"pkg/__init__.py": "", "pkg/mod.py": (
        "class Runner:\n    def sample(self, x):\n"
        f"        if {test}:\n            {RUNNER_CALL}\n        return None\n")})
    manifest = tmp_path / "m.yaml"
    manifest.write_text(json.dumps({"pp1audit": 1, "target": {"package": "pkg"}, "invariants": {
        "r": {"file": "pkg/mod.py", "in": "Runner.sample", "pattern": "self.rejection_sampler($$$A)",
              "where": {"A": {"has": "self.draft_logits"}}}}}))
    proc = run_cli("check", str(root), "-m", str(manifest), "--format", "json")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    check = json.loads(proc.stdout)["checks"][0]
    assert check["status"] == "fail"
    assert f"under `if {test}:` at line 3, never true" in check["message"]
    live = (tmp_path / "tree" / "pkg" / "mod.py")
    live.write_text(live.read_text().replace(test, "x * 0"))  # unknown: the call may run
    assert run_cli("check", str(root), "-m", str(manifest)).returncode == 0
