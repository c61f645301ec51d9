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

import contextlib
import os
import sys
from collections.abc import Iterator
from importlib import import_module
from typing import Any, ClassVar, NoReturn, TextIO, cast

import click

from pp1audit import __version__
from pp1audit.cli.options import ConfiguredCommand
from pp1audit.cli.output import GuardedStdout, QuietStderr, StdoutFailed, say, stdout_failed, tell
from pp1audit.errors import EXIT_OPEN, EXIT_USAGE, Pp1Error


class _Group(click.Group):
    """A group whose commands load on first use, each from its module: their option
    declarations cost start-up that ``--version`` (and ``check``, for the upgrade
    commands) should not pay."""

    _LAZY: ClassVar[dict[str, tuple[str, str]]] = {
        "check": ("audit_cmds", "check"), "report": ("audit_cmds", "report"),
        "fetch": ("audit_cmds", "fetch"), "schema": ("audit_cmds", "schema"),
        "init": ("upgrade_cmds", "init"), "pin": ("upgrade_cmds", "pin"),
        "show": ("upgrade_cmds", "show"), "diff": ("upgrade_cmds", "diff_cmd"),
    }
    command_class = ConfiguredCommand

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self._LAZY})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self._LAZY and name not in self.commands:
            module, attr = self._LAZY[name]
            command: click.Command = getattr(import_module(f"pp1audit.cli.{module}"), attr)
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
    tell(f"{chr(10) if end_line else ''}pp1audit: error: aborted")
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
        code = stdout_failed(exc.cause, stdout)
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
        code = stdout_failed(exc, stdout)
    except MemoryError:  # not a bug: the machine (or ulimit -v) refused; its text is empty
        message = "out of memory (a memory limit, ulimit -v?)"
        code = EXIT_USAGE
    except Exception as exc:  # a bug: still one line, never a traceback
        message = f"internal error: {type(exc).__name__}: {exc}"
        code = EXIT_USAGE
    if message is not None and not said:
        say(message if message.startswith("internal error: ") else f"error: {message}")
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
    guard = GuardedStdout(stdout)
    sys.stdout = cast(TextIO, guard)
    sys.stderr = cast(TextIO, QuietStderr(stderr))
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
