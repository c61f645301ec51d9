"""Dead code: which code may not (or can never) run whenever its scope runs, because a
statement before it never completes (``return``, a certain raise, an ``if`` whose every
arm leaves, a loop or ``try`` that never completes) or a test is constant.

Separate because it is a question about control flow alone, asked of every match in
both directions (what a rule requires must certainly run, what it forbids counts as
soon as it may); the other parts only ask it (``dead``, ``_exit``)."""

from __future__ import annotations

import re
import symtable
from typing import TYPE_CHECKING

from pp1audit.facts.imports import Imports
from pp1audit.facts.shapes import _DISPLAYS, _SCOPE_KINDS, _SPLATS
from pp1audit.nodespans import end_of, span_of, start_of
from pp1audit.syntaxtree import (
    Key,
    branches,
    constant_truth,
    key,
    line,
    literal,
    named_items,
    short,
    short_text,
    statement_raises,
    unparen,
)

if TYPE_CHECKING:  # pragma: no cover
    from ast_grep_py import SgNode


_TERMINATORS = {"return_statement": "return", "raise_statement": "raise",
                "continue_statement": "continue", "break_statement": "break"}


_HANDLERS = ("except_clause", "except_group_clause")


class Reachability(Imports):
    """Dead code, memoised per node and direction (``Facts``' part for control flow)."""

    def __init__(self, root: SgNode, source: str) -> None:
        super().__init__(root, source)
        self._dead: dict[tuple[Key, bool], str | None] = {}
        self._ends: dict[tuple[Key, bool], bool] = {}
        self._exits: dict[tuple[Key, bool], SgNode | None] = {}
        self._truths: dict[tuple[Key, bool], bool | None] = {}
        self._type_checking: dict[str, bool] = {}
        self._fold_ok: bool | None = None
        self._raising: dict[Key, str | None] = {}

    def dead(self, node: SgNode, certain: bool = False) -> str | None:
        """Why ``node`` may not run whenever its scope runs (its block or branch is
        unreachable), or None.

        Two readings, because a rule looks in two directions. What a rule *requires*
        must certainly run, so by default code reached only when a context manager
        suppresses an exception (after ``with …: return``) does not count. What a
        rule *forbids* counts as soon as it can run, so with ``certain`` only code
        that can never run is dead (after ``with suppress(E): raise X()`` the code
        runs)."""
        path: list[tuple[SgNode, tuple[Key, bool], SgNode]] = []
        n = node
        while True:  # up to the nearest node already judged (or the root)
            k = (key(n), certain)
            if k in self._dead:
                verdict = self._dead[k]
                break
            parent = n.parent()
            if parent is None:
                verdict = self._dead[k] = None
                break
            path.append((n, k, parent))
            n = parent
        for child, k, parent in reversed(path):
            if verdict is None:
                verdict = self._edge_dead(child, parent, certain)
            self._dead[k] = verdict
        return verdict

    def _edge_dead(self, child: SgNode, parent: SgNode, certain: bool) -> str | None:
        kind = parent.kind()
        ck = key(child)
        if kind in ("block", "module"):
            stop = self._exit(parent, certain)
            if stop is None or start_of(child) < end_of(stop):
                return None
            return "after " + self._leaves(stop, certain)
        if kind == "try_statement" and child.kind() == "else_clause":
            body = parent.field("body")
            if body is not None and self._exit(body, certain) is not None:
                return (f"in the `else` of the `try` at line {line(parent)}, whose body "
                        "always leaves it")
            return None
        if kind == "if_statement":
            always: str | None = None  # an earlier test that is always true
            for clause, test, body in branches(parent):
                if ck in (key(body), key(clause) if clause is not None else None):
                    if always is not None:
                        return f"after {always}, which is always true"
                    if test is not None and self.truth(test, certain) is False and \
                            ck == key(body):
                        return self._never("if", test, certain)
                    return None
                if test is not None and self.truth(test, certain) is True:
                    word = "if" if clause is None else "elif"
                    always = f"`{word} {short(test, 40)}:` at line {line(test)}"
            return None
        if kind in ("elif_clause", "while_statement"):
            cond = parent.field("condition")
            inner = parent.field("consequence" if kind == "elif_clause" else "body")
            if cond is None:
                return None
            truth = self.truth(cond, certain)
            word = "elif" if kind == "elif_clause" else "while"
            if inner is not None and ck == key(inner) and truth is False:
                return self._never(word, cond, certain)
            if kind == "while_statement" and child.kind() == "else_clause" and truth is True:
                return f"in the `else` of `while {short(cond, 40)}:` at line {line(cond)}"
            return None
        if kind == "conditional_expression":
            parts = named_items(parent.children())
            if len(parts) == 3:
                truth = self.truth(parts[1], certain)
                if (ck == key(parts[0]) and truth is False) or (
                        ck == key(parts[2]) and truth is True):
                    return f"a branch of `{short(parent, 40)}` at line {line(parent)} never taken"
            return None
        if kind in _COMPREHENSIONS or kind in ("for_in_clause", "for_statement"):
            return self._per_item_dead(child, parent, certain)
        if kind == "boolean_operator":
            left, right, op = parent.field("left"), parent.field("right"), parent.field("operator")
            if left is not None and right is not None and op is not None and ck == key(right):
                truth = self.truth(left, certain)
                if (op.text() == "and" and truth is False) or (op.text() == "or" and truth is True):
                    return f"never evaluated in `{short(parent, 40)}` at line {line(parent)}"
        return None

    def _per_item_dead(self, child: SgNode, parent: SgNode, certain: bool) -> str | None:
        """Why ``child``, code run once per item of an iterable (a ``for`` body; a
        comprehension's element, ``if`` and later ``for`` clauses, its first target), may
        not run: an iterable that is an empty literal (``for _ in ():``) runs nothing, in
        both directions; and a generator expression runs nothing until it is iterated
        (``_consumed``), so for what a rule requires, one nothing here iterates (an
        expression statement, a name bound to it) does not count. The first iterable of a
        comprehension is evaluated where it stands."""
        kind = parent.kind()
        if kind == "for_statement":
            over, body = parent.field("right"), parent.field("body")
            if body is None or key(child) != key(body) or over is None or not _empty(over):
                return None
            return (f"in the body of the `for` at line {line(parent)}, which iterates "
                    f"`{short(over, 20)}`: nothing")
        if kind == "for_in_clause":
            comp = parent.parent()
            first = _first_clause(comp) if comp is not None else None
            over = parent.field("right")
            if comp is None or first is None or key(first) != key(parent) or (
                    over is not None and key(over) == key(child)):
                return None  # a later clause is judged as a whole; the first iterable is eager
            return self._lazy_dead(comp, parent, certain)
        if child.kind() == "for_in_clause":
            first = _first_clause(parent)
            return None if first is None or key(first) == key(child) else \
                self._lazy_dead(parent, child, certain)
        if child.kind() in ("(", ")", "[", "]", "{", "}"):
            return None
        return self._lazy_dead(parent, child if child.kind() == "if_clause" else None, certain)

    def _lazy_dead(self, comp: SgNode, upto: SgNode | None, certain: bool) -> str | None:
        """Why the code of the comprehension ``comp`` run per item of its clauses before
        ``upto`` (None: all of them) may not run (``_per_item_dead``)."""
        for clause in comp.children():
            if upto is not None and key(clause) == key(upto):
                break
            over = clause.field("right") if clause.kind() == "for_in_clause" else None
            if over is not None and _empty(over):
                return (f"in `{short(comp, 40)}` at line {line(comp)}, whose `for` iterates "
                        f"`{short(over, 20)}`: nothing")
        if not certain and comp.kind() == "generator_expression" and not _consumed(comp):
            return (f"{NOT_ITERATED} (`{short(comp, 40)}` at line {line(comp)}; a generator "
                    "runs only when iterated: passed to a call, a `for`, `in`, `*`, unpacked, "
                    "`+=`, `yield` or `return`)")
        return None

    def _leaves(self, stop: SgNode, certain: bool) -> str:
        """How ``stop`` (a statement that never completes) leaves its block, for messages."""
        what = _TERMINATORS.get(stop.kind())
        if what:
            return f"the `{what}` at line {line(stop)}"
        if stop.kind() == "assert_statement":
            return (f"the `{short(stop, 40)}` at line {line(stop)}, which always raises "
                    "(unless Python runs with -O)")
        raised = self.raises(stop)
        if raised is not None:
            return (f"`{short_text(self._header(stop) or '', 40)}` at line {line(stop)}, which "
                    f"always raises {raised}")
        if stop.kind() == "with_statement":
            return (f"the `with` at line {line(stop)}, whose body always leaves the block (reached "
                    "only if its context manager suppresses an exception)")
        if stop.kind() in ("for_statement", "while_statement"):
            word = "for" if stop.kind() == "for_statement" else "while"
            alternative = stop.field("alternative")
            orelse = _block_of(alternative) if alternative is not None else None
            if orelse is not None and self._exit(orelse, certain) is not None:
                return f"the `{word}` at line {line(stop)}, whose `else` always leaves the block"
            cond = stop.field("condition") if word == "while" else None
            if cond is not None and self._endless(stop, certain):
                return f"the `while {short(cond, 40)}:` at line {line(stop)}, which never ends"
            over = stop.field("right")
            runs = f" (`{short(over, 30)}` is not empty)" if over is not None else ""
            return (f"the `{word}` at line {line(stop)}, whose every pass leaves the function "
                    f"and which certainly runs{runs}")
        if stop.kind() == "try_statement":
            fin = _try_parts(stop)[3]
            if fin is not None and self._exit(fin, certain) is not None:
                return f"the `try` at line {line(stop)}, whose `finally` always leaves the block"
            if not _try_parts(stop)[1]:
                return f"the `try` at line {line(stop)}, whose body always leaves the block"
            return (f"the `try` at line {line(stop)}, whose body (or `else`) and every `except` "
                    "leave the block")
        return f"line {line(stop)}, whose every branch leaves the block"

    def _exit(self, block: SgNode, certain: bool = False) -> SgNode | None:
        """The block's first statement that never completes (all after it is dead), if any."""
        k = (key(block), certain)
        if k not in self._exits:
            self._exits[k] = next((s for s in named_items(block.children())
                                   if self.ends(s, certain)), None)
        return self._exits[k]

    def ends(self, stmt: SgNode, certain: bool = False) -> bool:
        """The statement never completes normally: return/raise/continue/break; one that
        certainly raises (a part of it that is certainly evaluated is made of constants and
        raises, ``print(1 / 0)``, ``if 1 / 0:``, ``a, b = 1``: ``raises``); an if
        chain whose every reachable branch (with an ``else`` or a constant-true test)
        ends; a ``try`` or a loop that ends (``_try_ends``, ``_loop_ends``); and, unless
        ``certain``, a ``with`` whose body ends (its context manager could suppress an
        exception) and an ``assert`` of a constant-false test (``python -O`` strips it,
        so what follows may still run: only for what a rule requires is it an exit)."""
        kind = stmt.kind()
        if kind == "assert_statement":
            return not certain and self._failing_assert(stmt)
        if kind in _TERMINATORS:
            return True
        if self.raises(stmt) is not None:
            return True
        if kind not in ("if_statement", "try_statement", "with_statement", "for_statement",
                        "while_statement"):
            return False
        if kind == "with_statement" and certain:
            return False
        k = (key(stmt), certain)
        hit = self._ends.get(k)
        if hit is None:
            if kind == "if_statement":
                hit = self._if_ends(stmt, certain)
            elif kind == "try_statement":
                hit = self._try_ends(stmt, certain)
            elif kind in ("for_statement", "while_statement"):
                hit = self._loop_ends(stmt, certain)
            else:
                body = stmt.field("body")
                hit = body is not None and self._exit(body, certain) is not None
            self._ends[k] = hit
        return hit

    def _if_ends(self, stmt: SgNode, certain: bool) -> bool:
        for _clause, test, body in branches(stmt):
            truth = True if test is None else self.truth(test, certain)
            if truth is False:
                continue
            if self._exit(body, certain) is None:
                return False
            if truth is True:
                return True
        return False

    def _loop_ends(self, loop: SgNode, certain: bool) -> bool:
        """A loop never completes when nothing ``break``s out of it and it cannot run out
        (a ``while`` with a constant-true test) or its ``else`` never completes; or when it
        certainly runs (``_runs``) and its pass leaves the function (no ``continue``).

        A loop that may run zero times (``while x:``, ``for i in xs:``) completes then,
        exactly like ``if x: return``: what follows it is code, in both directions."""
        body = loop.field("body")
        if body is None or self._jumps(loop, "break_statement", certain):
            return False
        alternative = loop.field("alternative")
        orelse = _block_of(alternative) if alternative is not None else None
        if orelse is not None and self._exit(orelse, certain) is not None:
            return True
        if self._endless(loop, certain):
            return True
        return self._runs(loop, certain) and self._exit(body, certain) is not None and \
            not self._jumps(loop, "continue_statement", certain)

    def truth(self, test: SgNode, certain: bool = True) -> bool | None:
        """``constant_truth`` of a test node, folded once per file and direction: dead-code
        questions ask about the same test in both directions and from several places (a
        loop's fate, an ``assert``, a branch), and a long test (not in ``constant_truth``'s
        text cache) costs a multiple of its length each time.

        What a rule requires (``certain`` False) reads ``typing.TYPE_CHECKING`` as the
        ``False`` it is when the code runs (``_run_time_text``): the body of ``if
        TYPE_CHECKING:`` is for type checkers and never runs, its ``else`` does. What a
        rule forbids leaves it unknown, both arms counting (fail closed)."""
        k = (key(test), certain)
        if k not in self._truths:
            text = self._run_time_text(test) if not certain else None
            if text is None or text == test.text():  # one fold when the directions agree
                plain = (key(test), True)
                if plain not in self._truths:
                    self._truths[plain] = constant_truth(test.text())
                self._truths[k] = self._truths[plain]
            else:
                self._truths[k] = constant_truth(text)
        return self._truths[k]

    def _run_time_text(self, test: SgNode) -> str:
        """``test``'s text with each ``TYPE_CHECKING`` of the ``typing`` module it names
        (``_is_type_checking``) written ``False``, its value when the code runs."""
        text = test.text()
        if "TYPE_CHECKING" not in text:
            return text
        origin = start_of(test)
        spans: list[tuple[int, int]] = []
        for ident in test.find_all(kind="identifier"):
            if ident.text() != "TYPE_CHECKING":
                continue
            parent = ident.parent()
            node = parent if parent is not None and parent.kind() == "attribute" else ident
            if self._is_type_checking(node):
                first, last = span_of(node)
                spans.append((first - origin, last - origin))
        for start, end in sorted(spans, reverse=True):
            text = f"{text[:start]}(False){text[end:]}"
        return text

    def _is_type_checking(self, node: SgNode) -> bool:
        """``node`` (a name or ``m.TYPE_CHECKING``) is ``typing.TYPE_CHECKING`` (or
        ``typing_extensions``'): the name imported from it by every binding the module
        has of it, or an attribute of a name every binding of which imports the module.
        A name bound otherwise too, anywhere in the file (``TYPE_CHECKING = True``, in a
        class body too; ``typing = …``), is left unknown, and so is every ``TYPE_CHECKING``
        of a file that may set one (``_fold_safe``): both arms then count, as for any
        test not known."""
        if not self._fold_safe():
            return False
        if node.kind() == "attribute":
            obj = node.field("object")
            if obj is None or obj.kind() != "identifier":
                return False
            name, wanted = obj.text(), {"typing", "typing_extensions"}
        else:
            name, wanted = node.text(), {"typing.TYPE_CHECKING",
                                         "typing_extensions.TYPE_CHECKING"}
        memo = f"{node.kind()}:{name}"
        if memo not in self._type_checking:
            self._type_checking[memo] = self._only_imports(name, wanted)
        return self._type_checking[memo]

    def _only_imports(self, name: str, wanted: set[str]) -> bool:
        """Every binding of ``name`` in the file is a module-level import of one of
        ``wanted`` (and there is one): not bound in a class, function or comprehension
        either (``class C: TYPE_CHECKING = True``, ``global typing``)."""
        try:
            table = self._symtable()
            sym = table.lookup(name)
        except (KeyError, SyntaxError, ValueError, RecursionError, MemoryError):
            return False
        if not sym.is_imported() or sym.is_assigned() or sym.is_declared_global():
            return False
        if _bound_below(table, name):
            return False
        sources = self._import_sources(name)  # None: a star import may bind it too
        return sources is not None and bool(sources) and all(s in wanted for s in sources)

    def _fold_safe(self) -> bool:
        """No code of the file may set a ``TYPE_CHECKING`` (memoised per file): each
        ``TYPE_CHECKING`` in it is imported (``from typing import …``) or read in a test
        (``if`` / ``elif`` / ``while`` / ``… if … else …``, no ``:=`` there); no string
        but a docstring holds the word (``globals()["TYPE_CHECKING"]``,
        ``setattr(typing, "TYPE_CHECKING", …)``); and the file names no way to set a name
        it does not spell (``globals``, ``vars``, ``setattr``, ``__dict__``,
        ``sys.modules``, ``exec`` / ``eval``…). Another module setting it is not seen:
        folding only takes code away from what a rule requires."""
        if self._fold_ok is None:
            self._fold_ok = all(
                any(a.kind() == "import_from_statement" for a in ident.ancestors())
                or _read_in_test(ident)
                for ident in self._occurrences("TYPE_CHECKING", self.root)) and not any(
                "TYPE_CHECKING" in string.text() and not _docstring(string)
                for string in self.root.find_all(kind="string")) and not any(
                self._occurrences(word, self.root) for word in _NAME_SETTERS) and not any(
                _builtin_use(ident) for word in _RUNNER_WORDS
                for ident in self._occurrences(word, self.root))
        return self._fold_ok

    def _never(self, word: str, test: SgNode, certain: bool) -> str:
        """Why the body of ``word test:`` never runs (``TYPE_CHECKING`` said, when it decides)."""
        why = f"under `{word} {short(test, 40)}:` at line {line(test)}, never true"
        if not certain and self.truth(test, certain=True) is None:
            why += " when the code runs (`TYPE_CHECKING` is False then: only type checkers read it)"
        return why

    def raises(self, stmt: SgNode) -> str | None:
        """The exception a statement certainly raises when it runs, or None: a simple
        statement, or the header of an ``if`` / ``while`` / ``for`` / ``with`` / ``match``,
        certainly evaluates a part made of constants that raises (``statement_raises``:
        ``1 / 0``, ``print([][0])``, ``if None.x:``, ``None()``, ``a, b = 1``,
        ``for _ in 1:``). Such a statement ends its block exactly as ``raise`` does, in
        both directions: it never completes, so what follows it never runs (memoised per
        statement; an ``assert`` is not one: ``python -O`` strips it)."""
        k = key(stmt)
        if k not in self._raising:
            text = self._evaluated_text(stmt)
            self._raising[k] = statement_raises(text) \
                if text is not None and _CONSTANT_TEXT.search(text) else None
        return self._raising[k]

    def _evaluated_text(self, stmt: SgNode) -> str | None:
        """What Python evaluates of ``stmt`` before its body, as a statement the stdlib
        parses: a simple statement, or a compound statement's header with a body of
        ``pass`` (``_header``); else None."""
        header = self._header(stmt)
        if header is None or stmt.kind() not in _HEADED:
            return header
        return header + ("\n case _:\n  pass\n" if stmt.kind() == "match_statement" else
                         "\n pass\n")

    def _header(self, stmt: SgNode) -> str | None:
        """A simple statement's text, or a compound statement's header (``if 1 / 0:``), read
        from the file's text: the header, not the whole body; None for other statements."""
        kind = stmt.kind()
        if kind in ("expression_statement", "delete_statement"):
            return stmt.text()
        body = stmt.field("consequence" if kind == "if_statement" else "body") \
            if kind in _HEADED else None
        if body is None:
            return None
        return self.source[start_of(stmt):start_of(body)].rstrip()

    def _failing_assert(self, stmt: SgNode) -> bool:
        """``assert False`` / ``assert 0, "…"``: a test that is constant and false."""
        parts = named_items(stmt.children())
        return bool(parts) and self.truth(parts[0], certain=False) is False

    def _endless(self, loop: SgNode, certain: bool) -> bool:
        """A ``while`` whose test is constant and true: only a ``break`` (or an exit) ends it."""
        cond = loop.field("condition") if loop.kind() == "while_statement" else None
        return cond is not None and self.truth(cond, certain) is True

    def _runs(self, loop: SgNode, certain: bool) -> bool:
        """The loop's body certainly runs at least once: a ``while`` with a constant-true
        test, or a ``for`` over a non-empty literal (``_non_empty``). A truthy iterable is
        not enough: ``for x in xs or [0]:`` iterates ``xs`` when it is truthy, and an empty
        iterator or generator is truthy."""
        if loop.kind() == "while_statement":
            return self._endless(loop, certain)
        over = loop.field("right")
        return over is not None and _non_empty(over)

    def _jumps(self, loop: SgNode, kind: str, certain: bool) -> bool:
        """Some ``break``/``continue`` of this loop (not of a nested loop or function) may run.

        Reachability is judged inside the loop only (the loop's own fate is what is being
        decided)."""
        body = loop.field("body")
        for jump in body.find_all(kind=kind) if body is not None else []:
            if key(_loop_of(jump) or jump) != key(loop):
                continue
            child, live = jump, True
            for parent in jump.ancestors():
                if key(parent) == key(loop):
                    break
                if self._edge_dead(child, parent, certain) is not None:
                    live = False
                    break
                child = parent
            if live:
                return True
        return False

    def _try_ends(self, stmt: SgNode, certain: bool) -> bool:
        """A ``try`` never completes when its ``finally`` never does, or when neither its
        body-then-``else`` path nor any ``except`` can complete: an exception no handler
        catches leaves it too."""
        body, handlers, orelse, fin = _try_parts(stmt)
        if fin is not None and self._exit(fin, certain) is not None:
            return True
        if body is None or any(h is None for h in handlers):
            return False
        straight = self._exit(body, certain) is not None or (
            orelse is not None and self._exit(orelse, certain) is not None)
        return straight and all(self._exit(h, certain) is not None
                                for h in handlers if h is not None)


