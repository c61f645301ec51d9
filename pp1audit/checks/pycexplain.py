"""Why a pyc is not its source, in one readable line: what only one side holds, and
which code fields differ, each shown where the two sides part.

Messages stay raw here and every output escapes them once (``printable`` for
people, the JSON encoder for JSON), so values are written as raw literals (``repr``'s
own escapes would be escaped twice: ``'a\\\\nb'``) and cut by their escaped width:
whatever a crafted pyc holds, the line stays short and whole (no quote or
parenthesis left open).
"""

from __future__ import annotations

import types

from pp1audit.text.safe import printable


def _constants(code: types.CodeType) -> set[str]:
    """Names and constants of ``code`` and the code it nests, each constant as ``_literal``
    writes it (raw: the message it goes into is escaped once, by the output)."""
    out: set[str] = set()
    stack = [code]
    while stack:
        c = stack.pop()
        out.update(c.co_names)
        for k in c.co_consts:
            if isinstance(k, types.CodeType):
                stack.append(k)
            elif isinstance(k, (str, bytes, int, float, complex)) and not isinstance(k, bool):
                out.add(_literal(k))
    return out


_FIELDS = ("co_argcount", "co_posonlyargcount", "co_kwonlyargcount", "co_stacksize", "co_flags",
           "co_nlocals", "co_varnames", "co_cellvars", "co_freevars", "co_names", "co_name",
           "co_qualname", "co_firstlineno", "co_code", "_co_code_adaptive", "co_linetable",
           "co_exceptiontable")
"""Code-object attributes named in a tampered pyc's message (an explanation only)."""


_SHOWN = 40
"""Characters of one side of a difference shown: enough to tell them apart, and four
fields of a tampered pyc still make a message of one readable line."""


def _literal(value: object) -> str:
    """``value`` written as a Python literal, raw (see the module docstring): one
    ``printable`` gives what ``repr`` shows, and JSON carries the constant itself. Bytes
    from 0x80 up become the surrogates ``printable`` shows as those bytes (``\\xff``)."""
    if isinstance(value, str):
        return _quoted(value)
    if isinstance(value, bytes):
        return "b" + _quoted(value.decode("ascii", "surrogateescape"))
    if isinstance(value, tuple):
        inner = ", ".join(_literal(x) for x in value)
        return f"({inner}{',' if len(value) == 1 else ''})"
    if isinstance(value, frozenset):
        return f"frozenset({{{', '.join(sorted(_literal(x) for x in value))}}})" if value else "frozenset()"
    return repr(value)


def _quoted(text: str) -> str:
    """``text`` between the quotes ``repr`` would choose (never escaped inside)."""
    quote = '"' if "'" in text and '"' not in text else "'"
    return quote + text + quote


def _width(text: str) -> int:
    """Characters ``text`` takes once an output has escaped it (``\\x1b`` is four)."""
    return len(printable(text))


def _fit(text: str, width: int) -> str:
    """The longest start of raw ``text`` that takes at most ``width`` characters once
    escaped, ``…`` marking a cut: the cut falls between characters, never inside an
    escape, since escaping happens after it."""
    if _width(text) <= width:
        return text
    used = 0
    for i, ch in enumerate(text):
        used += _width(ch)
        if used > width - 1:
            return text[:i] + "…"
    return text


def _shown(value: object) -> str:
    """``value`` as a raw literal (``_literal``) taking at most about ``_SHOWN``
    characters once escaped by the output.

    A cut string stays a whole literal with ``…`` after its closing quote, so the
    reader sees where it ends and no parenthesis of the message is left open."""
    if isinstance(value, str):
        cut = value[:_SHOWN]
        while _width(_literal(cut)) > _SHOWN:  # escapes lengthen what is shown
            cut = cut[:-1]
        return _literal(cut) + ("…" if len(cut) < len(value) else "")
    return _fit(_literal(value), _SHOWN)


