"""A metaclass builds the class from its body: it may put anything in place of a method.

``class Runner(metaclass=M)`` where ``M.__new__`` swaps ``run`` keeps the source of
``run`` intact while Python runs something else. Only the standard library's plain
metaclasses (``abc.ABCMeta``, ``enum``'s), imported as such, are read as building the
class as written; any other, one on a base class of the same file, and ``*bases`` /
``**kwargs`` (which may bring any metaclass) make a "method as written" rule fail.
Each bad case is first run by Python to show the method really is replaced.
"""

from __future__ import annotations

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


def runs(code: str) -> object:
    """What ``Runner().run()`` returns when Python runs ``code``."""
    scope: dict[str, object] = {}
    exec(code, scope)
    return scope["Runner"]().run()  # type: ignore[operator]


@pytest.mark.parametrize(("code", "words"), [
    (SWAPPER + "class Runner(metaclass=M):\n" + RUN, ["metaclass=M", "line 7"]),
    (SWAPPER + "class Base(metaclass=M):\n    pass\n\n\nclass Runner(Base):\n" + RUN,
     ["base class Base", "metaclass=M"]),
    (SWAPPER + "bases = (object,)\nkw = {'metaclass': M}\n\n\nclass Runner(*bases, **kw):\n" + RUN,
     ["`*bases` may bring any metaclass"]),
    (SWAPPER + "import abc\nABCMeta = M\n\n\nclass Runner(metaclass=ABCMeta):\n" + RUN,
     ["metaclass=ABCMeta", "not imported"]),
], ids=["own-metaclass", "base-metaclass", "unpacked-bases", "abcmeta-rebound"])
def test_a_metaclass_that_may_replace_the_method_fails(
    make_files: MakeFiles, code: str, words: list[str],
) -> None:
    assert runs(code) == "swapped"
    check = one(make_files, RULE, code)
    assert check.status is Status.FAIL, check.message
    for w in words:
        assert w in check.message, check.message


@pytest.mark.parametrize("head", [
    "from abc import ABCMeta\n\n\nclass Runner(metaclass=ABCMeta):\n",
    "import abc\n\n\nclass Runner(metaclass=abc.ABCMeta):\n",
    "import enum\n\n\nclass Runner(enum.Enum, metaclass=enum.EnumMeta):\n    A = 1\n\n",
    "class Runner:\n",
], ids=["from-abc", "abc-dotted", "enum", "none"])
def test_a_plain_stdlib_metaclass_keeps_the_body(make_files: MakeFiles, head: str) -> None:
    code = head + RUN
    if "enum" not in head:
        assert runs(code) == "as written"
    check = one(make_files, RULE, code)
    assert check.status is Status.PASS, check.message
