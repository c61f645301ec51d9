"""Import shadowing: code that runs before the package, and other copies of it.

What an audit of ``site-packages/vllm`` must also rule out, because Python
would execute something other than the audited files. This module runs every
such check for one target (``check_shadowing``); each job with a module of its
own: ``.pth`` files and the paths they add (``checks.pthfiles``), zips on
``sys.path`` and the standard library ahead of the target (``checks.startupzip``),
console scripts and the modules beside them (``checks.startupscripts``), what a
directory offers ``import`` (``checks.importable``), what a ``.pth`` line imports
(``checks.pthimports``, pure parsing of text), whether an installed distribution's
RECORD vouches for startup code (``checks.vouch``, which also keeps the startup
set and the report types), and where Python looks (``checks.sitemodel``). Judged
here:

* Another distribution claiming the package (a second ``*.dist-info`` /
  ``*.egg-info`` for the same name or installing the same top-level package):
  files of two versions mixed in one directory, or an uninstall leftover. That
  includes the old distutils form, a single *file* ``name-1.0-py3.11.egg-info``
  in PKG-INFO format, which ``importlib.metadata`` reads as a distribution.
  Module files beside the package (``vllm.py``, ``vllm.*.so``) in the target
  root fail too.
* ``sitecustomize`` / ``usercustomize`` modules in the target root, which
  ``site`` imports at every start: verified as a vouched ``.pth``'s modules
  are, against the RECORD that installs them (a package directory as well as a
  module, its bytecode by the bytecode check); none installing them fails.
* Top-level modules of the target root that no installed distribution lists
  (``torch/``, ``nt.py``): whatever imports that name runs them (``check_unlisted``).
* ``pyvenv.cfg``: in the startup set by what it decides (``cfg_token``); a
  symbolic link fails, never opened; a ``version`` line the release known
  otherwise contradicts is named in a note (``check_venv_config``). A venv's
  ``bin/python`` that is a script fails (``check_venv_python``), and so does a
  ``._pth`` file that replaces ``sys.path`` (``check_path_override``).
* For a venv whose ``pyvenv.cfg`` lets the system site-packages in (site's
  rule: ``include-system-site-packages`` absent or ``true``), the base
  interpreter's site-packages too: ``site`` processes its ``.pth`` files and
  imports a ``sitecustomize`` found there at every start, so they are judged
  as the target root's are, named by their full path.

Vouching by RECORD only catches accidents: whoever can write site-packages can
write a ``*.dist-info`` with its METADATA, or re-hash a RECORD row. So the
report also lists the *startup set* (``ShadowReport.startup``), the code that
runs at every interpreter start, each file with its SHA-256, for the startup
digest a manifest pins as ``target.startup_sha256`` (``pp1audit.checks.treedigest``).
"""

from __future__ import annotations

import hashlib
import os
import stat
import sys

from pp1audit.checks.bytecode import VerifiedCache
from pp1audit.checks.distrecord import (
    RecordEntry,
    RecordError,
    dist_name,
    distributions,
    is_distribution,
    normalize,
    parse_record,
    read_record,
)
from pp1audit.checks.importable import CUSTOMIZE, copy_in, module_name, module_name_of
from pp1audit.checks.pthfiles import check_pth, package_dir
from pp1audit.checks.sitemodel import (
    CfgFile,
    Interpreter,
    base_site_dirs,
    imports_as,
    interpreter,
    interpreter_names,
    site_pairs,
    stdlib_dirs,
)
from pp1audit.checks.startupscripts import check_script_dirs, check_script_startup
from pp1audit.checks.startupzip import check_stdlib
from pp1audit.checks.vouch import (
    Listed,
    Scope,
    entry_imports_as,
    judge_hook,
    listed_at_root,
)
from pp1audit.checks.vouch import Shadow as Shadow  # the report types live beneath the checks
from pp1audit.checks.vouch import ShadowReport as ShadowReport
from pp1audit.sources import kind_of_mode
from pp1audit.sources.inventory import DIR, FILE, DirInventory, Inventory
from pp1audit.sources.safeio import (
    NotRegular,
    open_regular,
    realpath,
)


