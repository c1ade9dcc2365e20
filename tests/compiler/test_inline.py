"""Small helpers of the same module called as whole statements are written out in the caller
(frontend/inline.py): the derivatives stay those of finite differences, tape mode and the
program without writing out (srcad.passes.off("inline")), in every mode; helpers that must
keep their call (a rule of their own, a closure, a return in a branch, recursion, a global
the caller shadows, keywords out of order) keep it; rebinding a helper remakes the program;
a written-out program a pass refuses is made again with the call."""
import re

import numpy as np
import pytest

import srcad
from srcad.compiler import cache
from srcad.compiler.pipeline import PASSES, source_after
from tests.checks import assert_gradient_matches_finite_differences


def _rhs(y, p):
    """An ODE's right-hand side filling a buffer, as scipy's solve_ivp users write it."""
    dy = np.zeros(2)
    dy[0] = y[1]
    dy[1] = -p[0] * np.sin(y[0]) - p[1] * y[1]
    return dy


def rk4(p, y):
    h = 0.05
    for _ in range(6):
        k1 = _rhs(y, p)
        k2 = _rhs(y + 0.5 * h * k1, p)
        k3 = _rhs(y + 0.5 * h * k2, p)
        k4 = _rhs(y + h * k3, p)
        y = y + h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
    return y[0] ** 2 + y[1]


def scaled(x, factor=2.0, *, shift=0.5):
    return factor * x + shift


def with_defaults_and_keywords(x, w):
    a = scaled(x)
    b = scaled(x, shift=np.sum(w))
    c = scaled(factor=w[0], x=a)   # keywords out of the parameters' order: kept a call
    return np.sum(a * b + c)


def pair(x):
    return np.sin(x), np.cos(x) * x


def unpacked_and_accumulated(x):
    s, c = pair(x)
    total = np.sum(s)
    total += np.sum(c)
    return total


def returned(x):
    return unpacked_and_accumulated(x * 1.5)   # (written out in turn: pair inside it)


def fill(buffer, x):
    buffer[0] = x[0] * x[1]
    buffer[1] = np.exp(x[1])


def writes_into_a_buffer(x):
    out = np.empty(2)
    fill(out, x)
    return np.sum(out * out)


def branchy(x):
    if np.sum(x) > 0:
        return x * 2.0
    return x * 3.0


def factorial_like(x, n):
    if n == 0:
        return x
    return x * factorial_like(x, n - 1)


def kept_calls(x):
    a = branchy(x)                       # a return in a branch
    b = factorial_like(x, 3)             # recursion
    return np.sum(a + b)


def shadowed_global(x):
    y = helper_reading_scale(x)
    scale = 10.0          # (the caller binds `scale`, which the helper reads as a global)
    return np.sum(y) * scale


scale = 3.0


def helper_reading_scale(x):
    return x * scale


R = np.random.default_rng(3)
CASES = [
    (rk4, (np.array([9.81, 0.3]), np.array([1.0, 0.2])), (0, 1)),
    (with_defaults_and_keywords, (R.standard_normal(3), R.standard_normal(3)), (0, 1)),
    (unpacked_and_accumulated, (R.standard_normal(4),), 0),
    (returned, (R.standard_normal(4),), 0),
    (writes_into_a_buffer, (R.standard_normal(2),), 0),
    (kept_calls, (R.standard_normal(3),), 0),
    (shadowed_global, (R.standard_normal(3),), 0),
]


