"""``regex:`` constraints run on RE2: linear in the target's text, so a hostile capture
cannot hang a run, and what only a backtracking engine can do is refused at load.

A regex reads text from the audited tree. With Python's ``re``, ``(a+)+$`` on a
string of ``a`` that does not end the text backtracks through every way of
splitting the run: 2**n steps, never finishing for a few dozen ``a``. RE2 has no
backtracking, so it cannot express lookaround or backreferences: those are
``file:line:column`` errors saying why, never a silent other meaning.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import run_cli

from pp1audit.audit import audit
from pp1audit.errors import ManifestError
from pp1audit.manifest import parse
from pp1audit.result import Check, Status
from pp1audit.rules import regex_matches, regex_problem
from pp1audit.sources import DirectorySource

MakeFiles = Callable[..., Path]


def manifest(regex: str, pattern: str = "x = $V") -> str:
    return textwrap.dedent(f"""\
        pp1audit: 1
        target: {{package: pkg}}
        invariants:
          r:
            file: pkg/mod.py
            pattern: "{pattern}"
            where: {{V: {{regex: '{regex}'}}}}
        """)


def judge(make_files: MakeFiles, code: str, regex: str) -> Check:
    root = make_files({"pkg/__init__.py": "", "pkg/mod.py": code})
    result = audit(parse(manifest(regex), "m.yaml"), DirectorySource(root))
    (check,) = [c for c in result.checks if c.id == "r"]
    return check


def test_a_backtracking_regex_on_hostile_text_finishes(make_files: MakeFiles) -> None:
    # Python's re takes 2**n steps here (n = 5,000: it would never finish); RE2 one pass.
    code = 'x = "' + "a" * 5000 + '!"\n'
    check = judge(make_files, code, "(a+)+$")
    assert check.status is Status.FAIL, check.message
    assert "does not satisfy: matches /(a+)+$/" in check.message
    assert judge(make_files, code, "(a+)+!").status is Status.PASS


@pytest.mark.parametrize(("regex", "words"), [
    ("x(?!y)", "lookahead `(?!` is not supported"),
    ("(?=x)", "lookahead `(?=` is not supported"),
    ("(?<![a-z])bias", "lookbehind `(?<!` is not supported"),
    ("(?<=a)b", "lookbehind `(?<=` is not supported"),
    (r"(a)\1", "backreference `\\1` is not supported"),
    ("(?P<n>a)(?P=n)", "a named group reference `(?P=…)` is not supported"),
    ("(?>a)", "an atomic group `(?>…)` is not supported"),
    ("a++", "a possessive quantifier `++` is not supported"),
    ("(?x) a b", "the flag `(?x` (RE2 has i, m, s and U) is not supported"),
    (r"a\Z", "`\\Z` (RE2 writes `\\z`) is not supported"),
    ("a{,3}", "`{,3}` is literal text in RE2 (write `{0,3}`"),
    ("(", "missing ): ( (RE2 syntax)"),
])
def test_what_re2_cannot_do_is_a_located_error(regex: str, words: str) -> None:
    with pytest.raises(ManifestError) as info:
        parse(manifest(regex), "m.yaml")
    text = str(info.value)
    assert text.startswith("m.yaml:7:24: invalid regular expression: "), text
    assert words in text
    if "not supported" in words:
        assert "RE2 syntax, which runs in linear time" in text
    assert "\n" not in text


def test_a_refused_regex_on_the_cli_is_one_line_exit_2(tmp_path: Path, make_files: MakeFiles) -> None:
    # RE2 logs its parse errors to stderr unless told not to: the message must stay one line.
    root = make_files({"pkg/__init__.py": "", "pkg/mod.py": "x = 1\n"})
    man = tmp_path / "m.yaml"
    man.write_text(manifest("x(?!y)"))
    proc = run_cli("check", str(root), "-m", str(man))
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and f"{man}:7:24: invalid regular expression: lookahead" in lines[0]


def test_brace_forms_that_mean_the_same_in_both_engines_load() -> None:
    for regex in ("a{0,3}", "a{2}", "a{2,}", r"\{,3}", "[{,3}]", r"\Q{,3}\E", "[]{,3}]"):
        assert regex_problem(regex) is None, regex


def test_semantics_search_flags_and_unicode() -> None:
    assert regex_matches("gree", '"greedy"')                 # a search, not a full match
    assert not regex_matches("^gree$", '"greedy"')
    assert regex_matches("(?i)GREEDY", '"greedy"')           # inline flags
    assert regex_matches("(?i)ÉTÉ", "été")                   # Unicode case folding
    assert regex_matches("^.$", "é")                         # '.' is one character
    assert regex_matches(r"^\pL+$", "ſample")                # Unicode classes by name
    assert not regex_matches(r"^\w+$", "é")                  # \w, \d, \s, \b are ASCII
    assert not regex_matches("a$", "a\n")                    # $: the end of the text only
    assert regex_matches("a", "\udcffa")                     # a lone surrogate is no crash
