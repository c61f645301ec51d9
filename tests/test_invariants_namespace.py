"""Bindings and writes spelled other than plainly, and code after a constant that raises.

A user test of the invariant engine (ut-inv, items 1-4) found false passes on the
REAL vLLM 0.31.0 tree with the shipped PP1 rules; Python runs each edit (the
hand-made cases below are run here too):

1. **A field bound again in its class body** by ``(name := v)``, a ``case`` capture
   of a ``match`` (``case name:``, ``[name]``, ``{"k": name}``, ``C(x=name)``,
   ``as name``, ``*name``, ``**name``), an ``except … as name`` (bound, then deleted),
   ``del a, name``, or ``exec`` / ``eval`` (with no namespace, ``exec`` writes the
   class's own).
2. **A field written through a namespace or a name made of constants**, which
   ``not:`` and ``every:`` on ``obj.attr = V`` must see: ``self.__dict__.update(attr=…)``,
   ``vars(self)[…] = …``, ``self.__dict__[…] = …``, ``setattr(self, "a" + "ttr", …)``.
   A write whose name or value cannot be known (``**d``, a dict argument, a computed
   name, ``exec``) *may* make the assignment: a fail under both.
3. **A ``__set_name__`` hook**: an instance of a same-file class in the class body,
   whose ``__set_name__(self, owner, name)`` Python calls as it creates the class,
   may replace the class's methods (as a base's ``__init_subclass__`` may).
4. **A statement of constants that always raises** (``1 / 0``, ``[][0]``) ends its
   block as ``raise`` does: a required call after it, in a ``try`` that swallows the
   error, never runs.

Each is checked next to a harmless edit of the same kind that must keep passing.
"""

from __future__ import annotations

import re
import textwrap
import warnings
from pathlib import Path

import pytest
from test_invariants_rules import MakeFiles, one
from test_invariants_semantics import (
    CONFIG,
    FIELD,
    GREEDY,
    GUARDED,
    MASK,
    MASK_FIRST,
    PASSES,
    RUNNER,
    SPECULATOR,
    WATER,
    Edit,
    FileEdit,
    indent,
    judge,
    once,
    pp1,  # noqa: F401  (a fixture)
)

from pp1audit.manifest import Manifest
from pp1audit.result import Check, Status

NO_OTHER = "config-module-sets-no-sample-method"
POST_INIT = "    def __post_init__(self):\n"
CONFIG_CLASS = "@config\nclass SpeculativeConfig:\n"
RUNNER_CLASS = "logger = init_logger(__name__)\n\n\nclass GPUModelRunner(LoRAModelRunnerMixin):\n"
GUARD = '        if self.speculative_config.draft_sample_method == "probabilistic":\n'
ALL_RUNNER = [PASSES, MASK_FIRST]


def after(anchor: str, added: str) -> Edit:
    """Add lines right after ``anchor`` (which occurs once)."""
    return once(anchor, anchor + added)


def line_of(tree: Path, path: str, anchor: str) -> int:
    """The 1-based line ``anchor`` (text starting a line) starts at in the unedited file."""
    text = (tree / path).read_text(encoding="utf-8")
    assert text.count(anchor) == 1, anchor
    return text[: text.index(anchor)].count("\n") + 1


def runs(code: str, *names: str) -> dict[str, object]:
    """Run ``code`` as Python does and return the globals it leaves (``names``: the ones
    asked for): the proof that the edit does what the test says."""
    scope: dict[str, object] = {}
    exec(compile(textwrap.dedent(code), "<edit>", "exec"), scope)
    return {n: scope[n] for n in names}


# --- 1. a field bound again in its class body ------------------------------------------

CASE = '    match "probabilistic":\n        case {}:\n            pass\n'
REBOUND = [
    pytest.param('    (draft_sample_method := "probabilistic")\n', "is bound again at line",
                 id="walrus"),
    pytest.param('    if (draft_sample_method := "probabilistic"):\n        pass\n',
                 "is bound again at line", id="walrus-in-a-test"),
    pytest.param('    _w = 1 and (draft_sample_method := "probabilistic")\n',
                 "may be bound again at line", id="walrus-behind-and"),
    pytest.param(CASE.format("draft_sample_method"), "a `case` capture", id="case-name"),
    pytest.param(CASE.format("[draft_sample_method]"), "a `case` capture", id="case-list"),
    pytest.param(CASE.format('{"k": draft_sample_method}'), "a `case` capture", id="case-dict"),
    pytest.param(CASE.format("complex(real=draft_sample_method)"), "a `case` capture",
                 id="case-class-keyword"),
    pytest.param(CASE.format("str() as draft_sample_method"), "a `case` capture", id="case-as"),
    pytest.param(CASE.format("[*draft_sample_method]"), "a `case` capture", id="case-star"),
    pytest.param(CASE.format("{**draft_sample_method}"), "a `case` capture", id="case-rest"),
    pytest.param("    try:\n        raise ValueError\n    except ValueError as draft_sample_method:\n"
                 "        pass\n", "an `except … as` name", id="except-as"),
    pytest.param("    _x = 0; del _x, draft_sample_method\n", "is bound again at line",
                 id="del-among-others"),
    pytest.param("    exec(\"draft_sample_method = 'probabilistic'\")\n",
                 "exec/eval run code the file does not show, which may bind any name",
                 id="exec"),
    pytest.param('    eval("0")\n', "which may bind any name", id="eval"),
    pytest.param('    locals()["draft_sample_method"] = "probabilistic"\n', "bound again on its class",
                 id="locals-subscript"),
    pytest.param('    locals().update(draft_sample_method="probabilistic")\n',
                 "bound again on its class", id="locals-update"),
    pytest.param("    _x = 0; del (draft_sample_method), _x\n", "is bound again at line",
                 id="del-parenthesized-among-others"),
    pytest.param("    del ((draft_sample_method))\n", "is bound again at line",
                 id="del-in-double-parentheses"),
    pytest.param('    _f = lambda a=(draft_sample_method := "probabilistic"): a\n',
                 "is bound again at line", id="walrus-in-a-lambda-default"),
    pytest.param("    import builtins as _b; _b.exec(\"draft_sample_method = 'probabilistic'\")\n",
                 "which may bind any name", id="exec-of-builtins-imported-as"),
    pytest.param("    __import__('builtins').exec(\"draft_sample_method = 'probabilistic'\")\n",
                 "which may bind any name", id="exec-of-dunder-import"),
    pytest.param("    getattr(__import__('builtins'), 'exec')(\"draft_sample_method = 'p'\")\n",
                 "which may bind any name", id="getattr-exec"),
    pytest.param("    from builtins import exec as _run; _run(\"draft_sample_method = 'p'\")\n",
                 "which may bind any name", id="exec-imported-as"),
]


