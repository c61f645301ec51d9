"""Output formats: each module turns a ``Result`` into text and does nothing else.

Formatters never re-run checks and never print; the CLI writes what they return.
``FORMATS`` is the single registry the ``--format`` option is built from.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module

from pp1audit.result import Result

FORMATS = ("text", "json")


def get_formatter(name: str) -> Callable[..., str]:
    """The ``render`` function of the named format (imported only when used)."""
    if name not in FORMATS:
        raise KeyError(name)
    module = import_module(f"pp1audit.formats.{name}_format")
    render: Callable[..., str] = module.render
    return render


__all__ = ["FORMATS", "Result", "get_formatter"]
