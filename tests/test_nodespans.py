"""Where a node lies, read from a file's table of spans when it has long lines: the same
offsets and lines as ast-grep's own ``range()``, on real vLLM code and on the constructs
whose text holds hidden tokens; the rules' verdicts and lines on a long line; the table
freed with its parse. (That judging stays linear on long lines is
``test_invariants_scaling``'s ``one-line`` cases.)"""

from __future__ import annotations

import gc
import re
import textwrap
from pathlib import Path

import pytest
from ast_grep_py import SgNode, SgRoot
from test_invariants_rules import MakeFiles, one

from pp1audit import nodespans
from pp1audit.matcher import Engine
from pp1audit.sources import DirectorySource
from pp1audit.store import FileStore

LONG = "_ = 0; " * (nodespans.LONG_LINE // 7 + 1) + "_ = 1\n"
"""A first line over ``LONG_LINE``: the file's nodes are then placed by its table."""


def every_node(root: SgNode) -> list[SgNode]:
    out, todo = [], [root]
    while todo:
        node = todo.pop()
        out.append(node)
        todo.extend(node.children())
    return out


def disagreements(text: str) -> list[str]:
    """Nodes whose span or lines from the file's table differ from ast-grep's (checked on a
    parse that holds the table, as the matcher's does)."""

    class Parse:  # the owner whose life the table follows
        pass

    root = SgRoot(text, "python").root()
    table = nodespans.place(root, text)
    assert table is not None, "no long line: nothing placed"
    owner = Parse()
    nodespans.hold(owner, table)
    try:
        bad = []
        for node in every_node(root):
            r = node.range()
            want = ((r.start.index, r.end.index), (r.start.line + 1, r.end.line + 1))
            got = (nodespans.span_of(node), nodespans.lines_of(node))
            if got != want:
                bad.append(f"{node.kind()} {node.text()[:40]!r}: {got} != {want}")
        return bad
    finally:
        del owner
        gc.collect()


def sample(tree: Path) -> list[Path]:
    """Every twelfth module of vLLM, and every one with a ``match`` statement (its ``case``
    blocks start with a hidden newline)."""
    files = sorted((tree / "vllm").rglob("*.py"))
    return [p for i, p in enumerate(files) if i % 12 == 0 or re.search(
        r"^\s+case .*:$", p.read_text(encoding="utf-8"), re.M)]


def test_real_modules_are_placed_as_ast_grep_places_them(vllm_tree: Path) -> None:
    files = sample(vllm_tree)
    assert len(files) > 230
    for path in files:
        text = path.read_text(encoding="utf-8").replace("\r\n", "\n").replace("\r", "\n")
        assert disagreements(LONG + text) == [], path


def test_the_hidden_tokens_of_strings_and_format_specs() -> None:
    # Each on one long line: escapes amid a string's plain content (which is no child),
    # raw and byte strings, f-strings with format specs and nested fields, implicit
    # concatenation, comments, a line continuation, content starting with spaces, and
    # characters outside the BMP (offsets count code points, as Python's do).
    line = "; ".join([
        r"a = 'x\ty\\n\'z'", r"b = r'\d+\s'", r"c = b'\x00\n'", "d = f'{v:>10.3f} {w!r:^{n}}'",
        "e = f'''  {x:%Y-%m-%d}  '''", "f = 'p' 'q'", r"g = '\N{BULLET} \u00e9'",
        "h = u'  lead'", "k = f'{a}{{b}}{c:{d}.{e}}'", "ñ = '😀é' + f'{ß!s:😀^9}'"] * 60)
    code = (f"{line}\nx = (1 +  # comment\n     2)\ny = 1 + \\\n    2\n"
            "match x:\n    case [1, *rest] if rest:\n        pass\n    case {'k': v}:\n"
            "        pass\n" + line + "  # trailing\n")
    assert nodespans.has_long_line(code)
    assert disagreements(code) == []


def test_short_lines_are_not_tabled() -> None:
    text = "x = 1\n" * 1000 + "y = " + "1" * (nodespans.LONG_LINE - 4) + "\n"
    assert not nodespans.has_long_line(text)
    assert nodespans.has_long_line(text + "z" * (nodespans.LONG_LINE + 1))
    assert nodespans.place(SgRoot(text, "python").root(), text) is None


RULES = """\
    file: pkg/mod.py
    in: Runner.sample
    pattern: self.rejection_sampler($$$ARGS)
    where: {ARGS: {has: self.speculator.draft_logits}}
    follows: self.prepare($$$)
"""


@pytest.mark.parametrize("pad", [0, 3000], ids=["short-lines", "long-line"])
def test_verdicts_and_lines_on_a_long_line(make_files: MakeFiles, pad: int) -> None:
    """The same rule and code, with and without a long line before it, and the call
    and what it follows on one long line: the same verdicts, found on the same lines."""
    filler = "; ".join(f"v{i} = {i}" for i in range(pad // 8))
    head = f"X = 1; {filler}\n" if pad else "X = 1\n"
    call = "self.rejection_sampler(x, self.speculator.draft_logits)"
    code = head + textwrap.dedent(f"""\
        class Runner:
            def sample(self, x):
                {filler + '; ' if pad else ''}self.prepare(x); {call}

            def other(self, x):
                {call}; self.prepare(x)
        """)
    held = one(make_files, RULES, code)
    assert held.status.value == "pass", held.message
    assert held.found_lines == (4, 4)
    broken = one(make_files, RULES.replace("in: Runner.sample", "in: Runner.other"), code)
    assert broken.status.value == "fail", broken.message
    assert "line 7" in broken.message


def test_the_table_lives_as_long_as_the_parse(make_files: MakeFiles) -> None:
    gc.collect()
    before = len(nodespans._LIVE)
    root = make_files({"pkg/__init__.py": "", "pkg/mod.py": LONG + "class Runner:\n    pass\n"})
    engine = Engine(FileStore(DirectorySource(root)))
    parsed = engine.parse("pkg/mod.py")
    assert parsed.spans is not None and len(nodespans._LIVE) == before + 1
    del parsed, engine
    gc.collect()
    assert len(nodespans._LIVE) == before


def test_a_hash_two_nodes_share_is_asked_of_ast_grep() -> None:
    """Two nodes of one file with the same hash (never seen: SipHash of the node's
    identity) both lose their entry: each is asked of ast-grep, neither given the other's
    place."""
    text = LONG + "y = 22\n"
    root = SgRoot(text, "python").root()
    y = root.children()[-1]
    spans: dict[int, int] = {}
    nodespans._put(spans, hash(y), 5, 6)
    nodespans._put(spans, hash(y), 7, 9)  # another node with that hash

    class Parse:
        pass

    owner = Parse()
    nodespans.hold(owner, nodespans.Table(spans, []))
    r = y.range()
    assert nodespans.span_of(y) == (r.start.index, r.end.index) == (len(LONG), len(text) - 1)
    assert nodespans.lines_of(y) == (2, 2)
    del owner
    gc.collect()
