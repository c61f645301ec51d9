"""Where a syntax node lies (character offsets, lines), at a cost that does not grow
with the length of its line.

ast-grep's ``SgNode.range()`` counts a node's column from the start of its line on
every call (the column is part of its answer, and nothing here reads it). On code
written on a few long lines (minified code, statements joined by ``;``, a call with
thousands of arguments) every question about a node costs the length of its line and
judging a rule the square of it: 26 s for a 200 KB file of ``x = 1; `` on one line,
more than two minutes at 1 MB (never waited out). So a file with a line over
``LONG_LINE`` characters has all its nodes placed once, in one pass over the tree
and the text, and the answers are read from that table; every other file keeps
asking ast-grep, whose answer is cheap on a short line (and which then costs no
memory: the table takes ~120 bytes a node).

Placing a node: a leaf lies where the text after the previous leaf, past
whitespace (and, failing that, line continuations), spells it, checked on the
text itself, so a leaf is never placed where its text is not. A node with
children spans from its first child's start to its last child's end, kept only when
that length is its own text's: the grammar's hidden tokens (a string's plain
content, a format spec's text, the newline before a ``case`` block) are no
children, so a node that starts or ends with one is asked of ast-grep instead,
as is a zero-width node and a leaf not found. The children of ``string_content``
and ``format_specifier`` (escape sequences, a format spec's nested fields, in order)
are found in their parent's own text, a nested field's subtree placed from there.
On every node of vLLM 0.31.0's 2,771 modules (8.2 million) the table gives
ast-grep's own offsets (the tests compare them on real files).

A table lives exactly as long as the file's parse (``hold``): the keys are
``hash(node)`` (ast-grep hashes the tree-sitter node's identity), and no other live
tree can hold a node of the same identity; a node of another tree (a pattern's)
is simply not found and asked of ast-grep, as are two nodes of the file whose
hashes are the same (``_AMBIGUOUS``)."""

from __future__ import annotations

import itertools
import weakref
from array import array
from bisect import bisect_left
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from ast_grep_py import SgNode

LONG_LINE = 2000
"""Characters a line may hold before its file's nodes are placed by a table. ast-grep
then spends at most ~2 µs counting a column: below what judging a node costs anyway."""

_WHITESPACE = frozenset(" \t\f\v\n\r")
_CONTENT = frozenset({"string_content", "format_specifier"})
"""Node kinds whose text holds hidden tokens around their children (escape sequences,
a format spec's nested fields): placed as a whole, their children inside them."""
_SHIFT = 32
_MASK = (1 << _SHIFT) - 1
_TAG = 64
"""Where a live entry holds the number of its table (for its file's line breaks)."""
_AMBIGUOUS = -1
"""The entry of a hash two nodes share (SipHash of the node's identity: as good as
never): both are asked of ast-grep rather than one given the other's place."""


class Table:
    """Every node of one parsed file: ``hash(node)`` → start and end (packed in one
    int), and where the file's lines break (for line numbers)."""

    __slots__ = ("breaks", "spans")

    def __init__(self, spans: dict[int, int], breaks: list[int]) -> None:
        self.spans = spans
        self.breaks = breaks


_SPANS: dict[int, int] = {}
"""The entries of every live table in one dict (normally empty: no long lines), each
tagged with its table's number: one lookup however many files have long lines."""
_TABLES: dict[int, tuple[list[int], array[int]]] = {}
"""Live tables by number: their line breaks, and the hashes they entered in ``_SPANS``."""
_NUMBERS = itertools.count(1)


def has_long_line(text: str) -> bool:
    """Whether any line of ``text`` (``\\n``-separated) is over ``LONG_LINE`` characters."""
    if len(text) <= LONG_LINE:
        return False
    at = 0
    while True:
        nl = text.find("\n", at)
        if nl < 0:
            return len(text) - at > LONG_LINE
        if nl - at > LONG_LINE:
            return True
        at = nl + 1


def place(root: SgNode, text: str) -> Table | None:
    """The table of ``root``'s nodes (parsed from ``text``) when ``text`` has a long
    line, else None (ast-grep's answers are cheap)."""
    return build(root, text) if has_long_line(text) else None


def hold(owner: object, table: Table) -> None:
    """Answer from ``table`` for as long as ``owner`` (the parse holding its tree) lives.
    Its entries move into ``_SPANS`` (the table keeps its line breaks); a hash already
    entered by another live table makes both nodes ``_AMBIGUOUS``."""
    number = next(_NUMBERS)
    tag = number << _TAG
    for h, packed in table.spans.items():
        _enter(_SPANS, h, packed if packed == _AMBIGUOUS else tag | packed)
    _TABLES[number] = (table.breaks, array("q", table.spans))
    table.spans.clear()
    weakref.finalize(owner, _release, number)


def _enter(entries: dict[int, int], h: int, entry: int) -> None:
    """Each hash is entered once: one already there is another node's, and neither
    node keeps a place (``_AMBIGUOUS``)."""
    entries[h] = _AMBIGUOUS if h in entries else entry


