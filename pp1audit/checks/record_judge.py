"""The judging half of the ``record`` family, from what ``RecordRun`` listed and hashed.

RECORD found, parsed and compared, the tree and startup digests, the bytecode,
shadowing and entry-point checks: see ``checks/record.py`` for what each check
says. Apart from the listing and hashing (``checks/record.py``) so that starting
them costs only their own imports: the modules only judging needs (RECORD
parsing, the shadowing, vouching and entry-point checks, the digests: ~10 ms of
imports and class definitions) load in ``RecordRun.checks``, while the threads
already hash, not before the first file is opened.
"""

from __future__ import annotations

import os
import stat
from dataclasses import replace

from pp1audit.checks.bytecode import TAG, VerifiedCache, check_bytecode, default_cache
from pp1audit.checks.distrecord import (
    Problem,
    RecordEntry,
    RecordError,
    dist_name,
    distributions,
    is_distribution,
    logical_path,
    normalize,
    other_algorithm_digests,
    parse_record,
    read_record,
    read_small,
    verify,
)
from pp1audit.checks.entrypoints import (
    ENTRY_POINTS_MAX,
    EntryPointsError,
    PluginFinding,
    PluginReport,
    parse_entry_points,
)
from pp1audit.checks.entrypoints import (
    judge as judge_entry_points,
)
from pp1audit.checks.record import KIND, RecordRun, error_check
from pp1audit.checks.shadowing import ShadowReport, check_shadowing
from pp1audit.checks.sitemodel import Release
from pp1audit.checks.startupzip import PATH_ZIP_MAX, open_zip
from pp1audit.checks.treedigest import listing_digest, tree_digest
from pp1audit.result import Check, Status
from pp1audit.sources import installed_path
from pp1audit.sources.hashing import Digest, Progress, hash_here
from pp1audit.sources.inventory import (
    DIR,
    FILE,
    SYMLINK,
    UNREADABLE,
    DirInventory,
    Entry,
    Inventory,
    WheelInventory,
    what_it_is,
)
from pp1audit.sources.safeio import is_within, realpath
from pp1audit.sources.wheel import NotAZip, ZipError, install_escape


def _logical_rows(inv: Inventory, rows: list[RecordEntry]) -> list[RecordEntry]:
    """RECORD rows at their logical paths (``record.logical_path``). When a wheel's RECORD lists
    two members that install to one path (a clash: an ``UNREADABLE`` entry naming
    both), only the first row is kept, so that path is reported once."""
    out: list[RecordEntry] = []
    seen: set[str] = set()
    for r in rows:
        path = logical_path(inv, r.path)
        if (path in seen and isinstance(inv, WheelInventory)
                and (e := inv.entry(path)) is not None and e.kind == UNREADABLE):
            continue
        seen.add(path)
        out.append(r if path == r.path else replace(r, path=path))
    return out


def _refused(inv: Inventory, path: str) -> bool:
    """A RECORD row naming a host file outside the installation: never opened.

    RECORD is untrusted input: ``../../../../../../etc/passwd`` or ``/etc/shadow``
    must not make the auditor ``lstat`` and hash arbitrary host files (and leak
    their digests into a report), and neither must ``dist-info/etc/shadow``
    when ``dist-info/etc`` is a symlink to ``/etc``: the directories of a row
    are resolved (symlinks included; its last component is ``lstat``ed, never
    followed). Inside the target root is fine, and so is the installation
    prefix when the root is laid out as ``<prefix>/lib/pythonX.Y/
    site-packages`` (console scripts in ``<prefix>/bin``, data files in
    ``<prefix>/share``), once symlinks are resolved; otherwise only ``bin``
    beside that layout. An absolute row still absolute after ``logical_path`` is
    outside by definition. Asked only for rows the listing of the package did
    not find (the listing never follows a symlink). A wheel never opens
    anything but its members, so it refuses nothing here: its escaping rows and
    members are judged as pip judges them (``_row_escapes``, ``_member_escapes``).
    """
    if not isinstance(inv, DirInventory):
        return False
    if path.startswith("/"):
        return True
    root = inv.root  # already resolved
    parent = realpath(os.path.join(root, os.path.dirname(path)))
    if is_within(parent, root):
        return False
    allowed = _installation(inv)
    real = realpath(os.path.join(inv.root, path))
    return real == allowed or not is_within(real, allowed)


