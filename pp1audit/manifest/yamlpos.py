"""Safe YAML loading that remembers where every key and value was written.

Validation errors must name ``file:line:column``. PyYAML's safe composer gives
nodes with marks; this module turns them into plain Python data plus a map from
key path to position, rejecting what a manifest never needs and what hides
mistakes: duplicate keys, non-string keys, merge keys and custom tags.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import yaml

from pp1audit.errors import ManifestError

KeyPath = tuple[str | int, ...]


@dataclass(frozen=True)
class Loaded:
    """Plain data and positions ((line, column), both 1-based) by key path."""

    data: object
    positions: dict[KeyPath, tuple[int, int]]
    key_positions: dict[KeyPath, tuple[int, int]]

    def where(self, path: KeyPath) -> tuple[int, int]:
        """Position of the value at ``path``, or of its nearest written ancestor."""
        while path not in self.positions and path:
            path = path[:-1]
        return self.positions.get(path, (1, 1))


def keypath_str(path: KeyPath) -> str:
    """``citations.foo.at`` / ``list[2]`` rendering used in messages."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + part
    return out


MAX_DEPTH = 32
"""Deeper than any manifest needs; keeps hostile nesting from exhausting the stack."""

_SAFE_COMPOSE_DEPTH = 999
"""Nesting the composer may be given unchecked. libyaml's composer recurses in C, about
300 bytes of stack a level: ~25,000 levels overflow an 8 MB stack and kill the process
(SIGSEGV, no message), ~4,000 a 1 MB one. It is also below libyaml's own limit (from
0.2.6, in PyYAML 6.0.4's wheels: 1,000 levels of block and of flow nesting), so that
limit never refuses a text the walk let through: whichever PyYAML is installed, a text
this small gets ``build()``'s first problem in document order, a larger one the walk's."""

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's parser when present: same safe node tree and marks, far faster."""

_PLAIN_TAGS = {
    "tag:yaml.org,2002:str",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:null",
    "tag:yaml.org,2002:timestamp",
    "tag:yaml.org,2002:map",
    "tag:yaml.org,2002:seq",
}


def _refuse_deep_nesting(text: str, file: str) -> None:
    """Refuse nesting deeper than ``MAX_DEPTH`` before the recursive composer sees it.

    Every collection needs a character of its own among ``[ { - ? :``, so their count
    bounds the depth: a text with at most ``_SAFE_COMPOSE_DEPTH`` of them (the PP1
    manifest has under 900) goes to the composer after five ``str.count`` calls. Only
    a larger one has its parse events walked (the parser does not recurse), stopping
    at the limit.
    """
    if sum(map(text.count, "[{-?:")) > _SAFE_COMPOSE_DEPTH:
        _walk_to_depth_limit(text, file, _LOADER)


def _walk_to_depth_limit(
    text: str, file: str, loader: type[yaml.SafeLoader | yaml.CSafeLoader]
) -> None:
    """Raise at the first node deeper than ``MAX_DEPTH``, where ``build()`` would, by its mark."""
    depth = 0  # collections open around the next node: the length of its key path
    for event in yaml.parse(text, Loader=loader):
        if isinstance(event, yaml.NodeEvent):
            if depth > MAX_DEPTH:
                mark = event.start_mark
                line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
                raise ManifestError(file, line, col, "", f"nested deeper than {MAX_DEPTH}")
            depth += isinstance(event, yaml.CollectionStartEvent)
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def _hit_parser_nesting_limit(exc: yaml.MarkedYAMLError | RecursionError) -> bool:
    """Whether the parser stopped at a nesting limit of its own, not at a mistake.

    libyaml from 0.2.6 says so in its problem; PyYAML without libyaml composes by
    recursion in Python, and runs out of it a few hundred levels down.
    """
    return isinstance(exc, RecursionError) or "maximum nesting depth" in (exc.problem or "")


def _compose(text: str, file: str) -> yaml.Node | None:
    """The node tree, or ``ManifestError`` at the first node past ``MAX_DEPTH``.

    libyaml from 0.2.6 (in PyYAML 6.0.4's wheels) refuses nesting past 1,000 levels in
    its scanner, and the scanner reads up to 1,024 characters past a token that may
    start a key before handing it on: with ``[[[[...`` it stops at level 1,000 before
    the walk is given level 33, and the message would depend on the PyYAML installed.
    PyYAML's pure-Python parser has no such limit and the same look-ahead, and the node
    past ours lies before where libyaml stopped, so walking its events (slower, but
    only after such a refusal) gives the message every other PyYAML gives. A refusal
    with nothing past ours (a lower limit set in the process) keeps its own message.
    """
    try:
        _refuse_deep_nesting(text, file)
        return yaml.compose(text, Loader=_LOADER)
    except (yaml.MarkedYAMLError, RecursionError) as exc:
        if not _hit_parser_nesting_limit(exc):
            raise
        refused = exc
    _walk_to_depth_limit(text, file, yaml.SafeLoader)
    raise refused


def _reader_error(text: str, file: str, exc: yaml.reader.ReaderError) -> ManifestError:
    """A character YAML does not allow, at its line:column, in one line.

    The reader stops at the first such character, so its first occurrence is the place;
    ``exc.position`` is no substitute, being a byte offset under libyaml.
    """
    at = text.find(chr(exc.character))
    line = text.count("\n", 0, at) + 1
    col = at - text.rfind("\n", 0, at)
    control = exc.character < 0x20 or 0x7F <= exc.character <= 0x9F  # Unicode category Cc
    kind = "control character" if control else "character"
    return ManifestError(file, line, col, "", f"{kind} U+{exc.character:04X} not allowed")


