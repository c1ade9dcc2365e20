"""GradientTape: TensorFlow's contract point by point, numbers against finite differences."""
import numpy as np
import pytest

import srcad
from srcad.errors import SrcadError
from srcad.tape import (BatchDependenceError, GradientTape, Tensor, TapeStateError,
                        UnconnectedGradients, Variable, constant)
from srcad.tape import control as tape_control
from srcad.tape import grad as tape_grad
from srcad.testing import numerical_gradient

X = np.array([0.5, -0.3, 0.8])


def value(t):
    return None if t is None else np.asarray(t)


def loss_of(w, c):
    return np.sum(np.tanh(w) * c + w ** 2 / (1.0 + c ** 2))


# ---- watching ---------------------------------------------------------------------------------
def test_design_example_against_finite_differences():
    x = Variable(np.ones(3))
    with GradientTape() as tape:
        c = tape.watch(constant(np.arange(3.0)))
        y = np.sum(np.sin(x) * c)
    g_x, g_c = tape.gradient(y, [x, c])
    np.testing.assert_allclose(value(g_x), np.cos(1.0) * np.arange(3.0))
    np.testing.assert_allclose(value(g_c), np.sin(np.ones(3)))
    w, c = Variable(X), constant(np.array([1.0, 2.0, -1.0]))
    with GradientTape() as tape:
        tape.watch(c)
        y = loss_of(w, c)
    g_w, g_c = tape.gradient(y, (w, c))
    args = (X, np.array([1.0, 2.0, -1.0]))
    np.testing.assert_allclose(value(g_w), numerical_gradient(loss_of, args, 0), rtol=1e-7)
    np.testing.assert_allclose(value(g_c), numerical_gradient(loss_of, args, 1), rtol=1e-7)


def test_trainable_variables_are_watched_when_read():
    v, frozen, c = Variable(2.0), Variable(3.0, trainable=False), constant(4.0)
    with GradientTape() as tape:
        y = v * frozen * c
    g_v, g_frozen, g_c = tape.gradient(y, [v, frozen, c])
    assert float(g_v) == 12.0 and g_frozen is None and g_c is None
    assert tape.watched_variables() == (v,)


def test_watch_accessed_variables_false_watches_only_what_is_watched():
    a, b = Variable(2.0, name="a"), Variable(3.0, name="b")
    with GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(b)
        y = a * b
    assert tape.gradient(y, [a, b])[0] is None
    assert tape.watched_variables() == (b,) and b.name == "b"


def test_watched_variables_in_creation_order_and_watch_of_nests():
    first, second = Variable(1.0), Variable(2.0)
    c, d = constant(3.0), constant(4.0)
    with GradientTape() as tape:
        tape.watch({"pair": [c, d], "v": second})
        y = second * first * c * d
    assert tape.watched_variables() == (first, second)
    grads = tape.gradient(y, {"c": c, "both": (first, d)})
    assert float(grads["c"]) == 8.0 and float(grads["both"][0]) == 24.0
    assert float(grads["both"][1]) == 6.0


def test_watch_refuses_what_is_not_a_tensor():
    plain = np.ones(2)
    with GradientTape() as tape:
        with pytest.raises(ValueError, match="not srcad.Tensor") as info:
            tape.watch(plain)
    assert isinstance(info.value, SrcadError) and "srcad.constant" in str(info.value)


def test_constants_are_not_watched_unless_asked():
    c = constant(2.0)
    with GradientTape() as tape:
        y = c * c
    assert tape.gradient(y, c) is None


# ---- recording control ---------------------------------------------------------------------
def test_stop_recording_pauses_this_tape_and_is_refused_outside_recording():
    x = constant(4.0)
    tape = GradientTape(persistent=True)
    with pytest.raises(RuntimeError, match="not recording") as info:
        with tape.stop_recording():
            pass
    assert isinstance(info.value, TapeStateError)
    with tape:
        tape.watch(x)
        with tape.stop_recording():
            y = x ** 2
        z = x ** 3
    assert tape.gradient(y, x) is None and float(tape.gradient(z, x)) == 48.0
    with pytest.raises(RuntimeError):
        with tape.stop_recording():
            pass