def check_system_site(interp: Interpreter, site: str, root: Scope, report: ShadowReport) -> None:
    """The base site-packages of a venv that lets them in: ``site`` processes their
    ``.pth`` files and imports a ``sitecustomize`` from them at every start, so
    both are judged as the target root's are (``root``: its scope, at ``site``,
    whose audited package and bytecode cache they share), named by their full path."""
    package = root.package
    if not interp.system_site:
        return
    dirs = base_site_dirs(interp.stdlib, site)
    where = ", ".join(dirs) if dirs else "none found"
    report.notes.append(f"the system site-packages are on sys.path ({interp.system_site_origin}): "
                        f".pth files and startup hooks judged in {where}; the user site-packages of "
                        "whoever runs Python are too, and are not audited here")
    for d in dirs:
        report.on_path.append(d)
        inv = DirInventory(d)
        scope = Scope(inv, package, root.package_dir,
                       shown=d.rstrip(os.sep) + os.sep, cache=root.cache, site_dir=os.path.abspath(d),
                       version=interp.version, release=interp.release)
        check_pth(inv, package, report, scope)
        check_customize(inv, report, scope)


def _file_distributions(inv: Inventory, package: str, seen: list[str]) -> list[tuple[str, str]]:
    """Root entries ``importlib.metadata`` reads as a distribution of ``package``
    that ``distributions`` (the directories) does not list.

    importlib.metadata takes every child so named (``record.is_distribution``),
    and reads its metadata from the path itself
    when it is a file: the old distutils ``pkg-1.0-py3.11.egg-info`` is a
    single PKG-INFO file, and ``importlib.metadata.version`` may well return
    its version. Matched by the normalised name before the first ``-``.
    """
    want = normalize(package)
    out = []
    for name, kind in inv.children(""):
        if name in seen or not is_distribution(name):
            continue
        if kind == DIR:
            continue  # distributions() judged it (by name, top_level.txt or RECORD)
        if dist_name(name) == want:
            out.append((name, kind))
    return out


def check_copies(inv: Inventory, package: str, primary: str | None, report: ShadowReport,
                 version: tuple[int, int] | None = None) -> None:
    """Other distributions for the package, module files beside it (as Python
    ``version`` names them; None: any version's), copies ahead on sys.path."""
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
    for name, _kind in inv.children(""):
        if imports_as(name, package, version):
            report.findings.append(Shadow(
                name, f"another importable '{package}' beside the package: {name} "
                f"(the package directory wins in the same directory; a second copy nonetheless)",
                f"shadow:{name}"))


def check_unlisted(scope: Scope, listed: Listed, stdlib: list[str], report: ShadowReport) -> None:
    """Top-level modules in the site directory that no installed distribution lists.

    Every ``import torch`` by the package, and every standard-library module that
    tries an optional one (``import pathlib`` imports ``ntpath``, which tries
    ``from nt import …``), imports whatever is there under that name: a
    ``torch/`` or ``nt.py`` no RECORD lists (``listed``: ``vouch.listed_at_root``)
    is code nothing installed, and fails. Judged elsewhere, so left out here: the
    audited package and module files beside it (``check_copies``), the startup
    hooks (``check_customize``), ``__pycache__``, metadata directories and ``.pth``
    files. Not importable from here, so left out too: a name that is no
    identifier, a name the standard library (``stdlib``: its directories, ahead on
    ``sys.path``; the built-in modules when the target runs this ``X.Y``) provides,
    and a directory through which no module can be imported (``_imports_below``:
    empty, or only bytecode caches). A module a ``.pth`` imports is judged with it
    (``ShadowReport.judged_modules``). An ``*.egg-info``
    (a setuptools-era install, no RECORD) lists the modules of its
    ``top_level.txt``. A RECORD vouches for what it lists only against accidents,
    as everywhere: a forged one lists anything."""
    inv, version = scope.inv, scope.version
    if not isinstance(inv, DirInventory):
        return
    builtin = set(sys.builtin_module_names) if version == sys.version_info[:2] else set()
    for name, _kind in inv.children(""):
        if name in listed.names or name.endswith(".pth") or is_distribution(name):
            continue
        module = module_name(inv.root, name, version)
        if module is None or module == scope.package or module in CUSTOMIZE or module in listed.modules \
                or module in builtin or any(copy_in(d, module, version) for d in stdlib):
            continue
        path = os.path.join(inv.root, name)
        if module in report.judged_modules or (os.path.isdir(path) and not _imports_below(path, version)):
            continue
        report.findings.append(Shadow(
            name, f"{name} is importable as '{module}' from the site directory, and no installed "
            f"distribution's RECORD lists it: any 'import {module}' (by {scope.package}, anything it "
            "imports, or a standard-library module trying an optional one) runs it, unaudited",
            f"shadow:{name}"))


