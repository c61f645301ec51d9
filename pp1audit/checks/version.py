"""``version``: the version ``import <package>`` would report, against ``target.version``.

Read with ``ast`` and an RFC 822 header parser, never imported (that runs the audited
code). A literal so read is what Python sees only if nothing else binds the name, so
the check judges or refuses (``error``, naming file and line). ``_version.py`` must bind
``__version__`` (or ``version``) once, by a plain string-literal assignment at top level;
``version.py``, if present (vLLM's ``__version__`` comes from it), must re-export it as
vLLM 0.28-0.32 do, and a literal set there fails unless it is the pin; the target root's
``<dist>-*.dist-info/METADATA`` (none for a package directory: said, not failed) must
say ``_version.py``'s version. Listing bindings is no proof against every trick: the
file digests are.
"""

from __future__ import annotations

import ast
import contextlib
import os
import re
from dataclasses import dataclass

from pp1audit.checks import source_problem
from pp1audit.errors import MissingFile, SourceError
from pp1audit.result import Check, Status
from pp1audit.sources import DirectorySource, Source, WheelSource
from pp1audit.sources.store import FileStore

_NAMES = ("__version__", "version")
MAX_VERSION_FILE = 1 << 20
"""A ``_version.py`` is a few hundred bytes; anything over 1 MiB is not one."""
_UNJUDGED = "the version cannot be judged without running the file"
_DYNAMIC = frozenset({"globals", "vars", "locals", "setattr", "delattr", "__setattr__",
                      "exec", "eval", "compile", "__import__"})
"""Calls that can bind a module name by a computed key: refused wherever they are."""
_BLOCKS: dict[type[ast.AST], str] = {
    ast.If: "an if", ast.Try: "a try", ast.TryStar: "a try", ast.ExceptHandler: "an except",
    ast.For: "a for loop", ast.AsyncFor: "a for loop", ast.While: "a while loop", ast.With: "a with",
    ast.AsyncWith: "a with", ast.FunctionDef: "a function", ast.AsyncFunctionDef: "a function",
    ast.Lambda: "a lambda", ast.ClassDef: "a class", ast.Match: "a match"}
"""Where code runs conditionally, repeatedly or later: a binding there is not what a
top-to-bottom reading sees."""
_FORMS: dict[type[ast.AST], str] = {
    ast.AugAssign: "an augmented assignment", ast.NamedExpr: "an assignment expression (:=)",
    ast.Tuple: "unpacking", ast.List: "unpacking", ast.Starred: "unpacking", ast.Delete: "del",
    ast.comprehension: "a comprehension", ast.alias: "an import", ast.FunctionDef: "a def",
    ast.AsyncFunctionDef: "a def", ast.ClassDef: "a class statement", ast.Global: "a global",
    ast.Nonlocal: "a nonlocal", ast.ExceptHandler: "an except ... as", ast.MatchAs: "a match",
    ast.MatchStar: "a match"}
"""How a binding that is not a plain assignment binds, for messages."""


@dataclass(frozen=True)
class _Bind:
    """One binding of a watched name, or a dynamic write that may be one."""

    line: int
    name: str
    what: str | None  # why not judged; None: a plain top-level string-literal assignment
    value: str | None  # the string literal assigned to the bare name (at any depth)
    parent: ast.AST
    stack: tuple[ast.AST, ...]  # the enclosing ``_BLOCKS`` nodes, outermost first


