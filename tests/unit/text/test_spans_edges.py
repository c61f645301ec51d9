"""Spans at scale: relocation work is bounded per citation, and absurd line numbers
are one clear error.

One line inserted at the top of a cited file makes every citation of it drift.
Scanning the whole file for each of them was quadratic (50,000 citations: 113 s);
the file's ``LineIndex`` is built once and shared, so a citation costs its own
lines plus the places its text occurs. The bounds are counted (line comparisons,
lexed lines, indexes built), never timed.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from pp1audit.errors import ManifestError
from pp1audit.manifest import parse
from pp1audit.result import Status
from pp1audit.run import audit
from pp1audit.sources import DirectorySource
from pp1audit.text import spans
from pp1audit.text.spans import MAX_LINE_DIGITS, parse_span

MakeFiles = Callable[..., Path]

N = 1500
"""Citations of one file: N**2 is far above any linear bound below."""


class CountingLine(str):
    """A file line that counts how often it is compared for equality."""

    compared = 0

    def __eq__(self, other: object) -> bool:
        CountingLine.compared += 1
        return str.__eq__(self, other)

    __hash__ = str.__hash__


def count_comparisons(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every file line read in this test a ``CountingLine``."""
    decode = spans.decode_lines

    def counted(data: bytes) -> list[str] | None:
        lines = decode(data)
        return None if lines is None else [CountingLine(line) for line in lines]

    CountingLine.compared = 0
    monkeypatch.setattr(spans, "decode_lines", counted)


def citations(path: str, texts: list[str]) -> str:
    body = "".join(f'  c{i}: {{at: "{path}:{i + 1}", anchor: {{exact: "{t}"}}}}\n'
                   for i, t in enumerate(texts))
    return "pp1audit: 1\ntarget: {package: pkg}\ncitations:\n" + body


def test_drifted_citations_cost_their_own_lines(
    make_files: MakeFiles, monkeypatch: pytest.MonkeyPatch,
) -> None:
    texts = [f"x{i} = {i}" for i in range(N)]
    root = make_files({"pkg/a.py": "\n".join(["# a new first line", *texts]) + "\n"})
    manifest = parse(citations("pkg/a.py", texts), "m.yaml")
    count_comparisons(monkeypatch)
    result = audit(manifest, DirectorySource(root))
    assert all(c.status is Status.DRIFT for c in result.checks)
    assert [c.found_lines for c in result.checks] == [(i + 2, i + 2) for i in range(N)]
    # A scan per citation compares about N**2 / 2 lines; the index a few per citation.
    assert CountingLine.compared <= 10 * N, CountingLine.compared


def test_whitespace_drift_is_found_through_the_index_too(
    make_files: MakeFiles, monkeypatch: pytest.MonkeyPatch,
) -> None:
    texts = [f"y{i} = {i}" for i in range(N)]
    spaced = [f"y{i}  =  {i}" for i in range(N)]
    root = make_files({"pkg/b.txt": "\n".join(["new", "", *spaced]) + "\n"})
    manifest = parse(citations("pkg/b.txt", texts), "m.yaml")
    folded: list[int] = []
    build = spans.LineIndex._build_folded

    def counted(self: spans.LineIndex) -> dict[str, list[int]]:
        folded.append(id(self))
        return build(self)

    monkeypatch.setattr(spans.LineIndex, "_build_folded", counted)
    result = audit(manifest, DirectorySource(root))
    assert [c.found_lines for c in result.checks] == [(i + 3, i + 3) for i in range(N)]
    assert all("whitespace differs" in c.message for c in result.checks)
    assert len(set(folded)) == 1  # one index, shared by every citation of the file


def test_one_index_per_file(make_files: MakeFiles, monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[int] = []

    class Counted(spans.LineIndex):
        def __init__(self, lines: list[str]) -> None:
            built.append(1)
            super().__init__(lines)

    monkeypatch.setattr(spans, "LineIndex", Counted)  # FileData.index imports it lazily
    files = {f"pkg/m{k}.py": "\n".join(["# new", *(f"z{i} = {k}" for i in range(50))]) + "\n"
             for k in range(3)}
    root = make_files(files)
    text = "pp1audit: 1\ntarget: {package: pkg}\ncitations:\n" + "".join(
        f'  c{k}_{i}: {{at: "pkg/m{k}.py:{i + 1}", anchor: {{exact: "z{i} = {k}"}}}}\n'
        for i in range(50) for k in range(3))
    result = audit(parse(text, "m.yaml"), DirectorySource(root))
    assert {c.status for c in result.checks} == {Status.DRIFT}
    assert len(built) == 3


def test_reindented_spans_lex_the_file_once(
    make_files: MakeFiles, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Every span holds in place but re-indented: each asks the lexer for the state
    # above it, which was the whole file above it (N**2 / 2 lines) for each citation.
    texts = [f"    w{i} = {i}" for i in range(N)]
    root = make_files({"pkg/c.py": "\n".join(t.strip() for t in texts) + "\n"})
    manifest = parse(citations("pkg/c.py", texts), "m.yaml")
    lexed = [0]
    fold_code = spans._fold_code

    def counted(text: str, quote: str | None, *, strict: bool = False) -> tuple[str, int, str | None]:
        lexed[0] += 1
        return fold_code(text, quote, strict=strict)

    monkeypatch.setattr(spans, "_fold_code", counted)
    result = audit(manifest, DirectorySource(root))
    assert all(c.status is Status.DRIFT and "re-indented by -4 columns" in c.message
               for c in result.checks)
    assert lexed[0] <= 10 * N, lexed[0]


@pytest.mark.parametrize("text", [
    "a.py:" + "9" * 5000,
    "a.py:1-" + "9" * 5000,
    "a.py:" + "1" * (MAX_LINE_DIGITS + 1),
], ids=["start", "end", "one-digit-over"])
def test_a_huge_line_number_is_too_large_not_a_python_limit(text: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_span(text)
    message = str(info.value)
    assert "the line number is too large" in message and "set_int_max_str_digits" not in message
    assert len(message) < 200


def test_the_largest_line_number_and_leading_zeros_still_parse() -> None:
    assert parse_span("a.py:" + "9" * MAX_LINE_DIGITS).start == 10 ** MAX_LINE_DIGITS - 1
    assert parse_span("a.py:" + "0" * 5000 + "7").start == 7


def test_a_huge_line_number_in_a_manifest_is_located() -> None:
    text = textwrap.dedent("""\
        pp1audit: 1
        target: {package: pkg}
        citations:
          c: {at: "pkg/a.py:1-%s", anchor: {exact: "x"}}
        """) % ("9" * 5000)
    with pytest.raises(ManifestError) as info:
        parse(text, "m.yaml")
    message = str(info.value)
    assert message.startswith("m.yaml:4:11: ") and "the line number is too large" in message
    assert len(message) < 250 and "\n" not in message
