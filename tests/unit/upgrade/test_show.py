"""``pp1audit show``: a citation (found where it is now) or a span, with numbered lines,
context, highlighting on request, and the citation's status."""

from __future__ import annotations

import os
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import REPO, run_cli
from lanerepo import SPECULATOR, WIRE, Lane, build_lane, dedent

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


EVIL_LINE = "x = 1  # \x1b[2J evil \u202e"


@pytest.fixture
def small(make_files: Callable[..., Path], tmp_path: Path) -> tuple[Path, Path]:
    """A tiny package, and a manifest citing line 2 of pkg/m.py (measured by init)."""
    tree = make_files({"pkg/__init__.py": "", "pkg/m.py": "a = 0\nx = 1\nb = 2\n"})
    manifest = tmp_path / "m.yaml"
    proc = run_cli("init", str(tree), "-p", "pkg", "-o", str(manifest), "--cite", "c=pkg/m.py:2")
    assert proc.returncode == 0, proc.stderr
    return tree, manifest


@pytest.mark.parametrize("color", ["never", "always"])
def test_show_prints_what_the_target_says_escaped(small: tuple[Path, Path], color: str) -> None:
    """A cited line holding ``ESC[2J`` (clear the screen) and a bidi override is data:
    shown escaped, in plain and colour output alike (rich's own colour codes are fine)."""
    tree, manifest = small
    (tree / "pkg" / "m.py").write_text(f"a = 0\n{EVIL_LINE}\nb = 2\n", encoding="utf-8")
    proc = run_cli("show", str(tree), "c", "-m", str(manifest), "--color", color)
    assert proc.returncode == 1, proc.stderr  # the anchor no longer holds
    assert "\x1b[2J" not in proc.stdout and "\u202e" not in proc.stdout
    assert "\\x1b[2J evil \\u202e" in proc.stdout
    if color == "never":
        assert "> 2 │ x = 1  # \\x1b[2J evil \\u202e" in proc.stdout.splitlines()
    span = run_cli("show", str(tree), "pkg/m.py:2", "-m", str(manifest), "--color", color)
    assert span.returncode == 0, span.stderr
    assert "\x1b[2J" not in span.stdout and "\u202e" not in span.stdout
    assert "\\x1b[2J evil \\u202e" in span.stdout


def test_show_a_cited_fifo_is_the_checks_error_exit_1(small: tuple[Path, Path]) -> None:
    """A cited file the target holds but that cannot be opened closes the gate in
    check (an ``error``): show says so for that citation, with the same exit code."""
    tree, manifest = small
    cited = tree / "pkg" / "m.py"
    cited.unlink()
    os.mkfifo(cited)
    check = run_cli("check", str(tree), "-m", str(manifest))
    assert check.returncode == 1
    assert "pkg/m.py is a FIFO; not opened" in check.stdout
    for color in ("never", "always"):
        proc = run_cli("show", str(tree), "c", "-m", str(manifest), "--color", color)
        assert proc.returncode == 1, proc.stderr
        assert proc.stderr == ""
        assert "citation c: error — pkg/m.py is a FIFO; not opened" in proc.stdout
    # Bad input from the user is still exit 2, nothing judged.
    for target, spec, m in ((tree, "nope", manifest), (tree, "c", tree / "absent.yaml"),
                            (tree.parent / "absent", "c", manifest)):
        assert run_cli("show", str(target), spec, "-m", str(m)).returncode == 2, (target, spec, m)


def test_show_a_citation_past_the_end_of_a_shrunk_file_exit_1(small: tuple[Path, Path]) -> None:
    tree, manifest = small
    (tree / "pkg" / "m.py").write_text("a = 0\n", encoding="utf-8")
    proc = run_cli("show", str(tree), "c", "-m", str(manifest))
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.splitlines()[-1] == "cannot show the lines: pkg/m.py has only 1 line"


@pytest.fixture(scope="module")
def lane(tmp_path_factory: pytest.TempPathFactory) -> Lane:
    return build_lane(tmp_path_factory.mktemp("showlane") / "lane")


