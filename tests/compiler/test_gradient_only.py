"""`srcad.grad` runs a program that returns the gradient alone and computes of the loss value
only its shape and dtype where nothing else is read of it (transform/outline.py): gradients
equal value_and_grad's on every corpus program, the output is still checked, and what the
outline cannot stand for (integers, lists, effects) is still computed."""

import operator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import srcad
from srcad.compiler import cache
from srcad.errors import NonScalarOutputError, UnsupportedSyntaxError
from srcad.kernels.outlines import Outline, cotangent_number, joint_outline, outline
from tests.checks import assert_gradient_matches_finite_differences, corpus_cases

R = np.random.default_rng(61)
CALLS = []


@pytest.mark.parametrize("fn, args, wrt", list(corpus_cases()))
def test_gradients_equal_value_and_grads_on_the_corpus(fn, args, wrt):
    import copy
    expected = srcad.value_and_grad(fn, wrt=wrt)(*copy.deepcopy(args))[1]
    got = srcad.grad(fn, wrt=wrt)(*copy.deepcopy(args))
    for g, e in zip(*(v if isinstance(wrt, tuple) else (v,) for v in (got, expected))):
        np.testing.assert_allclose(np.asarray(g, float), np.asarray(e, float),
                                   rtol=1e-12, atol=1e-12)


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def counted(x):
    y = np.sin(x) * 2.0
    CALLS.append(1)                       # an effect: it runs in the gradient-only program
    return np.sum(y)


def with_integers(x):
    count = np.sum(x > 0) + len(x) // 2   # integer values: computed, never outlined
    return np.sum(x * x) + count


def with_builtin_pow(x):
    return np.sum(pow(x, 3) + x ** 2)     # the user's `pow` next to the outline's operator


def times_a_list(x):
    return np.sum(x * [1.0, 2.0, 3.0] + 1.0)


def vector(x):
    return np.sin(x) * 2.0


def with_an_unused_value(x):
    unused = x * 2.0  # noqa: F841        (dropped, and nothing releases it afterwards)
    return np.sum(x ** 2)


def one_element_vector(x):
    return x * 3.0 + x ** 3               # shape (1,): the seed has that shape too


def python_power(x, s):
    return np.sum(x) + (s - 10.0) ** 0.5  # complex in Python's arithmetic: refused


def times_a_flag(x, flag):
    y = x * 2.0
    return np.sum(y * flag + y * (1.0, 2.0, 3.0))


def summed_with_defaults(x):
    return np.sum(x * x, axis=None, keepdims=False) + np.mean(x, None)


def positional_out(x):
    buffer = np.zeros(3)
    np.multiply(x, 2.0, buffer)           # `out` by position: written in place, refused
    return np.sum(buffer * x)


def complex_valued(x):
    return np.sum(x * 1j + x)


def test_the_loss_value_is_outlined():
    source = cache.compiled_adjoint(rosenbrock, ("x",), mode="gradient").source
    assert "mul_5 = joint_outline(mul, sub_3) or outline(mul, 100.0, outline(pow, sub_3, 2))" \
        in source
    assert "sum_10 = joint_outline(np.sum, mul_5, sub_7) or reduction_outline(np.sum, outline(" \
        "add, mul_5, outline(pow, sub_7, 2)))" in source
    x = np.linspace(-1.5, 1.5, 11)
    assert_gradient_matches_finite_differences(rosenbrock, (x,), 0)


@pytest.mark.parametrize("fn", [with_integers, with_builtin_pow, times_a_list,
                                with_an_unused_value, summed_with_defaults])
def test_what_an_outline_cannot_stand_for_is_computed(fn):
    assert_gradient_matches_finite_differences(fn, (R.standard_normal(3),), 0)


def test_effects_on_the_value_path_still_run():
    CALLS.clear()
    srcad.grad(counted)(np.ones(3))
    assert CALLS == [1]


def test_float32_gradients_stay_float32():
    x = R.standard_normal(5).astype(np.float32)
    gradient = srcad.grad(rosenbrock)(x)
    assert gradient.dtype == np.float32
    np.testing.assert_allclose(gradient, srcad.value_and_grad(rosenbrock)(x)[1], rtol=1e-6)


@pytest.mark.parametrize("fn, error", [(vector, NonScalarOutputError),
                                       (complex_valued, NonScalarOutputError),
                                       (positional_out, UnsupportedSyntaxError)])
def test_the_output_is_still_checked(fn, error):
    with pytest.raises(error):
        srcad.grad(fn)(np.ones(3))
    with pytest.raises(NonScalarOutputError, match="shape \\(3,\\)"):
        srcad.grad(vector)(np.ones(3))


def test_a_one_element_output_is_seeded_with_its_shape():
    x = np.array([2.0])
    np.testing.assert_allclose(srcad.grad(one_element_vector)(x), [15.0])
    np.testing.assert_allclose(srcad.hvp(one_element_vector)(x, np.ones(1)), [12.0])


def chained(x, y):
    z = x * 2.0 - y                       # a chain of outlines read by nothing else: joined
    return np.sum((z ** 2 / 3 + 1.0) * 0.5)


