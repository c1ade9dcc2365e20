"""The public API's conventions: wrt, decorators, types and dtypes, value_and_grad, vjp."""
import numpy as np
import pytest

import srcad
from srcad.errors import (CotangentError, NonDifferentiableInputError, NonScalarOutputError,
                          SrcadError, UsageError, WrtError)
from tests import programs as p
from tests.checks import passes_through


def test_int_argument_is_promoted():
    assert srcad.grad(lambda x: x ** 3)(2) == 12.0
    assert type(srcad.grad(lambda x: x ** 3)(2)) is float


def test_python_float_gives_float_and_numpy_scalar_keeps_type():
    assert type(srcad.grad(p.scalar_math)(1.5, 2.0)) is float
    gradient = srcad.grad(p.scalar_math)(np.float32(1.5), 2.0)
    assert type(gradient) is np.float32


def test_float32_stays_float32(rng):
    x = rng.standard_normal((3, 4)).astype(np.float32)
    gradient = srcad.grad(p.reductions)(x)
    assert gradient.dtype == np.float32
    np.testing.assert_allclose(gradient, srcad.grad(p.reductions)(x.astype(np.float64)),
                               rtol=1e-4, atol=1e-5)


def test_wrt_by_name_index_and_tuple(rng):
    x, y = rng.standard_normal(3), rng.standard_normal(3)
    by_index = srcad.grad(p.broadcasting, wrt=(0, 1))(x, y)
    by_name = srcad.grad(p.broadcasting, wrt=("a", "b"))(x, y)
    single = srcad.grad(p.broadcasting, wrt="b")(x, y)
    np.testing.assert_array_equal(by_index[1], by_name[1])
    np.testing.assert_array_equal(by_index[1], single)
    assert isinstance(by_index, tuple) and len(by_index) == 2


def test_decorator_forms(rng):
    x = rng.standard_normal(4)
    np.testing.assert_allclose(p.decorated(x), 3 * x ** 2)

    @srcad.grad(wrt=1)
    def second(a, b):
        return np.sum(a * b)

    np.testing.assert_allclose(second(x, x + 1.0), x)
    assert second.__name__ == "second"


def test_keyword_arguments_and_defaults(rng):
    x = rng.standard_normal(3)
    np.testing.assert_allclose(srcad.grad(p.keyword_only)(x, scale=3.0), np.full(3, 3.0))
    np.testing.assert_allclose(srcad.grad(p.keyword_only, wrt="scale")(x, scale=3.0), x.sum())
    np.testing.assert_allclose(srcad.grad(p.default_argument, wrt="shift")(x),
                               2 * np.sum(x + 1.0))
    np.testing.assert_allclose(srcad.grad(p.default_argument)(x=x, shift=0.0), 2 * x)


def test_unconnected_argument_gives_zeros(rng):
    x, y = rng.standard_normal(3), rng.standard_normal((2, 2))
    g_x, g_y = srcad.grad(p.unused_argument, wrt=(0, 1))(x, y)
    np.testing.assert_allclose(g_x, 2 * x)
    assert g_y.shape == (2, 2) and not g_y.any()
    assert srcad.grad(p.constant_output)(1.0) == 0.0


def test_gradient_is_a_fresh_writeable_array(rng):
    x = rng.standard_normal((2, 3))
    gradient = srcad.grad(p.reductions)(x)
    gradient *= 2.0  # would raise on a read-only broadcast view
    assert not np.shares_memory(gradient, x)


def test_value_and_grad_with_and_without_aux(rng):
    x = rng.standard_normal(3)
    value, gradient = srcad.value_and_grad(p.unused_argument)(x, x)
    assert value == pytest.approx(np.sum(x ** 2))
    np.testing.assert_allclose(gradient, 2 * x)
    (value, aux), gradient = srcad.value_and_grad(p.with_aux, has_aux=True)(x)
    assert aux["label"] == "train" and aux["norm"] == pytest.approx(np.sqrt(value))
    np.testing.assert_allclose(gradient, 2 * x)


