"""Vouching: startup code judged against the RECORD of the distribution that installs it.

An executing ``.pth`` line, a ``sitecustomize`` / ``usercustomize``, and the
modules a vouched ``.pth`` imports all run at every interpreter start. The
shadowing check (``pp1audit.checks.shadowing``) finds them and words the verdict;
this module answers the question it asks of each: does an installed
distribution's RECORD install these bytes (``owners_of``, ``judge_hook``,
``verify_imports``)? A module's files are verified with the rules of the
package's own check (``record.verify``) and its bytecode with the bytecode
check, so a vouched line cannot run code no RECORD hashes. Every file judged
here is added to the startup set (``startup_entry``) whatever the verdict,
because a manifest pins that set's digest.

The report types (``Shadow``, ``ShadowReport``) and the directory being judged
(``Scope``) live here, beneath the checks, because vouching writes its findings
and the startup set into them; ``pp1audit.checks.shadowing`` re-exports them.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from pp1audit.checks.bytecode import VerifiedCache, check_bytecode, default_cache, keep_for_bytecode
from pp1audit.checks.distrecord import (
    RecordEntry,
    RecordError,
    is_bytecode,
    logical_path,
    logical_row,
    other_algorithm_digests,
    parse_record,
    read_record,
    read_small,
    verify,
)
from pp1audit.checks.pthimports import pth_imports
from pp1audit.checks.sitemodel import Interpreter, Release, imports_as, module_files
from pp1audit.checks.treedigest import path_order, token_for
from pp1audit.errors import TargetError
from pp1audit.sources.hashing import Digest, hash_entries
from pp1audit.sources.inventory import DIR, FILE, SYMLINK, DirInventory, Entry, Inventory, WheelInventory
from pp1audit.sources.safeio import realpath
from pp1audit.sources.wheel import Zip


@dataclass(frozen=True, slots=True)
class Shadow:
    """One finding: ``fail``, or ``skip`` for what cannot be verified here (a startup
    module's bytecode another interpreter or release would load), which
    ``--require-all`` counts against the gate. A note goes in ``ShadowReport.notes``."""

    path: str
    message: str
    id: str
    status: str = "fail"


@dataclass
class ShadowReport:
    """Findings, plus what was looked at (for the passing summary)."""

    findings: list[Shadow] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    pth_files: int = 0
    looked_in: list[str] = field(default_factory=list)
    judged_modules: set[str] = field(default_factory=set)
    """Top-level modules of the target root judged as what a ``.pth`` imports (the
    check of modules no RECORD lists leaves them out)."""
    script_dirs: list[str] = field(default_factory=list)
    """The directories of the audited distribution's console scripts (symlinks
    resolved): first on ``sys.path`` when one runs, so ``importlib.metadata`` finds
    distributions there too."""
    on_path: list[str] = field(default_factory=list)
    """What ``site`` puts on ``sys.path`` besides the target root, in ``sys.path``
    order, as ``site`` spells it: the directories and zips ``.pth`` path lines add
    (outside the audited package), and the base site-packages a venv lets in.
    ``importlib.metadata`` looks for distributions (entry points) in each."""
    interpreter: Interpreter | None = None
    """The target's interpreter as its layout and ``pyvenv.cfg`` say
    (``sitemodel.interpreter``), read once: None for a wheel or a layout not recognised."""
    startup: dict[str, str | None] = field(default_factory=dict)
    """The startup set: file as shown -> its token in the tree digest's format
    (hex SHA-256, or ``<type>:<detail>`` for a symlink or special file), None when
    not read. Every ``.pth`` ``site`` reads (a path line decides what it imports;
    one that cannot be read or is not a regular file too), every ``sitecustomize`` /
    ``usercustomize`` found (the root, a directory or zip a path line adds, a base
    site-packages the venv lets in; a package of that name by its files), the
    files of the modules a vouched ``.pth`` imports, every module beside the
    audited distribution's console scripts (``../../../bin/torch.py``), those
    scripts themselves (``../../../bin/vllm``: ``startupscripts.check_script_startup``,
    their ``#!`` header in a canonical form), and the
    venv's ``pyvenv.cfg`` (``../../../pyvenv.cfg``, by whether it lets the system
    site-packages start: ``shadowing.cfg_token``). Those modules' bytecode caches
    (``__pycache__``) are left to the bytecode check, as in the tree digest; a hook
    file a path line reaches is in whatever its directory. Not in it: the audited
    package (``tree_sha256`` pins it) and hooks in the standard library (outside
    the audit). Hooks outside the site directory and in a zip are never opened
    (None): the digest is then not computable."""

    def startup_files(self) -> list[tuple[str, str | None]]:
        """The startup set as ``(path, token)`` pairs, sorted as the digest sorts them."""
        return sorted(self.startup.items(), key=lambda pair: path_order(pair[0]))


@dataclass
class Owners:
    """The ``*.dist-info`` directories whose RECORD lists a root file, by verdict."""

    good: list[str] = field(default_factory=list)
    """Installed distributions listing it with its hash: they vouch for it."""
    bad: list[str] = field(default_factory=list)
    """Listing it with another hash."""
    hollow: list[str] = field(default_factory=list)
    """Listing it with its hash but without METADATA: no installed distribution."""
    rows: dict[str, list[RecordEntry]] = field(default_factory=dict)
    """The parsed RECORD of each ``good`` one, kept for ``verify_imports`` (read once)."""


@dataclass(frozen=True, slots=True)
class _Record:
    """A root ``*.dist-info`` and its RECORD's bytes."""

    meta: str
    installed: bool
    """It has a ``METADATA`` file: an installed distribution (a bare RECORD is none)."""
    data: bytes


