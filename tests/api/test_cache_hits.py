"""A derivative made anew for every call (`srcad.grad(f)(x)` written inline in a Newton
loop), of the same function or of a closure made anew with the same code, transforms once
on every path: the later calls are cache hits."""
import numpy as np
import pytest

import srcad


def total(x, a):
    return np.sum(x * x * x - a * x + np.sin(x))


def curve(x, a):
    return x * x * x - a * x + np.sin(x)


def scalar_residual(a):
    def residual(x):
        return x * x * x - a * x + np.sin(x)
    return residual


def summed_residual(a):
    def residual(x):
        return total(x, a)
    return residual


def vector_residual(a):
    def residual(x):
        return curve(x, a)
    return residual


X = np.array([0.3, 0.5, 0.9])
PATHS = {
    "grad of a float": (scalar_residual, lambda f: srcad.grad(f)(0.7)),
    "grad of an array": (summed_residual, lambda f: srcad.grad(f)(X)),
    "value_and_grad of a float": (scalar_residual, lambda f: srcad.value_and_grad(f)(0.7)),
    "value_and_grad of an array": (summed_residual, lambda f: srcad.value_and_grad(f)(X)),
    "vjp": (vector_residual, lambda f: srcad.vjp(f, X)[1](np.ones(3))),
    "jvp": (vector_residual, lambda f: srcad.jvp(f, (X,), (np.ones(3),))),
    "jacobian": (vector_residual, lambda f: srcad.jacobian(f)(X)),
    "jacobian by rows": (vector_residual, lambda f: srcad.jacobian(f, mode="rev")(X)),
    "hvp": (summed_residual, lambda f: srcad.hvp(f)(X, np.ones(3))),
}


@pytest.fixture(autouse=True)
def empty_cache():
    srcad.clear_cache()
    yield
    srcad.clear_cache()


@pytest.mark.parametrize("path", PATHS)
def test_closures_made_anew_hit_the_cache(path):
    make, call = PATHS[path]
    first = call(make(1.0))
    made = srcad.cache_info().misses
    assert made >= 1
    for a in (1.5, 2.0, 2.5, 3.0):
        call(make(a))
    assert srcad.cache_info().misses == made
    assert srcad.cache_info().hits > 0
    again = call(make(1.0))  # (the values are the closure's, read at call time)
    for got, expected in zip(np.atleast_1d(np.asarray(again, dtype=object)),
                             np.atleast_1d(np.asarray(first, dtype=object))):
        np.testing.assert_allclose(np.asarray(got, dtype=float), np.asarray(expected, dtype=float))


@pytest.mark.parametrize("call", [
    lambda f: srcad.grad(srcad.grad(f))(0.7),
    lambda f: srcad.hessian(f)(0.7),
], ids=["grad of grad", "hessian"])
def test_second_derivatives_of_one_function_made_anew_hit_the_cache(call):
    f = scalar_residual(2.0)
    expected = call(f)
    made = srcad.cache_info().misses
    for _ in range(4):
        assert call(f) == pytest.approx(expected)
    assert srcad.cache_info().misses == made
    assert expected == pytest.approx(6 * 0.7 - np.sin(0.7))
