"""Report evidence names the checks a run really has: one id scheme (``audit.check_ids``)
for the manifest's validation and for the report's evidence lines.

A small installed distribution, a real git source (gitpython) and a donor patch in
the remote cache give a run with every kind of check but invariants: the RECORD
family (``target.record: true``), a git commit, file pin, ref and contains/lacks
rule, a remote pin, a donor with its hunks. Evidence naming them renders what was
measured; evidence no check of the manifest can have is a manifest error at its
own line and column.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import re
from pathlib import Path

import git
import pytest
import yaml
from conftest import run_cli
from lanerepo import _commit, dedent

from pp1audit.audit import check_ids
from pp1audit.patches import NOT_APPLIED, patch_status
from pp1audit.sources import DirectorySource
from pp1audit.store import FileStore

PKG = {
    "pkg/__init__.py": "from pkg.mod import answer\n",
    "pkg/_version.py": '__version__ = "1.0"\n',
    "pkg/mod.py": "def answer():\n    return 42\n",
}
SPEC = "spark/speculator.py"
SPEC_TEXT = "GREEDY_ONLY = True\n"
# A donor patch of pkg/mod.py (not applied in the site) with one hunk outside pkg/.
PATCH = (b"--- a/pkg/mod.py\n+++ b/pkg/mod.py\n@@ -1,2 +1,2 @@\n def answer():\n"
         b"-    return 42\n+    return 43\n"
         b"--- a/docs/notes.md\n+++ b/docs/notes.md\n@@ -1 +1 @@\n-old\n+new\n")
REMOTE = b"a remote pin's bytes\n"


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def install(site: Path) -> Path:
    """``pkg`` laid out as pip leaves it (no bytecode): its files and a RECORD of them."""
    rows = []
    for rel, text in {**PKG, "pkg-1.0.dist-info/METADATA": "Name: pkg\nVersion: 1.0\n"}.items():
        p = site / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
        digest = base64.urlsafe_b64encode(hashlib.sha256(p.read_bytes()).digest()).rstrip(b"=")
        rows.append([rel, f"sha256={digest.decode()}", str(p.stat().st_size)])
    rows.append(["pkg-1.0.dist-info/RECORD", "", ""])
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    (site / "pkg-1.0.dist-info" / "RECORD").write_text(buf.getvalue(), encoding="utf-8")
    return site


def lane_repo(root: Path) -> str:
    """A one-commit git repository holding SPEC, tagged v1; returns the commit."""
    repo = git.Repo.init(root, initial_branch="main")
    commit = _commit(repo, root, {SPEC: SPEC_TEXT}, "base", 1_790_000_000)
    repo.create_tag("v1", ref=commit)
    repo.close()
    return commit


def cache(root: Path) -> Path:
    """The remote cache holding the donor patch and the remote pin, by digest."""
    for data in (PATCH, REMOTE):
        (root / "sha256").mkdir(parents=True, exist_ok=True)
        (root / "sha256" / sha(data)).write_bytes(data)
    return root


def manifest_text(commit: str, evidence: list[str], record: bool = True) -> str:
    """The manifest: every pin kind but invariants, one report block per evidence list."""
    mod = sha(PKG["pkg/mod.py"].encode())
    blocks = "".join(f"        - text: Block {i}.\n          evidence: [{ev}]\n"
                     for i, ev in enumerate(evidence))
    return dedent(f"""
        pp1audit: 1
        target:
          package: pkg
          version: "1.0"
          record: {"true" if record else "false"}
        files:
          pkg/mod.py: {mod}
        citations:
          answer:
            at: pkg/mod.py:1-2
            claim: The answer is 42.
        sources:
          lane:
            kind: git
            commit: {commit}
            files:
              {SPEC}: {sha(SPEC_TEXT.encode())}
            refs:
              v1: {{commit: {commit}}}
            contains:
              has-speculator: {{path: {SPEC}}}
            lacks:
              no-offload: {{path: spark/offload.py}}
        remotes:
          r: {{url: 'https://example.invalid/r.txt', sha256: '{sha(REMOTE)}'}}
        donors:
          d: {{url: 'https://example.invalid/d.patch', sha256: '{sha(PATCH)}', expect: not-applied}}
        report:
          sections:
            - blocks:
    """) + blocks


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Path | str]:
    return {"site": install(tmp_path / "site"), "commit": lane_repo(tmp_path / "lane"),
            "lane": tmp_path / "lane", "cache": cache(tmp_path / "cache"), "m": tmp_path / "m.yaml"}


def run(world: dict[str, Path | str], command: str, *extra: str) -> tuple[int, str, str]:
    proc = run_cli(command, str(world["site"]), "-m", str(world["m"]),
                   "--repo", f"lane={world['lane']}", "--cache-dir", str(world["cache"]), *extra,
                   env={"PP1AUDIT_NO_CACHE": "1", "PP1AUDIT_CACHE_DIR": str(world["cache"])})
    return proc.returncode, proc.stdout, proc.stderr


EVIDENCE = ["record", "tree", "startup", "bytecode", "shadowing", "d:hunks", "d",
            "lane:commit", "lane:ref:v1", "has-speculator", "no-offload", "lane",
            f"file:lane:{SPEC}", "r", "version", "file:pkg/mod.py", "answer"]


def test_every_check_id_of_a_run_can_be_named_and_every_nameable_id_is_run(
        world: dict[str, Path | str]) -> None:
    """The scheme and the checks agree both ways: no emitted check is out of reach of
    evidence, and no id evidence may name is one the run does not have."""
    text = manifest_text(str(world["commit"]), ["version"])
    Path(world["m"]).write_text(text, encoding="utf-8")
    rc, out, err = run(world, "check", "--format", "json")
    assert rc == 0, err
    emitted = [c["id"] for c in json.loads(out)["checks"]]
    ids = check_ids(yaml.safe_load(text))
    names = ids.ids | ids.groups | set(ids.aliases)
    assert [c for c in emitted if not any(ids.stands_for(c, n) for n in names)] == []
    assert sorted(ids.ids - set(emitted)) == []
    assert {"record", "tree", "startup", "bytecode", "shadowing", "d:hunks", "lane:commit",
            "lane:ref:v1", "lane:has-speculator", "lane:no-offload", f"file:lane:{SPEC}"} <= ids.ids


def test_report_renders_the_measured_status_of_every_kind_of_check(
        world: dict[str, Path | str]) -> None:
    Path(world["m"]).write_text(manifest_text(str(world["commit"]), EVIDENCE), encoding="utf-8")
    rc, out, err = run(world, "report")
    assert rc == 0, err
    assert "**not checked**" not in out
    cited = out.split("## Measured")[0]
    # each block's evidence line(s): status, kind, check id
    measured = {cid: status for status, cid in re.findall(r"^- \*\*(\w+)\*\* \w+ `([^`]+)`", cited, re.M)}
    for cid in ("record", "tree", "startup", "bytecode", "shadowing", "d:hunks", "d", "lane:commit",
                "lane:ref:v1", "lane:has-speculator", "lane:no-offload", f"file:lane:{SPEC}", "r",
                "version", "file:pkg/mod.py", "answer"):
        assert measured.get(cid) == "pass", (cid, out)
    hunks = next(line for line in out.splitlines() if "`d:hunks`" in line)
    assert "all 1 hunk(s) not applied; 1 hunk(s) outside pkg/ not checked" in hunks
    # a family name brings its sub-checks: the donor's one judged hunk
    assert measured.get("d:pkg/mod.py#1") == "pass"


@pytest.mark.parametrize(("evidence", "message"), [
    ("nope", "unknown evidence id 'nope'"),
    ("lane:nope", "unknown evidence id 'lane:nope'"),
    ("d:pkg/mod.py#1", "unknown evidence id 'd:pkg/mod.py#1'"),  # named by data: reach it by 'd'
    ("record", "evidence id 'record': this manifest runs no such check (it needs target.record: true)"),
    ("tree", "evidence id 'tree': this manifest runs no such check "
             "(it needs target.record: true or a pinned target.tree_sha256)"),
])
def test_evidence_no_check_can_have_is_an_error_at_its_place(
        world: dict[str, Path | str], evidence: str, message: str) -> None:
    text = manifest_text(str(world["commit"]), ["version", f"answer, {evidence}"], record=False)
    Path(world["m"]).write_text(text, encoding="utf-8")
    line = text.splitlines().index(f"          evidence: [answer, {evidence}]") + 1
    rc, out, err = run(world, "report")
    assert rc == 2 and out == ""
    assert err == (f"pp1audit: error: {world['m']}:{line}:30: {message} "
                   "(at report.sections[0].blocks[1].evidence[1])\n")


def test_a_pin_turns_on_the_ids_it_adds() -> None:
    """Without target.record a tree pin runs 'tree', a startup pin 'tree' and 'startup'."""
    tree = check_ids({"target": {"package": "p", "tree_sha256": "0" * 64}})
    startup = check_ids({"target": {"package": "p", "startup_sha256": "0" * 64}})
    assert tree.names("tree") and not tree.names("startup") and not tree.names("record")
    assert startup.names("tree") and startup.names("startup") and not startup.names("bytecode")
    assert not check_ids({"target": {"package": "p"}}).names("version")


def test_production_and_tests_judge_a_patch_with_one_function(tmp_path: Path) -> None:
    """``patch_status`` is what the donor check runs: hunks outside the tree's scope are
    counted, not judged as missing files."""
    site = install(tmp_path / "site")
    judged = patch_status(PATCH, FileStore(DirectorySource(site)), within="pkg/")
    assert [(s.label, s.status) for s in judged.hunks] == [("pkg/mod.py#1", NOT_APPLIED)]
    assert judged.outside == 1
    everything = patch_status(PATCH, FileStore(DirectorySource(site)))
    assert [s.status for s in everything.hunks] == [NOT_APPLIED, "conflict"]
    assert everything.outside == 0
