"""Round-trip YAML (ruamel): edit a manifest's values and keep everything else.

``pin`` rewrites a few values of a manifest that people wrote by hand: version,
digests, spans and anchor text. Prose, ids, comments, key order, quoting and
indentation are theirs, and a re-pin must come back as a small reviewable diff,
not a reformatted file. ruamel.yaml's round-trip mode keeps comments and order;
this module adds what it cannot guess reliably (the document's indentation) and
keeps each edited scalar in the style it was written in. ruamel is imported
only here, inside functions: ``pp1audit check`` never pays for it.
"""

from __future__ import annotations

import io
import itertools
import re
from dataclasses import dataclass
from typing import Any

_KEY_OPENS_BLOCK = re.compile(r"^(?P<ind> *)(?:- +)?[^\s#-][^#]*:\s*(?:#.*)?$")


@dataclass(frozen=True)
class Indent:
    """Indentation of a YAML document, as ruamel's ``YAML.indent`` takes it."""

    mapping: int = 2
    sequence: int = 2
    offset: int = 0


def guess_indent(text: str) -> Indent:
    """The indentation the author used: nested mapping step, and dash offset of lists.

    ruamel's own guess looks at the first list only and can take a list's
    indentation for the mapping step; this looks at the first nested mapping and
    the first block list separately.
    """
    mapping: int | None = None
    offset: int | None = None
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = _KEY_OPENS_BLOCK.match(line)
        if not m:
            continue
        parent = len(m["ind"])
        nxt = next((x for x in lines[i + 1 :] if x.strip() and not x.lstrip().startswith("#")), None)
        if nxt is None:
            continue
        ind = len(nxt) - len(nxt.lstrip(" "))
        if nxt.lstrip(" ").startswith("- "):
            if offset is None and ind >= parent:
                offset = ind - parent
        elif mapping is None and ind > parent and ":" in nxt:
            mapping = ind - parent
        if mapping is not None and offset is not None:
            break
    mapping = mapping or 2
    offset = offset or 0
    return Indent(mapping=mapping, sequence=max(mapping, offset + 2), offset=offset)


def make_yaml(indent: Indent | None = None) -> Any:
    """A round-trip ``YAML`` instance: quotes kept, no line re-wrapping."""
    from ruamel.yaml import YAML

    ind = indent or Indent()
    y = YAML(typ="rt")
    y.preserve_quotes = True
    y.width = 1 << 16
    y.indent(mapping=ind.mapping, sequence=ind.sequence, offset=ind.offset)
    return y


@dataclass
class Document:
    """A manifest loaded for editing: the ruamel tree and how to write it back."""

    data: Any
    indent: Indent

    def dump(self) -> str:
        """The document as text, in the author's indentation."""
        out = io.StringIO()
        make_yaml(self.indent).dump(self.data, out)
        return out.getvalue()


def load_document(text: str) -> Document:
    """Load YAML text for round-trip editing (the text was validated already)."""
    indent = guess_indent(text)
    return Document(make_yaml(indent).load(text), indent)


def dump_new(data: Any) -> str:
    """Dump a document built in code (``init``) with the project's default layout."""
    out = io.StringIO()
    make_yaml(Indent(mapping=2, sequence=4, offset=2)).dump(data, out)
    return out.getvalue()


def _reads_back(value: Any) -> bool:
    """True when ``value``, dumped in its scalar style, loads back as the same text.

    A literal block cannot hold every line of source: control characters such
    as a form feed are not allowed in it, and libyaml (which ``check`` uses when
    installed) refuses a block whose first line starts with a tab. Rather than
    predict each parser's rules, the value is written and read back, by libyaml
    and by the pure-Python loader, as a manifest reader will.
    """
    import yaml

    out = io.StringIO()
    make_yaml().dump({"k": value}, out)
    loaders = {getattr(yaml, "CSafeLoader", yaml.SafeLoader), yaml.SafeLoader}
    try:
        return all(yaml.load(out.getvalue(), Loader=ld) == {"k": str(value)} for ld in loaders)
    except yaml.YAMLError:
        return False


def text_scalar(text: str) -> Any:
    """``text`` as a literal block (``|``) when YAML reads it back unchanged, else double-quoted.

    Code stays readable as a literal block; the rare line a block cannot hold
    (a tab first, a form feed, another control character) is written with
    escapes, so any text a file holds can be quoted as an anchor.
    """
    from ruamel.yaml.scalarstring import DoubleQuotedScalarString, LiteralScalarString

    block = LiteralScalarString(text)
    return block if _reads_back(block) else DoubleQuotedScalarString(text)


