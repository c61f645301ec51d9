"""What a directory offers ``import`` under a name: the lookups the shadowing checks share.

The ``.pth`` path lines, the standard library, the console scripts' directory and
the site directory itself are all asked the same questions (is another copy of
the package here, which top-level module is this entry, which entries are there
when the directory cannot be listed): they live here, below every module that
asks them, so none of those modules imports another for a helper. Where Python
looks, and how it names module files, is ``pp1audit.checks.sitemodel``.
"""

from __future__ import annotations

import os

from pp1audit.checks.sitemodel import (
    MODULE_SUFFIXES,
    imports_as,
    module_files,
)

CUSTOMIZE = ("sitecustomize", "usercustomize")
"""Modules ``site`` imports at every interpreter start."""


def os_names(directory: str, modules: tuple[str, ...]) -> list[str]:
    """The entries of an OS directory, for matching module names (``imports_as``).

    One the audit cannot list (no read permission for whoever runs it) is probed
    by ``lstat`` for the names of ``modules`` that every version imports: a
    version-tagged extension module there cannot be named without listing it."""
    try:
        return os.listdir(directory)
    except (OSError, ValueError):
        pass
    probe = [m + s for m in modules for s in ("", *MODULE_SUFFIXES)]
    return [n for n in probe if _lexists(os.path.join(directory, n))]


def _lexists(path: str) -> bool:
    try:
        os.lstat(path)
    except (OSError, ValueError):
        return False
    return True


def copy_in(directory: str, package: str, version: tuple[int, int] | None) -> str | None:
    """The path of an importable ``package`` (for Python ``version``) in an OS directory, or None."""
    pkg = os.path.join(directory, package)
    if os.path.isdir(pkg):
        return pkg
    for name in module_files(os_names(directory, (package,)), package, version):
        p = os.path.join(directory, name)
        if os.path.isfile(p):
            return p
    return None


def module_name_of(name: str, version: tuple[int, int] | None) -> str | None:
    """The module a file of this name is, for Python ``version`` (``imports_as``), or None."""
    stem = name.split(".", 1)[0]
    return stem if stem.isidentifier() and imports_as(name, stem, version) else None


def module_name(directory: str, name: str, version: tuple[int, int] | None) -> str | None:
    """The top-level module an entry of ``directory`` is importable as (for Python
    ``version``), or None: a directory named as an identifier (a package, or a
    namespace portion), a module file of an identifier (``imports_as``)."""
    if name == "__pycache__":
        return None
    if os.path.isdir(os.path.join(directory, name)):
        return name if name.isidentifier() else None
    return module_name_of(name, version)
