"""``file``: one SHA-256 pin against the bytes the store read (once) for that path."""

from __future__ import annotations

from pp1audit.checks import source_problem
from pp1audit.errors import SourceError
from pp1audit.result import Check, Status
from pp1audit.sources.store import FileStore


def check_file(path: str, expected: str, store: FileStore, source: str | None = None) -> Check:
    """``pass`` when the digest matches, ``fail`` with both digests otherwise."""
    cid = f"file:{path}"
    try:
        actual = store.get(path).sha256
    except SourceError as exc:
        return source_problem(exc, id=cid, kind="file", expected=expected, source=source)
    ok = actual == expected
    return Check(
        id=cid, kind="file", status=Status.PASS if ok else Status.FAIL, path=path,
        expected=expected, actual=actual, source=source,
        message="SHA-256 matches the pin" if ok else "SHA-256 differs from the pin",
    )
