"""Simplifications that keep behaviour: the derived views live on the file they derive from."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import run_cli

from pp1audit.manifest import load_manifest, parse
from pp1audit.sources import DirectorySource
from pp1audit.sources.store import FileData
from pp1audit.text import spans
from pp1audit.upgrade.pin import plan


def test_file_index_is_built_once_per_file() -> None:
    """The relocation index is the file's own cached view (no module-level cache in a check)."""
    fd = FileData("a.py", b"x = 1\ny = 2\n")
    assert fd.index is fd.index
    assert fd.index.lines == fd.lines
    assert FileData("a.py", b"x = 1\ny = 2\n").index is not fd.index


def test_requoted_context_at_the_file_edge_quotes_no_trailing_blank_lines(
    make_files: Callable[..., Path], tmp_path: Path
) -> None:
    """``pin`` re-quotes context as ``init`` quotes it (``anchortext.context_lines``):
    blank lines past the last line of code at the file's edge say nothing."""
    root = make_files({"pkg/__init__.py": "", "pkg/a.py": "fire()\nb = 2\nc = 3\n"})
    m = tmp_path / "m.yaml"
    proc = run_cli("init", str(root), "-p", "pkg", "--cite", "fire=pkg/a.py:1", "-o", str(m))
    assert proc.returncode == 0, proc.stderr
    (root / "pkg" / "a.py").write_text("fire()\nb = 3\n\n\n")
    proc = run_cli("pin", str(root), "-m", str(m), "--in-place", "--accept", "fire")
    assert proc.returncode == 0, proc.stderr
    anchor = load_manifest(m).citations["fire"].anchor
    assert anchor is not None and anchor.suffix == ["b = 3"]
    assert run_cli("check", str(root), "-m", str(m)).returncode == 0


def test_pin_lexes_a_file_once_for_its_reindented_spans(
    make_files: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``pin`` asks the file's ``LineIndex`` for the lexer's state above a re-indented span,
    as ``check`` does: lexing the whole file above each span (twice) was quadratic."""
    n = 600
    texts = [f"    w{i} = {i}" for i in range(n)]
    root = make_files({"pkg/c.py": "\n".join(t.strip() for t in texts) + "\n"})
    text = "pp1audit: 1\ntarget: {package: pkg}\ncitations:\n" + "".join(
        f'  c{i}: {{at: "pkg/c.py:{i + 1}", anchor: {{exact: "{t}"}}}}\n'
        for i, t in enumerate(texts))
    lexed = [0]
    fold_code = spans._fold_code

    def counted(line: str, quote: str | None, *, strict: bool = False) -> tuple[str, int, str | None]:
        lexed[0] += 1
        return fold_code(line, quote, strict=strict)

    monkeypatch.setattr(spans, "_fold_code", counted)
    result = plan(parse(text, "m.yaml"), text, DirectorySource(root), accept=[f"c{i}" for i in range(n)])
    details = [item.detail for item in result.items if item.kind == "citation"]
    assert len(details) == n and all("re-indented by -4 columns" in d for d in details), details[:2]
    assert lexed[0] <= 10 * n, lexed[0]


def test_a_patch_reads_a_file_as_text_once(make_files: Callable[..., Path]) -> None:
    """``patches._read`` decodes the bytes once, as git holds them, without building the
    line view citations use; a file that is not text is refused as ``text_lines`` refuses it."""
    from pp1audit.checks.patches import _read
    from pp1audit.errors import SourceError
    from pp1audit.sources.store import FileStore

    root = make_files({"a.txt": "\ufeffx\r\ny", "b.bin": "a\x00b", "c.txt": "é"})
    (root / "c.txt").write_bytes(b"\xe9\n")
    store = FileStore(DirectorySource(root))
    assert _read(store, "a.txt") == ["\ufeffx\r\n", "y"]
    assert "lines" not in vars(store.get("a.txt"))
    for name in ("b.bin", "c.txt"):
        with pytest.raises(SourceError) as got:
            _read(store, name)
        with pytest.raises(SourceError) as want:
            store.get(name).text_lines()
        assert str(got.value) == str(want.value)


def test_a_diffs_text_hunks_are_built_once() -> None:
    from pp1audit.checks.patchparse import parse

    diff = parse(b"--- a/f\n+++ b/f\n@@ -1 +1 @@\n-x\n+y\n", 1)[0]
    assert len(diff.text) == 1 and diff.text is diff.text
