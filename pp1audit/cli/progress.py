"""A progress bar on stderr for long phases (hashing, compiling), drawn by rich.

The core only calls the ``pp1audit.sources.hashing.Progress`` hook; this is the one
implementation the CLI hands it, and only when stderr is a terminal and the
output is not JSON. Nothing is drawn for a phase shorter than ``DELAY``
seconds, so quick runs stay silent, and rich is imported only when a bar is
actually shown.
"""

from __future__ import annotations

import sys
import time
from typing import Any

DELAY = 0.5
"""Seconds a phase must run before a bar appears."""


class TerminalProgress:
    """Transient rich progress bar on stderr, shown after ``DELAY`` seconds."""

    def __init__(self, delay: float = DELAY) -> None:
        self.delay = delay
        self._bar: Any = None
        self._task: Any = None
        self._started = 0.0
        self._description = ""
        self._total = 0

    def start(self, description: str, total: int) -> None:
        """Begin a phase; the bar is created lazily on a later ``update``."""
        self.stop()
        self._description = description
        self._total = total
        self._started = time.monotonic()

    def update(self, done: int) -> None:
        """Report progress; draws once the phase has lasted ``delay`` seconds."""
        if self._bar is None:
            if time.monotonic() - self._started < self.delay:
                return
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                Progress,
                TaskProgressColumn,
                TextColumn,
                TimeRemainingColumn,
            )

            self._bar = Progress(
                TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(),
                TimeRemainingColumn(), console=Console(file=sys.stderr), transient=True,
            )
            self._bar.start()
            self._task = self._bar.add_task(self._description, total=self._total)
        self._bar.update(self._task, completed=done)

    def stop(self) -> None:
        """End the phase and remove the bar."""
        if self._bar is not None:
            self._bar.stop()
        self._bar = None
        self._task = None


def for_terminal(fmt: str) -> TerminalProgress | None:
    """A progress bar when a person watches stderr and the output is not JSON, else None.

    The bar is on stderr, so it shows while ``--output`` writes the result to a file too.
    """
    if fmt == "json" or not sys.stderr.isatty():
        return None
    return TerminalProgress()
