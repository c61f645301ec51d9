"""Run-time inputs for provenance checks: clone paths, the remote cache, fetch limits.

They come from command-line options and, so that a CI job or a workstation does
not repeat them, from a TOML file (``--config FILE``, else ``./pp1audit.toml`` when
present)::

    [repos]              # named git sources of the manifest -> local clones
    lane = "../lane"     # relative paths are relative to the config file

    [cache]
    dir = "~/.cache/pp1audit"

    [fetch]
    timeout = 30         # seconds, connect and read (0 < timeout <= 3600)
    total_timeout = 120  # seconds for a whole download, tries included (same range)
    max_bytes = 33554432 # >= 1
    attempts = 3         # >= 1

Command-line values win over the file, and the file over ``$PP1AUDIT_CACHE_DIR``.
Unknown keys, wrong types and values out of range are usage errors (exit 2)
naming the file, never silently ignored or clamped (a negative timeout would
otherwise surface as a crash deep inside the HTTP client). A cache directory
that cannot be one (an existing file) is a usage error too, however it was
named, and a ``--repo`` NAME given twice with two paths (the last would
silently win, and the gate flip with the order of the options).
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
from pp1audit.sources.cache import CACHE_ENV, default_cache_dir
from pp1audit.sources.fetchpolicy import FetchPolicy
from pp1audit.sources.safeio import realpath

MAX_TIMEOUT = 3600.0
"""Longest accepted timeout, in seconds: beyond an hour a value is a typo (ms?)."""


@dataclass(frozen=True)
class ProvenanceOptions:
    """Everything provenance checks need beyond the manifest and the target."""

    repos: dict[str, Path] = field(default_factory=dict)
    """Named git source -> local clone (``--repo NAME=PATH``, or the config file)."""
    named_on_command_line: frozenset[str] = frozenset()
    """Names given with ``--repo``: a manifest without them is a usage error. Names only
    in a config file may belong to other manifests and are ignored when unknown."""
    from_config: dict[str, Path] = field(default_factory=dict)
    """Names whose path a config file gave (and no ``--repo`` overrode) -> that file."""
    cache_dir: Path | None = None
    """Remote-pin cache; None: ``cache.default_cache_dir()``."""
    fetch: bool = False
    """Download missing remote pins before checking (``check --fetch``). Without it
    nothing opens a socket, so ``--offline`` (the default made explicit) needs no
    state of its own: it only refuses to be combined with ``--fetch``."""
    policy: FetchPolicy = field(default_factory=FetchPolicy)

    def repo_origin(self, name: str) -> str:
        """Who gave the clone path of source ``name``, as the head of a one-line error
        about it: ``cfg.toml: [repos] lane: /path`` or ``/path: --repo lane``. A path
        that is no clone is the fault of the line that wrote it, and one from a config
        file blamed on ``--repo`` sends the reader to a command line that has none."""
        path = self.repos.get(name)
        file = self.from_config.get(name)
        if file is not None:
            return f"{file}: [repos] {name}: {path}"
        return f"{path}: --repo {name}"


def parse_repo_option(value: str) -> tuple[str, Path]:
    """``NAME=PATH`` → (name, path); ``Pp1Error`` for anything else."""
    name, sep, path = value.partition("=")
    if not sep or not name.strip() or not path.strip():
        raise Pp1Error(f"--repo {value}: expected NAME=PATH (e.g. --repo lane=../lane)")
    return name.strip(), Path(path.strip()).expanduser()


def _expect(file: Path, key: str, value: Any, kind: type | tuple[type, ...]) -> Any:
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
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
    base = file.resolve().parent
    known = {"repos", "cache", "fetch"}
    extra = sorted(set(data) - known)
    if extra:
        raise Pp1Error(f"{file}: unknown section '{extra[0]}' (known: cache, fetch, repos)")
    repos: dict[str, Path] = {}
    for name, path in _expect(file, "repos", data.get("repos", {}), dict).items():
        p = Path(_expect(file, f"repos.{name}", path, str)).expanduser()
        repos[name] = p if p.is_absolute() else base / p
    cache = _expect(file, "cache", data.get("cache", {}), dict)
    if set(cache) - {"dir"}:
        raise Pp1Error(f"{file}: unknown key 'cache.{sorted(set(cache) - {'dir'})[0]}'")
    cache_dir = None
    if "dir" in cache:
        c = Path(_expect(file, "cache.dir", cache["dir"], str)).expanduser()
        cache_dir = c if c.is_absolute() else base / c
    fetch = _expect(file, "fetch", data.get("fetch", {}), dict)
    policy = FetchPolicy()
    for key, value in fetch.items():
        if key == "timeout":
            t = _seconds(file, "fetch.timeout", value)
            policy = replace(policy, connect_timeout=t, read_timeout=t)
        elif key == "total_timeout":
            policy = replace(policy, total_timeout=_seconds(file, "fetch.total_timeout", value))
        elif key == "max_bytes":
            policy = replace(policy, max_bytes=_at_least_one(file, "fetch.max_bytes", value))
        elif key == "attempts":
            policy = replace(policy, attempts=_at_least_one(file, "fetch.attempts", value))
        else:
            raise Pp1Error(f"{file}: unknown key 'fetch.{key}' "
                           "(known: attempts, max_bytes, timeout, total_timeout)")
    if cache_dir is not None:
        check_cache_dir(cache_dir, f"{file}: [cache] dir")
    return ProvenanceOptions(repos=repos, from_config=dict.fromkeys(repos, file),
                             cache_dir=cache_dir, policy=policy)


def check_cache_dir(path: Path, origin: str) -> None:
    """``Pp1Error`` (exit 2) when ``path`` cannot be a cache directory: an existing
    non-directory, or one below a file. A missing one is fine (``fetch`` makes it).

    The same test for ``--cache-dir``, ``[cache] dir`` and ``$PP1AUDIT_CACHE_DIR``:
    an unusable cache is bad input whoever named it, not a closed gate. ``origin``
    heads the message (``cfg.toml: [cache] dir``).
    """
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return
    except NotADirectoryError:
        raise Pp1Error(f"{origin}: {path}: a parent of it is not a directory; "
                       "the remote-pin cache must be a directory") from None
    except OSError:
        return  # unreadable: each use of the cache says so, with the file it needed
    if not stat.S_ISDIR(mode):
        raise Pp1Error(f"{origin}: {path} is not a directory; "
                       "the remote-pin cache must be a directory")


def _cache_dir(option: Path | None, config: Path | None, uses_cache: bool) -> Path | None:
    """The cache directory: ``--cache-dir``, else the config file's, else
    ``$PP1AUDIT_CACHE_DIR``, else the user cache directory (None), checked alike:
    the last too, as ``$XDG_CACHE_HOME`` names a file as easily as the others do,
    and each pin's check would then be an ``error`` of its own (exit 1) — but only
    when the run ``uses_cache``: a default nobody chose (``HOME=/dev/null`` in a
    sandboxed CI) must not end a run that reads no remote pin."""
    if option is not None:
        check_cache_dir(option, "--cache-dir")
        return option
    if config is not None:  # checked when the file was read, naming the file
        return config
    env = os.environ.get(CACHE_ENV)
    if not env:
        if uses_cache:
            check_cache_dir(default_cache_dir(), _user_cache_origin())
        return None
    path = Path(env)
    check_cache_dir(path, CACHE_ENV)
    return path


def _user_cache_origin() -> str:
    """Who named the user cache directory, as the head of an error about it."""
    given = os.environ.get("XDG_CACHE_HOME", "").strip()  # blank is unset, as platformdirs reads it
    return "XDG_CACHE_HOME" if given else "the user cache directory"


def _merge_repos(base: dict[str, Path], values: tuple[str, ...]) -> tuple[dict[str, Path], set[str]]:
    """The config file's clones with ``--repo`` values over them, and the names given.

    A NAME given twice is a usage error unless both name the same directory: the
    last one would win silently, and the verdict depend on the options' order.
    """
    merged = dict(base)
    named: dict[str, Path] = {}
    for value in values:
        name, path = parse_repo_option(value)
        first = named.get(name)
        if first is not None and not _same_path(first, path):
            raise Pp1Error(f"--repo {name}: given twice, as {first} and as {path}; "
                           "give each source once")
        named[name] = path
        merged[name] = path
    return merged, set(named)


def _same_path(a: Path, b: Path) -> bool:
    return a == b or realpath(a) == realpath(b)


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
    policy = base.policy
    if timeout is not None:
        policy = replace(policy, connect_timeout=timeout, read_timeout=timeout)
    if max_bytes is not None:
        policy = replace(policy, max_bytes=max_bytes)
    if attempts is not None:
        policy = replace(policy, attempts=max(1, attempts))
    if total_timeout is not None:
        policy = replace(policy, total_timeout=total_timeout)
    return ProvenanceOptions(
        repos=merged, named_on_command_line=frozenset(named),
        from_config={n: f for n, f in base.from_config.items() if n not in named},
        cache_dir=_cache_dir(cache_dir, base.cache_dir, uses_cache), fetch=fetch, policy=policy,
    )
