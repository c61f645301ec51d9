"""``*.dist-info/RECORD``: parsing, finding a package's distribution, and verifying files.

RECORD (PEP 376, the wheel spec and the "Recording installed projects" spec)
is a CSV of ``path,algorithm=urlsafe_b64(digest) without padding,size``. It is
what ``debsums`` / ``rpm -V`` compare against for system packages and what pip
never grew a command for (pip issues 1463, 4705).

Rules for entries, as installers write them (never a false alarm on a clean
install):

* ``RECORD`` lists itself without a hash (and ``RECORD.jws`` / ``RECORD.p7s``
  signatures too): skipped. Only in the dist-info whose RECORD is read: a
  ``pkg/RECORD`` listed without a hash is any other file.
* pip lists the ``__pycache__/*.pyc`` files it compiled without a hash (and
  Python rewrites them whenever a source changes): every file named as
  Python's cache names them (``is_bytecode``) is judged by the bytecode check
  (``pp1audit.checks.bytecode``), which asks the question that matters — would Python
  run it, and is it the source compiled? — never by RECORD. A missing ``.pyc`` is fine (Python recompiles).
  One that is not a regular file (a symlink to a pyc elsewhere, a FIFO that
  would hang the import) is ``not-regular`` here, listed or not: the bytecode
  check never opens it.
* That dist-info's ``INSTALLER``, ``REQUESTED`` and ``direct_url.json`` (written
  by the installer after the wheel's RECORD) must exist, hash or not.
* Any other entry without a hash is ``unhashed`` when present: its content
  cannot be verified, so blanking the hash of a modified module must not turn
  it into a pass. Entries with a hash must match in size and digest
  (``sha256``; any ``hashlib`` algorithm is accepted).
* Paths outside the root (pip writes ``../../../bin/vllm`` for console
  scripts) are verified when present; when absent they are counted, not
  failed: the target is the site-packages directory (often copied out of an
  image on its own), and the audit is about what is under it. Not in a wheel:
  a row or member pip would write outside the directory it installs it into
  (``../x.py``, ``/abs.py``, ``..\\x.py`` on Windows: ``wheel.install_escape``)
  is ``outside``, listed or not, present or not, since pip refuses such a wheel
  and a naive unzip writes outside site-packages (``verify``'s ``escapes``).
* Files under the package directory that RECORD does not list are
  ``unlisted``, bytecode excepted (see above): only files named as Python's
  cache names them (``is_bytecode``); a ``__pycache__/sitecustomize.pyc`` or
  ``__pycache__/evil.py`` is unlisted like any other file.
* A row whose path holds a control character (NUL, which no file name can
  hold, and the rest of C0, DEL and C1, which no installer writes) is a
  malformed row like any other (``RecordError`` naming the line), never
  handed to ``lstat``. Other non-ASCII characters are legitimate names.
"""

from __future__ import annotations

import binascii
import csv
import hashlib
import io
import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace

from pp1audit.sources import installed_path
from pp1audit.sources.hashing import Digest, hash_entries
from pp1audit.sources.inventory import (
    DIR,
    FILE,
    UNREADABLE,
    DirInventory,
    Entry,
    Inventory,
    WheelInventory,
    what_it_is,
)
from pp1audit.sources.wheel import Zip

UNHASHED_OK = ("RECORD", "RECORD.jws", "RECORD.p7s")
"""Files of the verified dist-info a RECORD cannot hash: itself and its signatures."""
INSTALLER_FILES = ("INSTALLER", "REQUESTED", "direct_url.json")
"""Files of the verified dist-info an installer may list without a hash (the
issue that specified ``--record`` names them; pip hashes them all the same)."""
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
"""Characters no file name holds (NUL) or no installer writes (the other controls)."""
RECORD_MAX = 16 << 20
"""Largest RECORD read: one for 100,000 files is ~10 MiB (vLLM's 5,000: 0.6 MB),
and parsing costs ~40 bytes of memory per byte (a 150 MB one took 6 GB)."""


