"""``git`` / ``donor`` / remote ``file`` checks, and citations read from named sources.

Evidence outside the target: a repository at a pinned commit (``--repo NAME=PATH``),
refs recorded at audit time, "commit X contains / lacks Y" rules, remote files
pinned by URL and SHA-256 (read from the content-addressed cache), and donor
patches whose hunks are looked for in a tree.

The statuses follow the contract: an input that was not given (no ``--repo``, a
pin never fetched) is ``skip`` and says how to provide it; a commit the clone
lacks is ``fail`` and says to fetch it; a moving ref that moved is ``pass`` with
the move in the message; a fixed ref that moved is ``fail``.

``ProvenanceRun`` opens clones and cache entries lazily and only once per run;
nothing is printed and nothing is written (except by ``fetch``, which the CLI
asks for explicitly).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pp1audit.checks.citations import check_citation
from pp1audit.errors import Pp1Error, SourceError
from pp1audit.manifest import Citation, Manifest
from pp1audit.manifest.provenance import TARGET, ContentRule, GitSourceSpec, RefPin, RemotePin
from pp1audit.result import Check, Status
from pp1audit.sources.runconfig import ProvenanceOptions
from pp1audit.sources.store import FileStore

if TYPE_CHECKING:
    from pp1audit.checks.patches import HunkStatus
    from pp1audit.rules.engine import Engine
    from pp1audit.rules.model import Invariant
    from pp1audit.sources.cache import Cache
    from pp1audit.sources.git import Clone, GitSource


def short(sha: str) -> str:
    """The 12-character abbreviation used in messages."""
    return sha[:12]


@dataclass(frozen=True)
class _Unavailable:
    """Why a named source cannot be read: a ready-made status and message."""

    status: Status
    message: str


def check_repo_names(options: ProvenanceOptions, sources: Collection[str]) -> None:
    """``Pp1Error`` (exit 2) for a ``--repo`` name the manifest has no git source for:
    a typo would otherwise leave the intended source silently unchecked."""
    unknown = sorted(options.named_on_command_line - set(sources))
    if unknown:
        known = ", ".join(sorted(sources)) or "none"
        raise Pp1Error(
            f"--repo {unknown[0]}: the manifest has no git source '{unknown[0]}' "
            f"(its sources: {known})"
        )


class ProvenanceRun:
    """Provenance checks of one manifest for one run (clones and cache opened lazily)."""

    def __init__(self, manifest: Manifest, options: ProvenanceOptions | None = None,
                 target: FileStore | None = None) -> None:
        self.manifest = manifest
        self.prov = manifest.provenance
        self.options = options or ProvenanceOptions()
        self.target = target
        check_repo_names(self.options, self.prov.sources)
        self._clones: dict[str, Clone] = {}
        self._stores: dict[tuple[str, str], FileStore | _Unavailable] = {}
        self._remote: dict[str, FileStore | _Unavailable] = {}
        self._fetch_errors: dict[str, Exception] = {}
        self._cache: Cache | None = None
        self._engines: dict[int, Engine] = {}

    # -- opening things -------------------------------------------------------

    def open_clones(self) -> None:
        """Open every clone the manifest uses; a path that is not a git repository is exit 2."""
        for name in self.options.repos:
            if name in self.prov.sources:
                self.clone(name)

    def clone(self, name: str) -> Clone | None:
        """The clone given for a source, or None when ``--repo`` did not name it."""
        path = self.options.repos.get(name)
        if path is None:
            return None
        if name not in self._clones:
            from pp1audit.sources.git import Clone

            self._clones[name] = Clone(name, path, self.options.repo_origin(name))
        return self._clones[name]

    def git_store(self, name: str, commit: str | None = None) -> FileStore | _Unavailable:
        """A store over ``commit`` (default: the pinned one) of source ``name``."""
        spec = self.prov.sources[name]
        sha = commit or spec.commit
        key = (name, sha)
        if key not in self._stores:
            clone = self.clone(name)
            hit: FileStore | _Unavailable
            if clone is None:
                hit = _Unavailable(Status.SKIP, self._not_given(name))
            else:
                hit = self._commit_store(clone, sha)
            self._stores[key] = hit
        return self._stores[key]

    def _commit_store(self, clone: Clone, sha: str) -> FileStore | _Unavailable:
        """A store over a commit of a clone: ``fail`` when the clone lacks it,
        ``error`` when its object cannot be read or does not hash to its id."""
        from pp1audit.sources.git import CloneError

        try:
            source = clone.source(sha)
        except CloneError as exc:
            return _Unavailable(Status.ERROR, str(exc))
        if source is None:
            return _Unavailable(Status.FAIL, self._missing_commit(clone, sha))
        return FileStore(source)

    def cache(self) -> Cache:
        """The content-addressed cache of remote pins."""
        if self._cache is None:
            from pp1audit.sources.cache import Cache, default_cache_dir

            self._cache = Cache(self.options.cache_dir or default_cache_dir(),
                                self.options.policy.max_bytes)
        return self._cache

    def remote_store(self, pin_id: str) -> FileStore | _Unavailable:
        """A one-file store over a pin's verified cached bytes, or why there is none."""
        if pin_id not in self._remote:
            from pp1audit.sources.cache import FetchError
            from pp1audit.sources.remote import RemoteSource

            pin = self.prov.remotes[pin_id]
            hit: FileStore | _Unavailable
            failed = self._fetch_errors.get(pin_id)
            try:
                data = self.cache().lookup(pin.sha256)
            except FetchError as exc:
                data, failed = None, exc
            if data is not None:
                hit = FileStore(RemoteSource(pin.path, data, pin.download))
            elif failed is not None:
                hit = _Unavailable(self._fetch_status(failed), str(failed))
            else:
                # No cache path: the message goes into the report, which must read
                # the same for every user and machine (``fetch`` says where it stores).
                hit = _Unavailable(Status.SKIP, "not fetched: no copy in the cache; "
                                   "run pp1audit fetch")
            self._remote[pin_id] = hit
        return self._remote[pin_id]

    @staticmethod
    def _fetch_status(exc: Exception) -> Status:
        from pp1audit.sources.download import DigestMismatch

        return Status.FAIL if isinstance(exc, DigestMismatch) else Status.ERROR

    def fetch_all(self) -> list[tuple[RemotePin, str, Exception | None]]:
        """Download every remote pin not yet cached: ``(pin, message, error or None)``.

        Failures are remembered so that the checks of those pins report them.
        """
        from pp1audit.sources.cache import FetchError
        from pp1audit.sources.download import download

        out: list[tuple[RemotePin, str, Exception | None]] = []
        for pin in self.prov.remotes.values():
            try:
                got = download(pin.download, pin.sha256, self.cache(), self.options.policy)
            except FetchError as exc:
                self._fetch_errors[pin.id] = exc
                self._remote.pop(pin.id, None)
                out.append((pin, str(exc), exc))
                continue
            if got.already_cached:
                msg = "already cached"
            else:
                via = f" via {got.redirects} redirect(s) from {got.final_url}" if got.redirects else ""
                msg = f"fetched {got.size} bytes{via}; SHA-256 verified"
            out.append((pin, msg, None))
        return out

    def close(self) -> None:
        """Stop git helper processes."""
        for clone in self._clones.values():
            clone.close()

    @staticmethod
    def _not_given(name: str) -> str:
        return f"git source '{name}' not given; pass --repo {name}=PATH (or set it in pp1audit.toml)"

    @staticmethod
    def _missing_commit(clone: Clone, sha: str) -> str:
        return (f"commit {short(sha)} is not in {clone.shown}; fetch it "
                f"({clone.command(f'fetch origin {sha}')})")

    # -- checks ---------------------------------------------------------------

    def citation(self, citation: Citation) -> Check:
        """A citation whose file lives in a named git source or a remote pin."""
        name = citation.source or TARGET
        store = self.git_store(name) if name in self.prov.sources else self.remote_store(name)
        if isinstance(store, _Unavailable):
            span = citation.span
            return Check(id=citation.id, kind="citation", status=store.status, path=span.path,
                         lines=(span.start, span.end), source=name, message=store.message)
        pinned = self.prov.pins(name).get(citation.span.path)
        if pinned is None and citation.anchor is None and name in self.prov.sources:
            return self._commit_fixed_citation(citation, store, name)
        return check_citation(citation, pinned, store, source=name,
                              invariant_anchor=self._invariant_anchor(store))

    def _engine(self, store: FileStore) -> Engine:
        """One structural-match engine per source store (each file parsed once per run)."""
        from pp1audit.rules.engine import Engine

        engine = self._engines.get(id(store))
        if engine is None:
            engine = self._engines[id(store)] = Engine(store)
        return engine

    def _invariant_anchor(self, store: FileStore) -> Callable[[Citation, Check], Check]:
        """How a citation in this store follows an invariant anchor (on the same source)."""

        def follow(citation: Citation, base: Check) -> Check:
            from pp1audit.checks.invariants import anchored_citation

            return anchored_citation(citation, base, self._engine(store), self.manifest.invariants)

        return follow

    def _commit_fixed_citation(self, citation: Citation, store: FileStore, name: str) -> Check:
        """A git citation with neither pin nor anchor: the pinned commit fixes its content.

        Git names blobs by their hash, so the span read at the pinned commit is the
        cited text; what can still fail is the file or the lines being absent.
        """
        span = citation.span
        pinned = (span.start, span.end)
        base: dict[str, Any] = {"id": citation.id, "kind": "citation", "path": span.path,
                                "lines": pinned, "source": name}
        try:
            lines = store.get(span.path).text_lines()
        except SourceError as exc:
            from pp1audit.checks import source_problem

            return source_problem(exc, id=citation.id, kind="citation", lines=pinned, source=name)
        commit = short(self.prov.sources[name].commit)
        if span.end > len(lines):
            return Check(**base, status=Status.FAIL,
                         message=f"{span} is past the end of {span.path} at {name}@{commit} "
                         f"({len(lines)} lines)")
        return Check(**base, status=Status.PASS, found_lines=pinned,
                     excerpt="\n".join(lines[span.start - 1 : span.end]),
                     message=f"read at {name}@{commit} (no anchor: the commit id fixes the content)")

    def invariant(self, inv: Invariant) -> Check:
        """An invariant on a file of a named git source (pinned commit) or remote pin."""
        from pp1audit.checks.invariants import check_invariant

        name = inv.source or TARGET
        store = self.git_store(name) if name in self.prov.sources else self.remote_store(name)
        if isinstance(store, _Unavailable):
            return Check(id=inv.id, kind="invariant", status=store.status, path=inv.file,
                         source=name, message=store.message)
        return check_invariant(inv, self._engine(store), source=name)

    def checks(self) -> list[Check]:
        """Every provenance check the manifest asks for, in manifest order."""
        out: list[Check] = []
        for spec in self.prov.sources.values():
            out.append(self.commit_check(spec))
            out.extend(self.file_pin(spec, path, digest) for path, digest in spec.files.items())
            out.extend(self.ref_check(spec, ref) for ref in spec.refs)
            out.extend(self.content_check(spec, rule) for rule in spec.rules)
        for pin in self.prov.remotes.values():
            out.append(self.pin_check(pin))
            if pin.donor:
                out.extend(self.donor_checks(pin))
        return out

    def commit_check(self, spec: GitSourceSpec) -> Check:
        """The pinned commit is in the clone."""
        cid = f"{spec.name}:commit"
        store = self.git_store(spec.name)
        base: dict[str, Any] = {"id": cid, "kind": "git", "source": spec.name,
                                "expected": spec.commit}
        if isinstance(store, _Unavailable):
            return Check(**base, status=store.status, message=store.message)
        return Check(**base, status=Status.PASS, actual=spec.commit,
                     message=f"pinned commit {short(spec.commit)} is in the clone")

    def file_pin(self, spec: GitSourceSpec, path: str, digest: str) -> Check:
        """A SHA-256 pin of a file at the source's pinned commit."""
        from pp1audit.checks.files import check_file

        store = self.git_store(spec.name)
        if isinstance(store, _Unavailable):
            return Check(id=f"file:{spec.name}:{path}", kind="file", status=store.status,
                         path=path, expected=digest, source=spec.name, message=store.message)
        return replace(check_file(path, digest, store, source=spec.name),
                       id=f"file:{spec.name}:{path}")

    def ref_check(self, spec: GitSourceSpec, ref: RefPin) -> Check:
        """Where a recorded ref points now, judged by whether it may move."""
        label = "moving" if ref.moving else "fixed"
        base: dict[str, Any] = {"id": f"{spec.name}:ref:{ref.name}", "kind": "git",
                                "source": spec.name, "expected": ref.commit}
        clone = self.clone(spec.name)
        if clone is None:
            return Check(**base, status=Status.SKIP, message=self._not_given(spec.name))
        from pp1audit.sources.git import CloneError

        try:
            found = clone.resolve_ref(ref.name)
        except CloneError as exc:
            return Check(**base, status=Status.ERROR, message=str(exc))
        if found is None:
            status = Status.SKIP if ref.moving else Status.FAIL
            return Check(**base, status=status,
                         message=f"{label} ref '{ref.name}' is not in {clone.shown}")
        full, now = found
        if now == ref.commit:
            return Check(**base, status=Status.PASS, actual=now,
                         message=f"{full} still at the recorded {short(now)}")
        try:
            text = self._move(clone, full, ref.commit, now)
        except CloneError as exc:
            return Check(**base, status=Status.ERROR, actual=now, message=str(exc))
        # Whether the move was a fast-forward is information: a fixed ref that moved
        # has failed, a moving one passes, however (or whether) its history is known.
        if ref.moving:
            return Check(**base, status=Status.PASS, actual=now,
                         message=f"{text} (moving ref: information)")
        return Check(**base, status=Status.FAIL, actual=now, message=f"fixed ref moved: {text}")

    @staticmethod
    def _move(clone: Clone, full: str, recorded: str, now: str) -> str:
        """What a moved ref did, in words: never "rewritten" where a shallow clone
        only stops its history (then it says the move cannot be told, and how to
        deepen the clone)."""
        was = short(recorded)
        where = f"{full} now at {short(now)}"
        moved = clone.ancestry(recorded, now)
        deepen = f" (the clone is shallow; {clone.unshallow_hint()})" if moved.shallow else ""
        if moved.kind == "ahead":
            n = f"at least {moved.ahead}" if moved.at_least else str(moved.ahead)
            return f"{where}, {n} commit(s) ahead of the recorded {was}"
        if moved.kind == "absent":
            return f"{where}; the recorded {was} is not in this clone{deepen}"
        if moved.kind == "cut":
            return (f"{where}; whether it descends from the recorded {was} cannot be told: "
                    f"{clone.shown} is shallow and its history stops before the answer "
                    f"({clone.unshallow_hint()})")
        return f"{where}, not a descendant of the recorded {was} (history rewritten or reset)"

    def content_check(self, spec: GitSourceSpec, rule: ContentRule) -> Check:
        """``contains`` / ``lacks``: a path or bytes in a commit's tree."""
        base: dict[str, Any] = {"id": f"{spec.name}:{rule.id}", "kind": "git", "source": spec.name,
                                "path": rule.path, "expected": rule.sha256}
        store = self.git_store(spec.name, rule.commit)
        if isinstance(store, _Unavailable):
            return Check(**base, status=store.status, message=store.message)
        source: GitSource = store.source  # type: ignore[assignment]
        data = None
        if rule.donor is not None:
            cached = self.remote_store(rule.donor)
            if isinstance(cached, FileStore):
                pin = self.prov.remotes[rule.donor]
                data = cached.get(pin.path).data
        problems: list[str] = []
        facts: list[str] = []
        try:
            self._judge_content(rule, store, source, data, problems, facts, base)
        except SourceError as exc:
            return Check(**base, status=Status.ERROR, message=f"{exc.path}: {exc.message}")
        verb = "must contain" if rule.present else "must not contain"
        if problems:
            return Check(**base, status=Status.FAIL, message=f"{verb}: " + "; ".join(problems))
        return Check(**base, status=Status.PASS, message="; ".join(facts))

    @staticmethod
    def _judge_content(
        rule: ContentRule, store: FileStore, source: GitSource, data: bytes | None,
        problems: list[str], facts: list[str], base: dict[str, Any],
    ) -> None:
        """Collect what holds (``facts``) and what does not (``problems``) for one rule."""
        at = f"commit {short(rule.commit)}"
        what = (f"{rule.donor}'s bytes" if rule.donor
                else f"a file with SHA-256 {short(rule.sha256)}" if rule.sha256 else None)
        if rule.path is not None:
            present = source.exists(rule.path)
            if rule.present and not present:
                problems.append(f"{rule.path} is not in {at}")
            elif rule.present and rule.sha256 is not None:
                actual = store.get(rule.path).sha256 if present else None
                if actual != rule.sha256:
                    base["actual"] = actual
                    problems.append(f"{rule.path} in {at} is not {what}")
                else:
                    facts.append(f"{rule.path} in {at} has {what}")
            elif rule.present:
                facts.append(f"{rule.path} is in {at}")
            elif present:
                problems.append(f"{rule.path} is in {at}")
            else:
                facts.append(f"{rule.path} is not in {at}")
        if rule.sha256 is not None and not (rule.present and rule.path is not None):
            found = source.find_bytes(rule.sha256, data)
            if rule.present and not found:
                problems.append(f"no file in {at} has {what}")
            elif rule.present:
                facts.append(f"{at} has {what} at {', '.join(found)}")
            elif found:
                problems.append(f"{at} has {what} at {', '.join(found)}")
            else:
                facts.append(f"no file in {at} has {what}")

    def pin_check(self, pin: RemotePin) -> Check:
        """The cached copy of a remote pin exists and still has its digest."""
        kind = "donor" if pin.donor else "file"
        store = self.remote_store(pin.id)
        base: dict[str, Any] = {"id": pin.id, "kind": kind, "source": pin.id, "path": pin.path,
                                "expected": pin.sha256}
        if isinstance(store, _Unavailable):
            return Check(**base, status=store.status, message=store.message)
        at = f" (pins commit {short(pin.commit)})" if pin.commit else ""
        return Check(**base, status=Status.PASS, actual=pin.sha256,
                     message=f"cached copy of {pin.download} matches its SHA-256{at}")

    def donor_checks(self, pin: RemotePin) -> list[Check]:
        """The donor patch's hunks in the tree it applies to: a summary and one check per hunk."""
        from pp1audit.checks.patches import patch_status, tally
        from pp1audit.checks.patchmatch import APPLIED, NOT_APPLIED
        from pp1audit.checks.patchparse import PatchError

        cid = f"{pin.id}:hunks"
        where = "the target" if pin.applies_to == TARGET else (
            f"{pin.applies_to}@{short(self.prov.sources[pin.applies_to].commit)}")
        base: dict[str, Any] = {"id": cid, "kind": "donor", "source": pin.applies_to,
                                "expected": pin.expect}
        patch = self.remote_store(pin.id)
        if isinstance(patch, _Unavailable):
            status = Status.SKIP if patch.status is Status.SKIP else Status.ERROR
            return [Check(**base, status=status,
                          message=f"hunks not checked: {patch.message}")]
        tree = self.target if pin.applies_to == TARGET else self.git_store(pin.applies_to)
        if tree is None:
            return [Check(**base, status=Status.SKIP, message="no target tree to look in")]
        if isinstance(tree, _Unavailable):
            return [Check(**base, status=tree.status, message=tree.message)]
        # An installed package holds only the package directory: a donor's hunks
        # outside it are counted, not judged (see ``patch_status``).
        scope = self.manifest.package + "/" if pin.applies_to == TARGET else ""
        try:
            judged = patch_status(patch.get(pin.path).data, tree, pin.strip, within=scope)
        except PatchError as exc:
            return [Check(**base, status=Status.ERROR, message=f"{pin.id}: {exc}")]
        outside = f"; {judged.outside} hunk(s) outside {scope} not checked" if judged.outside else ""
        if not judged.hunks:
            return [Check(**base, status=Status.ERROR,
                          message=f"{pin.id} changes nothing under {scope}{outside}")]
        statuses = judged.hunks
        actual = ", ".join(f"{v} {k}" for k, v in tally(statuses).items()) + outside
        want = {"applied": APPLIED, "not-applied": NOT_APPLIED}.get(pin.expect or "")
        status, message = self._donor_verdict(pin, statuses, want, where, actual, outside)
        out = [Check(**base, status=status, actual=actual, message=message)]
        out.extend(self._hunk_check(pin, s, want) for s in statuses)
        return out

    @staticmethod
    def _donor_verdict(pin: RemotePin, statuses: tuple[HunkStatus, ...], want: str | None,
                       where: str, actual: str, outside: str) -> tuple[Status, str]:
        """The summary's status and message: ``error`` when a hunk's file could not be
        used (nothing was judged there, as a file check says), else the hunks against
        ``expect`` (information when there is none)."""
        from pp1audit.checks.patches import UNUSABLE

        total = len(statuses)
        unusable = list(dict.fromkeys(s.reason for s in statuses if s.status == UNUSABLE))
        if unusable:
            count = sum(s.status == UNUSABLE for s in statuses)
            others = f" (and {len(unusable) - 1} other file(s))" if len(unusable) > 1 else ""
            return Status.ERROR, (f"{pin.id}: {count} of {total} hunk(s) in {where} could not be "
                                  f"checked: {unusable[0]}{others}{outside}")
        if want is None:
            return Status.PASS, f"{total} hunk(s) in {where}: {actual} (information)"
        off = [s for s in statuses if s.status != want]
        if not off:
            return Status.PASS, f"{pin.id} is {want} in {where}: all {total} hunk(s) {want}{outside}"
        listed = "; ".join(f"{s.label} {s.status}" for s in off[:5])
        more = f"; and {len(off) - 5} more" if len(off) > 5 else ""
        return Status.FAIL, (f"{pin.id} should be {want} in {where}, but {len(off)} of {total} "
                             f"hunk(s) are not: {listed}{more}{outside}")

    @staticmethod
    def _hunk_check(pin: RemotePin, s: HunkStatus, want: str | None) -> Check:
        """One hunk's check, on the file its lines were read from (a rename's old name
        while it is not applied); ``error`` when that file could not be used."""
        from pp1audit.checks.patches import UNUSABLE

        if s.status == UNUSABLE:
            status, message = Status.ERROR, f"{s.hunk.title}: {s.reason}"
        else:
            status = Status.PASS if want is None or s.status == want else Status.FAIL
            message = f"{s.hunk.title}: {s.status}: {s.reason}"
        return Check(  # s.label is unique within the patch (see Hunk.index)
            id=f"{pin.id}:{s.label}", kind="donor", status=status, path=s.path,
            found_lines=s.lines, expected=pin.expect, actual=s.status, source=pin.applies_to,
            message=message,
        )


def fetch_manifest(manifest: Manifest, options: ProvenanceOptions) -> list[tuple[str, str, str]]:
    """``pp1audit fetch``: download every remote pin; ``(id, outcome, message)`` per pin.

    ``outcome`` is ``ok``, ``mismatch`` (the server sent other bytes than the pin:
    a verdict on the content) or ``failed`` (nothing could be judged: network,
    HTTP status, limits, the cache).
    """
    from pp1audit.sources.download import DigestMismatch

    run = ProvenanceRun(manifest, options)
    return [(pin.id, "ok" if err is None else "mismatch" if isinstance(err, DigestMismatch)
             else "failed", msg) for pin, msg, err in run.fetch_all()]


def cache_dir_of(options: ProvenanceOptions) -> Path:
    """The cache directory a run with these options uses."""
    from pp1audit.sources.cache import default_cache_dir

    return options.cache_dir or default_cache_dir()
