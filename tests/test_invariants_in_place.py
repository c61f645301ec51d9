"""``in_place: true``: a forbidden (or quantified) assignment ``T = $V`` also matches each
change of ``T``'s value in place.

Mutating the PP1 files found claims on a value ("the logits sampled are the ones
masked", "the processed logits reach rejection_sample unchanged") that a rule on the
assignment let pass when the value was changed without binding the name:
``logits.copy_(other)``, ``torch.Tensor.zero_(logits)``, ``f(…, out=logits)``,
``operator.setitem(logits, …)``, or a write through a local holding a view of it.
Opt-in, because a claim on what a name is bound to (``draft_logits`` stays None) is not
broken by writing into the tensor it holds.
"""

from __future__ import annotations

import textwrap

import pytest
from test_invariants_rules import MakeFiles, manifest_text, one

from pp1audit.errors import ManifestError
from pp1audit.manifest import parse
from pp1audit.result import Status

RULE = """\
    file: pkg/mod.py
    in: f
    pattern: g(logits)
    not:
      pattern: logits = $CHANGED
      in_place: true
      where:
        CHANGED: {not: {is: logits.float()}}
"""


def body(code: str) -> str:
    """``f`` whose body is ``code`` then ``return g(logits)`` (line 2 onwards)."""
    return "def f(logits, t, x, m):\n" + textwrap.indent(textwrap.dedent(code), "    ") + \
        "    return g(logits)\n"


@pytest.mark.parametrize(("code", "line", "shown"), [
    ("logits.div_(t)\n", 2, "logits.div_(t)"),
    ("logits.copy_(x)\n", 2, "logits.copy_(x)"),
    ("logits.masked_fill_(m, 0)\n", 2, "logits.masked_fill_(m, 0)"),
    ("logits[:] = 0\n", 2, "logits[:] = 0"),
    ("logits[0] += 1\n", 2, "logits[0] += 1"),
    ("del logits[0]\n", 2, "del logits[0]"),
    ("del logits\n", 2, "del logits"),
    ("logits.data = x\n", 2, "logits.data = x"),
    ("logits.T[0] = 1\n", 2, "logits.T[0] = 1"),
    ("logits.T.fill_(0.0)\n", 2, "logits.T.fill_(0.0)"),   # `T`: a view, not a class (R18)
    ("logits.H.div_(t)\n", 2, "logits.H.div_(t)"),
    ("logits.view(-1)[0] = 1\n", 2, "logits.view(-1)[0] = 1"),
    ("logits[:, :4].view(-1).zero_()\n", 2, "logits[:, :4].view(-1).zero_()"),
    ("torch.div(logits, t, out=logits)\n", 2, "torch.div(logits, t, out=logits)"),
    ("torch.div(x, t, out=(x, logits))\n", 2, "torch.div(x, t, out=(x, logits))"),
    ("torch.Tensor.zero_(logits)\n", 2, "torch.Tensor.zero_(logits)"),
    ("torch.nn.init.zeros_(logits)\n", 2, "torch.nn.init.zeros_(logits)"),
    ("operator.setitem(logits, 0, 1)\n", 2, "operator.setitem(logits, 0, 1)"),
    ("operator.iadd(logits, x)\n", 2, "operator.iadd(logits, x)"),
    ("logits.__setitem__(0, 1)\n", 2, "logits.__setitem__(0, 1)"),
    ("logits.__imul__(t)\n", 2, "logits.__imul__(t)"),
    ("(x if t else logits).zero_()\n", 2, "(x if t else logits).zero_()"),
    ("(r := logits[0]).zero_()\n", 2, "(r := logits[0]).zero_()"),
    ("rows = logits[:4]\nrows /= t\n", 3, "rows /= t"),
    ("rows = logits\nkept = rows\nkept.zero_()\n", 4, "kept.zero_()"),
    ("a = b = logits\nb.fill_(0)\n", 3, "b.fill_(0)"),
    ("for row in logits:\n    row.zero_()\n", 3, "row.zero_()"),
    ("def later():\n    logits.zero_()\n", 3, "logits.zero_()"),  # it may be called
])
def test_an_in_place_change_is_an_assignment_of_the_value(make_files: MakeFiles, code: str,
                                                           line: int, shown: str) -> None:
    c = one(make_files, RULE, body(code))
    assert c.status is Status.FAIL, c.message
    assert f"is present at line {line} (`{shown}`)" in c.message, c.message


@pytest.mark.parametrize("code", [
    "y = logits.float()\n",               # the value the rule allows
    "x.copy_(logits)\n",                  # read, written into another
    "y = logits.float(); y.div_(t)\n",   # a copy changed, not the logits
    "y = logits.sort(dim=-1)\n",          # sort and add return new tensors
    "y = logits.add(1)\n",
    "x[0] = logits\n",
    "y = x\ny.zero_()\n",                 # another value's alias
    "logits.shape[0]\n",
    "torch.div(logits, t, out=x)\n",
    "torch.Tensor.zero_(x)\n",
])
def test_what_does_not_change_the_value_is_no_match(make_files: MakeFiles, code: str) -> None:
    c = one(make_files, RULE, body(code))
    assert c.status is Status.PASS, c.message