def _installation(inv: DirInventory) -> str:
    """Where a RECORD row outside the root may lead (``_refused``): the prefix of a
    ``<prefix>/lib/pythonX.Y/site-packages`` root, else ``bin`` beside the root's
    grandparent. Asked again when the row is examined (``DirInventory.entry_outside``),
    so a directory swapped between the two cannot lead the lookup elsewhere."""
    root = inv.root
    lib = os.path.dirname(os.path.dirname(root))
    prefix = os.path.dirname(lib)
    standard = (os.path.basename(os.path.dirname(root)).startswith("python")
                and os.path.basename(lib) == "lib" and prefix != os.path.dirname(prefix))
    return prefix if standard else os.path.join(prefix, "bin")


def _examined(inv: Inventory, path: str) -> Entry | None:
    """The entry of a RECORD row the listing did not find: inside the root as any
    entry; outside it (a row ``_refused`` admitted) only inside the installation."""
    if isinstance(inv, DirInventory) and not inv.inside(path):
        return inv.entry_outside(path, _installation(inv))
    return inv.entry(path)


def _member_escapes(inv: Inventory) -> dict[str, str]:
    """A wheel's members pip would write outside the directory it installs them into
    (``Zip.escaping``), by installed path: each fails as ``record:<path>``,
    whether RECORD lists it or not (no ``..`` member is under the package directory
    the listing walks), as the inventory found them (``WheelInventory.escaping``).
    ``{}`` for a directory."""
    if not isinstance(inv, WheelInventory):
        return {}
    return {installed_path(name): why for name, why in inv.escaping.items()}


def _row_escapes(inv: Inventory, raw: list[RecordEntry]) -> dict[str, str]:
    """A wheel's RECORD rows naming a member pip would write outside the directory it
    installs into (``install_escape`` on the row as written), by logical path: a
    ``record:<row>`` failure whether or not the wheel holds such a member, as an
    absolute or escaping row is in a directory. ``{}`` for a directory."""
    if not isinstance(inv, WheelInventory):
        return {}
    return {logical_path(inv, r.path): why for r in raw if (why := install_escape(r.path)) is not None}


def _primary(inv: Inventory, dists: list[str], package: str, present: set[str]) -> str | None:
    """The distribution being audited: named like the package, and, when several
    claim it, the one whose RECORD accounts for the most files present, then
    the one whose RECORD lists itself (the other is a leftover or a second
    version, reported by the shadowing check)."""
    named = [d for d in dists if d.endswith(".dist-info") and dist_name(d) == normalize(package)]
    candidates = named or [d for d in dists if d.endswith(".dist-info")]
    if len(candidates) <= 1:
        return candidates[0] if candidates else None

    def score(meta: str) -> tuple[int, bool]:
        """Files present it accounts for; on a tie, whether it lists its own RECORD,
        as every installer writes it: a dist-info copied under another name (a
        leftover, a decoy) lists the original's paths, not its own."""
        try:
            rows = parse_record(read_record(inv, f"{meta}/RECORD"), meta)
        except RecordError:
            return -1, False
        paths = {logical_path(inv, r.path) for r in rows}
        return len(paths & present), f"{meta}/RECORD" in paths

    return max(candidates, key=score)


def record_checks(rr: RecordRun) -> list[Check]:
    """Wait for ``rr``'s hashing and return every check of the family; the threads are
    stopped if judging fails (loaded by the caller while the threads hash)."""
    if rr.early is not None:
        return rr.early
    try:
        return judge(rr)
    except BaseException:
        rr.cancel()
        raise


