"""What finite differences cannot check about the rules of srcad/ops/numpy_indexing.py
(their rows are in tests/ops/rule_cases_indexing.py): conventions at ties, refusals, second
derivatives through the rules, tape mode, and math.pow where its derivative is infinite."""
import math

import numpy as np
import pytest

import srcad
from srcad.errors import SrcadError

XP = np.array([-1.0, 0.0, 0.5, 2.0])
FP = np.array([0.5, -1.0, 2.0, 1.0])
COORDINATES = np.array([0.0, 0.5, 1.5, 1.75, 3.0])
X = np.array([0.45, 1.2, 0.7, 1.9, 0.05])


def sort_ties(x):
    return np.sort(x)


def unique_ties(x):
    return np.unique(x)


def test_sort_gives_each_position_of_a_tie_to_one_element_first_come_first():
    x, u = np.array([1.0, 0.0, 1.0]), np.array([10.0, 20.0, 30.0])
    np.testing.assert_array_equal(srcad.vjp(sort_ties, x)[1](u), [20.0, 10.0, 30.0])
    np.testing.assert_array_equal(srcad.jvp(sort_ties, (x,), (u,))[1], [20.0, 10.0, 30.0])


def test_unique_gives_each_value_to_the_first_element_equal_to_it():
    x = np.array([2.0, 1.0, 2.0])
    np.testing.assert_array_equal(srcad.vjp(unique_ties, x)[1](np.array([5.0, 7.0])),
                                  [7.0, 5.0, 0.0])
    np.testing.assert_array_equal(srcad.jvp(unique_ties, (x,), (np.array([1.0, 2.0, 3.0]),))[1],
                                  [2.0, 1.0])


def root_of(x):
    return math.pow(x, 0.5)


def numpy_root_of(x):
    return np.power(x, 0.5)


def first_power_of(x):
    return math.pow(x, 1.0) + math.pow(x, 2.0)


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")
def test_math_pow_at_zero_has_the_infinite_derivative_np_power_has():
    """Python's 0.0 ** -0.5 raises ZeroDivisionError; the derivative there is +inf."""
    assert srcad.grad(root_of)(0.0) == math.inf
    assert srcad.grad(numpy_root_of)(np.array(0.0)) == math.inf
    assert srcad.jvp(root_of, (0.0,), (1.0,))[1] == math.inf
    assert srcad.grad(first_power_of)(0.0) == 1.0


def interp_with_period(x):
    return np.interp(x, XP, FP, period=3.0)


def gradient_with_spacing(x, h):
    return np.gradient(x, h)


def linspace_with_step(x):
    return np.linspace(0.0, x, 4, retstep=True)[0]


def linspace_of_integers(x):
    return np.linspace(0.0, x, 4, dtype=int) * x


def unique_rows(x):
    return np.unique(x, axis=0)


@pytest.mark.parametrize("fn, args, wrt, words", [
    (interp_with_period, (X,), 0, "period"),
    (gradient_with_spacing, (X, 0.5), 1, "spacing"),
    (linspace_with_step, (2.0,), 0, "retstep"),
    (linspace_of_integers, (2.0,), 0, "dtype"),
    (unique_rows, (np.ones((2, 2)),), 0, "axis"),
], ids=lambda value: getattr(value, "__name__", None))
def test_derivatives_the_rules_cannot_give_are_refused(fn, args, wrt, words):
    value, vjp_fn = srcad.vjp(fn, *args, wrt=wrt)
    with pytest.raises(SrcadError, match=words) as info:
        vjp_fn(np.ones(np.shape(value)))
    assert "Fix:" in str(info.value)


# ---- second derivatives: reverse mode over the tangent programs, which inline the JVP rules ----
def second_sort(x):
    return np.sum(np.sort(x) ** 2 * np.arange(5.0)) + np.sum(np.sort(x[:, None], None) ** 3)


def second_unique(x):
    return np.sum(np.unique(x) ** 3 * np.arange(5.0))


def second_take(x):
    return np.sum(np.take(x, [0, 2, 2, -1], mode="wrap") ** 3
                  + np.take_along_axis(x, np.array([4, 4, 0, 1]), 0) ** 2)


def second_nan_to_num(x):
    return np.sum(np.nan_to_num(x, nan=x[0] ** 2) ** 3)


def second_interp(x):
    return np.sum(np.interp(x, XP, x[:4] ** 2) * x
                  + np.interp(x * 0.3, np.cumsum(x[:4] ** 2), FP) * x)


def second_polyval(x):
    return np.sum(np.polyval(x[:3] * x[0], x) * x)


def second_gradient(x):
    a, b = np.gradient(np.reshape(x[:4], (2, 2)) ** 2)
    return np.sum(np.gradient(x ** 2, COORDINATES, edge_order=2) ** 2) + np.sum(a ** 2 * b)


def second_sinc(x):
    return np.sum(np.sinc(x) ** 2 + np.sinc(x - 0.45))  # x[0] - 0.45 == 0: sinc's series


def second_linspace_and_full(x):
    return (np.sum(np.linspace(x[0], x[1] ** 2, 4) ** 3) + np.sum(np.full((2, 3), x[2] ** 2) ** 2)
            + np.sum(np.full_like(x, x[3]) ** 3))


def second_diff(x):
    return np.sum(np.diff(x, prepend=x[0] ** 2, append=x[1:3] ** 2) ** 3)


@pytest.mark.parametrize("fn", [second_sort, second_unique, second_take, second_nan_to_num,
                                second_interp, second_polyval, second_gradient, second_sinc,
                                second_linspace_and_full, second_diff],
                         ids=lambda fn: fn.__name__)
def test_hessians_through_the_rules_match_differences_of_gradients(fn):
    gradient, step = srcad.grad(fn), 1e-6
    expected = np.stack([(gradient(X + step * e) - gradient(X - step * e)) / (2 * step)
                         for e in np.eye(X.size)], axis=1)
    np.testing.assert_allclose(srcad.hessian(fn)(X), expected, rtol=1e-5, atol=1e-5)


def sinc_sum(x):
    return np.sum(np.sinc(x))


def test_sinc_has_its_second_derivative_at_zero():
    np.testing.assert_allclose(srcad.hessian(sinc_sum)(np.zeros(2)),
                               np.diag([-np.pi ** 2 / 3] * 2), rtol=1e-15)


def through_every_rule(x, p):
    a = np.sort(x)[::-1] * np.take(x, [0, 2, 2, 1, 4]) + np.gradient(x) * np.sinc(x)
    b = np.interp(x, XP, p[:4]) + np.polyval(p, x) + np.nan_to_num(x) * x[2]
    c = np.take_along_axis(x, np.argsort(x), axis=0) * np.unique(x) + np.linspace(x[0], x[1], 5)
    return np.sum(a * b + c)


def test_tape_mode_uses_the_same_rules():
    p = np.array([1.0, -2.0, 0.5, 3.0, 0.25])
    source = srcad.grad(through_every_rule, wrt=(0, 1))(X, p)
    tape = srcad.tape.grad(through_every_rule, wrt=(0, 1))(X, p)
    for s, t in zip(source, tape):
        np.testing.assert_allclose(np.asarray(t), s, rtol=1e-12)
