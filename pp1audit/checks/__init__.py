"""Checks: pure functions from a manifest item and a file store to a ``Check``.

One module per kind. None of them prints, exits or keeps global state; a file
problem becomes an ``error`` (or ``fail`` when the pinned file is simply gone)
for that one check, and the run goes on.
"""

from __future__ import annotations

from pp1audit.errors import MissingFile, SourceError
from pp1audit.result import Check, Status


def source_problem(
    exc: SourceError, *, id: str, kind: str, lines: tuple[int, int] | None = None,
    expected: str | None = None, source: str | None = None,
) -> Check:
    """The check record for a file that could not be used."""
    status = Status.FAIL if isinstance(exc, MissingFile) else Status.ERROR
    return Check(
        id=id, kind=kind, status=status, message=exc.sentence,
        path=exc.path, lines=lines, expected=expected, source=source,
    )
