"""A wheel whose members or RECORD rows escape site-packages fails ``check --record``.

pip's ``_install_wheel`` joins ``os.path.normpath(member)`` to site-packages and
refuses the whole wheel ("trying to install outside the target directory") when
the result is not within it. A directory target fails the same rows as
``record:<row>`` "outside the installation … not opened"; a wheel is judged as
what it installs, so its escaping rows and members fail the same way, listed in
RECORD or not. Each POSIX case is checked against pip itself (offline
``pip install --no-deps --target``); the Windows cases (``\\`` separators, drive
letters) against pip's check replayed with ``ntpath``, since POSIX pip writes
those names as odd file names inside the target.
"""

from __future__ import annotations

import ntpath
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import run_cli
from wheeltrees import DIST, GOOD, _meta, make_wheel, run, wheel_path

from pp1audit.result import Check, Status
from pp1audit.sources.wheel import Zip, install_escape

OUTSIDE = "outside the installation"














def failed(checks: dict[str, Check]) -> dict[str, Check]:
    return {k: c for k, c in checks.items() if c.status is not Status.PASS}


def pip_refuses(wheel: Path, dest: Path) -> str:
    """pip's own verdict (offline): its error output, asserting it refused the wheel as
    installing outside the target. pip checks each member before writing it, so a
    refused member is never written, here or anywhere."""
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--no-cache-dir",
         "--disable-pip-version-check", "--target", str(dest), str(wheel)],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode != 0, proc.stdout
    assert "trying to install outside the target directory" in proc.stderr, proc.stderr
    return proc.stderr


def pip_windows_escapes(name: str) -> bool:
    """pip's ``root_scheme_file_maker`` / ``data_scheme_file_maker`` check as it runs
    on Windows (``os.path`` is ``ntpath`` there): ``normpath`` the member, join it to
    the scheme directory, and ``is_within_directory`` (``abspath`` and
    ``commonprefix``). A member pip refuses as malformed counts as refused too."""
    site = "D:\\venv\\Lib\\site-packages"
    normed = ntpath.normpath(name)
    dest_dir = site
    if name.split("/", 1)[0].endswith(".data"):
        parts = normed.split("\\", 2)
        if len(parts) < 3:
            return True  # "Unexpected file in ...": refused
        dest_dir, normed = "D:\\venv\\" + parts[1], parts[2]
    target = ntpath.join(dest_dir, normed)
    absolute = ntpath.abspath(target) if ntpath.isabs(target) else target
    return ntpath.commonprefix([ntpath.abspath(dest_dir), absolute]) != ntpath.abspath(dest_dir)


def test_the_reported_wheel_fails_as_a_directory_with_the_same_rows_does(tmp_path: Path) -> None:
    """The user test's ``whl/dotdot``: ``../x.py`` and ``vllm/../../y.py`` are members
    and rows. It passed ("6 of 6 files match"); pip refuses it. Now each row fails
    as ``record:<row>`` exactly as the same RECORD does in an installed directory."""
    extra = {"../x.py": b"x=1\n", "pkg/../../y.py": b"y=1\n"}
    wheel = make_wheel(wheel_path(tmp_path, "w"), extra)
    pip_refuses(wheel, tmp_path / "pip-target")
    checks = run(wheel)
    assert set(failed(checks)) == {"record:../x.py", "record:../y.py"}
    assert checks["record"].message.startswith("4 of 6 files match")

    # The same RECORD in a directory (the two escaping files not installed anywhere).
    site = tmp_path / "site"
    for name, data in {**GOOD, **_meta()}.items():
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        (site / name).write_bytes(data)
    with zipfile.ZipFile(wheel) as zf:
        (site / f"{DIST}.dist-info" / "RECORD").write_bytes(zf.read(f"{DIST}.dist-info/RECORD"))
    in_dir = failed(run(site))
    assert set(in_dir) == set(failed(checks))
    for cid, c in failed(checks).items():
        d = in_dir[cid]
        assert (c.status, c.path, c.actual, c.expected) == (d.status, d.path, d.actual, d.expected)
        for message in (c.message, d.message):
            assert message.startswith(f"Listed in RECORD but {OUTSIDE}")
            assert message.endswith("; not opened")
    assert "'pkg/../../y.py' to '../y.py'" in checks["record:../y.py"].message


def test_an_absolute_member_fails_and_the_cli_closes_the_gate(tmp_path: Path) -> None:
    """``whl/abs``: ``/abs.py``, member and row. The CLI's verdict is a failure (rc 1)."""
    wheel = make_wheel(wheel_path(tmp_path, "w"), {"/abs.py": b"a=1\n"})
    pip_refuses(wheel, tmp_path / "pip-target")
    c = failed(run(wheel))["record:/abs.py"]
    assert c.status is Status.FAIL and OUTSIDE in c.message and c.message.endswith("not opened")
    man = tmp_path / "m.yaml"
    man.write_text("pp1audit: 1\ntarget: {package: pkg}\n", encoding="utf-8")
    proc = run_cli("check", str(wheel), "-m", str(man), "--record", "-v",
                   env={"PP1AUDIT_NO_CACHE": "1"})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert re.search(r"^fail +record +record:/abs\.py +/abs\.py +Listed in RECORD but outside",
                     proc.stdout, re.M), proc.stdout
    assert "FAIL (gate closed)" in proc.stdout


