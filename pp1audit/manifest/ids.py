"""Check ids: the ids a manifest's checks can have, and the keys that would clash.

``check_ids`` lists the ids the checks of a manifest can have, which report evidence
may name; ``id_clashes`` the manifest keys that would give two checks one id. Both
read the validated mapping (not the model): the loader refuses clashes before it
builds the model, and the report's references are validated from the same mapping.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pp1audit.result import Check, Status

_RECORD_FAMILY_NEEDS = {
    "record": "target.record: true",
    "bytecode": "target.record: true",
    "shadowing": "target.record: true",
    "tree": "target.record: true or a pinned target.tree_sha256",
    "startup": "target.record: true or a pinned target.startup_sha256",
}
"""The checks ``RecordRun`` adds, and what in the manifest turns each on (``report``
has no ``--record``: only the manifest can)."""

RESERVED_IDS = frozenset({"version", *_RECORD_FAMILY_NEEDS})
"""Ids the tool gives checks of its own: no manifest name may be one, whether or not
this manifest runs them (``check --record`` adds the ``RecordRun`` ones to any)."""

_FOUND_HEADS = {"record": "record", "bytecode": "bytecode", "pth": "shadowing",
                "shadow": "shadowing", "plugin": "shadowing", "pyvenv": "shadowing"}
"""How ``RecordRun`` names what it finds (``record:<path>``, ``bytecode:<pyc>``; the
shadowing check's ``pth:<file>…``, ``shadow:<path>``, ``plugin:<where>``,
``pyvenv:<cfg>``, in checks/record_judge.py, shadowing.py, vouch.py,
entrypoints.py), with the family evidence reaches such a check by: the ids come
from the target, so no manifest can list them."""

_HEADS = frozenset({"file", *_FOUND_HEADS})
"""Heads of check ids built from data (``file:<path>`` too): a source or donor, whose
name heads checks of its own, may not be one."""


@dataclass(frozen=True)
class CheckIds:
    """The ids a manifest's checks can have, and the names report evidence may use.

    A name stands for the check of that id; a family's name (a git source, a
    donor, ``record``, ``bytecode``) for its ``name:…`` checks too, ``shadowing``
    for its findings; the id of a git source's contains/lacks rule for
    ``<source>:<rule>``.
    """

    ids: frozenset[str]
    """Ids of checks a run emits as they are (sub-checks named by data, such as
    ``record:<path>`` or ``<donor>:<path>#<n>``, are reached through their family)."""
    groups: frozenset[str] = frozenset()
    """Names whose ``name:…`` checks they stand for: git sources (no check
    themselves), donors, and ``record`` / ``bytecode`` when run."""
    aliases: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """A contains/lacks rule id -> the ``<source>:<rule>`` check ids it names."""
    needs: Mapping[str, str] = field(default_factory=dict)
    """A check id this manifest does not run -> what in the manifest would run it."""
    run: frozenset[str] = frozenset()
    """The ``RecordRun`` checks this manifest turns on (``_record_family``)."""
    donors: frozenset[str] = frozenset()
    """The donors: ``<donor>:<path>#<n>`` is one of a donor's hunks, named by its patch."""

    def names(self, ev: str) -> bool:
        """Whether ``ev`` names at least one check this manifest can have."""
        return ev in self.ids or ev in self.groups or ev in self.aliases

    def why_not(self, ev: str) -> str:
        """Why ``ev`` names no check (for a manifest error)."""
        if ev in self.needs:
            # A run that stops early says why in a 'record' error, which 'tree' shows.
            early = "; 'tree' shows why a run stopped early" if ev == "record" and "tree" in self.run else ""
            return f"evidence id '{ev}': this manifest runs no such check (it needs {self.needs[ev]}{early})"
        head = ev.partition(":")[0]
        family = _FOUND_HEADS.get(head) or (head if head in self.donors and ":" in ev else None)
        if family is None:
            return f"unknown evidence id '{ev}'"
        found = (f"evidence id '{ev}': the run names such a check after what it finds, "
                 f"so evidence names its family '{family}', which shows it")
        return found + (f" (and '{family}' needs {self.needs[family]})" if family in self.needs else "")

    def stands_for(self, check: Check, ev: str) -> bool:
        """Whether evidence ``ev`` names ``check``."""
        if check.id == ev or check.id in self.aliases.get(ev, ()):
            return True
        if ev in self.groups:
            return check.id.startswith(ev + ":")
        return ev == "shadowing" and _shadowing_finding(check)

    def cited(self, checks: Iterable[Check], ev: str) -> list[Check]:
        """The checks evidence ``ev`` shows, in result order. A ``RecordRun`` check
        the result lacks (the run stopped before it: no package directory, an
        unreadable target) is stood for by the ``record`` error that says why, the
        run's one check then, whichever of the family the manifest turned on."""
        checks = list(checks)
        found = [c for c in checks if self.stands_for(c, ev)]
        if not found and ev in self.run:
            found = [c for c in checks if c.id == "record" and c.status is Status.ERROR]
        return found


def _shadowing_finding(check: Check) -> bool:
    """A check of the shadowing family: the summary, or a ``RecordRun`` finding outside
    the families named by their own heads (``record:…``, ``bytecode:…``), whatever its
    id (``_FOUND_HEADS`` lists those of today; this holds for a new one as well)."""
    from pp1audit.checks.record import KIND

    head = check.id.partition(":")[0]
    own = {h for h, family in _FOUND_HEADS.items() if family != "shadowing"} | {"tree", "startup"}
    return check.kind == KIND and head not in own


def check_ids(raw: Mapping[str, Any]) -> CheckIds:
    """The ids the checks of a manifest (its validated mapping) can have, as
    ``checks_in``, ``ProvenanceRun.checks`` and ``RecordRun`` emit them.

    Read from the mapping because the report section is validated while the
    manifest is parsed; ``tests/test_report_evidence.py`` runs every kind of check
    and holds the two together.
    """
    target = raw.get("target") or {}
    ids = {f"file:{path}" for path in raw.get("files") or {}}
    if target.get("version") is not None:
        ids.add("version")
    ids.update(raw.get("citations") or {})
    ids.update(raw.get("invariants") or {})
    ids.update(raw.get("remotes") or {})
    donors = set(raw.get("donors") or {})
    for donor in donors:
        ids.update((donor, f"{donor}:hunks"))
    aliases: dict[str, set[str]] = {}
    sources = raw.get("sources") or {}
    for name, src in sources.items():
        ids.add(f"{name}:commit")
        ids.update(f"file:{name}:{path}" for path in src.get("files") or {})
        ids.update(f"{name}:ref:{ref}" for ref in src.get("refs") or {})
        for rule in _rules(src):
            ids.add(f"{name}:{rule}")
            aliases.setdefault(rule, set()).add(f"{name}:{rule}")
    run = _record_family(target)
    ids.update(run)
    needs = {cid: why for cid, why in _RECORD_FAMILY_NEEDS.items() if cid not in run}
    if "version" not in ids:
        needs["version"] = "target.version"
    return CheckIds(frozenset(ids), frozenset({*sources, *donors, *(run & {"record", "bytecode"})}),
                    {rule: frozenset(full) for rule, full in aliases.items()}, needs,
                    frozenset(run), frozenset(donors))


@dataclass(frozen=True)
class IdClash:
    """A manifest key that would give a check the id of another, or make evidence
    naming it name another check too; ``keypath`` is the offending key's."""

    keypath: tuple[str, ...]
    message: str


_NAMED = (("citations", "a citation"), ("invariants", "an invariant"), ("remotes", "a remote pin"),
          ("donors", "a donor"), ("sources", "a git source"))
"""The sections whose keys are check ids (a git source's: the head of its checks' ids)."""


def id_clashes(raw: Mapping[str, Any]) -> list[IdClash]:
    """Keys whose check ids are not the manifest's alone, in section order: a name that
    is one of the tool's ids (``version``, ``tree``…) or another section's, a source or
    donor named as a family the tool names from data (``file``: it would take every
    ``file:…`` check), a contains/lacks rule named ``commit`` or as another name (or
    twice), a ``files`` path read as a git source's pin (``lane:x.py`` is
    ``file:lane:x.py``). Names cannot hold ``:`` (the schema's id pattern), so no
    name can be read as a family's member.

    Ids must be unique in a result, and evidence names checks by them: a clash would
    show one check's status under the other's name.
    """
    sources = raw.get("sources") or {}
    clashes: list[IdClash] = []
    for path in raw.get("files") or {}:
        head, colon, rest = path.partition(":")
        if colon and head in sources:
            clashes.append(IdClash(("files", path), f"this pin's check id 'file:{path}' reads as git "
                                   f"source '{head}' pinning '{rest}': rename the source"))
    owner: dict[str, str] = {}  # a name -> what took it first, for messages
    for section, what in _NAMED:
        for name in raw.get(section) or {}:
            problem = _reserved(name)
            if problem is None and section in ("sources", "donors") and name in _HEADS:
                problem = f"{what} named '{name}' would take every '{name}:…' check for its own"
            if problem is None and name in owner:
                problem = f"'{name}' is also {owner[name]}; check ids must be unique"
            if problem is not None:
                clashes.append(IdClash((section, name), problem))
            owner.setdefault(name, f"{what}'s id")
    for name, src in sources.items():
        clashes += _rule_clashes(name, src, owner)
    return clashes


def _reserved(name: str) -> str | None:
    """Why ``name`` cannot be a check id of the manifest's: one of the tool's own."""
    if name in RESERVED_IDS:
        return f"'{name}' is the id of the tool's own {name} check; check ids must be unique"
    return None


def _rule_clashes(name: str, src: Mapping[str, Any], owner: Mapping[str, str]) -> list[IdClash]:
    """A git source's contains/lacks rules whose check ``<source>:<rule>`` is another
    of its checks, or whose id, which evidence may name, names another check too."""
    out: list[IdClash] = []
    seen: set[str] = set()
    for section in ("contains", "lacks"):
        for rule in src.get(section) or {}:
            problem = _reserved(rule)
            if rule == "commit":
                problem = (f"'{name}:commit' is also the id of the source's commit check; "
                           "check ids must be unique")
            elif rule in seen:
                problem = f"'{name}:{rule}' is also a contains rule's id; check ids must be unique"
            elif problem is None and rule in owner:
                problem = f"'{rule}' is also {owner[rule]}: evidence naming '{rule}' would name both"
            if problem is not None:
                out.append(IdClash(("sources", name, section, rule), problem))
            seen.add(rule)
    return out


def _rules(src: Mapping[str, Any]) -> list[str]:
    """A git source's contains/lacks rule ids, in manifest order."""
    return [*(src.get("contains") or {}), *(src.get("lacks") or {})]


def _record_family(target: Mapping[str, Any]) -> set[str]:
    """The ``RecordRun`` checks the manifest turns on (see ``audit``)."""
    if target.get("record"):
        return set(_RECORD_FAMILY_NEEDS)
    run = set()
    if target.get("tree_sha256") is not None:
        run.add("tree")
    if target.get("startup_sha256") is not None:
        run.update(("tree", "startup"))
    return run
