"""Calls: the user's helpers (recursion included), keyword arguments, library code written
in Python, array methods, and callees chosen at run time."""
import functools

import numpy as np
import pytest

import srcad
import srcad.tape
from srcad.api.testing import numerical_gradient
from tests import call_programs as p
from tests.checks import assert_gradient_matches_finite_differences


@pytest.mark.parametrize("fn, args, wrt", p.CORPUS,
                         ids=[f"{fn.__name__}-{i}" for i, (fn, _, _) in enumerate(p.CORPUS)])
def test_gradient_matches_finite_differences(fn, args, wrt):
    assert_gradient_matches_finite_differences(fn, args, wrt)


def test_library_functions_match_their_analytic_derivatives():
    x = np.array([0.3, -1.2, 2.5])
    expected = (np.cos(np.pi * x) * np.pi * x - np.sin(np.pi * x)) / (np.pi * x ** 2)
    np.testing.assert_allclose(srcad.grad(p.library_sinc)(x), expected, rtol=1e-12)
    coefficients = np.array([1.0, -2.0, 3.0])  # x**2 - 2x + 3
    assert srcad.grad(p.library_polyval)(0.7, coefficients) == pytest.approx(2 * 0.7 - 2.0)
    np.testing.assert_allclose(srcad.grad(p.library_polyval, wrt=1)(0.7, coefficients),
                               [0.49, 0.7, 1.0])


def test_helpers_are_transformed_once_and_cached():
    srcad.clear_cache()
    gradient = srcad.grad(p.calls_helpers)
    gradient(np.ones(2), np.ones(2))
    entries = srcad.cache_info().entries
    gradient(np.ones(2), np.ones(2))
    assert srcad.cache_info().entries == entries >= 3  # calls_helpers, helper, power


def test_closures_are_passed_what_they_read(rng):
    """`def inner(d): ... x ...` called in place takes `x` as an argument (both modes)."""
    x, w = np.array([0.3, -0.5, 0.8]), 0.7
    hessian = srcad.hessian(p.closure_defined_in_a_loop, wrt=(0, 1))(x, w)
    gradient = srcad.grad(p.closure_defined_in_a_loop, wrt=(0, 1))
    np.testing.assert_allclose(hessian[1][1], numerical_gradient(
        lambda w: gradient(x, w)[1], (w,), 0), rtol=1e-6)
    t = rng.standard_normal(2)
    _, tangent = srcad.jvp(p.closures_within_closures, (np.array([0.3, -0.5]), 1.3), (t, 0.5))
    expected = srcad.grad(p.closures_within_closures, wrt=(0, 1))(np.array([0.3, -0.5]), 1.3)
    assert tangent == pytest.approx(expected[0] @ t + expected[1] * 0.5, rel=1e-12)
    source = srcad.grad(p.captures_a_differentiated_value, wrt=1).source
    assert "def uses_w(y, *, w=w):" in source and "call_vjp(uses_w, ('w',), x, w=w)" in source


def test_a_closure_that_escapes_with_a_differentiated_value_is_refused():
    from srcad.errors import UnsupportedSyntaxError
    with pytest.raises(UnsupportedSyntaxError, match="`w`.*nested function"):
        srcad.grad(p.passes_a_closure_on, wrt=1)(np.ones(2), np.ones(2))
    assert srcad.grad(p.passes_a_closure_on)(np.ones(2), np.full(2, 3.0)).tolist() == [3, 3]
    with pytest.raises(UnsupportedSyntaxError, match="`v`.*nested function"):
        srcad.grad(p.returns_a_closure)(0.5)


def test_a_partial_of_a_differentiated_value_is_differentiated_in_what_it_binds():
    """`partial(f, w=w)(x)` depends on w through the partial (runtime/held.py)."""
    x = np.array([0.3, -1.2])
    assert srcad.grad(p.partial_of_a_differentiated_value, wrt=1)(x, 2.0) == pytest.approx(
        np.sum(np.sin(x)), rel=1e-12)
    assert srcad.jvp(p.partial_of_a_differentiated_value, (x, 2.0), (None, 1.0))[1] == \
        pytest.approx(np.sum(np.sin(x)), rel=1e-12)
    both = srcad.grad(p.partial_passed_on, wrt=(0, 1))(x, 2.0)
    np.testing.assert_allclose(both[0], 2.0 * np.cos(x) * 1.5, rtol=1e-12)
    assert both[1] == pytest.approx(1.5 * np.sum(np.sin(x)), rel=1e-12)


def test_functools_partial_in_every_transformation():
    """`grad(partial(f, w=2.0))`, as JAX users write it: the bound values are constants."""
    x = np.array([0.1, 0.2])
    bound = functools.partial(p.scaled_sine, w=2.0)
    np.testing.assert_allclose(srcad.grad(bound)(x), 2 * np.cos(x), rtol=1e-12)
    np.testing.assert_allclose(srcad.jacobian(bound)(x), 2 * np.cos(x), rtol=1e-12)
    np.testing.assert_allclose(srcad.hessian(bound)(x), np.diag(-2 * np.sin(x)), rtol=1e-12)
    assert srcad.jvp(bound, (x,), (np.ones(2),))[1] == pytest.approx(2 * np.sum(np.cos(x)))
    np.testing.assert_allclose(srcad.grad(p.partial_of_a_differentiated_value)(x, 2.0),
                               2 * np.cos(x), rtol=1e-12)