def test_a_local_changed_before_it_holds_the_value_does_not_change_it(
        make_files: MakeFiles) -> None:
    """DSpark's scatter: the buffer is written, then the logits are bound to it; after that
    binding, a change of the buffer is one of the logits."""
    rule = RULE.replace("    pattern: logits = $CHANGED\n", "    pattern: kept = $CHANGED\n") \
        .replace("g(logits)", "g(kept)").replace("logits.float()", "buf")
    before = "def f(logits, buf):\n    buf.index_copy_(1, i, logits)\n    kept = buf\n" \
             "    return g(kept)\n"
    assert one(make_files, rule, before).status is Status.PASS
    after = "def f(logits, buf):\n    kept = buf\n    buf.index_copy_(1, i, logits)\n" \
            "    return g(kept)\n"
    c = one(make_files, rule, after)
    assert c.status is Status.FAIL and "is present at line 3 (`buf.index_copy_(1, i, logits)`)" \
        in c.message, c.message


def test_without_in_place_the_rule_is_on_the_binding_only(make_files: MakeFiles) -> None:
    rule = RULE.replace("      in_place: true\n", "")
    assert one(make_files, rule, body("logits.div_(t)\n")).status is Status.PASS
    c = one(make_files, rule, body("logits = logits * t\n"))
    assert c.status is Status.FAIL and "is present at line 2 (must be absent)" in c.message


EVERY = """\
    file: pkg/mod.py
    in: Spec.__init__
    pattern: self.cache = []
    every:
      pattern: self.cache = $VALUE
      in_place: true
      where:
        VALUE: {not: {is: "[]"}}
      guarded_by: $CONFIG.method == "probabilistic"
"""

SPEC = """\
class Spec:
    def __init__(self, config):
        self.cache = []
        if config.method == "probabilistic":
            self.cache = [1.0]

    def reset(self, config):
        {reset}
"""


@pytest.mark.parametrize(("reset", "line"), [
    ("if config.method == 'probabilistic':\n            self.cache.extend([2.0])", None),
    ("self.cache.append(2.0)", 8),
    ("me = self\n        me.cache.append(2.0)", 9),   # through another name of self
    ("self.cache[0] = 2.0", 8),
    ("print(self.cache)", None),
])
def test_every_with_in_place_quantifies_over_the_changes_too(
        make_files: MakeFiles, reset: str, line: int | None) -> None:
    c = one(make_files, EVERY, SPEC.replace("{reset}", reset))
    if line is None:
        assert c.status is Status.PASS, c.message
    else:
        assert c.status is Status.FAIL, c.message
        assert c.message == (f"every: `self.cache = $VALUE` at line {line}: it is not inside "
                             'an `if $CONFIG.method == "probabilistic":` block'), c.message


def test_every_without_in_place_does_not_see_the_changes(make_files: MakeFiles) -> None:
    rule = EVERY.replace("      in_place: true\n", "")
    c = one(make_files, rule, SPEC.replace("{reset}", "self.cache.append(2.0)"))
    assert c.status is Status.PASS, c.message


@pytest.mark.parametrize(("rule", "where"), [
    ("r:\n  file: pkg/mod.py\n  pattern: x\n  follows: {pattern: x = $V, in_place: true}\n",
     "7:32"),                                                  # not under not / every
    ("r:\n  file: pkg/mod.py\n  pattern: x\n  not: {pattern: f(x), in_place: true}\n",
     "7:26"),                                                  # not an assignment
])
def test_in_place_is_refused_where_it_means_nothing(rule: str, where: str) -> None:
    with pytest.raises(ManifestError) as info:
        parse(manifest_text(rule), "m.yaml")
    text = str(info.value)
    assert text.startswith(f"m.yaml:{where}: 'in_place' is read on the rule of a 'not' or an "
                           "'every'"), text


def test_in_place_under_a_not_deeper_down_is_read(make_files: MakeFiles) -> None:
    rule = """\
        file: pkg/mod.py
        in: f
        pattern: g(logits)
        follows:
          pattern: h(logits)
          not: {pattern: logits = $V, in_place: true}
    """
    code = "def f(logits):\n    h(logits)\n    {change}\n    return g(logits)\n"
    assert one(make_files, rule, code.replace("{change}", "pass")).status is Status.PASS
    c = one(make_files, rule, code.replace("{change}", "logits.zero_()"))
    assert c.status is Status.FAIL and "is present at line 3 (`logits.zero_()`)" in c.message, \
        c.message


def test_in_place_must_be_a_boolean() -> None:
    with pytest.raises(ManifestError) as info:
        parse(manifest_text("r:\n  file: pkg/mod.py\n  pattern: x\n"
                            "  not: {pattern: x = $V, in_place: yes please}\n"), "m.yaml")
    assert str(info.value).startswith("m.yaml:7:38: 'in_place' is true or false, not text"), \
        str(info.value)


def test_in_place_on_the_invariant_itself_is_an_unknown_key() -> None:
    with pytest.raises(ManifestError) as info:
        parse(manifest_text("r:\n  file: pkg/mod.py\n  pattern: x = $V\n  in_place: true\n"),
              "m.yaml")
    assert str(info.value).startswith("m.yaml:7:5: unknown key 'in_place'"), str(info.value)
