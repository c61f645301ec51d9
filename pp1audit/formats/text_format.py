"""``--format text``: a table for people, one line per check and a summary line.

Colour and width are separate questions. On a terminal (with colour or
without) it is drawn by rich, at the terminal's width, under a header row, its
first line fitted too; its rows are grouped by status, broken first, and the
skips are told once per input they wait for (``--repo lane=PATH``, ``pp1audit
fetch``) instead of one row each. Anywhere else it is plain aligned text, one check per
line and no header, which keeps rich's import cost off the path of CI logs and
pipes; colour forced there (``--color always``, which wins over ``NO_COLOR``)
only wraps the status and the verdict in escape codes, so the rows are the
same bytes once the codes are stripped, and ids and paths stay whole for grep. Passing
checks are listed only with ``verbose``. Everything read from the target is
shown through ``safetext.printable``: the audited tree must not be able to
write on the terminal (a fake verdict line, hidden text).
"""

from __future__ import annotations

import re
import sys
import unicodedata
from collections.abc import Iterable

from pp1audit.formats import counted, named_source, skip_reasons, version_or_unknown
from pp1audit.result import Check, Result, Status
from pp1audit.text.safe import as_code_points, can_show, printable
from pp1audit.text.spans import line_range

_STYLE = {
    Status.PASS: "green",
    Status.DRIFT: "yellow",
    Status.STALE: "bold yellow",
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


_BROKEN_FIRST = (Status.FAIL, Status.ERROR, Status.STALE, Status.DRIFT, Status.SKIP, Status.PASS)
"""A terminal's order: what closes the gate first, what merely waits for an input last."""


def _grouped(result: Result, verbose: bool) -> list[Check]:
    """The terminal's rows: grouped by status, broken first, in manifest order within a
    status; skips are summarised after the table (``_waiting``) unless ``verbose``."""
    rank = {s: i for i, s in enumerate(_BROKEN_FIRST)}
    rows = [c for c in _rows(result, verbose) if verbose or c.status is not Status.SKIP]
    return sorted(rows, key=lambda c: rank[c.status])


def _waiting(result: Result) -> list[str]:
    """The skips told once per input they wait for, with what would give it."""
    skipped = [c for c in result.checks if c.status is Status.SKIP]
    if not skipped:
        return []
    lines = [f"{len(skipped)} not judged, each waiting for an input:"]
    lines += [f"  {n:>3} × {printable(reason)}" for reason, n, _ in skip_reasons(skipped)]
    return lines


def render(result: Result, verbose: bool = False, color: bool = False,
           terminal: bool = False) -> str:
    """The report as text: escape codes only when ``color``; a table fitted to the
    terminal's width when ``terminal`` (stdout is one), whether coloured or not.

    Anywhere else (a pipe, a CI log) it is the plain rows, one check per line and
    no header, with colour or without: ``--color always | tee ci.log`` stripped of
    its escape codes is byte for byte what ``| tee ci.log`` writes, so a grep, a
    ``wc -l`` or a diff of two logs reads the same whichever was asked for."""
    if terminal:
        return _render_rich(result, _grouped(result, verbose), color=color)
    rows = _rows(result, verbose)
    head = _head(result)
    ids = [printable(c.id) for c in rows]
    widths = [max((len(x) for x in col), default=0) for col in (
        [c.status.value for c in rows], [c.kind for c in rows], ids,
    )]
    lines = [head] if head else []
    for c, cid in zip(rows, ids, strict=True):
        status = _paint(c.status.value, _STYLE[c.status], color) + " " * (widths[0] - len(c.status.value))
        cells = (status, c.kind.ljust(widths[1]), cid.ljust(widths[2]))
        tail = "  ".join(x for x in (_where(c), _detail(c)) if x)
        lines.append("  ".join(cells) + "  " + tail)
    lines.append(_paint(summary(result), _verdict_style(result), color))
    return "\n".join(lines) + "\n"


_SGR = {"green": "32", "yellow": "33", "cyan": "36", "bold red": "1;31", "bold magenta": "1;35",
        "bold green": "1;32"}
"""The escape codes of ``_STYLE``'s styles, as rich's standard colour system writes them."""


def _paint(text: str, style: str, color: bool) -> str:
    """``text`` in ``style`` when ``color``: the codes wrap the text and nothing else,
    so the padding after it is the plain output's."""
    return f"\x1b[{_SGR[style]}m{text}\x1b[0m" if color else text


def _verdict_style(result: Result) -> str:
    return "bold green" if result.gate_open else "bold red"


def _head(result: Result, width: int | None = None, encoding: str | None = None) -> str:
    """``MANIFEST against KIND LOCATION (PACKAGE VERSION)``, escaped; with ``width``
    (a terminal's) fitted to it (``_fit``). Never elided without a width: a log keeps
    the whole path for grep.

    Measured as the stream in ``encoding`` will write it: what that encoding lacks
    is written ``\\uNNNN`` (``safetext.CODE_POINTS``), six columns where ``é`` is
    one, so it is escaped here first (``as_code_points``), and elided with ``...``
    where even ``…`` would be ``\\u2026``; else an ASCII terminal of 80 columns
    got a line of 90."""
    if result.target is None:
        return ""
    t = result.target
    parts = [printable(str(result.manifest_path)), printable(str(t.location)),
             " against " + printable(t.kind) + " ",
             printable(f" ({t.package} {version_or_unknown(t.version)})")]
    if width is not None and encoding is not None:
        parts = [as_code_points(part, encoding) for part in parts]
    manifest, location, before, after = parts
    if width is not None:
        from rich.cells import cell_len

        manifest, location = _fit(manifest, location, width - cell_len(before) - cell_len(after),
                                  _ellipsis(encoding))
    return manifest + before + location + after


def _fit(manifest: str, location: str, room: int, dots: str) -> tuple[str, str]:
    """The manifest's path and the location's in ``room`` columns together (a path
    of a CI runner is 130 columns on its own).

    The parent directories give way first, sharing what the two last components
    leave (the location's the odd column): the last component is what tells two
    targets apart (``vllm-0.30.0-…`` from ``vllm-0.31.0-…``), where ``/tmp`` tells
    nothing. Then the manifest's name, and only when the location's last component
    does not fit alone, its middle too."""
    from rich.cells import cell_len

    if cell_len(manifest) + cell_len(location) <= room:
        return manifest, location
    (man_parent, man_name), (loc_parent, loc_name) = _split(manifest), _split(location)
    floor = cell_len(dots) + 1  # "…/": parents elided, the name after them whole
    names = cell_len(man_name) + cell_len(loc_name)
    if names + min(cell_len(man_parent), floor) + min(cell_len(loc_parent), floor) <= room:
        loc_cells, man_cells = _share(cell_len(loc_parent), cell_len(man_parent), room - names,
                                      floor)
        return (_parents(man_parent, man_cells, dots) + man_name,
                _parents(loc_parent, loc_cells, dots) + loc_name)
    whole_loc = min(cell_len(loc_parent), floor) + cell_len(loc_name)
    least = min(cell_len(manifest), max(room // 4, floor))  # the manifest's, at the least
    if whole_loc + least <= room:  # the location's last component whole, the manifest's cut
        return _fit_path(manifest, room - whole_loc, dots), _fit_path(location, whole_loc, dots)
    # the location's cut in any case: the manifest's name whole if it takes half the room at most
    whole_man = min(cell_len(man_parent), floor) + cell_len(man_name)
    manifest = _fit_path(manifest, max(min(whole_man, room // 2), least, 1), dots)
    return manifest, _fit_path(location, max(room - cell_len(manifest), 1), dots)


def _split(path: str) -> tuple[str, str]:
    """``path`` (escaped: an escape never holds a ``/``) as its parent directories,
    the last ``/`` with them, and its last component."""
    cut = path.rfind("/", 0, len(path) - 1) + 1
    return path[:cut], path[cut:]


def _share(first: int, second: int, cells: int, floor: int) -> tuple[int, int]:
    """``cells`` columns shared by two texts of ``first`` and ``second`` columns, the
    first the odd one: a short one keeps all it has, the other the rest; neither gets
    less than ``floor`` (``…/``) or than it has, when that is less."""
    half = cells - cells // 2
    if first <= half:
        return first, min(cells - first, second)
    if second <= cells - half:
        return cells - second, second
    one = max(half, min(first, floor))
    return one, max(cells - one, min(second, floor))


def _fit_path(path: str, cells: int, dots: str) -> str:
    """``path`` in ``cells`` columns: its parent directories elided first, its last
    component kept whole when it fits, else cut in its middle too."""
    from rich.cells import cell_len

    if cell_len(path) <= cells:
        return path
    parent, name = _split(path)
    lead = _parents(parent, 0, dots)
    if cell_len(name) + cell_len(lead) <= cells:
        return _parents(parent, cells - cell_len(name), dots) + name
    if cells - cell_len(lead) - cell_len(dots) >= _READABLE:
        return lead + _elide(name, cells - cell_len(lead), dots)
    return _elide(name, cells, dots)  # "…mm…aml" would be two elisions in nine columns


def _parents(parent: str, cells: int, dots: str) -> str:
    """``parent`` (directories and a last ``/``) in ``cells`` columns, but never less
    than ``…/`` (or ``/``, when that is all it is): its start and its end, the start
    the odd column (the end sits by the name kept whole, which already says where)."""
    from rich.cells import cell_len

    if cell_len(parent) <= max(cells, cell_len(dots) + 1):
        return parent
    if cells <= cell_len(dots) + 1:
        return dots + "/"
    return _elide(parent, cells, dots, start_first=True)  # its end at least the "/"


_READABLE = 6
"""Columns of a cut last component, at the least, worth an ellipsis before it for
the parent directories dropped."""


def _ellipsis(encoding: str | None) -> str:
    """``…``, or ``...`` where a stream in ``encoding`` cannot write it (it would be
    ``\\u2026``, six columns and no longer read as an elision)."""
    return "…" if can_show("…", encoding) else "..."


_UNIT = re.compile(r"\\(?:U[0-9a-f]{8}|u[0-9a-f]{4}|x[0-9a-f]{2}|.)|.", re.DOTALL)
"""One escape of ``safetext`` (``\\\\``, ``\\n``, ``\\xNN``, ``\\uNNNN``,
``\\UNNNNNNNN``) or one character: what an elision may not cut through."""


def _units(text: str) -> list[str]:
    """``text`` (already escaped) as the pieces an elision keeps or drops whole:
    an escape, or a character with the combining marks after it. Cut through an
    escape, a directory named ``…\\\\xff`` (a backslash, then ``xff``) and one
    ending in the byte 0xFF would both show ``…xff``, and ``t_\\xe9`` would show
    ``t…9``; a kept end starting with a combining mark would draw it on the ``…``."""
    units: list[str] = []
    for unit in _UNIT.findall(text):
        if units and len(unit) == 1 and unicodedata.category(unit).startswith("M"):
            units[-1] += unit
        else:
            units.append(unit)
    return units


def _take(units: Iterable[str], cells: int) -> list[str]:
    """The units from the start of ``units`` that fit in ``cells`` columns together."""
    from rich.cells import cell_len

    kept, used = [], 0
    for unit in units:
        used += cell_len(unit)
        if used > cells:
            break
        kept.append(unit)
    return kept


def _elide(text: str, cells: int, ellipsis: str = "…", start_first: bool = False) -> str:
    """``text`` (escaped) in at most ``cells`` columns: its start and its end (the
    end, which names the file, gets the odd column; the start with ``start_first``,
    for parent directories whose name follows), the middle ``ellipsis``; cut only
    between whole escapes and characters (``_units``)."""
    from rich.cells import cell_len

    if cell_len(text) <= cells:
        return text
    units = _units(text)
    room = max(cells - cell_len(ellipsis), 0)
    left = _take(units, room - room // 2 if start_first else room // 2)
    right = _take(reversed(units[len(left):]), room - cell_len("".join(left)))
    # what the end could not use (an escape too wide for it) goes back to the start
    left = _take(units[:len(units) - len(right)], room - cell_len("".join(right)))
    return "".join(left) + ellipsis + "".join(reversed(right))


_UNWRAPPED = 1 << 16
"""Columns given to rich when nothing should wrap: more than any row needs."""


def unwrapped_width(on_terminal: int | None = None) -> int | None:
    """Width to give rich: ``on_terminal`` (None: rich asks the terminal) when
    stdout is a terminal, else wide enough that nothing wraps. rich alone would
    fold piped colour output at 80 columns (or at the width of whatever terminal
    stdin or stderr is), cutting ids and paths in two where a log reader greps."""
    return on_terminal if sys.stdout.isatty() else _UNWRAPPED


def _render_rich(result: Result, rows: list[Check], *, color: bool) -> str:
    """The terminal's table, drawn by rich at the terminal's width (``COLUMNS`` when
    set), under a header row and the first line fitted to that width; coloured
    when ``color``, else plain text (no escape code at all).

    ``no_color`` is given, never read from the environment by rich: ``NO_COLOR``
    was already weighed by the CLI (it applies to ``--color auto`` only), and
    rich alone would drop the colours ``--color always`` asked for."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    encoding = getattr(sys.stdout, "encoding", None)
    encoding = encoding if isinstance(encoding, str) else None

    def written(text: str) -> Text:
        # measured as the stream will write it (``_head``); data, never markup
        return Text(text if encoding is None else as_code_points(text, encoding))

    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    for name in ("status", "kind", "id", "where", "detail"):
        table.add_column(name, overflow="fold")
    for c in rows:
        # Ids, paths and messages are data, never markup (a "[/x]" in a path must print).
        table.add_row(
            Text(c.status.value, style=_STYLE[c.status]), written(c.kind), written(printable(c.id)),
            written(_where(c)), written(_detail(c)), end_section=False,
        )
    console = Console(record=True, force_terminal=True, color_system="standard" if color else None,
                      no_color=not color)
    head = _head(result, console.width, encoding)
    with console.capture() as cap:
        if rows:
            console.print(table)
        for line in _waiting(result):
            console.print(written(line), style=_STYLE[Status.SKIP] if line.startswith(" ") else "")
        console.print(Text(summary(result), style=_verdict_style(result)))
    return (head + "\n" if head else "") + cap.get()