def test_a_closure_reads_its_variables_when_it_is_called():
    """Reassigned before the definition, or bound after it (ADBench's GMM objective): the
    value at the call, as a closure cell gives it."""
    x = np.array([0.5, 1.5])
    for fn in (p.captures_a_reassigned_value, p.binds_after_the_definition):
        np.testing.assert_allclose(srcad.grad(fn)(x), 4 * x + 1, rtol=1e-12)
        np.testing.assert_allclose(srcad.jvp(fn, (x,), (np.ones(2),))[1], np.sum(4 * x + 1))
        np.testing.assert_allclose(srcad.hessian(fn)(x), 4 * np.eye(2), atol=1e-12)
        np.testing.assert_allclose(srcad.tape.grad(fn)(x), 4 * x + 1, rtol=1e-12)


def test_closure_cells_and_redefinitions_give_new_gradients():
    loss = p.make_scaled_loss(2.0)
    gradient = srcad.grad(loss)
    np.testing.assert_allclose(gradient(np.ones(2)), [4.0, 4.0])
    loss.__closure__[0].cell_contents = 5.0
    np.testing.assert_allclose(gradient(np.ones(2)), [10.0, 10.0])
    np.testing.assert_allclose(srcad.grad(p.make_scaled_loss(1.0))(np.ones(2)), [2.0, 2.0])


def test_bound_methods_of_user_classes(rng):
    layer = p.Layer(rng.standard_normal((3, 2)), rng.standard_normal(2))
    x, target = rng.standard_normal((4, 3)), rng.standard_normal((4, 2))
    gradient = srcad.grad(layer.loss)(x, target)
    np.testing.assert_allclose(gradient, numerical_gradient(layer.loss, (x, target), 0),
                               rtol=1e-5, atol=1e-7)
    g_target = srcad.grad(layer.loss, wrt="target")(x, target)
    np.testing.assert_allclose(g_target, numerical_gradient(layer.loss, (x, target), 1),
                               rtol=1e-5, atol=1e-7)


def test_self_is_not_a_differentiable_argument(rng):
    from srcad.errors import NonDifferentiableInputError, WrtError
    layer = p.Layer(rng.standard_normal((3, 2)), rng.standard_normal(2))
    with pytest.raises(WrtError, match="bound to"):
        srcad.grad(layer.loss, wrt="self")
    with pytest.raises(NonDifferentiableInputError, match="Layer"):
        srcad.grad(p.Layer.loss)(layer, np.ones((1, 3)), np.ones((1, 2)))


def _deep(x, n):
    if n == 0:
        return x
    return _deep(x * 1.0001, n - 1)


@pytest.mark.parametrize("make", [srcad.grad, srcad.value_and_grad, srcad.jacobian],
                         ids=["grad", "value_and_grad", "jacobian"])
def test_recursion_as_deep_as_the_function_itself_reaches(make):
    """Each level of a recursive function costs srcad several frames: at the default limit
    it raised RecursionError at about 330 levels where the function reaches 990 (issue 29,
    case 9). The limit is raised while the calls nest, and restored after."""
    import sys
    limit = sys.getrecursionlimit()
    levels = limit - 200  # (what the function reaches under pytest's own frames)
    _deep(1.0, levels)
    for x in (1.0, np.float64(1.0)):
        got = make(_deep)(x, levels)
        got = got[1] if make is srcad.value_and_grad else got
        assert got == pytest.approx(1.0001 ** levels)
    assert sys.getrecursionlimit() == limit
    with pytest.raises(RecursionError):
        srcad.grad(_deep)(1.0, 100 * limit)
    assert sys.getrecursionlimit() == limit


class _Private:
    """Private names, which Python mangles in a class body (`self._Private__factor`)."""

    def __init__(self):
        self.__factor = 2.0

    def loss(self, x):
        return np.sum(self.__factor * x ** 2)

    def through_a_lambda(self, x):
        scale = lambda v: v * self.__factor  # noqa: E731
        return np.sum(scale(x) ** 2)

    def __call__(self, x):
        return self.loss(x) + np.sum(self.__helper(x))

    def __helper(self, x):
        return np.sin(x) * self.__factor


@pytest.mark.parametrize("method", ["loss", "through_a_lambda", "__call__"])
def test_private_names_in_methods_are_mangled_as_python_does(method):
    """The generated code is compiled outside the class: `self.__factor` raised
    AttributeError ('Model' object has no attribute '__factor')."""
    model = _Private()
    fn = model if method == "__call__" else getattr(model, method)
    x = np.array([0.5, 1.0])
    expected = numerical_gradient(fn, (x,), 0)
    np.testing.assert_allclose(srcad.grad(fn)(x), expected, rtol=1e-7)
    np.testing.assert_allclose(srcad.jacobian(fn, mode="fwd")(x), expected, rtol=1e-7)
    np.testing.assert_allclose(srcad.tape.grad(fn)(x), expected, rtol=1e-7)


def _scaled(x, scale=1.0):
    return x * scale


def _bound_then_overridden(x, s):
    bound = functools.partial(_scaled, x, scale=s)
    return bound() + bound(scale=2.0)


def test_a_keyword_a_call_overrides_keeps_the_partial_s_other_calls_derivative():
    """The second call's cotangent of the partial has no `scale` (the call overrides it);
    added to the first call's, the sum once lost the first one's."""
    assert srcad.grad(_bound_then_overridden, wrt=(0, 1))(0.5, 1.7) == pytest.approx((3.7, 0.5))
    assert srcad.jvp(_bound_then_overridden, (0.5, 1.7), (0.0, 1.0))[1] == pytest.approx(0.5)
