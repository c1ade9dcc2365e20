"""`has_aux=True` on jacobian, hessian, hvp and tape mode's grad, as on grad/vjp/jvp: the
function returns `(output, aux)`, only `output` is differentiated, the derivative function
returns `(derivative, aux)`; checked against finite differences of the output alone."""
import inspect

import numpy as np
import pytest

import srcad
from srcad.api.testing import numerical_gradient
from srcad.errors import AuxOutputError, UnsupportedDerivativeError

X = np.array([0.3, 1.2, -0.4])
W = np.array([1.5, 0.5, 2.0])
V = np.array([0.7, -1.0, 0.2])


def vector_with_aux(x, w):
    y = np.sin(x) * w + x[0] * x[2]
    return y, {"mean": np.mean(y), "count": len(x)}


def loss_with_aux(x, w):
    y = np.sin(x) * w
    return np.sum(y ** 2) + x[0] * x[1] ** 2, [y, "label"]


def loss_gradient(x, w):  # (by hand: the oracle of the Hessians differentiates it numerically)
    return 2 * np.sin(x) * np.cos(x) * w ** 2 + np.array([x[1] ** 2, 2 * x[0] * x[1], 0.0])


def numerical_jacobian(fn, args, position):
    return np.stack([numerical_gradient(lambda *a: fn(*a)[k], args, position)
                     for k in range(np.size(fn(*args)))])


def expected_aux(fn, *args):
    return fn(*args)[1]


def assert_same_aux(aux, expected):
    assert type(aux) is type(expected)
    for got, want in zip(aux.values() if isinstance(aux, dict) else aux,
                         expected.values() if isinstance(expected, dict) else expected):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("mode", ["auto", "fwd", "rev"])
@pytest.mark.parametrize("wrt", [0, "w"])
def test_jacobian_with_aux(mode, wrt):
    position = 0 if wrt == 0 else 1
    jac, aux = srcad.jacobian(vector_with_aux, wrt=wrt, mode=mode, has_aux=True)(X, W)
    expected = numerical_jacobian(lambda x, w: vector_with_aux(x, w)[0], (X, W), position)
    np.testing.assert_allclose(jac, expected, rtol=1e-6, atol=1e-9)
    assert_same_aux(aux, expected_aux(vector_with_aux, X, W))


def test_jacobian_with_aux_in_two_arguments_is_the_one_without():
    (jx, jw), aux = srcad.jacobian(vector_with_aux, wrt=(0, 1), has_aux=True)(X, W)
    plain = srcad.jacobian(lambda x, w: vector_with_aux(x, w)[0], wrt=(0, 1))(X, W)
    np.testing.assert_allclose(jx, plain[0])
    np.testing.assert_allclose(jw, plain[1])
    assert aux["count"] == 3


def test_hessian_with_aux():
    hess, aux = srcad.hessian(loss_with_aux, has_aux=True)(X, W)
    np.testing.assert_allclose(loss_gradient(X, W),
                               numerical_gradient(lambda x, w: loss_with_aux(x, w)[0],
                                                  (X, W), 0), rtol=1e-6)
    expected = numerical_jacobian(loss_gradient, (X, W), 0)
    np.testing.assert_allclose(hess, expected, rtol=1e-6, atol=1e-8)
    assert_same_aux(aux, expected_aux(loss_with_aux, X, W))


def test_hvp_with_aux():
    product, aux = srcad.hvp(loss_with_aux, has_aux=True)(X, W, V)
    expected = numerical_jacobian(loss_gradient, (X, W), 0) @ V
    np.testing.assert_allclose(product, expected, rtol=1e-6, atol=1e-8)
    assert_same_aux(aux, expected_aux(loss_with_aux, X, W))


def test_tape_grad_with_aux():
    gradient, aux = srcad.tape.grad(loss_with_aux, has_aux=True)(X, W)
    np.testing.assert_allclose(gradient, loss_gradient(X, W), rtol=1e-12)
    assert_same_aux(aux, expected_aux(loss_with_aux, X, W))
    assert type(aux[0]) is np.ndarray  # (a value, not the tensor the run computed it as)
    gw, aux = srcad.tape.grad(wrt="w", has_aux=True)(loss_with_aux)(X, W)  # (as a decorator)
    np.testing.assert_allclose(gw, srcad.grad(lambda x, w: loss_with_aux(x, w)[0], 1)(X, W))


def test_the_same_options_give_the_same_function():
    assert srcad.jacobian(vector_with_aux, has_aux=True) \
        is srcad.jacobian(vector_with_aux, has_aux=True)
    assert srcad.hessian(loss_with_aux, has_aux=True) \
        is not srcad.hessian(loss_with_aux, 1, has_aux=True)


def not_a_pair(x, w):
    return np.sum(x * w)


def a_triple(x, w):
    return np.sum(x * w), 1, 2


@pytest.mark.parametrize("fn", [not_a_pair, a_triple])
@pytest.mark.parametrize("derivative", [
    lambda f: srcad.jacobian(f, has_aux=True)(X, W),
    lambda f: srcad.jacobian(f, mode="fwd", has_aux=True)(X, W),
    lambda f: srcad.hessian(f, has_aux=True)(X, W),
    lambda f: srcad.hvp(f, has_aux=True)(X, W, V),
    lambda f: srcad.jvp(f, (X, W), (V, None), has_aux=True),
    lambda f: srcad.tape.grad(f, has_aux=True)(X, W),
    lambda f: srcad.grad(f, has_aux=True)(X, W),
    lambda f: srcad.value_and_grad(f, (0, 1), has_aux=True)(X, W),
    lambda f: srcad.grad(f, has_aux=True)(0.5, 2.0),  # (the program on Python floats)
    lambda f: srcad.grad(f, has_aux=True, backend="numba")(X, W),
], ids=["jacobian", "jacobian_fwd", "hessian", "hvp", "jvp", "tape_grad", "grad",
        "value_and_grad", "grad_floats", "grad_numba"])
def test_a_function_not_returning_a_pair_is_refused(fn, derivative):
    with pytest.raises(AuxOutputError, match=r"has_aux=True\) differentiates a function "
                       r"that returns a pair") as raised:
        derivative(fn)
    assert isinstance(raised.value, TypeError)  # (what JAX raises)
    assert "drop has_aux=True" in str(raised.value)


def test_a_derivative_with_aux_is_not_differentiated_again():
    def outer(x):
        return srcad.hvp(loss_with_aux, has_aux=True)(x, W, V)[0][0]
    with pytest.raises(UnsupportedDerivativeError, match=r"srcad.hvp\(..., has_aux=True\)"):
        srcad.grad(outer)(X)


@pytest.mark.parametrize("name", ["jacobian", "hessian", "hvp"])
def test_signatures_show_has_aux(name):
    assert inspect.signature(getattr(srcad, name)).parameters["has_aux"].default is False
    assert inspect.signature(srcad.tape.grad).parameters["has_aux"].default is False