def judge(rr: RecordRun) -> list[Check]:
    """Every check of the family, from what ``rr`` listed and hashed (waits for its threads)."""
    inv, package, files, run, wheel = rr.inv, rr.package, rr.files, rr.run, rr.wheel
    record, tree_sha256, progress, cache = rr.record, rr.tree_sha256, rr.progress, rr.cache
    dists = distributions(inv, package)
    primary = _primary(inv, dists, package, {e.path for e in files})

    rows: list[RecordEntry] = []
    record_path = f"{primary}/RECORD" if primary else None
    record_problem: str | None = None
    escapes: dict[str, str] = {}
    if record_path is None:
        record_problem = f"no *.dist-info for '{package}' in the target root: nothing to verify against"
    else:
        try:
            raw = parse_record(read_record(inv, record_path), record_path)
        except RecordError as exc:
            record_problem = str(exc)
        else:
            rows = _logical_rows(inv, raw)
            escapes = _row_escapes(inv, raw)
    if record:  # the members no row lists are reported only with the RECORD checks
        escapes = {**_member_escapes(inv), **escapes}

    located: dict[str, Entry | None] = {}
    by_path = {e.path: e for e in files}
    refused = {row.path for row in rows if row.path in escapes
               or (row.path not in by_path and _refused(inv, row.path))}
    for row in rows:
        located[row.path] = None if row.path in refused else (
            by_path.get(row.path) or _examined(inv, row.path))
    outside = [e for p, e in located.items() if e is not None and p not in by_path]
    # The dist-info files and scripts RECORD lists (a few kB), in this thread
    # while the threads finish the tree; then any rows with another algorithm
    # than sha256 (read again, streamed).
    outside_digests = hash_here(outside, wheel=wheel)
    digests = {**run.result(), **rr.unread, **outside_digests}
    # Not before the threads are done, though it needs no digest: vouching for a
    # startup module's bytecode (setuptools' _distutils_hack in every pip-made
    # 3.11 venv) may fork compile workers, and a fork while the hashing threads
    # run can leave a child holding a lock no thread of it will release.
    shadow = None
    if record or rr.startup_sha256 is not None:
        shadow = check_shadowing(inv, package, primary, rr.cache, rr.site_dir, rows=rows)
    extra = other_algorithm_digests(rows, located, wheel)

    ver = None
    if record_path is not None and record_problem is None:
        ver = verify(rows, record_path, located, digests, files, package, extra_digests=extra,
                     refused=refused, escapes=escapes)

    checks: list[Check] = []
    if record:
        checks.extend(_record_checks(ver, record_path, record_problem, package, files, digests))
    checks.append(_tree_check(files, digests, package, tree_sha256, ver, record_problem))
    if record and shadow is not None:
        # No pyc in the tree (a wheel, an install without bytecode): the
        # verification cache is not even opened.
        if cache is None and not rr.wanted:
            cache = VerifiedCache(None)
        interp = shadow.interpreter
        checks.extend(_bytecode_checks(files, digests, progress, cache,
                                       interp.release if interp else None))
        unvouched = _unvouched(primary, rows, ver, record_problem)
        checks.extend(_shadow_checks(shadow, package, primary,
                                     _plugin_report(inv, package, primary, unvouched,
                                                    [*shadow.on_path, *shadow.script_dirs])))
    if shadow is not None:
        checks.append(_startup_check(shadow, rr.startup_sha256))
    return checks


