"""A metaclass builds the class from its body: it may put anything in place of a method.

``class Runner(metaclass=M)`` where ``M.__new__`` swaps ``run`` keeps the source of
``run`` intact while Python runs something else. Only the standard library's plain
metaclasses (``abc.ABCMeta``, ``enum``'s), imported as such, are read as building the
class as written; any other, one on a base class of the same file, and ``*bases`` /
``**kwargs`` (which may bring any metaclass) make a "method as written" rule fail.
Each bad case is first run by Python to show the method really is replaced.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from test_invariants_rules import MakeFiles, one

from pp1audit.result import Status

RULE = """\
    file: pkg/mod.py
    in: Runner.run
    pattern: self.go()
"""

SWAPPER = ("class M(type):\n    def __new__(mcs, name, bases, ns):\n"
           "        ns['run'] = lambda self: 'swapped'\n"
           "        return super().__new__(mcs, name, bases, ns)\n\n\n")
RUN = "    def run(self):\n        self.go()\n        return 'as written'\n\n    def go(self):\n" \
      "        pass\n"


def runs(code: str) -> str:
    """What ``Runner().run()`` returns when Python runs ``code``: in a child process, since
    some cases patch ``abc`` or ``builtins.__build_class__`` for the whole interpreter."""
    done = subprocess.run([sys.executable, "-c", code + "\nprint(Runner().run())\n"],
                          capture_output=True, text=True, check=True)
    return done.stdout.strip()


OWN_CASES = [
    pytest.param(SWAPPER + "class Runner(metaclass=M):\n" + RUN, ["metaclass=M", "line 7"],
                 id="own-metaclass"),
    pytest.param(SWAPPER + "class Base(metaclass=M):\n    pass\n\n\nclass Runner(Base):\n" + RUN,
                 ["base class Base", "metaclass=M"], id="base-metaclass"),
    pytest.param(SWAPPER + "bases = (object,)\nkw = {'metaclass': M}\n\n\nclass Runner(*bases, **kw):\n"
                 + RUN, ["`*bases` may bring any metaclass"], id="unpacked-bases"),
    pytest.param(SWAPPER + "import abc\nABCMeta = M\n\n\nclass Runner(metaclass=ABCMeta):\n" + RUN,
                 ["metaclass=ABCMeta", "not imported"], id="abcmeta-rebound"),
]


PLAIN_HEADS = [
    pytest.param("from abc import ABCMeta\n\n\nclass Runner(metaclass=ABCMeta):\n", id="from-abc"),
    pytest.param("import abc\n\n\nclass Runner(metaclass=abc.ABCMeta):\n", id="abc-dotted"),
    pytest.param("import enum\n\n\nclass Runner(enum.Enum, metaclass=enum.EnumMeta):\n    A = 1\n\n",
                 id="enum"),
    pytest.param("class Runner:\n", id="none"),
]



BASE_CASES = [
    pytest.param(SWAPPER + 'Base = M("Base", (), {})\n\n\nclass Runner(Base):\n' + RUN,
                 ["`Base`, a base that is neither a class statement"], id="base-made-by-a-call"),
    pytest.param(SWAPPER + "def with_metaclass(meta):\n    return meta('tmp', (), {})\n\n\n"
                 "class Runner(with_metaclass(M)):\n" + RUN,
                 ["`with_metaclass(M)`, a base computed by an expression"], id="six-with-metaclass"),
    pytest.param(SWAPPER + "class Base(metaclass=M):\n    pass\n\n\nB = Base\n\n\nclass Runner(B):\n" + RUN,
                 ["`B`, a base that is neither"], id="alias-of-a-base"),
    pytest.param(SWAPPER + "class Base(metaclass=M):\n    pass\n\n\n"
                 "class Runner(Base if True else object):\n" + RUN,
                 ["a base computed by an expression"], id="conditional-base"),
    pytest.param(SWAPPER + "class Base(metaclass=M):\n    pass\n\n\nbases = {'b': Base}\n\n\n"
                 "class Runner(bases['b']):\n" + RUN, ["`bases`, a base that is neither"],
                 id="base-from-a-container"),
    pytest.param("class Base:\n    def __init_subclass__(cls, **kw):\n"
                 "        cls.run = lambda self: 'swapped'\n\n\nB = Base\n\n\nclass Runner(B):\n" + RUN,
                 ["`B`, a base that is neither"], id="alias-of-a-hooked-base"),
    pytest.param("import abc\n" + SWAPPER + "abc.ABCMeta = M\n\n\nclass Runner(metaclass=abc.ABCMeta):\n"
                 + RUN, ["the file changes `abc`"], id="abcmeta-replaced"),
    pytest.param("import abc\n" + SWAPPER + "setattr(abc, 'ABCMeta', M)\n\n\n"
                 "class Runner(metaclass=abc.ABCMeta):\n" + RUN, ["the file changes `abc`"],
                 id="abcmeta-setattr"),
    pytest.param("import abc\n\n\ndef _new(mcs, name, bases, ns, **kw):\n"
                 "    ns['run'] = lambda self: 'swapped'\n    return type.__new__(mcs, name, bases, ns)\n\n\n"
                 "abc.ABCMeta.__new__ = _new\n\n\nclass Runner(metaclass=abc.ABCMeta):\n" + RUN,
                 ["the file changes `abc.ABCMeta`"], id="abcmeta-new-patched"),
    pytest.param("import builtins\n\n_bc = builtins.__build_class__\n\n\n"
                 "def _build(func, name, *bases, **kw):\n    cls = _bc(func, name, *bases, **kw)\n"
                 "    cls.run = lambda self: 'swapped'\n    return cls\n\n\n"
                 "builtins.__build_class__ = _build\n\n\nclass Runner:\n" + RUN,
                 ["`__build_class__` makes every class"], id="build-class-replaced"),
    pytest.param("class Evil:\n    def run(self):\n        return 'swapped'\n\n\n"
                 "class Runner:\n    def __init__(self):\n        self.__class__ = Evil\n\n" + RUN,
                 ["self.__class__ = Evil"], id="instance-class-assigned"),
]


@pytest.mark.parametrize(("code", "words"), OWN_CASES + BASE_CASES)
def test_a_metaclass_that_may_replace_the_method_fails(
    make_files: MakeFiles, code: str, words: list[str],
) -> None:
    """Also a reviewer's cases (``BASE_CASES``): Python takes the metaclass from the
    bases (``type(base)``), and the stdlib's plain metaclass can itself be changed."""
    assert runs(code) == "swapped"
    check = one(make_files, RULE, code)
    assert check.status is Status.FAIL, check.message
    for w in words:
        assert w in check.message, check.message


@pytest.mark.parametrize("head", [
    pytest.param("class Runner(metaclass=type):\n", id="type"),
    pytest.param("class Runner(object):\n", id="object"),
    pytest.param("import collections\n\n\nclass Runner(collections.UserDict):\n", id="imported"),
    pytest.param("from typing import Generic, TypeVar\n\nT = TypeVar('T')\n\n\nclass Runner(Generic[T]):\n",
                 id="generic"),
    pytest.param("class Base:\n    pass\n\n\nclass Runner(Base):\n", id="same-file"),
    *PLAIN_HEADS,
])
def test_known_bases_and_plain_metaclasses_keep_the_body(make_files: MakeFiles, head: str) -> None:
    code = head + RUN
    if "enum" not in head:  # an Enum is not instantiated that way
        assert runs(code) == "as written"
    check = one(make_files, RULE, code)
    assert check.status is Status.PASS, check.message