def _classify(node: ast.AST, parent: ast.AST, inside: str,
              names: tuple[str, ...]) -> tuple[str, str | None, str | None] | None:
    """``(name, why not judged, literal)`` when ``node`` binds one of ``names`` or may
    write any module name; None when it does neither."""
    if isinstance(node, ast.Name) and node.id in names and not isinstance(node.ctx, ast.Load):
        if isinstance(parent, ast.AnnAssign) and parent.value is None:
            return None  # ``version: str`` declares, binds nothing
        whole = isinstance(parent, ast.Assign | ast.AnnAssign) and node is not parent.value
        v = getattr(parent, "value", None) if whole else None
        value = v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else None
        if inside or not whole or value is None:
            how = f" by {_FORMS.get(type(parent), 'a statement')}" if not whole else " to a computed value"
            return node.id, f"rebinds {node.id}{inside or how}", value
        return node.id, None, value
    if isinstance(node, ast.Call):
        called = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
        return ("*", f"calls {called}(){inside}", None) if called in _DYNAMIC else None
    if isinstance(node, ast.Attribute) and (node.attr == "__dict__" or (
            node.attr in names and not isinstance(node.ctx, ast.Load))):
        return "*", f"{'uses' if node.attr == '__dict__' else 'writes'} .{node.attr}{inside}", None
    found: str | None = None
    if isinstance(node, ast.alias):
        found = node.asname or node.name.split(".")[0]
    elif isinstance(node, ast.Global | ast.Nonlocal):
        found = next((n for n in node.names if n in names), None)
    elif type(node) in _FORMS:
        found = getattr(node, "name", None)
    if found != "*" and found not in names:
        return None
    return found, f"{'imports *' if found == '*' else f'binds {found} by {_FORMS[type(node)]}'}{inside}", None


def _bindings(data: bytes, path: str, names: tuple[str, ...]) -> list[_Bind] | str:
    """Every binding of ``names`` and every dynamic write in the module, in line order;
    or why the file cannot be read (never a crash). The walk is iterative, as deep
    expressions that ``ast.parse`` accepts would overflow recursion."""
    if len(data) > MAX_VERSION_FILE:
        return f"{path} is over {MAX_VERSION_FILE >> 20} MiB: not a version file"
    try:
        tree = ast.parse(data)
    except SyntaxError as exc:
        return f"{path}:{exc.lineno or 0} is not valid Python: {_UNJUDGED}"
    except (ValueError, MemoryError, RecursionError):
        return f"{path} cannot be parsed as Python: {_UNJUDGED}"
    out: list[_Bind] = []
    todo: list[tuple[ast.AST, tuple[ast.AST, ...]]] = [(tree, ())]
    while todo:
        node, stack = todo.pop()
        inner = (*stack, node) if type(node) in _BLOCKS else stack
        inside = f" inside {_BLOCKS[type(inner[-1])]}" if inner else ""
        for child in ast.iter_child_nodes(node):
            todo.append((child, inner))
            if (found := _classify(child, node, inside, names)) is not None:
                out.append(_Bind(getattr(child, "lineno", 0), *found, node, inner))
    return sorted(out, key=lambda b: b.line)


def _version_file(data: bytes, path: str) -> tuple[str | None, str | None]:
    """``_version.py``'s version (None if it binds none), or why it is not judged."""
    found = _bindings(data, path, _NAMES)
    if isinstance(found, str):
        return None, found
    once: dict[str, _Bind] = {}
    for b in found:
        if b.what is not None or b.name in once:
            what = b.what or f"binds {b.name} a second time (first at line {once[b.name].line})"
            return None, f"{path}:{b.line} {what}: {_UNJUDGED}"
        once[b.name] = b
    chosen = once.get("__version__") or once.get("version")  # what ``version.py`` imports first
    return (chosen.value if chosen else None), None


def _reexport_file(data: bytes, path: str, package: str) -> tuple[list[_Bind], str | None]:
    """``version.py``'s hand-set top-level literals, or why it is not judged. Accepted:
    ``from ._version import __version__`` at top level or in a top-level try's body,
    and a string fallback in that try's ``except``."""
    found = _bindings(data, path, ("__version__",))
    if isinstance(found, str):
        return [], found
    tries: set[int] = set()  # those whose body re-exports (their handler follows: line order)
    literals = []
    for b in found:
        p, top = b.parent, b.stack[0] if b.stack else None
        if (isinstance(p, ast.ImportFrom) and b.name == "__version__"
                and (p.level, p.module) in ((1, "_version"), (0, f"{package}._version"))
                and all(a.name == b.name for a in p.names if (a.asname or a.name) == b.name)
                and (top is None or (isinstance(top, ast.Try) and p in top.body))):
            tries.add(id(top))
        elif b.what is None:
            literals.append(b)
        elif not (b.value is not None and len(b.stack) == 2 and id(top) in tries
                  and isinstance(b.stack[1], ast.ExceptHandler)):  # not vLLM's fallback
            return [], f"{path}:{b.line} {b.what}: {_UNJUDGED}"
    return literals, None


