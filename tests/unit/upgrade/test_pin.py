"""``pp1audit pin`` on a realistic hand-annotated manifest (tests/data/pp1-probe.yaml,
written by ``init`` over real vLLM 0.31.0, then commented by hand), carried to the
real vLLM 0.30.0 wheel (a rollback) and back, and onto trees whose cited text was
deleted or made ambiguous."""

from __future__ import annotations

import hashlib
import json
import shutil
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from conftest import REPO, file_lines, find_block, run_cli

from pp1audit.manifest import load_manifest

PROBE = REPO / "tests" / "data" / "pp1-probe.yaml"
RUNNER = "vllm/v1/worker/gpu/model_runner.py"
ACCEPT = ("--accept", "verify-signature")
"""The probe's one citation whose context differs between 0.31.0 and 0.30.0 (the
parameter after the cited lines of ``_verify``): carried both ways only when accepted."""


def pin_json(target: Path, manifest: Path, *extra: str) -> tuple[int, dict, str]:
    proc = run_cli("pin", str(target), "-m", str(manifest), "--format", "json", *extra)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(proc.stdout), proc.stderr


def rows(review: dict, outcome: str, kind: str = "citation") -> dict[str, dict]:
    return {i["id"]: i for i in review["items"] if i["outcome"] == outcome and i["kind"] == kind}


def test_rollback_to_030_moves_exactly_the_citations_whose_lines_moved(
    vllm_wheel_030: Path, tmp_path: Path
) -> None:
    out = tmp_path / "probe-030.yaml"
    # 0.30.0's _verify lacks the parameter after the cited lines: the span's suffix
    # changed, so pin holds it for a human (the signature cited is still there).
    rc, review, _ = pin_json(vllm_wheel_030, PROBE, "-o", str(out))
    assert rc == 1 and not out.exists()
    assert set(rows(review, "unresolved")) == {"verify-signature"}
    assert rows(review, "unresolved")["verify-signature"]["detail"] == (
        "vllm/v1/worker/gpu/spec_decode/rejection_sampler.py:237-246 moved to 168–177 (69 lines "
        "earlier), context changed: suffix differs there (its prefix matches): the text found may "
        "be a copy, or the code around it changed; --accept verify-signature carries it as found")
    rc, review, err = pin_json(vllm_wheel_030, PROBE, "-o", str(out), *ACCEPT)
    assert rc == 0 and f"wrote {out}" in err
    assert "+    at: vllm/v1/worker/gpu/model_runner.py:1559-1564\n" in review["manifest_diff"]
    # The test's own account of what moved: where each anchor's text is in 0.30.0.
    old = load_manifest(PROBE)
    expected_moved = {}
    for cid, cit in old.citations.items():
        assert cit.anchor is not None and cit.anchor.exact is not None
        starts = find_block(file_lines(vllm_wheel_030, cit.span.path), cit.anchor.exact)
        assert len(starts) == 1, cid
        if starts[0] != cit.span.start:
            expected_moved[cid] = starts[0]
    moved = rows(review, "moved")
    assert set(moved) == set(expected_moved) == {
        "runner-passes-draft-logits", "speculator-allocates-draft-logits",
        "verify-signature", "greedy-default",
    }
    assert {cid: r["new_lines"][0] for cid, r in moved.items()} == expected_moved
    assert set(rows(review, "unchanged")) == {"ratio-test", "one-hot-draft-logprob"}
    assert rows(review, "unresolved") == {}
    # A few against the 0.30.0 files themselves.
    new = load_manifest(out)
    runner = new.citations["runner-passes-draft-logits"].span
    assert (runner.start, runner.end) == (1559, 1564)
    lines = file_lines(vllm_wheel_030, RUNNER)
    assert lines[1562].strip() == "self.speculator.draft_logits,"
    greedy = new.citations["greedy-default"].span
    assert str(greedy) == "vllm/config/speculative.py:588"
    assert file_lines(vllm_wheel_030, greedy.path)[587].strip() == (
        'draft_sample_method: DraftSampleMethod = "greedy"')
    assert new.version == "0.30.0"
    assert rows(review, "changed", "version")["version"]["new"] == "0.30.0"
    assert len(rows(review, "changed", "file")) == 5
    # The carried manifest is a passing audit of 0.30.0, and no longer of 0.31.0.
    assert run_cli("check", str(vllm_wheel_030), "-m", str(out)).returncode == 0
    assert run_cli("check", str(vllm_wheel_030), "-m", str(PROBE)).returncode == 1


