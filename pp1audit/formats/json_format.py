"""``--format json``: exactly one object, ``pp1audit.result/2`` (contract, design.md).

Format 2 added the ``stale`` status (and its count): a consumer of format 1 that
knew five statuses could read an unknown one as passing, hence the new number."""

from __future__ import annotations

import json
from typing import Any

from pp1audit.formats import named_source
from pp1audit.result import Check, Result

FORMAT_ID = "pp1audit.result/2"


def check_dict(check: Check) -> dict[str, Any]:
    """One check as the contract spells it: every key present, absent values null."""
    return {
        "id": check.id,
        "kind": check.kind,
        "status": check.status.value,
        "path": check.path,
        "lines": list(check.lines) if check.lines else None,
        "found_lines": list(check.found_lines) if check.found_lines else None,
        "expected": check.expected,
        "actual": check.actual,
        "message": check.message,
        # Checks of the target itself carry null; a named git source / pin its name.
        "source": named_source(check),
    }


def as_dict(result: Result) -> dict[str, Any]:
    """The whole result as plain JSON-ready data."""
    target = result.target
    return {
        "format": FORMAT_ID,
        "tool": {"name": "pp1audit", "version": result.tool_version},
        "manifest": {"path": result.manifest_path, "sha256": result.manifest_sha256},
        "target": None if target is None else {
            "kind": target.kind,
            "location": target.location,
            "package": target.package,
            "version": target.version,
        },
        "verdict": result.verdict,
        "counts": result.counts(),
        "checks": [check_dict(c) for c in result.checks],
    }


def dumps(data: dict[str, Any]) -> str:
    """Pretty-printed JSON with a final newline, always valid UTF-8, names exact.

    A name with a byte that is not UTF-8 (a target ``bad\\xff``, a file in it)
    reaches Python as a lone surrogate (``surrogateescape``), which UTF-8 cannot
    carry (``-o`` could not write it). Then the whole document is written with
    ``\\u`` escapes only (``"bad\\udcff"``): plain ASCII, and the exact name for a
    reader that decodes with ``surrogateescape`` as Python does — unlike the text
    form ``bad\\xff``, which a file really named with a backslash also has."""
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # rare: only then is every non-ASCII character escaped
        text = json.dumps(data, indent=2, ensure_ascii=True) + "\n"
    return text


def render(result: Result, verbose: bool = False, color: bool = False,
           terminal: bool = False) -> str:
    """Pretty-printed JSON with a final newline; ``verbose``/``color``/``terminal`` do not apply."""
    return dumps(as_dict(result))
