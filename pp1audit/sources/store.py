"""Each file read once per run: its bytes, SHA-256 and decoded lines together.

A file pin and a citation of the same file must judge the *same* bytes, or a
file swapped between two reads could pass one check and fail the other. The
store memoises the first read (errors included) for the whole run.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from pp1audit.errors import SourceError
from pp1audit.sources import Source

if TYPE_CHECKING:
    from pp1audit.text.spans import LineIndex


_NOT_TEXT = "not UTF-8 text (binary or another encoding)"
"""Why a file that ``spans.decode_lines`` refuses (NUL bytes, not UTF-8) has no text."""


@dataclass(frozen=True)
class FileData:
    """The bytes of one file as read once, with derived views."""

    path: str
    data: bytes

    @cached_property
    def sha256(self) -> str:
        """Hex SHA-256 of the bytes (one hashlib call on the whole buffer)."""
        return hashlib.sha256(self.data).hexdigest()

    @cached_property
    def lines(self) -> list[str] | None:
        """Text lines (see ``spans.decode_lines``), or None when not UTF-8 text."""
        from pp1audit.text.spans import decode_lines

        return decode_lines(self.data)

    @cached_property
    def index(self) -> LineIndex:
        """The lines indexed for relocation, built once per file per run and shared by
        all its citations (a per-citation scan made 50,000 drifted citations quadratic);
        ``SourceError`` when not text."""
        from pp1audit.text.spans import LineIndex

        return LineIndex(self.text_lines())

    def text_lines(self) -> list[str]:
        """Lines of a text file; ``SourceError`` for binary or non-UTF-8 content."""
        lines = self.lines
        if lines is None:
            raise SourceError(self.path, _NOT_TEXT)
        return lines

    def text(self) -> str:
        """The bytes as text, byte-order mark and line ends as they are (a patch is
        judged on the lines git holds); ``SourceError`` as ``text_lines`` gives it."""
        try:
            text = None if b"\x00" in self.data else self.data.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if text is None:
            raise SourceError(self.path, _NOT_TEXT)
        return text


class FileStore:
    """Memoising reader over a ``Source``: one read per path per run."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self._files: dict[str, FileData | SourceError] = {}

    def get(self, path: str) -> FileData:
        """The file's data; re-raises the same ``SourceError`` on every call."""
        hit = self._files.get(path)
        if hit is None:
            try:
                hit = FileData(path, self.source.read(path))
            except SourceError as exc:
                hit = exc
            self._files[path] = hit
        if isinstance(hit, SourceError):
            raise hit
        return hit