def new_map() -> Any:
    """An empty ordered, commentable mapping."""
    from ruamel.yaml.comments import CommentedMap

    return CommentedMap()


def set_scalar(mapping: Any, key: str, value: str) -> bool:
    """Set ``mapping[key]`` keeping the old scalar's style; True when the value changed.

    A quoted value stays quoted the same way, a block scalar stays a block, as
    long as that style can hold the new text (``text_scalar`` decides otherwise);
    a plain value becomes a ``text_scalar`` when the new text spans lines.
    """
    from ruamel.yaml.scalarstring import ScalarString

    old = mapping.get(key)
    if old is not None and str(old) == value:
        return False
    if isinstance(old, ScalarString):
        new: Any = type(old)(value)
        if not _reads_back(new):
            new = text_scalar(value)
    elif "\n" in value:
        new = text_scalar(value)
    else:
        new = value
    mapping[key] = new
    return True


def _key_lines(mapping: Any) -> list[tuple[str, int]] | None:
    """(key, 0-based line) of a block mapping's keys; None when they are not in order."""
    out = []
    for key in mapping:
        try:
            line = mapping.lc.key(key)[0]
        except (AttributeError, KeyError, TypeError):
            return None
        out.append((str(key), line))
    lines = [line for _, line in out]
    if any(b <= a for a, b in itertools.pairwise(lines)):
        return None  # a flow mapping, or keys on one line: cannot be cut by lines
    return out


def _segments(mapping: Any, start: int, end: int) -> tuple[int, dict[str, tuple[int, int]]] | None:
    """Line ranges of each entry of ``mapping`` within [start, end); None if not cuttable."""
    keys = _key_lines(mapping)
    if keys is None or not keys:
        return None
    bounds = [line for _, line in keys] + [end]
    if bounds[0] < start:
        return None
    return bounds[0], {k: (bounds[i], bounds[i + 1]) for i, (k, _) in enumerate(keys)}


def splice(old_text: str, new_text: str, edited: set[tuple[str, ...]],
           old_doc: Any = None) -> str:
    """``new_text`` where it was edited, ``old_text`` byte for byte everywhere else.

    ruamel keeps comments and order but re-emits every node it dumps, and it
    cannot keep every layout (a flow list wrapped by hand comes back on one
    line). A pin edits a few entries; so the document is cut by the lines of its
    top-level keys, and of second-level keys where an entry below was edited,
    and only the edited entries' lines come from the new dump. Anything that
    cannot be cut cleanly falls back to the new dump of that part (still
    correct, just reformatted); the caller proves the result loads equal.
    ``old_doc`` may be the edited document loaded from ``old_text``: its keys
    down to the second level keep the positions they were read at.
    """
    y = make_yaml()
    if old_doc is None:
        old_doc = y.load(old_text)
    new_doc = y.load(new_text)
    old_lines = old_text.splitlines(keepends=True)
    new_lines = new_text.splitlines(keepends=True)

    def cut(old_map: Any, new_map: Any, o: tuple[int, int], n: tuple[int, int], depth: int,
            prefix: tuple[str, ...]) -> list[str] | None:
        so, sn = _segments(old_map, *o), _segments(new_map, *n)
        if so is None or sn is None or list(so[1]) != list(sn[1]):
            return None
        out = old_lines[o[0] : so[0]]  # header and leading comments: unchanged
        for key, (a, b) in so[1].items():
            path = (*prefix, key)
            na, nb = sn[1][key]
            if path in edited:
                out.extend(new_lines[na:nb])
            elif depth < 2 and any(e[: len(path)] == path for e in edited):
                old_child, new_child = old_map[key], new_map[key]
                part = None
                if hasattr(old_child, "lc") and hasattr(new_child, "lc"):
                    part = cut(old_child, new_child, (a, b), (na, nb), depth + 1, path)
                out.extend(part if part is not None else new_lines[na:nb])
            else:
                out.extend(old_lines[a:b])
        return out

    result = cut(old_doc, new_doc, (0, len(old_lines)), (0, len(new_lines)), 1, ())
    return new_text if result is None else "".join(result)
