"""Regressions: derivatives that once came out silently wrong (or crashed) in source and
forward mode, each checked against the value it must have."""
import functools
import math
import operator

import numpy as np
import pytest

import srcad
import srcad.tape
from srcad.errors import MissingRuleError, UnsoundAliasingError
from tests.checks import assert_gradient_matches_finite_differences
from tests.ops.test_rules import (assert_jvp_matches_finite_differences,
                              assert_vjp_matches_finite_differences)


def cube_of_reshaped(x):
    return np.sum(x.reshape(5, 1) ** 3)


def cube_of_transposed(x):
    return np.sum(x.transpose(1, 0) ** 3)


def test_hessian_through_reshape_with_several_shape_arguments():
    """`x.reshape(5, 1)` packs its shape into a tuple; the Hessian followed the receiver to
    the wrong argument of the reshape and came out zero."""
    x = np.arange(1.0, 6.0)
    np.testing.assert_allclose(srcad.hessian(cube_of_reshaped)(x), np.diag(6 * x))
    m = np.arange(1.0, 7.0).reshape(2, 3)
    expected = np.diag(6 * m.ravel()).reshape(2, 3, 2, 3)
    np.testing.assert_allclose(srcad.hessian(cube_of_transposed)(m), expected)


def pad_with_a_differentiated_constant(x, y):
    return np.sum(np.pad(x, 1, constant_values=y))


def pad_chosen_at_run_time(x, y):
    pad = getattr(np, "pad")
    return np.sum(pad(x, 1, constant_values=y))


def width_and_values(z):
    return np.argmax(z) + 1, z


def pad_by_an_integer_from_x(x, y):
    width, values = width_and_values(x * y)  # srcad cannot tell `width` is an integer
    return np.sum(np.pad(values, width))


@pytest.mark.parametrize("fn", [pad_with_a_differentiated_constant, pad_chosen_at_run_time])
def test_a_differentiated_value_where_no_rule_answers_is_refused(fn):
    """`constant_values=y` has no rule slot: y's derivative must not be a silent zero."""
    x, y = np.array([1.0, 2.0]), 3.0
    with pytest.raises(MissingRuleError, match="constant_values"):
        srcad.grad(fn, wrt=1)(x, y)
    with pytest.raises(MissingRuleError, match="constant_values"):
        srcad.jvp(fn, (x, y), (np.zeros(2), 1.0))


def test_an_integer_from_differentiated_values_needs_no_rule():
    """An integer computed from x (here a pad width) carries no derivative: allowed."""
    x, y = np.array([1.0, 2.0]), 3.0
    assert srcad.grad(pad_by_an_integer_from_x, wrt=1)(x, y) == pytest.approx(np.sum(x))
    _, slope = srcad.jvp(pad_by_an_integer_from_x, (x, y), (np.ones(2), 0.0))
    assert slope == pytest.approx(2 * y)
    # the check in the tangent program runs again when srcad differentiates that program
    np.testing.assert_allclose(srcad.hessian(pad_by_an_integer_from_x, wrt=1)(x, y), 0.0)


def squares_of_a_built_array(x):
    return np.sum(np.array([x[0], x[1] ** 2]) ** 2)


def test_hessian_through_an_array_built_from_a_list():
    """The reverse sweep over the tangent program got None as the cotangent of a list
    argument (used only for its shape) and indexed it."""
    x = np.array([1.5, 2.0])
    np.testing.assert_allclose(srcad.hessian(squares_of_a_built_array)(x),
                               np.diag([2.0, 12 * x[1] ** 2]))


MASK = np.array([[True, False, True], [False, False, False]])


def row_max_from_zero(x):
    return np.max(x, axis=1, initial=0.0)


def masked_row_max(x):
    return np.max(x, axis=1, where=MASK, initial=-10.0)


def masked_min(x):
    return np.amin(x, where=MASK, initial=10.0)


def masked_column_max(x):
    return x.max(axis=0, where=MASK, initial=-3.0, keepdims=True)


@pytest.mark.parametrize("fn", [row_max_from_zero, masked_row_max, masked_min,
                                masked_column_max])
def test_max_and_min_honour_initial_and_where(fn):
    """Elements `where` leaves out, and those `initial` beats, get no derivative (they got
    a share of it, or nan where a row had no selected element)."""
    x = np.array([[1.0, 5.0, 3.0], [-2.0, -4.0, -1.0]])
    assert_vjp_matches_finite_differences(fn, (x,), 0, rtol=1e-6, atol=1e-9)
    assert_jvp_matches_finite_differences(fn, (x,), 0, rtol=1e-6, atol=1e-9)


def test_max_shares_a_tie_with_initial():
    """At x = initial the one-sided slopes are 0 and 1: x and `initial` share the tie."""
    assert srcad.grad(row_max_from_zero)(np.array([[0.0, -1.0]])) == pytest.approx(
        np.array([[0.5, 0.0]]))


def appends_through_an_alias(x):
    box = [[]]
    inner = box[0]
    for i in range(3):
        inner.append(np.sin(x) * i)
    return np.sum(box[0][1] * box[0][2] + x)


