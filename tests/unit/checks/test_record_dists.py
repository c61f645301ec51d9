"""Which of several ``*.dist-info`` claiming the package ``--record`` verifies against."""

from __future__ import annotations

import shutil
from pathlib import Path

from recordtrees import bad, install, run


def test_a_copied_dist_info_is_the_second_distribution_not_the_one_verified(tmp_path: Path) -> None:
    """A copy of the real dist-info under another name accounts for exactly the
    same files: the tie goes to the one whose RECORD lists itself, as installers
    write it, whichever sorts first; the copy is the leftover the shadowing
    check names."""
    root = install(tmp_path / "site")
    shutil.copytree(root / "pkg-1.0.dist-info", root / "pkg-0.9.dist-info")  # sorts first
    checks = run(root)
    assert checks["record"].path == "pkg-1.0.dist-info/RECORD"
    assert checks["record"].message.startswith("4 of 4 files match pkg-1.0.dist-info/RECORD")
    assert set(bad(checks)) == {"shadow:pkg-0.9.dist-info"}
    assert "pkg-0.9.dist-info besides pkg-1.0.dist-info" in checks["shadow:pkg-0.9.dist-info"].message
