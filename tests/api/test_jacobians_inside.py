"""`srcad.jacobian`, `srcad.hessian` and `srcad.hvp` called inside a function srcad
differentiates (a Jacobian penalty, a Newton step, autograd's `jacobian(jacobian(f))`): each
runs as plain code srcad differentiates (rows of `srcad.vjp`, the pullback of a gradient),
checked against central differences in reverse and forward mode and to the next order."""
import numpy as np
import pytest

import srcad
from srcad.api.testing import numerical_gradient
from srcad.errors import UnsupportedDerivativeError
from tests.checks import assert_gradient_matches_finite_differences


def field(x):
    return np.sin(x) * x[0] + x ** 3


def energy(x, scale):
    return np.sum(np.sin(x) * x[0] + x ** 3) * scale


def jacobian_penalty(x):
    return np.sum(srcad.jacobian(field)(x) ** 2)


def hessian_trace(x):
    return np.trace(srcad.hessian(energy)(x, 1.5))


def newton_step(x):
    """x - H⁻¹ g, its Hessian-vector product checked: H (H⁻¹ g) = g."""
    g = srcad.grad(energy)(x, 1.5)
    step = np.linalg.solve(srcad.hessian(energy)(x, 1.5), g)
    return np.sum((x - step) ** 2) + np.sum(srcad.hvp(energy)(x, 1.5, step) * g)


def scaled_jacobian(s, x):
    return np.sum(srcad.jacobian(energy, wrt=1)(x, s) ** 2)


X = np.array([0.3, 0.7, 1.1])
CASES = [(jacobian_penalty, (X,), 0), (hessian_trace, (X,), 0), (newton_step, (X,), 0),
         (scaled_jacobian, (0.8, X), (0, 1))]


@pytest.mark.parametrize("fn, args, wrt", CASES, ids=[fn.__name__ for fn, *_ in CASES])
def test_reverse_and_forward_modes_match_differences(fn, args, wrt):
    assert_gradient_matches_finite_differences(fn, args, wrt, rtol=1e-5, atol=1e-7)
    tangents = tuple(np.ones_like(a) if isinstance(a, np.ndarray) else 1.0 for a in args)
    _, slope = srcad.jvp(fn, args, tangents)
    expected = sum(np.sum(numerical_gradient(fn, args, p)) for p in range(len(args)))
    assert slope == pytest.approx(expected, rel=1e-5)


def test_a_jacobian_of_a_jacobian_has_every_order():
    """autograd's `jacobian(jacobian(f))`, and the Hessian of a Jacobian penalty."""
    assert srcad.jacobian(srcad.jacobian(field))(X).shape == (3, 3, 3)
    second = srcad.jacobian(srcad.jacobian(field))(X)
    numeric = np.stack([numerical_gradient(lambda x: srcad.jacobian(field)(x)[i, j], (X,), 0)
                        for i in range(3) for j in range(3)]).reshape(3, 3, 3)
    np.testing.assert_allclose(second, numeric, rtol=1e-5, atol=1e-7)
    hessian = srcad.hessian(jacobian_penalty)(X)
    numeric = np.stack([numerical_gradient(lambda x: srcad.grad(jacobian_penalty)(x)[i],
                                           (X,), 0) for i in range(3)])
    np.testing.assert_allclose(hessian, numeric, rtol=1e-4, atol=1e-6)


def container_jacobian(x):
    return np.sum(srcad.jacobian(lambda d: d["a"] * 2.0)({"a": x})["a"])


def test_a_jacobian_in_a_container_is_refused_with_the_reason():
    with pytest.raises(UnsupportedDerivativeError, match="one array or number argument"):
        srcad.grad(container_jacobian)(X)