def _records(inv: Inventory) -> Iterator[_Record]:
    """The root ``*.dist-info`` directories whose RECORD can be read, in listing order."""
    for meta, kind in inv.children(""):
        if kind != DIR or not meta.endswith(".dist-info"):
            continue
        try:
            data = read_record(inv, f"{meta}/RECORD")
        except RecordError:
            continue
        m = inv.entry(f"{meta}/METADATA")
        yield _Record(meta, m is not None and m.kind == FILE, data)


def owners_of(inv: Inventory, name: str, digest: bytes) -> Owners:
    """Distributions whose RECORD lists ``name`` at the root."""
    return _owners(inv, name.encode(), lambda row: row.path == name, digest, keep_rows=True)


def owners_at(inv: DirInventory, path: str, digest: bytes) -> Owners:
    """Distributions whose RECORD lists the file at OS path ``path``, outside the root
    (a module beside the console scripts, ``../../../bin/x.py``): rows matched by
    the path they resolve to from the root, as ``owners_of`` matches root files."""
    target, base = realpath(path), os.path.basename(path)
    return _owners(inv, base.encode(), lambda row: os.path.basename(row.path) == base and
                   realpath(os.path.join(inv.root, row.path)) == target, digest)


def _owners(inv: Inventory, needle: bytes, lists: Callable[[RecordEntry], bool], digest: bytes,
            keep_rows: bool = False) -> Owners:
    """The root distributions with a RECORD row ``lists`` accepts, sorted by that row:
    another digest (bad), installed with it (good), or a dist-info without METADATA
    (hollow). ``needle``, a byte string the row must hold, skips parsing the others."""
    out = Owners()
    for rec in _records(inv):
        if needle not in rec.data:
            continue
        try:
            rows = parse_record(rec.data, f"{rec.meta}/RECORD")
        except RecordError:
            continue
        for row in rows:
            if not lists(row):
                continue
            if row.algorithm != "sha256" or row.digest != digest:
                out.bad.append(rec.meta)
            elif rec.installed:
                out.good.append(rec.meta)
                if keep_rows:
                    out.rows[rec.meta] = rows
            else:
                out.hollow.append(rec.meta)
    return out


