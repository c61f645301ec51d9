"""The core run: a manifest and a source in, a ``Result`` out. Nothing printed.

This is the one place that knows the order of checks (version, files,
citations, then the kinds later sections add) so every front end (CLI,
report, tests) gets identical results for identical inputs; and, in
``check_ids``, the ids those checks can have, which report evidence may name,
in ``id_clashes`` the manifest keys that would give two checks one id.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from pp1audit import __version__
from pp1audit.checks.citations import InvariantAnchor, check_citation
from pp1audit.checks.files import check_file
from pp1audit.checks.version import check_version, declared_version
from pp1audit.manifest import Citation, Manifest
from pp1audit.result import Check, GatePolicy, Result, TargetInfo
from pp1audit.sources import Source
from pp1audit.sources.store import FileStore

if TYPE_CHECKING:
    from pp1audit.checks.provenance import ProvenanceRun
    from pp1audit.sources.hashing import Progress
    from pp1audit.sources.runconfig import ProvenanceOptions


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
    if manifest.invariants:  # ast-grep loads only for manifests with rules
        from pp1audit.checks.invariants import anchored_citation, check_invariant
        from pp1audit.rules.engine import Engine

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
        from pp1audit.checks.record_judge import record_checks

        checks.extend(record_checks(hashing))
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