def test_text_review_table_and_manifest_diff(vllm_wheel_030: Path) -> None:
    proc = run_cli("pin", str(vllm_wheel_030), "-m", str(PROBE), *ACCEPT)
    assert proc.returncode == 0, proc.stderr
    assert "review only" in proc.stderr
    table, diff = proc.stdout.split("\n--- ", 1)
    line = next(x for x in table.splitlines() if "runner-passes-draft-logits" in x)
    assert line.split()[:2] == ["moved", "citation"] and line.endswith("1605–1610 → 1559–1564")
    assert "hash changed" in table and "0.31.0 → 0.30.0" in table
    assert table.splitlines()[-1].startswith(
        "summary: 2 unchanged, 4 moved, 6 changed, 0 stale, 0 unresolved")
    assert "-    at: vllm/v1/worker/gpu/model_runner.py:1605-1610" in diff
    assert "+    at: vllm/v1/worker/gpu/model_runner.py:1559-1564" in diff


def test_comments_and_key_order_survive_a_round_trip(
    vllm_wheel_030: Path, vllm_tree: Path, tmp_path: Path
) -> None:
    original = PROBE.read_text(encoding="utf-8")
    there, back = tmp_path / "030.yaml", tmp_path / "031.yaml"
    assert run_cli("pin", str(vllm_wheel_030), "-m", str(PROBE), "-o", str(there),
                   *ACCEPT).returncode == 0
    carried = there.read_text(encoding="utf-8")
    comments = [x.strip() for x in original.splitlines() if x.lstrip().startswith("# ")
                and not x.startswith("        ")]
    assert len(comments) == 8
    for c in comments:
        assert c in carried
    assert "version: 0.30.0   # re-pinned by `pp1audit pin`" in carried
    assert "one-hot-draft-logprob:  # without draft logits the draft logprob is zero" in carried

    def key_orders(text: str) -> list[list[str]]:
        data = yaml.safe_load(text)
        out = [list(data)] + [list(rec) for rec in data["citations"].values()]
        return out + [list(rec["anchor"]) for rec in data["citations"].values()]

    assert key_orders(carried) == key_orders(original)
    assert yaml.safe_load(carried)["citations"]["runner-passes-draft-logits"]["claim"] == (
        yaml.safe_load(original)["citations"]["runner-passes-draft-logits"]["claim"])
    # And back to 0.31.0: byte for byte the manifest we started from.
    assert run_cli("pin", str(vllm_tree), "-m", str(there), "-o", str(back),
                   *ACCEPT).returncode == 0
    assert back.read_text(encoding="utf-8") == original


def test_pin_on_the_same_tree_changes_nothing(vllm_tree: Path, tmp_path: Path) -> None:
    m = tmp_path / "m.yaml"
    shutil.copy(PROBE, m)
    rc, review, _ = pin_json(vllm_tree, m, "--in-place")
    assert rc == 0
    assert {i["outcome"] for i in review["items"]} == {"unchanged"}
    assert m.read_bytes() == PROBE.read_bytes()


def delete_runner_call(text: str) -> str:
    """The cited rejection-sampler call, gone: the text the citation quotes no longer exists."""
    old = (
        "            sampler_output = self.rejection_sampler(\n"
        "                logits,\n"
        "                input_batch,\n"
        "                # Draft logits are needed for probabilistic rejection sampling.\n"
        "                self.speculator.draft_logits,\n"
        "            )\n"
    )
    assert text.count(old) == 1
    new = "            sampler_output = self.rejection_sampler(logits, input_batch, None)\n"
    return text.replace(old, new)