@dataclass
class Listed:
    """What the installed distributions of a site directory say they installed at its root."""

    names: set[str] = field(default_factory=set)
    """Root entries a RECORD row names (the first component of its logical path)."""
    modules: set[str] = field(default_factory=set)
    """Top-level modules a ``*.egg-info`` (no RECORD: a setuptools-era install) names
    in ``top_level.txt``."""


TOP_LEVEL_MAX = 1 << 20
"""Largest ``top_level.txt`` read (a list of module names)."""


def listed_at_root(inv: Inventory, parsed: dict[str, list[RecordEntry]] | None = None) -> Listed:
    """The root entries the installed distributions (a ``*.dist-info`` with METADATA)
    list in their RECORD, and the modules an ``*.egg-info`` directory names.
    ``parsed``: RECORDs already parsed (the audited one, 8,000 rows for vLLM),
    by their ``*.dist-info``, not parsed again."""
    out = Listed()
    parsed = parsed or {}
    for rec in _records(inv):
        if not rec.installed:
            continue
        rows = parsed.get(rec.meta)
        if rows is None:
            try:
                rows = parse_record(rec.data, f"{rec.meta}/RECORD")
            except RecordError:
                continue
        out.names.update(logical_path(inv, r.path).split("/", 1)[0] for r in rows)
    for meta, kind in inv.children(""):
        if kind == DIR and meta.lower().endswith(".egg-info"):
            data = read_small(inv, f"{meta}/top_level.txt", limit=TOP_LEVEL_MAX)
            if data is not None:
                out.modules.update(line.strip() for line in data.decode("utf-8", "replace").splitlines())
    return out


@dataclass(frozen=True, slots=True)
class Scope:
    """One directory ``site`` processes: the target root, or a base site-packages."""

    inv: Inventory
    package: str
    package_dir: str | None
    """The audited package directory, symlinks resolved (None in a wheel)."""
    shown: str = ""
    """Prefix naming its files in messages and ids: '' for the target root, else its path + '/'."""
    cache: VerifiedCache | None = None
    """Bytecode verification cache for the modules a vouched ``.pth`` imports."""
    site_dir: str = ""
    """The directory as ``site`` spells it (``sitemodel.site_dir_as_given``): a
    relative path line is joined to it, symlinks not resolved. '' in a wheel."""
    version: tuple[int, int] | None = None
    """The target interpreter's ``X.Y``: how ``site`` reads a ``.pth`` (``sitemodel.pth_lines``);
    None when unknown (a wheel, a layout not recognised): every reading's lines."""
    release: Release | None = None
    """The target interpreter's release (``sitemodel.Interpreter.release``), when its
    ``pyvenv.cfg`` says: the bytecode of a module run at startup that differs from this
    interpreter's compile is then unverifiable, not tampered, as the package's own is."""

    def name(self, rel: str) -> str:
        """How a file of this directory is named: a base site-packages' by its full
        path, so a finding there is never mistaken for one in the target root."""
        return self.shown + rel



_STDLIB = frozenset(sys.stdlib_module_names) | frozenset(sys.builtin_module_names)


def _of_module(path: str, module: str, version: tuple[int, int] | None, base: str = "") -> bool:
    """A RECORD path that belongs to top-level ``module`` of directory ``base`` ('' the
    root): under its directory, one of its module files as Python ``version`` names
    them (``sitemodel.imports_as``), or the bytecode of one in ``base``'s ``__pycache__``."""
    if base:
        if not path.startswith(base + "/"):
            return False
        path = path[len(base) + 1:]
    if path.startswith(module + "/") or imports_as(path, module, version):
        return True
    return path.startswith(f"__pycache__/{module}.") and path.endswith(".pyc")