def _record_checks(ver: object, record_path: str | None, problem: str | None, package: str,
                   files: list[Entry], digests: dict[str, Digest]) -> list[Check]:
    from pp1audit.checks.distrecord import Verification

    if problem is not None or not isinstance(ver, Verification):
        return [error_check("record", problem or "RECORD could not be verified", record_path)]
    size = sum(d.size for d in digests.values() if d.sha256 is not None)
    ok = ver.verified
    summary = Check(
        id="record", kind=KIND, status=Status.PASS, path=record_path,
        message=(f"{ok:,} of {ok + len(ver.problems):,} files match {record_path}"
                 f" ({size / 1e6:,.0f} MB hashed; {ver.bytecode_listed:,} bytecode entries left to the "
                 f"bytecode check; {ver.unhashed} unhashed entries as installers write them"
                 + (f"; {ver.outside_absent} outside the target root not present" if ver.outside_absent
                    else "") + ")"
                 + (f"; {len(ver.problems)} problem(s) reported separately" if ver.problems else "")),
    )
    return [summary, *(_problem_check(p) for p in ver.problems)]


def _problem_check(p: Problem) -> Check:
    status = Status.ERROR if p.what == "unreadable" else Status.FAIL
    return Check(id=f"record:{p.path}", kind=KIND, status=status, path=p.path,
                 message=p.message[:1].upper() + p.message[1:], expected=p.expected, actual=p.actual)


def _tree_check(files: list[Entry], digests: dict[str, Digest], package: str, pin: str | None,
                ver: object, record_problem: str | None) -> Check:
    from pp1audit.checks.distrecord import Verification

    td = tree_digest(files, digests, package)
    if td.sha256 is None:
        return error_check("tree", f"tree digest not computable: unreadable {', '.join(td.unreadable[:5])}",
                      package + "/")
    base = f"tree digest over {td.files:,} files under {package}/ (dist-info and __pycache__ excluded)"
    if pin is None:
        return Check(id="tree", kind=KIND, status=Status.PASS, path=package + "/",
                     message=f"{base}: {td.sha256} (pin it as target.tree_sha256)",
                     actual=td.sha256)
    if pin == td.sha256:
        return Check(id="tree", kind=KIND, status=Status.PASS, path=package + "/",
                     message=base + " matches the pin", expected=pin, actual=td.sha256)
    if isinstance(ver, Verification):
        relevant = [p for p in ver.problems if p.path.startswith(package + "/")
                    and "__pycache__" not in p.path.split("/")]
        if relevant:
            names = ", ".join(f"{p.what} {p.path}" for p in relevant[:10])
            more = f" and {len(relevant) - 10} more" if len(relevant) > 10 else ""
            why = f"explained by RECORD: {names}{more}"
        else:
            why = ("every file matches RECORD, so RECORD describes this tree: the pin is for "
                   "another build, or RECORD was rewritten along with the files")
    else:
        special = [e.path for e in files if e.kind != "file"]
        why = ("no RECORD to compare file by file"
               + (f" ({record_problem})" if record_problem else "")
               + (f"; special files: {', '.join(special[:5])}" if special else ""))
    return Check(id="tree", kind=KIND, status=Status.FAIL, path=package + "/",
                 message=f"{base} differs from the pin; {why}", expected=pin, actual=td.sha256)


def _startup_check(rep: ShadowReport, pin: str | None) -> Check:
    """The ``startup`` check: the startup digest, against ``target.startup_sha256``
    when pinned. Built as the ``tree`` check is; a mismatch names every file of the
    set with the start of its digest (a venv has a handful), so the one added or
    changed shows against a listing of the pinned run."""
    files = rep.startup_files()
    sd = listing_digest(files)
    if sd.sha256 is None:
        return error_check("startup", "startup digest not computable: not read: "
                      + ", ".join(sd.unreadable[:5])
                      + (f" and {len(sd.unreadable) - 5} more" if len(sd.unreadable) > 5 else ""))
    base = f"startup code: {sd.files} file(s), digest {sd.sha256}"
    if pin is None:
        return Check(id="startup", kind=KIND, status=Status.PASS,
                     message=f"{base} (pin it as target.startup_sha256)", actual=sd.sha256)
    if pin == sd.sha256:
        return Check(id="startup", kind=KIND, status=Status.PASS,
                     message=f"{base} matches the pin", expected=pin, actual=sd.sha256)
    listing = ", ".join(f"{path} {_short(token)}" for path, token in files) or "none"
    return Check(id="startup", kind=KIND, status=Status.FAIL,
                 message=f"{base} differs from the pin: code run at every interpreter start, or a "
                 f"console script, was added, removed or changed (RECORD vouching does not rule that "
                 f"out); the files: "
                 f"{listing}", expected=pin, actual=sd.sha256)


