"""A URL that names a commit must name the one its entry pins (``url_commit_clashes``).

Forges put the revision in known places (``/commit/<id>``, ``/blob/<id>/``, ``?ref=``);
a manifest whose ``url`` says one commit and whose ``commit`` says another pins two
things at once, so the loader refuses it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pp1audit.errors import ManifestError
from pp1audit.manifest.explain import fail_at
from pp1audit.manifest.paths import url_problem
from pp1audit.manifest.yamlpos import KeyPath, Loaded, keypath_str

if TYPE_CHECKING:
    pass

TARGET = "target"
"""The name of the audited tree among sources (``pp1audit.manifest.provenance.TARGET``)."""

if TYPE_CHECKING:  # pragma: no cover
    pass


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


def url_commit_check(loaded: Loaded, file: str, text: str, raw: dict[str, Any]) -> None:
    """The first URL that does not parse (at the URL), or that contradicts its entry's
    commit (at the commit in the URL)."""
    for keypath, url, _ in _entry_urls(raw):
        problem = url_problem(url)
        if problem is not None:
            raise fail_at(loaded, file, keypath, problem)
    for clash in url_commit_clashes(raw):
        from pp1audit.manifest.prose import locate  # only a manifest in error pays

        line, col = locate(text, loaded.where(clash.keypath), clash.url, clash.offset)
        raise ManifestError(file, line, col, keypath_str(clash.keypath), clash.message)


