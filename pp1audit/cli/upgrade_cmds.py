"""Command line of the upgrade workflow: ``init``, ``pin``, ``show`` and ``diff``.

Kept apart from the audit commands (``cli/__init__.py`` registers these on first use) so that the check
path stays small. Like every command, these only parse options, call the pure
core (``pp1audit.upgrade.init``, ``pin``, ``show``, ``treediff``), print what it returns
and map the outcome to an exit code: 0 done / nothing differs, 1 something a
human must look at, 2 bad input and nothing written.
"""

from __future__ import annotations

import codecs
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import click

from pp1audit.cli.options import ConfiguredCommand, PathParam, examples, provenance_options
from pp1audit.cli.output import emit, tell
from pp1audit.errors import EXIT_CLOSED, EXIT_OPEN, Pp1Error

if TYPE_CHECKING:
    from pp1audit.manifest import Manifest

_manifest_option = click.option(
    "--manifest", "-m", type=PathParam(path_type=Path, dir_okay=False), default=None,
    help="Manifest YAML (default: the PP1 manifest shipped with pp1audit).",
)
_color_option = click.option(
    "--color", type=click.Choice(["auto", "always", "never"]), default="auto",
    help="Colour (NO_COLOR is honoured in auto).",
)


def _manifest_path(path: Path | None) -> tuple[Path, str]:
    if path is not None:
        return path, str(path)
    from pp1audit.manifest.defaults import default_manifest_path

    return default_manifest_path(), "pp1audit:manifests/pp1.yaml"


def _load(path: Path | None) -> Manifest:
    from pp1audit.manifest import load_manifest

    real, display = _manifest_path(path)
    return load_manifest(real, display=display)


def _color(choice: str) -> bool:
    if choice == "always":
        return True
    if choice == "never" or os.environ.get("NO_COLOR"):
        return False
    return sys.stdout.isatty()


def _out(text: str, *, utf8: bool = False) -> None:
    """``text`` to stdout; ``utf8`` (a manifest, JSON) as UTF-8 whatever the locale."""
    emit(text, None, utf8=utf8)


def _note(text: str) -> None:
    """A line on stderr; escaped, as every line that quotes the target is (a
    version or a note read from the tree must not write on the terminal)."""
    from pp1audit.text.safe import printable

    tell(f"pp1audit: {printable(text)}")


@click.command(cls=ConfiguredCommand,
               epilog=examples("pp1audit init vllm-0.31.0-*.whl -p vllm -o my.yaml "
                               "--cite vllm/config/speculative.py:601"))
@click.argument("target", type=PathParam(path_type=Path))
@click.option("--package", "-p", required=True, help="Package directory name under the target root.")
@click.option("--cite", "cites", multiple=True, required=True, metavar="[ID=]PATH:A-B",
              help="A span to cite (repeatable); ID defaults to <prefix><file>-<A>-<B>.")
@click.option("--id-prefix", default="", help="Prefix for generated citation ids.")
@click.option("--audit-id", default=None, help="audit.id (default: the output file's name).")
@click.option("--title", default=None, help="audit.title.")
@click.option("--context", type=click.IntRange(0, 20), default=2, show_default=True,
              help="Lines of code quoted before and after each span (anchor prefix/suffix); "
              "blank lines are not counted, as the lines around a top-level def are blank.")
@click.option("--output", "-o", type=PathParam(path_type=Path, dir_okay=False), default=None,
              help="Write the manifest to FILE (atomically) instead of stdout.")
@click.option("--force", is_flag=True, help="Overwrite an existing output file.")
def init(
    target: Path, package: str, cites: tuple[str, ...], id_prefix: str, audit_id: str | None,
    title: str | None, context: int, output: Path | None, force: bool,
) -> int:
    """Write a new manifest measured from TARGET: version, the SHA-256 of every
    cited file, and each citation with a text anchor quoted from the tree.

    The manifest passes `pp1audit check` on TARGET by construction.
    """
    import re

    from pp1audit.sources import open_target
    from pp1audit.upgrade import init as init_mod

    if output is not None and output.exists() and not force:
        raise Pp1Error(f"{output}: exists; give --force to overwrite it")
    requests = [init_mod.parse_cite(c) for c in cites]
    if audit_id is None:
        stem = output.stem.lower() if output is not None else "audit"
        audit_id = re.sub(r"[^a-z0-9._-]+", "-", stem).strip("-._") or "audit"
    with open_target(target, package) as source:
        result = init_mod.build(source, package, requests, id_prefix=id_prefix,
                                audit_id=audit_id, title=title, context=context)
    for note in result.notes:
        _note(note)
    if output is None:
        _out(result.text, utf8=True)  # a manifest is a UTF-8 document, whatever the locale
    else:
        from pp1audit.atomic import write_atomic
        from pp1audit.text.safe import count

        write_atomic(output, result.text)
        _note(f"wrote {output}: {count(len(result.citations), 'citation')}, "
              f"{count(len(result.files), 'file')}, version {result.version or '(none)'}")
    return EXIT_OPEN


