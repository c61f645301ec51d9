"""Options shared by the commands: paths, the manifest, provenance inputs, the config file.

Click declarations and the small conversions behind them; no command lives here.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from pp1audit.cli.configfile import config_file

if TYPE_CHECKING:
    from pp1audit.manifest import Manifest
    from pp1audit.sources.runconfig import ProvenanceOptions



class PathParam(click.Path):
    """``click.Path`` that refuses an empty argument: pathlib reads ``""`` as ``.``, so
    ``check "$SITE"`` with the variable unset judged the current directory, and
    ``-o ""`` tried to write to it."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str | bytes) and not value:
            self.fail("an empty path (an unset shell variable?)", param, ctx)
        return super().convert(value, param, ctx)


DEFAULT_MANIFEST = "(the shipped PP1 manifest)"

def load_manifest_at(path: Path | None) -> Manifest:
    from pp1audit.manifest import load_manifest

    if path is None:
        from pp1audit.manifest.defaults import default_manifest_path

        return load_manifest(default_manifest_path(), display="pp1audit:manifests/pp1.yaml")
    return load_manifest(path)


def use_color(fmt_color: str | None) -> bool:
    if fmt_color == "always":
        return True
    if fmt_color == "never" or os.environ.get("NO_COLOR"):
        return False
    return sys.stdout.isatty()


def make_provenance_options(m: Manifest, repos: tuple[str, ...], config: Path | None,
                        cache_dir: Path | None, *, fetch: bool, offline: bool,
                        max_bytes: int | None = None) -> ProvenanceOptions | None:
    """Repos, caches and the config file only concern provenance: a manifest that
    declares none (and a command line that names none) never loads that code."""
    if m.prov is None and not (repos or config or cache_dir or fetch or max_bytes):
        return None  # the config file was read already (``ConfiguredCommand``)
    from pp1audit.sources.runconfig import resolve_options

    return resolve_options(config, repos, cache_dir, fetch=fetch, offline=offline,
                           max_bytes=max_bytes,
                           uses_cache=fetch or bool(m.prov is not None and m.prov.remotes))


def validate_config(given: Path | None) -> None:
    """Read the run's config file (``--config FILE``, else ``./pp1audit.toml`` when
    it is there) though the command may not use it: a broken config is bad input
    (exit 2) whatever the command and the manifest, or a typo in it passes
    silently until a command and a manifest that need it come along. Nothing is
    loaded when there is no file (``configfile``: the lookup, without ``runconfig``)."""
    path = config_file(given)
    if path is not None:
        from pp1audit.sources.runconfig import load_config

        load_config(path)


class ConfiguredCommand(click.Command):
    """Every command: its options parsed (a usage error and ``--help`` come first),
    the config file is validated before it runs (``validate_config``)."""

    def invoke(self, ctx: click.Context) -> Any:
        config = ctx.params.get("config")
        validate_config(config if isinstance(config, Path) else None)
        return super().invoke(ctx)

class Seconds(click.FloatRange):
    """A finite number of seconds: click's FloatRange lets ``nan`` through (every
    comparison with NaN is false), and a NaN deadline is no deadline at all."""

    name = "seconds"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> float:
        seconds = float(super().convert(value, param, ctx))
        if seconds != seconds:  # NaN; infinities are out of range already
            self.fail(f"{value!r} is not a number of seconds.", param, ctx)
        return seconds


manifest_option = click.option(
    "--manifest", "-m", type=PathParam(path_type=Path, dir_okay=False), default=None,
    help="Manifest YAML (default: the PP1 manifest shipped with pp1audit).",
)

def provenance_options(fn: Any) -> Any:
    """``--repo``, ``--config``, ``--cache-dir`` and ``--max-bytes``: where provenance
    evidence lives, and the size cap of a remote pin. The cap is one setting for
    every command that reads the cache: one ``fetch`` may store under a larger
    cap than ``check`` would read back, and ``check`` must be able to say so."""
    fn = click.option("--max-bytes", type=click.IntRange(min=1), default=None,
                      help="Size cap of a remote pin, downloaded or read from the cache "
                      "(default 32 MiB, or [fetch] max_bytes).")(fn)
    fn = click.option("--cache-dir", type=PathParam(path_type=Path, file_okay=False),
                      default=None, help="Remote-pin cache (default: the user cache directory, "
                      "or $PP1AUDIT_CACHE_DIR).")(fn)
    fn = click.option("--config", type=PathParam(path_type=Path, dir_okay=False), default=None,
                      help="TOML file with [repos], [cache] and [fetch] settings "
                      "(default: ./pp1audit.toml when present).")(fn)
    return click.option("--repo", "repos", multiple=True, metavar="NAME=PATH",
                        help="Local clone of the manifest's git source NAME (repeatable).")(fn)


def examples(*commands: str) -> str:
    """A command's ``--help`` epilog: a few real invocations, kept as written (``\\b``)."""
    return "\b\nExamples:\n" + "\n".join(f"  {c}" for c in commands)
