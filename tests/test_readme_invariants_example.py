"""The README's "Structural invariants" example is a manifest a reader copies verbatim.

A newcomer did, and it exited 2: the example's citation reused its invariant's id.
The example is run here as written (with the minimal header the section leaves
out) against the real vLLM 0.31.0 tree: every check it defines must pass.
"""

from __future__ import annotations

import re
from pathlib import Path

from conftest import REPO

from pp1audit.audit import audit
from pp1audit.manifest import load_manifest
from pp1audit.sources import open_target

HEADER = "pp1audit: 1\ntarget:\n  package: vllm\n"


def readme_example() -> str:
    """The first YAML block of the README's "Structural invariants" section."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Structural invariants", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert block is not None, "the section has no yaml example"
    return block.group(1)


def test_the_readme_invariants_example_loads_and_holds_on_real_vllm(
        tmp_path: Path, vllm_tree: Path) -> None:
    example = readme_example()
    manifest_path = tmp_path / "example.yaml"
    manifest_path.write_text(HEADER + example, encoding="utf-8")
    manifest = load_manifest(manifest_path)
    with open_target(vllm_tree, manifest.package) as source:
        checks = audit(manifest, source).checks
    ids = {c.id for c in checks}
    defined = set(re.findall(r"^  ([a-z][a-z0-9-]+):$", example, re.M))
    assert defined and defined <= ids
    assert {c.id: c.status.value for c in checks if c.id in defined} == dict.fromkeys(defined, "pass")
