"""Random programs with loops and branches, differentiated and checked against finite differences.

A hypothesis strategy writes the source text of `def f(x, y):` over scalar floats: assignments
and augmented assignments of arithmetic, `np.sin`, `np.tanh`, `np.cos` and bounded `np.exp`,
conditional expressions, `if`/`elif`/`else` with `and`/`or`/`not` conditions, `for` over
`range(k)` (k = 0 included), `while` loops with a data-dependent condition and a counter
bound, `break`/`continue` under conditions and early `return`s. The text goes to a file,
is imported as a module, and `srcad.grad(f, wrt=(0, 1))` is compared with central
finite differences.

Finite differences are unreliable within a step of a branch switch or of a change in trip
count; such examples are skipped by requiring central differences at three step sizes
(1e-6, 1e-5, 1e-4) and the forward and backward differences to agree. Examples that
overflow are skipped as well, and so is the one refusal srcad still makes on sound
programs of this language (see check_program).
"""
import importlib.util
import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, event, given, note, settings
from hypothesis import strategies as st

import srcad

LOCALS = ("a", "b", "c")  # defined at the top of every program, so any block may assign them
INDENT = "    "


# ---- the program generator ---------------------------------------------------------------------
class _Context:
    """What a block being generated may use: names to read, whether it is inside a loop."""

    def __init__(self, readable, in_loop=False, depth=0):
        self.readable = tuple(readable)
        self.in_loop = in_loop
        self.depth = depth

    def nested(self, extra=(), in_loop=None):
        return _Context(self.readable + tuple(extra),
                        self.in_loop if in_loop is None else in_loop, self.depth + 1)


_constants = st.sampled_from(["0.5", "1.5", "-0.7", "2.0", "0.3", "-1.2"])


@st.composite
def expressions(draw, context, depth=2):
    """A scalar expression whose value stays bounded for bounded inputs (no log, no sqrt,
    exp only of a bounded argument, division only by 1 + e*e)."""
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        if draw(st.booleans()) or not context.readable:
            return draw(st.sampled_from(("x", "y") + LOCALS))
        name = draw(st.sampled_from(context.readable))  # a loop index, an int
        return f"({name} * 0.25)"
    kind = draw(st.sampled_from(["add", "sub", "mul", "scale", "div", "sin", "cos", "tanh",
                                 "exp", "gauss", "ifexp", "neg"]))
    sub = expressions(context, depth - 1)
    if kind == "add":
        return f"({draw(sub)} + {draw(sub)})"
    if kind == "sub":
        return f"({draw(sub)} - {draw(sub)})"
    if kind == "mul":
        return f"({draw(sub)} * {draw(sub)})"
    if kind == "scale":
        return f"({draw(_constants)} * {draw(sub)})"
    if kind == "div":
        e = draw(sub)
        return f"({draw(sub)} / (1.0 + {e} * {e}))"
    if kind in ("sin", "cos", "tanh"):
        return f"np.{kind}({draw(sub)})"
    if kind == "exp":
        return f"np.exp(np.{draw(st.sampled_from(['sin', 'tanh']))}({draw(sub)}))"
    if kind == "gauss":
        e = draw(sub)
        return f"np.exp(-({e}) * ({e}))"
    if kind == "ifexp":
        test = draw(conditions(context, 0, depth - 1))
        return f"({fresh(draw(sub))} if {test} else {fresh(draw(sub))})"
    return f"(-{draw(sub)})"


def fresh(expression):
    """`expression`, made a new value if it could be an existing one (a bare name or a
    conditional expression). srcad must assume that a name bound to another name's value
    shares its memory, and then refuses `name += ...` where the other name is read later
    (rightly, for arrays); generated programs stay out of that refusal."""
    if expression.isidentifier() or " if " in expression:
        return f"(1.0 * {expression})"
    return expression


@st.composite
def conditions(draw, context, depth=1, expression_depth=1):
    """A comparison of expressions `expression_depth` deep, or up to `depth` levels of
    `not`/`and`/`or` over comparisons."""
    kind = draw(st.sampled_from(["gt", "lt", "cmp", "not", "and", "or"] if depth else
                                ["gt", "lt", "cmp"]))
    operand = expressions(context, expression_depth)
    if kind in ("gt", "lt"):
        op = ">" if kind == "gt" else "<"
        return f"{draw(operand)} {op} {draw(_constants)}"
    if kind == "cmp":
        return f"{draw(operand)} < {draw(operand)}"
    if kind == "not":
        return f"not ({draw(conditions(context, depth - 1, expression_depth))})"
    left = draw(conditions(context, depth - 1, expression_depth))
    right = draw(conditions(context, depth - 1, expression_depth))
    return f"({left}) {kind} ({right})"


