"""The program behind `srcad.hvp` computes the output's tangent and nothing that only leads
to the output's value (transform/dead_code.py): products stay right, the user's calls with
effects still run, and a function that is not scalar is still refused."""

import numpy as np
import pytest

import srcad
from srcad.errors import NonScalarOutputError

R = np.random.default_rng(53)
SEEN = []


def logged(step):
    SEEN.append(step)
    return step


def loss_with_a_logged_step(w, X):
    margins = X @ w
    value = np.mean(np.log1p(np.exp(-margins)))
    step = logged(len(SEEN))           # a call with an effect whose result nobody reads: it runs
    return value + 0.5 * np.sum(w * w)


def loss_hand_hvp(w, X, v):
    s = 1.0 / (1.0 + np.exp(X @ w))
    return X.T @ (s * (1.0 - s) * (X @ v)) / X.shape[0] + v


def independent_of_w(w, c):
    return np.sum(c * c) + 0.0 * np.sum(np.zeros_like(w))


def vector_valued(w):
    return np.sin(w)


def test_products_match_the_analytic_hessian_and_effects_still_run():
    w, X, v = R.standard_normal(4), R.standard_normal((20, 4)), R.standard_normal(4)
    SEEN.clear()
    product = srcad.hvp(loss_with_a_logged_step)(w, X, v)
    np.testing.assert_allclose(product, loss_hand_hvp(w, X, v), rtol=1e-10)
    assert SEEN == [0]


def test_the_value_is_not_computed_by_the_program():
    source = srcad.hvp(lambda_free_loss).source
    assert "np.log1p" not in source and "np.mean(log" not in source
    # nor the tangent itself, which only seeds the gradient: the regulariser's is an outline
    assert "reduction_outline(np.sum" in source and "reduction_outline(np.mean" in source


def lambda_free_loss(w, X):
    return np.mean(np.log1p(np.exp(-(X @ w)))) + 0.5 * np.sum(w * w)


def test_a_function_not_depending_on_the_argument_gives_zeros():
    product = srcad.hvp(independent_of_w)(np.ones(3), np.ones(2), np.ones(3))
    np.testing.assert_array_equal(product, np.zeros(3))


def test_a_vector_valued_function_is_refused():
    with pytest.raises(NonScalarOutputError):
        srcad.hvp(vector_valued)(np.ones(3), np.ones(3))


def test_a_broadcast_sum_of_two_tangents_has_the_output_shape():
    def f(x, y):
        return np.sum(np.sin(x + y) ** 2)

    x, y, v = R.standard_normal((3, 1)), R.standard_normal((1, 4)), R.standard_normal((3, 1))
    eps = 1e-5
    gradient = srcad.grad(f)
    expected = (gradient(x + eps * v, y) - gradient(x - eps * v, y)) / (2 * eps)
    np.testing.assert_allclose(srcad.hvp(f)(x, y, v), expected, rtol=1e-6, atol=1e-8)
    _, tangent = srcad.jvp(lambda a, b: np.sin(a + b), (x, y), (v, np.ones((1, 4))))
    assert tangent.shape == (3, 4)
