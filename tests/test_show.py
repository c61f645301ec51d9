"""``pp1audit show``: a citation (found where it is now) or a span, with numbered lines,
context, highlighting on request, and the citation's status."""

from __future__ import annotations

import zipfile
from collections.abc import Callable
from pathlib import Path

from conftest import REPO, run_cli

PROBE = REPO / "tests" / "data" / "pp1-probe.yaml"
RUNNER = "vllm/v1/worker/gpu/model_runner.py"


def test_show_citation_where_it_is_now_with_status(vllm_wheel_030: Path) -> None:
    proc = run_cli("show", str(vllm_wheel_030), "runner-passes-draft-logits", "-m", str(PROBE))
    assert proc.returncode == 1, proc.stderr  # drift closes the gate, as in check
    lines = proc.stdout.splitlines()
    assert lines[0] == f"runner-passes-draft-logits: {RUNNER}:1559-1564"
    marked = [x for x in lines if x.startswith(">")]
    assert [int(x.split()[1]) for x in marked] == list(range(1559, 1565))
    with zipfile.ZipFile(vllm_wheel_030) as zf:
        source = zf.read(RUNNER).decode().splitlines()
    for x in marked:
        n = int(x.split()[1])
        assert x.split("│ ", 1)[1] == source[n - 1].rstrip()
    context = [x for x in lines if x.startswith("  ") and "│" in x]
    assert [int(x.split()[0]) for x in context] == [1556, 1557, 1558, 1565, 1566, 1567]
    status = lines[-1]
    assert status.startswith("citation runner-passes-draft-logits: drift (pinned 1605-1610, now "
                             "1559-1564)")


def test_show_passing_citation_exit_0_and_context_option(vllm_tree: Path) -> None:
    proc = run_cli("show", str(vllm_tree), "greedy-default", "-m", str(PROBE), "-C", "1")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert [x.split()[0] for x in lines[1:4]] == ["600", ">", "602"]
    assert 'draft_sample_method: DraftSampleMethod = "greedy"' in lines[2]
    assert lines[-1].startswith("citation greedy-default: pass")


def test_show_plain_span_lists_overlapping_citations(vllm_tree: Path) -> None:
    proc = run_cli("show", str(vllm_tree), f"{RUNNER}:1608-1612", "-m", str(PROBE), "-C", "0")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == f"{RUNNER}:1608-1612"
    assert len([x for x in lines if x.startswith(">")]) == 5
    assert lines[-1].startswith("citation runner-passes-draft-logits: pass")
    far = run_cli("show", str(vllm_tree), f"{RUNNER}:1-3", "-m", str(PROBE))
    assert far.returncode == 0
    assert far.stdout.splitlines()[-1] == "no citation of the manifest covers these lines"


def test_show_colour_uses_rich_highlighting(vllm_tree: Path) -> None:
    proc = run_cli("show", str(vllm_tree), "runner-passes-draft-logits", "-m", str(PROBE),
                   "--color", "always")
    assert proc.returncode == 0, proc.stderr
    assert "\x1b[" in proc.stdout
    assert "1605" in proc.stdout and "self" in proc.stdout
    plain = run_cli("show", str(vllm_tree), "runner-passes-draft-logits", "-m", str(PROBE))
    assert "\x1b[" not in plain.stdout


def test_show_errors_are_one_line_exit_2(vllm_tree: Path) -> None:
    cases = [
        ("nope", "no citation 'nope'"),
        (f"{RUNNER}:99999", "has only"),
        ("vllm/absent.py:1", "vllm/absent.py"),
        ("../x.py:1", ".."),
    ]
    for spec, needle in cases:
        proc = run_cli("show", str(vllm_tree), spec, "-m", str(PROBE))
        assert proc.returncode == 2, spec
        assert needle in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_show_a_citation_whose_text_is_gone(
    tree_copy: Path, edit: Callable[[Path, Callable[[str], str]], None]
) -> None:
    edit(tree_copy / RUNNER, lambda t: t.replace(
        "                self.speculator.draft_logits,\n", "                None,\n", 1))
    proc = run_cli("show", str(tree_copy), "runner-passes-draft-logits", "-m", str(PROBE))
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert lines[-2].startswith("citation runner-passes-draft-logits: fail")
    assert lines[-1] == "not found on this tree; showing the pinned lines 1605-1610"
    assert "None," in next(x for x in lines if x.startswith("> 1609"))


def test_show_colour_prints_a_title_with_brackets_as_text(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "pkg" / "a[").mkdir(parents=True)
    (tree / "pkg" / "a[" / "b].py").write_text("x = 1\ny = 2\n", encoding="utf-8")
    manifest = tmp_path / "m.yaml"
    manifest.write_text("pp1audit: 1\ntarget: {package: pkg}\n", encoding="utf-8")
    proc = run_cli("show", str(tree), "pkg/a[/b].py:2", "-m", str(manifest), "--color", "always")
    assert proc.returncode == 0, proc.stderr
    assert "\x1b[1mpkg/a[/b].py:2\x1b[0m" in proc.stdout  # the title, bold, verbatim


def test_show_a_citation_marked_unresolved_says_so(tmp_path: Path, vllm_tree: Path) -> None:
    """``check`` does not look for a citation ``pin`` marked unresolved: show must
    not claim its text is gone from the tree (it is there, at the pinned line)."""
    marked = tmp_path / "probe.yaml"
    marked.write_text(PROBE.read_text(encoding="utf-8").replace(
        "    at: vllm/config/speculative.py:601\n",
        "    at: vllm/config/speculative.py:601\n    unresolved: two places matched\n", 1),
        encoding="utf-8")
    proc = run_cli("show", str(vllm_tree), "greedy-default", "-m", str(marked))
    assert proc.returncode == 1, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[-1] == ("marked unresolved in the manifest (two places matched); showing the "
                         "pinned lines 601-601")
    assert 'DraftSampleMethod = "greedy"' in next(x for x in lines if x.startswith("> 601"))
