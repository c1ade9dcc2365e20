"""`grad` of a function of one Python float by forward mode (transform/forward_grad.py):
the same gradient as the reverse program on np.float64 and as finite differences, on the
program corpora and the rule table; and the reverse program wherever the two modes could
differ (arrays, writes into objects, the user's rules)."""
import math
import subprocess
import sys

import numpy as np
import pytest

import srcad
from srcad.compiler import cache
from srcad.bench.workloads import newton_sqrt
from srcad.ops import registry
from srcad.api.testing import numerical_gradient
from srcad.compiler.transform.forward_grad import NotForwardable
from tests.checks import corpus_cases, load_function
from tests.ops.test_rules import CASES, make_args


def _program(fn, wrt: int, args=()):
    """The forward program `grad(fn, wrt)(*args)` runs: specialised on the float `args`."""
    names = fn.__code__.co_varnames
    numbers = {names[wrt], *(names[i] for i, a in enumerate(args) if type(a) is float)}
    return cache.compiled_adjoint(fn, (names[wrt],), mode="forward-grad",
                                  scalars=frozenset(numbers))


def _by_forward_mode(fn, wrt: int, args=()) -> bool:
    try:
        return _program(fn, wrt, args).by_forward_mode
    except NotForwardable:
        return False


def _assert_floats_match_reverse_mode(fn, args, wrt):
    fast = srcad.grad(fn, wrt=wrt)(*args)
    general = srcad.grad(fn, wrt=wrt)(*(np.float64(a) if i == wrt else a
                                         for i, a in enumerate(args)))
    assert type(fast) is float
    np.testing.assert_allclose(fast, general, rtol=1e-12, atol=1e-300)


ONE_FLOAT = [case for case in corpus_cases()
             if isinstance(case.values[2], int) and type(case.values[1][case.values[2]]) is float]


@pytest.mark.parametrize("fn, args, wrt", ONE_FLOAT)
def test_corpus_gradients_on_floats_match_reverse_mode(fn, args, wrt):
    _assert_floats_match_reverse_mode(fn, args, wrt)


def test_most_of_the_corpus_on_floats_runs_forward_mode():
    forward = {fn.__name__ for fn, args, wrt in (case.values for case in ONE_FLOAT)
               if _by_forward_mode(fn, wrt, args)}
    assert {"newton_sqrt", "bisection_sqrt", "fixed_point_cos", "while_else", "early_return",
            "return_inside_while", "strided_range", "long_elif_chain"} <= forward
    assert len(forward) >= 15


def _scalar_rule_cases():
    for case in CASES:
        if isinstance(case.wrt, int) and case.args[case.wrt][1] is None and not case.bug:
            args = make_args(case.args, np.float64)
            output = case.fn(*args)
            if np.ndim(output) == 0 and not np.iscomplexobj(output) \
                    and not np.iscomplexobj(args[case.wrt]):
                yield pytest.param(case.fn, args, case.wrt,
                                   id=f"{case.fn.__name__}:L{case.fn.__code__.co_firstlineno}")


SCALAR_RULE_CASES = list(_scalar_rule_cases())


@pytest.mark.parametrize("fn, args, wrt", SCALAR_RULE_CASES)
def test_rule_table_on_floats(fn, args, wrt):
    _assert_floats_match_reverse_mode(fn, args, wrt)
    np.testing.assert_allclose(srcad.grad(fn, wrt=wrt)(*args),
                               numerical_gradient(fn, args, wrt), rtol=1e-5, atol=1e-7)


def test_every_ufunc_and_math_rule_on_floats_runs_forward_mode():
    """(np.cbrt aside: tests/api/test_api.py registers a rule of its own for it; and the math
    functions of sequences, whose lists are not numbers.)"""
    for case in CASES:
        if all(shape is None for _, shape in case.args) and isinstance(case.wrt, int) \
                and not case.bug and case.primal not in (np.cbrt, math.fsum, math.prod,
                                                         math.dist) \
                and (isinstance(case.primal, np.ufunc)
                     or getattr(case.primal, "__module__", "") == "math"):
            args = make_args(case.args, np.float64)
            if type(args[case.wrt]) is float:  # (grad's fast path is for floats alone)
                assert _by_forward_mode(case.fn, case.wrt, args), case


def test_a_while_loop_gets_a_tape_free_program():
    f = newton_sqrt  # (the benchmark's `while` workload)
    program = _program(f, 0)
    assert "t_a = 1.0" in program.source and "stack" not in program.source
    assert srcad.grad(f)(7.3) == pytest.approx(0.5 / np.sqrt(7.3), rel=1e-12)
    value, gradient = srcad.value_and_grad(f)(7.3)
    assert value == pytest.approx(np.sqrt(7.3)) and gradient == srcad.grad(f)(7.3)


DIFFERING = """
def selected(x):
    return np.where(x > 0, np.sqrt(x), 0.0)

def written(x, acc):
    acc[0] = acc[0] + 1.0
    return acc[0] * x

def helper(x):
    return x ** 3

def helped(x):
    return helper(x) * 2.0

def branch_to_zero(x):
    y = 0.0
    if x > 5.0:
        y = x
    return np.sqrt(y) + x
"""