@pytest.mark.parametrize(("added", "words"), REBOUND)
def test_a_field_bound_again_in_its_class_body_fails(
    pp1: Manifest, tree_copy: Path, edit: FileEdit, added: str, words: str,  # noqa: F811
) -> None:
    field = line_of(tree_copy, CONFIG, FIELD)
    edit(tree_copy / CONFIG, after(FIELD, added))
    check = judge(pp1, tree_copy, GREEDY)
    assert check.status is Status.FAIL, check.message
    assert words in check.message, check.message
    assert f"line {field + 1}" in check.message, check.message


@pytest.mark.parametrize("added", [
    '    (draft_other := "probabilistic")\n',
    CASE.format('"probabilistic"'),
    CASE.format("[draft_other]"),
    "    try:\n        raise ValueError\n    except ValueError as draft_other:\n        pass\n",
    "    lambda: (draft_sample_method := 1)\n",
    "    def _f(self, eval=False):\n        return eval\n",
    "    _x = 0; del (_x)\n",
], ids=["walrus-another-name", "case-value-pattern", "case-another-name", "except-another-name",
        "walrus-in-a-lambda", "a-parameter-called-eval", "del-of-another-name"])
def test_a_class_body_binding_of_another_name_passes(
    pp1: Manifest, tree_copy: Path, edit: FileEdit, added: str,  # noqa: F811
) -> None:
    edit(tree_copy / CONFIG, after(FIELD, added))
    check = judge(pp1, tree_copy, GREEDY)
    assert check.status is Status.PASS, check.message


@pytest.mark.parametrize(("body", "value"), [
    ('x = "g"\n(x := "p")\n', "p"),
    ('x = "g"\nmatch ["p"]:\n    case [x]:\n        pass\n', "p"),
    ('x = "g"\nmatch {"k": "p"}:\n    case {"k": x}:\n        pass\n', "p"),
    ('x = "g"\nmatch 2j:\n    case complex(imag=x):\n        pass\n', 2.0),
    ('x = "g"\nmatch "p":\n    case str() as x:\n        pass\n', "p"),
    ('x = "g"\nexec("x = \'p\'")\n', "p"),
    ('x = "g"\ntry:\n    1 / 0\nexcept ZeroDivisionError as x:\n    pass\n', None),
    ('x = "g"\n_y = 0\ndel (x), _y\n', None),
    ('x = "g"\ndel ((x))\n', None),
    ('x = "g"\n_f = lambda a=(x := "p"): a\n', "p"),
    ('import builtins as b\nx = "g"\nb.exec("x = \'p\'")\n', "p"),
    ('x = "g"\n__import__("builtins").exec("x = \'p\'")\n', "p"),
    ('x = "g"\ngetattr(__import__("builtins"), "exec")("x = \'p\'")\n', "p"),
    ('from builtins import exec as run\nx = "g"\nrun("x = \'p\'")\n', "p"),
], ids=["walrus", "case-list", "case-dict", "case-class", "case-as", "exec", "except-as",
        "del-parenthesized", "del-double-parentheses", "walrus-in-a-lambda-default",
        "exec-of-builtins-imported-as", "exec-of-dunder-import", "getattr-exec",
        "exec-imported-as"])
def test_python_rebinds_a_class_attribute_that_way_and_the_rule_fails(
    make_files: MakeFiles, body: str, value: object,
) -> None:
    code = "class C:\n" + indent(body) + "\n\nX = getattr(C, 'x', None)\n"
    assert runs(code, "X") == {"X": value}  # not "g": bound again (or deleted)
    check = one(make_files, 'file: pkg/mod.py\nin: C\npattern: x = "g"\n', code)
    assert check.status is Status.FAIL, check.message
    assert "bound again" in check.message or "may bind any name" in check.message, check.message


def test_a_module_constant_bound_again_by_a_case_or_a_star_import_fails(
    make_files: MakeFiles,
) -> None:
    rule = 'file: pkg/mod.py\npattern: SALT = 1 << 30\n'
    plain = one(make_files, rule, "SALT = 1 << 30\n")
    assert plain.status is Status.PASS, plain.message
    captured = one(make_files, rule, "SALT = 1 << 30\nmatch [1]:\n    case [SALT]:\n        pass\n")
    assert captured.status is Status.FAIL and "a `case` capture" in captured.message
    starred = one(make_files, rule, "SALT = 1 << 30\nfrom os.path import *\n")
    assert starred.status is Status.FAIL and "a star import" in starred.message, starred.message
    before = one(make_files, rule, "from os.path import *\nSALT = 1 << 30\n")
    assert before.status is Status.PASS, before.message  # the constant is bound after it


