"""A URL that names a commit must name the commit its entry pins (manifest loader).

The PP1 document renders a donor's commit beside a link to its URL, and an upstream
file's commit beside its URL: typed twice, they could disagree and the document would
contradict itself while ``report`` exits 0. The loader rejects such a manifest with
the line and column of the commit inside the URL.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import REPO, run_cli

from pp1audit.errors import ManifestError
from pp1audit.manifest import parse
from pp1audit.manifest.urls import commit_segments, url_commit_clashes

PP1 = REPO / "manifests" / "pp1.yaml"
DONOR = "afe4d5e41ec6fa4db17c5cc88758af439a106913"
UPSTREAM = "e4db46c79bca354fef07197465faea14ca563c09"
DONOR_URL = "    url: https://github.com/HeNryous/deepseek-v41-1017-dgx-spark/blob/"
GIST = "8f3a2b1c9d0e4f5a6b7c8d9e0f1a2b3c"
WRONG = UPSTREAM[::-1]


def where(text: str, needle: str, inside: str) -> tuple[int, int]:
    """1-based (line, column) of ``inside`` on the only line holding ``needle``."""
    hits = [(i, ln) for i, ln in enumerate(text.splitlines(), 1) if needle in ln]
    assert len(hits) == 1, needle
    line, body = hits[0]
    return line, body.index(inside) + 1


def load_error(text: str) -> ManifestError:
    with pytest.raises(ManifestError) as info:
        parse(text, "m.yaml")
    return info.value


@pytest.mark.parametrize(("old", "new", "needle", "keypath", "segment"), [
    pytest.param(f"    commit: {DONOR}\n    sha256:", f"    commit: b{DONOR[1:]}\n    sha256:",
                 DONOR_URL, "donors.hybrid-0055.url", DONOR,
                 id="donor-commit-typo"),
    pytest.param(f"blob/{DONOR}/patches", f"blob/b{DONOR[1:]}/patches",
                 DONOR_URL, "donors.hybrid-0055.url", f"b{DONOR[1:]}",
                 id="donor-url-typo"),
    pytest.param(f"spark/{DONOR}/patches", f"spark/{DONOR[:-1]}0/patches",
                 "    download: https://raw.", "donors.hybrid-0055.download", f"{DONOR[:-1]}0",
                 id="donor-download-typo"),
    pytest.param(f"vllm/blob/{UPSTREAM}", f"vllm/blob/f{UPSTREAM[1:]}",
                 "    url: https://github.com/vllm-project/", "references.vllm-rejection-sampler.url",
                 f"f{UPSTREAM[1:]}", id="reference-url-typo"),
    pytest.param(f"    commit: {UPSTREAM}\n", f"    commit: f{UPSTREAM[1:]}\n",
                 "    url: https://github.com/vllm-project/", "references.vllm-rejection-sampler.url",
                 UPSTREAM, id="reference-commit-typo"),
])
def test_pp1_with_a_commit_typed_two_ways_is_rejected_at_the_url(
    old: str, new: str, needle: str, keypath: str, segment: str
) -> None:
    """``segment``: the revision as the URL spells it after the typo, where the error points."""
    text = PP1.read_text(encoding="utf-8")
    assert text.count(old) == 1
    bad = text.replace(old, new)
    err = load_error(bad)
    assert (err.line, err.column) == where(bad, needle, segment)
    assert err.keypath == keypath
    assert "names commit" in err.message and "'commit'" in err.message


def test_report_refuses_a_document_that_would_contradict_itself(tmp_path: Path) -> None:
    """The cross-check's case: `report` rendered "HeNryous bfe4d5e41ec6…" beside a link
    to …/blob/afe4d5e41ec6…/ and exited 0."""
    text = PP1.read_text(encoding="utf-8")
    bad = tmp_path / "pp1-typo.yaml"
    bad.write_text(text.replace(f"    commit: {DONOR}\n    sha256:",
                                f"    commit: b{DONOR[1:]}\n    sha256:"), encoding="utf-8")
    proc = run_cli("report", "-m", str(bad))
    assert proc.returncode == 2 and proc.stdout == ""
    line, col = where(bad.read_text(), DONOR_URL, DONOR)
    assert proc.stderr.startswith(f"pp1audit: error: {bad}:{line}:{col}: the URL names commit ")
    assert proc.stderr.count("\n") == 1


MINIMAL = """\
pp1audit: 1
target: {{package: vllm}}
references:
  r: {{url: "{url}"{commit}}}
