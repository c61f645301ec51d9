"""Rule-language slips a new manifest author made, each of which passed vacuously (or
failed for a wrong reason) instead of being refused or judged as written.

From a user test writing a manifest for click and requests: a lowercase metavariable
read as a plain name (``not: sys.exit($$$code)`` never matched, so it always held);
the relation ``has: name=value`` never matching a keyword argument, and ``has: verify``
matching the attribute ``self.verify`` (the ``where`` form did neither); an ``every``
with nothing required of its matches; key typos without the valid keys; an unpinned
version printed as ``None``. Small hand-made trees.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from pp1audit.audit import audit
from pp1audit.errors import ManifestError
from pp1audit.manifest import Manifest, parse
from pp1audit.report import render
from pp1audit.result import Check, Status
from pp1audit.rules import metavariable_problem
from pp1audit.sources import DirectorySource
from pp1audit.treediff import compare, render_text

MakeFiles = Callable[..., Path]

CODE = '''\
import sys


class Context:
    def invoke(self, callback, *args, **kwargs):
        return callback(*args, **kwargs)


class Session:
    def request(self, url, verify=None):
        settings = self.merge_environment_settings(url, verify)
        return self.send(url, timeout=resolved_timeout, **settings)

    def plain(self, url):
        return self.send(url, stream=(True), timeout=(t))
'''


def manifest_text(invariants: str) -> str:
    return "pp1audit: 1\ntarget: {package: pkg}\ninvariants:\n" + textwrap.indent(
        textwrap.dedent(invariants), "  ")


def one(make_files: MakeFiles, invariant: str, code: str = CODE) -> Check:
    root = make_files({"pkg/__init__.py": "", "pkg/mod.py": code})
    text = manifest_text("r:\n" + textwrap.indent(textwrap.dedent(invariant), "  "))
    m: Manifest = parse(text, "m.yaml")
    return next(c for c in audit(m, DirectorySource(root)).checks if c.id == "r")


def refused(invariant: str) -> str:
    with pytest.raises(ManifestError) as info:
        parse(manifest_text("r:\n" + textwrap.indent(textwrap.dedent(invariant), "  ")), "m.yaml")
    text = str(info.value)
    assert "\n" not in text
    return text


# --- 1. metavariables are UPPERCASE, as ast-grep reads them ----------------------------

EXITS = CODE.replace("return callback(*args, **kwargs)",
                     "sys.exit(callback(*args, **kwargs))")


def test_lowercase_metavariable_in_a_not_is_refused_not_a_vacuous_pass(
        make_files: MakeFiles) -> None:
    text = refused("""\
        file: pkg/mod.py
        in: Context.invoke
        pattern: callback($$$ARGS)
        not: sys.exit($$$code)
    """)
    assert text.startswith("m.yaml:8:10: invalid pattern `sys.exit($$$code)`: `$$$code` is "
                           "not a metavariable: metavariables are $ or $$$ and an UPPERCASE name"
                           ), text
    assert "(write `$$$CODE`)" in text and "(at invariants.r.not)" in text
    # written as ast-grep reads it, the same claim fails on the code that exits
    c = one(make_files, """\
        file: pkg/mod.py
        in: Context.invoke
        pattern: callback($$$ARGS)
        not: sys.exit($$$CODE)
    """, EXITS)
    assert c.status is Status.FAIL and "`sys.exit($$$CODE)` is present" in c.message, c.message


@pytest.mark.parametrize(("invariant", "where", "slip"), [
    ("file: pkg/mod.py\npattern: callback($$$args)\n", "6:14", "`$$$args`"),
    ("file: pkg/mod.py\npattern: callback($A)\nnot: sys.exit($code)\n", "7:10", "`$code`"),
    ("file: pkg/mod.py\npattern: callback($A)\nhas: {pattern: f($x)}\n", "7:20", "`$x`"),
    ("file: pkg/mod.py\npattern: callback($A)\nevery: {pattern: f($Ab), has: y}\n",
     "7:22", "`$Ab`"),
    ("file: pkg/mod.py\npattern: callback($A)\nwhere: {A: {has: f($$$rest)}}\n",
     "7:22", "`$$$rest`"),
    ("file: pkg/mod.py\npattern: callback($A)\nnot: {pattern: g($B), inside: h($c)}\n",
     "7:35", "`$c`"),
    ("file: pkg/mod.py\npattern: callback($1X)\n", "6:14", "`$1X`"),
    ("file: pkg/mod.py\npattern: callback($.x)\n", "6:14", "`$`"),
    ("file: pkg/mod.py\npattern: callback($$$$A)\n", "6:14", "`$$$$A`"),
])
def test_every_pattern_place_refuses_a_name_ast_grep_reads_as_code(
        invariant: str, where: str, slip: str) -> None:
    text = refused(invariant)
    assert text.startswith(f"m.yaml:{where}: invalid pattern "), text
    assert f"{slip} is not a metavariable: metavariables are" in text, text


@pytest.mark.parametrize("pattern", [
    "f($_)", "f($$$)", "f($A1, $$$_REST)", "f($$OP)", "f('$code')", "f(x)  # $code",
    "f($A_B, $_C)",
])
def test_valid_metavariables_and_dollars_in_text_are_accepted(pattern: str) -> None:
    assert metavariable_problem(pattern) is None


def test_ast_grep_reads_a_lowercase_name_as_code() -> None:
    """The rule refused is ast-grep's own: the same pattern, lowercase, matches nothing."""
    from ast_grep_py import SgRoot

    root = SgRoot("sys.exit(3)\n", "python").root()
    assert root.find(pattern="sys.exit($$$CODE)") is not None
    assert root.find(pattern="sys.exit($C1)") is not None
    assert root.find(pattern="sys.exit($$$code)") is None
    assert root.find(pattern="sys.exit($1C)") is None


