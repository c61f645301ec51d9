"""Identifiers are read as Python reads them: NFKC-normalised (PEP 3131).

Python turns ``ſample`` (long s), ``ｓａｍｐｌｅ`` (fullwidth) and ``ﬁ`` (a ligature)
into plain ASCII names while parsing; the matcher compared spellings. A second
``def ſample(…)`` passing ``None`` replaced the audited method unseen, and a
``not:`` rule missed a call spelled another way. Each case is proved to be the
same name to Python, then judged.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from test_invariants_rules import MakeFiles, one
from test_invariants_semantics import PASSES, RUNNER, Edit, FileEdit, judge, second_sample
from test_invariants_semantics import pp1 as pp1  # a fixture

from pp1audit.identnorm import IdentifierError, nfkc_identifiers
from pp1audit.manifest import Manifest
from pp1audit.result import Status


def as_python(name: str) -> str:
    """The name Python binds for ``name`` (it compiles the code, never guesses)."""
    scope: dict[str, object] = {}
    exec(f"{name} = 1", scope)
    return next(k for k in scope if k != "__builtins__")


@pytest.mark.parametrize(("spelled", "name"), [("ſample", "sample"), ("ｓａｍｐｌｅ", "sample"),
                                              ("ﬁle", "file")])
def test_the_spellings_are_one_name_to_python(spelled: str, name: str) -> None:
    assert as_python(spelled) == name
    assert nfkc_identifiers(f"{spelled} = 1\n") == f"{name} = 1\n"


def long_s_second_sample(text: str) -> str:
    """The known "second def sample" edit, with the second definition spelled ``ſample``."""
    doubled = second_sample(text)
    cut = doubled.index("    def sample(", doubled.index("    def sample(") + 1)
    return doubled[:cut] + "    def ſample(" + doubled[cut + len("    def sample("):]


@pytest.mark.parametrize("mutate", [long_s_second_sample], ids=["second-def-spelled-long-s"])
def test_a_method_replaced_through_another_spelling_fails(
    pp1: Manifest, tree_copy: Path, edit: FileEdit, mutate: Edit,
) -> None:
    edit(tree_copy / RUNNER, mutate)
    source = (tree_copy / RUNNER).read_text(encoding="utf-8")
    # Python keeps the second definition, which passes None to the sampler.
    tree = compile(source, RUNNER, "exec", flags=0x400)  # ast.PyCF_ONLY_AST
    runner = next(n for n in tree.body if getattr(n, "name", "") == "GPUModelRunner")  # type: ignore[attr-defined]
    names = [f.name for f in runner.body if type(f).__name__ == "FunctionDef"]
    assert names.count("sample") == 2
    check = judge(pp1, tree_copy, PASSES)
    assert check.status is Status.FAIL, check.message
    assert "(logits, input_batch, None)" in check.message, check.message


NOT_CALLED = """\
    file: pkg/mod.py
    in: Runner.run
    pattern: self.go()
    not: rejection_sample($$$)
"""


@pytest.mark.parametrize("call", ["rejection_ſample(1)", "ｒｅｊｅｃｔｉｏｎ_sample(1)"])
def test_a_forbidden_call_spelled_another_way_is_found(make_files: MakeFiles, call: str) -> None:
    code = f"class Runner:\n    def run(self):\n        self.go()\n        {call}\n"
    check = one(make_files, NOT_CALLED, code)
    assert check.status is Status.FAIL, check.message
    assert "present at line 4" in check.message, check.message
    clean = one(make_files, NOT_CALLED, code.replace(call, "print(1)"))
    assert clean.status is Status.PASS, clean.message


GUARDED = """\
    file: pkg/mod.py
    in: Runner.run
    pattern: self.x = $V
    guarded_by: self.m == "probabilistic"
