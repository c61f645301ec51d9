"""``--format json``: exactly one object, ``pp1audit.result/1`` (contract, design.md)."""

from __future__ import annotations

import json
from typing import Any

from pp1audit.result import Check, Result

FORMAT_ID = "pp1audit.result/1"


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
        "source": None if check.source in (None, "target") else check.source,
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


def utf8_safe(value: Any) -> Any:
    """``value`` with every string that cannot be UTF-8 shown as text output shows it.

    A name with a byte that is not UTF-8 (a target ``bad\\xff``, a file in it)
    reaches Python as a lone surrogate (``surrogateescape``); JSON would carry it
    as ``"\\udcff"``, which no UTF-8 reader can take back (jq turns it into U+FFFD,
    Python cannot encode it, ``-o`` could not write it). Such a string is given in
    ``safetext.printable``'s escaped form instead (``bad\\xff``, backslashes
    doubled), the form every text output uses; every other string is as it is."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            from pp1audit.safetext import printable

            return printable(value)
        return value
    if isinstance(value, dict):
        return {utf8_safe(k): utf8_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [utf8_safe(v) for v in value]
    return value


def dumps(data: dict[str, Any]) -> str:
    """Pretty-printed JSON with a final newline, always encodable as UTF-8."""
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # rare: only then is every string looked at
        text = json.dumps(utf8_safe(data), indent=2, ensure_ascii=False) + "\n"
    return text


def render(result: Result, verbose: bool = False, color: bool = False,
           terminal: bool = False) -> str:
    """Pretty-printed JSON with a final newline; ``verbose``/``color``/``terminal`` do not apply."""
    return dumps(as_dict(result))