def test_reset_forgets_what_was_recorded():
    x = constant(2.0)
    with GradientTape() as tape:
        tape.watch(x)
        loss = x ** 2
        tape.reset()
        tape.watch(x)
        loss = loss + x ** 3
    assert float(tape.gradient(loss, x)) == 12.0  # only x ** 3 (TensorFlow's example)


def test_a_tape_cannot_be_entered_twice():
    tape = GradientTape()
    with tape:
        with pytest.raises(ValueError, match="already recording"):
            with tape:
                pass


# ---- gradient -----------------------------------------------------------------------------
def test_several_targets_sum_and_a_non_scalar_target_means_its_sum():
    x = constant(X)
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x ** 2
        z = np.sin(x)
    np.testing.assert_allclose(value(tape.gradient(y, x)), 2 * X)
    np.testing.assert_allclose(value(tape.gradient([y, {"z": z}], x)), 2 * X + np.cos(X))


def test_output_gradients_weight_each_target():
    x = constant(X)
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        y, z = x ** 2, 3.0 * x
    weight = np.array([1.0, -2.0, 0.5])
    np.testing.assert_allclose(value(tape.gradient(y, x, output_gradients=weight)),
                               weight * 2 * X)
    g = tape.gradient([y, z], x, output_gradients=[weight, None])
    np.testing.assert_allclose(value(g), weight * 2 * X + 3.0)
    with pytest.raises(ValueError, match="output_gradients"):
        tape.gradient([y, z], x, output_gradients=[weight])


def test_unconnected_sources_give_none_or_zeros():
    x, unused = constant(X), constant(np.ones((2, 2), np.float32))
    with GradientTape(persistent=True) as tape:
        tape.watch([x, unused])
        y = np.sum(x)
    assert tape.gradient(y, [x, unused])[1] is None
    zero = tape.gradient(y, unused, unconnected_gradients="zero")
    assert value(zero).shape == (2, 2) and value(zero).dtype == np.float32
    assert not value(zero).any()
    assert tape.gradient(y, unused, unconnected_gradients=UnconnectedGradients.ZERO) is not None
    with pytest.raises(ValueError, match="unconnected_gradients"):
        tape.gradient(y, x, unconnected_gradients="zeros")
    assert tape.gradient(3.0, x) is None  # a target that is no tensor is unconnected


def test_a_non_persistent_tape_gives_one_gradient():
    x = constant(3.0)
    with GradientTape() as tape:
        tape.watch(x)
        y = x * x
    assert float(tape.gradient(y, x)) == 6.0
    with pytest.raises(RuntimeError, match="only be called once on non-persistent") as info:
        tape.gradient(y, x)
    assert "persistent=True" in str(info.value)
    with pytest.raises(RuntimeError):
        tape.jacobian(y, x)


def test_a_persistent_tape_serves_many_gradients():
    x = constant(3.0)
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        z = y * y
    assert float(tape.gradient(z, x)) == 108.0
    assert float(tape.gradient(y, x)) == 6.0
    assert float(tape.gradient(z, x)) == 108.0
    del tape


def test_gradient_inside_a_non_persistent_tape_stops_its_recording():
    x = constant(3.0)
    with GradientTape() as tape:
        tape.watch(x)
        y = x * x
        assert float(tape.gradient(y, x)) == 6.0
        later = x * 5.0
    assert later is not None and not tape._nodes


def test_gradient_of_a_variable_across_assignments_sums_every_read():
    v = Variable(2.0)
    with GradientTape() as tape:
        y = v * 3.0
        v.assign_add(1.0)       # not differentiated; reads after it see 3.0
        z = y + v * v
    assert float(tape.gradient(z, v)) == 3.0 + 2 * 3.0
    v.assign(np.float64(5.0))
    v.assign_sub(1.5)
    assert v.numpy() == 3.5 and isinstance(v.numpy(), np.ndarray)
    with pytest.raises(ValueError, match="shape"):
        v.assign(np.ones(2))


