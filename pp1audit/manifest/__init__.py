"""Manifest: YAML → typed, validated models.

Validation happens in two steps, both reporting ``file:line:column`` and the key
path: the JSON Schema (shape, types, unknown keys, digest syntax), then the
rules a schema cannot say (safe paths, line ranges, every citation verifiable,
a URL naming the commit its entry pins: ``url_commit_clashes``).
Models are frozen dataclasses; checks read only these, never the raw YAML.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pp1audit.errors import ManifestError
from pp1audit.manifest.paths import path_problem, url_problem
from pp1audit.manifest.yamlpos import KeyPath, Loaded, keypath_str, load
from pp1audit.text.spans import Span, parse_safe_span

if TYPE_CHECKING:
    from pp1audit.manifest.provenance import Provenance

TARGET = "target"
"""The name of the audited tree among sources (``pp1audit.manifest.provenance.TARGET``)."""

if TYPE_CHECKING:  # pragma: no cover
    from pp1audit.rules.model import Invariant


def text_lines(text: str) -> list[str]:
    """Lines of a YAML block scalar: its final newline does not make an extra line."""
    return text[:-1].split("\n") if text.endswith("\n") else text.split("\n")


@dataclass(frozen=True)
class Anchor:
    """Text or digest that identifies a span independently of its line numbers."""

    exact: list[str] | None
    prefix: list[str]
    suffix: list[str]
    sha256: str | None
    invariant: str | None = None
    """An invariant id: the span is where that rule matches (``checks.citations``)."""


@dataclass(frozen=True)
class Citation:
    """A claim's evidence: a span of a file, and how to find it again."""

    id: str
    span: Span
    anchor: Anchor | None
    claim: str | None
    title: str | None
    source: str | None = None
    """A named git source or remote pin the cited file lives in; None: the target."""
    unresolved: str | None = None
    """Why ``pin`` could not carry this citation (a human must decide); it always fails."""


@dataclass(frozen=True)
class Manifest:
    """A validated manifest, with the bytes' digest and the YAML positions."""

    path: str
    sha256: str
    raw: dict[str, Any]
    loaded: Loaded
    audit_id: str
    audit_title: str | None
    audit_date: str | None
    package: str
    version: str | None
    files: dict[str, str]
    citations: dict[str, Citation] = field(default_factory=dict)
    prov: Provenance | None = None
    """Named git sources, remote pins and donors, or None when the manifest has none
    (so that a manifest without them never imports the provenance machinery)."""
    invariants: dict[str, Invariant] = field(default_factory=dict)
    """Claims on the target's Python files, backed by ast-grep rules (``pp1audit.rules``)."""
    record: bool = False
    """``target.record``: verify the distribution against RECORD (``pp1audit.checks.record``)."""
    tree_sha256: str | None = None
    """``target.tree_sha256``: the pinned tree digest (``pp1audit.checks.treedigest``)."""
    startup_sha256: str | None = None
    """``target.startup_sha256``: the pinned startup digest (``pp1audit.checks.treedigest``): the
    anchor for the code run at every interpreter start, which RECORD vouching is not."""

    @property
    def provenance(self) -> Provenance:
        """The provenance records (empty when the manifest declares none)."""
        if self.prov is not None:
            return self.prov
        from pp1audit.manifest.provenance import Provenance

        return Provenance()

    def where(self, path: KeyPath) -> str:
        """``file:line:column`` of a key path, for messages that point into the manifest."""
        line, col = self.loaded.where(path)
        return f"{self.path}:{line}:{col}"


def _fail(loaded: Loaded, file: str, path: KeyPath, message: str, *, key: bool = False) -> ManifestError:
    pos = loaded.key_positions.get(path) if key else None
    line, col = pos or loaded.where(path)
    return ManifestError(file, line, col, keypath_str(path), message)


