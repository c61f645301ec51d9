"""Shared fixtures: the real vLLM wheel (downloaded with pip, cached) and its tree.

The wheel is fetched once with ``pip download`` into a cache directory that
survives between runs (``PP1AUDIT_TEST_CACHE``, default ``~/.cache/pp1audit-tests``);
pip's own HTTP cache makes a repeated download cheap. The extracted tree is made
once per session; tests that change files work on a hard-linked copy in which
only the file they change is replaced, so the shared tree is never altered.
"""

from __future__ import annotations

import json
import os
import pty
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from pp1audit import __version__

CACHE = Path(os.environ.get("PP1AUDIT_TEST_CACHE", Path.home() / ".cache" / "pp1audit-tests"))
REPO = Path(__file__).resolve().parent.parent


def fetch_wheel(version: str) -> Path:
    """The real vLLM wheel of ``version``, downloaded with pip on first use.

    pip downloads into a private temporary folder and the wheel is renamed into
    the cache only when complete, under a lock, so concurrent test runs never
    see a partial file.
    """
    import fcntl
    import tempfile

    dest = CACHE / "wheels"
    dest.mkdir(parents=True, exist_ok=True)
    with open(dest / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = sorted(dest.glob(f"vllm-{version}-*.whl"))
        if found:
            return found[0]
        with tempfile.TemporaryDirectory(dir=dest) as tmp:
            subprocess.run(
                [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
                 "--quiet", f"vllm=={version}", "-d", tmp],
                check=True,
            )
            got = sorted(Path(tmp).glob(f"vllm-{version}-*.whl"))
            assert got, f"pip download produced no vllm {version} wheel"
            os.replace(got[0], dest / got[0].name)
        return dest / got[0].name


def extract_wheel(wheel: Path, dest: Path) -> Path:
    """Extract a wheel as an installer lays it out (site-packages style) and return dest.

    Extraction goes to a temporary sibling renamed into place when complete, so
    an interrupted or concurrent run never uses a half-extracted tree.
    """
    import tempfile

    if dest.exists():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=dest.parent, prefix=".extract-"))
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(tmp)
    try:
        os.rename(tmp, dest)
    except OSError:  # another run finished first
        shutil.rmtree(tmp)
    return dest


VLLM_FIXTURES = frozenset({"vllm_wheel", "vllm_wheel_030", "vllm_tree", "vllm_venv"})
"""Fixtures that need a real vLLM wheel: a test using one (even through another
fixture) is marked ``vllm``, so ``pytest -m "not vllm"`` is the fast tier."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if VLLM_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.vllm)


@pytest.fixture(scope="session")
def vllm_wheel() -> Path:
    """Path of the real vLLM 0.31.0 wheel."""
    return fetch_wheel("0.31.0")


@pytest.fixture(scope="session")
def vllm_wheel_030() -> Path:
    """Path of the real vLLM 0.30.0 wheel: the release before 0.31.0 (upgrade / rollback)."""
    return fetch_wheel("0.30.0")


@pytest.fixture(scope="session")
def vllm_tree(vllm_wheel: Path) -> Path:
    """The 0.31.0 wheel extracted (site-packages layout); shared, never modified."""
    return extract_wheel(vllm_wheel, CACHE / "trees" / vllm_wheel.stem)


@pytest.fixture(scope="session")
def vllm_venv(vllm_wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the real 0.31.0 wheel installed by pip (no dependencies): RECORD,
    INSTALLER, the console script and the ~2,800 ``.pyc`` files exactly as pip writes
    them, and on Python 3.11 setuptools' ``distutils-precedence.pth`` (``venv`` installs
    setuptools up to 3.11). Shared: never modified (copy it with hard links to change
    a file)."""
    venv = tmp_path_factory.mktemp("venv") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [str(venv / "bin" / "pip"), "install", "--quiet", "--no-deps", "--no-index",
         "--disable-pip-version-check", str(vllm_wheel)],
        check=True,
    )
    return venv


def site(venv: Path) -> Path:
    """The site-packages directory of ``venv``."""
    return venv / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"


def setuptools_site(venv: Path) -> Path:
    """``site(venv)`` when pip's venv holds setuptools' ``distutils-precedence.pth`` (the
    premise of tests about it), else the test is skipped: ``venv`` installs setuptools
    only up to Python 3.11."""
    where = site(venv)
    if not (where / "distutils-precedence.pth").is_file():
        pytest.skip("this Python's venv installs no setuptools (3.12 and later)")
    return where


def linked_copy(src: Path, dst: Path) -> Path:
    """Copy a tree with hard links: cheap, and safe as long as files are *replaced*."""
    shutil.copytree(src, dst, copy_function=os.link)
    return dst


def replace_file(path: Path, data: bytes) -> None:
    """Give ``path`` new content without touching the hard-linked original."""
    path.unlink()
    path.write_bytes(data)


@pytest.fixture
def tree_copy(vllm_tree: Path, tmp_path: Path) -> Path:
    """A private copy of the real 0.31.0 tree; edit files with ``replace_file`` / ``edit``."""
    return linked_copy(vllm_tree, tmp_path / "site")


@pytest.fixture
def edit() -> Callable[[Path, Callable[[str], str]], None]:
    """Rewrite a text file of a linked copy through a function of its text."""

    def _edit(path: Path, fn: Callable[[str], str]) -> None:
        text = path.read_text(encoding="utf-8")
        new = fn(text)
        assert new != text, f"edit of {path} changed nothing"
        replace_file(path, new.encode("utf-8"))

    return _edit


