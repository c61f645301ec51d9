"""Command line: argument parsing, wiring and exit codes — nothing else.

Commands build a manifest and sources, call the pure core, hand the result to a
formatter and map the verdict to an exit code (0 open, 1 closed, 2 nothing
judged). ``main`` is the only place errors become messages: a user error is one
line and exit 2; an unexpected exception is a bug, still one line and exit 2.
Results that cannot be written to stdout are neither: a full disk is one line
and exit 2; a reader that stopped reading (a closed pipe, ``| head``) is the
reader's choice: the rest of the output is dropped silently and the exit code
is the run's own, so the 0/1/2 contract holds whoever reads the output.
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import os
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, NoReturn, TextIO, cast

import click

from pp1audit import __version__
from pp1audit.cli.configfile import config_file
from pp1audit.errors import EXIT_CLOSED, EXIT_OPEN, EXIT_USAGE, Pp1Error
from pp1audit.formats import FORMATS, named_source
from pp1audit.sources.fdio import write_all
from pp1audit.sources.safeio import realpath

if TYPE_CHECKING:
    from pp1audit.formats.markdown import Names
    from pp1audit.manifest import Manifest
    from pp1audit.result import Check, Result
    from pp1audit.sources.runconfig import ProvenanceOptions


class PathParam(click.Path):
    """``click.Path`` that refuses an empty argument: pathlib reads ``""`` as ``.``, so
    ``check "$SITE"`` with the variable unset judged the current directory, and
    ``-o ""`` tried to write to it."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str | bytes) and not value:
            self.fail("an empty path (an unset shell variable?)", param, ctx)
        return super().convert(value, param, ctx)


_DEFAULT_MANIFEST = "(the shipped PP1 manifest)"

def _load_manifest(path: Path | None) -> Manifest:
    from pp1audit.manifest import load_manifest

    if path is None:
        from pp1audit.manifest.defaults import default_manifest_path

        return load_manifest(default_manifest_path(), display="pp1audit:manifests/pp1.yaml")
    return load_manifest(path)


def _use_color(fmt_color: str | None) -> bool:
    if fmt_color == "always":
        return True
    if fmt_color == "never" or os.environ.get("NO_COLOR"):
        return False
    return sys.stdout.isatty()


def make_provenance_options(m: Manifest, repos: tuple[str, ...], config: Path | None,
                        cache_dir: Path | None, *, fetch: bool, offline: bool,
                        max_bytes: int | None = None) -> ProvenanceOptions | None:
    """Repos, caches and the config file only concern provenance: a manifest that
    declares none (and a command line that names none) never loads that code."""
    if m.prov is None and not (repos or config or cache_dir or fetch or max_bytes):
        return None  # the config file was read already (``ConfiguredCommand``)
    from pp1audit.sources.runconfig import resolve_options

    return resolve_options(config, repos, cache_dir, fetch=fetch, offline=offline,
                           max_bytes=max_bytes,
                           uses_cache=fetch or bool(m.prov is not None and m.prov.remotes))


def _validate_config(given: Path | None) -> None:
    """Read the run's config file (``--config FILE``, else ``./pp1audit.toml`` when
    it is there) though the command may not use it: a broken config is bad input
    (exit 2) whatever the command and the manifest, or a typo in it passes
    silently until a command and a manifest that need it come along. Nothing is
    loaded when there is no file (``configfile``: the lookup, without ``runconfig``)."""
    path = config_file(given)
    if path is not None:
        from pp1audit.sources.runconfig import load_config

        load_config(path)


class ConfiguredCommand(click.Command):
    """Every command: its options parsed (a usage error and ``--help`` come first),
    the config file is validated before it runs (``_validate_config``)."""

    def invoke(self, ctx: click.Context) -> Any:
        config = ctx.params.get("config")
        _validate_config(config if isinstance(config, Path) else None)
        return super().invoke(ctx)


def _judged(result: Result, m: Manifest, hint: str = "") -> Result:
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
                       f"({count(len(result.checks), 'check')}): {_missing_inputs(result.checks)}")
    return result