def test_deleted_text_is_unresolved_and_nothing_is_written(
    tree_copy: Path, tmp_path: Path, edit: Callable[[Path, Callable[[str], str]], None]
) -> None:
    edit(tree_copy / RUNNER, delete_runner_call)
    m = tmp_path / "m.yaml"
    shutil.copy(PROBE, m)
    out = tmp_path / "new.yaml"
    for extra in (["--in-place"], ["-o", str(out)]):
        proc = run_cli("pin", str(tree_copy), "-m", str(m), *extra)
        assert proc.returncode == 1
        # The citation, and its file's new digest, which would prove the stale span.
        assert "not written: 2 unresolved" in proc.stderr
        line = next(x for x in proc.stdout.splitlines() if " runner-passes-draft-logits " in x)
        assert line.split()[:2] == ["UNRESOLVED", "citation"]
        assert "is no longer in" in line
        line = next(x for x in proc.stdout.splitlines() if f" {RUNNER} " in x)
        assert line.split()[:2] == ["UNRESOLVED", "file"]
        assert "citation 'runner-passes-draft-logits' is unresolved" in line
        assert m.read_bytes() == PROBE.read_bytes()
        assert not out.exists()


def test_allow_unresolved_writes_it_marked_and_check_fails_it(
    tree_copy: Path, vllm_tree: Path, tmp_path: Path,
    edit: Callable[[Path, Callable[[str], str]], None],
) -> None:
    edit(tree_copy / RUNNER, delete_runner_call)
    out = tmp_path / "new.yaml"
    rc, review, err = pin_json(tree_copy, PROBE, "-o", str(out), "--allow-unresolved")
    assert rc == 1 and "2 marked unresolved" in err
    assert set(rows(review, "unresolved")) == {"runner-passes-draft-logits"}
    assert set(rows(review, "unresolved", "file")) == {RUNNER}
    new = load_manifest(out)
    marked = new.citations["runner-passes-draft-logits"]
    assert marked.unresolved is not None and "is no longer in" in marked.unresolved
    # Never invented: the span and the anchor stay what the audit wrote.
    old = load_manifest(PROBE).citations["runner-passes-draft-logits"]
    assert marked.span == old.span and marked.anchor == old.anchor
    assert list(yaml.safe_load(out.read_text())["citations"]["runner-passes-draft-logits"]) == [
        "title", "claim", "at", "unresolved", "anchor"]
    # The file keeps its old digest (the new one would prove the stale span), the
    # other files moved on; the citation fails marked...
    assert new.files[RUNNER] == load_manifest(PROBE).files[RUNNER]
    assert f"{RUNNER}: {new.files[RUNNER]}  # pp1audit pin: UNRESOLVED: " in out.read_text()
    proc = run_cli("check", str(tree_copy), "-m", str(out), "--format", "json")
    assert proc.returncode == 1
    bad = {c["id"]: c for c in json.loads(proc.stdout)["checks"] if c["status"] != "pass"}
    assert list(bad) == [f"file:{RUNNER}", "runner-passes-draft-logits"]
    assert bad["runner-passes-draft-logits"]["status"] == "fail"
    assert "marked unresolved by pin" in bad["runner-passes-draft-logits"]["message"]
    # ...everywhere, even where its text is intact: a marked manifest never passes.
    assert run_cli("check", str(vllm_tree), "-m", str(out)).returncode == 1
    # A second pin keeps it unresolved rather than quietly resolving it.
    rc, review, _ = pin_json(vllm_tree, out)
    assert rc == 1 and set(rows(review, "unresolved")) == {"runner-passes-draft-logits"}


def test_an_ambiguous_relocation_is_unresolved(make_files: Callable[..., Path],
                                               tmp_path: Path) -> None:
    root = make_files({"pkg/__init__.py": "", "pkg/a.py": "x = 0\nfire()\ny = 1\n"})
    m = tmp_path / "m.yaml"
    init = run_cli("init", str(root), "-p", "pkg", "--context", "0", "--cite", "fire=pkg/a.py:2",
                   "-o", str(m))
    assert init.returncode == 0, init.stderr
    (root / "pkg" / "a.py").write_text("a = 1\nb = 2\nc = 3\nfire()\nd = 4\nfire()\n")
    rc, review, _ = pin_json(root, m, "--in-place")
    assert rc == 1
    item = rows(review, "unresolved")["fire"]
    assert "2 equally good places" in item["detail"]
    # check would call it drift to the nearest; pin refuses to pick one for the audit.
    proc = run_cli("check", str(root), "-m", str(m), "--format", "json")
    cite = next(c for c in json.loads(proc.stdout)["checks"] if c["id"] == "fire")
    assert cite["status"] == "drift" and cite["found_lines"] == [4, 4]


