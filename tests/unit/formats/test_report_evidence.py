"""Report evidence names the checks a run really has: one id scheme (``audit.check_ids``)
for the manifest's validation and for the report's evidence lines, and ids that are
the manifest's alone (``audit.id_clashes``).

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
from conftest import REPO, run_cli
from lanerepo import _commit, dedent

from pp1audit.checks.patches import patch_status
from pp1audit.checks.patchmatch import NOT_APPLIED
from pp1audit.errors import ManifestError
from pp1audit.manifest import parse
from pp1audit.manifest.ids import _FOUND_HEADS, check_ids
from pp1audit.result import Check, Status
from pp1audit.sources import DirectorySource
from pp1audit.sources.store import FileStore

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


def manifest_text(commit: str, evidence: list[str], record: bool = True, version: bool = True) -> str:
    """The manifest: every pin kind but invariants, one report block per evidence list."""
    mod = sha(PKG["pkg/mod.py"].encode())
    blocks = "".join(f"        - text: Block {i}.\n          evidence: [{ev}]\n"
                     for i, ev in enumerate(evidence))
    return dedent(f"""
        pp1audit: 1
        target:
          package: pkg
          {'version: "1.0"' if version else ""}
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
    emitted = [Check(id=c["id"], kind=c["kind"], status=Status(c["status"]), message="")
               for c in json.loads(out)["checks"]]
    ids = check_ids(yaml.safe_load(text))
    names = ids.ids | ids.groups | set(ids.aliases)
    assert [c.id for c in emitted if not any(ids.stands_for(c, n) for n in names)] == []
    assert sorted(ids.ids - {c.id for c in emitted}) == []
    assert {"record", "tree", "startup", "bytecode", "shadowing", "d:hunks", "lane:commit",
            "lane:ref:v1", "lane:has-speculator", "lane:no-offload", f"file:lane:{SPEC}"} <= ids.ids


def test_report_renders_the_measured_status_of_every_kind_of_check(
        world: dict[str, Path | str]) -> None:
    Path(world["m"]).write_text(manifest_text(str(world["commit"]), EVIDENCE), encoding="utf-8")
    rc, out, err = run(world, "report")
    assert rc == 0, err
    assert "**not checked**" not in out
    cited = out.split("## Evidence")[1].split("### Not cited by a claim")[0]
    # each claim's evidence line(s): status, check id (under its file, if it has one)
    measured = {cid: status for status, cid in re.findall(r"^ *- \*\*(\w+)\*\* `([^`]+)`", cited, re.M)}
    for cid in ("record", "tree", "startup", "bytecode", "shadowing", "d:hunks", "d", "lane:commit",
                "lane:ref:v1", "lane:has-speculator", "lane:no-offload", f"file:lane:{SPEC}", "r",
                "version", "file:pkg/mod.py", "answer"):
        assert measured.get(cid) == "pass", (cid, out)
    hunks = next(line for line in out.splitlines() if "`d:hunks`" in line)
    assert "all 1 hunk(s) not applied; 1 hunk(s) outside pkg/ not checked" in hunks
    # a family name brings its sub-checks: the donor's one judged hunk
    assert measured.get("d:pkg/mod.py#1") == "pass"


FOUND = "the run names such a check after what it finds, so evidence names its family"


@pytest.mark.parametrize(("evidence", "message"), [
    ("nope", "unknown evidence id 'nope'"),
    ("lane:nope", "unknown evidence id 'lane:nope'"),
    # named by data: reached by the family, which the message names
    ("d:pkg/mod.py#1", f"evidence id 'd:pkg/mod.py#1': {FOUND} 'd', which shows it"),
    ("pth:evil.pth", f"evidence id 'pth:evil.pth': {FOUND} 'shadowing', which shows it "
                     "(and 'shadowing' needs target.record: true)"),
    ("record", "evidence id 'record': this manifest runs no such check (it needs target.record: true)"),
    ("tree", "evidence id 'tree': this manifest runs no such check "
             "(it needs target.record: true or a pinned target.tree_sha256)"),
    ("version", "evidence id 'version': this manifest runs no such check (it needs target.version)"),
])
def test_evidence_no_check_can_have_is_an_error_at_its_place(
        world: dict[str, Path | str], evidence: str, message: str) -> None:
    text = manifest_text(str(world["commit"]), ["answer", f"answer, {evidence}"], record=False,
                         version=False)
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