class RecordError(ValueError):
    """RECORD cannot be parsed; the message names the line."""


@dataclass(frozen=True, slots=True)
class RecordEntry:
    """One RECORD row."""

    path: str
    algorithm: str | None
    digest: bytes | None
    size: int | None
    line: int


_TO_URLSAFE = bytes.maketrans(b"+/", b"-_")
_FROM_URLSAFE = bytes.maketrans(b"-_", b"+/")


def b64(raw: bytes) -> str:
    """urlsafe base64 without padding, as RECORD writes digests."""
    return binascii.b2a_base64(raw, newline=False).translate(_TO_URLSAFE).rstrip(b"=").decode("ascii")


def unb64(text: str) -> bytes:
    """Inverse of ``b64``; ``ValueError`` on bad input.

    Strict about the alphabet: a character outside urlsafe base64 (``$``, or
    the standard alphabet's ``+`` and ``/``, which no installer writes) is an
    error, never skipped (``base64.urlsafe_b64decode`` discards it and decodes
    the rest). Lenient about padding, present or not, which says nothing.
    ``binascii`` directly, because ``base64``'s wrappers cost 4 us a row, a
    fifth of reading vLLM's 5,000-row RECORD.
    """
    raw = text.encode("ascii").rstrip(b"=")  # UnicodeEncodeError is a ValueError
    if b"+" in raw or b"/" in raw:
        raise ValueError("not urlsafe base64")
    return binascii.a2b_base64(raw.translate(_FROM_URLSAFE) + b"=" * (-len(raw) % 4), strict_mode=True)


