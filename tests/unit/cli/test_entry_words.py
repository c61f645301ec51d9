"""How messages name an entry the listing could not examine.

An ``UNREADABLE`` entry's kind is a phrase, not a file type: a message built as
"is a {kind}" read "Is a entry that could not be examined where Python reads
bytecode" (a red-team run with ``vllm/__pycache__`` a symlink out of the root).
"""

from __future__ import annotations

from pp1audit.checks.distrecord import _irregular_bytecode
from pp1audit.sources.hashing import hash_here
from pp1audit.sources.inventory import UNREADABLE, Entry, what_it_is


def test_an_unexaminable_entry_is_said_as_such_with_its_reason() -> None:
    e = Entry("pkg/__pycache__/m.cpython-311.pyc", UNREADABLE, 0,
              error="resolves outside the target root")
    assert what_it_is(e) == "could not be examined (resolves outside the target root)"
    message = _irregular_bytecode(e).message
    assert message.startswith("could not be examined (resolves outside the target root) "
                               "where Python reads bytecode")
    assert "is a entry" not in message


def test_other_kinds_read_as_before() -> None:
    assert what_it_is(Entry("pkg/x", "fifo", 0)) == "is a fifo"
    assert _irregular_bytecode(Entry("pkg/__pycache__/m.pyc", "symlink", 0, link="../x")).message \
        .startswith("is a symlink where Python reads bytecode")


def test_hashing_names_an_unexaminable_entry_without_an_error_plainly() -> None:
    out = hash_here([Entry("pkg/y.py", UNREADABLE, 0)])
    assert out["pkg/y.py"].error == "could not be examined; not opened"
