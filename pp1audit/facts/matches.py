"""What the matcher asks about a match: every match of a pattern in a region (its other
assignment forms included), whether two matches lie in exclusive branches, whether a
matched binding is the one in force, and what code may make an assignment no form of
which can be matched.

Separate because these questions combine the other parts (bindings, attribute writes,
code runners) for one match of one rule, while the parts below answer for the file."""

from __future__ import annotations

from bisect import bisect_left
from typing import TYPE_CHECKING

from pp1audit.facts.inplace import Change, in_place_changes
from pp1audit.facts.runners import CodeRunners
from pp1audit.facts.shapes import _SPLATS, _dotted, _may_be
from pp1audit.facts.writes import Write, Writes
from pp1audit.nodespans import end_of, span_of, start_of
from pp1audit.patterns import Hit, Pat, at, find, parse_pattern
from pp1audit.rules import assign_parts
from pp1audit.syntaxtree import (
    ASSIGNING,
    Key,
    assigned,
    binding_statement,
    bound_names,
    branches,
    key,
    line,
    named_items,
    short,
    unparen,
    within,
)

if TYPE_CHECKING:  # pragma: no cover
    from ast_grep_py import SgNode


def _exact(node: SgNode, target: SgNode, value: SgNode) -> bool:
    """Whether ``target`` gets ``value`` itself from ``node`` (``assigned``'s triple): a walrus,
    a single target, or one of a tuple paired with the values' tuple; not ``+=``, a ``for``
    or ``with`` target, nor one target of a value unpacked (``a, b = pair``)."""
    kind = node.kind()
    if kind == "named_expression":
        return True
    if kind != "assignment":
        return False
    left = node.field("left")
    if left is not None and key(left) == key(target):
        return True
    holder = value.parent()
    return holder is not None and holder.kind() in ("expression_list", "tuple", "list")


