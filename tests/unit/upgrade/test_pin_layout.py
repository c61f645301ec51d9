"""``pp1audit pin --allow-unresolved`` marks a pin with a comment on its own line
and changes nothing else: not the blank line and comment that follow the last
entry of a mapping, not the author's comment on that line, not the two-space
separator, not a CRLF file's line endings; and a later pin that resolves it
takes the mark off and gives back the original bytes."""

from __future__ import annotations

import difflib
import hashlib
import re
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from conftest import run_cli

from pp1audit.upgrade.yamledit import TextDoc

MARK = "pp1audit pin: UNRESOLVED"
TREE = {
    "pkg/__init__.py": "",
    "pkg/_version.py": "__version__ = '1.0'\n",
    "pkg/a.py": "def f():\n    return 1\n",
    "pkg/b.py": "X = 2\n",
}


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


MANIFEST = f"""\
# A hand-written manifest: blank lines and comments between its sections.
pp1audit: 1

audit:
  id: layout
  date: '2026-01-01'

target:
  package: pkg
  version: '1.0'   # the author's note, at the author's column

# Digests (SHA-256): b.py is the last entry, followed by this blank line.
files:
  pkg/a.py: {sha(TREE["pkg/a.py"])}
  pkg/b.py: {sha(TREE["pkg/b.py"])}

# Structural claims.
invariants:
  b-defines-x: {{file: pkg/b.py, evidence: {{rule: {{pattern: X = $V}}}},
                claim: b.py defines X}}
  a-defines-f:
    file: pkg/a.py
    evidence:
      rule: {{pattern: "def f(): $$$BODY"}}
    claim: a.py defines f

citations:
  a-f:
    at: pkg/a.py:1-2
    anchor:
      exact: |
        def f():
            return 1
  b-x:
    at: pkg/b.py:1
    anchor: {{invariant: b-defines-x}}

  # The last citation, after a blank line.
  a-def:
    at: pkg/a.py:1
    anchor: {{exact: "def f():"}}
"""

def layout_changes(before: str, after: str) -> tuple[dict[int, str], list[str]]:
    """Check that ``after`` is ``before`` with marks appended to some lines and ``unresolved``
    keys inserted, nothing else; the marks by line, and the inserted lines."""
    old, new = before.splitlines(keepends=True), after.splitlines(keepends=True)
    eol = "\r\n" if "\r\n" in before else "\n"
    marks: dict[int, str] = {}
    inserted: list[str] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        if tag == "insert":
            inserted.extend(new[j1:j2])
            continue
        if tag == "equal":
            continue
        assert tag == "replace" and i2 - i1 == j2 - j1, (old[i1:i2], new[j1:j2])
        for i, (a, b) in enumerate(zip(old[i1:i2], new[j1:j2], strict=True), i1):
            body = a.removesuffix(eol)
            assert b.startswith(body + "  # " + MARK + ": ") and b.endswith(eol), (a, b)
            marks[i] = b[len(body) + 2 : -len(eol)]
            assert "\n" not in marks[i] and "\r" not in marks[i]
    assert all(re.fullmatch(r"    unresolved: [^\r\n]+" + eol, x) for x in inserted), inserted
    return marks, inserted


@pytest.fixture
def layout(make_files: Callable[..., Path], tmp_path: Path) -> tuple[Path, Path]:
    root = make_files(TREE)
    m = tmp_path / "m.yaml"
    m.write_text(MANIFEST)
    assert run_cli("check", str(root), "-m", str(m)).returncode == 0
    return root, m


def pin(root: Path, m: Path, out: Path, *extra: str) -> int:
    proc = run_cli("pin", str(root), "-m", str(m), "-o", str(out), *extra)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode


