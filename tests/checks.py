"""Shared assertions: a gradient checked against central finite differences."""
import numpy as np

import srcad
from srcad.testing import numerical_gradient


def positions(wrt) -> tuple:
    return wrt if isinstance(wrt, tuple) else (wrt,)


def assert_gradient_matches_finite_differences(fn, args, wrt, rtol=1e-5, atol=1e-6,
                                               numeric_fn=None):
    """srcad.grad(fn, wrt)(*args) against central differences of `numeric_fn` (default
    `fn`), argument by argument, values and shapes."""
    gradients = srcad.grad(fn, wrt=wrt)(*args)
    gradients = gradients if isinstance(wrt, tuple) else (gradients,)
    for position, gradient in zip(positions(wrt), gradients):
        expected = numerical_gradient(numeric_fn or fn, args, position)
        np.testing.assert_allclose(gradient, expected, rtol=rtol, atol=atol)
        assert np.shape(gradient) == np.shape(args[position])