def test_append_through_an_alias_of_a_list_element_is_refused_not_dropped():
    """`inner` and `box[0]` are one list: the appends must not be lost (they were: the
    gradient ignored them)."""
    with pytest.raises(UnsoundAliasingError):
        srcad.grad(appends_through_an_alias)(np.array([0.3, -0.5]))


CONSTANT_ROW = np.array([1.0, 2.0, 3.0])


def writes_into_a_copy_of_a_constant(x):
    y = CONSTANT_ROW.copy()
    y[1] = x[1] ** 2
    return np.sum(y * x)


def test_a_method_of_a_constant_needs_no_rule():
    """`C.copy()` carries no derivative; the element written into the copy does."""
    x = np.array([0.5, 1.5, -1.0])
    np.testing.assert_allclose(srcad.grad(writes_into_a_copy_of_a_constant)(x),
                               [1.0, 1.5 ** 2 + 2 * 1.5 * 1.5, 3.0])


def power_of_a_cosine(x):
    return np.cos(x) ** x


def test_a_negative_numpy_scalar_base_gives_nan_not_a_math_domain_error():
    """`np.cos(2.5) ** 2.5` is nan in NumPy; its derivative in the exponent took the log of
    the base with `math.log` (an np.float64 is a float) and raised ValueError."""
    with pytest.warns(RuntimeWarning):
        assert np.isnan(srcad.grad(power_of_a_cosine)(np.float64(2.5)))
        assert np.isnan(srcad.grad(power_of_a_cosine)(np.array(2.5)))


def _passes_arguments_on(method):
    @functools.wraps(method)
    def wrapper(*args):
        return method(*args)
    return wrapper


class Oscillator:
    def __init__(self, stiffness):
        self.stiffness = stiffness

    @_passes_arguments_on
    def energy(self, x):
        return 0.5 * self.stiffness * np.sum(x * x) + np.sum(np.sin(x))

    def total(self, x):
        return self.energy(x) * 2.0


def test_a_bound_method_of_a_wrapped_function_keeps_its_receiver():
    """`inspect.unwrap` on a bound method reads `__wrapped__` through it and returns the
    plain function: srcad then called it without its receiver (a TypeError), or as a call
    inside differentiated code, with the arguments shifted."""
    model, x = Oscillator(3.0), np.array([0.2, -0.7, 1.1])
    expected = 3.0 * x + np.cos(x)
    np.testing.assert_allclose(srcad.grad(model.energy)(x), expected)
    np.testing.assert_allclose(srcad.grad(model.total)(x), 2.0 * expected)
    assert srcad.grad(model.energy)(0.4) == pytest.approx(3.0 * 0.4 + np.cos(0.4))
    np.testing.assert_allclose(srcad.hessian(model.energy)(x), np.diag(3.0 - np.sin(x)))
    np.testing.assert_allclose(srcad.tape.grad(model.energy)(x), expected)


def scaled_by_an_integer_cast(x):
    k = (x * 10).astype(int)      # piecewise constant in x
    return np.sum(k * x)


def test_an_integer_cast_has_no_derivative():
    """`.astype(int)` passed its cotangent through: a gradient of 14.9 where the function
    is k * x with k constant around x (7, as finite differences and tape mode say)."""
    x = np.array([0.79, 0.93])
    np.testing.assert_allclose(srcad.grad(scaled_by_an_integer_cast)(x), [7.0, 9.0])
    np.testing.assert_allclose(srcad.tape.grad(scaled_by_an_integer_cast)(x), [7.0, 9.0])
    _, slope = srcad.jvp(scaled_by_an_integer_cast, (x,), (np.ones(2),))
    assert slope == pytest.approx(16.0)


def written_into_an_integer_buffer(x):
    y = np.zeros(2, dtype=int)
    y[0] = x[0] * 10              # truncated: piecewise constant in x
    return np.sum(y * x)


def test_a_value_written_into_an_integer_buffer_has_no_derivative():
    """The element's cotangent and tangent went through the integer buffer (14.9, twice
    the 7 finite differences and tape mode give)."""
    x = np.array([0.79, 0.93])
    np.testing.assert_allclose(srcad.grad(written_into_an_integer_buffer)(x), [7.0, 0.0])
    _, slope = srcad.jvp(written_into_an_integer_buffer, (x,), (np.ones(2),))
    assert slope == pytest.approx(7.0)
    np.testing.assert_allclose(srcad.hessian(written_into_an_integer_buffer)(x), np.zeros((2, 2)))


def _pair(x):
    return [x[0], x[1] * 2.0]


def joins_what_helpers_return(x):
    joined = _pair(x) + _pair(x * 3.0)
    return joined[3] + joined[0]


def joins_lists_made_here(x):
    joined = list(_pair(x)) + [x[2]] * 2
    return joined[3] + joined[0] + joined[1]


def test_a_join_of_lists_srcad_cannot_see_is_refused_not_summed():
    """`a + b` of two lists added the whole cotangent to each item (a wrong gradient); where
    srcad cannot tell the operands are lists, the backward sweep refuses the join."""
    x = np.array([0.5, 1.5, 2.5])
    with pytest.raises(MissingRuleError, match="two lists or tuples"):
        srcad.grad(joins_what_helpers_return)(x)
    np.testing.assert_allclose(srcad.grad(joins_lists_made_here)(x), [1.0, 2.0, 1.0])


