"""Functions that gather positional arguments in `*args`: `wrt` counts the arguments of a
call, as JAX's `argnums` and autograd's `argnum` do (`grad(lambda *a: a[0] * a[1])` was
refused: "wrt=0 is out of range"), in every API that takes `wrt`; numbers against
finite differences and the derivatives written out."""
import numpy as np
import pytest

import srcad
from srcad.errors import UnsupportedDerivativeError, UsageError


def product(*a):
    return a[0] * a[1]


def weighted(x, *rest, scale=2.0):
    total = x * scale
    for r in rest:
        total = total + np.sin(r) * x
    return total


def cubic(*a):
    return a[0] ** 3 * a[1]


def dotted(*arrays):
    return np.sum(arrays[0] * np.tanh(arrays[1]))


def central(f, args, position, step=1e-6):
    """The derivative of scalar f along argument `position` by central differences."""
    x = np.asarray(args[position], dtype=float)
    gradient = np.zeros(x.shape)
    for index in np.ndindex(x.shape):
        for sign in (1, -1):
            moved = x.copy()
            moved[index] += sign * step
            values = list(args)
            values[position] = moved if moved.shape else float(moved)
            gradient[index] += sign * f(*values) / (2 * step)
    return gradient if x.shape else float(gradient)


def test_grad_indexes_the_arguments_args_gathers():
    assert srcad.grad(product)(2.0, 3.0) == 3.0
    assert srcad.grad(product, wrt=1)(2.0, 3.0) == 2.0
    assert srcad.grad(product, wrt=(0, 1))(2.0, 3.0) == (3.0, 2.0)
    assert srcad.grad(lambda *a: a[0] * a[1], wrt=1)(2.0, 3.0) == 2.0


def test_named_and_gathered_parameters_mix_and_keywords_pass_through():
    args = (1.5, 0.3, 0.7)
    value, gradients = srcad.value_and_grad(weighted, wrt=("x", 2))(*args)
    assert value == pytest.approx(weighted(*args))
    assert gradients[0] == pytest.approx(central(weighted, args, 0))
    assert gradients[1] == pytest.approx(1.5 * np.cos(0.7))
    with_scale = srcad.grad(weighted, wrt=1)(1.5, 0.3, scale=3.0)
    assert with_scale == pytest.approx(1.5 * np.cos(0.3))


def test_each_count_of_arguments_gets_its_own_program():
    derivative = srcad.grad(weighted, wrt=(0, 1))
    assert derivative(1.5, 0.3) == pytest.approx((2.0 + np.sin(0.3), 1.5 * np.cos(0.3)))
    three = derivative(1.5, 0.3, 0.7)
    assert three == pytest.approx((2.0 + np.sin(0.3) + np.sin(0.7), 1.5 * np.cos(0.3)))
    assert derivative(1.5, 0.3) == pytest.approx((2.0 + np.sin(0.3), 1.5 * np.cos(0.3)))


def test_array_arguments_in_reverse_and_forward_mode():
    a, b = np.array([0.5, -1.0, 2.0]), np.array([0.1, 0.4, -0.3])
    np.testing.assert_allclose(srcad.grad(dotted, wrt=1)(a, b), central(dotted, (a, b), 1),
                               rtol=1e-6)
    _, pullback = srcad.vjp(dotted, a, b, wrt=1)
    np.testing.assert_allclose(pullback(1.0), a * (1 - np.tanh(b) ** 2))
    _, tangent = srcad.jvp(dotted, (a, b), (None, np.ones(3)))
    assert tangent == pytest.approx(np.sum(a * (1 - np.tanh(b) ** 2)))


@pytest.mark.parametrize("mode", ["fwd", "rev", "auto"])
def test_jacobians(mode):
    a, b = np.array([0.5, -1.0]), np.array([2.0, 3.0])
    jacobian = srcad.jacobian(product, wrt=(0, 1), mode=mode)(a, b)
    np.testing.assert_allclose(jacobian[0], np.diag(b))
    np.testing.assert_allclose(jacobian[1], np.diag(a))


def test_hessians_and_hessian_vector_products():
    assert srcad.hessian(cubic)(2.0, 3.0) == pytest.approx(6 * 2.0 * 3.0)
    assert srcad.hessian(cubic, wrt=1)(2.0, 3.0) == 0.0
    assert srcad.hvp(cubic, wrt=0)(2.0, 3.0, 0.5) == pytest.approx(0.5 * 36.0)
    x, y = np.array([0.3, -0.2]), np.array([1.0, 2.0])
    np.testing.assert_allclose(srcad.hvp(dotted, wrt=1)(x, y, np.ones(2)),
                               x * -2 * np.tanh(y) * (1 - np.tanh(y) ** 2))


def test_derivatives_of_derivatives():
    assert srcad.grad(srcad.grad(product, wrt=1), wrt=0)(2.0, 3.0) == 1.0
    assert srcad.grad(srcad.grad(cubic))(2.0, 3.0) == pytest.approx(36.0)
    assert srcad.grad(srcad.grad(cubic), wrt=1)(2.0, 3.0) == pytest.approx(12.0)


