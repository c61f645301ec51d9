"""Is a pyc's code its source compiled? Compared as the import system would compile it.

A pyc Python would load (``bytecode``) whose code is not the compiled source is
tampered (or stale-but-current-looking) bytecode: the audited ``.py`` is not
what runs. The source is compiled the way the import system does (same
``co_filename`` as recorded in the pyc, ``dont_inherit``, optimisation level
from the ``.opt-N`` suffix) and the marshalled code compared: equal bytes, or,
since marshal's bytes for equal code depend on the process that wrote them,
equal meaning — every field marshal stores, read back by ``_marshal_tree``.
Code-object equality is not enough: it ignores the stack size, the qualified
name, local-variable kinds and specialised instructions, any of which a crafted
pyc can change to crash or subvert the interpreter. ``marshal.loads`` is not
safe against hostile data, so this runs in worker processes (``pycworkers``).
"""

from __future__ import annotations

import marshal
import struct
import sys
import types
from collections.abc import Callable

from pp1audit.checks.pycexplain import explain

COMPARISON = 2
"""Version of the comparison rule, part of every cache key: 1 accepted code-object
equality (blind to stack size, qualified names, local kinds); 2 compares all
that marshal stores."""


class _BadMarshal(ValueError):
    """Marshal data ``_marshal_tree`` cannot read (so it never equals compiled code)."""


_CODE_FIELDS = "lllll" "oooooooo" "l" "oo" if (3, 11) <= sys.version_info[:2] <= (3, 13) else None
"""How marshal lays out a code object (``l`` a 32-bit field, ``o`` an object), as
``Python/marshal.c`` reads it in 3.11 to 3.13: argcount, posonlyargcount,
kwonlyargcount, stacksize, flags; code, consts, names, localsplusnames,
localspluskinds, filename, name, qualname; firstlineno; linetable,
exceptiontable. Another version: only byte-equal pycs pass."""

_SINGLETONS = frozenset("0NFTS.")
_RESERVED = ("reserved",)


