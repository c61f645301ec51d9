"""The report's prose in the manifest: its blocks and ``[[…]]`` references, checked at load.

References: ``[[=a.b.c]]`` a manifest value by key path; ``[[cite:ID]]`` a
citation as ``path:a–b``; ``[[cite:ID|shown/path.py]]`` the same with a shorter
path (a suffix of the real one); ``[[lines:ID]]`` just ``a–b`` (or ``a``).

What is a reference, so that a typo is an error and never a silently dropped pin
(there is no escape, and the prose never needs one):

* ``[[`` followed (after spaces) by ``=``, ``cite:`` or ``lines:`` starts a
  reference, which must be closed by ``]]`` on its line with no bracket inside:
  ``[[=a.b]``, ``[[=a.b`` and ``[[=a [[=b]]`` are errors at that ``[[``.
* Any ``[[X]]`` (``X`` without brackets or line breaks) is a reference too, and
  an unknown kind (``[[site:c]]``, ``[[0]]``) is an error.
* Every other ``[`` is literal text, as in a Markdown link around a reference
  (``[[[=ref.title]]](url)``). A ``]`` right after a reference is literal only
  where it closes such a ``[`` written before it in the same text;
  ``[[=a.b]]]`` is an error at the stray ``]``.

Errors name the reference's own ``line:column`` in the manifest (``locate``).
Rendering them is the Markdown format's job (``formats.markdown``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pp1audit.manifest.ids import check_ids
from pp1audit.manifest.yamlpos import KeyPath
from pp1audit.text.spans import line_range, parse_span

_REF = re.compile(r"\[\[([^\[\]\n]+)\]\]")
"""A well-formed reference: no bracket inside, on one line."""
_OPENS = re.compile(r"\[\[[ \t]*(?:=|cite:|lines:)")
"""What only a reference starts with: it must then be well-formed."""
_BRACKET = re.compile(r"[\[\]]")
_SHOWN = re.compile(r"\[\[[ \t]*[^\s\[\]`]*\]?")
"""How much of an unclosed reference a message quotes: up to a space, bracket or backtick."""


class BadReference(ValueError):
    """A reference that cannot be rendered, and where it is in its text."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.offset = offset


@dataclass(frozen=True)
class Ref:
    """One well-formed ``[[…]]`` reference: ``text[start:end]``, ``body`` inside it."""

    start: int
    end: int
    body: str


@dataclass(frozen=True)
class Problem:
    """A problem of the report section, at the value under ``keypath``; ``offset``:
    how far into that value (``text``) the bad reference starts, when one does."""

    keypath: KeyPath
    message: str
    offset: int | None = None
    text: str = ""


@dataclass(frozen=True)
class Block:
    """One paragraph, bullet or generated table of the report."""

    kind: str  # "text" | "bullet" | "table"
    text: str
    evidence: tuple[str, ...]
    keypath: tuple[str | int, ...]
    table: dict[str, Any] | None = None


def _lookup(raw: dict[str, Any], dotted: str) -> object:
    """Value at a dotted key path; keys may themselves contain dots (file paths)."""
    node: object = raw
    rest = dotted
    while rest:
        if not isinstance(node, dict):
            raise KeyError(dotted)
        keys = sorted((k for k in node if rest == k or rest.startswith(k + ".")), key=len, reverse=True)
        if not keys:
            raise KeyError(dotted)
        node = node[keys[0]]
        rest = rest[len(keys[0]) + 1 :]
    return node


def dash(a: int, b: int) -> str:
    return line_range(a, b, "–")


_PIN_KINDS = (("invariants", "an invariant"), ("donors", "a donor"), ("remotes", "a remote"),
              ("sources", "a source"))


def _not_a_citation(raw: dict[str, Any], cid: str) -> str:
    """Why ``cid`` in a well-formed ``[[cite:…]]``/``[[lines:…]]`` has no span: no such
    id, or the id of another kind of pin (which has no lines to show)."""
    if not cid:
        return "no citation id"
    for section, kind in _PIN_KINDS:
        if cid in (raw.get(section) or {}):
            return f"'{cid}' names {kind}, not a citation (only citations have lines to show)"
    return f"no citation '{cid}' in the manifest"