@pytest.mark.parametrize("fn, args, wrt", CASES, ids=lambda c: getattr(c, "__name__", None))
def test_derivatives_agree_with_finite_differences_tape_mode_and_calls_kept(fn, args, wrt):
    cache.clear_cache()
    assert_gradient_matches_finite_differences(fn, args, wrt)
    got = srcad.grad(fn, wrt=wrt)(*args)
    as_tuple = (lambda v: v if isinstance(wrt, tuple) else (v,))
    ones = tuple(np.ones_like(a) for a in args)
    misses = srcad.cache_info().misses
    with srcad.passes.off("inline"):  # (programs made again: another key in the cache)
        kept = srcad.grad(fn, wrt=wrt)(*args)
        kept_hvp = srcad.hvp(fn, wrt=0)(*args, ones[0])
        kept_tangent = srcad.jvp(fn, args, ones)[1]
    assert srcad.cache_info().misses > misses
    for other in (kept, srcad.value_and_grad(fn, wrt=wrt)(*args)[1],
                  srcad.tape.grad(fn, wrt=wrt)(*args)):
        for a, b in zip(as_tuple(other), as_tuple(got)):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(srcad.hvp(fn, wrt=0)(*args, ones[0]), kept_hvp,
                               rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(srcad.jvp(fn, args, ones)[1], kept_tangent)


def _source(fn, wrt=("p",)):
    return source_after(fn, wrt, "rev", upto=PASSES["rev"][-1].name)


def test_the_right_hand_side_is_written_out_with_its_names_renamed_apart():
    source = _source(rk4)
    assert "call_vjp" not in source
    assert "dy_rhs = filled(" in source and "dy_rhs_3 = filled(" in source
    assert "p_rhs" not in source and not re.search(r"\by_rhs =", source)  # (no copies of
    # the caller's names: an argument that is an expression gets a name, `y_rhs_1`)


def test_calls_that_must_stay_calls_stay():
    source = _source(kept_calls, ("x",))
    assert source.count("call_vjp(") == 2
    source = _source(shadowed_global, ("x",))
    assert "call_vjp(helper_reading_scale" in source
    source = _source(with_defaults_and_keywords, ("x", "w"))
    assert source.count("call_vjp(scaled") == 1


def test_a_helper_with_a_rule_of_its_own_keeps_it():
    def straight_through(x):
        return np.round(x * 4.0) / 4.0

    def uses_rule(x):
        return np.sum(straight_through(x) * x)

    srcad.defvjp(straight_through, lambda g, ans, x: g)
    x = np.array([0.3, 1.2])
    np.testing.assert_allclose(srcad.grad(uses_rule)(x), np.round(x * 4) / 4 + x)


def test_rebinding_a_helper_remakes_the_program():
    global helper_reading_scale
    original = helper_reading_scale

    def caller(x):
        return np.sum(helper_reading_scale(x))

    x = np.array([1.0, 2.0])
    try:
        np.testing.assert_allclose(srcad.grad(caller)(x), [3.0, 3.0])
        helper_reading_scale = lambda x: x * x  # noqa: E731
        np.testing.assert_allclose(srcad.grad(caller)(x), [2.0, 4.0])
    finally:
        helper_reading_scale = original


def fill_table(table):
    table[0][0] = 2.0        # (an element of an element: refused where srcad follows it)
    return table


def uses_a_table(x):
    table = [[0.0]]
    table = fill_table(table)
    return np.sum(x * table[0][0])


def test_a_written_out_helper_the_passes_refuse_is_called_instead():
    """Written out, `table[0][0] = 2.0` is an assignment the caller's fence refuses; the
    call, of a helper that reaches no derivative, runs as written, as before."""
    x = np.array([1.0, -2.0])
    np.testing.assert_allclose(srcad.grad(uses_a_table)(x), [2.0, 2.0])
    with srcad.passes.off("inline"):
        np.testing.assert_allclose(srcad.grad(uses_a_table)(x), [2.0, 2.0])
    assert "call_vjp(fill_table" in _source(uses_a_table, ("x",)) \
        or "fill_table(table)" in _source(uses_a_table, ("x",))


def record(buffer, v):
    buffer[0] = np.sum(v * v)
    return buffer[0] * 2.0, v       # (a value the caller does not read)


def logs_into_a_buffer(x):
    log = np.zeros(1)
    record(log, x)
    return log[0] + np.sum(x)


def test_a_helper_called_for_its_effect_computes_its_unread_value():
    """Found by review: the value a call made for its effect returns was written out as an
    expression statement, which the passes did not expect (a crash)."""
    x = np.array([0.5, -1.0])
    np.testing.assert_allclose(srcad.grad(logs_into_a_buffer)(x), 2.0 * x + 1.0)


def times_m(x, m=2.0):
    return m * x


def calls_times_m(x):
    y = times_m(x)
    return np.sum(y * y)


def test_changing_a_helpers_defaults_or_code_remakes_the_program():
    """Found by review: the default bound as a constant stayed after `__defaults__` changed."""
    x = np.array([1.0, 2.0])
    defaults, code = times_m.__defaults__, times_m.__code__
    try:
        np.testing.assert_allclose(srcad.grad(calls_times_m)(x), 8.0 * x)
        times_m.__defaults__ = (5.0,)
        np.testing.assert_allclose(srcad.grad(calls_times_m)(x), 50.0 * x)
        times_m.__code__ = (lambda x, m=2.0: m * m * x).__code__
        np.testing.assert_allclose(srcad.grad(calls_times_m)(x), 1250.0 * x)
    finally:
        times_m.__defaults__, times_m.__code__ = defaults, code
