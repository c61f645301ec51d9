"""What Python's startup does with a site-packages directory, modelled on CPython's source.

The shadowing check (``pp1audit.checks.shadowing``) judges what runs; this module says
where Python looks and how it reads what it finds there, as CPython 3.11 to
3.13 do (``Modules/getpath.py`` and ``getpath.c``, ``Lib/site.py``), each rule
checked with the real interpreter:

* The site directory is the path ``site`` builds from ``sys.prefix``
  (``<prefix>/lib/pythonX.Y/site-packages``) and makes absolute with
  ``os.path.abspath``: ``..`` collapsed as text, symbolic links kept. A relative
  ``.pth`` path line is joined to *that* path, so a symlinked site-packages is
  judged by the path given, not by where it leads (``site_dir_as_given``).
* ``pyvenv.cfg`` is read twice, differently. ``getpath`` (the base interpreter,
  from ``home``) reads ``<prefix>/pyvenv.cfg``, else ``<prefix>/bin/pyvenv.cfg``,
  at most 32 KiB (a larger file stops Python before it starts), decoded as
  UTF-8 up to the first NUL, lines split at ``\\n`` only, and takes the first
  ``home``, from which it searches upward for the standard library
  (``home_stdlib``). The binary that runs (and compiles) is the venv's
  ``bin/python``, links resolved; its release is known when that is the
  interpreter running the audit (``venv_release``). The ``version`` line Python
  never reads: it is believed only when nothing better says which release runs
  (``Interpreter.release``). A symbolic link is not opened (``CfgFile.link``). ``site``
  (the system site-packages) reads ``bin/pyvenv.cfg`` first, as a text file:
  lines end at ``\\n``, ``\\r`` or ``\\r\\n`` only, never at a form feed
  or U+2028 as ``str.splitlines`` would have them; it takes the last
  ``include-system-site-packages`` and lets the system site-packages in unless
  that says anything but ``true``. Both strip keys and values with
  ``str.strip`` and compare keys lower-cased.
* Ahead of the site directory on ``sys.path``: the zipped standard library
  (``lib/python311.zip``, ``stdlib_zip``), then ``lib/pythonX.Y`` and its
  ``lib-dynload`` (``stdlib_dirs``). After it, for a venv that lets them in,
  the base interpreter's site directories, Debian's ``dist-packages`` among
  them (``base_site_dirs``).
* ``site.addpackage`` reads a ``.pth`` as the interpreter's version does
  (``pth_lines``, ``pth_processed``): 3.13 changed the decoding, the line
  splitting and which names it opens.
* A top-level module is imported from the file names the target's version
  imports (``imports_as``): the extension modules of *its* ABI tag
  (``.cpython-312-x86_64-linux-gnu.so`` for 3.12), never those of the
  interpreter running the audit.

Where the audit judges what it finds there, it is ``pp1audit.checks.shadowing``.
"""

from __future__ import annotations

import functools
import os
import re
import stat
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from pp1audit.sources.safeio import NotRegular, TooLarge, read_regular, realpath

CFG_MAX = 1 << 20
"""Largest ``pyvenv.cfg`` read (venv writes a few hundred bytes)."""

GETPATH_CFG_MAX = 32 * 1024
"""``getpath`` refuses a ``pyvenv.cfg`` of this many bytes or more ("cannot read
file larger than 32KB during initialization"): Python does not start."""

SITE_NAMES = ("site-packages", "dist-packages")
"""Names of a site directory (``dist-packages`` is Debian's)."""

_LIB_NAME = re.compile(r"python(\d+)\.(\d+)(t?)")
"""``lib/pythonX.Y`` (``t``: a free-threaded build)."""


