"""``pp1audit diff OLD NEW``: between the real vLLM 0.30.0 and 0.31.0 wheels, read in
place, it names the cited spans whose text changed and those that only moved.

The expected lists are the test's own: where each anchor's text is in each wheel."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import REPO, file_lines, find_block, run_cli

from pp1audit.manifest import load_manifest
from pp1audit.upgrade.diff import map_span

PP1 = REPO / "manifests" / "pp1.yaml"
G = "vllm/v1/worker/gpu"


def diff_json(old: Path, new: Path, manifest: Path) -> tuple[int, dict]:
    proc = run_cli("diff", str(old), str(new), "-m", str(manifest), "--format", "json")
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def ids(result: dict, status: str) -> set[str]:
    return {i["id"] for i in result["items"] if i["kind"] == "citation" and i["status"] == status}


def expected(manifest: Path, old: Path, new: Path) -> dict[str, set[str]]:
    """unchanged / moved / changed, from the anchors' text in both wheels."""
    out: dict[str, set[str]] = {"unchanged": set(), "moved": set(), "changed": set()}
    for cid, cit in load_manifest(manifest).citations.items():
        if cit.source is not None or cit.anchor is None or cit.anchor.exact is None:
            continue
        a = find_block(file_lines(old, cit.span.path), cit.anchor.exact)
        b = find_block(file_lines(new, cit.span.path), cit.anchor.exact)
        assert len(b) == 1, cid  # the anchors are 0.31.0 text
        if not a:
            out["changed"].add(cid)
        else:
            out["unchanged" if a == b else "moved"].add(cid)
    return out


