"""A measured audit reads like the audit: each claim followed by one status mark.

Every block with evidence is a claim, numbered in document order. Its mark says
what its checks found, worst first: ``broken`` (a check failed or broke), ``stale``
(its evidence is gone), ``not checked`` (every check skipped), ``moved`` (where its
spans are now), else ``holds``; it links to the claim's evidence in ``## Evidence``.
What could not be checked is said once, in ``## Not checked``, grouped by the source
or pin it lacks, with the command that would check it.
"""

from __future__ import annotations

from typing import Any

import pytest
from markdown_it import MarkdownIt

from pp1audit.formats.markdown import Names, render
from pp1audit.result import Check, Result, Status, TargetInfo
from pp1audit.text.safe import printable

MARKDOWN = MarkdownIt("commonmark").enable(["table", "strikethrough"])
NOT_GIVEN = "git source '{0}' not given; pass --repo {0}=PATH (or set it in pp1audit.toml)"


def check(cid: str, status: Status, **kw: Any) -> Check:
    return Check(id=cid, kind=kw.pop("kind", "citation"), status=status,
                 message=kw.pop("message", f"{cid} {status.value}"), **kw)


def audit(checks: list[Check], *evidence: list[str], sources: tuple[str, ...] = ()) -> str:
    raw = {"audit": {"title": "T"}, "sources": {name: {} for name in sources},
           "report": {"sections": [{"heading": "H", "blocks": [
               {"text": f"Claim {i}.", "evidence": ev} for i, ev in enumerate(evidence, 1)]}]}}
    result = Result("m.yaml", "0" * 64, TargetInfo("wheel", "/x/p-1.whl", "p", "1"), tuple(checks))
    return render(raw, result, names=Names("m.yaml", "p-1.whl", "ab" * 32))


SPAN = {"path": "p/a.py", "lines": (10, 12), "found_lines": (10, 12)}


@pytest.mark.parametrize(("statuses", "mark"), [
    ([Status.PASS, Status.PASS], "↳ **holds** ([claim 1](#claim-1))"),
    ([Status.PASS, Status.DRIFT], "↳ **moved**: 10–12 → 20–22 ([claim 1](#claim-1))"),
    ([Status.DRIFT, Status.STALE], "↳ **stale**: `c2` ([claim 1](#claim-1))"),
    ([Status.STALE, Status.FAIL], "↳ **broken**: `c2` ([claim 1](#claim-1))"),
    ([Status.ERROR, Status.FAIL], "↳ **broken**: `c1`, `c2` ([claim 1](#claim-1))"),
    ([Status.SKIP, Status.SKIP], "↳ **not checked** ([claim 1](#claim-1))"),
    ([Status.PASS, Status.SKIP], "↳ **holds** ([claim 1](#claim-1); 1 of 2 checks not checked)"),
])
def test_a_claims_mark_is_its_worst_check(statuses: list[Status], mark: str) -> None:
    checks = [check(f"c{i}", s, **{**SPAN, **({"found_lines": (20, 22)} if s is Status.DRIFT else {})})
              for i, s in enumerate(statuses, 1)]
    doc = audit(checks, ["c1", "c2"])
    assert doc.split("\n\n")[doc.split("\n\n").index("Claim 1.") + 1] == mark