def site_dir_as_given(location: str, real_root: str, *, package_given: bool) -> str:
    """The site directory as ``site`` spells it, from the path the audit was given.

    ``os.path.abspath`` of the target (its parent when the package directory was
    given), as ``site.makepath`` makes its paths: ``..`` collapsed as text and
    symbolic links kept. When that path does not lead to ``real_root`` (a ``..``
    after a symlink, which the OS resolves differently), ``real_root`` itself.
    """
    path = os.path.abspath(location)
    if package_given:
        path = os.path.dirname(path)
    return path if realpath(path) == real_root else real_root


class Release(NamedTuple):
    """An interpreter release and where it was read (``check_bytecode``'s ``target_release``)."""

    number: str
    """``X.Y.Z``."""
    origin: str
    """``version in <prefix>/pyvenv.cfg``."""


@dataclass(frozen=True, slots=True)
class Interpreter:
    """What the interpreter of a ``<prefix>/lib/pythonX.Y/site-packages`` reads at startup."""

    stdlib: str
    """Its base standard library directory (not checked to exist)."""
    origin: str
    """Where that came from, for the summary."""
    version: tuple[int, int] | None = None
    """``X.Y`` from ``lib/pythonX.Y`` (else ``pyvenv.cfg``'s ``version``)."""
    system_site: bool = False
    """A venv that lets the base interpreter's site-packages in."""
    system_site_origin: str = ""
    notes: tuple[str, ...] = ()
    """What the summary must say about the configuration (Python would not start…)."""
    release: Release | None = None
    """The ``X.Y.Z`` that runs, as far as it is known without running anything:
    patch releases share a bytecode cache tag but not always their compiler. The
    running audit's when the venv's binary (or ``home``) is recognisably it
    (``venv_release``), else the one ``pyvenv.cfg`` states (``version``, or
    virtualenv's ``version_info``), a line Python never reads. None when neither says."""
    misstated: Release | None = None
    """What ``pyvenv.cfg`` states when it is not the release known otherwise: the
    line is stale (a base upgraded in place) or untrue, and plays no part: the
    shadowing check names it in a note."""
    cfg: str = ""
    """The ``pyvenv.cfg`` ``getpath`` reads (its ``home``, and the release it states); '' for none."""
    configs: tuple[CfgFile, ...] = ()
    """The ``pyvenv.cfg`` files present (``<prefix>/pyvenv.cfg``, ``<prefix>/bin/pyvenv.cfg``):
    they decide what starts (``home``, ``include-system-site-packages``), so they are
    in the startup set."""
    prefix: str = ""
    """``<prefix>``, as the site directory spells it: its ``bin`` holds the venv's interpreter."""


@dataclass(frozen=True, slots=True)
class CfgFile:
    """One candidate ``pyvenv.cfg``, read once for both readers (``getpath``, ``site``)."""

    path: str
    data: bytes | None
    """Its bytes; None when there is no regular file there or it is too large."""
    too_large: bool = False
    """Over ``CFG_MAX`` bytes: not read."""
    present: bool = False
    """Something is there (read or not): Python opens it."""
    link: str | None = None
    """The target of a symbolic link there (dangling or not): never opened. Python
    reads what it names, which can change (or be created) without the venv
    changing, so the shadowing check fails it, and the startup digest holds the
    link, not what it leads to."""


def _cfg(path: str) -> CfgFile:
    """A ``pyvenv.cfg``'s bytes. The target is untrusted: read through the safe
    opener (never blocking, a FIFO refused, bounded by ``CFG_MAX``); a symbolic
    link is not followed (``CfgFile.link``)."""
    try:
        if stat.S_ISLNK(os.lstat(path).st_mode):
            return CfgFile(path, None, present=True, link=os.readlink(path))
    except (OSError, ValueError):
        pass
    try:
        return CfgFile(path, read_regular(path, CFG_MAX), present=True)
    except TooLarge:
        return CfgFile(path, None, too_large=True, present=True)
    except (FileNotFoundError, NotADirectoryError):
        return CfgFile(path, None)
    except (OSError, NotRegular, ValueError):
        return CfgFile(path, None, present=os.path.lexists(path))