def items_read_out(x):
    a = x.reshape(2, 3)
    return x.item(2) * a.item(1, 1) + a.max().item() * a.item((0, 1)) + np.sum(x).item()


def test_item_reads_one_element_in_every_mode():
    """`x.item()` was refused (no rule for the method); tape mode refuses it on purpose (a
    plain number), so finite differences are the oracle here."""
    x = np.array([0.3, 0.5, 0.7, 0.35, 0.8, 1.1])
    assert_vjp_matches_finite_differences(items_read_out, (x,), 0, rtol=1e-6, atol=1e-8)
    assert_jvp_matches_finite_differences(items_read_out, (x,), 0, rtol=1e-6, atol=1e-8)
    direction = np.linspace(-1.0, 1.0, 6)
    gradient = srcad.grad(items_read_out)
    expected = (gradient(x + 1e-6 * direction) - gradient(x - 1e-6 * direction)) / 2e-6
    np.testing.assert_allclose(srcad.hvp(items_read_out)(x, direction), expected, atol=1e-6)


def row_from_a_display(x):
    m = np.zeros(3)
    m[:] = [x[0], 1.0, x[2]]
    y = np.ones(3)
    y += [x[0], 1.0, x[2] * x[1]]
    return np.sum(m ** 2) + np.sum(y ** 2)


def list_slice_rewritten(x):
    items = [x[0], x[1], x[2]]
    items[0:2] = [x[2] * 2.0, x[1]]
    return items[0] + 5.0 * items[2] * items[1]


def list_slice_shortened(x):
    items = [x[0], x[1], x[2]]
    items[0:2] = [x[2] * 2.0]
    return items[0] + items[1]


@pytest.mark.parametrize("fn", [row_from_a_display, list_slice_rewritten])
def test_displays_written_into_arrays_and_list_slices(fn):
    """Forward mode stored a display's tangent with None in it into an array (nan) or
    added it (TypeError); reverse mode crashed on a list slice's assignment."""
    x = np.array([0.3, -0.4, 0.5])
    assert_vjp_matches_finite_differences(fn, (x,), 0, rtol=1e-6, atol=1e-8)
    assert_jvp_matches_finite_differences(fn, (x,), 0, rtol=1e-6, atol=1e-8)


def test_a_slice_assignment_that_changes_a_lists_length_is_refused():
    with pytest.raises(MissingRuleError, match="changes a list's length"):
        srcad.grad(list_slice_shortened)(np.array([0.3, -0.4, 0.5]))


def writes_its_argument(x):
    x[0] = 0.0
    x *= 2.0
    return np.sum(x ** 2)


def test_jvp_leaves_an_argument_the_function_writes_into_as_grad_does():
    """jvp left the caller's array half written ([0, 0.5]: neither its value nor f's)."""
    x = np.array([0.3, 0.5])
    srcad.jvp(writes_its_argument, (x,), (np.ones(2),))
    np.testing.assert_array_equal(x, [0.3, 0.5])


class _Base:
    def act(self, z):
        return np.tanh(z)


class _Child(_Base):
    def act(self, z):
        return super().act(z) * 2.0


def acts_through_super(x):
    return np.sum(_Child().act(x))


