"""A wheel's escaping members are found from the central directory the inventory
read (``WheelInventory.escaping``): the RECORD checks judge the wheel that was
listed, never one put at its path since."""

from __future__ import annotations

from pathlib import Path

from wheeltrees import make_wheel, wheel_path

from pp1audit.checks.record_judge import _member_escapes
from pp1audit.sources.inventory import WheelInventory


def test_the_escapes_are_those_of_the_wheel_listed(tmp_path: Path) -> None:
    wheel = make_wheel(wheel_path(tmp_path, "w"), {"../z.py": b"z=1\n"}, unlisted=("../z.py",))
    inv = WheelInventory(str(wheel))
    assert list(inv.escaping) == ["../z.py"]
    make_wheel(wheel, {})  # a clean wheel written over it after the listing
    assert list(_member_escapes(inv)) == ["../z.py"]
    wheel.unlink()  # or none at all: nothing is read again
    assert list(_member_escapes(inv)) == ["../z.py"]
