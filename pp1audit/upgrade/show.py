"""``pp1audit show``: a cited span as a reviewer wants to read it.

The span with its line numbers, a few lines of context, syntax highlighting on
a terminal (rich, imported only here) and, for a citation, its status as
``check`` judges it on this tree, found where it is now rather than where it
was pinned. A citation of a named git source (or remote pin) is read where
``check`` reads it, given the same ``--repo`` / cache options.

A cited file the target holds but that cannot be read (a FIFO, a symlink out
of the tree, binary content) is what ``check`` reports as an ``error``: the
citation is shown with that check and no lines, not refused as bad input.
Everything read from the target or the manifest is shown through
``safetext.printable``. Pure: ``prepare`` measures and ``render`` returns text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from pp1audit.errors import Pp1Error, SourceError
from pp1audit.manifest import Citation, Manifest
from pp1audit.result import Check, Status
from pp1audit.sources import Source
from pp1audit.sources.store import FileStore
from pp1audit.text.safe import cut, printable, printable_code
from pp1audit.text.spans import Span, parse_safe_span

if TYPE_CHECKING:
    from pp1audit.checks.provenance import ProvenanceRun
    from pp1audit.sources.runconfig import ProvenanceOptions


@dataclass(frozen=True)
class Shown:
    """What ``show`` displays: a span of a file, its lines, and the checks that judge it."""

    path: str
    start: int
    end: int
    lines: list[str]
    checks: tuple[Check, ...]
    title: str
    note: str = ""
    problem: str = ""
    """Why the cited lines cannot be shown (the file cannot be read, or is shorter
    than the pinned span): a fault of the tree, so the gate is closed."""


def _lines(n: int) -> str:
    """``1 line``, ``2 lines``: a file's length as the messages say it."""
    return "1 line" if n == 1 else f"{n} lines"


def _citation_check(result_checks: tuple[Check, ...], cid: str) -> Check | None:
    return next((c for c in result_checks if c.kind == "citation" and c.id == cid), None)


@dataclass(frozen=True)
class _Read:
    """A cited file's lines, or why there are none (in ``check``'s words)."""

    lines: list[str]
    problem: str = ""


def _read(store: FileStore, path: str) -> _Read:
    try:
        return _Read(store.get(path).text_lines())
    except SourceError as exc:
        return _Read([], exc.sentence)


def _read_in_source(spec: str, cit: Citation, prov: ProvenanceRun | None) -> _Read:
    """Read a citation of a named git source (at its pinned commit) or remote pin,
    from the clones and cache the checks just read.

    A source nobody gave (no ``--repo``, a pin never fetched) is missing input:
    ``Pp1Error`` (exit 2) saying how to give it. A clone without the commit, a
    failed fetch, is the check's fail or error, shown like an unreadable file.
    """
    name = cit.source or ""
    if prov is None:  # (a manifest citing a source has provenance: kept for the types)
        raise Pp1Error(f"show {cut(spec, 80)}: no source '{name}' in the manifest")
    store = prov.git_store(name) if name in prov.prov.sources else prov.remote_store(name)
    if isinstance(store, FileStore):
        return _read(store, cit.span.path)
    if store.status is Status.SKIP:
        raise Pp1Error(f"show {cut(spec, 80)}: {store.message}")
    return _Read([], store.message)


def _show_citation(spec: str, manifest: Manifest, checks: tuple[Check, ...], store: FileStore,
                   prov: ProvenanceRun | None) -> Shown:
    cit = manifest.citations.get(spec)
    if cit is None:
        raise Pp1Error(f"show {cut(spec, 80)}: no citation '{spec}' in {manifest.path}")
    check = _citation_check(checks, spec)
    shown_checks = (check,) if check else ()
    span = cit.span
    where = check.found_lines if check is not None and check.found_lines else None
    start, end = where or (span.start, span.end)
    read = _read(store, span.path) if cit.source is None else _read_in_source(spec, cit, prov)
    label = span.path if cit.source is None else f"{cit.source}:{span.path}"
    if read.problem:
        return Shown(span.path, start, end, [], shown_checks, f"{spec}: {label}:{start}-{end}",
                     problem=read.problem)
    lines = read.lines
    note = ""
    if where is None and cit.unresolved is not None:  # check does not look for it then
        note = (f"marked unresolved in the manifest ({cit.unresolved}); showing the pinned "
                f"lines {span.start}-{span.end}")
    elif where is None:
        note = f"not found on this tree; showing the pinned lines {span.start}-{span.end}"
    if start > len(lines):  # clipped, the span would show lines that are not the citation's
        return Shown(span.path, span.start, span.end, [], shown_checks,
                     f"{spec}: {label}:{span.start}-{span.end}",
                     problem=f"{span.path} has only {_lines(len(lines))}")
    end = min(end, len(lines))
    return Shown(span.path, start, end, lines, shown_checks, f"{spec}: {label}:{start}-{end}", note)