def _read_as_text_hint(text: str, loaded: Loaded, path: KeyPath, value: object) -> str | None:
    """For a number or boolean where text belongs (``version: 1.10``): what was
    written, what YAML made of it and the fix, since the schema's "1.1 is not of
    type 'string'" shows the converted value, not the typed one. None when the
    written token cannot be found (a value over several lines) or is not a plain
    scalar: a tag (``!!float 1``), an anchor or an alias says what it is on purpose,
    and quoting would not be the fix. A hint that fails is no hint: the schema's
    message stands."""
    import yaml

    line, col = loaded.where(path)
    lines = text.splitlines()
    if not 0 < line <= len(lines):
        return None
    # A plain scalar read as a number or boolean starts with a digit, sign, dot or
    # letter; a tag (!), anchor (&), alias (*) or quote does not.
    m = re.match(r"[-+.\w][^\s,\]}#]*", lines[line - 1][col - 1:])
    if m is None:
        return None
    written = m.group()
    try:
        same = yaml.safe_load(written) == value
    except Exception:  # the hint only explains an error; it must not be one
        same = False
    if not same:
        return None
    kind = "a boolean" if isinstance(value, bool) else "a number"
    shown = str(value).lower() if isinstance(value, bool) else str(value)
    read = kind if shown == written else f"{kind} ({shown})"
    return f"{written} is read as {read}, not as text: quote it ('{written}')"


def _schema_check(loaded: Loaded, file: str, text: str = "") -> None:
    """Validate against the JSON Schema; on failure, explain the best error precisely.

    jsonschema-rs validates (a compiled Rust validator: about 15 ms to import and
    build against jsonschema's ~170 ms import, which alone would exceed a whole
    ``check``'s budget); its errors carry exact key paths and the failing keyword.
    """
    from jsonschema_rs import ValidationErrorKind as Kind

    from pp1audit.manifest.schema import unknown_key, validator

    errors = list(validator().iter_errors(loaded.data))
    if not errors:
        return
    best = _best_match(errors)
    path: KeyPath = tuple(best.instance_path)
    sub = _subschema(list(best.schema_path))
    kind = best.kind
    node = _get(loaded.data, path)
    if isinstance(kind, Kind.AdditionalProperties) and isinstance(node, dict):
        known = list(sub.get("properties", {}))
        extra = next((k for k in node if k not in known), None)
        if extra is not None:
            raise _fail(loaded, file, (*path, extra), unknown_key(str(extra), known), key=True)
    if isinstance(kind, Kind.PropertyNames) and isinstance(node, dict):
        # The offending thing is a key, not a value.
        key = str(kind.error.instance)
        message = (
            path_problem(key)
            or sub.get("x-message")
            or f"'{key}' is not a valid name here"
        )
        raise _fail(loaded, file, (*path, key), message, key=True)
    if isinstance(kind, Kind.Required) and isinstance(node, dict):
        raise _fail(loaded, file, path, f"missing required key '{kind.property}'")
    if isinstance(kind, Kind.Type) and "string" in kind.types \
            and isinstance(best.instance, int | float):  # bool is an int
        hint = _read_as_text_hint(text, loaded, path, best.instance)
        if hint is not None:
            raise _fail(loaded, file, path, hint)
    message = sub.get("x-message") or _plain(best.message)
    raise _fail(loaded, file, path, str(message))


_WEAK = ("AnyOf", "OneOfNotValid")


def _relevance(error: Any) -> tuple[int, bool]:
    """jsonschema's ``best_match`` order: shallow errors first, ``anyOf``/``oneOf`` last."""
    return (-len(error.instance_path), type(error.kind).__name__ not in _WEAK)


def _best_match(errors: list[Any]) -> Any:
    """The error a person should read first, as jsonschema's ``best_match`` picks it:
    the most relevant one, then down an ``anyOf``/``oneOf`` into its most specific
    branch error, unless the branches tie (then the alternatives' own message)."""
    best = max(errors, key=_relevance)
    while getattr(best.kind, "context", None):
        branch = sorted((e for errs in best.kind.context for e in errs), key=_relevance)
        if len(branch) > 1 and _relevance(branch[0]) == _relevance(branch[1]):
            return best
        best = branch[0]
    return best