def _release(number: int) -> None:
    """Take a table's entries out: its own, and the ambiguous ones among its hashes (the
    other node of such a hash, in a table still live, is then not found: asked of
    ast-grep, as it was)."""
    _breaks, hashes = _TABLES.pop(number)
    for h in hashes:
        entry = _SPANS.get(h)
        if entry is not None and (entry == _AMBIGUOUS or entry >> _TAG == number):
            del _SPANS[h]


class _Placer:
    """One pass over a tree and its text, filling ``spans`` (see the module's docstring)."""

    def __init__(self, text: str, spans: dict[int, int]) -> None:
        self.text = text
        self.spans = spans

    def put(self, node: SgNode, start: int, end: int) -> None:
        _enter(self.spans, hash(node), start << _SHIFT | end)

    def asked(self, node: SgNode) -> tuple[int, int]:
        r = node.range()
        self.put(node, r.start.index, r.end.index)
        return r.start.index, r.end.index

    def locate(self, leaf: str, i: int) -> int | None:
        """Where the leaf spelt ``leaf`` starts, the previous one ending at ``i``."""
        text, n = self.text, len(self.text)
        if not leaf:
            return None  # zero-width: where tree-sitter put it is not in the text
        if text.startswith(leaf, i):
            return i  # right after the previous leaf (a string's content)
        while i < n and text[i] in _WHITESPACE:
            i += 1
        if text.startswith(leaf, i):
            return i
        while i < n and (text[i] in _WHITESPACE or text.startswith("\\\n", i)):
            i += 2 if text[i] == "\\" else 1
        return i if text.startswith(leaf, i) else None

    def run(self, nodes: list[SgNode], cursor: int) -> None:
        """Place ``nodes`` (siblings, in order) and their subtrees, the text before the
        first ending at ``cursor``."""
        spans = self.spans
        stack: list[tuple[SgNode, list[SgNode] | None]] = [
            (node, None) for node in reversed(nodes)]
        while stack:
            node, kids = stack.pop()
            if kids is not None:  # its children are placed: it spans them, if its length says so
                head, tail = spans[hash(kids[0])], spans[hash(kids[-1])]
                first, last = head >> _SHIFT, tail & _MASK
                if head != _AMBIGUOUS != tail and last - first == len(node.text()):
                    self.put(node, first, last)
                else:
                    first, last = self.asked(node)
                cursor = last
                continue
            kids = node.children()
            if kids and node.kind() not in _CONTENT:
                stack.append((node, kids))
                stack.extend((child, None) for child in reversed(kids))
                continue
            own = node.text()
            at = self.locate(own, cursor)
            if at is None:
                at, cursor = self.asked(node)
            else:
                self.put(node, at, at + len(own))
                cursor = at + len(own)
            self.inside(own, at, kids)

    def inside(self, own: str, at: int, kids: list[SgNode]) -> None:
        """The children of a node of ``_CONTENT`` (its text ``own``, at ``at``): each found
        after the one before in that text, its own subtree (a format spec's nested
        field) placed from there; one not found is asked of ast-grep."""
        after = 0
        for child in kids:
            spelt = child.text()
            j = own.find(spelt, after) if spelt else -1
            if j < 0:
                start, _end = self.asked(child)
                grand = child.children()
                if grand:
                    self.run(grand, start)
                continue
            if child.children():
                self.run([child], at + j)
            else:
                self.put(child, at + j, at + j + len(spelt))
            after = j + len(spelt)


def build(root: SgNode, text: str) -> Table:
    """The table of ``root``'s nodes (see the module's docstring for how they are placed)."""
    r = root.range()  # the module: from its first token (asked once)
    spans: dict[int, int] = {hash(root): r.start.index << _SHIFT | r.end.index}
    _Placer(text, spans).run(root.children(), 0)
    return Table(spans, _breaks(text))


def _breaks(text: str) -> list[int]:
    """The offsets of ``text``'s newlines, in order."""
    out = []
    at = text.find("\n")
    while at >= 0:
        out.append(at)
        at = text.find("\n", at + 1)
    return out


def _found(node: SgNode) -> int | None:
    """``node``'s tagged entry in a live table; None: ask ast-grep."""
    entry = _SPANS.get(hash(node))
    return None if entry is None or entry == _AMBIGUOUS else entry


def span_of(node: SgNode) -> tuple[int, int]:
    """``node``'s start and end, character offsets in its file's text."""
    if _SPANS and (entry := _found(node)) is not None:
        return entry >> _SHIFT & _MASK, entry & _MASK
    r = node.range()
    return r.start.index, r.end.index


def start_of(node: SgNode) -> int:
    """``node``'s start offset."""
    return span_of(node)[0]


def end_of(node: SgNode) -> int:
    """``node``'s end offset."""
    return span_of(node)[1]


def lines_of(node: SgNode) -> tuple[int, int]:
    """The 1-based lines ``node`` starts and ends on (tree-sitter's rows, plus one)."""
    if _SPANS and (entry := _found(node)) is not None:
        breaks = _TABLES[entry >> _TAG][0]
        return (bisect_left(breaks, entry >> _SHIFT & _MASK) + 1,
                bisect_left(breaks, entry & _MASK) + 1)
    r = node.range()
    return r.start.line + 1, r.end.line + 1
