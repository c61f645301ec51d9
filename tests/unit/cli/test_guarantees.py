"""Two guarantees of the design that other tests only touch from the side.

* **Outputs are written atomically**: a run that fails while writing ``-o FILE``
  leaves the old file whole. A plain truncate-and-write would leave the first
  bytes of the new result instead; the file size limit (``RLIMIT_FSIZE``) makes the
  write fail part-way, for real.
* **Each file is read once per run**: a file pin, a citation and an invariant on
  the same file judge the same bytes (design.md: "its hash and its cited spans come
  from the same bytes"), so a file swapped between two reads cannot pass one check
  and fail another.
"""

from __future__ import annotations

import json
import resource
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from pp1audit.manifest import parse
from pp1audit.result import Status
from pp1audit.run import audit
from pp1audit.sources import DirectorySource

MOD = "def run(self):\n    self.go()\n    return 1\n"
MANIFEST = """\
pp1audit: 1
target: {{package: pkg, version: "1.0"}}
files:
  pkg/mod.py: {sha}
citations:
  go: {{at: "pkg/mod.py:2", anchor: {{exact: "    self.go()"}}}}
invariants:
  runs-go: {{file: pkg/mod.py, in: run, evidence: {{rule: {{pattern: self.go()}}}}}}
"""


def tree(make_files: Callable[[dict[str, str]], Path]) -> tuple[Path, str]:
    import hashlib

    root = make_files({"pkg/__init__.py": "", "pkg/_version.py": '__version__ = "1.0"\n',
                       "pkg/mod.py": MOD})
    return root, MANIFEST.format(sha=hashlib.sha256(MOD.encode()).hexdigest())


def test_a_write_that_fails_part_way_leaves_the_old_output(
    make_files: Callable[[dict[str, str]], Path], tmp_path: Path,
) -> None:
    root, text = tree(make_files)
    manifest = tmp_path / "m.yaml"
    manifest.write_text(text, encoding="utf-8")
    out = tmp_path / "result.json"
    out.write_text("OLD RESULT\n", encoding="utf-8")
    full = subprocess.run([sys.executable, "-m", "pp1audit", "check", str(root), "-m", str(manifest),
                           "--format", "json"], capture_output=True, text=True)
    assert full.returncode == 0, full.stdout + full.stderr
    assert len(full.stdout) > 400  # larger than the limit below: the write must fail part-way

    def limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG)
        resource.setrlimit(resource.RLIMIT_FSIZE, (200, 200))

    run = subprocess.run([sys.executable, "-m", "pp1audit", "check", str(root), "-m", str(manifest),
                          "--format", "json", "-o", str(out)],
                         capture_output=True, text=True, preexec_fn=limit)
    assert run.returncode == 2, run.stdout + run.stderr
    assert out.read_text(encoding="utf-8") == "OLD RESULT\n"
    assert len(run.stderr.strip().splitlines()) == 1 and "result.json" in run.stderr, run.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.yaml", "result.json", "tree"]
    # Without the limit the same command replaces it with the whole result.
    ok = subprocess.run([sys.executable, "-m", "pp1audit", "check", str(root), "-m", str(manifest),
                         "--format", "json", "-o", str(out)], capture_output=True, text=True)
    assert ok.returncode == 0
    assert json.loads(out.read_text(encoding="utf-8"))["verdict"] == "pass"


class CountingSource(DirectorySource):
    """A directory source that counts how often each file is read."""

    def __init__(self, base: Path) -> None:
        super().__init__(base)
        self.reads: Counter[str] = Counter()

    def read(self, path: str) -> bytes:
        self.reads[path] += 1
        return super().read(path)


def test_a_file_pinned_cited_and_searched_is_read_once(
    make_files: Callable[[dict[str, str]], Path],
) -> None:
    root, text = tree(make_files)
    source = CountingSource(root)
    result = audit(parse(text, "m.yaml"), source)
    kinds = {c.kind: c.status for c in result.checks}
    assert kinds == {"version": Status.PASS, "file": Status.PASS, "citation": Status.PASS,
                     "invariant": Status.PASS}, result.checks
    assert source.reads["pkg/mod.py"] == 1, source.reads
