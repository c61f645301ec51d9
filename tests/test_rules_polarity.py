"""The keyword reading of ``name=value`` follows the rule's direction, and ``$`` is read
where ast-grep's grammar puts it.

From the review of 84cb3c2: reading ``name = value`` as a keyword argument anywhere in a
subtree made required patterns pass on tampered code (``contains: residual_logits =
target_logits`` held on ``residual_logits = g(residual_logits=target_logits)``; ``has:
verify=$V`` held on ``self.send(cb=g(verify=False))``), while ``not: verify=False`` still
missed the keyword. What a rule requires (``has``, ``contains``, ``where``, ``every``'s
relations) reads a keyword only in the matched call's own argument list; what it forbids
(``not``) reads assignments and keywords anywhere (fail closed). Also: names as Python
reads them (NFKC, not only ASCII), a module path is not a variable, and the
``$``-metavariable check does not depend on how this Python tokenizes f-strings.
"""

from __future__ import annotations

import textwrap
import tokenize
from collections.abc import Callable
from pathlib import Path

import pytest

from pp1audit.audit import audit
from pp1audit.errors import ManifestError
from pp1audit.manifest import parse
from pp1audit.result import Check, Status
from pp1audit.rules import metavariable_problem
from pp1audit.sources import DirectorySource

MakeFiles = Callable[..., Path]


def manifest_text(invariant: str) -> str:
    return ("pp1audit: 1\ntarget: {package: pkg}\ninvariants:\n  r:\n"
            + textwrap.indent(textwrap.dedent(invariant), "    "))


def one(make_files: MakeFiles, invariant: str, code: str) -> Check:
    root = make_files({"pkg/__init__.py": "", "pkg/mod.py": textwrap.dedent(code)})
    m = parse(manifest_text(invariant), "m.yaml")
    return next(c for c in audit(m, DirectorySource(root)).checks if c.id == "r")

# --- a required pattern is not widened by the keyword reading ------------------------------

RESAMPLE = """\
    def resample(is_bonus, target_logits, draft, HAS_DRAFT_LOGITS):
        if is_bonus:
            residual_logits = target_logits
        else:
            residual_logits = draft
        if HAS_DRAFT_LOGITS:
            ratio = tl.exp(draft - target_logits)
        return residual_logits
"""
"""The shape of PP1's ``resample-three-branches`` (its tampered twins: rs-mut, rs-mut2)."""

CONTAINS = """\
    file: pkg/mod.py
    in: resample
    pattern: "if is_bonus:\\n    $$$BONUS\\nelse:\\n    $$$OTHER"
    where: {BONUS: {contains: residual_logits = target_logits}}
"""

HAS = """\
    file: pkg/mod.py
    in: resample
    pattern: "if HAS_DRAFT_LOGITS:\\n    $$$BODY"
    has: ratio = tl.exp(draft - target_logits)
"""


def test_contains_an_assignment_is_not_satisfied_by_a_keyword_inside_one(
        make_files: MakeFiles) -> None:
    assert one(make_files, CONTAINS, RESAMPLE).status is Status.PASS
    tampered = RESAMPLE.replace(
        "residual_logits = target_logits",
        "residual_logits = tl.zeros_like(target_logits) + g(residual_logits=target_logits)")
    c = one(make_files, CONTAINS, tampered)
    assert c.status is Status.FAIL, c.message
    assert "does not satisfy: contains `residual_logits = target_logits`" in c.message


def test_has_an_assignment_is_not_satisfied_by_a_keyword_inside_one(
        make_files: MakeFiles) -> None:
    assert one(make_files, HAS, RESAMPLE).status is Status.PASS
    tampered = RESAMPLE.replace(
        "ratio = tl.exp(draft - target_logits)",
        "ratio = tl.minimum(ratio=tl.exp(draft - target_logits), other=0.5)")
    c = one(make_files, HAS, tampered)
    assert c.status is Status.FAIL, c.message
    assert "it has no `ratio = tl.exp(draft - target_logits)` within it" in c.message


