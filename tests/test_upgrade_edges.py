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
    assert "moved to 4 (2 lines later), but neither its prefix nor its suffix matches" in row["detail"]
    rc, review = pin_json(root, m, "--accept", "two")
    detail = item(review, "two")["detail"]
    assert rc == 0 and item(review, "two")["outcome"] == "moved"
    assert "prefix changed, re-quoted" in detail and "suffix dropped" in detail


def test_a_move_keeping_one_side_of_its_context_is_carried_saying_so(
    make_files: Callable[..., Path], tmp_path: Path
) -> None:
    root = make_files({"pkg/__init__.py": "", "pkg/m.py": "a = 1\nb = 2\nc = 3\n"})
    m = tmp_path / "m.yaml"
    init(root, m, "two=pkg/m.py:2", context=1)
    (root / "pkg" / "m.py").write_text("# new\na = 1\nb = 2\nd = 4\n")
    rc, review = pin_json(root, m)
    row = item(review, "two")
    assert rc == 0 and row["outcome"] == "moved"
    assert row["detail"] == "2 → 3; suffix changed, re-quoted"
    proc = run_cli("pin", str(root), "-m", str(m))
    assert "2 → 3; suffix changed, re-quoted" in proc.stdout


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
    rc, review = pin_json(root, m, "-o", str(out), "--accept", "two")
    assert rc == 0
    text = out.read_text()
    assert text.endswith("        d = 4\n" + tail)
    removed = [x for x in review["manifest_diff"].splitlines()
               if x.startswith("-") and not x.startswith("---")]
    assert all("#" not in x and x.strip("- ") for x in removed), removed


def test_splice_keeps_the_comments_that_follow_an_edited_entry() -> None:
    from pp1audit.yamlrt import load_document, splice

    old = ("top:\n  one:\n    a: 1\n    b: 2\n\n# about what follows\nnext: 3\n")
    doc = load_document(old)
    del doc.data["top"]["one"]["b"]
    new = splice(old, doc.dump(), {("top", "one")}, doc.data)
    assert new == "top:\n  one:\n    a: 1\n\n# about what follows\nnext: 3\n"


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
    "invariants:\n  calls-foo:\n    file: pkg/a.py\n    pattern: foo($$$X)\n"
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
