"""The JSON Schema of manifest format 1: the single statement of its shape.

The loader validates every manifest against it (with fastjsonschema, which
compiles the schema to Python once per run), ``pp1audit schema`` prints it for
editors, and later sections (invariants, sources, donors, report prose) extend
it here so that the schema and the loader can never disagree.
"""

from __future__ import annotations

from typing import Any

SCHEMA_ID = "https://pp1audit.invalid/schema/manifest-1.json"

_ID = "^[a-z0-9][a-z0-9._-]*$"
_HEX64 = "^[0-9a-fA-F]{64}$"
_HEX40 = "^[0-9a-fA-F]{40}$"
_PATH = "^[^/\\\\\\x00][^\\\\\\x00]*$"

HEX64: dict[str, Any] = {
    "type": "string",
    "pattern": _HEX64,
    "x-message": "not a SHA-256 digest: 64 hexadecimal characters expected",
}

ANCHOR: dict[str, Any] = {
    "type": "object",
    "description": "How to find the span again when lines move (W3C TextQuoteSelector style).",
    "additionalProperties": False,
    "properties": {
        "exact": {"type": "string", "minLength": 1, "description": "The span's text."},
        "prefix": {"type": "string", "description": "A few lines just before the span."},
        "suffix": {"type": "string", "description": "A few lines just after the span."},
        "sha256": {**HEX64, "description": "SHA-256 of the span's whitespace-normalised text."},
    },
    "anyOf": [{"required": ["exact"]}, {"required": ["sha256"]}],
    "x-message": "an anchor needs 'exact' text or a 'sha256' of the span",
}

CITATION: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["at"],
    "properties": {
        "at": {
            "type": "string",
            "pattern": "^[^:]+:[0-9]+(\\s*[-–]\\s*[0-9]+)?$",
            "x-message": "not a span: write path:start-end or path:line",
            "description": "path:start-end (1-based, inclusive; an en dash works too) or path:line.",
        },
        "anchor": ANCHOR,
        "claim": {"type": "string", "description": "What the audit says this span shows."},
        "title": {"type": "string"},
    },
}

SCHEMA: dict[str, Any] = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "$id": SCHEMA_ID,
    "title": "pp1audit manifest, format 1",
    "type": "object",
    "additionalProperties": False,
    "required": ["pp1audit", "target"],
    "properties": {
        "pp1audit": {"const": 1, "description": "Manifest format version."},
        "audit": {
            "type": "object",
            "additionalProperties": False,
            "required": ["id"],
            "properties": {
                "id": {"type": "string", "pattern": _ID},
                "title": {"type": "string"},
                "date": {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"},
            },
        },
        "target": {
            "type": "object",
            "additionalProperties": False,
            "required": ["package"],
            "properties": {
                "package": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$"},
                "version": {"type": "string", "minLength": 1},
            },
        },
        "files": {
            "type": "object",
            "description": "SHA-256 pins: path relative to the target root -> hex digest.",
            "propertyNames": {"pattern": _PATH},
            "additionalProperties": HEX64,
        },
        "citations": {
            "type": "object",
            "propertyNames": {"pattern": _ID},
            "additionalProperties": CITATION,
        },
    },
}


def validator() -> Any:
    """The compiled validator (fastjsonschema), built on first use."""
    import fastjsonschema

    return fastjsonschema.compile(SCHEMA)
