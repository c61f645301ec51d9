"""What a rule requires counts only in code that runs; keyword edge cases; patterns read
as Python reads names.

From the review of 76ec50b: a required ``has`` / ``contains`` held on code in a ``def``
nested in the match that is never called (the real ``rejection_sampler.py`` with
``None`` passed and the correct call kept in a dead ``def _keep_for_reference()``);
``where: {A: {contains: verify=False}}`` on ``self.send($$$A)`` held on
``self.send(prep, dict(verify=False))``; ``not: verify=False`` missed
``**{"verify": False}``; patterns were not NFKC-normalised while files are, and a
literal ``µ`` (U+00B5), ast-grep's stand-in for ``$``, made a metavariable.
"""

from __future__ import annotations

import pytest
from test_rules_polarity import MakeFiles, manifest_text, one

from pp1audit.errors import ManifestError
from pp1audit.manifest import parse
from pp1audit.result import Status

# --- 1. nested code that runs only if called does not satisfy a requirement ----------------

VERIFY = """\
    class R:
        def _verify(self, logits, draft_logits):
            out = rejection_sample(logits, draft_logits)
            return out
"""
"""The shape of PP1's ``verify-passes-draft-logits``; its tampered twin is ``DEAD_CALL``."""

DEAD_CALL = """\
    class R:
        def _verify(self, logits, draft_logits):
            def _keep_for_reference():
                return rejection_sample(logits, draft_logits)
            out = rejection_sample(logits, None)
            return out
"""

VERIFY_WHERE = """\
    file: pkg/mod.py
    in: R
    pattern: "def _verify(self, $L, draft_logits): $$$BODY"
    where: {BODY: {contains: "rejection_sample($P, draft_logits)"}}
"""


def test_where_contains_ignores_a_nested_def_never_called(make_files: MakeFiles) -> None:
    assert one(make_files, VERIFY_WHERE, VERIFY).status is Status.PASS
    c = one(make_files, VERIFY_WHERE, DEAD_CALL)
    assert c.status is Status.FAIL, c.message
    assert "does not satisfy: contains `rejection_sample($P, draft_logits)`" in c.message


@pytest.mark.parametrize("nested", [
    "def inner():\n            residual = target",
    "class _C:\n            residual = target",
])
@pytest.mark.parametrize("form", [
    "has: residual = target",
    "where: {B: {contains: residual = target}}",
])
def test_required_relation_ignores_nested_def_and_class(make_files: MakeFiles, nested: str,
                                                        form: str) -> None:
    rule = f"file: pkg/mod.py\nin: f\npattern: 'if prep: $$$B'\n{form}\n"
    live = "def f(prep, target):\n    if prep:\n        residual = target\n    return prep\n"
    assert one(make_files, rule, live).status is Status.PASS
    dead = f"def f(prep, target):\n    if prep:\n        {nested}\n        g()\n    return prep\n"
    c = one(make_files, rule, dead)
    assert c.status is Status.FAIL, c.message


def test_has_ignores_a_call_in_a_nested_lambda(make_files: MakeFiles) -> None:
    rule = "file: pkg/mod.py\nin: f\npattern: 'if p: $$$B'\nhas: g($X)\n"
    assert one(make_files, rule, "def f(p):\n    if p:\n        g(1)\n").status is Status.PASS
    c = one(make_files, rule, "def f(p):\n    if p:\n        h = lambda: g(1)\n")
    assert c.status is Status.FAIL, c.message


def test_a_matched_def_still_holds_its_own_body(make_files: MakeFiles) -> None:
    rule = "file: pkg/mod.py\nin: R\npattern: 'def _verify(self, $$$A): $$$B'\nhas: g($X)\n"
    code = "class R:\n    def _verify(self, a):\n        g(1)\n"
    assert one(make_files, rule, code).status is Status.PASS


def test_not_still_sees_nested_code(make_files: MakeFiles) -> None:
    rule = "file: pkg/mod.py\nin: f\npattern: return p\nnot: g($X)\n"
    c = one(make_files, rule, "def f(p):\n    def inner():\n        g(1)\n    return p\n")
    assert c.status is Status.FAIL, c.message


