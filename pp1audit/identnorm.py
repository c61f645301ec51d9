"""Identifiers as Python reads them: NFKC-normalised (PEP 3131).

Python normalises every identifier to NFKC while parsing, so ``def ſample`` defines
``sample`` and ``ｓｅｌｆ.x`` is ``self.x``. The matcher (tree-sitter) compares
identifiers by spelling: a second ``def ſample(…)`` after the audited one
replaced it unseen, and a call spelled ``rejection_ſample(…)`` escaped a
``not:`` rule. So the invariant engine reads the file with every identifier
written in the form Python uses, and string literals and comments untouched
(their text is a value, not a name: ``"probabiliſtic"`` is not
``"probabilistic"`` to Python either).

Where rewriting could not keep Python's meaning, the file is refused rather
than misread: a name Python turns into a keyword (``ｉｆ = 1`` binds a variable
called ``if``), a normalised spelling that is not an identifier, and an
identifier spelled that way inside an f-string (Python 3.11 tokenises an
f-string as one string; its expressions are not rewritten here).
"""

from __future__ import annotations

import ast
import io
import keyword
import re
import tokenize
import unicodedata
from collections.abc import Iterator

# In an f-string token: a run of ASCII word characters and any non-ASCII ones,
# which holds every identifier there (Python's separators are ASCII).
_RUN = re.compile(r"[0-9A-Za-z_\x80-\U0010ffff]+")
_F_PREFIX = re.compile(r"[rRbBuU]*[fF]")


class IdentifierError(ValueError):
    """The file spells an identifier the matcher cannot rewrite to Python's reading."""


def _identifier_char(c: str) -> bool:
    """``c`` may continue an identifier: the stdlib tokenizer reads names as ``\\w+``,
    so a combining mark (``e\\u0301``) or ``℘`` comes out as an error token."""
    return ("a" + c).isidentifier()


_NON_ASCII = re.compile(r"[^\x00-\x7f]+")
_ASCII_WORD = frozenset("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")


def _may_change(text: str) -> bool:
    """Some run of identifier characters around a non-ASCII one is not NFKC: only then
    may an identifier change (one ``…`` or ``×`` in a comment does not make the file
    worth tokenising). Each non-ASCII run is taken with the ASCII word characters
    around it, so a combining mark stays with the letter it follows."""
    for m in _NON_ASCII.finditer(text):
        start, end = m.start(), m.end()
        while start and text[start - 1] in _ASCII_WORD:
            start -= 1
        while end < len(text) and text[end] in _ASCII_WORD:
            end += 1
        run: list[str] = []
        for c in [*text[start:end], " "]:
            if c != " " and _identifier_char(c):
                run.append(c)
            elif run:
                word = "".join(run)
                if not word.isascii() and unicodedata.normalize("NFKC", word) != word:
                    return True
                run = []
    return False


def _names(tokens: Iterator[tokenize.TokenInfo]) -> Iterator[tuple[int, int, int, str]]:
    """The identifiers of a token stream as Python reads them: each NAME joined with
    the touching error tokens that continue it, (row, start, end, text); f-strings
    are checked on the way (``_check_fstring``)."""
    last: tuple[int, int, int, str] | None = None
    for tok in tokens:
        if tok.type == tokenize.STRING and _F_PREFIX.match(tok.string):
            _check_fstring(tok.string, tok.start[0])
        is_part = tok.type == tokenize.NAME or (
            tok.type == tokenize.ERRORTOKEN and tok.string and all(map(_identifier_char, tok.string)))
        if not is_part or tok.end[0] != tok.start[0]:
            continue
        row, col = tok.start
        if last is not None and last[0] == row and last[2] == col:
            last = (row, last[1], tok.end[1], last[3] + tok.string)
            continue
        if last is not None:
            yield last
        last = (row, col, tok.end[1], tok.string)
    if last is not None:
        yield last


def nfkc_identifiers(text: str) -> str:
    """``text`` (already compiled by Python, lines ended by ``\\n``) with each
    identifier replaced by its NFKC form. Lines stay where they are; a
    rewritten line may get shorter or longer. ``IdentifierError`` says why a
    file cannot be rewritten faithfully (line and the spelling)."""
    if text.isascii() or unicodedata.is_normalized("NFKC", text) or not _may_change(text):
        return text  # the common case: no identifier Python would read differently
    edits: dict[int, list[tuple[int, int, str]]] = {}
    try:
        for row, start, end, name in _names(tokenize.generate_tokens(io.StringIO(text).readline)):
            norm = unicodedata.normalize("NFKC", name)
            if norm == name:
                continue
            if keyword.iskeyword(norm) or not norm.isidentifier():
                raise IdentifierError(f"line {row}: the identifier {name!r} is {norm!r} to "
                                      "Python (NFKC), which the matcher cannot read as a name")
            edits.setdefault(row, []).append((start, end, norm))
    except (tokenize.TokenError, SyntaxError) as exc:
        # Compiled by Python but not tokenised by the stdlib's pure-Python
        # tokenizer: the spellings cannot be located, so refuse.
        raise IdentifierError(f"its identifiers could not be read ({exc})") from None
    if not edits:
        return text
    lines = text.split("\n")
    for row, spans in edits.items():
        line = lines[row - 1]
        for start, end, norm in sorted(spans, reverse=True):
            line = line[:start] + norm + line[end:]
        lines[row - 1] = line
    return "\n".join(lines)


def _check_fstring(literal: str, row: int) -> None:
    """Refuse an f-string whose expressions name something through a spelling
    Python normalises (text in its literal parts, such as ``m²``, is fine)."""
    if unicodedata.is_normalized("NFKC", literal):
        return
    try:
        tree = ast.parse(literal, mode="eval")
    except (SyntaxError, ValueError):  # the whole file compiled; a lone token may not
        tree = None
    names = set() if tree is None else {n for node in ast.walk(tree) for n in _identifiers(node)}
    spelled = {m.group() for m in _RUN.finditer(literal) if not m.group().isascii()}
    if tree is None or any(unicodedata.normalize("NFKC", w) in names - {w} for w in spelled):
        raise IdentifierError(f"line {row}: an f-string's expression spells an identifier that "
                              "Python NFKC-normalises; the matcher cannot read it")


def _identifiers(node: ast.AST) -> list[str]:
    """The identifiers an expression node names (what Python normalised)."""
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    if isinstance(node, ast.keyword) and node.arg is not None:
        return [node.arg]
    if isinstance(node, ast.arg):
        return [node.arg]
    return []
