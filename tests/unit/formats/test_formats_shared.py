"""What every output says alike is written once (``pp1audit.formats``).

``check`` (text and JSON), ``report`` and ``diff`` each said "version unknown",
"N pass, N drift, …" and "is this check the target's?" in their own words; they
disagreed on an empty version (the report printed an empty code span, the others
the words). Each is now one helper, and the words live in one place.
"""

from __future__ import annotations

import re

import pytest
from conftest import REPO

from pp1audit.formats import UNKNOWN_VERSION, counted, named_source, version_or_unknown
from pp1audit.formats.json_format import as_dict
from pp1audit.formats.markdown import render as report_render
from pp1audit.formats.text_format import render as text_render
from pp1audit.formats.text_format import summary
from pp1audit.result import Check, Result, Status, TargetInfo
from pp1audit.upgrade.diff import TreeDiff, render_text

PACKAGE = REPO / "pp1audit"


def result(version: str | None, source: str | None = None) -> Result:
    check = Check(id="c", kind="file", status=Status.FAIL, message="changed", path="pkg/a.py",
                  source=source)
    return Result("m.yaml", "0" * 64, TargetInfo("directory", "tree", "pkg", version), (check,))


@pytest.mark.parametrize("version", [None, ""])
def test_every_output_says_an_absent_or_empty_version_in_the_same_words(version: str | None) -> None:
    text = text_render(result(version))
    assert f"(pkg {UNKNOWN_VERSION})" in text.splitlines()[0]
    report = report_render({"audit": {"title": "T"}}, result(version))
    assert f"— pkg ({UNKNOWN_VERSION}) |" in report, report  # was "— pkg ``." for ""
    diff = render_text(TreeDiff("m.yaml", "directory old", "directory new", version, "1.0", ()))
    assert diff.startswith(f"diff directory old ({UNKNOWN_VERSION}) → directory new (1.0);")


def test_a_known_version_is_shown_as_found() -> None:
    assert version_or_unknown("1.2") == "1.2"
    assert "(pkg 1.2)" in text_render(result("1.2"))
    assert "— pkg `1.2` |" in report_render({"audit": {"title": "T"}}, result("1.2"))


def test_the_words_are_written_once_in_the_package() -> None:
    """Any other module spelling them again would drift from the others."""
    spelled = [p.relative_to(PACKAGE).as_posix() for p in sorted(PACKAGE.rglob("*.py"))
               if re.search(r"[\"']\(?version unknown", p.read_text(encoding="utf-8"))]
    assert spelled == ["formats/__init__.py"], spelled


@pytest.mark.parametrize("source", [None, "target"])
def test_the_target_is_no_named_source_in_any_output(source: str | None) -> None:
    r = result("1.0", source)
    assert named_source(r.checks[0]) is None
    assert as_dict(r)["checks"][0]["source"] is None
    assert "  pkg/a.py  " in text_render(r)
    assert "[target]" not in report_render({"audit": {"title": "T"}}, r)


def test_a_named_source_is_named_alike() -> None:
    r = result("1.0", "lane")
    assert named_source(r.checks[0]) == "lane"
    assert as_dict(r)["checks"][0]["source"] == "lane"
    assert "lane:pkg/a.py" in text_render(r)
    assert "- [lane] `pkg/a.py`" in report_render({"audit": {"title": "T"}}, r)


def test_counts_are_spelled_once() -> None:
    r = result("1.0")
    assert counted(r.counts()) == "0 pass, 0 drift, 0 stale, 1 fail, 0 skip, 0 error"
    assert summary(r).endswith(counted(r.counts()))
    assert f"({counted(r.counts())}) |" in report_render({"audit": {"title": "T"}}, r)


def test_the_counts_line_is_written_once_in_the_package() -> None:
    """``N pass, N drift, …`` and ``N unchanged, N moved, …`` (pin, diff) are one
    spelling, ``counted``: a module joining its own counts would drift from it."""
    joined = re.compile(r"""join\(\s*f["']\{\w+\} \{\w+\}["']\s+for\s+\w+,\s*\w+\s+in\b""")
    spelled = [p.relative_to(PACKAGE).as_posix() for p in sorted(PACKAGE.rglob("*.py"))
               if joined.search(p.read_text(encoding="utf-8"))]
    # checks/provenance.py: a donor's hunk tally ("3 applied, 1 not-applied"), in a
    # check's message; not a counts line of an output (and not this fixer's file)
    assert [p for p in spelled if p != "checks/provenance.py"] == ["formats/__init__.py"], spelled
