"""The cotangent of a full reduction kept as one number (transform/uniform.py): gradients
stay right where operands broadcast (each element of a small operand counts once per copy),
where the number meets a smaller array, an axis reduction or a matmul, and where it joins
other cotangents; the generated code keeps the number where it can."""

import numpy as np
import pytest

import srcad
from srcad.kernels import outlines, adjoints as runtime
from tests.checks import assert_gradient_matches_finite_differences

R = np.random.default_rng(41)


def column_plus_row(a, b):
    return np.sum(a + b)                         # (3, 1) + (1, 4): each counts 4 and 3 times


def scaled_broadcast(a, b):
    return np.mean(2.0 * (a - b) / 3.0)          # the number crosses -, *, / by constants


def scalar_array_operand(w, x):
    return np.sum(w * x + w)                     # w of shape (): b_w sums every element


def smaller_factor(a, c):
    return np.sum(a * c)                         # (3, 4) * (4,): b_a reads c's broadcast


def twice_reduced(x):
    return np.sum(x) + np.mean(x * 2.0) - np.sum(-x)   # three numbers add up for b_x


def reduced_and_used(x, W):
    y = np.tanh(x)
    return np.sum(y) + np.sum(W @ y)             # the number joins matmul's array


def through_axis_sum(x):
    return np.sum(np.sum(x * 3.0, axis=0) ** 2)  # an axis reduction reads the array


def in_a_branch(x, flag):
    y = x * 2.0
    s = np.sum(y)
    if flag:
        s = s * 3.0
    return s + np.sum(np.sin(y))


def after_a_loop(x):
    h = x
    for _ in range(3):
        h = np.sin(h) + 0.5
    return np.sum(h * 2.0)


def float32_sum(x):
    return np.sum(x * 0.5 + 1.0)


C = np.ones((2, 3))


def read_in_a_guarded_rule(w, flag):
    x = w + C                                    # b_x is a number, then read where the
    t = np.sin(x)                                # rule of t runs only if t has a cotangent
    u = np.sum(x) + np.sum(x)
    if flag:
        u = u + np.sum(t)
    return u + np.sum(w * w)


def read_in_a_loop(x, n):
    t = np.sin(x)
    s = np.sum(x) + np.sum(x)
    for _ in range(n):
        s = s + np.sum(t)
    return s


def times_a_list(x):
    c = [1.0, 2.0, 3.0]                          # a number times a list would repeat it
    return np.sum(x * c) + np.mean(x * (2.0,))


def mixed_precision(a, b):
    return np.sum(a * b)


CASES = [
    (column_plus_row, (R.standard_normal((3, 1)), R.standard_normal((1, 4))), (0, 1)),
    (scaled_broadcast, (R.standard_normal((2, 1, 3)), R.standard_normal((4, 1))), (0, 1)),
    (scalar_array_operand, (np.array(0.7), R.standard_normal(5)), (0, 1)),
    (smaller_factor, (R.standard_normal((3, 4)), R.standard_normal(4)), (0, 1)),
    (twice_reduced, (R.standard_normal((2, 3)),), 0),
    (reduced_and_used, (R.standard_normal(4), R.standard_normal((3, 4))), (0, 1)),
    (through_axis_sum, (R.standard_normal((3, 2)),), 0),
    (in_a_branch, (R.standard_normal(3), True), 0),
    (in_a_branch, (R.standard_normal(3), False), 0),
    (after_a_loop, (R.standard_normal(4),), 0),
    (read_in_a_guarded_rule, (R.standard_normal(3), True), 0),
    (read_in_a_guarded_rule, (R.standard_normal(3), False), 0),
    (read_in_a_loop, (R.standard_normal(3), 0), 0),
    (read_in_a_loop, (R.standard_normal(3), 2), 0),
    (times_a_list, (R.standard_normal(3),), 0),
]


@pytest.mark.parametrize("fn, args, wrt", CASES, ids=lambda v: getattr(v, "__name__", ""))
def test_gradients_match_finite_differences(fn, args, wrt):
    assert_gradient_matches_finite_differences(fn, args, wrt)


@pytest.mark.parametrize("fn, args, wrt", CASES, ids=lambda v: getattr(v, "__name__", ""))
def test_source_mode_agrees_with_tape_mode(fn, args, wrt):
    expected = srcad.tape.grad(fn, wrt=wrt)(*args)
    got = srcad.grad(fn, wrt=wrt)(*args)
    for g, e in zip(*(v if isinstance(wrt, tuple) else (v,) for v in (got, expected))):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12)


def test_zero_sized_operands_give_zero_gradients():
    a, b = np.ones((0, 1)), np.ones((1, 3))
    ga, gb = srcad.grad(column_plus_row, wrt=(0, 1))(a, b)
    assert ga.shape == (0, 1) and np.all(gb == 0.0) and gb.shape == (1, 3)


def test_a_float32_argument_keeps_its_dtype():
    x = R.standard_normal(6).astype(np.float32)
    gradient = srcad.grad(float32_sum)(x)
    assert gradient.dtype == np.float32 and np.allclose(gradient, 0.5)


@pytest.mark.filterwarnings("ignore:overflow encountered in cast")  # a's float16 gradient
def test_a_python_number_cotangent_keeps_the_precision_of_an_array_of_it():
    a, b = np.arange(1.0, 5.0).astype(np.float16), np.ones(4, np.float32)
    _, pullback = srcad.vjp(mixed_precision, a, b, wrt=(0, 1))
    np.testing.assert_allclose(pullback(1e5)[1], 1e5 * np.arange(1.0, 5.0), rtol=1e-6)
    _, pullback = srcad.vjp(times_a_list, np.ones(3))
    np.testing.assert_allclose(pullback(3), 3 * np.array([1.0, 2.0, 3.0]) + 2.0)


def test_the_number_is_spread_only_into_the_returned_gradients():
    source = srcad.grad(scaled_broadcast, wrt=(0, 1)).source
    assert "b_sub_0 = b_mul_1 * 2.0" in source and source.count("expand_reduced(") == 2


def test_uniform_unbroadcast_counts_the_copies():
    out = np.empty((2, 3, 4))
    assert outlines.uniform_unbroadcast(1.5, out, np.empty((3, 1))) == 1.5 * 8
    assert outlines.uniform_unbroadcast(1.5, out, 2.0) == 1.5 * 24
    assert outlines.uniform_unbroadcast(1.5, runtime.shape_of(out), out) == 1.5


def test_unbroadcast_from_sums_the_broadcast_of_a_smaller_term():
    term, out = np.arange(4.0), np.empty((3, 4))
    np.testing.assert_array_equal(outlines.unbroadcast_from(term, out, np.empty((3, 1))),
                                  np.full((3, 1), 6.0))
    spread = outlines.unbroadcast_from(term, out, out)
    assert spread.shape == (3, 4) and spread.flags.writeable
