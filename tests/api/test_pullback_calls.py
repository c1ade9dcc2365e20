"""`srcad.vjp` and the pullback it returns, called inside differentiated code: how autograd's
`check_grads` checks second derivatives (`vjp(f, x)[1](v)` differentiated in x and v) and
how one writes a Gauss-Newton product. Checked against central differences, in reverse and
forward mode."""
import numpy as np
import pytest

import srcad
from srcad.api.testing import numerical_gradient
from srcad.errors import UnsupportedDerivativeError, UnsupportedSyntaxError


def residuals(w):
    return np.sin(w) * w[::-1] - 0.5


def pulled_back(x, v):
    """autograd's check: the VJP map, a function of the point and the cotangent."""
    return srcad.vjp(residuals, x)[1](v)


def weighted_pullback(x, v):
    return np.sum(pulled_back(x, v) * np.array([1.0, -2.0, 0.5]))


def gauss_newton_step(w):
    """Jᵀr, the pullback applied to the residuals the forward sweep gave."""
    r, pullback = srcad.vjp(residuals, w)
    return np.sum(pullback(r) ** 2)


X, V = np.array([0.3, -0.7, 1.1]), np.array([0.5, 2.0, -1.0])


def _slope(fn, args, tangents):
    h = 1e-6
    plus = fn(*[a + h * t for a, t in zip(args, tangents)])
    minus = fn(*[a - h * t for a, t in zip(args, tangents)])
    return (plus - minus) / (2 * h)


@pytest.mark.parametrize("fn, args", [(weighted_pullback, (X, V)), (gauss_newton_step, (X,))])
def test_a_pullback_called_inside_is_differentiated_in_both_modes(fn, args):
    wrt = tuple(range(len(args)))
    gradients = srcad.grad(fn, wrt=wrt)(*args)
    for position, gradient in zip(wrt, gradients):
        np.testing.assert_allclose(gradient, numerical_gradient(fn, args, position),
                                   rtol=1e-6, atol=1e-8)
    tangents = tuple(np.array([1.0, 0.5, -0.25]) for _ in args)
    _, slope = srcad.jvp(fn, args, tangents)
    assert slope == pytest.approx(_slope(fn, args, tangents), rel=1e-6)


def test_the_vjp_map_has_the_jacobian_of_a_second_derivative():
    """The Jacobian of `v ↦ vjp(f, x)(v)` is Jᵀ; in x, the second derivatives weighted by v."""
    along_v = srcad.jacobian(pulled_back, wrt=1)(X, V)
    jacobian = srcad.jacobian(residuals)(X)
    np.testing.assert_allclose(along_v, jacobian.T, rtol=1e-12)
    along_x = srcad.jacobian(pulled_back, wrt=0)(X, V)
    numeric = np.array([numerical_gradient(lambda x: pulled_back(x, V)[i], (X,), 0)
                        for i in range(3)])
    np.testing.assert_allclose(along_x, numeric, rtol=1e-6, atol=1e-8)


def two_outputs(a, b, scale=1.0):
    return np.tanh(a) * b * scale, {"sum": np.sum(a * b), "count": 3}


def pytree_pullback(a, b, c1, c2):
    output, pullback = srcad.vjp(two_outputs, a, b, wrt=(0, 1), scale=a[0])
    ga, gb = pullback((c1, {"sum": c2, "count": None}))
    return np.sum(ga * gb) + np.sum(output[0])


def test_pullbacks_of_several_arguments_and_structured_outputs():
    args = (np.array([0.2, -0.4]), np.array([1.5, 0.7]), np.array([0.3, -1.2]), 0.8)
    assert_all_positions_match(pytree_pullback, args)


def assert_all_positions_match(fn, args):
    gradients = srcad.grad(fn, wrt=tuple(range(len(args))))(*args)
    for position, gradient in enumerate(gradients):
        np.testing.assert_allclose(gradient, numerical_gradient(fn, args, position),
                                   rtol=1e-6, atol=1e-8)


def complex_output(x):
    return x * (1 + 2j) + x ** 2


def complex_pullback(x, v):
    return np.sum(srcad.vjp(complex_output, x)[1](v) * np.arange(1.0, 4.0))


def test_a_complex_output_pulls_back_by_the_real_inner_product():
    v = np.array([0.3 + 0.7j, 0.1 - 0.2j, 1.0 + 1.0j])
    np.testing.assert_allclose(srcad.grad(complex_pullback)(X, v),
                               numerical_gradient(lambda x: complex_pullback(x, v), (X,), 0),
                               rtol=1e-6)


