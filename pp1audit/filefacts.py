"""Moved: the file facts are the ``pp1audit.facts`` package (one module per job). This name
stays only until ``matcher`` imports them from there."""

from pp1audit.facts import Facts, class_hook_use

__all__ = ["Facts", "class_hook_use"]
