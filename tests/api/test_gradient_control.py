"""stop_gradient, stop_recording, custom gradients, rules that replace tracing, clipping."""
import numpy as np
import pytest

import srcad
from srcad.errors import SrcadError, UnsupportedDerivativeError
from srcad.api.testing import numerical_gradient
from tests import marked_programs as p


def test_stop_gradient_however_it_is_imported():
    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(srcad.grad(p.stopped_three_ways)(x), 2 * x)


def test_custom_gradient_is_stable_where_the_automatic_one_is_not():
    x = np.array([1000.0, 0.5, -30.0])
    with np.errstate(over="ignore", invalid="ignore"):
        naive = srcad.grad(p.naive_softplus_sum)(x)
    assert not np.isfinite(naive[0])
    np.testing.assert_allclose(srcad.grad(p.custom_softplus_sum)(x), 1 / (1 + np.exp(-x)))
    np.testing.assert_allclose(p.stable_softplus(np.array([0.0])), [np.log(2.0)])


def test_custom_gradient_with_several_keyword_and_non_array_arguments():
    x, y = np.array([1.0, 2.0]), np.array([0.5, -1.0])
    g_x, g_y = srcad.grad(p.uses_scaled_product, wrt=(0, 1))(x, y)
    np.testing.assert_allclose(g_x, 3.0 * y)
    np.testing.assert_allclose(g_y, 3.0 * x)


def test_custom_gradient_with_the_wrong_number_of_cotangents():
    with pytest.raises(SrcadError, match="returned 2 cotangent"):
        srcad.grad(p.uses_wrong_count)(np.ones(2))


def test_stop_recording_block_records_nothing():
    monitored = srcad.grad(p.monitored_loop).source
    unmonitored = srcad.grad(p.unmonitored_loop).source
    assert monitored.count("stack.append") == unmonitored.count("stack.append")
    x = np.array([0.3, 0.6])
    expected = numerical_gradient(p.unmonitored_loop, (x,), 0)
    np.testing.assert_allclose(srcad.grad(p.monitored_loop)(x), expected, rtol=1e-6)


def test_a_registered_rule_replaces_tracing_a_python_function():
    srcad.defvjp(p.straight_through, lambda g, ans, x: g)  # the straight-through estimator
    w, x = np.array([0.4, 1.6]), np.array([1.0, 2.0])
    expected = 2 * (np.round(w) * x - 1.0) * x
    np.testing.assert_allclose(srcad.grad(p.quantized_loss)(w, x), expected)


def test_clipping_over_pytrees():
    grads = {"w": np.array([3.0, 4.0]), "b": [np.array([0.0]), 12.0]}
    clipped, norm = srcad.clip_by_global_norm(grads, 6.5)
    assert norm == pytest.approx(13.0)
    np.testing.assert_allclose(clipped["w"], [1.5, 2.0])
    assert clipped["b"][1] == pytest.approx(6.0) and type(clipped["b"]) is list
    unchanged, _ = srcad.clip_by_global_norm(grads, 100.0)
    np.testing.assert_allclose(unchanged["w"], grads["w"])
    clipped = srcad.clip_by_value(grads, -1.0, 1.0)
    np.testing.assert_allclose(clipped["w"], [1.0, 1.0])
    assert clipped["b"][1] == 1.0