def _window(text: str, at: int) -> str:
    """The part of ``text`` around index ``at``, ``…`` marking what is left out.

    The window starts a few characters before ``at``, but never so many that
    their escapes (``\x1b`` is four characters) push ``at`` itself out of it."""
    start = max(0, at - _SHOWN // 4)
    while start < at and _width(_literal(text[start:at + 1])) > _SHOWN // 2:
        start += 1
    piece = text[start:start + _SHOWN // 2]
    shown = _shown(piece)  # itself cut (and marked) when escapes lengthen it
    more = start + len(piece) < len(text) and not shown.endswith("…")
    return ("…" if start else "") + shown + ("…" if more else "")


def _first_difference(a: str | tuple[object, ...], b: str | tuple[object, ...]) -> int:
    """Index of the first element where ``a`` and ``b`` differ (the shorter's length
    when one is a prefix of the other)."""
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def _where_they_part(mine: object, fresh: object, depth: int = 0) -> str:
    """Both values of a differing code field, or where they first part when they are
    long: two names tuples that differ in their twentieth name, cut to the same first
    forty characters, would look identical.

    Each side is a Python literal escaped for a terminal (see ``_shown``); the whole
    stays bounded, whatever the pyc holds."""
    whole = _shown(mine), _shown(fresh)
    if not any(x.endswith("…") for x in whole):
        return f"{whole[0]} in the bytecode, {whole[1]} compiled"
    if isinstance(mine, str) and isinstance(fresh, str):
        i = _first_difference(mine, fresh)
        return (f"from character {i}: {_window(mine, i)} in the bytecode, "
                f"{_window(fresh, i)} compiled")
    if isinstance(mine, tuple) and isinstance(fresh, tuple):
        i = _first_difference(mine, fresh)
        sizes = ("" if len(mine) == len(fresh)
                 else f"; {len(mine)} items in the bytecode, {len(fresh)} compiled")
        if i < len(mine) and i < len(fresh) and depth < 3:  # the item itself, cut where it parts
            return f"item {i}: {_where_they_part(mine[i], fresh[i], depth + 1)}{sizes}"
        sides = [_shown(t[i]) if i < len(t) else "nothing" for t in (mine, fresh)]
        return f"item {i}: {sides[0]} in the bytecode, {sides[1]} compiled{sizes}"
    return f"{whole[0]} in the bytecode, {whole[1]} compiled"


def _field_differences(code: types.CodeType, fresh: types.CodeType, limit: int = 4) -> list[str]:
    """``qualname.attribute`` for the first code attributes that differ, with both values
    (or, when long, where they part): what a reader needs to see why the pyc is not
    its source."""
    out: list[str] = []
    stack = [(code, fresh)]
    while stack and len(out) < limit:
        a, b = stack.pop()
        for field in _FIELDS:
            va, vb = getattr(a, field, None), getattr(b, field, None)
            if va != vb and len(out) < limit:
                shown = "" if isinstance(va, bytes) else f" ({_where_they_part(va, vb)})"
                out.append(f"{b.co_qualname}.{field}{shown}")
        inner_a = [k for k in a.co_consts if isinstance(k, types.CodeType)]
        inner_b = [k for k in b.co_consts if isinstance(k, types.CodeType)]
        if len(inner_a) == len(inner_b):
            stack.extend(reversed(list(zip(inner_a, inner_b, strict=True))))
    return out


def explain(code: types.CodeType, fresh: types.CodeType) -> str:
    """The detail of a tampered pyc's message: names and constants only one side has,
    then the first differing fields (``code`` from the pyc, ``fresh`` compiled)."""
    extra = sorted(_constants(code) - _constants(fresh))
    missing = sorted(_constants(fresh) - _constants(code))
    fields = _field_differences(code, fresh)
    detail = ""
    if extra:
        detail += "; only in the bytecode: " + ", ".join(_fit(x, 60) for x in extra[:4])
    if missing:
        detail += "; only in the source: " + ", ".join(_fit(x, 60) for x in missing[:4])
    if fields:
        detail += "; differs in " + ", ".join(fields)
    elif not extra and not missing:
        detail += ("; the difference is in data marshal stores but code objects do not show "
                   "(local-variable kinds, or bytes after the code)")
    return detail
