"""Run-time inputs for provenance checks: clone paths, the remote cache, fetch limits.

From command-line options and, so that a CI job does not repeat them, a TOML
file (``--config FILE``, else ``./pp1audit.toml`` when present)::

    [repos]              # named git sources of the manifest -> local clones
    lane = "../lane"     # relative paths are relative to the config file
    [cache]
    dir = "~/.cache/pp1audit"
    [fetch]
    timeout = 30         # seconds, connect and read (0 < timeout <= 3600)
    total_timeout = 120  # seconds for a whole download, tries included (same range)
    max_bytes = 33554432 # >= 1
    attempts = 3         # >= 1

Command-line values win over the file, the file over ``$PP1AUDIT_CACHE_DIR``.
Unknown keys, wrong types and values out of range are usage errors (exit 2)
naming the file, never ignored or clamped; so is a cache directory that cannot
be one, however it was named, and a ``--repo`` NAME given twice with two paths
(the last would silently win, and the gate flip with the options' order).
"""

from __future__ import annotations

import math
import os
import stat
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pp1audit.cli.configfile import config_file
from pp1audit.errors import Pp1Error
from pp1audit.sources.cache import CACHE_ENV, MAX_BYTES, default_cache_dir
from pp1audit.sources.safeio import realpath

MAX_TIMEOUT = 3600.0
"""Longest accepted timeout, in seconds: beyond an hour a value is a typo (ms?)."""


@dataclass(frozen=True)
class FetchPolicy:
    """Limits of one download. Here, not in the downloader: every run with
    provenance resolves them, and only a fetching one may load requests."""

    connect_timeout: float = 10.0
    read_timeout: float = 30.0
    max_bytes: int = MAX_BYTES
    attempts: int = 3
    """Tries in all (1 = no retry): connection failures and 429/5xx answers."""
    backoff: float = 0.5
    """urllib3's ``backoff_factor``."""
    total_timeout: float = 120.0
    """Seconds for one whole download, tries and redirects included."""


@dataclass(frozen=True)
class ProvenanceOptions:
    """Everything provenance checks need beyond the manifest and the target."""

    repos: dict[str, Path] = field(default_factory=dict)
    """Named git source -> local clone (``--repo NAME=PATH``, or the config file)."""
    named_on_command_line: frozenset[str] = frozenset()
    """Names given with ``--repo``: one the manifest lacks is a usage error (names
    only in a config file may belong to other manifests)."""
    from_config: dict[str, Path] = field(default_factory=dict)
    """Names whose path a config file gave (and no ``--repo`` overrode) -> that file."""
    cache_dir: Path | None = None
    """Remote-pin cache; None: ``cache.default_cache_dir()``."""
    fetch: bool = False
    """Download missing remote pins first (``check --fetch``). Without it nothing
    opens a socket, so ``--offline`` needs no state of its own."""
    policy: FetchPolicy = field(default_factory=FetchPolicy)

    def repo_origin(self, name: str) -> str:
        """Who gave the clone path of ``name``, as the head of an error about it
        (``cfg.toml: [repos] lane: /path`` or ``/path: --repo lane``): a path from a
        config file blamed on ``--repo`` sends the reader to the wrong place."""
        file = self.from_config.get(name)
        if file is not None:
            return f"{file}: [repos] {name}: {self.repos.get(name)}"
        return f"{self.repos.get(name)}: --repo {name}"


def parse_repo_option(value: str) -> tuple[str, Path]:
    """``NAME=PATH`` → (name, path); ``Pp1Error`` for anything else."""
    name, sep, path = value.partition("=")
    if not sep or not name.strip() or not path.strip():
        raise Pp1Error(f"--repo {value}: expected NAME=PATH (e.g. --repo lane=../lane)")
    return name.strip(), Path(path.strip()).expanduser()


def _expect(file: Path, key: str, value: Any, kind: type | tuple[type, ...]) -> Any:
    if not isinstance(value, kind) or isinstance(value, bool):
        raise Pp1Error(f"{file}: '{key}' has the wrong type")
    return value


def _seconds(file: Path, key: str, value: Any) -> float:
    t = float(_expect(file, key, value, (int, float)))
    if not (math.isfinite(t) and 0 < t <= MAX_TIMEOUT):
        raise Pp1Error(f"{file}: '{key}' must be a number of seconds > 0 and <= {MAX_TIMEOUT:g}, "
                       f"not {value!r}")
    return t


def _at_least_one(file: Path, key: str, value: Any) -> int:
    n: int = _expect(file, key, value, int)
    if n < 1:
        raise Pp1Error(f"{file}: '{key}' must be at least 1, not {value!r}")
    return n


_FETCH_KEYS: dict[str, tuple[Any, tuple[str, ...]]] = {
    "attempts": (_at_least_one, ("attempts",)),
    "max_bytes": (_at_least_one, ("max_bytes",)),
    "timeout": (_seconds, ("connect_timeout", "read_timeout")),
    "total_timeout": (_seconds, ("total_timeout",)),
}
"""``[fetch]`` key -> its check, and the policy fields it sets."""


