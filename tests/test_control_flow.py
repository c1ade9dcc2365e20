"""Control flow: every corpus program against finite differences, for every input set."""
import numpy as np
import pytest

import srcad
from srcad.api.testing import numerical_gradient
from tests import control_programs as cp
from tests.checks import assert_gradient_matches_finite_differences
from tests.control_programs import CORPUS

CASES = [(fn, args, wrt) for fn, arg_sets, wrt in CORPUS for args in arg_sets]
IDS = [f"{fn.__name__}-{i}" for i, (fn, _, _) in enumerate(CASES)]


@pytest.mark.parametrize("fn, args, wrt", CASES, ids=IDS)
def test_gradient_matches_finite_differences(fn, args, wrt):
    assert_gradient_matches_finite_differences(fn, args, wrt)


@pytest.mark.parametrize("fn, args, wrt", CASES, ids=IDS)
def test_value_is_the_function_value(fn, args, wrt):
    value, _ = srcad.value_and_grad(fn, wrt=wrt)(*args)
    np.testing.assert_allclose(value, fn(*args))


def test_repeated_calls_leave_no_state_behind():
    from tests.control_programs import rnn
    x, W = np.array([0.3, -0.2]), np.array([[0.5, 0.1], [-0.3, 0.8]])
    gradient = srcad.grad(rnn, wrt=1)
    first = gradient(x, W)
    np.testing.assert_array_equal(first, gradient(x, W))


# ---- float32 in, float32 out -----------------------------------------------------------------
def _float32(args):
    return tuple(a.astype(np.float32) if isinstance(a, np.ndarray) and a.dtype.kind == "f"
                 else np.float32(a) if isinstance(a, float) else a for a in args)


def _corpus_case(fn, index=0):
    for candidate, arg_sets, wrt in CORPUS:
        if candidate is fn:
            return arg_sets[index], wrt
    raise LookupError(fn.__name__)


FLOAT32_CASES = [(fn, index) for fn, index in [
    (cp.rnn, 0), (cp.gru_like, 0), (cp.huber_loss, 0), (cp.shrinking_slices, 0),
    (cp.growing_concatenate, 0), (cp.bouncing_ball, 0), (cp.input_trip_count, 0),
    (cp.input_trip_count, 2), (cp.horner, 0), (cp.rk4_lotka_volterra, 0),
    (cp.layers_over_tuple, 1), (cp.nested_break_continue, 0), (cp.newton_cube_root, 1),
    (cp.search_with_break, 0), (cp.and_or_conditions, 2), (cp.scalar_then_vector, 0),
]]


@pytest.mark.parametrize("fn, index", FLOAT32_CASES,
                         ids=[f"{fn.__name__}-{i}" for fn, i in FLOAT32_CASES])
def test_float32_arguments_get_float32_gradients(fn, index):
    args, wrt = _corpus_case(fn, index)
    args32 = _float32(args)
    positions = wrt if isinstance(wrt, tuple) else (wrt,)
    gradients = srcad.grad(fn, wrt=wrt)(*args32)
    gradients = gradients if isinstance(wrt, tuple) else (gradients,)
    reference = srcad.grad(fn, wrt=wrt)(*args)
    reference = reference if isinstance(wrt, tuple) else (reference,)
    for position, gradient, expected in zip(positions, gradients, reference):
        assert np.asarray(gradient).dtype == np.float32, (position, type(gradient))
        assert np.shape(gradient) == np.shape(args32[position])
        np.testing.assert_allclose(gradient, expected, rtol=2e-3, atol=1e-4)


def test_float32_zero_trip_loop_gives_float32_zeros():
    x, w = np.array([1.0, 2.0], np.float32), np.array([0.5, 0.5], np.float32)
    g_x, g_w = srcad.grad(cp.accumulate_n, wrt=(0, 1))(x, w, 0)
    for gradient in (g_x, g_w):
        assert gradient.dtype == np.float32 and gradient.shape == (2,)
        np.testing.assert_array_equal(gradient, 0.0)
    g = srcad.grad(cp.while_not_entered, wrt=1)(np.float32(3.0), w)
    assert g.dtype == np.float32
    np.testing.assert_array_equal(g, 0.0)


def test_float32_scalar_through_zero_and_nonzero_trips():
    grad = srcad.grad(cp.input_trip_count)
    for n in (0, 3):
        g = grad(np.float32(0.7), n)
        assert np.asarray(g).dtype == np.float32
        np.testing.assert_allclose(g, numerical_gradient(cp.input_trip_count, (0.7, n), 0),
                                   rtol=1e-4)


# ---- zero-trip loops ---------------------------------------------------------------------------
def test_zero_trip_range_gives_zero_gradients():
    g_x, g_w = srcad.grad(cp.accumulate_n, wrt=(0, 1))(1.5, 2.0, 0)
    assert g_x == 0.0 and g_w == 0.0
    assert isinstance(g_x, float) and isinstance(g_w, float)
    x, w = np.array([1.0, -2.0]), np.array([0.5, 3.0])
    g_x, g_w = srcad.grad(cp.accumulate_n, wrt=(0, 1))(x, w, 0)
    np.testing.assert_array_equal(g_x, np.zeros(2))
    np.testing.assert_array_equal(g_w, np.zeros(2))
    # the same compiled gradient, now with trips: sum_i i * w = 3 w for n = 3
    g_x, g_w = srcad.grad(cp.accumulate_n, wrt=(0, 1))(x, w, 3)
    np.testing.assert_allclose(g_x, 3.0 * w)
    np.testing.assert_allclose(g_w, 3.0 * x)


