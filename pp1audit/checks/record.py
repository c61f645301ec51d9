"""``record``: the whole distribution against its RECORD, the tree digest, bytecode, shadowing.

One inventory and one parallel hashing pass feed every part, so each file is
read once (sources and bytecode are kept in memory for the bytecode check).
This module lists the tree and starts the hashing (``RecordRun``);
``checks/record_judge.py`` makes the checks from what was hashed (its ``record_checks``
is what a caller collects: the listing never imports the judging).
To keep results readable on a 5,000-file package, each part yields one summary
check that passes, plus one check per problem file:

* ``record`` — summary; ``record:<path>`` — modified / missing / unlisted /
  not a regular file (see ``pp1audit.checks.distrecord`` for the rules);
* ``tree`` — the tree digest (``actual``), compared with ``target.tree_sha256``
  when pinned; on a mismatch the message names the files that explain it;
* ``startup`` — the startup digest (``actual``) over the code that runs at every
  interpreter start (the shadowing check's startup set: ``.pth`` files,
  ``sitecustomize`` / ``usercustomize``, the modules a vouched ``.pth``
  imports, ``pyvenv.cfg``, and the audited distribution's console scripts,
  ``../../../bin/vllm``), compared with ``target.startup_sha256`` when
  pinned; on a mismatch the message names every file of the set with its
  digest. RECORD vouches for these files only against accidents (a forged
  ``*.dist-info`` or a re-hashed row vouches as well); the pin is the anchor, as
  ``tree_sha256`` is for the package;
* ``bytecode`` — summary; ``bytecode:<pyc>`` — tampered (fail) or another
  interpreter's (skip) bytecode (see ``pp1audit.checks.bytecode``);
* ``shadowing`` — summary; ``pth:<file>`` / ``shadow:<path>`` / ``pyvenv:<cfg>``
  — executing ``.pth`` files, path lines to what does not exist or others can
  write, other copies of the package (beside a console script too), modules no
  RECORD lists (at the root, beside a console script), a symlinked
  ``pyvenv.cfg``, a ``bin/python`` that is a script (see
  ``pp1audit.checks.shadowing``); a startup module's bytecode that only another
  interpreter or release could verify is a ``skip`` (``pth:<file>:other:<pyc>``);
  ``plugin:<dist-info>/entry_points.txt[:<line>]`` — entry points in the
  package's own groups (``vllm.general_plugins``…) that another distribution
  declares (in the target root, or in a directory or zip a ``.pth`` path line
  or the admitted system site-packages put on ``sys.path``, or in a console
  script's directory, named by its full path), or that the audited one
  declares without its RECORD vouching for them (see ``pp1audit.checks.entrypoints``).
  They are code the package itself imports and runs, so the shadowing summary
  names them too.
"""

from __future__ import annotations

from pp1audit.checks.bytecode import VerifiedCache, keep_for_bytecode, pyc_name
from pp1audit.checks.sitemodel import site_dir_as_given
from pp1audit.errors import TargetError
from pp1audit.result import Check, Status
from pp1audit.sources import DirectorySource, Source
from pp1audit.sources.hashing import KEEP_FILE, Digest, HashRun, Progress, too_large
from pp1audit.sources.inventory import FILE, DirInventory, Entry, Inventory, WheelInventory, inventory_for

KIND = "record"


def error_check(cid: str, message: str, path: str | None = None) -> Check:
    """A check of the family that could not be made (status ``ERROR``): shared by the
    listing here and the judging in ``record_judge``."""
    return Check(id=cid, kind=KIND, status=Status.ERROR, message=message, path=path)