"""


@pytest.mark.parametrize(("url", "commit"), [
    pytest.param(f"https://github.com/o/r/blob/{UPSTREAM[:8]}/x.py", UPSTREAM, id="abbreviated"),
    pytest.param(f"https://github.com/o/r/commit/{UPSTREAM.upper()}", UPSTREAM, id="upper-case"),
    pytest.param("https://github.com/o/r/blob/main/x.py", UPSTREAM, id="branch-name"),
    pytest.param("https://github.com/o/r/blob/abc123/x.py", UPSTREAM, id="six-hex-is-no-commit"),
    pytest.param(f"https://github.com/o/r/blob/{UPSTREAM}0abc/x.py", UPSTREAM,
                 id="longer-than-a-commit"),
    pytest.param("https://github.com/o/r/blob/deadbeef/x.py", None, id="no-commit-pinned"),
    pytest.param(f"https://h.example/x?rev={UPSTREAM[::-1]}#L1", UPSTREAM, id="query-not-a-revision-key"),
    # Only a segment a forge uses for a revision names a commit: never an owner, a gist
    # id, a run or attachment number, a date, a branch under refs/heads, a repository.
    pytest.param(f"https://gist.githubusercontent.com/someone/{GIST}/raw/{UPSTREAM}/0055.patch", UPSTREAM,
                 id="gist-raw-at-the-pinned-revision"),
    pytest.param(f"https://gist.github.com/someone/{GIST}/{UPSTREAM}", UPSTREAM, id="gist-page"),
    pytest.param("https://github.com/o/r/actions/runs/12345678901/artifacts/2345678901", UPSTREAM,
                 id="actions-run-artifact"),
    pytest.param("https://github.com/user-attachments/files/17234567/x.patch", UPSTREAM,
                 id="user-attachment"),
    pytest.param(f"https://mirror.example.org/snapshots/20261023/blob/{UPSTREAM}/x.py", UPSTREAM,
                 id="date-directory"),
    pytest.param(f"https://github.com/facade1/r/blob/{UPSTREAM}/x.py", UPSTREAM, id="hex-owner"),
    pytest.param("https://raw.githubusercontent.com/o/r/refs/heads/deadbeef/x.py", UPSTREAM,
                 id="raw-branch-named-like-a-commit"),
    pytest.param("https://github.com/o/r/blob/refs/heads/deadbeef/x.py", UPSTREAM,
                 id="blob-branch-named-like-a-commit"),
    pytest.param("https://github.com/o/r/blob/2026102/x.py", UPSTREAM, id="tag-of-digits"),
    # Only the first marker names the revision: later ones are the file's path.
    pytest.param(f"https://github.com/o/r/blob/{UPSTREAM}/tests/tree/cafebabe", UPSTREAM,
                 id="marker-in-the-file-path"),
    pytest.param(f"https://github.com/o/r/tree/{UPSTREAM}/src/blob/1234abcd", UPSTREAM,
                 id="blob-directory-after-the-revision"),
    pytest.param(f"https://gitlab.com/o/r/-/raw/{UPSTREAM}/raw/deadbeef", UPSTREAM,
                 id="gitlab-raw-in-the-file-path"),
    pytest.param(f"https://raw.githubusercontent.com/o/r/{UPSTREAM}/commit/deadbeef", UPSTREAM,
                 id="raw-content-marker-in-the-file-path"),
    pytest.param(f"https://gitea.example/o/r/raw/commit/{UPSTREAM}/tree/deadbeef", UPSTREAM,
                 id="gitea-raw-commit-then-a-marker-in-the-path"),
])
def test_urls_that_agree_or_name_no_commit_load(url: str, commit: str | None) -> None:
    pinned = f", commit: {commit}" if commit else ""
    parse(MINIMAL.format(url=url, commit=pinned), "m.yaml")


SOURCE = """\
pp1audit: 1
target: {{package: vllm}}
sources:
  s: {{kind: git, url: "{url}", commit: {commit}}}
