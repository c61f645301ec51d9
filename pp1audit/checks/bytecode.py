"""Bytecode: would Python run a ``__pycache__/*.pyc`` instead of its source, and is it that source?

Python imports ``pkg/mod.py`` from ``pkg/__pycache__/mod.<cache_tag>.pyc``
without reading the source's code whenever the pyc's 16-byte header (PEP 552)
says it is current:

* timestamp pyc (flags 0): the header's mtime and size equal the source's
  ``st_mtime`` and ``st_size`` (both mod 2**32);
* checked hash-based pyc (flags 3): the header's SipHash equals
  ``importlib.util.source_hash(source)``;
* unchecked hash-based pyc (flags 1): always — the source is never looked at.

A pyc that passes that test but whose code is not the compiled source is a
tampered (or stale-but-current-looking) bytecode file: the audited ``.py`` is
not what runs. It is detected by compiling the source the way the import
system does (same ``co_filename`` as recorded in the pyc, ``dont_inherit``,
optimisation level from the ``.opt-N`` suffix; ``python -OOO`` loads
``.opt-3`` files, compiled as level 2) and comparing the marshalled code:
equal bytes, or, since marshal's bytes for equal code depend on the process
that wrote them, equal meaning — every field marshal stores, read back by
``_marshal_tree`` (code-object equality is not enough: it ignores the stack
size, the qualified name, local-variable kinds and specialised instructions,
any of which a crafted pyc can change to crash or subvert the interpreter).
Attribute-wise comparison only explains a difference in the message.

Only pycs for the running interpreter's cache tag can be judged (another
version compiles differently): others that would be loaded by their
interpreter are reported unverifiable (``skip``), never failed. Patch
releases of one version share a cache tag but not always a compiler (3.11.2
and 3.11.7 emit different code for some modules), so when the target says
which release it runs (``target_release``, from a venv's ``pyvenv.cfg``) and
it is not this one, a pyc that differs is unverifiable too, not tampered; one
that compiles equal is verified all the same. A pyc whose
header does not match is ignored by Python (it recompiles), so it is not a
finding; nor is a pyc without its source (``__pycache__`` is never used
sourceless). In a wheel there are no install mtimes: every pyc for this
interpreter is compared with its source (a wheel should not ship any).

Compiling ~2,800 vLLM modules costs ~7 s of CPU, so successes are remembered
in a content-addressed cache (pyc SHA-256, source SHA-256, optimisation, exact
interpreter version, and ``COMPARISON``, the version of the comparison rule:
pairs a weaker rule let through are not trusted): a hit means this very pair
was compiled and compared before. Misses are compiled in worker processes,
one per core, always (even for one pair): ``marshal`` is not safe against
hostile data, so a crafted pyc may crash the process that reads it, and that
must be a worker, whose death becomes that pair's ``error``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import marshal
import os
import stat
import struct
import sys
import types
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from pp1audit.sources.hashing import Digest, Progress, default_workers
from pp1audit.sources.inventory import FILE, Entry
from pp1audit.sources.safeio import NotRegular, TooLarge, read_regular
from pp1audit.text.safe import printable

TAG = sys.implementation.cache_tag or "none"
RELEASE = "{}.{}.{}".format(*sys.version_info[:3])
"""This interpreter's release: patch releases share ``TAG`` but not always their compiler."""
MAGIC = importlib.util.MAGIC_NUMBER
COMPARISON = 2
"""Version of the comparison rule, part of every cache key: 1 accepted code-object
equality (blind to stack size, qualified names, local kinds); 2 compares all
that marshal stores."""


@dataclass(frozen=True, slots=True)
class PycName:
    """What a ``__pycache__`` file name says: its source, interpreter tag and optimisation."""

    pyc: str
    source: str
    tag: str
    optimize: int


def pyc_name(path: str) -> PycName | None:
    """Parse ``dir/__pycache__/stem.tag[.opt-N].pyc``; None for anything else.

    ``optimize`` is the level the source is compiled at to compare: ``python
    -OOO`` (``sys.flags.optimize`` 3) imports ``.opt-3`` files, whose code the
    compiler makes as at level 2, the highest ``compile`` accepts. ``.opt-0``
    (or ``.opt-01``) is None: level 0 imports the name without ``.opt-``, so
    Python never loads it.
    """
    head, _, name = path.rpartition("/")
    if not head.endswith("__pycache__") or not name.endswith(".pyc"):
        return None
    parts = name[:-4].split(".")
    optimize = 0
    if len(parts) >= 3 and parts[-1].startswith("opt-") and parts[-1][4:].isdigit():
        level = parts[-1][4:]
        if level != str(int(level)) or level == "0":  # never a name the import system asks for
            return None
        optimize = min(int(level), 2)
        parts = parts[:-1]
    if len(parts) < 2 or not parts[0]:
        return None
    stem, tag = ".".join(parts[:-1]), parts[-1]
    parent = head[: -len("__pycache__")]
    return PycName(path, parent + stem + ".py", tag, optimize)