def small_manifest(target: str, evidence: str, extra: str = "", files: str = "") -> str:
    """A manifest of ``pkg`` with one report block citing ``evidence``; ``target``:
    a line added under ``target:``, ``files`` one under ``files:``, ``extra``: sections
    added before the report."""
    return dedent(f"""
        pp1audit: 1
        target:
          package: pkg
          {target}
        files:
          pkg/mod.py: {sha(PKG["pkg/mod.py"].encode())}
          {files}
    """) + extra + dedent(f"""
        report:
          sections:
            - blocks:
                - text: The claim.
                  evidence: [{evidence}]
    """)


def report_of(tmp_path: Path, site: Path, text: str) -> tuple[int, str, str]:
    (tmp_path / "m.yaml").write_text(text, encoding="utf-8")
    proc = run_cli("report", str(site), "-m", str(tmp_path / "m.yaml"), env={"PP1AUDIT_NO_CACHE": "1"})
    return proc.returncode, proc.stdout, proc.stderr


def test_shadowing_evidence_shows_the_findings_that_fail_it(tmp_path: Path) -> None:
    """The shadowing check's findings are ``pth:…`` (``shadow:…``, ``plugin:…``…):
    evidence ``shadowing`` shows them, not only the summary, which passes."""
    site = install(tmp_path / "site")
    (site / "evil.pth").write_text("import evil\n", encoding="utf-8")
    (site / "evil.py").write_text("print('hi')\n", encoding="utf-8")
    rc, out, err = report_of(tmp_path, site, small_manifest("record: true", "shadowing"))
    assert rc == 1, err
    cited, measured = out.split("### Claim 1")[1].split("### Not cited by a claim")
    assert re.search(r"^- \*\*pass\*\* `shadowing`: 1 import-shadowing problem", cited, re.M)
    assert re.search(r"^- `evil.pth`\n  - \*\*fail\*\* `pth:evil.pth`: evil.pth executes code", cited, re.M)
    assert "↳ **broken**: `pth:evil.pth`" in out  # the claim's mark names what broke it
    assert "pth:evil.pth" not in measured  # shown above: not listed again as uncited


@pytest.mark.parametrize(("target", "evidence"), [
    ("tree_sha256: " + "a" * 64, "tree"),
    ("startup_sha256: " + "a" * 64, "startup"),
    ("startup_sha256: " + "a" * 64, "tree"),
    ("record: true", "shadowing"),
    ("record: true", "bytecode"),
])
def test_a_run_that_stops_early_shows_why_under_every_name_it_was_asked_for(
        tmp_path: Path, target: str, evidence: str) -> None:
    """No ``pkg/`` in the target: the hashing run stops with one ``record`` error,
    whichever of its checks the manifest turned on; a block citing one of them shows
    that error, not 'not checked'."""
    site = install(tmp_path / "site")
    for rel in PKG:
        (site / rel).unlink()  # an empty pkg/ is left
    rc, out, err = report_of(tmp_path, site, small_manifest(target, evidence))
    assert rc == 1, err
    cited, measured = out.split("### Claim 1")[1].split("### Not cited by a claim")
    assert "not checked" not in cited
    assert "- `pkg/`\n  - **error** `record`: no files under pkg/ in the target" in cited
    assert "↳ **broken**: `record`" in out
    assert "`record`" not in measured  # shown above: not listed again as uncited


def test_record_evidence_without_record_says_where_an_early_stop_shows(tmp_path: Path) -> None:
    text = small_manifest("tree_sha256: " + "a" * 64, "record")
    with pytest.raises(ManifestError) as exc:
        parse(text, "m.yaml")
    assert exc.value.message == ("evidence id 'record': this manifest runs no such check (it needs "
                                 "target.record: true; 'tree' shows why a run stopped early)")


SOURCE = dedent("""
    sources:
      lane:
        kind: git
        commit: '{commit}'
        contains:
          has-speculator: {{path: spark/speculator.py}}
""".format(commit="0" * 40))
REMOTE_PIN = f"{{url: 'https://example.invalid/r.txt', sha256: '{sha(REMOTE)}'}}"
CITE = "{at: 'pkg/mod.py:1', claim: The answer.}"


