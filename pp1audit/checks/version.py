"""``version``: the package's ``_version.py`` against ``target.version``.

The file is parsed with ``ast``, never imported: importing would run the
audited package's code, which is exactly what an audit must not trust.
"""

from __future__ import annotations

import ast

from pp1audit.checks import source_problem
from pp1audit.errors import SourceError
from pp1audit.result import Check, Status
from pp1audit.sources.store import FileStore

_NAMES = ("__version__", "version")
MAX_VERSION_FILE = 1 << 20
"""A ``_version.py`` is a few hundred bytes; anything over 1 MiB is not one."""


def read_version(data: bytes) -> str | None:
    """The string assigned to ``__version__`` (or ``version``), or None."""
    if len(data) > MAX_VERSION_FILE:
        return None
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None  # hostile or broken: judged as "assigns no version", never a crash
    found: dict[str, str] = {}
    for node in tree.body:
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets = [node.target]
        else:
            continue
        value = node.value
        if not (isinstance(value, ast.Constant) and isinstance(value.value, str)):
            continue
        for t in targets:
            if isinstance(t, ast.Name) and t.id in _NAMES:
                found[t.id] = value.value
    return found.get("__version__") or found.get("version")


def version_path(package: str) -> str:
    """Where the version lives: ``<package>/_version.py`` (setuptools-scm style)."""
    return f"{package}/_version.py"


def check_version(package: str, expected: str, store: FileStore) -> Check:
    """Compare the declared version with the pinned one."""
    path = version_path(package)
    try:
        data = store.get(path).data
    except SourceError as exc:
        return source_problem(exc, id="version", kind="version", expected=expected)
    actual = read_version(data)
    if actual is None:
        return Check(
            id="version", kind="version", status=Status.ERROR, path=path, expected=expected,
            message=f"{path} assigns no __version__ string",
        )
    ok = actual == expected
    return Check(
        id="version", kind="version", status=Status.PASS if ok else Status.FAIL,
        path=path, expected=expected, actual=actual,
        message=f"version is {actual}" if ok else f"version is {actual}, pinned {expected}",
    )


def declared_version(package: str, store: FileStore) -> str | None:
    """The version the target declares, for reports; None when it cannot be read."""
    try:
        return read_version(store.get(version_path(package)).data)
    except SourceError:
        return None
