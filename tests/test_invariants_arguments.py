"""``argument:`` and ``parameter:``: which parameter an argument binds, not only that it is there.

``has: draft_logits`` on ``$$$ARGS`` holds when the name is among the arguments: a
swap of two positional arguments (``rejection_sample(x, draft_sampled, draft_logits)``)
kept every PP1 claim that the draft logits reach the sampler. ``argument`` asks for the
argument that binds the parameter: its keyword, or the positional one at its place,
pinned (``at``) or read from the called definition the rule found (``of``).
"""

from __future__ import annotations

import textwrap

import pytest
from test_invariants_rules import MakeFiles, manifest_text, one

from pp1audit.errors import ManifestError
from pp1audit.manifest import parse
from pp1audit.result import Status

AT = """\
    file: pkg/mod.py
    in: f
    pattern: g($$$ARGS)
    where:
      ARGS: {argument: {name: d, at: 1, is: d}}
"""


def body(code: str) -> str:
    """``f(x, d, e, xs, kw)`` whose body is ``code`` (from line 2)."""
    return "def f(x, d, e, xs, kw):\n" + textwrap.indent(textwrap.dedent(code), "    ")


@pytest.mark.parametrize("call", [
    "g(x, d, e)",
    "g(x, d)",
    "g(x, (d), e)",                  # parentheses around it aside
    "g(x,\n  # a comment is not an argument\n  d, e)",
    "g(x, e=e, d=d)",                # by keyword
    "g(d=d, x=x)",                   # every one by keyword, in another order
    "g(x, d, *xs)",                  # a splat after its place hides nothing before it
    "g(x, d, **kw)",
])
def test_the_argument_at_its_place_or_by_keyword_holds(make_files: MakeFiles, call: str) -> None:
    c = one(make_files, AT, body(call + "\n"))
    assert c.status is Status.PASS, c.message


@pytest.mark.parametrize(("call", "among"), [
    ("g(x, e, d)", True),            # the swap `has: d` let through
    ("g(d, x, e)", True),
    ("g(x)", False),
    ("g(x, e=d)", False),            # passed, but for another parameter
    ("g(x, d_=d)", False),
    ("g(*xs, d)", True),             # a splat before: which parameter d binds is not known
    ("g(x, *xs)", False),
    ("g(x, h(x, d))", False),        # inside another call's arguments
    ("g(x, e, y=d)", False),
])
def test_an_argument_elsewhere_fails_and_says_what_was_asked(
        make_files: MakeFiles, call: str, among: bool) -> None:
    c = one(make_files, AT, body(call + "\n"))
    assert c.status is Status.FAIL, c.message
    assert "the argument for `d` (keyword, or position 1) is `d`" in c.message, c.message
    # `has` alone let the same code through whenever d was among the arguments
    plain = one(make_files, AT.replace("{argument: {name: d, at: 1, is: d}}", "{has: d}"),
                body(call + "\n"))
    assert (plain.status is Status.PASS) is among, plain.message


def test_positions_count_from_the_call_not_from_the_capture(make_files: MakeFiles) -> None:
    rule = AT.replace("g($$$ARGS)", "g($FIRST, $$$ARGS)")
    assert one(make_files, rule, body("g(x, d)\n")).status is Status.PASS
    assert one(make_files, rule, body("g(d, x)\n")).status is Status.FAIL
    # and an argument outside the capture is not the capture's
    first = AT.replace("g($$$ARGS)", "g($$$ARGS, $LAST)")
    c = one(make_files, first, body("g(x, d)\n"))
    assert c.status is Status.FAIL, c.message


def test_a_single_capture_that_is_the_call_is_asked_about_its_arguments(
        make_files: MakeFiles) -> None:
    rule = """\
        file: pkg/mod.py
        in: f
        pattern: y = $CALL
        where:
          CALL: {argument: {name: d, at: 0, regex: "^d$"}}
    """
    assert one(make_files, rule, body("y = g(d)\n")).status is Status.PASS
    assert one(make_files, rule, body("y = g(e, d)\n")).status is Status.FAIL
    assert one(make_files, rule, body("y = d\n")).status is Status.FAIL


def test_without_a_value_constraint_anything_passed_for_it_holds(make_files: MakeFiles) -> None:
    rule = AT.replace("{name: d, at: 1, is: d}", "{name: d, at: 1}")
    assert one(make_files, rule, body("g(x, 5)\n")).status is Status.PASS
    c = one(make_files, rule, body("g(x)\n"))
    assert c.status is Status.FAIL and "is passed" in c.message, c.message