def would_load(data: bytes, source: Entry | None, source_data: bytes | None,
               check_source_hash: bool = True) -> tuple[bool, str]:
    """Whether the import system would use this pyc instead of compiling the source.

    ``source.mtime`` None (a wheel) means "no install-time mtime": a timestamp
    pyc is then treated as loadable, so that it is compared, never waved through.
    """
    if len(data) < 16:
        return False, "truncated header"
    flags = int.from_bytes(data[4:8], "little")
    if flags & ~0b11:
        return False, "invalid flags"
    if flags & 0b1:
        if flags & 0b10 and check_source_hash:
            if source_data is None:
                return False, "source unreadable"
            if importlib.util.source_hash(source_data) != data[8:16]:
                return False, "source hash differs (Python recompiles)"
            return True, "checked hash-based pyc whose source hash matches"
        return True, "unchecked hash-based pyc: Python never looks at the source"
    if source is None or source.mtime is None:
        return True, "timestamp pyc (no install mtime to compare in a wheel)"
    mtime = int.from_bytes(data[8:12], "little")
    size = int.from_bytes(data[12:16], "little")
    if mtime == source.mtime & 0xFFFFFFFF and size == source.size & 0xFFFFFFFF:
        return True, "its header matches the source's mtime and size"
    return False, "stale header (Python recompiles)"


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


_FIELDS = ("co_argcount", "co_posonlyargcount", "co_kwonlyargcount", "co_stacksize", "co_flags",
           "co_nlocals", "co_varnames", "co_cellvars", "co_freevars", "co_names", "co_name",
           "co_qualname", "co_firstlineno", "co_code", "_co_code_adaptive", "co_linetable",
           "co_exceptiontable")
"""Code-object attributes named in a tampered pyc's message (an explanation only)."""


_SHOWN = 40
"""Characters of one side of a difference shown: enough to tell them apart, and four
fields of a tampered pyc still make a message of one readable line."""


def _literal(value: object) -> str:
    """``value`` written as a Python literal, RAW: its text between quotes, nothing escaped.

    Messages stay raw in the core and every output escapes them once (``printable`` for
    people, the JSON encoder for JSON), so a literal must not carry escapes of its own:
    ``repr``'s ``'a\\nb'`` would read ``'a\\\\nb'`` on a terminal. Written raw, one
    ``printable`` gives what ``repr`` shows (a newline ``\\n``, a backslash ``\\\\``,
    ESC ``\\x1b``) and JSON carries the constant itself. Bytes are decoded so that each
    byte from 0x80 up is the surrogate ``printable`` shows as that byte (``\\xff``)."""
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
    except (MemoryError, RecursionError) as exc:
        return "error", f"it could not be compared with its source ({_resource(exc)})"


def _resource(exc: BaseException) -> str:
    """A phrase for a compiler resource failure (MemoryError's message is empty)."""
    if isinstance(exc, MemoryError):
        return "the compiler ran out of memory, e.g. on too deeply nested code"
    return f"{exc or 'maximum recursion depth exceeded'}, e.g. on too deeply nested code"


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
    return "fail", "its code differs from compiling the source" + detail


_TASKS: list[tuple[bytes, bytes, int]] = []
"""Set before forking workers: children read the bytes from inherited memory, not a pipe."""


UNWINDING = ("SIGTERM", "SIGHUP", "SIGINT")
"""Signals a caller may handle by unwinding the run (the CLI: TERM and HUP raise,
Ctrl-C is ``KeyboardInterrupt``); see ``_worker_init`` for what workers do with them."""

PR_SET_PDEATHSIG = 1
"""prctl(2): the signal a process gets when the thread that forked it ends (Linux)."""


def _handled_here() -> tuple[int, ...]:
    """The ``UNWINDING`` signals this process handles in Python: the handler
    unwinds the run, and the pool's shutdown on the way ends the workers."""
    import signal

    handled = (getattr(signal, name, None) for name in UNWINDING)
    return tuple(s for s in handled if s is not None and callable(signal.getsignal(s)))


