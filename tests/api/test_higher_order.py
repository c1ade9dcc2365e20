"""Derivatives of derivatives: `srcad.grad(srcad.grad(f))`, Jacobians of gradients, and
gradients of functions that call `srcad.grad` (meta-learning), against analytic
derivatives, finite differences and Hessian-vector products."""
import copy

import numpy as np
import pytest

import srcad
from tests.checks import (assert_gradient_matches_finite_differences, random_direction,
                          second_order_cases)
from tests.api.test_jacobians import rosenbrock, rosenbrock_hessian


def fifth_power(x):
    return x ** 5


@pytest.mark.parametrize("order, expected", [(1, 5 * 1.5 ** 4), (2, 20 * 1.5 ** 3),
                                             (3, 60 * 1.5 ** 2), (4, 120 * 1.5)])
def test_repeated_grad_of_a_power(order, expected):
    derivative = fifth_power
    for _ in range(order):
        derivative = srcad.grad(derivative)
    assert derivative(1.5) == pytest.approx(expected, rel=1e-12)


def sine_times(x):
    return np.sin(x) * x


def calls_a_helper(x):
    return np.sum(sine_times(x))


def test_fourth_derivative_through_a_helper_call():
    """Each order differentiates the previous order's program, run-time calls included."""
    fourth = srcad.grad(srcad.grad(srcad.grad(srcad.grad(calls_a_helper))))
    assert fourth(0.5) == pytest.approx(0.5 * np.sin(0.5) - 4 * np.cos(0.5), rel=1e-12)


def sine_series(x, n):
    total = 0.0
    term = x
    for k in range(n):
        total = total + np.sin(term) / (k + 1)
        term = term * x
    return total


def test_third_derivative_through_a_loop_matches_finite_differences():
    second = srcad.grad(srcad.grad(sine_series))
    third = srcad.grad(second)
    h = 1e-5
    numeric = (second(0.7 + h, 4) - second(0.7 - h, 4)) / (2 * h)
    assert third(0.7, 4) == pytest.approx(numeric, rel=1e-6)


@pytest.mark.parametrize("mode", ["fwd", "rev"])
def test_jacobian_of_the_gradient_is_the_analytic_hessian(mode):
    x = np.array([0.5, -0.3, 1.2, 0.8])
    hessian = srcad.jacobian(srcad.grad(rosenbrock), mode=mode)(x)
    np.testing.assert_allclose(hessian, rosenbrock_hessian(x), rtol=1e-12)


def weighted_rosenbrock(x, weights):
    return rosenbrock(x) + np.sum(weights * x ** 3)


@pytest.mark.parametrize("mode", ["auto", "fwd", "rev"])
def test_the_jacobian_of_the_gradient_of_one_argument_is_its_hessian(mode):
    """`jacobian(grad(f))` (JAX's Hessian idiom) is `hessian(f)`, computed as `hessian`
    computes it (in "auto" mode: not one gradient program per row); of another argument
    than the gradient's, it is the mixed second derivative."""
    x, weights = np.array([0.5, -0.3, 1.2, 0.8]), np.array([0.1, 0.2, -0.3, 0.4])
    expected = rosenbrock_hessian(x) + np.diag(6 * weights * x)
    for wrt in (0, "x", None):
        got = srcad.jacobian(srcad.grad(weighted_rosenbrock, wrt=wrt), wrt=wrt,
                             mode=mode)(x, weights)
        np.testing.assert_allclose(got, expected, rtol=1e-12)
    if mode == "auto":
        assert type(srcad.jacobian(srcad.grad(weighted_rosenbrock))) \
            is type(srcad.hessian(weighted_rosenbrock))
    mixed = srcad.jacobian(srcad.grad(weighted_rosenbrock), wrt=1, mode=mode)(x, weights)
    np.testing.assert_allclose(mixed, np.diag(3 * x ** 2), rtol=1e-12)


@pytest.mark.parametrize("fn, args, wrt", list(second_order_cases()))
def test_derivatives_of_the_gradient_are_hessian_vector_products(fn, args, wrt):
    """Forward mode over `grad(f)` (its JVP) and reverse mode over it (its VJP) both give
    H v, on every program of the corpora: loops, branches, in-place updates, calls."""
    position, v = random_direction(args, wrt, seed=2)
    expected = srcad.hvp(fn, position)(*copy.deepcopy(args), v)
    gradient = srcad.grad(fn, wrt=position)
    tangents = tuple(v if i == position else None for i in range(len(args)))
    _, forward = srcad.jvp(gradient, copy.deepcopy(tuple(args)), tangents)
    np.testing.assert_allclose(forward, expected, rtol=1e-9, atol=1e-9)
    _, pullback = srcad.vjp(gradient, *copy.deepcopy(args), wrt=position)
    np.testing.assert_allclose(pullback(v), expected, rtol=1e-9, atol=1e-9)


def inner_loss(w, x):
    return np.sum(np.tanh(w * x) ** 2)


def maml_loss(w, x, steps):
    """Meta-learning: the loss after `steps` gradient steps, differentiated through them."""
    adapted = w
    for _ in range(steps):
        adapted = adapted - 0.1 * srcad.grad(inner_loss)(adapted, x)
    return inner_loss(adapted, x)