@pytest.mark.parametrize("args", [
    ["-o", "x.yaml", "--in-place"],
    ["--format", "xml"],
])
def test_usage_errors_exit_2(vllm_tree: Path, tmp_path: Path, args: list[str]) -> None:
    proc = run_cli("pin", str(vllm_tree), "-m", str(PROBE), *args, cwd=tmp_path)
    assert proc.returncode == 2
    assert not (tmp_path / "x.yaml").exists()


def test_unusable_target_exit_2(tmp_path: Path) -> None:
    proc = run_cli("pin", str(tmp_path / "missing"), "-m", str(PROBE))
    assert proc.returncode == 2 and "no such file" in proc.stderr


def test_a_gone_file_keeps_its_old_digest_marked(make_files: Callable[..., Path],
                                                 tmp_path: Path) -> None:
    root = make_files({"pkg/__init__.py": "", "pkg/a.py": "a = 1\n", "pkg/b.py": "b = 2\n"})
    m = tmp_path / "m.yaml"
    proc = run_cli("init", str(root), "-p", "pkg", "--cite", "a=pkg/a.py:1", "--cite",
                   "b=pkg/b.py:1", "-o", str(m))
    assert proc.returncode == 0, proc.stderr
    before = m.read_text()
    (root / "pkg" / "b.py").unlink()
    rc, review, _ = pin_json(root, m, "--in-place")
    assert rc == 1 and m.read_text() == before
    assert {(i["kind"], i["id"]) for i in review["items"] if i["outcome"] == "unresolved"} == {
        ("file", "pkg/b.py"), ("citation", "b")}
    rc, _, _ = pin_json(root, m, "--in-place", "--allow-unresolved")
    assert rc == 1
    after = m.read_text()
    old_digest = load_manifest(tmp_path / "m.yaml").files["pkg/b.py"]
    assert f"pkg/b.py: {old_digest}  # pp1audit pin: UNRESOLVED: missing from the target" in after
    assert run_cli("check", str(root), "-m", str(m)).returncode == 1
    # The file comes back and a human removes the citation's mark: the next pin
    # resolves everything and takes its own comment off the file pin.
    (root / "pkg" / "b.py").write_text("b = 2\n")
    m.write_text("".join(x for x in after.splitlines(keepends=True)
                         if not x.lstrip().startswith("unresolved:")))
    rc, review, err = pin_json(root, m, "--in-place")
    assert rc == 0, err
    assert "UNRESOLVED" not in m.read_text()
    assert f"pkg/b.py: {old_digest}\n" in m.read_text()
    assert run_cli("check", str(root), "-m", str(m)).returncode == 0


def test_whitespace_only_change_is_requoted_and_version_loss_is_unresolved(
    make_files: Callable[..., Path], tmp_path: Path
) -> None:
    root = make_files({
        "pkg/__init__.py": "",
        "pkg/_version.py": "__version__ = '1.0'\n",
        "pkg/a.py": "def f():\n    return  g(1,\n             2)\n",
    })
    m = tmp_path / "m.yaml"
    proc = run_cli("init", str(root), "-p", "pkg", "--cite", "ret=pkg/a.py:2-3", "-o", str(m))
    assert proc.returncode == 0, proc.stderr
    (root / "pkg" / "a.py").write_text("def f():\n    return g(1,\n        2)\n")
    out = tmp_path / "out.yaml"
    rc, review, _ = pin_json(root, m, "-o", str(out))
    assert rc == 0
    assert rows(review, "changed")["ret"]["detail"].startswith("same place; anchor text re-quoted")
    anchor = load_manifest(out).citations["ret"].anchor
    assert anchor is not None and anchor.exact == ["    return g(1,", "        2)"]
    assert run_cli("check", str(root), "-m", str(out)).returncode == 0
    # A tree that no longer says its version: the old pin is kept, marked, and fails.
    (root / "pkg" / "_version.py").unlink()
    rc, review, _ = pin_json(root, out, "--in-place", "--allow-unresolved")
    assert rc == 1
    assert rows(review, "unresolved", "version")["version"]["old"] == "1.0"
    assert "version: '1.0'  # pp1audit pin: UNRESOLVED: " in out.read_text()
    assert run_cli("check", str(root), "-m", str(out)).returncode == 1