SEND = """\
    class S:
        def request(self, prep, verify):
            out = self.send(prep, verify=verify)
            return out
"""

EVERY_HAS = """\
    file: pkg/mod.py
    in: S.request
    pattern: return out
    every: {pattern: self.send($$$A), has: verify=$V}
"""


def test_every_has_keyword_reads_the_calls_own_arguments_not_a_nested_call(
        make_files: MakeFiles) -> None:
    assert one(make_files, EVERY_HAS, SEND).status is Status.PASS
    nested = SEND.replace("verify=verify)", "cb=g(verify=False))")
    c = one(make_files, EVERY_HAS, nested)
    assert c.status is Status.FAIL, c.message
    assert ("it has no `verify=$V` within it (a keyword argument counts only in the call's own "
            "argument list)") in c.message, c.message
    # the where form on the call's arguments agrees
    where = """\
        file: pkg/mod.py
        in: S.request
        pattern: return out
        not: {pattern: self.send($$$A), where: {A: {not: {has: verify=$V}}}}
    """
    assert one(make_files, where, SEND).status is Status.PASS
    assert one(make_files, where, nested).status is Status.FAIL


def test_contains_keyword_reads_the_captured_calls_own_arguments(
        make_files: MakeFiles) -> None:
    rule = """\
        file: pkg/mod.py
        in: S.request
        pattern: out = $CALL
        where: {CALL: {contains: verify=verify}}
    """
    assert one(make_files, rule, SEND).status is Status.PASS
    nested = SEND.replace("verify=verify)", "cb=g(verify=verify))")
    assert one(make_files, rule, nested).status is Status.FAIL


# --- a forbidden pattern reads both, anywhere -------------------------------------------------

@pytest.mark.parametrize("forbid", [
    "verify=False",
    "{pattern: self.send($$$A), has: verify=False}",
])
def test_not_keyword_is_read_as_a_keyword_anywhere(make_files: MakeFiles, forbid: str) -> None:
    rule = f"""\
        file: pkg/mod.py
        in: S.request
        pattern: return out
        not: {forbid}
    """
    assert one(make_files, rule, SEND).status is Status.PASS
    for bad in ("verify=False)", "cb=g(verify=False))"):
        c = one(make_files, rule, SEND.replace("verify=verify)", bad))
        assert c.status is Status.FAIL and "at line 3 (must be absent)" in c.message, \
            (bad, c.message)


def test_not_keyword_still_forbids_the_assignment(make_files: MakeFiles) -> None:
    rule = "file: pkg/mod.py\nin: S.request\npattern: return out\nnot: verify=False\n"
    assigned = SEND.replace("out = self.send", "verify = False\n            out = self.send")
    c = one(make_files, rule, assigned)
    assert c.status is Status.FAIL and "is present at line 3" in c.message, c.message


# --- names as Python reads them ------------------------------------------------------------

UNI = """\
    def f(g):
        g(größe=1)
        return g
"""


@pytest.mark.parametrize(("invariant", "status"), [
    ("pattern: g($$$A)\nhas: größe=1\n", Status.PASS),
    ("pattern: g($$$A)\nwhere: {A: {has: größe=1}}\n", Status.PASS),
    ("pattern: g($$$A)\nhas: größe=2\n", Status.FAIL),
    ("pattern: return g\nnot: {pattern: g($$$A), has: größe=1}\n", Status.FAIL),
    ("pattern: return g\nnot: größe=1\n", Status.FAIL),
    # a name written in another NFKC spelling is the same name, as Python reads it
    ("pattern: g($$$A)\nhas: gröſ\u017fe=1\n", Status.FAIL),
    ("pattern: g($$$A)\nhas: ｇröße=1\n", Status.PASS),
])
def test_a_keyword_name_is_any_python_identifier(make_files: MakeFiles, invariant: str,
                                                 status: Status) -> None:
    c = one(make_files, "file: pkg/mod.py\nin: f\n" + invariant, UNI)
    assert c.status is status, c.message


