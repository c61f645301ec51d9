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

import base64
import csv
import hashlib
import io
import re
from itertools import takewhile
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import run_cli
from markdown_it import MarkdownIt
from markdown_it.token import Token

from pp1audit.formats.markdown import evidence_line, md, render
from pp1audit.result import Check, Status
from pp1audit.text.safe import printable

NAMES = ["a|b`c<script>.py", "esc\x1b[31m.py", "nl\nname.py", "rtl\u202egnp.py"]
VERSION = "1.0|x`y<b>z\x1b[31mRED\u202e\\x1b"
TITLE = "Title | pipe `tick` <img src=x onerror=alert(1)> \x1b[31mRED \\x1b\n# Injected heading"
CODE = "x = 1\n"
RAW_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")
MARKDOWN = MarkdownIt("commonmark").enable(["table", "strikethrough"])


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

    # The hash table: one line per file, each with as many cells as the header has.
    columns = 3 if with_target else 2
    start = next(i for i, line in enumerate(out.splitlines()) if line.startswith("| File"))
    lines = list(takewhile(lambda line: line.startswith("|"), out.splitlines()[start:]))
    assert len(lines) == 2 + len(NAMES)
    assert lines[1] == "|" + "---|" * columns
    table = MARKDOWN.parse("\n".join(lines))
    rows = cells(table)
    assert [len(r) for r in rows] == [columns] * (1 + len(NAMES))
    assert rows[0][:2] == ["File | x", "SHA a|b"]
    assert [row[:1] for row in rows[1:]] == [[printable(name)] for name in NAMES]
    assert codes(table) == ["a|b", *(printable(name) for name in NAMES)]

    # Titles and prose: one line each, the manifest's text shown as printable shows it.
    headings = [text_of(tokens[i + 1]) for i, t in enumerate(tokens) if t.type == "heading_open"]
    assert headings[:2] == [printable(TITLE), "H | x <b>\\x1b[2J"]
    shown = codes(tokens)
    assert printable(f"pkg/{NAMES[0]}:1") in shown
    if with_target:
        # The summary table opens the document: two cells a row, the version in one.
        assert [len(r) for r in cells(tokens)] == [2] * 5
        assert cells(tokens)[1] == ["Target", f"directory site — pkg {printable(VERSION)}"]
        assert sum(c == printable(VERSION) for c in shown) == 2  # the summary and the evidence
        assert {printable(f"file:pkg/{name}") for name in NAMES} <= set(shown)
        assert printable(f"pkg/{NAMES[0]}") in shown  # the cited file, heading its evidence


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


# What a value may not start: the only links, images, HTML, emphasis, strikethrough and
# blocks in a report are the ones its manifest's author wrote.
ACTS = {"link_open", "image", "html_inline", "html_block", "em_open", "strong_open", "s_open"}
BLOCKS = {"heading_open", "blockquote_open", "bullet_list_open", "ordered_list_open", "hr",
          "code_block", "fence", "table_open"}


STATUSES = {"pass", "drift", "stale", "fail", "skip", "error", "not checked", "holds", "moved", "broken"}
OWN_LINK = re.compile(r"#claim-[0-9]+|#not-checked")


def acting(tokens: list[Token]) -> list[str]:
    """The tokens of ``tokens`` that act (``ACTS``), by type, but for the report's own
    bold status words (``**pass**``, ``**holds**``) and its links within the document
    (a claim's mark to its evidence, a skipped check to ``## Not checked``)."""
    found = walk(tokens)
    return [t.type for i, t in enumerate(found) if t.type in ACTS
            and not (t.type == "strong_open" and found[i + 1].content in STATUSES)
            and not (t.type == "link_open" and OWN_LINK.fullmatch(str(t.attrs.get("href"))))]


def shown_text(tok: Token) -> str:
    """What an inline token shows, line breaks included."""
    return "".join("\n" if t.type == "softbreak" else t.content for t in tok.children or []
                   if t.type in ("text", "code_inline", "softbreak"))