def _subschema(schema_path: list[str | int]) -> dict[str, Any]:
    """The schema object holding the failing keyword (where its ``x-message`` lives)."""
    from pp1audit.manifest.schema import SCHEMA

    node: Any = SCHEMA
    for part in schema_path[:-1]:
        node = node[part]
    return node if isinstance(node, dict) else {}


def _plain(message: str) -> str:
    """jsonschema-rs quotes names JSON's way ("a"); messages here quote them 'a'."""
    return re.sub(r'"([^"\\]*)"', r"'\1'", message)


def _get(data: object, path: KeyPath) -> object:
    for p in path:
        if isinstance(data, dict):
            data = data.get(p)
        elif isinstance(data, list) and isinstance(p, int) and p < len(data):
            data = data[p]
        else:
            return None
    return data


def _anchor(raw: dict[str, Any] | None) -> Anchor | None:
    if raw is None:
        return None
    exact = text_lines(raw["exact"]) if "exact" in raw else None
    return Anchor(
        exact=exact,
        prefix=text_lines(raw.get("prefix", "")) if raw.get("prefix") else [],
        suffix=text_lines(raw.get("suffix", "")) if raw.get("suffix") else [],
        sha256=raw["sha256"].lower() if "sha256" in raw else None,
        invariant=raw.get("invariant"),
    )


def _invariants(loaded: Loaded, file: str, raw: dict[str, Any]) -> dict[str, Invariant]:
    """Parse ``invariants``; a rule error points at its key (``rules.RuleError``)."""
    if not raw.get("invariants"):
        return {}
    from pp1audit.rules.model import RuleError, parse_invariant  # only manifests with rules pay

    out: dict[str, Invariant] = {}
    for iid, rec in (raw.get("invariants") or {}).items():
        try:
            out[iid] = parse_invariant(iid, rec)
        except RuleError as exc:
            path = ("invariants", iid, *exc.keypath)
            raise _fail(loaded, file, path, exc.message, key=exc.key) from None
    return out


def _invariant_anchor(
    loaded: Loaded, file: str, cid: str, anchor: Anchor, rec: dict[str, Any],
    invariants: dict[str, Invariant], span: Span,
) -> None:
    """An invariant anchor names a rule on the cited file and stands alone."""
    at: KeyPath = ("citations", cid, "anchor", "invariant")
    inv = invariants.get(anchor.invariant or "")
    if inv is None:
        raise _fail(loaded, file, at, f"no invariant '{anchor.invariant}' under 'invariants'")
    if inv.file != span.path:
        raise _fail(loaded, file, at, f"invariant '{inv.id}' is on {inv.file}, "
                    f"not on the cited file {span.path}")
    if rec.get("source", TARGET) != (inv.source or TARGET):
        raise _fail(loaded, file, at, f"invariant '{inv.id}' reads source "
                    f"'{inv.source or TARGET}', the citation '{rec.get('source', TARGET)}'")
    extra = [k for k in ("exact", "sha256", "prefix", "suffix") if k in rec["anchor"]]
    if extra:
        raise _fail(loaded, file, ("citations", cid, "anchor", extra[0]),
                    f"an invariant anchor stands alone: remove '{extra[0]}'", key=True)


_COMMIT_ID = re.compile(r"[0-9A-Fa-f]{7,40}")
"""What a revision segment holds when it is a commit id (abbreviated or full)."""

_REVISION_MARKERS = frozenset({"commit", "commits", "blob", "tree", "raw", "blame"})
"""Path segments after which a forge names a revision: GitHub's ``/blob/<rev>/``,
``/tree/``, ``/raw/``, ``/blame/``, ``/commit/<sha>``, ``/commits/<rev>`` (also a pull
request's ``/pull/12/commits/<sha>``); GitLab's ``/-/blob/<rev>/`` and the like; Gitea's
``/src/commit/<sha>/`` and ``/raw/commit/<sha>/``; a gist's ``/raw/<revision>/``. Any
other segment (an owner, a gist id, a run or attachment number, a date) is a name."""

