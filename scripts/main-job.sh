#!/usr/bin/env bash
# The main job on a real target: install pp1audit, fetch the real vLLM 0.31.0 wheel
# with pip, check the shipped PP1 manifest against it, and regenerate the audit.
# Exit status is the gate's: 0 open, 1 closed (expected for PP1 on public 0.31.0:
# the audited image is a patched 0.31.1.dev build), 2 nothing judged (including a
# report that could not be written). PP1AUDIT_MANIFEST=FILE checks another manifest.
set -uo pipefail
cd "$(dirname "$0")/.."
python -m pip install --quiet -e . || exit 2
mkdir -p .cache/wheels out
python -m pip download --quiet --no-deps --only-binary :all: vllm==0.31.0 -d .cache/wheels || exit 2
wheel=$(ls .cache/wheels/vllm-0.31.0-*.whl | head -n 1)
manifest=${PP1AUDIT_MANIFEST:-manifests/pp1.yaml}
pp1audit check "$wheel" --manifest "$manifest"
rc=$?
[ $rc -eq 2 ] && exit 2
# The report's exit code is the gate's too (the same verdict as the check above);
# it is written either way, and 2 means it could not be.
pp1audit report "$wheel" --manifest "$manifest" --output out/pp1-audit.md
[ $? -eq 2 ] && exit 2
echo "report: out/pp1-audit.md"
exit $rc