def test_a_span_moved_into_another_block_is_said_to_be_reindented(
    make_files: Callable[..., Path], tmp_path: Path
) -> None:
    """``check`` calls a span re-indented under a new ``if False:`` drift (its block
    changed): the review table must say that too, not "whitespace differs", and
    pin carries it only when told to (``--accept``): the text is the same, the
    meaning may not be."""
    root = make_files({
        "pkg/__init__.py": "",
        "pkg/_version.py": "__version__ = '1.0'\n",
        "pkg/a.py": "def f():\n    x = 1\n    return g(x)\n",
    })
    m = tmp_path / "m.yaml"
    proc = run_cli("init", str(root), "-p", "pkg", "--cite", "ret=pkg/a.py:3-3", "-o", str(m))
    assert proc.returncode == 0, proc.stderr
    (root / "pkg" / "a.py").write_text("def f():\n    if False:\n        return g(x)\n")
    assert run_cli("check", str(root), "-m", str(m)).returncode == 1
    rc, review, _ = pin_json(root, m, "-o", str(tmp_path / "out.yaml"))
    assert rc == 1 and not (tmp_path / "out.yaml").exists()
    assert rows(review, "unresolved")["ret"]["detail"] == (
        "pkg/a.py:3 still holds the anchored text, re-indented by +4 columns: it may sit in "
        "another block now; re-pin after review; --accept ret carries it as found")
    rc, review, _ = pin_json(root, m, "-o", str(tmp_path / "out.yaml"), "--accept", "ret")
    assert rc == 0
    assert rows(review, "changed")["ret"]["detail"] == (
        "same place; anchor text re-quoted (re-indented by +4 columns: it may sit in another "
        "block now; re-pin after review); carried as found (--accept); prefix changed, re-quoted")


def test_a_crlf_manifest_stays_crlf(vllm_wheel_030: Path, tmp_path: Path) -> None:
    m = tmp_path / "crlf.yaml"
    m.write_bytes(PROBE.read_bytes().replace(b"\n", b"\r\n"))
    out = tmp_path / "out.yaml"
    assert run_cli("pin", str(vllm_wheel_030), "-m", str(m), "-o", str(out),
                   *ACCEPT).returncode == 0
    data = out.read_bytes()
    assert data.count(b"\r\n") == data.count(b"\n") > 100
    assert run_cli("check", str(vllm_wheel_030), "-m", str(out)).returncode == 0


def test_an_invariant_anchor_matching_in_several_places_is_unresolved(
    make_files: Callable[..., Path], tmp_path: Path
) -> None:
    root = make_files({"pkg/__init__.py": "", "pkg/a.py": "def g():\n    foo(1)\n    foo(2)\n"})
    m = tmp_path / "m.yaml"
    m.write_text(
        "pp1audit: 1\ntarget: {package: pkg}\n"
        "invariants:\n  calls-foo:\n    file: pkg/a.py\n    evidence: {rule: {pattern: foo($X)}}\n"
        "citations:\n  first-call:\n    at: pkg/a.py:2\n    anchor: {invariant: calls-foo}\n"
    )
    assert run_cli("check", str(root), "-m", str(m)).returncode == 0
    (root / "pkg" / "a.py").write_text("# moved\n\ndef g():\n    foo(1)\n    foo(2)\n")
    rc, review, _ = pin_json(root, m)
    assert rc == 1
    assert "matches in 2 places" in rows(review, "unresolved")["first-call"]["detail"]
    # With one match left, the move is certain and carried.
    (root / "pkg" / "a.py").write_text("# moved\n\ndef g():\n    foo(1)\n")
    rc, review, _ = pin_json(root, m, "--in-place")
    assert rc == 0 and rows(review, "moved")["first-call"]["new_lines"] == [4, 4]
    assert "at: pkg/a.py:4\n" in m.read_text()


VERIFY = "vllm/v1/worker/gpu/spec_decode/rejection_sampler.py"