def _missing_inputs(checks: Iterable[Check], shown: int = 3) -> str:
    """What the skipped ``checks`` wanted, once each: their reasons name the input
    and how to give it (``--repo NAME=PATH``, ``pp1audit fetch``). A reason that
    ends another one (a donor's hunks "not checked: <the donor's reason>") is the
    same input, said once; the first ``shown`` are listed, the rest counted."""
    from pp1audit.text.safe import count

    reasons: list[tuple[str, str]] = []
    for c in checks:
        if any(c.message.endswith(r) or r.endswith(c.message) for _, r in reasons):
            continue
        reasons.append((named_source(c) or c.id, c.message))
    said = " | ".join(f"{who}: {why}" for who, why in reasons[:shown])
    more = len(reasons) - shown
    return said + (f" | and {count(more, 'other reason')}" if more > 0 else "")


class StdoutFailed(Exception):
    """Writing to stdout failed (not a closed pipe): the run's results were lost.

    Deliberately no ``OSError``: click turns an EPIPE ``OSError`` raised in a
    command into a silent exit 1 (the code of a closed gate), and ``main``
    would call any other one a bug.
    """

    def __init__(self, cause: OSError) -> None:
        super().__init__(cause.strerror or str(cause))
        self.cause = cause


class _GuardedStdout:
    """``sys.stdout`` for the length of a run, its write errors raised as ``StdoutFailed``.

    Every command's results, click's ``--help`` and ``--version`` too, pass
    through this one object: a full disk or a closed pipe is told from a bug
    in one place, not at each ``write``. A closed pipe (EPIPE) is not an error
    of the run: the reader took what it wanted (``| head -1``, ``| grep -q``),
    so from then on output is dropped and the command finishes, its exit code
    the verdict's as the contract says (0, 1 or 2, nothing else: not the
    shell's 141, which would read as neither open nor closed). A stdout
    closed before the start (``>&-``: ``sys.stdout`` is None) fails the first
    write like a full disk: results were asked for and cannot be delivered.
    What is written goes to the stream's descriptor whole or fails
    (``_write_through``): a short write never cuts a document in silence.
    Everything else is the real stream's.
    """

    def __init__(self, stream: TextIO | None) -> None:
        self._stream = stream
        self._closed = False
        self._encoder: codecs.IncrementalEncoder | None = None
        self.wrote = False
        """Whether anything was written: a run that printed its document must not
        print an error object after it (two JSON documents are no JSON)."""

    def _open(self) -> TextIO:
        if self._stream is None:
            raise StdoutFailed(OSError(errno.EBADF, "stdout is closed"))
        return self._stream

    def _reader_gone(self, exc: OSError) -> bool:
        if exc.errno != errno.EPIPE:
            return False
        self._closed = True
        _discard(self._open())
        return True

    def write(self, text: str) -> int:
        if not isinstance(text, str):  # as a text stream refuses it (click probes with b"")
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        self._put(text, utf8=False)
        return len(text)

    def write_utf8(self, text: str) -> None:
        """Write ``text`` as UTF-8 whatever the stream's encoding: for a document
        (the Markdown audit, JSON), which is UTF-8 as ``-o FILE`` writes it. Under a
        C or ASCII locale the stream would write ``\\u2014`` for an em dash, the
        right thing for a terminal that cannot show it, but into a file redirected
        from stdout it is other content, silently (and ``report --check`` then stale)."""
        self._put(text, utf8=True)

    def _put(self, text: str, *, utf8: bool) -> None:
        """``write`` and ``write_utf8``: nothing once stdout is closed, a reader gone
        is not a failure, any other ``OSError`` is ``StdoutFailed`` (one line, exit 2)."""
        self.wrote = self.wrote or bool(text)
        if self._closed:
            return
        stream = self._open()
        try:
            self._write_through(stream, text, utf8)
        except OSError as exc:
            if not self._reader_gone(exc):
                raise StdoutFailed(exc) from exc

    def _write_through(self, stream: TextIO, text: str, utf8: bool) -> None:
        """Write ``text`` to the file under ``stream`` whole, or raise ``OSError``.

        A short write (a file reaching the size limit or filling its disk) is not
        the end: CPython's unbuffered stream (``PYTHONUNBUFFERED``) dropped the
        rest and the run exited 0 with a cut document. So the bytes go to the
        descriptor through ``fdio.write_all``, encoded as the stream would
        encode them (its encoding and errors, a BOM once), after whatever the
        stream still holds. A stream without a descriptor (a test's capture)
        cannot cut anything short: it is written as it is. ``utf8``: as UTF-8
        whatever the stream's encoding."""
        fd = _descriptor(stream)
        encoding = getattr(stream, "encoding", None)
        if fd is None or not isinstance(encoding, str):
            stream.write(text)
            return
        if utf8:
            blob = text.encode("utf-8")
        else:
            if self._encoder is None:
                self._encoder = _encoder_for(stream, encoding, fd)
            blob = self._encoder.encode(text)
        stream.flush()  # what the stream holds was written first
        write_all(fd, blob)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if self._closed or self._stream is None:
            return
        try:
            self._stream.flush()
        except OSError as exc:
            if not self._reader_gone(exc):
                raise StdoutFailed(exc) from exc

    def isatty(self) -> bool:
        return self._stream is not None and self._stream.isatty()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._open(), name)