def test_keyword_only_without_a_place(make_files: MakeFiles) -> None:
    rule = AT.replace("{name: d, at: 1, is: d}", "{name: d, is: d}")
    assert one(make_files, rule, body("g(x, d=d)\n")).status is Status.PASS
    assert one(make_files, rule, body("g(x, d)\n")).status is Status.FAIL


FORBID = """\
    file: pkg/mod.py
    in: f
    pattern: g($$$ARGS)
    not:
      pattern: g($$$DROPPED)
      where:
        DROPPED: {argument: {name: d, at: 1, is: None}}
"""


@pytest.mark.parametrize(("call", "status"), [
    ("g(x, d)", Status.PASS),
    ("g(x, None)", Status.FAIL),
    ("g(x, d=None)", Status.FAIL),
    ("g(None, d)", Status.PASS),
    ("g(*xs)", Status.FAIL),         # under `not`, what cannot be read counts as there
    ("g(x, d, **kw)", Status.FAIL),
])
def test_under_not_an_unknown_place_counts_against(make_files: MakeFiles, call: str,
                                                   status: Status) -> None:
    c = one(make_files, FORBID, body(call + "\n"))
    assert c.status is status, c.message


def test_every_call_passes_it_at_its_place(make_files: MakeFiles) -> None:
    """The PP1 shape: one call passes it, and no call passes something else in its place."""
    rule = """\
        file: pkg/mod.py
        in: f
        pattern: g($$$ARGS)
        where: {ARGS: {argument: {name: d, at: 1, is: d}}}
        not:
          pattern: g($$$DROPPED)
          where:
            DROPPED: {not: {argument: {name: d, at: 1, is: d}}}
    """
    assert one(make_files, rule, body("g(x, d)\ng(e, d=d)\n")).status is Status.PASS
    c = one(make_files, rule, body("g(x, d)\ng(x, e, d)\n"))
    assert c.status is Status.FAIL and "line 3" in c.message, c.message
    assert one(make_files, rule, body("g(x, d)\ng(*xs)\n")).status is Status.FAIL


OF = """\
    file: pkg/mod.py
    in: C
    pattern: $DEF
    where:
      DEF: {regex: "^def\\\\s+callee\\\\b"}
    precedes:
      pattern: $CALLER
      where:
        CALLER: {regex: "^def\\\\s+caller\\\\b"}
      has:
        pattern: self.callee($$$ARGS)
        where:
          ARGS: {argument: {name: d, of: DEF, is: d}}
"""


def klass(callee: str, call: str, decorator: str = "") -> str:
    return (f"class C:\n    {decorator}\n    def callee({callee}):\n        pass\n\n"
            f"    def caller(self, x, d, e, xs):\n        self.callee({call})\n")


@pytest.mark.parametrize(("callee", "call", "decorator", "status"), [
    ("self, x, d", "x, d", "", Status.PASS),
    ("self, d, x", "d, x", "", Status.PASS),        # the parameter moved with its argument
    ("self, d, x", "x, d", "", Status.FAIL),        # the parameter moved, the argument not
    ("self, x, d", "x, e", "", Status.FAIL),
    ("self, x, /, d", "x, d", "", Status.PASS),     # a `/` only separates
    ("self, x, *, d", "x, d", "", Status.FAIL),     # keyword-only: a position binds nothing
    ("self, x, *, d", "x, d=d", "", Status.PASS),
    ("self, x, *rest, d", "x, e, d=d", "", Status.PASS),
    ("self, x: int, d: 'T | None' = None", "x, d", "", Status.PASS),
    ("x, d", "x, d", "@staticmethod", Status.PASS),  # no bound self
    ("x, d", "d, x", "@staticmethod", Status.FAIL),
    ("cls, x, d", "x, d", "@classmethod", Status.PASS),
    ("self, x, e", "x, d", "", Status.FAIL),        # no such parameter: only d= would bind it
    ("self, x, *rest: int, d", "x, d", "", Status.FAIL),   # an annotated *args ends them too
    ("self, x, **kw: int", "x, d", "", Status.FAIL),
])
def test_of_reads_the_place_from_the_called_definition(
        make_files: MakeFiles, callee: str, call: str, decorator: str, status: Status) -> None:
    c = one(make_files, OF, klass(callee, call, decorator))
    assert c.status is status, c.message


def holds_until(make_files: MakeFiles, rule: str, code: str, old: str, new: str) -> None:
    """``rule`` holds on ``code`` and fails once ``old`` is made ``new`` in it."""
    assert one(make_files, rule, code).status is Status.PASS
    assert old in code
    c = one(make_files, rule, code.replace(old, new))
    assert c.status is Status.FAIL, c.message