@pytest.mark.parametrize("write", ['setattr(self, "größe", 1)', 'vars(self)["größe"] = 1'])
def test_not_a_non_ascii_attribute_sees_its_setattr(make_files: MakeFiles, write: str) -> None:
    """``not: self.größe = $V`` looked for ``setattr`` / namespace writes of ASCII names only."""
    code = f"class S:\n    def f(self):\n        {write}\n        return self\n"
    rule = "file: pkg/mod.py\nin: S.f\npattern: return self\nnot: self.größe = $V\n"
    c = one(make_files, rule, code)
    assert c.status is Status.FAIL and "is present at line 3" in c.message, c.message


# --- a module's path is not a variable ------------------------------------------------------

@pytest.mark.parametrize(("line", "named"), [
    ("from verify import x", False),
    ("from .verify import x", False),
    ("import a.verify", False),
    ("import verify as v", False),
    ("import verify.sub as v", False),
    ("from x import verify as v", False),
    ("match a:\n        case P(verify=1): pass", False),
    ("import verify", True),
    ("import verify.sub", True),
    ("from x import verify", True),
    ("import x as verify", True),
    ("match a:\n        case P(verify=verify): pass", True),
])
def test_a_bare_name_is_a_variable_not_a_module_path_or_keyword_pattern(
        make_files: MakeFiles, line: str, named: bool) -> None:
    rule = "file: pkg/mod.py\nin: f\npattern: return a\nnot: verify\n"
    c = one(make_files, rule, f"def f(a):\n    {line}\n    return a\n")
    assert c.status is (Status.FAIL if named else Status.PASS), (line, c.message)


# --- `$` in f-strings: ast-grep's grammar decides, not this Python's tokenizer -------------

@pytest.mark.parametrize(("pattern", "slip"), [
    ('log(f"cost {$N} $5")', None),
    ('log(f"{x:$5} {$N!r:>$3}")', None),
    ("log(f'$name {x}')", None),
    ('log(f"{$name}")', "`$name`"),
    ('log(f"cost {$N} {$n}")', "`$n`"),
    ('log(f"{x:>{$w}}")', "`$w`"),
    ("log(f'{f\"{$inner}\"}')", "`$inner`"),
    ('log("😀", $code)', "`$code`"),
    ("log(a$B)", "`a$B`"),
])
def test_dollar_in_an_f_string(pattern: str, slip: str | None) -> None:
    problem = metavariable_problem(pattern)
    if slip is None:
        assert problem is None, problem
    else:
        assert problem is not None and problem.startswith(f"{slip} is not a metavariable"), problem


def test_the_dollar_check_does_not_use_the_tokenizer(monkeypatch: pytest.MonkeyPatch) -> None:
    """3.12 tokenizes an f-string in parts, 3.11 as one STRING: a check built on tokenize
    refused a valid pattern on one and passed a slip on the other."""
    def broken(*_a: object, **_k: object) -> None:
        raise AssertionError("tokenize used")

    monkeypatch.setattr(tokenize, "generate_tokens", broken)
    assert metavariable_problem('log(f"cost {$N} $5")') is None
    assert metavariable_problem('log(f"{$name}")') is not None


def test_a_lowercase_metavariable_in_an_f_string_is_refused_at_load() -> None:
    with pytest.raises(ManifestError) as info:
        parse(manifest_text("""\
            file: pkg/mod.py
            in: greet
            pattern: return name
            not: log(f"cost {$name} $5")
        """), "m.yaml")
    assert "`$name` is not a metavariable" in str(info.value), info.value


def test_an_f_string_pattern_with_a_metavariable_matches(make_files: MakeFiles) -> None:
    code = 'def greet(name):\n    log(f"cost {name} $5")\n    return name\n'
    rule = "file: pkg/mod.py\nin: greet\npattern: return name\nnot: log(f\"cost {$N} $5\")\n"
    c = one(make_files, rule, code)
    assert c.status is Status.FAIL and "is present at line 2" in c.message, c.message
