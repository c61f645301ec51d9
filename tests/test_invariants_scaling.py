"""The invariant engine's work grows linearly with a file, whatever it holds.

Reading class aliases, computed attribute names and namespaces made some
questions per *name* rescan a whole block or module: a long function of
``if k1 not in (…): raise`` / ``setattr(Runner, k1, 1)`` pairs (one guard scan of
the block per name), thousands of classes each written through an alias of its
own (one module scan per alias), a chain of aliases in one function (one
``global`` search per alias). A hostile file of a few MB then took longer than
any CI allows.

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
from pp1audit.filefacts import Facts
from pp1audit.result import Check, Status

SAMPLER = "file: pkg/mod.py\nin: Runner.sample\npattern: self.rejection_sampler($$$ARGS)\n"
RUNNER = "class Runner:\n    def sample(self):\n        self.rejection_sampler(1)\n\n\n"


WALKING = frozenset({"find", "find_all", "matches", "text"})
"""Node methods that walk the node's whole subtree (natively, in one call): they cost its
size, counted as its length in characters."""


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
            self._calls[0] += 1 + (len(self._node.text()) if name in WALKING else 0)
            return self._wrap(member(*args, **kwargs))
        return call

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


@pytest.mark.parametrize(("make_code", "status"), [
    (guards, Status.PASS), (classes, Status.PASS), (objects, Status.PASS),
    (alias_chain, Status.PASS), (written, Status.FAIL), (stores, Status.PASS),
    (namespaces, Status.PASS), (local_aliases, Status.PASS)],
    ids=["guards", "classes", "setattr-on-another-object", "alias-chain", "alias-written",
         "registry-stores", "namespace-names", "local-aliases"])
def test_the_work_grows_linearly_with_the_file(make_files: MakeFiles,
                                               monkeypatch: pytest.MonkeyPatch,
                                               make_code: Callable[[int], str],
                                               status: Status) -> None:
    small, check = node_calls(make_files, monkeypatch, make_code(60))
    assert check.status is status, check.message
    large, _ = node_calls(make_files, monkeypatch, make_code(240))
    assert large <= 5 * small, (small, large)  # linear: ~4x; quadratic: ~16x
