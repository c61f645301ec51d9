"""Benchmark provenance checks: git-source reads, donor hunk status, a cached fetch.

Run by hand (numbers go in the README or a report, never in tests):

    python bench/bench_provenance.py [TREE] [--runs 7]

TREE is the extracted real vLLM 0.31.0 wheel (default: the test cache's
``~/.cache/pp1audit-tests/trees/vllm-0.31.0-*``; run the tests once). Every
figure is the median of ``--runs`` runs in one process.

* lane: ``run_checks`` of the test lane manifest (5 invariants, 4 citations,
  commit/refs) on the lane-shaped repository, gitpython reading blobs;
* hunks: a donor patch of 40 hunks over 20 real vLLM files, status of every hunk
  on the tree (files read through a fresh ``FileStore`` each run);
* fetch: downloading a 1 MiB pin from a loopback server into an empty cache
  (stream, hash, rename), and the cache-hit path re-verifying it.
"""

from __future__ import annotations

import argparse
import difflib
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from lanerepo import build_lane
from test_provenance_git import lane_manifest

from pp1audit.checks.patches import patch_status
from pp1audit.manifest import parse
from pp1audit.run import run_checks
from pp1audit.sources import DirectorySource
from pp1audit.sources.cache import Cache
from pp1audit.sources.download import download
from pp1audit.sources.runconfig import ProvenanceOptions
from pp1audit.sources.store import FileStore


def median_ms(fn: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def big_patch(tree: Path, files: int = 20) -> bytes:
    """Two one-line edits in each of the largest Python files under v1/worker."""
    paths = sorted((tree / "vllm" / "v1").rglob("*.py"), key=lambda p: -p.stat().st_size)[:files]
    out: list[str] = []
    for p in paths:
        rel = p.relative_to(tree).as_posix()
        old = p.read_text().splitlines(True)
        new = list(old)
        for i in (len(old) // 3, 2 * len(old) // 3):
            new[i] = new[i].rstrip("\n") + "  # donor\n"
        out.append(f"diff --git a/{rel} b/{rel}\n")
        out.extend(difflib.unified_diff(old, new, f"a/{rel}", f"b/{rel}", n=3))
    return "".join(out).encode()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("tree", nargs="?")
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    found = sorted(Path.home().glob(".cache/pp1audit-tests/trees/vllm-0.31.0-*"))
    tree = Path(args.tree) if args.tree else found[0] if found else None
    if tree is None or not (tree / "vllm" / "v1").is_dir():
        sys.exit("give the extracted vLLM 0.31.0 tree (or run the tests once to cache it)")
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        lane = build_lane(base / "lane")
        manifest = parse(lane_manifest(lane.base), "lane.yaml")
        (base / "t" / "pkg").mkdir(parents=True)
        (base / "t" / "pkg" / "__init__.py").write_text("")
        options = ProvenanceOptions(repos={"lane": lane.path}, cache_dir=base / "cache")

        def lane_run() -> None:
            checks = run_checks(manifest, FileStore(DirectorySource(base / "t")), options)
            assert all(c.status.value == "pass" for c in checks if c.source == "lane")

        print(f"lane run_checks (git blobs, 5 invariants, 4 citations): "
              f"{median_ms(lane_run, args.runs):.1f} ms")

        patch = big_patch(tree)

        def hunks() -> None:
            result = patch_status(patch, FileStore(DirectorySource(tree))).hunks
            assert len(result) == 40 and all(s.status == "not applied" for s in result)

        print(f"donor hunk status, 40 hunks / 20 real vLLM files: "
              f"{median_ms(hunks, args.runs):.1f} ms")

        body = b"x" * (1 << 20)
        import hashlib

        digest = hashlib.sha256(body).hexdigest()

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a: object) -> None:
                pass

            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{server.server_address[1]}/pin"
        n = [0]

        def fetch_cold() -> None:
            n[0] += 1
            download(url, digest, Cache(base / f"c{n[0]}"))

        print(f"fetch 1 MiB from loopback into an empty cache: {median_ms(fetch_cold, args.runs):.1f} ms")
        warm = Cache(base / "warm")
        download(url, digest, warm)
        print(f"cache hit, 1 MiB re-verified: "
              f"{median_ms(lambda: download(url, digest, warm), args.runs):.2f} ms")
        server.shutdown()


if __name__ == "__main__":
    main()