def _worker_init(ignored: tuple[int, ...], parent: int) -> None:
    """Start of a worker process: ignore the signals its parent unwinds on, and
    die with the parent.

    ``timeout``, a closed terminal or Ctrl-C signals the whole process group. A
    worker that died by it broke the pool while the parent, unwinding, cancelled
    its tasks, and the pool's manager thread then set a result on a cancelled
    task and printed a traceback (CPython gh-107219). Ignoring them, the worker
    finishes its chunk and leaves when the parent's shutdown tells it to. A
    signal the parent leaves at its default (a library caller) ends the worker
    as it ends the parent. What cannot unwind the parent (SIGKILL, a second
    signal during the shutdown) would leave the worker waiting for tasks for
    ever: on Linux the kernel kills it when the parent is gone (``PR_SET_PDEATHSIG``).
    """
    import signal

    for signum in ignored:
        signal.signal(signum, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # the parent died before the line above
            os._exit(1)


@contextlib.contextmanager
def _signals_held(signums: tuple[int, ...]) -> Iterator[None]:
    """Hold ``signums`` while the pool forks its workers and queues the tasks,
    and deliver them after. A handler that raises there (the CLI's) unwinds from
    the middle of ``submit``: a worker forked but not yet registered, or a task
    registered but never queued, which no shutdown ends or one that waits for
    it for ever; raised in an at-fork hook, Python prints "Exception ignored"
    and the signal is lost. A forked worker runs the holding handler until
    ``_worker_init`` ignores the signal. Outside the main thread nothing is held:
    handlers run in the main thread only, never in the middle of this one."""
    import signal

    caught: list[int] = []
    previous: dict[int, object] = {}
    try:
        for signum in signums:
            previous[signum] = signal.signal(signum, lambda s, frame: caught.append(s))
    except ValueError:  # not the main thread
        pass
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)  # type: ignore[arg-type]
        for signum in dict.fromkeys(caught):
            signal.raise_signal(signum)


def _compare_task(args: tuple[bytes, bytes, int] | int) -> tuple[str, str] | None:
    if isinstance(args, int):
        return compare(*_TASKS[args])
    return compare(*args)


def cache_dir() -> Path:
    """Where verified pairs are remembered: the remote-pin cache's directory
    (``PP1AUDIT_CACHE_DIR`` or the user cache), one rule for both."""
    from pp1audit.sources.cache import default_cache_dir

    return default_cache_dir()


def _trusted(path: Path) -> bool:
    """The cache file is a regular file that only this user can write (and so
    is its directory): anyone else able to add a line could vouch for a pyc."""
    me = os.geteuid()
    try:
        for p in (path, path.parent):
            st = os.lstat(p)
            if st.st_uid != me or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
                return False
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


class VerifiedCache:
    """Append-only set of ``pyc-sha256 source-sha256 optimize`` lines known to compile equal.

    Keyed by content only (the pyc holds its ``co_filename``), per exact
    interpreter version: a hit is as good as compiling again. A lost or
    corrupt cache only costs time. ``PP1AUDIT_NO_CACHE=1`` disables it.
    """

    def __init__(self, directory: Path | None) -> None:
        self.keys: set[str] = set()
        self.path: Path | None = None
        if directory is None:
            return
        v = sys.version_info
        self.path = directory / f"bytecode-verified-{sys.implementation.name}-{v[0]}.{v[1]}.{v[2]}.txt"
        if not _trusted(self.path):
            return  # absent, or writable by someone else: an entry would whitelist a pyc
        try:
            text = read_regular(self.path, 64 << 20).decode("ascii", errors="replace")
        except (OSError, NotRegular, TooLarge):
            return
        self.keys = {line for line in text.splitlines() if len(line) >= 131}

    @staticmethod
    def key(pyc_sha: bytes, src_sha: bytes, optimize: int) -> str:
        """The cache line for one verified pair, under the current comparison rule."""
        return f"{pyc_sha.hex()} {src_sha.hex()} {optimize} c{COMPARISON}"

    def add(self, keys: Iterable[str]) -> None:
        """Remember new verified pairs (best effort: a write failure is ignored)."""
        new = [k for k in keys if k not in self.keys]
        if not new or self.path is None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW
                         | os.O_NONBLOCK | os.O_CLOEXEC, 0o600)
            with os.fdopen(fd, "a", encoding="ascii") as f:
                f.write("".join(k + "\n" for k in new))
        except OSError:
            pass
        self.keys.update(new)


def default_cache() -> VerifiedCache:
    """The user's cache, unless ``PP1AUDIT_NO_CACHE`` is set."""
    if os.environ.get("PP1AUDIT_NO_CACHE"):
        return VerifiedCache(None)
    return VerifiedCache(cache_dir())


