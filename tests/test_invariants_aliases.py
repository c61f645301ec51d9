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
    registering("REG.append(cls)", prelude=f"{REG_CLASS}REG = []\ng = globals()\n"
                "g['REG'] = Reg()\n\n\n"),
    registering("REG.append(cls)",
                prelude="from mylib import defaultdict\n\nREG = defaultdict(list)\n\n\n"),
    registering("registry.append(cls)"),
    registering("cls.order.append(cls)", "order = []\n\n    def f(self):\n"
                "        self.order = Reg()"),
    registering("reg.append(cls)", prelude="def f(reg):\n    pass\n\n\n"),
], ids=["same-file-class", "rebound", "list-rebound", "star-import", "namespace-write",
        "setattr-by-name", "namespace-through-a-name", "defaultdict-from-elsewhere", "unbound",
        "instance-rebinds-it", "a-parameter"])
def test_a_hook_storing_the_class_in_another_object_fails(make_files: MakeFiles,
                                                          code: str) -> None:
    """``REG.append(cls)`` runs ``REG``'s ``append``: unless ``REG`` is certainly a builtin
    container, that is code that may replace the class's methods."""
    c = one(make_files, SAMPLER, code)
    assert c.status is Status.FAIL and "defines `__init_subclass__`" in c.message and \
        ".append(cls)`" in c.message, c.message


@pytest.mark.parametrize("code", [
    # a loop name a called function rebinds (`global k`): the constants shown are not all it holds
    registering("cls.registry.append(cls)", "registry = []", prelude=f"{REG_CLASS}def setk():\n"
                "    global k\n    k = 'registry'\n\n\n") +
    "\nfor k in ['x']:\n    setk()\n    setattr(Base, k, Reg())\n",
    # the namespace reached through a function's parameter, a returned value, exec
    registering("REG.append(cls)", prelude=f"{REG_CLASS}REG = []\n\n\ndef h(g):\n"
                "    g.update(REG=Reg())\n\n\nh(globals())\n\n\n"),
    registering("REG.append(cls)", prelude=f"{REG_CLASS}REG = []\n\n\ndef mk():\n"
                "    return globals()\n\n\nmk()['REG'] = Reg()\n\n\n"),
    registering("REG.append(cls)", prelude=f"{REG_CLASS}REG = []\nexec('REG = Reg()')\n\n\n"),
    registering("REG.append(cls)", prelude=f"{REG_CLASS}REG = []\n(g := globals())['REG'] = Reg()\n\n\n"),
    registering("REG.append(cls)", prelude=f"{REG_CLASS}REG = []\n\n\ndef f():\n    pass\n\n\n"
                "f.__globals__['REG'] = Reg()\n\n\n"),
], ids=["loop-name-rebound-by-global", "namespace-parameter", "namespace-returned", "exec",
        "walrus-namespace", "function-globals"])
def test_a_registry_the_file_may_rebind_unseen_fails(make_files: MakeFiles, code: str) -> None:
    """What a computed name may hold at run time, or a namespace handed around, is beyond
    a syntactic reading: a file that computes names or names a namespace at all does not
    get the registry idiom (a review found each of these passing)."""
    c = one(make_files, SAMPLER, code)
    assert c.status is Status.FAIL and "__init_subclass__" in c.message, c.message


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


# --- every binding form whose value may be the class ------------------------------------

@pytest.mark.parametrize(("code", "line"), [
    (f"{RUNNER_CLASS}C = Runner if flag else object\nC.sample = None\n", 5),
    (f"{RUNNER_CLASS}C = None or Runner\nC.sample = None\n", 5),
    (f"{RUNNER_CLASS}C = [Runner][0]\nC.sample = None\n", 5),
    (f"{RUNNER_CLASS}C = pick({{'a': Runner}})\nsetattr(C, 'sample', None)\n", 5),
    (f"{RUNNER_CLASS}def f(C=Runner):\n    C.sample = None\n", 5),
    (f"{RUNNER_CLASS}def f(*, C: type = Runner):\n    del C.sample\n", 5),
    (f"{RUNNER_CLASS}f = lambda C=Runner: setattr(C, 'sample', None)\n", 4),
    (f"{RUNNER_CLASS}for i, C in enumerate([Runner]):\n    C.sample = None\n", 5),
    (f"{RUNNER_CLASS}for _, C in [(1, Runner)]:\n    C.sample = None\n", 5),
    (f"{RUNNER_CLASS}for (C) in [Runner]:\n    C.sample = None\n", 5),
    (f"{RUNNER_CLASS}[setattr(C, 'sample', None) for C in (Runner,)]\n", 4),
    (f"{RUNNER_CLASS}*_, C = 1, Runner\nC.sample = None\n", 5),
    (f"{RUNNER_CLASS}(a, (C, b)) = (1, (Runner, 2))\nC.sample = None\n", 5),
    (f"{RUNNER_CLASS}with keep(Runner) as C:\n    C.sample = None\n", 5),
    (f"{RUNNER_CLASS}def f():\n    C = None\n\n    def g():\n        nonlocal C\n"
     "        C = Runner\n    g()\n    C.sample = None\n", 11),
    (f"{RUNNER_CLASS}class Holder:\n    C = Runner\n\n    def patch(self):\n"
     "        self.C.sample = None\n", 8),
], ids=["conditional", "or", "subscript-of-a-display", "call-argument", "default",
        "typed-keyword-default", "lambda-default", "enumerate", "tuple-of-a-pair",
        "parenthesized-target", "comprehension", "starred-target", "nested-target", "with-as",
        "nonlocal", "class-attribute-through-self"])