_HEADED = ("if_statement", "while_statement", "for_statement", "with_statement",
           "match_statement")
"""Compound statements that evaluate a header before their body (``Facts.raises``)."""
_CONSTANT_TEXT = re.compile(r"""[0-9'"\[{]|\(\s*\)|\b(?:None|True|False)\b|\.\.\.""")
"""Text without any of these holds no constant a statement could raise on: not parsed."""


def _block_of(clause: SgNode) -> SgNode | None:
    """The block of an except/else/finally clause (tree-sitter names only some of them)."""
    body = clause.field("body")
    return body if body is not None else next(
        (c for c in clause.children() if c.kind() == "block"), None)


def _try_parts(stmt: SgNode) -> tuple[SgNode | None, list[SgNode | None], SgNode | None,
                                      SgNode | None]:
    """(body, the block of each ``except``, the ``else`` block, the ``finally`` block)."""
    handlers: list[SgNode | None] = []
    orelse = fin = None
    for clause in stmt.children():
        kind = clause.kind()
        if kind in _HANDLERS:
            handlers.append(_block_of(clause))
        elif kind == "else_clause":
            orelse = _block_of(clause)
        elif kind == "finally_clause":
            fin = _block_of(clause)
    return stmt.field("body"), handlers, orelse, fin


def _non_empty(node: SgNode) -> bool:
    """``node`` is a display with an element that is not unpacked (``[0]``, ``(1, 2)``,
    ``{"a": 1}``, ``[*xs, 0]``, ``for _ in 1, 2:``) or a non-empty string/bytes literal:
    iterating it certainly yields something. Anything else (a name, a call, ``xs or [0]``,
    a comprehension, an f-string) may be empty."""
    node = unparen(node)
    if node.kind() in _DISPLAYS:
        return any(n.kind() not in _SPLATS for n in named_items(node.children()))
    got = literal(node)
    return got is not None and got[0] in (str, bytes) and bool(got[1])


