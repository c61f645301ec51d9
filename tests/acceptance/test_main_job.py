"""The main job (``scripts/main-job.sh``) run as on a fresh machine, in its own venv.

The script runs in a copy of the checkout (the real one never gets a
``.venv-main``), with a PATH that offers ``python3`` and the few tools it uses,
but no ``python`` and no ``pip``: a call of either would fail the run. The
``python3`` there is a wrapper that logs its arguments, so the test sees that
the interpreter running the script is used only to make the venv and never
gets anything installed.

The script's pip works offline (``PIP_NO_INDEX``) from local wheels: the cached
0.31.0 wheel, hard-linked where the script downloads to (pip finds it already
downloaded), and pp1audit's dependencies and build backend, downloaded once per
machine into a wheelhouse beside the cached vLLM wheels. pip's HTTP cache would
be the natural place, but on this project's machines pip stores nothing there,
and going to the index cost 20-40 s a run. Two runs of the script (a fresh venv,
then the venv reused) take about 11 s of CPU; the first test on a machine adds
the wheelhouse's download.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

from conftest import CACHE, REPO

TOOLS = ("bash", "dirname", "mkdir", "ls", "head")
"""What the script runs besides the venv's own programs (pip and the build
backend run in the venv's interpreter, found by path, not on PATH)."""

NOT_COPIED = shutil.ignore_patterns(
    ".git", ".venv*", ".cache", "out", "__pycache__", "*.egg-info", ".*_cache", ".benchmarks")


def _wheelhouse() -> Path:
    """pp1audit's dependencies and its build backend as wheels, downloaded once for
    each set of requirements in pyproject.toml (renamed into place when complete)."""
    meta = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    wanted = sorted([*meta["project"]["dependencies"], *meta["build-system"]["requires"]])
    house = CACHE / "main-job-wheels" / hashlib.sha256("\n".join(wanted).encode()).hexdigest()[:16]
    house.parent.mkdir(parents=True, exist_ok=True)
    with open(house.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not house.is_dir():
            with tempfile.TemporaryDirectory(dir=house.parent) as tmp:
                subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--only-binary",
                                ":all:", "-d", tmp, *wanted], check=True)
                os.rename(tmp, house)
    return house


def _sandbox(tmp_path: Path, wheel: Path) -> tuple[Path, Path, dict[str, str]]:
    """A copy of the checkout, a logging ``python3`` and the environment to run in."""
    checkout = tmp_path / "checkout"
    shutil.copytree(REPO, checkout, ignore=NOT_COPIED, symlinks=True)
    wheels = checkout / ".cache" / "wheels"
    wheels.mkdir(parents=True)
    try:
        os.link(wheel, wheels / wheel.name)
    except OSError:  # another file system: a copy (pip leaves the file alone either way)
        shutil.copy(wheel, wheels / wheel.name)

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "python3.log"
    wrapper = bin_dir / "python3"
    wrapper.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> "{log}"\nexec "{sys.executable}" "$@"\n')
    wrapper.chmod(0o755)
    for tool in TOOLS:
        found = shutil.which(tool)
        assert found, f"{tool} is not on this machine's PATH"
        (bin_dir / tool).symlink_to(found)
    env = {k: v for k, v in os.environ.items()
           if k not in ("PP1AUDIT_MANIFEST", "PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env.update(PATH=str(bin_dir), PIP_NO_INDEX="1", PIP_FIND_LINKS=f"{_wheelhouse()} {wheel.parent}")
    return checkout, log, env


def _run(checkout: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    bash = shutil.which("bash")
    assert bash
    return subprocess.run([bash, "scripts/main-job.sh"], cwd=checkout, env=env,
                          capture_output=True, text=True, timeout=600)


def _imported_from(python: str | Path, cwd: Path) -> Path:
    """Where ``python`` imports pp1audit from (run outside any checkout)."""
    out = subprocess.run([str(python), "-c", "import pp1audit; print(pp1audit.__file__)"],
                         cwd=cwd, capture_output=True, text=True, check=True)
    return Path(out.stdout.strip()).resolve()


def test_main_job_runs_in_its_own_venv(vllm_wheel: Path, tmp_path: Path) -> None:
    checkout, log, env = _sandbox(tmp_path, vllm_wheel)
    system_before = _imported_from(sys.executable, tmp_path)

    done = _run(checkout, env)
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert "FAIL (gate closed)" in done.stdout
    assert done.stdout.rstrip().endswith("report: out/pp1-audit.md")
    report = (checkout / "out" / "pp1-audit.md").read_text(encoding="utf-8")
    assert report.startswith("# ") and vllm_wheel.name in report  # the audit, measured on it

    # The interpreter on PATH made the venv and did nothing else: no pip.
    assert log.read_text().splitlines() == ["-m venv .venv-main"]
    venv = checkout / ".venv-main"
    assert (venv / "bin" / "pp1audit").is_file()
    assert "include-system-site-packages = false" in (venv / "pyvenv.cfg").read_text()
    assert _imported_from(venv / "bin" / "python", tmp_path).is_relative_to(checkout.resolve())
    # The interpreter that started it still has the pp1audit it had.
    assert _imported_from(sys.executable, tmp_path) == system_before

    # Run again with a manifest that does not exist: the venv is reused (not made
    # anew), nothing is judged (exit 2) and no report is written.
    (checkout / "out" / "pp1-audit.md").unlink()
    again = _run(checkout, {**env, "PP1AUDIT_MANIFEST": "missing.yaml"})
    assert again.returncode == 2, again.stdout[-2000:] + again.stderr[-2000:]
    assert "missing.yaml" in again.stderr
    assert log.read_text().splitlines() == ["-m venv .venv-main"]
    assert not (checkout / "out" / "pp1-audit.md").exists()