def _pairs(lines: list[str]) -> list[tuple[str, str]]:
    """``key = value`` pairs as both readers split them: at the first ``=``, key
    stripped and lower-cased, value stripped (``str.strip``)."""
    out = []
    for line in lines:
        key, sep, value = line.partition("=")
        if sep:
            out.append((key.strip().lower(), value.strip()))
    return out


def getpath_pairs(data: bytes) -> list[tuple[str, str]]:
    """``pyvenv.cfg`` as ``getpath`` reads it (``getpath.c`` ``readlines``): UTF-8
    (surrogateescape) up to the first NUL, lines split at ``\\n`` only."""
    text = data.decode("utf-8", "surrogateescape").split("\0", 1)[0]
    return _pairs(text.split("\n"))


def site_pairs(data: bytes) -> list[tuple[str, str]]:
    """``pyvenv.cfg`` as ``site.venv`` reads it: a UTF-8 text file iterated by line,
    so lines end at ``\\n``, ``\\r`` and ``\\r\\n`` only (a form feed, ``\\x1c`` or
    U+2028 is inside a line, where ``str.splitlines`` would end it)."""
    return _pairs(universal_lines(data.decode("utf-8", "replace")))


def universal_lines(text: str) -> list[str]:
    """Lines as a text file in universal-newline mode yields them (without their ends)."""
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def _version(name: str, pairs: list[tuple[str, str]]) -> tuple[int, int] | None:
    """``X.Y`` from a ``pythonX.Y`` directory name, else from ``version = X.Y.Z``."""
    if (m := _LIB_NAME.fullmatch(name)) is not None:
        return int(m[1]), int(m[2])
    value = next((v for k, v in pairs if k == "version"), "")
    if (m := re.match(r"(\d+)\.(\d+)", value)) is not None:
        return int(m[1]), int(m[2])
    return None


def interpreter(site_dir: str) -> Interpreter | None:
    """The interpreter of a site directory laid out as ``<prefix>/lib/pythonX.Y/site-packages``,
    None for any other layout.

    ``<prefix>/lib/pythonX.Y`` itself, unless the prefix is a venv: then the
    base interpreter's, found from the directory ``home`` names as ``getpath``
    finds it (``home_stdlib``), and the system site-packages as ``site`` reads the
    file (see the module docstring). The release that runs: ``venv_release``.
    """
    parent = os.path.dirname(site_dir)
    if os.path.basename(site_dir) not in SITE_NAMES or not os.path.basename(parent).startswith("python"):
        return None
    prefix = os.path.dirname(os.path.dirname(parent))
    # Both candidates read once; getpath and site each take them in their own order.
    top, in_bin = _cfg(os.path.join(prefix, "pyvenv.cfg")), _cfg(os.path.join(prefix, "bin", "pyvenv.cfg"))
    base = _getpath_base((top, in_bin), os.path.basename(parent))
    stdlib, origin = base.stdlib or parent, base.origin or f"the prefix of {site_dir}"
    system_site, system_origin = _site_system_site((in_bin, top))
    version = _version(os.path.basename(parent), base.pairs)
    stated = _release(base)
    actual = venv_release(prefix, base.home, stdlib, version)
    misstated = stated if actual is not None and stated is not None and stated.number != actual.number \
        else None
    return Interpreter(stdlib, origin, version, system_site, system_origin, base.notes,
                       release=actual or stated, misstated=misstated, cfg=base.cfg,
                       configs=tuple(c for c in (top, in_bin) if c.present), prefix=prefix)


BINARY_MAX = 256 << 20
"""Largest interpreter binary compared byte for byte with the one running the audit
(a ``--copies`` venv's ``bin/python``): a shared build's is some 20 kB, a static one
a few tens of MB."""