"""


@pytest.mark.parametrize("url", [
    pytest.param("https://github.com/c0ffee1/lane", id="hex-owner"),
    pytest.param("https://git.example.org/projects/1234567/lane.git", id="numeric-project"),
    pytest.param(f"https://git.example.org/{WRONG}/lane.git", id="commit-like-repository-name"),
])
def test_a_source_repository_address_names_no_commit(url: str) -> None:
    parse(SOURCE.format(url=url, commit=UPSTREAM), "m.yaml")


@pytest.mark.parametrize("url", [
    pytest.param(f"https://github.com/o/r/commit/{WRONG}.patch", id="commit-patch"),
    pytest.param(f"https://github.com/o/r/commit/{WRONG}.diff", id="commit-diff"),
    pytest.param(f"https://github.com/o/r/pull/12/commits/{WRONG}", id="pull-request-commit"),
    pytest.param(f"https://gitlab.com/o/r/-/blob/{WRONG}/x.py", id="gitlab-blob"),
    pytest.param(f"https://gitlab.com/o/r/-/commit/{WRONG}", id="gitlab-commit"),
    pytest.param(f"https://gitea.example/o/r/src/commit/{WRONG}/x.py", id="gitea-source"),
    pytest.param(f"https://gitea.example/o/r/raw/commit/{WRONG}/x.py", id="gitea-raw"),
    pytest.param(f"https://github.com/o/r/blob/{WRONG}/tests/tree/{UPSTREAM}", id="first-marker-wins"),
    pytest.param(f"https://raw.githubusercontent.com/o/r/{WRONG}/x.py", id="raw-content"),
    pytest.param(f"https://api.github.com/repos/o/r/contents/x.py?ref={WRONG}", id="api-ref-query"),
    pytest.param(f"https://git.kernel.org/pub/scm/x.git/tree/x.c?id={WRONG}", id="cgit-id-query"),
    pytest.param(f"https://github.com/o/r/blob/%{ord(WRONG[0]):x}{WRONG[1:]}/x.py", id="percent-escaped"),
])
def test_a_forge_revision_that_disagrees_is_rejected_where_it_is(url: str) -> None:
    for text, keypath in ((MINIMAL.format(url=url, commit=f", commit: {UPSTREAM}"), "references.r.url"),
                          (SOURCE.format(url=url, commit=UPSTREAM), "sources.s.url")):
        err = load_error(text)
        assert err.keypath == keypath
        assert f"names commit {WRONG} " in err.message
        # The revision as the URL spells it: a percent-escape where the test wrote one.
        escaped = f"%{ord(WRONG[0]):x}{WRONG[1:]}"
        spelled = escaped if escaped in url else WRONG
        assert commit_segments(url) == [(url.index(spelled), WRONG)]
        assert (err.line, err.column) == where(text, url, spelled)


BAD_URL = "https://[x/y"


@pytest.mark.parametrize(("section", "entry"), [
    pytest.param("donors", f'{{url: "{BAD_URL}", sha256: {"a" * 64}, commit: {UPSTREAM}}}', id="donor"),
    pytest.param("references", f'{{url: "{BAD_URL}", commit: {UPSTREAM}}}', id="reference"),
    pytest.param("references", f'{{url: "{BAD_URL}"}}', id="reference-without-commit"),
    pytest.param("sources", f'{{kind: git, url: "{BAD_URL}", commit: {UPSTREAM}}}', id="source"),
])
def test_a_url_that_does_not_parse_is_a_one_line_error_at_it(section: str, entry: str,
                                                             tmp_path: Path) -> None:
    """The URL check ran urlsplit before any URL was validated: `internal error:
    ValueError`, exit 2 without the place. It is the manifest error it was."""
    bad = tmp_path / "bad.yaml"
    bad.write_text(f"pp1audit: 1\ntarget: {{package: vllm}}\n{section}:\n  s: {entry}\n",
                   encoding="utf-8")
    line, col = where(bad.read_text(), BAD_URL, '"')
    proc = run_cli("report", "-m", str(bad))
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == (f"pp1audit: error: {bad}:{line}:{col}: not a valid URL (Invalid IPv6 URL) "
                           f"(at {section}.s.url)\n")


def test_a_disagreeing_url_in_a_small_manifest() -> None:
    text = MINIMAL.format(url="https://github.com/o/r/blob/deadbeef/x.py", commit=f", commit: {UPSTREAM}")
    err = load_error(text)
    assert (err.line, err.column) == where(text, "deadbeef", "deadbeef")
    assert err.keypath == "references.r.url"


def test_clashes_are_listed_for_every_entry_kind() -> None:
    wrong = "https://h.example/blob/0123abc/f"
    raw = {section: {"x": {"url": wrong, "commit": UPSTREAM}}
           for section in ("sources", "remotes", "donors", "references")}
    raw["donors"]["x"]["download"] = wrong
    got = [(c.keypath, c.named, c.offset) for c in url_commit_clashes(raw)]
    assert got == [(("sources", "x", "url"), "0123abc", 23), (("remotes", "x", "url"), "0123abc", 23),
                   (("donors", "x", "url"), "0123abc", 23),
                   (("donors", "x", "download"), "0123abc", 23),
                   (("references", "x", "url"), "0123abc", 23)]
    assert wrong[23:30] == "0123abc"


def test_commit_segments() -> None:
    assert commit_segments(f"https://a.example/o/r/blob/{DONOR}/p/0055.patch") == [(27, DONOR)]
    # only after a revision marker; hex-looking names elsewhere are names
    assert commit_segments("https://a.example/1234567/abcdefg/ABCDEF0") == []
    assert commit_segments("https://a.example/o/r/commit/ABCDEF0.patch") == [(29, "ABCDEF0")]
    assert commit_segments("https://a.example") == []
    # the host spelled like the path does not shift the offset
    assert commit_segments("https://blob/blob/abcdef0") == [(18, "abcdef0")]
    assert commit_segments("HTTPS://a.example/o/r/tree/abcdef0") == [(27, "abcdef0")]
    assert commit_segments(f"https://a.example/x?a=1&ref={DONOR}") == [(28, DONOR)]
    assert commit_segments("https://[x/y") == []
