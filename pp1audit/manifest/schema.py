"""The JSON Schema of manifest format 1: the single statement of its shape.

The loader validates every manifest against it (with jsonschema-rs), ``pp1audit schema`` prints it for
editors, and later sections (invariants, sources, donors, report prose) extend
it here so that the schema and the loader can never disagree.
"""

from __future__ import annotations

import functools
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
        "invariant": {
            "type": "string",
            "pattern": _ID,
            "description": "An invariant id: the span is where that rule matches (alone, "
            "without exact/sha256).",
        },
    },
    "anyOf": [{"required": ["exact"]}, {"required": ["sha256"]}, {"required": ["invariant"]}],
    "x-message": "an anchor needs 'exact' text, a 'sha256' of the span or an 'invariant'",
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
        "unresolved": {
            "type": "string",
            "minLength": 1,
            "description": "Set by `pp1audit pin --allow-unresolved`: why the citation could not "
            "be carried to the new tree. A marked citation always fails `check` until a human "
            "fixes its span and removes this key.",
        },
        "claim": {"type": "string", "description": "What the audit says this span shows."},
        "title": {"type": "string"},
        "source": {
            "type": "string",
            "pattern": _ID,
            "description": "Where the cited file lives: 'target' (the default), a git source "
            "under 'sources' (read from its pinned commit), or a pin under 'remotes'/'donors'.",
        },
    },
}

# --- invariants: claims backed by ast-grep rule configs (see pp1audit/rules/) ----------

RULE_CONFIG: dict[str, Any] = {
    "type": "object",
    "description": "An ast-grep rule config, as ast-grep documents it "
    "(https://ast-grep.github.io/reference/rule.html): 'rule', optional 'constraints' "
    "and 'utils'. ast-grep itself checks what is inside (at load time).",
    "additionalProperties": False,
    "required": ["rule"],
    "properties": {
        "rule": {"type": "object", "minProperties": 1,
                 "description": "pattern / kind / regex / inside / has / precedes / follows / "
                 "all / any / not / matches (with stopBy / field on relations)."},
        "constraints": {"type": "object", "description": "Metavariable name -> rule its "
                        "capture must match (e.g. {DEFAULT: {regex: '^.greedy.$'}})."},
        "utils": {"type": "object", "description": "Named rules for `matches:`."},
    },
    "x-message": "a rule config is a mapping with 'rule' (and optional 'constraints', 'utils')",
}

_ROLE: dict[str, Any] = {
    "oneOf": [RULE_CONFIG, {"type": "array", "minItems": 1, "items": RULE_CONFIG}],
    "x-message": "a rule config (a mapping with 'rule') or a list of them",
}

INVARIANT: dict[str, Any] = {
    "type": "object",
    "description": "A claim on one Python file, backed by ast-grep rules: every 'evidence' "
    "rule must match (none found: stale), no 'counterexample' rule may match (found: fail).",
    "additionalProperties": False,
    "required": ["file", "evidence"],
    "properties": {
        "claim": {"type": "string", "description": "The sentence of the audit the rules back."},
        "title": {"type": "string"},
        "file": {"type": "string", "pattern": _PATH, "description": "The .py file (target path)."},
        "source": {
            "type": "string",
            "pattern": _ID,
            "description": "Where 'file' lives: 'target' (the default), a git source under "
            "'sources' (read from its pinned commit), or a pin under 'remotes'/'donors'.",
        },
        "in": {
            "type": "string",
            "description": "Scope shorthand: the class or function whose code the rules search, "
            "as a dotted name (GPUModelRunner.sample); absent: the whole file.",
        },
        "evidence": {**_ROLE, "description": "Rules that must each match: the claim's evidence."},
        "counterexample": {**_ROLE, "description": "Rules none of which may match: code "
                           "that contradicts the claim."},
        "utils": {"type": "object", "description": "Named rules shared by all the rules "
                  "of this claim (merged into each config's own 'utils')."},
    },
}

# --- provenance beyond the tree: git sources, remote pins, donor patches -------------

COMMIT: dict[str, Any] = {
    "type": "string",
    "pattern": _HEX40,
    "x-message": "not a full commit id: 40 hexadecimal characters expected",
}

GIT_REF: dict[str, Any] = {
    "type": "object",
    "description": "A ref recorded at audit time: where it pointed, and whether it may move.",
    "additionalProperties": False,
    "required": ["commit"],
    "properties": {
        "commit": {**COMMIT, "description": "The commit the ref pointed at when recorded."},
        "moving": {
            "type": "boolean",
            "description": "true: the ref is expected to move (a move is reported, not failed); "
            "false (default): the ref is fixed and a move is a failure.",
        },
    },
}

