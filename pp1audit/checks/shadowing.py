"""Import shadowing: code that runs before the package, and other copies of it.

What an audit of ``site-packages/vllm`` must also rule out, because Python
would execute something other than the audited files:

* ``.pth`` files in the target root (site-packages). ``site`` executes every
  line starting with ``import`` at *every* interpreter start (a classic
  persistence and import-hijack vector), and adds other lines to ``sys.path``.
  Lines are read as the target interpreter's version reads them (3.13 strips a
  BOM and splits with ``str.splitlines``; ``sitemodel.pth_lines``), every
  reading's when the version is unknown (a wheel).
  An executing ``.pth`` that an installed distribution's RECORD lists with a
  matching hash (setuptools' ``distutils-precedence.pth`` in every fresh venv)
  is attributed to it and named, with the code it runs, in the summary; one
  no RECORD vouches for is a failure. Vouching takes an installed
  distribution: a ``*.dist-info`` with its ``METADATA`` — a bare directory
  holding a one-line RECORD that names the ``.pth`` is not one (anyone who
  can drop a ``.pth`` can drop that). A vouched line runs the modules it
  imports (``__import__('_distutils_hack')``, or an ``import`` inside the
  constant string it hands ``exec`` / ``eval`` / ``compile``, as coverage's
  ``.pth`` does), so those must match the same RECORD too, or the RECORD of
  the distribution that installs them (every row of a present file hashed,
  nothing unlisted beside them, their ``__pycache__`` judged by the bytecode
  check; a hash-less row naming no file, as virtualenv's seeder writes, names
  nothing to run); a module no RECORD installs fails, unless a
  standard-library name, and so does code or a module name the line computes
  at run time (``exec(base64.b64decode(…))``): what it imports cannot be
  known, and the vouched ``.pth`` bytes do not hold it. The code shown is
  cut at 120 characters, with how much was cut and the file's SHA-256 named,
  so no two different files read the same.
* ``.pth`` path lines, resolved as ``site`` does (joined to the site
  directory and normalised; then symlinks resolved): one leading into the
  audited package directory (its modules become top-level ones), or to a
  directory or zip holding another copy of the package or a ``sitecustomize``
  / ``usercustomize`` (``site`` imports it after the ``.pth`` files), fails.
  Outside the target root only names and types are looked at (``lstat``), and
  a zip only through its central directory. A path line to nothing (yet) outside
  the target root fails: ``site`` adds it at the first start after someone
  creates it (``_missing_path``); so does one to a directory or zip outside it
  that someone other than the site directory's owner (or root) can write, or
  replace through a directory above it (``_others_can_write``: ``/tmp``, sticky
  bit or not).
* Another distribution claiming the package (a second ``*.dist-info`` /
  ``*.egg-info`` for the same name or installing the same top-level package):
  files of two versions mixed in one directory, or an uninstall leftover. That
  includes the old distutils form, a single *file* ``name-1.0-py3.11.egg-info``
  in PKG-INFO format, which ``importlib.metadata`` reads as a distribution.
* ``sitecustomize`` / ``usercustomize`` modules in the target root, which
  ``site`` imports at every start: verified as a vouched ``.pth``'s modules
  are, against the RECORD that installs them (a package directory as well as a
  module, its bytecode by the bytecode check); none installing them fails.
* Another importable ``<package>`` ahead of the target on ``sys.path``: the
  standard library directories of the interpreter this site-packages belongs
  to (``lib/pythonX.Y`` and ``lib-dynload``; for a venv, those of its base
  interpreter, from ``pyvenv.cfg``: where Python looks and how it reads the
  file is ``pp1audit.checks.sitemodel``, from the path given, symlinks kept; a layout
  it does not recognise is named in the summary), the zipped standard library before them
  (``lib/python311.zip``: only names in its central directory are looked at),
  and module files beside the package (``vllm.py``, ``vllm.*.so``) in the
  target root itself.
  A ``sitecustomize`` / ``usercustomize`` in those standard-library places runs
  at every start too; it is named in the summary, not failed, because Debian
  and Ubuntu ship one (``/usr/lib/python3.X/sitecustomize.py``). The summary
  names the standard library used and where its ``home`` came from.
* The directory of a console script the audited distribution's RECORD installs
  (``../../../bin/vllm``), which Python puts first on ``sys.path`` when it runs
  the script: another ``vllm`` there fails, and so does any other module no
  RECORD installs there; every module there is in the startup set, and a vouched
  one's bytecode is judged (``check_script_dirs``). ``importlib.metadata``
  searches that directory too: its distributions' entry points are judged
  (``checks.record``). The scripts themselves (``bin/vllm``: how a deployment
  starts the package) are in the startup set too, RECORD's row being as easy
  to re-hash as any (``check_script_startup``).
* Top-level modules of the target root that no installed distribution lists
  (``torch/``, ``nt.py``): whatever imports that name runs them (``check_unlisted``).
* ``pyvenv.cfg``: in the startup set by what it decides (``cfg_token``); a
  symbolic link fails, never opened; a ``version`` line the release known
  otherwise contradicts is named in a note (``check_venv_config``). A venv's
  ``bin/python`` that is a script fails (``check_venv_python``).
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

This module finds what runs or shadows and words each finding. Two questions it
asks are answered elsewhere, each a job of its own: what a ``.pth`` line
imports (``pp1audit.checks.pthimports``, pure parsing of text) and whether an installed
distribution's RECORD vouches for startup code (``pp1audit.checks.vouch``, which also
keeps the startup set and the report types). Where Python looks is
``pp1audit.checks.sitemodel``.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import posixpath
import re
import stat
import sys
from collections.abc import Iterator
from dataclasses import dataclass

from pp1audit.checks.bytecode import VerifiedCache, check_bytecode, default_cache, keep_for_bytecode
from pp1audit.checks.distrecord import (
    RecordEntry,
    RecordError,
    dist_name,
    distributions,
    is_bytecode,
    is_distribution,
    logical_path,
    normalize,
    parse_record,
    read_record,
    read_small,
)
from pp1audit.checks.pthimports import CUT, pth_imports
from pp1audit.checks.sitemodel import (
    MODULE_SUFFIXES,
    CfgFile,
    Interpreter,
    base_site_dirs,
    imports_as,
    interpreter,
    interpreter_names,
    module_files,
    pth_lines,
    pth_processed,
    site_pairs,
    stdlib_dirs,
    stdlib_zip,
)
from pp1audit.checks.treedigest import MISSING, script_token, token_for
from pp1audit.checks.vouch import (
    Listed,
    Scope,
    entry_imports_as,
    judge_hook,
    listed_at_root,
    module_entries,
    owners_at,
    owners_of,
    startup_entry,
    verify_imports,
)
from pp1audit.checks.vouch import Shadow as Shadow  # the report types live beneath the checks
from pp1audit.checks.vouch import ShadowReport as ShadowReport
from pp1audit.errors import TargetError
from pp1audit.sources import kind_of_mode
from pp1audit.sources.hashing import Digest, hash_entries
from pp1audit.sources.inventory import DIR, FILE, DirInventory, Entry, Inventory
from pp1audit.sources.safeio import (
    Elsewhere,
    NotRegular,
    TooLarge,
    is_within,
    open_regular,
    read_regular,
    realpath,
)
from pp1audit.sources.wheel import NotAFile, NotAZip, Zip, ZipError
from pp1audit.text.safe import cut

STDLIB_ZIP_MAX = 16 << 20
"""Largest ``pythonXY.zip`` looked into (its central directory only). A zipped
standard library is a few MB. Measured on CPython 3.11.7: its whole standard
library, test suite included (1,790 modules), zips to 7.2 MB as source and
15.4 MiB as bytecode; without the tests, tkinter and idlelib (about what the
Windows embeddable distribution ships) to 5.1 MB of bytecode. 16 MiB holds all
of those; a larger file is named in a note, not read. At the cap a hostile zip
(155,000 members) costs about 0.9 s (``zipfile`` makes a ``ZipInfo`` per member);
one of 300,000 members in 28 MB cost 2.3 s and 100 MB."""

CUSTOMIZE = ("sitecustomize", "usercustomize")
"""Modules ``site`` imports at every interpreter start."""


def _os_names(directory: str, modules: tuple[str, ...]) -> list[str]:
    """The entries of an OS directory, for matching module names (``imports_as``).

    One the audit cannot list (no read permission for whoever runs it) is probed
    by ``lstat`` for the names of ``modules`` that every version imports: a
    version-tagged extension module there cannot be named without listing it."""
    try:
        return os.listdir(directory)
    except (OSError, ValueError):
        pass
    probe = [m + s for m in modules for s in ("", *MODULE_SUFFIXES)]
    return [n for n in probe if _lexists(os.path.join(directory, n))]


def _lexists(path: str) -> bool:
    try:
        os.lstat(path)
    except (OSError, ValueError):
        return False
    return True


def _copy_in(directory: str, package: str, version: tuple[int, int] | None) -> str | None:
    """The path of an importable ``package`` (for Python ``version``) in an OS directory, or None."""
    pkg = os.path.join(directory, package)
    if os.path.isdir(pkg):
        return pkg
    for name in module_files(_os_names(directory, (package,)), package, version):
        p = os.path.join(directory, name)
        if os.path.isfile(p):
            return p
    return None


PATH_ZIP_MAX = 64 << 20
"""Largest zip on a ``.pth`` path line looked into (its central directory only).
An egg is rarely over a few MB; a larger file is a failure (what it holds is
unknown), not read: ``Zip`` (``zipfile``) holds the whole central directory, a
``ZipInfo`` per member: a hostile one of 300,000 members in 28 MB cost 2.3 s and 100 MB."""


def check_pth(inv: Inventory, package: str, report: ShadowReport, scope: Scope | None = None) -> None:
    """``.pth`` files at the root: executing lines, paths to other copies or startup hooks."""
    scope = scope or Scope(inv, package, _package_dir(inv, package))
    for name, kind in inv.children(""):
        if not name.endswith(".pth"):
            continue
        shown = scope.name(name)
        if not pth_processed(name, scope.version):
            version = ".".join(map(str, scope.version or ()))
            report.notes.append(f"{shown} is not read: Python {version} skips a .pth whose name "
                                "starts with '.'")
            continue
        report.pth_files += 1
        if kind != FILE:
            report.findings.append(Shadow(shown, f"{shown} is a {kind}; not opened", f"pth:{shown}"))
            if kind != DIR:  # site opens a symlink's target; a directory it cannot open
                startup_entry(scope, report, name)
            continue
        data = read_small(inv, name)
        if data is None:
            report.findings.append(Shadow(shown, f"{shown} cannot be read", f"pth:{shown}"))
            startup_entry(scope, report, name)
            continue
        # Every .pth read is startup code: a path line decides what site imports
        # (a directory that does not exist yet is armed by creating it).
        report.startup[shown] = hashlib.sha256(data).hexdigest()
        executing: list[tuple[int, str]] = []
        for n, raw in pth_lines(data, scope.version):
            line = raw.rstrip()
            if not line or line.startswith("#"):
                continue
            if line.startswith(("import ", "import\t")):
                executing.append((n, line))
                continue
            _path_line(scope, shown, n, line, report)
        if executing:
            _judge_executing(scope, name, data, executing, report)


def _shown_code(executing: list[tuple[int, str]], sha256: str) -> str:
    """The first executing line, cut at ``pthimports.CUT`` characters with the cut counted, and the
    file's SHA-256: two files that differ never read the same, a payload after
    the cut included."""
    first_n, first = executing[0]
    shown = cut(first, CUT)
    more = f" (+{len(executing) - 1} more import lines)" if len(executing) > 1 else ""
    return f"line {first_n}: {shown}{more}; file sha256 {sha256[:12]}"


def _judge_executing(scope: Scope, name: str, data: bytes, executing: list[tuple[int, str]],
                     report: ShadowReport) -> None:
    """An executing ``.pth``: vouched for (and the modules it imports verified) or a failure.
    Either way it is in the startup set."""
    inv, shown = scope.inv, scope.name(name)
    digest = hashlib.sha256(data)
    report.startup[shown] = digest.hexdigest()
    owners = owners_of(inv, name, digest.digest())
    code = _shown_code(executing, digest.hexdigest())
    if owners.good:
        meta = owners.good[0]
        imported = verify_imports(scope, shown, meta, owners.rows[meta], [line for _, line in executing],
                                  report)
        report.notes.append(f"{shown} executes code at startup, vouched for by {meta} "
                            f"(matches its RECORD{imported}): {code}")
        return
    if owners.bad:
        why = f"differs from the {owners.bad[0]} RECORD"
    elif owners.hollow:
        why = (f"only {owners.hollow[0]} lists it, which has no METADATA: not an installed "
               "distribution")
    else:
        why = "no installed distribution's RECORD lists it"
    if scope.shown:
        why += f"; {SYSTEM_SITE_HINT}"
    else:  # what it imports is this finding's to report (check_unlisted leaves it out)
        report.judged_modules.update(pth_imports([line for _, line in executing]).modules)
    report.findings.append(Shadow(
        shown, f"{shown} executes code at every interpreter start ({why}): {code}", f"pth:{shown}"))


SYSTEM_SITE_HINT = ("it is in the system site-packages, which a venv with include-system-site-packages = "
                    "false leaves out")
"""Said of a finding in a base site-packages. A distribution's own packages there
(Debian's ``/usr/lib/python3/dist-packages``: ``python3-setuptools`` ships
``distutils-precedence.pth`` with an ``*.egg-info`` and no RECORD) fail like any
file no RECORD vouches for: trusting the directory would trust whatever else is
in it (a ``.pth`` an administrator or an image build dropped there), and dpkg's
own record of them is not read."""


def _startup_os_path(scope: Scope, report: ShadowReport, path: str) -> None:
    """A startup hook found by its OS path (a directory a path line adds): read
    through the inventory inside the site directory, else named unread (outside it
    only names and types are looked at)."""
    root = scope.inv.root if isinstance(scope.inv, DirInventory) else None
    if root is not None and is_within(path, root) and path != root:
        startup_entry(scope, report, os.path.relpath(path, root).replace(os.sep, "/"))
    else:
        report.startup[path] = None


def _package_dir(inv: Inventory, package: str) -> str | None:
    """The audited package directory with symlinks resolved (directories only)."""
    return realpath(os.path.join(inv.root, package)) if isinstance(inv, DirInventory) else None


def _path_line(scope: Scope, pth: str, n: int, line: str, report: ShadowReport) -> None:
    """One ``.pth`` path line: where ``site`` would add it, and what would import from there."""
    cid = f"pth:{pth}:{n}"
    inv = scope.inv
    if not isinstance(inv, DirInventory):
        _path_line_in_wheel(scope, pth, n, line, report)
        return
    if "\0" in line:
        return  # os.path.exists is False for it: site skips the line
    # site: os.path.abspath(os.path.join(sitedir, line)), added when it exists
    # (through symlinks). The OS then resolves the symlinks on every import.
    added = os.path.normpath(os.path.join(scope.site_dir or inv.root, line))
    real = realpath(added)
    head = f"{pth}:{n} adds {added} to sys.path"
    try:
        st = os.stat(real)
    except (FileNotFoundError, NotADirectoryError):
        _missing_path(inv, pth, n, added, real, report)
        return
    except OSError as exc:
        report.findings.append(Shadow(pth, f"{head} when it exists; it cannot be examined "
                                      f"({exc.strerror or exc}): whether it does, and what site would "
                                      "import from it, is unknown", cid))
        return
    except ValueError:
        return
    if scope.package_dir is not None and is_within(real, scope.package_dir):
        hooks = [p for p, _ in _hooks_in_dir(real, scope.version)] if stat.S_ISDIR(st.st_mode) else []
        for hook in hooks:
            _startup_os_path(scope, report, hook)
        also = f"; {', '.join(hooks)} there is imported by site at every start" if hooks else ""
        report.findings.append(Shadow(pth, f"{head}, inside the audited package directory "
                                      f"{scope.package}/: its files become importable as top-level "
                                      f"modules, outside the package{also}", cid))
        return
    if real == inv.root:
        return  # the site directory itself, already on sys.path
    if not is_within(real, inv.root) and (who := _others_can_write(real, _owner(inv.root))) is not None:
        report.findings.append(Shadow(
            pth, f"{head}, and {who}: anyone who can write there can add code run at start (site imports a "
            "sitecustomize from it at every start, and any module nothing earlier on sys.path provides is "
            "imported from it)", f"{cid}:writable"))
    if (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)) and added not in report.on_path:
        report.on_path.append(added)
    if stat.S_ISDIR(st.st_mode):
        copy = _copy_in(real, scope.package, scope.version)
        if copy is not None:
            report.findings.append(Shadow(pth, f"{head}, and another copy of '{scope.package}' is "
                                          f"there ({copy})", cid))
        _hooks_on_path(scope, inv.root, pth, n, head, real, report)
    elif stat.S_ISREG(st.st_mode):  # zipimport takes any regular file; anything else, nothing
        _zip_on_path(scope.package, pth, n, head, real, report)


def _missing_path(inv: DirInventory, pth: str, n: int, added: str, real: str, report: ShadowReport) -> None:
    """A path line naming nothing yet: ``site`` skips it today (``os.path.exists``),
    and adds it at the first start after someone creates it, a ``sitecustomize``
    there then running at every start. Outside the site directory that is anyone
    able to write there (``/tmp/x``), never seen by the audit or its digests: a
    failure. Inside it, creating it takes the write access that could drop a
    ``.pth`` anyway, and old installers leave such lines behind: a note."""
    where = f"{pth}:{n} adds {added} to sys.path"
    if is_within(real, inv.root):
        report.notes.append(f"{where} once it exists (it does not; inside the site directory)")
        return
    report.findings.append(Shadow(
        pth, f"{where} once it exists: a path that does not exist; anything created there later "
        "runs at start (site imports a sitecustomize from it at every start, and any module nothing "
        "earlier on sys.path provides is imported from it)", f"pth:{pth}:{n}"))


def _owner(path: str) -> int | None:
    """The owner of ``path`` (None when it cannot be examined)."""
    try:
        return os.stat(path).st_uid
    except (OSError, ValueError):
        return None


def _others_can_write(real: str, owner: int | None) -> str | None:
    """Why someone other than ``owner`` (the site directory's) or root can change what
    is at ``real`` (a path line's directory or zip, symlinks resolved), or None.

    Itself: writable by every user (``mode & 0o002``; the sticky bit of ``/tmp`` only
    stops others removing what they do not own, not adding), writable by a group
    that holds another user (``_others_in_group``), or owned by another user. A
    directory above it: owned by another user, or writable by every user or such a
    group without the sticky bit (any of them can rename what is below and put
    another in its place)."""
    path = real
    while True:
        try:
            st = os.stat(path)
        except (OSError, ValueError):
            return None
        if st.st_uid not in (0, owner):
            return f"{path} is owned by another user (uid {st.st_uid}) than the site directory's"
        if st.st_mode & 0o002 and (path == real or not st.st_mode & stat.S_ISVTX):
            sticky = " (the sticky bit stops removals, not additions)" if st.st_mode & stat.S_ISVTX else ""
            return f"{path} is writable by every user{sticky}"
        if st.st_mode & 0o020 and (path == real or not st.st_mode & stat.S_ISVTX) and (
                members := _others_in_group(st.st_gid, owner)):
            return (f"{path} is writable by group {_group_name(st.st_gid)}, which holds "
                    f"{', '.join(members)}")
        up = os.path.dirname(path)
        if up == path:
            return None
        path = up


def _others_in_group(gid: int, owner: int | None) -> list[str]:
    """The users other than root and ``owner`` that group ``gid`` holds, sorted: its
    listed members and the users whose primary group it is, as this host's account
    database (``grp``, ``pwd``) says. A group nobody else is in can write for its
    owner only, which is the owner's own write; a group with another user in it is
    another user able to write."""
    import grp
    import pwd

    accounts = pwd.getpwall()
    uids = {p.pw_name: p.pw_uid for p in accounts}
    names = {p.pw_name for p in accounts if p.pw_gid == gid}
    with contextlib.suppress(KeyError):
        names |= set(grp.getgrgid(gid).gr_mem)
    # A listed member with no account is nobody today, but whoever gets that name is in.
    return sorted(n for n in names if uids.get(n, -1) not in (0, owner))


def _group_name(gid: int) -> str:
    """``name (gid N)``, or ``gid N`` for a group the account database does not name."""
    import grp

    try:
        return f"{grp.getgrgid(gid).gr_name} (gid {gid})"
    except KeyError:
        return f"gid {gid}"


def _hooks_in_dir(real: str, version: tuple[int, int] | None) -> list[tuple[str, str]]:
    """Startup hooks in an OS directory, by name and type only (nothing opened): the
    entries Python ``version`` imports as one (``_hook_of``), as ``(path, hook)``,
    sorted. A bare name counts only as a directory (a link to one followed)."""
    out = []
    for n in sorted(_os_names(real, CUSTOMIZE)):
        path = os.path.join(real, n)
        if (hook := _hook_of(n, DIR if os.path.isdir(path) else FILE, version)) is not None:
            out.append((path, hook))
    return out


def _hooks_on_path(scope: Scope, root: str, pth: str, n: int, head: str, real: str,
                   report: ShadowReport) -> None:
    """A ``sitecustomize`` / ``usercustomize`` in a directory a path line adds: ``site``
    imports it after the ``.pth`` files. Inside ``root`` (the site directory) one an
    installed distribution's RECORD installs is verified (``judge_hook``) and
    named; anything else fails."""
    found = _hooks_in_dir(real, scope.version)
    if not found:
        return
    rel = os.path.relpath(real, root).replace(os.sep, "/") if is_within(real, root) else None
    children = dict(scope.inv.children(rel)) if rel is not None else {}
    for hook in CUSTOMIZE:
        paths = [p for p, h in found if h == hook]
        if not paths:
            continue
        if rel is not None:
            vouched = judge_hook(scope, hook, children, report, cid=f"pth:{pth}:{n}:", base=rel,
                                  via=f" through {pth}:{n}")
            if vouched is not None:
                report.notes.append(f"{scope.name(f'{rel}/{hook}')} is on sys.path through {pth}:{n} "
                                    f"and runs at startup, vouched for by {vouched}")
                continue
        for path in paths:
            if rel is None:
                report.startup[path] = None  # outside the site directory: never opened
            report.findings.append(Shadow(
                pth, f"{head}, where {path} is imported by site at every interpreter start, after the "
                ".pth files; no installed distribution's RECORD vouches for it",
                f"pth:{pth}:{n}:{os.path.basename(path)}"))


def _hook_of(name: str, kind: str, version: tuple[int, int] | None) -> str | None:
    """The startup hook a directory entry (of type ``kind``) imports as for Python
    ``version``, if any: a package directory or any module file of it (``entry_imports_as``)."""
    return next((h for h in CUSTOMIZE if entry_imports_as(name, kind, h, version)), None)


def _zip_on_path(package: str, pth: str, n: int, head: str, real: str, report: ShadowReport) -> None:
    """A regular file on a path line: zipimport imports from it when it is a zip.

    Its central directory is read (``Zip``: the open never blocks and is
    judged on the descriptor); a file that is no zip at all gives Python nothing
    either. A startup hook or another copy of the package in it fails; so does a
    zip that cannot be looked into, since what it holds is unknown.
    """
    cid = f"pth:{pth}:{n}"
    try:
        names = _zip_members(real, PATH_ZIP_MAX, (package, *CUSTOMIZE))
    except NotAZip:
        return  # no zip at all: Python imports nothing from it
    except ZipError as exc:
        report.findings.append(Shadow(pth, f"{head}, a file zipimport would import from, which cannot "
                                      f"be looked into ({exc}): whether it holds a sitecustomize or "
                                      f"another '{package}' is unknown", cid))
        return
    except OSError as exc:
        report.findings.append(Shadow(pth, f"{head}, a file that cannot be examined "
                                      f"({exc.strerror or exc})", cid))
        return
    hit = _zip_hit(real, names, package)
    if hit is not None:
        report.findings.append(Shadow(pth, f"{head}, and another copy of '{package}' is there "
                                      f"({hit.path})", cid))
    for hook in CUSTOMIZE:
        zhook = _zip_hit(real, names, hook)
        if zhook is not None and zhook.imported:
            report.startup[zhook.path] = None  # a member of a zip: never opened
            report.findings.append(Shadow(
                pth, f"{head}, a zip holding {zhook.path}, which site imports at every interpreter "
                "start, after the .pth files; no installed distribution's RECORD vouches for it",
                f"{cid}:{hook}"))


def _path_line_in_wheel(scope: Scope, pth: str, n: int, line: str, report: ShadowReport) -> None:
    """A path line of a ``.pth`` in a wheel, relative to where it installs (the
    site directory): into the package, or to a directory of the wheel holding a
    startup hook, fails. A path outside the wheel names the installing host's
    files, which the wheel does not hold: named in a note."""
    inv, cid = scope.inv, f"pth:{pth}:{n}"
    rel = posixpath.normpath(line)
    if os.path.isabs(line) or rel == ".." or rel.startswith("../"):
        report.notes.append(f"{pth}:{n} adds {line} to sys.path, outside the wheel: not looked at")
        return
    if rel == ".":
        return
    head = f"{pth}:{n} adds {rel} to sys.path"
    if rel == scope.package or rel.startswith(scope.package + "/"):
        report.findings.append(Shadow(pth, f"{head}, inside the audited package directory "
                                      f"{scope.package}/: its files become importable as top-level "
                                      "modules, outside the package", cid))
        return
    if (e := inv.entry(rel)) is not None:
        report.findings.append(Shadow(pth, f"{head}, a {e.kind} of the wheel zipimport would import "
                                      "from: not looked into", cid))
        return
    for name, kind in inv.children(rel):
        if _hook_of(name, kind, scope.version) is not None:
            startup_entry(scope, report, f"{rel}/{name}")
            report.findings.append(Shadow(
                pth, f"{head}, where {rel}/{name} is imported by site at every interpreter start, after "
                "the .pth files; not vouched for", f"{cid}:{name}"))
        elif name == scope.package or imports_as(name, scope.package, scope.version):
            report.findings.append(Shadow(pth, f"{head}, and another copy of '{scope.package}' is "
                                          f"there ({rel}/{name})", cid))


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
    extensions = sorted(n for n in names if _extension_of(n, package))
    if extensions:
        return ZipHit(f"{zpath}/{extensions[0]}", imported=False,
                      why_not="zipimport does not load extension modules")
    return None


def _extension_of(name: str, package: str) -> bool:
    """A zip member named as an extension module of ``package`` for any version
    (zipimport never loads one, so which version is moot: a second copy all the same)."""
    return name.endswith((".so", ".pyd")) and imports_as(name, package, None)


def _zip_names(zpath: str, report: ShadowReport, packages: tuple[str, ...]) -> set[str] | None:
    """The member names of the stdlib zip ``_zip_hit`` needs for ``packages``, or None.

    Read with ``Zip``, the wheels' reader: its central directory only, the
    open never blocking and judged on the descriptor (a FIFO swapped in after the
    ``stat`` below is refused, not waited on). A final symlink is followed, as by
    zipimport, which imports from what the link names. Only names of the forms
    ``_zip_hit`` looks for are kept, at most a few per package
    (``_relevant``). A missing zip is the usual case and says nothing; one that is
    not a regular file, too large or unreadable is a note (what it holds is unknown).
    """
    ahead = f"{zpath} (on sys.path ahead of the audited copy)"
    try:
        return _zip_members(zpath, STDLIB_ZIP_MAX, packages)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except NotAFile:
        report.notes.append(f"{ahead} is not a regular file; not opened")
    except ZipTooLarge as exc:
        report.notes.append(f"{ahead} is {exc.size:,} bytes, over the {exc.cap >> 20} MiB read for its "
                            "member list; not looked into")
    except ZipError as exc:
        report.notes.append(f"{ahead} cannot be read ({exc}); whether it holds another copy is unknown")
    except OSError as exc:
        report.notes.append(f"{ahead} cannot be examined: {exc.strerror or exc}")
    return None


class ZipTooLarge(ZipError):
    """A zip on ``sys.path`` over the size whose central directory is read."""

    def __init__(self, size: int, cap: int) -> None:
        super().__init__(f"{size:,} bytes, over the {cap >> 20} MiB looked into")
        self.size, self.cap = size, cap


def open_zip(path: str, cap: int) -> Zip:
    """A file on ``sys.path`` opened as zipimport opens it (a final symlink followed),
    for its central directory (``Zip``: the open never blocks and is judged on
    the descriptor). ``FileNotFoundError`` / ``OSError`` from the ``stat``;
    ``NotAFile`` for anything but a regular file (one swapped in after the ``stat``
    too), ``ZipTooLarge`` over ``cap`` bytes, ``ZipError`` when it is no readable zip."""
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise NotAFile(f"{path} is not a regular file")
    if st.st_size > cap:
        raise ZipTooLarge(st.st_size, cap)
    return Zip(path)


def _zip_members(path: str, cap: int, packages: tuple[str, ...]) -> set[str]:
    """The names of a zip on ``sys.path`` ``_zip_hit`` needs for ``packages``
    (``_relevant``), read by ``open_zip``, whose errors it raises. A file ``Zip``
    finds no end record in is asked of zipimport itself (``_zipimport_names``)."""
    heads = tuple(f"{p}{tail}" for p in packages for tail in ("/", "."))
    try:
        index = open_zip(path, cap)
    except NotAZip:
        names = _zipimport_names(path)
        if names is None:
            raise
        return _relevant(iter(sorted(n for n in names if n.startswith(heads))), packages)
    try:
        return _relevant((n for n in index.names if n.startswith(heads)), packages)
    finally:
        index.close()


def _zipimport_names(path: str) -> list[str] | None:
    """The member names zipimport reads from ``path``, or None when it reads none.

    zipimport finds the end record otherwise than zipfile (and so ``Zip``): a
    record at the very end counts whatever its comment length says, where zipfile
    then searches back for the last signature. A file made to differ (a comment
    length of 1, a signature in the disk-number field) was "no zip at all" here
    while Python imported a sitecustomize from it. So the interpreter's own reader
    decides (``zipimport._read_directory``, the one ``import`` uses; absent in a
    Python that has none: None), on the descriptor opened here (``/proc/self/fd``:
    the open never blocks and is judged regular; no ``/proc``: None). Only the
    directory is read; nothing is imported."""
    import zipimport

    read = getattr(zipimport, "_read_directory", None)
    if read is None:
        return None
    try:
        fd, _st = open_regular(path, follow=True)
    except (OSError, NotRegular, ValueError):
        return None
    try:
        proc = f"/proc/self/fd/{fd}"
        if not os.path.exists(proc):
            return None
        try:
            files = read(proc)
        except Exception:  # ZipImportError, or whatever a hostile file raises: no directory
            return None
        return [str(name).replace(os.sep, "/") for name in files]
    finally:
        os.close(fd)


def _relevant(names: Iterator[str], packages: tuple[str, ...]) -> set[str]:
    """The names ``_zip_hit`` decides on, at most six per package: the four it tries,
    one member below ``pkg/`` (any says "a directory"), and the first extension
    module ``pkg.*`` in sorted order (the one it names)."""
    wanted = set(packages)
    exact = {f"{p}{tail}" for p in packages for tail in ("/__init__.pyc", "/__init__.py", ".pyc", ".py")}
    kept: dict[tuple[str, str], str] = {}
    for name in names:
        if name in exact:
            kept[name, ""] = name
        elif (head := name.split("/", 1)[0]) != name:
            if head in wanted:
                kept.setdefault((head, "/"), name)
        elif (head := name.split(".", 1)[0]) in wanted and _extension_of(name, head):
            kept[head, "."] = min(kept.get((head, "."), name), name)
    return set(kept.values())


def check_stdlib(root: str, package: str, report: ShadowReport, interp: Interpreter | None = None) -> None:
    """Copies of the package, and startup hooks, in the standard library ahead of ``root``.

    The summary names the standard library taken and why: the audit trusts it
    (a ``home`` pointing at a doctored copy is the venv's owner's doing)."""
    interp = interp or interpreter(root)
    if interp is None:
        return
    stdlib = interp.stdlib
    report.notes.append(f"base standard library taken as {stdlib} ({interp.origin}); not audited here")
    for d in stdlib_dirs(stdlib, root):
        report.looked_in.append(d)
        copy = _copy_in(d, package, interp.version)
        if copy is not None:
            report.findings.append(Shadow(
                copy, f"another '{package}' at {copy} is ahead of the audited copy on sys.path "
                f"(standard library directory): Python imports that one", f"shadow:{copy}"))
        for hook in CUSTOMIZE:
            if (found := _copy_in(d, hook, interp.version)) is not None:
                _customize_note(found, report)
    zpath = stdlib_zip(stdlib)
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
    real = realpath(path)
    link = f" (-> {real})" if real != os.path.abspath(path) and os.path.exists(real) else ""
    report.notes.append(f"{path}{link} in the base interpreter's standard library is imported by site "
                        "at every interpreter start, before any package; not audited here")


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
        module = _module_name(inv.root, name, version)
        if module is None or module == scope.package or module in CUSTOMIZE or module in listed.modules \
                or module in builtin or any(_copy_in(d, module, version) for d in stdlib):
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
                if _module_name_of(e.name, version):
                    return True
            elif e.name.isidentifier() and not e.is_symlink():
                stack.append(e.path)
    return False


def _module_name_of(name: str, version: tuple[int, int] | None) -> str | None:
    """The module a file of this name is, for Python ``version`` (``imports_as``), or None."""
    stem = name.split(".", 1)[0]
    return stem if stem.isidentifier() and imports_as(name, stem, version) else None


SCRIPT_MODULE_MAX = 16 << 20
"""Largest module file beside a console script read to compare with RECORD; a larger
one (or one that is no regular file) fails unverified."""


@dataclass(frozen=True, slots=True)
class ScriptDir:
    """A directory the audited distribution's RECORD installs a console script into."""

    path: str
    """The directory, symlinks resolved."""
    shown: str
    """As the RECORD row spells it from the site directory (``../../../bin``): how its
    files are named in the startup set, the same wherever the venv lives."""
    script: str
    """One console script there (its OS path), for the messages."""


def script_dirs(inv: DirInventory, rows: list[RecordEntry], prefix: str) -> list[ScriptDir]:
    """Each directory into which the audited distribution's RECORD (its parsed
    ``rows``) installs a console script (``../../../bin/vllm``). Only the ``bin``
    of the installation ``prefix`` (as the site directory spells it, never the
    resolved root's ``../../..``: with ``<prefix>/lib`` a link that is another
    directory, and the real ``bin`` would go unread), and only while it resolves
    inside the prefix: a row naming a host directory is not followed (RECORD is
    untrusted), and nothing is looked up for it."""
    out: dict[str, ScriptDir] = {}
    for s in script_files(inv, rows, prefix):
        parent = realpath(os.path.dirname(s.path))
        if is_within(parent, realpath(prefix)):
            out.setdefault(parent, ScriptDir(parent, "../../../bin", s.path))
    return [out[k] for k in sorted(out)]


@dataclass(frozen=True, slots=True)
class ScriptFile:
    """A file the audited distribution's RECORD installs into the scripts directory."""

    path: str
    """Its OS path, as the row names it from the site directory (symlinks kept)."""
    shown: str
    """As the RECORD row spells it (``../../../bin/vllm``): its name in the startup set."""


def script_files(inv: DirInventory, rows: list[RecordEntry], prefix: str) -> list[ScriptFile]:
    """Every file the audited distribution's RECORD (its parsed ``rows``) lists in
    the scripts directory ``<prefix>/bin`` of a ``<prefix>/lib/pythonX.Y/site-packages``
    root (``../../../bin/vllm``): what ``vllm serve`` runs. Chosen by the row's
    path alone, as the row spells it, so a ``bin`` made a link elsewhere still
    names its scripts (``check_script_startup`` does not read them there). The
    row is placed in ``prefix`` as the site directory spells it (the
    interpreter's), never in the resolved root: with ``<prefix>/lib`` a link, the
    resolved root's ``../../..`` is another directory, and the real
    ``<prefix>/bin/vllm`` would go unread."""
    out: dict[str, ScriptFile] = {}
    for row in rows:
        rel = posixpath.normpath(posixpath.join("lib/python/site-packages", logical_path(inv, row.path)))
        name = posixpath.basename(rel)
        if posixpath.dirname(rel) == "bin" and name not in ("", ".", ".."):
            full = os.path.join(prefix, "bin", name)
            out.setdefault(full, ScriptFile(full, f"../../../bin/{name}"))
    return [out[k] for k in sorted(out)]


def check_script_startup(inv: DirInventory, interp: Interpreter, rows: list[RecordEntry],
                         report: ShadowReport) -> None:
    """Put the audited distribution's console scripts (``script_files``) in the
    startup set: ``bin/vllm`` is how a deployment starts the package, and RECORD
    vouches for it only as it does for the rest (a re-hashed row passes), so
    only the pin anchors it. Each is read in the prefix as the other startup
    files are (``_script_token``); its ``#!`` header, which names the host's
    path, in canonical form (``treedigest.script_token``), so identical venvs
    share a digest. One not there is ``missing:``; one whose directory leads out
    of the prefix is not read (None: the digest is not computable). Set after the
    modules beside the scripts (``check_script_dirs``), so a listed script that
    is also a module (``bin/rst2html.py``) has this token, the same in every venv."""
    given = interp.prefix
    spellings = {os.fsencode(p) for p in (given, realpath(given))}
    aliases = _interpreter_aliases(given)
    for s in script_files(inv, rows, given):
        report.startup[s.shown] = _script_token(s, realpath(given), spellings, aliases)


_INTERPRETER_NAMES = re.compile(r"python(3(\.\d+)?)?")
"""``python``, ``python3``, ``python3.11``: the names a venv's ``bin`` gives its interpreter."""


def _interpreter_aliases(prefix: str) -> dict[bytes, bytes]:
    """``{b"/bin/python3.11": b"/bin/python", …}`` for each of the venv's interpreter
    names that resolves to the same file as ``bin/python``: pip writes the name it
    was run as (``python3 -m pip``), and these are one interpreter, so a script
    must hash the same whichever wrote it. A name that is another file keeps its
    own spelling (a script pointed at it changes the digest)."""
    bindir = os.path.join(prefix, "bin")
    try:
        main = os.stat(os.path.join(bindir, "python"))
        names = os.listdir(bindir)
    except OSError:
        return {}
    out: dict[bytes, bytes] = {}
    for name in names:
        if name == "python" or not _INTERPRETER_NAMES.fullmatch(name):
            continue
        try:
            st = os.stat(os.path.join(bindir, name))
        except OSError:
            continue
        if (st.st_dev, st.st_ino) == (main.st_dev, main.st_ino) and stat.S_ISREG(st.st_mode):
            out[os.fsencode(f"/bin/{name}")] = b"/bin/python"
    return out


def _script_token(script: ScriptFile, prefix: str, spellings: set[bytes],
                  aliases: dict[bytes, bytes]) -> str | None:
    """One console script's token (``check_script_startup``): its directory
    resolved and required to be in the resolved ``prefix``; the script itself
    examined there without following a link (``DirInventory.entry``: a link is
    ``symlink:<target>``, a FIFO or device its type, never opened), a regular
    file read through the safe opener, held to the identity listed and to that
    directory, read at most to ``SCRIPT_MODULE_MAX`` (``safeio.read_regular``): one
    over it, at the open or grown while read, has its size as its token (a pinned
    digest then fails at once, where hashing it could hold the run).
    None when it cannot be read."""
    bindir = realpath(os.path.dirname(script.path))
    if not is_within(bindir, prefix):
        return None
    binv = DirInventory(bindir)
    e = binv.entry(os.path.basename(script.path))
    if e is None:
        return MISSING
    if e.kind != FILE:
        return token_for(e, None)
    try:
        data = read_regular(e.ref, SCRIPT_MODULE_MAX, within=binv.root, same=e.ident)
    except TooLarge as exc:  # over the cap at open, or grown past it while read
        return f"too-large:{exc.size}"
    except (OSError, NotRegular, Elsewhere, ValueError):
        return None
    return script_token([data], spellings, aliases)


def _record_rows(inv: Inventory, primary: str) -> list[RecordEntry]:
    """The audited distribution's RECORD rows ([] when it cannot be parsed), for a
    caller that has not parsed it already (``RecordRun`` has)."""
    try:
        return parse_record(read_record(inv, f"{primary}/RECORD"), f"{primary}/RECORD")
    except RecordError:
        return []


def check_script_dirs(scope: Scope, rows: list[RecordEntry], prefix: str, report: ShadowReport) -> None:
    """What a console script of the audited distribution (``rows``: its RECORD) imports
    from its own directory.

    Python runs ``bin/vllm`` with that directory first on ``sys.path``, ahead of the
    standard library and site-packages, so a ``bin/vllm.py`` (or ``vllm/``, or an
    extension module of that name) is the ``vllm`` its ``from vllm… import main``
    runs: a failure, as another copy ahead of the audited one. Any other module
    there (``bin/torch.py``) is imported in place of the installed one by whatever
    the script imports: it fails unless an installed distribution's RECORD lists
    it with its hash (``docutils``' old ``rst2html.py``), and then its bytecode
    there is judged too. A ``bin`` is not meant to hold modules; virtualenv's
    ``activate_this.py`` (no RECORD lists it; nothing imports it by name) is named
    in a note. Every module found there is in the startup set
    (``_script_module_startup``): a RECORD vouches as well when forged, the pin does
    not. The directories are kept (``ShadowReport.script_dirs``): ``importlib.metadata``
    finds distributions there too."""
    inv, package, version = scope.inv, scope.package, scope.version
    if not isinstance(inv, DirInventory):
        return
    for d in script_dirs(inv, rows, prefix):
        report.looked_in.append(d.path)
        report.script_dirs.append(d.path)
        copy = _copy_in(d.path, package, version)
        if copy is not None:
            report.findings.append(Shadow(
                copy, f"another '{package}' at {copy} is ahead of the audited copy on sys.path when the "
                f"console script {d.script} runs (Python puts the script's directory first): Python "
                "imports that one", f"shadow:{copy}"))
        found: dict[str, list[str]] = {}
        for name in sorted(_os_names(d.path, (package,))):
            if (module := _module_name(d.path, name, version)) is not None:
                found.setdefault(module, []).append(name)
        binv = DirInventory(d.path)
        children = dict(binv.children(""))
        for module, names in sorted(found.items()):
            startup = _script_module_startup(scope, d, binv, children, module, report)
            if module == package:
                continue  # failed above, as another copy
            vouched = [_judge_script_module(inv, d, name, module, report) for name in names]
            if startup is not None and all(vouched):
                _script_bytecode(scope, d, module, startup, report)


def _script_module_startup(scope: Scope, d: ScriptDir, binv: DirInventory, children: dict[str, str],
                           module: str, report: ShadowReport) -> tuple[list[Entry], dict[str, Digest]] | None:
    """Put every file of ``module`` in a console script's directory (``binv``, its
    entries ``children``) in the startup set, named from the site directory
    (``../../../bin/torch.py``), bytecode caches left out as everywhere
    (``ShadowReport.startup``): its module files and package directory (a link to a
    directory outside it by the link). Returns its entries and digests (bytecode
    kept) for the bytecode check; None when its directory leads outside."""
    try:
        files = module_entries(binv, module, children, scope.version)
    except TargetError:
        e = binv.entry(module)
        report.startup[f"{d.shown}/{module}"] = token_for(e, None) if e is not None else None
        return None
    digests = hash_entries(files, keep=keep_for_bytecode)
    for e in files:
        if not is_bytecode(e.path):
            report.startup[f"{d.shown}/{e.path}"] = token_for(e, digests.get(e.path))
    return files, digests


def _script_bytecode(scope: Scope, d: ScriptDir, module: str, hashed: tuple[list[Entry], dict[str, Digest]],
                     report: ShadowReport) -> None:
    """The bytecode of a vouched module beside a console script (``bin/__pycache__``),
    which Python loads in place of its source: judged as the package's is."""
    files, digests = hashed
    rep = check_bytecode(files, digests, cache=scope.cache or default_cache(), target_release=scope.release)
    for f in rep.findings:
        path = os.path.join(d.path, f.path)
        other = "other:" if f.status == "skip" else ""
        report.findings.append(Shadow(
            path, f"{path} is the bytecode of '{module}', imported in place of any installed one when the "
            f"console script {d.script} runs: {f.message}", f"shadow:{other}{path}", f.status))


def _module_name(directory: str, name: str, version: tuple[int, int] | None) -> str | None:
    """The top-level module an entry of ``directory`` is importable as (for Python
    ``version``), or None: a directory named as an identifier (a package, or a
    namespace portion), a module file of an identifier (``imports_as``)."""
    if name == "__pycache__":
        return None
    if os.path.isdir(os.path.join(directory, name)):
        return name if name.isidentifier() else None
    return _module_name_of(name, version)


def _judge_script_module(inv: DirInventory, d: ScriptDir, name: str, module: str,
                         report: ShadowReport) -> bool:
    """One module entry beside a console script: vouched for by a RECORD listing it
    with its hash (a note; True), else a failure."""
    path = os.path.join(d.path, name)
    head = (f"{path} is importable as '{module}' when the console script {d.script} runs (Python puts "
            f"the script's directory first on sys.path): an 'import {module}' there, by the package or "
            "anything it imports, runs this file instead of any installed one")
    if name == "activate_this.py":
        report.notes.append(f"{path}: virtualenv's activate_this.py (no RECORD lists it; nothing imports "
                            "it by name), beside the console script; not verified")
        return True
    if os.path.isdir(path):  # Python follows a link to one
        report.findings.append(Shadow(path, f"{head}; it is a package directory, which no installed "
                                      "distribution's RECORD installs there", f"shadow:{path}"))
        return False
    try:
        data = read_regular(path, SCRIPT_MODULE_MAX)
    except (OSError, NotRegular, TooLarge) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else "not a regular file or too large"
        report.findings.append(Shadow(path, f"{head}; it cannot be read ({why}), so nothing vouches for it",
                                      f"shadow:{path}"))
        return False
    owners = owners_at(inv, path, hashlib.sha256(data).digest())
    if owners.good:
        report.notes.append(f"{path}, importable as '{module}' beside the console script {d.script}, is "
                            f"installed by {owners.good[0]} (matches its RECORD)")
        return True
    why = (f"it differs from the {owners.bad[0]} RECORD" if owners.bad
           else "no installed distribution's RECORD lists it")
    report.findings.append(Shadow(path, f"{head}; {why}", f"shadow:{path}"))
    return False


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
    scope = Scope(inv, package, _package_dir(inv, package), cache=cache, site_dir=site,
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