def file_lines(target: Path, path: str) -> list[str]:
    """A text file's lines from a tree or a wheel: the tests' own, independent read."""
    if target.suffix == ".whl":
        with zipfile.ZipFile(target) as zf:
            return zf.read(path).decode("utf-8").splitlines()
    return (target / path).read_text(encoding="utf-8").splitlines()


def find_block(lines: list[str], block: list[str]) -> list[int]:
    """1-based starts where ``block`` occurs line for line: the tests' own relocation."""
    n = len(block)
    return [i + 1 for i in range(len(lines) - n + 1) if lines[i : i + n] == block]


def unprivileged() -> list[str]:
    """A command prefix under which file modes apply to this user: root reads every
    file whatever its mode, so as root the capabilities that let it are dropped
    (``setpriv``, util-linux); the test is skipped when that is not possible."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: no file is unreadable to root")
    caps = "-dac_override,-dac_read_search"
    return [setpriv, f"--bounding-set={caps}", f"--inh-caps={caps}"]


def run_cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
            timeout: float = 120, as_user: bool = False) -> subprocess.CompletedProcess[str]:
    """Run ``python -m pp1audit`` in a subprocess, as a user would, and capture output
    (``as_user``: with file modes applying even when the tests run as root)."""
    full_env = {**os.environ, "NO_COLOR": "1", **(env or {})}
    return subprocess.run(
        [*(unprivileged() if as_user else []), sys.executable, "-m", "pp1audit", *args],
        capture_output=True, text=True,
        cwd=cwd, env=full_env, timeout=timeout, stdin=subprocess.DEVNULL,
    )


@pytest.fixture
def make_files(tmp_path: Path) -> Callable[[dict[str, str | bytes]], Path]:
    """Build a small tree from a dict of relative path -> content (cog's make_files)."""

    def _make(files: dict[str, str | bytes], root: Path | None = None) -> Path:
        base = root or tmp_path / "tree"
        for rel, content in files.items():
            p = base / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                p.write_bytes(content)
            else:
                p.write_text(content, encoding="utf-8")
        return base

    return _make


def on_a_terminal(args: list[str], env: dict[str, str]) -> tuple[int, list[str]]:
    """Run pp1audit with stdout on a pseudo-terminal (stderr a pipe): its exit code and
    the lines it drew (CR LF as LF)."""
    leader, follower = pty.openpty()
    try:
        proc = subprocess.Popen([sys.executable, "-m", "pp1audit", *args], stdout=follower,
                                stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                env={**os.environ, "TERM": "xterm", **env})
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
        code = proc.wait(60)
    finally:
        os.close(leader)
    return code, b"".join(chunks).decode().replace("\r\n", "\n").splitlines()


def assert_one_error_object(proc: subprocess.CompletedProcess[str]) -> None:
    """Exit 2 with one line on stderr and, on stdout, the ``pp1audit.error/1`` object
    whose ``error`` is that line without its prefix (README: JSON at exit 2)."""
    assert proc.returncode == 2
    said = proc.stderr.removeprefix("pp1audit: error: ").removesuffix("\n")
    assert said != proc.stderr and "\n" not in said
    assert json.loads(proc.stdout) == {
        "format": "pp1audit.error/1", "tool": {"name": "pp1audit", "version": __version__},
        "error": said, "exit": 2,
    }


def deep_tree(tmp_path: Path, make_files: Callable[..., Path], last: str = "tree") -> tuple[Path, Path]:
    """A failing tree 150 columns down (``last`` its directory), and a manifest of one
    version pin: a first line wider than any terminal the tests draw on."""
    tree = make_files({"pkg/__init__.py": "", "pkg/_version.py": '__version__ = "1.0"\n'},
                      tmp_path.joinpath(*(f"a_rather_long_directory_{i}" for i in range(6)), last))
    manifest = tmp_path / "m.yaml"
    manifest.write_text('pp1audit: 1\ntarget: {package: pkg, version: "2.0"}\n', encoding="utf-8")
    return tree, manifest


@pytest.fixture(scope="session")
def bytecode_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A private verification cache for the session (the user's is never touched)."""
    return tmp_path_factory.mktemp("pp1audit-cache")


@pytest.fixture(scope="session")
def manifest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Version pin only: every other check in these runs comes from --record."""
    path = tmp_path_factory.mktemp("manifest") / "vllm.yaml"
    path.write_text("pp1audit: 1\ntarget:\n  package: vllm\n  version: 0.31.0\n", encoding="utf-8")
    return path


@pytest.fixture
def venv_copy(vllm_venv: Path, tmp_path: Path) -> Path:
    """Hard-linked copy of the whole venv (symlinks kept): change files with ``replace_file``."""
    dst = tmp_path / "venv"
    shutil.copytree(vllm_venv, dst, symlinks=True, copy_function=os.link)
    return dst


def record_json(target: Path, manifest: Path, cache: Path, *extra: str) -> tuple[int, dict]:
    proc = run_cli("check", str(target), "--manifest", str(manifest), "--record", "--format", "json",
                   *extra, env={"PP1AUDIT_CACHE_DIR": str(cache)}, timeout=300)
    assert proc.returncode in (0, 1), proc.stderr
    assert proc.stderr == "", proc.stderr  # no progress bar when not a terminal
    return proc.returncode, json.loads(proc.stdout)
