"""``check PKGDIR --record``: the package directory given as the target is audited
from the directory Python imports it from, the one the path names, never from
wherever a symlink leads."""

from __future__ import annotations

import shutil
from pathlib import Path

from recordtrees import bad, install

from pp1audit.checks.record import RecordRun
from pp1audit.checks.record_judge import record_checks
from pp1audit.result import Check, Status
from pp1audit.sources import open_target


def run_on(target: Path) -> dict[str, Check]:
    with open_target(target, "pkg") as source:
        checks = record_checks(RecordRun("pkg", source, cache=None))
    return {c.id: c for c in checks}


def test_a_linked_package_directory_is_judged_where_python_finds_it(tmp_path: Path) -> None:
    """``site/pkg`` is a link to ``elsewhere/pkg``, and a copy of the dist-info sits
    beside the link's target: audited from ``elsewhere``, the tree passes and the
    ``.pth`` that Python runs from ``site`` goes unseen. From ``site`` (where the
    path given names it) it is the same symlink escape as ``check site``."""
    root = install(tmp_path / "site")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (root / "pkg").rename(outside / "pkg")
    shutil.copytree(root / "pkg-1.0.dist-info", outside / "pkg-1.0.dist-info")
    (root / "pkg").symlink_to(outside / "pkg")
    (root / "evil.pth").write_text("import os; os.system('true')\n", encoding="utf-8")

    checks = run_on(root / "pkg")
    assert list(checks) == ["record"] and checks["record"].status is Status.ERROR
    assert checks["record"].message == (f"pkg/ resolves outside the target root ({outside / 'pkg'}):"
                                        " symlink escape, not audited")
    assert run_on(root)["record"].message == checks["record"].message


def test_the_package_directory_itself_still_works_as_the_target(tmp_path: Path) -> None:
    """The ordinary case, and a link inside the root (followed, as Python follows it)."""
    root = install(tmp_path / "site")
    assert bad(run_on(root / "pkg")) == {}
    (root / "pkg").rename(root / ".pkg-real")
    (root / "pkg").symlink_to(".pkg-real")
    checks = run_on(root / "pkg")
    assert bad(checks) == {}
    assert checks["record"].message.startswith("4 of 4 files match pkg-1.0.dist-info/RECORD")


def test_a_link_named_otherwise_is_not_the_package(tmp_path: Path) -> None:
    """``site/other`` linking to ``site/pkg``: Python would import it as ``other``."""
    root = install(tmp_path / "site")
    (root / "other").symlink_to("pkg")
    checks = run_on(root / "other")
    assert list(checks) == ["record"] and checks["record"].status is Status.ERROR
    assert "the package directory is not named 'pkg'" in checks["record"].message


def test_dot_dot_after_a_link_is_resolved_as_the_os_does(tmp_path: Path) -> None:
    """``site/foo/../pkg`` with ``foo`` a link to ``evil/dir``: the OS, Python's
    import and the file checks all go to ``evil/pkg``; so must RECORD and the
    tree digest (``abspath`` would drop ``foo/..`` as text and judge the clean
    ``site/pkg``: a pass over files nobody imports)."""
    root = install(tmp_path / "site")
    evil = tmp_path / "evil"
    (evil / "dir").mkdir(parents=True)
    shutil.copytree(root / "pkg", evil / "pkg")
    (evil / "pkg" / "__init__.py").write_text("import os\n", encoding="utf-8")
    (root / "foo").symlink_to(evil / "dir")
    checks = run_on(root / "foo" / ".." / "pkg")
    assert checks["record"].status is Status.ERROR
    assert "no *.dist-info for 'pkg'" in checks["record"].message
    for given in (root / "pkg", Path(f"{root}/pkg/"), Path(f"{root}/pkg/."), root / "pkg" / "data" / ".."):
        assert bad(run_on(given)) == {}, given