NOT_THE_BUILTIN = [
    pytest.param("def f(self, eval=False):\n    return eval\n", id="a-parameter"),
    pytest.param("def f(eval):\n    return g(eval=eval)\n", id="a-parameter-passed-on"),
    pytest.param("def f():\n    eval = print\n    eval(1)\n", id="a-local"),
    pytest.param("eval = print\n\n\ndef f(code):\n    return eval(code)\n", id="a-global"),
    pytest.param("from lib import eval as e\n", id="imported-from-another-module"),
    pytest.param("import some.eval\n", id="a-module-called-eval"),
    pytest.param("def f(model):\n    model.eval()\n    return model.exec\n", id="attributes"),
    pytest.param("g = lambda eval: eval(1)\n", id="a-lambda-parameter"),
    pytest.param("def f(eval):\n    return [eval(x) for x in 'ab']\n",
                 id="a-parameter-read-in-a-comprehension"),
]
THE_BUILTIN = [
    pytest.param("def f(code):\n    return eval(code)\n", id="called"),
    pytest.param("def f(code, eval=None):\n    pass\n\n\ndef g(code):\n    return eval(code)\n",
                 id="another-function-has-a-parameter-called-eval"),
    pytest.param("class K:\n    eval = 1\n\n    def m(self, code):\n        return eval(code)\n",
                 id="a-class-attribute-a-method-does-not-see"),
    pytest.param("def f(codes):\n    return [eval(c) for c in codes]\n", id="in-a-comprehension"),
    pytest.param("x = __builtins__['exec']\n", id="item-of-dunder-builtins"),
    pytest.param("import builtins\n\nx = vars(builtins)['eval']\n", id="item-of-vars-of-builtins"),
    pytest.param("import sys\n\nsys.modules['builtins'].exec('1')\n", id="from-sys-modules"),
    pytest.param("import builtins\n\nb = builtins\nb.eval('1')\n", id="through-an-alias"),
    pytest.param("run = exec\n", id="taken-as-a-value"),
]


@pytest.mark.parametrize("code", NOT_THE_BUILTIN)
def test_a_name_eval_that_is_not_the_builtin_passes(make_files: MakeFiles, code: str) -> None:
    """Only the builtin runs code from text: a parameter, a local, a global or an import
    called ``eval``, or another object's method, makes no rule of the file fail."""
    rule = 'file: pkg/mod.py\nin: C\npattern: mode = "greedy"\n'
    check = one(make_files, rule, 'class C:\n    mode = "greedy"\n\n\n' + code)
    assert check.status is Status.PASS, check.message


@pytest.mark.parametrize("code", THE_BUILTIN)
def test_the_builtin_eval_still_fails(make_files: MakeFiles, code: str) -> None:
    rule = 'file: pkg/mod.py\nin: C\npattern: mode = "greedy"\n'
    check = one(make_files, rule, 'class C:\n    mode = "greedy"\n\n\n' + code)
    assert check.status is Status.FAIL, check.message
    assert "exec/eval run code the file does not show" in check.message, check.message


# --- 2. a field written through a namespace, or by a name made of constants ------------

KNOWN = [
    pytest.param('self.__dict__.update(draft_sample_method="probabilistic")', id="dict-update"),
    pytest.param('self.__dict__.update({"draft_sample_method": "probabilistic"})',
                 id="dict-update-display"),
    pytest.param('vars(self).update(draft_sample_method="probabilistic")', id="vars-update"),
    pytest.param('vars(self)["draft_sample_method"] = "probabilistic"', id="vars-subscript"),
    pytest.param('self.__dict__["draft_sample_method"] = "probabilistic"', id="dict-subscript"),
    pytest.param('setattr(self, "draft_" + "sample_method", "probabilistic")',
                 id="setattr-constant-sum"),
    pytest.param('object.__setattr__(self, "draft_" "sample_method", "probabilistic")',
                 id="object-setattr-concatenated"),
    pytest.param('import operator; operator.setitem(vars(self), "draft_sample_method", "p")',
                 id="operator-setitem"),
    pytest.param('(d := self.__dict__).update(draft_sample_method="probabilistic")',
                 id="dict-bound-by-walrus"),
    pytest.param('setattr(*(self, "draft_sample_method", "probabilistic"))',
                 id="setattr-of-an-unpacked-display"),
]
# Writes whose attribute name the namespace reading cannot know, but which pass the field's
# name as a keyword: the config rule's keyword reading names them exactly.
KEYWORD_PASSED = [
    pytest.param('self.__dict__.update(**{"draft_sample_method": "probabilistic"})',
                 'as the keyword `"draft_sample_method": "probabilistic"` passed by `**{…}` '
                 "to `self.__dict__.update(…)`", id="dict-update-unpacked"),
    pytest.param('self.__dict__.update(dict(draft_sample_method="probabilistic"))',
                 "as the keyword argument `draft_sample_method=…` of `dict(…)`",
                 id="dict-update-argument"),
    pytest.param('vars(self).update(dict(draft_sample_method="probabilistic"))',
                 "as the keyword argument `draft_sample_method=…` of `dict(…)`",
                 id="vars-update-argument"),
]

UNKNOWN = [
    pytest.param('object.__setattr__(self, "DRAFT_SAMPLE_METHOD".lower(), "probabilistic")',
                 "its attribute's name is not known", id="object-setattr-computed"),
    pytest.param('vars(self)["draft_sample_method".strip()] = "probabilistic"',
                 "its attribute's name is not known", id="vars-subscript-computed"),
    pytest.param('setattr(*self.__dict__.get("_w", ()))',
                 "its object and attribute are not known", id="setattr-all-unpacked"),
]