GIT_CONTENT: dict[str, Any] = {
    "type": "object",
    "description": "What a commit contains (under 'contains') or must not contain (under "
    "'lacks'): a file 'path', a file's bytes ('sha256'), or a remote/donor pin's bytes "
    "('donor'). 'contains' with a path: that file exists (with those bytes when given); "
    "without: some file has those bytes. 'lacks': no file at the path and no file "
    "anywhere with those bytes.",
    "additionalProperties": False,
    "properties": {
        "commit": {**COMMIT, "description": "Commit to look in (default: the source's pinned commit)."},
        "path": {"type": "string", "pattern": _PATH, "description": "A path in the commit's tree."},
        "sha256": {**HEX64, "description": "The file's bytes, by SHA-256."},
        "donor": {
            "type": "string",
            "pattern": _ID,
            "description": "A pin under 'donors' or 'remotes': its pinned bytes (same as its sha256).",
        },
        "claim": {"type": "string", "description": "What the audit says this shows."},
    },
    "anyOf": [{"required": ["path"]}, {"required": ["sha256"]}, {"required": ["donor"]}],
    "x-message": "say what to look for: 'path', 'sha256' or 'donor'",
}

GIT_SOURCE: dict[str, Any] = {
    "type": "object",
    "description": "A git repository named by the audit. At run time `--repo NAME=PATH` points "
    "at a local clone; files are read from the pinned commit's blobs, never the work tree.",
    "additionalProperties": False,
    "required": ["kind", "commit"],
    "properties": {
        "kind": {"const": "git", "description": "The only kind of named source: a git repository."},
        "commit": {**COMMIT, "description": "Pinned commit: citations in this source are read here."},
        "url": {"type": "string", "description": "Where the repository is published (never fetched)."},
        "title": {"type": "string"},
        "files": {
            "type": "object",
            "description": "SHA-256 pins of files at the pinned commit: path -> hex digest.",
            "propertyNames": {"pattern": _PATH},
            "additionalProperties": HEX64,
        },
        "refs": {
            "type": "object",
            "description": "Refs recorded at audit time: branch or tag name -> {commit, moving}.",
            "propertyNames": {"pattern": "^[A-Za-z0-9][A-Za-z0-9._/-]*$"},
            "additionalProperties": GIT_REF,
        },
        "contains": {
            "type": "object",
            "description": "id -> what a commit of this repository must contain.",
            "propertyNames": {"pattern": _ID},
            "additionalProperties": GIT_CONTENT,
        },
        "lacks": {
            "type": "object",
            "description": "id -> what a commit of this repository must not contain "
            "(e.g. a historical commit that must not be cited for a patch).",
            "propertyNames": {"pattern": _ID},
            "additionalProperties": GIT_CONTENT,
        },
    },
}

_REMOTE_PROPS: dict[str, Any] = {
    "url": {
        "type": "string",
        "pattern": "^[Hh][Tt][Tt][Pp][Ss]?://",
        "x-message": "not an http(s) URL",
        "description": "The pinned file's address, as the audit cites it.",
    },
    "download": {
        "type": "string",
        "pattern": "^[Hh][Tt][Tt][Pp][Ss]?://",
        "x-message": "not an http(s) URL",
        "description": "The address actually downloaded (default: url), e.g. the raw form of a "
        "web page's URL. https only (plain http only for loopback addresses).",
    },
    "sha256": {**HEX64, "description": "SHA-256 of the file's bytes; checked before it is cached."},
    "commit": {**COMMIT, "description": "The upstream commit the URL pins (for the report)."},
    "path": {
        "type": "string",
        "pattern": _PATH,
        "description": "Logical path citations use for this file (default: the URL's last segment).",
    },
    "title": {"type": "string"},
}

REMOTE: dict[str, Any] = {
    "type": "object",
    "description": "A file pinned by URL and SHA-256, fetched by `pp1audit fetch` into a "
    "content-addressed cache; `check` reads only the cache.",
    "additionalProperties": False,
    "required": ["url", "sha256"],
    "properties": _REMOTE_PROPS,
}

DONOR: dict[str, Any] = {
    "type": "object",
    "description": "A donor patch pinned by URL and SHA-256; its hunks are looked for in a tree.",
    "additionalProperties": False,
    "required": ["url", "sha256"],
    "properties": {
        **_REMOTE_PROPS,
        "expect": {
            "enum": ["applied", "not-applied"],
            "description": "What the audit states: every hunk applied, or none applied. "
            "Absent: the hunk status is reported as information.",
        },
        "applies_to": {
            "type": "string",
            "pattern": _ID,
            "description": "Tree the hunks are looked for in: 'target' (default) or a git source.",
        },
        "strip": {
            "type": "integer",
            "minimum": 0,
            "description": "Leading path components removed from the patch's paths (default 1, "
            "as `patch -p1`: a/vllm/x.py -> vllm/x.py).",
        },
    },
}

