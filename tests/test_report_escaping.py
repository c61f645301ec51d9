"""The regenerated audit shows what the target and the manifest say, and nothing they say acts.

A tree whose file names hold ``|``, backticks, ``<script>``, ESC, a newline and
U+202E, a ``_version.py`` holding the same and a literal ``\\x1b``, and a manifest
whose title (with a literal ``\\x1b`` too), heading and table header hold them: the
Markdown of ``report`` (with and without TARGET) must keep every table row on one
line with its columns, hold no raw control character, start no HTML, and show each
name so that it reads back, rendered, as ``printable`` shows it. The Markdown is
read by markdown-it-py (CommonMark with GFM tables; rich depends on it), as a viewer
would read it.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest
import yaml
from conftest import run_cli
from markdown_it import MarkdownIt
from markdown_it.token import Token

from pp1audit.report import md
from pp1audit.safetext import printable

NAMES = ["a|b`c<script>.py", "esc\x1b[31m.py", "nl\nname.py", "rtl\u202egnp.py"]
VERSION = "1.0|x`y<b>z\x1b[31mRED\u202e\\x1b"
TITLE = "Title | pipe `tick` <img src=x onerror=alert(1)> \x1b[31mRED \\x1b\n# Injected heading"
CODE = "x = 1\n"
RAW_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")
MARKDOWN = MarkdownIt("commonmark").enable("table")


@pytest.fixture
def hostile(tmp_path: Path) -> tuple[Path, Path]:
    """The tree and its manifest: every name pinned, one cited, a ``table: files``."""
    pkg = tmp_path / "site" / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "_version.py").write_text(f"__version__ = {VERSION!r}\n", encoding="utf-8")
    for name in NAMES:
        (pkg / name).write_text(CODE, encoding="utf-8")
    digest = hashlib.sha256(CODE.encode()).hexdigest()
    manifest = {
        "pp1audit": 1,
        "audit": {"id": "t", "title": TITLE, "date": "2026-01-01"},
        "target": {"package": "pkg", "version": "1.0"},
        "files": {f"pkg/{name}": digest for name in NAMES},
        "citations": {"c1": {"at": f"pkg/{NAMES[0]}:1", "claim": "</details><script>x</script>",
                             "anchor": {"exact": "x = 1"}}},
        "report": {"title": "[[=audit.title]]", "sections": [{
            "heading": "H | `x` <b>\x1b[2J",
            "blocks": [
                {"text": "Version `[[=target.version]]`, cite `[[cite:c1]]`, claim "
                         "[[=citations.c1.claim]].", "evidence": ["version", "c1"]},
                {"table": "files", "prefix": "pkg/", "header": ["File | x", "SHA `a|b`"],
                 "evidence": [f"file:pkg/{name}" for name in NAMES]},
            ]}]},
    }
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump(manifest, allow_unicode=False, sort_keys=False), encoding="utf-8")
    return tmp_path / "site", path


def walk(tokens: list[Token]) -> list[Token]:
    """Every token, inline children included."""
    out = []
    for tok in tokens:
        out.append(tok)
        out += walk(tok.children or [])
    return out


def cells(tokens: list[Token]) -> list[list[str]]:
    """The table's rows, each as what its cells show."""
    rows: list[list[str]] = []
    for tok in tokens:
        if tok.type == "table_close":
            break
        if tok.type == "tr_open":
            rows.append([])
        elif tok.type == "inline" and rows:
            rows[-1].append(text_of(tok))
    return rows


def codes(tokens: list[Token]) -> list[str]:
    """What every inline code span shows."""
    return [t.content for t in walk(tokens) if t.type == "code_inline"]


def text_of(tok: Token) -> str:
    """What an inline token shows, code spans included (their text, without fences)."""
    return "".join(t.content for t in tok.children or [] if t.type in ("text", "code_inline"))


@pytest.mark.parametrize("with_target", [True, False])
def test_report_of_a_hostile_tree_shows_every_name_and_runs_nothing(
        hostile: tuple[Path, Path], with_target: bool) -> None:
    tree, manifest = hostile
    proc = run_cli("report", *([str(tree)] if with_target else []), "-m", str(manifest))
    assert proc.returncode == (1 if with_target else 0), proc.stderr
    out = proc.stdout
    assert not RAW_CONTROL.findall(out)
    tokens = MARKDOWN.parse(out)
    assert not [t for t in walk(tokens) if t.type in ("html_inline", "html_block")]

    # The table: one line per file, each with as many cells as the header has.
    columns = 3 if with_target else 2
    lines = [line for line in out.splitlines() if line.startswith("|")]
    assert len(lines) == 2 + len(NAMES)
    assert lines[1] == "|" + "---|" * columns
    rows = cells(tokens)
    assert [len(r) for r in rows] == [columns] * (1 + len(NAMES))
    assert rows[0][:2] == ["File | x", "SHA a|b"]
    assert [row[:1] for row in rows[1:]] == [[printable(name)] for name in NAMES]
    table_codes = codes(MARKDOWN.parse("\n".join(lines)))
    assert table_codes == ["a|b", *(printable(name) for name in NAMES)]

    # Titles and prose: one line each, the manifest's text shown as printable shows it.
    headings = [text_of(tokens[i + 1]) for i, t in enumerate(tokens) if t.type == "heading_open"]
    assert headings[:2] == [printable(TITLE), "H | x <b>\\x1b[2J"]
    shown = codes(tokens)
    assert printable(f"pkg/{NAMES[0]}:1") in shown
    if with_target:
        assert printable(VERSION) in shown
        assert sum(c == printable(VERSION) for c in shown) == 2  # the evidence and ## Measured
        assert {printable(f"file:pkg/{name}") for name in NAMES} <= set(shown)
        cited = next(t for t in walk(tokens) if t.type == "inline" and "unchanged" in t.content)
        assert f"{printable(f'pkg/{NAMES[0]}')}:1 unchanged" in text_of(cited)


@pytest.mark.parametrize("value", ["`x", "x`", "``", "a``b`c", " x ", " ", "a\\x1bb", "a\x1bb",
                                   "a\\`b", "x\\", "|`|", "a|b", "<b>&amp;", "nl\nx\u202e"])
def test_a_value_reads_back_in_each_context(value: str) -> None:
    code = MARKDOWN.parse(f"see {md(value, 'code')} here")
    assert codes(code) == [printable(value)]
    text = MARKDOWN.parse(f"see {md(value, 'text')} here")
    assert text_of(text[1]) == f"see {printable(value)} here"
    assert {t.type for t in text[1].children or []} == {"text"}  # no code span, link or HTML
    table = MARKDOWN.parse(f"| a | b |\n|---|---|\n| {md(value, 'code', cell=True)} "
                           f"| {md(value, 'text', cell=True)} |\n")
    rows = cells(table)
    assert [len(r) for r in rows] == [2, 2]
    assert codes(table) == [printable(value)]
    # Plain text in a cell loses the spaces at its ends (GFM trims cells): a name's
    # are kept in its code span.
    assert rows[1] == [printable(value), printable(value).strip(" ")]


def test_a_message_keeps_its_code_spans_and_starts_no_html() -> None:
    message = "pkg/a\\b.py:1 holds `x < y` <img src=x> &lt; \x1b"
    tokens = MARKDOWN.parse(f"- **pass** {md(message, 'message')}")
    assert not [t for t in walk(tokens) if t.type.startswith("html")]
    assert codes(tokens) == ["x < y"]
    inline = next(t for t in tokens if t.type == "inline")
    assert text_of(inline) == "pass " + printable(message).replace("`", "")
