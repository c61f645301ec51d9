"""Edit a manifest's text in place: only the values that change are rewritten.

``pin`` changes a few values of a manifest that people wrote by hand (version,
digests, spans, anchor text) and adds or removes a few entries; prose, ids,
comments, key order, quoting and indentation are the authors', and a re-pin
must come back as a small reviewable diff. PyYAML's composer gives every node
its exact place in the text, so an edit replaces the slice a value was written
in with the new value, written by PyYAML's emitter in the old value's style
(``render``); an entry added or removed is a whole line, or ``key: value``
between the commas of a flow mapping. ``TextDoc.text`` then loads the result
with the manifest loader and refuses it unless it holds exactly the data the
edits meant: a layout this cannot edit is an error, never a silent rewrite.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import yaml

from pp1audit.errors import ManifestError, Pp1Error

_STR = "tag:yaml.org,2002:str"
_MAP = "tag:yaml.org,2002:map"
_WIDTH = 1 << 16
"""Never wrap a line: a re-pin must not reflow the author's lines."""
_LOADERS = tuple({getattr(yaml, "CSafeLoader", yaml.SafeLoader), yaml.SafeLoader})
_BLOCK_HEADER = re.compile(r"[|>][0-9+-]*")

Keys = tuple[str, ...]
"""A key path in a manifest: ``("citations", "some-id", "at")``."""


def hidden(text: str) -> bool:
    """True when ``text`` holds a character that text output shows escaped
    (``safetext``: a control, a bidi override, a zero-width character) other
    than a line break or a tab, which a YAML block holds as they are."""
    from pp1audit.text.safe import printable_code

    plain = text.replace("\n", "").replace("\t", "")
    return printable_code(plain) != plain


def _emit(value: str, style: str | None, step: int, flow: bool) -> str:
    """``value`` as PyYAML writes it for the key ``k`` (``k: …`` or ``{k: …}``), the key cut off.

    A scalar holding a ``hidden`` character is written double-quoted with every
    non-ASCII character escaped (``"e\\u202Evil.py"``): a manifest is read on
    terminals and in review diffs, where U+202E written as it is would reorder
    what a reviewer sees (Trojan Source), though YAML would load it exactly.
    """
    secret = hidden(value)
    node = yaml.MappingNode(_MAP, [(yaml.ScalarNode(_STR, "k"),
                                    yaml.ScalarNode(_STR, value, style='"' if secret else style))],
                            flow_style=flow)
    out = yaml.serialize(node, Dumper=yaml.SafeDumper, width=_WIDTH, indent=step,
                         allow_unicode=not secret)
    out = out.removesuffix("\n...\n").removesuffix("\n")
    return (out[1:-1] if flow else out)[3:]


def _literal(value: str, step: int) -> str | None:
    """``value`` as a literal block (``|``) indented by ``step``, or None when a block
    cannot hold it.

    Whether it can is PyYAML's emitter's rule (no trailing space, no control
    character), except that a tab is allowed, as code has them; the block is then
    read back by libyaml and by the pure-Python loader, as a manifest reader will
    (libyaml refuses a block whose first line starts with a tab).
    """
    if not value or not _emit(value.replace("\t", "x"), "|", step, False).startswith("|"):
        return None
    hint = str(step) if value[0] in " \n" else ""
    chomp = "" if value.endswith("\n") else "-"
    if value.endswith("\n\n") or value == "\n":
        chomp = "+"
    lines = value.removesuffix("\n").split("\n")
    text = f"|{hint}{chomp}" + "".join("\n" + (" " * step + x if x else "") for x in lines)
    try:
        ok = all(yaml.load(f"k: {text}\n", Loader=ld) == {"k": value} for ld in _LOADERS)
    except yaml.YAMLError:
        ok = False
    return text if ok else None


