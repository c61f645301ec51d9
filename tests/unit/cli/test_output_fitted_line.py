"""The first line of ``check`` on a terminal, fitted to its width: cut only between
whole escapes, never through one, so two names the escapes tell apart stay apart."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import deep_tree, on_a_terminal

from pp1audit.formats.text_format import _elide
from pp1audit.text.safe import printable

LONG = "A" * 83
UNIT = re.compile(r"(?:\\(?:U[0-9a-f]{8}|u[0-9a-f]{4}|x[0-9a-f]{2}|.)|.)\u0301*", re.DOTALL)
"""An escape or a character, with the combining acute accents after it (the test's own reading)."""


def _units(text: str) -> list[str]:
    return UNIT.findall(text)


def _pieces(elided: str, whole: str) -> tuple[str, str]:
    """The kept start and end of ``whole`` in ``elided``, each checked to be whole units."""
    left, _, right = elided.partition("…")
    units = _units(whole)
    assert any("".join(units[:k]) == left for k in range(len(units) + 1)), (elided, whole)
    assert any("".join(units[k:]) == right for k in range(len(units) + 1)), (elided, whole)
    return left, right


@pytest.mark.parametrize("name", [LONG + "\\xff", LONG + "\udcff", "t_\udce9", "t_é\\n\U000e0041",
                                  "ab\\\\x41" * 9, "e\u0301" * 30])
def test_an_elision_cuts_between_whole_escapes(name: str) -> None:
    text = printable(name)
    for cells in range(1, len(text)):
        _pieces(_elide(text, cells), text)


def test_a_backslash_and_a_byte_stay_apart_at_every_width() -> None:
    """A directory literally named ``…\\xff`` (backslash, x, f, f) and one ending in
    the byte 0xFF: ``…\\\\xff`` and ``…\\xff`` escaped, never the same cut line."""
    typed, byte = printable(LONG + "\\xff"), printable(LONG + "\udcff")
    for cells in range(6, 40):
        assert _elide(typed, cells) != _elide(byte, cells), cells


def test_an_escape_too_wide_for_the_end_leaves_its_room_to_the_start() -> None:
    assert _elide("t_\\xe9", 5) == "t_…"  # never "t…9"
    assert _elide("t_\\xe9", 6) == "t_\\xe9"


def test_the_kept_end_never_starts_with_a_combining_mark() -> None:
    text = "x" + "e\u0301" * 20
    for cells in range(2, 21):
        right = _elide(text, cells).partition("…")[2]
        assert not right.startswith("\u0301"), cells


def test_on_a_terminal_a_typed_escape_and_a_byte_print_different_lines(
        tmp_path: Path, make_files: Callable[..., Path]) -> None:
    """The review's reproduction: at 47 columns both printed ``AAA…\\xff``."""
    manifest = tmp_path / "m.yaml"
    manifest.write_text('pp1audit: 1\ntarget: {package: pkg, version: "2.0"}\n', encoding="utf-8")
    first = []
    for name in (os.fsencode(LONG + "\\xff"), os.fsencode(LONG) + b"\xff"):
        tree = os.path.join(os.fsencode(tmp_path), name)
        make_files({"pkg/__init__.py": "", "pkg/_version.py": '__version__ = "1.0"\n'},
                   Path(os.fsdecode(tree)))
        code, drawn = on_a_terminal(["check", os.fsdecode(tree), "-m", str(manifest),
                                     "--color", "never"], {"COLUMNS": "47"})
        assert code == 1
        first.append(drawn[0])
    assert first[0] != first[1], first




def test_an_ascii_terminal_gets_a_line_as_wide_as_it_is(
        tmp_path: Path, make_files: Callable[..., Path]) -> None:
    """The stream writes what ASCII lacks as ``\\uNNNN`` (``é`` six columns, not one):
    the line is measured so, and elided with ``...``, never ``\\u2026``."""
    tree, manifest = deep_tree(tmp_path, make_files, "tr\u00e9e")
    code, drawn = on_a_terminal(["check", str(tree), "-m", str(manifest), "--color", "never"],
                                {"COLUMNS": "80", "PYTHONIOENCODING": "ascii"})
    assert code == 1
    assert max(len(line) for line in drawn) <= 80, drawn
    first = drawn[0]
    assert len(first) == 80 and "..." in first and "\\u2026" not in first, first
    assert first.endswith("/tr\\u00e9e (pkg 1.0)"), first


def test_the_head_is_measured_as_the_stream_writes_it() -> None:
    from rich.cells import cell_len

    from pp1audit.formats.text_format import _head
    from pp1audit.result import Result, TargetInfo

    result = Result(manifest_path="m.yaml", manifest_sha256="0" * 64, checks=(),
                    target=TargetInfo(kind="directory", location="/" + "\u00e9" * 40,
                                      package="p", version="1"))
    for width in range(50, 70):
        fitted = _head(result, width, "ascii")
        assert cell_len(fitted) <= width and fitted.isascii(), (width, fitted)
        assert "\\u00e9" in fitted and "..." in fitted
        _pieces(fitted.split(" against directory ")[1].removesuffix(" (p 1)").replace("...", "…"),
                "/" + "\\u00e9" * 40)


def _fitted(manifest: str, location: str, width: int, kind: str = "directory") -> tuple[str, str]:
    """``_head`` at ``width``, back in its two paths."""
    from rich.cells import cell_len

    from pp1audit.formats.text_format import _head
    from pp1audit.result import Result, TargetInfo

    result = Result(manifest_path=manifest, manifest_sha256="0" * 64, checks=(),
                    target=TargetInfo(kind=kind, location=location, package="vllm",
                                      version="0.31.0"))
    line = _head(result, width)
    assert cell_len(line) <= width, (width, line)
    shown_manifest, _, rest = line.partition(f" against {kind} ")
    return shown_manifest, rest.removesuffix(" (vllm 0.31.0)")


RELEASE = "/tmp/review-out/r9/builds/from/a/ci/runner/workspace/vllm-{}-patched-release"
MANIFEST = "/home/runner/work/audit/manifests/pp1.yaml"


def test_the_parent_directories_give_way_before_the_last_component() -> None:
    """The review: ``/tmp/review-out…-patched-release`` kept ``/tmp`` and dropped the
    version that told the two directories apart. From 72 columns the name fits,
    with ``…pp1.yaml`` and the rest of the line."""
    for width in range(72, 120):
        lines = [_fitted(MANIFEST, RELEASE.format(v), width) for v in ("0.30.0", "0.31.0")]
        assert lines[0] != lines[1], width
        for (manifest, location), version in zip(lines, ("0.30.0", "0.31.0"), strict=True):
            assert location.endswith(f"/vllm-{version}-patched-release"), (width, location)
            assert manifest.endswith("/pp1.yaml"), (width, manifest)  # then the manifest's name
            if len(location) < len(RELEASE.format(version)):
                assert location.count("…") == 1


def test_a_last_component_too_long_alone_is_cut_in_its_middle() -> None:
    name = "vllm-0.31.0-cp38-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"
    for width in range(60, 100):
        manifest, location = _fitted(MANIFEST, f"/tmp/w/{name}", width, "wheel")
        assert location.startswith("…/vllm-0.") and location.endswith("_64.whl"), location
        assert manifest.endswith("pp1.yaml"), (width, manifest)


def test_a_short_path_keeps_its_name_whole() -> None:
    assert _fitted("pp1.yaml", "/srv/tree", 200) == ("pp1.yaml", "/srv/tree")
    assert _fitted("m.yaml", "/" + "x" * 60 + "/tree", 50) == ("m.yaml", "/xx…xx/tree")
