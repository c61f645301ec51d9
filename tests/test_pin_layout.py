"""``pp1audit pin --allow-unresolved`` marks a pin with a comment on its own line
and changes nothing else: not the blank line and comment that follow the last
entry of a mapping (ruamel keeps those in the same comment token as the entry's
end-of-line comment), not the author's comment on that line, not the two-space
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

from pp1audit.upgrade.yamledit import Note, load_document, splice

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


# -- the ruamel side: an entry that is re-emitted carries the same mark ------------


def dump(doc_text: str, edit: Callable[[object], None]) -> str:
    doc = load_document(doc_text)
    edit(doc.data)
    return doc.dump()


def test_note_in_the_tree_keeps_the_lines_after_the_entry() -> None:
    text = "a:\n  x: 1\n  y: 2   # mine\n\n# next\nb:\n  z: 3\n"
    note = Note("M", "M: why")

    def mark(data: object) -> None:
        assert isinstance(data, dict)
        assert note.apply(data["a"], "y") and note.apply(data["b"], "z")
        assert note.apply(data["a"], "x")
        assert not note.apply(data["a"], "x")  # already says so

    marked = dump(text, mark)
    assert marked == ("a:\n  x: 1  # M: why\n  y: 2   # mine  # M: why\n\n# next\n"
                      "b:\n  z: 3  # M: why\n")

    def unmark(data: object) -> None:
        assert isinstance(data, dict)
        for mapping, key in ((data["a"], "x"), (data["a"], "y"), (data["b"], "z")):
            assert Note("M").apply(mapping, key)

    assert dump(marked, unmark) == text


def test_note_on_a_mapping_whose_first_lines_are_comments() -> None:
    """``i1:`` then a comment line, then its keys: ruamel holds those lines in the slot
    its own eol-comment call extends with a token (a TypeError: every pin of the
    shipped manifest that marked ``verify-passes-draft-logits`` ended in an internal
    error). The mark goes on the key's line, the comment lines stay, and go back."""
    text = "inv:\n  i1:\n    # about i1\n\n    # more\n    file: a\n  i2:\n    file: b\n"

    def mark(data: object) -> None:
        assert isinstance(data, dict)
        assert Note("M", "M: why").apply(data["inv"], "i1")

    marked = dump(text, mark)
    assert marked == ("inv:\n  i1:  # M: why\n    # about i1\n\n    # more\n    file: a\n"
                      "  i2:\n    file: b\n")

    def unmark(data: object) -> None:
        assert isinstance(data, dict)
        assert Note("M").apply(data["inv"], "i1")

    assert dump(marked, unmark) == text


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


def test_note_on_a_block_scalar_goes_after_its_header() -> None:
    text = "a:\n  x: |\n    line\n  # after the block\n  y: 1\n"

    def mark(data: object) -> None:
        assert isinstance(data, dict)
        assert Note("M", "M: why").apply(data["a"], "x")

    assert dump(text, mark) == "a:\n  x: |  # M: why\n    line\n  # after the block\n  y: 1\n"


def test_splice_re_emits_an_entry_whose_line_a_comment_cannot_end() -> None:
    """A plain scalar continued on the next line: a comment would cut it short."""
    text = "a:\n  x: one\n    two\n\n# next\nb: 1\n"
    note = Note("M", "M: why")
    doc = load_document(text)
    assert note.apply(doc.data["a"], "x")
    result = splice(text, doc.dump(), set(), doc.data, {("a", "x"): note})
    assert yaml.safe_load(result) == yaml.safe_load(text)
    assert "# M: why" in result and result.endswith("\n\n# next\nb: 1\n")