def test_super_without_arguments_in_forward_mode():
    """`super()` read the tangent program's first argument (the seeds), not `self`."""
    x = np.array([0.3, -0.4])
    assert_jvp_matches_finite_differences(acts_through_super, (x,), 0, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(np.diag(srcad.hessian(acts_through_super)(x)),
                               -4.0 * np.tanh(x) * (1.0 - np.tanh(x) ** 2), rtol=1e-10)


def scales_a_float_in_place(a, b):
    y = a
    y *= 2.0
    z = b
    z += y
    return y * a + z * b


def test_an_augmented_assignment_on_a_float_only_rebinds_it():
    """Floats are immutable, so `y *= 2.0` after `y = a` leaves `a` as it was. It was
    refused as an unsound in-place update. A 0-d array, which it does change, still is."""
    a, b = 0.7, -1.1
    assert srcad.grad(scales_a_float_in_place, wrt=(0, 1))(a, b) == pytest.approx(
        (4 * a + 2 * b, 2 * a + 2 * b), rel=1e-12)
    value, gradient = srcad.value_and_grad(scales_a_float_in_place, wrt=(0, 1))(a, b)
    assert value == pytest.approx(scales_a_float_in_place(a, b)) and gradient[0] == \
        pytest.approx(4 * a + 2 * b)
    with pytest.raises(UnsoundAliasingError):
        srcad.grad(scales_a_float_in_place)(np.array(a), b)


def unpacks_and_reads_whole(x):
    y = x * 1.0
    p, q = y
    return np.sum(p) * 2.0 + np.sum(y)


def median_of_squares(x):
    return np.median(x ** 2) + np.median(x.reshape(2, 2), axis=0)[1]


def copies_a_tuple(x):
    t = (x, 2 * x)
    u = t.copy()
    return np.sum(u[0])


def empty_slice_added(x):
    return np.sum(x + x[0:0])


def test_second_derivatives_through_an_unpacking_and_a_median():
    """An unpacking whose items got no adjoint gave None to add up (hvp raised); a median's
    rule built a set display, which the second derivative could not follow."""
    x = np.array([0.5, -1.5, 2.0, 0.3])
    assert not srcad.hessian(unpacks_and_reads_whole)(x[:2].reshape(2, 1)).any()
    h = srcad.hessian(median_of_squares)(x)
    g = srcad.grad(median_of_squares)
    numeric = np.stack([(g(x + 1e-6 * e) - g(x - 1e-6 * e)) / 2e-6 for e in np.eye(4)])
    np.testing.assert_allclose(h, numeric, atol=1e-6)


def test_a_tuple_has_no_copy_method_and_an_empty_slice_broadcasts():
    """`t.copy()` of a tuple ran as `list(t)`; `x[0:0]` was given the shape of `x[0:]`."""
    with pytest.raises(AttributeError):
        srcad.grad(copies_a_tuple)(np.array([0.5]))
    assert srcad.grad(empty_slice_added)(np.array([2.0])) == pytest.approx([0.0])


def product_with_initial(x):
    return x.prod(initial=3.0) + np.prod(x.reshape(2, 2), axis=0, initial=2.0)[1]


def product_where(x):
    return np.prod(x, where=np.array([True, False, True, True]))


def median_overwriting(x):
    y = x * 1.0
    return np.median(y, overwrite_input=True) * np.sum(y)


def median_of(x):
    return np.median(x)


def constants_and_slices_to_dot(x):
    values = [x[0], x[1] * 2.0]
    return np.dot(x[:2], [1.0, 2.0]) + np.sum([3.0, -1.0] @ x.reshape(2, 2)) \
        + np.dot(values[::-1], [0.5, 1.5])


def concatenates_a_mixed_display(x):
    return np.sum(np.concatenate([x, [x[0], 5.0]]) ** 2)


def converts_without_a_copy(x):
    y = x.copy()
    z = y.astype(float, copy=False)  # y itself
    z *= 2.0
    return np.sum(y * x)


def test_options_of_reductions_are_honoured_or_refused():
    """np.prod's `initial` scales its derivative and `where` is refused (both were ignored:
    a wrong gradient); np.median's `overwrite_input=True` sorts its argument, refused."""
    x = np.array([0.5, -1.0, 2.0, 0.3])
    assert_gradient_matches_finite_differences(product_with_initial, (x,), 0)
    with pytest.raises(srcad.errors.SrcadError, match="where"):
        srcad.grad(product_where)(x)
    with pytest.raises(srcad.errors.SrcadError, match="overwrite_input"):
        srcad.grad(median_overwriting)(x)
    with pytest.warns(RuntimeWarning):  # (NumPy's: the median of nothing is nan)
        assert srcad.grad(median_of)(np.zeros(0)).shape == (0,)


def test_constant_lists_slices_of_lists_and_mixed_displays_reach_numpy_as_arrays():
    """A constant list or a list's slice passed to np.dot or `@` crashed its rule; a display
    mixing constants inside np.concatenate's list gave forward mode a None tangent."""
    x = np.array([0.5, -1.0, 2.0, 0.3])
    for fn in (constants_and_slices_to_dot, concatenates_a_mixed_display):
        assert_gradient_matches_finite_differences(fn, (x,), 0)
        np.testing.assert_allclose(srcad.jacobian(fn, mode="fwd")(x), srcad.grad(fn)(x),
                                   rtol=1e-12)


def test_tape_mode_astype_without_a_copy_is_the_array_itself():
    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(srcad.tape.grad(converts_without_a_copy)(x), 4.0 * x)


def product_of_a_list(x):
    return math.prod([x, x + 1.0, 2.0])


def test_second_derivative_of_math_prod():
    """math.prod's rule joined two list slices, which its own derivative could not follow."""
    assert srcad.hessian(product_of_a_list)(1.2) == pytest.approx(4.0)


def lists_beside_tensors(x, w):
    return np.dot([x[0] * x[1], np.sin(x[2])], w) + np.sum(x @ [1.0, 2.0, 3.0]) \
        + np.dot(x[:2], (0.5, -1.0))


def test_tape_mode_records_lists_beside_tensors_as_arrays():
    """A list NumPy took as an array, next to a tensor, reached the rules as a list (a
    TypeError in np.dot's); one holding tensors passes them their rows."""
    x, w = np.array([0.5, 1.5, 0.2]), np.array([0.5, -1.2])
    for got, expected in zip(srcad.tape.grad(lists_beside_tensors, wrt=(0, 1))(x, w),
                             srcad.grad(lists_beside_tensors, wrt=(0, 1))(x, w)):
        np.testing.assert_allclose(got, expected, rtol=1e-12)


def reduces_nothing(x):
    return functools.reduce(operator.add, [v for v in x if v > 10.0]) * 2.0


def test_reduce_of_nothing_raises_as_python_does():
    with pytest.raises(TypeError, match="reduce"):
        srcad.grad(reduces_nothing)(np.array([0.5, 1.0]))


def sum_over_axis_zero(x):
    return np.sum(x, axis=0) * 3.0 + np.sum(np.prod(x, axis=-1, keepdims=True) ** 2)


def test_a_reduction_along_axis_zero_of_a_0d_array():
    """NumPy takes axis 0 or -1 of a 0-d array (there are no axes); srcad divided by ndim."""
    x = np.array(2.0)
    assert srcad.grad(sum_over_axis_zero)(x) == 7.0
    assert srcad.tape.grad(sum_over_axis_zero)(x) == 7.0
    assert srcad.jvp(sum_over_axis_zero, (x,), (np.array(1.0),))[1] == 7.0


def matrix_product_sum(c, x):
    return np.sum(x * c)


@pytest.mark.parametrize("x", [np.matrix([[1.0, 2.0, 3.0]]),
                               np.ma.array([1.0, 2.0, 3.0], mask=[0, 1, 0])])
def test_matrices_and_masked_arrays_are_refused_as_wrt_arguments(x):
    """Their arithmetic is not the plain arrays' the rules follow: a np.matrix gradient came
    out as if `*` were elementwise."""
    from srcad.errors import NonDifferentiableInputError
    with pytest.raises(NonDifferentiableInputError, match="np.asarray"):
        srcad.grad(matrix_product_sum, wrt=1)(np.array([[1.0], [2.0], [3.0]]), x)


@pytest.mark.parametrize("other", [np.matrix([[1.0, 2.0, 3.0]]),
                                   np.ma.array([1.0, 2.0, 3.0], mask=[0, 1, 0])])
def test_matrices_and_masked_arrays_are_refused_as_other_arguments(other):
    """Passed alongside the differentiated argument, they changed its arithmetic too: the
    derivative failed inside a rule (`matrix.sum() got an unexpected keyword argument`).
    Refused after a call with a list there too, whose program they would have reused."""
    from srcad.errors import NonDifferentiableInputError
    x = np.array([[1.0], [2.0], [3.0]])
    for derivative in (srcad.grad(matrix_product_sum), srcad.value_and_grad(matrix_product_sum)):
        for _ in range(2):
            derivative(x, [[1.0, 2.0, 3.0]])
        with pytest.raises(NonDifferentiableInputError, match="argument 1 is a"):
            derivative(x, other)


def signs_under_powers(x):
    return np.sum(x * (-1) ** 2) + np.sum(x ** 2 * (-0.5) ** 3) + (-2.0) ** 2 * x[0]


@pytest.mark.parametrize("x", [np.arange(1.0, 4.0), np.array([0.5, -1.5])])
def test_a_negative_constant_raised_to_a_power_keeps_its_parentheses(x):
    """Constant(-1) ** 2 was written `-1 ** 2`, which Python reads as -(1 ** 2): value and
    gradient came out negated, silently."""
    value, gradient = srcad.value_and_grad(signs_under_powers)(x)
    assert value == pytest.approx(signs_under_powers(x))
    expected = 1.0 - 0.25 * x
    expected[0] += 4.0
    np.testing.assert_allclose(gradient, expected)
    np.testing.assert_allclose(srcad.grad(signs_under_powers)(x), expected)


def times_column_floor_maxima(x):
    return np.sum(x * np.max(np.floor(x), axis=0, keepdims=True))


def test_a_number_cotangent_times_a_smaller_operand_is_spread_to_the_argument():
    """`x * m` with m a kept-axes reduction of a value without derivative: x's cotangent
    from the uniform one of the sum is `g * m`, of m's shape, which must be spread over x
    (it raised an internal error about a (1, 4) gradient for a (3, 4) argument)."""
    x = np.arange(12.0).reshape(3, 4) / 3
    expected = np.broadcast_to(np.max(np.floor(x), axis=0, keepdims=True), x.shape)
    np.testing.assert_allclose(srcad.grad(times_column_floor_maxima)(x), expected)
    np.testing.assert_allclose(srcad.value_and_grad(times_column_floor_maxima)(x)[1], expected)
    np.testing.assert_allclose(srcad.tape.grad(times_column_floor_maxima)(x), expected)


# ---- derivatives handed back share no memory with what the caller passed (issue 29, case 6) --
_A = np.arange(6.0).reshape(2, 3)


def _through_a_global_matrix(x):
    return _A @ x


@pytest.mark.parametrize("mode", ["fwd", "rev", "auto"])
def test_a_jacobian_is_not_a_view_of_the_users_matrix(mode):
    jacobian = srcad.jacobian(_through_a_global_matrix, mode=mode)(np.ones(3))
    np.testing.assert_array_equal(jacobian, _A)
    assert not np.shares_memory(jacobian, _A)


def test_the_pullback_and_pushforward_of_the_identity_are_copies():
    x, u, t = np.ones(3), np.full(3, 2.0), np.full(3, 3.0)
    _, pullback = srcad.vjp(lambda x: x, x)
    gradient = pullback(u)
    assert not np.shares_memory(gradient, u)
    _, tangent = srcad.jvp(lambda x: x, (x,), (t,))
    assert not np.shares_memory(tangent, t) and not np.shares_memory(tangent, x)
    _, (first, second) = srcad.jvp(lambda a, b: (a, b), (x, x), (t, u))
    assert not np.shares_memory(first, t) and not np.shares_memory(second, u)
    gradient[:] = 0.0
    tangent[:] = 0.0
    np.testing.assert_array_equal(u, 2.0)
    np.testing.assert_array_equal(t, 3.0)


# ---- found by the differential fuzzer (tests/fuzzing.py) ----------------------------------------
def _element_copied_into_a_buffer(x, y):
    v0 = np.arctan(x)
    buf1 = np.zeros(2)
    buf1[1:] = x[:-1] * 0.5
    buf1[0] = v0[0]
    buf1[:-1] += np.sin(x[1:])
    v0 += 0.5 * np.sin(x)
    return np.sum(y * y) + np.sum(v0 * v0) + np.sum(buf1 * buf1)


def _array_stored_in_a_list(x):
    v = np.sin(x)
    items = [np.zeros(2)]
    items[0] = v
    v += 1.0
    return np.sum(items[0] * x)


def test_a_value_written_into_an_array_is_copied_not_held():
    """`buf[0] = v[0]` copies into an array made by NumPy, so a later `v += ...` changes
    nothing buf shows: it was refused as UnsoundAliasingError. A list holds what is stored
    in it, and that stays refused."""
    from tests.checks import assert_gradient_matches_finite_differences
    x, y = np.array([0.41088506, -0.69063986]), np.array([-1.37707943, -1.45041709])
    assert_gradient_matches_finite_differences(_element_copied_into_a_buffer, (x, y), 0)
    with pytest.raises(UnsoundAliasingError):
        srcad.grad(_array_stored_in_a_list)(x)


class _Doubling(np.ndarray):
    """Its own `*`: the plain array's derivative would be wrong for it."""

    def __mul__(self, other):
        return np.multiply(np.asarray(self), other) * 2.0


class _Tagged(np.ndarray):
    """Only an attribute: its arithmetic is the plain arrays'."""

    def __array_finalize__(self, obj):
        self.tag = getattr(obj, "tag", None)


def _product(x, y):
    return np.sum(x * y)


def test_an_array_subclass_with_arithmetic_of_its_own_is_refused(tmp_path):
    from srcad.errors import NonDifferentiableInputError
    x, y = np.arange(1.0, 4.0), np.ones(3)
    for call in (lambda: srcad.grad(_product)(x.view(_Doubling), y),
                 lambda: srcad.grad(_product)(x, y.view(_Doubling)),
                 lambda: srcad.jvp(_product, (x.view(_Doubling), y), (y, None))):
        with pytest.raises(NonDifferentiableInputError, match="_Doubling"):
            call()
    np.testing.assert_array_equal(srcad.grad(_product)(x.view(_Tagged), y), y)
    mapped = np.memmap(tmp_path / "x.bin", dtype=np.float64, mode="w+", shape=(3,))
    mapped[:] = x
    np.testing.assert_array_equal(srcad.grad(_product, wrt=1)(mapped, y), x)


def _transposed_by_sublists(a, weights):
    return np.sum(np.einsum(a, (0, 1), (1, 0)) * weights)


def test_einsum_in_its_sublist_form_is_differentiated():
    """`np.einsum(a, [0, 1], [1, 0])` passes the operand first, where the subscripts
    string goes: its rule took it for the subscripts and gave a zero gradient."""
    a, weights = np.arange(12.0).reshape(3, 4) / 7, np.arange(12.0).reshape(4, 3)
    np.testing.assert_array_equal(srcad.grad(_transposed_by_sublists)(a, weights), weights.T)
    _, slope = srcad.jvp(_transposed_by_sublists, (a, weights), (np.ones((3, 4)), None))
    assert slope == pytest.approx(np.sum(weights))


def _spread(x):
    return np.std(x, axis=0)


def test_std_of_one_element_has_a_zero_derivative():
    """Its value is zero whatever the element: the rule's g / (2 std) gave nan."""
    x = np.array([[3.5, -1.0]])
    np.testing.assert_array_equal(srcad.jacobian(_spread)(x), np.zeros((2, 1, 2)))
    np.testing.assert_array_equal(srcad.jvp(_spread, (x,), (np.ones((1, 2)),))[1], np.zeros(2))


def _nine_operands(x):
    return np.einsum("i,i,i,i,i,i,i,i,i->", *([np.ones(2)] * 8), x)


def test_einsum_of_more_operands_than_its_rules_cover_is_refused():
    from srcad.errors import UnsupportedDerivativeError
    with pytest.raises(UnsupportedDerivativeError, match="eight operands"):
        srcad.grad(_nine_operands)(np.array([0.5, 2.0]))


def _joined_cubes(x):
    return np.sum(np.r_[x, 2.0, 0:2, x[::-1]] ** 3)


def test_np_r_joins_differentiated_values_to_second_order():
    """The index of `np.r_[...]` carries the derivative; its JVP rule is differentiated
    again for the Hessian (forward over forward once met a generator there)."""
    x = np.array([0.5, -1.5])
    np.testing.assert_allclose(srcad.grad(_joined_cubes)(x), 6 * x ** 2, rtol=1e-12)
    np.testing.assert_allclose(srcad.hessian(_joined_cubes)(x), np.diag(12 * x), rtol=1e-12)
    second = srcad.jvp(lambda y: srcad.jvp(_joined_cubes, (y,), (np.ones(2),))[1],
                       (x,), (np.ones(2),))[1]
    assert second == pytest.approx(np.sum(12 * x))


def _quadratic_form(x, S, scale=1.0):
    return scale * (x @ S @ x)


def _symmetrized(*args, **kwargs):
    args = list(args)
    args[1] = 0.5 * (args[1] + args[1].T)
    return _quadratic_form(*args, **kwargs)


def test_forward_over_forward_of_a_list_of_arguments_written_into():
    """The tangent program copies the list's tangent to write its item (`owned`); that
    copy holds the list's items, not views of itself, so forward mode over it once refused
    the write as aliasing (autograd's symmetrized multivariate-normal tests)."""
    x, S, t = np.array([0.5, -1.0]), np.array([[2.0, 1.0], [0.0, 3.0]]), np.array([1.0, 2.0])

    def slope(y):
        return srcad.jvp(lambda z: _symmetrized(z, S, scale=2.0), (y,), (t,))[1]
    curvature = srcad.jvp(slope, (x,), (t,))[1]
    assert curvature == pytest.approx(2.0 * 2.0 * (t @ (0.5 * (S + S.T)) @ t))


def _implicit_sublists(a):
    return np.sum(np.einsum(a, [0, 30]) * np.array([[1.0, 2.0], [3.0, 4.0]]))


def test_einsum_sublist_labels_are_named_as_numpy_names_them():
    """NumPy names labels 0-25 with upper-case letters and 26-51 lower-case, and sorts the
    implicit output by them: the other way round, the gradient came out transposed."""
    a = np.array([[0.3, -0.7], [1.1, 0.2]])
    np.testing.assert_array_equal(srcad.grad(_implicit_sublists)(a), [[1.0, 2.0], [3.0, 4.0]])


def _joined_with_a_list(x):
    return np.sum(np.r_[[1.0, x[0]], x] ** 2 * np.arange(5.0))


def _range_to(x):
    return np.sum(np.r_[0.0:x[0]:5j] ** 2)


def test_np_r_pieces_as_lists_and_slices_with_float_bounds():
    from srcad.errors import UnsupportedDerivativeError
    x = np.array([0.3, -0.7, 1.1])
    expected = 2 * x * np.arange(2.0, 5.0) + np.array([2 * x[0], 0.0, 0.0])
    np.testing.assert_allclose(srcad.grad(_joined_with_a_list)(x), expected, rtol=1e-12)
    assert srcad.jvp(_joined_with_a_list, (x,), (np.ones(3),))[1] == pytest.approx(
        np.sum(expected))
    with pytest.raises(UnsupportedDerivativeError, match="float bound"):
        srcad.grad(_range_to)(x)


def _pair_of_pairs(x):
    return (x * 2.0, 1.0), 5.0


def _unpacked_twice(x):
    a, b = _pair_of_pairs(x)
    y, z = a
    return y * 3.0


def test_an_item_of_an_unpacked_item_carries_its_derivative():
    """`a, b = t; y, z = a`: `a` is only partly needed, and that once left `t` unneeded
    (a zero gradient in reverse mode)."""
    assert srcad.grad(_unpacked_twice)(1.5) == 6.0
    assert srcad.jvp(_unpacked_twice, (1.5,), (1.0,))[1] == 6.0


def _keyword_dict(x):
    d = dict(a=x * 2.0, b=np.sin(x), n=3)
    return np.sum(d["a"] * d["b"]) * d["n"]


def test_a_dict_built_from_keywords_is_a_display():
    """`dict(a=x, b=y)` (refused before: builtins.dict has rules for a copy only)."""
    x = np.array([0.3, -1.2])
    expected = 3 * (2 * np.sin(x) + 2 * x * np.cos(x))
    np.testing.assert_allclose(srcad.grad(_keyword_dict)(x), expected, rtol=1e-12)
    assert srcad.jvp(_keyword_dict, (x,), (np.ones(2),))[1] == pytest.approx(np.sum(expected))
    np.testing.assert_allclose(np.diag(srcad.hessian(_keyword_dict)(x)),
                               6 * (2 * np.cos(x) - x * np.sin(x)), rtol=1e-10)


def _zipped_dict(x):
    d = dict(zip(["a", "b"], [x, np.sin(x)]))
    return np.sum(d["a"] * d["b"])


def _paired_dict(x):
    d = dict([("a", x), ["b", x ** 2]], c=np.cos(x))
    return np.sum(d["a"] * d["b"] + d["c"])


def _generated_dict(x):
    d = dict((name, x * i) for i, name in enumerate(["a", "b"]))
    e = dict({"a": x}, b=x ** 3)
    return np.sum(d["b"] * e["a"] + e["b"])


DICT_BUILDS = [(_zipped_dict, lambda x: np.sin(x) + x * np.cos(x)),
               (_paired_dict, lambda x: 3 * x ** 2 - np.sin(x)),
               (_generated_dict, lambda x: 2 * x + 3 * x ** 2)]


@pytest.mark.parametrize("fn, derivative", DICT_BUILDS,
                         ids=[fn.__name__ for fn, _ in DICT_BUILDS])
def test_a_dict_built_from_pairs_is_a_display(fn, derivative):
    """`dict(zip(keys, values))`, `dict(pairs, k=v)`, `dict(generator)`, `dict(display, k=v)`
    (refused before: builtins.dict has rules for a copy only)."""
    x = np.array([0.3, -1.2])
    np.testing.assert_allclose(srcad.grad(fn)(x), derivative(x), rtol=1e-12)
    np.testing.assert_allclose(srcad.tape.grad(fn)(x), derivative(x), rtol=1e-12)
    assert srcad.jvp(fn, (x,), (np.ones(2),))[1] == pytest.approx(np.sum(derivative(x)))


def _key_given_twice(x):
    d = dict([("a", x)], a=x ** 3)
    e = {"b": x, "b": x * x}  # noqa: F601 (the later value is the one kept)
    return np.sum(d["a"] + e["b"])


def _own_dict(x):
    dict = lambda pairs: {"a": 3.0 * pairs[0][1]}  # noqa: E731 (shadows the builtin)
    return np.sum(dict([("a", x)])["a"])


def test_a_key_given_twice_keeps_the_later_value_and_a_local_dict_is_called():
    """`{"b": x, "b": y}` and `dict(pairs, a=...)` keep the later value: only it gets the
    key's cotangent (both did); a `dict` the function binds itself is not the builtin."""
    x = np.array([1.3, -0.4])
    np.testing.assert_allclose(srcad.grad(_key_given_twice)(x), 3 * x ** 2 + 2 * x)
    assert srcad.jvp(_key_given_twice, (x,), (np.ones(2),))[1] == pytest.approx(
        np.sum(3 * x ** 2 + 2 * x))
    np.testing.assert_allclose(srcad.grad(_own_dict)(x), np.full(2, 3.0))


def _appended_rows(a, b):
    return np.sum(np.append(a, b, axis=0) ** 2)


def test_a_nested_list_argument_gets_its_gradient_from_an_array():
    """np.append of nested lists: the cotangent reaching the list argument is an array,
    whose rows are the list's items."""
    a, b = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], [[7.0, 8.0, 9.0]]
    ga, gb = srcad.grad(_appended_rows, wrt=(0, 1))(a, b)
    assert ga == [[2.0, 4.0, 6.0], [8.0, 10.0, 12.0]] and gb == [[14.0, 16.0, 18.0]]


