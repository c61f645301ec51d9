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

import functools
import io
import itertools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
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


def hidden(text: str) -> bool:
    """True when ``text`` holds a character that text output shows escaped
    (``safetext``: a control, a bidi override, a zero-width character) other
    than a line break or a tab, which a YAML block holds as they are."""
    from pp1audit.text.safe import printable_code

    plain = text.replace("\n", "").replace("\t", "")
    return printable_code(plain) != plain


@functools.cache
def _emitter() -> type:
    """ruamel's round-trip emitter, writing a scalar that holds a ``hidden`` character
    double-quoted, that character as a YAML escape (``"e\u202Evil.py"``).

    A manifest is read on terminals and in review diffs: a file name or a cited
    line holding U+202E written as it is would reorder what a reviewer sees
    (Trojan Source), though YAML would load it exactly. Escaped, the file's bytes
    show what they hold and load back to the same text. Every other scalar is
    written as before (``é`` stays ``é``).
    """
    from ruamel.yaml.emitter import RoundTripEmitter

    class SafeEmitter(RoundTripEmitter):
        def choose_scalar_style(self) -> Any:
            style = super().choose_scalar_style()
            value = str(self.event.value)
            if style == ">":  # ruamel marks a folded scalar's folds with BEL
                value = value.replace("\a", "")
            if style is not None and style != '"' and hidden(value):
                return '"'
            return style

        def write_double_quoted(self, text: Any, split: Any = True) -> None:
            if not hidden(text):
                return super().write_double_quoted(text, split)
            unicode, self.allow_unicode = self.allow_unicode, False  # every non-ASCII escaped
            try:
                return super().write_double_quoted(text, split)
            finally:
                self.allow_unicode = unicode

    return SafeEmitter


def make_yaml(indent: Indent | None = None) -> Any:
    """A round-trip ``YAML`` instance: quotes kept, no line re-wrapping, hidden
    characters written as escapes (``_emitter``)."""
    from ruamel.yaml import YAML

    ind = indent or Indent()
    y = YAML(typ="rt")
    y.Emitter = _emitter()
    y.preserve_quotes = True
    y.width = 1 << 16
    y.indent(mapping=ind.mapping, sequence=ind.sequence, offset=ind.offset)
    return y


@dataclass
class Document:
    """A manifest loaded for editing: the ruamel tree and how to write it back."""

    data: Any
    indent: Indent
    lines: list[str] = field(default_factory=list)
    """The text it was loaded from, by line (LF), as ``lc`` positions count them."""

    def dump(self) -> str:
        """The document as text, in the author's indentation."""
        out = io.StringIO()
        make_yaml(self.indent).dump(self.data, out)
        return out.getvalue()

    def note(self, mapping: Any, key: Any, note: Note) -> bool:
        """Put ``note`` on ``key``'s entry (or take it off); True when the entry changes.

        The tree is edited for a re-emitted entry; the key line as loaded is
        asked too, because ruamel keeps a comment after a line of a flow
        mapping wrapped by hand inside that mapping, not on the entry.
        """
        in_tree = note.apply(mapping, key)
        try:
            line = self.lines[mapping.lc.key(key)[0]]
        except (AttributeError, KeyError, TypeError, IndexError):
            return in_tree
        return note.changes(line.rstrip("\n")) or in_tree