@pytest.mark.parametrize("eol", ["\n", "\r\n"])
def test_a_mark_changes_only_the_line_it_marks(layout: tuple[Path, Path], tmp_path: Path,
                                               eol: str) -> None:
    root, m = layout
    m.write_bytes(MANIFEST.replace("\n", eol).encode())
    before = m.read_bytes().decode()
    (root / "pkg" / "_version.py").unlink()
    (root / "pkg" / "b.py").unlink()
    out = tmp_path / "out.yaml"
    assert pin(root, m, out, "--allow-unresolved") == 1
    after = out.read_bytes().decode()
    marks, inserted = layout_changes(before, after)
    assert len(inserted) == 1  # citation b-x, whose file is gone
    lines = before.splitlines()
    assert {lines[i].split(":")[0].strip() for i in marks} == {
        "version", "pkg/b.py", "b-defines-x"}
    assert all(m.startswith(f"# {MARK}: ") for m in marks.values())
    # The version line keeps the author's comment, the mark after it.
    version = next(i for i in marks if "version" in lines[i])
    assert after.splitlines()[version].startswith(
        "  version: '1.0'   # the author's note, at the author's column  # ")
    # Pinning the same tree again changes nothing: the marks say the same.
    again = tmp_path / "again.yaml"
    pin(root, out, again, "--allow-unresolved")
    assert again.read_bytes() == out.read_bytes()


@pytest.mark.parametrize("eol", ["\n", "\r\n"])
def test_a_resolved_pin_gives_back_the_original_bytes(layout: tuple[Path, Path], tmp_path: Path,
                                                      eol: str) -> None:
    root, m = layout
    m.write_bytes(MANIFEST.replace("\n", eol).encode())
    original = m.read_bytes()
    (root / "pkg" / "_version.py").unlink()
    (root / "pkg" / "b.py").unlink()
    marked = tmp_path / "marked.yaml"
    pin(root, m, marked, "--allow-unresolved")
    assert marked.read_bytes().count(MARK.encode()) == 3
    for rel in ("pkg/_version.py", "pkg/b.py"):
        (root / rel).write_text(TREE[rel])
    # A human takes the citation's ``unresolved`` key off; pin takes its own comments off.
    marked.write_bytes(b"".join(x for x in marked.read_bytes().splitlines(keepends=True)
                                if not x.lstrip().startswith(b"unresolved:")))
    back = tmp_path / "back.yaml"
    assert pin(root, marked, back) == 0
    assert back.read_bytes() == original
    assert run_cli("check", str(root), "-m", str(back)).returncode == 0


# -- the text edit itself ----------------------------------------------------------


def noted(text: str, *marks: tuple[tuple[str, ...], str | None]) -> str:
    """``text`` with each mark put on (or, for None, taken off) its entry's key line."""
    doc = TextDoc(text, "m.yaml")
    for path, note in marks:
        assert doc.note(path, "M", note), path
        assert not doc.note(path, "M", note)  # already says so
    return doc.text()


def test_a_note_keeps_the_lines_after_the_entry() -> None:
    text = "a:\n  x: 1\n  y: 2   # mine\n\n# next\nb:\n  z: 3\n"
    marked = noted(text, (("a", "y"), "M: why"), (("b", "z"), "M: why"), (("a", "x"), "M: why"))
    assert marked == ("a:\n  x: 1  # M: why\n  y: 2   # mine  # M: why\n\n# next\n"
                      "b:\n  z: 3  # M: why\n")
    assert noted(marked, (("a", "x"), None), (("a", "y"), None), (("b", "z"), None)) == text


def test_a_note_on_a_mapping_whose_first_lines_are_comments() -> None:
    """``i1:`` then a comment line, then its keys: the mark goes on the key's line, the
    comment lines stay, and go back."""
    text = "inv:\n  i1:\n    # about i1\n\n    # more\n    file: a\n  i2:\n    file: b\n"
    marked = noted(text, (("inv", "i1"), "M: why"))
    assert marked == ("inv:\n  i1:  # M: why\n    # about i1\n\n    # more\n    file: a\n"
                      "  i2:\n    file: b\n")
    assert noted(marked, (("inv", "i1"), None)) == text