@pytest.mark.parametrize(("invariant", "where"), [
    ("file: pkg/mod.py\npattern: callback($$$ARGS)\nwhere: {args: {has: x}}\n", "7:13"),
    ("file: pkg/mod.py\npattern: callback($$$ARGS)\n"
     "not: {pattern: g($$$A), where: {a: {has: x}}}\n", "7:37"),
])
def test_a_lowercase_where_key_says_metavariables_are_uppercase(invariant: str,
                                                                where: str) -> None:
    text = refused(invariant)
    assert text.startswith(f"m.yaml:{where}: "), text
    assert "not a metavariable name: metavariables are UPPERCASE" in text, text


# --- 2. and 4. the relation `has` reads code as the `where` form does ----------------

def test_not_has_keyword_argument_fails_on_that_keyword(make_files: MakeFiles) -> None:
    rule = """\
        file: pkg/mod.py
        in: Session.request
        pattern: self.send($$$ARGS)
        not: {pattern: self.send($$$A), has: verify=False}
    """
    assert one(make_files, rule).status is Status.PASS
    bad = CODE.replace("timeout=resolved_timeout,", "verify=False, timeout=resolved_timeout,")
    c = one(make_files, rule, bad)
    assert c.status is Status.FAIL and "`self.send($$$A)` is present at line 12" in c.message, \
        c.message


def test_every_has_keyword_argument_holds_on_the_keyword(make_files: MakeFiles) -> None:
    for value in ("$T", "resolved_timeout"):
        c = one(make_files, f"""\
            file: pkg/mod.py
            in: Session.request
            pattern: self.send($$$ARGS)
            every: {{pattern: $C.send($$$A), has: timeout={value}}}
        """)
        assert c.status is Status.PASS, (value, c.message)
    gone = CODE.replace("timeout=resolved_timeout, ", "")
    c = one(make_files, """\
        file: pkg/mod.py
        in: Session.request
        pattern: self.send($$$ARGS)
        every: {pattern: $C.send($$$A), has: timeout=$T}
    """, gone)
    assert c.status is Status.FAIL and "it has no `timeout=$T` within it" in c.message, c.message


def test_a_has_keyword_rule_binds_and_constrains_its_value(make_files: MakeFiles) -> None:
    rule = """\
        file: pkg/mod.py
        in: Session.plain
        pattern: self.send($$$ARGS)
        has: {{pattern: {kw}=$V, where: {{V: {{is: {value}}}}}}}
    """
    # parentheses around the value aside, as the where form reads it
    assert one(make_files, rule.format(kw="stream", value="'True'")).status is Status.PASS
    assert one(make_files, rule.format(kw="timeout", value="t")).status is Status.PASS
    c = one(make_files, rule.format(kw="stream", value="'False'"))
    assert c.status is Status.FAIL, c.message
    # the where form agrees
    where = """\
        file: pkg/mod.py
        in: Session.plain
        pattern: self.send($$$ARGS)
        where: {{ARGS: {{has: stream={value}}}}}
    """
    assert one(make_files, where.format(value="True")).status is Status.PASS
    assert one(make_files, where.format(value="False")).status is Status.FAIL


