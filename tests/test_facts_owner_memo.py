"""``FactsCore.owner`` is memoised by node key (start, end, kind): sound only if nodes of a
file that share a key share their owner (a bare ``yield`` is a ``yield`` node holding a
``yield`` token of the same span: the only case found in vLLM), and if a remembered answer
is the one a fresh walk gives. Checked on real vLLM modules, every node asked in a
shuffled order, twice."""

from __future__ import annotations

import random
from pathlib import Path

from ast_grep_py import SgNode, SgRoot

from pp1audit.facts.core import FactsCore
from pp1audit.facts.shapes import _SCOPE_KINDS
from pp1audit.syntaxtree import key


def walked(node: SgNode) -> SgNode | None:
    """The owner found by walking the ancestors, with no memo (the reading memoised)."""
    child = node
    for anc in node.ancestors():
        if anc.kind() in _SCOPE_KINDS:
            body = anc.field("body")
            if body is not None and body == child:
                return anc
        child = anc
    return None


def every_node(root: SgNode) -> list[SgNode]:
    out, todo = [], [root]
    while todo:
        node = todo.pop()
        out.append(node)
        todo.extend(node.children())
    return out


def test_real_modules_memoised_owner_is_the_walked_one(vllm_tree: Path) -> None:
    files = sorted((vllm_tree / "vllm").rglob("*.py"))
    rng = random.Random(14)
    asked = 0
    for path in rng.sample(files, 40):
        text = path.read_text(encoding="utf-8")
        root = SgRoot(text, "python").root()
        nodes = every_node(root)
        facts = FactsCore(root, text)
        for _round in range(2):
            rng.shuffle(nodes)
            for node in nodes:
                got, want = facts.owner(node), walked(node)
                assert (got is None) == (want is None), (path, node.text()[:60])
                if got is not None and want is not None:
                    assert key(got) == key(want), (path, node.text()[:60])
                asked += 1
    assert asked > 50_000


def test_nodes_sharing_a_key_share_their_owner() -> None:
    text = "def gen():\n    yield\n    x = lambda: (yield)\n"
    root = SgRoot(text, "python").root()
    twins = [n for n in every_node(root) if n.kind() == "yield"]
    assert len(twins) == 4 and len({key(n) for n in twins}) == 2
    facts = FactsCore(root, text)
    for node in sorted(twins, key=lambda n: n.is_named()):  # the token asked first
        got, want = facts.owner(node), walked(node)
        assert got is not None and want is not None and key(got) == key(want)


def test_decorators_and_defaults_belong_to_the_enclosing_scope() -> None:
    text = "class C:\n    @d\n    def f(self, x=g()):\n        return h()\n"
    root = SgRoot(text, "python").root()
    facts = FactsCore(root, text)
    cls = root.find(kind="class_definition")
    fn = root.find(kind="function_definition")
    assert cls is not None and fn is not None
    by_name = {n.text(): n for n in root.find_all(kind="identifier")}
    for _round in range(2):
        d_owner, g_owner, h_owner = (facts.owner(by_name[n]) for n in ("d", "g", "h"))
        assert d_owner is not None and key(d_owner) == key(cls)
        assert g_owner is not None and key(g_owner) == key(cls)
        assert h_owner is not None and key(h_owner) == key(fn)
        assert facts.owner(cls) is None
