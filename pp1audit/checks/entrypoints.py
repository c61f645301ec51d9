"""Entry points: code another distribution can make the audited package import and run.

vLLM (``vllm/plugins/__init__.py``) asks ``importlib.metadata.entry_points``
for the groups ``vllm.general_plugins``, ``vllm.platform_plugins``,
``vllm.io_processor_plugins``, ``vllm.stat_logger_plugins`` and
``vllm.endpoint_plugins``, and imports (and, for general plugins, calls) every
entry point found there, *whichever installed distribution declares it*. A
``foo-1.0.dist-info/entry_points.txt`` dropped beside the package is therefore
code the package runs at start-up, although no file of the package changed.
The rule is generic, not a list of vLLM's groups: a group named after the
package followed by a dot (``<package>.…``) is the package's own plugin
namespace, so an entry point there declared by any distribution other than the
audited one fails. The audited distribution's own entry points pass only when
its ``entry_points.txt`` is the one its RECORD vouches for, and when they point
into the package (anything else runs code the audit does not cover).

The file is parsed exactly as ``importlib.metadata`` (CPython 3.10 to 3.13,
``Sectioned`` and ``Pair.parse``) parses it, not with ``configparser``, so
that what is judged is what Python loads: lines are split by
``str.splitlines`` (``\\x0c``, ``\\x1c``-``\\x1e``, ``\\x85``, U+2028/9 end a
line too) and stripped by ``str.strip``; a line ``[…]`` opens the group named
by stripping *every* leading and trailing bracket (``[[vllm.general_plugins]]``
is that group); blank lines and ``#`` comments are skipped; lines before the
first group are ignored; any other line is ``name = value``, split at the first
``=``, both halves stripped, keys case-sensitive. A line without ``=`` in a
group, or a file that is not UTF-8, makes ``entry_points()`` raise for every
caller: it is malformed, an ``EntryPointsError`` naming the line, never a crash.

Pure: bytes in, findings out. Reading the files (regular files only, size
capped) is the caller's job (``pp1audit.checks.record_judge``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pp1audit.text.safe import cut

ENTRY_POINTS_MAX = 1 << 20
"""Largest ``entry_points.txt`` read. setuptools' (one of the largest: every
distutils command and setup keyword) is 2.7 kB; a file of 1 MiB would declare
some 15,000 entry points. A larger one is an error (not judged), not a pass."""

FINDINGS_PER_FILE = 20
"""Entry points reported one by one per file; the rest are counted in one more
finding (a file declaring 10,000 of them must not print 10,000 checks)."""

SHOWN = 200
"""Characters of an entry point's value shown in a message; the rest is counted,
never silently cut (the finding fails whatever the value holds)."""

_MODULE = re.compile(r"([\w.]+)\s*(?::\s*[\w.]+\s*)?(?:\[.*\]\s*)?$")
"""``importlib.metadata.EntryPoint.pattern``: ``module[:attr] [extras]``."""


class EntryPointsError(ValueError):
    """``importlib.metadata`` cannot parse the file; the message names the line."""


@dataclass(frozen=True, slots=True)
class EntryPoint:
    """One ``name = value`` line of group ``group`` (1-based ``line``, as ``str.splitlines`` counts)."""

    group: str
    name: str
    value: str
    line: int


@dataclass(frozen=True, slots=True)
class PluginFinding:
    """One problem: ``status`` is ``fail`` (judged) or ``error`` (could not be judged)."""

    id: str
    path: str
    status: str
    message: str


@dataclass
class PluginReport:
    """Findings, plus what passed, for the summary."""

    findings: list[PluginFinding] = field(default_factory=list)
    own: int = 0
    """Entry points of the audited distribution in the package's groups that passed."""
    files: int = 0
    """``entry_points.txt`` files read."""
    notes: list[str] = field(default_factory=list)
    """What could not be looked at, for the summary."""
    elsewhere: list[str] = field(default_factory=list)
    """``sys.path`` entries besides the target root looked into."""


def parse_entry_points(data: bytes, where: str) -> list[EntryPoint]:
    """Every entry point of an ``entry_points.txt``, as ``importlib.metadata`` reads it.

    ``EntryPointsError`` naming ``where`` (and the line) when ``importlib.metadata``
    would raise on it instead.
    """
    try:
        text = data.decode("utf-8")  # read_text(encoding='utf-8'): strict, a BOM kept
    except UnicodeDecodeError as exc:
        raise EntryPointsError(f"{where}: not UTF-8 ({exc.reason} at byte {exc.start})") from None
    out: list[EntryPoint] = []
    group: str | None = None
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            group = line.strip("[]")
            continue
        if group is None:  # before any group: importlib.metadata drops it unparsed
            continue
        name, sep, value = line.partition("=")
        if not sep:
            raise EntryPointsError(f"{where}:{n}: '{cut(line, SHOWN)}' in group [{group}] has no '=' "
                                   "(not name = value)")
        out.append(EntryPoint(group, name.strip(), value.strip(), n))
    return out


def plugin_group(group: str, package: str) -> bool:
    """Whether ``group`` is in ``package``'s namespace: ``<package>.`` and more.

    Compared as ``EntryPoints.select(group=…)`` compares, exactly: ``VLLM.x`` or
    `` vllm.x`` is a group the package never asks for."""
    return group.startswith(package + ".") and len(group) > len(package) + 1


def judge(meta: str, eps: list[EntryPoint], package: str, *, own: bool,
          unvouched: str | None = None) -> tuple[list[PluginFinding], int]:
    """Findings for the entry points ``meta`` declares in ``package``'s groups, and how many passed.

    ``own``: ``meta`` is the audited distribution; then ``unvouched`` says why its
    ``entry_points.txt`` is not the one its RECORD vouches for (None: it is).
    """
    where = f"{meta}/entry_points.txt"
    findings: list[PluginFinding] = []
    passed = 0
    for ep in eps:
        if not plugin_group(ep.group, package):
            continue
        shown = f"{where}:{ep.line}: [{ep.group}] {ep.name} = {cut(ep.value, SHOWN)}"
        if not own:
            why = (f"declared by {meta}, not by the audited distribution: {package} imports and "
                   f"runs it at start-up (it loads its plugin groups from every installed "
                   "distribution), and nothing audited vouches for it")
        elif unvouched is not None:
            why = (f"declared by the audited distribution, but {where} is not the one its RECORD "
                   f"vouches for ({unvouched}): {package} imports and runs it at start-up")
        elif (top := _top_module(ep.value)) != package:
            target = f"module '{top}'" if top else "no module importlib.metadata can parse"
            why = (f"declared by the audited distribution, but it names {target}, outside "
                   f"{package}/: {package} imports and runs code the audit does not cover")
        else:
            passed += 1
            continue
        findings.append(PluginFinding(f"plugin:{where}:{ep.line}", where, "fail", f"{shown} — {why}"))
    if len(findings) > FINDINGS_PER_FILE:
        more = len(findings) - FINDINGS_PER_FILE
        findings[FINDINGS_PER_FILE:] = [PluginFinding(
            f"plugin:{where}:more", where, "fail",
            f"{where}: {more:,} more entry point(s) in {package}.* groups fail like the ones above")]
    return findings, passed


def _top_module(value: str) -> str | None:
    """The top-level module an entry point's value imports, or None when
    ``importlib.metadata`` cannot parse it (its ``load`` then raises)."""
    m = _MODULE.match(value)
    return m.group(1).split(".", 1)[0] if m else None