@pytest.fixture(scope="module")
def mixed(vllm_wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A manifest over 0.31.0 citing spans that moved, changed and stayed by 0.30.0."""
    out = tmp_path_factory.mktemp("diff") / "mixed.yaml"
    cites = [
        f"runner-call={G}/model_runner.py:1605-1610",
        f"speculator-alloc={G}/spec_decode/speculator.py:177-190",
        f"verify-whole={G}/spec_decode/rejection_sampler.py:237-279",
        f"ratio-test={G}/spec_decode/rejection_sampler_utils.py:659-663",
        f"one-hot-residual={G}/spec_decode/rejection_sampler_utils.py:856-868",
        "greedy-default=vllm/config/speculative.py:601",
    ]
    args = ["init", str(vllm_wheel), "-p", "vllm", "-o", str(out)]
    for c in cites:
        args += ["--cite", c]
    proc = run_cli(*args)
    assert proc.returncode == 0, proc.stderr
    return out


def test_diff_names_changed_and_moved_spans(
    mixed: Path, vllm_wheel_030: Path, vllm_wheel: Path
) -> None:
    rc, result = diff_json(vllm_wheel_030, vllm_wheel, mixed)
    assert rc == 1 and not result["same"]
    want = expected(mixed, vllm_wheel_030, vllm_wheel)
    assert want == {
        "unchanged": {"ratio-test"},
        "moved": {"runner-call", "speculator-alloc", "greedy-default"},
        "changed": {"verify-whole", "one-hot-residual"},
    }
    for status, names in want.items():
        assert ids(result, status) == names, status
    items = {i["id"]: i for i in result["items"]}
    assert items["runner-call"]["old_lines"] == [1559, 1564]
    assert items["runner-call"]["new_lines"] == [1605, 1610]
    assert items["version"]["old"] == "0.30.0" and items["version"]["new"] == "0.31.0"
    # The changed span is shown against the lines that replaced it, numbered as in the files.
    verify = items["verify-whole"]
    assert verify["old_lines"][0] == 168 and verify["new_lines"] == [237, 279]
    assert "+        seq_lens_upper_bound_np: np.ndarray,\n" in verify["diff"]
    hunk = next(x for x in verify["diff"].splitlines() if x.startswith("@@"))
    assert hunk.startswith("@@ -17") and " +24" in hunk
    old = file_lines(vllm_wheel_030, f"{G}/spec_decode/rejection_sampler.py")
    assert old[verify["old_lines"][0] - 1].strip() == "def _verify("
    residual = items["one-hot-residual"]["diff"]
    assert "-        # The block-verification factor is constant and cancels on normalization.\n" in (
        residual)
    # Every pinned file changed between the releases.
    files = [i for i in result["items"] if i["kind"] == "file"]
    assert files and all(i["status"] == "changed" for i in files)


def test_diff_text_output(mixed: Path, vllm_wheel_030: Path, vllm_wheel: Path) -> None:
    proc = run_cli("diff", str(vllm_wheel_030), str(vllm_wheel), "-m", str(mixed))
    assert proc.returncode == 1, proc.stderr
    lines = proc.stdout.splitlines()
    row = next(x for x in lines if " runner-call " in x)
    assert row.split()[:2] == ["moved", "citation"] and "1559–1564 → 1605–1610" in row
    row = next(x for x in lines if " verify-whole " in x)
    assert row.split()[:2] == ["changed", "citation"]
    assert any(x.startswith("      @@ ") for x in lines)
    assert lines[-1].startswith("summary: 1 unchanged, 3 moved,")


def test_diff_of_pp1_between_the_wheels(vllm_wheel_030: Path, vllm_wheel: Path) -> None:
    rc, result = diff_json(vllm_wheel_030, vllm_wheel, PP1)
    assert rc == 1
    want = expected(PP1, vllm_wheel_030, vllm_wheel)
    assert want["moved"]
    by_invariant = {c for c, cit in load_manifest(PP1).citations.items()
                    if cit.anchor is not None and cit.anchor.invariant is not None}
    for status, names in want.items():
        assert ids(result, status) - by_invariant == names - by_invariant, status
    # Invariant-anchored spans whose text differs between the releases are "changed":
    # _verify gained a parameter in 0.31.0, and the resample comments were rewritten.
    assert {"rejection-sampler-verify", "utils-resample"} <= ids(result, "changed")
    # The invariant-anchored runner citation moved with the call it describes.
    runner = next(i for i in result["items"] if i["id"] == "runner-passes-draft-logits")
    assert runner["status"] == "moved"
    assert runner["new_lines"][0] - runner["old_lines"][0] == 46
    # Citations of the lane repository are not the wheels' business.
    assert not [i for i in result["items"] if i["id"].startswith("lane-")]


def test_same_release_tree_against_wheel_is_unchanged(
    mixed: Path, vllm_tree: Path, vllm_wheel: Path
) -> None:
    rc, result = diff_json(vllm_tree, vllm_wheel, mixed)
    assert rc == 0 and result["same"]
    assert {i["status"] for i in result["items"]} == {"unchanged"}
    assert run_cli("diff", str(vllm_tree), str(vllm_wheel), "-m", str(mixed)).returncode == 0


def test_gone_file_and_deleted_span(make_files: Callable[..., Path], tmp_path: Path) -> None:
    old = make_files({
        "pkg/__init__.py": "",
        "pkg/a.py": "a = 1\nb = 2\nkeep = 3\nc = 4\n",
        "pkg/b.py": "x = 1\n",
    }, tmp_path / "old")
    new = make_files({"pkg/__init__.py": "", "pkg/a.py": "a = 1\nkeep = 3\n"}, tmp_path / "new")
    m = tmp_path / "m.yaml"
    proc = run_cli("init", str(old), "-p", "pkg", "-o", str(m), "--cite", "ab=pkg/a.py:2",
                   "--cite", "keep=pkg/a.py:3", "--cite", "bx=pkg/b.py:1")
    assert proc.returncode == 0, proc.stderr
    rc, result = diff_json(old, new, m)
    assert rc == 1
    items = {(i["kind"], i["id"]): i for i in result["items"]}
    assert items[("file", "pkg/b.py")]["status"] == "gone"
    assert items[("citation", "bx")]["status"] == "gone"
    assert items[("citation", "ab")]["status"] == "gone"
    assert items[("citation", "keep")]["status"] == "moved"
    assert items[("citation", "keep")]["new_lines"] == [2, 2]


def test_map_span_follows_lines_through_a_diff() -> None:
    a = ["h", "x", "y", "z", "t"]
    b = ["h", "new", "x", "Y", "z", "t"]
    assert map_span(a, b, 2, 4) == (3, 5)  # replaced middle line maps to its replacement
    assert map_span(a, b, 3, 3) == (4, 4)
    assert map_span(a, ["h", "t"], 2, 4) is None  # all deleted
    assert map_span(a, ["h", "x", "in", "z", "t"], 2, 4) == (2, 4)


EVIL_VERSION = "0.31.0\x1b[2J\u202e"
EVIL_LINE = "keep = 3  # \x1b[2J evil \u202e"


@pytest.fixture
def evil_pair(make_files: Callable[..., Path], tmp_path: Path) -> tuple[Path, Path, Path]:
    """An old tree and a new one whose version and cited line hold terminal control."""
    old = make_files({
        "pkg/__init__.py": "",
        "pkg/_version.py": "__version__ = '0.30.0'\n",
        "pkg/a.py": "a = 1\nkeep = 3\nc = 4\n",
    }, tmp_path / "old")
    new = make_files({
        "pkg/__init__.py": "",
        "pkg/_version.py": f"__version__ = {EVIL_VERSION!r}\n",
        "pkg/a.py": f"a = 1\n{EVIL_LINE}\nc = 4\n",
    }, tmp_path / "new")
    m = tmp_path / "m.yaml"
    proc = run_cli("init", str(old), "-p", "pkg", "-o", str(m), "--cite", "keep=pkg/a.py:2")
    assert proc.returncode == 0, proc.stderr
    return old, new, m


def test_diff_text_shows_what_the_trees_say_escaped(evil_pair: tuple[Path, Path, Path]) -> None:
    """A ``_version.py`` or a cited line holding ``ESC[2J`` (clear the screen) or a bidi
    override is data: the header, the version row and the span diff show it escaped."""
    old, new, m = evil_pair
    proc = run_cli("diff", str(old), str(new), "-m", str(m))
    assert proc.returncode == 1, proc.stderr
    assert "\x1b" not in proc.stdout and "\u202e" not in proc.stdout
    lines = proc.stdout.splitlines()
    assert lines[0].startswith(f"diff directory {old} (0.30.0) → directory {new} "
                               "(0.31.0\\x1b[2J\\u202e); ")
    version = next(x for x in lines if x.split()[1:3] == ["version", "version"])
    assert version.endswith("0.30.0 → 0.31.0\\x1b[2J\\u202e")
    assert "      +keep = 3  # \\x1b[2J evil \\u202e" in lines
    swapped = run_cli("diff", str(new), str(old), "-m", str(m))
    assert "\x1b" not in swapped.stdout and "\u202e" not in swapped.stdout
    assert "      -keep = 3  # \\x1b[2J evil \\u202e" in swapped.stdout.splitlines()


def test_diff_json_keeps_the_exact_values(evil_pair: tuple[Path, Path, Path]) -> None:
    old, new, m = evil_pair
    _, result = diff_json(old, new, m)
    assert result["new"]["version"] == EVIL_VERSION  # JSON escapes by itself
    keep = next(i for i in result["items"] if i["id"] == "keep")
    assert f"+{EVIL_LINE}\n" in keep["diff"]


def _fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def _escaping_link(path: Path) -> None:
    outside = path.parents[3] / "outside.py"
    outside.write_text("x = 1\n", encoding="utf-8")
    path.unlink()
    path.symlink_to(outside)


def _latin1(path: Path) -> None:
    path.write_bytes(b"x = '\xe9'\n")


UNUSABLE = {
    "fifo": (_fifo, "pkg/b.py is a FIFO; not opened"),
    "escaping-symlink": (_escaping_link,
                         "pkg/b.py resolves outside the target root (symlink escape)"),
    "not-utf8": (_latin1, "pkg/b.py not UTF-8 text (binary or another encoding)"),
}


@pytest.mark.parametrize("how", list(UNUSABLE))
def test_a_file_that_is_there_but_unusable_is_not_gone(
    how: str, make_files: Callable[..., Path], tmp_path: Path
) -> None:
    """A cited FIFO, a symlink out of the tree or non-UTF-8 text is still in the tree:
    diff says what it is, in check's words, not that it is gone (or, swapped, added)."""
    files = {"pkg/__init__.py": "", "pkg/b.py": "x = 1\n"}
    old = make_files(files, tmp_path / "a" / "old")
    new = make_files(files, tmp_path / "a" / "new")
    m = tmp_path / "m.yaml"
    proc = run_cli("init", str(old), "-p", "pkg", "-o", str(m), "--cite", "bx=pkg/b.py:1")
    assert proc.returncode == 0, proc.stderr
    spoil, says = UNUSABLE[how]
    spoil(new / "pkg" / "b.py")
    for a, b, tree in ((old, new, "new"), (new, old, "old")):
        rc, result = diff_json(a, b, m)
        assert rc == 1
        items = {(i["kind"], i["id"]): i for i in result["items"]}
        cite = items[("citation", "bx")]
        assert (cite["status"], cite["message"]) == ("unresolved", f"{tree} tree: {says}")
        file = items[("file", "pkg/b.py")]
        if how == "not-utf8":  # its bytes are pinned, text or not: they differ
            assert file["status"] == "changed"
        else:
            assert (file["status"], file["message"]) == ("unresolved", f"{tree} tree: {says}")
        assert result["counts"]["gone"] == result["counts"]["added"] == 0
    if how == "fifo":  # pin, on the same tree, says the same thing
        pin = run_cli("pin", str(new), "-m", str(m))
        assert "is a FIFO; not opened" in pin.stdout