def failed_after_post_init(manifest: Manifest, tree: Path, edit: FileEdit,
                           write: str) -> tuple[int, Check]:
    """Insert `write` as the first line of the config's __post_init__ and judge the rule
    that no other sample method is set: the line it landed on, and the FAIL it must give."""
    at = line_of(tree, CONFIG, POST_INIT) + 1
    edit(tree / CONFIG, after(POST_INIT, f"        {write}\n"))
    check = judge(manifest, tree, NO_OTHER)
    assert check.status is Status.FAIL, check.message
    return at, check


@pytest.mark.parametrize(("write", "how"), KEYWORD_PASSED)
def test_not_names_the_keyword_a_namespace_update_passes(
    pp1: Manifest, tree_copy: Path, edit: FileEdit, write: str, how: str,  # noqa: F811
) -> None:
    at, check = failed_after_post_init(pp1, tree_copy, edit, write)
    assert f"`draft_sample_method = $PASSED` is present {how} at line {at} (must be absent)" \
        in check.message, check.message


@pytest.mark.parametrize("write", KNOWN)
def test_not_sees_a_field_written_through_a_namespace(
    pp1: Manifest, tree_copy: Path, edit: FileEdit, write: str,  # noqa: F811
) -> None:
    at, check = failed_after_post_init(pp1, tree_copy, edit, write)
    # as an attribute write, or (`update(draft_sample_method=…)`) as the keyword it passes
    assert re.search(r"`(\$OBJ\.draft_sample_method = \$SET|draft_sample_method = \$PASSED)` "
                     f"is present (as the keyword argument .* )?at line {at} \\(must be absent\\)",
                     check.message), check.message


@pytest.mark.parametrize(("write", "why"), UNKNOWN)
def test_not_fails_on_a_write_that_may_make_the_forbidden_assignment(
    pp1: Manifest, tree_copy: Path, edit: FileEdit, write: str, why: str,  # noqa: F811
) -> None:
    at, check = failed_after_post_init(pp1, tree_copy, edit, write)
    assert f"may be made at line {at} by" in check.message and why in check.message, \
        check.message
    assert "cannot be shown absent" in check.message, check.message


def test_exec_in_a_method_fails_the_module_rule(
    pp1: Manifest, tree_copy: Path, edit: FileEdit,  # noqa: F811
) -> None:
    at = line_of(tree_copy, CONFIG, POST_INIT) + 1
    edit(tree_copy / CONFIG, after(POST_INIT, "        exec(\"self.draft_sample_method = "
                                              "'probabilistic'\")\n"))
    for iid in (NO_OTHER, GREEDY):
        check = judge(pp1, tree_copy, iid)
        assert check.status is Status.FAIL, (iid, check.message)
        assert f"line {at}" in check.message and "exec/eval" in check.message, check.message


@pytest.mark.parametrize("write", [
    'self.__dict__.update(draft_other="probabilistic")',
    'vars(self)["draft_sample_method"] = "greedy"',
    'setattr(self, "draft_" + "other", "probabilistic")',
    'self.__dict__.pop("draft_sample_method", None)',
    'delattr(self, "draft_" + "sample_method")',
], ids=["another-name", "the-allowed-value", "another-constant-sum", "a-deletion",
        "a-deletion-by-constant-sum"])
def test_a_harmless_namespace_write_passes_not(
    pp1: Manifest, tree_copy: Path, edit: FileEdit, write: str,  # noqa: F811
) -> None:
    edit(tree_copy / CONFIG, after(POST_INIT, f"        {write}\n"))
    check = judge(pp1, tree_copy, NO_OTHER)
    assert check.status is Status.PASS, check.message


EVERY_KNOWN = [
    pytest.param("self.__dict__.update(draft_logits=torch.zeros(1))", id="dict-update"),
    pytest.param('vars(self)["draft_logits"] = torch.zeros(1)', id="vars-subscript"),
    pytest.param('self.__dict__["draft_logits"] = torch.zeros(1)', id="dict-subscript"),
    pytest.param('setattr(self, "draft_" + "logits", torch.zeros(1))', id="setattr-constant-sum"),
    pytest.param('super().__setattr__("draft_logits", torch.zeros(1))', id="super-setattr"),
    pytest.param('import operator; operator.setitem(vars(self), "draft_logits", torch.zeros(1))',
                 id="operator-setitem"),
    pytest.param('(d := self.__dict__).update(draft_logits=torch.zeros(1))',
                 id="dict-bound-by-walrus"),
]
EVERY_UNKNOWN = [
    pytest.param('setattr(self, "DRAFT_LOGITS".lower(), torch.zeros(1))', id="setattr-computed"),
    pytest.param('self.__dict__.update(**{"draft_logits": torch.zeros(1)})', id="update-unpacked"),
    pytest.param('vars(self).update(dict(draft_logits=torch.zeros(1)))', id="update-argument"),
]


@pytest.mark.parametrize("write", EVERY_KNOWN)
def test_every_sees_a_field_written_through_a_namespace(
    pp1: Manifest, tree_copy: Path, edit: FileEdit, write: str,  # noqa: F811
) -> None:
    at = line_of(tree_copy, SPECULATOR, WATER)  # the write shares the line: no citation moves
    edit(tree_copy / SPECULATOR, once(WATER, f"        {write}; " + WATER.lstrip()))
    check = judge(pp1, tree_copy, GUARDED)
    assert check.status is Status.FAIL, check.message
    assert f"every: `self.draft_logits = $VALUE` at line {at}: it is not inside an `if" \
        in check.message, check.message