def test_example_recovers_the_quantized_weights():
    import importlib.util
    from pathlib import Path
    path = Path(__file__).parent.parent.parent / "examples" / "custom_and_stopped_gradients.py"
    spec = importlib.util.spec_from_file_location("custom_and_stopped_gradients", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    np.testing.assert_allclose(module.main(), [0.5, -1.25, 2.0])


def test_forward_mode_through_a_custom_gradient_uses_its_grad_fn():
    """The JVP comes from grad_fn (J t is the gradient over u of <grad_fn(u), t>), so it
    keeps the custom rule's stability where the automatic derivative overflows."""
    x, v = np.array([1000.0, 0.5, -30.0]), np.array([1.0, -2.0, 0.5])
    _, tangent = srcad.jvp(p.custom_softplus_sum, (x,), (v,))
    assert tangent == pytest.approx(np.sum(v / (1.0 + np.exp(-x))), rel=1e-12)
    a, b = np.array([1.0, 2.0]), np.array([0.5, -1.0])
    _, product = srcad.jvp(p.uses_scaled_product, (a, b), (np.ones(2), np.ones(2)))
    assert product == pytest.approx(np.sum(3.0 * (b + a)), rel=1e-12)
    with pytest.raises(SrcadError, match="returned 2 cotangent"):
        srcad.jvp(p.uses_wrong_count, (a,), (np.ones(2),))


def test_second_derivatives_through_a_custom_gradient_follow_its_grad_fn():
    """Source mode differentiates grad_fn again (srcad/api/custom_programs.py): Hessians, hvp,
    grad of grad, and the rule's stability where the automatic derivative overflows."""
    x = np.array([0.3, -0.4, 1000.0])
    s = 1.0 / (1.0 + np.exp(-x))
    np.testing.assert_allclose(srcad.hessian(p.custom_softplus_sum)(x), np.diag(s * (1 - s)),
                               atol=1e-300, rtol=1e-12)
    v = np.array([1.0, -2.0, 0.5])
    np.testing.assert_allclose(srcad.hvp(p.custom_softplus_sum)(x, v), s * (1 - s) * v,
                               rtol=1e-12)
    total = srcad.grad(lambda x: np.sum(srcad.grad(p.custom_softplus_sum)(x)))(x)
    np.testing.assert_allclose(total, s * (1 - s), rtol=1e-12)
    assert srcad.grad(srcad.grad(p.stable_softplus))(1000.0) == 0.0  # not nan


def test_second_derivatives_through_a_custom_gradient_of_several_arguments():
    x, y = np.array([1.0, 2.0]), np.array([0.5, -1.0])
    gradient = srcad.grad(p.uses_scaled_product, wrt=(0, 1))
    hessian = srcad.hessian(p.uses_scaled_product, wrt=(0, 1))(x, y)
    for i, j in [(0, 0), (0, 1), (1, 0), (1, 1)]:
        expected = np.array([numerical_gradient(
            lambda *a: gradient(*a)[i][k], (x, y), j) for k in range(2)])
        np.testing.assert_allclose(hessian[i][j], expected, atol=1e-7)
    forward = srcad.hessian(p.cubed_with_a_lambda)(0.7)
    reverse = srcad.grad(srcad.grad(p.cubed_with_a_lambda))(0.7)
    assert forward == pytest.approx(reverse, rel=1e-12) and reverse == pytest.approx(6 * 0.7)


def test_third_derivatives_through_a_custom_gradient():
    third = srcad.grad(srcad.grad(srcad.grad(p.softplus_times_x)))
    second = srcad.grad(srcad.grad(p.softplus_times_x))
    assert third(0.7) == pytest.approx(numerical_gradient(second, (0.7,), 0), rel=1e-6)


def test_a_custom_gradient_differentiated_directly():
    """`srcad.grad(f)` of the decorated function itself uses its rule, not its body."""
    s = 1.0 / (1.0 + np.exp(-0.5))
    assert srcad.grad(p.stable_softplus)(0.5) == pytest.approx(s)
    assert srcad.hessian(p.stable_softplus)(0.5) == pytest.approx(s * (1 - s))
    np.testing.assert_allclose(srcad.jacobian(p.stable_softplus)(np.array([0.5, 0.5])),
                               np.diag([s, s]))


def test_a_second_derivative_needs_the_pair_written_in_the_return():
    with pytest.raises(UnsupportedDerivativeError, match="return y, grad_fn"):
        srcad.hessian(p.uses_a_returned_pair)(np.array([0.5, 1.0]))


def smooth_step(x):
    return np.log1p(np.exp(x))


srcad.defvjp(smooth_step, lambda g, ans, x: g / (1.0 + np.exp(-x)))
srcad.defjvp(smooth_step, lambda g, ans, x: g / (1.0 + np.exp(-x)))


def smooth_step_sum(x):
    return np.sum(smooth_step(x) * x)


def test_second_derivatives_through_registered_rules():
    """Rules written with NumPy are differentiated again: the Hessian of x * softplus(x)."""
    x = np.array([0.3, -1.5, 2.0])
    s = 1.0 / (1.0 + np.exp(-x))
    np.testing.assert_allclose(srcad.hessian(smooth_step_sum)(x),
                               np.diag(2 * s + x * s * (1 - s)), rtol=1e-12)


def test_tape_mode_takes_second_derivatives_through_a_custom_gradient():
    """Nested tapes record grad_fn itself, so the second derivative follows the user's rule,
    as source mode's does; so do nested functional tape gradients."""
    x0 = np.array([0.3, -1.5, 2.0])
    x = srcad.tape.Variable(x0)
    with srcad.tape.GradientTape() as outer:
        with srcad.tape.GradientTape() as inner:
            y = p.custom_softplus_sum(x)
        total = np.sum(inner.gradient(y, x))
    s = 1.0 / (1.0 + np.exp(-x0))
    np.testing.assert_allclose(np.asarray(outer.gradient(total, x)), s * (1 - s), rtol=1e-12)
    second = srcad.tape.grad(srcad.tape.grad(p.stable_softplus))(0.3)
    assert second == pytest.approx(s[0] * (1 - s[0]), rel=1e-12)
