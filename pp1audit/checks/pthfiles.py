"""``.pth`` files: the lines ``site`` executes at every start, and the paths it adds.

A ``.pth`` in site-packages is the classic persistence and import-hijack vector:
``site`` executes every line starting with ``import`` at *every* interpreter
start, and adds the other lines to ``sys.path``, so this module judges both
(``check_pth``), for the target root and for a base site-packages a venv lets in.

* Lines are read as the target interpreter's version reads them (3.13 strips a
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
  so no two different files read the same. What a line imports is
  ``pp1audit.checks.pthimports`` (pure parsing of text); whether a RECORD vouches
  is ``pp1audit.checks.vouch``.
* Path lines, resolved as ``site`` does (joined to the site directory and
  normalised; then symlinks resolved): one leading into the audited package
  directory (its modules become top-level ones), or to a directory or zip
  holding another copy of the package or a ``sitecustomize`` /
  ``usercustomize`` (``site`` imports it after the ``.pth`` files), fails.
  Outside the target root only names and types are looked at (``lstat``), and
  a zip only through its central directory (``checks.startupzip``). A path line
  to nothing (yet) outside the target root fails: ``site`` adds it at the first
  start after someone creates it (``_missing_path``); so does one to a directory
  or zip outside it that someone other than the site directory's owner (or root)
  can write, or replace through a directory above it (``_others_can_write``:
  ``/tmp``, sticky bit or not).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import posixpath
import stat

from pp1audit.checks.distrecord import (
    read_small,
)
from pp1audit.checks.importable import CUSTOMIZE, copy_in, os_names
from pp1audit.checks.pthimports import CUT, pth_imports
from pp1audit.checks.sitemodel import (
    imports_as,
    pth_lines,
    pth_processed,
)
from pp1audit.checks.startupzip import zip_on_path
from pp1audit.checks.vouch import (
    Scope,
    Shadow,
    ShadowReport,
    entry_imports_as,
    judge_hook,
    owners_of,
    startup_entry,
    verify_imports,
)
from pp1audit.sources.inventory import DIR, FILE, DirInventory, Inventory
from pp1audit.sources.safeio import (
    is_within,
    realpath,
)
from pp1audit.text.safe import cut


def check_pth(inv: Inventory, package: str, report: ShadowReport, scope: Scope | None = None) -> None:
    """``.pth`` files at the root: executing lines, paths to other copies or startup hooks."""
    scope = scope or Scope(inv, package, package_dir(inv, package))
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


def package_dir(inv: Inventory, package: str) -> str | None:
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
        copy = copy_in(real, scope.package, scope.version)
        if copy is not None:
            report.findings.append(Shadow(pth, f"{head}, and another copy of '{scope.package}' is "
                                          f"there ({copy})", cid))
        _hooks_on_path(scope, inv.root, pth, n, head, real, report)
    elif stat.S_ISREG(st.st_mode):  # zipimport takes any regular file; anything else, nothing
        zip_on_path(scope.package, pth, n, head, real, report)


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
    for n in sorted(os_names(real, CUSTOMIZE)):
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