def test_contains_finds_the_captured_calls_keyword_argument(make_files: MakeFiles) -> None:
    rule = """\
        file: pkg/mod.py
        in: Session.request
        pattern: return $RESULT
        where: {{RESULT: {{contains: timeout={value}}}}}
    """
    assert one(make_files, rule.format(value="resolved_timeout")).status is Status.PASS
    assert one(make_files, rule.format(value="other")).status is Status.FAIL


def test_has_a_name_is_not_an_attribute_or_a_keyword_of_that_name(
        make_files: MakeFiles) -> None:
    relation = """\
        file: pkg/mod.py
        in: Session.request
        pattern: self.merge_environment_settings($$$ARGS)
        has: verify
    """
    where = """\
        file: pkg/mod.py
        in: Session.request
        pattern: self.merge_environment_settings($$$ARGS)
        where: {ARGS: {has: verify}}
    """
    assert one(make_files, relation).status is Status.PASS
    for changed in ("url, self.verify)", "url, verify=x)", "url, x.verify.y)"):
        code = CODE.replace("url, verify)", changed)
        r, w = one(make_files, relation, code), one(make_files, where, code)
        assert r.status is Status.FAIL and "it has no `verify` within it" in r.message, changed
        assert w.status is Status.FAIL, changed
    for kept in ("url, verify=verify)", "url, f(verify))", "url, verify.x)"):
        code = CODE.replace("url, verify)", kept)
        assert one(make_files, relation, code).status is Status.PASS, kept


# --- 3. every: a relation says what each match must satisfy ----------------------------

@pytest.mark.parametrize(("every", "words"), [
    ("every: {pattern: self.send($$$A), where: {A: {has: verify}}}",
     "'every' needs a relation (inside, has, guarded_by, follows, precedes, not), 'require' "
     "or 'unconditional' saying what each match must satisfy: its 'where' only selects which matches count"),
    ("every: self.send($$$A)",
     "'every' needs a relation (inside, has, guarded_by, follows, precedes, not), 'require' "
     "or 'unconditional' saying what each match must satisfy (at invariants.r.every)"),
])
def test_every_without_a_relation_is_refused(every: str, words: str) -> None:
    text = refused(f"file: pkg/mod.py\npattern: self.send($$$ARGS)\n{every}\n")
    assert text.startswith("m.yaml:7:5: "), text
    assert words in text, text


def test_every_whose_where_leaves_out_every_match_says_so(make_files: MakeFiles) -> None:
    c = one(make_files, """\
        file: pkg/mod.py
        in: Session.request
        pattern: self.send($$$ARGS)
        every:
          pattern: self.merge_environment_settings($$$A)
          where: {A: {has: verify}}
          has: url
    """, CODE.replace("url, verify)", "url, False)"))
    assert c.status is Status.FAIL
    assert c.message == (
        "every: `self.merge_environment_settings($$$A)` in Session.request: its one match is "
        "left out by its 'where' (the one at line 11: $$$A (url, False) does not satisfy: "
        "has `verify`), and an 'every' rule needs at least one match it selects"), c.message
    missing = one(make_files, """\
        file: pkg/mod.py
        in: Session.request
        pattern: self.send($$$ARGS)
        every: {pattern: self.gone($$$A), has: url}
    """)
    assert missing.message == ("every: `self.gone($$$A)` not found in Session.request "
                               "(an 'every' rule needs at least one match)")


def test_the_readme_every_example_still_loads() -> None:
    parse(manifest_text("""\
        r:
          file: pkg/mod.py
          in: DraftModelSpeculator.__init__
          pattern: self.draft_logits = None
          every:
            pattern: self.draft_logits = $VALUE
            where: {VALUE: {not: {is: None}}}
            guarded_by: $C.draft_sample_method == "probabilistic"
    """), "m.yaml")


# --- 5. a key typo lists the valid keys and the likely one ----------------------------