def _descriptor(stream: TextIO) -> int | None:
    """The file descriptor under ``stream``, or None when it has none (a
    ``StringIO``, click's test runner, pytest's capture)."""
    try:
        fd = stream.fileno()
    except (OSError, ValueError, AttributeError):  # UnsupportedOperation is both
        return None
    return fd if isinstance(fd, int) and fd >= 0 else None


def _encoder_for(stream: TextIO, encoding: str, fd: int) -> codecs.IncrementalEncoder:
    """An encoder that writes what ``stream`` would: its encoding and errors, and
    a BOM where CPython's ``TextIOWrapper`` writes one: never in the middle of a
    file; for UTF-16 and UTF-32 (its own encoders) only at the start of one, not
    into a pipe or a terminal; for the others (``utf-8-sig``) there too."""
    errors = getattr(stream, "errors", None)
    codec = codecs.lookup(encoding)
    encoder = codec.incrementalencoder(errors if isinstance(errors, str) else "strict")
    try:
        position: int | None = os.lseek(fd, 0, os.SEEK_CUR)
    except OSError:  # a pipe or a terminal: no position
        position = None
    bom = position == 0 if codec.name in ("utf-16", "utf-32") else position in (None, 0)
    if not bom:
        encoder.setstate(0)
    return encoder


def _emit(text: str, output: Path | None, *, utf8: bool = False) -> None:
    """Write a command's result to ``output`` atomically, or to stdout whole:
    ``sys.stdout`` is ``_GuardedStdout`` in a run, which writes every byte or
    fails the run with one line (exit 2). ``utf8``: a document (the Markdown
    audit; JSON, which RFC 8259 says is UTF-8 between systems), written to stdout
    as UTF-8 bytes whatever the locale, as to ``output`` (``write_utf8``): under an
    ASCII locale the stream would write ``é`` as ``\\xe9``, an invalid JSON escape."""
    if output is None:
        write_utf8 = getattr(sys.stdout, "write_utf8", None) if utf8 else None
        if write_utf8 is not None:
            write_utf8(text)
        else:
            sys.stdout.write(text)
        sys.stdout.flush()
    else:
        from pp1audit.atomic import write_atomic

        write_atomic(output, text)


class _Seconds(click.FloatRange):
    """A finite number of seconds: click's FloatRange lets ``nan`` through (every
    comparison with NaN is false), and a NaN deadline is no deadline at all."""

    name = "seconds"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> float:
        seconds = float(super().convert(value, param, ctx))
        if seconds != seconds:  # NaN; infinities are out of range already
            self.fail(f"{value!r} is not a number of seconds.", param, ctx)
        return seconds


manifest_option = click.option(
    "--manifest", "-m", type=PathParam(path_type=Path, dir_okay=False), default=None,
    help="Manifest YAML (default: the PP1 manifest shipped with pp1audit).",
)


