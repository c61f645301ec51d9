"""Benchmark the invariant set of the example manifest on the real vLLM 0.31.0 tree.

Run by hand (numbers go in the README, never in tests):

    python bench/bench_invariants.py [TREE] [--runs 7] [--manifest M] [--scale N]

TREE is the extracted real vLLM 0.31.0 wheel (default: the test cache's
``~/.cache/pp1audit-tests/trees/vllm-0.31.0-*``, else /tmp/v031). Each run
builds a fresh ``FileStore`` and ``Engine`` (as ``pp1audit check`` does), so
each figure includes reading the files, the stdlib syntax check, the
tree-sitter parse and the matching. Files are read once beforehand so the page
cache holds them. Every figure is the median of ``--runs`` runs in one process.

Reported: the whole set (6 rules on 5 files); the same split into parsing and
matching; the parse count per run (one per distinct file, whatever the number
of rules: ``--scale N`` evaluates N copies of every rule in one run to show
that parsing stays flat while matching grows); and the end-to-end CLI
(``pp1audit check`` in a subprocess, Python start-up included).
"""

from __future__ import annotations

import argparse
import glob
import os
import statistics
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

from pp1audit.manifest import load_manifest
from pp1audit.matcher import HOLDS, Engine
from pp1audit.sources import DirectorySource
from pp1audit.store import FileStore

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "manifests" / "examples" / "vllm-0.31.0-invariants.yaml"


def default_tree() -> Path:
    cache = Path(os.environ.get("PP1AUDIT_TEST_CACHE", Path.home() / ".cache" / "pp1audit-tests"))
    found = sorted(glob.glob(str(cache / "trees" / "vllm-0.31.0-*")))
    return Path(found[0]) if found else Path("/tmp/v031")


def median_ms(samples: list[float]) -> str:
    return f"{statistics.median(samples) * 1000:8.1f} ms"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("tree", nargs="?", type=Path, default=None)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--manifest", type=Path, default=EXAMPLE)
    ap.add_argument("--scale", type=int, default=10)
    args = ap.parse_args()
    tree = args.tree or default_tree()
    manifest = load_manifest(args.manifest)
    invariants = list(manifest.invariants.values())
    files = sorted({inv.file for inv in invariants})
    for f in files:  # warm the page cache
        (tree / f).read_bytes()

    whole: list[float] = []
    parse: list[float] = []
    match: list[float] = []
    scaled: list[float] = []
    counts: set[int] = set()
    scaled_counts: set[int] = set()
    many = [replace(inv, id=f"{inv.id}#{k}") for k in range(args.scale) for inv in invariants]
    import ast_grep_py  # noqa: F401  (import once: the CLI pays it once per process too)

    for _ in range(args.runs):
        t0 = time.perf_counter()
        engine = Engine(FileStore(DirectorySource(tree)))
        for inv in invariants:
            assert engine.outcome(inv).status == HOLDS, inv.id
        whole.append(time.perf_counter() - t0)
        counts.add(engine.parse_count)

        engine = Engine(FileStore(DirectorySource(tree)))
        t0 = time.perf_counter()
        for f in files:
            engine.parse(f)
        t1 = time.perf_counter()
        for inv in invariants:
            engine.outcome(inv)
        t2 = time.perf_counter()
        parse.append(t1 - t0)
        match.append(t2 - t1)

        t0 = time.perf_counter()
        engine = Engine(FileStore(DirectorySource(tree)))
        for inv in many:
            assert engine.outcome(inv).status == HOLDS, inv.id
        scaled.append(time.perf_counter() - t0)
        scaled_counts.add(engine.parse_count)

    cli: list[float] = []
    for _ in range(args.runs):
        t0 = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "pp1audit", "check", str(tree), "-m", str(args.manifest)],
            capture_output=True, text=True,
        )
        cli.append(time.perf_counter() - t0)
        assert proc.returncode == 0, proc.stdout + proc.stderr

    sizes = sum((tree / f).stat().st_size for f in files)
    print(f"tree: {tree}")
    print(f"rules: {len(invariants)} on {len(files)} files ({sizes / 1024:.0f} KiB); "
          f"median of {args.runs} runs")
    print(f"  full invariant set (read+parse+match) {median_ms(whole)}  parses/run: {sorted(counts)}")
    print(f"    parse only (compile + tree-sitter) {median_ms(parse)}")
    print(f"    match only (6 rules, trees cached){median_ms(match)}")
    print(f"  {len(many)} rules ({args.scale}x each) in one run  {median_ms(scaled)}  "
          f"parses/run: {sorted(scaled_counts)}")
    print(f"  CLI `pp1audit check` end to end     {median_ms(cli)}")


if __name__ == "__main__":
    main()
