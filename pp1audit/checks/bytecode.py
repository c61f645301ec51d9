"""Bytecode: would Python run a ``__pycache__/*.pyc`` instead of its source, and is it that source?

Python imports ``pkg/mod.py`` from ``pkg/__pycache__/mod.<cache_tag>.pyc``
without reading the source's code whenever the pyc's 16-byte header (PEP 552)
says it is current:

* timestamp pyc (flags 0): the header's mtime and size equal the source's
  ``st_mtime`` and ``st_size`` (both mod 2**32);
* checked hash-based pyc (flags 3): the header's SipHash equals
  ``importlib.util.source_hash(source)``;
* unchecked hash-based pyc (flags 1): always — the source is never looked at.

Such a pyc is compared with its compiled source (``pyccompare``, in crash-safe
worker processes: ``pycworkers``; pairs found equal before are remembered:
``VerifiedCache``). A pyc whose header does not match is ignored by Python (it
recompiles), so it is not a finding; nor is a pyc without its source
(``__pycache__`` is never used sourceless). In a wheel there are no install
mtimes: every pyc for this interpreter is compared (a wheel should not ship any).

Only pycs for the running interpreter's cache tag can be judged (another version
compiles differently): others that would be loaded by their interpreter are
unverifiable (``skip``, one per tag), never failed. Patch releases of one version
share a cache tag but not always a compiler (3.11.2 and 3.11.7 emit different
code for some modules), so when the target says which release it runs
(``target_release``, from a venv's ``pyvenv.cfg``) and it is not this one, a pyc
that differs is unverifiable too, not tampered; one that compiles equal is
verified all the same.
"""

from __future__ import annotations

import importlib.util
import os
import stat
import sys
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from pp1audit.checks.pyccompare import COMPARISON
from pp1audit.checks.pycworkers import compare_all
from pp1audit.sources.cache import default_cache_dir
from pp1audit.sources.hashing import Digest, Progress
from pp1audit.sources.inventory import FILE, Entry
from pp1audit.sources.safeio import NotRegular, TooLarge, read_regular

TAG = sys.implementation.cache_tag or "none"
RELEASE = "{}.{}.{}".format(*sys.version_info[:3])
"""This interpreter's release: patch releases share ``TAG`` but not always their compiler."""
MAGIC = importlib.util.MAGIC_NUMBER


@dataclass(frozen=True, slots=True)
class PycName:
    """What a ``__pycache__`` file name says: its source, interpreter tag and optimisation."""

    pyc: str
    source: str
    tag: str
    optimize: int


def pyc_name(path: str) -> PycName | None:
    """Parse ``dir/__pycache__/stem.tag[.opt-N].pyc``; None for anything else.

    ``optimize`` is the level the source is compiled at to compare: ``python
    -OOO`` (``sys.flags.optimize`` 3) imports ``.opt-3`` files, whose code the
    compiler makes as at level 2, the highest ``compile`` accepts. ``.opt-0``
    (or ``.opt-01``) is None: level 0 imports the name without ``.opt-``, so
    Python never loads it.
    """
    head, _, name = path.rpartition("/")
    if head.rpartition("/")[2] != "__pycache__" or not name.endswith(".pyc"):
        return None
    stem, _, tag = name[:-4].rpartition(".")
    optimize = 0
    if "." in stem and tag.startswith("opt-") and tag[4:].isdecimal():
        level = tag[4:]
        if level != str(int(level)) or level == "0":  # never a name the import system asks for
            return None
        optimize = min(int(level), 2)
        stem, _, tag = stem.rpartition(".")
    if not stem.split(".")[0] or not tag:
        return None
    return PycName(path, head[: -len("__pycache__")] + stem + ".py", tag, optimize)