class RecordRun:
    """The ``record`` family of checks for ``package`` in ``source``, in two halves,
    so a caller can do other work while the tree hashes.

    Constructing it lists the package directory and starts hashing (large
    files as soon as the listing finds them); ``checks()`` then finds and
    parses RECORD while the threads work, waits for them and judges. With
    ``record`` False only the tree digest is checked against ``tree_sha256``
    (RECORD is still read, quietly, to explain a mismatch), and the startup
    digest when ``startup_sha256`` is pinned (the shadowing check is run for its
    startup set, its findings not reported). Hashing
    is nearly all of a ``--record`` run, so ``audit`` starts it before the
    other checks rather than after them.
    """

    def __init__(
        self,
        package: str,
        source: Source,
        *,
        record: bool = True,
        tree_sha256: str | None = None,
        startup_sha256: str | None = None,
        progress: Progress | None = None,
        cache: VerifiedCache | None = None,
    ) -> None:
        self.package = package
        self.record = record
        self.tree_sha256 = tree_sha256
        self.startup_sha256 = startup_sha256
        self.progress = progress
        self.cache = cache
        self.wanted: set[str] | None = None
        """The sources the listing's pycs name (kept for the bytecode check); None until it ends."""
        self._early: list[Check] | None = None
        self.unread: dict[str, Digest] = {}
        """Entries listed but deliberately not read, with why (``_add``)."""
        self.files: list[Entry] = []
        try:
            self.inv = inventory_for(source, package)
        except TargetError as exc:
            self._early = [error_check("record", str(exc))]
            return
        self.wheel = self.inv.zip if isinstance(self.inv, WheelInventory) else None
        self.site_dir = _site_dir(source, self.inv)
        self.run = HashRun(wheel=self.wheel, progress=progress, keep=self._keep)
        try:
            self.files = self.inv.walk(package, self._add)
            # The sources a pyc names, kept in memory for the bytecode check.
            self.wanted = {n.source for e in self.files if (n := pyc_name(e.path)) is not None}
            self.run.close()
        except TargetError as exc:  # the package directory leads outside the root
            self.run.cancel()
            self._early = [error_check("record", str(exc), package + "/")]
            return
        except BaseException:
            self.run.cancel()
            raise
        if not self.files:
            self.run.cancel()
            self._early = [error_check("record", f"no files under {package}/ in the target", package + "/")]

    def _add(self, e: Entry) -> None:
        """Hand a listed entry to the hashing threads, except bytecode nothing will
        read: only the bytecode check reads a pyc (RECORD and the tree digest
        leave ``__pycache__`` to it), so without ``record`` no pyc is read, and
        with it none too large to compare (a 40 GB sparse pyc would buy nothing).
        A wheel member pip would write outside the package (``vllm/..\\..\\x.py``
        on Windows) is not read either: it fails as outside the installation, and
        which tree the wheel installs depends on the platform, so the tree digest
        names it as not computable rather than digest one platform's tree."""
        inv = self.inv
        if isinstance(inv, WheelInventory) and ("\\" in e.ref or ":" in e.ref) and e.ref in inv.escaping:
            self.unread[e.path] = Digest(None, e.size, unkept="outside the installation: not read")
            return
        if e.kind == FILE and pyc_name(e.path) is not None and (not self.record or e.size > KEEP_FILE):
            why = too_large(e.size) if self.record else "not read: only --record judges bytecode"
            self.unread[e.path] = Digest(None, e.size, unkept=why)
            return
        self.run.add(e)

    def _keep(self, e: Entry) -> bool:
        """Whether the hashing threads keep ``e``'s bytes: bytecode, and the sources
        bytecode names. Asked at hashing time; a large ``.py`` hashed before the
        listing ended is kept to be safe (small files wait for the listing)."""
        if not self.record or not keep_for_bytecode(e):
            return False
        return not e.path.endswith(".py") or self.wanted is None or e.path in self.wanted

    def cancel(self) -> None:
        """Abandon the run (the caller failed before collecting it)."""
        if self._early is None:
            self.run.cancel()
        if self.progress is not None:
            self.progress.stop()

    @property
    def early(self) -> list[Check] | None:
        """The family's checks when listing already failed (nothing to hash), else None."""
        return self._early


def _site_dir(source: Source, inv: Inventory) -> str | None:
    """The target root as ``site`` spells it: the path given, symlinks kept
    (``sitemodel.site_dir_as_given``); None for a wheel."""
    if not isinstance(inv, DirInventory) or not isinstance(source, DirectorySource):
        return None
    return site_dir_as_given(source.location, inv.root, package_given=source.mount is not None)