def venv_release(prefix: str, home: str, stdlib: str, version: tuple[int, int] | None) -> Release | None:
    """The release that runs a ``<prefix>/lib/pythonX.Y/site-packages``, when it can be
    known without running anything: the running audit's, when the binary
    ``<prefix>/bin/python`` (``python3``, ``pythonX.Y``), which is what runs and
    compiles, is the interpreter running the audit (a link to it, a hard link, an
    identical copy: ``running_binary``), or one in the directory ``home`` names is,
    or the standard library found from ``home`` (``stdlib``) is its. None
    otherwise, and for a venv of another ``X.Y``.

    ``pyvenv.cfg``'s ``version`` is no evidence: Python never reads it, so an edit
    to it costs nothing and would pass tampered bytecode off as another patch
    release's compile. A binary that is not recognisably this one (another
    build, or this one altered) leaves the release unknown: the stated one is then
    believed, which can only make differing bytecode a ``skip``, never a pass."""
    here = sys.version_info[:2]
    if version is not None and version != here:
        return None
    number = "{}.{}.{}".format(*sys.version_info[:3])
    for directory in (os.path.join(prefix, "bin"), home):
        if directory and (exe := running_binary(directory)) is not None:
            return Release(number, f"{exe}, the interpreter running pp1audit")
    mine = os.path.dirname(os.__file__)
    if home and os.path.isdir(stdlib) and realpath(stdlib) == realpath(mine):
        return Release(number, f"{stdlib}, the standard library of the Python running pp1audit")
    return None


def interpreter_names(version: tuple[int, int] | None = None) -> tuple[str, ...]:
    """The names a venv's ``bin`` gives its interpreter (``pythonX.Y``, ``pythonX``, ``python``)."""
    major, minor = version or sys.version_info[:2]
    return f"python{major}.{minor}", f"python{major}", "python"


def running_binary(directory: str) -> str | None:
    """The first interpreter of ``directory`` (``interpreter_names``) that is the
    binary running the audit (``sys._base_executable`` / ``sys.executable``, links
    resolved): the same file, or a regular file of the same bytes (a ``--copies``
    venv). Read through the safe opener (a FIFO never opened), at most ``BINARY_MAX``."""
    for name in interpreter_names():
        exe = os.path.join(directory, name)
        try:
            st = os.stat(exe)
        except (OSError, ValueError):
            continue
        if not stat.S_ISREG(st.st_mode):
            continue
        if realpath(exe) in _running() or _same_bytes(exe, st.st_size):
            return exe
    return None


@functools.lru_cache(maxsize=1)
def _running() -> frozenset[str]:
    """The binaries running the audit, links resolved."""
    return frozenset(realpath(p) for p in (getattr(sys, "_base_executable", ""), sys.executable) if p)


@functools.lru_cache(maxsize=1)
def _running_bytes() -> tuple[int, bytes] | None:
    """The running binary's size and bytes (read once), None when it cannot be read."""
    try:
        data = read_regular(sorted(_running())[0], BINARY_MAX, follow=True)
    except (OSError, NotRegular, TooLarge, IndexError):
        return None
    return len(data), data


def _same_bytes(exe: str, size: int) -> bool:
    """Whether ``exe`` (``size`` bytes) holds the running binary's bytes."""
    mine = _running_bytes()
    if mine is None or mine[0] != size:
        return False
    try:
        return read_regular(exe, BINARY_MAX, follow=True) == mine[1]
    except (OSError, NotRegular, TooLarge):
        return False


def _release(base: _Base) -> Release | None:
    """``X.Y.Z`` and ``version in <cfg>`` from ``pyvenv.cfg``: ``version = 3.11.2`` (venv)
    or ``version_info = 3.11.2.final.0`` (virtualenv); None when neither says."""
    for key in ("version", "version_info"):
        value = next((v for k, v in base.pairs if k == key), "")
        if (m := re.match(r"(\d+)\.(\d+)\.(\d+)", value)) is not None:
            return Release(f"{m[1]}.{m[2]}.{m[3]}", f"{key} in {base.cfg}")
    return None