def test_marks_link_to_evidence_and_the_summary_counts_claims() -> None:
    checks = [check("a", Status.PASS, **SPAN), check("b", Status.FAIL, message="gone `x`", **SPAN),
              check("c", Status.SKIP, message=NOT_GIVEN.format("lane"), source="lane"),
              check("loose", Status.PASS, kind="git", message="at the recorded commit", source="lane")]
    doc = audit(checks, ["a"], ["a", "b"], ["c", "nope"], sources=("lane",))
    lines = doc.splitlines()
    assert lines[:9] == [
        "# T", "", "| | |", "|---|---|",
        "| Target | wheel `p-1.whl` — p `1` |",
        f"| Target SHA-256 | `{'ab' * 32}` |",
        f"| Manifest | `m.yaml`, SHA-256 `{'0' * 64}` |",
        "| Verdict | **fail**, gate closed (2 pass, 0 drift, 0 stale, 1 fail, 1 skip, 0 error) |",
        "| Claims | 3: holds 1, moved 0, stale 0, broken 1, not checked 1 |"]
    evidence = doc.split("## Evidence\n")[1]
    assert evidence == (
        "\n### Claim 1\n\n- `p/a.py`\n  - **pass** `a` 10–12\n"
        "\n### Claim 2\n\n- `p/a.py`\n  - **pass** `a` 10–12\n  - **fail** `b` 10–12: gone `x`\n"
        "\n### Claim 3\n\n- **not checked** `nope`: no check of this run\n"
        "- **skip** `c` ([why](#not-checked))\n"
        "\n### Not cited by a claim\n\n- **pass** `loose` [lane]: at the recorded commit\n")
    assert ("| git source `lane` | 1 | 3 | git source 'lane' not given; pass --repo lane=PATH "
            "(or set it in pp1audit.toml) |") in lines
    assert "To check them, run this report again with `--repo lane=PATH`." in lines
    hrefs = [t.attrs["href"] for tok in MARKDOWN.parse(doc) for t in tok.children or []
             if t.type == "link_open"]
    assert hrefs == ["#not-checked", "#claim-1", "#claim-2", "#claim-3", "#not-checked"]


def test_skipped_checks_are_grouped_once_with_what_would_check_them() -> None:
    fetch = "not fetched: no copy in the cache; run pp1audit fetch"
    checks = [check(f"l{i}", Status.SKIP, message=NOT_GIVEN.format("lane"), source="lane") for i in range(3)]
    checks += [check("d", Status.SKIP, kind="donor", message=fetch, source="d"),
               check("d:hunks", Status.SKIP, kind="donor", message="hunks not checked: " + fetch),
               check("other", Status.SKIP, kind="record", message="no tree to look in")]
    # 'd' is not declared here: its checks are grouped by message (a donor's are one
    # group: see the next test)
    doc = audit(checks, ["l0", "l1", "d"], ["l2", "d:hunks"], sources=("lane",))
    group = doc.split("## Not checked\n\n")[1].split("\n\n## ")[0].splitlines()
    assert group[2:] == [
        f"| git source `lane` | 3 | 1, 2 | {NOT_GIVEN.format('lane')} |",
        "| — | 1 | 1 | not fetched: no copy in the cache; run pp1audit fetch |",
        "| — | 1 | 2 | hunks not checked: not fetched: no copy in the cache; run pp1audit fetch |",
        "| — | 1 | — | no tree to look in |",
        "",
        "To check them, run `pp1audit fetch`, then this report again with `--repo lane=PATH`."]
    assert doc.count(NOT_GIVEN.format("lane")) == 1  # said once, not under every claim


def test_a_donors_checks_are_one_group() -> None:
    fetch = "not fetched: no copy in the cache; run pp1audit fetch"
    checks = [check("d", Status.SKIP, kind="donor", message=fetch, source="d"),
              check("d:hunks", Status.SKIP, kind="donor", message="hunks not checked: " + fetch)]
    raw = {"audit": {"title": "T"}, "donors": {"d": {}},
           "report": {"sections": [{"blocks": [{"text": "x", "evidence": ["d"]}]}]}}
    doc = render(raw, Result("m.yaml", "0" * 64, None, tuple(checks)))
    assert f"| donor `d` | 2 | 1 | {fetch} |" in doc.splitlines()
    assert "To check them, run `pp1audit fetch`, then this report again." in doc.splitlines()


def test_a_hostile_source_name_and_message_keep_the_not_checked_table() -> None:
    name = "a|b`c<img src=x>"
    message = "ref 'x|y' is not in `<b>` \x1b[31m | [l](javascript:x)"
    checks = [check("c", Status.SKIP, message=message, source=name)]
    doc = audit(checks, ["c"], sources=(name,))
    rows = [line for line in doc.split("## Not checked")[1].splitlines() if line.startswith("|")]
    table = MARKDOWN.parse("\n".join(rows))
    cells = [[t.content for t in tok.children or [] if t.type in ("text", "code_inline")]
             for tok in table if tok.type == "inline"]
    assert len(cells) == 8 and "\x1b" not in doc  # a header and a row of four cells
    assert "".join(cells[4]) == "git source " + printable(name)
    assert "".join(cells[7]) == printable(message).replace("`", "")
    assert not [t for tok in table for t in tok.children or []
                if t.type in ("link_open", "html_inline", "image")]
