"""Cost of the upgrade workflow on the real wheels (run by hand; numbers go in README).

    python bench/bench_upgrade.py [--runs N]

Medians of N end-to-end CLI runs (subprocess, bytecode cached), using the wheels
the tests cache (``~/.cache/pp1audit-tests/wheels``; run the tests once first):
  * ``pp1audit pin WHEEL-0.31.0 -m manifests/pp1.yaml``           (review only)
  * ``pp1audit pin WHEEL-0.30.0 -m <pp1 carried to 0.31.0>``      (rollback review)
  * ``pp1audit diff WHEEL-0.30.0 WHEEL-0.31.0 -m manifests/pp1.yaml``
  * ``pp1audit check WHEEL-0.31.0 -m manifests/pp1.yaml`` for reference
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("PP1AUDIT_TEST_CACHE", Path.home() / ".cache" / "pp1audit-tests"))
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"} | {"NO_COLOR": "1"}


def wheel(version: str) -> Path:
    found = sorted((CACHE / "wheels").glob(f"vllm-{version}-*.whl"))
    if not found:
        sys.exit(f"no cached vllm {version} wheel under {CACHE}; run the tests once first")
    return found[0]


def run(args: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pp1audit", *args], env=ENV, check=False,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    opts = ap.parse_args()
    w30, w31 = wheel("0.30.0"), wheel("0.31.0")
    pp1 = REPO / "manifests" / "pp1.yaml"
    with tempfile.TemporaryDirectory() as tmp:
        carried = Path(tmp) / "pp1-031.yaml"
        subprocess.run([sys.executable, "-m", "pp1audit", "pin", str(w31), "-m", str(pp1), "-o",
                        str(carried)], env=ENV, check=True, stdout=subprocess.DEVNULL)
        cases = {
            "check 0.31.0 wheel": ["check", str(w31), "-m", str(pp1)],
            "pin pp1 -> 0.31.0 wheel": ["pin", str(w31), "-m", str(pp1)],
            "pin 0.31.0 -> 0.30.0 wheel": ["pin", str(w30), "-m", str(carried)],
            "diff 0.30.0 0.31.0 wheels": ["diff", str(w30), str(w31), "-m", str(pp1)],
        }
        times: dict[str, list[float]] = {k: [] for k in cases}
        for _ in range(opts.runs):
            for name, args in cases.items():
                times[name].append(run(args))
    for name, ts in times.items():
        print(f"{name:28s} median {statistics.median(ts) * 1000:7.0f} ms  (n={len(ts)})")


if __name__ == "__main__":
    main()