def _written_then_unpacked(x):
    t = [1.0, 1.0]
    t[0] = x
    y, z = t
    return np.sum(y)


def _appended_then_unpacked_twice(x):
    pairs = [(x, 1.0)]
    pairs.append((np.sin(x), 3.0))
    a, b = pairs
    y, z = b
    return np.sum(y)


@pytest.mark.parametrize("fn, derivative", [(_written_then_unpacked, np.ones_like),
                                            (_appended_then_unpacked_twice, np.cos)])
def test_a_list_written_into_and_then_unpacked_keeps_the_written_value_s_derivative(
        fn, derivative):
    """The list is only partly needed (one unpacked item); the write into it was skipped
    as unneeded, giving zero in both modes."""
    x = np.array([0.3, -0.7, 1.1])
    np.testing.assert_allclose(srcad.grad(fn)(x), derivative(x), rtol=1e-12)
    assert srcad.jvp(fn, (x,), (np.ones(3),))[1] == pytest.approx(np.sum(derivative(x)))


def test_the_vector_dot_rules_take_a_python_number_cotangent():
    """A third derivative of `np.dot` of two complex vectors handed its rule a Python
    complex for the scalar output's cotangent, which the rule indexed."""
    from srcad.ops.numpy_contractions import matmul_vjp_a, matmul_vjp_b
    a, b = np.array([1.0 + 2.0j, -0.5j]), np.array([0.5, 2.0 - 1.0j])
    np.testing.assert_allclose(matmul_vjp_a(1.5 + 0.5j, None, a, b), (1.5 + 0.5j) * b)
    np.testing.assert_allclose(matmul_vjp_b(2.0, None, a, b), 2.0 * a)