class Matches(Writes, CodeRunners):
    """Matches of a pattern and what the matcher asks about each (the top of ``Facts``)."""

    def __init__(self, root: SgNode, source: str) -> None:
        super().__init__(root, source)
        self._search: dict[tuple[object, ...], list[Hit]] = {}
        self._write_starts: list[int] | None = None
        self._changes: dict[Key, list[Change]] = {}

    def rebinding(self, node: SgNode) -> tuple[str | None, list[SgNode]]:
        """For a match that is a class/module-level assignment or definition: why it is not
        the name's final binding (None if it is), and the other bindings that may be final
        instead (branches that cannot be ordered). A class member is also replaced by an
        attribute bound on its class from outside the body (``attribute_binding``; for a
        method, an instance attribute shadows it too)."""
        stmt = binding_statement(node)
        if stmt is None:
            return None, []
        scope = self.owner(stmt)
        if scope is not None and scope.kind() != "class_definition":
            return None, []  # a function's locals: data flow, not a definition
        scope = scope if scope is not None else self.root
        if scope.kind() == "class_definition":
            method = stmt.kind() in ("function_definition", "class_definition",
                                     "decorated_definition")
            for name in bound_names(stmt):
                outside = self.attribute_binding(scope, name, instance=method)
                if outside is not None:
                    return (f"`{name}` is bound again on its class at line {line(outside)} "
                            f"(`{short(outside, 50)}`), which replaces it"), []
        else:
            for name in bound_names(stmt):
                outside = self.namespace_binding(name)
                if outside is not None:
                    return (f"`{name}` may be bound again through the module's namespace at line "
                            f"{line(outside)} (`{short(outside, 50)}`), which replaces it"), []
        others: dict[Key, SgNode] = {}
        for name in bound_names(stmt):
            final = self.final(scope, name)
            if not final:
                continue  # not reachable from the body's start (e.g. dead): judged elsewhere
            if key(stmt) not in final:
                last = max(final.values(), key=start_of)
                return (f"`{name}` is bound again at line {line(last)} "
                        f"(`{short(last, 50)}`), which is the binding in force"), []
            after = [s for s in final.values() if self.may_only(s, name) and
                     start_of(s) >= end_of(stmt)]
            if after:
                return (f"`{name}` may be bound again at line {line(after[0])} "
                        f"(`{short(after[0], 50)}`: {_maybe_how(after[0])}), which may then be "
                        "the binding in force"), []
            others.update({k: s for k, s in final.items() if k != key(stmt)})
        runner = self.code_runner(self.root)
        if runner is not None:
            return (f"`{', '.join(bound_names(stmt)) or short(stmt, 30)}` may be bound again at "
                    f"line {line(runner)} (`{short(runner, 50)}`): exec/eval run code the file "
                    "does not show, which may bind any name, of any class or of the module"), []
        return None, list(others.values())

    def exclusive(self, a: SgNode, b: SgNode) -> SgNode | None:
        """The statement in whose different arms ``a`` and ``b`` lie (if/elif/else, try
        handlers/else, match cases, a conditional expression: never both run in one
        pass), or None."""
        pa = [a, *a.ancestors()]
        index = {key(n): i for i, n in enumerate(pa)}
        pb = [b, *b.ancestors()]
        for j, n in enumerate(pb):
            i = index.get(key(n))
            if i is None:
                continue
            if i == 0 or j == 0:
                return None  # one contains the other
            ca, cb, kind = pa[i - 1], pb[j - 1], n.kind()
            if kind == "if_statement":
                arms = {key(body) for _c, _t, body in branches(n)} | {
                    key(c) for c in n.children() if c.kind() in ("elif_clause", "else_clause")}
                apart = key(ca) in arms and key(cb) in arms
            elif kind == "try_statement":
                handlers = ("except_clause", "except_group_clause", "else_clause")
                apart = ca.kind() in handlers and cb.kind() in handlers
            elif kind == "conditional_expression":
                parts = named_items(n.children())
                apart = len(parts) == 3 and {key(ca), key(cb)} == {key(parts[0]),
                                                                      key(parts[2])}
            else:
                apart = kind == "block" and ca.kind() == cb.kind() == "case_clause"
            return n if apart else None
        return None

    def search(self, region: SgNode, text: str, bound: dict[str, SgNode],
               every_form: bool, in_place: bool = False) -> list[Hit]:
        """Matches of a pattern in ``region``, assignment forms included (see the ``matcher``
        module docstring, **Assignments**); ``every_form`` adds the forms only ``every``/``not``
        must see, and ``in_place`` (an ``in_place: true`` rule's) the in-place changes of an
        assignment's target (``in_place_changes``). A keyword argument ``name=value`` is not
        one of them: whether it counts depends on the rule's direction
        (``matcher._Eval.keywords``).

        Memoised: a relation searched once per match of the rule (``every`` × ``not``)
        would otherwise rescan its region for each."""
        pat = parse_pattern(text)
        used = sorted(n for n in pat.single if n in bound)
        memo = (key(region), text, every_form, in_place,
                tuple((n, key(bound[n])) for n in used))
        hit = self._search.get(memo)
        if hit is None:
            hit = self._search[memo] = self._search_all(region, pat, text, bound, every_form,
                                                        in_place)
        return hit

    def _search_all(self, region: SgNode, pat: Pat, text: str, bound: dict[str, SgNode],
                    every_form: bool, in_place: bool = False) -> list[Hit]:
        hits = find(region, pat, bound)
        parts = assign_parts(text)
        if parts is not None:
            target, value = parts
            hits += find(region, parse_pattern(f"{target}: $PP1ANNOTATION = {value}"), bound)
            if every_form:
                hits += self._assignment_forms(region, target, value, bound)
                if in_place:
                    hits += self._in_place_forms(region, target, value, bound)
                for through, holds, cls in self._instance_spellings(region, target):
                    spelled = f"{through} = {value}"
                    hits += [h for h in self._search_all(region, parse_pattern(spelled), spelled,
                                                         bound, True, in_place)
                             if _holds_at(h.node, holds, cls, self._nearest_class(h.node))]
        # One hit per node *and* captures: a tuple assignment is matched whole by ast-grep
        # (``$T = $V`` with T the target list) and once per target by the assignment
        # forms; keeping only the first made a `where` on T (``T: {is: $P}``) see the list,
        # never ``p`` in ``p, _ = logits, None`` (found by mutating the PP1 files).
        seen: set[tuple[Key, tuple[tuple[str, Key], ...]]] = set()
        out = []
        for h in sorted(hits, key=lambda h: start_of(h.node)):
            ident = (key(h.node), tuple(sorted((n, key(c)) for n, c in h.caps.items())))
            if ident not in seen:
                seen.add(ident)
                out.append(h)
        return out

    def _assignment_forms(self, region: SgNode, target: str, value: str,
                          bound: dict[str, SgNode]) -> list[Hit]:
        tpat, vpat = parse_pattern(target), parse_pattern(value)
        out: list[Hit] = []
        for node in region.find_all(ASSIGNING):
            for where, tnode, vnode in assigned(node):
                th = at(tnode, tpat, bound)
                if th is None:
                    continue
                vh = at(vnode, vpat, {**bound, **th.caps})
                if vh is not None:
                    inexact = (frozenset() if _exact(node, tnode, vnode)
                               else frozenset(vh.caps) | frozenset(vh.multi))
                    out.append(Hit(where, {**th.caps, **vh.caps}, {**th.multi, **vh.multi},
                                   inexact))
        obj, dot, attr = target.rpartition(".")
        if dot and attr.isidentifier() and _dotted_text(obj):
            out += self._computed_objects(region, obj, attr, vpat, bound)
        if dot and attr.isidentifier():  # any Python name (`größe`), not only ASCII
            for call in (f'setattr({obj}, "{attr}", {value})',
                         f'object.__setattr__({obj}, "{attr}", {value})',
                         f'builtins.setattr({obj}, "{attr}", {value})',
                         f'__builtins__.setattr({obj}, "{attr}", {value})'):
                out += find(region, parse_pattern(call), bound)
            objpat = parse_pattern(obj)
            for where, holder, name, stored in self._namespace_writes(region):
                if name != attr or stored is None:
                    continue
                th = at(unparen(holder), objpat, bound)
                vh = at(stored, vpat, {**bound, **th.caps}) if th is not None else None
                if th is not None and vh is not None:
                    out.append(Hit(where, {**th.caps, **vh.caps}, {**th.multi, **vh.multi}))
        return out

    def _in_place_forms(self, region: SgNode, target: str, value: str,
                        bound: dict[str, SgNode]) -> list[Hit]:
        """The in-place changes of ``target``'s value in ``region`` (``in_place_changes``),
        each a match with ``value`` capturing the changing code: what an ``in_place: true``
        rule ``T = $V`` adds to the assignments of ``T``."""
        tpat, vpat = parse_pattern(target), parse_pattern(value)
        changes = self._changes.get(key(region))
        if changes is None:
            changes = self._changes[key(region)] = in_place_changes(region)
        out: list[Hit] = []
        for where, changed, change in changes:
            th = at(changed, tpat, bound)
            vh = at(change, vpat, {**bound, **th.caps}) if th is not None else None
            if th is not None and vh is not None:
                out.append(Hit(where, {**th.caps, **vh.caps}, {**th.multi, **vh.multi}))
        return out

    def _instance_spellings(self, region: SgNode,
                            target: str) -> list[tuple[str, SgNode | None, SgNode]]:
        """For a target ``self.<attr>``: the same target through each other name an instance
        of a class in or around ``region`` has in its methods (``me = self``, ``(me :=
        self)``, ``me = it = self``: ``instance_names``), with the function the name holds
        in (None: anywhere in that class) and the class. A write
        through such a name gives the attribute its value as surely as one through
        ``self``, and ``every`` / ``not`` on ``self.`` alone let it pass (found by mutating
        the PP1 files)."""
        if not target.startswith("self."):
            return []
        around = self._nearest_class(region) if region.kind() != "class_definition" else region
        classes = [*([around] if around is not None else []),
                   *region.find_all(kind="class_definition")]
        out: list[tuple[str, SgNode | None, SgNode]] = []
        for cls in classes:
            for name, holds in self.instance_names(cls):
                if name != "self" and not name.startswith("self."):
                    out.append((f"{name}{target[len('self'):]}", holds, cls))
        return out

    @staticmethod
    def _computed_objects(region: SgNode, obj: str, attr: str, vpat: Pat,
                          bound: dict[str, SgNode]) -> list[Hit]:
        """Assignments to ``attr`` of an object written as an expression that may be the
        name ``obj`` (``(self).attr = v``, ``(s := self).attr = v``, ``(self if t else
        o).attr = v``, ``(x or self).attr = v``: ``_may_be``), which a pattern on ``obj.attr``
        does not match: the attribute of ``obj`` may be the one given the value."""
        out: list[Hit] = []
        for node in region.find_all(ASSIGNING):
            for where, tnode, vnode in assigned(node, plain=True):
                name = tnode.field("attribute") if tnode.kind() == "attribute" else None
                held = tnode.field("object") if name is not None else None
                if held is None or name is None or name.text() != attr or \
                        _dotted(held) is not None:
                    continue  # not this attribute, or an object a pattern matches
                if any(_dotted(m) == obj for m in _may_be(held)):
                    vh = at(vnode, vpat, bound)
                    if vh is not None:
                        out.append(Hit(where, vh.caps, vh.multi))
        return out

    def _namespace_writes(self, region: SgNode) -> list[Write]:
        """The ``attribute_writes`` of ``region`` that a pattern ``obj.attr = v`` does not
        spell, deletions aside: a name made of constants (``setattr(o, "a" + "b", v)``), a
        namespace written (``o.__dict__.update(a=v)``, ``vars(o)["a"] = v``,
        ``o.__dict__ = d``), a name not known (``setattr(o, name, v)``: None). Found by
        bisection in the file's writes, which are in source order."""
        writes = self.attribute_writes()
        if self._write_starts is None:
            self._write_starts = [start_of(w[0]) for w in writes]
        first, last = span_of(region)
        return [w for w in writes[bisect_left(self._write_starts, first):
                                  bisect_left(self._write_starts, last)]
                if within(w[0], region) and not _deletes(w[0]) and not _plain_target(w)]

    def may_assign(self, region: SgNode, text: str,
                   bound: dict[str, SgNode]) -> list[tuple[SgNode, str]]:
        """For a pattern ``obj.attr = v``: the code of ``region`` that may make that assignment
        although no form of it can be matched, and why (in source order). A write on an
        object ``obj`` matches whose name is not known (``setattr(self, name, v)``,
        ``self.__dict__.update(d)`` / ``(**d)``, ``vars(self)[k] = v``, ``self.__dict__ =
        d``) or whose value is not shown (``vars(self).update({"attr": v}, **more)`` reads
        as any name), or whose object is not known either (``setattr(*args)``); and any
        ``exec`` / ``eval`` (``code_runner``), which may do anything.
        The caller decides what may run (``dead``)."""
        parts = assign_parts(text)
        obj, dot, attr = parts[0].rpartition(".") if parts is not None else ("", "", "")
        if parts is None or not dot or not attr.isidentifier():
            return []
        objects = [(parse_pattern(obj), None, None)] + [
            (parse_pattern(spelled.rpartition(".")[0]), holds, cls)
            for spelled, holds, cls in self._instance_spellings(region, parts[0])]
        out = [(where, "its object and attribute are not known" if holder.kind() in _SPLATS
                else "its attribute's name is not known" if name is None else
                "the value it gives is not known")
               for where, holder, name, stored in self._namespace_writes(region)
               if (name is None or (name == attr and stored is None))
               and (holder.kind() in _SPLATS or any(
                   at(unparen(holder), objpat, bound) is not None
                   and _holds_at(where, holds, cls, self._nearest_class(where))
                   for objpat, holds, cls in objects))]
        out += [(n, "exec/eval run code the file does not show")
                for n in self._runners_in(region)]
        return sorted(out, key=lambda pair: start_of(pair[0]))


