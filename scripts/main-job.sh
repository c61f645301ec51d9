#!/usr/bin/env bash
# The main job on a real target: install pp1audit into its own virtual environment,
# fetch the real vLLM 0.31.0 wheel with that environment's pip, check the shipped PP1
# manifest against it, and regenerate the audit.
# Exit status is the gate's: 0 open, 1 closed (expected for PP1 on public 0.31.0:
# the audited image is a patched 0.31.1.dev build), 2 nothing judged (including a
# report that could not be written, or an environment that could not be made).
# PP1AUDIT_MANIFEST=FILE checks another manifest.
# Only `python3` is needed on PATH, and it is used for one thing: making the
# environment (.venv-main/, made once and reused). Nothing is installed into the
# interpreter that runs this script; every later step runs the environment's own
# python and pp1audit, so no bare `python` or `pip` is ever called.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
venv=.venv-main
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv" || exit 2
fi
py=$venv/bin/python
"$py" -m pip install --quiet --disable-pip-version-check -e . || exit 2
mkdir -p .cache/wheels out
"$py" -m pip download --quiet --disable-pip-version-check --no-deps --only-binary :all: \
    vllm==0.31.0 -d .cache/wheels || exit 2
wheel=$(ls .cache/wheels/vllm-0.31.0-*.whl | head -n 1)
manifest=${PP1AUDIT_MANIFEST:-manifests/pp1.yaml}
"$venv/bin/pp1audit" check "$wheel" --manifest "$manifest"
rc=$?
[ $rc -eq 2 ] && exit 2
# The report's exit code is the gate's too (the same verdict as the check above);
# it is written either way, and 2 means it could not be.
"$venv/bin/pp1audit" report "$wheel" --manifest "$manifest" --output out/pp1-audit.md
[ $? -eq 2 ] && exit 2
echo "report: out/pp1-audit.md"
exit $rc