def test_a_method_defined_under_an_if_in_the_class_body_has_a_bound_self(
        make_files: MakeFiles) -> None:
    code = klass("self, x, d", "x, d").replace(
        "    \n    def callee(self, x, d):\n        pass\n",
        "    if True:\n        def callee(self, x, d):\n            pass\n")
    assert "if True:" in code
    holds_until(make_files, OF, code, "self.callee(x, d)", "self.callee(self, x, d)")


def test_a_function_nested_in_a_method_has_no_bound_self(make_files: MakeFiles) -> None:
    rule = """\
        file: pkg/mod.py
        in: C.m
        pattern: $DEF
        where:
          DEF: {regex: "^def\\\\s+inner\\\\b"}
        precedes:
          pattern: inner($$$ARGS)
          where:
            ARGS: {argument: {name: d, of: DEF, is: d}}
    """
    code = "class C:\n    def m(self, x, d):\n        def inner(x, d):\n            pass\n" \
           "        inner(x, d)\n"
    holds_until(make_files, rule, code, "inner(x, d)\n", "inner(d, x)\n")


BY_NAME = """\
    file: pkg/mod.py
    in: caller
    pattern: $KERNEL[$GRID]($$$ARGS)
    where:
      ARGS: {argument: {name: d_ptr, of: kernel, is: d}}
"""


@pytest.mark.parametrize(("kernel", "launch", "status"), [
    ("@jit\ndef kernel(x_ptr, d_ptr, n):\n    pass\n", "kernel[(1,)](x, d, 3)", Status.PASS),
    ("@jit\ndef kernel(x_ptr, d_ptr, n):\n    pass\n", "kernel[(1,)](x, 3, d)", Status.FAIL),
    ("@jit\ndef kernel(d_ptr, x_ptr, n):\n    pass\n", "kernel[(1,)](d, x, 3)", Status.PASS),
    ("@jit\ndef kernel(x_ptr, d_ptr, n):\n    pass\n", "kernel[(1,)](x, n=3, d_ptr=d)",
     Status.PASS),
    # the binding in force: a later def replaces the first
    ("def kernel(x_ptr, d_ptr):\n    pass\n\ndef kernel(d_ptr, x_ptr):\n    pass\n",
     "kernel[(1,)](x, d)", Status.FAIL),
    # rebound to something else: which parameters it has is not known
    ("def kernel(x_ptr, d_ptr):\n    pass\n\nkernel = other\n", "kernel[(1,)](x, d)",
     Status.FAIL),
    ("", "kernel[(1,)](x, d)", Status.FAIL),                      # no such function
    # two definitions in branches that disagree on the place: not known
    ("if T:\n    def kernel(x_ptr, d_ptr):\n        pass\nelse:\n"
     "    def kernel(d_ptr, x_ptr):\n        pass\n", "kernel[(1,)](x, d)", Status.FAIL),
    ("if T:\n    def kernel(x_ptr, d_ptr):\n        pass\nelse:\n"
     "    def kernel(y_ptr, d_ptr):\n        pass\n", "kernel[(1,)](x, d)", Status.PASS),
])
def test_of_a_dotted_name_reads_the_definition_in_force(
        make_files: MakeFiles, kernel: str, launch: str, status: Status) -> None:
    code = kernel + f"\n\ndef caller(x, d, n):\n    {launch}\n"
    c = one(make_files, BY_NAME, code)
    assert c.status is status, c.message
    if status is Status.FAIL:
        assert "its place in `kernel`" in c.message, c.message


def test_of_a_method_by_its_dotted_name(make_files: MakeFiles) -> None:
    rule = """\
        file: pkg/mod.py
        in: C.caller
        pattern: self.callee($$$ARGS)
        where:
          ARGS: {argument: {name: d, of: C.callee, is: d}}
    """
    code = klass("self, x, d", "x, d")
    holds_until(make_files, rule, code, "self.callee(x, d)", "self.callee(d, x)")
    moved = klass("self, d, x", "d, x")
    assert one(make_files, rule, moved).status is Status.PASS


def test_parameter_pins_a_definitions_place(make_files: MakeFiles) -> None:
    rule = """\
        file: pkg/mod.py
        pattern: $DEF
        where:
          DEF: {regex: "^def\\\\s+callee\\\\b", parameter: {name: d, at: 1}}
    """
    assert one(make_files, rule, "def callee(x, d, e):\n    pass\n").status is Status.PASS
    assert one(make_files, rule, "@dec\ndef callee(x, d):\n    pass\n").status is Status.PASS
    for moved in ("def callee(d, x):\n    pass\n", "def callee(x, *, d):\n    pass\n",
                  "def callee(x, *d):\n    pass\n", "def callee(x):\n    pass\n"):
        c = one(make_files, rule, moved)
        assert c.status is Status.FAIL, moved
        assert "its positional parameter 1 is `d`" in c.message, c.message