@dataclass(frozen=True, slots=True)
class _Base:
    """What ``getpath`` takes from ``pyvenv.cfg``: nothing (no venv), or its pairs and ``home``."""

    stdlib: str | None = None
    origin: str | None = None
    pairs: list[tuple[str, str]] = field(default_factory=list)
    notes: tuple[str, ...] = ()
    cfg: str = ""
    """The ``pyvenv.cfg`` the pairs come from."""
    home: str = ""
    """Its ``home``, as written."""


def _getpath_base(cfgs: tuple[CfgFile, CfgFile], lib_name: str) -> _Base:
    """The base standard library ``getpath`` derives from the first ``home`` of
    ``cfgs``: ``<prefix>/pyvenv.cfg``, else ``<prefix>/bin/pyvenv.cfg``
    (``home_stdlib``). A symbolic link there is not opened: what it names, hence
    the base, is unknown (the shadowing check fails the link)."""
    for c in cfgs:
        cfg, data = c.path, c.data
        if c.link is not None:
            return _Base(cfg=cfg, notes=(f"{cfg} is a symbolic link (to {c.link}), not opened: the base "
                                         "interpreter it names is not known here",))
        if c.too_large or (data is not None and len(data) >= GETPATH_CFG_MAX):
            return _Base(notes=(f"{cfg} is {GETPATH_CFG_MAX >> 10} KiB or more: Python refuses to "
                                "start with such a pyvenv.cfg (nothing runs)",))
        if data is None:
            continue
        pairs = getpath_pairs(data)
        home = next((v for k, v in pairs if k == "home"), None)
        if not home:
            return _Base(pairs=pairs, cfg=cfg)
        stdlib, how = home_stdlib(home, lib_name)
        return _Base(stdlib, f"home = {home} in {cfg}{how}", pairs, cfg=cfg, home=home)
    return _Base()


def home_stdlib(home: str, lib_name: str) -> tuple[str, str]:
    """The standard library ``getpath`` finds from a venv's ``home``, and how (for
    the summary, '' for the usual case).

    ``getpath`` searches from ``home`` upward for the prefix: the first directory
    holding the zipped standard library (``lib/python311.zip``) or
    ``lib/pythonX.Y/os.py`` (``.pyc``), and takes its ``lib/pythonX.Y``. So ``home =
    /usr/bin`` is ``/usr/lib/python3.11``, and ``home = /root/.pyenv/versions/3.11.7``
    (no ``bin``) that prefix's own. Landmarks only, as ``getpath``: a
    ``lib/pythonX.Y`` without one, even at ``home``'s parent where venv's own layout
    puts it, is passed over (taking it instead let a copy of the package in the
    standard library Python really uses, further up, go unseen). When nothing is
    found Python falls back to the prefix compiled into its binary, not known here:
    ``home``'s parent is taken, and the summary says so."""
    zipped = stdlib_zip(lib_name)
    marks = [os.path.join("lib", lib_name, "os.py"), os.path.join("lib", lib_name, "os.pyc")]
    if zipped:
        marks.insert(0, os.path.join("lib", zipped))
    start = os.path.normpath(home)
    usual = os.path.dirname(start)
    d = start
    while True:
        if any(os.path.isfile(os.path.join(d, mark)) for mark in marks):
            return os.path.join(d, "lib", lib_name), ""
        up = os.path.dirname(d)
        if up == d:
            return (os.path.join(usual, "lib", lib_name),
                    f"; no standard library found from it upward, as getpath looks: {lib_name} beside it "
                    "taken")
        d = up