def parse_record(data: bytes, where: str) -> list[RecordEntry]:
    """Rows of a RECORD file; ``RecordError`` naming ``where:line`` on any bad row."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RecordError(f"{where}: not UTF-8 ({exc.reason})") from None
    out: list[RecordEntry] = []
    reader = csv.reader(io.StringIO(text))
    end = 0
    try:
        for row in reader:
            # The row's first line: a quoted field may span several.
            line, end = end + 1, reader.line_num
            if not row or row == [""]:
                continue
            if len(row) != 3:
                raise RecordError(f"{where}:{line}: expected path,hash,size; found {len(row)} fields")
            path, hash_field, size_field = row
            if not path:
                raise RecordError(f"{where}:{line}: empty path")
            if (bad := _CONTROL.search(path)) is not None:
                # Raw: the output escapes the message once (``safetext.printable``).
                raise RecordError(f"{where}:{line}: path '{path}' contains the control character "
                                  f"{bad.group()}: not a file name an installer writes")
            algorithm = digest = None
            if hash_field:
                algorithm, sep, value = hash_field.partition("=")
                if not sep or algorithm not in hashlib.algorithms_guaranteed:
                    raise RecordError(f"{where}:{line}: bad hash field '{hash_field}'")
                try:
                    digest = unb64(value)
                except ValueError:
                    raise RecordError(f"{where}:{line}: bad base64 digest '{value}'") from None
            size = None
            if size_field:
                if not size_field.isdigit():
                    raise RecordError(f"{where}:{line}: bad size '{size_field}'")
                size = int(size_field)
            out.append(RecordEntry(path, algorithm, digest, size, line))
    except csv.Error as exc:
        raise RecordError(f"{where}:{reader.line_num}: {exc}") from None
    return out


def normalize(name: str) -> str:
    """PEP 503 name normalisation (``Foo_Bar.baz`` → ``foo-bar-baz``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def dist_name(dist_info: str) -> str:
    """The project name in ``name-version.dist-info`` (normalised)."""
    stem = dist_info.rsplit(".", 1)[0]
    return normalize(stem.split("-", 1)[0])


def claims(inv: Inventory, meta_dir: str, package: str) -> bool:
    """True when the distribution in ``meta_dir`` installs ``package``.

    By name first, then ``top_level.txt``, then a RECORD row under ``package/``:
    cheap reads of small files, so a site-packages of hundreds of distributions
    is scanned in milliseconds.
    """
    if dist_name(meta_dir) == normalize(package):
        return True
    for name, needle in (("top_level.txt", None), ("RECORD", package + "/")):
        data = read_small(inv, f"{meta_dir}/{name}")
        if data is None:
            continue
        text = data.decode("utf-8", "replace")
        if needle is None:
            if package in (t.strip() for t in text.splitlines()):
                return True
        elif text.startswith(needle) or ("\n" + needle) in text or ('\n"' + needle) in text:
            return True
    return False


def read_record(inv: Inventory, path: str) -> bytes:
    """A RECORD's bytes; ``RecordError`` when it is absent, not a regular file or too large."""
    e = inv.entry(path)
    if e is None or e.kind != FILE:
        raise RecordError(f"{path} is missing or not a regular file")
    if e.size > RECORD_MAX:
        raise RecordError(f"{path} is {e.size:,} bytes, over the {RECORD_MAX >> 20} MiB a RECORD may "
                          "have (one for 100,000 files is about 10 MiB): not read")
    d = _read_entry(inv, e)
    if d.data is None:
        raise RecordError(f"{path}: {d.error or d.unkept or 'could not be read'}")
    return d.data


def read_small(inv: Inventory, path: str, limit: int = RECORD_MAX) -> bytes | None:
    """Content of a small regular file of the inventory (RECORD, .pth, top_level.txt), or None."""
    e = inv.entry(path)
    if e is None or e.kind != FILE or e.size > limit:
        return None
    return _read_entry(inv, e).data


def _read_entry(inv: Inventory, e: Entry) -> Digest:
    """One regular file of the inventory read whole, through the same guarded reader
    as the hashing pass (directory or wheel alike)."""
    from pp1audit.sources.hashing import hash_here

    wheel = inv.zip if isinstance(inv, WheelInventory) else None
    return hash_here([e], wheel=wheel, keep=lambda _: True)[e.path]


def is_distribution(name: str, *, egg: bool = False) -> bool:
    """Whether ``importlib.metadata`` takes a directory entry of this name for a
    distribution: a name ending in ``.dist-info`` or ``.egg-info`` in any letter
    case (``Lookup`` in CPython 3.10-3.13), and ``EGG-INFO`` in any case inside a
    ``*.egg`` on ``sys.path`` (``egg``). Whether it is a directory is the caller's
    question: a *file* so named is read as metadata too. The one definition for
    RECORD's distributions, the shadowing check's and the entry points'."""
    low = name.lower()
    return low.endswith((".dist-info", ".egg-info")) or (egg and low == "egg-info")


def distributions(inv: Inventory, package: str) -> list[str]:
    """Metadata directories at the root (``is_distribution``) that install ``package``, sorted."""
    out = []
    for name, kind in inv.children(""):
        if kind == DIR and is_distribution(name) and claims(inv, name, package):
            out.append(name)
    return out


def logical_path(inv: Inventory, path: str) -> str:
    """A RECORD path as a logical path: normalised, absolute paths under the root made
    relative; in a wheel, where the member it names installs (a wheel's RECORD names
    ``vllm-0.31.0.data/purelib/vllm/a.py``, the inventory holds ``vllm/a.py``)."""
    if isinstance(inv, WheelInventory):
        return installed_path(path)
    if path.startswith("/") and isinstance(inv, DirInventory):
        if path.startswith(inv.root + "/"):
            return path[len(inv.root) + 1:]
        return path
    if "./" in path or "//" in path or path.endswith("/."):
        return posixpath.normpath(path)
    return path


def logical_row(inv: Inventory, row: RecordEntry) -> RecordEntry:
    """A RECORD row at its logical path (``logical_path``)."""
    path = logical_path(inv, row.path)
    return row if path == row.path else replace(row, path=path)


def is_bytecode(path: str) -> bool:
    """A file as Python's bytecode cache names it: judged by the bytecode check, not by RECORD.

    ``importlib.util.cache_from_source`` (which ``py_compile`` and ``compileall``,
    run by pip, use too) names them ``<stem>.<cache_tag>.pyc`` or
    ``<stem>.<cache_tag>.opt-<level>.pyc`` (any interpreter's tag), directly in a
    ``__pycache__`` directory: always a dot inside the name before ``.pyc``. Such
    a file is never a module an import finds in that directory, since a sourceless
    module is ``<module>.pyc`` and a module name holds no dot. Anything else there
    is an ordinary file RECORD must list: ``sitecustomize.pyc`` or ``evil.py`` in a
    ``__pycache__`` is imported as a module of its own the moment a ``.pth`` path
    line puts that directory on ``sys.path``, and the bytecode check, which only
    knows cache names, never looks at it. So is a subdirectory's content (Python
    writes none), and importlib's temporary ``<cache name>.<number>`` (written,
    then renamed into place: only an interrupted write leaves one).
    """
    head, _, name = path.rpartition("/")
    in_cache = head == "__pycache__" or head.endswith("/__pycache__")
    return in_cache and _CACHE_NAME.fullmatch(name) is not None


_CACHE_NAME = re.compile(r"[^/]+\.[^./]+\.pyc")
"""``<stem>.<tag>.pyc``; ``<stem>.<tag>.opt-<level>.pyc`` is one of them (its stem
holds the tag)."""


@dataclass(frozen=True, slots=True)
class Problem:
    """A file that does not match RECORD."""

    path: str
    what: str
    """``modified`` | ``missing`` | ``unhashed`` | ``unlisted`` | ``not-regular`` | ``unreadable`` |
    ``outside``."""
    message: str
    expected: str | None = None
    actual: str | None = None


@dataclass(frozen=True)
class Verification:
    """What RECORD verification found: problems and the counts for the summary."""

    problems: list[Problem]
    listed: int
    verified: int
    bytecode_listed: int
    unhashed: int
    """Rows RECORD may leave without a hash (itself, its signatures, the installer's
    files); any other unhashed row of a present file is a problem, not counted here."""
    outside_absent: int = 0
    """Entries outside the target root (console scripts) that are not there."""


def other_algorithm_digests(rows: list[RecordEntry], located: dict[str, Entry | None],
                            wheel: Zip | None) -> dict[tuple[str, str], bytes]:
    """``verify``'s ``extra_digests``: the present files whose rows name another
    algorithm than sha256 (``sha384``, ``sha512``), hashed again with it (streamed)
    and keyed ``(path, algorithm)``. ``located``: each row's entry, None when absent;
    ``wheel``: the wheel the entries are members of, None on disk."""
    todo = {(r.path, r.algorithm) for r in rows
            if r.algorithm is not None and r.algorithm != "sha256" and located.get(r.path) is not None}
    extra: dict[tuple[str, str], bytes] = {}
    for algo in sorted({a for _, a in todo}):
        again = hash_entries([e for p, a in todo if a == algo and (e := located.get(p)) is not None],
                             wheel=wheel, algorithm=algo)
        extra.update({(p, algo): d.sha256 for p, d in again.items() if d.sha256 is not None})
    return extra


def verify(
    entries: list[RecordEntry],
    record_path: str,
    located: dict[str, Entry | None],
    digests: dict[str, Digest],
    package_files: list[Entry],
    package: str,
    *,
    extra_digests: dict[tuple[str, str], bytes] | None = None,
    refused: set[str] | frozenset[str] = frozenset(),
    escapes: Mapping[str, str] | None = None,
) -> Verification:
    """Compare RECORD rows with what is on the target.

    ``located`` maps each RECORD path to its inventory entry (None: absent);
    ``digests`` holds SHA-256 results by the entry's logical path;
    ``extra_digests`` holds digests for rows using another algorithm;
    ``refused`` names rows pointing outside the installation (never looked at);
    ``escapes``: in a wheel, the logical paths of rows and members pip would write
    outside the directory it installs them into, with why (``wheel.install_escape``).
    Each is an ``outside`` problem, listed or not, bytecode too: a wheel is judged as
    what it installs, and such a wheel installs outside site-packages or not at all.
    """
    escapes = escapes or {}
    problems: list[Problem] = []
    listed_paths: set[str] = set()
    verified = bytecode = unhashed = outside = 0
    # Directories the listing could not read: what RECORD lists below them is
    # unknown (never "missing"), and each is one error of its own.
    blocked = {e.path: e for e in package_files if e.kind == UNREADABLE and e.path.endswith("/")}
    meta = record_path.rsplit("/", 1)[0] + "/" if "/" in record_path else ""
    for row in entries:
        listed_paths.add(row.path)
        own = row.path.startswith(meta) and "/" not in row.path[len(meta):]
        name = row.path[len(meta):] if own else ""
        if (why := escapes.get(row.path)) is not None:
            problems.append(Problem(row.path, "outside", f"listed in RECORD but outside the "
                                    f"installation ({why}); not opened", expected=_fmt(row)))
            continue
        if is_bytecode(row.path):
            found = located.get(row.path)
            if found is not None and found.kind != FILE and row.path not in refused:
                problems.append(_irregular_bytecode(found))
            else:
                bytecode += 1
            continue
        if row.path in refused:
            problems.append(Problem(row.path, "outside",
                                    "listed in RECORD but outside the installation, symbolic "
                                    "links resolved (neither the target root nor its "
                                    "console-scripts directory); not opened",
                                    expected=_fmt(row)))
            continue
        if row.digest is None and name in UNHASHED_OK:  # RECORD itself among them
            unhashed += 1
            continue
        found = located.get(row.path)
        if found is None and (row.path.startswith(("../", "/")) or row.path == ".."):
            outside += 1
            continue
        # Below a directory the walk could not list, that directory says why: a
        # lookup by name there may answer "no permission" too, but not which.
        if (found is None or found.kind == UNREADABLE) and blocked \
                and (under := _blocked_by(row.path, blocked)) is not None:
            problems.append(Problem(row.path, "unreadable",
                                    f"cannot be verified: {under.path}: {under.error}", expected=_fmt(row)))
            continue
        if found is None:
            problems.append(Problem(row.path, "missing", "listed in RECORD but missing from the target",
                                    expected=_fmt(row), actual=None))
            continue
        if found.kind == UNREADABLE:
            problems.append(Problem(row.path, "unreadable", f"cannot be verified: {found.error}",
                                    expected=_fmt(row)))
            continue
        if found.kind != FILE:
            problems.append(Problem(row.path, "not-regular",
                                    f"is a {found.kind}, RECORD lists a regular file; not opened",
                                    expected=_fmt(row), actual=found.kind))
            continue
        if row.digest is None:
            if name in INSTALLER_FILES:
                unhashed += 1
            else:
                problems.append(_unhashed(row, digests.get(found.path)))
            continue
        if row.algorithm == "sha256":
            d = digests.get(found.path)
            actual = d.sha256 if d is not None else None
            err = d.error if d is not None else "not hashed"
            size = d.size if d is not None else found.size
        else:
            actual = (extra_digests or {}).get((found.path, row.algorithm or ""))
            err = "not hashed" if actual is None else None
            size = found.size
        if actual is None:
            problems.append(Problem(row.path, "unreadable", f"cannot be verified: {err}",
                                    expected=_fmt(row)))
            continue
        if actual != row.digest or (row.size is not None and size != row.size):
            problems.append(Problem(
                row.path, "modified",
                "modified: content differs from RECORD"
                + (f" (size {size}, RECORD says {row.size})" if row.size is not None and size != row.size
                   else " (same size)"),
                expected=_fmt(row), actual=f"{row.algorithm}={b64(actual)},{size}",
            ))
            continue
        verified += 1
    problems.extend(_unlisted_escapes(escapes, listed_paths))
    for e in package_files:
        if e.path in listed_paths or e.path in escapes or (is_bytecode(e.path) and e.kind == FILE):
            continue
        if e.kind == UNREADABLE:
            problems.append(Problem(e.path, "unreadable", f"{e.error}" + (
                ": a file added below it could not be seen (what RECORD lists there is "
                "looked up one by one)" if e.path.endswith("/") else "")))
        elif is_bytecode(e.path):
            problems.append(_irregular_bytecode(e))
        elif e.kind != FILE:
            problems.append(Problem(e.path, "not-regular",
                                    f"is a {e.kind} in the package directory, not in RECORD; not opened",
                                    actual=e.kind + (f" -> {e.link}" if e.link else "")))
        else:
            d = digests.get(e.path)
            listed = f"sha256={b64(d.sha256)},{d.size}" if d is not None and d.sha256 else None
            problems.append(Problem(e.path, "unlisted", _unlisted_message(e.path, package),
                                    actual=listed))
    problems.sort(key=lambda p: p.path)
    return Verification(problems, len(entries), verified, bytecode, unhashed, outside)


def _unlisted_escapes(escapes: Mapping[str, str], listed: set[str]) -> list[Problem]:
    """The wheel members outside the installation that no row lists (``verify``'s
    ``escapes``): each fails as a listed one does, wherever it is in the wheel, since
    the package-directory listing that finds unlisted files never sees ``../x.py``."""
    return [Problem(path, "outside", f"in the wheel but not in RECORD, and outside the "
                    f"installation ({why}); not opened")
            for path, why in escapes.items() if path not in listed]


def _blocked_by(path: str, blocked: dict[str, Entry]) -> Entry | None:
    """The unreadable directory ``path`` lies under, if any: its parent directories
    looked up one by one (a scan of every unreadable directory per row was
    quadratic on a hostile tree of thousands of them)."""
    end = path.find("/")
    while end != -1:
        if (hit := blocked.get(path[:end + 1])) is not None:
            return hit
        end = path.find("/", end + 1)
    return None


def _unlisted_message(path: str, package: str) -> str:
    """Why an unlisted file fails; in a ``__pycache__``, why it is not bytecode."""
    if "/__pycache__/" not in "/" + path:
        return (f"unlisted: in the package directory but not in RECORD, so nothing vouches for it "
                f"(Python may import it as part of {package})")
    stem, dot, tail = path.rpartition(".")
    if dot and tail.isdigit() and is_bytecode(stem):
        what = ("named like the temporary file importlib writes before renaming a pyc into "
                "place (an interrupted write leaves one; Python never reads it, delete it)")
    else:
        what = ("not named as Python names its bytecode cache (<module>.<cache tag>[.opt-N].pyc "
                "directly in __pycache__), so Python never wrote it, and the bytecode check does "
                "not judge it; a .pth path line putting this directory on sys.path makes it "
                "importable as a module of its own")
    return f"unlisted: in __pycache__ but not in RECORD, and {what}"


def _unhashed(row: RecordEntry, d: Digest | None) -> Problem:
    """A present file RECORD lists without a hash (and is not one an installer
    leaves so): nothing to compare it with, so it must not pass as verified —
    blanking a row's hash would otherwise hide any change to the file."""
    actual = f"sha256={b64(d.sha256)},{d.size}" if d is not None and d.sha256 is not None else None
    return Problem(row.path, "unhashed", "listed in RECORD without a hash: its content cannot be verified",
                   expected=_fmt(row), actual=actual)


def _irregular_bytecode(e: Entry) -> Problem:
    """A ``__pycache__/*.pyc`` that is a symlink, FIFO, device…: the import system
    opens whatever is there (a link to code outside the tree, a FIFO that hangs
    the import), so it fails whether or not RECORD lists it; never opened."""
    return Problem(e.path, "not-regular",
                   f"{what_it_is(e)} where Python reads bytecode (an import opens it and would "
                   "run or wait on what it finds); not opened",
                   actual=e.kind + (f" -> {e.link}" if e.link else ""))


def _fmt(row: RecordEntry) -> str:
    h = f"{row.algorithm}={b64(row.digest)}" if row.digest is not None else ""
    return f"{h},{'' if row.size is None else row.size}"