def manifest(blocks: list[dict[str, Any]], title: str = "T", **claims: str) -> dict[str, Any]:
    """A pinned manifest whose report has ``blocks``, its title the audit's ``title``,
    and a citation per claim (``[[=citations.NAME.claim]]``)."""
    return {
        "pp1audit": 1,
        "audit": {"id": "t", "title": title, "date": "2026-01-01"},
        "target": {"package": "pkg", "version": "1.0"},
        "citations": {name: {"at": "pkg/a.py:1", "claim": claim, "anchor": {"exact": "x = 1"}}
                      for name, claim in claims.items()},
        "report": {"title": "[[=audit.title]]", "sections": [{"heading": "H", "blocks": blocks}]},
    }


def install(site: Path, files: dict[str, str]) -> None:
    """``files`` laid out as pip leaves them, with a RECORD of them (``pkg-1.0.dist-info``)."""
    rows = []
    for rel, text in {**files, "pkg-1.0.dist-info/METADATA": "Name: pkg\nVersion: 1.0\n"}.items():
        path = site / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        digest = base64.urlsafe_b64encode(hashlib.sha256(path.read_bytes()).digest()).rstrip(b"=")
        rows.append([rel, f"sha256={digest.decode()}", str(path.stat().st_size)])
    rows.append(["pkg-1.0.dist-info/RECORD", "", ""])
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    (site / "pkg-1.0.dist-info" / "RECORD").write_text(buf.getvalue(), encoding="utf-8")


EVIL_PTH = 'import os; x = "[a](x`y) <img src=x onerror=alert(1)> `"'


def test_a_pth_line_quoted_in_a_message_starts_no_link_or_html(tmp_path: Path) -> None:
    # The review's e1: a message quotes the .pth line raw; a link whose destination holds
    # a backtick used to hide the <img> from the code-span scan, and CommonMark read both.
    site = tmp_path / "site"
    install(site, {"pkg/__init__.py": "x = 1\n", "pkg/_version.py": '__version__ = "1.0"\n'})
    (site / "evil.pth").write_text(EVIL_PTH + "\n", encoding="utf-8")
    raw = {"pp1audit": 1, "audit": {"id": "t", "title": "T", "date": "2026-01-01"},
           "target": {"package": "pkg", "version": "1.0", "record": True},
           "report": {"title": "T", "sections": [{"heading": "H", "blocks": [
               {"text": "Startup.", "evidence": ["shadowing"]}]}]}}
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    proc = run_cli("report", str(site), "-m", str(path))
    assert proc.returncode == 1, proc.stderr
    tokens = MARKDOWN.parse(proc.stdout)
    assert acting(tokens) == []
    pth = next(t for t in tokens if t.type == "inline" and "**fail** `pth:evil.pth`" in t.content)
    # The message's own Markdown still counts: its two backticks make one code span.
    assert 'line 1: import os; x = "[a](xy) <img src=x onerror=alert(1)> "' in shown_text(pth)


@pytest.mark.parametrize("message", [
    EVIL_PTH,
    "[a](<x`y>) <b>bold</b> `",
    '[a](x "t`") <img src=x> `',
    "import os # [click](https://evil.example) ![p](https://evil.example/p.png)",
    "\\`<img>`",
    "x `\\` <img> `",
    "<http://evil.example/`> `",
    "[r]: https://evil.example `",
])
def test_a_message_cannot_hide_html_or_a_link_from_its_code_spans(message: str) -> None:
    tokens = MARKDOWN.parse(f"- **fail** {md(message, 'message')}")
    assert acting(tokens) == []
    inline = next(t for t in tokens if t.type == "inline")
    assert shown_text(inline).replace("`", "") == "fail " + printable(message).replace("`", "")


def test_a_backslash_before_a_reference_is_the_proses_own(tmp_path: Path) -> None:
    # The review's e2: the prose's odd backslash took the escape off the value's backtick,
    # which then opened a code span that ended inside the prose's own, unveiling its HTML.
    raw = manifest([{"text": "Kept in C:\\[[=citations.c2.claim]] and `<img src=x onerror=alert(1)>` "
                             "as code; C:\\\\[[=citations.c2.claim]] and \\\\\\[[=citations.c2.claim]]."}],
                   c2="`x")
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    proc = run_cli("report", "-m", str(path))
    assert proc.returncode == 0, proc.stderr
    tokens = MARKDOWN.parse(proc.stdout)
    assert acting(tokens) == []
    para = next(t for t in tokens if t.type == "inline" and "Kept" in t.content)
    assert codes([para]) == ["<img src=x onerror=alert(1)>"]
    assert shown_text(para) == ("Kept in C:\\`x and <img src=x onerror=alert(1)> as code; "
                                "C:\\`x and \\\\`x.")


