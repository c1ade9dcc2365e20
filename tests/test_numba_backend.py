"""backend="numba": the same gradients as the Python programs (and central differences),
compiled where numba can type the program, the Python program where it cannot."""
import math

import numpy as np
import pytest

import srcad
from srcad.api.testing import numerical_gradient
from srcad.bench.workloads import lotka_volterra
from srcad.compiler import numba_backend
from srcad.errors import UsageError

numba = pytest.importorskip("numba")


def clipped(a, b):
    x, y = 1.0, 0.5
    for i in range(100):
        x = x + 0.01 * (a * x - b * x * y)
        y = y + 0.01 * (math.sin(x) * y - 0.3 * y)
        if x > 1.2:
            x = 1.2
    return x * y


def newton(a):
    x = 1.0
    k = 0
    while abs(x * x - a) > 1e-12 and k < 50:
        x = 0.5 * (x + a / x)
        k += 1
    return x


def vector_loop(x, a):
    for _ in range(5):  # (array helpers of srcad's have no twin: the Python program runs)
        x = np.tanh(x * a + np.sin(x))
    return np.sum(x)


CASES = [
    (lotka_volterra, (np.array([1.1, 0.4, 0.1, 0.4]), np.array([1.0, 0.5])), 0),
    (clipped, (1.1, 0.4), (0, 1)),
    (newton, (2.0,), 0),
    (vector_loop, (np.array([0.3, -0.2, 0.5]), np.array([0.9, 1.1, -0.4])), (0, 1)),
]


@pytest.mark.parametrize("fn, args, wrt", CASES, ids=[c[0].__name__ for c in CASES])
def test_gradients_are_the_python_programs(fn, args, wrt):
    compiled = srcad.grad(fn, wrt, backend="numba")
    plain = srcad.grad(fn, wrt)
    for _ in range(2):  # (the first call compiles)
        got, expected = compiled(*args), plain(*args)
        for g, e in zip(np.atleast_1d(got) if wrt == 0 else got,
                        np.atleast_1d(expected) if wrt == 0 else expected):
            np.testing.assert_allclose(g, e, rtol=1e-13, atol=1e-15)
    for gradient, position in zip((got,) if wrt == 0 else got, (wrt,) if wrt == 0 else wrt):
        np.testing.assert_allclose(gradient, numerical_gradient(fn, args, position),
                                   rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("fn, args, wrt", CASES[1:3], ids=["clipped", "newton"])
def test_value_and_grad_on_floats(fn, args, wrt):
    value, gradients = srcad.value_and_grad(fn, wrt, backend="numba")(*args)
    assert value == pytest.approx(fn(*args), rel=1e-14)
    np.testing.assert_allclose(gradients, srcad.grad(fn, wrt)(*args), rtol=1e-13)


def test_programs_of_numbers_are_compiled_and_array_helpers_fall_back():
    srcad.grad(lotka_volterra, backend="numba")(*CASES[0][1])
    srcad.grad(vector_loop, (0, 1), backend="numba")(*CASES[3][1])
    compiled = [code.co_name for code in numba_backend.compiled_codes()]
    assert "lotka_volterra_grad" in compiled
    assert not any(name.startswith("vector_loop") for name in compiled)


GLOBAL_RATE = np.array([0.5])


def reads_a_global_array(x):
    y = x
    for _ in range(3):
        y = y * GLOBAL_RATE[0] + x
    return y


def test_a_global_array_is_read_when_called_not_frozen():
    gradient = srcad.grad(reads_a_global_array, backend="numba")
    assert gradient(1.0) == pytest.approx(1 + 0.5 + 0.25 + 0.125)
    GLOBAL_RATE[0] = 1.0
    assert gradient(1.0) == pytest.approx(4.0)
    GLOBAL_RATE[0] = 0.5


def test_an_unknown_backend_is_refused():
    with pytest.raises(UsageError, match="backend"):
        srcad.grad(newton, backend="jax")