def test_a_name_bound_to_anything_mentioning_the_class_is_an_alias(
        make_files: MakeFiles, code: str, line: int) -> None:
    """Any binding whose value mentions the class (not as a callee or through an attribute
    of it) may make the name denote it: a write through that name may replace a method."""
    c = one(make_files, SAMPLER, code)
    assert c.status is Status.FAIL and f"Runner.sample is replaced at line {line}" in \
        c.message, c.message


@pytest.mark.parametrize("code", [
    f"{RUNNER_CLASS}h = Runner.helper\nh.sample = None\n",
    f"{RUNNER_CLASS}C = make(kind=1)\nC.sample = None\n",
    f"{RUNNER_CLASS}C = Runner if flag else object\nC.other = None\n",
    f"{RUNNER_CLASS}def f(C=Other):\n    C.sample = None\n",
], ids=["an-attribute-of-the-class", "no-mention",
        "another-attribute", "a-default-of-another-class"])
def test_a_binding_that_does_not_name_the_class_passes(make_files: MakeFiles,
                                                       code: str) -> None:
    c = one(make_files, SAMPLER, code)
    assert c.status is Status.PASS, c.message


# --- a namespace through a name, or replaced whole -------------------------------------

@pytest.mark.parametrize(("code", "words"), [
    (f"{RUNNER_CLASS}g = globals()\ng['Runner'] = object\n", "changed in place at line 5"),
    (f"{RUNNER_CLASS}g = globals()\nh = g\nh.update(table)\n", "changed in place at line 6"),
    (f"{RUNNER_CLASS}def load(table):\n    g = globals()\n    g |= table\n",
     "changed in place at line 6 (`g |= table`)"),
    (f"{RUNNER_CLASS}    ns = locals()\n    ns['sample'] = None\n", "replaced at line 5"),
    (method("d = self.__dict__\nd.update(kw)\n"), "replaced at line 7 (`d.update(kw)`)"),
    (method("d = vars(self)\nd[kw['k']] = 1\n"), "replaced at line 7"),
    (method("self.__dict__ = kw\n"), "replaced at line 6 (`self.__dict__ = kw`)"),
    (method("self.__dict__ |= kw\n"), "replaced at line 6 (`self.__dict__ |= kw`)"),
    (method("object.__setattr__(self, '__dict__', kw)\n"), "replaced at line 6"),
    (f"{RUNNER_CLASS}dict.update(globals(), Runner=object)\n", "changed in place at line 4"),
    (f"{RUNNER_CLASS}dict.__setitem__(vars(Runner), name, None)\n", "replaced at line 4"),
], ids=["globals-through-a-name", "through-two-names", "in-place-or", "class-body-locals",
        "instance-dict-through-a-name", "vars-through-a-name", "instance-dict-replaced",
        "instance-dict-or", "instance-dict-by-setattr", "dict-update-of-globals",
        "dict-setitem-of-vars"])
def test_a_namespace_written_through_a_name_or_whole_fails(make_files: MakeFiles, code: str,
                                                           words: str) -> None:
    c = one(make_files, SAMPLER, code)
    assert c.status is Status.FAIL and words in c.message, c.message


@pytest.mark.parametrize("code", [
    f"{RUNNER_CLASS}g = globals()\ng['OTHER'] = 1\n",
    f"{RUNNER_CLASS}def f():\n    g = globals()\n\n\ndef h(g):\n    g['Runner'] = 1\n",
    method("d = self.__dict__\nx = d.get('sample')\n"),
    method("vars(self).update(a=1, b=2)\n"),
    method("self.__dict__.update({'a': 1, 'b': 2})\n"),
    f"{RUNNER_CLASS}dict.update(table, Runner=object)\n",
], ids=["another-global", "a-name-local-to-another-function", "a-read", "update-keywords",
        "update-a-display-of-constant-keys", "dict-update-of-a-plain-dict"])