def test_vjp_of_vector_and_tuple_outputs(rng):
    x, y, u = rng.standard_normal(3), rng.standard_normal(3), rng.standard_normal(3)
    value, vjp_fn = srcad.vjp(p.vector_output, x)
    np.testing.assert_allclose(value, np.sin(x) * 2.0)
    np.testing.assert_allclose(vjp_fn(u), u * 2.0 * np.cos(x))
    value, vjp_fn = srcad.vjp(p.pair_output, x, y, wrt=(0, 1))
    g_x, g_y = vjp_fn((u, 2 * u))
    np.testing.assert_allclose(g_x, u * y + 2 * u)
    np.testing.assert_allclose(g_y, u * x + 2 * u)
    assert "def vector_output_vjp" in srcad.vjp(p.vector_output, x)[1].source


def test_a_cotangent_given_as_a_list_is_taken_as_an_array(rng):
    x, w = rng.standard_normal(2), rng.standard_normal(2)
    _, vjp_fn = srcad.vjp(p.scaled_difference, x, w)
    np.testing.assert_allclose(vjp_fn([1.0, 0.5]), -2.0 * w * np.array([1.0, 0.5]))


def test_vjp_rejects_a_cotangent_of_the_wrong_shape(rng):
    _, vjp_fn = srcad.vjp(p.vector_output, rng.standard_normal(3))
    with pytest.raises(CotangentError, match="shape"):
        vjp_fn(np.ones(4))


def test_side_effects_run_once_per_call(capsys):
    srcad.grad(p.side_effect)(np.ones(2))
    assert capsys.readouterr().out.count("computing") == 1


@pytest.mark.parametrize("output", [np.ones(3), np.ones((2, 2)), 1j, np.ones(1, complex),
                                    "text", None, (1.0, 2.0), True])
def test_grad_refuses_outputs_that_are_not_real_scalars(output):
    with pytest.raises(NonScalarOutputError, match="vjp") as info:
        srcad.grad(p.passthrough)(1.0, output)
    assert isinstance(info.value, TypeError)


@pytest.mark.parametrize("shape", [(), (1,), (1, 1)])
def test_grad_accepts_every_one_element_output(shape):
    gradient = srcad.grad(p.vector_output)(np.full(shape, 0.5))
    np.testing.assert_allclose(gradient, 2 * np.cos(np.full(shape, 0.5)))


def test_integer_array_in_wrt_is_a_type_error():
    with pytest.raises(NonDifferentiableInputError, match="astype") as info:
        srcad.grad(p.unused_argument)(np.arange(3), 1.0)
    assert isinstance(info.value, TypeError) and isinstance(info.value, SrcadError)


def test_integer_argument_outside_wrt_is_fine():
    assert srcad.grad(p.unused_argument, wrt=0)(np.ones(2), np.arange(3)).shape == (2,)


@pytest.mark.parametrize("wrt", [2, -1, "z", (0, 0), 1.5])
def test_bad_wrt_is_a_value_error(wrt):
    with pytest.raises(WrtError) as info:
        srcad.grad(p.unused_argument, wrt=wrt)
    assert isinstance(info.value, ValueError)


def test_show_prints_the_adjoint(capsys):
    srcad.show(p.scalar_math, wrt=(0, 1))
    assert "def scalar_math_backward" in capsys.readouterr().out
    srcad.show(p.scalar_math, wrt=(0, 1), mode="grad")
    shown = capsys.readouterr().out
    assert "def scalar_math_grad" in shown and "_backward" not in shown
    with pytest.raises(UsageError):
        srcad.show(p.scalar_math, mode="sideways")


def test_check_grads_catches_a_wrong_rule(rule_registry):
    def wrong(g, ans, x):
        return g * 3.0  # the true derivative of np.cbrt is not 3

    srcad.defvjp(np.cbrt, wrong)
    with pytest.raises(AssertionError, match="finite differences"):
        srcad.check_grads(lambda x: np.sum(np.cbrt(x)), (np.array([1.0, 2.0]),))


def gathering(*args):
    return np.sum(np.sin(args[0]) * args[1])