_RAW_HOSTS = frozenset({"raw.githubusercontent.com"})
"""Hosts whose third path segment is the revision: ``/<owner>/<repo>/<rev>/<path>``."""

_REVISION_QUERY_KEYS = frozenset({"ref", "id"})
"""Query keys whose value is a revision (an API's ``?ref=<rev>``, cgit's ``?id=<sha>``)."""

_PATCH_SUFFIXES = (".patch", ".diff")
"""What a forge appends to a commit for its patch or diff (``/commit/<sha>.patch``)."""

_URL_KEYS = ("url", "download")
_COMMIT_SECTIONS = ("sources", "remotes", "donors", "references")
"""Sections whose entries may pin a ``commit`` beside the URLs that address it."""


@dataclass(frozen=True)
class UrlCommitClash:
    """A URL naming one commit in its path while its entry pins another."""

    keypath: KeyPath
    url: str
    offset: int
    """Where the commit-looking segment starts in ``url``."""
    named: str
    pinned: str

    @property
    def message(self) -> str:
        """One line: both values, and which key holds the pin."""
        return (f"the URL names commit {self.named} but the entry's 'commit' is "
                f"{self.pinned[:12]}…: a value typed twice must agree (is one a typo?)")


def _as_commit(revision: str) -> str | None:
    """The commit id a revision segment names, or None for a branch or tag name.

    Percent-escapes are decoded and a ``.patch`` / ``.diff`` suffix dropped (the
    forge's patch of that commit). ``refs`` (``refs/heads/<name>``) starts a branch or
    tag, and digits alone short of a full id are a tag, a date or a number, not an
    abbreviated commit."""
    from urllib.parse import unquote

    text = unquote(revision)
    for suffix in _PATCH_SUFFIXES:
        text = text.removesuffix(suffix)
    if not _COMMIT_ID.fullmatch(text) or (text.isdigit() and len(text) < 40):
        return None
    return text


_REF_KINDS = frozenset({"commit", "branch", "tag"})
"""Gitea's segment between the marker and the revision: ``/src/commit/<sha>``,
``/raw/branch/<name>``."""


def _path_revisions(path: str, start: int, host: str | None) -> list[tuple[int, str]]:
    """(offset in the URL, text) of the path segments a forge uses for a revision: the one
    after the first marker (``_REVISION_MARKERS``), past a Gitea ref kind (``_REF_KINDS``),
    or a raw-content host's third segment (``path`` starts at ``start`` in the URL). Later
    markers are the file's path (``blob/<C>/tests/tree/cafebabe``), never a revision."""
    segments = [(start + m.start(), m.group()) for m in re.finditer(r"[^/]+", path)]
    if host in _RAW_HOSTS:
        return segments[2:3]
    first = next((i for i, (_, name) in enumerate(segments) if name in _REVISION_MARKERS), None)
    if first is None:
        return []
    at = first + 1
    if at < len(segments) and segments[at][1] in _REF_KINDS and at + 1 < len(segments):
        at += 1
    return segments[at:at + 1]


def _query_revisions(url: str, query: str) -> list[tuple[int, str]]:
    """(offset in ``url``, text) of the ``ref=`` / ``id=`` values of the query."""
    if not query:
        return []
    start = url.index("?") + 1  # the first '?' starts the query: no earlier part holds one
    out = []
    for m in re.finditer(r"[^&;]+", query):
        key, eq, value = m.group().partition("=")
        if eq and key.lower() in _REVISION_QUERY_KEYS:
            out.append((start + m.start() + len(key) + 1, value))
    return out


