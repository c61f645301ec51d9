"""Draw the README's picture: ``pp1audit check`` on the real vLLM 0.31.0 wheel, as a
terminal 100 columns wide shows it, saved as ``docs/check.svg``.

The picture is the program's own output, not a mock-up: the check runs with its
stdout on a pseudo-terminal (so pp1audit draws its terminal table, coloured), and
rich replays those bytes into a recording console that writes the SVG.

    python scripts/readme-picture.py [--wheel PATH] [--output docs/check.svg]

Without ``--wheel`` it takes the wheel the tests cached (``PP1AUDIT_TEST_CACHE``,
default ``~/.cache/pp1audit-tests``; ``python -m pytest -m vllm`` fetches it).
"""

from __future__ import annotations

import argparse
import os
import pty
import subprocess
import sys
from pathlib import Path

from rich.console import Console
from rich.text import Text

WIDTH = 100
CACHE = Path(os.environ.get("PP1AUDIT_TEST_CACHE", Path.home() / ".cache" / "pp1audit-tests"))
REPO = Path(__file__).resolve().parent.parent


def terminal_output(wheel: Path) -> tuple[int, str]:
    """pp1audit's exit code and what it drew on a terminal ``WIDTH`` columns wide.

    It runs in the wheel's folder and is given the file's name, so the first
    line names the wheel, not the folder it happens to be cached in."""
    leader, follower = pty.openpty()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pp1audit", "check", wheel.name, "--color", "always"],
            cwd=wheel.parent, stdout=follower, stdin=subprocess.DEVNULL,
            env={**os.environ, "TERM": "xterm", "COLUMNS": str(WIDTH), "PYTHONPATH": str(REPO)})
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
        code = proc.wait(120)
    finally:
        os.close(leader)
    return code, b"".join(chunks).decode().replace("\r\n", "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    found = sorted((CACHE / "wheels").glob("vllm-0.31.0-*.whl"))
    parser.add_argument("--wheel", type=Path, default=found[0] if found else None,
                        help="the vLLM 0.31.0 wheel (default: the tests' cached copy)")
    parser.add_argument("--output", type=Path, default=REPO / "docs" / "check.svg")
    args = parser.parse_args()
    if args.wheel is None or not args.wheel.is_file():
        parser.error("no vLLM 0.31.0 wheel: pass --wheel PATH (or run the tests once)")
    code, drawn = terminal_output(args.wheel.resolve())
    if code == 2:  # nothing judged: no picture of an error
        sys.stderr.write(drawn)
        return 2
    with open(os.devnull, "w") as nowhere:  # only the recording is wanted
        console = Console(record=True, width=WIDTH, force_terminal=True, file=nowhere)
        console.print(Text.from_ansi(drawn), end="", no_wrap=True, overflow="ignore", crop=False)
    console.save_svg(str(args.output), title=f"pp1audit check {args.wheel.name}")
    print(f"{args.output}: exit {code} drawn")
    return 0


if __name__ == "__main__":
    sys.exit(main())
