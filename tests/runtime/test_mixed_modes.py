"""Derivatives of one mode called where the other differentiates: source mode
differentiates `srcad.tape.grad(h)` as the function `srcad.grad(h)` (not h itself, which its
`__wrapped__` names), and tape mode refuses a source-mode derivative with a clear error."""

import numpy as np
import pytest

import srcad
from srcad.errors import NonDifferentiableInputError

X = np.array([0.3, 0.7, -1.1])
V = np.array([1.0, -2.0, 0.5])


def f(x):
    return np.sum(np.sin(x) * x)


def hessian_of_f(x):
    return np.diag(2.0 * np.cos(x) - x * np.sin(x))


def directional_tape(z):
    return np.sum(srcad.tape.grad(f)(z) * V)


def directional_source(z):
    return np.sum(srcad.grad(f)(z) * V)


def test_grad_of_a_function_calling_tape_grad_is_a_hessian_vector_product():
    np.testing.assert_allclose(srcad.grad(directional_tape)(X), hessian_of_f(X) @ V,
                               rtol=1e-12)


@pytest.mark.parametrize("mode", ["fwd", "rev", "auto"])
def test_jacobian_of_tape_grad_is_the_hessian(mode):
    np.testing.assert_allclose(srcad.jacobian(srcad.tape.grad(f), mode=mode)(X),
                               hessian_of_f(X), rtol=1e-12, atol=1e-15)


def test_jvp_of_tape_grad_is_a_hessian_vector_product():
    _, tangent = srcad.jvp(srcad.tape.grad(f), (X,), (V,))
    np.testing.assert_allclose(tangent, hessian_of_f(X) @ V, rtol=1e-12)


def test_tape_mode_refuses_a_source_mode_derivative_with_the_fix():
    with pytest.raises(NonDifferentiableInputError, match="srcad.tape.grad"):
        srcad.tape.grad(directional_source)(X)
