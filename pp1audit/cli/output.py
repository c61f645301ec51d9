"""Process output: stdout that survives a closed pipe, atomic ``-o`` files, one-line messages.

A reader that stops reading (``| head``) is the reader's choice: the rest of the output
is dropped and the exit code stays the run's own; a full disk is one line and exit 2.
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from pp1audit.errors import EXIT_USAGE
from pp1audit.fdio import write_all

if TYPE_CHECKING:
    pass



class StdoutFailed(Exception):
    """Writing to stdout failed (not a closed pipe): the run's results were lost.

    Deliberately no ``OSError``: click turns an EPIPE ``OSError`` raised in a
    command into a silent exit 1 (the code of a closed gate), and ``main``
    would call any other one a bug.
    """

    def __init__(self, cause: OSError) -> None:
        super().__init__(cause.strerror or str(cause))
        self.cause = cause


class GuardedStdout:
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
        discard(self._open())
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


def emit(text: str, output: Path | None, *, utf8: bool = False) -> None:
    """Write a command's result to ``output`` atomically, or to stdout whole:
    ``sys.stdout`` is ``GuardedStdout`` in a run, which writes every byte or
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

class QuietStderr:
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
            discard(self._stream)
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


def say(message: str) -> None:
    """An error on stderr in one line, whatever it quotes (a YAML reader's or
    git's message may hold newlines; a file name may hold anything)."""
    from pp1audit.text.safe import printable

    tell("pp1audit: " + printable(message))


def discard(stream: TextIO | None) -> None:
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


def stdout_failed(exc: OSError, stdout: TextIO) -> int:
    """The exit code of a run whose results could not be written to stdout
    (a full disk, an I/O error; a closed pipe only when it escaped the guard,
    and the verdict with it): the results are lost, one line, exit 2."""
    discard(stdout)
    say(f"error: cannot write to stdout: {exc.strerror or exc}")
    return EXIT_USAGE
