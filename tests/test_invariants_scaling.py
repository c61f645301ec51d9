"""The invariant engine's work grows linearly with a file, whatever it holds.

Reading class aliases, computed attribute names and namespaces made some
questions per *name* rescan a whole block or module: a long function of
``if k1 not in (…): raise`` / ``setattr(Runner, k1, 1)`` pairs (one guard scan of
the block per name), thousands of classes each written through an alias of its
own (one module scan per alias), a chain of aliases in one function (one
``global`` search per alias). A hostile file of a few MB then took longer than
any CI allows.

Bindings that only may happen (a ``case`` capture, an ``except … as`` name, a star
import, a ``:=`` behind ``and``) hide no other binding, so each was compared with every
binding after it, and each call in a class body looked back over every binding of its
name: a 1 MB file of ``case [x]:`` took minutes.

No clock is read here: the engine's file facts see the tree through a proxy
that counts the work of every call on a syntax node (one for ``kind()``,
``children()``…; the size of the subtree for a search, ``find_all()``, or
``text()``, which walk it), and a file four times longer must cost at most about
four times as much (quadratic work would cost sixteen).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from test_invariants_rules import MakeFiles, one

import pp1audit.matcher
from pp1audit.facts import Facts
from pp1audit.result import Check, Status

SAMPLER = "file: pkg/mod.py\nin: Runner.sample\npattern: self.rejection_sampler($$$ARGS)\n"
RUNNER = "class Runner:\n    def sample(self):\n        self.rejection_sampler(1)\n\n\n"


WALKING = frozenset({"find", "find_all", "matches", "text"})
"""Node methods that walk the node's whole subtree (natively, in one call): they cost its
size, counted as its length in characters. ``range()`` costs the columns it counts."""


class Counted:
    """A syntax node whose method calls are counted (the nodes they return are counted too):
    one per call, plus the subtree's size for a call that walks it (``WALKING``)."""

    def __init__(self, node: Any, calls: list[int]) -> None:
        self._node, self._calls = node, calls

    def __getattr__(self, name: str) -> Any:
        member = getattr(self._node, name)
        if not callable(member):
            return member

        def call(*args: Any, **kwargs: Any) -> Any:
            out = member(*args, **kwargs)
            self._calls[0] += 1 + (len(self._node.text()) if name in WALKING else 0)
            if name == "range":  # ast-grep counts both columns from the start of their lines
                self._calls[0] += out.start.column + out.end.column
            return self._wrap(out)
        return call

    def __hash__(self) -> int:  # the node's own identity, as the file's table of spans knows it
        return hash(self._node)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Counted) and self._node == other._node

    def _wrap(self, value: Any) -> Any:
        if type(value).__name__ == "SgNode":
            return Counted(value, self._calls)
        if isinstance(value, list):
            return [self._wrap(v) for v in value]
        return value


def node_calls(make_files: MakeFiles, monkeypatch: pytest.MonkeyPatch,
               code: str) -> tuple[int, Check]:
    """Calls on syntax nodes the file facts make to judge the sampler rule on ``code``, and
    the verdict (which the counting must not change)."""
    calls = [0]

    class CountingFacts(Facts):
        def __init__(self, root: Any, source: str) -> None:
            super().__init__(Counted(root, calls), source)

    with monkeypatch.context() as patch:
        patch.setattr(pp1audit.matcher, "Facts", CountingFacts)
        counted = one(make_files, SAMPLER, code)
    plain = one(make_files, SAMPLER, code)
    assert (counted.status, counted.message) == (plain.status, plain.message)
    return calls[0], counted


def guards(n: int) -> str:
    """A function of ``n`` guards, each of its own name, each before a write of that name."""
    body = "".join(f"    if k{i} not in ('a', 'b'):\n        raise KeyError\n"
                   f"    setattr(Runner, k{i}, 1)\n" for i in range(n))
    return f"{RUNNER}def f(**kw):\n{body}"


def classes(n: int) -> str:
    """``n`` classes, each with an alias of its own written with a name not spelled."""
    return RUNNER + "".join(
        f"class K{i}:\n    def m(self, **kw):\n        for k, v in kw.items():\n"
        f"            setattr(self, k, v)\n\n\nA{i} = K{i}\nsetattr(A{i}, name{i}, None)\n"
        for i in range(n))


def objects(n: int) -> str:
    """One block of ``n`` writes of computed names on an object of another module."""
    return f"{RUNNER}def f():\n" + "".join(f"    setattr(o, k{i}, None)\n" for i in range(n))


def written(n: int) -> str:
    """The alias chain, its last name written with a name not spelled: the rule fails."""
    return alias_chain(n) + f"    setattr(c{n}, name, None)\n"


def alias_chain(n: int) -> str:
    """A chain of ``n`` aliases of the class in one function."""
    return f"{RUNNER}def f():\n    c0 = Runner\n" + "".join(
        f"    c{i + 1} = c{i}\n" for i in range(n))


def stores(n: int) -> str:
    """A base whose ``__init_subclass__`` stores the class ``n`` times in a module list."""
    body = "".join("        REG.append(cls)\n" for _ in range(n))
    return ("REG = []\n\n\nclass Base:\n    def __init_subclass__(cls, **kw):\n"
            f"{body}\n\n{RUNNER.replace('class Runner:', 'class Runner(Base):')}")


def namespaces(n: int) -> str:
    """``n`` functions, each writing a global of its own through a name for ``globals()``."""
    return RUNNER + "".join(f"def f{i}():\n    g = globals()\n    g['x{i}'] = 1\n\n\n"
                            for i in range(n))


