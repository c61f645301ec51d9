"""The rule language on small hand-made trees: relations, constraints and every error path.

A bad rule is a manifest error (exit 2, ``file:line:column``); a rule naming a
function missing from the file is a ``fail`` check; a file that is not Python
is an ``error`` check. Never a traceback.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import run_cli

from pp1audit.audit import audit
from pp1audit.errors import ManifestError
from pp1audit.manifest import Manifest, parse
from pp1audit.result import Check, Status
from pp1audit.sources import DirectorySource

MakeFiles = Callable[..., Path]

CODE = '''\
class Runner:
    def sample(self, logits, batch, grammar):
        if grammar is not None and logits.shape[0] > 0:
            self.worker.apply_grammar_bitmask(logits, grammar)
        if batch.n == 0:
            out = None
        else:
            out = self.rejection_sampler(
                logits,
                batch,
                # comment between arguments
                self.speculator.draft_logits,
            )
        return out

    def other(self):
        return self.rejection_sampler(None)


class Speculator:
    def __init__(self, cfg):
        self.draft_logits: object | None = None
        if cfg.mode == "probabilistic" and cfg.ok:
            self.draft_logits = make()
        else:
            self.other = 1

    draft_sample_method: str = "greedy"
'''


def manifest_text(invariants: str, citations: str = "") -> str:
    text = "pp1audit: 1\ntarget: {package: pkg}\ninvariants:\n" + textwrap.indent(
        textwrap.dedent(invariants), "  ")
    if citations:
        text += "citations:\n" + textwrap.indent(textwrap.dedent(citations), "  ")
    return text


def run(make_files: MakeFiles, invariants: str, code: str = CODE,
        citations: str = "") -> dict[str, Check]:
    root = make_files({"pkg/__init__.py": "", "pkg/mod.py": code})
    m: Manifest = parse(manifest_text(invariants, citations), "m.yaml")
    result = audit(m, DirectorySource(root))
    return {f"{c.kind}:{c.id}": c for c in result.checks}


def one(make_files: MakeFiles, invariant: str, code: str = CODE) -> Check:
    checks = run(make_files, "r:\n" + textwrap.indent(textwrap.dedent(invariant), "  "), code)
    return checks["invariant:r"]


# --- relations and constraints ------------------------------------------------------


def test_has_among_arguments_ignores_comments_and_commas(make_files: MakeFiles) -> None:
    c = one(make_files, """\
        file: pkg/mod.py
        in: Runner.sample
        pattern: self.rejection_sampler($$$ARGS)
        where: {ARGS: {has: self.speculator.draft_logits}}
    """)
    assert c.status is Status.PASS and c.found_lines == (8, 13), c.message


def test_in_scopes_the_search(make_files: MakeFiles) -> None:
    # Runner.other calls the sampler with None only: scoped there, the rule fails.
    c = one(make_files, """\
        file: pkg/mod.py
        in: Runner.other
        pattern: self.rejection_sampler($$$ARGS)
        where: {ARGS: {has: self.speculator.draft_logits}}
    """)
    assert c.status is Status.FAIL
    assert "$$$ARGS (None) does not satisfy: has `self.speculator.draft_logits`" in c.message


def test_follows_and_precedes_in_source_order(make_files: MakeFiles) -> None:
    ok = one(make_files, """\
        file: pkg/mod.py
        in: Runner.sample
        pattern: self.rejection_sampler($$$ARGS)
        follows: $W.apply_grammar_bitmask($$$)
        precedes: return $OUT
    """)
    assert ok.status is Status.PASS and "after `$W.apply_grammar_bitmask($$$)` at line 4" in ok.message
    bad = one(make_files, """\
        file: pkg/mod.py
        in: Runner.sample
        pattern: $W.apply_grammar_bitmask($$$)
        follows: self.rejection_sampler($$$ARGS)
    """)
    assert bad.status is Status.FAIL
    assert "`self.rejection_sampler($$$ARGS)` does not precede it" in bad.message


def test_bound_metavariables_carry_into_relations(make_files: MakeFiles) -> None:
    code = "def f(x):\n    y = prep(x)\n    z = 3\n    return use(z)\n"
    c = one(make_files, """\
        file: pkg/mod.py
        in: f
        pattern: use($V)
        follows: $V = prep($$$)
    """, code)
    assert c.status is Status.FAIL
    assert "`z = prep($$$)` does not precede it" in c.message


def test_not_and_inside_and_has(make_files: MakeFiles) -> None:
    absent = one(make_files, """\
        file: pkg/mod.py
        in: Runner.sample
        pattern: self.rejection_sampler($$$)
        not: print($$$)
    """)
    assert absent.status is Status.PASS
    present = one(make_files, """\
        file: pkg/mod.py
        in: Runner.sample
        pattern: self.rejection_sampler($$$)
        not: "out = None"
    """)
    assert present.status is Status.FAIL and "`out = None` is present at line 6" in present.message
    inside = one(make_files, """\
        file: pkg/mod.py
        pattern: $W.apply_grammar_bitmask($$$)
        inside: {pattern: "def sample($$$P): $$$B"}
    """)
    assert inside.status is Status.PASS and inside.found_lines == (4, 4)
    outside = one(make_files, """\
        file: pkg/mod.py
        pattern: $W.apply_grammar_bitmask($$$)
        inside: {pattern: "def other($$$P): $$$B"}
    """)
    assert outside.status is Status.FAIL and "is not inside `def other" in outside.message
    has = one(make_files, """\
        file: pkg/mod.py
        in: Runner.sample
        pattern: "out = $X"
        has: self.speculator.draft_logits
    """)
    assert has.status is Status.PASS and has.found_lines == (8, 13)


def test_guarded_by_reads_the_if_test_and_its_and_terms(make_files: MakeFiles) -> None:
    good = one(make_files, """\
        file: pkg/mod.py
        in: Speculator.__init__
        pattern: "self.draft_logits: $T = None"
        every:
          pattern: self.draft_logits = $V
          where: {V: {not: {is: None}}}
          guarded_by: $C.mode == "probabilistic"
    """)
    assert good.status is Status.PASS, good.message
    # The else branch of the same if is not guarded by its test.
    code = CODE.replace("self.other = 1", "self.draft_logits = make()")
    bad = one(make_files, """\
        file: pkg/mod.py
        in: Speculator.__init__
        pattern: "self.draft_logits: $T = None"
        every:
          pattern: self.draft_logits = $V
          where: {V: {not: {is: None}}}
          guarded_by: $C.mode == "probabilistic"
    """, code)
    assert bad.status is Status.FAIL
    assert "every: `self.draft_logits = $V` at line 26: it is not inside an `if" in bad.message


def test_every_needs_at_least_one_match(make_files: MakeFiles) -> None:
    c = one(make_files, """\
        file: pkg/mod.py
        in: Speculator.__init__
        pattern: "self.draft_logits: $T = None"
        every: {pattern: self.nothing = $V, guarded_by: x}
    """)
    assert c.status is Status.FAIL and "needs at least one match" in c.message


def test_is_and_regex_and_not_constraints(make_files: MakeFiles) -> None:
    base = 'file: pkg/mod.py\nin: Speculator\npattern: "draft_sample_method: $T = $D"\n'
    assert one(make_files, base + "where: {D: {is: '\"greedy\"'}}\n").status is Status.PASS
    assert one(make_files, base + "where: {D: {regex: gree}}\n").status is Status.PASS
    not_ = one(make_files, base + "where: {D: {not: {is: '\"greedy\"'}}}\n")
    assert not_.status is Status.FAIL and 'not (is `"greedy"`)' in not_.message


def test_several_matches_are_all_reported_first_shown(make_files: MakeFiles) -> None:
    c = one(make_files, """\
        file: pkg/mod.py
        pattern: self.rejection_sampler($$$)
    """)
    assert c.status is Status.PASS and c.found_lines == (8, 13)
    assert "2 matches; the first shown" in c.message


# --- missing things are fail checks, unusable files error checks -------------------


def test_missing_function_is_a_fail_with_the_missing_part(make_files: MakeFiles) -> None:
    c = one(make_files, """\
        file: pkg/mod.py
        in: Runner.sampel
        pattern: self.rejection_sampler($$$)
    """)
    assert c.status is Status.FAIL
    assert c.message == ("Runner.sampel is not defined in pkg/mod.py: "
                         "no class or function 'sampel' in Runner")
    missing_class = one(make_files, """\
        file: pkg/mod.py
        in: GPURunner.sample
        pattern: x
    """)
    assert "no class or function 'GPURunner' in the module" in missing_class.message


def test_pattern_not_found(make_files: MakeFiles) -> None:
    c = one(make_files, """\
        file: pkg/mod.py
        in: Runner.sample
        pattern: self.sampler($$$)
    """)
    assert c.status is Status.FAIL
    assert c.message == "`self.sampler($$$)` not found in Runner.sample"


@pytest.mark.parametrize(("code", "words"), [
    ("def f(:\n    pass\n", "is not valid Python (invalid syntax at line 1"),
    ("def f():\n  x = 1\n    y = 2\n", "is not valid Python (unexpected indent at line 3"),
    (b"x = '\xff'\n", "is not UTF-8 text"),
    # Nesting that exhausts the compiler (MemoryError / RecursionError), not a syntax error:
    pytest.param("def f():\n    x = " + "-" * 20000 + "1\n", "could not be parsed as Python (",
                 id="nested-too-deep-memory"),
    pytest.param("x = " + "not " * 3000 + "1\n", "could not be parsed as Python (",
                 id="nested-too-deep-recursion"),
])
def test_unparsable_file_is_an_error_check(
    make_files: MakeFiles, code: str | bytes, words: str
) -> None:
    root = make_files({"pkg/__init__.py": "", "pkg/mod.py": code, "pkg/ok.py": "x = 1\n"})
    m = parse(manifest_text("""\
        bad: {file: pkg/mod.py, pattern: x}
        good: {file: pkg/ok.py, pattern: x = 1}
    """), "m.yaml")
    checks = {c.id: c for c in audit(m, DirectorySource(root)).checks}
    assert checks["bad"].status is Status.ERROR and words in checks["bad"].message
    assert checks["bad"].message.startswith("pkg/mod.py ")
    assert checks["good"].status is Status.PASS  # the run goes on


def test_missing_file_is_a_fail(make_files: MakeFiles) -> None:
    c = one(make_files, "file: pkg/gone.py\npattern: x\n")
    assert c.status is Status.FAIL and c.message == "pkg/gone.py missing from the target"


# --- invalid rules: manifest errors with line:column ---------------------------------

INVALID = [
    ("r: {file: pkg/mod.py, pattern: 'self.rejection_sampler('}",
     "4:34", "invalid pattern `self.rejection_sampler(`: not Python code"),
    ("r: {file: pkg/mod.py, pattern: 'a; b'}", "4:34", "Multiple AST nodes are detected"),
    ("r:\n  file: pkg/mod.py\n  pattern: x\n  precede: y\n", "7:5", "unknown key 'precede'"),
    ("r:\n  file: pkg/mod.py\n  pattern: x\n  follows: {pattern: y, before: z}\n", "7:27",
     "unknown key 'before' (a rule has pattern, where, require, inside"),
    ("r:\n  file: pkg/mod.py\n  pattern: f($$$ARGS)\n  where: {ARG: {has: x}}\n", "7:18",
     "'ARG' is not a metavariable of the pattern `f($$$ARGS)` (it captures $$$ARGS)"),
    ("r:\n  file: pkg/mod.py\n  pattern: f($$$ARGS)\n  where: {ARGS: {is: x}}\n", "7:24",
     "'is' needs a single-node metavariable"),
    ("r:\n  file: pkg/mod.py\n  pattern: f($A)\n  where: {A: {regex: '('}}\n", "7:24",
     "invalid regular expression"),
    ("r:\n  file: pkg/mod.py\n  in: GPUModelRunner.sample()\n  pattern: x\n", "6:9",
     "'GPUModelRunner.sample()' is not a dotted name of classes/functions"),
    ("r:\n  file: pkg/mod.py\n  in: 'Runner::sample'\n  pattern: x\n", "6:9",
     "is not a dotted name"),
    ("r:\n  file: pkg/mod.py\n  pattern: x\n  follows: {where: {}}\n", "7:14",
     "a rule is a pattern, or a mapping with a 'pattern'"),
    ("r:\n  file: pkg/mod.py\n  pattern: x\n  every: {pattern: 'if $C: $$$B', inside: 'def ('}\n",
     "7:45", "invalid pattern `def (`"),
    ("r: {file: pkg/mod.txt, pattern: x}", "4:13", "name a .py file"),
    ("r: {file: ../mod.py, pattern: x}", "4:13", "paths must stay inside the target root"),
    ("r: {file: pkg/mod.py}", "4:6", "missing required key 'pattern'"),
    ("r: {file: pkg/mod.py, pattern: 'x = " + "-" * 20000 + "1'}", "4:34",
     "too deeply nested to parse"),
]


@pytest.mark.parametrize(("invariant", "where", "words"), INVALID)
def test_invalid_rule_is_a_manifest_error_with_position(
    invariant: str, where: str, words: str
) -> None:
    with pytest.raises(ManifestError) as info:
        parse(manifest_text(invariant), "m.yaml")
    text = str(info.value)
    assert text.startswith(f"m.yaml:{where}: "), text
    assert words in text


def test_invalid_rule_on_the_cli_is_exit_2_one_line(tmp_path: Path, make_files: MakeFiles) -> None:
    root = make_files({"pkg/__init__.py": "", "pkg/mod.py": CODE})
    man = tmp_path / "m.yaml"
    man.write_text(manifest_text("r: {file: pkg/mod.py, pattern: 'self.rejection_sampler('}"))
    proc = run_cli("check", str(root), "-m", str(man))
    assert proc.returncode == 2
    assert proc.stdout == "" and "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and f"{man}:4:34: invalid pattern" in lines[0]


def test_file_errors_on_the_cli_are_checks_not_crashes(tmp_path: Path, make_files: MakeFiles) -> None:
    root = make_files({"pkg/__init__.py": "", "pkg/mod.py": "def f(:\n"})
    man = tmp_path / "m.yaml"
    man.write_text(manifest_text("""\
        syntax: {file: pkg/mod.py, pattern: x}
        missing-function: {file: pkg/__init__.py, in: f, pattern: x}
    """))
    proc = run_cli("check", str(root), "-m", str(man), "--format", "json")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    checks = {c["id"]: c for c in json.loads(proc.stdout)["checks"]}
    assert checks["syntax"]["status"] == "error"
    assert checks["missing-function"]["status"] == "fail"
    assert "f is not defined in pkg/__init__.py" in checks["missing-function"]["message"]


# --- citations anchored on an invariant -------------------------------------------


def test_anchor_invariant_must_exist_be_on_the_file_and_stand_alone() -> None:
    inv = "r: {file: pkg/mod.py, pattern: x}\n"
    for cite, words in [
        ("c: {at: 'pkg/mod.py:1', anchor: {invariant: nope}}\n", "no invariant 'nope'"),
        ("c: {at: 'pkg/other.py:1', anchor: {invariant: r}}\n", "not on the cited file"),
        ("c: {at: 'pkg/mod.py:1', anchor: {invariant: r, exact: x}}\n",
         "an invariant anchor stands alone: remove 'exact'"),
    ]:
        with pytest.raises(ManifestError) as info:
            parse(manifest_text(inv, cite), "m.yaml")
        assert words in str(info.value)
        assert str(info.value).startswith("m.yaml:6:")


def test_anchor_picks_the_match_nearest_the_pinned_lines(make_files: MakeFiles) -> None:
    inv = "r: {file: pkg/mod.py, pattern: self.rejection_sampler($$$)}\n"
    near_second = run(make_files, inv, citations="c: {at: 'pkg/mod.py:16', anchor: {invariant: r}}\n")
    c = near_second["citation:c"]
    assert c.status is Status.DRIFT and c.found_lines == (17, 17)
    assert "moved to 17-17 (1 line later)" in c.message and "2 places match" in c.message
    exact = run(make_files, inv, citations="c: {at: 'pkg/mod.py:8-13', anchor: {invariant: r}}\n")
    assert exact["citation:c"].status is Status.PASS
    assert exact["citation:c"].found_lines == (8, 13)


def test_guarded_by_an_elif_but_not_by_the_if_before_it(make_files: MakeFiles) -> None:
    code = ("class S:\n    def __init__(self, cfg):\n        self.x: int | None = None\n"
            "        if cfg.a:\n            pass\n"
            "        elif cfg.mode == \"probabilistic\":\n            self.x = 1\n")
    rule = """\
        file: pkg/mod.py
        in: S.__init__
        pattern: "self.x: $T = None"
        every: {{pattern: self.x = $V, where: {{V: {{not: {{is: None}}}}}}, guarded_by: {guard}}}
    """
    ok = one(make_files, rule.format(guard="'$C.mode == \"probabilistic\"'"), code)
    assert ok.status is Status.PASS, ok.message
    bad = one(make_files, rule.format(guard="$C.a"), code)
    assert bad.status is Status.FAIL and "line 7: it is not inside an `if $C.a:` block" in bad.message


def test_manifest_without_invariants_does_not_load_ast_grep(
    tmp_path: Path, make_files: MakeFiles
) -> None:
    root = make_files({"pkg/__init__.py": "", "pkg/mod.py": CODE})
    man = tmp_path / "m.yaml"
    man.write_text("pp1audit: 1\ntarget: {package: pkg}\nfiles: {}\n")
    code = (
        "import sys\nfrom pathlib import Path\nfrom pp1audit.manifest import load_manifest\n"
        "from pp1audit.audit import audit\nfrom pp1audit.sources import DirectorySource\n"
        f"audit(load_manifest(Path({str(man)!r})), DirectorySource(Path({str(root)!r})))\n"
        "print(sorted(m for m in sys.modules if m.startswith(('ast_grep', 'pp1audit.matcher', "
        "'pp1audit.rules'))))\n"
    )
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "[]"