@pytest.mark.parametrize("write", EVERY_UNKNOWN)
def test_every_fails_on_a_write_that_may_make_the_assignment(
    pp1: Manifest, tree_copy: Path, edit: FileEdit, write: str,  # noqa: F811
) -> None:
    """In a subclass of the file (``every`` reads its ``self`` too): a write of a name not
    known in the class's own methods already replaces the scoped method (next test)."""
    edit(tree_copy / SPECULATOR, lambda t: t + "\n\nclass _Sub(DraftModelSpeculator):\n"
         f"    def reset(self):\n        {write}\n")
    at = len((tree_copy / SPECULATOR).read_text(encoding="utf-8").splitlines())
    check = judge(pp1, tree_copy, GUARDED)
    assert check.status is Status.FAIL, check.message
    assert f"every: `self.draft_logits = $VALUE` may be made at line {at} by" in check.message
    assert "(in class _Sub, a subclass of DraftModelSpeculator in this file) (its attribute's " \
        "name is not known): it cannot be shown to satisfy its relations" in check.message, \
        check.message


@pytest.mark.parametrize("write", EVERY_UNKNOWN)
def test_a_write_of_any_name_in_the_class_fails(
    pp1: Manifest, tree_copy: Path, edit: FileEdit, write: str,  # noqa: F811
) -> None:
    at = line_of(tree_copy, SPECULATOR, WATER)
    edit(tree_copy / SPECULATOR, once(WATER, f"        {write}; " + WATER.lstrip()))
    check = judge(pp1, tree_copy, GUARDED)
    assert check.status is Status.FAIL and f"line {at}" in check.message, check.message


def test_exec_in_the_class_fails_every(
    pp1: Manifest, tree_copy: Path, edit: FileEdit,  # noqa: F811
) -> None:
    at = line_of(tree_copy, SPECULATOR, WATER)
    edit(tree_copy / SPECULATOR,
         once(WATER, '        exec("self.draft_logits = torch.zeros(1)"); ' + WATER.lstrip()))
    check = judge(pp1, tree_copy, GUARDED)
    assert check.status is Status.FAIL and f"line {at}" in check.message, check.message
    assert "exec/eval" in check.message, check.message


@pytest.mark.parametrize("edit_text", [
    once(WATER, "        self.__dict__.update(draft_logits=None); " + WATER.lstrip()),
    once(WATER, '        vars(self)["draft_watermark"] = torch.zeros(1); ' + WATER.lstrip()),
    lambda t: t.replace(GUARD, GUARD + "            self.__dict__.update(draft_logits="
                        "torch.zeros(1))\n", 1),
], ids=["none-value", "another-name", "under-the-guard"])
def test_a_harmless_namespace_write_passes_every(
    pp1: Manifest, tree_copy: Path, edit: FileEdit, edit_text: Edit,  # noqa: F811
) -> None:
    edit(tree_copy / SPECULATOR, edit_text)
    check = judge(pp1, tree_copy, GUARDED)
    assert check.status is Status.PASS, check.message


def test_python_writes_the_field_each_way() -> None:
    """The writes above really give the attribute its value (``draft_logits`` a tensor)."""
    code = ("class S:\n    def __init__(self):\n        self.draft_logits = None\n"
            "        self.__dict__.update(**{'draft_logits': 'tensor'})\n"
            "        vars(self)['draft_' + 'sample_method'] = 'p'\n"
            "        setattr(self, 'DRAFT'.lower() + '_x', 1)\n"
            "        exec('self.draft_y = 2')\n"
            "s = S()\nGOT = (s.draft_logits, s.draft_sample_method, s.draft_x, s.draft_y)\n")
    assert runs(code, "GOT") == {"GOT": ("tensor", "p", 1, 2)}


def test_python_writes_the_field_these_ways_too() -> None:
    code = ("import operator\n\n\nclass B:\n    pass\n\n\nclass S(B):\n"
            "    def __init__(self):\n        operator.setitem(vars(self), 'a', 1)\n"
            "        (d := self.__dict__).update(b=2)\n        setattr(*(self, 'c', 3))\n"
            "        super().__setattr__('d', 4)\n\n\n"
            "s = S()\nGOT = (s.a, s.b, s.c, s.d)\n")
    assert runs(code, "GOT") == {"GOT": (1, 2, 3, 4)}


def test_not_fails_on_exec_in_the_searched_function(make_files: MakeFiles) -> None:
    rule = ("file: pkg/mod.py\npattern: start()\n"
            "not: {pattern: $OBJ.mode = $MODE, where: {MODE: {not: {is: '\"greedy\"'}}}}\n")
    base = "def f(cfg, code):\n    start()\n"
    assert one(make_files, rule, base).status is Status.PASS
    for added, words in [
        ("    exec(code)\n", "may be made at line 3 by `exec(code)`"),
        ("    eval(code)\n", "may be made at line 3 by `eval(code)`"),
        ("    run = exec\n", "may be made at line 3 by `exec`"),
        ("    setattr(cfg, code, 1)\n", "its attribute's name is not known"),
        ("    cfg.__dict__ = {'mode': 'p'}\n", "its attribute's name is not known"),
        ("    import builtins as b\n    b.exec(code)\n", "may be made at line 4 by `b.exec(code)`"),
        ("    getattr(cfg, 'exec')(code)\n", "may be made at line 3 by `getattr(cfg, 'exec')"),
        ("    __builtins__['eval'](code)\n", "may be made at line 3 by `__builtins__['eval']"),
    ]:
        check = one(make_files, rule, base + added)
        assert check.status is Status.FAIL and words in check.message, check.message
    for added in ("    if False:\n        exec(code)\n", "    cfg.eval(code)\n",
                  "    setattr(cfg, 'mo' + 'de', 'greedy')\n"):
        check = one(make_files, rule, base + added)
        assert check.status is Status.PASS, (added, check.message)