def _short(token: str | None) -> str:
    """A startup file's token as the mismatch message shows it: 12 hex of a digest,
    a console script's ``script:`` and 12 hex, a symlink's or special file's token whole."""
    if token is None:
        return "not read"
    if token.startswith("script:"):  # treedigest.script_token: a digest too
        return token[:19]
    return token[:12] if ":" not in token else token


def _bytecode_checks(files: list[Entry], digests: dict[str, Digest], progress: Progress | None,
                     cache: VerifiedCache | None, release: Release | None) -> list[Check]:
    rep = check_bytecode(files, digests, cache=cache or default_cache(), progress=progress,
                         target_release=release)
    other = ", ".join(f"{n} for {t}" for t, n in sorted(rep.other.items()))
    summary = Check(
        id="bytecode", kind=KIND, status=Status.PASS,
        message=(f"{rep.verified:,} bytecode files Python ({TAG}) would load are their sources compiled"
                 f" ({rep.cached:,} from the verification cache); {rep.stale:,} stale and "
                 f"{rep.orphans:,} without source are ignored by Python"
                 + (f"; unverifiable: {other}" if other else "")),
    )
    status = {"fail": Status.FAIL, "skip": Status.SKIP, "error": Status.ERROR}
    return [summary, *(
        Check(id=f"bytecode:{f.path}" if f.status != "skip" else f"bytecode:other:{f.path}",
              kind=KIND, status=status[f.status], path=f.path,
              message=f.message[:1].upper() + f.message[1:])
        for f in rep.findings
    )]


def _shadow_checks(rep: ShadowReport, package: str, primary: str | None,
                   plugins: PluginReport) -> list[Check]:
    where = f"; looked ahead on sys.path in {', '.join(rep.looked_in)}" if rep.looked_in else ""
    notes = f"; {'; '.join(rep.notes)}" if rep.notes else ""
    head = (f"{len(rep.findings)} import-shadowing problem(s) reported separately"
            if rep.findings else f"no other copy of '{package}' importable ahead of the audited one")
    summary = Check(
        id="shadowing", kind=KIND, status=Status.PASS,
        message=f"{head}; {rep.pth_files} .pth file(s) checked; {_plugin_summary(plugins, package, primary)}"
                f"{notes}{where}",
    )
    status = {"fail": Status.FAIL, "skip": Status.SKIP, "error": Status.ERROR}
    return [summary, *(
        Check(id=s.id, kind=KIND, status=status[s.status], path=s.path, message=s.message)
        for s in rep.findings
    ), *(
        Check(id=f.id, kind=KIND, status=status[f.status], path=f.path, message=f.message)
        for f in plugins.findings
    )]


def _plugin_summary(rep: PluginReport, package: str, primary: str | None) -> str:
    """The entry-point part of the shadowing summary: what passed, where problems are."""
    own = (f"{rep.own} entry point(s) in {package}.* groups, all declared by {primary} and "
           "vouched for by its RECORD" if rep.own else f"no entry point in {package}.* groups")
    bad = f" ({len(rep.findings)} entry-point problem(s) reported separately)" if rep.findings else ""
    where = f" (in the target root and {', '.join(rep.elsewhere)})" if rep.elsewhere else ""
    notes = "".join(f"; {note}" for note in rep.notes)
    return f"{own}{bad}; {rep.files} entry_points.txt file(s) read{where}{notes}"