def _module_owner(inv: Inventory, module: str, version: tuple[int, int] | None,
                  base: str = "") -> tuple[str, list[RecordEntry]] | None:
    """The installed distribution whose RECORD installs ``module`` (of directory
    ``base``), and its rows of it: the first ``*.dist-info`` with a ``METADATA``
    (a bare RECORD is no installed distribution) whose RECORD lists files of it."""
    for rec in _records(inv):
        if not rec.installed or module.encode() not in rec.data:
            continue
        try:
            rows = [logical_row(inv, r) for r in parse_record(rec.data, f"{rec.meta}/RECORD")]
        except RecordError:
            continue
        meta = rec.meta
        if mine := [r for r in rows if _of_module(r.path, module, version, base)]:
            return meta, mine
    return None


def verify_imports(scope: Scope, pth: str, meta: str, record: list[RecordEntry], lines: list[str],
                   report: ShadowReport) -> str:
    """Check the modules a vouched ``.pth`` imports against the vouching RECORD
    (``record``: its rows as ``owners_of`` parsed them).

    The hash of the ``.pth`` says nothing about ``_distutils_hack/__init__.py``,
    which is the code that runs. Returns the phrase the summary adds.
    """
    inv, version = scope.inv, scope.version
    imports = pth_imports(lines)
    if imports.dynamic:
        more = f" (and {len(imports.dynamic) - 1} more)" if len(imports.dynamic) > 1 else ""
        report.findings.append(Shadow(
            pth, f"{pth} (vouched for by {meta}) runs code at every interpreter start that it computes "
            f"at run time: {imports.dynamic[0]}{more}; what that imports cannot be determined, so "
            "nothing vouches for the code it runs", f"pth:{pth}:dynamic"))
    modules = imports.modules
    if not modules:
        return "; imports what it computes at run time (not verified)" if imports.dynamic else ""
    rows = [logical_row(inv, r) for r in record]
    root = dict(inv.children(""))
    said: list[str] = []
    stdlib: list[str] = []
    for module in modules:
        mine = [r for r in rows if _of_module(r.path, module, version)]
        if module == scope.package and not scope.shown:
            said.append(f"{module} (the audited package)")
        elif mine:
            said.append(_verify_module(scope, meta, module, mine, root, report, _pth_run(pth, meta)))
        elif module in _STDLIB and not _present(root, module, version):
            stdlib.append(module)
        elif _present(root, module, version) and (owner := _module_owner(inv, module, version)) is not None:
            # Installed by another distribution (coverage-enable-subprocess's .pth
            # imports coverage): verified against the RECORD that installs it.
            other, rows_of = owner
            run = _Run(f"run at every interpreter start by {pth} (vouched for by {meta}; the module "
                       f"by {other})", f"pth:{pth}:")
            said.append(f"{_verify_module(scope, other, module, rows_of, root, report, run)} "
                        f"installed by {other}")
        else:
            where = ""
            if _present(root, module, version):
                where = "; another of that name is in the site directory"
                if not scope.shown:
                    report.judged_modules.add(module)
                _startup_module(scope, module, root, report)
            report.findings.append(Shadow(
                pth, f"{pth} (vouched for by {meta}) imports '{module}' at every interpreter start, "
                f"which {meta}/RECORD does not install and is not a standard-library module"
                f"{where}: nothing vouches for the code it runs", f"pth:{pth}:{module}"))
            said.append(f"{module} (not in its RECORD)")
    if stdlib:
        said.append(f"{', '.join(stdlib)} (standard library, not audited here)")
    return "; imports " + " and ".join(said)


def entry_imports_as(name: str, kind: str, module: str, version: tuple[int, int] | None) -> bool:
    """Whether a directory entry ``name`` of type ``kind`` is what Python ``version``
    imports as top-level ``module``: one of its module files (``imports_as``), or the
    bare name as a package directory (or a symlink, which may lead to one). A regular
    file named just ``sitecustomize`` is no module: Python imports nothing from it."""
    if name == module:
        return kind in (DIR, SYMLINK)
    return imports_as(name, module, version)


def _present(root: dict[str, str], module: str, version: tuple[int, int] | None) -> bool:
    """Whether a directory (its children ``root``) holds something Python ``version``
    imports as ``module``."""
    return any(entry_imports_as(n, k, module, version) for n, k in root.items())