# --- 3. a __set_name__ hook ------------------------------------------------------------

HOOK = ("class _Hook:\n    def __set_name__(self, owner, name):\n"
        "        owner.sample = owner._plain_sample\n\n\n")


FACTORY = "_Hook.make = classmethod(lambda cls: cls())\n\n\n"
"""A method of the hook class that makes an instance of it."""


def with_hook(hook: str = HOOK, use: str = "    _hook = _Hook()\n") -> Edit:
    """Define ``hook`` before GPUModelRunner and put ``use`` first in its body."""
    return once(RUNNER_CLASS, RUNNER_CLASS.replace("class GPUModelRunner", hook + "class "
                                                   "GPUModelRunner") + use)


@pytest.mark.parametrize(("mutate", "words"), [
    pytest.param(with_hook(), "makes `_Hook()` at line", id="instance"),
    pytest.param(with_hook(use="    _hooks = [_Hook()]\n"), "makes `_Hook()` at line",
                 id="instance-in-a-list"),
    pytest.param(with_hook(HOOK + "class _Sub(_Hook):\n    pass\n\n\n", "    _hook = _Sub()\n"),
                 "an instance of _Sub", id="subclass-of-the-hook"),
    pytest.param(with_hook(HOOK.replace("owner, name", "owner: type, name: str")),
                 "whose `__set_name__` at line", id="typed-parameters"),
    pytest.param(with_hook(use="    @_Hook\n    def _other(self):\n        pass\n\n"),
                 "makes `@_Hook` at line", id="as-a-decorator"),
    pytest.param(with_hook("class _Hook:\n    pass\n\n\n_Hook.__set_name__ = lambda s, o, n: "
                           "setattr(o, 'sample', None)\n\n\n"), "which may bind it",
                 id="bound-from-outside"),
    pytest.param(with_hook(HOOK + "_HOOK = _Hook()\n\n\n", "    _hook = _HOOK\n"),
                 "holds `_HOOK` at line", id="instance-made-at-module-level"),
    pytest.param(with_hook(HOOK + "_Alias = _Hook\n\n\n", "    _hook = _Alias()\n"),
                 "makes `_Alias()` at line", id="an-alias-of-the-class"),
    pytest.param(with_hook(use="    _hook = (_H := _Hook)()\n"), "makes `(_H := _Hook)()` at line",
                 id="the-class-bound-by-walrus"),
    pytest.param(with_hook(use="    _hook = _Hook.__new__(_Hook)\n"),
                 "makes `_Hook.__new__(_Hook)` at line", id="dunder-new"),
    pytest.param(with_hook(HOOK + FACTORY, "    _hook = _Hook.make()\n"),
                 "makes `_Hook.make()` at line", id="a-factory-method"),
])
def test_a_set_name_hook_that_may_replace_the_method_fails(
    pp1: Manifest, tree_copy: Path, edit: FileEdit, mutate: Edit, words: str,  # noqa: F811
) -> None:
    edit(tree_copy / RUNNER, mutate)
    for iid in ALL_RUNNER:
        check = judge(pp1, tree_copy, iid)
        assert check.status is Status.FAIL, (iid, check.message)
        assert "GPUModelRunner.sample: its class body" in check.message, check.message
        assert words in check.message, check.message
        assert "runs when the class is created and may replace its methods" in check.message


@pytest.mark.parametrize("hook", [
    "class _Hook:\n    def __set_name__(self, owner, name):\n        self.name = name\n\n\n",
    "class _Hook:\n    def __set_name__(self, owner, name):\n        self.title = owner.__name__\n\n\n",
    "class _Hook:\n    def __get__(self, obj, owner=None):\n        return owner.sample\n\n\n",
    "class _Hook:\n    def __set_name__(self, owner, name):\n        self.owner = owner\n\n\n",
], ids=["name-only", "owner-name-read", "no-set-name", "owner-stored-on-the-instance"])
def test_a_harmless_set_name_hook_passes(
    pp1: Manifest, tree_copy: Path, edit: FileEdit, hook: str,  # noqa: F811
) -> None:
    edit(tree_copy / RUNNER, with_hook(hook))
    for iid in ALL_RUNNER:
        check = judge(pp1, tree_copy, iid)
        assert check.status is Status.PASS, (iid, check.message)


CALLS_BACK = HOOK.replace("class _Hook:\n", "class _Hook:\n    def __call__(self, function):\n"
                          "        return function\n\n")
DECORATING = "    @_Hook()\n    def _other(self):\n        pass\n\n"


@pytest.mark.parametrize(("hook", "status"), [
    (CALLS_BACK, Status.PASS),
    (CALLS_BACK.replace("return function", "return self"), Status.FAIL),
], ids=["call-returns-the-function", "call-returns-the-instance"])
def test_a_decorator_made_by_the_hook_class_stores_what_it_returns(
    pp1: Manifest, tree_copy: Path, edit: FileEdit, hook: str, status: Status,  # noqa: F811
) -> None:
    """``@_Hook()`` stores what the instance's ``__call__`` returns: the function (no
    ``__set_name__`` runs), or the instance itself (it does)."""
    edit(tree_copy / RUNNER, with_hook(hook, DECORATING))
    for iid in ALL_RUNNER:
        check = judge(pp1, tree_copy, iid)
        assert check.status is status, (iid, check.message)


