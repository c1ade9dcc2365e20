"""Array API code (`xp = x.__array_namespace__()`, `xp = array_namespace(x)`) differentiated
in every mode: the namespace is a constant and its functions are NumPy's, with NumPy's
rules; checked against central finite differences of the same code on plain arrays."""
import inspect

import numpy as np
import pytest

import srcad
from srcad.api.testing import numerical_gradient

try:
    import array_api_compat
except ImportError:  # (a test extra: the tests of its functions skip without it)
    array_api_compat = None


def by_method(x):
    xp = x.__array_namespace__()
    return xp.sum(xp.sin(x) * x) + xp.linalg.vector_norm(x, ord=3) + xp.linalg.norm(x)


def compat_namespace(x):
    array_api_compat = pytest.importorskip("array_api_compat")
    return array_api_compat.array_namespace(x)


def by_compat(x):  # (`xp.std` is array_api_compat's own function, which srcad transforms)
    xp = compat_namespace(x)
    return xp.sum(xp.exp(x) * x) + xp.mean(xp.tanh(x) ** 2) + xp.linalg.norm(x) + xp.std(x)


def chosen_per_element(x, w):
    xp = x.__array_namespace__()
    return xp.sum(xp.cos(w * x)) * xp.max(x)


X = np.array([0.3, -1.1, 0.8, 1.7])
V = np.array([0.5, 0.2, -1.0, 0.7])
FUNCTIONS = [by_method, by_compat]


def by_method_gradient(x):  # (by hand: the Hessians' oracle differentiates it numerically)
    return np.cos(x) * x + np.sin(x) + np.sign(x) * x ** 2 / np.sum(np.abs(x) ** 3) ** (2 / 3) \
        + x / np.sqrt(np.sum(x ** 2))


def by_compat_gradient(x):
    return np.exp(x) * (1 + x) + 2 * np.tanh(x) * (1 - np.tanh(x) ** 2) / x.size \
        + x / np.sqrt(np.sum(x ** 2)) + (x - np.mean(x)) / (x.size * np.std(x))


GRADIENTS = {by_method: by_method_gradient, by_compat: by_compat_gradient}


def numerical_hessian(fn, x):
    return np.stack([numerical_gradient(lambda y: GRADIENTS[fn](y)[k], (x,), 0)
                     for k in range(x.size)])


@pytest.mark.parametrize("fn", FUNCTIONS)
def test_the_hand_written_gradients_are_right(fn):
    np.testing.assert_allclose(GRADIENTS[fn](X), numerical_gradient(fn, (X,), 0), rtol=1e-6)


@pytest.mark.parametrize("fn", FUNCTIONS)
def test_grad_and_value_and_grad(fn):
    expected = numerical_gradient(fn, (X,), 0)
    np.testing.assert_allclose(srcad.grad(fn)(X), expected, rtol=1e-6)
    value, gradient = srcad.value_and_grad(fn)(X)
    assert value == pytest.approx(fn(X))
    np.testing.assert_allclose(gradient, expected, rtol=1e-6)