def _site_system_site(cfgs: tuple[CfgFile, CfgFile]) -> tuple[bool, str]:
    """Whether ``site`` lets the system site-packages in, and why: the last
    ``include-system-site-packages`` of ``cfgs``: ``<prefix>/bin/pyvenv.cfg``, else
    ``<prefix>/pyvenv.cfg``; absent means in, anything but ``true`` out. No
    ``pyvenv.cfg``: no venv (its own site-packages are the system's)."""
    for c in cfgs:
        cfg, data = c.path, c.data
        if c.link is not None:
            return True, (f"{cfg} is a symbolic link, not opened, so the system site-packages are taken "
                          "as let in")
        if c.too_large:
            return True, (f"{cfg} is over the {CFG_MAX >> 20} MiB read; site reads it all, so the "
                          "system site-packages are taken as let in")
        if data is None:
            continue
        values = [v.lower() for k, v in site_pairs(data) if k == "include-system-site-packages"]
        if not values:
            return True, f"{cfg} does not set include-system-site-packages, which site reads as true"
        return values[-1] == "true", f"include-system-site-packages = {values[-1]} in {cfg}"
    return False, ""


MODERN_PTH = (3, 13)
"""From 3.13, ``site.addpackage`` reads a ``.pth`` as bytes decoded UTF-8 with a BOM
stripped (the locale's encoding when that fails) and splits it with
``str.splitlines``; ``addsitedir`` skips names starting with ``.``. Before, it
iterated a text file in the locale's encoding (UTF-8, BOM kept) by universal
newlines."""


def pth_processed(name: str, version: tuple[int, int] | None) -> bool:
    """Whether ``site`` opens a ``.pth`` of this name: from 3.13 not one whose name
    starts with ``.``. An unknown version opens it (the audit looks at it)."""
    return not (name.startswith(".") and version is not None and version >= MODERN_PTH)


def pth_lines(data: bytes, version: tuple[int, int] | None) -> list[tuple[int, str]]:
    """A ``.pth``'s lines as ``site`` of Python ``version`` reads them, numbered from 1.

    3.11 and 3.12: UTF-8 (a BOM is a character of the first line, which then
    starts no ``import``), lines ended by ``\\n``, ``\\r`` and ``\\r\\n`` only.
    3.13 on: a BOM stripped and ``str.splitlines``, which also ends a line at
    ``\\x0c``, ``\\x1c``-``\\x1e``, ``\\x85`` and U+2028/9, so ``# c\\x0cimport x``
    runs ``import x``. Bytes that are not UTF-8 are read as ``site`` falls back to
    the locale's encoding: both UTF-8 with replacement characters and Latin-1 (a
    single-byte locale, where ``\\x85`` ends a line), the lines of either. An
    unknown version (a wheel; a layout not recognised) gets the lines of both
    readings, so nothing either would run is missed.
    """
    if version is None:
        return _merged(_legacy_pth(data), _modern_pth(data))
    return _modern_pth(data) if version >= MODERN_PTH else _legacy_pth(data)


MODULE_SUFFIXES = (".py", ".pyc", ".abi3.so", ".so")
"""Module file suffixes every CPython 3 on POSIX imports: source, sourceless
bytecode, the stable-ABI and the untagged extension module."""

_TAGGED_EXTENSION = re.compile(r"\.cpython-3(\d+)[a-z]*(?:-[^./]+)?\.so")
"""An extension module tagged for one version: ``.cpython-3XY<abiflags>-<multiarch>.so``
(Linux, macOS ``-darwin``), ``.cpython-3XY.so`` (FreeBSD, no multiarch). ABI flags
(``t`` free-threaded, ``d`` debug) are accepted for the version: the safe side,
as whether the target is such a build is not known."""

_WINDOWS_ONLY = re.compile(r"(?:\.cp3\d+-[^./]+)?\.pyd|\.pyw")
"""A Windows extension module (``.cp312-win_amd64.pyd``, ``.pyd``) or windowed
source (``.pyw``): only when the version, hence a POSIX layout, is unknown (a wheel)."""