_COMPREHENSIONS = ("generator_expression", "list_comprehension", "set_comprehension",
                   "dictionary_comprehension")


def _first_clause(comp: SgNode) -> SgNode | None:
    """A comprehension's first ``for`` clause (its iterable is evaluated in place)."""
    return next((c for c in comp.children() if c.kind() == "for_in_clause"), None)


def _empty(node: SgNode) -> bool:
    """``node`` is a literal that iterates nothing: ``()``, ``[]``, ``{}``, ``""``, ``b""``
    (parentheses aside). Anything else may yield something (``set()`` may be another
    ``set``)."""
    node = unparen(node)
    if node.kind() in _DISPLAYS:
        return not named_items(node.children())
    got = literal(node)
    return got is not None and got[0] in (str, bytes) and not got[1]


def _consumed(gen: SgNode) -> bool:
    """The generator expression ``gen`` is iterated where it stands, as far as the syntax
    shows: passed to a call (the call's only argument, a positional or keyword one), the
    iterable of a ``for`` (or of a comprehension that is itself eager or iterated), what
    ``in`` / ``not in`` searches (``y in gen``), unpacked (``*gen``, ``a, b = gen``), the
    value of an augmented assignment (``lst += gen``), delegated to or yielded (``yield
    from gen``, ``yield gen``) or returned. Bound to a name, or an expression statement, it
    shows no iteration: whether the name is iterated later is data flow, and what a rule
    requires is not read from it."""
    node, holder = gen, gen.parent()
    while holder is not None and holder.kind() == "parenthesized_expression":
        node, holder = holder, holder.parent()
    if holder is None:
        return False
    kind = holder.kind()
    if kind in ("argument_list", "list_splat", "parenthesized_list_splat", "return_statement",
                "yield"):
        return True
    if kind == "comparison_operator":
        before = node.prev()
        return before is not None and before.kind() in ("in", "not in")
    if kind in ("assignment", "augmented_assignment"):
        value = holder.field("right")
        return value is not None and key(value) == key(node) and (
            kind == "augmented_assignment" or _unpacks(holder))
    if kind in ("call", "keyword_argument", "for_statement", "for_in_clause"):
        field = {"call": "arguments", "keyword_argument": "value"}.get(kind, "right")
        part = holder.field(field)
        if part is None or key(part) != key(node):
            return False
        if kind != "for_in_clause":
            return True
        comp = holder.parent()
        return comp is not None and (comp.kind() != "generator_expression" or _consumed(comp))
    return False


