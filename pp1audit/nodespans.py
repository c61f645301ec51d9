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
and ``format_specifier`` (escape sequences, in order) are found in their parent's
own text. On every node of vLLM 0.31.0's 2,771 modules (8.2 million) the table
gives ast-grep's own offsets (the tests compare them on real files).

A table lives exactly as long as the file's parse (``hold``): the keys are
``hash(node)`` (ast-grep hashes the tree-sitter node's identity), and no other live
tree can hold a node of the same identity; a node of another tree (a pattern's)
is simply not found and asked of ast-grep, as are two nodes of the file whose
hashes are the same (``_AMBIGUOUS``)."""

from __future__ import annotations

import weakref
from bisect import bisect_left
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from ast_grep_py import SgNode

LONG_LINE = 2000
"""Characters a line may hold before its file's nodes are placed by a table. ast-grep
then spends at most ~2 µs counting a column: below what judging a node costs anyway."""

_WHITESPACE = frozenset(" \t\f\v\n\r")
_CONTENT = frozenset({"string_content", "format_specifier"})
"""Node kinds whose text holds hidden tokens around their children (escape sequences):
placed as a whole, their children inside them."""
_SHIFT = 32
_MASK = (1 << _SHIFT) - 1
_AMBIGUOUS = -1
"""The entry of a hash two nodes of the file share (SipHash of the node's identity: as
good as never): both are asked of ast-grep rather than one given the other's place."""


class Table:
    """Every node of one parsed file: ``hash(node)`` → start and end (packed in one
    int), and where the file's lines break (for line numbers)."""

    __slots__ = ("breaks", "spans")

    def __init__(self, spans: dict[int, int], breaks: list[int]) -> None:
        self.spans = spans
        self.breaks = breaks


_LIVE: list[Table] = []
"""Tables of the files whose parse is alive (normally none: no long lines)."""


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
    """Answer from ``table`` for as long as ``owner`` (the parse holding its tree) lives."""
    _LIVE.append(table)
    weakref.finalize(owner, _LIVE.remove, table)


def build(root: SgNode, text: str) -> Table:
    """The table of ``root``'s nodes (see the module's docstring for how they are placed)."""
    spans: dict[int, int] = {hash(root): len(text)}  # the module: (0, its text's end)
    n = len(text)
    cursor = 0

    def put(node: SgNode, start: int, end: int) -> None:
        _put(spans, hash(node), start, end)

    def asked(node: SgNode) -> tuple[int, int]:
        r = node.range()
        put(node, r.start.index, r.end.index)
        return r.start.index, r.end.index

    def locate(leaf: str, i: int) -> int | None:
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

    stack: list[tuple[SgNode, list[SgNode] | None]] = [
        (child, None) for child in reversed(root.children())]
    while stack:
        node, kids = stack.pop()
        if kids is not None:  # its children are placed: it spans them, if its length says so
            head, tail = spans[hash(kids[0])], spans[hash(kids[-1])]
            first, last = head >> _SHIFT, tail & _MASK
            if head != _AMBIGUOUS != tail and last - first == len(node.text()):
                put(node, first, last)
            else:
                first, last = asked(node)
            cursor = last
            continue
        kids = node.children()
        if kids and node.kind() not in _CONTENT:
            stack.append((node, kids))
            stack.extend((child, None) for child in reversed(kids))
            continue
        own = node.text()
        at = locate(own, cursor)
        if at is None:
            at, cursor = asked(node)
        else:
            put(node, at, at + len(own))
            cursor = at + len(own)
        inside = 0
        for child in kids:  # escape sequences, in order, in the content's own text
            spelt = child.text()
            j = own.find(spelt, inside) if spelt else -1
            if j < 0 or child.children():
                _place_asked(child, spans)
                continue
            put(child, at + j, at + j + len(spelt))
            inside = j + len(spelt)
    return Table(spans, _breaks(text))


def _place_asked(node: SgNode, spans: dict[int, int]) -> None:
    """A node and its subtree placed by asking ast-grep: what the text cannot place."""
    todo = [node]
    while todo:
        x = todo.pop()
        r = x.range()
        _put(spans, hash(x), r.start.index, r.end.index)
        todo.extend(x.children())


def _put(spans: dict[int, int], h: int, start: int, end: int) -> None:
    """Each node is put once: a hash already there is another node's (``_AMBIGUOUS``)."""
    spans[h] = _AMBIGUOUS if h in spans else start << _SHIFT | end


def _breaks(text: str) -> list[int]:
    """The offsets of ``text``'s newlines, in order."""
    out = []
    at = text.find("\n")
    while at >= 0:
        out.append(at)
        at = text.find("\n", at + 1)
    return out


def _found(node: SgNode) -> tuple[Table, int] | None:
    """The live table that places ``node``, and its packed span; None: ask ast-grep."""
    h = hash(node)
    for table in _LIVE:
        packed = table.spans.get(h)
        if packed is not None:
            return None if packed == _AMBIGUOUS else (table, packed)
    return None


def span_of(node: SgNode) -> tuple[int, int]:
    """``node``'s start and end, character offsets in its file's text."""
    if _LIVE and (hit := _found(node)) is not None:
        return hit[1] >> _SHIFT, hit[1] & _MASK
    r = node.range()
    return r.start.index, r.end.index


def start_of(node: SgNode) -> int:
    """``node``'s start offset."""
    if _LIVE and (hit := _found(node)) is not None:
        return hit[1] >> _SHIFT
    return node.range().start.index


def end_of(node: SgNode) -> int:
    """``node``'s end offset."""
    if _LIVE and (hit := _found(node)) is not None:
        return hit[1] & _MASK
    return node.range().end.index


def lines_of(node: SgNode) -> tuple[int, int]:
    """The 1-based lines ``node`` starts and ends on (tree-sitter's rows, plus one)."""
    if _LIVE and (hit := _found(node)) is not None:
        table, packed = hit
        return (bisect_left(table.breaks, packed >> _SHIFT) + 1,
                bisect_left(table.breaks, packed & _MASK) + 1)
    r = node.range()
    return r.start.line + 1, r.end.line + 1