BLOCK_VALUES = ["# Injected heading", "## x", "> q", ">q", "1. x", "1) x", "123456789. x", "- x", "+ x",
                "* x", "***", "---", "___", "- - -", "===", "    four spaces", " x", "```", "~~~ x",
                "<div>", "| a | b |", "|---|", "[r]: https://evil.example", "- [ ] x", "#"]


def structure(markdown: str) -> list[str]:
    """The block token types of ``markdown``, in order."""
    return [t.type for t in MARKDOWN.parse(markdown) if t.type != "inline"]


@pytest.mark.parametrize("value", BLOCK_VALUES)
@pytest.mark.parametrize("text", [
    {"text": "[[=citations.c.claim]] is the claim."},
    {"text": "[[=citations.c.claim]]"},
    {"text": "Intro line\n[[=citations.c.claim]]"},
    {"text": "Intro line\n   [[=citations.c.claim]] indented by the author"},
    {"text": "> [[=citations.c.claim]] in the author's quote"},
    {"text": "1. [[=citations.c.claim]] in the author's list"},
    {"text": "[[=citations.e.claim]][[=citations.c.claim]] after an empty value"},
    {"bullet": "[[=citations.c.claim]] x"},
    {"bullet": "a bullet\n[[=citations.c.claim]] on its second line"},
])
def test_a_value_beginning_a_line_begins_no_block(value: str, text: dict[str, str]) -> None:
    # The review's block cases: the document has the blocks of the same prose filled
    # with a plain word, and shows the value as printable shows it.
    out = render(manifest([text], c=value, e=""))
    plain = render(manifest([text], c="word", e=""))
    assert structure(out) == structure(plain)
    tokens = MARKDOWN.parse(out)
    assert acting(tokens) == []
    shown = "\n".join(shown_text(t) for t in tokens if t.type == "inline")
    assert printable(value).strip(" ") in shown
    if text.get("text", "").startswith("[[="):
        assert f"\n{printable(value)}" in f"\n{shown}"  # leading spaces shown too


@pytest.mark.parametrize("title", ["Notes on issue #", "#", "a ##", "A *b* c", "~~x~~", "a_b_c _d_",
                                   "pkg/__init__.py", "[x](https://evil.example)", "a & b &amp; c"])
def test_a_title_value_shows_as_written(title: str) -> None:
    tokens = MARKDOWN.parse(render(manifest([{"text": "x"}], title=title)))
    assert acting(tokens) == []
    assert text_of(tokens[1]) == printable(title)


INLINE_VALUES = ["__init__", "pkg/__init__.py", "a.__init__ x", "_private", "snake_case_name", "x_", "*args",
                 "**kw**", "a*b*c", "~~x~~", "~x~", "~/.cache", "[x](javascript:alert(1))",
                 "![i](https://evil.example/i.png)", "wow!", "<http://x>", "&#x1b;", "&amp;", "a | b",
                 "a\\_b", "\\*", "x\\"]


@pytest.mark.parametrize("value", INLINE_VALUES)
def test_a_value_has_no_emphasis_link_or_html_in_text_and_message(value: str) -> None:
    for context in ("text", "message"):
        tokens = MARKDOWN.parse(f"see {md(value, context)} here")
        assert acting(tokens) == [], context
        assert text_of(tokens[1]) == f"see {printable(value)} here", context
    table = MARKDOWN.parse(f"| a |\n|---|\n| {md(value, 'text', cell=True)} |\n")
    assert cells(table) == [["a"], [printable(value)]]