def would_load(data: bytes, source: Entry, source_data: bytes,
               check_source_hash: bool = True) -> tuple[bool, str]:
    """Whether the import system would use this pyc instead of compiling the source.

    ``source.mtime`` None (a wheel) means "no install-time mtime": a timestamp
    pyc is then treated as loadable, so that it is compared, never waved through.
    """
    if len(data) < 16:
        return False, "truncated header"
    flags = int.from_bytes(data[4:8], "little")
    if flags & ~0b11:
        return False, "invalid flags"
    if flags & 0b1:
        if flags & 0b10 and check_source_hash:
            if importlib.util.source_hash(source_data) != data[8:16]:
                return False, "source hash differs (Python recompiles)"
            return True, "checked hash-based pyc whose source hash matches"
        return True, "unchecked hash-based pyc: Python never looks at the source"
    if source.mtime is None:
        return True, "timestamp pyc (no install mtime to compare in a wheel)"
    mtime = int.from_bytes(data[8:12], "little")
    size = int.from_bytes(data[12:16], "little")
    if mtime == source.mtime & 0xFFFFFFFF and size == source.size & 0xFFFFFFFF:
        return True, "its header matches the source's mtime and size"
    return False, "stale header (Python recompiles)"


def keep_for_bytecode(entry: Entry) -> bool:
    """Which files the hashing pass keeps in memory for this check."""
    return entry.kind == FILE and (entry.path.endswith(".py") or pyc_name(entry.path) is not None)


def _trusted(path: Path) -> bool:
    """The cache file is a regular file that only this user can write (and so
    is its directory): anyone else able to add a line could vouch for a pyc."""
    me = os.geteuid()
    try:
        for p in (path, path.parent):
            st = os.lstat(p)
            if st.st_uid != me or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
                return False
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


class VerifiedCache:
    """Append-only set of ``pyc-sha256 source-sha256 optimize`` lines known to compile equal.

    Compiling ~2,800 vLLM modules costs ~7 s of CPU. Keyed by content only (the
    pyc holds its ``co_filename``), per exact interpreter version and comparison
    rule (``COMPARISON``: pairs a weaker rule let through are not trusted): a hit
    is as good as compiling again. A lost or corrupt cache only costs time.
    ``PP1AUDIT_NO_CACHE=1`` disables it.
    """

    def __init__(self, directory: Path | None) -> None:
        self.keys: set[str] = set()
        self.path: Path | None = None
        if directory is None:
            return
        v = sys.version_info
        self.path = directory / f"bytecode-verified-{sys.implementation.name}-{v[0]}.{v[1]}.{v[2]}.txt"
        if not _trusted(self.path):
            return  # absent, or writable by someone else: an entry would whitelist a pyc
        try:
            text = read_regular(self.path, 64 << 20).decode("ascii", errors="replace")
        except (OSError, NotRegular, TooLarge):
            return
        self.keys = {line for line in text.splitlines() if len(line) >= 131}

    @staticmethod
    def key(pyc_sha: bytes, src_sha: bytes, optimize: int) -> str:
        """The cache line for one verified pair, under the current comparison rule."""
        return f"{pyc_sha.hex()} {src_sha.hex()} {optimize} c{COMPARISON}"

    def add(self, keys: Iterable[str]) -> None:
        """Remember new verified pairs (best effort: a write failure is ignored)."""
        new = [k for k in keys if k not in self.keys]
        if not new or self.path is None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW
                         | os.O_NONBLOCK | os.O_CLOEXEC, 0o600)
            with os.fdopen(fd, "a", encoding="ascii") as f:
                f.write("".join(k + "\n" for k in new))
        except OSError:
            pass
        self.keys.update(new)


def default_cache() -> VerifiedCache:
    """The user's cache, in the remote-pin cache's directory (one rule for both), unless
    ``PP1AUDIT_NO_CACHE`` is set."""
    return VerifiedCache(None if os.environ.get("PP1AUDIT_NO_CACHE") else default_cache_dir())


@dataclass(frozen=True, slots=True)
class Finding:
    """One bytecode problem: ``fail`` (would run, differs), ``skip`` (another
    interpreter's) or ``error`` (could not be compared: the compiler gave up)."""

    path: str
    status: str
    message: str
    source: str | None = None


@dataclass(frozen=True)
class BytecodeReport:
    """Findings plus the counts for the summary check."""

    findings: list[Finding]
    verified: int
    cached: int
    stale: int
    orphans: int
    other: dict[str, int]