# --- the audit's prose, rendered by `pp1audit report` (see pp1audit/formats/markdown.py) --------

_EVIDENCE: dict[str, Any] = {
    "type": "array",
    "items": {"type": "string"},
    "description": "Ids of the checks this block rests on (citations, invariants, "
    "'file:PATH', 'version', sources, donors); measured results are printed under it.",
}

REPORT: dict[str, Any] = {
    "type": "object",
    "description": "The audit's prose. Text may use [[=key.path]], [[cite:ID]], "
    "[[cite:ID|tail/of/path.py]] and [[lines:ID]]: rendered from the pins, never typed twice.",
    "additionalProperties": False,
    "properties": {
        "title": {"type": "string"},
        "sections": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "heading": {"type": "string"},
                    "blocks": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "additionalProperties": False,
                            "properties": {
                                "text": {"type": "string", "description": "A paragraph."},
                                "bullet": {"type": "string", "description": "A list item."},
                                "table": {"enum": ["files"], "description": "The pinned files."},
                                "prefix": {"type": "string", "description": "table: paths under this."},
                                "header": {"type": "array", "items": {"type": "string"}},
                                "evidence": _EVIDENCE,
                            },
                            "oneOf": [
                                {"required": ["text"]}, {"required": ["bullet"]}, {"required": ["table"]},
                            ],
                            "x-message": "a block is exactly one of 'text', 'bullet' or 'table'",
                        },
                    },
                },
            },
        },
    },
}

REFERENCE: dict[str, Any] = {
    "type": "object",
    "description": "A reference the audit cites but does not pin by digest (papers, upstream "
    "files resolved by commit): recorded for the report, not checked.",
    "additionalProperties": False,
    "required": ["url"],
    "properties": {
        "title": {"type": "string"},
        "url": {"type": "string"},
        "commit": COMMIT,
        "note": {"type": "string"},
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
                "record": {
                    "type": "boolean",
                    "description": "Verify the whole distribution against its *.dist-info/RECORD, "
                    "bytecode and import shadowing (as `check --record`).",
                },
                "tree_sha256": {
                    **HEX64,
                    "description": "Tree digest of every file under the package directory "
                    "(see pp1audit/checks/treedigest.py for the exact byte format).",
                },
                "startup_sha256": {
                    **HEX64,
                    "description": "Startup digest of the code that runs at every interpreter "
                    "start: executing .pth files, sitecustomize/usercustomize and the modules a "
                    "vouched .pth imports (see pp1audit/checks/treedigest.py for the exact byte format).",
                },
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
        "sources": {
            "type": "object",
            "description": "Named git sources: name -> pinned commit, refs, contains/lacks.",
            "propertyNames": {"pattern": _ID},
            "additionalProperties": GIT_SOURCE,
        },
        "remotes": {
            "type": "object",
            "description": "Other pinned remote files (e.g. an upstream file at a commit).",
            "propertyNames": {"pattern": _ID},
            "additionalProperties": REMOTE,
        },
        "donors": {
            "type": "object",
            "description": "Donor patches: pinned remote files whose hunks are checked in a tree.",
            "propertyNames": {"pattern": _ID},
            "additionalProperties": DONOR,
        },
        "references": {
            "type": "object",
            "propertyNames": {"pattern": _ID},
            "additionalProperties": REFERENCE,
        },
        "report": REPORT,
        "invariants": {
            "type": "object",
            "description": "Structural invariants: id -> rule on a Python file of the target.",
            "propertyNames": {"pattern": _ID},
            "additionalProperties": INVARIANT,
        },
    },
}


def unknown_key(key: str, valid: list[str], what: str = "valid keys here:") -> str:
    """The message for a key the schema (or ``rules``, for nested rules) does not know: the
    valid keys, and the closest one when the key looks like a typo of it (``wher``)."""
    import difflib

    close = difflib.get_close_matches(key, valid, n=1)
    guess = f"; did you mean '{close[0]}'?" if close else ""
    return f"unknown key '{key}' ({what} {', '.join(valid)}{guess})"


@functools.cache
def validator() -> Any:
    """The compiled jsonschema-rs validator of ``SCHEMA`` (built once, ~2 ms).

    Its ``pattern`` follows ECMA 262 (``$`` is the very end), as JSON Schema asks:
    a digest written as a block scalar, with its trailing newline, is refused.
    """
    import jsonschema_rs

    return jsonschema_rs.validator_for(SCHEMA)
