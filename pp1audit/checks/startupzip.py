"""Zip files on ``sys.path``: the zipped standard library and zips ``.pth`` lines add.

Python imports from a zip on ``sys.path`` as from a directory, so another copy of
the package or a ``sitecustomize`` / ``usercustomize`` in one runs ahead of, or
besides, the audited files; this module looks into such zips, by their central
directory only (nothing extracted, nothing imported), and judges the standard
library directories ahead of the target too. The standard library directories
of the interpreter this site-packages belongs to (``lib/pythonX.Y`` and
``lib-dynload``; for a venv, those of its base interpreter, from ``pyvenv.cfg``:
where Python looks and how it reads the file is ``pp1audit.checks.sitemodel``, from
the path given, symlinks kept; a layout it does not recognise is named in the
summary) and the zipped standard library before them (``lib/python311.zip``) are
searched for another importable ``<package>``. A ``sitecustomize`` /
``usercustomize`` in those standard-library places runs at every start too; it is
named in the summary, not failed, because Debian and Ubuntu ship one
(``/usr/lib/python3.X/sitecustomize.py``). The summary names the standard library
used and where its ``home`` came from.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass

from pp1audit.checks.importable import CUSTOMIZE, copy_in
from pp1audit.checks.sitemodel import (
    Interpreter,
    imports_as,
    interpreter,
    stdlib_dirs,
    stdlib_zip,
)
from pp1audit.checks.vouch import (
    Shadow,
    ShadowReport,
)
from pp1audit.sources.safeio import (
    NotRegular,
    open_regular,
    realpath,
)
from pp1audit.sources.wheel import NotAFile, NotAZip, Zip, ZipError

STDLIB_ZIP_MAX = 16 << 20
"""Largest ``pythonXY.zip`` looked into (its central directory only). A zipped
standard library is a few MB. Measured on CPython 3.11.7: its whole standard
library, test suite included (1,790 modules), zips to 7.2 MB as source and
15.4 MiB as bytecode; without the tests, tkinter and idlelib (about what the
Windows embeddable distribution ships) to 5.1 MB of bytecode. 16 MiB holds all
of those; a larger file is named in a note, not read. At the cap a hostile zip
(155,000 members) costs about 0.9 s (``zipfile`` makes a ``ZipInfo`` per member);
one of 300,000 members in 28 MB cost 2.3 s and 100 MB."""


PATH_ZIP_MAX = 64 << 20
"""Largest zip on a ``.pth`` path line looked into (its central directory only).
An egg is rarely over a few MB; a larger file is a failure (what it holds is
unknown), not read: ``Zip`` (``zipfile``) holds the whole central directory, a
``ZipInfo`` per member: a hostile one of 300,000 members in 28 MB cost 2.3 s and 100 MB."""


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
        copy = copy_in(d, package, interp.version)
        if copy is not None:
            report.findings.append(Shadow(
                copy, f"another '{package}' at {copy} is ahead of the audited copy on sys.path "
                f"(standard library directory): Python imports that one", f"shadow:{copy}"))
        for hook in CUSTOMIZE:
            if (found := copy_in(d, hook, interp.version)) is not None:
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


def zip_on_path(package: str, pth: str, n: int, head: str, real: str, report: ShadowReport) -> None:
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