# --- 2. a captured positional argument's nested keywords are not the call's -----------------

WC = """\
    file: pkg/mod.py
    in: S.send_it
    pattern: self.send($$$A)
    where: {A: {contains: verify=False}}
"""


def test_where_contains_keyword_not_from_a_call_passed_positionally(
        make_files: MakeFiles) -> None:
    code = "class S:\n    def send_it(self, prep):\n        self.send(prep, {})\n"
    assert one(make_files, WC, code.format("verify=False")).status is Status.PASS
    c = one(make_files, WC, code.format("dict(verify=False)"))
    assert c.status is Status.FAIL, c.message
    assert "a keyword argument counts only as a captured argument itself" in c.message


def test_a_single_capture_that_is_a_call_is_asked_about_its_own_arguments(
        make_files: MakeFiles) -> None:
    """Only a ``$$$`` capture is read as the matched call's arguments: a single ``$X``
    that is a call (``HTTPAdapter(max_retries=3)``) has its own keyword arguments
    (f086f63 refused them too: a false fail, its hint saying the opposite)."""
    rule = """\
        file: pkg/mod.py
        in: mount
        pattern: "s.mount($P, $ADAPTER)"
        where: {ADAPTER: {contains: max_retries=3}}
    """
    code = "def mount(s, prefix, HTTPAdapter):\n    s.mount(prefix, HTTPAdapter({}))\n"
    assert one(make_files, rule, code.format("max_retries=3")).status is Status.PASS
    assert one(make_files, rule, code.format("max_retries=0")).status is Status.FAIL
    multi = rule.replace("s.mount($P, $ADAPTER)", "s.mount($$$A)").replace("ADAPTER:", "A:")
    assert one(make_files, multi, code.format("max_retries=3")).status is Status.FAIL


# --- 3. a forbidden keyword passed by **{"name": value} ------------------------------------

@pytest.mark.parametrize("forbid", [
    "verify=False",
    "{pattern: self.send($$$A), has: verify=False}",
])
def test_not_keyword_reads_a_literal_dict_splat(make_files: MakeFiles, forbid: str) -> None:
    rule = f"file: pkg/mod.py\nin: S.send_it\npattern: return prep\nnot: {forbid}\n"
    code = "class S:\n    def send_it(self, prep):\n        self.send(prep, **{})\n        return prep\n"
    assert one(make_files, rule, code.format('{"other": False}')).status is Status.PASS
    for spelled in ('{"verify": False}', '{f"verify": False}', '{"ver" + "ify": False}',
                    '{"ver" "ify": False}'):  # a constant key however it is spelled
        c = one(make_files, rule, code.format(spelled))
        assert c.status is Status.FAIL, (spelled, c.message)


def test_not_keyword_splat_message(make_files: MakeFiles) -> None:
    rule = "file: pkg/mod.py\nin: f\npattern: return p\nnot: verify=False\n"
    c = one(make_files, rule, 'def f(p):\n    s(p, **{"verify": False})\n    return p\n')
    assert ('`verify=False` is present as the keyword `"verify": False` passed by `**{…}` to '
            "`s(…)` at line 2 (must be absent)") in c.message, c.message


# --- 4. patterns read names as Python does (NFKC); µ is not a metavariable ------------------

def test_micro_sign_in_a_pattern_is_a_name_not_a_metavariable(make_files: MakeFiles) -> None:
    code = "def f(x):\n    \u00b5 = x.mean()\n    \u00b5 = 0\n    q = 0\n    return \u00b5\n"
    follows = "file: pkg/mod.py\nin: f\npattern: return $R\nfollows: '\u00b5A = 0'\n"
    assert one(make_files, follows, code).status is Status.FAIL
    forbid = "file: pkg/mod.py\nin: f\npattern: return $R\nnot: '\u00b5=0'\n"
    c = one(make_files, forbid, code)
    assert c.status is Status.FAIL and "at line 3" in c.message, c.message