class _Group(click.Group):
    """A group whose upgrade commands (init, pin, show, diff) load on first use:
    their option declarations alone cost more start-up than ``check`` can spare."""

    _LAZY: ClassVar[dict[str, str]] = {"init": "init", "pin": "pin", "show": "show", "diff": "diff_cmd"}
    command_class = ConfiguredCommand

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self._LAZY})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self._LAZY and name not in self.commands:
            from pp1audit.cli import upgrade_cmds as cli_upgrade

            command: click.Command = getattr(cli_upgrade, self._LAZY[name])
            self.add_command(command, name)
        return super().get_command(ctx, name)

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command; Ctrl-C leaves as ``Interrupted``, past click, which would
        print an empty line before its ``Abort`` (``main`` says "aborted" itself)."""
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            raise Interrupted from None


class Interrupted(Exception):
    """Ctrl-C while a command ran (a ``KeyboardInterrupt`` that has unwound it)."""


class Terminated(BaseException):
    """SIGTERM or SIGHUP, raised in the main thread so that the run unwinds as after
    Ctrl-C: every ``finally`` runs, so a temporary file being written is removed
    (``atomic``) and worker threads are stopped. ``main`` then ends the process by
    the same signal (exit status 128 + signum, as without a handler). A
    ``BaseException``, as ``KeyboardInterrupt`` is: no ``except Exception`` on the
    way may take it for a failure of its own and carry on."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


UNWOUND_SIGNALS = ("SIGTERM", "SIGHUP")
"""What ``timeout``, CI cancellation and a closed terminal send: unwound like Ctrl-C."""


@contextlib.contextmanager
def _unwinding_signals() -> Iterator[None]:
    """``UNWOUND_SIGNALS`` raise ``Terminated`` for the length of the run.

    A signal the parent ignores (``nohup``) stays ignored. The bytecode check's
    worker processes ignore what the parent unwinds on (``bytecode._worker_init``):
    the group's signal reaches them too, and the parent's unwinding shuts them
    down. Any other process forked during the run inherits the handler; there it
    restores the default and dies by the signal, as it would have without one.
    Outside the main thread (a caller running ``main`` in a thread) nothing is
    installed.
    """
    import signal

    owner = os.getpid()

    def handler(signum: int, frame: object) -> None:
        if os.getpid() != owner:
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        raise Terminated(signum)

    installed: dict[int, Any] = {}
    for name in UNWOUND_SIGNALS:
        signum = getattr(signal, name, None)
        if signum is None:
            continue
        try:
            if signal.getsignal(signum) == signal.SIG_IGN:
                continue
            installed[signum] = signal.signal(signum, handler)
        except ValueError:  # not the main thread
            break
    try:
        yield
    finally:
        for signum, previous in installed.items():
            signal.signal(signum, signal.SIG_DFL if previous is None else previous)


def _end_by(signum: int) -> None:
    """End the process by ``signum`` with its default action, as the signal meant:
    the parent sees the signal (a shell: 128 + signum), not an exit code of ours."""
    import signal

    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
    sys.exit(128 + signum)  # only if the signal was blocked and did not end the process


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", "-V", prog_name="pp1audit")
def cli() -> None:
    """Executable source audits: pin an installed package's files, cited spans and
    code invariants in a manifest, and gate on them."""


def provenance_options(fn: Any) -> Any:
    """``--repo``, ``--config``, ``--cache-dir`` and ``--max-bytes``: where provenance
    evidence lives, and the size cap of a remote pin. The cap is one setting for
    every command that reads the cache: one ``fetch`` may store under a larger
    cap than ``check`` would read back, and ``check`` must be able to say so."""
    fn = click.option("--max-bytes", type=click.IntRange(min=1), default=None,
                      help="Size cap of a remote pin, downloaded or read from the cache "
                      "(default 32 MiB, or [fetch] max_bytes).")(fn)
    fn = click.option("--cache-dir", type=PathParam(path_type=Path, file_okay=False),
                      default=None, help="Remote-pin cache (default: the user cache directory, "
                      "or $PP1AUDIT_CACHE_DIR).")(fn)
    fn = click.option("--config", type=PathParam(path_type=Path, dir_okay=False), default=None,
                      help="TOML file with [repos], [cache] and [fetch] settings "
                      "(default: ./pp1audit.toml when present).")(fn)
    return click.option("--repo", "repos", multiple=True, metavar="NAME=PATH",
                        help="Local clone of the manifest's git source NAME (repeatable).")(fn)