@pytest.mark.parametrize("value", INLINE_VALUES)
def test_a_value_in_prose_reads_back_next_to_the_authors_markdown(value: str) -> None:
    # After the author's ``]`` a value cannot become a link's destination or label; before
    # the author's ``[`` its ``!`` cannot make an image; inside the author's emphasis or
    # link text it stays text.
    text = ("[see][[=citations.c.claim]] and [[=citations.c.claim]][docs](https://example.org) "
            "and *[[=citations.c.claim]]* and [[[=citations.c.claim]]](https://example.org).")
    tokens = MARKDOWN.parse(render(manifest([{"text": text}], c=value)))
    assert [t for t in acting(tokens) if t != "em_open"] == ["link_open", "link_open"]
    para = next(t for t in tokens if t.type == "inline" and "docs" in t.content)
    v = printable(value)
    assert text_of(para) == f"[see]{v} and {v}docs and {v} and {v}."


def test_a_pp1_message_shows_dunder_names_and_pycache_as_written() -> None:
    # As in the shipped PP1 report of vllm 0.31.0: `.__init__` read as bold "init".
    checks = [
        Check("draft-logits-only-when-probabilistic", "invariant", Status.PASS,
              "`self.draft_logits = None` holds in DraftModelSpeculator.__init__ at line 177 "
              "(every `draft_logits = $X` satisfies its relations)",
              path="vllm/v1/worker/gpu/spec_decode/speculator.py"),
        Check("tree", "record", Status.PASS, "tree digest over 2 files under pkg/ (dist-info and "
              "__pycache__ excluded): 2cc8 (pin it as target.tree_sha256)", path="pkg/"),
        Check("file:pkg/__init__.py", "file", Status.FAIL, "pkg/__init__.py changed; see *all* of "
              "~~it~~", path="pkg/__init__.py", actual="ab"),
    ]
    for check in checks:
        tokens = MARKDOWN.parse(f"- {evidence_line(check)}")
        assert acting(tokens) == []
        shown = text_of(next(t for t in tokens if t.type == "inline"))
        assert printable(check.message).replace("`", "") in shown


def test_the_authors_ampersand_is_text_and_their_escapes_stay(tmp_path: Path) -> None:
    # An entity in the prose could put a control character (ESC, U+202E) in the document.
    text = "R&D &#x1b;[2J &#x202e; &amp; \\& \\< a \\\\< b"
    tokens = MARKDOWN.parse(render(manifest([{"text": text}])))
    assert acting(tokens) == []
    para = next(t for t in tokens if t.type == "inline" and "R&D" in text_of(t))
    assert text_of(para) == "R&D &#x1b;[2J &#x202e; &amp; & < a \\< b"


@pytest.mark.parametrize(("text", "c", "d"), [
    ("[[=citations.c.claim]]. The year it was.", "2026", ""),
    ("[[=citations.c.claim]]) x", "7", ""),
    ("Intro\n[[=citations.c.claim]]. Then", "1", ""),
    ("[[=citations.c.claim]][[=citations.d.claim]]", "1", ". x"),
    ("1[[=citations.c.claim]]", ". item", ""),
])
def test_a_number_a_value_leaves_at_a_line_start_makes_no_list(text: str, c: str, d: str) -> None:
    out = render(manifest([{"text": text}], c=c, d=d))
    plain = render(manifest([{"text": text}], c="word", d="word"))
    assert structure(out) == structure(plain)
    para = next(t for t in MARKDOWN.parse(out) if t.type == "inline" and t.map and t.map[0] > 2)
    expected = text.replace("[[=citations.c.claim]]", c).replace("[[=citations.d.claim]]", d)
    assert shown_text(para) == expected


@pytest.mark.parametrize(("value", "markdown"), [
    ("snake_case_name at line 3 (of 9): a.b, c", "snake_case_name at line 3 (of 9): a.b, c"),
    ("DraftModelSpeculator.__init__ at line 177", "DraftModelSpeculator.\\_\\_init\\_\\_ at line 177"),
    ("_private x_", "\\_private x\\_"),
    ("a > b", "a > b"),
])
def test_the_raw_markdown_of_a_message_stays_readable(value: str, markdown: str) -> None:
    # Only what could act is escaped: an underscore between two letters cannot.
    assert md(value, "message") == markdown