def _weighted(y, x=None, dx=1.0):
    return np.sum(y) * dx if x is None else np.sum(y * x)


def _weighted_by_keyword(y, x):
    return _weighted(y, x=x)


def _spaced_by_keyword(y):
    return _weighted(y, dx=0.5)


def test_a_rule_taking_args_and_kwargs_answers_for_an_argument_passed_by_name():
    """A rule `(g, ans, *args, **kwargs)` answers for its slot however the call passes the
    argument: by keyword, `x=x` reached no rule (a derivative silently 0), and a constant
    keyword crashed the transform ('dict' object has no attribute '_fields')."""
    y, x = np.array([1.0, 2.0]), np.array([0.5, 3.0])
    srcad.defvjp(_weighted, lambda g, ans, y, x=None, dx=1.0: g * (np.full_like(y, dx)
                                                                   if x is None else x),
                 lambda g, ans, *args, **kwargs: g * args[0])
    got = srcad.grad(_weighted_by_keyword, wrt=(0, 1))(y, x)
    np.testing.assert_allclose(got[0], x)
    np.testing.assert_allclose(got[1], y)
    np.testing.assert_allclose(srcad.grad(_spaced_by_keyword)(y), [0.5, 0.5])
    srcad.check_grads(_weighted_by_keyword, (y, x), wrt=(0, 1))
