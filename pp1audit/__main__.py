"""``python -m pp1audit``: the same entry point as the console script."""

from pp1audit.cli import entry

entry()