@pytest.mark.parametrize(("invariant", "words"), [
    ("file: pkg/mod.py\npattern: f($$$ARGS)\nwher: {ARGS: {has: x}}\n",
     "unknown key 'wher' (valid keys here: pattern, where, guarded_by, inside, has, follows, "
     "precedes, not, unconditional, file, source, in, every, decorators, claim, title; did you "
     "mean 'where'?)"),
    ("file: pkg/mod.py\npattern: f($$$ARGS)\nwhere: {ARGS: {hass: x}}\n",
     "unknown key 'hass' (valid keys here: has, contains, is, regex, any, all, not, argument, "
     "parameter; did you mean 'has'?)"),
    ("file: pkg/mod.py\npattern: f($$$ARGS)\nwhere: {ARGS: {any: [{hass: x}]}}\n",
     "unknown key 'hass' (a constraint has has, contains, is, regex, any, all, not, argument, "
     "parameter; did you mean 'has'?)"),
    ("file: pkg/mod.py\npattern: f($$$ARGS)\nnot: {pattern: g(), inisde: h()}\n",
     "unknown key 'inisde' (a rule has pattern, where, require, inside, has, guarded_by, follows, "
     "precedes, not, in_place, unconditional; did you mean 'inside'?)"),
    ("file: pkg/mod.py\npattern: f($$$ARGS)\nxyzzy: 1\n",
     "unknown key 'xyzzy' (valid keys here: pattern, where"),
])
def test_a_key_typo_lists_the_valid_keys(invariant: str, words: str) -> None:
    text = refused(invariant)
    assert words in text, text
    if "xyzzy" in words:
        assert "did you mean" not in text


# --- 5b. nested constraints and rules, which no schema sees, are typed too --------------

@pytest.mark.parametrize(("where", "words"), [
    ("{X: {any: [{regex: 5}]}}",
     "m.yaml:7:31: 5 is read as a number, not as text: quote it ('5') "
     "(at invariants.r.where.X.any[0].regex)"),
    ("{X: {not: {regex: true}}}",
     "m.yaml:7:30: true is read as a boolean, not as text: quote it ('true') "
     "(at invariants.r.where.X.not.regex)"),
    ("{X: {not: {not: {regex: 1.50}}}}",
     "1.50 is read as a number (1.5), not as text: quote it ('1.50') "
     "(at invariants.r.where.X.not.not.regex)"),
    ("{X: {any: [{regex: [a]}]}}", "a regex is text (RE2 syntax), not a list "
     "(at invariants.r.where.X.any[0].regex)"),
    ("{X: {not: {regex: {a: 1}}}}", "a regex is text (RE2 syntax), not a mapping"),
    ("{X: {not: {regex: null}}}", "a regex is text (RE2 syntax), not null"),
])
def test_a_nested_regex_that_is_not_text_is_refused_where_it_is(where: str, words: str) -> None:
    """Found by fuzzing: these reached RE2 (or a set) and ended in an internal error."""
    text = refused(f"file: pkg/mod.py\npattern: g($X)\nwhere: {where}\n")
    assert words in text, text


@pytest.mark.parametrize("relation", ["inside", "has", "follows", "precedes", "not", "every"])
@pytest.mark.parametrize(("value", "kind"), [("5", "a number"), ("[a]", "a list"),
                                             ("x", "text"), ("true", "a boolean")])
def test_a_nested_rules_where_that_is_not_a_mapping_is_refused(relation: str, value: str,
                                                                kind: str) -> None:
    text = refused(f"file: pkg/mod.py\npattern: g($X)\n{relation}: {{pattern: f($Y), "
                   f"where: {value}}}\n")
    assert text.endswith(f"'where' is a mapping of metavariable name -> constraint, not {kind} "
                         f"(at invariants.r.{relation}.where)"), text
    assert text.startswith("m.yaml:7:"), text


# --- 6. an unknown version is said in words -------------------------------------------

def test_report_and_diff_say_version_unknown_not_none(make_files: MakeFiles,
                                                       tmp_path: Path) -> None:
    old = make_files({"pkg/__init__.py": "", "pkg/mod.py": CODE}, tmp_path / "old")
    new = make_files({"pkg/__init__.py": "", "pkg/mod.py": "# moved\n" + CODE}, tmp_path / "new")
    text = ("pp1audit: 1\ntarget: {package: pkg}\ncitations:\n"
            "  c: {at: pkg/mod.py:4, anchor: {exact: 'class Context:'}}\n")
    m = parse(text, "m.yaml")
    report = render({"audit": {"title": "t"}}, audit(m, DirectorySource(old)))
    assert "Target: directory" in report and "— pkg (version unknown)." in report, report
    assert "None" not in report
    diff = render_text(compare(m, DirectorySource(old), DirectorySource(new)))
    assert diff.splitlines()[0].startswith(
        f"diff directory {old} (version unknown) → directory {new} (version unknown);"), diff
    assert "None" not in diff
