"""``pp1audit init``: a manifest measured from the real vLLM 0.31.0 tree passes ``check``
on that tree, and an edit of one cited line closes the gate naming that citation."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import run_cli

from pp1audit.manifest import load_manifest, text_lines

G = "vllm/v1/worker/gpu"
RUNNER = f"{G}/model_runner.py"
CITES = (
    f"runner-passes-draft-logits={RUNNER}:1605-1610",
    f"{G}/spec_decode/speculator.py:177-190",
    f"verify={G}/spec_decode/rejection_sampler.py:237-270",
    f"{G}/spec_decode/rejection_sampler_utils.py:659-663",
    "vllm/config/speculative.py:601",
)


def init(target: Path, out: Path, *extra: str) -> None:
    args = ["init", str(target), "--package", "vllm", "-o", str(out), *extra]
    for c in CITES:
        args += ["--cite", c]
    proc = run_cli(*args)
    assert proc.returncode == 0, proc.stderr
    assert f"wrote {out}" in proc.stderr


def test_init_then_check_passes_on_the_same_tree(vllm_tree: Path, tmp_path: Path) -> None:
    out = tmp_path / "new.yaml"
    init(vllm_tree, out, "--id-prefix", "pp1-")
    m = load_manifest(out)
    assert m.version == "0.31.0"
    assert list(m.citations) == [
        "runner-passes-draft-logits", "pp1-speculator-177-190", "verify",
        "pp1-rejection-sampler-utils-659-663", "pp1-speculative-601",
    ]
    # Digests and anchors are the tree's own bytes and lines.
    for path, digest in m.files.items():
        assert digest == hashlib.sha256((vllm_tree / path).read_bytes()).hexdigest()
    lines = (vllm_tree / RUNNER).read_text(encoding="utf-8").splitlines()
    anchor = m.citations["runner-passes-draft-logits"].anchor
    assert anchor is not None
    assert anchor.exact == lines[1604:1610]
    assert anchor.prefix == lines[1602:1604]
    # Two lines of code on each side: the blank line after the span is not one of them.
    assert lines[1610] == "" and anchor.suffix == lines[1610:1613]
    proc = run_cli("check", str(vllm_tree), "-m", str(out), "--format", "json")
    assert proc.returncode == 0, proc.stdout
    result = json.loads(proc.stdout)
    assert result["counts"]["pass"] == 1 + len(m.files) + len(CITES)
    assert run_cli("check", str(vllm_tree).rstrip("/") , "-m", str(out)).returncode == 0


def test_init_from_the_wheel_equals_init_from_the_tree(
    vllm_tree: Path, vllm_wheel: Path, tmp_path: Path
) -> None:
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    init(vllm_tree, a, "--audit-id", "same")
    init(vllm_wheel, b, "--audit-id", "same")
    body = lambda p: p.read_text().split("\n", 1)[1]  # noqa: E731 - the first line names the source
    assert body(a) == body(b)
    assert run_cli("check", str(vllm_wheel), "-m", str(a)).returncode == 0


def test_editing_one_cited_line_fails_naming_that_citation(
    tree_copy: Path, tmp_path: Path, edit: Callable[[Path, Callable[[str], str]], None]
) -> None:
    out = tmp_path / "new.yaml"
    init(tree_copy, out)
    edit(tree_copy / RUNNER, lambda t: t.replace(
        "                self.speculator.draft_logits,\n", "                None,\n", 1))
    proc = run_cli("check", str(tree_copy), "-m", str(out), "--format", "json")
    assert proc.returncode == 1
    bad = {c["id"]: c for c in json.loads(proc.stdout)["checks"] if c["status"] != "pass"}
    assert set(bad) == {f"file:{RUNNER}", "runner-passes-draft-logits"}
    assert bad["runner-passes-draft-logits"]["status"] == "fail"
    text = run_cli("check", str(tree_copy), "-m", str(out)).stdout
    assert "runner-passes-draft-logits" in text


def test_literal_blocks_round_trip_indented_code(vllm_tree: Path, tmp_path: Path) -> None:
    out = tmp_path / "m.yaml"
    init(vllm_tree, out)
    text = out.read_text()
    assert "exact: |" in text  # code is written as readable literal blocks
    m = load_manifest(out)
    for cit in m.citations.values():
        assert cit.anchor is not None and cit.anchor.exact is not None
        lines = (vllm_tree / cit.span.path).read_text(encoding="utf-8").splitlines()
        assert cit.anchor.exact == lines[cit.span.start - 1 : cit.span.end]
    assert text_lines("a\n") == ["a"]


def test_bad_cites_are_one_line_errors_and_write_nothing(vllm_tree: Path, tmp_path: Path) -> None:
    out = tmp_path / "m.yaml"
    cases = {
        f"{RUNNER}:99999": "has only",
        "vllm/nope.py:1-2": "vllm/nope.py",
        "../etc/passwd:1": "..",
        f"{RUNNER}:9-3": "reversed",
        "Bad_Id=vllm/config/speculative.py:601": "not a valid id",
    }
    for cite, needle in cases.items():
        proc = run_cli("init", str(vllm_tree), "--package", "vllm", "--cite", cite, "-o", str(out))
        assert proc.returncode == 2, (cite, proc.stderr)
        assert needle in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert not out.exists()
    # An existing output is not overwritten without --force.
    out.write_text("keep me\n")
    proc = run_cli("init", str(vllm_tree), "-p", "vllm", "--cite", CITES[-1], "-o", str(out))
    assert proc.returncode == 2 and "--force" in proc.stderr
    assert out.read_text() == "keep me\n"
    proc = run_cli("init", str(vllm_tree), "-p", "vllm", "--cite", CITES[-1], "-o", str(out),
                   "--force")
    assert proc.returncode == 0 and load_manifest(out).citations


def test_init_to_stdout_and_small_tree(make_files: Callable[..., Path]) -> None:
    root = make_files({
        "pkg/__init__.py": "",
        "pkg/_version.py": "__version__ = '1.2'\n",
        "pkg/a.py": "x = 1\r\ny = 2\r\n\r\nz = 3",  # CRLF, no final newline
    })
    proc = run_cli("init", str(root), "-p", "pkg", "--cite", "pkg/a.py:2-4")
    assert proc.returncode == 0, proc.stderr
    assert "version: '1.2'" in proc.stdout or "version: 1.2" in proc.stdout
    manifest = root.parent / "m.yaml"
    manifest.write_text(proc.stdout)
    assert run_cli("check", str(root), "-m", str(manifest)).returncode == 0
    anchor = load_manifest(manifest).citations["a-2-4"].anchor
    assert anchor is not None and anchor.exact == ["y = 2", "", "z = 3"]
    assert anchor.prefix == ["x = 1"] and anchor.suffix == []


def test_lines_a_literal_block_cannot_hold_are_quoted_with_escapes(
    vllm_tree: Path, make_files: Callable[..., Path], tmp_path: Path
) -> None:
    # Real vLLM: a CUTLASS header indented with tabs (libyaml refuses a block opening with one).
    header = "vllm/third_party/fmha_sm100/cutlass/include/cutlass/gemm/warp/mma_tensor_op.h"
    lines = (vllm_tree / header).read_text(encoding="utf-8").splitlines()
    assert lines[85].startswith("\t")
    out = tmp_path / "tabs.yaml"
    for context in ("0", "2"):
        proc = run_cli("init", str(vllm_tree), "-p", "vllm", "--cite", f"t={header}:86-87",
                       "--context", context, "-o", str(out), "--force")
        assert proc.returncode == 0, proc.stderr
        anchor = load_manifest(out).citations["t"].anchor
        assert anchor is not None and anchor.exact == lines[85:87]
        assert run_cli("check", str(vllm_tree), "-m", str(out)).returncode == 0
    # A form feed (a page break) is not allowed in a block scalar at all.
    root = make_files({"pkg/__init__.py": "", "pkg/a.py": "a = 1\n\x0c\nb = 2\n"})
    proc = run_cli("init", str(root), "-p", "pkg", "--cite", "pkg/a.py:2-3", "-o", str(out),
                   "--force")
    assert proc.returncode == 0, proc.stderr
    assert 'exact: "\\f\\nb = 2\\n"' in out.read_text()
    assert run_cli("check", str(root), "-m", str(out)).returncode == 0


def test_a_blank_span_is_refused_naming_the_cite(vllm_tree: Path, tmp_path: Path) -> None:
    assert (vllm_tree / "vllm/config/speculative.py").read_text().splitlines()[599] == ""
    out = tmp_path / "m.yaml"
    cite = "gap=vllm/config/speculative.py:600"
    proc = run_cli("init", str(vllm_tree), "-p", "vllm", "--cite", cite, "-o", str(out))
    assert proc.returncode == 2 and not out.exists()
    assert proc.stderr.startswith(f"pp1audit: error: --cite {cite}: the span holds only blank")
    assert len(proc.stderr.strip().splitlines()) == 1 and "<init>" not in proc.stderr


@pytest.mark.parametrize("command", ["init", "show"])
def test_a_huge_span_argument_is_cut_in_the_error(make_files: Callable[..., Path], tmp_path: Path,
                                                  command: str) -> None:
    """A 5,000-digit line number is one short line: the argument is cut, not echoed whole."""
    root = make_files({"vllm/__init__.py": "", "vllm/a.py": "x = 1\n"})
    spec = "vllm/a.py:1-" + "9" * 5000
    args = (["init", str(root), "-p", "vllm", "--cite", spec, "-o", str(tmp_path / "m.yaml")]
            if command == "init" else ["show", str(root), spec])
    proc = run_cli(*args)
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.splitlines()) == 1 and len(proc.stderr) < 400, proc.stderr
    assert "too large" in proc.stderr and "more characters" in proc.stderr, proc.stderr


def test_context_counts_lines_of_code_as_pin_requotes_them() -> None:
    """The context ``init`` quotes is the run of lines up to the N-th non-blank one on
    each side (blank lines around a top-level def confirm no move), the very lines
    ``pin`` re-quotes; none at all when only blank lines are on that side."""
    from pp1audit.text.anchors import anchor_text, context_lines

    lines = ["import os", "", "", "def f():", "    return 1", "", "", "X = 1", ""]
    quote = anchor_text(lines, 4, 5)
    assert quote.prefix == "import os\n\n\n" and quote.suffix == "\n\nX = 1\n"
    assert anchor_text(lines, 4, 5, 0, 0).prefix == anchor_text(lines, 4, 5, 0, 0).suffix == ""
    assert anchor_text(["", "x = 1", ""], 2, 2) == anchor_text(["x = 1"], 1, 1)
    assert anchor_text(["", "x = 1", ""], 2, 2).prefix == ""
    for a, b in ((1, 1), (4, 5), (5, 5), (8, 8), (8, 9)):
        for before in (True, False):
            for n in (0, 1, 2, 3):
                got = context_lines(lines, a, b, before, n)
                want = _upto_code(lines, a, b, before, n)  # edge blanks and all
                assert got == _code_run(want, before), (a, b, before, n)


def _upto_code(lines: list[str], a: int, b: int, before: bool, nonblank: int) -> list[str]:
    """Lines before (after) ``a``-``b`` up to the ``nonblank``-th non-blank one: the
    plain reading of ``context_lines`` (``pin`` quoted so before it shared it)."""
    out: list[str] = []
    seen = 0
    for i in range(a - 2, -1, -1) if before else range(b, len(lines)):
        if seen == nonblank:
            break
        out.append(lines[i])
        seen += bool(lines[i].strip())
    return out[::-1] if before else out


def _code_run(context: list[str], before: bool) -> list[str]:
    """``context`` without the blank lines past its farthest line of code; [] if none."""
    code = [k for k, x in enumerate(context) if x.strip()]
    if not code:
        return []
    return context[code[0]:] if before else context[:code[-1] + 1]