def commit_segments(url: str) -> list[tuple[int, str]]:
    """(offset in ``url``, commit id) of each place where ``url`` names a commit, as a forge
    addresses one (``_path_revisions``, ``_query_revisions``); none for a URL that does
    not parse (``url_problem`` says why) or a repository's plain address."""
    from urllib.parse import urlsplit  # only manifests with URLs and commits pay

    if url_problem(url) is not None:
        return []
    parts = urlsplit(url)
    # The path follows "scheme:" and "//netloc" as written (urlsplit keeps both lengths).
    after = len(parts.scheme) + 1
    if url.startswith("//", after):
        after += 2 + len(parts.netloc)
    start = url.find(parts.path, after) if parts.path else after
    if start != after:
        return []
    found = {offset: commit for offset, text in
             [*_path_revisions(parts.path, start, parts.hostname),
              *_query_revisions(url, parts.query)]
             if (commit := _as_commit(text)) is not None}
    return sorted(found.items())


def _entry_urls(raw: dict[str, Any]) -> list[tuple[KeyPath, str, str | None]]:
    """(key path, URL, pinned commit or None) of every URL of the sections that pin commits."""
    out: list[tuple[KeyPath, str, str | None]] = []
    for section in _COMMIT_SECTIONS:
        entries = raw.get(section) or {}
        for name, entry in entries.items() if isinstance(entries, dict) else ():
            if not isinstance(entry, dict):
                continue
            pinned = entry.get("commit")
            for key in _URL_KEYS:
                url = entry.get(key)
                if isinstance(url, str):
                    out.append(((section, name, key), url,
                                pinned if isinstance(pinned, str) else None))
    return out


def url_commit_clashes(raw: dict[str, Any]) -> list[UrlCommitClash]:
    """URLs naming a commit that is not a prefix of the commit pinned by the same entry:
    the document renders both (a link's target, the text beside it), so a typo in one
    would make it contradict itself. Entries without a commit pin nothing to compare."""
    out: list[UrlCommitClash] = []
    for keypath, url, pinned in _entry_urls(raw):
        if pinned is None:
            continue
        for offset, named in commit_segments(url):
            if not pinned.lower().startswith(named.lower()):
                out.append(UrlCommitClash(keypath, url, offset, named, pinned))
    return out


def _url_commit_check(loaded: Loaded, file: str, text: str, raw: dict[str, Any]) -> None:
    """The first URL that does not parse (at the URL), or that contradicts its entry's
    commit (at the commit in the URL)."""
    for keypath, url, _ in _entry_urls(raw):
        problem = url_problem(url)
        if problem is not None:
            raise _fail(loaded, file, keypath, problem)
    for clash in url_commit_clashes(raw):
        from pp1audit.manifest.prose import locate  # only a manifest in error pays

        line, col = locate(text, loaded.where(clash.keypath), clash.url, clash.offset)
        raise ManifestError(file, line, col, keypath_str(clash.keypath), clash.message)


def _report_check(loaded: Loaded, file: str, text: str, raw: dict[str, Any]) -> None:
    """The report section's first problem, at the bad reference itself when there is
    one (its place in the scalar's text, mapped back to the file's line:column)."""
    from pp1audit.manifest.prose import locate, validate

    for problem in validate(raw):
        line, col = loaded.where(problem.keypath)
        if problem.offset is not None:
            line, col = locate(text, (line, col), problem.text, problem.offset)
        raise ManifestError(file, line, col, keypath_str(problem.keypath), problem.message)


MAX_SIMPLE_KEY = 1024
"""Characters YAML (PyYAML and libyaml alike) reads as a plain or quoted key on one line."""

_KEY_COLON_ERRORS = ("mapping values are not allowed", "expected ',' or ")
"""What the YAML parser says at the ``:`` of a key it did not take for one."""

_BREAK = re.compile("\r\n|[\r\n\x85\u2028\u2029]")
"""Line breaks as YAML counts them (its marks number lines so)."""