def check_bytecode(
    files: list[Entry],
    digests: dict[str, Digest],
    *,
    cache: VerifiedCache,
    progress: Progress | None = None,
    workers: int | None = None,
    target_release: tuple[str, str] | None = None,
) -> BytecodeReport:
    """Judge every ``__pycache__/*.pyc`` among ``files`` (see the module docstring).

    ``target_release``: the ``X.Y.Z`` of the interpreter that will load them and
    where that was read (``("3.11.2", "version in …/pyvenv.cfg")``), when known."""
    other_release = target_release if target_release is not None and target_release[0] != RELEASE \
        else None
    by_path = {e.path: e for e in files}
    findings: list[Finding] = []
    todo: list[tuple[PycName, bytes, bytes, str, str]] = []
    """(name, pyc, source, why it loads, cache key) of each pair to compile."""
    stale = orphans = cached = 0
    foreign: dict[str, list[str]] = {}
    """Bytecode of another interpreter's cache tag, by tag."""
    for e in files:
        name = pyc_name(e.path)
        if name is None or e.kind != FILE:
            continue
        d = digests.get(e.path)
        src = by_path.get(name.source)
        sd = digests.get(name.source) if src is not None else None
        if src is None or src.kind != FILE:
            orphans += 1
            continue
        unkept = next((f"{p} is {x.unkept}" for p, x in ((e.path, d), (name.source, sd))
                       if x is not None and x.unkept), None)
        if unkept is not None:
            findings.append(Finding(e.path, "error", f"unverified bytecode: {unkept}; it could "
                                    "not be compared with its source", name.source))
            continue
        if d is None or d.data is None or sd is None or sd.data is None or d.sha256 is None \
                or sd.sha256 is None:
            findings.append(Finding(e.path, "error", "could not read the bytecode or its source",
                                    name.source))
            continue
        # The bytes read decide, not the listing: a source that grew in between is
        # one Python would recompile, not a reason to blame its bytecode.
        src = replace(src, size=len(sd.data))
        if name.tag != TAG:
            if would_load(d.data, src, sd.data, check_source_hash=False)[0]:
                foreign.setdefault(name.tag, []).append(e.path)
            else:
                stale += 1
            continue
        loads, why = would_load(d.data, src, sd.data) if d.data[:4] == MAGIC else (False, "")
        if not loads:
            stale += 1
            continue
        key = VerifiedCache.key(d.sha256, sd.sha256, name.optimize)
        if key in cache.keys:
            cached += 1
            continue
        todo.append((name, d.data, sd.data, why, key))
    results = compare_all([(src, pyc, name.optimize) for name, pyc, src, _, _ in todo],
                          progress, workers)
    good: list[str] = []
    released: list[str] = []
    """Bytecode of this tag differing from this interpreter's compile, when the target
    runs another patch release of it."""
    for (name, _pyc, _src, why, key), problem in zip(todo, results, strict=True):
        if problem is None:
            good.append(key)
            continue
        status, phrase = problem
        if status == "fail" and other_release is not None:
            released.append(name.pyc)
            continue
        head = "tampered bytecode" if status == "fail" else "unverified bytecode"
        findings.append(Finding(
            name.pyc, status,
            f"{head}: Python would run this instead of {name.source} ({why}), but "
            f"{phrase}", name.source))
    cache.add(good)
    other = {tag: len(paths) for tag, paths in foreign.items()}
    # One ``skip`` per foreign interpreter, not per file: auditing a cpython-312
    # image from cpython-311 must not print 2,800 checks.
    for tag, paths in sorted(foreign.items()):
        findings.append(_skip(paths, f"for another interpreter ({tag}) that it would load instead "
                              "of their sources", f": unverifiable with {TAG}; run pp1audit under "
                              f"{tag} to verify them"))
    if released and other_release is not None:
        number, origin = other_release
        findings.append(_skip(
            released, "Python would load instead of their sources", " differ from their sources "
            f"compiled by Python {RELEASE}, and the target runs Python {number} ({origin}), whose "
            f"compiler may emit other code: unverifiable here; run pp1audit under Python {number} "
            "to verify them"))
        other[f"{TAG} {number} ({origin})"] = len(released)
    findings.sort(key=lambda f: f.path)
    return BytecodeReport(findings, cached + len(good), cached, stale, orphans, other)


def _skip(paths: list[str], what: str, why: str) -> Finding:
    """One ``skip`` for many unverifiable pycs, named by the first in order."""
    paths = sorted(paths)
    more = f" (and {len(paths) - 1} more)" if len(paths) > 1 else ""
    return Finding(paths[0], "skip", f"{len(paths):,} bytecode file(s) {what}{more}{why}")
