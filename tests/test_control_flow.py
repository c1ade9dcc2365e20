"""Control flow: every corpus program against finite differences, for every input set."""
import numpy as np
import pytest

import srcad
from srcad.testing import numerical_gradient
from tests.control_programs import CORPUS

CASES = [(fn, args, wrt) for fn, arg_sets, wrt in CORPUS for args in arg_sets]
IDS = [f"{fn.__name__}-{i}" for i, (fn, _, _) in enumerate(CASES)]


@pytest.mark.parametrize("fn, args, wrt", CASES, ids=IDS)
def test_gradient_matches_finite_differences(fn, args, wrt):
    positions = wrt if isinstance(wrt, tuple) else (wrt,)
    gradients = srcad.grad(fn, wrt=wrt)(*args)
    gradients = gradients if isinstance(wrt, tuple) else (gradients,)
    for position, gradient in zip(positions, gradients):
        np.testing.assert_allclose(gradient, numerical_gradient(fn, args, position),
                                   rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("fn, args, wrt", CASES, ids=IDS)
def test_value_is_the_function_value(fn, args, wrt):
    value, _ = srcad.value_and_grad(fn, wrt=wrt)(*args)
    np.testing.assert_allclose(value, fn(*args))


def test_repeated_calls_leave_no_state_behind():
    from tests.control_programs import rnn
    x, W = np.array([0.3, -0.2]), np.array([[0.5, 0.1], [-0.3, 0.8]])
    gradient = srcad.grad(rnn, wrt=1)
    first = gradient(x, W)
    np.testing.assert_array_equal(first, gradient(x, W))