def references(text: str) -> list[Ref]:
    """The references of ``text`` in order; ``BadReference`` at the first malformed
    one (the rules are in the module docstring)."""
    refs: list[Ref] = []
    open_brackets = 0  # literal '[' not yet closed: a Markdown link's text, say
    pos = 0
    while (m := _BRACKET.search(text, pos)) is not None:
        at = m.start()
        ref = _REF.match(text, at)
        if ref is not None:
            refs.append(Ref(at, ref.end(), ref.group(1).strip()))
            pos = ref.end()
            if text.startswith("]", pos):
                if not open_brackets:
                    raise BadReference(f"stray ']' after {ref.group()}: a reference ends with ']]'", pos)
                open_brackets -= 1
                pos += 1
            continue
        if _OPENS.match(text, at):
            raise BadReference(_unclosed(text, at), at)
        open_brackets = open_brackets + 1 if m.group() == "[" else max(0, open_brackets - 1)
        pos = at + 1
    return refs


def _unclosed(text: str, at: int) -> str:
    """Why the reference starting at ``at`` is not well-formed."""
    shown = _SHOWN.match(text, at)
    head = shown.group() if shown else "[["
    if head.endswith("]"):
        return f"{head}: a reference ends with ']]', not ']'"
    return f"{head}: unclosed reference (close it with ']]' on the same line)"


def expand(text: str, raw: dict[str, Any]) -> str:
    """Render the ``[[…]]`` references of ``text`` from the manifest; ``BadReference`` if bad."""
    out: list[str] = []
    pos = 0
    for ref in references(text):
        out += [text[pos : ref.start], render_ref(ref, raw)]
        pos = ref.end
    out.append(text[pos:])
    return "".join(out)


def render_ref(r: Ref, raw: dict[str, Any]) -> str:
    """The text one reference stands for; ``BadReference`` (at the reference) if none."""
    ref = r.body
    if ref.startswith("="):
        try:
            value = _lookup(raw, ref[1:])
        except KeyError:
            raise BadReference(f"[[{ref}]]: no such key in the manifest", r.start) from None
        if isinstance(value, (dict, list)):
            raise BadReference(f"[[{ref}]]: names a mapping or list, not a value", r.start)
        return str(value)
    kind, _, arg = ref.partition(":")
    cid, _, shown = arg.partition("|")
    if kind not in ("cite", "lines"):
        raise BadReference(f"[[{ref}]]: not a reference ([[=key.path]], [[cite:ID]], [[lines:ID]])",
                           r.start)
    citation = (raw.get("citations") or {}).get(cid)
    if citation is None:
        raise BadReference(f"[[{ref}]]: {_not_a_citation(raw, cid)}", r.start)
    span = parse_span(citation["at"])
    if kind == "lines":
        return dash(span.start, span.end)
    path = span.path
    if shown:
        if not (path == shown or path.endswith("/" + shown)):
            raise BadReference(f"[[{ref}]]: '{shown}' is not a tail of {path}", r.start)
        path = shown
    return f"{path}:{dash(span.start, span.end)}"


def parse_blocks(raw: dict[str, Any]) -> list[tuple[str | None, list[Block]]]:
    """Sections of the ``report`` section as (heading, blocks)."""
    out: list[tuple[str | None, list[Block]]] = []
    for si, section in enumerate((raw.get("report") or {}).get("sections") or []):
        blocks = []
        for bi, rec in enumerate(section.get("blocks") or []):
            path: tuple[str | int, ...] = ("report", "sections", si, "blocks", bi)
            evidence = tuple(rec.get("evidence") or ())
            if "table" in rec:
                blocks.append(Block("table", "", evidence, path, rec))
            elif "bullet" in rec:
                blocks.append(Block("bullet", rec["bullet"], evidence, path))
            else:
                blocks.append(Block("text", rec["text"], evidence, path))
        out.append((section.get("heading"), blocks))
    return out


def _titles(raw: dict[str, Any]) -> list[tuple[KeyPath, str]]:
    """The title and headings, by key path: texts with references but no evidence."""
    report = raw.get("report") or {}
    titled: list[tuple[KeyPath, str]] = []
    if "title" in report:
        titled.append((("report", "title"), report["title"]))
    elif "title" in (raw.get("audit") or {}):
        titled.append((("audit", "title"), raw["audit"]["title"]))
    for si, section in enumerate(report.get("sections") or []):
        if "heading" in section:
            titled.append((("report", "sections", si, "heading"), section["heading"]))
    return titled