_DELETING = frozenset({"delattr", "__delattr__", "pop", "popitem", "__delitem__", "clear"})
"""Calls among the attribute writes that only delete (``Facts._namespace_writes``)."""


def _deletes(where: SgNode) -> bool:
    """The attribute write ``where`` only deletes: ``del``, ``delattr``, ``ns.pop(…)``…"""
    if where.kind() == "delete_statement":
        return True
    fn = where.field("function") if where.kind() == "call" else None
    if fn is None:
        return False
    name = fn.field("attribute") if fn.kind() == "attribute" else fn
    return name is not None and name.text() in _DELETING


def _plain_target(write: Write) -> bool:
    """The write is an assignment target ``obj.attr`` (of any form: ``=``, ``+=``, a tuple,
    ``for``, ``with … as``): what an ``obj.attr = v`` pattern and ``assigned`` find."""
    where, obj, attr, _value = write
    parent = obj.parent()
    return where.kind() != "call" and parent is not None and parent.kind() == "attribute" and \
        (inner := parent.field("object")) is not None and key(inner) == key(obj) and \
        (name := parent.field("attribute")) is not None and name.text() == attr


def _maybe_how(stmt: SgNode) -> str:
    """Why a binding ``Facts.may_only`` gives only may happen, for messages."""
    if stmt.kind() == "match_statement":
        return "a `case` capture, which binds when its case matches"
    if stmt.kind() == "try_statement":
        return "an `except … as` name, bound (then deleted) when its handler runs"
    if stmt.kind() == "import_from_statement":
        return "a star import, which may bind any name"
    return "a binding that may happen"


def _dotted_text(text: str) -> bool:
    """``text`` is a plain dotted name (``self``, ``self.inner``): no metavariable, which
    matches any object anyway."""
    return all(part.isidentifier() for part in text.split("."))


def _holds_at(node: SgNode, holds: SgNode | None, cls: SgNode | None,
              nearest: SgNode | None) -> bool:
    """A match through another name of an instance of ``cls`` (``_instance_spellings``) is
    where that name holds: in the function ``holds``, or (None) in that class's code; a match
    of the rule's own text (``cls`` None) counts anywhere."""
    if cls is None:
        return True
    if holds is not None:
        return within(node, holds)
    return nearest is not None and key(nearest) == key(cls)
