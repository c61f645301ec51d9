"""String literals spelled as Python reads them, for the text a ``regex:`` constraint searches.

Every other comparison the matcher makes on a string literal is by value (``is:``,
``guarded_by``: ``"probabi" "listic"`` is ``"probabilistic"`` there). A ``regex:``
reads the captured code's text, and text can spell one value many ways: adjacent
literals that Python joins (``vars(self)['rejection' '_sampler']``), escapes
(``'rejection\\x5fsampler'``), a ``\\`` line continuation or a comment between the
parts. Each spelling got past a manifest's regex while calling the very attribute the
regex names. So before a regex is searched, each run of adjacent literals is written
as one literal, and a literal holding an escape is written without it: the regex sees
``'rejection_sampler'`` however the code spelled it.

The canonical spelling keeps the first part's quote character (``"`` stays ``"``, so
a regex written for the code's usual style still matches) and its ``b`` prefix; a
character that is not printable is written as Python's ``repr`` writes it. What is
left as it was: a lone literal with no backslash (it already says its value), a raw
literal on its own (its backslashes are its value), and any run holding an f-string
(its expressions are code, not a value). Text that is not code this scanner can read
(a run Python would refuse) is left as it was too: a regex then sees what it saw before.
"""

from __future__ import annotations

import ast
import functools
import re
import warnings

from pp1audit.syntaxtree import parse_expression

_PREFIX = r"[rRbBuUfF]{0,2}"
_TOKEN = re.compile(
    r"(?P<comment>\#[^\n]*)"
    r"|(?P<string>" + _PREFIX + r"""(?:'''(?:[^'\\]|\\.|'(?!''))*'''"""
    r'''|"""(?:[^"\\]|\\.|"(?!""))*"""'''
    r"""|'(?:[^'\\\n]|\\.)*'"""
    r'''|"(?:[^"\\\n]|\\.)*"))'''
    r"|(?P<word>\w+)"
    r"|(?P<open>[(\[{])|(?P<close>[)\]}])",
    re.DOTALL,
)
"""A comment, a whole string literal (any prefix, any quotes), a word (a name, a
keyword, a number) or a bracket, found left to right: a quote inside a comment or a
``#`` inside a string is never taken for the other, a word ending in a prefix's letter
is read whole (the literal after ``or`` in ``(None)or'rejection' '_sampler'`` starts at
its quote), and brackets are counted (a line break joins literals only inside them)."""
_BETWEEN = re.compile(r"(?:[ \t\f\r\n]|\\\r?\n|\#[^\n]*)*")
"""What may stand between two literals Python joins: blanks, line continuations,
comments (the parts of a joined literal inside brackets)."""
_CONTINUATION = re.compile(r"\\\r?\n")


def fold_literals(text: str) -> str:
    """``text`` with every run of adjacent string literals written as one literal and
    every escape written as the character it stands for (the module's docstring)."""
    if "'" not in text and '"' not in text:
        return text  # the common case: a name, a call on names
    return _fold(text)


@functools.lru_cache(maxsize=4096)
def _fold(text: str) -> str:
    """``fold_literals`` for text that holds a quote, cached: a regex constraint judges
    the same captured text once per candidate match."""
    out: list[str] = []
    done = 0  # text[:done] is in out
    pos = 0
    depth = 0  # brackets open at pos, counted from the text's start
    one_expression: bool | None = None  # the whole text is one expression (asked once)
    while True:
        m = _TOKEN.search(text, pos)
        if m is None:
            break
        if m.group("string") is None:  # a comment, a word or a bracket
            depth += 1 if m.group("open") else -1 if m.group("close") and depth else 0
            pos = m.end()
            continue
        run = [m]
        end = m.end()
        while True:
            gap = _BETWEEN.match(text, end)
            if gap is None:  # pragma: no cover - the pattern matches the empty text too
                break
            nxt = _TOKEN.match(text, gap.end())
            if nxt is None or nxt.group("string") is None:
                break
            if depth == 0 and "\n" in _CONTINUATION.sub("", gap.group()):
                # A line break outside brackets ends a statement (`x = "a"` then an
                # attribute's docstring), unless the text is one expression, which the
                # code around it holds in brackets (an argument written over two lines).
                if one_expression is None:
                    one_expression = parse_expression(text) is not None
                if not one_expression:
                    break
            run.append(nxt)
            end = nxt.end()
        spelled = _spelling([r.group("string") for r in run])
        if spelled is not None:
            out.append(text[done:run[0].start()])
            out.append(spelled)
            done = end
        pos = end
    if not out:
        return text
    out.append(text[done:])
    return "".join(out)


def _prefix(literal: str) -> str:
    return literal[: len(literal) - len(literal.lstrip("rRbBuUfF"))].lower()


def _spelling(parts: list[str]) -> str | None:
    """The one literal Python reads ``parts`` as, or None when they are best left as
    written (nothing to fold, an f-string among them, or not a value Python accepts)."""
    prefixes = [_prefix(p) for p in parts]
    if any("f" in p for p in prefixes):
        return None
    if len(parts) == 1 and ("\\" not in parts[0] or "r" in prefixes[0]):
        return None
    try:
        with warnings.catch_warnings():  # an invalid escape (`'\d'`) is the code's, not ours
            warnings.simplefilter("ignore")
            value = ast.literal_eval("(" + " ".join(parts) + ")")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    quote = parts[0][len(prefixes[0])]
    if isinstance(value, bytes):
        return "b" + quote + "".join(_byte(c, quote) for c in value) + quote
    if not isinstance(value, str):  # pragma: no cover - string literals evaluate to one
        return None
    return quote + "".join(_char(c, quote) for c in value) + quote


def _char(c: str, quote: str) -> str:
    if c == "\\" or c == quote:
        return "\\" + c
    return c if c.isprintable() else repr(c)[1:-1]


def _byte(b: int, quote: str) -> str:
    c = chr(b)
    if c == "\\" or c == quote:
        return "\\" + c
    return c if 0x20 <= b < 0x7F else f"\\x{b:02x}"