def test_a_namespace_write_the_file_names_passes(make_files: MakeFiles, code: str) -> None:
    c = one(make_files, SAMPLER, code)
    assert c.status is Status.PASS, c.message


@pytest.mark.parametrize(("code", "line"), [
    (method("vars(self).update(a=1, sample=2)\n"), 6),
    (method("self.__dict__.update({'a': 1}, **kw)\n"), 6),
    (method("self.__dict__.update({'a': 1, name: 2})\n"), 6),
], ids=["a-keyword-naming-it", "keywords-not-shown", "a-key-not-constant"])
def test_an_update_that_may_name_the_method_fails(make_files: MakeFiles, code: str,
                                                  line: int) -> None:
    c = one(make_files, SAMPLER, code)
    assert c.status is Status.FAIL and f"replaced at line {line}" in c.message, c.message


# --- names the file shows in more places ----------------------------------------------

@pytest.mark.parametrize("code", [
    method("for n in ('a', 'b'):\n    if n in kw:\n        setattr(self, n, kw[n])\n"),
    method("if k == 'x':\n    pass\nelif k in ('a', 'b'):\n    setattr(self, k, v)\n",
           "def m(self, k, v):"),
    method("[setattr(self, k, v) for k in ('a', 'b')]\n", "def m(self, v):"),
    method("[setattr(self, k, v) for k in kw if k in ('a', 'b')]\n", "def m(self, v, **kw):"),
    method("for n in ('a', 'b'):\n    setattr(self, 'x_' + n, v)\n", "def m(self, v):"),
    method("for n in ('a', 'b'):\n    setattr(self, n + '_' + n, v)\n", "def m(self, v):"),
], ids=["loop-then-a-guard-by-the-caller's-dict", "elif-guard", "comprehension-loop",
        "comprehension-guard", "constant-prefix", "concatenated-names"])
def test_a_computed_name_shown_by_an_outer_loop_elif_or_comprehension_passes(
        make_files: MakeFiles, code: str) -> None:
    c = one(make_files, SAMPLER, code)
    assert c.status is Status.PASS, c.message


@pytest.mark.parametrize(("code", "line"), [
    (method("for n in ('a', 'sample'):\n    if n in kw:\n        setattr(self, n, kw[n])\n"),
     8),
    (method("if k == 'x':\n    pass\nelif k in ('a', 'sample'):\n    setattr(self, k, v)\n",
            "def m(self, k, v):"), 9),
    (method("[setattr(self, k, v) for k in ('a', 'sample')]\n", "def m(self, v):"), 6),
    (method("[setattr(self, k, v) for k in kw if k in names]\n", "def m(self, v, **kw):"), 6),
    (method("for n in ('sam', 'b'):\n    setattr(self, n + 'ple', v)\n", "def m(self, v):"), 7),
    (method("for n in ('a', 'b'):\n    setattr(self, prefix + n, v)\n", "def m(self, v):"), 7),
], ids=["loop-naming-it", "elif-naming-it", "comprehension-naming-it",
        "comprehension-guard-not-shown", "concatenation-naming-it", "prefix-not-shown"])
def test_a_computed_name_that_may_be_the_method_still_fails(make_files: MakeFiles, code: str,
                                                            line: int) -> None:
    c = one(make_files, SAMPLER, code)
    assert c.status is Status.FAIL and f"replaced at line {line}" in c.message, c.message


def test_a_field_made_by_a_default_factory_is_not_the_class(make_files: MakeFiles) -> None:
    """vLLM's ``KernelConfig.ir_op_priority = Field(default_factory=IrOpPriorityConfig)``:
    the field holds an instance the factory makes, so writing names on it is no write on the
    class (an attribute of the instance, like any other object's)."""
    code = (f"{RUNNER_CLASS}class Config:\n    runner: Runner = Field(default_factory=Runner)\n\n"
            "    def load(self, table):\n        for name, value in table.items():\n"
            "            setattr(self.runner, name, value)\n")
    c = one(make_files, SAMPLER, code)
    assert c.status is Status.PASS, c.message
    factory = code.replace("default_factory=Runner", "default_factory=lambda: Runner")
    c = one(make_files, SAMPLER, factory)
    assert c.status is Status.FAIL and "replaced at line 9" in c.message, c.message
