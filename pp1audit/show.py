"""``pp1audit show``: a cited span as a reviewer wants to read it.

The span with its line numbers, a few lines of context, syntax highlighting on
a terminal (rich, imported only here) and, for a citation, its status as
``check`` judges it on this tree, found where it is now rather than where it
was pinned. Pure: ``prepare`` measures and ``render`` returns text.
"""

from __future__ import annotations

from dataclasses import dataclass

from pp1audit.errors import Pp1Error
from pp1audit.manifest import Manifest
from pp1audit.result import Check
from pp1audit.sources import Source
from pp1audit.spans import Span, parse_safe_span
from pp1audit.store import FileStore


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


def _citation_check(result_checks: tuple[Check, ...], cid: str) -> Check | None:
    return next((c for c in result_checks if c.kind == "citation" and c.id == cid), None)


def prepare(spec: str, manifest: Manifest | None, source: Source) -> Shown:
    """Resolve ``spec`` (a citation id, or ``path:a-b``) on ``source``.

    A citation is shown where the core finds it now (its ``found_lines``), or at
    its pinned lines when it is not found, with the check that says so. A raw
    span is shown as given, with the status of every citation of the manifest
    that overlaps it.
    """
    checks: tuple[Check, ...] = ()
    if manifest is not None:
        from pp1audit.audit import audit

        checks = audit(manifest, source).checks
    store = FileStore(source)
    if ":" not in spec:
        if manifest is None:
            raise Pp1Error(f"show {spec}: give a manifest to show a citation by id")
        cit = manifest.citations.get(spec)
        if cit is None:
            raise Pp1Error(f"show {spec}: no citation '{spec}' in {manifest.path}")
        if cit.source is not None:
            raise Pp1Error(f"show {spec}: cited in source '{cit.source}', not in the target")
        check = _citation_check(checks, spec)
        span = cit.span
        where = check.found_lines if check is not None and check.found_lines else None
        start, end = where or (span.start, span.end)
        lines = store.get(span.path).text_lines()
        note = ""
        if where is None and cit.unresolved is not None:  # check does not look for it then
            note = (f"marked unresolved in the manifest ({cit.unresolved}); showing the pinned "
                    f"lines {span.start}-{span.end}")
        elif where is None:
            note = f"not found on this tree; showing the pinned lines {span.start}-{span.end}"
        start, end = min(start, max(len(lines), 1)), min(end, len(lines))
        if end < start:
            raise Pp1Error(f"show {spec}: {span.path} has only {len(lines)} lines")
        title = f"{spec}: {span.path}:{start}-{end}"
        return Shown(span.path, start, end, lines, (check,) if check else (), title, note)
    try:
        span = parse_safe_span(spec)
    except ValueError as exc:
        raise Pp1Error(f"show {spec}: {exc}") from None
    lines = store.get(span.path).text_lines()
    if span.end > len(lines):
        raise Pp1Error(f"show {spec}: {span.path} has only {len(lines)} lines")
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
    return out


def render(shown: Shown, context: int = 3, color: bool = False) -> str:
    """The span with numbered lines and context; highlighted with rich when ``color``."""
    lo = max(1, shown.start - context)
    hi = min(len(shown.lines), shown.end + context)
    if color:
        return _render_rich(shown, lo, hi)
    width = len(str(hi))
    out = [f"{shown.title}"]
    for n in range(lo, hi + 1):
        mark = ">" if shown.start <= n <= shown.end else " "
        out.append(f"{mark} {n:>{width}} │ {shown.lines[n - 1]}".rstrip())
    out.extend(_status_lines(shown))
    return "\n".join(out) + "\n"


def _render_rich(shown: Shown, lo: int, hi: int) -> str:
    from rich.console import Console
    from rich.syntax import Syntax
    from rich.text import Text

    code = "\n".join(shown.lines)
    lexer = Syntax.guess_lexer(shown.path, code=code[:2000])
    syntax = Syntax(
        code, lexer, line_numbers=True, line_range=(lo, hi),
        highlight_lines=set(range(shown.start, shown.end + 1)), theme="ansi_dark",
        word_wrap=False,
    )
    console = Console(force_terminal=True, color_system="standard", width=200)
    with console.capture() as cap:
        # The title holds paths from the target: plain text, never markup
        # (``pkg/a[/b].py`` would otherwise be a closing tag and crash rich).
        console.print(Text(shown.title, style="bold"), highlight=False)
        console.print(syntax)
        for line in _status_lines(shown):
            console.print(line, highlight=False, markup=False)
    return cap.get()
