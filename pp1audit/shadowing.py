"""Import shadowing: code that runs before the package, and other copies of it.

What an audit of ``site-packages/vllm`` must also rule out, because Python
would execute something other than the audited files:

* ``.pth`` files in the target root (site-packages). ``site`` executes every
  line starting with ``import`` at *every* interpreter start (a classic
  persistence and import-hijack vector), and adds other lines to ``sys.path``.
  An executing ``.pth`` that an installed distribution's RECORD lists with a
  matching hash (setuptools' ``distutils-precedence.pth`` in every fresh venv)
  is attributed to it and named, with the code it runs, in the summary; one
  no RECORD vouches for is a failure. Vouching takes an installed
  distribution: a ``*.dist-info`` with its ``METADATA`` — a bare directory
  holding a one-line RECORD that names the ``.pth`` is not one (anyone who
  can drop a ``.pth`` can drop that). A path line naming a directory that
  holds another copy of the package fails.
* Another distribution claiming the package (a second ``*.dist-info`` /
  ``*.egg-info`` for the same name or installing the same top-level package):
  files of two versions mixed in one directory, or an uninstall leftover. That
  includes the old distutils form, a single *file* ``name-1.0-py3.11.egg-info``
  in PKG-INFO format, which ``importlib.metadata`` reads as a distribution.
* ``sitecustomize`` / ``usercustomize`` modules in the target root, which
  ``site`` imports at every start (same RECORD attribution as ``.pth``).
* Another importable ``<package>`` ahead of the target on ``sys.path``: the
  standard library directories of the interpreter this site-packages belongs
  to (``lib/pythonX.Y`` and ``lib-dynload``; for a venv, those of its base
  interpreter, from ``pyvenv.cfg``), the zipped standard library before them
  (``lib/python311.zip``: only names in its central directory are looked at),
  and module files beside the package (``vllm.py``, ``vllm.*.so``) in the
  target root itself.
  A ``sitecustomize`` / ``usercustomize`` in those standard-library places runs
  at every start too; it is named in the summary, not failed, because Debian
  and Ubuntu ship one (``/usr/lib/python3.X/sitecustomize.py``).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.machinery
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field

from pp1audit.inventory import DIR, FILE, DirInventory, Inventory
from pp1audit.record import (
    RecordError,
    dist_name,
    distributions,
    normalize,
    parse_record,
    read_record,
    read_small,
)
from pp1audit.zipindex import NotAFile, ZipError, ZipIndex

STDLIB_ZIP_MAX = 16 << 20
"""Largest ``pythonXY.zip`` looked into (its central directory only). A zipped
standard library is a few MB. Measured on CPython 3.11.7: its whole standard
library, test suite included (1,790 modules), zips to 7.2 MB as source and
15.4 MiB as bytecode; without the tests, tkinter and idlelib (about what the
Windows embeddable distribution ships) to 5.1 MB of bytecode. 16 MiB holds all
of those; a larger file is named in a note, not read. At the cap a hostile zip
(155,000 members) costs about 0.2 s; at the former 64 MiB one of 300,000
members in 28 MB cost 1.6 s and 90 MB."""

CUSTOMIZE = ("sitecustomize", "usercustomize")
"""Modules ``site`` imports at every interpreter start."""


@dataclass(frozen=True, slots=True)
class Shadow:
    """One finding: ``fail`` always (a note goes in ``ShadowReport.notes`` instead)."""

    path: str
    message: str
    id: str


@dataclass
class ShadowReport:
    """Findings, plus what was looked at (for the passing summary)."""

    findings: list[Shadow] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    pth_files: int = 0
    looked_in: list[str] = field(default_factory=list)


def module_names(package: str) -> set[str]:
    """File names that import as top-level ``package`` (source, bytecode, extensions)."""
    suffixes = (importlib.machinery.SOURCE_SUFFIXES + importlib.machinery.BYTECODE_SUFFIXES
                + importlib.machinery.EXTENSION_SUFFIXES)
    return {package + s for s in suffixes}


def _copy_in(directory: str, package: str) -> str | None:
    """The path of an importable ``package`` in an OS directory, or None."""
    pkg = os.path.join(directory, package)
    if os.path.isdir(pkg):
        return pkg
    for name in sorted(module_names(package)):
        p = os.path.join(directory, name)
        if os.path.isfile(p):
            return p
    return None


@dataclass
class _Owners:
    """The ``*.dist-info`` directories whose RECORD lists a root file, by verdict."""

    good: list[str] = field(default_factory=list)
    """Installed distributions listing it with its hash: they vouch for it."""
    bad: list[str] = field(default_factory=list)
    """Listing it with another hash."""
    hollow: list[str] = field(default_factory=list)
    """Listing it with its hash but without METADATA: no installed distribution."""


def _owners(inv: Inventory, name: str, digest: bytes) -> _Owners:
    """Distributions whose RECORD lists ``name`` at the root."""
    out = _Owners()
    for meta, kind in inv.children(""):
        if kind != DIR or not meta.endswith(".dist-info"):
            continue
        try:
            data = read_record(inv, f"{meta}/RECORD")
            rows = parse_record(data, f"{meta}/RECORD") if name.encode() in data else []
        except RecordError:
            continue
        for row in rows:
            if row.path != name:
                continue
            if row.algorithm != "sha256" or row.digest != digest:
                out.bad.append(meta)
            elif (m := inv.entry(f"{meta}/METADATA")) is not None and m.kind == FILE:
                out.good.append(meta)
            else:
                out.hollow.append(meta)
    return out


def check_pth(inv: Inventory, package: str, report: ShadowReport) -> None:
    """``.pth`` files at the root: executing lines and paths to other copies."""
    for name, kind in inv.children(""):
        if not name.endswith(".pth"):
            continue
        report.pth_files += 1
        if kind != FILE:
            report.findings.append(Shadow(name, f"{name} is a {kind}; not opened", f"pth:{name}"))
            continue
        data = read_small(inv, name)
        if data is None:
            report.findings.append(Shadow(name, f"{name} cannot be read", f"pth:{name}"))
            continue
        text = data.decode("utf-8", "replace")
        executing: list[tuple[int, str]] = []
        for n, raw in enumerate(text.splitlines(), 1):
            line = raw.rstrip()
            if not line or line.startswith("#"):
                continue
            if line.startswith(("import ", "import\t")):
                executing.append((n, line))
                continue
            if isinstance(inv, DirInventory):
                target = os.path.join(inv.root, line)
                copy = _copy_in(target, package) if os.path.isdir(target) else None
                if copy is not None:
                    report.findings.append(Shadow(
                        name, f"{name}:{n} adds {target} to sys.path, and another copy of "
                        f"'{package}' is there ({copy})", f"pth:{name}:{n}"))
        if not executing:
            continue
        owners = _owners(inv, name, hashlib.sha256(data).digest())
        first_n, first = executing[0]
        shown = first if len(first) <= 120 else first[:117] + "..."
        code = f"line {first_n}: {shown}" + (
            f" (+{len(executing) - 1} more import lines)" if len(executing) > 1 else "")
        if owners.good:
            report.notes.append(f"{name} executes code at startup, vouched for by {owners.good[0]} "
                                f"(matches its RECORD): {code}")
            continue
        if owners.bad:
            why = f"differs from the {owners.bad[0]} RECORD"
        elif owners.hollow:
            why = (f"only {owners.hollow[0]} lists it, which has no METADATA: not an installed "
                   "distribution")
        else:
            why = "no installed distribution's RECORD lists it"
        report.findings.append(Shadow(
            name, f"{name} executes code at every interpreter start ({why}): {code}", f"pth:{name}"))


def _base_stdlib(root: str) -> str | None:
    """The ``lib/pythonX.Y`` directory whose interpreter imports from this site-packages.

    ``<prefix>/lib/pythonX.Y`` for ``<prefix>/lib/pythonX.Y/site-packages``; in
    a venv (a ``pyvenv.cfg`` at the prefix) the base interpreter's instead,
    under the directory above the one ``home`` names. Not checked to exist.
    """
    parent = os.path.dirname(root)
    if os.path.basename(root) not in ("site-packages", "dist-packages"):
        return None
    if not os.path.basename(parent).startswith("python"):
        return None
    prefix = os.path.dirname(os.path.dirname(parent))
    home = None
    # The target is untrusted: read pyvenv.cfg like any audited file (regular
    # files only, bounded), so a FIFO in its place cannot hang the run.
    data = read_small(DirInventory(prefix), "pyvenv.cfg", limit=1 << 20)
    for line in (data or b"").decode("utf-8", "replace").splitlines():
        k, sep, v = line.partition("=")
        if sep and k.strip() == "home":
            home = v.strip()
    if home:
        return os.path.join(os.path.dirname(home), "lib", os.path.basename(parent))
    return parent


def _ahead_dirs(stdlib: str, root: str) -> list[str]:
    """Standard library directories searched before this site-packages.

    ``stdlib`` (``_base_stdlib``) and its ``lib-dynload``, those that exist.
    """
    out = [stdlib, os.path.join(stdlib, "lib-dynload")]
    return [d for d in out if os.path.isdir(d) and os.path.realpath(d) != os.path.realpath(root)]


_STDLIB_NAME = re.compile(r"python(\d+)\.(\d+)(t?)")


def _stdlib_zip(stdlib: str) -> str | None:
    """The zipped standard library ``sys.path`` lists first: ``lib/python311.zip``.

    Beside ``stdlib``, named from its version (``python3.11`` →
    ``python311.zip``, free-threaded ``python3.13t`` → ``python313t.zip``);
    None when the directory's name carries no such version.
    """
    m = _STDLIB_NAME.fullmatch(os.path.basename(stdlib))
    if m is None:
        return None
    return os.path.join(os.path.dirname(stdlib), f"python{m[1]}{m[2]}{m[3]}.zip")


@dataclass(frozen=True, slots=True)
class ZipHit:
    """Something named like the package in the stdlib zip."""

    path: str
    """``<zip>/<member>``, as ``__file__`` would read."""
    imported: bool
    """True when zipimport would load it: ``pkg/__init__.py[c]`` or ``pkg.py[c]``."""
    why_not: str = ""
    """When not imported: why (a namespace-only directory, an extension module)."""


def _zip_hit(zpath: str, names: set[str], package: str) -> ZipHit | None:
    """What in the zip ``zipimport`` would see as ``package``, most importable first.

    zipimport (3.11) tries ``pkg/__init__.pyc``, ``pkg/__init__.py``,
    ``pkg.pyc``, ``pkg.py``; a ``pkg/`` directory without ``__init__`` is a
    namespace portion (a regular package later on ``sys.path`` still wins), and
    extension modules are never loaded from a zip. Those last two are reported
    all the same: a second copy in the standard library is not innocent.
    """
    for member in (f"{package}/__init__.pyc", f"{package}/__init__.py", f"{package}.pyc", f"{package}.py"):
        if member in names:
            shown = package if member.startswith(f"{package}/") else member
            return ZipHit(f"{zpath}/{shown}", imported=True)
    prefix = f"{package}/"
    if any(n.startswith(prefix) for n in names):
        return ZipHit(f"{zpath}/{package}", imported=False,
                      why_not="a directory without __init__.py: a namespace portion, which the "
                      "audited package outranks")
    extensions = sorted(n for n in names if "/" not in n and n.startswith(f"{package}.")
                        and n.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)))
    if extensions:
        return ZipHit(f"{zpath}/{extensions[0]}", imported=False,
                      why_not="zipimport does not load extension modules")
    return None


def _zip_names(zpath: str, report: ShadowReport, packages: tuple[str, ...]) -> set[str] | None:
    """The member names of the stdlib zip ``_zip_hit`` needs for ``packages``, or None.

    Read with ``ZipIndex``, the wheels' reader: its central directory only, the
    open never blocking and judged on the descriptor (a FIFO swapped in after the
    ``stat`` below is refused, not waited on). A final symlink is followed, as by
    zipimport, which imports from what the link names. Only names of the forms
    ``_zip_hit`` looks for are decoded and kept, at most a few per package
    (``_relevant``). A missing zip is the usual case and says nothing; one that is
    not a regular file, too large or unreadable is a note (what it holds is unknown).
    """
    ahead = f"{zpath} (on sys.path ahead of the audited copy)"
    try:
        st = os.stat(zpath)  # as zipimport opens it: through a final symlink
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        report.notes.append(f"{ahead} cannot be examined: {exc.strerror or exc}")
        return None
    if not stat.S_ISREG(st.st_mode):
        report.notes.append(f"{ahead} is not a regular file; not opened")
        return None
    if st.st_size > STDLIB_ZIP_MAX:
        report.notes.append(f"{ahead} is {st.st_size:,} bytes, over the {STDLIB_ZIP_MAX >> 20} MiB "
                            "read for its member list; not looked into")
        return None
    try:
        index = ZipIndex(zpath)
    except NotAFile:  # swapped in after the stat
        report.notes.append(f"{ahead} is not a regular file; not opened")
        return None
    except ZipError as exc:
        report.notes.append(f"{ahead} cannot be read ({exc}); whether it holds another copy is unknown")
        return None
    try:
        return _relevant(index.names_starting(_prefixes(packages)), packages)
    finally:
        index.close()


def _prefixes(packages: tuple[str, ...]) -> tuple[bytes, ...]:
    """``pkg/`` and ``pkg.`` as a member name's raw bytes may start: UTF-8 (the name
    flagged so) or CP437 (not flagged), as zipimport decodes them."""
    out = set()
    for package in packages:
        for head in (f"{package}/", f"{package}."):
            out.add(head.encode("utf-8"))
            with contextlib.suppress(UnicodeEncodeError):  # no unflagged name decodes to it
                out.add(head.encode("cp437"))
    return tuple(sorted(out))


def _relevant(names: Iterator[str], packages: tuple[str, ...]) -> set[str]:
    """The names ``_zip_hit`` decides on, at most six per package: the four it tries,
    one member below ``pkg/`` (any says "a directory"), and the first extension
    module ``pkg.*`` in sorted order (the one it names)."""
    wanted = set(packages)
    exact = {f"{p}{tail}" for p in packages for tail in ("/__init__.pyc", "/__init__.py", ".pyc", ".py")}
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    kept: dict[tuple[str, str], str] = {}
    for name in names:
        if name in exact:
            kept[name, ""] = name
        elif (head := name.split("/", 1)[0]) != name:
            if head in wanted:
                kept.setdefault((head, "/"), name)
        elif name.endswith(suffixes) and (head := name.split(".", 1)[0]) in wanted:
            kept[head, "."] = min(kept.get((head, "."), name), name)
    return set(kept.values())


def check_stdlib(root: str, package: str, report: ShadowReport) -> None:
    """Copies of the package, and startup hooks, in the standard library ahead of ``root``."""
    stdlib = _base_stdlib(root)
    if stdlib is None:
        return
    for d in _ahead_dirs(stdlib, root):
        report.looked_in.append(d)
        copy = _copy_in(d, package)
        if copy is not None:
            report.findings.append(Shadow(
                copy, f"another '{package}' at {copy} is ahead of the audited copy on sys.path "
                f"(standard library directory): Python imports that one", f"shadow:{copy}"))
        for hook in CUSTOMIZE:
            if (found := _copy_in(d, hook)) is not None:
                _customize_note(found, report)
    zpath = _stdlib_zip(stdlib)
    names = _zip_names(zpath, report, (package, *CUSTOMIZE)) if zpath else None
    if zpath is None or names is None:
        return
    report.looked_in.append(zpath)
    hit = _zip_hit(zpath, names, package)
    if hit is not None:
        verdict = ("Python imports that one" if hit.imported
                   else f"not imported as it stands ({hit.why_not}), but a second copy nonetheless")
        report.findings.append(Shadow(
            hit.path, f"another '{package}' at {hit.path} is ahead of the audited copy on sys.path "
            f"(zipped standard library): {verdict}", f"shadow:{hit.path}"))
    for hook in CUSTOMIZE:
        zhook = _zip_hit(zpath, names, hook)
        if zhook is not None and zhook.imported:
            _customize_note(zhook.path, report)


def _customize_note(path: str, report: ShadowReport) -> None:
    """Name a stdlib ``sitecustomize``/``usercustomize``: it runs first, and is not audited."""
    real = os.path.realpath(path)
    link = f" (-> {real})" if real != os.path.abspath(path) and os.path.exists(real) else ""
    report.notes.append(f"{path}{link} in the base interpreter's standard library is imported by site "
                        "at every interpreter start, before any package; not audited here")


def _file_distributions(inv: Inventory, package: str, seen: list[str]) -> list[tuple[str, str]]:
    """Root entries ``importlib.metadata`` reads as a distribution of ``package``
    that ``distributions`` (directories with the usual suffix) does not list.

    importlib.metadata takes every child whose lower-cased name ends in
    ``.dist-info`` / ``.egg-info`` and reads its metadata from the path itself
    when it is a file: the old distutils ``pkg-1.0-py3.11.egg-info`` is a
    single PKG-INFO file, and ``importlib.metadata.version`` may well return
    its version. Matched by the normalised name before the first ``-``.
    """
    want = normalize(package)
    out = []
    for name, kind in inv.children(""):
        if name in seen or not name.lower().endswith((".dist-info", ".egg-info")):
            continue
        if kind == DIR and name.endswith((".dist-info", ".egg-info")):
            continue  # distributions() judged it (by name, top_level.txt or RECORD)
        if dist_name(name) == want:
            out.append((name, kind))
    return out


def check_copies(inv: Inventory, package: str, primary: str | None, report: ShadowReport) -> None:
    """Other distributions for the package, module files beside it, copies ahead on sys.path."""
    dists = distributions(inv, package)
    besides = f" besides {primary}" if primary else ""
    for meta in dists:
        if meta != primary:
            report.findings.append(Shadow(
                meta, f"second installed distribution for '{package}': {meta}{besides}"
                " (an uninstall leftover or a second version whose files mix with the audited ones)",
                f"shadow:{meta}"))
    for meta, kind in _file_distributions(inv, package, dists):
        if kind != FILE:
            what = f"a {kind} named as metadata"
        elif meta.lower().endswith(".egg-info"):
            what = "a distutils-style egg-info file"
        else:
            what = "a metadata file, not a directory"
        report.findings.append(Shadow(
            meta, f"second installed distribution for '{package}': {meta}{besides} ({what}, which "
            "importlib.metadata reads as a distribution: an uninstall leftover or a second version)",
            f"shadow:{meta}"))
    names = module_names(package)
    for name, _kind in inv.children(""):
        if name in names:
            report.findings.append(Shadow(
                name, f"another importable '{package}' beside the package: {name} "
                f"(the package directory wins in the same directory; a second copy nonetheless)",
                f"shadow:{name}"))
    if isinstance(inv, DirInventory):
        check_stdlib(inv.root, package, report)


def check_customize(inv: Inventory, report: ShadowReport) -> None:
    """``sitecustomize`` / ``usercustomize`` in the root: ``site`` imports them at every start."""
    hooks = module_names("sitecustomize") | module_names("usercustomize")
    for name, kind in inv.children(""):
        if name not in hooks and not (kind == DIR and name in CUSTOMIZE):
            continue
        data = read_small(inv, name) if kind == FILE else None
        good = _owners(inv, name, hashlib.sha256(data).digest()).good if data is not None else []
        if good:
            report.notes.append(f"{name} runs at startup, vouched for by {good[0]} (matches its RECORD)")
            continue
        report.findings.append(Shadow(
            name, f"{name} is imported by site at every interpreter start, before any package; "
            "no installed distribution's RECORD vouches for it", f"shadow:{name}"))


def check_shadowing(inv: Inventory, package: str, primary: str | None) -> ShadowReport:
    """All shadowing checks for one target."""
    report = ShadowReport()
    check_pth(inv, package, report)
    check_customize(inv, report)
    check_copies(inv, package, primary, report)
    return report