def _line_span(text: str, line: int) -> tuple[int, int]:
    """Offsets of the start and end of 1-based ``line`` of ``text`` (YAML's breaks)."""
    start, end = 0, len(text)
    for number, m in enumerate(_BREAK.finditer(text), start=2):
        if number == line:
            start = m.end()
        elif number == line + 1:
            end = m.start()
            break
    return start, end


def _key_start(line: str, colon: int) -> int:
    """Where the key ending at ``colon`` begins on its line: after the indentation, a
    ``- ``/``? `` indicator, or the flow punctuation or ``: `` before it."""
    start = len(line) - len(line.lstrip(" "))
    for mark in ("{", "[", ",", ": ", "- ", "? "):
        at = line.rfind(mark, 0, colon)
        if at >= 0:
            start = max(start, at + len(mark))
    while start < colon and line[start] == " ":
        start += 1
    return start


def _long_key(text: str, exc: ManifestError) -> ManifestError | None:
    """The error to give instead of YAML's when its cause is a key over 1,024 characters.

    YAML looks no further than 1,024 characters for the ``:`` that makes a key, so a
    longer key reads as text, and its ``:`` as "mapping values are not allowed in this
    context": true, and no help. The key is the cause when the same line with a short
    key in its place parses past that ``:``."""
    if not exc.message.startswith("invalid YAML: ") or not any(
            words in exc.message for words in _KEY_COLON_ERRORS):
        return None
    begin, end = _line_span(text, exc.line)
    line, colon = text[begin:end], exc.column - 1
    if not line.startswith(":", colon):
        return None
    key = _key_start(line, colon)
    if colon - key <= MAX_SIMPLE_KEY:
        return None
    short = text[:begin + key] + "k" + text[begin + colon:end] + "\n"
    try:
        load(short, exc.file)
    except ManifestError as again:
        if (again.line, again.column) <= (exc.line, key + 2):  # still at (or before) the ':'
            return None
    return ManifestError(exc.file, exc.line, key + 1, "",
                         f"invalid YAML: a key of {colon - key:,} characters; YAML reads at "
                         f"most {MAX_SIMPLE_KEY:,} characters as a key (its ':' is then "
                         "text): use a shorter key")


def _load(text: str, file: str) -> Loaded:
    """``yamlpos.load``, saying so when a key longer than YAML reads is the problem."""
    try:
        return load(text, file)
    except ManifestError as exc:
        better = _long_key(text, exc)
        if better is None:
            raise
        raise better from None