@pytest.mark.parametrize(("hook", "use"), [
    (HOOK + "_HOOK = _Hook()\n", "_hook = _HOOK"),
    (HOOK + "_Alias = _Hook\n", "_hook = _Alias()"),
    (HOOK, "_hook = (_H := _Hook)()"),
    (HOOK, "_hook = _Hook.__new__(_Hook)"),
    (HOOK + FACTORY, "_hook = _Hook.make()"),
    (CALLS_BACK.replace("return function", "return self"), "@_Hook()\n    def _other(self): pass"),
], ids=["module-instance", "alias", "walrus", "dunder-new", "factory-method", "decorator-self"])
def test_python_calls_set_name_on_each_of_these(hook: str, use: str) -> None:
    code = (hook.replace("owner._plain_sample", "lambda self: 'unmasked'") +
            f"\nclass Runner:\n    {use}\n\n    def sample(self):\n        return 'as written'\n"
            "\n\nGOT = Runner().sample()\n")
    assert runs(code, "GOT") == {"GOT": "unmasked"}


def test_python_stores_what_a_decorator_returns() -> None:
    code = (CALLS_BACK.replace("owner._plain_sample", "lambda self: 'unmasked'") +
            "class Runner:\n" + DECORATING + "    def sample(self):\n        return 'as written'\n"
            "\n\nGOT = Runner().sample()\n")
    assert runs(code, "GOT") == {"GOT": "as written"}


def test_a_set_name_hook_rebinding_a_field_fails(
    pp1: Manifest, tree_copy: Path, edit: FileEdit,  # noqa: F811
) -> None:
    """``in: SpeculativeConfig``: the members searched are those of the class Python makes."""
    hook = ("class _Hook:\n    def __set_name__(self, owner, name):\n"
            "        owner.draft_sample_method = 'probabilistic'\n\n\n")
    edit(tree_copy / CONFIG, lambda t: after(FIELD, "    _hook = _Hook()\n")(
        once(CONFIG_CLASS, hook + CONFIG_CLASS)(t)))
    check = judge(pp1, tree_copy, GREEDY)
    assert check.status is Status.FAIL, check.message
    assert "SpeculativeConfig: its class body" in check.message, check.message
    assert "makes `_Hook()`" in check.message, check.message


def test_python_calls_set_name_as_it_creates_the_class() -> None:
    code = (HOOK.replace("owner._plain_sample", "lambda self: 'unmasked'") +
            "class Runner:\n    _hook = _Hook()\n\n    def sample(self):\n        return 'as written'\n"
            "\n\nGOT = Runner().sample()\n")
    assert runs(code, "GOT") == {"GOT": "unmasked"}


def test_a_base_hook_on_the_scoped_class_fails(make_files: MakeFiles) -> None:
    """``in: C`` with a field: a base's ``__init_subclass__`` rebinding it is caught as it is
    for a method in ``in: C.m``."""
    code = ("class Base:\n    def __init_subclass__(cls):\n        cls.mode = 'p'\n\n\n"
            "class C(Base):\n    mode = 'greedy'\n")
    assert runs(code + "GOT = C.mode\n", "GOT") == {"GOT": "p"}
    check = one(make_files, "file: pkg/mod.py\nin: C\npattern: mode = 'greedy'\n", code)
    assert check.status is Status.FAIL and "its base class Base (line 1) defines " \
        "`__init_subclass__`" in check.message, check.message


# --- 4. a statement of constants that always raises ------------------------------------


def swallowed(statement: str) -> Edit:
    """The grammar mask, behind ``statement``, in a ``try`` that swallows what it raises."""
    return once(MASK, f"            try:\n                {statement}\n" + indent(MASK) +
                "            except Exception:\n                pass\n")


@pytest.mark.parametrize(("statement", "error"), [
    ("1 / 0", "ZeroDivisionError"),
    ("1 % 0", "ZeroDivisionError"),
    ("[][0]", "IndexError"),
    ('{}["k"]', "KeyError"),
    ("None.x", "AttributeError"),
    ("_unused = (1, 1 // 0)", "ZeroDivisionError"),
])
def test_a_required_call_after_a_raising_constant_fails(
    pp1: Manifest, tree_copy: Path, edit: FileEdit, statement: str, error: str,  # noqa: F811
) -> None:
    at = line_of(tree_copy, RUNNER, MASK)
    edit(tree_copy / RUNNER, swallowed(statement))
    check = judge(pp1, tree_copy, MASK_FIRST)
    assert check.status is Status.FAIL, check.message
    assert f"unreachable, after `{statement}` at line {at + 1}, which always raises {error}" \
        in check.message, check.message


@pytest.mark.parametrize(("statement", "shown", "error"), [
    ("print(1 / 0)", "print(1 / 0)", "ZeroDivisionError"),
    ("if 1 / 0:\n                    pass", "if 1 / 0:", "ZeroDivisionError"),
    ("(_z := 1 / 0)", "(_z := 1 / 0)", "ZeroDivisionError"),
    ('f"{1 / 0}"', 'f"{1 / 0}"', "ZeroDivisionError"),
    ("_a, _b = 1", "_a, _b = 1", "TypeError"),
    ("for _ in 1:\n                    pass", "for _ in 1:", "TypeError"),
    ("None()", "None()", "TypeError"),
], ids=["call-argument", "if-test", "walrus", "f-string", "unpacking", "for-over-an-int", "call"])
def test_a_required_call_after_a_statement_that_raises_in_part_fails(
    pp1: Manifest, tree_copy: Path, edit: FileEdit, statement: str, shown: str,  # noqa: F811
    error: str,
) -> None:
    """Not only a statement made of constants: one that certainly evaluates such a part
    (an argument, a test, an f-string's field) or calls, unpacks or iterates a constant
    that cannot be never completes either."""
    at = line_of(tree_copy, RUNNER, MASK)
    edit(tree_copy / RUNNER, swallowed(statement))
    check = judge(pp1, tree_copy, MASK_FIRST)
    assert check.status is Status.FAIL, check.message
    assert f"unreachable, after `{shown}` at line {at + 1}, which always raises {error}" \
        in check.message, check.message


