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
  files of two versions mixed in one directory, or an uninstall leftover.
* ``sitecustomize`` / ``usercustomize`` modules in the target root, which
  ``site`` imports at every start (same RECORD attribution as ``.pth``).
* Another importable ``<package>`` ahead of the target on ``sys.path``: the
  standard library directories of the interpreter this site-packages belongs
  to (``lib/pythonX.Y`` and ``lib-dynload``; for a venv, those of its base
  interpreter, from ``pyvenv.cfg``), and module files beside the package
  (``vllm.py``, ``vllm.*.so``) in the target root itself.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import os
from dataclasses import dataclass, field

from pp1audit.inventory import DIR, FILE, DirInventory, Inventory
from pp1audit.record import RecordError, distributions, parse_record, read_record, read_small


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


def _ahead_dirs(root: str) -> list[str]:
    """Standard library directories searched before this site-packages.

    ``<prefix>/lib/pythonX.Y`` and its ``lib-dynload``; in a venv (a
    ``pyvenv.cfg`` at the prefix) those of the base interpreter instead, whose
    directory ``home`` names.
    """
    parent = os.path.dirname(root)
    if os.path.basename(root) not in ("site-packages", "dist-packages"):
        return []
    out = []
    if os.path.basename(parent).startswith("python"):
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
            base_lib = os.path.join(os.path.dirname(home), "lib", os.path.basename(parent))
            out += [base_lib, os.path.join(base_lib, "lib-dynload")]
        else:
            out += [parent, os.path.join(parent, "lib-dynload")]
    return [d for d in out if os.path.isdir(d) and os.path.realpath(d) != os.path.realpath(root)]


def check_copies(inv: Inventory, package: str, primary: str | None, report: ShadowReport) -> None:
    """Other distributions for the package, module files beside it, copies ahead on sys.path."""
    for meta in distributions(inv, package):
        if meta != primary:
            report.findings.append(Shadow(
                meta, f"second installed distribution for '{package}': {meta}"
                + (f" besides {primary}" if primary else "")
                + " (an uninstall leftover or a second version whose files mix with the audited ones)",
                f"shadow:{meta}"))
    names = module_names(package)
    for name, _kind in inv.children(""):
        if name in names:
            report.findings.append(Shadow(
                name, f"another importable '{package}' beside the package: {name} "
                f"(the package directory wins in the same directory; a second copy nonetheless)",
                f"shadow:{name}"))
    if isinstance(inv, DirInventory):
        for d in _ahead_dirs(inv.root):
            report.looked_in.append(d)
            copy = _copy_in(d, package)
            if copy is not None:
                report.findings.append(Shadow(
                    copy, f"another '{package}' at {copy} is ahead of the audited copy on sys.path "
                    f"(standard library directory): Python imports that one", f"shadow:{copy}"))


def check_customize(inv: Inventory, report: ShadowReport) -> None:
    """``sitecustomize`` / ``usercustomize`` in the root: ``site`` imports them at every start."""
    hooks = module_names("sitecustomize") | module_names("usercustomize")
    for name, kind in inv.children(""):
        if name not in hooks and not (kind == DIR and name in ("sitecustomize", "usercustomize")):
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