def parse(text: str, file: str, sha256: str | None = None) -> Manifest:
    """Parse and validate manifest text; ``ManifestError`` names the line and column."""
    loaded = _load(text, file)
    if not isinstance(loaded.data, dict):
        raise _fail(loaded, file, (), "the manifest must be a mapping")
    _schema_check(loaded, file, text)
    raw: dict[str, Any] = loaded.data
    _url_commit_check(loaded, file, text, raw)

    files: dict[str, str] = {}
    for path, digest in (raw.get("files") or {}).items():
        problem = path_problem(path)
        if problem:
            raise _fail(loaded, file, ("files", path), problem, key=True)
        files[path] = digest.lower()

    provenance: Provenance | None = None
    if any(raw.get(k) for k in ("sources", "remotes", "donors")):
        from pp1audit.manifest.provenance import parse_provenance

        provenance = parse_provenance(loaded, file, raw)

    def kind_of(name: str) -> str | None:
        if name == TARGET:
            return TARGET
        return None if provenance is None else provenance.kind_of(name)

    invariants = _invariants(loaded, file, raw)
    for iid, inv in invariants.items():
        if inv.source is not None and kind_of(inv.source) is None:
            raise _fail(loaded, file, ("invariants", iid, "source"),
                        f"no source '{inv.source}' under 'sources', 'remotes' or 'donors'")
    citations: dict[str, Citation] = {}
    for cid, rec in (raw.get("citations") or {}).items():
        cited_in = rec.get("source", TARGET)
        if kind_of(cited_in) is None:
            raise _fail(loaded, file, ("citations", cid, "source"),
                        f"no source '{cited_in}' under 'sources', 'remotes' or 'donors'")
        pins = files if cited_in == TARGET or provenance is None else provenance.pins(cited_in)
        try:
            span = parse_safe_span(rec["at"])
        except ValueError as exc:
            raise _fail(loaded, file, ("citations", cid, "at"), str(exc)) from None
        anchor = _anchor(rec.get("anchor"))
        if anchor is not None and anchor.exact is not None:
            if len(anchor.exact) != span.length:
                raise _fail(
                    loaded, file, ("citations", cid, "anchor", "exact"),
                    f"anchor text has {len(anchor.exact)} lines but the span {span} has {span.length}",
                )
            if not any(line.strip() for line in anchor.exact):
                raise _fail(loaded, file, ("citations", cid, "anchor", "exact"),
                            "anchor text is blank: it would match any blank lines")
        if anchor is not None and anchor.invariant is not None:
            _invariant_anchor(loaded, file, cid, anchor, rec, invariants, span)
        # A git source's pinned commit fixes its files' content (git addresses blobs
        # by hash), so its citations are verifiable without a digest or an anchor.
        if anchor is None and span.path not in pins and kind_of(cited_in) != "git":
            raise _fail(
                loaded, file, ("citations", cid),
                f"citation cannot be verified: pin {span.path} under 'files' or give it an anchor",
                key=True,
            )
        citations[cid] = Citation(
            cid, span, anchor, rec.get("claim"), rec.get("title"),
            source=None if cited_in == TARGET else cited_in,
            unresolved=rec.get("unresolved"),
        )

    # Check ids must be unique in a result: a citation and an invariant may not share one.
    for iid in invariants:
        if iid in citations:
            raise _fail(loaded, file, ("invariants", iid),
                        f"'{iid}' is also a citation id; check ids must be unique", key=True)

    # Evidence names checks by their ids: a clash of ids comes before any evidence.
    from pp1audit.manifest.ids import id_clashes

    clash = next(iter(id_clashes(raw)), None)
    if clash is not None:
        raise _fail(loaded, file, clash.keypath, clash.message, key=True)
    if "report" in raw or "[[" in str((raw.get("audit") or {}).get("title", "")):
        _report_check(loaded, file, text, raw)

    audit = raw.get("audit") or {}
    if "date" in audit:
        import datetime

        try:
            datetime.date.fromisoformat(audit["date"])
        except ValueError:
            raise _fail(loaded, file, ("audit", "date"),
                        f"'{audit['date']}' is not a calendar date") from None
    target = raw["target"]
    return Manifest(
        path=file,
        sha256=sha256 or hashlib.sha256(text.encode("utf-8")).hexdigest(),
        raw=raw,
        loaded=loaded,
        audit_id=audit.get("id", Path(file).stem),
        audit_title=audit.get("title"),
        audit_date=audit.get("date"),
        package=target["package"],
        version=target.get("version"),
        files=files,
        citations=citations,
        prov=provenance,
        invariants=invariants,
        record=bool(target.get("record", False)),
        tree_sha256=target["tree_sha256"].lower() if "tree_sha256" in target else None,
        startup_sha256=target["startup_sha256"].lower() if "startup_sha256" in target else None,
    )


def load_manifest(path: Path, display: str | None = None) -> Manifest:
    """Read and parse a manifest file; unreadable or non-UTF-8 files are one-line errors."""
    from pp1audit.sources.inputs import read_input

    return parse_bytes(read_input(path, "manifest"), display or str(path))


def parse_bytes(data: bytes, name: str) -> Manifest:
    """A manifest from the bytes of its file (for callers that need the bytes too)."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise ManifestError(name, line, col, "", "not UTF-8 text") from None
    return parse(text, name, sha256=hashlib.sha256(data).hexdigest())
