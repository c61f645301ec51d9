"""Span parsing, line splitting and relocation rules (design.md, "Span rules")."""

from __future__ import annotations

import pytest

from pp1audit.text.spans import Span, decode_lines, parse_span, relocate, span_sha256


@pytest.mark.parametrize(
    ("text", "span"),
    [
        ("a/b.py:3-7", Span("a/b.py", 3, 7)),
        ("a/b.py:3–7", Span("a/b.py", 3, 7)),
        ("a/b.py:3 – 7", Span("a/b.py", 3, 7)),
        ("a/b.py:12", Span("a/b.py", 12, 12)),
    ],
)
def test_parse_span_forms(text: str, span: Span) -> None:
    assert parse_span(text) == span


@pytest.mark.parametrize("text", ["a.py", "a.py:x", "a.py:0", "a.py:5-4", "a.py:1-"])
def test_parse_span_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_span(text)


def test_line_endings_bom_and_final_newline_do_not_shift_lines() -> None:
    lf = decode_lines(b"one\ntwo\nthree\n")
    assert lf == ["one", "two", "three"]
    assert decode_lines(b"one\r\ntwo\r\nthree\r\n") == lf
    assert decode_lines(b"one\ntwo\nthree") == lf
    assert decode_lines(b"\xef\xbb\xbfone\ntwo\nthree\n") == lf
    assert decode_lines(b"one\rtwo\rthree") == lf
    assert decode_lines(b"a\n\nb\n") == ["a", "", "b"]
    assert decode_lines(b"") == []


def test_binary_and_non_utf8_are_not_text() -> None:
    assert decode_lines(b"caf\xe9\n") is None
    assert decode_lines(b"a\x00b\n") is None


FILE = ["def f():", "    x = 1", "    return x", "", "def g():", "    x = 1", "    return x", ""]


def test_relocate_prefers_context_then_nearest() -> None:
    exact = ["    x = 1", "    return x"]
    # Both bodies match; context (the def line) decides.
    m = relocate(FILE, Span("f.py", 2, 3), exact, ["def g():"], [])
    assert m is not None and (m.start, m.end, m.candidates) == (6, 7, 1)
    # No context: two equally good places, the nearest to the pinned lines wins.
    m = relocate(FILE, Span("f.py", 5, 6), exact, [], [])
    assert m is not None and (m.start, m.end, m.candidates) == (6, 7, 2)
    m = relocate(FILE, Span("f.py", 1, 2), exact, [], [])
    assert m is not None and (m.start, m.candidates) == (2, 2)


def test_relocate_normalized_keeps_relative_indentation() -> None:
    lines = ["a", "   foo(  1,", "", "      2)", "b"]
    m = relocate(lines, Span("f.py", 1, 2), ["foo( 1,", "   2)"], [], [])
    assert m is not None and (m.start, m.end, m.how) == (2, 4, "normalized")
    # The same words with the second line moved out of the block: another meaning.
    assert relocate(lines, Span("f.py", 1, 2), ["   foo( 1,", "2)"], [], []) is None
    assert span_sha256(["if x:", "    y()"]) == span_sha256(["    if x:", "", "        y()  "])
    assert span_sha256(["if x:", "    y()"]) != span_sha256(["if x:", "y()"])
    # Continuation lines inside brackets: their indentation is free.
    assert span_sha256(["return g(1,", "         2)"]) == span_sha256(["return g(1,", "    2)"])


def test_digest_only_anchor_does_not_search() -> None:
    assert relocate(["a", "b"], Span("f.py", 1, 1), None, [], []) is None


def test_relocate_counts_every_place() -> None:
    exact = ["    x = 1", "    return x"]
    m = relocate(FILE, Span("f.py", 2, 3), exact, ["def g():"], [])
    assert m is not None and (m.candidates, m.total) == (1, 2)


def test_relocate_never_matches_a_partial_span() -> None:
    assert relocate(FILE, Span("f.py", 1, 3), ["def f():", "    x = 2"], [], []) is None


def test_whitespace_inside_string_literals_is_meaning() -> None:
    assert span_sha256(['x  =  f( "a  b" )']) == span_sha256(['x = f( "a  b" )'])
    assert span_sha256(['x = "a  b"']) != span_sha256(['x = "a b"'])
    assert span_sha256(["x = '''a  b'''"]) != span_sha256(["x = '''a b'''"])
    assert span_sha256(['x = "a \\"  b"']) != span_sha256(['x = "a \\" b"'])  # an escaped quote
    # Comments are prose: their spacing is folded.
    assert span_sha256(["x = 1  #  a  note"]) == span_sha256(["x = 1 # a note"])


@pytest.mark.parametrize("opener", ["s = '('", "# see f(", 'doc = """(', "t = '['  # ("])
def test_a_bracket_in_a_string_or_comment_does_not_hide_a_change_of_block(opener: str) -> None:
    """Moving a call out of its ``if`` is a change of meaning, whatever came before."""
    closer = ['""")'] if opener.startswith("doc") else []
    guarded = [opener, *closer, "if user.is_admin:", "    delete_everything()"]
    moved = [opener, *closer, "if user.is_admin:", "    pass", "delete_everything()"]
    assert span_sha256([*guarded[:-1], "delete_everything()"]) != span_sha256(guarded)
    lines = ["def f(user):", *("    " + x for x in moved)]
    assert relocate(lines, Span("f.py", 1, len(guarded)), guarded, [], []) is None


def test_a_triple_quoted_string_reindented_with_its_block_still_matches() -> None:
    block = ['def f():', '    """Doc', '    more."""', '    return 1']
    assert span_sha256(block) == span_sha256(["    " + x for x in block])


def test_linear_search_finds_what_normalising_every_window_finds(vllm_tree) -> None:  # type: ignore[no-untyped-def]
    """The folded-line prefilter must not lose a match: compare with normalising
    every window, on a real file with re-indented copies of real spans."""
    from pp1audit.text.spans import decode_lines, normalize

    src = decode_lines((vllm_tree / "vllm/v1/worker/gpu/model_runner.py").read_bytes())
    assert src is not None
    for start in range(40, len(src) - 12, 97):
        exact = ["  " + x if x.strip() else x for x in src[start:start + 8]]  # re-indented
        if not normalize(exact):
            continue
        lines = src[:start] + ["    " + x for x in src[start:start + 8]] + src[start + 8:]
        want = span_sha256(exact)
        idx = [i for i, x in enumerate(lines) if x.strip()]
        n = len(normalize(exact))
        brute = [(idx[k], idx[k + n - 1] + 1) for k in range(len(idx) - n + 1)
                 if span_sha256(lines[idx[k]:idx[k + n - 1] + 1]) == want]
        m = relocate(lines, Span("f.py", 1, 8), exact, [], [])
        if not brute:
            assert m is None or m.how == "exact"
            continue
        assert m is not None and m.total == len(brute), start
        assert (m.start - 1, m.end) in brute
