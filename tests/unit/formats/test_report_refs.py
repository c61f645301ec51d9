"""`pp1audit report`: malformed references are manifest errors, at the reference itself.

Every manifest here is manifests/pp1.yaml with one reference broken; the expected
``line:column`` is found by the test in the broken text (the first character of the
fault), never taken from the code under test.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import REPO, run_cli

from pp1audit.manifest.prose import expand, locate

PP1 = REPO / "manifests" / "pp1.yaml"


def derived(tmp_path: Path, old: str, new: str, *, block: str | None = None) -> tuple[Path, str]:
    """pp1.yaml with ``old`` (which must occur once) replaced by ``new``; ``block``
    optionally rewrites the block scalar header just before it (``|`` -> ``>``)."""
    text = PP1.read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    if block is not None:
        at = text.index(old)
        header = text.rindex("- text: |\n", 0, at)
        text = text[:header] + f"- text: {block}\n" + text[header + len("- text: |\n"):]
    text = text.replace(old, new)
    m = tmp_path / "pp1-broken.yaml"
    m.write_text(text, encoding="utf-8")
    return m, text


def place(text: str, fault: str, skip: int = 0) -> str:
    """``line:column`` of ``fault`` (which must occur once) plus ``skip`` characters."""
    assert text.count(fault) == 1, fault
    at = text.index(fault) + skip
    return f"{text.count(chr(10), 0, at) + 1}:{at - text.rfind(chr(10), 0, at)}"


def assert_error(m: Path, where: str, message: str, keypath: str) -> None:
    proc = run_cli("report", "-m", str(m))
    assert (proc.returncode, proc.stdout) == (2, ""), proc.stdout + proc.stderr
    assert proc.stderr == f"pp1audit: error: {m}:{where}: {message} (at {keypath})\n"


def test_the_shipped_manifest_renders_with_its_link_brackets() -> None:
    """pp1.yaml has ``[[[=…title]]](url)``: a ``]`` after a reference that closes a
    Markdown link's ``[`` is text, and the link comes out whole."""
    proc = run_cli("report", "-m", str(PP1))
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert "[[" not in proc.stdout
    line = next(x for x in proc.stdout.splitlines() if x.startswith("Algorithm references: "))
    assert line.startswith("Algorithm references: [Leviathan") and "](https://" in line, line


def test_a_reference_closed_by_one_bracket_is_an_error_at_it(tmp_path: Path) -> None:
    m, text = derived(tmp_path, "`[[=donors.hybrid-0055.sha256]]`", "`[[=donors.hybrid-0055.sha256]`")
    assert_error(m, place(text, "[[=donors.hybrid-0055.sha256]`"),
                 "[[=donors.hybrid-0055.sha256]: a reference ends with ']]', not ']'",
                 "report.sections[4].blocks[2].text")


def test_a_reference_never_closed_is_an_error_at_it(tmp_path: Path) -> None:
    m, text = derived(tmp_path, "main `[[=sources.lane.refs.main.commit]]`,", "main `[[=audit.id,")
    assert_error(m, place(text, "[[=audit.id,"),
                 "[[=audit.id,: unclosed reference (close it with ']]' on the same line)",
                 "report.sections[4].blocks[2].text")


def test_an_unclosed_reference_in_the_quoted_title_is_an_error_at_it(tmp_path: Path) -> None:
    m, text = derived(tmp_path, '"[[=audit.title]] — [[=audit.date]]"', '"[[=audit.title — [[=audit.date]]"')
    assert_error(m, place(text, "[[=audit.title —"),
                 "[[=audit.title: unclosed reference (close it with ']]' on the same line)",
                 "report.title")


def test_a_bracket_too_many_after_a_reference_is_an_error_at_it(tmp_path: Path) -> None:
    m, text = derived(tmp_path, "`[[=sources.lane.commit]]`", "`[[=sources.lane.commit]]]`")
    assert_error(m, place(text, "[[=sources.lane.commit]]]", skip=len("[[=sources.lane.commit]]")),
                 "stray ']' after [[=sources.lane.commit]]: a reference ends with ']]'",
                 "report.sections[1].blocks[1].text")


def test_a_bad_key_in_a_literal_block_is_at_its_own_line_not_the_blocks(tmp_path: Path) -> None:
    """The user's case: the error named the ``- text: |`` line (544:11), not line 550."""
    m, text = derived(tmp_path, "[[=sources.lane.refs.offload-x86host.commit]]", "[[=audit.nope]]")
    where = place(text, "[[=audit.nope]]")
    block = place(text, "- text: |\n            0055 SHA256", skip=len("- text: "))
    assert where.split(":")[0] != block.split(":")[0]
    assert_error(m, where, "[[=audit.nope]]: no such key in the manifest",
                 "report.sections[4].blocks[2].text")


def test_a_bad_key_in_a_folded_block_is_at_its_own_line(tmp_path: Path) -> None:
    m, text = derived(tmp_path, "[[=sources.lane.refs.offload-x86host.commit]]", "[[=audit.nope]]", block=">")
    assert "- text: >\n            0055 SHA256" in text
    assert_error(m, place(text, "[[=audit.nope]]"), "[[=audit.nope]]: no such key in the manifest",
                 "report.sections[4].blocks[2].text")


def test_an_unknown_citation_in_a_bullet_is_at_the_reference(tmp_path: Path) -> None:
    m, text = derived(tmp_path, "line [[lines:runner-grammar-mask]])", "line [[lines:runner-grammar-mesk]])")
    assert_error(m, place(text, "[[lines:runner-grammar-mesk]]"),
                 "[[lines:runner-grammar-mesk]]: no citation 'runner-grammar-mesk' in the manifest",
                 "report.sections[1].blocks[4].bullet")


def test_a_bad_key_in_a_table_header_is_at_the_reference(tmp_path: Path) -> None:
    m, text = derived(tmp_path, '"SHA256"]', '"SHA256 [[=audit.nope]]"]')
    assert_error(m, place(text, "[[=audit.nope]]"), "[[=audit.nope]]: no such key in the manifest",
                 "report.sections[4].blocks[1].header[1]")


@pytest.mark.parametrize("text", [
    "a[[0] stays",            # not a reference start, never closed: text
    "[[site:c and [b]",       # unknown kind, never closed: text
    "[x [[=audit.id]]] y",    # the ']' closes the '[' before the reference
    "[a\nb [[=audit.id]]](u)",  # ... also across lines
])
def test_brackets_that_are_not_a_reference_stay_text(text: str) -> None:
    raw = {"audit": {"id": "PP1"}}
    assert expand(text, raw) == text.replace("[[=audit.id]]", "PP1")


def test_locate_gives_up_at_a_double_quoted_escape() -> None:
    """``\\x5b`` is ``[`` in the value but not in the file: no character-for-character
    walk past it, so the scalar's start is the place given."""
    source = 'k: "a \\x5b [[=x]]"\n'
    assert locate(source, (1, 4), "a [ [[=x]]", 4) == (1, 4)
    assert locate('k: "a b [[=x]]"\n', (1, 4), "a b [[=x]]", 4) == (1, 9)
    assert locate("k: 'it''s [[=x]]'\n", (1, 4), "it's [[=x]]", 5) == (1, 11)