def test_pin_marks_an_invariant_whose_mapping_starts_with_a_comment(
        make_files: Callable[..., Path], tmp_path: Path) -> None:
    root = make_files({"pkg/__init__.py": "", "pkg/inv.py": "def f(x):\n    return g(x)\n"})
    m = tmp_path / "m.yaml"
    m.write_text("pp1audit: 1\ntarget:\n  package: pkg\ninvariants:\n  i1:\n"
                 "    # a comment line right after the id\n    file: pkg/inv.py\n"
                 "    evidence: {rule: {pattern: return $Y}}\n"
                 "    counterexample: {rule: {pattern: g($X)}}\n")
    out = tmp_path / "out.yaml"
    assert pin(root, m, out, "--allow-unresolved") == 1
    assert out.read_text().splitlines()[4:6] == [
        f"  i1:  # {MARK}: counterexample found at line 2: g(x)",
        "    # a comment line right after the id"]


def test_a_note_on_a_block_scalar_goes_after_its_header() -> None:
    text = "a:\n  x: |\n    line\n  # after the block\n  y: 1\n"
    assert noted(text, (("a", "x"), "M: why")) == (
        "a:\n  x: |  # M: why\n    line\n  # after the block\n  y: 1\n")


def test_a_note_on_a_value_continued_on_the_next_line_ends_its_last_line() -> None:
    """A plain scalar continued on the next line: a comment on the key line would cut it short."""
    text = "a:\n  x: one\n    two\n\n# next\nb: 1\n"
    result = noted(text, (("a", "x"), "M: why"))
    assert result == "a:\n  x: one\n    two  # M: why\n\n# next\nb: 1\n"
    assert yaml.safe_load(result) == yaml.safe_load(text)


def test_a_note_on_a_flow_mapping_whose_scalar_runs_on_ends_the_mapping() -> None:
    text = 'i:\n  x: {claim: "a\n    b", f: 1}\n  y: 2\n'
    assert noted(text, (("i", "x"), "M: why")) == 'i:\n  x: {claim: "a\n    b", f: 1}  # M: why\n  y: 2\n'


def test_a_value_keeps_its_style_and_its_block_indentation() -> None:
    doc = TextDoc("t:\n  a: x   # note\n  b: 'y'\n  c: \"z\"\n  d: |\n      four\n  e: one\n", "m.yaml")
    assert doc.set(("t", "a"), "1.0") and not doc.set(("t", "a"), "1.0")
    doc.set(("t", "b"), "it's")
    doc.set(("t", "c"), "w")
    doc.set(("t", "d"), "five\n")
    doc.set(("t", "e"), "two\nlines\n")
    assert doc.text() == ("t:\n  a: '1.0'   # note\n  b: 'it''s'\n  c: \"w\"\n  d: |\n      five\n"
                          "  e: |\n    two\n    lines\n")


def test_a_comment_moves_onto_the_header_of_a_value_that_becomes_a_block() -> None:
    doc = TextDoc("a:\n  x: one  # mine\n  y: 1\n", "m.yaml")
    doc.set(("a", "x"), "l1\n  l2\n")
    assert doc.text() == "a:\n  x: |  # mine\n    l1\n      l2\n  y: 1\n"


def test_a_kept_block_never_takes_in_the_blank_lines_below_it() -> None:
    doc = TextDoc("a:\n  p: |\n    x\n\n  q: 1\n", "m.yaml")
    doc.set(("a", "p"), "y\n\n")
    assert doc.text() == 'a:\n  p: "y\\n\\n"\n\n  q: 1\n'


def test_edits_write_the_line_ends_of_a_crlf_text() -> None:
    doc = TextDoc("a:\r\n  x: 1\r\n  y: |\r\n    old\r\n", "m.yaml")
    doc.set(("a", "y"), "new\nline\n")
    doc.insert(("a",), "z", "q: r", after="x")
    assert doc.text() == "a:\r\n  x: 1\r\n  z: 'q: r'\r\n  y: |\r\n    new\r\n    line\r\n"


def test_a_text_that_would_not_load_as_meant_is_refused() -> None:
    from pp1audit.errors import Pp1Error

    doc = TextDoc("a: 1\n", "m.yaml")
    doc.data["a"] = 2  # as an edit that wrote something else would leave it
    with pytest.raises(Pp1Error) as got:
        doc.text()
    assert str(got.value).startswith("m.yaml: pin: the edited manifest would not hold the values "
                                     "meant (at a)") and "\n" not in str(got.value)
