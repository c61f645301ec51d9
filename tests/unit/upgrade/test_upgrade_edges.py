"""The upgrade journey's edges (``pin``, ``init``, ``diff``), from a user test:

a span carried although it now sits in another block, or onto a copy of its text
whose context is gone; comments lost with a dropped ``suffix``; a JSON result
printed for a run whose write failed; success for a run that judged nothing;
changed text called ``moved``; a bidi override printed raw.
Small trees built here; every expectation is read from those trees.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import yaml
from conftest import run_cli

RLO = "\u202e"


def pin_json(target: Path, manifest: Path, *extra: str) -> tuple[int, dict]:
    proc = run_cli("pin", str(target), "-m", str(manifest), "--format", "json", *extra)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def item(review: dict, cid: str, kind: str = "citation") -> dict:
    return next(i for i in review["items"] if i["kind"] == kind and i["id"] == cid)


def init(root: Path, out: Path, *cites: str, context: int = 2) -> None:
    args = [a for c in cites for a in ("--cite", c)]
    proc = run_cli("init", str(root), "-p", "pkg", *args, "--context", str(context), "-o", str(out))
    assert proc.returncode == 0, proc.stderr


# -- 1. a re-indented span is not carried silently -------------------------------------------


def test_a_span_moved_under_an_added_if_is_unresolved_until_accepted(
    make_files: Callable[..., Path], tmp_path: Path
) -> None:
    root = make_files({
        "pkg/__init__.py": "",
        "pkg/a.py": "def f(x):\n    y = 1\n    run(x)\n    return y\n",
    })
    m = tmp_path / "m.yaml"
    init(root, m, "call=pkg/a.py:3")
    # Moved one line down *and* into a new block: same text, another meaning.
    (root / "pkg" / "a.py").write_text("def f(x):\n    y = 1\n    if False:\n        run(x)\n"
                                       "    return y\n")
    out = tmp_path / "out.yaml"
    rc, review = pin_json(root, m, "-o", str(out))
    row = item(review, "call")
    assert rc == 1 and row["outcome"] == "unresolved"
    assert "moved to 4 (1 line later), re-indented by +4 columns" in row["detail"]
    assert "--accept call" in row["detail"]
    assert not out.exists()
    # Accepted after review: carried, and the row still says what it is.
    rc, review = pin_json(root, m, "-o", str(out), "--accept", "call")
    row = item(review, "call")
    assert rc == 0 and row["outcome"] == "changed" and row["new_lines"] == [4, 4]
    assert "re-indented by +4 columns" in row["detail"] and "--accept" in row["detail"]
    assert run_cli("check", str(root), "-m", str(out)).returncode == 0


def test_a_span_dedented_in_place_is_unresolved(make_files: Callable[..., Path],
                                                tmp_path: Path) -> None:
    root = make_files({
        "pkg/__init__.py": "",
        "pkg/a.py": "def f(x):\n    if x:\n        run(x)\n    return x\n",
    })
    m = tmp_path / "m.yaml"
    init(root, m, "call=pkg/a.py:3")
    # Out of the ``if`` at the same line: the call now runs whatever x is.
    (root / "pkg" / "a.py").write_text("def f(x):\n    if x: pass\n    run(x)\n    return x\n")
    rc, review = pin_json(root, m)
    row = item(review, "call")
    assert rc == 1 and row["outcome"] == "unresolved"
    assert "still holds the anchored text, re-indented by -4 columns" in row["detail"]


def test_an_unknown_accept_id_is_bad_input(make_files: Callable[..., Path], tmp_path: Path) -> None:
    root = make_files({"pkg/__init__.py": "", "pkg/a.py": "x = 1\n"})
    m = tmp_path / "m.yaml"
    init(root, m, "one=pkg/a.py:1")
    proc = run_cli("pin", str(root), "-m", str(m), "--accept", "nope")
    assert proc.returncode == 2 and proc.stdout == ""
    assert "--accept nope: no citation of the target has that id" in proc.stderr


# -- 2. a copy of the text where none of its context is ------------------------------------------


def test_a_move_onto_text_without_its_context_is_unresolved(
    make_files: Callable[..., Path], tmp_path: Path
) -> None:
    root = make_files({"pkg/__init__.py": "", "pkg/m.py": "a = 1\nb = 2\nc = 3\n"})
    m = tmp_path / "m.yaml"
    init(root, m, "two=pkg/m.py:2", context=1)
    (root / "pkg" / "m.py").write_text("a = 1\nc = 3\nd = 4\nb = 2\n")
    rc, review = pin_json(root, m)
    row = item(review, "two")
    assert rc == 1 and row["outcome"] == "unresolved"
    assert "moved to 4 (2 lines later), context changed: prefix and suffix differ there" in (
        row["detail"])
    rc, review = pin_json(root, m, "--accept", "two")
    detail = item(review, "two")["detail"]
    assert rc == 0 and item(review, "two")["outcome"] == "moved"
    assert "prefix changed, re-quoted" in detail and "suffix dropped" in detail


def test_a_move_keeping_one_side_of_its_context_is_unresolved_naming_the_other(
    make_files: Callable[..., Path], tmp_path: Path
) -> None:
    root = make_files({"pkg/__init__.py": "", "pkg/m.py": "a = 1\nb = 2\nc = 3\n"})
    m = tmp_path / "m.yaml"
    init(root, m, "two=pkg/m.py:2", context=1)
    (root / "pkg" / "m.py").write_text("# new\na = 1\nb = 2\nd = 4\n")
    rc, review = pin_json(root, m)
    row = item(review, "two")
    assert rc == 1 and row["outcome"] == "unresolved"
    assert row["detail"] == (
        "pkg/m.py:2 moved to 3 (1 line later), context changed: suffix differs there (its "
        "prefix matches): the text found may be a copy, or the code around it changed; "
        "--accept two carries it as found")
    rc, review = pin_json(root, m, "--accept", "two")
    row = item(review, "two")
    assert rc == 0 and row["outcome"] == "moved"
    assert row["detail"] == "2 → 3; carried as found (--accept); suffix changed, re-quoted"
    proc = run_cli("pin", str(root), "-m", str(m), "--accept", "two")
    assert "2 → 3; carried as found (--accept); suffix changed, re-quoted" in proc.stdout


# -- 1b. one matching side proves nothing; every non-blank side must match ---------------------


SENDS = "def f(items):\n    for it in items:\n        check(it)\n        send(it)\n    return True\n"


def test_a_move_under_a_dead_branch_keeping_a_trivial_suffix_is_unresolved(
    make_files: Callable[..., Path], tmp_path: Path
) -> None:
    """The review's case: the loop body moved under ``if False:`` at the same indent;
    the suffix ``return True`` still matches, the prefix does not. One side was
    enough to carry it (and ``check`` then passed a dead call)."""
    root = make_files({"pkg/__init__.py": "", "pkg/_version.py": "__version__ = '1'\n",
                       "pkg/m.py": SENDS})
    m = tmp_path / "m.yaml"
    init(root, m, "sends=pkg/m.py:3-4")
    (root / "pkg" / "m.py").write_text(
        "def f(items):\n    for it in items:\n        pass\n    if False:\n        check(it)\n"
        "        send(it)\n    return True\n")
    out = tmp_path / "out.yaml"
    rc, review = pin_json(root, m, "-o", str(out))
    row = item(review, "sends")
    assert rc == 1 and row["outcome"] == "unresolved" and not out.exists()
    assert "moved to 5–6 (2 lines later), context changed: prefix differs there (its suffix " \
        "matches)" in row["detail"]
    assert row["detail"].endswith("; --accept sends carries it as found")


def test_context_changed_on_both_sides_at_the_same_lines_is_unresolved(
    make_files: Callable[..., Path], tmp_path: Path
) -> None:
    """A span that stays at its lines is judged by its context too."""
    root = make_files({"pkg/__init__.py": "", "pkg/_version.py": "__version__ = '1'\n",
                       "pkg/m.py": SENDS})
    m = tmp_path / "m.yaml"
    init(root, m, "sends=pkg/m.py:3-4")
    (root / "pkg" / "m.py").write_text(
        "def f(items):\n    if False:\n        check(it)\n        send(it)\n    return None\n")
    rc, review = pin_json(root, m)
    row = item(review, "sends")
    assert rc == 1 and row["outcome"] == "unresolved"
    assert row["detail"] == (
        "pkg/m.py:3-4 still holds the anchored text, context changed: prefix and suffix differ "
        "there: the code around it changed; --accept sends carries it as found")


ALPHA = "def alpha(x):\n    y = x + 1\n    return y\n"
MODULE = f"import os\n\n\n{ALPHA}\n\ndef beta(rows):\n    return [r * 2 for r in rows]\n"
"""Top-level defs, each with two blank lines around it (PEP 8)."""


def blank_context_manifest(path: Path) -> None:
    """A manifest as ``init`` wrote it before it counted non-blank lines: the two
    lines around ``alpha`` quoted as context are blank. Such manifests keep working."""
    path.write_text(
        "pp1audit: 1\ntarget:\n  package: pkg\ncitations:\n  alpha:\n    at: pkg/m.py:4-6\n"
        "    anchor:\n      exact: |\n" + "".join(f"        {x}\n" if x else "\n"
                                               for x in ALPHA.splitlines())
        + "      prefix: |2+\n\n\n      suffix: |2+\n\n\n")


def test_a_move_with_only_blank_context_is_unresolved(make_files: Callable[..., Path],
                                                      tmp_path: Path) -> None:
    """A context of blank lines (an older ``init``'s, for a top-level ``def``) matches
    anywhere, so it cannot tell the function from an old copy left above it."""
    root = make_files({"pkg/__init__.py": "", "pkg/m.py": f"import os\n\n\n{ALPHA}\n\nZ = 1\n"})
    m = tmp_path / "m.yaml"
    blank_context_manifest(m)
    anchor = yaml.safe_load(m.read_text())["citations"]["alpha"]["anchor"]
    assert anchor["prefix"] == anchor["suffix"] == "\n\n"
    assert run_cli("check", str(root), "-m", str(m)).returncode == 0
    # Unmoved, blank context confirms nothing and doubts nothing: carried.
    (root / "pkg" / "m.py").write_text(f"import sys\n\n\n{ALPHA}\n\nZ = 2\n")
    rc, review = pin_json(root, m)
    assert rc == 0 and item(review, "alpha")["outcome"] == "unchanged"
    # An old copy kept above the real, changed function.
    (root / "pkg" / "m.py").write_text(
        f"import os\n\n\n# kept for reference\n{ALPHA}\n\n{ALPHA.replace('+', '-')}\n\nZ = 1\n")
    rc, review = pin_json(root, m)
    row = item(review, "alpha")
    assert rc == 1 and row["outcome"] == "unresolved"
    assert row["detail"] == (
        "pkg/m.py:4-6 moved to 5–7 (1 line later), no non-blank context to confirm the move (its "
        "anchor has no prefix or suffix holding code): the text found may be a copy; "
        "--accept alpha carries it as found")


def test_init_quotes_the_nearest_code_as_context_of_a_top_level_def(
    make_files: Callable[..., Path], tmp_path: Path
) -> None:
    """``init`` quoted the two lines around a top-level ``def``, blank ones, so pin's
    context rule doubted every move of it (a header line inserted at the top of the
    file): context counts non-blank lines, the blank ones between kept."""
    root = make_files({"pkg/__init__.py": "", "pkg/_version.py": "__version__ = '1'\n",
                       "pkg/m.py": MODULE})
    m = tmp_path / "m.yaml"
    init(root, m, "first=pkg/m.py:1", "alpha=pkg/m.py:4-6", "beta=pkg/m.py:9-10")
    cits = yaml.safe_load(m.read_text())["citations"]
    assert cits["alpha"]["anchor"]["prefix"] == "import os\n\n\n"
    assert cits["alpha"]["anchor"]["suffix"] == "\n\ndef beta(rows):\n    return [r * 2 for r in rows]\n"
    assert cits["first"]["anchor"]["suffix"] == "\n\ndef alpha(x):\n    y = x + 1\n"
    assert "prefix" not in cits["first"]["anchor"]  # no code above: nothing quoted
    assert cits["beta"]["anchor"]["prefix"] == "    y = x + 1\n    return y\n\n\n"
    assert "suffix" not in cits["beta"]["anchor"]
    assert run_cli("check", str(root), "-m", str(m)).returncode == 0
    # A license header inserted: every citation moved, and its context confirms the move.
    (root / "pkg" / "m.py").write_text("# SPDX-License-Identifier: Apache-2.0\n" + MODULE)
    out = tmp_path / "out.yaml"
    rc, review = pin_json(root, m, "-o", str(out))
    rows = {cid: item(review, cid) for cid in ("first", "alpha", "beta")}
    assert rc == 0, rows
    assert {cid: (r["outcome"], r["new_lines"]) for cid, r in rows.items()} == {
        "first": ("moved", [2, 2]), "alpha": ("moved", [5, 7]), "beta": ("moved", [10, 11])}
    assert all("re-quoted" not in r["detail"] for r in rows.values())
    assert run_cli("check", str(root), "-m", str(out)).returncode == 0


def test_a_def_with_no_code_around_it_moved_into_other_code_is_unresolved(
    make_files: Callable[..., Path], tmp_path: Path
) -> None:
    """Blank lines only around the span: ``init`` quotes no context, and a move has
    nothing to confirm it (the text found may be a copy)."""
    root = make_files({"pkg/__init__.py": "", "pkg/m.py": f"\n\n{ALPHA}\n\n"})
    m = tmp_path / "m.yaml"
    init(root, m, "alpha=pkg/m.py:3-5")
    anchor = yaml.safe_load(m.read_text())["citations"]["alpha"]["anchor"]
    assert set(anchor) == {"exact"}
    (root / "pkg" / "m.py").write_text(f"class Old:\n    pass\n\n\n{ALPHA}\n\n")
    rc, review = pin_json(root, m)
    row = item(review, "alpha")
    assert rc == 1 and row["outcome"] == "unresolved"
    assert "moved to 5–7 (2 lines later), no non-blank context to confirm the move" in row["detail"]


# -- 1c. --accept on a marked citation; an --accept with nothing to accept ---------------------


def test_accept_carries_a_marked_citation_and_removes_its_mark(
    make_files: Callable[..., Path], tmp_path: Path
) -> None:
    root = make_files({"pkg/__init__.py": "", "pkg/_version.py": "__version__ = '1'\n",
                       "pkg/m.py": SENDS})
    m = tmp_path / "m.yaml"
    init(root, m, "sends=pkg/m.py:3-4")
    (root / "pkg" / "m.py").write_text("# pad\n" + SENDS.replace("return True", "return None")
                                       .replace("f(items)", "g(items)"))
    marked = tmp_path / "marked.yaml"
    rc, _ = pin_json(root, m, "-o", str(marked), "--allow-unresolved")
    text = marked.read_text()
    assert rc == 1 and "unresolved: " in text and "--accept sends carries it as found" in text
    assert run_cli("check", str(root), "-m", str(marked)).returncode == 1
    # The mark's advice works: carried, the mark and the file's UNRESOLVED comment gone.
    out = tmp_path / "out.yaml"
    rc, review = pin_json(root, marked, "-o", str(out), "--accept", "sends")
    row = item(review, "sends")
    assert rc == 0 and row["outcome"] == "moved", row
    assert "its unresolved mark removed (--accept)" in row["detail"]
    assert "carried as found (--accept)" in row["detail"]
    carried = out.read_text()
    assert "unresolved" not in carried and "UNRESOLVED" not in carried
    assert run_cli("check", str(root), "-m", str(out)).returncode == 0
    # Without --accept the mark stays, as before.
    rc, review = pin_json(root, marked)
    assert rc == 1 and item(review, "sends")["detail"].startswith("still marked: ")


def test_accept_of_a_marked_citation_still_not_found_updates_its_reason(
    make_files: Callable[..., Path], tmp_path: Path
) -> None:
    root = make_files({"pkg/__init__.py": "", "pkg/m.py": SENDS})
    marked = tmp_path / "marked.yaml"
    init(root, marked, "sends=pkg/m.py:3-4")
    marked.write_text(marked.read_text().replace("    at: pkg/m.py:3-4\n",
                                                 "    at: pkg/m.py:3-4\n    unresolved: old reason\n"))
    (root / "pkg" / "m.py").write_text("def f(items):\n    return None\n")
    out = tmp_path / "out.yaml"
    rc, review = pin_json(root, marked, "-o", str(out), "--allow-unresolved", "--accept", "sends")
    row = item(review, "sends")
    assert rc == 1 and row["outcome"] == "unresolved" and "no longer in pkg/m.py" in row["detail"]
    rec = yaml.safe_load(out.read_text())["citations"]["sends"]
    assert rec["unresolved"] == row["detail"]


def test_an_accept_with_nothing_to_accept_says_so(make_files: Callable[..., Path],
                                                 tmp_path: Path) -> None:
    root = make_files({"pkg/__init__.py": "", "pkg/m.py": SENDS})
    m = tmp_path / "m.yaml"
    init(root, m, "sends=pkg/m.py:3-4")
    (root / "pkg" / "m.py").write_text("# pad\n" + SENDS)
    proc = run_cli("pin", str(root), "-m", str(m), "--accept", "sends")
    assert proc.returncode == 0, proc.stderr
    said = ("--accept sends: nothing to accept (its place is not in doubt); "
            "carried as it would be without it")
    # Said on stderr with pin's other notes; stdout holds the review and the diff.
    assert proc.stderr.splitlines()[0] == f"pp1audit: {said}", proc.stderr
    assert said not in proc.stdout
    rc, review = pin_json(root, m, "--accept", "sends")
    assert rc == 0 and review["notes"] == [said]
    proc = run_cli("pin", str(root), "-m", str(m), "--accept", "sends", "--format", "json")
    assert said not in proc.stderr  # JSON says it once, under "notes"
    assert "--accept" not in item(review, "sends")["detail"]
    rc, review = pin_json(root, m)
    assert rc == 0 and review["notes"] == []


# -- 3. comments after the last citation stay ----------------------------------------------------


def test_comments_after_a_dropped_suffix_stay(make_files: Callable[..., Path], tmp_path: Path) -> None:
    root = make_files({"pkg/__init__.py": "", "pkg/m.py": "a = 1\nb = 2\nc = 3\n"})
    m = tmp_path / "m.yaml"
    init(root, m, "one=pkg/m.py:1", "two=pkg/m.py:2", context=1)
    tail = ("\n# Trailing notes of the audit: keep me.\n# Second line.\n"
            "references:\n  r1: {title: T, url: \"https://example.com/x\"}\n")
    m.write_text(m.read_text() + tail)
    (root / "pkg" / "m.py").write_text("a = 1\nc = 3\nd = 4\nb = 2\n")
    out = tmp_path / "out.yaml"
    rc, review = pin_json(root, m, "-o", str(out), "--accept", "two", "--accept", "one")
    assert rc == 0
    text = out.read_text()
    assert text.endswith("        d = 4\n" + tail)
    removed = [x for x in review["manifest_diff"].splitlines()
               if x.startswith("-") and not x.startswith("---")]
    assert all("#" not in x and x.strip("- ") for x in removed), removed


def test_a_dropped_entry_keeps_the_comments_that_follow_it() -> None:
    from pp1audit.upgrade.yamledit import TextDoc

    old = ("top:\n  one:\n    a: 1\n    b: 2\n\n# about what follows\nnext: 3\n")
    doc = TextDoc(old, "m.yaml")
    doc.drop(("top", "one", "b"))
    assert doc.text() == "top:\n  one:\n    a: 1\n\n# about what follows\nnext: 3\n"


COMMENTED = """\
citations:
  # leading comment of citations
  alpha:
    at: pkg/m.py:2   # eol comment on at
    claim: alpha adds one
    anchor:
      exact: |2
            return x + 1
      # comment between exact and prefix (indent 6)
      prefix: |
        def alpha(x):
      # comment between prefix and suffix (indent 6)
      suffix: |
        ALPHA = alpha
      # deep comment after the suffix (indent 6)
    # comment after alpha (indent 4)
  # comment between alpha and beta (indent 2)

  beta:
    at: pkg/m.py:3
    anchor:
      exact: |
        ALPHA = alpha
# final comment (col 0)
"""


def test_comments_inside_an_entry_stay_when_its_context_is_dropped(
    make_files: Callable[..., Path], tmp_path: Path
) -> None:
    """A dropped ``suffix`` (or ``prefix``) takes its own lines only: the entry's
    comments, at any indent right of its key, stay."""
    src = "def alpha(x):\n    return x + 1\nALPHA = alpha\n"
    root = make_files({"pkg/__init__.py": "", "pkg/m.py": src})
    m = tmp_path / "m.yaml"
    m.write_text("pp1audit: 1\ntarget: {package: pkg}\n" + COMMENTED)
    comments = [x for x in COMMENTED.splitlines() if x.lstrip().startswith("#")]
    assert len(comments) == 7
    # alpha moves to the end of the file: its suffix is dropped.
    (root / "pkg" / "m.py").write_text("ALPHA = 1\ndef alpha(x):\n    return x + 1\n")
    out = tmp_path / "out.yaml"
    _, review = pin_json(root, m, "-o", str(out), "--accept", "alpha", "--allow-unresolved")
    assert "suffix dropped" in item(review, "alpha")["detail"]
    text = out.read_text()
    assert [x for x in text.splitlines() if x.lstrip().startswith("#")] == comments
    assert "suffix" not in yaml.safe_load(text)["citations"]["alpha"]["anchor"]
    # alpha now at the start of the file: its prefix is dropped, its suffix stays.
    (root / "pkg" / "m.py").write_text("    return x + 1\nALPHA = alpha\n")
    _, review = pin_json(root, m, "-o", str(out), "--accept", "alpha", "--allow-unresolved")
    assert "prefix dropped" in item(review, "alpha")["detail"]
    text = out.read_text()
    assert [x for x in text.splitlines() if x.lstrip().startswith("#")] == comments
    assert "prefix" not in yaml.safe_load(text)["citations"]["alpha"]["anchor"]


def test_drop_keeps_the_comments_after_the_value() -> None:
    from pp1audit.upgrade.yamledit import TextDoc

    old = ("a:\n  first: |\n    1\n  # after first\n  plain: x   # eol\n  # after plain\n"
           "  last: |\n    3\n  # after last\nb: 1\n")
    for key, gone in (("first", "  first: |\n    1\n"), ("plain", "  plain: x   # eol\n"),
                      ("last", "  last: |\n    3\n")):
        doc = TextDoc(old, "m.yaml")
        doc.drop(("a", key))
        assert doc.text() == old.replace(gone, ""), key


def test_a_flow_mapping_entry_is_dropped_and_added_between_its_commas() -> None:
    from pp1audit.upgrade.yamledit import TextDoc

    old = "c:\n  x: {at: 'a.py:1', anchor: {exact: \"f()\", prefix: g, suffix: h}}  # mine\n"
    doc = TextDoc(old, "m.yaml")
    doc.drop(("c", "x", "anchor", "prefix"))
    doc.drop(("c", "x", "anchor", "suffix"))
    doc.insert(("c", "x"), "unresolved", "gone: a.py", after="at")
    assert doc.text() == ("c:\n  x: {at: 'a.py:1', unresolved: 'gone: a.py', "
                          "anchor: {exact: \"f()\"}}  # mine\n")
    doc = TextDoc(old, "m.yaml")
    doc.drop(("c", "x", "at"))
    assert doc.text() == "c:\n  x: {anchor: {exact: \"f()\", prefix: g, suffix: h}}  # mine\n"


# -- 4. a failed write with --format json prints the error object alone -------------------------


def test_json_pin_whose_write_fails_prints_only_the_error_object(
    make_files: Callable[..., Path], tmp_path: Path
) -> None:
    root = make_files({"pkg/__init__.py": "", "pkg/a.py": "x = 1\n"})
    m = tmp_path / "m.yaml"
    init(root, m, "one=pkg/a.py:1")
    dest = tmp_path / "missing" / "x.yaml"
    proc = run_cli("pin", str(root), "-m", str(m), "--format", "json", "-o", str(dest))
    assert proc.returncode == 2
    doc = json.loads(proc.stdout)
    assert doc["format"] == "pp1audit.error/1" and str(dest) in doc["error"]
    assert not dest.exists()


# -- 5. nothing judged is exit 2 -------------------------------------------------------------------


def test_pin_and_diff_of_a_manifest_judging_nothing_on_the_target_exit_2(
    make_files: Callable[..., Path], tmp_path: Path
) -> None:
    root = make_files({"pkg/__init__.py": "", "pkg/a.py": "x = 1\n"})
    m = tmp_path / "lane.yaml"
    m.write_text("pp1audit: 1\naudit: {id: x, title: t, date: 2026-10-23}\n"
                 "target: {package: pkg}\n"
                 "sources:\n  lane: {kind: git, commit: cc9515fdd4e26197ef13b797c06bcf9cc39a085c}\n"
                 "citations:\n  c1: {source: lane, at: a.py:1-2}\n")
    assert run_cli("check", str(root), "-m", str(m)).returncode == 2
    out = tmp_path / "out.yaml"
    proc = run_cli("pin", str(root), "-m", str(m), "-o", str(out))
    assert proc.returncode == 2 and proc.stdout == "" and not out.exists()
    assert "nothing on the target was judged" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    proc = run_cli("pin", str(root), "-m", str(m), "--format", "json")
    assert proc.returncode == 2 and json.loads(proc.stdout)["format"] == "pp1audit.error/1"
    proc = run_cli("diff", str(root), str(root), "-m", str(m))
    assert proc.returncode == 2 and "nothing was judged" in proc.stderr


# -- 6. changed text is "changed", as diff says ----------------------------------------------------


INVARIANT_MANIFEST = (
    "pp1audit: 1\ntarget: {package: pkg}\n"
    "invariants:\n  calls-foo:\n    file: pkg/a.py\n    evidence: {rule: {pattern: foo($$$X)}}\n"
    "citations:\n  the-call:\n    at: pkg/a.py:2\n    anchor: {invariant: calls-foo}\n"
)


def test_an_invariant_anchored_span_of_another_length_is_changed_in_pin_and_diff(
    make_files: Callable[..., Path], tmp_path: Path
) -> None:
    old = make_files({"pkg/__init__.py": "", "pkg/a.py": "def g():\n    foo(1)\n"}, tmp_path / "old")
    new = make_files({"pkg/__init__.py": "",
                      "pkg/a.py": "# moved\ndef g():\n    foo(\n        1)\n"}, tmp_path / "new")
    m = tmp_path / "m.yaml"
    m.write_text(INVARIANT_MANIFEST)
    assert run_cli("check", str(old), "-m", str(m)).returncode == 0
    proc = run_cli("diff", str(old), str(new), "-m", str(m), "--format", "json")
    diffed = next(i for i in json.loads(proc.stdout)["items"] if i["id"] == "the-call")
    assert diffed["status"] == "changed"
    rc, review = pin_json(new, m)
    row = item(review, "the-call")
    assert rc == 0 and row["outcome"] == "changed" and row["new_lines"] == [3, 4]
    assert row["detail"].startswith("2 → 3–4; 1 line, now 2: the cited text changed")


def test_an_invariant_anchored_move_says_its_text_is_not_pinned(
    make_files: Callable[..., Path], tmp_path: Path
) -> None:
    root = make_files({"pkg/__init__.py": "", "pkg/a.py": "# moved\ndef g():\n    foo(1)\n"})
    m = tmp_path / "m.yaml"
    m.write_text(INVARIANT_MANIFEST)
    rc, review = pin_json(root, m)
    row = item(review, "the-call")
    assert rc == 0 and row["outcome"] == "moved"
    assert row["detail"] == "2 → 3; text not pinned: invariant 'calls-foo' anchors it"


def test_a_moved_span_whose_spaces_changed_is_changed(make_files: Callable[..., Path],
                                                       tmp_path: Path) -> None:
    root = make_files({"pkg/__init__.py": "", "pkg/a.py": "a = 1\nx = f(1)\n"})
    m = tmp_path / "m.yaml"
    init(root, m, "x=pkg/a.py:2", context=1)
    (root / "pkg" / "a.py").write_text("# pad\na = 1\nx  =  f(1)\n")
    rc, review = pin_json(root, m)
    row = item(review, "x")
    assert rc == 0 and row["outcome"] == "changed"
    assert row["detail"] == "2 → 3; anchor text re-quoted (whitespace differs)"


# -- 7. a bidi override is never printed raw --------------------------------------------------------


def test_init_writes_hidden_characters_as_yaml_escapes(make_files: Callable[..., Path],
                                                       tmp_path: Path) -> None:
    name = f"pkg/e{RLO}vil.py"
    root = make_files({"pkg/__init__.py": "", name: f'a = 1\nz = "{RLO}evil"\n'})
    proc = run_cli("init", str(root), "-p", "pkg", "--cite", f"rlo={name}:2")
    assert proc.returncode == 0, proc.stderr
    assert RLO not in proc.stdout and proc.stdout.isascii()
    assert '"pkg/e\\u202Evil.py"' in proc.stdout
    data = yaml.safe_load(proc.stdout)  # the escapes load back to the exact text
    assert data["citations"]["rlo"]["at"] == f"{name}:2"
    assert data["citations"]["rlo"]["anchor"]["exact"] == f'z = "{RLO}evil"\n'
    m = tmp_path / "m.yaml"
    m.write_text(proc.stdout)
    assert run_cli("check", str(root), "-m", str(m)).returncode == 0


def test_pin_shows_its_manifest_diff_escaped(make_files: Callable[..., Path], tmp_path: Path) -> None:
    name = f"pkg/e{RLO}vil.py"
    root = make_files({"pkg/__init__.py": "", name: "a = 1\nb = 2\n"})
    m = tmp_path / "m.yaml"
    init(root, m, f"rlo={name}:2")
    # An older manifest, written with the character as it is (YAML allows it).
    m.write_text(re.sub(r'"pkg/e\\u202Evil\.py(:\d+)?"', lambda g: f"{name}{g[1] or ''}",
                        m.read_text()), encoding="utf-8")
    assert RLO in m.read_text()
    (root / name).write_text("# pad\na = 1\nb = 2\n")
    proc = run_cli("pin", str(root), "-m", str(m))
    assert proc.returncode == 0, proc.stderr
    assert RLO not in proc.stdout
    assert "-    at: pkg/e\\u202evil.py:2" in proc.stdout
    assert '+    at: "pkg/e\\u202Evil.py:3"' in proc.stdout
    # JSON carries the text itself (its encoder escapes).
    _, review = pin_json(root, m)
    assert f"-    at: {name}:2" in review["manifest_diff"]


def test_init_and_pin_escape_every_format_character(make_files: Callable[..., Path],
                                                   tmp_path: Path) -> None:
    """U+061C (Arabic letter mark) and U+00AD (soft hyphen) are format characters
    (Cf) like U+202E: written as YAML escapes and shown escaped in pin's diff."""
    line = 'z = "x\u061cy\u00adz"'
    root = make_files({"pkg/__init__.py": "", "pkg/a.py": f"a = 1\n{line}\n"})
    proc = run_cli("init", str(root), "-p", "pkg", "--cite", "z=pkg/a.py:2")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.isascii() and '"z = \\"x\\u061Cy\\xADz\\"\\n"' in proc.stdout
    assert yaml.safe_load(proc.stdout)["citations"]["z"]["anchor"]["exact"] == line + "\n"
    # An older manifest, holding the characters as they are (YAML allows it).
    m = tmp_path / "m.yaml"
    m.write_text("pp1audit: 1\ntarget: {package: pkg}\ncitations:\n  z:\n    at: pkg/a.py:2\n"
                 f"    anchor:\n      exact: |\n        {line}\n", encoding="utf-8")
    # It moves, its spaces changed: pin writes it anew, with the escapes.
    (root / "pkg" / "a.py").write_text(f"# pad\na = 1\n{line.replace(' = ', ' =  ')}\n")
    proc = run_cli("pin", str(root), "-m", str(m), "--accept", "z")
    assert proc.returncode == 0, proc.stderr
    assert "\u061c" not in proc.stdout and "\u00ad" not in proc.stdout
    assert "+    at: pkg/a.py:3" in proc.stdout
    assert '-        z = "x\\u061cy\\u00adz"' in proc.stdout
    assert '+      exact: "z =  \\"x\\u061Cy\\xADz\\"\\n"' in proc.stdout
