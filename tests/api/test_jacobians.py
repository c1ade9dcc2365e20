"""Jacobians (forward and reverse), Hessians and Hessian-vector products, against analytic
derivatives, finite differences and each other."""
import copy

import numpy as np
import pytest

import srcad
from srcad.errors import NonScalarOutputError, UsageError
from srcad.api.testing import numerical_gradient
from tests import control_programs
from tests.checks import random_direction, second_order_cases


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosenbrock_hessian(x):
    n = len(x)
    H = np.zeros((n, n))
    for i in range(n - 1):
        H[i, i] += 1200.0 * x[i] ** 2 - 400.0 * x[i + 1] + 2.0
        H[i, i + 1] -= 400.0 * x[i]
        H[i + 1, i] -= 400.0 * x[i]
        H[i + 1, i + 1] += 200.0
    return H


def test_rosenbrock_hessian_and_hvp_are_analytic():
    x = np.array([0.5, -0.3, 1.2, 0.8])
    v = np.array([1.0, -2.0, 0.5, 0.25])
    np.testing.assert_allclose(srcad.hessian(rosenbrock)(x), rosenbrock_hessian(x), rtol=1e-12)
    np.testing.assert_allclose(srcad.hvp(rosenbrock)(x, v), rosenbrock_hessian(x) @ v,
                               rtol=1e-12)


def dense_layer(W, x, b):
    return np.tanh(W @ x + b)


@pytest.mark.parametrize("wrt", [0, 1, 2])
def test_jacobian_modes_agree_with_finite_differences(wrt):
    rng = np.random.default_rng(1)
    args = (rng.standard_normal((3, 4)), rng.standard_normal(4), rng.standard_normal(3))
    forward = srcad.jacobian(dense_layer, wrt=wrt, mode="fwd")(*args)
    backward = srcad.jacobian(dense_layer, wrt=wrt, mode="rev")(*args)
    assert forward.shape == (3,) + args[wrt].shape
    np.testing.assert_allclose(forward, backward, rtol=1e-12, atol=1e-14)
    for i in range(3):
        row = numerical_gradient(lambda *a: dense_layer(*a)[i], args, wrt)
        np.testing.assert_allclose(forward[i], row, rtol=1e-6, atol=1e-8)