@pytest.mark.parametrize(("extra", "keypath", "message"), [
    (f"citations:\n  version: {CITE}\n", "citations.version",
     "'version' is the id of the tool's own version check; check ids must be unique"),
    (f"citations:\n  tree: {CITE}\n", "citations.tree",
     "'tree' is the id of the tool's own tree check; check ids must be unique"),
    (f"remotes:\n  record: {REMOTE_PIN}\n", "remotes.record",
     "'record' is the id of the tool's own record check; check ids must be unique"),
    (f"donors:\n  shadowing: {REMOTE_PIN}\n", "donors.shadowing",
     "'shadowing' is the id of the tool's own shadowing check; check ids must be unique"),
    (SOURCE.replace("lane:", "file:"), "sources.file",
     "a git source named 'file' would take every 'file:…' check for its own"),
    (f"donors:\n  plugin: {REMOTE_PIN}\n", "donors.plugin",
     "a donor named 'plugin' would take every 'plugin:…' check for its own"),
    (f"citations:\n  r: {CITE}\nremotes:\n  r: {REMOTE_PIN}\n", "remotes.r",
     "'r' is also a citation's id; check ids must be unique"),
    (f"citations:\n  lane: {CITE}\n" + SOURCE, "sources.lane",
     "'lane' is also a citation's id; check ids must be unique"),
    (SOURCE.replace("has-speculator", "commit"), "sources.lane.contains.commit",
     "'lane:commit' is also the id of the source's commit check; check ids must be unique"),
    (SOURCE + "    lacks:\n      has-speculator: {path: x.py}\n", "sources.lane.lacks.has-speculator",
     "'lane:has-speculator' is also a contains rule's id; check ids must be unique"),
    (f"citations:\n  has-speculator: {CITE}\n" + SOURCE, "sources.lane.contains.has-speculator",
     "'has-speculator' is also a citation's id: evidence naming 'has-speculator' would name both"),
    (SOURCE.replace("has-speculator", "version"), "sources.lane.contains.version",
     "'version' is the id of the tool's own version check; check ids must be unique"),
    (SOURCE, "files.lane:x.py",
     "this pin's check id 'file:lane:x.py' reads as git source 'lane' pinning 'x.py': rename the source"),
])
def test_a_check_id_that_is_not_the_manifests_alone_is_an_error(
        extra: str, keypath: str, message: str) -> None:
    """Two checks with one id, or a name that evidence would read as another check's,
    are refused when the manifest loads, at the offending key."""
    files = f"'lane:x.py': '{'0' * 64}'" if keypath.startswith("files.") else ""
    text = small_manifest("", "file:pkg/mod.py", extra, files)
    with pytest.raises(ManifestError) as exc:
        parse(text, "m.yaml")
    assert (exc.value.keypath, exc.value.message) == (keypath, message)


def test_a_name_clash_is_one_line_naming_the_file(tmp_path: Path) -> None:
    site = install(tmp_path / "site")
    text = small_manifest('version: "1.0"', "version", f"citations:\n  version: {CITE}\n")
    rc, out, err = report_of(tmp_path, site, text)
    assert (rc, out) == (2, "")
    assert re.fullmatch(rf"pp1audit: error: {re.escape(str(tmp_path / 'm.yaml'))}:\d+:\d+: 'version' is "
                        r"the id of the tool's own version check; check ids must be unique "
                        r"\(at citations\.version\)\n", err), err


def test_a_name_clash_is_reported_at_the_key() -> None:
    text = small_manifest("", "file:pkg/mod.py", "citations:\n  version:\n    at: 'pkg/mod.py:1'\n")
    line = text.splitlines().index("  version:") + 1
    with pytest.raises(ManifestError) as exc:
        parse(text, "m.yaml")
    assert (exc.value.line, exc.value.column) == (line, 3)


def test_a_name_clash_is_refused_without_a_report_section() -> None:
    text = small_manifest("", "file:pkg/mod.py", f"citations:\n  version: {CITE}\n").split("report:")[0]
    with pytest.raises(ManifestError, match="'version' is the id of the tool's own version check"):
        parse(text, "m.yaml")


def test_the_findings_heads_are_those_the_record_run_writes() -> None:
    """``audit._FOUND_HEADS`` (names refused, hints given) lists the heads the hashing run's
    parts build finding ids with; read from their source, so a new head cannot go unlisted.
    (Evidence ``shadowing`` reaches a finding of any head: ``audit._shadowing_finding``.)"""
    root = REPO / "pp1audit" / "checks"
    heads = set()
    for rel in ("record.py", "record_judge.py", "shadowing.py", "pthfiles.py", "startupzip.py",
                "startupscripts.py", "vouch.py", "entrypoints.py"):
        heads.update(re.findall(r'f"([a-z_]+):\{', (root / rel).read_text(encoding="utf-8")))
    assert heads == set(_FOUND_HEADS)
