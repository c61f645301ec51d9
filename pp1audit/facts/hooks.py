"""Class building, the hooks: code that runs as a class is created and may rewrite it: an
``__init_subclass__`` or ``__set_name__`` that may write the class it is given
(``class_hook_use``), the instances made in a class body whose ``__set_name__`` runs,
and the builtin containers a harmless registry stores into.

Separate because these hooks are read by what they do with the class they receive, a
question about one hook's body and the names that reach it, asked only once the bases
(``classes``) are known."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pp1audit.facts.classes import ClassBases
from pp1audit.facts.shapes import (
    _NAMES,
    _SCOPE_KINDS,
    _binds_here,
    _dotted,
    _named_only,
    _parameter_name,
)
from pp1audit.syntaxtree import (
    Key,
    key,
    named_items,
    unparen,
    within,
)

if TYPE_CHECKING:  # pragma: no cover
    from ast_grep_py import SgNode


class ClassHooks(ClassBases):
    """Hooks that run as a class is created, and the instances made in its body."""

    def __init__(self, root: SgNode, source: str) -> None:
        super().__init__(root, source)
        self._no_namespace: bool | None = None
        self._containers: dict[tuple[str, bool], bool] = {}
        self._made: dict[Key, list[tuple[SgNode, SgNode]]] = {}
        self._by_target: dict[str, list[SgNode]] | None = None
        self._reads: dict[Key, list[tuple[str, bool]]] = {}
        self._hook_names: dict[str, tuple[SgNode | None, SgNode | None]] = {}
        self._set_names: dict[Key, tuple[SgNode, SgNode, SgNode] | None] = {}
        self._call_backs: dict[Key, bool] = {}
        self._classes_by_name: dict[str, list[SgNode]] | None = None
        self._set_name_spelled: bool | None = None

    def instances_made(self, cls: SgNode) -> list[tuple[SgNode, SgNode]]:
        """(code, class) for each place in ``cls``'s own body (what runs as its class statement
        runs, not its methods) that may make or hold an instance of a class of this file
        whose ``__set_name__`` may write the class it is given (``set_name_hook``): Python
        calls it with the new class as the class is created. Read on the safe side
        (``_hook_kinds``): a call whose callee reads a name that may be such a class, or an
        instance of one (``Hook()``, ``Alias()``, ``(H := Hook)()``, ``Hook.__new__(Hook)``,
        ``Hook.make()``, ``_HOOK.copy()``); a decorator naming one (``@Hook`` calls it with
        the function; ``@Hook()`` stores what the instance returns, the instance only when
        its ``__call__`` may return it: ``_calls_back``); and any read of a name that may
        hold an instance (``_hook = _HOOK``). A function that returns one (``make()``) is
        not followed. Memoised per class."""
        k = key(cls)
        hit = self._made.get(k)
        if hit is None:
            hit = self._made[k] = []
            body = cls.field("body")
            if body is None or not self._may_set_name():
                return hit
            reads = [(node, dotted) for node in (body.find_all(_NAMES) if body is not None else [])
                     if (dotted := _read_name(node)) is not None and key(self.owner(node) or
                                                                        self.root) == k]
            kinds = self._hook_kinds({dotted for _, dotted in reads})
            for node, dotted in reads:
                made_as, instance = kinds.get(dotted, (None, None))
                called = _callee_of(node, body) if body is not None else None
                if called is not None and made_as is not None and \
                        not self._decorator_result(called, node, made_as):
                    hit.append((called, made_as))
                elif instance is not None:
                    hit.append((called or node, instance))
        return hit

    def _may_set_name(self) -> bool:
        """Some class of the file may have a ``__set_name__``: the name is spelled somewhere, or
        an attribute write may bind it (by that name, or by a name not known on anything but
        an instance, ``self``, which ``attribute_binding`` never reads as the class). Else no
        class statement of the file can call one, and ``instances_made`` has nothing to
        find (memoised)."""
        if self._set_name_spelled is None:
            self._set_name_spelled = bool(self._occurrences("__set_name__", self.root)) or any(
                attr == "__set_name__" or (attr is None and unparen(obj).text() != "self")
                for _where, obj, attr, _value in self.attribute_writes())
        return self._set_name_spelled

    def _decorator_result(self, called: SgNode, node: SgNode, made: SgNode) -> bool:
        """``called`` is ``@Hook(…)`` with ``Hook`` (``node``) the class ``made`` itself, whose
        ``__call__`` returns what it decorates, not the instance (``_calls_back``): the
        class body holds that, and the instance is gone."""
        parent = called.parent()
        return called.kind() == "call" and parent is not None and \
            parent.kind() == "decorator" and (fn := called.field("function")) is not None and \
            key(unparen(fn)) == key(node) and \
            (title := made.field("name")) is not None and node.text() == title.text() and \
            self._calls_back(made)

    def _calls_back(self, cls: SgNode) -> bool:
        """``cls``'s ``__call__`` (its own, or the nearest same-file base's) is a plain ``def``
        that returns only its argument (not rebound) or a function it defines itself: a
        decorator ``@cls()`` then stores what it decorates (or a wrapper), never the
        instance. Memoised per class."""
        k = key(cls)
        if k not in self._call_backs:
            self._call_backs[k] = False
            hook = next((h for holder in [cls, *self.bases(cls)]
                         if (h := self.member_hook(holder, "__call__")) is not None), None)
            params = hook.field("parameters") if hook is not None and \
                hook.kind() == "function_definition" else None
            taken = named_items(params.children())[1:2] if params is not None else []
            body = hook.field("body") if hook is not None else None
            name = _parameter_name(taken[0]) if taken else None
            if hook is not None and body is not None and name is not None and \
                    len(self._binders(body, name)) == 0 and \
                    body.find(kind="yield") is None:
                own = {f.text() for d in body.find_all(kind="function_definition")
                       if self.owner(d) is not None and key(self.owner(d) or d) == key(hook)
                       and (f := d.field("name")) is not None}
                returns = [r for r in body.find_all(kind="return_statement")
                           if key(next((a for a in r.ancestors() if a.kind() in _SCOPE_KINDS),
                                       r)) == key(hook)]
                self._call_backs[k] = all(
                    len(values := named_items(r.children())) == 1 and
                    unparen(values[0]).kind() == "identifier" and
                    unparen(values[0]).text() in {name, *own} for r in returns)
        return self._call_backs[k]

    def member_hook(self, cls: SgNode, method: str) -> SgNode | None:
        """Where ``cls`` gets ``method``: its body's binding in force, or one from outside the
        body (``attribute_binding``), else None."""
        lookup = [*self.final(cls, method).values(),
                  self.attribute_binding(cls, method, instance=False)]
        return next((n for n in lookup if n is not None), None)

    def set_name_hook(self, cls: SgNode) -> tuple[SgNode, SgNode, SgNode] | None:
        """(holder, hook, use) when an instance of ``cls`` has a ``__set_name__`` (``cls``'s own
        or a same-file base's: ``holder``) that may write the class it is given: the use of
        its ``owner`` parameter that may (``class_hook_use``), or the hook itself when what it
        runs is not read. Storing the class on the instance (``self.owner = owner``),
        reading its name or storing it in a registry does not. Memoised per class."""
        k = key(cls)
        if k not in self._set_names:
            self._set_names[k] = None
            for holder in [cls, *self.bases(cls)]:
                hook = self.member_hook(holder, "__set_name__")
                use = class_hook_use(self, hook, parameter=1, implicit=frozenset(),
                                     instance=0) if hook is not None else None
                if hook is not None and use is not None:
                    self._set_names[k] = (holder, hook, use)
                    break
        return self._set_names[k]

    def _hook_kinds(self, names: set[str]) -> dict[str, tuple[SgNode | None, SgNode | None]]:
        """For each dotted name: (the class with a writing ``__set_name__`` it may denote, the
        class it may hold an instance of), each None when it may not. Followed through every
        binding of the file (``_bindings_made``), whatever the scope (a name bound anywhere
        may be the one read), to a fixed point: a class of this file with such a hook
        (``set_name_hook``) is one by its name and path; a name bound to a value that reads
        one other than as a callee (``Alias = Hook``, ``A = [Hook][0]``, ``make =
        Hook.make``) may be one too (or make an instance when called); a name bound to a
        value that calls one or an instance (``_HOOK = Hook()``, ``h = Alias.make()``), or
        reads an instance at all (``h = _HOOK``), may hold an instance. Memoised per name:
        the names a query reaches are closed under what their values read."""
        todo = [n for n in names if n not in self._hook_names]
        reached = set(todo)
        while todo:  # every name the values bound to these read, not yet decided
            for value in self._values_of(todo.pop()):
                for read, _called in self._value_reads(value):
                    if read not in reached and read not in self._hook_names:
                        reached.add(read)
                        todo.append(read)
        classes: dict[str, SgNode] = {}
        instances: dict[str, SgNode] = {}
        readers: dict[str, list[tuple[str, SgNode]]] = {}
        queue: list[tuple[str, bool, SgNode]] = []
        for name in reached:
            made = next((c for c in self._class_definitions_named(name)
                         if self.set_name_hook(c) is not None), None)
            if made is not None:
                classes[name] = made
                queue.append((name, False, made))
            for value in self._values_of(name):
                for read, _called in self._value_reads(value):
                    readers.setdefault(read, []).append((name, value))
                    for instance, origin in enumerate(self._hook_names.get(read, (None, None))):
                        if origin is not None:
                            queue.append((read, bool(instance), origin))
        while queue:  # what each value bound to a name is, once the names it reads are known
            read, instance, origin = queue.pop()
            for name, value in readers.get(read, []):
                reads = self._value_reads(value)
                if not instance and name not in classes and (read, False) in reads:
                    classes[name] = origin  # Alias = Hook, make = Hook.make
                    queue.append((name, False, origin))
                if name not in instances and (instance or (read, True) in reads):
                    instances[name] = origin  # _HOOK = Hook(), h = _HOOK
                    queue.append((name, True, origin))
        for name in reached:
            self._hook_names[name] = (classes.get(name), instances.get(name))
        return {n: self._hook_names[n] for n in names}

    def _values_of(self, name: str) -> list[SgNode]:
        """The values the file binds the dotted name ``name`` to (``_bindings_made``)."""
        if self._by_target is None:
            self._alias_pairs()
            self._by_target = {}
            for _where, target, value in self._bindings_made:
                dotted = _dotted(unparen(target))
                if dotted is not None:
                    self._by_target.setdefault(dotted, []).append(value)
        return self._by_target.get(name, [])

    def _value_reads(self, value: SgNode) -> list[tuple[str, bool]]:
        """(dotted name, whether a callee reads it) for each name ``value`` reads
        (``_read_name``), memoised per value."""
        k = key(value)
        hit = self._reads.get(k)
        if hit is None:
            hit = self._reads[k] = [
                (dotted, _callee_of(node, value) is not None)
                for node in [value, *value.find_all(_NAMES)]
                if (dotted := _read_name(node)) is not None]
        return hit

    def _class_definitions_named(self, name: str) -> list[SgNode]:
        """The class statements of the file called ``name`` (by their own name, or their path
        from the module: ``Outer.Inner``)."""
        if self._classes_by_name is None:
            self._classes_by_name = {}
            for cls in self.root.find_all(kind="class_definition"):
                title, path = cls.field("name"), self.class_path(cls)
                for text in dict.fromkeys(t for t in (title.text() if title else None, path) if t):
                    self._classes_by_name.setdefault(text, []).append(cls)
        return self._classes_by_name.get(name, [])

    def builtin_container(self, receiver: SgNode) -> bool:
        """``receiver`` is certainly a builtin container, so its storing methods only store
        (``_STORING``): a name every binding of which in the file is an assignment of one
        (``_container_value``), or ``X.name`` (``cls.registry``) where every binding of
        ``name`` is such an assignment in a class body. Nothing may rebind it: no star
        import, no attribute write naming it or any name (``attribute_writes``). Memoised
        per name: a hook may store into one thousands of times."""
        receiver = unparen(receiver)
        if receiver.kind() == "identifier":
            name, in_class = receiver.text(), False
        elif receiver.kind() == "attribute" and (obj := receiver.field("object")) is not None \
                and unparen(obj).kind() == "identifier" and \
                (attr := receiver.field("attribute")) is not None:
            name, in_class = attr.text(), True
        else:
            return False
        memo = (name, in_class)
        if memo not in self._containers:
            binders = self._binders(self.root, name)
            self._containers[memo] = bool(binders) and all(
                self._container_binding(i, in_class) for i in binders) and \
                self.root.find(kind="wildcard_import") is None and \
                self._namespace_free() and \
                all(isinstance(attr, str) and attr != name for _, _, attr, _ in self._spelled_writes())
        return self._containers[memo]

    def _namespace_free(self) -> bool:
        """The file never names a namespace it could rebind a module name through
        (``globals``, ``__globals__``, ``sys.modules``, ``exec``/``eval``, ``vars``/``locals``):
        a namespace handed to a function, returned from one or bound by ``:=`` or
        ``with`` is not followed, so a registry in such a file is not trusted."""
        if self._no_namespace is None:
            self._no_namespace = not any(
                n.text() in _NAMESPACE_WORDS for n in self.root.find_all(kind="identifier"))
        return self._no_namespace

    def _container_binding(self, ident: SgNode, in_class: bool) -> bool:
        """``ident`` is the whole target of an assignment of a builtin container
        (``_container_value``), in a class body when ``in_class``."""
        stmt = ident.parent()
        if stmt is None or stmt.kind() != "assignment" or \
                (left := stmt.field("left")) is None or key(left) != key(ident) or \
                (value := stmt.field("right")) is None or not self._container_value(value):
            return False
        return not in_class or [a.kind() for a in stmt.ancestors()[:3]] == [
            "expression_statement", "block", "class_definition"]

    def _container_value(self, value: SgNode) -> bool:
        """A display (``[]``, ``{}``, ``{1}``), ``list()`` / ``set()`` / ``dict()`` with the
        builtin not bound in the file, or ``defaultdict(…)`` / ``OrderedDict(…)`` /
        ``deque(…)`` spelled ``collections.X`` or imported from ``collections``, the name
        bound by module-level imports only (``_import_sources``)."""
        value = unparen(value)
        if value.kind() in ("list", "set", "dictionary", "list_comprehension",
                            "set_comprehension", "dictionary_comprehension"):
            return True
        if value.kind() != "call" or (fn := value.field("function")) is None:
            return False
        prefix, _, name = "".join(unparen(fn).text().split()).rpartition(".")
        if name in _CONTAINER_TYPES and not prefix:
            return not self._binders(self.root, name)
        if name not in _COLLECTIONS or prefix not in ("", "collections"):
            return False
        bound = prefix or name  # `collections` (import collections) or `deque`
        binders = self._binders(self.root, bound)
        return bool(binders) and all(self.owner(i) is None and any(
            a.kind() in ("import_statement", "import_from_statement") for a in i.ancestors())
            for i in binders) and \
            set(self._import_sources(bound) or [""]) == {prefix or f"collections.{name}"}


def _read_name(node: SgNode) -> str | None:
    """The dotted name an identifier or attribute node reads (``Hook``, ``Outer.Hook``), or
    None: an attribute's or a keyword's own name, a name bound there (a target, a
    parameter), or an attribute not made of names (``f().x``)."""
    if node.kind() == "identifier" and (_named_only(node) or _binds_here(node)):
        return None
    return _dotted(node)


def _callee_of(node: SgNode, top: SgNode) -> SgNode | None:
    """The call (or decorator) within ``top`` whose callee holds ``node``: what calling it
    makes (``Hook()``, ``Hook.make()``, ``(H := Hook)()``, ``@Hook``), else None."""
    if key(node) == key(top):
        return None
    child = node
    for anc in node.ancestors():
        if anc.kind() == "call" and (fn := anc.field("function")) is not None and \
                within(child, fn):
            return anc
        if anc.kind() == "decorator":
            return anc if next(iter(named_items(anc.children())), anc).kind() != "call" else None
        if key(anc) == key(top) or anc.kind() in _SCOPE_KINDS:
            return None
        child = anc
    return None


_NAME_ATTRIBUTES = frozenset({"__name__", "__qualname__", "__module__"})
"""Attributes of a class that are only its names: reading them changes nothing."""


def class_hook_use(facts: ClassHooks, hook: SgNode, parameter: int = 0,
                   implicit: frozenset[str] = frozenset({"@classmethod"}),
                   instance: int | None = None) -> SgNode | None:
    """Where an ``__init_subclass__`` binding (``hook``: the statement ``Facts.final``
    gives) may replace attributes of the class it is called for, or None when it cannot.
    The same for a ``__set_name__`` (``parameter=1``: ``(self, owner, name)``, no
    decorator ``implicit``), which gets the class being created as ``owner``.

    The hook gets the new class as its first parameter; it can only change that class's
    methods through it (a write naming the class itself is found by
    ``Facts.attribute_binding``). So the hook is harmless when every use of that
    parameter is one of: a read of a name attribute (``cls.__name__``, ``__qualname__``,
    ``__module__``), the whole value stored into a subscript (the registry idiom
    ``registry[cls.__name__] = cls``), or an argument of ``super().__init_subclass__(…)``
    (a same-file base's hook is read on its own), or the value a container method stores
    (``registry.append(cls)``, ``.add(cls)``, ``.insert(i, cls)``: ``_STORING``), or, for a
    ``__set_name__`` (``instance``: the place of its ``self``), the whole value stored on the
    instance (``self.owner = owner``: harmless as the class is created). Any other
    use (``cls.x = …``, ``setattr(cls, …)``, ``vars(cls)``, ``cls.__dict__``, passing it to
    any other call, an alias ``c = cls``) may replace them: the hook
    itself is returned when it is not a plain ``def`` (``classmethod(lambda c: …)``,
    one bound from outside the body, a decorator other than ``@classmethod``) or has no
    plain first parameter, since what it runs is not read."""
    definition = hook
    if hook.kind() == "decorated_definition":
        definition = hook.field("definition") or hook
        if any("".join(d.text().split()) not in implicit
               for d in hook.children() if d.kind() == "decorator"):
            return hook
    params = definition.field("parameters") if definition.kind() == "function_definition" \
        else None
    wanted = named_items(params.children())[parameter:parameter + 1] if params is not None \
        else []
    body = definition.field("body")
    name = _parameter_name(wanted[0]) if wanted else None
    if body is None or name is None:
        return hook
    selves = named_items(params.children())[instance:instance + 1] \
        if params is not None and instance is not None else []
    self_name = _parameter_name(selves[0]) if selves else None
    return next((n for n in body.find_all(kind="identifier")
                 if n.text() == name and not _harmless_class_use(n, facts, self_name)), None)


def _harmless_class_use(node: SgNode, facts: ClassHooks, self_name: str | None = None) -> bool:
    """An identifier that is no use of the variable (an attribute's or keyword's name), or a
    use ``class_hook_use`` accepts (``self_name``: the hook's instance parameter, on which
    storing the class whole is harmless)."""
    parent = node.parent()
    if parent is None:
        return False
    kind = parent.kind()
    if kind == "attribute":
        attribute, obj = parent.field("attribute"), parent.field("object")
        if attribute is not None and key(attribute) == key(node):
            return True  # x.cls: an attribute named like it
        above = parent.parent()
        target = above is not None and above.kind() in ("assignment", "augmented_assignment") and (
            (left := above.field("left")) is not None and key(left) == key(parent))
        if obj is None or key(obj) != key(node) or attribute is None or target:
            return False
        return attribute.text() in _NAME_ATTRIBUTES or _storing_into(parent, facts)
    if kind == "keyword_argument":
        name = parent.field("name")
        if name is not None and key(name) == key(node):
            return True  # f(cls=…): the keyword, not the variable
        parent = parent.parent() or parent
        kind = parent.kind()
    if kind == "assignment":
        left, right = parent.field("left"), parent.field("right")
        stored = unparen(left) if left is not None else None
        holder = stored.field("object") if stored is not None and \
            stored.kind() == "attribute" else None
        return right is not None and key(right) == key(node) and stored is not None and (
            stored.kind() == "subscript" or (
                holder is not None and self_name is not None and
                unparen(holder).kind() == "identifier" and unparen(holder).text() == self_name))
    if kind == "argument_list":
        call = parent.parent()
        function = call.field("function") if call is not None else None
        return function is not None and (
            "".join(function.text().split()) == "super().__init_subclass__"
            or _stored(function, named_items(parent.children()), node, facts))
    return False


_STORING = {"append": 0, "appendleft": 0, "add": 0, "insert": 1, "setdefault": 1}
"""Container methods that store a value, and the place of the value among two arguments
(``insert(i, x)``, ``setdefault(k, x)``) or alone (``append(x)``)."""


def _stored(function: SgNode, items: list[SgNode], node: SgNode,
            facts: ClassHooks) -> bool:
    """``registry.append(cls)`` and the like (``_STORING``): ``node`` is the whole value a
    container method stores, as ``registry[k] = cls`` stores it, and the container is one
    whose method is the builtin's (``Facts.builtin_container``): a same-file ``class Reg`` with
    ``def append(self, c): c.sample = None`` is not a registry."""
    method = function.field("attribute") if function.kind() == "attribute" else None
    receiver = function.field("object") if method is not None else None
    place = _STORING.get(method.text()) if method is not None else None
    return place is not None and receiver is not None and len(items) == place + 1 and \
        key(items[place]) == key(node) and facts.builtin_container(receiver)


def _storing_into(container: SgNode, facts: ClassHooks) -> bool:
    """``container`` (``cls.registry``) is the receiver of a storing method
    (``cls.registry.append(…)``, ``_STORING``) and certainly a builtin container
    (``Facts.builtin_container``): reading it there runs no code of the class."""
    method = container.parent()
    if method is None or method.kind() != "attribute" or \
            (name := method.field("attribute")) is None or name.text() not in _STORING:
        return False
    call = method.parent()
    return call is not None and call.kind() == "call" and \
        (fn := call.field("function")) is not None and key(fn) == key(method) and \
        facts.builtin_container(container)


_NAMESPACE_WORDS = frozenset({"globals", "__globals__", "modules", "exec", "eval", "vars", "locals"})
"""Names through which code may rebind a module-level name without assigning it."""

_CONTAINER_TYPES = frozenset({"list", "set", "dict"})
"""Builtins that make a container whose storing methods only store."""
_COLLECTIONS = frozenset({"defaultdict", "OrderedDict", "deque"})
"""``collections`` types that make one."""