def test_check_grads_never_checks_nothing():
    """A function gathering `*args` has no named parameter to check: an error that says so,
    not a check that passes without looking (a wrong rule went through so)."""
    with pytest.raises(UsageError, match=r"\*args|name them"):
        srcad.check_grads(gathering, (np.array([0.3, 0.5]), np.array([1.0, 2.0])))
    with pytest.raises(UsageError, match="wrt="):
        srcad.check_grads(lambda flag: 1.0 if flag else 0.0, ("yes",))


def test_a_vjp_function_can_be_called_again(rng):
    from tests.control_programs import rnn
    x, W = np.array([0.3, -0.2]), np.array([[0.5, 0.1], [-0.3, 0.8]])
    _, vjp_fn = srcad.vjp(rnn, x, W, wrt=(0, 1))
    first, second = vjp_fn(1.0), vjp_fn(2.0)
    np.testing.assert_allclose(second[1], 2.0 * first[1])


def float_times_array(x, w):
    scaled = x * w + np.sin(x)
    return np.sum(scaled * x)


def float_loop(k, c):
    x, v = 1.0, 0.0
    for _ in range(5):
        x, v = x + 0.1 * v, v - 0.1 * (k * x + c * v)
    return x * x + v


def test_float_arguments_are_specialised_without_losing_broadcast_sums():
    """With Python floats in `wrt` the adjoint leaves out `unbroadcast` where both sides are
    numbers, and keeps it where a float meets an array."""
    w = np.array([0.5, -1.0, 2.0])
    gx, gw = srcad.grad(float_times_array, wrt=(0, 1))(0.3, w)
    assert type(gx) is float
    assert gx == pytest.approx(np.sum(2 * 0.3 * w) + np.cos(0.3) * 3 * 0.3 + 3 * np.sin(0.3))
    np.testing.assert_allclose(gw, 0.3 ** 2 * np.ones(3))
    specialised = srcad.compiler.cache.compiled_adjoint(float_loop, ("k", "c"),
                                               scalars=frozenset({"k", "c"})).source
    assert "unbroadcast" not in specialised
    numeric = (float_loop(2.0 + 1e-6, 0.5) - float_loop(2.0 - 1e-6, 0.5)) / 2e-6
    assert srcad.grad(float_loop)(2.0, 0.5) == pytest.approx(numeric, rel=1e-6)
    assert srcad.grad(float_loop)(np.float64(2.0), 0.5) == pytest.approx(numeric, rel=1e-6)


SCALE = 2.0


@passes_through
def decorated_elsewhere(x):
    return SCALE * x ** 2


def test_a_decorated_function_runs_with_its_own_module_s_globals():
    assert srcad.grad(decorated_elsewhere)(3.0) == pytest.approx(12.0)
    assert srcad.hessian(decorated_elsewhere)(3.0) == pytest.approx(4.0)


def squared_norm_by_matmul(x):
    return x @ x


def test_a_python_float_cotangent_of_a_numpy_output_is_taken_as_its_dtype():
    """`x @ x`'s rule indexes its cotangent: a Python float crashed it."""
    _, pullback = srcad.vjp(squared_norm_by_matmul, np.array([1.0, 2.0]))
    np.testing.assert_allclose(pullback(1.0), [2.0, 4.0])


@pytest.mark.parametrize("call", [
    lambda f, a: srcad.grad(f, wrt=())(*a),
    lambda f, a: srcad.value_and_grad(f, wrt=())(*a),
    lambda f, a: srcad.vjp(f, *a, wrt=()),
    lambda f, a: srcad.jacobian(f, wrt=())(*a),
    lambda f, a: srcad.hessian(f, wrt=())(*a),
    lambda f, a: srcad.hvp(f, wrt=())(*a, np.ones(2)),
    lambda f, a: srcad.tape.grad(f, wrt=())(*a),
], ids=["grad", "value_and_grad", "vjp", "jacobian", "hessian", "hvp", "tape"])
def test_an_empty_wrt_is_a_usage_error(call):
    """It crashed inside grad (TypeError from itemgetter) and gave () elsewhere."""
    with pytest.raises(UsageError, match=r"\(\)"):  # (hvp: "takes one argument in wrt")
        call(lambda x, y: np.sum(x * y), (np.ones(2), np.ones(2)))