"""


def test_a_string_is_a_value_not_a_name(make_files: MakeFiles) -> None:
    """``"probabiliſtic"`` is not ``"probabilistic"`` to Python: a guard on it stays a
    different guard, and the file is still judged."""
    code = ('class Runner:\n    def run(self):\n        if self.m == "probabiliſtic":\n'
            "            self.x = 1\n")
    assert one(make_files, GUARDED, code).status is Status.FAIL
    assert one(make_files, GUARDED, code.replace("ſ", "s")).status is Status.PASS
    # A name spelled another way in the guard is the same guard.
    spelled = code.replace("probabiliſtic", "probabilistic").replace("self.m", "ſelf.m")
    assert one(make_files, GUARDED, spelled).status is Status.PASS


def test_text_outside_names_is_untouched() -> None:
    src = textwrap.dedent("""\
        # ﬁle comment
        x = "ſ ﬁ"
        y = f"{x} m²"
        ｓelf = x  # ſ
        """)
    out = nfkc_identifiers(src)
    assert out.splitlines() == ["# ﬁle comment", 'x = "ſ ﬁ"', 'y = f"{x} m²"', "self = x  # ſ"]
    assert nfkc_identifiers("def f():\n    return 1\n") == "def f():\n    return 1\n"


@pytest.mark.parametrize(("code", "words"), [
    ("ｉｆ = 1\n", ["line 1", "'if'"]),
    ('x = f"{ſelf}"\n', ["line 1", "f-string"]),
])
def test_what_cannot_be_rewritten_is_refused(
    make_files: MakeFiles, code: str, words: list[str],
) -> None:
    compile(code, "m.py", "exec")  # Python accepts it
    with pytest.raises(IdentifierError) as exc:
        nfkc_identifiers(code)
    for w in words:
        assert w in str(exc.value)
    check = one(make_files, "file: pkg/mod.py\npattern: x = 1\n", code + "x = 1\n")
    assert check.status is Status.ERROR, check.message
    assert "pkg/mod.py" in check.message and "cannot be judged" in check.message


def test_a_combining_mark_is_part_of_the_name() -> None:
    """The stdlib tokenizer splits ``e\\u0301x`` at the mark; Python binds ``éx``."""
    code = "e\u0301x = 1\n"
    assert as_python("e\u0301x") == "\u00e9x"
    assert nfkc_identifiers(code) == "\u00e9x = 1\n"


ALIAS = """\
    file: pkg/mod.py
    in: Runner.run
    pattern: self.go()
"""


def test_a_class_alias_spelled_two_ways_is_one_alias(make_files: MakeFiles) -> None:
    """``é = Runner`` then ``e\\u0301.run = bad``: one variable to Python, so the
    method Python keeps is ``bad``."""
    code = ("class Runner:\n    def run(self):\n        self.go()\n\n\n\u00e9 = Runner\n\n\n"
            "def bad(self):\n    pass\n\n\ne\u0301.run = bad\n")
    scope: dict[str, object] = {}
    exec(code, scope)
    assert scope["Runner"].run is scope["bad"]  # type: ignore[attr-defined]
    check = one(make_files, ALIAS, code)
    assert check.status is Status.FAIL, check.message
    same = one(make_files, ALIAS, code.replace("e\u0301.run", "\u00e9.run"))
    assert same.status is Status.FAIL, same.message


HIDDEN = ("class Runner:\n    def run(self):\n        self.go()\n\n    def go(self):\n        pass\n\n"
          "    # {newline}    def run(self): return 'hidden'\n")


@pytest.mark.parametrize(("cookie", "newline"), [("unicode_escape", "\\u000a"), ("utf-7", "+AAo-")])
def test_a_coding_cookie_that_reads_other_text_is_an_error(
    make_files: MakeFiles, tmp_path: Path, cookie: str, newline: str,
) -> None:
    """Python honours the cookie: what the matcher reads as a comment is a second ``def run``."""
    code = f"# coding: {cookie}\n" + HIDDEN.format(newline=newline)
    scope: dict[str, object] = {}
    exec(compile(code.encode("ascii"), "m.py", "exec"), scope)
    assert scope["Runner"]().run() == "hidden"  # type: ignore[operator]
    check = one(make_files, "file: pkg/mod.py\nin: Runner.run\npattern: self.go()\n", code)
    assert check.status is Status.ERROR, check.message
    assert f"declares `coding: {cookie}`" in check.message and "cannot be judged" in check.message


def test_a_cookie_that_reads_the_same_text_is_judged(make_files: MakeFiles) -> None:
    code = "# -*- coding: latin-1 -*-\n" + HIDDEN.format(newline="")
    check = one(make_files, "file: pkg/mod.py\nin: Runner.run\npattern: self.go()\n", code)
    assert check.status is Status.PASS, check.message


def test_an_f_string_too_deep_to_read_is_an_error_not_a_crash(
    make_files: MakeFiles, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An f-string nested ~2,935 deep compiles, yet reading its names (``ast.parse``, deeper
    in the stack) exhausts the recursion limit: that file is an error, the run goes on.
    (The depth where this happens depends on the caller's stack, so it is simulated.)"""
    import pp1audit.identnorm as identnorm

    def too_deep(*_: object, **__: object) -> object:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(identnorm, "_check_fstring", too_deep)
    code = "class Runner:\n    def run(self):\n        self.go()\n\n\nx = f\"\u017f{1}\"\n"
    check = one(make_files, "file: pkg/mod.py\nin: Runner.run\npattern: self.go()\n", code)
    assert check.status is Status.ERROR, check.message
    assert "too deeply nested" in check.message


def test_text_that_names_nothing_is_not_tokenised(monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``…`` or ``×`` in a comment cannot change a name: no tokenising (it is slow)."""
    import tokenize

    def refuse(*_: object) -> object:
        raise AssertionError("tokenised")

    monkeypatch.setattr(tokenize, "generate_tokens", refuse)
    text = "x = 1  # wait… 3×4, ｜ and “quotes”\n"
    assert nfkc_identifiers(text) == text