def test_where_the_modes_could_differ_floats_take_reverse_mode(tmp_path):
    """An unselected element with a nan partial: nan in reverse mode (as on arrays), where
    forward mode would drop it; a write into an argument, which reverse mode undoes; a
    helper, whose rules the user may register."""
    selected = load_function(DIFFERING, tmp_path, "differing", "selected")
    namespace = selected.__globals__
    for name in ("selected", "written", "helped"):
        assert not _by_forward_mode(namespace[name], 0)
    with np.errstate(invalid="ignore"):
        assert math.isnan(srcad.grad(selected)(-1.0))
    acc = np.zeros(1)
    assert [srcad.grad(namespace["written"])(0.5, acc) for _ in range(3)] == [1.0] * 3
    assert acc[0] == 0.0
    assert srcad.grad(namespace["helped"])(2.0) == pytest.approx(24.0)


def test_a_zero_tangent_meets_no_infinite_partial(tmp_path):
    """`y = 0.0` on the branch not taken: y's tangent is None, not 0.0 (0.0 * inf is nan)."""
    f = load_function(DIFFERING, tmp_path, "branch", "branch_to_zero")
    assert _by_forward_mode(f, 0)
    with np.errstate(divide="ignore"):
        assert srcad.grad(f)(2.0) == 1.0


@pytest.fixture
def users_erf_rule():
    """A straight-through VJP for math.erf, as a user would register it, undone after."""
    op = registry.op_of(math.erf)
    saved = op.vjp, op.jvp, op.owner
    srcad.defvjp(math.erf, lambda g, ans, x: g)
    yield
    op.vjp, op.jvp, op.owner = saved


ERF = """
import math

def f(x):
    return math.erf(x) * 2.0
"""


def test_a_users_rule_keeps_reverse_mode(tmp_path, users_erf_rule):
    f = load_function(ERF, tmp_path, "erf")
    with pytest.raises(NotForwardable):
        _program(f, 0)
    assert srcad.grad(f)(0.5) == 2.0  # the user's VJP, not erf's derivative


def test_srcads_own_rules_are_not_the_users():
    script = ("import scipy.special, srcad\n"
              "from srcad.ops import registry\n"
              "registry._load_scipy_rules_for(scipy.special.gamma)\n"
              "print(sum(op.owner == 'user' for op in registry.records()),\n"
              "      registry.vjp_rules(scipy.special.gamma) is None,\n"
              "      registry.op_of(scipy.special.gamma).owner)")
    ran = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True)
    assert ran.stdout.split() == ["0", "False", "scipy"]


def test_outputs_are_checked_as_grad_checks_them(tmp_path):
    source = """
def vector(x):
    return np.array([x, 2.0 * x])

def one_element(x):
    return np.array([x * x])

def listed(x):
    return [x, x]

def unrelated(x):
    return 3.0
"""
    vector = load_function(source, tmp_path, "outputs", "vector")
    namespace = vector.__globals__
    with pytest.raises(srcad.errors.NonScalarOutputError):
        srcad.grad(vector)(1.0)
    with pytest.raises(srcad.errors.NonScalarOutputError):
        srcad.grad(namespace["listed"])(1.0)
    assert srcad.grad(namespace["one_element"])(3.0) == 6.0
    assert srcad.grad(namespace["unrelated"])(1.0) == 0.0


def test_show_prints_the_program_floats_run(tmp_path, capsys):
    srcad.show(newton_sqrt, mode="floats")
    assert "t_a = 1.0" in capsys.readouterr().out
    srcad.show(load_function(DIFFERING, tmp_path, "shown", "helped"), mode="floats")
    shown = capsys.readouterr().out
    assert "t_x" not in shown and "b_x" in shown  # (reverse mode, fused)


HUGE = """
def factorial_plus_nothing(x):
    y = np.sin(x)
    n = 1
    for i in range(1, 200):
        n = n * i
    return n

def positional_only(x, c, /):
    return x * c + np.sin(c * x)
"""


def test_an_int_too_large_for_a_float_is_no_crash(tmp_path):
    """The optimistic program's finiteness check cannot add 199! to a float: the general
    program answers."""
    f = load_function(HUGE, tmp_path, "huge", "factorial_plus_nothing")
    assert srcad.grad(f)(-1.0) == 0.0
    assert srcad.value_and_grad(f)(-1.0) == (math.factorial(199), 0.0)


def test_positional_only_parameters(tmp_path):
    f = load_function(HUGE, tmp_path, "positional", "positional_only")
    assert _by_forward_mode(f, 1, (0.5, 1.5))
    expected = 0.5 + 0.5 * math.cos(0.75)
    assert srcad.grad(f, wrt=1)(0.5, 1.5) == pytest.approx(expected, rel=1e-14)
    _, tangent = srcad.jvp(f, (0.5, 1.5), (0.0, 1.0))
    assert tangent == pytest.approx(expected, rel=1e-14)
