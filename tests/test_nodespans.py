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
from test_invariants_scaling import Counted

from pp1audit import nodespans
from pp1audit.matcher import Engine
from pp1audit.sources import DirectorySource
from pp1audit.store import FileStore

LONG = "_ = 0; " * (nodespans.LONG_LINE // 7 + 1) + "_ = 1\n"
"""A first line over ``LONG_LINE``: the file's nodes are then placed by its table."""


class Owner:
    """What a table's life follows in these tests (the matcher's is the parse)."""


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
    root = SgRoot(text, "python").root()
    table = nodespans.place(root, text)
    assert table is not None, "no long line: nothing placed"
    owner = Owner()
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


def test_a_module_starting_after_blank_lines_and_comments() -> None:
    # The module starts at its first token (ast-grep's own answer), not at offset 0.
    assert disagreements("\n   \n# lead\n" + LONG + "x = 1") == []
    assert disagreements("\n\n" + LONG + "x = 1\n\n# end\n\n") == []


def fields(n: int) -> str:
    """``n`` f-strings with a nested format field each, on one line (its fields are
    children of the format spec, whose text holds hidden tokens)."""
    return LONG + "; ".join("f'{x:>{w}.{p}f}'" for _ in range(n)) + "\n"


def test_nested_format_fields_are_placed_in_linear_work() -> None:
    """Counted as ``test_invariants_scaling`` counts: each node call one, ``text()`` its
    length, ``range()`` the columns ast-grep counts. Asking ast-grep for every nested
    field made 20,000 of them on one line take 20 s."""
    assert disagreements(fields(50)) == []

    def work(n: int) -> int:
        calls = [0]
        text = fields(n)
        nodespans.build(Counted(SgRoot(text, "python").root(), calls), text)
        return calls[0]

    small, large = work(500), work(2000)
    assert large <= 5 * small, (small, large)  # linear: ~4x; quadratic: ~16x


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
    before = len(nodespans._TABLES)
    root = make_files({"pkg/__init__.py": "", "pkg/mod.py": LONG + "class Runner:\n    pass\n"})
    engine = Engine(FileStore(DirectorySource(root)))
    parsed = engine.parse("pkg/mod.py")
    entries = len(nodespans._SPANS)
    assert len(nodespans._TABLES) == before + 1
    assert entries > 2 * len(LONG) // 7  # every node of the file (3 a statement, at least)
    del parsed, engine
    gc.collect()
    assert len(nodespans._TABLES) == before and len(nodespans._SPANS) < entries // 100


def test_a_hash_two_nodes_share_is_asked_of_ast_grep() -> None:
    """Two nodes with the same hash (never seen: SipHash of the node's identity), in one
    file or in two live tables, both lose their entry: each is asked of ast-grep, neither
    given the other's place."""
    text = LONG + "y = 22\n"
    root = SgRoot(text, "python").root()
    y = root.children()[-1]
    r = y.range()
    truth = ((r.start.index, r.end.index), (2, 2))
    assert truth[0] == (len(LONG), len(text) - 1)
    spans: dict[int, int] = {}
    placer = nodespans._Placer(text, spans)
    placer.put(y, 5, 6)
    placer.put(y, 7, 9)  # another node of the file with that hash
    one_file = Owner()
    nodespans.hold(one_file, nodespans.Table(spans, []))
    assert (nodespans.span_of(y), nodespans.lines_of(y)) == truth
    del one_file
    gc.collect()

    def table_placing_y(start: int, end: int) -> nodespans.Table:
        entries: dict[int, int] = {}
        nodespans._Placer(text, entries).put(y, start, end)
        return nodespans.Table(entries, [])

    first, second = Owner(), Owner()
    nodespans.hold(first, table_placing_y(5, 6))
    assert nodespans.span_of(y) == (5, 6)  # what a table says is what is answered
    nodespans.hold(second, table_placing_y(7, 9))  # another live file, a node of that hash
    assert (nodespans.span_of(y), nodespans.lines_of(y)) == truth
    del first, second
    gc.collect()
    assert hash(y) not in nodespans._SPANS