def test_an_unresolved_citation_keeps_its_files_old_digest(
    vllm_tree: Path, vllm_wheel_030: Path, tmp_path: Path
) -> None:
    """0.31.0's _verify (lines 237-279) does not exist in 0.30.0. Pinning 0.30.0's digest
    anyway would let the stale span pass by digest once the mark is removed."""
    m, out = tmp_path / "m.yaml", tmp_path / "030.yaml"
    proc = run_cli("init", str(vllm_tree), "-p", "vllm", "--cite", f"verify={VERIFY}:237-279",
                   "-o", str(m))
    assert proc.returncode == 0, proc.stderr
    anchor = load_manifest(m).citations["verify"].anchor
    assert anchor is not None and anchor.exact is not None
    assert find_block(file_lines(vllm_wheel_030, VERIFY), anchor.exact) == []  # the test's look
    rc, review, _ = pin_json(vllm_wheel_030, m, "-o", str(out), "--allow-unresolved")
    assert rc == 1
    assert set(rows(review, "unresolved")) == {"verify"}
    held = rows(review, "unresolved", "file")[VERIFY]
    assert held["old"] == load_manifest(m).files[VERIFY] and held["new"] is None
    assert "citation 'verify' is unresolved; the old digest is kept" in held["detail"]
    assert load_manifest(out).files[VERIFY] == load_manifest(m).files[VERIFY]
    # A human removes the mark without fixing the span: check still fails it.
    cleared = tmp_path / "cleared.yaml"
    cleared.write_text("".join(x for x in out.read_text().splitlines(keepends=True)
                               if not x.startswith("    unresolved:")))
    proc = run_cli("check", str(vllm_wheel_030), "-m", str(cleared), "--format", "json")
    assert proc.returncode == 1
    verdicts = {c["id"]: c["status"] for c in json.loads(proc.stdout)["checks"]}
    assert verdicts["verify"] == "fail" and verdicts[f"file:{VERIFY}"] == "fail"


def test_a_span_proven_only_by_a_digest_is_not_requoted_from_other_code(
    vllm_tree: Path, vllm_wheel_030: Path, tmp_path: Path
) -> None:
    """A manifest whose digest was pinned while its span was stale (as an earlier pin
    --allow-unresolved wrote them): pin must not re-quote the anchor from other code."""
    m = tmp_path / "m.yaml"
    proc = run_cli("init", str(vllm_tree), "-p", "vllm", "--cite", f"verify={VERIFY}:237-279",
                   "-o", str(m))
    assert proc.returncode == 0, proc.stderr
    with zipfile.ZipFile(vllm_wheel_030) as zf:
        digest_030 = hashlib.sha256(zf.read(VERIFY)).hexdigest()
    old_digest = load_manifest(m).files[VERIFY]
    m.write_text(m.read_text().replace(old_digest, digest_030).replace("0.31.0", "0.30.0"))
    # check passes it by the digest alone; the lines hold other code.
    assert run_cli("check", str(vllm_wheel_030), "-m", str(m)).returncode == 0
    before = m.read_bytes()
    rc, review, _ = pin_json(vllm_wheel_030, m, "--in-place")
    assert rc == 1 and m.read_bytes() == before
    item = rows(review, "unresolved")["verify"]
    assert item["detail"].startswith("passes only by its file's pinned SHA-256; by its anchor: ")
    assert "is no longer in" in item["detail"]
    assert rows(review, "changed") == {}
    # Written marked, the anchor is still the audit's quotation, and check fails it.
    rc, _, _ = pin_json(vllm_wheel_030, m, "--in-place", "--allow-unresolved")
    cit = load_manifest(m).citations["verify"]
    assert rc == 1 and cit.unresolved is not None
    assert cit.anchor is not None and cit.anchor.exact == file_lines(vllm_tree, VERIFY)[236:279]
    assert run_cli("check", str(vllm_wheel_030), "-m", str(m)).returncode == 1


def test_a_pinned_tree_digest_is_carried(vllm_tree: Path, vllm_wheel_030: Path,
                                         tmp_path: Path) -> None:
    proc = run_cli("check", str(vllm_tree), "-m", str(PROBE), "--record", "--format", "json")
    tree_031 = next(c["actual"] for c in json.loads(proc.stdout)["checks"] if c["id"] == "tree")
    m, out = tmp_path / "m.yaml", tmp_path / "030.yaml"
    m.write_text(f"pp1audit: 1\ntarget:\n  package: vllm\n  version: 0.31.0\n"
                 f"  tree_sha256: {tree_031}   # the whole package\n")
    assert run_cli("check", str(vllm_tree), "-m", str(m)).returncode == 0
    rc, review, _ = pin_json(vllm_wheel_030, m, "-o", str(out))
    assert rc == 0
    item = next(i for i in review["items"] if i["id"] == "tree")
    assert item["outcome"] == "changed" and item["old"] == tree_031 and item["new"] != tree_031
    assert f"tree_sha256: {item['new']}   # the whole package\n" in out.read_text()
    proc = run_cli("check", str(vllm_wheel_030), "-m", str(out), "--format", "json")
    assert proc.returncode == 0, proc.stdout
    tree = next(c for c in json.loads(proc.stdout)["checks"] if c["id"] == "tree")
    assert tree["status"] == "pass" and tree["actual"] == item["new"]


