"""Output formats: each module turns a ``Result`` into text and does nothing else.

Formatters never re-run checks and never print; the CLI writes what they return.
``FORMATS`` is the single registry the ``--format`` option is built from.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module

from pp1audit.result import Check, Result

FORMATS = ("text", "json")

UNKNOWN_VERSION = "version unknown"
"""How every output says a target's version was not found: in words, never "None"."""


def version_or_unknown(version: str | None) -> str:
    """The version as found, or ``UNKNOWN_VERSION`` (an empty one is no version either):
    one wording for ``check``, ``report`` and ``diff``."""
    return version or UNKNOWN_VERSION


def named_source(check: Check) -> str | None:
    """The named git source or remote pin a check read, None for the target itself
    (whether recorded as None or as ``"target"``): outputs name only the others."""
    return None if check.source in (None, "target") else check.source


def counted(counts: Mapping[str, int]) -> str:
    """``3 pass, 0 drift, …``: a count per status, in the order given (every status,
    zero included), as every closing line and report spells it."""
    return ", ".join(f"{n} {status}" for status, n in counts.items())


def skip_reasons(checks: list[Check]) -> list[tuple[str, int, Check]]:
    """What the skipped ``checks`` wait for, once each: the reason, how many wait for it
    and the first that does. Their messages name the input and how to give it
    (``--repo NAME=PATH``, ``pp1audit fetch``); a message that ends another one (a
    donor's hunks "not checked: <the donor's reason>") waits for the same input and
    is told in its shortest words."""
    groups: list[tuple[str, int, Check]] = []
    for c in checks:
        for i, (reason, n, first) in enumerate(groups):
            if c.message.endswith(reason) or reason.endswith(c.message):
                groups[i] = (min(reason, c.message, key=len), n + 1, first)
                break
        else:
            groups.append((c.message, 1, c))
    return groups


def get_formatter(name: str) -> Callable[..., str]:
    """The ``render`` function of the named format (imported only when used)."""
    if name not in FORMATS:
        raise KeyError(name)
    module = import_module(f"pp1audit.formats.{name}_format")
    render: Callable[..., str] = module.render
    return render


__all__ = ["FORMATS", "UNKNOWN_VERSION", "Result", "counted", "get_formatter", "named_source", "skip_reasons",
           "version_or_unknown"]