@click.command(cls=ConfiguredCommand,
               epilog=examples("pp1audit pin vllm-0.32.0-*.whl -m my.yaml",
                        "pp1audit pin vllm-0.32.0-*.whl -m my.yaml --in-place"))
@click.argument("target", type=PathParam(path_type=Path))
@_manifest_option
@click.option("--output", "-o", type=PathParam(path_type=Path, dir_okay=False), default=None,
              help="Write the re-pinned manifest to FILE.")
@click.option("--in-place", is_flag=True, help="Rewrite the manifest itself.")
@click.option("--allow-unresolved", is_flag=True,
              help="Write even with unresolved items, marked `unresolved:` for a human "
              "(a marked citation always fails check).")
@click.option("--accept", "accept", multiple=True, metavar="CITATION-ID",
              help="Carry this citation where it is found although pin doubts the place "
              "(context changed, or none to confirm a move, or re-indented); repeatable, "
              "after review.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="Review output: table and manifest diff, or JSON.")
def pin(
    target: Path, manifest: Path | None, output: Path | None, in_place: bool,
    allow_unresolved: bool, accept: tuple[str, ...], fmt: str,
) -> int:
    """Carry the manifest to TARGET: new version and digests, every citation moved to
    where the checks find it now and its anchor re-quoted; invariants re-checked.

    Prints a review table and the manifest's diff. Without -o or --in-place
    nothing is written. Claims whose evidence changed shape are listed as stale for
    review, not refused. Exit 0 when every pin was carried; 1 when some are
    unresolved (not written unless --allow-unresolved, then written marked);
    2 when nothing on TARGET could be judged (nothing written).
    """
    from pp1audit.formats.json_format import dumps
    from pp1audit.manifest import parse_bytes
    from pp1audit.sources import open_target
    from pp1audit.sources.inputs import read_input
    from pp1audit.upgrade import pin as pin_mod
    from pp1audit.upgrade import review

    if output is not None and in_place:
        raise click.UsageError("give -o FILE or --in-place, not both")
    if in_place and manifest is None:  # never rewrite the manifest shipped inside pp1audit
        raise click.UsageError("--in-place needs -m MANIFEST (the default manifest is not rewritten)")
    path, display = _manifest_path(manifest)
    raw = read_input(path, "manifest")  # once: the text planned is the text parsed
    m = parse_bytes(raw, display)
    bom = "\ufeff" if raw.startswith(codecs.BOM_UTF8) else ""  # kept: the file is the author's
    text = raw.decode("utf-8-sig")
    with open_target(target, m.package) as source:
        plan = pin_mod.plan(m, text, source, accept)
    dest = path if in_place else output
    new_name = str(dest) if dest is not None else None
    if fmt == "json":
        shown = dumps(review.as_dict(plan, new_name))  # the notes under "notes"
    else:
        # Notes are said on stderr with the other notes (``_note``): stdout holds the
        # review and the diff, which a user may pipe or save.
        diff = review.render_diff(plan, new_name)
        shown = review.render_review(replace(plan, notes=())) + ("\n" + diff if diff else "")
    unresolved = plan.unresolved
    # Written before anything is printed: a write that fails is exit 2, and with
    # --format json stdout must then hold the error object alone, not a result.
    if dest is None:
        said = "review only: give -o FILE or --in-place to write"
    elif unresolved and not allow_unresolved:
        said = (f"not written: {len(unresolved)} unresolved "
                "(fix them, or give --allow-unresolved to write them marked)")
    else:
        from pp1audit.atomic import write_atomic

        write_atomic(dest, bom + plan.new_text)
        marked = f", {len(unresolved)} marked unresolved" if unresolved else ""
        said = f"wrote {dest}{marked}"
    _out(shown, utf8=fmt == "json")
    if fmt != "json":
        for note in plan.notes:
            _note(note)
    _note(said)
    if plan.target_fails:
        _note(f"{len(plan.target_fails)} check(s) of the target itself fail and no pin can "
              "carry them (see 'target fails'): check will fail on this tree")
    if plan.stale:
        # Rules are not pins: nothing to carry, and the claim may still hold. Listed for a
        # person; check stays closed on them until their rules are brought up to date.
        _note(f"{len(plan.stale)} claim(s) stale (see 'stale'): their evidence changed shape "
              "on this tree; re-review them and update their rules")
    return EXIT_CLOSED if unresolved or plan.target_fails else EXIT_OPEN


@click.command(cls=ConfiguredCommand,
               epilog=examples("pp1audit show vllm-0.31.0-*.whl runner-passes-draft-logits"))
@click.argument("target", type=PathParam(path_type=Path))
@click.argument("spec", metavar="(CITATION-ID | PATH:A-B)")
@_manifest_option
@click.option("--package", "-p", default=None,
              help="Package name (default: the manifest's target.package).")
@click.option("--context", "-C", type=click.IntRange(0, 200), default=3, show_default=True,
              help="Lines of context around the span.")
@_color_option
@provenance_options
def show(
    target: Path, spec: str, manifest: Path | None, package: str | None, context: int, color: str,
    repos: tuple[str, ...] = (), config: Path | None = None, cache_dir: Path | None = None,
    max_bytes: int | None = None,
) -> int:
    """Show a citation (or any span) of TARGET with line numbers, context and status.

    A citation is shown where it is found now; one of a git source is read from
    the clone given with --repo, as check reads it. Exit 0 when the citation
    passes (or a plain span was shown), 1 when its check would close the gate
    (a cited file that cannot be read included), 2 for bad input.
    """
    from pp1audit.cli.options import make_provenance_options
    from pp1audit.result import GatePolicy
    from pp1audit.sources import open_target
    from pp1audit.upgrade import show as show_mod

    m: Manifest | None = None
    real, _ = _manifest_path(manifest)
    if manifest is not None or real.exists() or ":" not in spec:
        m = _load(manifest)
    pkg = package or (m.package if m is not None else None)
    if pkg is None:
        raise click.UsageError("give --package (no manifest to take it from)")
    options = None
    if m is None and (repos or config or cache_dir or max_bytes):
        raise click.UsageError("--repo, --config, --cache-dir and --max-bytes need a manifest (-m)")
    if m is not None:  # as report: evidence already there, never a download
        options = make_provenance_options(m, repos, config, cache_dir, fetch=False, offline=True,
                                          max_bytes=max_bytes)
    with open_target(target, pkg) as source:
        shown = show_mod.prepare(spec, m, source, options)
    _out(show_mod.render(shown, context=context, color=_color(color)))
    policy = GatePolicy()
    closed = ":" not in spec and (bool(shown.problem)
                                  or any(policy.closes(c.status) for c in shown.checks))
    return EXIT_CLOSED if closed else EXIT_OPEN


@click.command("diff", cls=ConfiguredCommand,
               epilog=examples("pp1audit diff vllm-0.31.0-*.whl vllm-0.32.0-*.whl",
                               "pp1audit diff old/site-packages new/site-packages -m my.yaml"))
@click.argument("old", type=PathParam(path_type=Path))
@click.argument("new", type=PathParam(path_type=Path))
@_manifest_option
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="Output format.")
@click.option("--verbose", "-v", is_flag=True, help="Text format: list unchanged items too.")
def diff_cmd(old: Path, new: Path, manifest: Path | None, fmt: str, verbose: bool) -> int:
    """What changed between trees OLD and NEW (directories or wheels, read in place)
    in every file the manifest pins and every span it cites: unchanged, moved,
    changed (with a diff of the span) or gone.

    Exit 0 when nothing cited or pinned differs, 1 when something does, 2 when
    the manifest pins nothing of the target to compare.
    """
    from pp1audit.formats.json_format import dumps
    from pp1audit.sources import open_target
    from pp1audit.upgrade import diff as treediff

    m = _load(manifest)
    with open_target(old, m.package) as a, open_target(new, m.package) as b:
        td = treediff.compare(m, a, b)
    if not td.items:
        raise Pp1Error(f"{m.path}: pins nothing that diff can compare in these trees (no "
                       "version, files or citations of the target; sources, remote pins and "
                       "donors are read by check), so nothing was judged")
    if fmt == "json":
        _out(dumps(treediff.as_dict(td)), utf8=True)
    else:
        _out(treediff.render_text(td, verbose=verbose))
    return EXIT_OPEN if td.same else EXIT_CLOSED


COMMANDS = (init, pin, show, diff_cmd)
"""Loaded on first use by the ``pp1audit`` group (``cli._Group``); a test keeps the two in step."""
