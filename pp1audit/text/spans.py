"""Line spans: parsing ``path:a-b``, splitting text into lines, and relocation.

Audits cite code as ``file:start–end``. These helpers make that exact: 1-based
inclusive lines; a CRLF file or one without a final newline numbers its lines
as an editor does. Relocation finds a span's anchor text again after the file
changed and never settles for a weak match: an exact line-aligned match first,
then a whitespace-normalised one, each an explicit, reported outcome.
"""

from __future__ import annotations

import bisect
import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pp1audit.text.safe import cut

_SPAN = re.compile(r"^(?P<path>[^:]+):(?P<a>\d+)(?:\s*[-–]\s*(?P<b>\d+))?$")


def line_range(start: int, end: int, dash: str = "-") -> str:
    """``start-end``, or ``start`` alone for one line: how every output names lines
    (reports pass an en dash, as audits are written)."""
    return str(start) if start == end else f"{start}{dash}{end}"


@dataclass(frozen=True)
class Span:
    """A cited span: a path and 1-based inclusive line numbers."""

    path: str
    start: int
    end: int

    def __str__(self) -> str:
        return f"{self.path}:{self.lines}"

    @property
    def lines(self) -> str:
        """``a-b``, or ``a`` for a one-line span."""
        return line_range(self.start, self.end)

    @property
    def length(self) -> int:
        """Number of lines in the span."""
        return self.end - self.start + 1


MAX_LINE_DIGITS = 18
"""A line number has at most 18 digits (below 2**63, so every JSON reader holds it):
no readable file has that many lines, and Python refuses to convert 4,301 digits."""

_SHOWN = 80
"""Characters of a span argument repeated in its error (``safetext.cut``)."""


def _line_number(digits: str, text: str) -> int:
    """``digits`` as a line number; ``ValueError`` naming ``text`` when it is too large."""
    significant = digits.lstrip("0") or "0"  # leading zeros count for int() too
    if len(significant) > MAX_LINE_DIGITS:
        raise ValueError(f"'{cut(text, _SHOWN)}': the line number is too large "
                         f"({len(significant):,} digits; at most {MAX_LINE_DIGITS})")
    return int(significant)


def parse_span(text: str) -> Span:
    """Parse ``path:a-b``, ``path:a–b`` (en dash) or ``path:a``; ``ValueError`` if not.

    The messages repeat at most ``_SHOWN`` characters of ``text``: a span is typed by
    a user (``show``, ``init --cite``) or read from a manifest, and may be huge."""
    m = _SPAN.match(text.strip())
    if not m:
        raise ValueError(f"'{cut(text, _SHOWN)}' is not 'path:start-end' or 'path:line'")
    start = _line_number(m["a"], text)
    end = _line_number(m["b"], text) if m["b"] is not None else start
    if start < 1:
        raise ValueError(f"'{cut(text, _SHOWN)}': lines are 1-based; line 0 does not exist")
    if end < start:
        raise ValueError(f"'{cut(text, _SHOWN)}': the range is reversed ({start} > {end})")
    return Span(m["path"], start, end)


def parse_safe_span(text: str) -> Span:
    """``parse_span`` whose path is also a safe relative path (``paths.path_problem``):
    what every span typed by a user (manifest, ``--cite``, ``show``) must be."""
    from pp1audit.manifest.paths import path_problem

    span = parse_span(text)
    problem = path_problem(span.path)
    if problem:
        raise ValueError(problem)
    return span


def decode_lines(data: bytes) -> list[str] | None:
    """Split UTF-8 text into lines without their endings; None if not UTF-8 text.

    A UTF-8 BOM is dropped; CRLF and lone CR end lines like LF; a missing final
    newline does not add or lose a line. Text with NUL bytes counts as binary.
    """
    if b"\x00" in data:
        return None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def normalize(lines: list[str]) -> list[str]:
    """Whitespace-normalised lines, keeping what whitespace means in Python.

    Blank lines are dropped, line ends stripped, the block dedented as a whole
    and runs of spaces folded *outside string literals*; the *relative*
    indentation of a line that starts a statement stays, so a re-indented block
    still matches but a line moved into or out of a block (a change of meaning)
    does not. (A whole span moved into or out of a block keeps its normalised
    text: ``reindented_by`` measures that shift, and a citation reports it.)
    Lines inside open brackets or inside a triple-quoted string are
    continuations, whose indentation means nothing. String literals are kept
    verbatim (``"a  b"`` is not ``"a b"``), and brackets in strings and comments
    are not counted, so a ``(`` in a comment cannot switch off the indentation
    rule for the lines after it.
    """
    kept = [line.rstrip() for line in lines if line.strip()]
    if not kept:
        return []
    indent = min(len(line) - len(line.lstrip()) for line in kept)
    out = []
    depth = 0  # open brackets outside strings and comments
    quote: str | None = None  # the triple quote of a string still open at a line end
    for line in kept:
        body = line[indent:]
        stripped = body.lstrip()
        lead = "" if depth > 0 or quote is not None else body[: len(body) - len(stripped)]
        text, change, quote = _fold_code(stripped, quote)
        out.append(lead + text)
        depth = max(0, depth + change)
    return out