def _section(file: Path, data: dict[str, Any], name: str, known: Any) -> dict[str, Any]:
    section: dict[str, Any] = _expect(file, name, data.get(name, {}), dict)
    extra = sorted(set(section) - set(known)) if known is not None else []
    if extra:
        raise Pp1Error(f"{file}: unknown key '{name}.{extra[0]}'"
                       + (f" (known: {', '.join(known)})" if name == "fetch" else ""))
    return section


def load_config(file: Path) -> ProvenanceOptions:
    """Read a config file; one-line ``Pp1Error`` naming it for any problem."""
    import tomllib

    from pp1audit.sources.inputs import read_input

    raw = read_input(file, "config file")  # a FIFO or device is refused, never read
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise Pp1Error(f"{file}: config is not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise Pp1Error(f"{file}: invalid TOML: {exc}") from None
    extra = sorted(set(data) - {"repos", "cache", "fetch"})
    if extra:
        raise Pp1Error(f"{file}: unknown section '{extra[0]}' (known: cache, fetch, repos)")
    base = file.resolve().parent
    repos = {name: base / Path(_expect(file, f"repos.{name}", path, str)).expanduser()
             for name, path in _section(file, data, "repos", None).items()}
    cache = _section(file, data, "cache", ("dir",))
    cache_dir = base / Path(_expect(file, "cache.dir", cache["dir"], str)).expanduser() \
        if "dir" in cache else None
    policy = FetchPolicy()
    for key, value in _section(file, data, "fetch", _FETCH_KEYS).items():
        check, fields = _FETCH_KEYS[key]
        policy = replace(policy, **dict.fromkeys(fields, check(file, f"fetch.{key}", value)))
    if cache_dir is not None:
        check_cache_dir(cache_dir, f"{file}: [cache] dir")
    return ProvenanceOptions(repos=repos, from_config=dict.fromkeys(repos, file),
                             cache_dir=cache_dir, policy=policy)


def check_cache_dir(path: Path, origin: str) -> None:
    """``Pp1Error`` (exit 2, headed by ``origin``) when ``path`` cannot be a cache
    directory: an unusable cache is bad input whoever named it, not a closed gate.
    A missing one is fine (``fetch`` makes it)."""
    try:
        mode = os.stat(path).st_mode
    except NotADirectoryError:
        raise Pp1Error(f"{origin}: {path}: a parent of it is not a directory; "
                       "the remote-pin cache must be a directory") from None
    except OSError:
        return  # missing, or unreadable: each use of the cache says so
    if not stat.S_ISDIR(mode):
        raise Pp1Error(f"{origin}: {path} is not a directory; "
                       "the remote-pin cache must be a directory")


def _cache_dir(option: Path | None, config: Path | None, uses_cache: bool) -> Path | None:
    """``--cache-dir``, else the config file's (checked as it was read), else
    ``$PP1AUDIT_CACHE_DIR``, else the user cache directory (None), each checked:
    the last only when the run ``uses_cache``, as a default nobody chose
    (``HOME=/dev/null`` in a sandboxed CI) must not end a run that reads no pin."""
    if option is not None:
        check_cache_dir(option, "--cache-dir")
        return option
    if config is not None:
        return config
    env = os.environ.get(CACHE_ENV)
    if env:
        check_cache_dir(Path(env), CACHE_ENV)
        return Path(env)
    if uses_cache:  # a blank XDG_CACHE_HOME is unset, as platformdirs reads it
        xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
        check_cache_dir(default_cache_dir(), "XDG_CACHE_HOME" if xdg else "the user cache directory")
    return None


def _merge_repos(base: dict[str, Path], values: tuple[str, ...]) -> tuple[dict[str, Path], set[str]]:
    """The config file's clones with ``--repo`` values over them, and the names given;
    a NAME given twice is a usage error unless both name the same directory."""
    named: dict[str, Path] = {}
    for value in values:
        name, path = parse_repo_option(value)
        first = named.setdefault(name, path)
        if first != path and realpath(first) != realpath(path):
            raise Pp1Error(f"--repo {name}: given twice, as {first} and as {path}; "
                           "give each source once")
    return {**base, **named}, set(named)


def resolve_options(
    config: Path | None, repos: tuple[str, ...], cache_dir: Path | None, *,
    fetch: bool = False, offline: bool = False, timeout: float | None = None,
    max_bytes: int | None = None, attempts: int | None = None,
    total_timeout: float | None = None, uses_cache: bool = True,
) -> ProvenanceOptions:
    """Merge the config file (explicit, else ``./pp1audit.toml``) with command-line values.
    ``uses_cache``: the run reads remote pins (see ``_cache_dir``)."""
    if fetch and offline:
        raise Pp1Error("--fetch and --offline contradict each other")
    config = config_file(config)  # whatever is there: load_config judges it
    base = load_config(config) if config is not None else ProvenanceOptions()
    merged, named = _merge_repos(base.repos, repos)
    given: dict[str, Any] = {"connect_timeout": timeout, "read_timeout": timeout,
                             "max_bytes": max_bytes, "attempts": attempts,
                             "total_timeout": total_timeout}
    return ProvenanceOptions(
        repos=merged, named_on_command_line=frozenset(named),
        from_config={n: f for n, f in base.from_config.items() if n not in named},
        cache_dir=_cache_dir(cache_dir, base.cache_dir, uses_cache), fetch=fetch,
        policy=replace(base.policy, **{k: v for k, v in given.items() if v is not None}),
    )
