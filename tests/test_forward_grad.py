"""`grad` of a function of one Python float by forward mode (transform/forward_grad.py):
the same gradient as the reverse program on np.float64 and as finite differences, on the
program corpora and the rule table; and the reverse program wherever a VJP the user
registered would be bypassed."""
import numpy as np
import pytest

import srcad
from srcad import cache
from srcad.rules import registry
from srcad.testing import numerical_gradient
from tests.checks import corpus_cases, load_function
from tests.test_rules import CASES, make_args


@pytest.fixture
def no_custom_vjps():
    """No VJP registered without its JVP while the test runs (other tests register some,
    and a program whose callees are found as it runs then takes reverse mode)."""
    saved = set(registry.vjps_without_jvps)
    registry.vjps_without_jvps.clear()
    yield
    registry.vjps_without_jvps.update(saved)


def _program(fn, wrt: int):
    name = fn.__code__.co_varnames[wrt]
    return cache.compiled_adjoint(fn, (name,), mode="forward-grad", scalars=frozenset({name}))


def _assert_forward_matches_reverse(fn, args, wrt):
    fast = srcad.grad(fn, wrt=wrt)(*args)
    general = srcad.grad(fn, wrt=wrt)(*(np.float64(a) if i == wrt else a
                                         for i, a in enumerate(args)))
    assert type(fast) is float
    np.testing.assert_allclose(fast, general, rtol=1e-12, atol=1e-300)


def _one_float_cases():
    for case in corpus_cases():
        fn, args, wrt = case.values
        if isinstance(wrt, int) and type(args[wrt]) is float:
            yield case


@pytest.mark.parametrize("fn, args, wrt", list(_one_float_cases()))
def test_corpus_gradients_by_forward_mode_match_reverse_mode(fn, args, wrt, no_custom_vjps):
    assert _program(fn, wrt).by_forward_mode
    _assert_forward_matches_reverse(fn, args, wrt)


def _scalar_rule_cases():
    for case in CASES:
        if isinstance(case.wrt, int) and case.args[case.wrt][1] is None and not case.bug:
            args = make_args(case.args, np.float64)
            output = case.fn(*args)
            if np.ndim(output) == 0 and not np.iscomplexobj(output) \
                    and not np.iscomplexobj(args[case.wrt]):
                yield pytest.param(case.fn, args, case.wrt,
                                   id=f"{case.fn.__name__}:L{case.fn.__code__.co_firstlineno}")


@pytest.mark.parametrize("fn, args, wrt", list(_scalar_rule_cases()))
def test_rule_table_on_floats_by_forward_mode(fn, args, wrt, no_custom_vjps):
    assert _program(fn, wrt).by_forward_mode
    _assert_forward_matches_reverse(fn, args, wrt)
    np.testing.assert_allclose(srcad.grad(fn, wrt=wrt)(*args),
                               numerical_gradient(fn, args, wrt), rtol=1e-5, atol=1e-7)


NEWTON = """
def f(a):
    x = a
    while abs(x * x - a) > 1e-12 * a:
        x = 0.5 * (x + a / x)
    return x
"""


def test_a_while_loop_gets_a_tape_free_program(tmp_path, no_custom_vjps):
    f = load_function(NEWTON, tmp_path, "newton")
    program = _program(f, 0)
    assert "t_a = 1.0" in program.source and "stack" not in program.source
    assert srcad.grad(f)(7.3) == pytest.approx(0.5 / np.sqrt(7.3), rel=1e-12)
    value, gradient = srcad.value_and_grad(f)(7.3)
    assert value == pytest.approx(np.sqrt(7.3)) and gradient == srcad.grad(f)(7.3)


CUSTOM = """
def clipped(x):
    return x ** 3

def f(x):
    return clipped(x) + np.sin(x)
"""


def test_a_vjp_registered_alone_keeps_reverse_mode(tmp_path, no_custom_vjps):
    """A user's VJP (here a straight-through gradient) is followed on floats too."""
    f = load_function(CUSTOM, tmp_path, "custom")
    clipped = f.__globals__["clipped"]
    srcad.defvjp(clipped, lambda g, ans, x: g)
    assert srcad.grad(f)(0.5) == pytest.approx(1.0 + np.cos(0.5))
    with pytest.raises(srcad.errors.MissingRuleError):
        _program(f, 0)


HELPER = """
def cube(x):
    return x ** 3

def f(x):
    return cube(x) * 2.0
"""


def test_a_vjp_registered_later_for_a_helper_switches_to_reverse_mode(tmp_path,
                                                                        no_custom_vjps):
    """A helper's derivative is found as the program runs: a VJP registered for it after
    the first call is followed from the next one."""
    f = load_function(HELPER, tmp_path, "helper")
    gradient = srcad.grad(f)
    assert gradient(2.0) == pytest.approx(24.0)
    assert _program(f, 0).runtime_callees
    srcad.defvjp(f.__globals__["cube"], lambda g, ans, x: g * 100.0)
    assert gradient(2.0) == pytest.approx(200.0)


def test_outputs_are_checked_as_grad_checks_them(tmp_path, no_custom_vjps):
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
