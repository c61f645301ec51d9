"""The core run: a manifest and a source in, a ``Result`` out. Nothing printed.

This is the one place that knows the order of checks (version, files,
citations, then the kinds later sections add) so every front end (CLI,
report, tests) gets identical results for identical inputs; and, in
``check_ids``, the ids those checks can have, which report evidence may name.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pp1audit import __version__
from pp1audit.checks.citations import InvariantAnchor, check_citation
from pp1audit.checks.files import check_file
from pp1audit.checks.version import check_version, declared_version
from pp1audit.manifest import Citation, Manifest
from pp1audit.result import Check, GatePolicy, Result, TargetInfo
from pp1audit.sources import Source
from pp1audit.store import FileStore

if TYPE_CHECKING:
    from pp1audit.checks.provenance import ProvenanceRun
    from pp1audit.hashing import Progress
    from pp1audit.runconfig import ProvenanceOptions


def run_checks(
    manifest: Manifest, store: FileStore, options: ProvenanceOptions | None = None
) -> list[Check]:
    """Every check the manifest asks for, in manifest order, on one store.

    ``options`` says where named git sources are cloned and where remote pins are
    cached (see ``checks.provenance``); without them those checks report ``skip``.
    """
    with open_provenance(manifest, store, options) as prov:
        return checks_in(manifest, store, prov)


@contextmanager
def open_provenance(
    manifest: Manifest, store: FileStore, options: ProvenanceOptions | None = None
) -> Iterator[ProvenanceRun | None]:
    """The manifest's git sources and remote pins, open for the checks (None when it
    has none); closed on leaving. A caller that reads more from them after the
    checks (``show``) does so inside, from the same clones."""
    if manifest.prov is None:  # nothing outside the tree: no provenance machinery
        if options is not None and options.named_on_command_line:
            from pp1audit.checks.provenance import check_repo_names

            check_repo_names(options, ())  # a --repo given for nothing is a usage error
        yield None
        return
    from pp1audit.checks.provenance import ProvenanceRun

    prov = ProvenanceRun(manifest, options, store)
    try:
        prov.open_clones()
        if prov.options.fetch:
            prov.fetch_all()
        yield prov
    finally:
        prov.close()


def checks_in(manifest: Manifest, store: FileStore, prov: ProvenanceRun | None) -> list[Check]:
    """``run_checks`` with the provenance already open (see ``open_provenance``)."""
    checks: list[Check] = []
    if manifest.version is not None:
        checks.append(check_version(manifest.package, manifest.version, store))
    for path, digest in manifest.files.items():
        checks.append(check_file(path, digest, store))
    by_invariant: InvariantAnchor | None = None
    if manifest.invariants:  # ast-grep and the matcher load only for manifests with rules
        from pp1audit.checks.invariants import anchored_citation, check_invariant
        from pp1audit.matcher import Engine

        # One engine per run: each Python file parsed once, each invariant evaluated
        # once, whether a citation anchors on it, an invariant check judges it, or both.
        engine = Engine(store)

        def by_invariant(citation: Citation, base: Check) -> Check:
            return anchored_citation(citation, base, engine, manifest.invariants)

    for citation in manifest.citations.values():
        if citation.source is not None and prov is not None:  # a named git source / remote pin
            checks.append(prov.citation(citation))
            continue
        checks.append(check_citation(citation, manifest.files.get(citation.span.path), store,
                                     invariant_anchor=by_invariant))
    for invariant in manifest.invariants.values():  # (non-empty: engine is set above)
        if invariant.source is not None and prov is not None:  # a named git source / remote pin
            checks.append(prov.invariant(invariant))
            continue
        checks.append(check_invariant(invariant, engine))
    if prov is not None:
        checks.extend(prov.checks())
    return checks


def audit(
    manifest: Manifest, source: Source, policy: GatePolicy | None = None,
    options: ProvenanceOptions | None = None,
    record: bool = False, progress: Progress | None = None,
) -> Result:
    """Check ``source`` against ``manifest`` and return the whole result.

    ``record`` (or ``target.record``) adds RECORD, bytecode, shadowing and startup
    checks; a pinned ``target.tree_sha256`` adds the tree digest check, a pinned
    ``target.startup_sha256`` the startup digest check. ``progress`` is
    told how hashing goes (the CLI draws it; the core never prints).
    """
    store = FileStore(source)
    hashing = None
    if (record or manifest.record or manifest.tree_sha256 is not None
            or manifest.startup_sha256 is not None):
        from pp1audit.checks.record import RecordRun

        # Started first: the whole tree hashes on every core while the other
        # checks run here, instead of after them.
        hashing = RecordRun(manifest.package, source, record=record or manifest.record,
                            tree_sha256=manifest.tree_sha256,
                            startup_sha256=manifest.startup_sha256, progress=progress)
    try:
        checks = run_checks(manifest, store, options)
    except BaseException:
        if hashing is not None:  # no one will collect it: stop the threads
            hashing.cancel()
        raise
    if hashing is not None:
        checks.extend(hashing.checks())
    found_version = next((c.actual for c in checks if c.kind == "version"), None)
    if found_version is None:
        found_version = declared_version(manifest.package, store)
    target = TargetInfo(
        kind=source.kind, location=source.location, package=manifest.package, version=found_version
    )
    return Result(
        manifest_path=manifest.path,
        manifest_sha256=manifest.sha256,
        target=target,
        checks=tuple(checks),
        policy=policy or GatePolicy(),
        tool_version=__version__,
    )


_RECORD_FAMILY_NEEDS = {
    "record": "target.record: true",
    "bytecode": "target.record: true",
    "shadowing": "target.record: true",
    "tree": "target.record: true or a pinned target.tree_sha256",
    "startup": "target.record: true or a pinned target.startup_sha256",
}
"""The checks ``RecordRun`` adds, and what in the manifest turns each on (``report``
has no ``--record``: only the manifest can)."""


@dataclass(frozen=True)
class CheckIds:
    """The ids a manifest's checks can have, and the names report evidence may use.

    A name stands for the check of that id and its ``name:…`` sub-checks (a
    donor's hunks, ``record:<path>``, a git source's ``<source>:commit``), or, for
    the id of a git source's contains/lacks rule, for ``<source>:<rule>``.
    """

    ids: frozenset[str]
    """Ids of checks a run emits as they are (sub-checks named by data, such as
    ``record:<path>`` or ``<donor>:<path>#<n>``, are reached through their family)."""
    groups: frozenset[str] = frozenset()
    """Names that are no check themselves but head ``name:…`` checks: git sources."""
    aliases: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """A contains/lacks rule id -> the ``<source>:<rule>`` check ids it names."""
    needs: Mapping[str, str] = field(default_factory=dict)
    """A check id this manifest does not run -> what in the manifest would run it."""

    def names(self, ev: str) -> bool:
        """Whether ``ev`` names at least one check this manifest can have."""
        return ev in self.ids or ev in self.groups or ev in self.aliases

    def why_not(self, ev: str) -> str:
        """Why ``ev`` names no check (for a manifest error)."""
        if ev in self.needs:
            return f"evidence id '{ev}': this manifest runs no such check (it needs {self.needs[ev]})"
        return f"unknown evidence id '{ev}'"

    def stands_for(self, check_id: str, ev: str) -> bool:
        """Whether evidence ``ev`` names the check ``check_id``."""
        return check_id == ev or check_id.startswith(ev + ":") or check_id in self.aliases.get(ev, ())


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
    for donor in raw.get("donors") or {}:
        ids.update((donor, f"{donor}:hunks"))
    aliases: dict[str, set[str]] = {}
    sources = raw.get("sources") or {}
    for name, src in sources.items():
        ids.add(f"{name}:commit")
        ids.update(f"file:{name}:{path}" for path in src.get("files") or {})
        ids.update(f"{name}:ref:{ref}" for ref in src.get("refs") or {})
        for rule in (*(src.get("contains") or {}), *(src.get("lacks") or {})):
            ids.add(f"{name}:{rule}")
            aliases.setdefault(rule, set()).add(f"{name}:{rule}")
    run = _record_family(target)
    ids.update(run)
    return CheckIds(frozenset(ids), frozenset(sources),
                    {rule: frozenset(full) for rule, full in aliases.items()},
                    {cid: why for cid, why in _RECORD_FAMILY_NEEDS.items() if cid not in run})


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