@cli.command()
@manifest_option
@provenance_options
@click.option("--timeout", type=_Seconds(min=0.01, max=3600), default=None,
              help="Connect and read timeout in seconds (default 10 / 30).")
@click.option("--attempts", type=click.IntRange(min=1), default=None,
              help="Tries per file on 5xx or connection errors (default 3).")
@click.option("--total-timeout", type=_Seconds(min=0.01, max=3600), default=None,
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
    m = _load_manifest(manifest)
    outcomes = fetch_manifest(m, options)
    from pp1audit.text.safe import printable

    # Messages quote what servers said (a reason phrase, a Location): escaped here, once.
    lines = [printable(f"{'ok' if how == 'ok' else 'FAILED':6}  {pid}: {msg}")
             for pid, how, msg in outcomes]
    hows = {how for _, how, _ in outcomes}
    lines.append(f"{sum(how == 'ok' for _, how, _ in outcomes)} of {len(outcomes)} pin(s) cached "
                 f"in {cache_dir_of(options)}")
    _emit("\n".join(lines) + "\n", None)
    if "mismatch" in hows:  # a server sent other bytes than pinned: a verdict
        return EXIT_CLOSED
    for pid, how, msg in outcomes:  # exit 2: every error is a line on stderr too
        if how == "failed":
            _say(f"error: {pid}: {msg}")
    return EXIT_USAGE if "failed" in hows else EXIT_OPEN


@cli.command()
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

    m = _load_manifest(manifest)
    options = make_provenance_options(m, repos, config, cache_dir, fetch=fetch, offline=offline,
                                      max_bytes=max_bytes)
    with open_target(target, m.package) as source:
        result = audit(m, source, GatePolicy(allow_drift=allow_drift, require_all=require_all),
                       options=options, record=record,
                       progress=for_terminal(fmt))
    _judged(result, m, "; pin some, or give --record")
    to_people = output is None and fmt == "text"
    _emit(get_formatter(fmt)(result, verbose=verbose, color=to_people and _use_color(color),
                             terminal=to_people and sys.stdout.isatty()), output, utf8=fmt == "json")
    return EXIT_OPEN if result.gate_open else EXIT_CLOSED


@cli.command()
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
    m = _load_manifest(manifest)
    result = None
    if target is not None:
        from pp1audit.run import audit
        from pp1audit.sources import open_target

        options = make_provenance_options(m, repos, config, cache_dir, fetch=False, offline=True,
                                          max_bytes=max_bytes)
        with open_target(target, m.package) as source:
            result = _judged(audit(m, source, GatePolicy(allow_drift=allow_drift,
                                                         require_all=require_all), options=options), m)
    text = render(m.raw, result, excerpts=excerpts, names=_names(m, manifest, target))
    gate = EXIT_OPEN if result is None or result.gate_open else EXIT_CLOSED
    if check_file is None:
        # Written first: a document that cannot be written is exit 2 with one line, not
        # a verdict line followed by an error that overrules it.
        _emit(text, output, utf8=True)
    if result is not None:  # the verdict, open or closed: stdout is the document
        from pp1audit.formats.text_format import summary

        _say(f"{target}: {summary(result)}")
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

    return Names(default_manifest_path().name if manifest is None else last(manifest),
                 None if target is None else last(target))


def _check_generated(path: Path, text: str) -> int:
    """``cog --check`` for reports: 0 when ``path`` is what would be generated, else 1 + diff."""
    from pp1audit.sources.inputs import read_input

    data = read_input(path, "report to check")
    if data == text.encode("utf-8"):  # byte for byte: line endings count too
        return EXIT_OPEN
    current = _report_text(path, data)  # only a stale one needs decoding
    lines, escaped = _diff_lines(path, current, text, getattr(sys.stdout, "encoding", None))
    _emit("".join(lines), None)
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


@cli.command()
def schema() -> int:
    """Print the JSON Schema of the manifest format (for editors and CI validators)."""
    from pp1audit.formats.json_format import dumps
    from pp1audit.manifest.schema import SCHEMA

    _emit(dumps(SCHEMA), None, utf8=True)
    return EXIT_OPEN


class _QuietStderr:
    """``sys.stderr`` for the length of a run, which never fails the run.

    Diagnostics that cannot be delivered (stderr closed: ``2>&-``, or a
    reader gone) have nowhere else to go; letting the write raise turned a
    usage error into exit 1 (the error escaped its handler) and a verdict into
    an "internal error". So they are dropped, and the exit code stays the
    run's. A stderr closed before the start (``sys.stderr`` None) is a sink.
    """

    def __init__(self, stream: TextIO | None) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        if self._stream is not None:
            try:
                self._stream.write(text)
            except (OSError, ValueError):  # ValueError: the stream was closed
                self._give_up()
        return len(text)

    def _give_up(self) -> None:
        """Stop writing, and point the file at /dev/null: what the stream still
        buffers is flushed at exit and would fail there (Python then exits 120)."""
        with contextlib.suppress(OSError, ValueError):
            _discard(self._stream)
        self._stream = None

    def flush(self) -> None:
        if self._stream is not None:
            try:
                self._stream.flush()
            except (OSError, ValueError):
                self._give_up()

    def isatty(self) -> bool:
        try:
            return self._stream is not None and self._stream.isatty()
        except (OSError, ValueError):
            return False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def tell(line: str) -> None:
    """``line`` on stderr, written by the stream itself: click's ``echo`` would
    write UTF-8 past an ASCII stream (click calls it misconfigured) and past the
    ``CODE_POINTS`` handler, so a character the locale cannot show would reach the
    terminal as bytes it cannot show either, where stdout writes ``\\u00e9``."""
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def _say(message: str) -> None:
    """An error on stderr in one line, whatever it quotes (a YAML reader's or
    git's message may hold newlines; a file name may hold anything)."""
    from pp1audit.text.safe import printable

    tell("pp1audit: " + printable(message))


def _discard(stream: TextIO | None) -> None:
    """Point ``stream``'s file at /dev/null once writing to it has failed: what
    is still buffered is flushed at exit, would fail again, and Python would
    print "Exception ignored" and a traceback (the remedy the ``signal`` docs
    give for SIGPIPE). A stream without a file (a test's capture) has nothing
    to flush at exit."""
    if stream is None:
        return
    try:
        fd = stream.fileno()
    except (OSError, ValueError):
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    if devnull == fd:  # ``fd`` was closed, and the open took its number: done
        return
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


def _stdout_failed(exc: OSError, stdout: TextIO) -> int:
    """The exit code of a run whose results could not be written to stdout
    (a full disk, an I/O error; a closed pipe only when it escaped the guard,
    and the verdict with it): the results are lost, one line, exit 2."""
    _discard(stdout)
    _say(f"error: cannot write to stdout: {exc.strerror or exc}")
    return EXIT_USAGE


@contextlib.contextmanager
def _quiet_gc() -> Iterator[None]:
    """Keep the cycle collector off the hot path of a run.

    A ``--record`` run makes ~30,000 small objects (entries, digests, RECORD
    rows) that are never garbage, and every 700 allocations the collector
    walked them, and every module imported, again: 1.5 % of the CPU of a run
    on vLLM (perf), on a machine whose cores are all busy hashing. Freezing
    what the imports made and collecting less often keeps collection for real
    garbage; a run's cycles (tracebacks, parse trees) are still freed. Undone
    at the end, for a caller that runs ``main`` in its own process (tests).
    """
    import gc

    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(50_000, 20, 20)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


ERROR_FORMAT = "pp1audit.error/1"
"""``format`` of the JSON object a run that asked for JSON prints when it exits 2."""


_JSON_ONLY = frozenset({"schema"})
"""Commands whose stdout is always a JSON document (no ``--format``): their exit 2
is answered with the error object too, as ``check``, ``pin`` and ``diff`` do theirs."""


def _json_on_stdout(args: list[str]) -> bool:
    """Whether ``args`` asked for a JSON document on stdout: ``--format json`` of
    ``check`` (without ``--output``, which takes the document), ``pin`` or ``diff``;
    ``schema`` always (``_JSON_ONLY``).

    Read again by click in resilient mode, which takes what it can of a command
    line it refused, so a usage error of a JSON run is answered in JSON too.
    The group has no option taking a value: its first other word is the command.
    """
    at = next((i for i, a in enumerate(args) if not a.startswith("-")), None)
    if at is None:
        return False
    name = args[at]
    try:
        command = cli.get_command(click.Context(cli), name)
        if command is None:
            return False
        ctx = command.make_context(name, args[at + 1:], resilient_parsing=True)
    except Exception:  # a command line even resilient parsing refuses: no document asked
        return False
    if name in _JSON_ONLY:
        return True
    # -o given is -o given, even a value click refused (a directory): stdout is not the document's
    given = ctx.get_parameter_source("output") not in (None, click.core.ParameterSource.DEFAULT)
    return ctx.params.get("fmt") == "json" and not (name == "check" and given)


def _error_object(message: str) -> str:
    """The one JSON object of a JSON run that exits 2: ``message`` is the line said
    on stderr (unescaped: JSON escapes), so a ``| jq`` step reads why, not nothing."""
    from pp1audit.formats.json_format import dumps

    return dumps({"format": ERROR_FORMAT, "tool": {"name": "pp1audit", "version": __version__},
                  "error": message, "exit": EXIT_USAGE})


def _say_aborted(end_line: bool) -> str:
    """Say "aborted" after Ctrl-C, and return it as the run's error. ``end_line``:
    first end the line a terminal's ``^C`` echo or a progress bar left open (only
    on a terminal: a log or a pipe got no such line, and an empty one is noise)."""
    tell(f"{chr(10) if end_line else ''}pp1audit: aborted")
    return "aborted"


def _run(argv: list[str] | None, stdout: TextIO) -> tuple[int, str | None]:
    """Run the CLI: the exit code, and the one-line error when there was one
    (``None`` when stdout itself failed: nothing more can go there)."""
    no_args = getattr(click.exceptions, "NoArgsIsHelpError", ())
    message: str | None = None
    said = False  # the message is on stderr already
    try:
        with _quiet_gc():
            code = cli.main(args=argv, prog_name="pp1audit", standalone_mode=False)
        sys.stdout.flush()  # a buffered tail fails here, not at exit
    except StdoutFailed as exc:
        code = _stdout_failed(exc.cause, stdout)
    except no_args as exc:  # bare "pp1audit": the help, as click would show it
        tell(exc.ctx.get_help() if exc.ctx else exc.format_message())
        code = EXIT_USAGE
    except click.UsageError as exc:
        hint = f" (see '{exc.ctx.command_path} --help')" if exc.ctx else ""
        message = f"{exc.format_message()}{hint}"
        code = EXIT_USAGE
    except click.ClickException as exc:
        message = exc.format_message()
        code = EXIT_USAGE
    except Interrupted:
        message, said, code = _say_aborted(sys.stderr.isatty()), True, EXIT_USAGE
    except click.exceptions.Abort:  # Ctrl-C while click parsed: it ended the line itself
        message, said, code = _say_aborted(False), True, EXIT_USAGE
    except KeyboardInterrupt:  # outside click: before or after the command
        message, said, code = _say_aborted(sys.stderr.isatty()), True, EXIT_USAGE
    except click.exceptions.Exit as exc:
        code = exc.exit_code
    except Pp1Error as exc:
        message = str(exc)
        code = exc.exit_code
    except BrokenPipeError as exc:  # a closed pipe click did not see: a reader went away
        code = _stdout_failed(exc, stdout)
    except MemoryError:  # not a bug: the machine (or ulimit -v) refused; its text is empty
        message = "out of memory (a memory limit, ulimit -v?)"
        code = EXIT_USAGE
    except Exception as exc:  # a bug: still one line, never a traceback
        message = f"internal error: {type(exc).__name__}: {exc}"
        code = EXIT_USAGE
    if message is not None and not said:
        _say(message if message.startswith("internal error: ") else f"error: {message}")
    return (code if isinstance(code, int) else EXIT_OPEN), message


def main(argv: list[str] | None = None) -> None:
    """Console entry point: run the CLI and turn every outcome into an exit code.

    SIGTERM and SIGHUP unwind the run as Ctrl-C does (``Terminated``), then end
    the process by the same signal. A run that asked for JSON on stdout and exits
    2 prints one error object there (``ERROR_FORMAT``) unless it printed already.
    """
    # Results may hold any Unicode (en dashes, arrows): never let a narrow
    # terminal encoding turn a finished run into a crash; what it cannot show is
    # written ``\u00e9`` (``CODE_POINTS``), never ``\xe9``, the escape of a byte
    # that is not UTF-8. (A stream whose file was closed cannot be reconfigured:
    # its guard below says what that means.)
    from pp1audit.text.safe import CODE_POINTS

    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            with contextlib.suppress(OSError, ValueError):
                stream.reconfigure(errors=CODE_POINTS)
    stdout, stderr = sys.stdout, sys.stderr
    guard = _GuardedStdout(stdout)
    sys.stdout = cast(TextIO, guard)
    sys.stderr = cast(TextIO, _QuietStderr(stderr))
    terminated: int | None = None
    code = EXIT_USAGE
    try:
        with _unwinding_signals():
            code, message = _run(argv, stdout)
            if code == EXIT_USAGE and message is not None and not guard.wrote \
                    and _json_on_stdout(sys.argv[1:] if argv is None else list(argv)):
                with contextlib.suppress(StdoutFailed):
                    guard.write_utf8(_error_object(message))
                    guard.flush()
    except Terminated as exc:
        terminated = exc.signum
        import signal

        tell(f"pp1audit: terminated by {signal.Signals(exc.signum).name}")
    finally:
        sys.stderr.flush()  # through the guard: a stderr that fails is pointed at /dev/null
        sys.stdout, sys.stderr = stdout, stderr
    if terminated is not None:
        _end_by(terminated)
    sys.exit(code)


def entry() -> NoReturn:
    """The console script's and ``python -m pp1audit``'s entry point: ``main``, then
    the process ends at once (``os._exit``) with the run's exit code, once stdout and
    stderr are flushed.

    Why: a ``--record`` run on vLLM leaves tens of thousands of objects
    (entries, digests, RECORD rows, kept sources) and every module it imported;
    the interpreter's shutdown frees them one by one and runs a last collection
    over them: 15-25 ms after the verdict is written, on one core (measured on
    vLLM 0.31.0 with the machine busy: up to a twentieth of a ``check
    --record``). Nothing is left to do by then: outputs are written atomically
    and closed, git helpers and bytecode worker pools are stopped by the runs
    that started them (so the exit hooks ``multiprocessing`` and
    ``concurrent.futures`` register have nothing left to join), the hashing
    threads have ended, and pp1audit registers no ``atexit`` hook of its own.
    ``main`` itself still ends with ``sys.exit``, for callers that run it in
    their own process (the tests). A signal that ended the run ended the process
    inside ``main`` already (``_end_by``).
    """
    try:
        main()
        code: object = EXIT_OPEN  # pragma: no cover - main always raises SystemExit
    except SystemExit as exc:
        code = exc.code
    if code is not None and not isinstance(code, int):  # as the interpreter does: said, exit 1
        with contextlib.suppress(Exception):
            print(code, file=sys.stderr)
        code = 1
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # a reader gone: main has said what it could
            stream.flush()
    os._exit(EXIT_OPEN if code is None else code)