def module_entries(inv: Inventory, module: str, root: dict[str, str], version: tuple[int, int] | None,
                  base: str = "") -> list[Entry]:
    """Every entry of top-level ``module`` in directory ``base`` ('' the root; its
    children ``root``): its directory walked, its module files (as Python ``version``
    names them), and their bytecode
    in ``base``'s ``__pycache__``. ``TargetError`` when its directory leads outside
    the root."""
    pre = f"{base}/" if base else ""
    files: list[Entry] = []
    if root.get(module) in (DIR, SYMLINK):
        files.extend(inv.walk(pre + module))
    for name in module_files(root, module, version):
        if (e := inv.entry(pre + name)) is not None:
            files.append(e)
    if root.get("__pycache__") == DIR:
        for name, _kind in inv.children(f"{pre}__pycache__"):
            if (name.startswith(module + ".") and name.endswith(".pyc")
                    and (e := inv.entry(f"{pre}__pycache__/{name}")) is not None):
                files.append(e)
    return files


def _wheel(inv: Inventory) -> Zip | None:
    """Where ``hash_entries`` reads an inventory's members: the wheel, or None on disk."""
    return inv.zip if isinstance(inv, WheelInventory) else None


def _hashed_module(scope: Scope, module: str, root: dict[str, str], report: ShadowReport,
                   base: str = "") -> tuple[list[Entry], dict[str, Digest]]:
    """Every entry of ``module`` in ``base`` (``_module_files``), hashed once (sources
    kept for the bytecode check), and added to the startup set. ``TargetError``
    when its directory leads outside the root: then in the set unread."""
    try:
        files = module_entries(scope.inv, module, root, scope.version, base)
    except TargetError:
        report.startup[scope.name(f"{base}/{module}" if base else module)] = None
        raise
    digests = hash_entries(files, wheel=_wheel(scope.inv), keep=keep_for_bytecode)
    _startup_files(scope, report, files, digests)
    return files, digests


def _startup_module(scope: Scope, module: str, root: dict[str, str], report: ShadowReport,
                    base: str = "") -> None:
    """A module no RECORD vouches for (already a finding): its files are startup
    code all the same."""
    with contextlib.suppress(TargetError):
        _hashed_module(scope, module, root, report, base)


def _startup_files(scope: Scope, report: ShadowReport, files: list[Entry],
                   digests: dict[str, Digest]) -> None:
    """Add hashed entries to the startup set, bytecode caches left out (see
    ``ShadowReport``): files named as Python's cache names them, which the bytecode
    check judges. A ``__pycache__/sitecustomize.pyc`` is no cache file: a path line
    putting that directory on ``sys.path`` imports it."""
    for e in files:
        if not is_bytecode(e.path):
            report.startup[scope.name(e.path)] = token_for(e, digests.get(e.path))


def startup_entry(scope: Scope, report: ShadowReport, rel: str, sha256: str | None = None) -> None:
    """Add the root entry ``rel`` to the startup set: with ``sha256`` when the caller
    has read it already, else hashed here; a directory (a ``sitecustomize``
    package) by its files. A file is added whatever its name: a path line can put
    a ``__pycache__`` on ``sys.path``, and its ``sitecustomize.pyc`` then runs."""
    inv = scope.inv
    e = inv.entry(rel)
    if e is not None and e.kind != DIR:
        if e.kind != FILE:
            sha256 = token_for(e, None)  # a symlink or special file: never opened
        elif sha256 is None:
            sha256 = token_for(e, hash_entries([e], wheel=_wheel(inv)).get(e.path))
        report.startup[scope.name(rel)] = sha256
        return
    try:  # a directory (a wheel lists no entry for one)
        files = inv.walk(rel)
    except TargetError:
        report.startup[scope.name(rel)] = None
        return
    _startup_files(scope, report, files, hash_entries(files, wheel=_wheel(inv)))