@pytest.mark.parametrize(("where", "message"), [
    ("{argument: {at: 1, is: d}}", "'argument' needs 'name'"),
    ("{argument: {name: d, at: -1}}", "'at' is a position counted from 0"),
    ("{argument: {name: d, at: true}}", "'at' is a position counted from 0, not a boolean"),
    ("{argument: {name: 3, at: 1}}", "3 is read as a number, not as text"),
    ("{not: {argument: {name: 3, at: 1}}}", "3 is read as a number, not as text"),
    ("{argument: {name: class, at: 1}}", "not 'class'"),
    ("{argument: {name: d, of: self.callee}}", "its class, not 'self'"),
    ("{argument: {name: d, at: -2}}", "counted from 0 (the first), not -2"),
    ("{argument: {name: 'a b', at: 1}}", "'name' is a parameter's name (a Python identifier), "
     "not 'a b'"),
    ("{argument: {name: d, at: 1, of: F}}", "from 'at' or from 'of', not both"),
    ("{argument: {name: d, of: F}}", "'of' names the called definition: a single "
     "metavariable ($DEF) bound"),
    ("{argument: {name: d, of: 'a-b'}}", "or its dotted name in the file"),
    ("{argument: {name: d, of: 3}}", "'of' names the called definition"),
    ("{argument: {name: d, of: ARGS}}", "bound here: none"),
    ("{argument: {name: d, at: 1, iss: d}}", "did you mean"),
    ("{argument: [d]}", "is not of type 'object'"),
    ("{any: [{argument: [d]}]}", "'argument' is a mapping"),
    ("{parameter: {name: d}}", "'parameter' is a mapping of name"),
    ("{parameter: {name: d, at: 1, of: X}}", "a parameter has"),
])
def test_a_bad_argument_is_refused_at_its_line_and_column(where: str, message: str) -> None:
    text = manifest_text(f"""\
        r:
          file: pkg/mod.py
          pattern: g($$$ARGS)
          where:
            ARGS: {where}
    """)
    with pytest.raises(ManifestError) as e:
        parse(text, "m.yaml")
    assert message in str(e.value), str(e.value)
    assert "m.yaml:9:" in str(e.value) or "m.yaml:8:" in str(e.value), str(e.value)


# --- found by review (session 19): each failed before its fix ------------------------


def test_a_keyword_does_not_bind_a_positional_only_parameter(make_files: MakeFiles) -> None:
    """``def callee(self, x, d=None, /, **kw)``: ``self.callee(x, d=d)`` leaves ``d`` None
    and puts the value in ``kw``."""
    code = klass("self, x, d=None, /, **kw", "x, d=d")
    c = one(make_files, OF, code)
    assert c.status is Status.FAIL, c.message
    assert one(make_files, OF, klass("self, x, d=None, /, **kw", "x, d")).status is Status.PASS


def test_parameter_refuses_a_positional_only_place(make_files: MakeFiles) -> None:
    rule = """\
        file: pkg/mod.py
        pattern: $DEF
        where:
          DEF: {regex: "^def\\\\s+callee\\\\b", parameter: {name: d, at: 1}}
    """
    c = one(make_files, rule, "def callee(x, d, /):\n    pass\n")
    assert c.status is Status.FAIL, c.message
    assert one(make_files, rule, "def callee(x, /, d):\n    pass\n").status is Status.PASS


@pytest.mark.parametrize(("call", "status"), [
    ("g(\\\n  d, x)", Status.FAIL),          # a backslash continuation is not an argument
    ("g(x, \\\n  d)", Status.PASS),
])
def test_a_line_continuation_is_not_an_argument(make_files: MakeFiles, call: str,
                                                status: Status) -> None:
    c = one(make_files, AT, body(call + "\n"))
    assert c.status is status, c.message


@pytest.mark.parametrize(("call", "status"), [
    ("C.callee(self, x, d)", Status.PASS),   # through the class: self is passed
    ("C.callee(self, d, x)", Status.FAIL),
    ("self.callee(x, d)", Status.PASS),
    ("super().callee(x, d)", Status.PASS),
])
def test_a_method_called_through_its_class_passes_self_itself(
        make_files: MakeFiles, call: str, status: Status) -> None:
    rule = OF.replace("self.callee($$$ARGS)", "$CALLEE($$$ARGS)").replace(
        "          ARGS: {argument", "          CALLEE: {regex: \"callee$\"}\n          ARGS: {argument")
    code = klass("self, x, d", "x, d").replace("self.callee(x, d)", call)
    c = one(make_files, rule, code)
    assert c.status is status, c.message