def _unpacks(assignment: SgNode) -> bool:
    """Some target of the (possibly chained: ``x = a, b = v``) assignment is a tuple or list
    to unpack the value into."""
    node: SgNode | None = assignment
    while node is not None and node.kind() == "assignment":
        left = node.field("left")
        if left is not None and left.kind() in _UNPACKING:
            return True
        outer = node.parent()
        right = outer.field("right") if outer is not None else None
        node = outer if right is not None and key(right) == key(node) else None
    return False


_UNPACKING = ("pattern_list", "tuple_pattern", "list_pattern")
NOT_ITERATED = "in a generator expression nothing iterates"
"""How a requirement's match in a generator nothing iterates is left out (``dead``): not
"unreachable" (``not_run`` says the others so)."""


def not_run(why: str) -> str:
    """Why code ``dead`` left out does not count, for a message: "unreachable, …", but for a
    generator expression nothing iterates, which is said as it is."""
    return why if why.startswith(NOT_ITERATED) else f"unreachable, {why}"


_NAME_SETTERS = ("globals", "vars", "locals", "__dict__", "__globals__", "setattr", "delattr",
                 "__setattr__", "__delattr__", "modules", "__builtins__", "builtins")
"""Names through which code may set a ``TYPE_CHECKING`` without spelling it (``_fold_safe``)."""
_RUNNER_WORDS = ("exec", "eval")
"""Names of builtins that run code from text (``model.eval()`` is another thing)."""
_TEST_HOLDERS = ("if_statement", "elif_clause", "while_statement")