def local_aliases(n: int) -> str:
    """``n`` functions, each with aliases of its own of the class, one written harmlessly."""
    return RUNNER + "".join(f"def f{i}():\n    C = Runner\n    D = C\n    D.x{i} = 1\n\n\n"
                            for i in range(n))


def case_captures(n: int) -> str:
    """``n`` ``case`` captures of the method's name in the class body, before the method:
    each only may bind it, so none hides another (each was compared with every later one)."""
    return "class Runner:\n" + "".join(
        "    match 0:\n        case [sample]:\n            pass\n" for _ in range(n)) + \
        RUNNER.split("\n", 1)[1]


def star_imports(n: int) -> str:
    """A module of ``n`` star imports (an ``__init__`` re-exporting), then the class."""
    return "".join(f"from pkg.m{i} import *\n" for i in range(n)) + RUNNER


def stars_and_classes(n: int) -> str:
    """``n`` star imports, then ``classes``: each alias written is a name asked about, and
    each star import may bind it."""
    return "".join(f"from pkg.m{i} import *\n" for i in range(n)) + classes(n)


def except_names(n: int) -> str:
    """``n`` import fallbacks after the class, each ``except … as`` its name."""
    return RUNNER + "".join("try:\n    import x\nexcept ImportError as Runner:\n    pass\n"
                            for _ in range(n))


def self_named_instances(n: int) -> str:
    """``n`` times ``H = H()`` in the class body: each call reads the binding in force."""
    return "class H:\n    pass\n\n\n" + RUNNER.replace(
        "class Runner:\n", "class Runner:\n" + "    H = H()\n" * n)


def maybe_walruses(n: int) -> str:
    """``n`` ``:=`` of the method's name behind ``and`` in the class body, then the method."""
    return "class Runner:\n" + "    _w = x and (sample := 1)\n" * n + RUNNER.split("\n", 1)[1]


def hook_instances(n: int) -> str:
    """A same-file ``__set_name__`` that only keeps the name, and ``n`` instances of it in the
    class body: each is read through the names the file binds."""
    return ("class Hook:\n    def __set_name__(self, owner, name):\n        self.name = name\n\n\n" +
            RUNNER.replace("class Runner:\n", "class Runner:\n" + "".join(
                f"    h{i} = Hook()\n" for i in range(n))))


def hook_aliases(n: int) -> str:
    """A chain of ``n`` aliases of a class whose ``__set_name__`` writes the class, the last
    called in the class body: the rule fails, found through every alias."""
    return ("class Hook:\n    def __set_name__(self, owner, name):\n        owner.sample = None\n"
            "\n\nA0 = Hook\n" + "".join(f"A{i + 1} = A{i}\n" for i in range(n)) +
            RUNNER.replace("class Runner:\n", f"class Runner:\n    h = A{n}()\n"))


def eval_parameters(n: int) -> str:
    """``n`` functions, each with a parameter called ``eval`` that it calls."""
    return RUNNER + "".join(f"def f{i}(eval):\n    return eval({i})\n\n\n" for i in range(n))


def raising_parts(n: int) -> str:
    """``n`` statements of constants that complete before the matched call: each is read."""
    return RUNNER.replace("        self.rejection_sampler(1)\n", "".join(
        f"        print(g(), {i} / 1, (1, 2)[0])\n" for i in range(n)) +
        "        self.rejection_sampler(1)\n")


def one_line(n: int) -> str:
    """``3n`` statements on one line (minified code), each a binding read by the rule's
    questions: asking ast-grep where a node lies costs its column, so every question cost
    the line's length (26 s for 200 KB of ``x = 1; ``, before ``nodespans``). Both sizes
    are over ``nodespans.LONG_LINE``: under it, ast-grep is asked, at a bounded cost."""
    return RUNNER + "def f():\n    " + "; ".join(
        f"x{i} = Runner.sample" for i in range(3 * n)) + "\n"


def one_line_call(n: int) -> str:
    """The matched call with ``10n`` arguments on one line."""
    return RUNNER.replace("self.rejection_sampler(1)", "self.rejection_sampler(" + ", ".join(
        f"a{i}" for i in range(10 * n)) + ")")


@pytest.mark.parametrize(("make_code", "status"), [
    (guards, Status.PASS), (classes, Status.PASS), (objects, Status.PASS),
    (alias_chain, Status.PASS), (written, Status.FAIL), (stores, Status.PASS),
    (namespaces, Status.PASS), (local_aliases, Status.PASS), (case_captures, Status.PASS),
    (star_imports, Status.PASS), (stars_and_classes, Status.PASS), (except_names, Status.FAIL),
    (self_named_instances, Status.PASS), (maybe_walruses, Status.PASS),
    (hook_instances, Status.PASS), (hook_aliases, Status.FAIL), (eval_parameters, Status.PASS),
    (raising_parts, Status.PASS), (one_line, Status.PASS), (one_line_call, Status.PASS)],
    ids=["guards", "classes", "setattr-on-another-object", "alias-chain", "alias-written",
         "registry-stores", "namespace-names", "local-aliases", "case-captures", "star-imports",
         "star-imports-and-classes", "except-names", "self-named-instances", "maybe-walruses",
         "set-name-instances", "set-name-aliases", "eval-parameters", "raising-parts", "one-line",
         "one-line-call"])
def test_the_work_grows_linearly_with_the_file(make_files: MakeFiles,
                                               monkeypatch: pytest.MonkeyPatch,
                                               make_code: Callable[[int], str],
                                               status: Status) -> None:
    small, check = node_calls(make_files, monkeypatch, make_code(60))
    assert check.status is status, check.message
    large, _ = node_calls(make_files, monkeypatch, make_code(240))
    assert large <= 5 * small, (small, large)  # linear: ~4x; quadratic: ~16x