def _imports_below(path: str, version: tuple[int, int] | None) -> bool:
    """Whether a directory (a link to one followed, none below it) holds a module an
    import could reach through it: a module file of an identifier in it or in a
    subdirectory named as one (``pkg/__pycache__/mod.cpython-311.pyc`` is a cache,
    no module; ``pkg/__pycache__/sitecustomize.pyc`` is one)."""
    # A stack, not os.walk: Python 3.11's os.walk recurses, so a directory nested
    # 1,000 deep (anyone can drop one into site-packages) ended the run with a
    # RecursionError. As os.walk: symlinked subdirectories are not descended
    # into, a directory that cannot be listed is passed over.
    stack = [path]
    while stack:
        try:
            with os.scandir(stack.pop()) as it:
                entries = list(it)
        except OSError:
            continue
        for e in entries:
            try:
                is_dir = e.is_dir()
            except OSError:
                continue
            if not is_dir:
                if module_name_of(e.name, version):
                    return True
            elif e.name.isidentifier() and not e.is_symlink():
                stack.append(e.path)
    return False


def _record_rows(inv: Inventory, primary: str) -> list[RecordEntry]:
    """The audited distribution's RECORD rows ([] when it cannot be parsed), for a
    caller that has not parsed it already (``RecordRun`` has)."""
    try:
        return parse_record(read_record(inv, f"{primary}/RECORD"), f"{primary}/RECORD")
    except RecordError:
        return []


def check_customize(inv: Inventory, report: ShadowReport, scope: Scope | None = None) -> None:
    """``sitecustomize`` / ``usercustomize`` in the root: ``site`` imports them at every
    start. One an installed distribution's RECORD installs is verified as the
    modules a vouched ``.pth`` imports are (``judge_hook``); anything else fails."""
    scope = scope or Scope(inv, "", None)
    children = dict(inv.children(""))
    for hook in CUSTOMIZE:
        names = _hook_entries(children, hook, scope.version)
        if not names:
            continue
        vouched = judge_hook(scope, hook, children, report, cid=f"shadow:{scope.shown}")
        if vouched is not None:
            report.notes.append(f"{scope.name(hook)} runs at startup, vouched for by {vouched}")
            continue
        for name in names:
            shown = scope.name(name)
            report.findings.append(Shadow(
                shown, f"{shown} is imported by site at every interpreter start, before any package; "
                "no installed distribution's RECORD vouches for it", f"shadow:{shown}"))


def _hook_entries(children: dict[str, str], hook: str, version: tuple[int, int] | None) -> list[str]:
    """The entries of a directory (its children) that Python ``version`` imports as
    ``hook``: its module files in any form, and a package directory (or a link to one)."""
    return sorted(n for n, kind in children.items() if entry_imports_as(n, kind, hook, version))