@dataclass(frozen=True, slots=True)
class Finding:
    """One bytecode problem: ``fail`` (would run, differs), ``skip`` (another
    interpreter's) or ``error`` (could not be compared: the compiler gave up)."""

    path: str
    status: str
    message: str
    source: str | None = None


@dataclass(frozen=True)
class BytecodeReport:
    """Findings plus the counts for the summary check."""

    findings: list[Finding]
    verified: int
    cached: int
    stale: int
    orphans: int
    other: dict[str, int]


def keep_for_bytecode(entry: Entry) -> bool:
    """Which files the hashing pass keeps in memory for this check."""
    return entry.kind == FILE and (entry.path.endswith(".py") or pyc_name(entry.path) is not None)


def check_bytecode(
    files: list[Entry],
    digests: dict[str, Digest],
    *,
    cache: VerifiedCache,
    progress: Progress | None = None,
    workers: int | None = None,
    target_release: tuple[str, str] | None = None,
) -> BytecodeReport:
    """Judge every ``__pycache__/*.pyc`` among ``files`` (see the module docstring).

    ``target_release``: the ``X.Y.Z`` of the interpreter that will load them and
    where that was read (``("3.11.2", "version in …/pyvenv.cfg")``), when known."""
    other_release = target_release if target_release is not None and target_release[0] != RELEASE \
        else None
    by_path = {e.path: e for e in files}
    findings: list[Finding] = []
    todo: list[tuple[PycName, bytes, bytes, str]] = []
    stale = orphans = cached = 0
    other: dict[str, int] = {}
    foreign: dict[str, list[str]] = {}
    """Bytecode of another interpreter's cache tag, by tag."""
    released: list[str] = []
    """Bytecode of this tag differing from this interpreter's compile, when the target
    runs another patch release of it."""
    for e in files:
        name = pyc_name(e.path)
        if name is None or e.kind != FILE:
            continue
        d = digests.get(e.path)
        src = by_path.get(name.source)
        sd = digests.get(name.source) if src is not None else None
        if src is None or src.kind != FILE:
            orphans += 1
            continue
        unkept = next((f"{p} is {x.unkept}" for p, x in ((e.path, d), (name.source, sd))
                       if x is not None and x.unkept), None)
        if unkept is not None:
            findings.append(Finding(e.path, "error", f"unverified bytecode: {unkept}; it could "
                                    "not be compared with its source", name.source))
            continue
        if d is None or d.data is None or sd is None or sd.data is None or d.sha256 is None \
                or sd.sha256 is None:
            findings.append(Finding(e.path, "error", "could not read the bytecode or its source",
                                    name.source))
            continue
        # The bytes read decide, not the listing: a source that grew in between is
        # one Python would recompile, not a reason to blame its bytecode.
        src = replace(src, size=len(sd.data))
        if name.tag != TAG:
            loads, _ = would_load(d.data, src, sd.data, check_source_hash=False)
            if loads:
                other[name.tag] = other.get(name.tag, 0) + 1
                foreign.setdefault(name.tag, []).append(e.path)
            else:
                stale += 1
            continue
        if d.data[:4] != MAGIC:
            stale += 1
            continue
        loads, why = would_load(d.data, src, sd.data)
        if not loads:
            stale += 1
            continue
        key = VerifiedCache.key(d.sha256, sd.sha256, name.optimize)
        if key in cache.keys:
            cached += 1
            continue
        todo.append((name, d.data, sd.data, why + "|" + key))
    results = _run(todo, progress, workers)
    good: list[str] = []
    verified = cached
    for (name, _pyc, _src, why_key), problem in zip(todo, results, strict=True):
        why, key = why_key.split("|", 1)
        if problem is None:
            good.append(key)
            verified += 1
            continue
        status, phrase = problem
        if status == "fail" and other_release is not None:
            released.append(name.pyc)
            continue
        head = "tampered bytecode" if status == "fail" else "unverified bytecode"
        findings.append(Finding(
            name.pyc, status,
            f"{head}: Python would run this instead of {name.source} ({why}), but "
            f"{phrase}", name.source))
    cache.add(good)
    # One ``skip`` per foreign interpreter, not per file: auditing a cpython-312
    # image from cpython-311 must not print 2,800 checks.
    for tag, paths in sorted(foreign.items()):
        paths.sort()
        more = f" (and {len(paths) - 1} more)" if len(paths) > 1 else ""
        findings.append(Finding(
            paths[0], "skip",
            f"{len(paths):,} bytecode file(s) for another interpreter ({tag}) that it would load "
            f"instead of their sources{more}: unverifiable with {TAG}; run pp1audit under {tag} "
            "to verify them", None))
    if released and other_release is not None:
        findings.append(_other_release_skip(sorted(released), other_release))
        number, origin = other_release
        other[f"{TAG} {number} ({origin})"] = len(released)
    findings.sort(key=lambda f: f.path)
    return BytecodeReport(findings, verified, cached, stale, orphans, other)


