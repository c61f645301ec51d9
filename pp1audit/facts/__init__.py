"""What one parsed file says beyond its syntax, memoised per node: which scope
owns a node, which code may not (or can never) run, which binding of a name is
in force after a body ran (and what replaces it from outside a class body),
what a decorator is, which statements lie in exclusive branches, and every
match of a pattern including its other assignment forms.

Separate from ``matcher`` because these facts belong to the file, not to a
rule: ``ParsedFile`` builds one ``Facts`` per file and every invariant on that
file shares its caches. The semantics it implements are set out in the
``matcher`` module docstring.

One module per job, each a part of ``Facts`` holding its own memo; a part is a
mixin over the parts whose answers it builds on, so what it relies on is
declared by its bases (and checked by mypy), and ``Facts`` is all of them:

* ``core``: the file, which scope owns a node, the file's index of names;
* ``reachability``: dead code (what never completes, constant tests);
* ``conditional``: code that may run but need not (an arm, a loop body), for
  ``unconditional: true``;
* ``bindings``: final bindings, the binding in force at a place, ``in:`` chains;
* ``imports``: decorators and imports, through the stdlib's symbol table;
* ``aliases``: the names a class and its instances may be denoted by;
* ``spelling``: the names a computed attribute name may be;
* ``writes``: attribute writes, and those that replace a class's or module's names;
* ``classes``: a class statement's bases, subclasses and metaclass;
* ``hooks``: hooks that run as a class is created, instances made in its body;
* ``runners``: code run from text (the builtin ``exec`` / ``eval``);
* ``matches``: matches of a pattern, exclusive branches, whether a match is in force;
* ``shapes``: node-shape helpers more than one part reads."""

from __future__ import annotations

from pp1audit.facts.conditional import Conditions
from pp1audit.facts.hooks import ClassHooks, class_hook_use
from pp1audit.facts.matches import Matches

__all__ = ["Facts", "class_hook_use"]


class Facts(Matches, ClassHooks, Conditions):
    """What one parsed file says beyond its syntax: scopes, dead code, final bindings.

    Everything is memoised per node: every rule on the file shares the work.
    """