def test_requoted_context_a_literal_block_cannot_hold_is_escaped(
    make_files: Callable[..., Path], tmp_path: Path
) -> None:
    root = make_files({"pkg/__init__.py": "", "pkg/a.py": "a = 1\nb = 2\nfire()\n"})
    m = tmp_path / "m.yaml"
    proc = run_cli("init", str(root), "-p", "pkg", "--context", "1", "--cite", "fire=pkg/a.py:3",
                   "-o", str(m))
    assert proc.returncode == 0, proc.stderr
    assert "prefix: |" in m.read_text()
    # A form feed (a page break, legal in Python) now starts the line before the call.
    (root / "pkg" / "a.py").write_text("a = 1\n\x0cb = 3\nfire()\n")
    rc, _, err = pin_json(root, m, "--in-place", "--accept", "fire")  # its prefix changed
    assert rc == 0, err
    assert 'prefix: "\\fb = 3\\n"' in m.read_text()
    anchor = load_manifest(m).citations["fire"].anchor
    assert anchor is not None and anchor.prefix == ["\x0cb = 3"]
    assert run_cli("check", str(root), "-m", str(m)).returncode == 0


def test_in_place_needs_an_explicit_manifest(vllm_tree: Path) -> None:
    shipped = REPO / "manifests" / "pp1.yaml"
    before = shipped.read_bytes()
    proc = run_cli("pin", str(vllm_tree), "--in-place")
    assert proc.returncode == 2
    assert "--in-place needs -m" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert shipped.read_bytes() == before


def test_a_byte_order_mark_is_kept(vllm_wheel_030: Path, tmp_path: Path) -> None:
    m = tmp_path / "bom.yaml"
    m.write_bytes(b"\xef\xbb\xbf" + PROBE.read_bytes())
    out = tmp_path / "out.yaml"
    assert run_cli("pin", str(vllm_wheel_030), "-m", str(m), "-o", str(out),
                   *ACCEPT).returncode == 0
    assert out.read_bytes().startswith(b"\xef\xbb\xbf# PP1 probe")
    assert run_cli("check", str(vllm_wheel_030), "-m", str(out)).returncode == 0


def test_a_failing_record_check_is_not_carried_and_pin_says_so(tmp_path: Path) -> None:
    """RECORD failures are the tree disagreeing with itself: no pin can carry
    them, so pin names them and exits 1 (the manifest it writes would fail)."""
    from recordtrees import install

    root = install(tmp_path / "site", compile_pyc=False)  # no pyc: one finding, by RECORD
    manifest = tmp_path / "m.yaml"
    manifest.write_text("pp1audit: 1\ntarget: {package: pkg, record: true}\n", encoding="utf-8")
    out = tmp_path / "new.yaml"
    clean = run_cli("pin", str(root), "-m", str(manifest), "-o", str(out),
                    env={"PP1AUDIT_NO_CACHE": "1"})
    assert clean.returncode == 0, clean.stdout + clean.stderr
    (root / "pkg" / "mod.py").write_text("def answer():\n    return 43\n", encoding="utf-8")
    proc = run_cli("pin", str(root), "-m", str(manifest), "-o", str(out), "--format", "json",
                   env={"PP1AUDIT_NO_CACHE": "1"})
    assert proc.returncode == 1, proc.stderr
    review = json.loads(proc.stdout)
    fails = [i for i in review["items"] if i["outcome"] == "target fails"]
    assert [i["id"] for i in fails] == ["record:pkg/mod.py"]
    assert review["counts"]["target fails"] == 1
    assert "1 check(s) of the target itself fail" in proc.stderr
    assert run_cli("check", str(root), "-m", str(out), env={"PP1AUDIT_NO_CACHE": "1"}).returncode == 1
