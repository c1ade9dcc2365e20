"""Adjoints added into in place and values released early (transform/adjoints.py OWNED,
transform/release.py): the gradients stay right where adjoints alias each other, the seed
or the user's values, and the generated code holds few arrays at once."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import srcad
from srcad.kernels import adjoints as runtime
from tests.checks import assert_gradient_matches_finite_differences, peak_memory

R = np.random.default_rng(11)


# ---- programs where adjoints alias one another ------------------------------------------------
def shared_by_plus(x, w):
    y = x + w                   # the VJP of + hands b_y itself to both b_x and b_w
    z = y * 3.0 + np.sin(x)     # b_x then receives more: it must not write into b_w
    return np.sum(z * z) + np.sum(w[1:] * x[:-1])


def alias_first(x, w):
    z = np.sin(x) * 2.0         # reached last going backward: added to b_x, which is b_w
    y = x + w                   # reached first: b_x and b_w both start as b_y itself
    return np.sum(y * y) + np.sum(z * w)


def reshaped_then_more(x):
    m = np.reshape(x, (2, 3))   # b_x is a view of b_m
    n = np.reshape(x[::-1], (2, 3))
    return np.sum(m * n) + np.sum(m) + np.sum(x[1:] ** 2) + np.sum(x[:2])


def slices_and_repeats(x):
    picked = x[np.array([0, 0, 3, 1])]  # repeated indices add up
    return np.sum(x[1:] * x[:-1]) + np.sum(picked ** 2) + np.sum(x[x > 0.0]) + x[2] * x[4]


def softmax_rows(S):
    E = np.exp(S - np.max(S, axis=1, keepdims=True))
    A = E / np.sum(E, axis=1, keepdims=True)
    return np.sum(A * S) + np.sum(np.mean(S, axis=0) ** 2)


def loop_over_rows(X, w):
    total = 0.0
    for row in X:               # each row's adjoint is added into b_X's row
        total = total + np.sum(np.tanh(row * w)) + np.sum(row[1:] * row[:-1])
    return total


def branch_then_more(x, flag):
    if flag:
        y = x * 2.0
    else:
        y = x
    return np.sum(y * x) + np.sum(x[1:] * y[:-1])


def returns_its_input(x):
    return x


CASES = [
    (shared_by_plus, (R.standard_normal(5), R.standard_normal(5)), (0, 1)),
    (alias_first, (R.standard_normal(5), R.standard_normal(5)), (0, 1)),
    (reshaped_then_more, (R.standard_normal(6),), 0),
    (slices_and_repeats, (R.standard_normal(6),), 0),
    (softmax_rows, (R.standard_normal((4, 5)),), 0),
    (loop_over_rows, (R.standard_normal((3, 4)), R.standard_normal(4)), (0, 1)),
    (branch_then_more, (R.standard_normal(4), True), 0),
    (branch_then_more, (R.standard_normal(4), False), 0),
]


@pytest.mark.parametrize("fn, args, wrt", CASES, ids=[f"{c[0].__name__}-{i}"
                                                      for i, c in enumerate(CASES)])
def test_gradients_with_aliased_adjoints_match_finite_differences(fn, args, wrt):
    assert_gradient_matches_finite_differences(fn, args, wrt)


def test_the_seed_and_the_arguments_are_never_written_into():
    x = R.standard_normal(6)
    x_before = x.copy()
    value, pullback = srcad.vjp(lambda_free_reshape, x)
    seed = R.standard_normal((2, 3))
    seed_before = seed.copy()
    first = pullback(seed)
    second = pullback(seed)  # a pullback may be called again: nothing it needs was released
    np.testing.assert_array_equal(seed, seed_before)
    np.testing.assert_array_equal(x, x_before)
    np.testing.assert_allclose(first, second)
    np.testing.assert_allclose(first, np.ravel(seed) + np.ravel(seed)[::-1] * 2.0)


def lambda_free_reshape(x):
    return np.reshape(x, (2, 3)) + np.reshape(x[::-1] * 2.0, (2, 3))


def test_an_identity_gradient_is_a_new_array_or_the_seed_itself_never_changed():
    x = R.standard_normal(3)
    _, pullback = srcad.vjp(returns_its_input, x)
    seed = np.ones(3)
    gradient = pullback(seed)
    np.testing.assert_array_equal(gradient, np.ones(3))
    np.testing.assert_array_equal(seed, np.ones(3))


def test_float32_gradients_stay_float32():
    x = R.standard_normal(6).astype(np.float32)
    gradient = srcad.grad(slices_and_repeats)(x)
    assert gradient.dtype == np.float32


# ---- the runtime's in-place additions ---------------------------------------------------------
def test_in_place_additions_write_into_the_owned_total_when_that_gives_the_same_array():
    large = np.zeros(200)  # (add_into writes only above a kilobyte)
    assert runtime.add_into(large, np.ones(200)) is large
    total = np.ones(5)
    assert runtime.add_at(total, np.ones(2), np.empty(5), slice(1, 3)) is total
    assert runtime.add_at(total, np.ones(3), np.empty(5), np.array([0, 0, 4])) is total
    assert runtime.add_spread(total, 2.0, np.empty(5)) is total
    np.testing.assert_array_equal(total, [5.0, 4.0, 4.0, 3.0, 4.0])
    rows = np.zeros((2, 3))
    assert runtime.add_spread(rows, np.array([1.0, 2.0]), rows, 1, False) is rows
    np.testing.assert_array_equal(rows, [[1.0] * 3, [2.0] * 3])


def test_in_place_additions_fall_back_where_the_sum_would_differ():
    small = np.zeros(3, np.float32)
    narrow = np.zeros(300, np.float32)
    widened = runtime.add_into(narrow, np.ones(300))  # float64 + float32 is float64
    assert widened is not narrow and widened.dtype == np.float64 and not narrow.any()
    grown = runtime.add_into(np.zeros(300), np.ones((2, 300)))  # broadcasting grows the total
    assert grown.shape == (2, 300)
    listed = runtime.add_into(np.zeros(200), [1.0] * 200)  # not a NumPy value: no writing
    np.testing.assert_array_equal(listed, [1.0] * 200)
    scattered = runtime.add_at(small, np.array(1.0), np.empty(3), 0)
    assert scattered is not small and scattered.dtype == np.float64
    wider_x = runtime.add_at(small, np.float32(1.0), np.empty(3), 0)  # x's dtype counts
    assert wider_x is not small and wider_x.dtype == np.float64


def test_an_index_adjoint_has_the_promoted_dtype_of_value_and_cotangent():
    for x, g, dtype in [(np.empty(4, np.float32), np.ones(2, np.float32), np.float32),
                        (np.empty(4, np.float32), np.ones(2), np.float64),
                        (np.empty(4), np.ones(2, np.float32), np.float64),
                        (np.empty(4, int), np.ones(2, np.float16), np.float64)]:
        scattered = runtime.index_adjoint(g, x, slice(1, 3))
        assert scattered.dtype == dtype
        np.testing.assert_array_equal(scattered, [0, 1, 1, 0])


# ---- releasing what a sweep no longer needs ---------------------------------------------------
def long_chain(x):
    a = np.sin(x)
    b = a * 2.0
    c = b + 1.0
    d = c * c
    e = d - a
    f = np.cos(e)
    return np.sum(f * 3.0)


def test_a_chain_of_elementwise_steps_holds_a_few_arrays_not_one_per_step():
    x = R.standard_normal(100_000)
    assert peak_memory(srcad.grad(long_chain), x) < 7 * x.nbytes  # every value and adjoint kept would be about 14 arrays
    assert_gradient_matches_finite_differences(long_chain, (R.standard_normal(5),), 0)


def chain_with_a_broadcast(x):
    a = np.sin(x)
    d = (a * 2.0 + 1.0) ** 2
    e = d - np.mean(a, axis=0)
    return np.sum(np.cos(e) * 3.0)


def test_the_forward_sweep_keeps_only_the_shape_of_what_the_backward_sweep_unbroadcasts():
    source = srcad.grad(chain_with_a_broadcast).source
    assert "shape_of(d)" in source and "del " in source
    assert "shape_of(" not in srcad.grad(long_chain).source  # (every array has x's shape)


@given(rows=st.integers(1, 6), columns=st.integers(0, 3),
       start=st.one_of(st.none(), st.integers(-8, 8)), stop=st.one_of(st.none(), st.integers(-8, 8)),
       number=st.booleans())
@settings(max_examples=200, deadline=None)
def test_an_index_adjoint_of_a_slice_is_zero_outside_it(rows, columns, start, stop, number):
    x = np.empty((rows, columns) if columns else (rows,))
    index = slice(start, stop)
    g = 2.5 if number else np.arange(np.size(x[index]), dtype=float).reshape(x[index].shape) + 1
    expected = np.zeros(x.shape)
    expected[index] = g
    np.testing.assert_array_equal(runtime.index_adjoint(g, x, index), expected)