def check_venv_config(interp: Interpreter, site: str, report: ShadowReport) -> None:
    """``pyvenv.cfg``: in the startup set, a symbolic link failed, its release line noted.

    Each one present goes in the startup set, named relative to the site
    directory as RECORD names a console script (``../../../pyvenv.cfg``), by what
    in it decides startup and is the same on every host (``cfg_token``): so two
    identical venvs, or one moved, share a digest. A symbolic link is not opened
    (``sitemodel.CfgFile.link``): Python reads what it names, which anyone able to
    write there can change, or create when it dangles, without the venv or its
    digest changing; it fails, as a symlinked ``.pth`` does. Its ``version`` line
    Python never reads; when it differs from the release known otherwise
    (``sitemodel.venv_release``) it is stale or untrue and plays no part (the
    bytecode is judged as the release that runs): a note."""
    for cfg in interp.configs:
        report.startup[os.path.relpath(cfg.path, site).replace(os.sep, "/")] = cfg_token(cfg)
        if cfg.link is not None:
            report.findings.append(Shadow(
                cfg.path, f"{cfg.path} is a symbolic link (to {cfg.link}); not opened: Python reads what it "
                "names at every start (the base interpreter, whether the system site-packages start), which "
                "can be changed, or created, without the venv changing", f"pyvenv:{cfg.path}"))
    stated, actual = interp.misstated, interp.release
    if stated is None or actual is None:
        return
    report.notes.append(
        f"{interp.cfg} states Python {stated.number} ({stated.origin}), but the interpreter that runs is "
        f"Python {actual.number} ({actual.origin}): Python never reads that line (stale after an upgrade "
        f"in place, or untrue); bytecode is judged as Python {actual.number}'s")


def check_venv_python(interp: Interpreter, report: ShadowReport) -> None:
    """A venv's ``bin/python`` (``python3``, ``pythonX.Y``) that is a script (``#!``),
    not an interpreter: the console scripts name it in their ``#!`` line, so it
    decides what runs them (any interpreter, options, environment, code of its
    own), and nothing audits it. Read through the safe opener, links followed as
    the kernel follows them; only its first two bytes."""
    if not interp.configs:
        return  # not a venv: the prefix's own bin
    for name in interpreter_names(interp.version):
        exe = os.path.join(interp.prefix, "bin", name)
        try:
            fd, _st = open_regular(exe, follow=True)
        except (OSError, NotRegular, ValueError):
            continue
        try:
            head = os.read(fd, 2)
        except OSError:
            continue
        finally:
            os.close(fd)
        if head == b"#!":
            report.findings.append(Shadow(
                exe, f"{exe} is a script (it starts with '#!'), not an interpreter: the console scripts name "
                "it, so whatever it runs runs them (another interpreter, options, code of its own), and "
                "nothing here audits it", f"shadow:{exe}"))


def check_path_override(interp: Interpreter, report: ShadowReport) -> None:
    """A ``._pth`` file where ``getpath`` looks for one: beside the executable as run
    (any ``bin/*._pth``: ``python._pth``, ``python3._pth``…) and beside the binary it
    resolves to (the base interpreter's ``python3.11._pth``). Python 3.11 and later
    read it on every platform, and its lines *replace* ``sys.path``: the venv's
    site-packages, its ``.pth`` files and everything this audit models of the path
    stop deciding what ``import`` loads (shown with ``bin/python._pth`` naming a
    directory ahead of site-packages: ``import pkg`` ran that copy, and every other
    check passed). No installer writes one into a venv or a prefix: it fails. Only
    looked for (``lstat``), never opened: a FIFO there is named, not read."""
    bindir = os.path.join(interp.prefix, "bin")
    try:
        names = sorted(os.listdir(bindir))
    except (OSError, ValueError):
        names = []
    found = [os.path.join(bindir, n) for n in names if n.endswith("._pth")]
    for name in interpreter_names(interp.version):
        exe = os.path.join(bindir, name)
        if os.path.lexists(exe):
            beside = realpath(exe) + "._pth"
            if os.path.dirname(beside) != bindir and os.path.lexists(beside):
                found.append(beside)
    for path in dict.fromkeys(found):
        report.findings.append(Shadow(
            path, f"{path} replaces sys.path at every start of the interpreter beside it (Python 3.11+ "
            "reads <executable>._pth and takes its lines as the whole path): site-packages, its .pth "
            "files and this audit's model of the path no longer decide what is imported, and nothing "
            "here audits what it lists; remove it", f"shadow:{path}"))


