"""Console scripts of the audited distribution, and the modules beside them.

``bin/vllm`` is how a deployment starts the package, and Python runs it with its
own directory first on ``sys.path``, so both the scripts and what sits beside
them decide what runs; this module judges that directory and puts the scripts in
the startup set. The directory of a console script the audited distribution's
RECORD installs (``../../../bin/vllm``): another ``vllm`` there fails, and so
does any other module no RECORD installs there; every module there is in the
startup set, and a vouched one's bytecode is judged (``check_script_dirs``).
``importlib.metadata`` searches that directory too: its distributions' entry
points are judged (``checks.record``). The scripts themselves are in the
startup set too, RECORD's row being as easy to re-hash as any
(``check_script_startup``).
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import re
import stat
from dataclasses import dataclass

from pp1audit.checks.bytecode import check_bytecode, default_cache, keep_for_bytecode
from pp1audit.checks.distrecord import (
    RecordEntry,
    is_bytecode,
    logical_path,
)
from pp1audit.checks.importable import copy_in, module_name, os_names
from pp1audit.checks.sitemodel import (
    Interpreter,
)
from pp1audit.checks.treedigest import MISSING, script_token, token_for
from pp1audit.checks.vouch import (
    Scope,
    Shadow,
    ShadowReport,
    module_entries,
    owners_at,
)
from pp1audit.errors import TargetError
from pp1audit.sources.hashing import Digest, hash_entries
from pp1audit.sources.inventory import FILE, DirInventory, Entry
from pp1audit.sources.safeio import (
    Elsewhere,
    NotRegular,
    TooLarge,
    is_within,
    read_regular,
    realpath,
)

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
        copy = copy_in(d.path, package, version)
        if copy is not None:
            report.findings.append(Shadow(
                copy, f"another '{package}' at {copy} is ahead of the audited copy on sys.path when the "
                f"console script {d.script} runs (Python puts the script's directory first): Python "
                "imports that one", f"shadow:{copy}"))
        found: dict[str, list[str]] = {}
        for name in sorted(os_names(d.path, (package,))):
            if (module := module_name(d.path, name, version)) is not None:
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
