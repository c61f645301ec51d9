"""A file Python accepts but tree-sitter cannot read is not judged (an ``error`` check).

tree-sitter-python makes ``return a, *(b)`` or ``y = a, *-x`` (Python reads both as a
tuple) an ``ERROR`` node and skips it, and sometimes the code after it: matched on that,
a ``not:`` rule missed forbidden code written after such a line, an evasion anyone can
write (vLLM 0.31.0's ``vllm_flash_attn/cute/interface.py`` has ``return dqv, dv, None,
None, *((None,) * 30)``; PP1 does not read that file).
"""

from __future__ import annotations

import pytest
from test_rules_polarity import MakeFiles, one

from pp1audit.result import Status

NOT_EVIL = "file: pkg/mod.py\npattern: 'def h($$$P): $$$B'\nnot: evil()\n"
HAS_GOOD = "file: pkg/mod.py\nin: h\npattern: good()\n"


@pytest.mark.parametrize(("line", "first"), [
    ("return a, *(b)", 2),
    ("y = a, *-b", 2),
    ("return a, None, *((None,) * 30)", 2),
])
def test_a_not_rule_on_code_tree_sitter_cannot_read_is_an_error(
        make_files: MakeFiles, line: str, first: int) -> None:
    tampered = f"def h(a, b):\n    {line}\n    evil()\n"
    c = one(make_files, NOT_EVIL, tampered)
    assert c.status is Status.ERROR, c.message
    assert c.message == (f"pkg/mod.py line {first}: the parser used for rules cannot read "
                         "this code (Python can); not judged"), c.message
    # the same forbidden call, in code tree-sitter reads, is found
    c = one(make_files, NOT_EVIL, "def h(a, b):\n    y = (a, *b)\n    evil()\n")
    assert c.status is Status.FAIL and "`evil()` is present" in c.message, c.message


def test_an_unreadable_line_anywhere_in_the_file_stops_every_rule_on_it(
        make_files: MakeFiles) -> None:
    """Whole-file: what a rule reads is not bounded by its scope (bindings, ``exec``,
    attribute writes are looked for in the whole file)."""
    code = "def h():\n    good()\n\n\ndef other(a, b):\n    return a, *(b)\n"
    c = one(make_files, HAS_GOOD, code)
    assert c.status is Status.ERROR, c.message
    assert c.message.startswith("pkg/mod.py line 6: the parser used for rules"), c.message
    c = one(make_files, HAS_GOOD, code.replace("*(b)", "*b"))
    assert c.status is Status.PASS, c.message