@pytest.mark.parametrize("fn", FUNCTIONS)
@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_jacobian(fn, mode):
    def vector_valued(x):
        return fn(x) * x
    expected = np.stack([numerical_gradient(lambda y: vector_valued(y)[k], (X,), 0)
                         for k in range(X.size)])
    np.testing.assert_allclose(srcad.jacobian(vector_valued, mode=mode)(X), expected,
                               rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize("fn", FUNCTIONS)
def test_hessian_hvp_and_jvp(fn):
    expected = numerical_hessian(fn, X)
    np.testing.assert_allclose(srcad.hessian(fn)(X), expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(srcad.hvp(fn)(X, V), expected @ V, rtol=1e-6, atol=1e-8)
    value, tangent = srcad.jvp(fn, (X,), (V,))
    assert value == pytest.approx(fn(X))
    assert tangent == pytest.approx(numerical_gradient(fn, (X,), 0) @ V, rel=1e-6)


@pytest.mark.parametrize("fn", FUNCTIONS)
def test_tape_gradient_and_jacobian(fn):
    x = srcad.Variable(X)
    with srcad.GradientTape(persistent=True) as tape:
        y = fn(x)
        z = fn(x) * x
    np.testing.assert_allclose(tape.gradient(y, x), numerical_gradient(fn, (X,), 0),
                               rtol=1e-6)
    expected = np.stack([numerical_gradient(lambda v: (fn(v) * v)[k], (X,), 0)
                         for k in range(X.size)])
    np.testing.assert_allclose(tape.jacobian(z, x), expected, rtol=1e-5, atol=1e-8)


def test_the_namespace_of_a_tensor_is_numpy():
    assert srcad.Variable(X).__array_namespace__() is np
    assert srcad.constant(2.0).__array_namespace__() is np


def test_a_namespace_taken_from_an_argument_not_differentiated():
    w = np.array([0.4, 1.3, -0.6, 2.0])
    expected = numerical_gradient(chosen_per_element, (X, w), 1)
    np.testing.assert_allclose(srcad.grad(chosen_per_element, wrt=1)(X, w), expected,
                               rtol=1e-6)
    gx, gw = srcad.grad(chosen_per_element, wrt=(0, 1))(X, w)
    np.testing.assert_allclose(gx, numerical_gradient(chosen_per_element, (X, w), 0),
                               rtol=1e-6)


def of_a_number(x):
    xp = (x[0] * 2.0).__array_namespace__()  # (a NumPy number's namespace is NumPy's too)
    return xp.exp(x[1]) * x[0]


def test_the_namespace_of_a_numpy_number():
    np.testing.assert_allclose(srcad.grad(of_a_number)(X),
                               numerical_gradient(of_a_number, (X,), 0), rtol=1e-6)


class ForeignArray:
    """An array of another Array API library (as array_api_strict's): not NumPy's."""

    def __array_namespace__(self, api_version=None):
        return np

    def __dlpack__(self, *args, **kwargs):
        return np.ones(2).__dlpack__(*args, **kwargs)


def test_an_array_of_another_library_is_refused():
    with pytest.raises(srcad.errors.NonDifferentiableInputError,
                       match=r"an array of \w+: srcad differentiates NumPy arrays") as raised:
        srcad.grad(by_method)(ForeignArray())
    assert "np.from_dlpack(x)" in str(raised.value)
    assert isinstance(raised.value, TypeError)


# ---- array_api_compat's NumPy wrappers that NumPy's records answer for ------------------------
A = np.array([[2.0, 0.3, 0.1, 0.0], [0.3, 1.5, 0.2, 0.1], [0.1, 0.2, 1.0, 0.4],
              [0.0, 0.1, 0.4, 1.2]])


def compat_linalg(a, x):
    xp = array_api_compat.array_namespace(x)
    values, vectors = xp.linalg.eigh(a + a.T)
    return xp.sum(xp.linalg.solve(a, x)) + xp.linalg.slogdet(a).logabsdet \
        + xp.sum(values * x) + xp.sum(vectors[:, 0] ** 2 * x) + xp.sum(xp.linalg.svd(a)[1] * x)


def compat_elementwise(a, x):
    xp = array_api_compat.array_namespace(x)
    bounded = xp.clip(x, -0.6, 1.0) * x + xp.clip(a, min=0.15) + xp.clip(x, max=0.5) ** 2
    return xp.sum(bounded) + xp.sum(xp.sign(x) * x ** 2)


def compat_sorted(a, x):
    xp = array_api_compat.array_namespace(x)
    weights = xp.arange(1.0, 5.0)
    return xp.sum(xp.sort(x) * weights) + xp.sum(xp.sort(a, axis=0, descending=True)[0] * x) \
        + xp.sum(xp.unstack(a)[1] * x) + xp.linalg.vecdot(x, x * weights)


@pytest.mark.parametrize("fn", [compat_linalg, compat_elementwise, compat_sorted])
def test_array_api_compats_own_functions(fn):
    """Wrappers source mode cannot follow (an import inside, a result class, `out=`) have
    NumPy's rules; `sort(descending=True)` has its own."""
    if array_api_compat is None:
        pytest.skip("array_api_compat is not installed")
    expected = [numerical_gradient(fn, (A, X), position) for position in (0, 1)]
    modes = [srcad.grad(fn, (0, 1))]
    if fn is not compat_sorted or "descending" in inspect.signature(np.sort).parameters:
        modes.append(srcad.tape.grad(fn, (0, 1)))  # (a tensor's namespace is NumPy's, whose
    for mode in modes:                             # sort takes `descending` from NumPy 2.3)
        for got, want in zip(mode(A, X), expected):
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)