_SECOND_OPERANDS = {
    "same": lambda x: np.cos(x), "float32": lambda x: np.cos(x).astype(np.float32),
    "integers": lambda x: np.arange(x.size).reshape(x.shape), "column": lambda x: np.ones((2, 1)),
    "list": lambda x: np.cos(x).tolist(), "complex": lambda x: np.cos(x) + 0.5j,
    "number": lambda x: 0.7, "wider": lambda x: np.ones((4, *x.shape[1:])),
}


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
@pytest.mark.parametrize("second", sorted(_SECOND_OPERANDS))
def test_a_joined_chain_of_outlines_is_what_the_chain_gives(second, dtype):
    """`joint_outline` stands for the chain where its leaves share one inexact dtype and
    shape; elsewhere the chain runs step by step: the gradient, its dtype and the errors
    are value_and_grad's, which computes every value."""
    assert "joint_outline(np.sum, z) or" in cache.compiled_adjoint(chained, ("x",),
                                                                   mode="gradient").source
    x = R.standard_normal((2, 3)).astype(dtype)
    y = _SECOND_OPERANDS[second](x)
    try:
        expected = srcad.value_and_grad(chained)(x, y)[1]
    except Exception as error:
        with pytest.raises(type(error)):
            srcad.grad(chained)(x, y)
        return
    got = srcad.grad(chained)(x, y)
    assert got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=1e-6)


def raises_in_order(x, y, z, A):
    t = y * z                             # y (3,), z (4,): raises here, as the function does
    B = np.linalg.inv(A)                  # (and not here, after the outline moved past it)
    u = t + 1.0
    return np.sum(u) + np.sum(B @ x)


def appends_between(x, y, z):
    t = y * z
    z.append(1.0)                         # the outline of `t` is that of y * z before this
    u = t + 1.0
    return np.sum(u) + np.sum(x * y) + np.sum(x[:, None] * z)


def test_outlines_join_only_where_nothing_lies_between():
    """(found by review: a join across statements ran them before a step's error, and read
    a list after they changed it)"""
    x, A = np.ones(3), np.zeros((3, 3))
    with pytest.raises(ValueError, match="broadcast"):
        srcad.grad(raises_in_order)(x, np.ones(3), np.ones(4), A)
    for gradient in (srcad.grad(appends_between), srcad.value_and_grad(appends_between)):
        result = gradient(np.array([0.5, 1.0, 2.0]), np.array([1.0, 2.0, 3.0]), [1.0, 2.0, 3.0])
        np.testing.assert_allclose(result if gradient.__class__.__name__ == "_Grad"
                                   else result[1], [8.0, 9.0, 10.0])


def test_arithmetic_on_python_numbers_is_computed():
    with pytest.raises(NonScalarOutputError, match="complex"):
        srcad.grad(python_power)(np.ones(3), 2.0)


@pytest.mark.parametrize("flag", [True, 2, 0.5])
def test_numbers_and_sequences_next_to_an_outline(flag):
    x = R.standard_normal(3)
    np.testing.assert_allclose(srcad.grad(times_a_flag)(x, flag),
                               srcad.value_and_grad(times_a_flag)(x, flag)[1], rtol=1e-12)


# ---- the runtime helpers against NumPy itself ---------------------------------------------------
_DTYPES = [np.float16, np.float32, np.float64, np.complex64, np.complex128, np.int32, np.int64,
           np.bool_]
_OPERANDS = st.one_of(
    st.tuples(st.sampled_from(_DTYPES), st.sampled_from([(), (3,), (1, 3), (2, 3), (2, 1)]))
    .map(lambda kind: np.ones(kind[1], kind[0])),
    st.sampled_from([2, 0.5, 1j, True, np.float32(1.5), np.float64(2.0), np.int64(3),
                     [1.0, 2.0, 3.0]]))


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([operator.add, operator.mul, operator.truediv, np.subtract, np.exp]),
       st.lists(_OPERANDS, min_size=1, max_size=3))
def test_an_outline_has_the_shape_and_dtype_numpy_gives(fn, operands):
    operands = operands[:1] if fn is np.exp else operands[:2]
    try:
        with np.errstate(all="ignore"):
            computed = fn(*operands)
    except (TypeError, ValueError):  # no such operation, or shapes that do not broadcast
        return
    outlined = outline(fn, *operands)
    if type(outlined) is Outline:
        assert (outlined.shape, outlined.dtype) == (np.shape(computed), np.asarray(computed).dtype)
        as_outlines = [Outline(o.shape, o.dtype) if type(o) is np.ndarray else o for o in operands]
        again = outline(fn, *as_outlines)
        assert (again.shape, again.dtype) == (outlined.shape, outlined.dtype)
    else:  # computed where an outline cannot stand for the result
        np.testing.assert_array_equal(outlined, computed)


@given(st.sampled_from([1.0, 2, np.float16(1), np.float32(2), np.float64(3), np.complex64(1j),
                        np.longdouble(1), np.int32(2), True]))
def test_a_uniform_cotangent_has_the_precision_of_the_array_it_stands_for(g):
    number = cotangent_number(g)
    assert np.asarray(number).dtype == srcad.kernels.adjoints.expand_reduced(g, np.ones(2)).dtype
    assert number == g