@pytest.mark.parametrize(("decorator", "call", "status"), [
    ("@staticmethod  # noqa", "C.callee(x, d)", Status.PASS),
    ("@staticmethod  # noqa", "C.callee(d, x)", Status.FAIL),
    ("@builtins.staticmethod", "C.callee(x, d)", Status.PASS),
    ("@classmethod  # why", "C.callee(x, d)", Status.PASS),
])
def test_a_decorator_is_read_as_code_not_as_its_text(
        make_files: MakeFiles, decorator: str, call: str, status: Status) -> None:
    rule = OF.replace("self.callee($$$ARGS)", "C.callee($$$ARGS)")
    params = "cls, x, d" if "classmethod" in decorator else "x, d"
    code = klass(params, "x, d", decorator).replace("self.callee(x, d)", call)
    c = one(make_files, rule, code)
    assert c.status is status, c.message


@pytest.mark.parametrize(("args", "status"), [("cls, x, d", Status.PASS),
                                              ("cls, d, x", Status.FAIL)])
def test_dunder_new_is_static_its_cls_is_passed(make_files: MakeFiles, args: str,
                                                status: Status) -> None:
    rule = OF.replace("callee", "__new__").replace("self.__new__($$$ARGS)",
                                                  "super().__new__($$$ARGS)")
    code = ("class C:\n    def __new__(cls, x, d):\n        pass\n\n"
            f"    def caller(self, x, d):\n        super().__new__({args})\n")
    c = one(make_files, rule, code)
    assert c.status is status, c.message


def test_a_splat_outside_the_capture_still_hides_the_place(make_files: MakeFiles) -> None:
    rule = """\
        file: pkg/mod.py
        in: f
        pattern: g($$$ARGS)
        not:
          pattern: g($HEAD, $$$REST)
          where:
            REST: {argument: {name: d, at: 1, is: None}}
    """
    c = one(make_files, rule, body("g(*xs, None)\n"))   # with xs == [x], None binds d
    assert c.status is Status.FAIL, c.message
    assert one(make_files, rule, body("g(x, d, None)\n")).status is Status.PASS


def test_a_single_capture_in_an_argument_list_is_asked_about_its_own_arguments(
        make_files: MakeFiles) -> None:
    rule = """\
        file: pkg/mod.py
        in: f
        pattern: run($X)
        where:
          X: {argument: {name: p, at: 0}}
    """
    assert one(make_files, rule, body("run(h())\n")).status is Status.FAIL
    assert one(make_files, rule, body("run(h(x))\n")).status is Status.PASS


@pytest.mark.parametrize(("code", "status"), [
    ("y = sum(v for v in d)\n", Status.PASS),   # a bare generator is the first argument
    ("y = sum()\n", Status.FAIL),
])
def test_a_bare_generator_argument_is_read(make_files: MakeFiles, code: str,
                                           status: Status) -> None:
    rule = """\
        file: pkg/mod.py
        in: f
        pattern: y = $X
        where:
          X: {argument: {name: p, at: 0}}
    """
    c = one(make_files, rule, body(code))
    assert c.status is status, c.message


def test_a_bare_generator_is_forbidden_as_any_other_argument(make_files: MakeFiles) -> None:
    rule = """\
        file: pkg/mod.py
        in: f
        pattern: y = $CALL
        not:
          pattern: y = $BAD
          where:
            BAD: {argument: {name: d, at: 0}}
    """
    assert one(make_files, rule, body("y = g(v for v in xs)\n")).status is Status.FAIL
    assert one(make_files, rule, body("y = g([v for v in xs])\n")).status is Status.FAIL
    assert one(make_files, rule, body("y = g()\n")).status is Status.PASS


def test_a_callee_not_found_says_why(make_files: MakeFiles) -> None:
    rule = BY_NAME.replace("of: kernel", "of: kernal")
    c = one(make_files, rule, "def kernel(x_ptr, d_ptr):\n    pass\n\n\n"
            "def caller(x, d, n):\n    kernel[(1,)](x, d)\n")
    assert c.status is Status.FAIL
    assert "where it binds `d_ptr` is not known: `kernal` (no class or function 'kernal'" \
        in c.message, c.message