@st.composite
def blocks(draw, context, counter, size=(1, 3)):
    """A list of source lines (already indented relative to the block)."""
    lines = []
    for _ in range(draw(st.integers(*size))):
        lines += draw(statements(context, counter))
    return lines


def _indent(lines):
    return [INDENT + line for line in lines]


@st.composite
def statements(draw, context, counter):
    kinds = ["assign", "assign", "augassign"]
    if context.depth < 2:
        kinds += ["if", "if", "for", "while"]
    if context.in_loop:
        kinds += ["break", "continue"]
    kinds += ["return"]
    kind = draw(st.sampled_from(kinds))
    target = draw(st.sampled_from(LOCALS + ("x", "y")))
    if kind == "assign":
        return [f"{target} = {fresh(draw(expressions(context)))}"]
    if kind == "augassign":
        op = draw(st.sampled_from(["+=", "-=", "*="]))
        value = fresh(draw(expressions(context, 1)))
        if op == "*=":  # keep repeated products in loops bounded
            value = f"np.tanh({value})"
        return [f"{target} {op} {value}"]
    if kind in ("break", "continue", "return"):
        exit_line = f"return {draw(expressions(context))}" if kind == "return" else kind
        return [f"if {draw(conditions(context))}:", INDENT + exit_line]
    if kind == "if":
        lines = [f"if {draw(conditions(context))}:"]
        lines += _indent(draw(blocks(context.nested(), counter)))
        if draw(st.booleans()):
            lines.append(f"elif {draw(conditions(context))}:")
            lines += _indent(draw(blocks(context.nested(), counter)))
        if draw(st.booleans()):
            lines.append("else:")
            lines += _indent(draw(blocks(context.nested(), counter)))
        return lines
    number = next(counter)
    if kind == "for":
        index = f"i{number}"
        start, stop = draw(st.integers(0, 1)), draw(st.integers(0, 4))
        header = f"for {index} in range({stop}):" if start == 0 else \
            f"for {index} in range({start}, {stop}):"
        body = draw(blocks(context.nested([index], in_loop=True), counter))
        return [header] + _indent(body)
    count = f"n{number}"  # while: a data-dependent condition and a bound on the trips
    bound = draw(st.integers(1, 4))
    body = [f"{count} = {count} + 1"] + draw(blocks(context.nested(in_loop=True), counter))
    return [f"{count} = 0", f"while {count} < {bound} and ({draw(conditions(context))}):"] \
        + _indent(body)


@st.composite
def programs(draw):
    counter = itertools.count()
    context = _Context(())
    lines = ["import numpy as np", "", "", "def f(x, y):",
             INDENT + "a = x + 0.3 * y", INDENT + "b = np.sin(y) - 0.5 * x", INDENT + "c = 0.5"]
    lines += _indent(draw(blocks(context, counter, size=(1, 4))))
    lines += _indent([f"return {draw(expressions(context))}"])
    return "\n".join(lines) + "\n"


# ---- loading and checking --------------------------------------------------------------------
@pytest.fixture(scope="module")
def program_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("generated_programs")


_loaded = itertools.count()


def load_function(directory, source, name="f"):
    """Write `source` to a new file in `directory`, import it as a module, return `name`."""
    number = next(_loaded)
    path = directory / f"generated_{number}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"generated_{number}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)


def at_offset(f, x, y, position, t):
    return f(x + t, y) if position == 0 else f(x, y + t)


def central_difference(f, x, y, position, eps):
    return (at_offset(f, x, y, position, eps) - at_offset(f, x, y, position, -eps)) / (2 * eps)


def reliable_finite_differences(f, x, y):
    """Finite differences of f in x and y, or None where they cannot be trusted: overflow,
    or the function is close to a branch switch or a change of trip count, which shows as
    disagreement between step sizes."""
    with np.errstate(all="ignore"):
        value = f(x, y)
        if not (np.isfinite(value) and abs(value) < 1e6):
            return None
        estimates = []
        for position in (0, 1):
            fine, medium, coarse = (central_difference(f, x, y, position, eps)
                                    for eps in (1e-6, 1e-5, 1e-4))
            if not all(np.isfinite(d) and abs(d) < 1e6 for d in (fine, medium, coarse)):
                return None
            scale = 1.0 + abs(fine)
            if abs(fine - medium) > 1e-4 * scale or abs(fine - coarse) > 1e-3 * scale:
                return None
            # a kink exactly at the point (piecewise-linear code) fools central differences
            # at every step size; one-sided differences disagree there
            forward = (at_offset(f, x, y, position, 1e-5) - value) / 1e-5
            backward = (value - at_offset(f, x, y, position, -1e-5)) / 1e-5
            if abs(forward - backward) > 1e-3 * scale:
                return None
            estimates.append(fine)
    return estimates


