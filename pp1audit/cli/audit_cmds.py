"""The audit commands: ``check``, ``report``, ``fetch`` and ``schema``.

Each parses options, builds the manifest and sources, calls the pure core
(``pp1audit.run``), hands the result to a formatter and maps the verdict to an exit code.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from pp1audit.errors import EXIT_CLOSED, EXIT_OPEN, EXIT_USAGE, Pp1Error
from pp1audit.formats import FORMATS, named_source
from pp1audit.sources.safeio import realpath

if TYPE_CHECKING:
    from pp1audit.formats.markdown import Names
    from pp1audit.manifest import Manifest
    from pp1audit.result import Check, Result

from pp1audit.cli.options import (
    ConfiguredCommand,
    PathParam,
    Seconds,
    examples,
    load_manifest_at,
    make_provenance_options,
    manifest_option,
    provenance_options,
    use_color,
)
from pp1audit.cli.output import emit, say, tell


def judged(result: Result, m: Manifest, hint: str = "") -> Result:
    """``result``, unless nothing in it was judged: no check at all, or every check
    skipped (a manifest pinning only donors and git sources, none fetched or
    given). An open gate would then say the tree holds what nobody looked at
    (exit 2, naming the manifest and what is missing; design.md: 2 is "nothing
    judged"), with ``--require-all`` too: a closed gate would say something failed."""
    if not result.checks:
        raise Pp1Error(f"{m.path}: pins nothing that this target can judge (no version, files, "
                       f"citations or invariants){hint}")
    from pp1audit.result import Status

    if all(c.status is Status.SKIP for c in result.checks):
        from pp1audit.text.safe import count

        raise Pp1Error(f"{m.path}: every check was skipped, so nothing was judged "
                       f"({count(len(result.checks), 'check')}): {missing_inputs(result.checks)}")
    return result


def missing_inputs(checks: Iterable[Check], shown: int = 3) -> str:
    """What the skipped ``checks`` wanted, once each: their reasons name the input
    and how to give it (``--repo NAME=PATH``, ``pp1audit fetch``). A reason that
    ends another one (a donor's hunks "not checked: <the donor's reason>") is the
    same input, said once; the first ``shown`` are listed, the rest counted."""
    from pp1audit.formats import skip_reasons
    from pp1audit.text.safe import count

    reasons = [(named_source(first) or first.id, why) for why, _, first in skip_reasons(list(checks))]
    said = " | ".join(f"{who}: {why}" for who, why in reasons[:shown])
    more = len(reasons) - shown
    return said + (f" | and {count(more, 'other reason')}" if more > 0 else "")



@click.command(cls=ConfiguredCommand,
               epilog=examples("pp1audit fetch",
                        "pp1audit fetch -m manifests/pp1.yaml --cache-dir .cache/pins"))
@manifest_option
@provenance_options
@click.option("--timeout", type=Seconds(min=0.01, max=3600), default=None,
              help="Connect and read timeout in seconds (default 10 / 30).")
@click.option("--attempts", type=click.IntRange(min=1), default=None,
              help="Tries per file on connection errors and 429/5xx answers (default 3).")
@click.option("--total-timeout", type=Seconds(min=0.01, max=3600), default=None,
              help="Seconds for one file's whole download, tries included (default 120).")
def fetch(
    manifest: Path | None, repos: tuple[str, ...], config: Path | None, cache_dir: Path | None,
    max_bytes: int | None, timeout: float | None, attempts: int | None,
    total_timeout: float | None = None,
) -> int:
    """Download the manifest's remote pins and donors into the content-addressed cache.

    Each file is verified against its SHA-256 before it lands in the cache.
    Exit 0 when every pin is cached, 1 when a server sent other bytes than a
    pin (a verdict on the content), 2 when a pin could not be fetched at all
    (network, HTTP status, limits, the cache: nothing judged).
    """
    from pp1audit.checks.provenance import cache_dir_of, fetch_manifest
    from pp1audit.sources.runconfig import resolve_options

    options = resolve_options(config, repos, cache_dir, fetch=True, timeout=timeout,
                              max_bytes=max_bytes, attempts=attempts,
                              total_timeout=total_timeout)
    m = load_manifest_at(manifest)
    outcomes = fetch_manifest(m, options)
    from pp1audit.text.safe import printable

    # Messages quote what servers said (a reason phrase, a Location): escaped here, once.
    lines = [printable(f"{'ok' if how == 'ok' else 'FAILED':6}  {pid}: {msg}")
             for pid, how, msg in outcomes]
    hows = {how for _, how, _ in outcomes}
    lines.append(f"{sum(how == 'ok' for _, how, _ in outcomes)} of {len(outcomes)} pin(s) cached "
                 f"in {cache_dir_of(options)}")
    emit("\n".join(lines) + "\n", None)
    if "mismatch" in hows:  # a server sent other bytes than pinned: a verdict
        return EXIT_CLOSED
    for pid, how, msg in outcomes:  # exit 2: every error is a line on stderr too
        if how == "failed":
            say(f"error: {pid}: {msg}")
    return EXIT_USAGE if "failed" in hows else EXIT_OPEN


@click.command(cls=ConfiguredCommand,
               epilog=examples("pp1audit check vllm-0.31.0-*.whl",
                        "pp1audit check .venv/lib/python3.11/site-packages --record",
                        "pp1audit check vllm-0.31.0-*.whl --repo lane=../lane --format json -o result.json"))
@click.argument("target", type=PathParam(path_type=Path))
@manifest_option
@click.option("--format", "fmt", type=click.Choice(list(FORMATS)), default="text",
              show_default=True, help="Output format.")
@click.option("--output", "-o", type=PathParam(path_type=Path, dir_okay=False), default=None,
              help="Write the result to FILE (atomically) instead of stdout.")
@click.option("--allow-drift", is_flag=True, help="Cited spans found at other lines do not close the gate.")
@click.option("--require-all", is_flag=True, help="Skipped checks close the gate.")
@click.option("--verbose", "-v", is_flag=True, help="Text format: list passing checks too.")
@click.option("--color", type=click.Choice(["auto", "always", "never"]), default="auto",
              help="Colour in text output (NO_COLOR is honoured in auto).")
@provenance_options
@click.option("--fetch", is_flag=True, help="Download missing remote pins into the cache first.")
@click.option("--offline", is_flag=True,
              help="Never open a network connection (the default unless --fetch).")
@click.option("--record", is_flag=True,
              help="Verify every file against *.dist-info/RECORD; bytecode and import shadowing too.")
def check(
    target: Path, manifest: Path | None, fmt: str, output: Path | None,
    allow_drift: bool, require_all: bool, verbose: bool, color: str,
    repos: tuple[str, ...] = (), config: Path | None = None, cache_dir: Path | None = None,
    max_bytes: int | None = None, fetch: bool = False, offline: bool = False,
    record: bool = False,
) -> int:
    """Check TARGET (site-packages, the package directory, or a .whl) against the manifest.

    Exit 0 when everything pinned holds, 1 when the gate is closed, 2 when
    nothing could be judged.
    """
    from pp1audit.cli.progress import for_terminal
    from pp1audit.formats import get_formatter
    from pp1audit.result import GatePolicy
    from pp1audit.run import audit
    from pp1audit.sources import open_target

    m = load_manifest_at(manifest)
    options = make_provenance_options(m, repos, config, cache_dir, fetch=fetch, offline=offline,
                                      max_bytes=max_bytes)
    with open_target(target, m.package) as source:
        result = audit(m, source, GatePolicy(allow_drift=allow_drift, require_all=require_all),
                       options=options, record=record,
                       progress=for_terminal(fmt))
    judged(result, m, "; pin some, or give --record")
    to_people = output is None and fmt == "text"
    emit(get_formatter(fmt)(result, verbose=verbose, color=to_people and use_color(color),
                             terminal=to_people and sys.stdout.isatty()), output, utf8=fmt == "json")
    return EXIT_OPEN if result.gate_open else EXIT_CLOSED


@click.command(cls=ConfiguredCommand,
               epilog=examples("pp1audit report vllm-0.31.0-*.whl -o audit.md",
                        "pp1audit report --check audit.md"))
@click.argument("target", type=PathParam(path_type=Path), required=False)
@manifest_option
@provenance_options
@click.option("--output", "-o", type=PathParam(path_type=Path, dir_okay=False), default=None,
              help="Write the Markdown to FILE (atomically) instead of stdout.")
@click.option("--excerpts", is_flag=True, help="Add the cited code under each evidence line.")
@click.option("--check", "check_file", type=PathParam(path_type=Path, dir_okay=False), default=None,
              help="Exit 1 with a unified diff when FILE differs from what would be generated now.")
@click.option("--allow-drift", is_flag=True, help="As for check: drift does not close the gate.")
@click.option("--require-all", is_flag=True, help="As for check: skipped checks close the gate.")
def report(
    target: Path | None, manifest: Path | None, output: Path | None, excerpts: bool,
    check_file: Path | None, repos: tuple[str, ...] = (), config: Path | None = None,
    cache_dir: Path | None = None, max_bytes: int | None = None, allow_drift: bool = False,
    require_all: bool = False,
) -> int:
    """Regenerate the Markdown audit from the manifest (and what TARGET measures).

    Without TARGET the audit is rendered as pinned; with it, each evidence line
    carries what was measured, and the exit code is the gate's (0 open, 1
    closed), as for check: a report of a failing target is still written, but
    a pipeline does not mistake it for a pass. With --check the question is
    only whether FILE is current (0) or stale (1); the gate's verdict is said
    on stderr. Deterministic: same inputs, same bytes.
    """
    from pp1audit.formats.markdown import render
    from pp1audit.result import GatePolicy

    if check_file is not None and output is not None:
        raise click.UsageError("--check compares with FILE and writes nothing: drop --output")
    m = load_manifest_at(manifest)
    result = None
    if target is not None:
        from pp1audit.run import audit
        from pp1audit.sources import open_target

        options = make_provenance_options(m, repos, config, cache_dir, fetch=False, offline=True,
                                          max_bytes=max_bytes)
        with open_target(target, m.package) as source:
            result = judged(audit(m, source, GatePolicy(allow_drift=allow_drift,
                                                         require_all=require_all), options=options), m)
    text = render(m.raw, result, excerpts=excerpts, names=_names(m, manifest, target))
    gate = EXIT_OPEN if result is None or result.gate_open else EXIT_CLOSED
    if check_file is None:
        # Written first: a document that cannot be written is exit 2 with one line, not
        # a verdict line followed by an error that overrules it.
        emit(text, output, utf8=True)
    if result is not None:  # the verdict, open or closed: stdout is the document
        from pp1audit.formats.text_format import summary

        say(f"{target}: {summary(result)}")
    if check_file is not None:  # the document's freshness is the question asked
        return _check_generated(check_file, text)
    return gate


def _names(m: Manifest, manifest: Path | None, target: Path | None) -> Names:
    """How the report names its manifest and target: by the file name of what each
    path resolves to (``report.Names``), never as typed, so that the document is the
    same bytes from any working directory, checkout path or symlink, on stdout as in
    ``-o FILE``. The shipped manifest (no ``-m``) is named by its file name too,
    ``pp1.yaml``: a document made with ``-m manifests/pp1.yaml`` (the main job) is
    then current when checked with the default, and the other way round (the
    SHA-256 beside it tells the two apart when they differ). JSON's ``manifest.path``
    keeps the ``pp1audit:`` name."""
    from pp1audit.formats.markdown import Names
    from pp1audit.manifest.defaults import default_manifest_path

    def last(path: Path) -> str:
        # The name's bytes as UTF-8 (undecodable ones kept as surrogates): under a C
        # locale the file-system encoding would give `é` as two surrogates.
        real = os.fsencode(realpath(path)).decode("utf-8", "surrogateescape")
        return os.path.basename(real) or real  # "/" has no last component

    digest = None
    if target is not None and target.is_file():  # a wheel: its own SHA-256 names its bytes
        from pp1audit.sources.hashing import hash_path

        digest = hash_path(realpath(target), keep=False).sha256
    return Names(default_manifest_path().name if manifest is None else last(manifest),
                 None if target is None else last(target), None if digest is None else digest.hex())


def _check_generated(path: Path, text: str) -> int:
    """``cog --check`` for reports: 0 when ``path`` is what would be generated, else 1 + diff."""
    from pp1audit.sources.inputs import read_input

    data = read_input(path, "report to check")
    if data == text.encode("utf-8"):  # byte for byte: line endings count too
        return EXIT_OPEN
    current = _report_text(path, data)  # only a stale one needs decoding
    lines, escaped = _diff_lines(path, current, text, getattr(sys.stdout, "encoding", None))
    emit("".join(lines), None)
    how = (f"; the diff writes what {escaped} cannot show as \\uNNNN, and a backslash of "
           "the text as \\\\" if escaped else "")
    from pp1audit.text.safe import printable

    # the path only: `how` is this message's own text, its backslashes meant as written
    tell(f"pp1audit: {printable(str(path))} is stale: regenerate it with pp1audit report{how}")
    return EXIT_CLOSED


def _report_text(path: Path, data: bytes) -> str:
    """The text of a report to check; a binary or non-UTF-8 file is no stale
    report but the wrong file, so it is bad input (exit 2), never diffed."""
    try:
        current = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Pp1Error(f"{path}: not a UTF-8 text file (invalid byte at offset {exc.start}); "
                       "a report to check must be one") from None
    if "\0" in current:
        raise Pp1Error(f"{path}: not a text file (NUL byte at offset {data.index(0)}); "
                       "a report to check must be one")
    return current


def _diff_lines(path: Path, current: str, text: str,
                encoding: str | None) -> tuple[list[str], str | None]:
    """The unified diff of ``current`` against ``text``, one escaped line each: the
    file checked may come from anyone (a pull request), and its lines must not
    write on the terminal; a line ending that differs shows (``\\r``).

    The ``---``/``+++`` headers name files (``printable``); the lines after them
    are the document's own text, quoted, so its backslashes stay as written
    (``printable_code``, as ``treediff`` shows a span diff): ``C:\\temp`` or
    ``"\\n".join`` must not read doubled when both files hold them alike.
    Unless stdout's ``encoding`` (a C or ASCII locale) cannot show a character
    of the diff: the stream then writes it ``\\u2014``, which a file holding
    that very text (a report once written under such a locale) also shows, and
    the two lines would read the same. Then every line doubles its backslashes
    (``printable``) and writes what the encoding lacks as ``\\uNNNN`` itself
    (the stream would write ``é`` as ``\\xe9``, which ``printable`` reserves for
    a byte that is not UTF-8); the second value names the encoding to say so."""
    import difflib

    from pp1audit.text.safe import as_code_points, can_show, printable, printable_code

    diff = list(difflib.unified_diff(
        current.splitlines(keepends=True), text.splitlines(keepends=True),
        fromfile=str(path), tofile="generated",
    ))
    body = [printable_code(line.removesuffix("\n")) for line in diff[2:]]
    escaped = None if can_show("".join(body), encoding) else str(encoding)
    head = [printable(line.removesuffix("\n")) for line in diff[:2]]
    if escaped is not None:
        body = [printable(line.removesuffix("\n")) for line in diff[2:]]
        head, body = ([as_code_points(line, escaped) for line in part] for part in (head, body))
    return [line + "\n" for line in head + body], escaped


@click.command(cls=ConfiguredCommand,
               epilog=examples("pp1audit schema > manifest.schema.json"))
def schema() -> int:
    """Print the JSON Schema of the manifest format (for editors and CI validators)."""
    from pp1audit.formats.json_format import dumps
    from pp1audit.manifest.schema import SCHEMA

    emit(dumps(SCHEMA), None, utf8=True)
    return EXIT_OPEN