@pytest.mark.parametrize("member", ["../z.py", "/abs2.py", "pkg/sub/../../../z.py", "../../etc/z.py"])
def test_an_escaping_member_no_row_lists_fails(tmp_path: Path, member: str) -> None:
    """A member RECORD does not list is outside the package directory the listing walks,
    so it was never seen: pip still writes (or refuses) it."""
    wheel = make_wheel(wheel_path(tmp_path, "w"), {member: b"z=1\n"}, unlisted=(member,))
    pip_refuses(wheel, tmp_path / "pip-target")
    bad = failed(run(wheel))
    assert len(bad) == 1, bad
    (cid, c), = bad.items()
    assert cid.startswith("record:") and c.status is Status.FAIL
    assert c.message.startswith(f"In the wheel but not in RECORD, and {OUTSIDE}")
    assert c.message.endswith("; not opened") and f"'{member}'" in c.message


def test_an_escaping_row_without_a_member_fails(tmp_path: Path) -> None:
    """A row naming ``../ghost.py`` was counted as "outside the target root, not present";
    in a wheel nothing legitimate is there (console scripts are ``.data/scripts``)."""
    wheel = make_wheel(wheel_path(tmp_path, "w"), {}, ghost_rows={"../ghost.py": b"g\n",
                                                                  "/etc/ghost": b"g\n"})
    checks = run(wheel)
    assert set(failed(checks)) == {"record:../ghost.py", "record:/etc/ghost"}
    assert "outside the target root not present" not in checks["record"].message
    for c in failed(checks).values():
        assert c.message.startswith(f"Listed in RECORD but {OUTSIDE}") and c.actual is None


WINDOWS = [
    "..\\x.py",
    "pkg\\..\\..\\y.py",
    "C:\\x.py",
    "C:x.py",
    "\\\\server\\share\\x.py",
    f"{DIST}.data/data/C:/evil.txt",
    f"{DIST}.data/scripts/..\\..\\..\\tool",
]


@pytest.mark.parametrize("member", WINDOWS)
def test_backslashes_and_drives_fail_as_pip_on_windows_judges_them(tmp_path: Path,
                                                                     member: str) -> None:
    """pip on Windows normalises with ``ntpath``: these escape there (POSIX pip writes
    them as file names), so listed or not they fail, named as Windows' reading."""
    assert pip_windows_escapes(member)
    for unlisted in ((), (member,)):
        wheel = make_wheel(wheel_path(tmp_path, f"w{len(unlisted)}"), {member: b"w=1\n"},
                           unlisted=unlisted)
        bad = {k: c for k, c in failed(run(wheel)).items() if k.startswith("record:")}
        assert len(bad) == 1, bad
        c = next(iter(bad.values()))
        assert c.status is Status.FAIL and OUTSIDE in c.message and "pip on Windows" in c.message
        assert c.message.endswith("; not opened")


def test_a_windows_escape_inside_the_package_is_not_read(tmp_path: Path) -> None:
    """``pkg/..\\..\\evil.py`` lies under ``pkg/`` for POSIX pip, outside site-packages
    for Windows pip: not unlisted and not read; the tree digest, which would depend on
    the platform, names it instead of digesting one platform's tree."""
    member = "pkg/..\\..\\evil.py"
    wheel = make_wheel(wheel_path(tmp_path, "w"), {member: b"evil=1\n"}, unlisted=(member,))
    bad = failed(run(wheel))
    assert set(bad) == {f"record:{member}", "tree"}
    assert bad[f"record:{member}"].message.startswith("In the wheel but not in RECORD")
    assert bad["tree"].status is Status.ERROR and member in bad["tree"].message


def test_ordinary_wheels_have_no_escapes(tmp_path: Path) -> None:
    """No false alarm: ``.data`` schemes, ``./`` segments, a colon inside a name."""
    extra = {f"{DIST}.data/scripts/pkg-tool": b"#!python\n", f"{DIST}.data/data/share/x": b"x\n",
             f"{DIST}.data/purelib/pkg/extra.py": b"", "pkg/a:b.txt": b"ads\n",
             "pkg/./dot.py": b""}
    wheel = make_wheel(wheel_path(tmp_path, "w"), extra)
    assert failed(run(wheel)) == {}
    for name in extra:
        assert install_escape(name) is None and not pip_windows_escapes(name)


def test_a_clean_wheel_is_cleared_without_judging_a_name(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """``escaping`` costs one search over all names on an ordinary wheel: no name is
    judged one by one (counted), whatever its size; an escaping one is found."""
    import pp1audit.sources.wheel as wheel

    wheel_file = make_wheel(wheel_path(tmp_path, "w"), {f"pkg/m{i}.py": b"" for i in range(500)})
    calls = []
    original = wheel.install_escape
    monkeypatch.setattr(wheel, "install_escape", lambda name: calls.append(1) or original(name))
    index = Zip(wheel_file)
    try:
        assert index.escaping() == {}
    finally:
        index.close()
    assert calls == []
    escaping = make_wheel(wheel_path(tmp_path, "e"), {"../x.py": b""})
    index = Zip(escaping)
    try:
        assert list(index.escaping()) == ["../x.py"]
    finally:
        index.close()