def test_gradient_through_inner_gradient_steps_matches_finite_differences():
    w, x = np.array([0.2, -0.4, 0.9]), np.array([0.5, 1.5, -0.7])
    h = 1e-6
    numeric = [(maml_loss(w + h * e, x, 3) - maml_loss(w - h * e, x, 3)) / (2 * h)
               for e in np.eye(3)]
    np.testing.assert_allclose(srcad.grad(maml_loss)(w, x, 3), numeric, rtol=1e-6, atol=1e-9)


def loss_and_norm(w, x):
    loss = np.sum((w * x - 1.0) ** 2)
    return loss, np.sqrt(np.sum(w ** 2))


def test_value_and_grad_with_aux_differentiated_again():
    w, x = np.array([0.3, -1.1]), np.array([2.0, 0.5])
    evaluate = srcad.value_and_grad(loss_and_norm, has_aux=True)

    def objective(w):
        (loss, norm), gradient = evaluate(w, x)
        return loss + norm + np.sum(gradient ** 2)

    def plain(w):
        residual = w * x - 1.0
        return np.sum(residual ** 2) + np.sqrt(np.sum(w ** 2)) + np.sum((2 * residual * x) ** 2)
    h = 1e-6
    numeric = [(plain(w + h * e) - plain(w - h * e)) / (2 * h) for e in np.eye(2)]
    np.testing.assert_allclose(srcad.grad(objective)(w), numeric, rtol=1e-6)


def bilinear(a, b):
    return np.sum(np.sin(a) * b ** 2)


def test_jacobian_of_a_gradient_with_respect_to_two_arguments():
    a, b = np.array([0.3, 0.8]), np.array([1.5, -0.5])
    both = srcad.grad(bilinear, wrt=(0, 1))
    (_, db), (t_a, t_b) = both(a, b), srcad.jvp(both, (a, b), (np.ones(2), None))[1]
    np.testing.assert_allclose(t_a, -np.sin(a) * b ** 2)
    np.testing.assert_allclose(t_b, 2 * np.cos(a) * b)
    np.testing.assert_allclose(db, 2 * np.sin(a) * b)


def test_generated_source_of_a_second_derivative_is_readable():
    source = srcad.grad(srcad.grad(fifth_power)).source
    assert "call_vjp" in source and "def derivative_of_fifth_power_vjp" in source


def sine_energy(x):
    return np.sum(np.sin(x) * x ** 2)


def sine_energy_curvature(x):
    return -x ** 2 * np.sin(x) + 4 * x * np.cos(x) + 2 * np.sin(x)


def directional_derivative(x, v):
    return srcad.jvp(sine_energy, (x,), (v,))[1]


def test_functions_calling_jvp_are_differentiated_in_both_modes():
    x, v = np.array([0.3, 0.5, -1.2]), np.array([1.0, 2.0, -0.5])
    along_x, along_v = srcad.grad(directional_derivative, wrt=(0, 1))(x, v)
    np.testing.assert_allclose(along_x, sine_energy_curvature(x) * v, rtol=1e-12)
    np.testing.assert_allclose(along_v, srcad.grad(sine_energy)(x), rtol=1e-12)
    e = np.array([0.0, 1.0, 0.0])
    _, tangent = srcad.jvp(directional_derivative, (x, v), (e, e))
    assert tangent == pytest.approx(sine_energy_curvature(x)[1] * v[1]
                                    + srcad.grad(sine_energy)(x)[1], rel=1e-12)


def test_meta_learning_example_meta_gradient_matches_finite_differences():
    import runpy
    from pathlib import Path
    examples = Path(__file__).parent.parent.parent / "examples"
    example = runpy.run_path(str(examples / "meta_learning.py"))
    rng = np.random.default_rng(5)
    tasks = [(rng.standard_normal((6, 3)), rng.standard_normal(6)) for _ in range(2)]
    w = rng.standard_normal(3) * 0.3
    loss = example["adapted_loss"]
    h = 1e-6
    numeric = [(loss(w + h * e, tasks, 2) - loss(w - h * e, tasks, 2)) / (2 * h)
               for e in np.eye(3)]
    np.testing.assert_allclose(srcad.grad(loss)(w, tasks, 2), numeric, rtol=1e-6, atol=1e-10)


def parameters_named_like_generated_code(x, callee=2.0, program=3.0, gradient=0.5):
    return np.sum(callee * x ** 3 + program * x + gradient)


def test_parameter_names_do_not_clash_with_generated_code():
    x = np.array([0.5, -1.0])
    np.testing.assert_allclose(srcad.hessian(parameters_named_like_generated_code)(x),
                               np.diag(12.0 * x), rtol=1e-12)
    third = srcad.grad(srcad.grad(srcad.grad(lambda y: parameters_named_like_generated_code(
        y, 2.0, 3.0, 0.5))))
    assert third(0.5) == pytest.approx(12.0)


def scaled_sine(x, scale=1.0):
    return np.sum(np.sin(x) * scale)


