"""Regenerate the Markdown audit from the manifest and, optionally, a check result.

The prose lives in the manifest's ``report`` section; every number in it that
the manifest pins (line spans, digests, commits, the version) is written as a
``[[…]]`` reference (parsed and checked by ``manifest.prose``) and rendered from
the pinned data, so the document cannot disagree with the manifest. With a result,
the audit still reads as written: a summary table opens it, each claim (a block
with evidence) is followed by one status mark linking to its evidence, what could
not be checked is said once, and the evidence closes the document.
Output is deterministic: manifest order, no clock, and no path as typed (``Names``).
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from pp1audit.formats import UNKNOWN_VERSION, counted, named_source
from pp1audit.manifest.ids import check_ids
from pp1audit.manifest.prose import Block, dash, parse_blocks, references, render_ref
from pp1audit.result import Check, Result, Status
from pp1audit.text.safe import printable, printable_code

# Markdown of untrusted text. Everything the target or the manifest says reaches the
# document through ``md`` (or, for the manifest's own prose, ``_prose``), so a file
# name, version or message can neither act (raw HTML, a control character) nor change
# the document's structure (close a code span, add a table column, start a line).

Context = Literal["code", "text", "message"]
"""Where a value goes: an inline code span, plain text, or a check's message
(Markdown whose own code spans are kept): see ``md``."""

_RUN = re.compile("`+")
_INLINE = re.compile(r"\\\\|_+|[`*~\[\]<&|]|!\Z")
"""What text escapes outside code spans: ``printable``'s doubled backslash; what starts a
code span, a link or image (``[``, ``]``, a closing ``!``), HTML or an entity (``<``,
``&``), emphasis or strikethrough (``*``, ``_``, ``~``) or a table cell (``|``). Nothing
else has inline meaning once these are inert (``(`` needs a ``]`` before it, ``>`` a
``<``), so ``.``, ``,``, ``(``, ``)``, ``:`` and ``>`` stay as written (readable)."""
_INLINE_IN_CELL = re.compile(r"\\\\|_+|[`*~\[\]<&]|!\Z")
"""The same in a table cell, whose every ``|`` is escaped afterwards (``_cell``)."""
_HTML_ENTITY = {"<": "&lt;", "&": "&amp;"}
_ENTITY = {**_HTML_ENTITY, "\\\\": "\\\\\\\\"}
_AUTHOR = re.compile(r"\\[^\x00]|[<&]")
"""What the manifest's own prose escapes outside code spans: ``<`` and ``&`` (no HTML, no
entity read into a control character), where the author has not escaped them already."""
_HOLE = "\x00"
"""Where a reference's value goes in prose while its code spans are found: a raw NUL
cannot be in the prose by then (``printable_code`` has shown it as ``\\x00``)."""
_PARAGRAPHS = re.compile(r"(\n[ \t]*\n)")
_LINE_START = re.compile(r"(?:[ \t]*(?:>|(?:[-+*]|[0-9]{1,9}[.)])[ \t]))*[ \t]*")
"""What may come before a value on its line for the value to begin a block: indentation
and the markers of block quotes and list items (a value after ``> `` or ``- `` starts a
block inside them)."""
_NUMBER_START = re.compile(_LINE_START.pattern + "[0-9]{1,9}")
"""A line so far that a ``.`` or ``)`` would make an ordered list item (``2026`` + ``.``)."""
_BLOCK_MARK = frozenset("#>-+=")
"""The first characters that start a block (a heading, quote, list item, thematic break
or setext underline) that ``_INLINE`` leaves as they are."""
_ORDINAL = re.compile(r"[0-9]+(?=[.)])")
"""Digits before ``.`` or ``)``: an ordered list item where it begins a line."""
_CLOSING_HASHES = re.compile(r"(?:^|(?<= ))#(?=#* *\Z)")
"""The first ``#`` of a run of them that ends a heading after a space: a closing sequence
(dropped by CommonMark) unless escaped."""


def md(value: str, context: Context, *, cell: bool = False) -> str:
    """``value`` (from the target or the manifest) as Markdown that shows it and does nothing.

    Control and invisible characters are ``printable`` escapes everywhere. Then, by context:

    * ``code``: a name, path, version or id, as an inline code span fenced by more
      backticks than the longest run in it (padded with a space where it starts or ends
      with one, as CommonMark wants), so no backtick in it can close the span;
    * ``text``: plain text (a reference's value, a package or source name, a digest),
      escaped by ``_inline``: no code span, link, image, autolink, HTML, entity,
      emphasis or strikethrough can start in it, and ``printable``'s ``\\\\`` is doubled
      once more, as Markdown reads ``\\\\`` as one backslash: rendered, the text reads
      exactly as ``printable`` shows it, so a name holding a literal ``\\x1b`` still
      differs from one holding ESC;
    * ``message``: a check's message, which is Markdown: its code spans are kept as
      written and outside them it is escaped as ``text``. As nothing outside a code span
      can start a link or HTML tag any more (the only constructs CommonMark reads before
      a code span that starts later), the code spans ``_pieces`` finds are CommonMark's.

    ``cell``: the value is in a GFM table cell, where ``|`` ends the cell even inside a
    code span unless written ``\\|`` (GFM's rule: the table reads it back as ``|``).
    """
    shown = printable(value)
    if context == "code":
        out = _code_span(shown)
    elif context == "text":
        out = _inline(shown, cell=cell)
    else:
        out = _outside_code(shown, lambda piece: _inline(piece, cell=cell))
    return _cell(out) if cell else out


def _inline(text: str, *, cell: bool = False) -> str:
    """``text`` (``printable``: one line) as Markdown text that shows it and does nothing:
    ``_INLINE`` escaped, a backslash before each punctuation mark (``<``, ``&`` as
    entities). A run of ``_`` with a letter or digit on both sides stays as written:
    CommonMark lets it neither open nor close emphasis, so ``snake_case`` and
    ``a.__init__`` keep their underscores readable (the latter's, next to ``.``, do not)."""

    def escaped(m: re.Match[str]) -> str:
        mark = m.group()
        if mark[0] != "_":
            return _ENTITY.get(mark, "\\" + mark)
        start, end = m.span()
        if start > 0 and end < len(text) and text[start - 1].isalnum() and text[end].isalnum():
            return mark
        return "\\_" * len(mark)

    return (_INLINE_IN_CELL if cell else _INLINE).sub(escaped, text)


def _cell(text: str) -> str:
    """``text`` in a GFM table cell: each ``|`` written ``\\|``. The table takes one
    backslash off before a ``|`` and reads the rest as inline Markdown, so the cell
    shows exactly what ``text`` would show outside a table, code spans included."""
    return text.replace("|", "\\|")


def _block_safe(text: str) -> str:
    """``text`` (escaped by ``_inline``) where it begins a line, so that it begins
    nothing: its first character escaped when it would start a heading, quote, list
    item, thematic break or setext underline, the dot or parenthesis of a leading
    number (``1.``) escaped, and a leading space written ``&#32;`` (four of them would
    start a code block, and any would be dropped)."""
    if text.startswith(" "):
        return "&#32;" + text[1:]
    if text[:1] in _BLOCK_MARK:
        return "\\" + text
    if (number := _ORDINAL.match(text)) is not None:
        return text[: number.end()] + "\\" + text[number.end():]
    return text


def _code_span(text: str) -> str:
    """``text`` (already escaped: one line) as an inline code span nothing in it can close."""
    if not text:
        return ""  # no span shows nothing: a space between backticks would read as a space
    fence = "`" * (1 + max((len(run) for run in _RUN.findall(text)), default=0))
    stripped = text.startswith(" ") and text.endswith(" ") and text.strip(" ")
    pad = " " if text.startswith("`") or text.endswith("`") or stripped else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _pieces(text: str) -> list[tuple[str, bool]]:
    """``text`` cut into (piece, is it a code span), as CommonMark reads inline code:
    a run of N backticks opens a span that the next run of exactly N closes; a run
    with none is literal, as is a backtick after a backslash outside a span."""
    pieces: list[tuple[str, bool]] = []
    start = pos = 0
    while pos < len(text):
        if text[pos] == "\\":
            pos += 2
            continue
        run = _RUN.match(text, pos)
        if run is None:
            pos += 1
            continue
        closing = re.compile(f"(?<!`){run.group()}(?!`)").search(text, run.end())
        if closing is None:
            pos = run.end()
            continue
        if start < pos:
            pieces.append((text[start:pos], False))
        pieces.append((text[pos:closing.end()], True))
        start = pos = closing.end()
    if start < len(text):
        pieces.append((text[start:], False))
    return pieces


def _outside_code(text: str, escape: Callable[[str], str]) -> str:
    """``text`` with ``escape`` applied to what is not in a code span."""
    return "".join(piece if code else escape(piece) for piece, code in _pieces(text))


def _prose(text: str, raw: dict[str, Any], *, one_line: bool = False, cell: bool = False) -> str:
    """The manifest's own Markdown (a title, heading, header cell, paragraph or bullet)
    with its references rendered; ``BadReference`` if one is bad.

    The prose stays Markdown (emphasis, links, its code spans), but shows its control
    characters escaped (and its line breaks too when ``one_line``: a title cannot
    start a new line) and its ``<`` and ``&`` as ``&lt;`` and ``&amp;`` outside code
    spans (no raw HTML, no entity for a control character). A reference's value is
    data: outside a code span it is ``md`` text that also cannot begin a block or a
    link destination (``_value_text``); inside one it is put in the span, which is
    fenced anew so that a backtick in the value cannot close it. Code spans are found
    before the values go in (one paragraph at a time, as CommonMark does), so a value
    cannot move them."""
    refs = references(text)
    escape = printable_code if one_line else _lines_code
    bounds = [0, *(at for r in refs for at in (r.start, r.end)), len(text)]
    skeleton = _HOLE.join(escape(text[a:b]) for a, b in zip(bounds[::2], bounds[1::2], strict=True))
    values = iter([printable(render_ref(r, raw)) for r in refs])
    out: list[str] = []
    for para in _PARAGRAPHS.split(skeleton):
        for piece, code in _pieces(para):
            if not code:
                author = _AUTHOR.sub(lambda m: _HTML_ENTITY.get(m.group(), m.group()), piece)
                out.append(_fill_text(author, values, "".join(out), one_line=one_line, cell=cell))
            elif _HOLE in piece:
                out.append(_code_span(_fill(_span_text(piece), values)))
            else:
                out.append(piece)
    rendered = "".join(out)
    return _cell(rendered) if cell else rendered


def _fill(piece: str, values: Iterator[str]) -> str:
    """``piece`` (inside a code span) with its holes filled by the next values as they are."""
    first, *rest = piece.split(_HOLE)
    return first + "".join(next(values) + after for after in rest)


def _fill_text(piece: str, values: Iterator[str], before: str, *, one_line: bool, cell: bool) -> str:
    """``piece`` (prose outside code spans, after the Markdown ``before`` it) with its
    holes filled by the next values as ``_value_text``. A backslash of the prose right
    before a hole is its own (a literal one, as in ``C:\\``) and is escaped: else it
    would take the escape off the value's first character (an escaped backtick would
    read as an escaped backslash and a live backtick). A value that leaves its line a
    number (``2026``) has a ``.`` or ``)`` after it escaped: no ordered list item."""
    first, *rest = piece.split(_HOLE)
    out = first
    for after in rest:
        if (len(out) - len(out.rstrip("\\"))) % 2:
            out += "\\"
        out += _value_text(next(values), (before + out).rpartition("\n")[2], one_line=one_line, cell=cell)
        if not one_line and after[:1] in (".", ")") and _NUMBER_START.fullmatch(
                (before + out).rpartition("\n")[2]):
            after = "\\" + after
        out += after
    return out


def _value_text(value: str, line: str, *, one_line: bool, cell: bool) -> str:
    """A reference's value (``printable``) as prose text, after ``line`` (the Markdown of
    its line so far): ``_inline``, and what its place adds. After a ``]`` a first
    punctuation mark is escaped (``(`` would make the prose's ``[x]`` a link, ``:`` a
    link definition), as is a first ``.`` or ``)`` after a line's leading number. In a
    title or heading (``one_line``) a closing run of ``#`` is escaped (CommonMark would
    drop it); elsewhere, where nothing but indentation and list or quote markers
    precede it, the value begins a block and is ``_block_safe``."""
    text = _inline(value, cell=cell)
    first = text[:1]
    if first and ((line.endswith("]") and first in string.punctuation and first not in "\\&")
                  or (not one_line and first in ".)" and _NUMBER_START.fullmatch(line))):
        text = "\\" + text
    if one_line:
        return _CLOSING_HASHES.sub(r"\\#", text)
    return _block_safe(text) if _LINE_START.fullmatch(line) else text


def _lines_code(text: str) -> str:
    """``printable_code`` line by line: prose keeps its line breaks."""
    return "\n".join(printable_code(line) for line in text.split("\n"))


def _span_text(span: str) -> str:
    """What a code span shows (CommonMark): inside its fences, one space stripped from
    each end when both ends have one (and it is not all spaces)."""
    fence = len(span) - len(span.lstrip("`"))
    text = span[fence:-fence]
    if text.startswith(" ") and text.endswith(" ") and text.strip(" "):
        text = text[1:-1]
    return text.replace("\n", " ")


WORDS = ("holds", "moved", "stale", "broken", "not checked")
"""What a claim's evidence says of it (``Claim.status``), in the summary's order."""


@dataclass(frozen=True)
class Names:
    """How the summary names the manifest and the target: by the file names of what
    they resolve to (``cli._names``), never the paths as typed, so that ``report
    --check`` passes from any directory and checkout. The SHA-256s (the manifest's, a
    wheel's own ``target_sha256``) and the target's kind, package and version identify them."""

    manifest: str
    target: str | None = None
    target_sha256: str | None = None


@dataclass(frozen=True)
class Claim:
    """A block with evidence: its number (its evidence's anchor ``#claim-N``, as a
    heading ``Claim N`` gets it), the checks its evidence shows (each once, in
    evidence order) and the evidence that shows no check of this run."""

    number: int
    checks: tuple[Check, ...]
    unrun: tuple[str, ...]

    def status(self) -> tuple[str, str]:
        """The status word and what it adds (the ids that broke it, where it moved to).
        Skipped checks judge nothing: a claim is ``not checked`` when all are skipped."""
        measured = [c for c in self.checks if c.status is not Status.SKIP]
        for word, bad in (("broken", (Status.FAIL, Status.ERROR)), ("stale", (Status.STALE,))):
            if hit := [c for c in measured if c.status in bad]:
                return word, ": " + ", ".join(md(c.id, "code") for c in hit)
        if not measured:
            return "not checked", ""
        moved = [_lines(c) or md(c.id, "code") for c in measured if c.status is Status.DRIFT]
        return ("moved", ": " + ", ".join(moved)) if moved else ("holds", "")

    def mark(self) -> str:
        """The line after the claim: its status and a link to its evidence."""
        word, detail = self.status()
        total = len(self.checks) + len(self.unrun)
        missing = total - sum(c.status is not Status.SKIP for c in self.checks)
        part = f"; {missing} of {total} checks not checked" if missing and word != "not checked" else ""
        return f"↳ **{word}**{detail} ([claim {self.number}](#claim-{self.number}){part})"


def _lines(check: Check) -> str:
    """Where a check's evidence is: ``a–b``, or ``a–b → c–d`` when it moved; "" if nowhere."""
    now = check.found_lines or check.lines
    if now is None:
        return ""
    if check.lines and check.lines != now:
        return f"{dash(*check.lines)} → {dash(*now)}"
    return dash(*now)


def evidence_line(check: Check) -> str:
    """One measured fact in one Markdown line, its file said by the line above it
    (``_evidence``), every value through ``md``: where its lines are if it passed or
    moved, else its message."""
    head = f"**{check.status.value}** {md(check.id, 'code')}"
    if check.path is None and (source := named_source(check)):
        head += f" [{md(source, 'text')}]"
    if check.kind == "version" and check.actual:
        return f"{head}: found {md(check.actual, 'code')}, pinned {md(str(check.expected), 'code')}"
    where = _lines(check)
    if where and check.status in (Status.PASS, Status.DRIFT):
        return f"{head} {where}" + (f" (nearest of {check.places} places)" if check.places > 1 else "")
    detail = md(check.message, "message")
    if check.kind == "file" and check.status is not Status.PASS and check.actual:
        detail += f"; actual {md(check.actual, 'code')}"
    return f"{head}{' ' + where if where else ''}: {detail}"


def _excerpt(check: Check, indent: str) -> list[str]:
    if not check.excerpt:
        return []
    first = (check.found_lines or check.lines or (1, 1))[0]
    lines = [printable_code(line) for line in check.excerpt.split("\n")]
    # A fence longer than any run of backticks in the code: cited code cannot close it.
    fence = "`" * max(3, 1 + max((len(r) for r in _RUN.findall("\n".join(lines))), default=0))
    body = [f"{indent}{fence}python"]
    body += [f"{indent}{first + i:5d}  {line}".rstrip() for i, line in enumerate(lines)]
    return [*body, f"{indent}{fence}"]


def _evidence(checks: tuple[Check, ...], unrun: tuple[str, ...], excerpts: bool) -> list[str]:
    """The measured checks grouped under their file (each path said once), the
    evidence no check of this run stands for, and the skipped ids in one line."""
    groups: dict[tuple[str | None, str | None, str], list[Check]] = {}
    for c in checks:
        if c.status is not Status.SKIP:
            key = (named_source(c), c.path, "") if c.path else (None, None, c.id)
            groups.setdefault(key, []).append(c)
    out: list[str] = []
    for (source, path, _), group in groups.items():
        indent = "  "
        if path is not None:
            tag = f"[{md(source, 'text')}] " if source else ""
            out.append(f"- {tag}{md(path, 'code')}")
            indent = "    "
        for c in group:
            out.append(f"{indent[2:]}- {evidence_line(c)}")
            out += _excerpt(c, indent) if excerpts else []
    out += [f"- **not checked** {md(ev, 'code')}: no check of this run" for ev in unrun]
    if skipped := [md(c.id, "code") for c in checks if c.status is Status.SKIP]:
        out.append(f"- **skip** {', '.join(skipped)} ([why](#not-checked))")
    return out


def _table(block: Block, raw: dict[str, Any], result: Result | None,
           shown: set[str]) -> list[str]:
    """The hash table of ``files`` under the block's prefix; adds the file check
    ids it shows to ``shown`` (they are not listed again as uncited)."""
    spec = block.table or {}
    prefix = spec.get("prefix", "")
    header = [_prose(h, raw, one_line=True, cell=True) for h in spec.get("header", ["File", "SHA256"])]
    by_id = {c.id: c for c in result.checks} if result else {}
    if result:
        header.append("measured")
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for path, digest in (raw.get("files") or {}).items():
        if not path.startswith(prefix):
            continue
        row = [md(path[len(prefix):], "code", cell=True), md(str(digest), "text", cell=True)]
        shown.add(f"file:{path}")
        if result:
            check = by_id.get(f"file:{path}")
            if check is None:
                row.append("not checked")
            elif check.status is Status.PASS:
                row.append("**pass**")
            else:
                measured = (md(check.actual, "text", cell=True) if check.actual
                            else md(check.message, "message", cell=True))
                row.append(f"**{check.status.value}**: {measured}")
        lines.append("| " + " | ".join(row) + " |")
    return lines


def claims_of(raw: dict[str, Any], result: Result) -> dict[tuple[str | int, ...], Claim]:
    """The claims of the report by their block's key path, numbered in document order."""
    ids = check_ids(raw)
    claims: dict[tuple[str | int, ...], Claim] = {}
    for _, blocks in parse_blocks(raw):
        for block in (b for b in blocks if b.evidence):
            cited: dict[str, Check] = {}
            unrun = []
            for ev in block.evidence:
                found = ids.cited(result.checks, ev)
                cited.update((c.id, c) for c in found)
                unrun += [] if found else [ev]
            claims[block.keypath] = Claim(len(claims) + 1, tuple(cited.values()), tuple(unrun))
    return claims


def render(raw: dict[str, Any], result: Result | None = None, excerpts: bool = False,
           names: Names | None = None) -> str:
    """The Markdown audit: as pinned (no result) or with what was measured;
    ``names``: how to name the manifest and target (default: as the result has them)."""
    report = raw.get("report") or {}
    title = _prose(report.get("title", str((raw.get("audit") or {}).get("title", "Audit"))), raw,
                   one_line=True)
    out = [f"# {title}", ""]
    claims = claims_of(raw, result) if result is not None else {}
    if result is not None:
        out += _summary(result, claims, names)
    shown = {c.id for claim in claims.values() for c in claim.checks}  # not listed again
    previous = ""
    for heading, blocks in parse_blocks(raw):
        if heading:
            out += ["", f"## {_prose(heading, raw, one_line=True)}", ""]
        for block in blocks:
            indent = ""
            if previous == "bullet" and block.kind != "bullet":
                out.append("")  # a list ends before the next paragraph
            if block.kind == "table":
                out += _table(block, raw, result, shown)
            elif block.kind == "bullet":
                lines = _prose(block.text.rstrip("\n"), raw).split("\n")
                # Continuation lines stay as written (Markdown's lazy continuation),
                # as audits are usually hand-wrapped.
                out += ["* " + lines[0], *lines[1:]]
                indent = "  "
            else:
                out += _prose(block.text.rstrip("\n"), raw).split("\n")
            if (claim := claims.get(block.keypath)) is not None:
                out += ["", indent + claim.mark(), ""]  # the mark is a paragraph of its own
            elif block.kind != "bullet":
                out.append("")
            previous = block.kind
    if result is not None:
        out += _unchecked(raw, result, claims)
        out += _appendix(result, claims, shown, excerpts)
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip("\n") + "\n"
    return "\n".join(line.rstrip() for line in text.split("\n"))


def _summary(result: Result, claims: dict[Any, Claim], names: Names | None) -> list[str]:
    """The table that opens a measured audit: target, digests, verdict, claims by status."""
    rows = []
    if (t := result.target) is not None:
        where = t.location if names is None or names.target is None else names.target
        # No version found in the tree: said in words, as `check` says it (not "None").
        version = md(t.version, "code", cell=True) if t.version else f"({UNKNOWN_VERSION})"
        rows.append(f"| Target | {md(t.kind, 'text', cell=True)} {md(where, 'code', cell=True)} — "
                    f"{md(t.package, 'text', cell=True)} {version} |")
        if names is not None and names.target_sha256:
            rows.append(f"| Target SHA-256 | `{names.target_sha256}` |")
    manifest = str(result.manifest_path) if names is None else names.manifest
    rows.append(f"| Manifest | {md(manifest, 'code', cell=True)}, SHA-256 `{result.manifest_sha256}` |")
    gate = "open" if result.gate_open else "closed"
    rows.append(f"| Verdict | **{result.verdict}**, gate {gate} ({counted(result.counts())}) |")
    if claims:
        tally = Counter(claim.status()[0] for claim in claims.values())
        rows.append(f"| Claims | {len(claims)}: " + ", ".join(f"{w} {tally[w]}" for w in WORDS) + " |")
    if skipped := sum(c.status is Status.SKIP for c in result.checks):
        rows.append(f"| Not checked | {skipped} checks: see [Not checked](#not-checked) |")
    return ["| | |", "|---|---|", *rows, ""]


_OWNERS = (("sources", "git source"), ("donors", "donor"), ("remotes", "remote"))


def _unchecked(raw: dict[str, Any], result: Result, claims: dict[Any, Claim]) -> list[str]:
    """The skipped checks, once, grouped by the source or pin they lack (else by their
    message), with the claims they leave unchecked and the commands that would check
    them: ``--repo NAME=PATH`` and ``pp1audit fetch``, as their messages say."""
    kinds = {name: kind for section, kind in _OWNERS for name in raw.get(section) or {}}
    groups: dict[str, list[Check]] = {}
    for c in result.checks:
        if c.status is Status.SKIP:
            owner = named_source(c) or c.id.partition(":")[0]
            groups.setdefault(owner if owner in kinds else c.message, []).append(c)
    if not groups:
        return []
    out = ["## Not checked", "", "| input | checks | claims | why |", "|---|---|---|---|"]
    for key, checks in groups.items():
        ids = {c.id for c in checks}
        numbers = [str(k.number) for k in claims.values() if ids & {c.id for c in k.checks}]
        name = f"{kinds[key]} {md(key, 'code', cell=True)}" if key in kinds else "—"
        why = min((c.message for c in checks), key=len)
        out.append(f"| {name} | {len(checks)} | {', '.join(numbers) or '—'} | "
                   f"{md(why, 'message', cell=True)} |")
    repos = [f"--repo {k}=PATH" for k, checks in groups.items()
             if kinds.get(k) == "git source" and any(f"--repo {k}=PATH" in c.message for c in checks)]
    fetch = any("pp1audit fetch" in c.message for checks in groups.values() for c in checks)
    if repos or fetch:
        again = f"this report again with {md(' '.join(repos), 'code')}" if repos else "this report again"
        out += ["", "To check them, run " + ("`pp1audit fetch`, then " if fetch else "") + again + "."]
    return [*out, ""]


def _appendix(result: Result, claims: dict[Any, Claim], shown: set[str], excerpts: bool) -> list[str]:
    """``## Evidence``: each claim's checks under its anchor, then the checks no claim
    and no table cites."""
    out = ["## Evidence", ""]
    for claim in claims.values():
        out += [f"### Claim {claim.number}", "", *_evidence(claim.checks, claim.unrun, excerpts), ""]
    if rest := tuple(c for c in result.checks if c.id not in shown):
        out += ["### Not cited by a claim", "", *_evidence(rest, (), excerpts)]
    return out if len(out) > 2 else []
