"""GradientTape: TensorFlow's contract point by point, numbers against finite differences.

Jacobians and nested tapes are in test_tape_jacobians.py."""
import numpy as np
import pytest

import srcad
from srcad.errors import SrcadError
from srcad.tape import (GradientTape, Tensor, TapeStateError, TapeTypeError,
                        UnconnectedGradients, Variable, constant)
from srcad.tape import control as tape_control
from srcad.tape import grad as tape_grad
from srcad.api.testing import numerical_gradient

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


def test_a_watched_tensor_written_in_place_is_differentiated_as_it_was_watched():
    """`y = x; y += 2 * x` writes into x, as NumPy does; the gradient is with respect to
    the x that was watched (3, TensorFlow's answer), not the version the write made (1)."""
    x = constant(np.asarray(0.6))
    with GradientTape() as tape:
        tape.watch(x)
        y = x
        y += 2.0 * x
    assert value(tape.gradient(y, x)) == pytest.approx(3.0)
    assert value(x) == pytest.approx(1.8)  # NumPy's aliasing: x is y

    def squared_then_overwritten(v):
        v = v.copy()
        w = v
        w *= v
        w[0] = 3.0 * v[1]
        return np.sum(np.sin(w))

    start = np.array([0.6, 0.7])
    for derivative in ("gradient", "jacobian"):
        x = constant(start)
        with GradientTape() as tape:
            tape.watch(x)
            y = squared_then_overwritten(x)
        got = value(getattr(tape, derivative)(y, x))
        np.testing.assert_allclose(got, numerical_gradient(squared_then_overwritten,
                                                           (start,), 0), rtol=1e-7)


def test_integer_tensors_are_not_tracked_as_in_tensorflow():
    n, counter, x = constant(np.array([1, 2])), Variable(3), constant(2.0)
    with GradientTape() as tape:
        with pytest.warns(RuntimeWarning, match="must be floating"):
            tape.watch([n, x])
        y = np.sum(n * x) * counter
    g_n, g_counter, g_x = tape.gradient(y, [n, counter, x])
    assert g_n is None and g_counter is None and float(g_x) == 9.0
    assert tape.watched_variables() == (counter,)  # read, listed, but without a derivative


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
    assert "test_tape_gradient_tape.py" in str(info.value)  # the user's line
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
    v = Variable(1.0)
    with GradientTape(persistent=True) as tape:
        y = v * 2.0
        tape.reset()
        z = v * 3.0  # the variable is watched again when read after the reset
    assert tape.watched_variables() == (v,) and tape.gradient(y, v) is None
    assert float(tape.gradient(z, v)) == 3.0
    tape.reset()  # outside the context too: frees what a persistent tape holds
    assert tape._nodes == [] and tape.watched_variables() == ()


def test_a_tape_cannot_be_entered_twice():
    tape = GradientTape()
    with tape:
        with pytest.raises(ValueError, match="already recording"):
            with tape:
                pass


def test_entering_a_tape_again_continues_a_persistent_one_and_restarts_a_used_one():
    x = constant(2.0)
    persistent = GradientTape(persistent=True)
    with persistent:
        persistent.watch(x)
        y = x * x
    with persistent:
        z = y * x  # recorded on the same tape: the chain from x is intact
    assert float(persistent.gradient(z, x)) == 12.0
    used = GradientTape()
    with used:
        used.watch(x)
        y = x * x
    used.gradient(y, x)
    with used:  # a new recording, as in TensorFlow
        used.watch(x)
        z = x ** 3
    assert float(used.gradient(z, x)) == 12.0


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
    g = tape.gradient({"y": y, "z": z}, x, output_gradients={"z": -weight, "y": weight})
    np.testing.assert_allclose(value(g), weight * 2 * X - 3.0 * weight)
    with pytest.raises(ValueError, match=r"shape \(\) weights a target of shape \(3,\)"):
        tape.gradient(y, x, output_gradients=2.0)  # no silent broadcasting


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
    with pytest.raises(TypeError, match="received None") as info:
        tape.gradient(None, x)
    assert isinstance(info.value, TapeTypeError)


def test_a_non_persistent_tape_gives_one_gradient():
    x = constant(3.0)
    with GradientTape() as tape:
        tape.watch(x)
        y = x * x
    assert float(tape.gradient(y, x)) == 6.0
    message = "non-persistent GradientTape can only be used to compute one set of gradients"
    with pytest.raises(RuntimeError, match=message) as info:
        tape.gradient(y, x)
    assert isinstance(info.value, TapeStateError) and "persistent=True" in str(info.value)
    assert "test_tape_gradient_tape.py" in str(info.value)
    with pytest.raises(RuntimeError, match=message):
        tape.jacobian(y, x)
    with pytest.raises(RuntimeError, match="already computed"):
        tape.watch(x)


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


def test_variable_assignments_return_the_variable_unless_read_value_is_false():
    v = Variable(np.array([1.0, 2.0]), name="w")
    assert v.assign([3, 4]) is v and v.dtype == np.float64  # cast to the variable's dtype
    assert v.assign_add(np.ones(2)) is v and v.assign_sub(constant(0.5)) is v
    np.testing.assert_array_equal(v.numpy(), [3.5, 4.5])
    for update in (v.assign, v.assign_add, v.assign_sub):
        assert update(np.ones(2), read_value=False) is None
    np.testing.assert_array_equal(v.numpy(), [1.0, 1.0])
    assert v.name == "w" and v.trainable and "numpy=array([1., 1.])" in repr(v)
    with GradientTape() as tape:
        y = np.sum(v.read_value() * 2.0)  # a recorded read
    np.testing.assert_array_equal(value(tape.gradient(y, v)), [2.0, 2.0])


def test_float32_stays_float32():
    x = constant(np.array([0.5, 1.5], np.float32))
    with GradientTape() as tape:
        tape.watch(x)
        y = np.sum(np.tanh(x) * x)
    assert value(tape.gradient(y, x)).dtype == np.float32


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