def prepare(spec: str, manifest: Manifest | None, source: Source,
            options: ProvenanceOptions | None = None) -> Shown:
    """Resolve ``spec`` (a citation id, or ``path:a-b``) on ``source``.

    A citation is shown where the core finds it now (its ``found_lines``), or at
    its pinned lines when it is not found, with the check that says so. A raw
    span is shown as given, with the status of every citation of the manifest
    that overlaps it. The checks run on the store the lines are shown from: the
    status and the lines are of the same bytes.
    """
    checks: tuple[Check, ...] = ()
    store = FileStore(source)
    if ":" not in spec:
        if manifest is None:
            raise Pp1Error(f"show {cut(spec, 80)}: give a manifest to show a citation by id")
        from pp1audit.run import checks_in, open_provenance

        with open_provenance(manifest, store, options) as prov:  # one clone for checks and lines
            checks = tuple(checks_in(manifest, store, prov))
            return _show_citation(spec, manifest, checks, store, prov)
    if manifest is not None:
        from pp1audit.run import run_checks

        checks = tuple(run_checks(manifest, store, options))
    try:
        span = parse_safe_span(spec)
    except ValueError as exc:
        raise Pp1Error(f"show {cut(spec, 80)}: {exc}") from None
    lines = store.get(span.path).text_lines()
    if span.end > len(lines):
        raise Pp1Error(f"show {cut(spec, 80)}: {span.path} has only {_lines(len(lines))}")
    overlapping = tuple(
        c for c in checks
        if c.kind == "citation" and c.path == span.path and c.source is None
        and _overlaps(c.found_lines or c.lines, span)
    )
    return Shown(span.path, span.start, span.end, lines, overlapping, str(span))


def _overlaps(lines: tuple[int, int] | None, span: Span) -> bool:
    return lines is not None and lines[0] <= span.end and span.start <= lines[1]


def _status_lines(shown: Shown) -> list[str]:
    out = []
    for c in shown.checks:
        where = ""
        if c.found_lines and c.lines and c.found_lines != c.lines:
            where = f" (pinned {c.lines[0]}-{c.lines[1]}, now {c.found_lines[0]}-{c.found_lines[1]})"
        out.append(f"citation {c.id}: {c.status.value}{where} — {c.message}")
    if not shown.checks:
        out.append("no citation of the manifest covers these lines")
    if shown.note:
        out.append(shown.note)
    if shown.problem and not any(c.message == shown.problem for c in shown.checks):
        out.append(f"cannot show the lines: {shown.problem}")  # unless the check said it
    return [printable(line) for line in out]


def render(shown: Shown, context: int = 3, color: bool = False) -> str:
    """The span with numbered lines and context; highlighted with rich when ``color``.

    Title, lines and statuses come from the target and the manifest and are shown
    through ``printable`` (the code through ``printable_code``, its backslashes as
    written): a cited line holding ``ESC[2J`` or a bidi override is displayed as an
    escape, never executed by the terminal.
    """
    lo = max(1, shown.start - context)
    hi = min(len(shown.lines), shown.end + context)
    if color:
        return _render_rich(shown, lo, hi)
    width = len(str(hi))
    out = [printable(shown.title)]
    for n in range(lo, hi + 1):
        mark = ">" if shown.start <= n <= shown.end else " "
        out.append(f"{mark} {n:>{width}} │ {printable_code(shown.lines[n - 1])}".rstrip())
    out.extend(_status_lines(shown))
    return "\n".join(out) + "\n"


def _render_rich(shown: Shown, lo: int, hi: int) -> str:
    from rich.console import Console
    from rich.syntax import Syntax
    from rich.text import Text

    from pp1audit.formats.text_format import unwrapped_width

    code = "\n".join(printable_code(line) for line in shown.lines)
    # no_color: colour was asked for (``--color always`` or a terminal in auto);
    # rich would otherwise drop it whenever NO_COLOR is set, overriding the flag.
    console = Console(force_terminal=True, color_system="standard", no_color=False,
                      width=unwrapped_width(200))
    with console.capture() as cap:
        # The title holds paths from the target: plain text, never markup
        # (``pkg/a[/b].py`` would otherwise be a closing tag and crash rich).
        console.print(Text(printable(shown.title), style="bold"), highlight=False)
        if lo <= hi:
            lexer = Syntax.guess_lexer(shown.path, code=code[:2000])
            console.print(Syntax(
                code, lexer, line_numbers=True, line_range=(lo, hi),
                highlight_lines=set(range(shown.start, shown.end + 1)), theme="ansi_dark",
                word_wrap=False,
            ))
        for line in _status_lines(shown):
            console.print(line, highlight=False, markup=False)
    return cap.get()
