"""Straight-line programs: source-mode gradients against finite differences and autograd."""
import types

import numpy as np
import pytest

import srcad
from srcad.compiler import cache
from tests import programs as p
from tests.checks import assert_gradient_matches_finite_differences

R = np.random.default_rng(7)
POSITIVE = R.uniform(0.1, 0.9, (3, 4))

# (function, arguments, wrt)
CASES = [
    (p.logistic_loss, (R.standard_normal(4), 0.3, R.standard_normal((6, 4)),
                       (R.random(6) < 0.5) * 1.0), (0, 1)),
    (p.reassigned, (R.standard_normal(5), R.standard_normal(5)), (0, 1)),
    (p.tuple_targets, (R.standard_normal(3), R.standard_normal(3)), (0, 1)),
    (p.imports_three_ways, (R.standard_normal((2, 3)),), 0),
    (p.mlp, (R.standard_normal((4, 5)), R.standard_normal(5), R.standard_normal(5),
             R.standard_normal((3, 4))), (0, 1, 2)),
    (p.broadcasting, (R.standard_normal((3, 1)), R.standard_normal((1, 4))), (0, 1)),
    (p.broadcasting, (R.standard_normal((3, 4)), R.standard_normal(4)), (0, 1)),
    (p.broadcasting, (1.5, R.standard_normal((2, 3))), (0, 1)),
    (p.reductions, (R.standard_normal((3, 4)),), 0),
    (p.indexing, (R.standard_normal((4, 5)),), 0),
    (p.shapes, (R.standard_normal((3, 4)),), 0),
    (p.elementwise, (POSITIVE,), 0),
    (p.scalar_math, (1.3, 0.7), (0, 1)),
    (p.powers, (POSITIVE, R.uniform(0.5, 2.0, (3, 4))), (0, 1)),
    (p.matmul_shapes, (R.standard_normal((3, 4)), R.standard_normal((4, 2))), (0, 1)),
    (p.matmul_shapes, (R.standard_normal(4), R.standard_normal((4, 2))), (0, 1)),
    (p.matmul_shapes, (R.standard_normal((3, 4)), R.standard_normal(4)), (0, 1)),
    (p.matmul_shapes, (R.standard_normal(4), R.standard_normal(4)), (0, 1)),
    (p.default_argument, (R.standard_normal(3),), 0),
]
IDS = [f"{fn.__name__}-{i}" for i, (fn, _, _) in enumerate(CASES)]


def _as_tuple(wrt):
    return wrt if isinstance(wrt, tuple) else (wrt,)


@pytest.mark.parametrize("fn, args, wrt", CASES, ids=IDS)
def test_gradient_matches_finite_differences(fn, args, wrt):
    assert_gradient_matches_finite_differences(fn, args, wrt)


@pytest.mark.parametrize("fn, args, wrt", CASES, ids=IDS)
def test_gradient_matches_autograd(fn, args, wrt):
    autograd = pytest.importorskip("autograd")
    import autograd.numpy as anp
    namespace = dict(fn.__globals__, np=anp, numpy=anp, exp=anp.exp, tanh=anp.tanh)
    twin = types.FunctionType(fn.__code__, namespace, fn.__name__, fn.__defaults__)
    gradients = srcad.grad(fn, wrt=wrt)(*args)
    for position, gradient in zip(_as_tuple(wrt), _as_tuple(gradients)):
        expected = autograd.grad(twin, position)(*args)
        np.testing.assert_allclose(gradient, expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("fn, args, wrt", CASES, ids=IDS)
def test_check_grads_accepts_correct_gradients(fn, args, wrt):
    srcad.check_grads(fn, args, wrt=wrt)


# ---- an operand repeated in one operation: one term, times its count (optimize.counted) ------
def squares(x, y):
    r = x * x - y                  # uniform below: b_x is one product, `g * 2 * x`
    s = np.tanh(r) * (y + y)       # not uniform: both operands of `y + y` get `b * 2`
    return np.sum(r * r) + np.sum(s * x * x) + np.sum(np.maximum(y, y))


@pytest.mark.parametrize("shapes", [((4,), (4,)), ((3, 1), (1, 4)), ((), (3,))])
def test_an_operand_repeated_in_one_operation_counts_twice(shapes):
    x, y = R.standard_normal(shapes[0]), R.standard_normal(shapes[1])
    assert_gradient_matches_finite_differences(squares, (x, y), (0, 1))
    taped = srcad.tape.grad(squares, wrt=(0, 1))(x, y)
    for source_mode, tape_mode in zip(srcad.grad(squares, wrt=(0, 1))(x, y), taped):
        np.testing.assert_allclose(source_mode, tape_mode, rtol=1e-12, atol=1e-12)
    u, v = R.standard_normal(np.shape(x)), R.standard_normal(np.shape(y))
    h = 1e-6
    slope = (squares(x + h * u, y + h * v) - squares(x - h * u, y - h * v)) / (2 * h)
    assert srcad.jvp(squares, (x, y), (u, v))[1] == pytest.approx(slope, rel=1e-6)
    hvp = srcad.hvp(squares)(x, y, u)
    gradient = srcad.grad(squares)
    np.testing.assert_allclose(hvp, (gradient(x + h * u, y) - gradient(x - h * u, y)) / (2 * h),
                               rtol=1e-5, atol=1e-6)


def test_a_repeated_operand_gets_one_term():
    adjoint = cache.compiled_adjoint(squares, ("x", "y")).source
    assert "b_r = unbroadcast_from(b_mul_3 * 2 * r, mul_3, r)" in adjoint  # a number, doubled
    assert "multiply_into(b_add_2, 2)" in adjoint and "multiply_into(b_mul_0, 2)" in adjoint
    tangent = cache.compiled_adjoint(squares, ("x", "y"), mode="fwd").source
    assert "t_mul_0 = t_x * 2 * x" in tangent and "t_add_2 = t_y * 2" in tangent