def load_document(text: str) -> Document:
    """Load YAML text for round-trip editing (the text was validated already).

    A CRLF text is read as LF: ruamel keeps the carriage returns inside its
    comment tokens and loses the blank line after a flow mapping, so an entry
    it re-emits would lose the blank line before the next key's comment. The
    lines are the same lines (the caller writes CRLF back).
    """
    text = text.replace("\r\n", "\n")
    indent = guess_indent(text)
    return Document(make_yaml(indent).load(text), indent, text.splitlines(keepends=True))


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
    escapes, so any text a file holds can be quoted as an anchor; so is text
    holding a ``hidden`` character (a bidi override), which is then escaped.
    """
    from ruamel.yaml.scalarstring import DoubleQuotedScalarString, LiteralScalarString

    block = LiteralScalarString(text)
    return block if not hidden(text) and _reads_back(block) else DoubleQuotedScalarString(text)


def new_map() -> Any:
    """An empty ordered, commentable mapping."""
    from ruamel.yaml.comments import CommentedMap

    return CommentedMap()


def drop_key(mapping: Any, key: str) -> None:
    """Delete ``mapping[key]``, keeping the comment lines that followed its value.

    ruamel files the comments after a value under that value, so a plain ``del``
    takes them with it: an author's note between ``prefix`` and ``suffix`` would
    vanish with a dropped ``prefix``. They are given to the key before (after its
    value) or, for the first key, put before the mapping's first key, each line
    at its column. The key line's own end-of-line comment goes with the key.
    """
    from ruamel.yaml.scalarstring import FoldedScalarString, LiteralScalarString

    keys = list(mapping)
    slot = mapping.ca.items.get(key)
    token = slot[2] if slot is not None and len(slot) > 2 else None
    block = isinstance(mapping[key], (LiteralScalarString, FoldedScalarString))
    del mapping[key]
    if token is None:
        return
    text = " " * token.start_mark.column + token.value if block else token.value.partition("\n")[2]
    if not text.strip():
        return
    pos = keys.index(key)
    if pos == 0:
        _comment_before(mapping, text, token)
    else:
        _comment_after(mapping, keys[pos - 1], text, token)


def _slot(mapping: Any, key: Any) -> list[Any]:
    """ruamel's four comment slots for ``key`` (2: the comment after its value; 3: the
    lines before a mapping value's first key), made when absent and padded when
    shorter, in one place for every edit here (ruamel's own eol helper mis-handles 3)."""
    slot: list[Any] = mapping.ca.items.setdefault(key, [None, None, None, None])
    slot.extend([None] * (4 - len(slot)))
    return slot


def _as_token(token: Any, text: str) -> Any:
    """``token`` re-used to hold ``text`` (each line indented as written)."""
    from ruamel.yaml.error import CommentMark

    first = text.lstrip(" ")
    token.value = first
    token.start_mark = CommentMark(len(text) - len(first))
    return token


def _comment_after(mapping: Any, key: str, text: str, token: Any) -> None:
    """Comment lines ``text`` after ``mapping[key]``'s value."""
    from ruamel.yaml.error import CommentMark
    from ruamel.yaml.scalarstring import FoldedScalarString, LiteralScalarString

    slot = _slot(mapping, key)
    if slot[2] is not None:
        old = slot[2].value
        slot[2].value = old + ("" if old.endswith("\n") else "\n") + text
    elif isinstance(mapping[key], (LiteralScalarString, FoldedScalarString)):
        slot[2] = _as_token(token, text)
    else:  # after a plain value: the key line ends first, with no comment of its own
        token.value = "\n" + text
        token.start_mark = CommentMark(0)
        slot[2] = token


def _comment_before(mapping: Any, text: str, token: Any) -> None:
    """Comment lines ``text`` before ``mapping``'s first key (there is none: all before the end)."""
    if not len(mapping):
        return
    comment = mapping.ca.comment
    if comment is None:
        mapping.ca.comment = [None, [_as_token(token, text)]]
    else:
        while len(comment) < 2:
            comment.append(None)
        comment[1] = [*(comment[1] or []), _as_token(token, text)]


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


@dataclass(frozen=True)
class Note:
    """An end-of-line comment a tool puts on an entry's key line, or takes off it.

    The comment is ``# {text}``, or removed when ``text`` is None; an earlier
    note is recognised by ``prefix`` (the text starts with it), so a re-run
    replaces its own note and never touches the author's comment on that line.
    The same edit is made in the ruamel tree (``apply``, for entries that are
    re-emitted anyway) and on the original text (``line``, for entries whose
    only change is the note): ruamel keeps the blank lines and comments that
    follow an entry in the same comment token as its end-of-line comment, and
    aligns a new comment with its neighbours', so ``yaml_add_eol_comment`` would
    drop those lines and vary the separator.
    """

    prefix: str
    text: str | None = None

    def _split(self, body: str) -> tuple[str, str | None]:
        """``body`` without an earlier note (trailing blanks dropped with it), and that note."""
        m = re.search(r"(?:^|[ \t]+)#[ \t]*" + re.escape(self.prefix), body)
        if m is None:
            return body, None
        return body[: m.start()], body[m.start() :].strip(" \t")[1:].strip(" \t")

    def changes(self, body: str) -> bool:
        """True when ``body`` (a line, or a comment's first line) does not already say this."""
        return self._split(body)[1] != self.text

    def line(self, line: str) -> str:
        """``line`` (line ending kept) with this note: the only edit a mark makes to the text."""
        body = line.rstrip("\r\n")
        kept, _ = self._split(body)
        if self.text is not None:
            kept = kept.rstrip(" \t") + "  # " + self.text
        return kept + line[len(body) :]

    def apply(self, mapping: Any, key: Any) -> bool:
        """Make the same edit to ``key``'s end-of-line comment in the ruamel tree; True if changed."""
        from ruamel.yaml.scalarstring import FoldedScalarString, LiteralScalarString

        if isinstance(mapping[key], (LiteralScalarString, FoldedScalarString)):
            return self._apply_header(mapping, key)
        return self._apply_token(mapping, key)

    def _apply_token(self, mapping: Any, key: Any) -> bool:
        """Edit the comment token after ``key``'s value.

        Only the token's first line is the key line's comment; what follows it
        (blank lines, comment lines before the next key) is kept.
        """
        from ruamel.yaml.error import CommentMark

        entry = mapping.ca.items.get(key)
        token = entry[2] if entry is not None and len(entry) > 2 else None
        first, nl, rest = (token.value if token is not None else "").partition("\n")
        if not self.changes(first):
            return False
        kept = self._split(first)[0].rstrip(" \t")
        if self.text is not None and kept:
            first = f"{kept}  # {self.text}"  # after the author's comment, at its column
        elif self.text is not None:
            first = f" # {self.text}"  # at column 0 the emitter adds one space: two in all
        else:
            first = kept
        if not first and not rest and entry is not None:  # nothing left: no comment at all
            entry[2] = None
            return True
        if token is None:
            # Set in the slot itself: ruamel's yaml_add_eol_comment extends slot 3 (the
            # comment lines before a mapping value's first key) with a token where it
            # wants a list, a TypeError whenever such lines are there.
            from ruamel.yaml.tokens import CommentToken

            token = _slot(mapping, key)[2] = CommentToken("#", CommentMark(0))
        token.value = first + nl + rest
        if not kept:
            token.start_mark = CommentMark(0)
        return True

    def _apply_header(self, mapping: Any, key: Any) -> bool:
        """Edit the comment after a block scalar's ``|``/``>`` header (its token follows the block)."""
        slot = _slot(mapping, key)
        old = slot[3][0] if slot[3] else ""
        if not self.changes(old):
            return False
        kept = self._split(old)[0].rstrip(" \t")
        new = kept if self.text is None else f"{kept}  # {self.text}"
        slot[3] = [new] if new else None
        return True


def _noted(segment: list[str], note: Note) -> list[str] | None:
    """``segment`` (one entry's lines) with ``note`` on its key line; None if that changes data.

    A comment cannot end every line (a plain scalar continued on the next line,
    a quoted one): the note goes on the original line only when the entry still
    loads the same, else the caller re-emits the entry.
    """
    if not segment:
        return None
    noted = [note.line(segment[0]), *segment[1:]]
    return noted if same_data(noted, segment) else None


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


_UNLOADABLE = object()
"""What ``_load`` gives for text that is not YAML: equal to no data."""


def _load(lines: list[str]) -> Any:
    """The data the lines load to (PyYAML, libyaml when available), or ``_UNLOADABLE``."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return yaml.load("".join(lines), Loader=loader)
    except yaml.YAMLError:
        return _UNLOADABLE


def same_data(a: list[str], b: list[str]) -> bool:
    """True when the lines ``a`` and ``b`` both load (PyYAML) to the same data: how an
    edit of layout alone (a note, a kept comment, a splice) is proven to leave the data be."""
    return _same_as(_load(b), a)


def _same_as(want: Any, lines: list[str]) -> bool:
    """True when ``want`` (loaded by ``_load``) is data and ``lines`` load to it."""
    if want is _UNLOADABLE:
        return False
    got = _load(lines)
    return got is not _UNLOADABLE and bool(got == want)


def _dataless_tail(segment: list[str]) -> int:
    """Where ``segment``'s trailing lines that hold no data begin (comments, blank
    lines), at any indent; ``len(segment)`` when there are none.

    A line that looks like a comment may be a block scalar's content (``# x`` in
    quoted code), and a blank line may be kept by a ``|+`` block: so a line is
    the tail's only when the entry loads the same without it.
    """
    i = len(segment)
    while i > 1 and (not segment[i - 1].strip() or segment[i - 1].lstrip().startswith("#")):
        i -= 1  # the key line is the entry's
    whole = _load(segment)
    return next((j for j in range(i, len(segment)) if _same_as(whole, segment[:j])), len(segment))


def _indent_tail(segment: list[str], indent: int) -> int:
    """Where ``segment``'s trailing blank lines and comments begin: those at most
    ``indent`` columns in (the entry's key's), which no value of the entry can hold
    (a block scalar's lines are indented deeper than its key)."""
    i = len(segment)
    while i > 1:  # the key line is the entry's
        line = segment[i - 1]
        body = line.strip()
        if body and not (body.startswith("#") and len(line) - len(line.lstrip(" ")) <= indent):
            break
        i -= 1
    return i


def _with_old_tail(old: list[str], new: list[str]) -> list[str]:
    """An entry re-emitted (``new``) followed by the comments and blank lines that
    ended it in the original (``old``).

    ruamel files a comment under the value before it, so a value the pin
    deletes (a ``suffix``) takes with it every comment after it: the entry's
    own (``# about this anchor`` at the value's indent) and those of what
    follows (a block before the next section, the last entry's notes). Kept
    from the original, they stay byte for byte, at any indent; comments the
    dump has before them (the value before's own, kept by ``drop_key``) stay
    too. Should they load
    differently after the new last value (a ``|+`` block would take blank lines
    in), only those left of the entry's key are kept, which no value can hold;
    failing that, the new lines as they are.
    """
    if not old or not new:
        return new
    tail = old[_dataless_tail(old) :]
    body = new[: _dataless_tail(new)]
    ours = new[len(body) :]
    if tail and [x.strip() for x in ours[-len(tail) :]] == [x.strip() for x in tail]:
        body = new[: len(new) - len(tail)]  # the dump ends with them (``drop_key``): kept before
    kept = body + tail
    if same_data(kept, new):
        return kept
    indent = len(old[0]) - len(old[0].lstrip(" "))
    kept = new[: _indent_tail(new, indent)] + old[_indent_tail(old, indent) :]
    return kept if same_data(kept, new) else new


def splice(old_text: str, new_text: str, edited: set[tuple[str, ...]],
           old_doc: Any = None, notes: Mapping[tuple[str, ...], Note] | None = None) -> str:
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
    ``notes`` are entries whose only change is an end-of-line comment (made in
    ``old_doc`` too): their original lines are kept with just the key line
    edited, where the note can end that line.
    """
    notes = notes or {}
    touched = edited | set(notes)
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

            def fresh(a: int = a, b: int = b, na: int = na, nb: int = nb) -> list[str]:
                return _with_old_tail(old_lines[a:b], new_lines[na:nb])

            if path in edited:
                out.extend(fresh())
            elif path in notes:
                out.extend(_noted(old_lines[a:b], notes[path]) or fresh())
            elif depth < 2 and any(e[: len(path)] == path for e in touched):
                old_child, new_child = old_map[key], new_map[key]
                part = None
                if hasattr(old_child, "lc") and hasattr(new_child, "lc"):
                    part = cut(old_child, new_child, (a, b), (na, nb), depth + 1, path)
                out.extend(part if part is not None else fresh())
            else:
                out.extend(old_lines[a:b])
        return out

    result = cut(old_doc, new_doc, (0, len(old_lines)), (0, len(new_lines)), 1, ())
    return new_text if result is None else "".join(result)