def test_float32_stays_float32():
    x = constant(np.array([0.5, 1.5], np.float32))
    with GradientTape() as tape:
        tape.watch(x)
        y = np.sum(np.tanh(x) * x)
    assert value(tape.gradient(y, x)).dtype == np.float32


# ---- jacobian and batch_jacobian ---------------------------------------------------------------
def vector_field(x, w):
    return np.tanh(np.reshape(x, (3, 1)) * w) + x[0] * np.sin(w)


def test_jacobian_has_the_target_shape_then_the_source_shape():
    w = np.array([[0.2, -0.4], [1.1, 0.7], [-0.3, 0.5]])
    x, wt = constant(X), constant(w)
    with GradientTape() as tape:
        tape.watch([x, wt])
        y = vector_field(x, wt)
        unused = constant(np.ones(4))
        tape.watch(unused)
    j_x, j_w, j_none = tape.jacobian(y, [x, wt, unused])
    assert value(j_x).shape == (3, 2, 3) and value(j_w).shape == (3, 2, 3, 2) and j_none is None
    for index in np.ndindex(3, 2):
        def element(*args):
            return vector_field(*args)[index]
        np.testing.assert_allclose(value(j_x)[index], numerical_gradient(element, (X, w), 0),
                                   rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(value(j_w)[index], numerical_gradient(element, (X, w), 1),
                                   rtol=1e-6, atol=1e-9)


def test_jacobian_of_unconnected_sources_with_zeros():
    x, other = constant(X), constant(np.ones(2))
    with GradientTape() as tape:
        tape.watch([x, other])
        y = x * 2.0
    j = tape.jacobian(y, other, unconnected_gradients="zero")
    assert value(j).shape == (3, 2) and not value(j).any()


def test_batch_jacobian_is_the_stack_of_per_example_jacobians():
    x = constant(np.array([[0.5, -0.3], [0.8, 0.1], [-1.2, 0.4]]))
    m = np.array([[1.0, 2.0, -1.0], [0.5, -0.5, 3.0]])
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = np.tanh(x @ m) * x[:, :1]
    batch = value(tape.batch_jacobian(y, x))
    full = value(tape.jacobian(y, x))
    assert batch.shape == (3, 3, 2)
    for i in range(3):
        np.testing.assert_allclose(batch[i], full[i, :, i, :], rtol=1e-12)


def test_batch_jacobian_validates_shapes_and_independence():
    x = constant(np.array([[0.5, -0.3], [0.8, 0.1]]))
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        mixed = x + np.sum(x, axis=0, keepdims=True)  # row i depends on every row
        flat = np.sum(x, axis=1)
        other = np.concatenate([x, x]) * 2.0
    with pytest.raises(BatchDependenceError, match="jacobian") as info:
        tape.batch_jacobian(mixed, x)
    assert isinstance(info.value, ValueError)
    with pytest.raises(ValueError, match="rank 2"):
        tape.batch_jacobian(flat, x)
    with pytest.raises(ValueError, match="first dimension"):
        tape.batch_jacobian(other, x)


# ---- higher order: nested tapes --------------------------------------------------------------
def test_second_derivative_from_nested_tapes():
    x = constant(2.0)
    with GradientTape() as outer:
        outer.watch(x)
        with GradientTape() as inner:
            inner.watch(x)
            y = x ** 3 * np.sin(x)
        dy = inner.gradient(y, x)
    d2y = outer.gradient(dy, x)
    expected = 6 * 2.0 * np.sin(2.0) + 6 * 4.0 * np.cos(2.0) - 8.0 * np.sin(2.0)
    np.testing.assert_allclose(float(d2y), expected, rtol=1e-12)


def test_persistent_tape_differentiates_its_own_gradient():
    x = constant(3.0)
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x ** 4
        dy = tape.gradient(y, x)   # recorded, since the tape is still recording
    assert float(dy) == 108.0 and float(tape.gradient(dy, x)) == 108.0


HESSIAN_CASES = [
    pytest.param(lambda x: np.sum(np.tanh(x) * x ** 3), id="elementwise"),
    pytest.param(lambda x: np.sum(np.where(x > 0, x ** 2, np.sin(x)) + abs(x) ** 3),
                 id="where-abs"),
    pytest.param(lambda x: np.mean(np.exp(np.transpose(np.reshape(x, (3, 1)))) ** 2),
                 id="reshape-transpose"),
    pytest.param(lambda x: np.sum(x[:, None] * x[None, :] ** 2), id="broadcasting"),
    pytest.param(lambda x: x[0] * x[1] ** 2 + np.sum(x[1:] ** 3), id="indexing"),
    pytest.param(lambda x: x @ np.array([[2.0, 1.0, 0.0], [0.5, 1.0, 3.0], [1.0, 0.0, 1.0]])
                 @ np.sin(x), id="matmul"),
    pytest.param(lambda x: np.dot(x, np.cos(x)), id="dot"),
    pytest.param(lambda x: np.sum(np.stack([x, x ** 2]) ** 2) + np.sum(
        np.concatenate([x, x ** 3]) ** 2), id="stack-concatenate"),
    pytest.param(lambda x: np.sum(np.sum(np.reshape(x, (3, 1)) ** 3, axis=1) ** 2),
                 id="axis-reduction"),
]


def _with_setitem(x):
    y = x * 1.0
    y[0] = x[1] ** 2
    return np.sum(y ** 2)


HESSIAN_CASES.append(pytest.param(_with_setitem, id="setitem"))


@pytest.mark.parametrize("fn", HESSIAN_CASES)
def test_hessian_by_jacobian_of_an_inner_gradient(fn):
    x = constant(X)
    with GradientTape() as outer:
        outer.watch(x)
        with GradientTape() as inner:
            inner.watch(x)
            y = fn(x)
        g = inner.gradient(y, x)
    hessian = value(outer.jacobian(g, x))
    first = tape_grad(fn)
    step = 1e-6
    expected = np.stack([(first(X + step * e) - first(X - step * e)) / (2 * step)
                         for e in np.eye(3)], axis=1)
    np.testing.assert_allclose(hessian, expected, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(hessian, hessian.T, rtol=1e-10, atol=1e-12)


def test_functional_gradients_compose():
    def f(x):
        return np.sum(x ** 3)

    def squared_gradient_norm(x):
        return np.sum(tape_grad(f)(x) ** 2)  # the inner gradient stays a tensor
    got = tape_grad(squared_gradient_norm)(X)
    np.testing.assert_allclose(got, 2 * (3 * X ** 2) * 6 * X, rtol=1e-12)


# ---- gradient control -------------------------------------------------------------------------
def test_stop_gradient_pause_and_custom_gradient_on_tapes():
    @srcad.custom_gradient
    def clipped_identity(a, scale):
        def grad_fn(dy):
            return np.clip(dy, -1.0, 1.0) * scale, None
        return a * scale, grad_fn

    x = constant(X)
    with GradientTape() as tape:
        tape.watch(x)
        stopped = tape_control.stop_gradient({"x": x})["x"]
        with tape_control.paused():
            hidden = x * 10.0
        y = np.sum(x * stopped + hidden) + np.sum(
            tape_control.call_custom_gradient(clipped_identity, (x * 5.0, 2.0), {}))
    np.testing.assert_allclose(value(tape.gradient(y, x)), X + 1.0 * 2.0 * 5.0)
    assert value(hidden).tolist() == (10.0 * X).tolist()


def test_srcad_markers_behave_the_same_in_tape_mode():
    from tests import marked_programs as p
    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(tape_grad(p.stopped_three_ways)(x), 2 * x)
    x = np.array([1000.0, 0.5, -30.0])
    np.testing.assert_allclose(tape_grad(p.custom_softplus_sum)(x), 1 / (1 + np.exp(-x)))
    x = np.array([0.3, 0.6])
    np.testing.assert_allclose(tape_grad(p.monitored_loop)(x), srcad.grad(p.monitored_loop)(x))


def test_gradients_are_tensors():
    x = constant(X)
    with GradientTape() as tape:
        tape.watch(x)
        y = np.sum(x)
    assert isinstance(tape.gradient(y, x), Tensor)
