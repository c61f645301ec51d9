"""The errors that stop a run before anything is judged, and their exit codes.

Every failure a user can cause (bad manifest, unusable target, bad option) is one
of these classes; the CLI maps them to exit code 2 in one place and prints
``str(error)`` as a single line. Anything else reaching the CLI is a bug, and is
still reported as one line with exit 2, never as a traceback.
"""

from __future__ import annotations

EXIT_OPEN = 0
"""The gate is open: everything pinned holds."""
EXIT_CLOSED = 1
"""The gate is closed: at least one fail / error (or drift, skip by option)."""
EXIT_USAGE = 2
"""Nothing was judged: usage error, invalid manifest or unusable target."""


class Pp1Error(Exception):
    """Base class: a problem with the user's input, reported in one line, exit 2."""

    exit_code = EXIT_USAGE


class ManifestError(Pp1Error):
    """The manifest is not valid; the message names ``file:line:column`` and the key path."""

    def __init__(self, file: str, line: int, column: int, keypath: str, message: str) -> None:
        self.file = file
        self.line = line
        self.column = column
        self.keypath = keypath
        self.message = message
        where = f" (at {keypath})" if keypath else ""
        super().__init__(f"{file}:{line}:{column}: {message}{where}")


class TargetError(Pp1Error):
    """The target cannot be read at all (missing, not a directory or wheel, corrupt zip)."""


class SourceError(Pp1Error):
    """One file of a source cannot be used; checks turn this into an ``error`` status.

    It is a ``Pp1Error`` so that code paths that need a file to proceed (e.g. the
    CLI's ``show``) report it in one line, but checks catch it per file so that one
    bad file never stops the run.
    """

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        self.message = message
        super().__init__(f"{path}: {message}")

    @property
    def sentence(self) -> str:
        """How every check says it: ``pkg/a.py is a FIFO; not opened`` (one wording
        for ``check``, ``show``, ``diff`` and the invariant matcher)."""
        return f"{self.path} {self.message}"


class MissingFile(SourceError):
    """The path names nothing in the source: a pin that no longer holds (``fail``)."""

    def __init__(self, path: str) -> None:
        super().__init__(path, "missing from the target")