def test_hessian_through_loops_matches_jacobian_of_gradient():
    x, W = np.array([0.3, -0.2]), np.array([[0.5, 0.1], [-0.3, 0.8]])
    hessian = srcad.hessian(control_programs.rnn)(x, W)
    gradient = srcad.grad(control_programs.rnn)
    for k in range(2):
        column = numerical_gradient(lambda x_, W_: gradient(x_, W_)[k], (x, W), 0)
        np.testing.assert_allclose(hessian[k], column, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(hessian, hessian.T, rtol=1e-12)


def test_hvp_on_scalar_argument_with_a_while_loop():
    a = 2.0
    second = srcad.hvp(control_programs.newton_sqrt)(a, 1.0)
    assert second == pytest.approx(-0.25 * a ** -1.5, rel=1e-8)


def test_errors():
    with pytest.raises(UsageError, match="mode"):
        srcad.jacobian(dense_layer, mode="sideways")
    with pytest.raises(UsageError, match="one argument"):
        srcad.hvp(dense_layer, wrt=(0, 1))
    with pytest.raises(UsageError, match="batch axis"):
        srcad.batch_jacobian(lambda x: np.sum(x ** 2))(np.ones((3, 2)))
    with pytest.raises(NonScalarOutputError):
        srcad.hvp(dense_layer, wrt=1)(np.ones((3, 4)), np.ones(4), np.ones(3), np.ones(4))


@pytest.mark.parametrize("fn, args, wrt", list(second_order_cases()))
def test_hvp_matches_finite_differences_of_the_gradient(fn, args, wrt):
    """Reverse mode over the tangent program, on every control-flow, in-place and call
    program: the tangent program's branches, loops, in-place tangent writes and calls
    resolved at run time are differentiated again."""
    position, v = random_direction(args, wrt, seed=1)
    product = srcad.hvp(fn, position)(*copy.deepcopy(args), v)
    gradient = srcad.grad(fn, wrt=position)

    def moved(step):
        shifted = list(copy.deepcopy(args))
        shifted[position] = shifted[position] + step * v
        return gradient(*shifted)
    h = 1e-5
    np.testing.assert_allclose(product, (moved(h) - moved(-h)) / (2 * h), rtol=1e-4, atol=1e-5)
    assert np.shape(product) == np.shape(args[position])


def logistic_loss(w, X, y):
    return np.mean(np.log1p(np.exp(-y * (X @ w)))) + 0.5e-2 * np.sum(w * w)


def logistic_hessian(w, X, y):
    s = 1.0 / (1.0 + np.exp(-y * (X @ w)))
    return X.T @ ((s * (1.0 - s))[:, None] * X) / X.shape[0] + 1e-2 * np.eye(len(w))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_hvp_takes_the_tangent_as_an_argument_of_its_own(dtype):
    """The tangent program takes `v` as a parameter, not in a tuple: on float64 arrays the
    gradient over it is specialised on `v` as on `w` (its seed is the float64 one, no
    `seed_for` check); a float32 `v` gets a program of its own, with the same numbers."""
    rng = np.random.default_rng(4)
    X, w = rng.standard_normal((30, 5)), rng.standard_normal(5)
    y, v = np.sign(rng.standard_normal(30)), rng.standard_normal(5).astype(dtype)
    product = srcad.hvp(logistic_loss)
    for _ in range(2):  # (the second call: the quick path)
        np.testing.assert_allclose(product(w, X, y, v), logistic_hessian(w, X, y) @ v,
                                   rtol=1e-5 if dtype is np.float32 else 1e-12)
    programs = product._derivatives[frozenset()][1].latest  # (kinds, mode, ranks) → entry
    (source,) = [entry[0].source for (_, _, ranks), entry in programs.items()
                 if (ranks[0] == 1) is (dtype is np.float64)]  # ranks[0]: v's, None if not float64
    assert ("seed_for(" in source) is (dtype is np.float32), source


def layer_with_parameters(params, x):
    return {"hidden": np.tanh(params["W"] @ x + params["b"]), "norm": np.sum(x ** 2)}


@pytest.mark.parametrize("mode", ["fwd", "rev"])
def test_jacobian_of_pytrees_nests_like_jax(mode):
    """A dict output of dict and array arguments: output structure, then the wrt tuple,
    then each argument's structure, blocks of shape out_leaf.shape + in_leaf.shape."""
    rng = np.random.default_rng(3)
    params = {"W": rng.standard_normal((3, 2)), "b": rng.standard_normal(3)}
    x = rng.standard_normal(2)
    J = srcad.jacobian(layer_with_parameters, wrt=(0, 1), mode=mode)(params, x)
    assert set(J) == {"hidden", "norm"}
    d_params, d_x = J["hidden"]
    assert d_params["W"].shape == (3, 3, 2) and d_params["b"].shape == (3, 3)
    assert d_x.shape == (3, 2) and J["norm"][1].shape == (2,)
    slope = 1 - np.tanh(params["W"] @ x + params["b"]) ** 2
    np.testing.assert_allclose(d_params["b"], np.diag(slope), rtol=1e-12)
    np.testing.assert_allclose(d_x, slope[:, None] * params["W"], rtol=1e-12)
    np.testing.assert_allclose(d_params["W"][1, 1], slope[1] * x, rtol=1e-12)
    np.testing.assert_allclose(J["norm"][1], 2 * x, rtol=1e-12)
    np.testing.assert_allclose(J["norm"][0]["W"], np.zeros((3, 2)))


def test_hessian_with_two_arguments_is_the_jacobian_of_the_gradient():
    def f(a, b):
        return np.sum(np.sin(a)) * np.sum(b ** 2) + np.sum(a) * np.sum(b)
    a, b = np.array([0.3, 0.8]), np.array([1.5, -0.5, 2.0])
    H = srcad.hessian(f, wrt=(0, 1))(a, b)
    assert H[0][0].shape == (2, 2) and H[0][1].shape == (2, 3) and H[1][0].shape == (3, 2)
    np.testing.assert_allclose(H[0][0], np.diag(-np.sin(a) * np.sum(b ** 2)), rtol=1e-12)
    np.testing.assert_allclose(H[0][1], 2 * np.cos(a)[:, None] * b[None, :] + 1, rtol=1e-12)
    np.testing.assert_allclose(H[1][0], H[0][1].T, rtol=1e-12)
    np.testing.assert_allclose(H[1][1], np.diag(np.full(3, 2 * np.sum(np.sin(a)))), rtol=1e-12)


def test_hvp_of_a_dict_argument():
    def f(params):
        return np.sum(params["w"] ** 3) * params["s"]
    params, v = {"w": np.array([0.5, -1.0]), "s": 2.0}, {"w": np.array([1.0, 0.5]), "s": 1.0}
    product = srcad.hvp(f)(params, v)
    np.testing.assert_allclose(product["w"], 6 * params["w"] * v["w"] * 2.0
                               + 3 * params["w"] ** 2 * v["s"], rtol=1e-12)
    assert product["s"] == pytest.approx(np.sum(3 * params["w"] ** 2 * v["w"]), rel=1e-12)


def per_example_layer(X, W):
    return np.tanh(X @ W.T)


def test_batch_jacobian_gives_each_examples_jacobian():
    rng = np.random.default_rng(4)
    X, W = rng.standard_normal((5, 3)), rng.standard_normal((4, 3))
    J = srcad.batch_jacobian(per_example_layer)(X, W)
    assert J.shape == (5, 4, 3)
    for i in range(5):
        np.testing.assert_allclose(J[i], srcad.jacobian(lambda x: np.tanh(W @ x))(X[i]),
                                   rtol=1e-12)


def test_batch_jacobian_refuses_functions_that_mix_rows():
    def centred(X):
        return X - np.mean(X, axis=0)
    with pytest.raises(UsageError, match="other rows"):
        srcad.batch_jacobian(centred)(np.ones((4, 2)) * np.arange(4)[:, None])


def test_every_derivative_function_shows_its_program():
    assert "t_" in srcad.jacobian(dense_layer, mode="fwd").source
    assert "_backward" in srcad.jacobian(dense_layer, mode="rev").source
    assert "_jvp_grad" in srcad.hvp(rosenbrock).source
    assert "_jvp_grad" in srcad.hessian(rosenbrock).source
    assert "t_" in srcad.batch_jacobian(per_example_layer).source


def rnn_states(x, W):
    """A loop appending to a list: the backward sweep pops the stack and the list."""
    h = x
    states = []
    for _ in range(3):
        h = np.tanh(W @ h)
        states.append(h)
    return np.ravel(np.stack(states))


def damped_steps(x):
    """A data-dependent while loop with a branch inside."""
    y = x
    steps = 0
    while np.max(np.abs(y)) > 0.2 and steps < 6:
        if steps % 2 == 0:
            y = y * np.cos(y)
        else:
            y = np.sin(y) * 0.9
        steps = steps + 1
    return y


@pytest.mark.parametrize("fn, args", [
    (rnn_states, (np.array([0.3, -0.5]), np.array([[0.9, -0.4], [0.3, 1.1]]))),
    (damped_steps, (np.array([1.2, -0.7, 0.4]),)),
    (dense_layer, (np.arange(12.0).reshape(3, 4) / 10, np.array([0.1, -0.2, 0.3, 0.4]),
                   np.array([0.5, 0.0, -0.5]))),
])
def test_reverse_jacobian_replays_the_backward_sweep_per_row(fn, args):
    """The forward sweep runs once and the backward sweep once per output element; each
    replay starts from the state the forward sweep left (stack, restored variables, lists)."""
    reverse = srcad.jacobian(fn, mode="rev")(*args)
    forward = srcad.jacobian(fn, mode="fwd")(*args)
    np.testing.assert_allclose(reverse, forward, rtol=1e-12, atol=1e-14)
    x = args[0]
    numeric = np.array([(fn(x + 1e-6 * e.reshape(x.shape), *args[1:])
                         - fn(x - 1e-6 * e.reshape(x.shape), *args[1:])) / 2e-6
                        for e in np.eye(x.size)]).T
    np.testing.assert_allclose(reverse, numeric.reshape(reverse.shape), rtol=1e-6, atol=1e-8)
    assert srcad.api.derivative.Derivative(fn).forward_sweep(args, {})[3]  # (replayable)


def spectrum(x):
    return np.fft.fft(x)


def test_complex_jacobians_are_refused_not_half_computed():
    with pytest.raises(UsageError, match="complex"):
        srcad.jacobian(spectrum, mode="rev")(np.ones(4))
    with pytest.raises(UsageError, match="complex"):
        srcad.hvp(rosenbrock)(np.ones(3) + 0j, np.ones(3))


class SineModel:
    def __init__(self, w):
        self.w = w

    def loss(self, x):
        return np.sum(np.sin(self.w * x))

    @classmethod
    def square(cls, x):
        return x ** 2


def test_second_derivatives_of_methods_count_the_user_s_arguments():
    """A bound method's `wrt=0` is its first argument after the receiver (were: zeros)."""
    model, x = SineModel(2.0), np.array([0.3, 0.5])
    expected = np.diag(-4.0 * np.sin(2.0 * x))
    np.testing.assert_allclose(srcad.hessian(model.loss)(x), expected, rtol=1e-12)
    np.testing.assert_allclose(srcad.hessian(model.loss, wrt="x")(x), expected, rtol=1e-12)
    np.testing.assert_allclose(srcad.jacobian(srcad.grad(model.loss))(x), expected, rtol=1e-12)
    np.testing.assert_allclose(srcad.hvp(model.loss)(x, np.ones(2)), expected @ np.ones(2),
                               rtol=1e-12)
    assert srcad.hessian(SineModel.square)(3.0) == pytest.approx(2.0)


def test_hvp_refuses_a_vector_of_another_shape():
    with pytest.raises(srcad.errors.TangentError, match="shape"):
        srcad.hvp(rosenbrock)(np.ones(3), np.ones((3, 1)))


def vjp_only(x):
    return np.sin(x) * 2.0


srcad.defvjp(vjp_only, lambda g, ans, x: 2.0 * g * np.cos(x))


def calls_vjp_only(x):
    return vjp_only(x) + x


def test_reverse_jacobian_needs_no_forward_mode_rule():
    x = np.array([0.3, -0.2])
    np.testing.assert_allclose(srcad.jacobian(calls_vjp_only, mode="rev")(x),
                               np.diag(2.0 * np.cos(x) + 1.0), rtol=1e-12)


def test_jacobians_of_a_function_that_writes_into_its_arguments():
    """Each column and each row runs on copies: the caller's array is unchanged and every
    run sees the same inputs (they compounded: x[0] *= 3 ran once per column)."""
    from tests.in_place_programs import augmented_on_parameter
    x = np.array([1.0, 2.0, 3.0])
    expected = numerical_gradient(lambda x: augmented_on_parameter(x.copy()), (x,), 0)
    for mode in ("fwd", "rev"):
        np.testing.assert_allclose(srcad.jacobian(augmented_on_parameter, mode=mode)(x),
                                   expected, rtol=1e-7)
        np.testing.assert_array_equal(x, [1.0, 2.0, 3.0])


def test_scalar_outputs_of_numpy_scalar_type():
    """`a @ b` of two vectors is an np.float64 (a subclass of float): its unit cotangent
    stays an np.float64 for the rules that index it."""
    a, b = np.array([0.1, 0.2]), np.array([0.3, 0.4])
    for mode in ("fwd", "rev"):
        np.testing.assert_allclose(srcad.jacobian(lambda a, b: a @ b, mode=mode)(a, b), b)


def scaled_energy(x, w, *, scale=1.0, offset=0.0):
    return np.sum(np.tanh(w @ x + offset) ** 2) * scale


def scaled_map(x, w, *, scale=1.0):
    return np.tanh(w @ x) * scale


def test_keyword_arguments_are_passed_on_not_differentiated():
    """As in JAX: `jacobian(f)(x, w, scale=2.0)` differentiates in `x` at that `scale`."""
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal(3), rng.standard_normal((3, 3))
    expected = srcad.jacobian(lambda x: scaled_map(x, w, scale=2.5))(x)
    for mode in ("fwd", "rev", "auto"):
        got = srcad.jacobian(scaled_map, mode=mode)(x, w, scale=2.5)
        np.testing.assert_allclose(got, expected, rtol=1e-12)
    hessian = srcad.hessian(scaled_energy)(x, w, scale=3.0, offset=0.1)
    reference = srcad.hessian(lambda x: scaled_energy(x, w, scale=3.0, offset=0.1))(x)
    np.testing.assert_allclose(hessian, reference, rtol=1e-12)
    v = rng.standard_normal(3)
    np.testing.assert_allclose(srcad.hvp(scaled_energy)(x, w, v, scale=3.0, offset=0.1),
                               reference @ v, rtol=1e-10)