def _fold_code(text: str, quote: str | None, *, strict: bool = False) -> tuple[str, int, str | None]:
    """One line's text with whitespace runs outside strings folded to one space.

    Returns the folded text, the change in bracket depth (outside strings and
    comments) and the triple quote still open at the end of the line, if any.
    ``quote`` is the one open at its start. A lexer just good enough for this:
    string prefixes need no care (they are letters before the quote), escapes
    skip a character, a single-quoted string ends at the line end at the latest.
    Without ``strict``, a triple quote opened as the line's last characters
    (``s = '''``) is not reported open: ``normalize`` has always read it so, and
    digests written by it must not change; ``reindented_by`` passes ``strict``.
    """
    out: list[str] = []
    i, n, change = 0, len(text), 0
    while i < n:
        if quote is not None:  # inside a string: verbatim up to its closing quote
            j = i
            while j < n and not text.startswith(quote, j):
                j += 2 if text[j] == "\\" else 1
            if j >= n:
                out.append(text[i:])
                return "".join(out), change, quote if len(quote) == 3 else None
            out.append(text[i:j + len(quote)])
            i, quote = j + len(quote), None
            continue
        ch = text[i]
        if ch in " \t\f\v":
            while i < n and text[i] in " \t\f\v":
                i += 1
            out.append(" ")
            continue
        if ch == "#":  # a comment: its words matter, not its spacing or brackets
            out.append(" ".join(text[i:].split()))
            break
        if ch in "\"'":
            quote = ch * 3 if text.startswith(ch * 3, i) else ch
            out.append(quote)
            i += len(quote)
            continue
        if ch in "([{":
            change += 1
        elif ch in ")]}":
            change -= 1
        out.append(ch)
        i += 1
    return "".join(out), change, quote if strict and quote is not None and len(quote) == 3 else None


def _width(line: str) -> int:
    """Column of a line's first non-blank character, tabs to multiples of 8 (as Python)."""
    return len(line[: len(line) - len(line.lstrip())].expandtabs(8))


OpenState = tuple[int, str | None]
"""Bracket depth and open triple quote at a line boundary (``normalize``'s lexer)."""


def _lex(lines: Sequence[str], state: OpenState = (0, None)) -> OpenState:
    """The lexer's state after ``lines``, starting from ``state``."""
    depth, quote = state
    for line in lines:
        _, change, quote = _fold_code(line.lstrip(), quote, strict=True)
        depth = max(0, depth + change)
    return depth, quote


def reindented_by(old: list[str], new: list[str], before: Callable[[], OpenState]) -> int:
    """Columns by which the span ``new`` (its lines now; ``before``: the lexer's state at its
    first line) is indented more than ``old`` (the anchored lines) at its first statement.

    ``normalize`` dedents a span as a whole, so a span moved into a new block (say,
    under an added ``if False:``) keeps its normalised text: in Python, the leading
    indentation of a line that starts a statement says which block it is in, and
    only a change of it is caught here. Lines that do not start a statement (blank,
    comments, inside brackets or a triple-quoted string, also one opened above the
    span) are skipped: their indentation means nothing. 0 when the first statement
    is where it was, when there is none, or when the texts do not pair line for line.
    ``before`` is a function, called only when some line moved, usually
    ``LineIndex.open_before``: a file's citations then lex it once, not once each.
    """
    old_lines = [line for line in old if line.strip()]
    new_lines = [line for line in new if line.strip()]
    if len(old_lines) != len(new_lines) or all(
            _width(a) == _width(b) for a, b in zip(old_lines, new_lines, strict=True)):
        return 0  # no line moved: no need to lex the whole file above the span
    depth, quote = before()
    for k, line in enumerate(new_lines):
        stripped = line.lstrip()
        if depth == 0 and quote is None and not stripped.startswith("#"):
            return _width(line) - _width(old_lines[k])
        _, change, quote = _fold_code(stripped, quote, strict=True)
        depth = max(0, depth + change)
    return 0


