"""Start-up cost of the CLI against its import floor (run by hand; numbers go in README).

    python bench/bench_startup.py [WHEEL] [--runs N]

Times, in one run, several alternating repetitions of:
  * ``python -c "import click"``            — floor for ``pp1audit --version``
  * ``python -c "import click, yaml"``      — floor for ``pp1audit check``
  * ``pp1audit --version``
  * ``pp1audit check WHEEL -m manifests/examples/vllm-0.31.0.yaml --format json``
and prints medians and the ratios the core issue targets (check ≤ 1.5× its
floor, --version ≤ 1.3× its floor).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


# As installed: bytecode cached (some shells here set PYTHONDONTWRITEBYTECODE,
# which would make every run recompile every module and measure the compiler).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(cmd: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, env=ENV)
    return time.perf_counter() - t


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("wheel", nargs="?", default=None)
    parser.add_argument("--tree", default=None, help="extracted tree (default: the test cache's)")
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--manifest", default=str(REPO / "manifests/examples/vllm-0.31.0.yaml"))
    args = parser.parse_args()
    wheel = args.wheel
    if wheel is None:
        found = sorted((Path.home() / ".cache/pp1audit-tests/wheels").glob("vllm-0.31.0-*.whl"))
        if not found:
            sys.exit("give the vLLM 0.31.0 wheel path (or run the tests once to cache it)")
        wheel = str(found[0])
    tree = args.tree or str(Path(wheel).parent.parent / "trees" / Path(wheel).stem)
    exe = shutil.which("pp1audit") or sys.exit("pp1audit is not installed (pip install -e .)")
    py = sys.executable
    cmds = {
        "import click": [py, "-c", "import click"],
        "import click, yaml": [py, "-c", "import click, yaml"],
        "pp1audit --version": [exe, "--version"],
        "pp1audit check (wheel, json)": [exe, "check", wheel, "--manifest", args.manifest,
                                         "--format", "json"],
        "pp1audit check (tree, json)": [exe, "check", tree, "--manifest", args.manifest, "--format", "json"],
    }
    times: dict[str, list[float]] = {k: [] for k in cmds}
    for cmd in cmds.values():  # warm-up: page cache, .pyc files
        timed(cmd)
    for _ in range(args.runs):
        for name, cmd in cmds.items():
            times[name].append(timed(cmd))
    med = {k: statistics.median(v) * 1000 for k, v in times.items()}
    for name, ms in med.items():
        print(f"{name:32s} median {ms:7.1f} ms  (n={args.runs})")
    floor = med["import click, yaml"]
    for kind in ("tree", "wheel"):
        ratio = med[f"pp1audit check ({kind}, json)"] / floor
        print(f"check ({kind}) / import floor = {ratio:.2f}x (target <= 1.5)")
    version_ratio = med["pp1audit --version"] / med["import click"]
    print(f"--version / import click  = {version_ratio:.2f}x (target <= 1.3)")


if __name__ == "__main__":
    main()