def render(value: str, style: str | None = None, *, col: int = 0, step: int = 2,
           flow: bool = False) -> str:
    """``value`` as a YAML scalar for a mapping value whose key stands at column ``col``.

    ``style`` is the old value's (``'``, ``"``, ``|``, ``>`` or None for plain) and is
    kept where it can hold the new text; a value of several lines is a literal
    block, which keeps code readable, and double-quoted (with escapes) where a
    block cannot hold it. A plain value that would load as something else
    (``1.0``, ``yes``) is quoted. Lines after the first are indented for ``col``.
    """
    text: str | None = None
    if not flow and not hidden(value) and (style in ("|", ">") or ("\n" in value and style is None)):
        text = _literal(value, step)
    if text is None:
        text = _emit(value, None if style in ("|", ">") else style, step, flow)
        if style is None and text.startswith("'") and "'" in value:  # 'it''s' reads worse
            text = _emit(value, '"', step, flow)
    first, *rest = text.split("\n")
    return "\n".join([first, *((" " * col + x if x else x) for x in rest)])


def dump(data: dict[str, Any], comment: str) -> str:
    """A manifest built in code (``init``): two-space nested mappings, text in blocks."""
    out = [f"# {comment}\n"]

    def walk(mapping: dict[str, Any], col: int) -> None:
        for key, value in mapping.items():
            head = " " * col + _emit(key, None, 2, False)
            if isinstance(value, dict):
                out.append(f"{head}:\n")
                walk(value, col + 2)
            else:
                shown = str(value) if isinstance(value, int) else render(value, col=col)
                out.append(f"{head}: {shown}\n")

    walk(data, 0)
    return "".join(out)


def _scalars(node: yaml.Node) -> Iterator[yaml.ScalarNode]:
    """Every scalar in ``node``, keys included."""
    if isinstance(node, yaml.ScalarNode):
        yield node
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            yield from _scalars(item)
    elif isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            yield from _scalars(key)
            yield from _scalars(value)


@dataclass(frozen=True)
class _Entry:
    mapping: yaml.MappingNode
    key: yaml.Node
    value: yaml.Node


