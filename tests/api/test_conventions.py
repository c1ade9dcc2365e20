"""The spellings users bring from JAX and autograd: `wrt` by position, `argnums=`, `has_aux=`
on every derivative that has a value to differentiate, and real signatures."""
import inspect

import numpy as np
import pytest

import srcad
from srcad.errors import UnsupportedDerivativeError, UsageError


def product(x, y):
    return np.sum(x * y ** 2)


def with_aux(x, y):
    return np.sum(x * y ** 2), {"norm": np.linalg.norm(x)}


X, Y = np.array([1.0, 2.0]), np.array([3.0, -1.0])


@pytest.mark.parametrize("make", [
    lambda: srcad.grad(product, 1), lambda: srcad.grad(product, argnums=1),
    lambda: srcad.grad(product, wrt=1), lambda: srcad.grad(argnums=1)(product),
    lambda: srcad.grad(product, "y")])
def test_wrt_by_position_and_argnums_select_the_same_argument(make):
    assert np.allclose(make()(X, Y), 2 * X * Y)


def test_every_derivative_takes_argnums():
    square = lambda x, y: x * y ** 2  # noqa: E731
    assert srcad.value_and_grad(product, argnums=(0, 1))(X, Y)[1][1] == pytest.approx(2 * X * Y)
    assert srcad.vjp(product, X, Y, argnums=1)[1](1.0) == pytest.approx(2 * X * Y)
    assert np.allclose(srcad.jacobian(square, argnums=1)(X, Y), np.diag(2 * X * Y))
    assert np.allclose(srcad.hessian(product, argnums=1)(X, Y), np.diag(2 * X))
    assert np.allclose(srcad.hvp(product, argnums=1)(X, Y, np.ones(2)), 2 * X)
    batch = np.stack([Y, 2 * Y])
    assert srcad.batch_jacobian(lambda x, y: x * y ** 2, argnums=1)(1.0, batch).shape == (2, 2, 2)


@pytest.mark.parametrize("make", [srcad.grad, srcad.value_and_grad, srcad.jacobian,
                                  srcad.hessian, srcad.hvp, srcad.batch_jacobian])
def test_wrt_and_argnums_together_are_refused(make):
    with pytest.raises(UsageError, match="give one of them"):
        make(product, 0, argnums=1)
    with pytest.raises(UsageError, match="give one of them"):
        srcad.vjp(product, X, Y, wrt=0, argnums=1)


def test_grad_with_aux_returns_the_gradient_and_the_aux_as_jax_does():
    gradient, aux = srcad.grad(with_aux, has_aux=True)(X, Y)
    assert np.allclose(gradient, Y ** 2) and aux["norm"] == pytest.approx(np.sqrt(5.0))
    (value, aux), gradient = srcad.value_and_grad(with_aux, 1, has_aux=True)(X, Y)
    assert value == pytest.approx(11.0) and np.allclose(gradient, 2 * X * Y)
    output, pullback, aux = srcad.vjp(with_aux, X, Y, has_aux=True)
    assert output == pytest.approx(11.0) and aux["norm"] == pytest.approx(np.sqrt(5.0))
    assert np.allclose(pullback(2.0), 2 * Y ** 2)
    output, tangent, aux = srcad.jvp(with_aux, (X, Y), (np.ones(2), None), has_aux=True)
    assert output == pytest.approx(11.0) and tangent == pytest.approx(np.sum(Y ** 2))
    assert aux["norm"] == pytest.approx(np.sqrt(5.0))


def grad_with_aux_inside(x):
    gradient, _ = srcad.grad(with_aux, has_aux=True)(x, Y)
    return np.sum(gradient * x)


def vjp_with_aux_inside(x):
    _, pullback, _ = srcad.vjp(with_aux, x, Y, has_aux=True)
    return np.sum(pullback(1.0) * x)


def jvp_with_aux_inside(x):
    _, tangent, _ = srcad.jvp(with_aux, (x, Y), (x, None), has_aux=True)
    return tangent


@pytest.mark.parametrize("outer", [grad_with_aux_inside, vjp_with_aux_inside,
                                   jvp_with_aux_inside])
def test_a_derivative_with_aux_inside_a_differentiated_function_is_refused_with_the_fix(outer):
    with pytest.raises(UnsupportedDerivativeError, match="has_aux=True"):
        srcad.grad(outer)(X)


@pytest.mark.parametrize("name", ["grad", "value_and_grad", "vjp", "jacobian", "hessian",
                                  "hvp", "batch_jacobian"])
def test_signatures_show_the_real_parameters(name):
    parameters = inspect.signature(getattr(srcad, name)).parameters
    assert "argnums" in parameters and "wrt" in parameters
    assert parameters["argnums"].kind is inspect.Parameter.KEYWORD_ONLY
    assert list(parameters)[0] == "fn"
    if name in ("grad", "value_and_grad", "vjp"):
        assert parameters["has_aux"].default is False


def test_jvp_takes_has_aux_as_jax_does():
    assert inspect.signature(srcad.jvp).parameters["has_aux"].default is False
