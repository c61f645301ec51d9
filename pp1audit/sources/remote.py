"""A pinned remote file as a ``Source``: its verified cached bytes at its logical path.

Fetching and caching them are ``download`` and ``cache``; this serves them to the
checks like any other file."""

from __future__ import annotations

from collections.abc import Iterator

from pp1audit.errors import MissingFile, SourceError
from pp1audit.sources import Source


class NotThePin(MissingFile):
    """A path other than the one file a remote pin holds (a ``fail``, like a missing file)."""

    def __init__(self, path: str, pinned: str) -> None:
        SourceError.__init__(self, path, f"is not this remote pin's file ({pinned})")


class RemoteSource(Source):
    """One pinned remote file, from verified cached bytes, at its logical path.

    Citations name it like any file (``at: <path>:a-b`` with ``source: <pin id>``);
    the bytes are those that matched the pin, so the pin's digest proves them.
    """

    kind = "remote"

    def __init__(self, path: str, data: bytes, location: str) -> None:
        self.path = path
        self.data = data
        self.location = location

    def read(self, path: str) -> bytes:
        self._check_path(path)
        if path != self.path:
            raise NotThePin(path, self.path)
        return self.data

    def exists(self, path: str) -> bool:
        return path == self.path

    def iter_files(self, under: str = "") -> Iterator[str]:
        prefix = under.rstrip("/") + "/" if under else ""
        if self.path.startswith(prefix):
            yield self.path