def fold(lines: list[str]) -> list[str]:
    """Non-blank lines with all whitespace folded: for context, which is soft evidence."""
    return [" ".join(line.split()) for line in lines if line.strip()]


def span_sha256(lines: list[str]) -> str:
    """Hash of a span's normalised text: survives re-indentation and blank-line edits."""
    return hashlib.sha256("\n".join(normalize(lines)).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Match:
    """Where an anchor was found: 1-based inclusive lines and how it matched."""

    start: int
    end: int
    how: str  # "exact" or "normalized"
    candidates: int
    """Equally good places (same context score); the nearest was chosen."""
    context: int  # how many of prefix/suffix also matched (0-2)
    total: int
    """Every place the anchor text was found, however its context scored."""


_CHECKPOINT = 256
"""Lines between two lexer states ``LineIndex`` keeps (memory against re-lexing)."""


@dataclass
class LineIndex:
    """One file's lines indexed for relocation: built once, shared by its citations.

    Scanning the file for each citation cost the file's length per citation (50,000
    drifted citations of a 50,000-line file: 113 s). Here each line's text, exact and
    whitespace-folded, maps to where it occurs, so a citation costs its own lines plus
    the places of its rarest line; non-blank neighbours (context) are found by
    bisection; the lexer state (``reindented_by``) is kept every ``_CHECKPOINT``
    lines, so the state above a span costs at most that many lines. Each part is
    built on first use: a run whose citations all hold in place builds nothing.
    """

    lines: list[str]
    _exact: dict[str, list[int]] | None = field(default=None, init=False, repr=False)
    _nonblank: list[int] = field(default_factory=list, init=False, repr=False)
    _folded: list[str] = field(default_factory=list, init=False, repr=False)
    _folded_at: dict[str, list[int]] | None = field(default=None, init=False, repr=False)
    _states: list[OpenState] = field(default_factory=lambda: [(0, None)], init=False,
                                     repr=False)
    _last: tuple[int, OpenState] | None = field(default=None, init=False, repr=False)

    def exact_at(self, text: str) -> list[int]:
        """0-based lines whose text is ``text``, in file order."""
        if self._exact is None:
            at: dict[str, list[int]] = {}
            for i, line in enumerate(self.lines):
                at.setdefault(line, []).append(i)
            self._exact = at
        return self._exact.get(text, [])

    def _build_folded(self) -> dict[str, list[int]]:
        if self._folded_at is None:
            self._nonblank = [i for i, line in enumerate(self.lines) if line.strip()]
            self._folded = [" ".join(self.lines[i].split()) for i in self._nonblank]
            at: dict[str, list[int]] = {}
            for k, text in enumerate(self._folded):
                at.setdefault(text, []).append(k)
            self._folded_at = at
        return self._folded_at

    @property
    def nonblank(self) -> list[int]:
        """0-based numbers of the non-blank lines, in file order."""
        self._build_folded()
        return self._nonblank

    @property
    def folded(self) -> list[str]:
        """The non-blank lines with all whitespace folded (``fold``), as ``nonblank``."""
        self._build_folded()
        return self._folded

    def folded_at(self, text: str) -> list[int]:
        """Indexes into ``nonblank``/``folded`` of the lines that fold to ``text``."""
        return self._build_folded().get(text, [])

    def folded_before(self, start: int, count: int) -> list[str]:
        """The last ``count`` non-blank lines above 0-based line ``start``, folded."""
        k = bisect.bisect_left(self.nonblank, start)
        return self.folded[max(0, k - count):k]

    def folded_after(self, end: int, count: int) -> list[str]:
        """The first ``count`` non-blank lines from 0-based line ``end`` on, folded."""
        k = bisect.bisect_left(self.nonblank, end)
        return self.folded[k:k + count]

    def open_before(self, count: int) -> OpenState:
        """The lexer's state after the first ``count`` lines (``_lex`` of them).

        Lexed on from the nearest checkpoint, or from the last answer when that is
        nearer (citations come in file order more often than not)."""
        states = self._states
        while len(states) <= count // _CHECKPOINT:
            k = len(states) - 1
            states.append(_lex(self.lines[k * _CHECKPOINT:(k + 1) * _CHECKPOINT], states[k]))
        start, state = count // _CHECKPOINT * _CHECKPOINT, states[count // _CHECKPOINT]
        if self._last is not None and start <= self._last[0] <= count:
            start, state = self._last
        state = _lex(self.lines[start:count], state)
        self._last = count, state
        return state


def _rarest(needle: list[str], places: Callable[[str], list[int]]) -> tuple[int, list[int]]:
    """The line of ``needle`` with the fewest places, and those places: every match
    holds that line at its offset, so they are the only candidates to verify."""
    best = 0, places(needle[0])
    for j in range(1, len(needle)):
        if not best[1]:
            break
        here = places(needle[j])
        if len(here) < len(best[1]):
            best = j, here
    return best


def _find_exact(lines: list[str], needle: list[str], index: LineIndex) -> list[int]:
    """0-based starts where ``needle`` occurs line-aligned in ``lines``."""
    n = len(needle)
    if n == 0:
        return []
    j, places = _rarest(needle, index.exact_at)
    out = []
    for p in places:
        i = p - j
        if i >= 0 and i + n <= len(lines) and lines[i:i + n] == needle:
            out.append(i)
    return out


def _context_score(
    index: LineIndex, start: int, end: int, prefix: list[str], suffix: list[str]
) -> int:
    """How many of the anchor's context blocks (before/after) still surround a match.

    Context is compared on non-blank, whitespace-folded lines, so blank lines
    (which YAML block scalars tend to trim) never decide a match.
    """
    score = 0
    want_prefix, want_suffix = fold(prefix), fold(suffix)
    if want_prefix and index.folded_before(start, len(want_prefix)) == want_prefix:
        score += 1
    if want_suffix and index.folded_after(end, len(want_suffix)) == want_suffix:
        score += 1
    return score


def _find_folded(lines: list[str], exact: list[str], index: LineIndex) -> list[tuple[int, int]]:
    """0-based (start, end-exclusive) windows whose normalised text is that of ``exact``.

    Windows start and end on non-blank lines, so a match never swallows blank
    lines at its edges, and hold as many non-blank lines as ``exact``. Equal
    normalised text implies equal lines once *all* whitespace is folded, so
    windows are first matched on folded lines (each line folded once per file,
    candidates found by the index), and only those are normalised and
    hashed: normalising every window cost lines × anchor lines, 40 s on a
    hostile 1M-line file.
    """
    want = fold(exact)
    if not want:
        return []
    idx, folded = index.nonblank, index.folded
    digest, n = span_sha256(exact), len(want)
    j, places = _rarest(want, index.folded_at)
    seen: dict[tuple[str, ...], bool] = {}  # a file of repeated lines normalises each text once
    out = []
    for p in places:
        k = p - j
        if k >= 0 and k + n <= len(folded) and folded[k:k + n] == want:
            s, e = idx[k], idx[k + n - 1] + 1
            window = tuple(lines[s:e])
            if window not in seen:
                seen[window] = span_sha256(list(window)) == digest
            if seen[window]:
                out.append((s, e))
    return out


def relocate(
    lines: list[str],
    pinned: Span,
    exact: list[str] | None,
    prefix: list[str],
    suffix: list[str],
    index: LineIndex | None = None,
) -> Match | None:
    """Find the anchor text ``exact`` in ``lines``; None when there is no credible match.

    Exact line-aligned matches win over whitespace-normalised ones (``normalize``);
    among several, those whose context (prefix/suffix) still surrounds them win,
    then the one nearest the pinned start. ``candidates`` and ``total`` say how
    many places there were, so that the caller can say so. Only text relocates:
    a digest alone is checked where it is pinned (searching every window of
    every size for a digest is quadratic and proves no more). ``index``: the file's
    ``LineIndex``, shared by its citations (one is built when not given).
    """
    if not exact:
        return None
    if index is None:
        index = LineIndex(lines)
    how = "exact"
    found = [(s, s + len(exact)) for s in _find_exact(lines, exact, index)]
    if not found:
        found = _find_folded(lines, exact, index)
        how = "normalized"
    if not found:
        return None
    scored = [(_context_score(index, s, e, prefix, suffix), s, e) for s, e in found]
    best_score = max(sc for sc, _, _ in scored)
    best = [(s, e) for sc, s, e in scored if sc == best_score]
    s, e = min(best, key=lambda se: (abs(se[0] + 1 - pinned.start), se[0]))
    return Match(s + 1, e, how, len(best), best_score, len(found))