def _lane_manifest(tmp_path: Path, commit: str) -> Path:
    """Two lane citations: one fixed by the commit, one found again by its anchor."""
    m = tmp_path / "lane.yaml"
    m.write_text(dedent(f"""
        pp1audit: 1
        target: {{package: pkg}}
        sources:
          lane:
            kind: git
            commit: {commit}
        citations:
          lane-hello:
            source: lane
            at: {WIRE}:10
          lane-refuses:
            source: lane
            at: {SPECULATOR}:19-20
            anchor:
              exact: |2
                        if method != "greedy":
                            raise NotImplementedError(
    """), encoding="utf-8")
    return m


def test_show_a_citation_of_a_git_source_with_repo(
    lane: Lane, make_files: Callable[..., Path], tmp_path: Path
) -> None:
    tree = make_files({"pkg/__init__.py": ""})
    m = _lane_manifest(tmp_path, lane.base)
    proc = run_cli("show", str(tree), "lane-hello", "-m", str(m), "--repo", f"lane={lane.path}",
                   "-C", "0")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        f"lane-hello: lane:{WIRE}:10-10",
        '> 10 │ HELLO = {"version": 3, "sample": SAMPLE_GREEDY}',
        f"citation lane-hello: pass — read at lane@{lane.base[:12]} (no anchor: the commit id "
        "fixes the content)",
    ]
    # The same repository named in a config file, as check takes it.
    config = tmp_path / "pp1audit.toml"
    config.write_text(f'[repos]\nlane = "{lane.path}"\n', encoding="utf-8")
    proc = run_cli("show", str(tree), "lane-refuses", "-m", str(m), "--config", str(config))
    assert proc.returncode == 0, proc.stderr
    marked = [x for x in proc.stdout.splitlines() if x.startswith(">")]
    assert [x.split("│ ", 1)[1] for x in marked] == [
        '        if method != "greedy":', "            raise NotImplementedError("]
    assert proc.stdout.splitlines()[-1].startswith("citation lane-refuses: pass")
    # At a commit the clone lacks, check fails the citation: show says why, exit 1.
    lacking = _lane_manifest(tmp_path, "deadbeef" * 5)
    proc = run_cli("show", str(tree), "lane-hello", "-m", str(lacking), "--repo",
                   f"lane={lane.path}")
    assert proc.returncode == 1, proc.stderr
    assert "commit deadbeefdead is not in the lane clone" in proc.stdout


def test_show_a_git_source_citation_without_its_repo_says_how_exit_2(
    lane: Lane, make_files: Callable[..., Path], tmp_path: Path
) -> None:
    tree = make_files({"pkg/__init__.py": ""})
    m = _lane_manifest(tmp_path, lane.base)
    proc = run_cli("show", str(tree), "lane-hello", "-m", str(m), cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == ""
    assert "git source 'lane' not given; pass --repo lane=PATH" in proc.stderr
    typo = run_cli("show", str(tree), "lane-hello", "-m", str(m), "--repo", f"lan={lane.path}")
    assert typo.returncode == 2 and "--repo lan:" in typo.stderr


def test_show_reads_the_lines_from_the_clone_the_checks_opened(
    lane: Lane, make_files: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The status and the lines come from one open clone: opening it a second time
    cost another git process and could read another state of the repository."""
    from pp1audit.manifest import load_manifest
    from pp1audit.sources import DirectorySource
    from pp1audit.sources import git as gitsource
    from pp1audit.sources.runconfig import ProvenanceOptions
    from pp1audit.upgrade.show import prepare

    opened: list[str] = []
    real = gitsource.Clone.__init__

    def counting(self: gitsource.Clone, name: str, path: Path, origin: str | None = None) -> None:
        opened.append(name)
        real(self, name, path, origin)

    monkeypatch.setattr(gitsource.Clone, "__init__", counting)
    tree = make_files({"pkg/__init__.py": ""})
    manifest = load_manifest(_lane_manifest(tmp_path, lane.base))
    with DirectorySource(tree) as source:
        shown = prepare("lane-hello", manifest, source, ProvenanceOptions(repos={"lane": lane.path}))
    assert shown.lines[9] == 'HELLO = {"version": 3, "sample": SAMPLE_GREEDY}'
    assert [c.status.value for c in shown.checks] == ["pass"]
    assert opened == ["lane"]