def _differs(a: Any, b: Any, path: Keys = ()) -> str | None:
    """The key path of the first place where ``a`` and ``b`` differ, or None."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in dict.fromkeys([*a, *b]):
            where = _differs(a.get(k), b.get(k), (*path, k)) if k in a and k in b else (
                ".".join((*path, k)))
            if where is not None:
                return where
        return None if list(a) == list(b) else ".".join(path) or "(top)"
    return None if a == b else ".".join(path) or "(top)"


class TextDoc:
    """A manifest's text, the edits planned on it, and the data they mean.

    Every edit is a slice of the original text (start, end, replacement),
    applied together at the end; ``data`` is the manifest's data as loaded,
    edited alongside, and is what the edited text must load to.
    """

    def __init__(self, text: str, name: str) -> None:
        from pp1audit.manifest.yamlpos import load

        self.src = text
        self.name = name
        self.eol = "\r\n" if "\r\n" in text else "\n"
        self.data: Any = copy.deepcopy(load(text, name).data)
        self._edits: list[tuple[int, int, str]] = []
        self._notes: dict[Keys, tuple[int, int, str]] = {}
        self._entries: dict[Keys, _Entry] = {}
        root = yaml.compose(text, Loader=_LOADERS[0])
        self.step = 0
        if isinstance(root, yaml.MappingNode):
            self._index(root, ())
        self.step = self.step or 2

    def _index(self, node: yaml.MappingNode, path: Keys) -> None:
        for key, value in node.value:
            sub = (*path, str(key.value))
            self._entries[sub] = _Entry(node, key, value)
            if isinstance(value, yaml.MappingNode):
                if not self.step and not value.flow_style and value.value:
                    self.step = value.value[0][0].start_mark.column - key.start_mark.column
                self._index(value, sub)

    # -- places in the text ---------------------------------------------------------
    def _line_start(self, i: int) -> int:
        return self.src.rfind("\n", 0, i) + 1

    def _line_end(self, i: int) -> int:
        """Where the line holding ``i`` ends, before its line break."""
        j = self.src.find("\n", i)
        j = len(self.src) if j < 0 else j
        return j - 1 if j > i and self.src[j - 1] == "\r" else j

    def _next_line(self, i: int) -> int:
        j = self.src.find("\n", i)
        return len(self.src) if j < 0 else j + 1

    def _end(self, node: yaml.Node) -> int:
        """Where ``node``'s text ends: a block collection ends with its last value (its
        end mark lies past the comments that follow), a block scalar with its last
        line that holds text, or its last line of all when it keeps (``|+``) them."""
        if isinstance(node, yaml.ScalarNode) and node.style in ("|", ">"):
            start, end = node.start_mark.index, node.end_mark.index
            if "+" in _BLOCK_HEADER.match(self.src, start)[0]:  # type: ignore[index]
                return end - (self.src[end - 2 : end] == "\r\n") - (self.src[end - 1 : end] == "\n")
            return self._line_end(start + len(self.src[start:end].rstrip()) - 1)
        if isinstance(node, (yaml.MappingNode, yaml.SequenceNode)) and not node.flow_style:
            last = node.value[-1]
            return self._end(last[1] if isinstance(node, yaml.MappingNode) else last)
        return int(node.end_mark.index)

    def _edit(self, start: int, end: int, new: str) -> None:
        self._edits.append((start, end, new.replace("\n", self.eol)))

    def _refuse(self, path: Keys, why: str) -> Pp1Error:
        return Pp1Error(f"{self.name}: pin: cannot edit {'.'.join(path)} in place ({why}); "
                        "nothing written")

    # -- edits ----------------------------------------------------------------------
    def get(self, path: Keys) -> Any:
        """The value at ``path`` in the data as edited so far, or None."""
        node: Any = self.data
        for key in path:
            node = node.get(key) if isinstance(node, dict) else None
        return node

    def _put(self, path: Keys, value: Any) -> None:
        parent = self.get(path[:-1])
        assert isinstance(parent, dict)
        if value is None:
            del parent[path[-1]]
        else:
            parent[path[-1]] = value

    def set(self, path: Keys, value: str) -> bool:
        """Set the scalar at ``path`` in its old style; True when the value changed.

        A block's header comment stays on its header; a one-line value that becomes
        a block takes the comment that ended its line up onto the header.
        """
        if self.get(path) == value:
            return False
        e = self._entries[path]
        node, col = e.value, e.key.start_mark.column
        if not isinstance(node, yaml.ScalarNode):
            raise self._refuse(path, "not a scalar")
        start, end = node.start_mark.index, self._end(node)
        style, step, trail = node.style or None, self.step, ""
        if style in ("|", ">"):
            header = self.src[start : self._line_end(start)]
            indicators = _BLOCK_HEADER.match(header)[0]  # type: ignore[index]
            trail = header[len(indicators) :]
            first = next((x for x in self.src[start:end].split("\n")[1:] if x.strip()), "")
            digits = indicators.strip("|>+-")
            step = int(digits) if digits else max(1, len(first) - len(first.lstrip(" ")) - col)
        new = render(value, style, col=col, step=step, flow=bool(e.mapping.flow_style))
        if new[0] in "|>":
            if style not in ("|", ">"):
                trail, end = self.src[end : self._line_end(end)], self._line_end(end)
            below = self.src[self._next_line(end) : self._line_end(self._next_line(end))]
            if "+" in new.split("\n", 1)[0] and not below.strip() and self._next_line(end) < len(self.src):
                new = render(value, '"', col=col)  # blank lines below would join a kept block
            else:
                head, _, body = new.partition("\n")
                new = f"{head}{trail}\n{body}"
        else:
            new += trail
        self._edit(start, end, new)
        self._put(path, value)
        return True

    def drop(self, path: Keys) -> None:
        """Delete the entry at ``path``: its lines, with the comment that ends its last
        line; comment lines after it stay, as the author's."""
        e = self._entries[path]
        pairs = e.mapping.value
        i = next(n for n, (k, _) in enumerate(pairs) if k is e.key)
        if e.mapping.flow_style:
            if len(pairs) == 1:
                start, end = e.key.start_mark.index, self._end(e.value)
            elif i:
                start, end = self._end(pairs[i - 1][1]), self._end(e.value)
            else:
                start, end = e.key.start_mark.index, pairs[1][0].start_mark.index
        else:
            start, end = self._line_start(e.key.start_mark.index), self._end(e.value)
            after = self.src[end : self._line_end(end)].strip()
            if self.src[start : e.key.start_mark.index].strip() or after[:1] not in ("", "#"):
                raise self._refuse(path, "it shares a line with another entry")
            end = self._next_line(end)
        self._edit(start, end, "")
        self._put(path, None)

    def insert(self, path: Keys, key: str, value: str, after: str) -> None:
        """Add ``key: value`` to the mapping at ``path``, after its entry ``after``."""
        e = self._entries[(*path, after)]
        end = self._end(e.value)
        col = e.key.start_mark.column
        if e.mapping.flow_style:
            self._edit(end, end, f", {key}: {render(value, flow=True)}")
        else:
            at = self._next_line(end)
            lead = "" if self.src[at - 1 : at] == "\n" else "\n"
            self._edit(at, at, f"{lead}{' ' * col}{key}: {render(value, col=col, step=self.step)}\n")
        mapping = self.get(path)
        assert isinstance(mapping, dict)
        items = list(mapping.items())
        pos = [k for k, _ in items].index(after) + 1
        mapping.clear()
        mapping.update([*items[:pos], (key, value), *items[pos:]])

    def note(self, path: Keys, prefix: str, text: str | None) -> bool:
        """Put ``# text`` at the end of the entry's key line, or take it off (``text``
        None); True when that changes the line.

        An earlier note is known by ``prefix`` (its text starts with it), so a
        re-run replaces its own note and never touches the author's comment on
        that line, which the note follows. The line is the key's, unless a quoted
        or plain scalar of the value runs on from it to the next (a comment there
        would cut it or become its text): then the value's last line.
        """
        e = self._entries.get(path)
        if e is None:
            return False
        line = e.key.start_mark.line
        runs_on = any(n.start_mark.line <= line < n.end_mark.line and n.style not in ("|", ">")
                      for n in _scalars(e.value))
        at = e.value.end_mark.index if runs_on else e.key.end_mark.index
        line_end = self._line_end(at)
        body = self.src[at:line_end]
        m = re.search(r"(?:^|[ \t]+)#[ \t]*" + re.escape(prefix), body)
        old = body[m.start() :].strip(" \t")[1:].strip(" \t") if m else None
        if old == text:
            return False
        kept = body[: m.start()] if m else body
        edit = (at + len(kept.rstrip(" \t")), line_end, "" if text is None else f"  # {text}")
        if self._notes.get(path) == edit:
            return False
        self._notes[path] = edit
        return True

    def text(self) -> str:
        """The edited text; ``Pp1Error`` (exit 2) unless it loads to exactly ``data``."""
        out = self.src
        last = len(out) + 1
        edits = [*self._edits, *self._notes.values()]
        for start, end, new in sorted(edits, key=lambda x: (x[0], x[1]), reverse=True):
            if end > last:
                raise Pp1Error(f"{self.name}: pin: internal error: overlapping edits at "
                               f"offset {start}; nothing written")
            out, last = out[:start] + new + out[end:], start
        from pp1audit.manifest.yamlpos import load

        try:
            got = load(out, self.name).data
        except ManifestError as exc:
            raise Pp1Error(f"{self.name}: pin: internal error: the edited manifest does not "
                           f"load ({exc.message}); nothing written") from None
        where = _differs(got, self.data)
        if where is not None:
            raise Pp1Error(f"{self.name}: pin: the edited manifest would not hold the values "
                           f"meant (at {where}): the layout there cannot be edited in place; "
                           "nothing written")
        return out