def gradient_by_keyword(x):
    return np.sum(srcad.grad(scaled_sine)(x=x) ** 2)


def scale_by_keyword(x):
    return srcad.grad(scaled_sine, wrt=1)(x, scale=x[0])


def value_and_gradient_by_keyword(x):
    value, gradient = srcad.value_and_grad(scaled_sine, wrt=(0, 1))(scale=x[1], x=x)
    return value * np.sum(gradient[0]) + gradient[1]


def scale_left_to_its_default(x):
    value, gradient = srcad.value_and_grad(scaled_sine, wrt=(0, 1))(x)
    return value * np.sum(gradient[0] ** 2) + gradient[1] * np.sum(srcad.grad(
        scaled_sine, wrt=1)(x))


@pytest.mark.parametrize("fn", [gradient_by_keyword, scale_by_keyword,
                                value_and_gradient_by_keyword, scale_left_to_its_default])
def test_inner_derivatives_take_their_wrt_arguments_by_keyword_or_default(fn):
    x = np.array([0.3, -0.8, 1.1, 0.4])
    assert_gradient_matches_finite_differences(fn, (x,), 0)
    slope = srcad.jvp(fn, (x,), (np.ones(4),))[1]
    h = 1e-6
    assert slope == pytest.approx((fn(x + h) - fn(x - h)) / (2 * h), rel=1e-6)


def gram_energy(a, b):
    G = np.einsum("ij,kj->ik", a, a)               # the tangent program calls einsum's
    return np.sum(np.einsum("ik,kl->il", G, b) ** 2)  # JVP rules: a Hessian differentiates them


def test_second_derivatives_through_einsum_match_finite_differences():
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((2, 2))
    gradient = srcad.grad(gram_energy)
    h = 1e-6
    columns = [(gradient(a + h * e.reshape(a.shape), b) - gradient(a - h * e.reshape(a.shape), b))
               / (2 * h) for e in np.eye(a.size)]
    expected = np.stack(columns, axis=-1).reshape(a.shape + a.shape)
    np.testing.assert_allclose(srcad.hessian(gram_energy)(a, b), expected, rtol=1e-5, atol=1e-6)
    u = rng.standard_normal(a.shape)
    np.testing.assert_allclose(srcad.hvp(gram_energy)(a, b, u),
                               np.tensordot(expected, u, axes=2), rtol=1e-5, atol=1e-6)


def _cubed(x):
    return x ** 3


def test_a_function_with_an_attribute_named_like_srcads_own_differentiates_again():
    """`update_wrapper` copies the function's attributes onto its derivative object; a
    function's own `kind` once told srcad the object was a pullback (review of issue 30)."""
    _cubed.kind = "cubic"
    try:
        gradient = srcad.grad(_cubed)
        assert srcad.grad(lambda x: gradient(x))(2.0) == pytest.approx(12.0)
        assert srcad.hessian(gradient)(2.0) == pytest.approx(6.0)
    finally:
        del _cubed.kind


def written_into_a_list(x):
    values = [None, 2.0]
    values[0] = x
    return values[0] * values[1]


def slope_through_a_list(x, v):
    return np.sum(srcad.jvp(written_into_a_list, (x,), (v,))[1] * np.arange(1.0, 5.0))


def test_reverse_over_forward_through_a_list_item_nothing_reached():
    """The list's adjoint holds None for `values[0]`'s old item; a (1, n) array written over
    it once took that None for a cotangent to unbroadcast."""
    x, v = np.full((1, 4), 0.5), np.array([[1.0, -1.0, 2.0, 0.5]])
    assert_gradient_matches_finite_differences(slope_through_a_list, (x, v), (0, 1))


def _cubic_slope(x, t):
    return srcad.jvp(sine_energy, (x,), (t,))[1]


def _cubic_curvature(x, t):
    return srcad.jvp(lambda y: _cubic_slope(y, t), (x,), (t,))[1]


def test_third_and_fourth_derivatives_through_nested_jvp_calls():
    """A tangent program of a `srcad.jvp` call is forward mode over f's own tangent program
    (a plain program), so each order differentiates plain code (once, srcad followed its own
    `jvp` source and refused a third order)."""
    x, t = np.array([0.3, -0.7, 1.1]), np.array([1.0, 0.5, -2.0])

    def third(y):
        return srcad.jvp(lambda z: _cubic_curvature(z, t), (y,), (t,))[1]
    # sine_energy = Σ sin(x) x²: its third derivative along t is Σ t³ (6 cos x - 6 x sin x
    # - x² cos x); its fourth Σ t⁴ (-12 sin x - 8 x cos x + x² sin x)
    assert third(x) == pytest.approx(np.sum(t ** 3 * (6 * np.cos(x) - 6 * x * np.sin(x)
                                                      - x ** 2 * np.cos(x))), rel=1e-12)
    fourth = np.sum(t ** 4 * (-12 * np.sin(x) - 8 * x * np.cos(x) + x ** 2 * np.sin(x)))
    assert srcad.jvp(third, (x,), (t,))[1] == pytest.approx(fourth, rel=1e-10)
    assert srcad.grad(third)(x) @ t == pytest.approx(fourth, rel=1e-10)