def _marshal_tree(data: bytes) -> tuple[object, int]:
    """What marshal data means, as nested tuples, and how many bytes follow it.

    Equal trees load as equal code in every respect the interpreter uses.
    Dropped, because they depend on the writing process rather than the code:
    which objects were written once and referenced (``FLAG_REF`` follows
    reference counts at ``dumps`` time, so a pyc written on import differs
    from ``py_compile``'s), the spelling of a value (short or long string and
    tuple forms, interning, ``int`` as 32-bit or long), and the order of set
    elements (no part of a set's meaning). Kept exactly: every
    code field, the raw instruction bytes (specialised instructions and inline
    caches included), and each constant's type and bits (``-0.0`` is not
    ``0.0``).
    """
    refs: list[object] = []
    pos = 0

    def take(n: int) -> bytes:
        nonlocal pos
        if n < 0 or pos + n > len(data):
            raise _BadMarshal("truncated")
        pos += n
        return data[pos - n:pos]

    def long() -> int:
        return int.from_bytes(take(4), "little", signed=True)

    def items(n: int) -> tuple[object, ...]:
        return tuple(obj() for _ in range(n))

    def text_float() -> bytes:
        try:
            return struct.pack("<d", float(take(take(1)[0]).decode("ascii")))
        except (UnicodeDecodeError, ValueError):
            raise _BadMarshal("bad float") from None

    def utf8(raw: bytes) -> str:
        try:
            return raw.decode("utf-8", "surrogatepass")
        except UnicodeDecodeError:
            raise _BadMarshal("bad string") from None

    def dict_items() -> tuple[object, ...]:
        out = []
        while (key := obj()) != ("0",):
            out.append((key, obj()))
        return tuple(out)

    def code() -> tuple[object, ...]:
        if _CODE_FIELDS is None:
            raise _BadMarshal(f"code objects of Python {sys.version_info[0]}.{sys.version_info[1]}")
        return ("code", *(long() if f == "l" else obj() for f in _CODE_FIELDS))

    def long_int() -> int:
        n = long()
        digits = take(2 * abs(n))
        # 15-bit digits, least significant first. Joined as one binary string:
        # int() of a power-of-two base is linear, where summing shifted digits is
        # quadratic (a 16 MiB pyc of one huge constant would take hours).
        bits = "".join(f"{int.from_bytes(digits[i:i + 2], 'little'):015b}"
                       for i in range(2 * abs(n) - 2, -1, -2))
        value = int(bits, 2) if bits else 0
        return -value if n < 0 else value

    read: dict[str, Callable[[], object]] = {
        "i": lambda: ("int", long()),
        "I": lambda: ("int", int.from_bytes(take(8), "little", signed=True)),
        "l": lambda: ("int", long_int()),
        "g": lambda: ("float", take(8)),
        "f": lambda: ("float", text_float()),
        "y": lambda: ("complex", take(16)),
        "x": lambda: ("complex", text_float() + text_float()),
        "s": lambda: ("bytes", take(long())),
        "u": lambda: ("str", utf8(take(long()))),
        "t": lambda: ("str", utf8(take(long()))),
        "a": lambda: ("str", take(long()).decode("latin-1")),
        "A": lambda: ("str", take(long()).decode("latin-1")),
        "z": lambda: ("str", take(take(1)[0]).decode("latin-1")),
        "Z": lambda: ("str", take(take(1)[0]).decode("latin-1")),
        "(": lambda: ("tuple", items(long())),
        ")": lambda: ("tuple", items(take(1)[0])),
        "[": lambda: ("list", items(long())),
        "{": lambda: ("dict", dict_items()),
        "<": lambda: ("set", tuple(sorted(items(long()), key=repr))),
        ">": lambda: ("frozenset", tuple(sorted(items(long()), key=repr))),
        ":": lambda: ("slice", items(3)),
        "c": code,
    }

    def obj() -> object:
        byte = take(1)[0]
        kind = chr(byte & 0x7F)
        if kind in _SINGLETONS:
            return (kind,)
        if kind == "r":
            i = long()
            if not 0 <= i < len(refs) or refs[i] is _RESERVED:
                raise _BadMarshal("bad reference")
            return refs[i]
        reader = read.get(kind)
        if reader is None:
            raise _BadMarshal(f"unknown type {kind!r}")
        if not byte & 0x80:
            return reader()
        refs.append(_RESERVED)  # numbered before its contents, as marshal does
        at = len(refs) - 1
        refs[at] = reader()
        return refs[at]

    tree = obj()
    return tree, len(data) - pos


def compare(source: bytes, pyc: bytes, optimize: int) -> tuple[str, str] | None:
    """None when ``pyc`` holds exactly the compiled ``source``; else ``(status, why)``.

    ``status`` is ``fail`` (the bytecode is not the source) or ``error`` (this
    pair could not be judged: the compiler ran out of memory or recursion
    depth on pathologically nested code). Runs in worker processes: plain
    bytes in, a short tuple out, never an exception (one that escaped a worker
    would end the whole run instead of this file's check).
    """
    try:
        return _compare(source, pyc, optimize)
    except (MemoryError, RecursionError) as exc:  # MemoryError's message is empty
        why = "the compiler ran out of memory" if isinstance(exc, MemoryError) else \
            exc or "maximum recursion depth exceeded"
        return "error", f"it could not be compared with its source ({why}, e.g. on too deeply nested code)"


def _compare(source: bytes, pyc: bytes, optimize: int) -> tuple[str, str] | None:
    body = pyc[16:]
    try:
        code = marshal.loads(body)
    except (EOFError, ValueError, TypeError):
        return "fail", "its code cannot be unmarshalled (the import would fail)"
    if not isinstance(code, types.CodeType):
        return "fail", "it holds no code object"
    try:
        fresh = compile(source, code.co_filename, "exec", dont_inherit=True, optimize=optimize)
    except (SyntaxError, ValueError) as exc:
        return "fail", f"the source does not compile ({exc}) yet this bytecode would run"
    try:
        mine = marshal.dumps(fresh)
    except ValueError as exc:  # "object too deeply nested to marshal"
        return "error", f"it could not be compared with its source (its compiled code: {exc})"
    if mine == body:
        return None
    try:
        if _marshal_tree(body) == _marshal_tree(mine):
            return None
    except _BadMarshal:
        pass
    return "fail", "its code differs from compiling the source" + explain(code, fresh)
