"""What a ``.pth`` line imports, read from its text alone.

``site`` hands every ``.pth`` line that starts with ``import`` to ``exec``. The
shadowing check (``pp1audit.checks.shadowing``) vouches for such a line by its
distribution's RECORD, but the line's hash says nothing about the modules it
runs (``_distutils_hack``, ``coverage``): those are verified too
(``pp1audit.checks.vouch``), and this module says which they are. It parses and never
runs or opens anything, so it is kept apart from the file access around it and
can be tested on strings: a constant name gives a module, a name or code
computed at run time (``exec(base64.b64decode(…))``) is ``dynamic``, since what
it imports cannot be known.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from pp1audit.text.safe import cut

CUT = 120
"""Characters of an executing ``.pth`` line shown; the rest is counted, never dropped silently."""


_IMPORTERS = ("__import__", "import_module")
"""Calls that import the module their first argument (or ``name=``) names
(``__import__('x')``, ``importlib.import_module('x')``)."""

_RUNNERS = ("exec", "eval", "compile")
"""Builtins that run (or compile, for ``exec`` to run) the code their first
argument (or ``source=``) holds: ``exec('import coverage')`` in coverage's ``.pth``."""

RUN_DEPTH = 8
"""Nested ``exec('exec(…)')`` strings followed; deeper code is taken as undetermined."""


@dataclass(frozen=True, slots=True)
class PthImports:
    """What the executing lines of a ``.pth`` import."""

    modules: list[str]
    """Top-level modules named by a constant, sorted."""
    dynamic: list[str]
    """Calls whose module name or code is computed at run time, as written (cut at ``CUT``)."""


def pth_imports(lines: list[str]) -> PthImports:
    """What the executing lines of a ``.pth`` import.

    Each line is what ``site`` hands to ``exec``: parsed with ``ast``, its
    ``import`` / ``from … import`` statements (absolute ones) and calls of
    ``__import__`` / ``import_module`` with a constant name give a module's first
    component; the constant string (or bytes) ``exec``, ``eval`` or ``compile``
    is given is parsed the same way, nested ones too. A string made of constants
    (``'import ' + 'x'``, ``f'import x'``, ``'x' * 2``) is folded (``_fold``). Any other
    argument to those calls (``exec(base64.b64decode(…))``, ``__import__(name)``)
    is code or a name computed at run time: ``dynamic``. A line or string that does
    not parse runs nothing (``exec`` raises), so it gives none.
    """
    modules: set[str] = set()
    dynamic: list[str] = []
    for line in lines:
        _collect_imports(line, modules, dynamic, 0)
    return PthImports(sorted(modules), dynamic)


def imported_modules(lines: list[str]) -> list[str]:
    """Top-level modules the executing lines of a ``.pth`` import by a constant name, sorted."""
    return pth_imports(lines).modules


def _collect_imports(code: str, modules: set[str], dynamic: list[str], depth: int) -> None:
    """``pth_imports`` for one piece of code (a line, or a string it runs)."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules.add(node.module.split(".")[0])
        elif isinstance(node, ast.Call) and _importer(node.func):
            name = _constant_text(_first_argument(node, "name"))
            if name is None:
                dynamic.append(_cut_code(node))
            elif name:
                modules.add(name.split(".")[0])
        elif isinstance(node, ast.Call) and _runner(node.func):
            arg = _first_argument(node, "source")
            if isinstance(arg, ast.Call) and _runner(arg.func):
                continue  # exec(compile('…')): the inner call is walked on its own
            text = _constant_text(arg)
            if text is None or depth >= RUN_DEPTH:
                dynamic.append(_cut_code(node))
            else:
                _collect_imports(text, modules, dynamic, depth + 1)


def _first_argument(call: ast.Call, keyword: str) -> ast.expr | None:
    """The first positional argument of a call, else its ``keyword`` argument; None
    when there is neither, or when ``*args`` / ``**kwargs`` may supply it."""
    if call.args:
        return None if isinstance(call.args[0], ast.Starred) else call.args[0]
    if any(k.arg is None for k in call.keywords):
        return None
    return next((k.value for k in call.keywords if k.arg == keyword), None)


def _constant_text(node: ast.expr | None) -> str | None:
    """The string a constant argument holds (bytes decoded as ``exec`` decodes
    source), folded from constants when it is an expression of them; None when it
    is computed at run time."""
    if node is None:
        return None
    if isinstance(node, ast.Constant):
        if isinstance(node.value, str):
            return node.value
        if isinstance(node.value, bytes):
            return node.value.decode("utf-8", "replace")
    return _fold(node, 0)


_FOLD_LIMIT = 1 << 16
"""Longest string ``_fold`` builds: a ``.pth`` line is short; ``'x' * 10**9`` is not text."""


def _fold(node: ast.expr, depth: int) -> str | None:
    """A string expression of constants (``+``, ``*`` by an int, an f-string of
    constants), evaluated as Python would; None for anything computed at run time."""
    if depth > 50:
        return None
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else None
    if isinstance(node, ast.JoinedStr):
        parts = [_fold(v, depth + 1) if not isinstance(v, ast.FormattedValue) else None
                 for v in node.values]
        return "".join(p for p in parts if p is not None) if None not in parts else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _fold(node.left, depth + 1), _fold(node.right, depth + 1)
        return left + right if left is not None and right is not None else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        text, times = (node.left, node.right)
        if isinstance(text, ast.Constant) and isinstance(text.value, int):
            text, times = times, text
        folded = _fold(text, depth + 1)
        if (folded is not None and isinstance(times, ast.Constant) and type(times.value) is int
                and len(folded) * max(times.value, 0) <= _FOLD_LIMIT):
            return folded * times.value
    return None


def _cut_code(node: ast.expr) -> str:
    """A call as written, at most ``CUT`` characters, the cut counted."""
    return cut(ast.unparse(node), CUT)


def _runner(func: ast.expr) -> bool:
    """``exec`` / ``eval`` / ``compile`` by name, or ``….exec`` / ``….eval`` (``builtins.exec``)."""
    if isinstance(func, ast.Name):
        return func.id in _RUNNERS
    return isinstance(func, ast.Attribute) and func.attr in ("exec", "eval")


def _importer(func: ast.expr) -> bool:
    """``__import__`` or ``….import_module``, by name."""
    if isinstance(func, ast.Name):
        return func.id in _IMPORTERS
    return isinstance(func, ast.Attribute) and func.attr in _IMPORTERS
