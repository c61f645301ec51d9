"""Schema errors explained: the one a person should read first, at its ``file:line:column``.

jsonschema-rs decides; this module picks the most relevant error (as jsonschema's
``best_match`` does) and words it: an unknown key with the closest valid one, a value
YAML read as a number where text was meant, a missing key.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from pp1audit.errors import ManifestError
from pp1audit.manifest.paths import path_problem
from pp1audit.manifest.yamlpos import KeyPath, Loaded, keypath_str

if TYPE_CHECKING:
    pass

TARGET = "target"
"""The name of the audited tree among sources (``pp1audit.manifest.provenance.TARGET``)."""

if TYPE_CHECKING:  # pragma: no cover
    pass


def fail_at(loaded: Loaded, file: str, path: KeyPath, message: str, *, key: bool = False) -> ManifestError:
    pos = loaded.key_positions.get(path) if key else None
    line, col = pos or loaded.where(path)
    return ManifestError(file, line, col, keypath_str(path), message)


def _read_as_text_hint(text: str, loaded: Loaded, path: KeyPath, value: object) -> str | None:
    """For a number or boolean where text belongs (``version: 1.10``): what was
    written, what YAML made of it and the fix, since the schema's "1.1 is not of
    type 'string'" shows the converted value, not the typed one. None when the
    written token cannot be found (a value over several lines) or is not a plain
    scalar: a tag (``!!float 1``), an anchor or an alias says what it is on purpose,
    and quoting would not be the fix. A hint that fails is no hint: the schema's
    message stands."""
    import yaml

    line, col = loaded.where(path)
    lines = text.splitlines()
    if not 0 < line <= len(lines):
        return None
    # A plain scalar read as a number or boolean starts with a digit, sign, dot or
    # letter; a tag (!), anchor (&), alias (*) or quote does not.
    m = re.match(r"[-+.\w][^\s,\]}#]*", lines[line - 1][col - 1:])
    if m is None:
        return None
    written = m.group()
    try:
        same = yaml.safe_load(written) == value
    except Exception:  # the hint only explains an error; it must not be one
        same = False
    if not same:
        return None
    kind = "a boolean" if isinstance(value, bool) else "a number"
    shown = str(value).lower() if isinstance(value, bool) else str(value)
    read = kind if shown == written else f"{kind} ({shown})"
    return f"{written} is read as {read}, not as text: quote it ('{written}')"


def schema_check(loaded: Loaded, file: str, text: str = "") -> None:
    """Validate against the JSON Schema; on failure, explain the best error precisely.

    jsonschema-rs validates (a compiled Rust validator: about 15 ms to import and
    build against jsonschema's ~170 ms import, which alone would exceed a whole
    ``check``'s budget); its errors carry exact key paths and the failing keyword.
    """
    from jsonschema_rs import ValidationErrorKind as Kind

    from pp1audit.manifest.schema import unknown_key, validator

    errors = list(validator().iter_errors(loaded.data))
    if not errors:
        return
    best = _best_match(errors)
    path: KeyPath = tuple(best.instance_path)
    sub = _subschema(list(best.schema_path))
    kind = best.kind
    node = _get(loaded.data, path)
    if isinstance(kind, Kind.AdditionalProperties) and isinstance(node, dict):
        known = list(sub.get("properties", {}))
        extra = next((k for k in node if k not in known), None)
        if extra is not None:
            raise fail_at(loaded, file, (*path, extra), unknown_key(str(extra), known), key=True)
    if isinstance(kind, Kind.PropertyNames) and isinstance(node, dict):
        # The offending thing is a key, not a value.
        key = str(kind.error.instance)
        message = (
            path_problem(key)
            or sub.get("x-message")
            or f"'{key}' is not a valid name here"
        )
        raise fail_at(loaded, file, (*path, key), message, key=True)
    if isinstance(kind, Kind.Required) and isinstance(node, dict):
        raise fail_at(loaded, file, path, f"missing required key '{kind.property}'")
    if isinstance(kind, Kind.Type) and "string" in kind.types \
            and isinstance(best.instance, int | float):  # bool is an int
        hint = _read_as_text_hint(text, loaded, path, best.instance)
        if hint is not None:
            raise fail_at(loaded, file, path, hint)
    message = sub.get("x-message") or _plain(best.message)
    raise fail_at(loaded, file, path, str(message))


_WEAK = ("AnyOf", "OneOfNotValid")


def _relevance(error: Any) -> tuple[int, bool]:
    """jsonschema's ``best_match`` order: shallow errors first, ``anyOf``/``oneOf`` last."""
    return (-len(error.instance_path), type(error.kind).__name__ not in _WEAK)


def _best_match(errors: list[Any]) -> Any:
    """The error a person should read first, as jsonschema's ``best_match`` picks it:
    the most relevant one, then down an ``anyOf``/``oneOf`` into its most specific
    branch error, unless the branches tie (then the alternatives' own message)."""
    best = max(errors, key=_relevance)
    while getattr(best.kind, "context", None):
        branch = sorted((e for errs in best.kind.context for e in errs), key=_relevance)
        if len(branch) > 1 and _relevance(branch[0]) == _relevance(branch[1]):
            return best
        best = branch[0]
    return best


def _subschema(schema_path: list[str | int]) -> dict[str, Any]:
    """The schema object holding the failing keyword (where its ``x-message`` lives)."""
    from pp1audit.manifest.schema import SCHEMA

    node: Any = SCHEMA
    for part in schema_path[:-1]:
        node = node[part]
    return node if isinstance(node, dict) else {}


def _plain(message: str) -> str:
    """jsonschema-rs quotes names JSON's way ("a"); messages here quote them 'a'."""
    return re.sub(r'"([^"\\]*)"', r"'\1'", message)


def _get(data: object, path: KeyPath) -> object:
    for p in path:
        if isinstance(data, dict):
            data = data.get(p)
        elif isinstance(data, list) and isinstance(p, int) and p < len(data):
            data = data[p]
        else:
            return None
    return data