def _bound_below(table: symtable.SymbolTable, name: str) -> bool:
    """``name`` is bound in a scope nested in ``table`` (a class, a function, a lambda, a
    comprehension: assigned, deleted, imported, a parameter)."""
    for child in table.get_children():
        try:
            sym = child.lookup(name)
        except KeyError:
            sym = None
        if sym is not None and (sym.is_assigned() or sym.is_imported() or sym.is_parameter()):
            return True
        if _bound_below(child, name):
            return True
    return False


def _read_in_test(ident: SgNode) -> bool:
    """The identifier (a name, or the attribute of ``m.TYPE_CHECKING``) is read in the test of
    an ``if`` / ``elif`` / ``while`` or of a conditional expression, not bound by ``:=``
    there."""
    child = ident
    for anc in ident.ancestors():
        kind = anc.kind()
        if kind in _TEST_HOLDERS:
            test = anc.field("condition")
            return test is not None and key(test) == key(child)
        if kind == "conditional_expression":
            parts = named_items(anc.children())
            return len(parts) == 3 and key(parts[1]) == key(child)
        if kind in ("named_expression", "lambda", "block", "module") or \
                kind.endswith("statement") or kind in _SCOPE_KINDS:
            return False
        child = anc
    return False


def _docstring(string: SgNode) -> bool:
    """A string that is a statement of its own (a docstring, or a no-op)."""
    parent = string.parent()
    return parent is not None and parent.kind() == "expression_statement" and \
        len(named_items(parent.children())) == 1


def _builtin_use(ident: SgNode) -> bool:
    """``ident`` is a plain name (``exec``), not an attribute of something (``m.eval``)."""
    parent = ident.parent()
    return parent is None or parent.kind() != "attribute" or \
        (obj := parent.field("object")) is None or key(obj) == key(ident)


def _loop_of(jump: SgNode) -> SgNode | None:
    """The loop a ``break``/``continue`` leaves: the nearest whose body (not its ``else``)
    holds it, within the same function."""
    child = jump
    for anc in jump.ancestors():
        if anc.kind() in _SCOPE_KINDS:
            return None
        if anc.kind() in ("for_statement", "while_statement") and child.kind() != "else_clause":
            return anc
        child = anc
    return None