def check_program(directory, source, x, y):
    note(source)
    note(f"x = {x!r}, y = {y!r}")
    f = load_function(directory, source)
    expected = reliable_finite_differences(f, x, y)
    if expected is None:
        event("skipped: finite differences unreliable or overflow")
    assume(expected is not None)
    with np.errstate(all="ignore"):
        value, gradient = srcad.value_and_grad(f, wrt=(0, 1))(x, y)
    np.testing.assert_allclose(value, f(x, y), rtol=1e-12, atol=1e-12)
    for got, want in zip(gradient, expected):
        assert math.isfinite(got)
        assert abs(got - want) <= 1e-5 * (1.0 + abs(want)), (gradient, expected)


# Round numbers, but off the constants that the conditions compare with and off each other
# (x == y is a kink of `x < y`).
_x = st.floats(-2.0, 2.0, allow_nan=False).map(lambda v: round(v, 3) + 1.234e-4)
_y = st.floats(-2.0, 2.0, allow_nan=False).map(lambda v: round(v, 3) - 2.345e-4)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                 HealthCheck.function_scoped_fixture])
@given(source=programs(), x=_x, y=_y)
def test_generated_program_gradient_matches_finite_differences(program_dir, source, x, y):
    check_program(program_dir, source, x, y)


# ---- the generator itself, and fixed programs in its language -------------------------------
@settings(max_examples=30, deadline=None)
@given(source=programs())
def test_generated_source_compiles_and_runs(source):
    namespace = {}
    exec(compile(source, "<generated>", "exec"), namespace)
    with np.errstate(all="ignore"):
        namespace["f"](0.4, -0.9)


FIXED_PROGRAMS = [
    # every construct at once: for, while with counter, break, continue, early return, elif
    """import numpy as np


def f(x, y):
    a = x + 0.3 * y
    b = np.sin(y) - 0.5 * x
    c = 0.5
    for i0 in range(3):
        if a > 1.5:
            break
        a = a + np.tanh(b) * (i0 * 0.25)
        if b < -0.7:
            continue
        b = b * np.cos(a)
    n1 = 0
    while n1 < 4 and c < 2.0:
        n1 = n1 + 1
        c = c + np.exp(np.sin(x * y))
        if c > 1.5 and not (a > 2.0):
            return c * a - b
    return a * b + c
""",
    # a zero-trip loop next to an augmented assignment in a branch
    """import numpy as np


def f(x, y):
    a = x + 0.3 * y
    b = np.sin(y) - 0.5 * x
    c = 0.5
    for i0 in range(1, 1):
        a = a * 5.0
    if (x < y) or (a > 0.3):
        b += a * y
    else:
        b *= np.tanh(x)
    return (b if b > 0.5 else -b) + a
""",
]


@pytest.mark.parametrize("source", FIXED_PROGRAMS, ids=["all-constructs", "zero-trip"])
@pytest.mark.parametrize("x, y", [(0.4, -0.9), (1.3, 0.2), (-1.1, 1.7), (0.9, 0.8)])
def test_fixed_program(program_dir, source, x, y):
    f = load_function(program_dir, source)
    expected = reliable_finite_differences(f, x, y)
    assert expected is not None, "inputs too close to a branch switch; choose others"
    gradient = srcad.grad(f, wrt=(0, 1))(x, y)
    np.testing.assert_allclose(gradient, expected, rtol=1e-5, atol=1e-6)


KINK = """import numpy as np


def f(x, y):
    if x < y:
        return x
    return 0.3 * y
"""

JUMP = """import numpy as np


def f(x, y):
    n = 0
    while n < 5 and x > 0.2 * n:
        n = n + 1
        y = y + 1.0
    return x * y
"""


def test_unreliable_finite_differences_are_recognised(program_dir):
    kink = load_function(program_dir, KINK)
    assert reliable_finite_differences(kink, 0.5, 0.5) is None      # piecewise linear kink
    np.testing.assert_allclose(reliable_finite_differences(kink, 0.2, 0.5), [1.0, 0.0],
                               atol=1e-8)
    jump = load_function(program_dir, JUMP)
    assert reliable_finite_differences(jump, 0.4 + 3e-6, 1.0) is None  # trip count changes
    assert reliable_finite_differences(jump, 0.4 + 5e-5, 1.0) is None  # within the coarse step
    np.testing.assert_allclose(reliable_finite_differences(jump, 0.5, 1.0), [4.0, 0.5],
                               rtol=1e-6)
    np.testing.assert_allclose(srcad.grad(jump, wrt=(0, 1))(0.5, 1.0), [4.0, 0.5])