def _texts(block: Block) -> list[tuple[KeyPath, str]]:
    """A block's texts with references, by their own key paths."""
    if block.kind == "table":
        header = (block.table or {}).get("header", [])
        return [((*block.keypath, "header", i), h) for i, h in enumerate(header)]
    return [((*block.keypath, block.kind), block.text)]


def _text_problems(keypath: KeyPath, text: str, raw: dict[str, Any],
                   evidence: tuple[str, ...] | None) -> list[Problem]:
    """The first bad reference of ``text``, or the spans it quotes that are not in
    ``evidence`` (None: a title, which has no evidence)."""
    try:
        expand(text, raw)
    except BadReference as exc:
        return [Problem(keypath, str(exc), exc.offset, text)]
    if evidence is None:
        return []
    # A span quoted in the prose is shown where it was pinned; only the block's
    # evidence lines say where it is now, so it must be evidence.
    citations = raw.get("citations") or {}
    return [Problem(keypath, f"cites '{cid}' but does not list it in evidence: its measured "
                             "place would not show", ref.start, text)
            for ref, cid in _cited(text) if cid in citations and cid not in evidence]


def validate(raw: dict[str, Any]) -> list[Problem]:
    """Problems of the report section, in document order; empty when valid. (Check ids
    that clash are refused before, by ``manifest.parse``: ``audit.id_clashes``.)"""

    problems: list[Problem] = []
    ids = check_ids(raw)
    for keypath, text in _titles(raw):
        problems += _text_problems(keypath, text, raw, None)
    for _, blocks in parse_blocks(raw):
        for block in blocks:
            for i, ev in enumerate(block.evidence):
                if not ids.names(ev):
                    problems.append(Problem((*block.keypath, "evidence", i), ids.why_not(ev)))
            for keypath, text in _texts(block):
                problems += _text_problems(keypath, text, raw, block.evidence)
    return problems


def _cited(text: str) -> list[tuple[Ref, str]]:
    """The ``[[cite:…]]`` and ``[[lines:…]]`` references of ``text``, with their ids."""
    out = []
    for ref in references(text):
        kind, _, arg = ref.body.partition(":")
        if kind in ("cite", "lines"):
            out.append((ref, arg.partition("|")[0]))
    return out


def locate(source: str, start: tuple[int, int], value: str, offset: int) -> tuple[int, int]:
    """The (line, column) in ``source`` of ``value[offset]`` (not a space), for the
    scalar whose node starts at ``start`` (as ``yamlpos`` gives it); ``start`` itself
    where the two cannot be matched character for character.

    The scalar's source lines are walked along the value: each line's text without
    its indentation must continue the value after the whitespace that joins the
    lines (a kept line break, a folded space, a trailing space dropped). That holds
    for every block scalar (``|``, ``>`` and their indicators), for plain scalars
    and for quoted ones, ``''`` in single quotes included, so a reference's own
    line and column come out. A backslash escape in double quotes changes the
    text (``\\x5b`` is ``[``): from the first one on, the scalar's start is the
    nearest sure place, and it is what such a reference is given.
    """
    lines = source.splitlines()
    line, col = start
    if not 0 < line <= len(lines) or not 0 < col <= len(lines[line - 1]):
        return start
    indicator = lines[line - 1][col - 1]
    quote = indicator if indicator in "'\"" else ""
    if indicator in "|>":
        first, c0 = line + 1, 0  # a block scalar's text starts on the next line
    else:
        first, c0 = line, col if quote else col - 1  # 0-based: after the quote, or at the start
    pos = 0
    for ln in range(first, len(lines) + 1):
        src = lines[ln - 1]
        c = c0 if ln == first else 0
        while c < len(src) and src[c] in " \t":
            c += 1
        while pos < len(value) and value[pos].isspace():
            pos += 1
        while c < len(src) and pos < len(value):
            if pos == offset:
                return (ln, c + 1)
            if (quote == '"' and src[c] == "\\") or value[pos] != src[c]:
                break
            c += 2 if quote == "'" and src.startswith("''", c) else 1
            pos += 1
        if src[c:].strip() or pos >= len(value) or pos > offset:
            break  # this line does not continue the value: give the scalar's start
    return start


