"""Claims bench: ``check`` against its parse floor, and its growth with repeated code.

Run by hand (``python bench/bench_claims.py [RUNS]``); figures go to bench/README.md.

1. **Parse floor** (paired, medians, one run): ``pp1audit check`` on the real vLLM
   0.31.0 wheel with the default manifest, against the least any tool that judges
   these claims must do: start Python, import click and yaml, read the manifest's
   Python files from the same wheel and parse each with ast-grep-py. Also the bare
   ``python -c "import click, yaml"``. Target: check within 1.5x of the floor.
   Every command runs with bytecode caching on (in a temporary ``PYTHONPYCACHEPREFIX``)
   after one discarded warm-up round: an installed pp1audit has its ``.pyc`` files, as
   click and yaml have theirs; a ``PYTHONDONTWRITEBYTECODE`` environment would
   otherwise charge ``check`` for compiling its own source on every run.
2. **Linear in the target**: 0, 250, 1,000 and 2,000 extra (correct) sampler calls
   added to ``GPUModelRunner.sample`` in an extracted tree; ``check`` wall time each.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
from conftest import fetch_wheel  # noqa: E402

from pp1audit.manifest import load_manifest  # noqa: E402

MANIFEST = REPO / "manifests" / "pp1.yaml"
RUNNER = "vllm/v1/worker/gpu/model_runner.py"
CALL = "            sampler_output = self.rejection_sampler(\n"


ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
ENV["PYTHONPYCACHEPREFIX"] = tempfile.mkdtemp(prefix="pp1audit-bench-pyc-")


def timed(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False,
                   env=ENV)
    return time.perf_counter() - start


def floor_script(wheel: Path) -> str:
    m = load_manifest(MANIFEST)
    files = sorted({inv.file for inv in m.invariants.values() if inv.source is None}
                   | {c.span.path for c in m.citations.values() if c.source is None})
    return ("import click, yaml, zipfile\nfrom ast_grep_py import SgRoot\n"
            f"z = zipfile.ZipFile({str(wheel)!r})\n"
            f"for p in {files!r}:\n    SgRoot(z.read(p).decode('utf-8'), 'python').root()\n")


def parse_floor(runs: int) -> None:
    wheel = fetch_wheel("0.31.0")
    commands = {
        "bare import click, yaml": [sys.executable, "-c", "import click, yaml"],
        "parse floor": [sys.executable, "-c", floor_script(wheel)],
        "pp1audit check": [sys.executable, "-m", "pp1audit", "check", str(wheel)],
    }
    times: dict[str, list[float]] = {k: [] for k in commands}
    for cmd in commands.values():  # warm-up: writes the bytecode caches, not timed
        timed(cmd)
    for _ in range(runs):  # paired: each round runs all three, in turn
        for name, cmd in commands.items():
            times[name].append(timed(cmd))
    med = {k: statistics.median(v) for k, v in times.items()}
    for name, value in med.items():
        print(f"{name:26s} {value * 1000:7.1f} ms (median of {runs})")
    print(f"check / parse floor        {med['pp1audit check'] / med['parse floor']:.2f}x")
    print(f"check / bare import        {med['pp1audit check'] / med['bare import click, yaml']:.2f}x")


def scaling(runs: int) -> None:
    wheel = fetch_wheel("0.31.0")
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base"
        with zipfile.ZipFile(wheel) as zf:
            zf.extractall(base)
        text = (base / RUNNER).read_text(encoding="utf-8")
        assert text.count(CALL) == 1
        block_start = text.index(CALL)
        block_end = text.index("            )\n", block_start) + len("            )\n")
        call = text[block_start:block_end]
        for extra in (0, 250, 1000, 2000):
            tree = Path(tmp) / f"t{extra}"
            shutil.copytree(base, tree, copy_function=lambda s, d: Path(d).hardlink_to(s))
            (tree / RUNNER).unlink()
            (tree / RUNNER).write_text(text[:block_end] + call * extra + text[block_end:],
                                       encoding="utf-8")
            cmd = [sys.executable, "-m", "pp1audit", "check", str(tree)]
            timed(cmd)  # warm-up
            best = statistics.median(timed(cmd) for _ in range(runs))
            print(f"{extra:5d} extra sampler calls: check {best * 1000:7.1f} ms (median of {runs})")


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 9
    parse_floor(n)
    scaling(max(3, n // 3))