def _other_release_skip(paths: list[str], release: tuple[str, str]) -> Finding:
    """One ``skip`` for the bytecode (``paths``, sorted) that differs from this
    interpreter's compile when the target runs another patch release, ``(X.Y.Z, origin)``:
    its compiler may emit other code, so they are unverifiable here, not tampered."""
    number, origin = release
    more = f" (and {len(paths) - 1} more)" if len(paths) > 1 else ""
    return Finding(
        paths[0], "skip",
        f"{len(paths):,} bytecode file(s) Python would load instead of their sources"
        f"{more} differ from their sources compiled by Python {RELEASE}, and the target "
        f"runs Python {number} ({origin}), whose compiler may emit other code: unverifiable here; "
        f"run pp1audit under Python {number} to verify them", None)


def _run(todo: list[tuple[PycName, bytes, bytes, str]], progress: Progress | None,
         workers: int | None) -> list[tuple[str, str] | None]:
    tasks = [(src, pyc, name.optimize) for name, pyc, src, _ in todo]
    n = min(workers or default_workers(), len(tasks))
    if progress is not None and tasks:
        progress.start("compiling", len(tasks))
    try:
        # Always in worker processes, even for one pair: ``marshal.loads`` is
        # not safe against hostile data (the docs say so), and a pyc in the
        # audited tree must not be able to crash the auditor itself.
        return _in_processes(tasks, n, progress) if tasks else []
    finally:
        if progress is not None and tasks:
            progress.stop()


DIED = ("error", "it could not be compared with its source: compiling it killed the worker "
        "process (a crash of the interpreter itself, e.g. on hostile bytecode)")
"""The verdict for a pair whose comparison made a worker process die."""


def _in_processes(tasks: list[tuple[bytes, bytes, int]], n: int,
                  progress: Progress | None) -> list[tuple[str, str] | None]:
    """``compare`` every task in ``n`` worker processes; a task that kills its
    worker outright (a C-level crash: no exception reaches Python) becomes
    that one pair's ``error``, never the end of the run.

    All tasks go out in chunks; when the pool breaks, the tasks without an
    answer go again one per submission in a fresh pool. Tasks leave in order
    and at most ``n + 1`` are handed out at a time, so when that pool breaks
    the culprit is among the first ``n + 1`` unanswered: each of those runs
    alone (the one that dies again is named), the rest go round again. Each
    crashing pair costs ``n + 2`` pools, not one per pair left.
    """
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    global _TASKS
    fork = "fork" in multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if fork else None)

    def item(i: int) -> int | tuple[bytes, bytes, int]:
        return i if fork else tasks[i]  # forked children read the bytes from inherited memory

    handled = _handled_here()

    @contextlib.contextmanager
    def pool_of(workers: int) -> Iterator[ProcessPoolExecutor]:
        """A pool whose tasks not yet started are cancelled when the run unwinds
        (a signal, Ctrl-C), whether or not ``map``'s iterator had started."""
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_worker_init,
                                   initargs=(handled, os.getpid()))
        try:
            yield pool
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def one_by_one(indices: list[int], workers: int) -> None:
        with pool_of(workers) as pool:
            with _signals_held(handled):
                futures = [(i, pool.submit(_compare_task, item(i))) for i in indices]
            for i, f in futures:
                with contextlib.suppress(BrokenProcessPool):  # unanswered: sorted out below
                    results[i] = f.result()

    results: list[tuple[str, str] | object | None] = [_PENDING] * len(tasks)
    _TASKS = tasks
    try:
        with pool_of(n) as pool:
            try:
                with _signals_held(handled):  # map queues every chunk before it returns
                    answers = pool.map(_compare_task, [item(i) for i in range(len(tasks))],
                                       chunksize=32)
                for i, r in enumerate(answers):
                    results[i] = r
                    if progress is not None and i % 32 == 0:
                        progress.update(i)
            except BrokenProcessPool:
                pass
        left = [i for i, r in enumerate(results) if r is _PENDING]
        while left:
            one_by_one(left, n)
            left = [i for i in left if results[i] is _PENDING]
            for i in left[:n + 1]:  # the culprit is among these: each alone
                one_by_one([i], 1)
                if results[i] is _PENDING:
                    results[i] = DIED
            left = left[n + 1:]
    finally:
        _TASKS = []
    return results  # type: ignore[return-value]  # no _PENDING is left


_PENDING = object()