def imports_as(name: str, module: str, version: tuple[int, int] | None) -> bool:
    """Whether a directory entry ``name`` imports as top-level ``module`` for the
    target's Python ``version`` (source, bytecode, extension module).

    The target's own suffixes, never the running interpreter's
    (``importlib.machinery.EXTENSION_SUFFIXES``): an audit run by 3.11 of a 3.12
    site-packages must see ``sitecustomize.cpython-312-x86_64-linux-gnu.so``,
    which 3.12 imports at every start, and not a ``.cpython-311`` one, which it
    never imports. An unknown version (a wheel, a layout not recognised) takes
    every version's forms: any file named like a startup hook counts.
    """
    if not name.startswith(module + "."):
        return False
    suffix = name[len(module):]
    if suffix in MODULE_SUFFIXES:
        return True
    if (m := _TAGGED_EXTENSION.fullmatch(suffix)) is not None:
        return version is None or (version[0] == 3 and m.group(1) == str(version[1]))
    return version is None and _WINDOWS_ONLY.fullmatch(suffix) is not None


def module_files(names: Iterable[str], module: str, version: tuple[int, int] | None) -> list[str]:
    """The ``names`` (entries of one directory) that import as top-level ``module``
    for Python ``version`` (``imports_as``), sorted."""
    return sorted(n for n in names if imports_as(n, module, version))


def _legacy_pth(data: bytes) -> list[tuple[int, str]]:
    return list(enumerate(universal_lines(data.decode("utf-8", "replace")), 1))


def _modern_pth(data: bytes) -> list[tuple[int, str]]:
    try:
        return list(enumerate(data.decode("utf-8-sig").splitlines(), 1))
    except UnicodeDecodeError:
        replaced = data.decode("utf-8-sig", "replace").splitlines()
        return _merged(list(enumerate(replaced, 1)), list(enumerate(data.decode("latin-1").splitlines(), 1)))


def _merged(first: list[tuple[int, str]], second: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """The lines of two readings: all of ``first``, then those of ``second`` it does not hold."""
    seen = {line for _, line in first}
    return first + [(n, line) for n, line in second if line not in seen]


def base_site_dirs(stdlib: str, root: str) -> list[str]:
    """The base interpreter's site directories that exist, other than ``root``.

    ``<stdlib>/site-packages`` and its ``lib64`` twin (``sys.platlibdir``), and
    the ``dist-packages`` directories Debian's ``site`` adds.
    """
    prefix, version = os.path.dirname(os.path.dirname(stdlib)), os.path.basename(stdlib)
    candidates = [os.path.join(stdlib, "site-packages"),
                  os.path.join(prefix, "lib64", version, "site-packages"),
                  os.path.join(prefix, "local", "lib", version, "dist-packages"),
                  os.path.join(prefix, "lib", "python3", "dist-packages"),
                  os.path.join(stdlib, "dist-packages")]
    out: list[str] = []
    seen = {realpath(root)}
    for d in candidates:
        real = realpath(d)
        if real not in seen and os.path.isdir(real):
            seen.add(real)
            out.append(d)
    return out


def stdlib_dirs(stdlib: str, root: str) -> list[str]:
    """Standard library directories ``sys.path`` lists before this site-packages.

    ``stdlib`` (``interpreter``) and its ``lib-dynload``, those that exist (the
    zipped standard library before them: ``stdlib_zip``).
    """
    out = [stdlib, os.path.join(stdlib, "lib-dynload")]
    return [d for d in out if os.path.isdir(d) and realpath(d) != realpath(root)]


def stdlib_zip(stdlib: str) -> str | None:
    """The zipped standard library ``sys.path`` lists first: ``lib/python311.zip``.

    Beside ``stdlib``, named from its version (``python3.11`` →
    ``python311.zip``, free-threaded ``python3.13t`` → ``python313t.zip``);
    None when the directory's name carries no such version.
    """
    m = _LIB_NAME.fullmatch(os.path.basename(stdlib))
    if m is None:
        return None
    return os.path.join(os.path.dirname(stdlib), f"python{m[1]}{m[2]}{m[3]}.zip")
