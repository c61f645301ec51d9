"""A method replaced through a name the engine used not to follow must fail.

Three ways past ``Cls.meth = f`` detection were listed as limits: a class alias
(``C = Cls; C.meth = f``), a name not made of constants (``setattr(Cls, name, f)``)
and a whole namespace written (``locals().update(…)`` in the class body,
``globals()[…] = …`` anywhere). Each now fails on the safe side, naming the line;
each is next to a harmless write of the same shape that must keep passing, above
all the computed ``setattr(self, key, value)`` vLLM itself does (where the names
are visible: a loop over constants, a guard) and the registry idiom in an
``__init_subclass__``.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from test_invariants_evasion import RUNNER_CLASS, RUNNER_OF_BASE, SAMPLER, at_end, hooked
from test_invariants_rules import MakeFiles, manifest_text, one
from test_invariants_semantics import (
    MASK_FIRST,
    PASSES,
    RUNNER,
    FileEdit,
    judge,
    pp1,  # noqa: F401  (a fixture)
)

from pp1audit.audit import audit
from pp1audit.manifest import Manifest, parse
from pp1audit.result import Check, Status
from pp1audit.sources import open_target


def method(body: str, head: str = "def __init__(self, **kw):") -> str:
    """``Runner`` with one more method of this body (indented for the class)."""
    return (f"{RUNNER_CLASS}\n    {head}\n"
            f"{textwrap.indent(textwrap.dedent(body), '        ')}")


NESTED = "class Outer:\n    class Runner:\n        def sample(self):\n" \
    "            self.rejection_sampler(1)\n"
NESTED_SAMPLER = "file: pkg/mod.py\nin: Outer.Runner.sample\n" \
    "pattern: self.rejection_sampler($$$ARGS)\n"


# --- 1. a class alias -------------------------------------------------------------------

@pytest.mark.parametrize(("code", "words"), [
    (f"{RUNNER_CLASS}C = Runner\nC.sample = None\n", "replaced at line 5 (`C.sample = None`)"),
    (f"{RUNNER_CLASS}def patch():\n    C = Runner\n    C.sample = None\n",
     "replaced at line 6 (`C.sample = None`)"),
    (f"{RUNNER_CLASS}C: type = Runner\nsetattr(C, 'sample', None)\n", "replaced at line 5"),
    (f"{RUNNER_CLASS}if (C := Runner):\n    del C.sample\n", "replaced at line 5 (`del C.sample`)"),
    (f"{RUNNER_CLASS}C = D = Runner\nD.sample = None\n", "replaced at line 5"),
    (f"{RUNNER_CLASS}C = D = Runner\nC.sample = None\n", "replaced at line 5"),
    (f"{RUNNER_CLASS}C, x = Runner, 1\nC.sample = None\n", "replaced at line 5"),
    (f"{RUNNER_CLASS}C = Runner\nE = C\nvars(E)['sample'] = None\n", "replaced at line 6"),
    (f"{RUNNER_CLASS}for C in (int, Runner):\n    C.sample = None\n", "replaced at line 5"),
    (f"{RUNNER_CLASS}def setup():\n    global C\n    C = Runner\n\n\nC.sample = None\n",
     "replaced at line 9"),
    (f"{RUNNER_CLASS}class Holder:\n    C = Runner\n\n\nHolder.C.sample = None\n",
     "replaced at line 8"),
    (method("c = cls\nc.sample = None\n", "@classmethod\n    def patch(cls):"),
     "replaced at line 8 (`c.sample = None`)"),
    (method("T = type(self)\nT.sample = None\n"), "replaced at line 7 (`T.sample = None`)"),
    (method("me = self\nme.sample = None\n"), "replaced at line 7 (`me.sample = None`)"),
], ids=["module-level", "in-a-function", "annotated", "walrus-del", "chained-inner",
        "chained-outer", "tuple", "alias-of-an-alias", "for-over-a-display", "declared-global",
        "class-attribute", "cls-in-a-classmethod", "type-of-self", "instance-alias"])
def test_a_replacement_through_a_class_alias_fails(make_files: MakeFiles, code: str,
                                                   words: str) -> None:
    c = one(make_files, SAMPLER, code)
    assert c.status is Status.FAIL and words in c.message, c.message


@pytest.mark.parametrize(("code", "line"), [
    (f"{NESTED}C = Outer.Runner\nC.sample = None\n", 6),
    (f"{NESTED}O = Outer\nO.Runner.sample = None\n", 6),
    (f"{NESTED}O = Outer\nR = O.Runner\nsetattr(R, 'sample', None)\n", 7),
], ids=["alias-of-the-nested-class", "alias-of-the-enclosing-class", "alias-through-both"])
def test_a_nested_class_replaced_through_an_alias_fails(make_files: MakeFiles, code: str,
                                                        line: int) -> None:
    c = one(make_files, NESTED_SAMPLER, code)
    assert c.status is Status.FAIL, c.message
    assert f"Outer.Runner.sample is replaced at line {line}" in c.message, c.message


@pytest.mark.parametrize("code", [
    f"{RUNNER_CLASS}C = Runner\nC.count = 0\n",
    f"{RUNNER_CLASS}class Other:\n    pass\n\n\nC = Other\nC.sample = None\n",
    f"{RUNNER_CLASS}def f():\n    C = Runner\n    return C\n\n\ndef g(C):\n    C.sample = None\n",
    method("c = self.sampler\nc.sample = None\n"),
], ids=["another-attribute", "another-class", "an-alias-local-to-another-function",
        "an-attribute-of-the-instance"])
def test_a_harmless_write_near_an_alias_passes(make_files: MakeFiles, code: str) -> None:
    c = one(make_files, SAMPLER, code)
    assert c.status is Status.PASS, c.message


def test_an_alias_replacement_on_the_real_runner_fails(
    pp1: Manifest, tree_copy: Path, edit: FileEdit,  # noqa: F811
) -> None:
    edit(tree_copy / RUNNER, at_end("_Runner = GPUModelRunner\n\n\ndef _patch(fn):\n"
                                    "    _Runner.sample = fn\n"))
    for iid in (PASSES, MASK_FIRST):
        c = judge(pp1, tree_copy, iid)
        assert c.status is Status.FAIL, (iid, c.message)
        assert "GPUModelRunner.sample is replaced at line 2417 (`_Runner.sample = fn`)" in \
            c.message, c.message


# --- 2. a name not made of constants ----------------------------------------------------

@pytest.mark.parametrize(("code", "words"), [
    (f"{RUNNER_CLASS}setattr(Runner, name, None)\n",
     "Runner.sample is replaced at line 4 (`setattr(Runner, name, None)`)"),
    (f"{RUNNER_CLASS}delattr(Runner, name)\n", "replaced at line 4 (`delattr(Runner, name)`)"),
    (f"{RUNNER_CLASS}C = Runner\nsetattr(C, name, None)\n", "replaced at line 5"),
    (f"{RUNNER_CLASS}setattr(Runner, *pair)\n", "replaced at line 4"),
    (f"{RUNNER_CLASS}setattr(Runner, f'{{x}}sample', None)\n", "replaced at line 4"),
    (f"{RUNNER_CLASS}vars(Runner)[name] = None\n", "replaced at line 4"),
    (f"{RUNNER_CLASS}for n in names:\n    setattr(Runner, n, None)\n", "replaced at line 5"),
    (f"{RUNNER_CLASS}for n in ('a', 'sample'):\n    setattr(Runner, n, None)\n",
     "replaced at line 5"),
    (method("setattr(type(self), name, None)\n"), "replaced at line 6"),
    (method("for key, value in kw.items():\n    setattr(self, key, value)\n"),
     "replaced at line 7 (`setattr(self, key, value)`)"),
    (method("self.__dict__.update(kw)\n"), "replaced at line 6 (`self.__dict__.update(kw)`)"),
    (method("vars(self).update(kw)\n"), "replaced at line 6"),
    (method("self.__dict__[kw['k']] = None\n"), "replaced at line 6"),
    (method("object.__setattr__(self, kw['k'], None)\n"), "replaced at line 6"),
    (method("for k in kw:\n    if k not in ('a', 'b'):\n        raise KeyError(k)\n"
            "    k = k.upper()\n    setattr(self, k, 1)\n"), "replaced at line 10"),
    (method("for k in kw:\n    if k not in ('a', 'b'):\n        print(k)\n"
            "    setattr(self, k, 1)\n"), "replaced at line 9"),
    (method("allowed = {'a'}\nallowed.add(kw['k'])\nfor k in kw:\n    if k in allowed:\n"
            "        setattr(self, k, 1)\n"), "replaced at line 10"),
], ids=["setattr", "delattr", "through-an-alias", "splat", "f-string-may-be-the-name",
        "vars-subscript", "loop-over-a-variable", "loop-over-constants-naming-it",
        "type-of-self", "instance-from-kwargs", "instance-dict-update", "vars-self-update",
        "instance-dict-subscript", "object-setattr", "guard-then-rebound",
        "guard-that-does-not-leave", "guard-container-mutated"])
def test_a_write_of_a_computed_name_fails(make_files: MakeFiles, code: str,
                                          words: str) -> None:
    c = one(make_files, SAMPLER, code)
    assert c.status is Status.FAIL and words in c.message, c.message


@pytest.mark.parametrize("code", [
    method("for n in ('a', 'b'):\n    setattr(self, n, None)\n"),
    method("for n, v in [('a', 1), ('b', 2)]:\n    setattr(self, n, v)\n"),
    method("specs = [('a', 1), ('b', 2)]\nfor n, v in specs:\n    setattr(self, n, v)\n"
           "    setattr(self, f'{n}_staged', v)\n"),
    method("allowed = {'load_config', 'model_config'}\nfor k, v in kw.items():\n"
           "    if k not in allowed:\n        raise ValueError(', '.join(sorted(allowed)))\n"
           "    setattr(self, k, v)\n"),
    method("for k, v in kw.items():\n    if k in ('a', 'b'):\n        setattr(self, k, v)\n"),
    method("object.__setattr__(self, name, value)\n",
           "def __setattr__(self, name: str, value) -> None:"),
    method("delattr(layer, name)\n", "@staticmethod\n    def drop(layer, name):"),
    method("setattr(self.config, key, 1)\nsetattr(other, key, 1)\n"),
    f"{RUNNER_CLASS}setattr(Runner, 'sam' + 'ples', None)\n",
], ids=["loop-over-constants", "loop-over-tuples", "loop-over-a-local-list-and-f-string",
        "guard-not-in-a-local-set", "guard-in", "setattr-forwarding", "staticmethod-parameter",
        "another-object", "constant-other-name"])
def test_a_computed_name_the_file_shows_passes(make_files: MakeFiles, code: str) -> None:
    c = one(make_files, SAMPLER, code)
    assert c.status is Status.PASS, c.message


def test_an_instance_write_of_any_name_leaves_class_fields_alone(make_files: MakeFiles) -> None:
    """``setattr(self, key, value)`` shadows a method (an instance attribute wins over a
    function of the class), not what the class body binds as a field for the class."""
    code = ("class Config:\n    mode: str = 'greedy'\n\n    def __init__(self, **kw):\n"
            "        for key, value in kw.items():\n            setattr(self, key, value)\n")
    c = one(make_files, "file: pkg/mod.py\nin: Config\npattern: 'mode: $T = $V'\n", code)
    assert c.status is Status.PASS, c.message


def test_a_computed_write_on_the_function_itself_fails(make_files: MakeFiles) -> None:
    c = one(make_files, SAMPLER, f"{RUNNER_CLASS}setattr(Runner.sample, name, None)\n")
    assert c.status is Status.FAIL, c.message
    assert "Runner.sample is changed in place at line 4" in c.message, c.message


def test_a_computed_write_in_a_base_hook_fails(make_files: MakeFiles) -> None:
    c = one(make_files, SAMPLER, hooked("builtins.setattr(cls, name, None)\n"))
    assert c.status is Status.FAIL and "its base class Base (line 1)" in c.message and \
        "line 5" in c.message, c.message
    # The name is not spelled: the message shows the line's code, not a `def` that is not there.
    assert "(`builtins.setattr(cls, name, None)`, which may bind it)" in c.message, c.message


# --- 3. a namespace written as a whole --------------------------------------------------

@pytest.mark.parametrize(("code", "words"), [
    (f"{RUNNER_CLASS}    locals().update({{'sample': None}})\n",
     "`sample` is bound again on its class at line 4 (`locals().update("),
    (f"{RUNNER_CLASS}    vars().update(table)\n", "at line 4 (`vars().update(table)`)"),
    (f"{RUNNER_CLASS}    locals()[name] = None\n", "at line 4"),
], ids=["locals-update", "vars-update", "locals-computed-key"])
def test_a_class_body_namespace_update_fails(make_files: MakeFiles, code: str,
                                             words: str) -> None:
    method_rule = one(make_files, SAMPLER, code)
    assert method_rule.status is Status.FAIL and "replaced at line 4" in method_rule.message, \
        method_rule.message
    definition = one(make_files, "file: pkg/mod.py\nin: Runner\npattern: 'def sample($$$P): "
                     "$$$B'\n", code)
    assert definition.status is Status.FAIL and words in definition.message, definition.message


@pytest.mark.parametrize(("code", "line"), [
    (f"{RUNNER_CLASS}globals()['Runner'] = object\n", 4),
    (f"{RUNNER_CLASS}def load(table):\n    globals().update(table)\n", 5),
    (f"{RUNNER_CLASS}def load(name, value):\n    globals()[name] = value\n", 5),
    (f"{RUNNER_CLASS}del globals()['Runner']\n", 4),
    (f"{RUNNER_CLASS}locals()['Runner'] = object\n", 4),
    (f"{RUNNER_CLASS}globals().setdefault(name, object)\n", 4),
], ids=["constant-key", "update-in-a-function", "computed-key", "del", "module-locals",
        "setdefault-computed"])
def test_a_module_namespace_write_that_may_rebind_the_class_fails(make_files: MakeFiles,
                                                                  code: str, line: int) -> None:
    c = one(make_files, SAMPLER, code)
    assert c.status is Status.FAIL and f"at line {line}" in c.message, c.message


FUNCTION = "def helper(x):\n    return x.rejection_sampler(1)\n"


@pytest.mark.parametrize("code", [
    f"{FUNCTION}globals()['helper'] = print\n",
    f"{FUNCTION}def load(table):\n    globals().update(table)\n",
])
def test_a_module_namespace_write_that_may_rebind_a_function_fails(make_files: MakeFiles,
                                                                   code: str) -> None:
    scoped = one(make_files, "file: pkg/mod.py\nin: helper\npattern: x.rejection_sampler($$$A)\n",
                 code)
    assert scoped.status is Status.FAIL and "helper is changed in place at line" in \
        scoped.message, scoped.message
    module = one(make_files, "file: pkg/mod.py\npattern: 'def helper($$$P): $$$B'\n", code)
    assert module.status is Status.FAIL and \
        "`helper` may be bound again through the module's namespace at line" in module.message, \
        module.message


@pytest.mark.parametrize("code", [
    f"{RUNNER_CLASS}globals()['OTHER'] = 1\n",
    f"{RUNNER_CLASS}x = globals().get('Runner')\ny = globals()['Runner']\n",
    f"{RUNNER_CLASS}lib = LazyLoader('lib', globals(), 'lib')\n",
    method("locals().update(kw)\n"),
    f"{RUNNER_CLASS}table = {{}}\ntable.update(a=1)\ntable[name] = 2\n",
], ids=["another-global", "reads", "passed-to-a-call", "a-function's-locals", "a-plain-dict"])
def test_a_namespace_use_that_rebinds_nothing_passes(make_files: MakeFiles, code: str) -> None:
    c = one(make_files, SAMPLER, code)
    assert c.status is Status.PASS, c.message


# --- the real tree: what vLLM 0.31.0 does with computed names ---------------------------

def judge_text(tree: Path, invariant: str) -> Check:
    """One invariant, given as manifest text, judged on the real tree."""
    m = parse(manifest_text("r:\n" + textwrap.indent(invariant, "  ")).replace(
        "{package: pkg}", "{package: vllm}"), "m.yaml")
    with open_target(tree, "vllm") as source:
        return {c.id: c for c in audit(m, source).checks}["r"]


@pytest.mark.parametrize("invariant", [
    # update_config: `setattr(self, config_name, …)` after `if config_name not in
    # allowed_config_names: raise` (a set of two names, only read otherwise)
    "file: vllm/v1/worker/gpu_model_runner.py\nin: GPUModelRunner.update_config\n"
    "pattern: update_config($$$A)\n",
    # a loop over a tuple of five constant names
    "file: vllm/v1/attention/backends/composite.py\n"
    "in: create_composite_attention_backend.CompositeAttentionImpl.forward\n"
    "pattern: impl.forward($$$A)\n",
], ids=["guarded-setattr", "setattr-over-constants"])
def test_computed_names_vllm_shows_do_not_raise_a_false_alarm(vllm_tree: Path,
                                                              invariant: str) -> None:
    c = judge_text(vllm_tree, invariant)
    assert c.status is Status.PASS, c.message


def test_a_computed_instance_write_vllm_does_not_bound_fails(vllm_tree: Path) -> None:
    """``PoolingParams`` copies names from a table of the class (``setattr(self, k, …)``):
    the file does not show which, so a method of it is not known to be what runs."""
    c = judge_text(vllm_tree, "file: vllm/pooling_params.py\nin: PoolingParams.verify\n"
                   "pattern: self._merge_default_parameters($$$A)\n")
    assert c.status is Status.FAIL and "PoolingParams.verify is replaced at line 125 " \
        "(`setattr(self, k, getattr(pooler_config, k))`)" in c.message, c.message



# --- the registry idiom: only a builtin container stores without running code -------------

def registering(hook: str, attributes: str = "pass", prelude: str = "") -> str:
    """A base whose ``__init_subclass__`` runs ``hook`` (after ``super()``), and ``Runner``."""
    return (f"{prelude}class Base:\n    {attributes}\n\n"
            "    def __init_subclass__(cls, **kw):\n        super().__init_subclass__(**kw)\n"
            f"        {hook}\n\n\n{RUNNER_OF_BASE}")


@pytest.mark.parametrize("code", [
    registering("REG.append(cls)", prelude="REG = []\n\n\n"),
    registering("SEEN.add(cls)", prelude="SEEN: set[type] = set()\n\n\n"),
    registering("cls.order.insert(0, cls)", "order: list[type] = []"),
    registering("Base.seen.add(cls)", "seen = set()"),
    registering("REG.setdefault(cls.__name__, cls)",
                prelude="from collections import defaultdict\n\nREG = defaultdict(list)\n\n\n"),
    registering("REG.appendleft(cls)", prelude="import collections\n\nREG = collections.deque()\n"),
], ids=["module-list", "annotated-set", "class-attribute-list", "class-name-set",
        "defaultdict", "deque"])
def test_a_hook_storing_the_class_in_a_builtin_container_passes(make_files: MakeFiles,
                                                                code: str) -> None:
    c = one(make_files, SAMPLER, code)
    assert c.status is Status.PASS, c.message


REG_CLASS = "class Reg:\n    def append(self, c):\n        c.sample = None\n\n\n"


@pytest.mark.parametrize("code", [
    registering("REG.append(cls)", prelude=f"{REG_CLASS}REG = Reg()\n\n\n"),
    registering("REG.append(cls)", prelude=f"{REG_CLASS}REG = []\nREG = Reg()\n\n\n"),
    registering("REG.append(cls)", prelude=f"{REG_CLASS}list = Reg\nREG = list()\n\n\n"),
    registering("REG.append(cls)", prelude="from pkg.other import *\n\nREG = []\n\n\n"),
    registering("REG.append(cls)", prelude=f"{REG_CLASS}REG = []\nglobals()['REG'] = Reg()\n\n\n"),
    registering("REG.append(cls)", prelude="REG = []\nsetattr(mod, 'REG', value)\n\n\n"),
    registering("REG.append(cls)",
                prelude="from mylib import defaultdict\n\nREG = defaultdict(list)\n\n\n"),
    registering("registry.append(cls)"),
    registering("cls.order.append(cls)", "order = []\n\n    def f(self):\n"
                "        self.order = Reg()"),
    registering("reg.append(cls)", prelude="def f(reg):\n    pass\n\n\n"),
], ids=["same-file-class", "rebound", "list-rebound", "star-import", "namespace-write",
        "setattr-by-name", "defaultdict-from-elsewhere", "unbound", "instance-rebinds-it",
        "a-parameter"])
def test_a_hook_storing_the_class_in_another_object_fails(make_files: MakeFiles,
                                                          code: str) -> None:
    """``REG.append(cls)`` runs ``REG``'s ``append``: unless ``REG`` is certainly a builtin
    container, that is code that may replace the class's methods."""
    c = one(make_files, SAMPLER, code)
    assert c.status is Status.FAIL and "defines `__init_subclass__`" in c.message and \
        ".append(cls)`" in c.message, c.message