def _unprintable(value: int, limit: int) -> bool:
    """Whether ``str(value)`` fails, as any later message or JSON output of it would.

    ``limit`` is Python's (``sys.get_int_max_str_digits()``; 0: none). ``10**limit``
    exceeds ``2**(3*limit)``, so the bit length rules out ordinary integers before the
    exact (and slow, ~30 us) comparison.
    """
    return limit > 0 and value.bit_length() > 3 * limit and abs(value) >= 10**limit


def _alias_after(text: str, after: tuple[int, int]) -> tuple[int, int] | None:
    """(line, column) of the first alias (``*name``) that starts after ``after``.

    The composer hands an alias over as the anchored node itself, whose marks
    are the anchor's; the alias's own place is only in the parse events. ``load``
    meets nodes in document order, so the alias it just met is the first one
    after the node it built before (a mapping's key, a sequence's previous item
    or the collection itself). Parsed again only for this error.
    """
    for event in yaml.parse(text, Loader=_LOADER):
        if isinstance(event, yaml.AliasEvent) and event.start_mark is not None:
            at = (event.start_mark.line + 1, event.start_mark.column + 1)
            if at > after:
                return at
    return None


def load(text: str, file: str) -> Loaded:
    """Parse one YAML document safely; ``ManifestError`` with line:column on any problem."""
    try:
        node = _compose(text, file)
    except yaml.reader.ReaderError as exc:
        raise _reader_error(text, file, exc) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        raise ManifestError(file, line, col, "", f"invalid YAML: {exc.problem or exc}") from None
    except yaml.YAMLError as exc:
        raise ManifestError(file, 1, 1, "", f"invalid YAML: {exc}") from None
    except RecursionError:
        raise ManifestError(file, 1, 1, "", "invalid YAML: nested too deeply") from None
    if node is None:
        raise ManifestError(file, 1, 1, "", "the manifest is empty")
    positions: dict[KeyPath, tuple[int, int]] = {}
    key_positions: dict[KeyPath, tuple[int, int]] = {}
    constructor = yaml.SafeLoader("")
    max_digits = sys.get_int_max_str_digits()
    too_long = f"integer longer than {max_digits} digits"

    def pos(n: yaml.Node) -> tuple[int, int]:
        return (n.start_mark.line + 1, n.start_mark.column + 1)

    seen: set[int] = set()
    last = [(1, 1)]  # where the node built last starts: an alias met now comes after it

    def build(n: yaml.Node, path: KeyPath) -> object:
        # An alias is the same node met twice: a manifest never needs one, and
        # expanding them is how "billion laughs" documents and cycles get in.
        if id(n) in seen:
            line, col = _alias_after(text, last[0]) or pos(n)
            raise ManifestError(file, line, col, keypath_str(path), "YAML aliases are not allowed")
        positions[path] = last[0] = pos(n)
        seen.add(id(n))
        if len(path) > MAX_DEPTH:  # no key path: the walk, finding it first, has none
            line, col = pos(n)
            raise ManifestError(file, line, col, "", f"nested deeper than {MAX_DEPTH}")
        if n.tag not in _PLAIN_TAGS:
            line, col = pos(n)
            raise ManifestError(file, line, col, keypath_str(path), f"unsupported YAML tag {n.tag}")
        if isinstance(n, yaml.MappingNode):
            out: dict[str, object] = {}
            for knode, vnode in n.value:
                if not isinstance(knode, yaml.ScalarNode) or knode.tag != "tag:yaml.org,2002:str":
                    line, col = pos(knode)
                    raise ManifestError(
                        file, line, col, keypath_str(path), "keys must be plain strings"
                    )
                key = knode.value  # a merge key (<<) has its own tag and was refused above
                if key in out:
                    line, col = pos(knode)
                    raise ManifestError(
                        file, line, col, keypath_str((*path, key)), f"duplicate key '{key}'"
                    )
                key_positions[(*path, key)] = last[0] = pos(knode)
                out[key] = build(vnode, (*path, key))
            return out
        if isinstance(n, yaml.SequenceNode):
            return [build(v, (*path, i)) for i, v in enumerate(n.value)]
        if n.tag == "tag:yaml.org,2002:str" or n.tag == "tag:yaml.org,2002:timestamp":
            return n.value  # text as written (dates too: the manifest pins what was written)
        try:
            value = constructor.construct_object(n)
        except (ValueError, KeyError):
            # int() refuses more digits than it converts; an explicit !!int, !!float or
            # !!bool may be on text that is none.
            kind = n.tag.rsplit(":", 1)[1]
            digits = sum(c.isdigit() for c in n.value)
            problem = too_long if kind == "int" and 0 < max_digits < digits else f"not a valid !!{kind}"
        else:
            # int() took a hex, octal or binary integer of any size; str() of it would fail.
            if not (isinstance(value, int) and _unprintable(value, max_digits)):
                return value
            problem = too_long
        line, col = pos(n)
        raise ManifestError(file, line, col, keypath_str(path), problem)

    data = build(node, ())
    return Loaded(data, positions, key_positions)