@dataclass(frozen=True, slots=True)
class _Run:
    """Why a vouched module's files run, for its findings: the phrase and the id prefix."""

    why: str
    """``run at every interpreter start by x.pth (vouched for by M)``."""
    cid: str
    """Prefix of a finding's id; the file's path follows."""


def _pth_run(pth: str, meta: str) -> _Run:
    """A module a vouched ``.pth`` imports."""
    return _Run(f"run at every interpreter start by {pth} (vouched for by {meta})", f"pth:{pth}:")


def _verify_module(scope: Scope, meta: str, module: str, rows: list[RecordEntry],
                   root: dict[str, str], report: ShadowReport, run: _Run, base: str = "") -> str:
    """One module that runs at startup (in directory ``base``) against its rows of
    the vouching RECORD, with the same rules as the package's own check
    (``record.verify``), and its bytecode with the bytecode check. Findings are
    added; the summary phrase is returned."""
    inv, why = scope.inv, run.why
    try:
        files, digests = _hashed_module(scope, module, root, report, base)
    except TargetError as exc:
        where = f"{base}/{module}" if base else module
        report.findings.append(Shadow(scope.name(where), f"{exc} ({why})", run.cid + where))
        return f"{module} (not verified)"
    wheel = _wheel(inv)
    by_path = {e.path: e for e in files}
    # A row without a hash for a file that is not there names nothing Python could
    # run: virtualenv's seeder lists pycs it never writes outside __pycache__
    # (``_distutils_hack/override.cpython-311.pyc,,``) and the __pycache__
    # directory itself. A hash-less row of a present file still fails (unhashed).
    rows = [r for r in rows if r.digest is not None or by_path.get(r.path) is not None]
    located: dict[str, Entry | None] = {r.path: by_path.get(r.path) for r in rows}
    extra = other_algorithm_digests(rows, located, wheel)
    ver = verify(rows, f"{meta}/RECORD", located, digests, files, module, extra_digests=extra)
    for p in ver.problems:
        shown = scope.name(p.path)
        report.findings.append(Shadow(shown, f"{shown} is {why}, but does not match that RECORD: "
                                      f"{p.message}", run.cid + p.path))
    rep = check_bytecode(files, digests, cache=scope.cache or default_cache(),
                         target_release=scope.release)
    for f in rep.findings:
        shown = scope.name(f.path)
        if f.status == "skip":
            # The package's policy (a ``bytecode:other:`` skip): never a pass, since
            # whether it is the source compiled is unknown.
            report.findings.append(Shadow(shown, f"{shown} is {why}: {f.message}",
                                          f"{run.cid}other:{f.path}", "skip"))
            continue
        report.findings.append(Shadow(shown, f"{shown} is {why}: {f.message}", run.cid + f.path))
    bad = len(ver.problems) + len(rep.findings)
    problems = f"; {bad} problem(s) reported separately" if bad else ""
    return (f"{module} ({ver.verified} file(s) matching it, {rep.verified} bytecode file(s) "
            f"verified as their sources compiled{problems})")



def judge_hook(scope: Scope, hook: str, children: dict[str, str], report: ShadowReport, *,
                cid: str, base: str = "", via: str = "") -> str | None:
    """A startup hook of directory ``base`` (its children ``children``): verified
    against the RECORD of the installed distribution that installs it, all its
    files and bytecode (``_verify_module``), as the modules a vouched ``.pth``
    imports are. Returns ``<meta>: <what was verified>`` for the summary (its
    problems are findings), or None when no RECORD installs it: then only put in
    the startup set, for the caller to fail. ``via``: how its directory is on
    ``sys.path`` (a path line), for the messages."""
    owner = _module_owner(scope.inv, hook, scope.version, base)
    if owner is None:
        _startup_module(scope, hook, children, report, base)
        return None
    meta, rows = owner
    run = _Run(f"imported by site at every interpreter start{via} (vouched for by {meta})", cid)
    return f"{meta}: {_verify_module(scope, meta, hook, rows, children, report, run, base)}"