def _unvouched(primary: str | None, rows: list[RecordEntry], ver: object,
               record_problem: str | None) -> str | None:
    """Why the audited distribution's ``entry_points.txt`` is not the one its RECORD
    vouches for, or None when RECORD lists it with a hash it matches. Its entry
    points are then the wheel's own (vLLM's two ``vllm.general_plugins``)."""
    from pp1audit.checks.distrecord import Verification

    if primary is None:
        return None  # every distribution is another one
    path = f"{primary}/entry_points.txt"
    if record_problem is not None or not isinstance(ver, Verification):
        return f"its RECORD could not be verified: {record_problem or 'not read'}"
    row = next((r for r in rows if r.path == path), None)
    if row is None:
        return f"{primary}/RECORD does not list it"
    if row.digest is None:
        return f"{primary}/RECORD lists it without a hash"
    problem = next((p for p in ver.problems if p.path == path), None)
    return f"{problem.what}: {problem.message}" if problem is not None else None


def _plugin_report(inv: Inventory, package: str, primary: str | None,
                   unvouched: str | None, elsewhere: list[str] | None = None) -> PluginReport:
    """The entry points of every distribution ``importlib.metadata`` finds, judged
    (``entrypoints.judge``): those of the target root, then those of ``elsewhere``,
    what ``site`` puts on ``sys.path`` besides it (``ShadowReport.on_path``: the
    directories and zips ``.pth`` path lines add, the system site-packages a venv
    lets in), and the directories of the audited distribution's console scripts
    (``ShadowReport.script_dirs``: Python puts a script's directory first on
    ``sys.path`` when it runs, so a ``bin/evil-1.0.dist-info`` declaring a
    ``vllm.general_plugins`` entry point is loaded by ``vllm serve``), which
    ``importlib.metadata`` searches all the same. Every
    distribution found is judged, none passed over as a duplicate: ``entry_points()``
    keeps the first of each normalised name, but which name that is depends on the
    target's version (CPython 3.11 takes it from the directory's name only when it
    ends in exactly ``.dist-info`` / ``.egg-info``, else from METADATA's ``Name``;
    an egg's ``EGG-INFO`` from PKG-INFO's), so a ``pip-99.DIST-INFO`` naming itself
    ``evilplug`` was loaded while the audit took it for ``pip`` and skipped it.
    Judging every one can only fail more. The standard library's directories are
    not looked at (trusted, as in the shadowing check).

    A distribution is a child ``importlib.metadata`` takes for one
    (``record.is_distribution``). A directory's ``entry_points.txt`` is read
    when it is a regular file within the size cap (``read_small``: never a FIFO,
    never through a symlink); a file named like metadata has no entry points
    (``importlib.metadata`` finds none in it); a symlink would be followed by
    Python, and is not by the audit. A zip is read through its central directory.
    """
    rep = PluginReport()
    _dir_plugins(rep, inv, "", package, primary, unvouched)
    for path in dict.fromkeys(elsewhere or []):
        try:
            st = os.stat(path)
        except OSError:
            continue
        # importlib.metadata's Lookup: an EGG-INFO counts inside a *.egg (any case).
        egg = os.path.basename(path).lower().endswith(".egg")
        rep.elsewhere.append(path)
        if stat.S_ISDIR(st.st_mode):
            _dir_plugins(rep, DirInventory(path), path.rstrip(os.sep) + os.sep, package, None, None,
                         egg=egg)
        elif stat.S_ISREG(st.st_mode):
            _zip_plugins(rep, path, package, egg=egg)
    return rep