CFG_DIGEST_KEY = "include-system-site-packages"
"""What ``pyvenv.cfg`` decides about startup that is the same on every host: the
rest is host paths (``home``, ``executable``, ``command``) and a release line
Python never reads, judged by checks of their own."""


def cfg_token(cfg: CfgFile) -> str | None:
    """A ``pyvenv.cfg``'s token in the digest format (``treedigest``). A regular
    file read: the SHA-256 of ``include-system-site-packages = true\n`` or ``=
    false\n``, as ``site`` reads that file (its last such line; absent is true).
    A symbolic link (dangling or not): ``symlink:<target>``, never opened; another
    kind of file: its type (a FIFO, never opened). None when a regular file could
    not be read (or is too large)."""
    if cfg.link is not None:
        return "symlink:" + cfg.link  # treedigest.token_for's
    if cfg.data is not None:
        values = [v.lower() for k, v in site_pairs(cfg.data) if k == CFG_DIGEST_KEY]
        decided = "true" if not values or values[-1] == "true" else "false"
        return hashlib.sha256(f"{CFG_DIGEST_KEY} = {decided}\n".encode()).hexdigest()
    try:
        mode = os.stat(cfg.path).st_mode
    except (OSError, ValueError):
        return None
    return None if stat.S_ISREG(mode) else f"{kind_of_mode(mode)}:"


def check_shadowing(inv: Inventory, package: str, primary: str | None,
                    cache: VerifiedCache | None = None, site_dir: str | None = None,
                    rows: list[RecordEntry] | None = None) -> ShadowReport:
    """All shadowing checks for one target. ``cache``: the bytecode verification
    cache for the modules vouched ``.pth`` files import (the user's by default).
    ``site_dir``: the target root as ``site`` spells it (``sitemodel.site_dir_as_given``;
    by default its resolved path): the layout, ``pyvenv.cfg`` and relative path
    lines are read from it, as Python reads them. ``rows``: ``primary``'s RECORD as
    the caller parsed it (an 8,000-row RECORD is not parsed twice); read here when
    not given."""
    report = ShadowReport()
    site = (site_dir or inv.root) if isinstance(inv, DirInventory) else ""
    interp = report.interpreter = interpreter(site) if site else None
    if site and interp is None:
        report.notes.append(f"{site} is not laid out as <prefix>/lib/pythonX.Y/site-packages: the "
                            "base standard library, pyvenv.cfg and the system site-packages were not "
                            "looked at (give the site-packages by the path its interpreter uses)")
    if interp is not None:
        report.notes.extend(interp.notes)
        check_venv_config(interp, site, report)
        check_venv_python(interp, report)
        check_path_override(interp, report)
    scope = Scope(inv, package, package_dir(inv, package), cache=cache, site_dir=site,
                   version=interp.version if interp else None,
                   release=interp.release if interp else None)
    check_pth(inv, package, report, scope)
    check_customize(inv, report, scope)
    check_copies(inv, package, primary, report, scope.version)
    if primary is not None and rows is None:
        rows = _record_rows(inv, primary)
    if isinstance(inv, DirInventory):
        check_unlisted(scope, listed_at_root(inv, {primary: rows} if primary and rows else None),
                       stdlib_dirs(interp.stdlib, inv.root) if interp is not None else [], report)
    if interp is not None and rows:
        check_script_dirs(scope, rows, interp.prefix, report)
        if isinstance(inv, DirInventory):
            check_script_startup(inv, interp, rows, report)
    if interp is not None and isinstance(inv, DirInventory):
        check_stdlib(inv.root, package, report, interp)
        check_system_site(interp, inv.root, scope, report)
    return report
