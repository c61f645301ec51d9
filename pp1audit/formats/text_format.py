"""``--format text``: a table for people, one line per check and a summary line.

Colour and width are separate questions. With colour (a terminal without
``NO_COLOR``, or ``--color always``, which wins over ``NO_COLOR``) or on a
terminal (with colour or without) it is drawn by rich; otherwise it is plain
aligned text, which keeps rich's import cost off the path of CI logs and pipes.
Only a terminal wraps the table at its width: colour forced into a pipe or a
log keeps each row on one line, so ids and paths stay whole for grep. Passing
checks are listed only with ``verbose``. Everything read from the target is
shown through ``safetext.printable``: the audited tree must not be able to
write on the terminal (a fake verdict line, hidden text).
"""

from __future__ import annotations

import sys

from pp1audit.formats import counted, named_source, version_or_unknown
from pp1audit.result import Check, Result, Status
from pp1audit.safetext import printable
from pp1audit.spans import line_range

_STYLE = {
    Status.PASS: "green",
    Status.DRIFT: "yellow",
    Status.FAIL: "bold red",
    Status.SKIP: "cyan",
    Status.ERROR: "bold magenta",
}


def _where(check: Check) -> str:
    return printable(_place(check))


def _place(check: Check) -> str:
    if check.path is None:
        return ""
    # a file of a named git source or remote pin: say which, the path is relative to it
    source = named_source(check)
    path = check.path if source is None else f"{source}:{check.path}"
    if check.lines is None:
        return path
    where = f"{path}:{line_range(*check.lines)}"
    if check.found_lines and check.found_lines != check.lines:
        where += f" → {line_range(*check.found_lines)}"
    return where


def _detail(check: Check) -> str:
    text = check.message
    if check.status in (Status.FAIL, Status.ERROR) and check.expected and check.actual \
            and not (check.expected in text and check.actual in text):  # said once is enough
        text += f" (expected {check.expected}, found {check.actual})"
    return printable(text)


def summary(result: Result) -> str:
    """``verdict: N pass, N drift, …`` — the closing line of every text report."""
    gate = "open" if result.gate_open else "closed"
    return f"{result.verdict.upper()} (gate {gate}): {counted(result.counts())}"


def _rows(result: Result, verbose: bool) -> list[Check]:
    return [c for c in result.checks if verbose or c.status is not Status.PASS]


def render(result: Result, verbose: bool = False, color: bool = False,
           terminal: bool = False) -> str:
    """The report as text: escape codes only when ``color``; a table fitted to the
    terminal's width when ``terminal`` (stdout is one), whether coloured or not."""
    rows = _rows(result, verbose)
    head = ""
    if result.target is not None:
        t = result.target
        version = version_or_unknown(t.version)
        head = printable(f"{result.manifest_path} against {t.kind} {t.location} ({t.package} {version})")
        head += "\n"
    if color or terminal:
        return head + _render_rich(result, rows, color=color, terminal=terminal)
    ids = [printable(c.id) for c in rows]
    widths = [max((len(x) for x in col), default=0) for col in (
        [c.status.value for c in rows], [c.kind for c in rows], ids,
    )]
    lines = [head.rstrip("\n")] if head else []
    for c, cid in zip(rows, ids, strict=True):
        cells = (c.status.value.ljust(widths[0]), c.kind.ljust(widths[1]), cid.ljust(widths[2]))
        tail = "  ".join(x for x in (_where(c), _detail(c)) if x)
        lines.append("  ".join(cells) + "  " + tail)
    lines.append(summary(result))
    return "\n".join(lines) + "\n"


_UNWRAPPED = 1 << 16
"""Columns given to rich when nothing should wrap: more than any row needs."""


def unwrapped_width(on_terminal: int | None = None) -> int | None:
    """Width to give rich: ``on_terminal`` (None: rich asks the terminal) when
    stdout is a terminal, else wide enough that nothing wraps. rich alone would
    fold piped colour output at 80 columns (or at the width of whatever terminal
    stdin or stderr is), cutting ids and paths in two where a log reader greps."""
    return on_terminal if sys.stdout.isatty() else _UNWRAPPED


def _render_rich(result: Result, rows: list[Check], *, color: bool, terminal: bool) -> str:
    """The table drawn by rich: at the terminal's width when ``terminal``, else
    unwrapped; coloured when ``color``, else plain text (no escape code at all).

    ``no_color`` is given, never read from the environment by rich: ``NO_COLOR``
    was already weighed by the CLI (it applies to ``--color auto`` only), and
    rich alone would drop the colours ``--color always`` asked for."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    for name in ("status", "kind", "id", "where", "detail"):
        table.add_column(name, overflow="fold")
    for c in rows:
        # Ids, paths and messages are data, never markup (a "[/x]" in a path must print).
        table.add_row(
            Text(c.status.value, style=_STYLE[c.status]), Text(c.kind), Text(printable(c.id)),
            Text(_where(c)), Text(_detail(c)), end_section=False,
        )
    console = Console(record=True, force_terminal=True, color_system="standard" if color else None,
                      no_color=not color, width=None if terminal else _UNWRAPPED)
    with console.capture() as cap:
        if rows:
            console.print(table)
        style = "bold green" if result.gate_open else "bold red"
        console.print(Text(summary(result), style=style))
    return cap.get()