@pytest.mark.parametrize("statement", ["1 / 1", "[0][0]", '"not a docstring"',
                                       "_a, _b = 1, 2"])
def test_a_constant_that_completes_keeps_the_call(
    pp1: Manifest, tree_copy: Path, edit: FileEdit, statement: str,  # noqa: F811
) -> None:
    edit(tree_copy / RUNNER, swallowed(statement))
    check = judge(pp1, tree_copy, MASK_FIRST)
    assert check.status is Status.PASS, check.message


@pytest.mark.parametrize("statement", ['int("1")', "print(1 / 1)", "print(_f() or 1 / 0)"])
def test_a_call_before_the_mask_in_the_try_may_skip_it(
    pp1: Manifest, tree_copy: Path, edit: FileEdit, statement: str,  # noqa: F811
) -> None:
    """Reachable, but the mask must run on every pass through its `if` (`unconditional`):
    a call may raise, and the `except` then skips the mask."""
    edit(tree_copy / RUNNER, swallowed(statement))
    check = judge(pp1, tree_copy, MASK_FIRST)
    assert check.status is Status.FAIL, check.message
    assert "whose exception an `except` may catch" in check.message, check.message


def test_python_never_reaches_the_call() -> None:
    code = "CALLS = []\ntry:\n    1 / 0\n    CALLS.append('mask')\nexcept ZeroDivisionError:\n" \
           "    pass\n"
    assert runs(code, "CALLS") == {"CALLS": []}


@pytest.mark.parametrize(("prefix", "holds"), [
    ("1 / 0", False),
    ("None.x", False),
    ("(1, [][0])", False),
    ("f() or 1 / 0", True),   # f() may be true: the division may never run
    ("int('x')", True),       # a call: whatever `int` is then, not folded
    ("1 < 0 < 1 / 0", True),  # the chain stops at the false link
    ("'' and 1 / 0", True),
])
def test_which_constants_end_the_block(make_files: MakeFiles, prefix: str, holds: bool) -> None:
    code = f"def f():\n    try:\n        {prefix}\n        required()\n    except Exception:\n" \
           "        pass\n"
    check = one(make_files, "file: pkg/mod.py\nin: f\npattern: required()\n", code)
    assert (check.status is Status.PASS) is holds, check.message


@pytest.mark.parametrize(("prefix", "holds"), [
    ("print(1 / 0)", False),
    ("print(g(), 1 / 0)", False),
    ("x = g() + [][0]", False),
    ("if 1 / 0:\n            pass", False),
    ("while [][0]:\n            pass", False),
    ("(z := 1 / 0)", False),
    ('f"{g()}{1 / 0}"', False),
    ("a, b = 1", False),
    ("a, b = (1,)", False),
    ("a, *b = ()", False),
    ("for _ in 1:\n            pass", False),
    ("None()", False),
    ("[*None]", False),
    ("with 1:\n            pass", False),
    ("None.x = 1", False),
    ("del [][0]", False),
    ("print(g() or 1 / 0)", True),    # g() is true: the division never runs
    ("print(0 if g() else 1 / 0)", True),
    ("[1 / 0 for _ in range(0)]", True),
    ("print(lambda: 1 / 0)", True),
    ("a, b = 1, 2", True),
    ("for _ in ():\n            pass", True),
    ("print(g(), 1 / 1)", True),
])
def test_which_statements_end_the_block(make_files: MakeFiles, prefix: str, holds: bool) -> None:
    """A statement ends its block when a part it certainly evaluates raises on constants;
    Python runs each, and reaches the required call exactly when the rule holds."""
    code = ("CALLS = []\n\n\ndef g():\n    return 1\n\n\ndef required():\n    CALLS.append(1)\n"
            f"\n\ndef run():\n    try:\n        {prefix}\n        required()\n"
            "    except Exception:\n        pass\n\n\nrun()\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)  # `None()`: Python warns, then raises
        assert runs(code, "CALLS") == {"CALLS": [1] if holds else []}
    check = one(make_files, "file: pkg/mod.py\nin: run\npattern: required()\n", code)
    assert (check.status is Status.PASS) is holds, check.message


def test_a_forbidden_call_after_a_raising_constant_never_runs(make_files: MakeFiles) -> None:
    """In both readings: what follows ``1 / 0`` can never run, so a ``not`` does not see it."""
    rule = "file: pkg/mod.py\nin: f\npattern: start()\nnot: forbidden()\n"
    code = "def f():\n    start()\n    try:\n        1 / 0\n        forbidden()\n    except E:\n" \
           "        pass\n"
    assert one(make_files, rule, code).status is Status.PASS
    live = one(make_files, rule, code.replace("1 / 0", "1 / x"))
    assert live.status is Status.FAIL and "`forbidden()` is present" in live.message


@pytest.mark.parametrize("statement", ["None.x: int", "()[0]: int", '"a"[5]: int'])
def test_an_annotation_alone_does_not_raise(make_files: MakeFiles, statement: str) -> None:
    """An annotated target without a value stores nothing: Python runs ``None.x: int`` (only
    the target's parts are evaluated), so what follows it still runs."""
    code = f"class Runner:\n    def run(self):\n        {statement}\n        self.go()\n"
    scope: dict[str, object] = {}
    exec(code + "\n    def go(self):\n        self.went = True\n", scope)
    runner = scope["Runner"]()  # type: ignore[operator]
    runner.run()
    assert runner.went
    check = one(make_files, "file: pkg/mod.py\nin: Runner.run\npattern: self.go()\n", code)
    assert check.status is Status.PASS, check.message