def test_loop_over_an_array_without_rows():
    X, w = np.zeros((0, 3)), np.array([1.0, 2.0, 3.0])
    g_X, g_w = srcad.grad(cp.sum_over_rows, wrt=(0, 1))(X, w)
    assert g_X.shape == (0, 3)
    np.testing.assert_array_equal(g_w, np.zeros(3))
    X = np.array([[0.5, -0.2, 0.1]])
    g_X, g_w = srcad.grad(cp.sum_over_rows, wrt=(0, 1))(X, w)
    np.testing.assert_allclose(g_w, numerical_gradient(cp.sum_over_rows, (X, w), 1), rtol=1e-6)


def test_while_loop_that_never_runs():
    w = np.array([1.0, 2.0])
    g_x, g_w = srcad.grad(cp.while_not_entered, wrt=(0, 1))(3.0, w)
    assert g_x == 1.0
    np.testing.assert_array_equal(g_w, np.zeros(2))
    # entered: acc = 40 -> 20 + 3 = 23 -> 11.5 + 3 = 14.5 -> 7.25 + 3 = 10.25 -> 5.125 + 3
    g_x, g_w = srcad.grad(cp.while_not_entered, wrt=(0, 1))(40.0, w)
    np.testing.assert_allclose(g_x, 0.5 ** 4)
    np.testing.assert_allclose(g_w, np.full(2, 1.0 + 0.5 + 0.25 + 0.125))


def test_empty_range_passes_the_gradient_straight_through():
    x = np.array([1.0, -2.0])
    g = srcad.grad(cp.empty_range_then_use)(x, 3, 1)
    np.testing.assert_allclose(g, 2.0 * x)
    g = srcad.grad(cp.empty_range_then_use)(x, 1, 3)
    np.testing.assert_allclose(g, numerical_gradient(cp.empty_range_then_use, (x, 1, 3), 0),
                               rtol=1e-5, atol=1e-6)


def test_break_before_the_body_touches_an_argument():
    g_x, g_w = srcad.grad(cp.break_on_first_iteration, wrt=(0, 1))(1.0, 2.0)
    assert (g_x, g_w) == (3.0, 0.0)
    g_x, g_w = srcad.grad(cp.break_on_first_iteration, wrt=(0, 1))(-1.0, 0.6)
    # y = -1 + 0.36 k until positive: k = 3 additions -> dy/dw = 3 * 2w
    np.testing.assert_allclose((g_x, g_w), (3.0, 3.0 * 3 * 2 * 0.6))


# ---- in-place updates once refused by a flow-insensitive aliasing analysis ---------------------
# Found by tests/test_generated_programs.py: once refused as unsound aliasing, although no
# name sharing memory with the updated one is read after the update.
def augmented_then_early_return(x):
    a = x * 2.0
    a += 1.0
    if x > 0.5:
        return 1.0
    return a


def branch_binds_either_argument_then_augmented(x, y):
    if x > 0.5:
        t = x
    else:
        t = y  # noqa: F841 (the binding is the point)
    x += 1.0
    return x * y


@pytest.mark.parametrize("x, expected", [(0.2, 2.0), (0.7, 0.0)])
def test_augmented_assignment_before_an_early_return(x, expected):
    assert srcad.grad(augmented_then_early_return)(x) == expected


def test_augmented_assignment_after_a_branch_binds_either_argument():
    g = srcad.grad(branch_binds_either_argument_then_augmented, wrt=(0, 1))(0.7, 2.0)
    np.testing.assert_allclose(g, (2.0, 1.7))


def return_inside_loop_then_augmented(x):
    a = x * 2.0
    for i in range(3):
        if a > 5.0:
            return a
        a += 1.0
    return a


@pytest.mark.parametrize("x", [0.7, 2.2])  # returns after the loop / from inside it
def test_augmented_assignment_after_a_return_inside_the_loop(x):
    assert srcad.grad(return_inside_loop_then_augmented)(x) == 2.0


# ---- once wrong: a loop over a name rebound in its body ---------------------------------------------
def loop_over_a_rebound_name(x):
    """`x` is rebound before the loop and inside it; the loop iterates over the array `x` was
    bound to when the loop started (Python evaluates the iterable once)."""
    x = x * 6.0
    s = 0.0
    for v in x:
        s = s + v
        x = x * 2.0
    return np.sum(x) + s        # = 6 sum(x) + 48 sum(x): the gradient is 54 everywhere


def test_loop_over_a_name_rebound_before_and_inside_the_loop():
    x = np.array([0.3, 0.5, 0.7])
    np.testing.assert_allclose(srcad.grad(loop_over_a_rebound_name)(x), np.full(3, 54.0))