def _dist_infos(package: str, source: Source) -> list[str]:
    """The root ``*.dist-info`` directories named for ``package`` (a package-directory
    target, or another kind of source, has none to offer)."""
    names: set[str] = set()
    if isinstance(source, WheelSource):
        names = {p.split("/")[0] for p in source.iter_files("") if p.count("/") == 1}
    elif isinstance(source, DirectorySource) and source.mount is None:
        with contextlib.suppress(OSError):
            names = set(os.listdir(source.base))
    norm = re.compile(r"[-_.]+")  # PEP 503: the name part of ``<name>-<version>.dist-info``
    return sorted(n for n in names if n.lower().endswith(".dist-info")
                  and norm.sub("-", n.split("-", 1)[0]).lower() == norm.sub("-", package).lower())


def _metadata_version(data: bytes, path: str) -> tuple[str | None, str | None]:
    """METADATA's one ``Version:`` header, or why there is none."""
    head = re.split(rb"\r?\n\r?\n", data[: 1 << 20], maxsplit=1)[0]  # KiBs of headers, then the body
    # Header lines as RFC 822 writes them (no email.parser: 5 ms of start-up for one field).
    found = re.findall(rb"^version[ \t]*:[ \t]*(.*?)[ \t]*\r?$", head, re.I | re.M)
    if len(found) != 1:
        return None, f"{path} has {len(found) or 'no'} Version: header{'s' if found else ''}"
    return found[0].decode("utf-8", "replace"), None


def version_path(package: str) -> str:
    """Where the version lives: ``<package>/_version.py`` (setuptools-scm style)."""
    return f"{package}/_version.py"


def read_version(data: bytes) -> str | None:
    """``_version.py``'s ``__version__`` (or ``version``); None when unbound or unjudged."""
    return _version_file(data, "")[0]


def check_version(package: str, expected: str | None, store: FileStore) -> Check:
    """Judge the version as ``import <package>`` would see it, against the pin
    (``expected`` None: nothing pinned, for ``declared_version``)."""
    path, vpath = version_path(package), f"{package}/version.py"

    def done(status: Status, message: str, where: str = path, actual: str | None = None) -> Check:
        return Check(id="version", kind="version", status=status, path=where,
                     expected=expected, actual=actual, message=message)

    read: dict[str, bytes | None] = {}
    for where in (path, vpath, *(f"{m}/METADATA" for m in _dist_infos(package, store.source))):
        try:
            read[where] = store.get(where).data
        except SourceError as exc:
            if not isinstance(exc, MissingFile) or where == path:
                return source_problem(exc, id="version", kind="version", expected=expected)
            read[where] = None  # no version.py; a dist-info without METADATA is no install
    actual, why = _version_file(read.pop(path) or b"", path)
    vdata = read.pop(vpath)
    literals, vwhy = ([], None) if vdata is None else _reexport_file(vdata, vpath, package)
    if why or vwhy or actual is None:
        return done(Status.ERROR, why or vwhy or f"{path} assigns no __version__ string",
                    path if why or not vwhy else vpath)
    for b in literals:
        said = f"{vpath}:{b.line} sets __version__ to {b.value} by hand, not by re-exporting {path}"
        if b.value != expected:
            return done(Status.FAIL, f"{said}; pinned {expected}", vpath, b.value)
        return done(Status.ERROR, f"{said}: {_UNJUDGED}", vpath)
    fails = [] if actual == expected else [f"version is {actual}, pinned {expected}"]
    metas = [(p, d) for p, d in read.items() if d is not None]
    for mpath, data in metas:
        listed, why = _metadata_version(data, mpath)
        if why is not None:
            return done(Status.ERROR, why, mpath)
        if listed != actual:
            fails.append(f"{mpath} says Version: {listed} but {path} says {actual}")
    if fails:
        return done(Status.FAIL, "; ".join(fails), actual=actual)
    note = "" if metas else f" (no {package} *.dist-info/METADATA at the target root to cross-check)"
    return done(Status.PASS, f"version is {actual}{note}", actual=actual)


def declared_version(package: str, store: FileStore) -> str | None:
    """The version the target declares, for reports; None when it cannot be judged."""
    return check_version(package, None, store).actual