def test_pattern_identifiers_are_nfkc(make_files: MakeFiles) -> None:
    rule = "file: pkg/mod.py\nin: f\npattern: '\u017fcale = 3'\n"
    assert one(make_files, rule, "def f():\n    scale = 3\n").status is Status.PASS


@pytest.mark.parametrize("call", ['log(f"\u00b5X {a}")', 'log("\u00b5X" f"{a}")'])
def test_micro_sign_in_an_fstring_is_refused(call: str) -> None:
    with pytest.raises(ManifestError, match="read by ast-grep as `\\$`"):
        parse(manifest_text(f"file: pkg/mod.py\npattern: '{call}'\n"), "m.yaml")
    parse(manifest_text("file: pkg/mod.py\npattern: 'log(\"\u00b5X\")'\n"), "m.yaml")


# --- 5. a forbidden keyword is reported as one ----------------------------------------------

def test_not_keyword_reported_as_a_keyword_argument(make_files: MakeFiles) -> None:
    rule = "file: pkg/mod.py\nin: f\npattern: return p\nnot: draft_logits = $REBOUND\n"
    c = one(make_files, rule, "def f(p, d):\n    Out(p, draft_logits=d)\n    return p\n")
    assert ("`draft_logits = $REBOUND` is present as the keyword argument `draft_logits=…` of "
            "`Out(…)` at line 2 (must be absent)") in c.message, c.message
    c = one(make_files, rule, "def f(p, d):\n    class K(B, draft_logits=d): pass\n    return p\n")
    assert "keyword argument `draft_logits=…` of `class K(…)` at line 2" in c.message, c.message


# --- 6. parentheses around a captured call; hints ------------------------------------------

def test_parenthesised_captured_call_keeps_its_keywords(make_files: MakeFiles) -> None:
    rule = "file: pkg/mod.py\nin: f\npattern: $X = $C\nwhere: {C: {contains: verify=False}}\n"
    c = one(make_files, rule, "def f(p):\n    x = (send(p, verify=False))\n")
    assert c.status is Status.PASS, c.message


def test_has_keyword_hint_for_a_match_that_is_not_a_call(make_files: MakeFiles) -> None:
    rule = "file: pkg/mod.py\nin: f\npattern: 'if p: $$$B'\nhas: verify=False\n"
    c = one(make_files, rule, "def f(p):\n    if p:\n        send(p, verify=False)\n")
    assert c.status is Status.FAIL
    assert "this match is not a call" in c.message, c.message
    assert "(a keyword argument counts only in the call's own argument list)" not in c.message


# --- 7. ast-grep's refusal shows the pattern as written ------------------------------------

def test_ast_grep_refusal_shows_dollar_not_its_stand_in() -> None:
    with pytest.raises(ManifestError) as info:
        parse(manifest_text("file: pkg/mod.py\npattern: 'x = $X; y = 1'\n"), "m.yaml")
    assert "x = $X; y = 1" in str(info.value) and "\u00b5" not in str(info.value)


# --- 5. a pattern is parsed once for its checks ---------------------------------------------

@pytest.mark.parametrize("pattern", [
    'f($A, "\u00b5 $1", $$$REST)',  # a `$` and a `µ` in a plain string: both checks read it
    "g($X)",
])
def test_a_pattern_is_parsed_once_for_its_checks(monkeypatch: pytest.MonkeyPatch,
                                                 pattern: str) -> None:
    """``_dollar_places`` and ``_expando_problem`` share one tree (each parsed it before);
    ast-grep's own compile of the pattern (``_agrep_problem``) is the only other parse."""
    import ast_grep_py

    from pp1audit import rules

    if hasattr(rules, "_pattern_tree"):
        rules._pattern_tree.cache_clear()  # an earlier test may have parsed the same text
    real = ast_grep_py.SgRoot
    parsed: list[str] = []

    def counting(text: str, lang: str) -> object:
        if text:
            parsed.append(text)
        return real(text, lang)

    monkeypatch.setattr(ast_grep_py, "SgRoot", counting)
    got = rules.parse_pattern(pattern, ("p",))
    assert got.text == pattern
    assert len(parsed) == 1, parsed