def test_a_third_derivative_through_args_is_refused_with_the_fix():
    with pytest.raises(UnsupportedDerivativeError, match="third time .* `\\*args`") as error:
        srcad.grad(srcad.grad(srcad.grad(cubic)))(2.0, 3.0)
    assert "named parameters" in error.value.fix


def test_the_program_is_shown_for_the_arguments_of_a_call(capsys):
    srcad.clear_cache()  # (a derivative asked for before is shared: this one is new)
    derivative = srcad.grad(product, wrt=1)
    with pytest.raises(UsageError, match="has not been called yet"):
        derivative.source
    derivative(2.0, 3.0)
    assert "def srcad_scope(" in derivative.source
    srcad.show(product, wrt=1, args=(2.0, 3.0))
    assert "b_a1" in capsys.readouterr().out
    with pytest.raises(UsageError, match="args="):
        srcad.show(product, wrt=1)


def test_an_index_past_the_arguments_of_the_call_is_out_of_range():
    with pytest.raises(srcad.errors.WrtError, match="wrt=2 is out of range"):
        srcad.grad(product, wrt=2)(2.0, 3.0)


def test_a_named_wrt_of_a_function_with_args_is_unchanged():
    assert srcad.grad(weighted)(1.5, 0.3) == pytest.approx(2.0 + np.sin(0.3))
    assert srcad.grad(weighted, wrt="x")(1.5, 0.3, 0.7) == pytest.approx(
        central(weighted, (1.5, 0.3, 0.7), 0))


def test_tape_mode_indexes_them_too_and_agrees():
    a, b = np.array([0.5, -1.0, 2.0]), np.array([0.1, 0.4, -0.3])
    for wrt in (0, 1, (0, 1)):
        tape, source = srcad.tape.grad(dotted, wrt=wrt)(a, b), srcad.grad(dotted, wrt=wrt)(a, b)
        for t, s in zip(tape if isinstance(wrt, tuple) else (tape,),
                        source if isinstance(wrt, tuple) else (source,)):
            np.testing.assert_allclose(t, s)
    assert srcad.tape.grad(weighted, wrt=(0, 2))(1.5, 0.3, 0.7) == pytest.approx(
        srcad.grad(weighted, wrt=(0, 2))(1.5, 0.3, 0.7))


def test_a_function_calling_a_derivative_of_one_is_differentiated():
    def outer(x, y):
        return srcad.grad(product, wrt=1)(x * y, y) * x
    assert srcad.grad(outer)(2.0, 3.0) == pytest.approx(central(outer, (2.0, 3.0), 0))


# ---- callables with rules, differentiated directly: their rules apply -------------------------
def cross_product(a, b):
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2],
                     a[0] * b[1] - a[1] * b[0]])


def twice_the_cross(a):
    return cross_product(a, np.array([1.0, 2.0, 3.0])) * 2.0


def test_a_numpy_function_with_rules_is_differentiated_directly():
    assert srcad.grad(np.sqrt)(4.0) == 0.25
    assert srcad.grad(np.arctan2, wrt=1)(1.0, 2.0) == pytest.approx(-1.0 / 5.0)
    np.testing.assert_allclose(srcad.grad(np.sum)(np.ones(3)), np.ones(3))
    np.testing.assert_allclose(srcad.jacobian(np.sin)(np.array([0.0, 1.0])),
                               np.diag(np.cos([0.0, 1.0])))
    assert srcad.hessian(np.exp)(1.0) == pytest.approx(np.e)


def test_a_users_rule_applies_when_its_function_is_differentiated_directly(rule_registry):
    def halved_square(x):
        return x * x  # (the rule says otherwise: the rule is what srcad uses)
    srcad.defvjp(halved_square, lambda g, ans, x: g * x)
    assert srcad.grad(halved_square)(3.0) == 3.0


def test_jacobian_auto_falls_back_to_reverse_mode_for_vjp_rules_alone(rule_registry):
    """ADBench's bundle adjustment registers `cross` autograd-style, with a VJP alone: "auto"
    chose forward mode and failed; "fwd" still says what is missing."""
    srcad.defvjp(cross_product, lambda g, ans, a, b: np.cross(b, g),
                 lambda g, ans, a, b: np.cross(g, a))
    b = np.array([1.0, 2.0, 3.0])
    skew = np.array([[0.0, b[2], -b[1]], [-b[2], 0.0, b[0]], [b[1], -b[0], 0.0]])
    np.testing.assert_allclose(srcad.jacobian(twice_the_cross)(np.array([0.1, 0.2, 0.3])),
                               2 * skew)
    with pytest.raises(srcad.errors.MissingJVPRuleError, match="defjvp"):
        srcad.jacobian(twice_the_cross, mode="fwd")(np.array([0.1, 0.2, 0.3]))