def _dir_plugins(rep: PluginReport, inv: Inventory, shown: str, package: str, primary: str | None,
                 unvouched: str | None, *, egg: bool = False) -> None:
    """The distributions of one directory (``shown``: '' for the target root, else its
    path + '/'), each judged into ``rep``. ``egg``: the directory is a ``*.egg`` (its
    ``EGG-INFO`` is a distribution)."""
    for child, kind in inv.children(""):
        if not is_distribution(child, egg=egg) or kind not in (DIR, SYMLINK):
            continue
        meta, where = shown + child, f"{shown}{child}/entry_points.txt"
        if kind == SYMLINK:
            rep.findings.append(PluginFinding(
                f"plugin:{meta}", meta, "fail",
                f"{meta} is a symbolic link named as distribution metadata: importlib.metadata "
                f"follows it and {package} loads the entry points it finds there; not followed"))
            continue
        e = inv.entry(f"{child}/entry_points.txt")
        if e is None or e.kind == DIR:  # importlib.metadata finds no entry points
            continue
        if e.kind != FILE:
            rep.findings.append(PluginFinding(
                f"plugin:{where}", where, "fail",
                f"{where} {what_it_is(e)}: importlib.metadata opens it whenever {package} looks for "
                "plugins (a FIFO hangs it, a link reads what it names); not opened"))
            continue
        if e.size > ENTRY_POINTS_MAX:
            rep.findings.append(_unread_plugins(where, package, f"is {e.size:,} bytes, over the "
                                                f"{ENTRY_POINTS_MAX >> 20} MiB read"))
            continue
        data = read_small(inv, e.path, limit=ENTRY_POINTS_MAX)
        if data is None:
            rep.findings.append(_unread_plugins(where, package, "cannot be read"))
            continue
        _judge_plugins(rep, meta, data, package, primary, unvouched)


def _zip_plugins(rep: PluginReport, path: str, package: str, *, egg: bool) -> None:
    """The distributions of a zip on ``sys.path`` (an egg a path line adds): its
    central directory read for ``<dist>/entry_points.txt``, those read and judged.
    A zip that cannot be opened is a note (the shadowing check fails it already:
    zipimport would import from it); a member that cannot be read is an error."""
    try:
        index = open_zip(path, PATH_ZIP_MAX)
    except NotAZip:
        return  # no zip at all: it declares nothing, and zipimport imports nothing from it
    except (OSError, ZipError) as exc:
        rep.notes.append(f"{path} (on sys.path) cannot be read ({exc}): whether it declares entry "
                         f"points for {package} is unknown")
        return
    try:
        for member in index.names:
            child, _, rest = member.partition("/")
            if rest != "entry_points.txt" or not is_distribution(child, egg=egg):
                continue
            meta, where = f"{path}/{child}", f"{path}/{member}"
            try:
                found = index.info(member)
                data = index.read(found, ENTRY_POINTS_MAX) if found is not None else None
            except ZipError as exc:
                rep.findings.append(_unread_plugins(where, package, f"cannot be read ({exc})"))
                continue
            if data is not None:
                _judge_plugins(rep, meta, data, package, None, None)
    finally:
        index.close()


def _unread_plugins(where: str, package: str, why: str) -> PluginFinding:
    """An ``entry_points.txt`` the audit could not read: an error, never a pass."""
    return PluginFinding(f"plugin:{where}", where, "error",
                         f"{where} {why}: which entry points it gives {package} is unknown")


def _judge_plugins(rep: PluginReport, meta: str, data: bytes, package: str, primary: str | None,
                   unvouched: str | None) -> None:
    """One ``entry_points.txt`` read: parsed as ``importlib.metadata`` parses it and judged."""
    where = f"{meta}/entry_points.txt"
    rep.files += 1
    try:
        eps = parse_entry_points(data, where)
    except EntryPointsError as exc:
        rep.findings.append(PluginFinding(
            f"plugin:{where}", where, "fail",
            f"malformed: {exc}; importlib.metadata.entry_points() raises on it, for "
            f"{package}'s plugin discovery as for every other caller"))
        return
    own = primary is not None and meta == primary
    found, passed = judge_entry_points(meta, eps, package, own=own, unvouched=unvouched if own else None)
    rep.findings.extend(found)
    rep.own += passed