def test_a_pullback_made_outside_is_differentiated_in_its_cotangent():
    _, pullback = srcad.vjp(residuals, X)

    def uses_pullback(v):
        return np.sum(pullback(v) ** 2)
    np.testing.assert_allclose(srcad.grad(uses_pullback)(V),
                               numerical_gradient(uses_pullback, (V,), 0), rtol=1e-6)
    tangent = np.array([1.0, 0.0, 2.0])
    assert srcad.jvp(uses_pullback, (V,), (tangent,))[1] == pytest.approx(
        _slope(uses_pullback, (V,), (tangent,)), rel=1e-6)


def picks_a_function(x):
    table = [x, np.sin]
    chosen = table[1]  # (computed from a list holding x, yet holding nothing itself)
    return np.sum(chosen(x))


def test_a_function_value_that_holds_nothing_is_called_as_it_is():
    np.testing.assert_allclose(srcad.grad(picks_a_function)(X), np.cos(X), rtol=1e-12)


def _scaler(factor):
    return lambda v: v * factor


SCALE = _scaler(3.0)


def picks_a_closure(x):
    table = [x, SCALE]
    chosen = table[1]
    return np.sum(chosen(x))


def test_a_function_value_whose_holdings_srcad_cannot_see_is_refused_at_its_line():
    with pytest.raises(UnsupportedSyntaxError, match=r"call of `chosen`(.|\n)*line \d+"):
        srcad.grad(picks_a_closure)(X)


@pytest.mark.parametrize("fn", [gauss_newton_step, lambda x: weighted_pullback(x, V)])
def test_second_derivatives_through_a_pullback_call(fn):
    """The tangent programs of `srcad.vjp` and of the pullback's call are Python source,
    differentiated once more (third derivatives of f): Hessians, forward over forward."""
    gradient = srcad.grad(fn)
    numeric = np.array([numerical_gradient(lambda x: gradient(x)[i], (X,), 0)
                        for i in range(3)])
    np.testing.assert_allclose(srcad.hessian(fn)(X), numeric, rtol=1e-6, atol=1e-8)
    t = np.array([1.0, 0.5, -2.0])
    curvature = srcad.jvp(lambda x: srcad.jvp(fn, (x,), (t,))[1], (X,), (t,))[1]
    assert curvature == pytest.approx(t @ numeric @ t, rel=1e-6)


def scaled_sine(a, scale=1.0):
    return np.sin(a) * scale


def pulled_back_with_a_keyword(w):
    out, pullback = srcad.vjp(scaled_sine, w, scale=3.0)
    return np.sum(pullback(out) ** 2)


def test_second_derivatives_through_a_pullback_of_a_call_with_keywords():
    """Its tangent program binds the constant keyword by `functools.partial`, whose
    one-line caller once put the keyword before the positional arguments (SyntaxError)."""
    gradient = srcad.grad(pulled_back_with_a_keyword)
    numeric = np.array([numerical_gradient(lambda x: gradient(x)[i], (X,), 0)
                        for i in range(3)])
    np.testing.assert_allclose(srcad.hessian(pulled_back_with_a_keyword)(X), numeric,
                               rtol=1e-6, atol=1e-7)


def test_second_derivatives_through_a_partial_of_differentiated_values_are_refused():
    import functools

    def bound_sine(x):
        return functools.partial(np.multiply, np.sin(x))(x)
    with pytest.raises(UnsupportedDerivativeError, match="not twice"):
        srcad.hessian(lambda x: np.sum(bound_sine(x)))(X)


def dict_energy(params):
    return np.sum(np.sin(params["a"])) + np.sum(np.cos(params["b"]))


def dict_pulled_back(params, v):
    gradients = srcad.vjp(dict_energy, params)[1](v)
    return np.sum(gradients["a"]) + np.sum(gradients["b"] ** 2)


def test_a_pullback_holding_a_dict_is_differentiated_in_it():
    """What a pullback holds may be a dict of arrays (its values hold the floats): once
    taken for a constant, with a zero gradient."""
    params, v = {"a": np.array([0.3, -1.1]), "b": np.array([[0.5, 2.0]])}, 0.7
    gradient, along_v = srcad.grad(dict_pulled_back, wrt=(0, 1))(params, v)
    a, b = params["a"], params["b"]
    np.testing.assert_allclose(gradient["a"], -v * np.sin(a), rtol=1e-12)
    np.testing.assert_allclose(gradient["b"], 2 * v ** 2 * np.sin(b) * np.cos(b), rtol=1e-12)
    assert along_v == pytest.approx(np.sum(np.cos(a)) + 2 * v * np.sum(np.sin(b) ** 2))
    tangent = {"a": np.ones(2), "b": np.zeros((1, 2))}
    assert srcad.jvp(dict_pulled_back, (params, v), (tangent, None))[1] == pytest.approx(
        -v * np.sum(np.sin(a)), rel=1e-12)