# --- __setattr__ forwarding: only the instance's own write is its caller's ----------------

SETATTR = "def __setattr__(self, name, value):"


@pytest.mark.parametrize(("code", "words"), [
    (f"{RUNNER_CLASS}class Proxy:\n    {SETATTR}\n        setattr(Runner, name, value)\n\n\n"
     "Proxy().sample = None\n", "replaced at line 6 (`setattr(Runner, name, value)`)"),
    (f"{RUNNER_CLASS}class Module:\n    {SETATTR}\n        globals()[name] = value\n\n\n"
     "Module().Runner = object\n", "changed in place at line 6 (`globals()[name] = value`)"),
    (method("setattr(type(self), name, value)\n", SETATTR), "replaced at line 6"),
    (method("object.__setattr__(Runner, name, value)\n", SETATTR), "replaced at line 6"),
    (method("vars(Runner)[name] = value\n", SETATTR), "replaced at line 6"),
], ids=["to-the-class", "to-globals", "to-type-of-self", "object-setattr-on-the-class",
        "to-the-class-namespace"])
def test_a_setattr_that_forwards_to_another_object_fails(make_files: MakeFiles, code: str,
                                                         words: str) -> None:
    """In ``__setattr__`` the name parameter is the caller's, written on the caller's object;
    forwarded to the class or the module's namespace, it may be any name there."""
    c = one(make_files, SAMPLER, code)
    assert c.status is Status.FAIL and words in c.message, c.message


@pytest.mark.parametrize("code", [
    method("super().__setattr__(name, value)\n", SETATTR),
    method("self.__dict__[name] = value\n", SETATTR),
    method("object.__setattr__(me, name, value)\n", "def __setattr__(me, name: str, value):"),
    method("object.__delattr__(self, name)\n", "def __delattr__(self, name):"),
], ids=["super", "own-dict", "first-parameter-named-otherwise", "delattr"])
def test_a_setattr_that_forwards_to_the_instance_passes(make_files: MakeFiles,
                                                        code: str) -> None:
    c = one(make_files, SAMPLER, code)
    assert c.status is Status.PASS, c.message
