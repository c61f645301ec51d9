"""Safe YAML loading that remembers where every key and value was written.

Validation errors must name ``file:line:column``. PyYAML's safe composer gives
nodes with marks; this module turns them into plain Python data plus a map from
key path to position, rejecting what a manifest never needs and what hides
mistakes: duplicate keys, non-string keys, merge keys and custom tags.
"""

from __future__ import annotations

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


def load(text: str, file: str) -> Loaded:
    """Parse one YAML document safely; ``ManifestError`` with line:column on any problem."""
    try:
        # libyaml's parser when present: same safe node tree and marks, far faster.
        node = yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
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

    def pos(n: yaml.Node) -> tuple[int, int]:
        return (n.start_mark.line + 1, n.start_mark.column + 1)

    seen: set[int] = set()

    def build(n: yaml.Node, path: KeyPath) -> object:
        positions[path] = pos(n)
        # An alias is the same node met twice: a manifest never needs one, and
        # expanding them is how "billion laughs" documents and cycles get in.
        if id(n) in seen:
            line, col = pos(n)
            raise ManifestError(file, line, col, keypath_str(path), "YAML aliases are not allowed")
        seen.add(id(n))
        if len(path) > MAX_DEPTH:
            line, col = pos(n)
            raise ManifestError(file, line, col, keypath_str(path), f"nested deeper than {MAX_DEPTH}")
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
                key_positions[(*path, key)] = pos(knode)
                out[key] = build(vnode, (*path, key))
            return out
        if isinstance(n, yaml.SequenceNode):
            return [build(v, (*path, i)) for i, v in enumerate(n.value)]
        if n.tag == "tag:yaml.org,2002:timestamp":
            return str(n.value)  # dates stay text: the manifest pins what was written
        return constructor.construct_object(n)

    data = build(node, ())
    return Loaded(data, positions, key_positions)
