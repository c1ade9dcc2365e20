"""srcad.checkpoint: the same numbers as the function without it, in every mode and order,
against central finite differences in float64; the memory it saves, measured."""
import dataclasses
import functools

import numpy as np
import pytest

import srcad
from srcad.api.testing import numerical_gradient
from srcad.errors import NotCallableError, SrcadError, UnsoundAliasingError
from tests.checks import peak_memory


def steps(h, W, count=3):
    for _ in range(count):
        h = np.tanh(W @ h + 0.1)
    return h


segment = srcad.checkpoint(steps)


@srcad.checkpoint
def decorated(h, W):
    return np.sin(W @ h) * h


def rnn(W, h0):
    h = h0
    for _ in range(4):  # in a loop: each trip keeps its segment's arguments alone
        h = segment(h, W)
    return np.sum(h ** 2) + np.sum(decorated(h, W))


def rnn_plain(W, h0):
    h = h0
    for _ in range(4):
        h = steps(h, W)
    return np.sum(h ** 2) + np.sum(np.sin(W @ h) * h)


def by_keyword(W, h0):
    return np.sum(segment(h0, W=W, count=2) ** 3)


def by_keyword_plain(W, h0):
    return np.sum(steps(h0, W=W, count=2) ** 3)


@srcad.checkpoint
def layer(params, x):
    """A dict of parameters in, a tuple holding an array and a dict out."""
    z = np.tanh(params["W"] @ x + params["b"])
    return z, {"norm": np.sum(z ** 2), "mean": np.mean(z)}


def pytree_loss(params, x):
    z, stats = layer(params, x)
    return np.sum(z * x) + stats["norm"] * stats["mean"]


def pytree_loss_plain(params, x):
    z, stats = layer.function(params, x)
    return np.sum(z * x) + stats["norm"] * stats["mean"]


@srcad.checkpoint
def inner_pair(h, W):
    return segment(segment(h, W), W)  # checkpoints nested in a checkpoint


def nested(W, h0):
    return np.sum(inner_pair(inner_pair(h0, W), W) ** 2)


def nested_plain(W, h0):
    h = h0
    for _ in range(4):
        h = steps(h, W)
    return np.sum(h ** 2)


def written_after_the_call(W, h0):
    h = h0 * 1.0
    out = np.sum(segment(h, W))
    h[0] = 5.0  # the derivative program restores it before the segment recomputes
    h *= 2.0
    return out + np.sum(h ** 2)


def written_after_the_call_plain(W, h0):
    h = h0 * 1.0
    out = np.sum(steps(h, W))
    h[0] = 5.0
    h *= 2.0
    return out + np.sum(h ** 2)


PAIRS = [(rnn, rnn_plain), (by_keyword, by_keyword_plain), (nested, nested_plain),
         (written_after_the_call, written_after_the_call_plain)]
PAIR_IDS = [f.__name__ for f, _ in PAIRS]


@pytest.fixture
def point():
    rng = np.random.default_rng(0)
    return rng.standard_normal((3, 3)) * 0.6, rng.standard_normal(3)


def close(a, b, rtol=1e-10):
    np.testing.assert_allclose(a, b, rtol=rtol, atol=1e-12)


# ---- source mode ---------------------------------------------------------------------------
def test_called_plainly_it_is_the_function(point):
    W, h = point
    assert np.array_equal(segment(h, W), steps(h, W))
    assert segment.__name__ == "steps" and segment.__wrapped__ is steps
    assert srcad.checkpoint(steps) == segment


@pytest.mark.parametrize("fn, plain", PAIRS, ids=PAIR_IDS)
def test_grad_and_value_and_grad(fn, plain, point):
    for wrt in (0, 1):
        gradient = srcad.grad(fn, wrt=wrt)(*point)
        close(gradient, srcad.grad(plain, wrt=wrt)(*point))
        close(gradient, numerical_gradient(plain, point, wrt), rtol=1e-6)
    value, gradients = srcad.value_and_grad(fn, wrt=(0, 1))(*point)
    close(value, plain(*point))
    for got, expected in zip(gradients, srcad.grad(plain, wrt=(0, 1))(*point)):
        close(got, expected)


@pytest.mark.parametrize("fn, plain", PAIRS, ids=PAIR_IDS)
def test_vjp_jacobian_jvp(fn, plain, point):
    W, h = point
    value, pullback = srcad.vjp(lambda W, h: fn(W, h) * np.arange(1.0, 3.0), W, h, wrt=1)
    close(value, plain(W, h) * np.arange(1.0, 3.0))
    close(pullback(np.array([1.0, 0.0])), numerical_gradient(plain, point, 1), rtol=1e-6)
    close(pullback(np.array([0.0, 1.0])), 2 * srcad.grad(plain, wrt=1)(W, h))  # twice
    close(srcad.jacobian(fn, wrt=1)(W, h), srcad.grad(plain, wrt=1)(W, h))
    direction = np.array([0.3, -0.2, 0.5])
    _, tangent = srcad.jvp(lambda h: fn(W, h), (h,), (direction,))
    close(tangent, np.dot(numerical_gradient(plain, point, 1), direction), rtol=1e-6)


@pytest.mark.parametrize("fn, plain", PAIRS, ids=PAIR_IDS)
def test_hessian_and_hvp(fn, plain, point):
    W, h = point
    hessian = srcad.hessian(fn, wrt=1)(W, h)
    close(hessian, srcad.hessian(plain, wrt=1)(W, h))
    gradient = srcad.grad(plain, wrt=1)
    by_differences = np.stack([numerical_gradient(lambda h: gradient(W, h)[k], [h], 0)
                               for k in range(3)])
    close(hessian, by_differences, rtol=1e-5)
    v = np.array([1.0, -2.0, 0.5])
    close(srcad.hvp(fn, wrt=1)(W, h, v), hessian @ v)
    close(srcad.grad(lambda h: srcad.grad(fn, wrt=1)(W, h) @ v)(h), hessian @ v)


def test_pytrees_in_and_out(point):
    rng = np.random.default_rng(1)
    params = {"W": rng.standard_normal((3, 3)), "b": rng.standard_normal(3)}
    x = point[1]
    gradients = srcad.grad(pytree_loss)(params, x)
    expected = srcad.grad(pytree_loss_plain)(params, x)
    for key in params:
        close(gradients[key], expected[key])
    close(srcad.grad(pytree_loss, wrt=1)(params, x),
          numerical_gradient(pytree_loss_plain, (params, x), 1), rtol=1e-6)


def test_an_argument_written_after_the_call_outside_the_derivative_is_refused(point):
    W, h = point
    h = h.copy()
    _, pullback = srcad.vjp(lambda h: np.sum(segment(h, W)), h)
    h[0] = 7.0  # the pullback would recompute from this value: refused, not a wrong number
    with pytest.raises(UnsoundAliasingError, match="written in place after the call"):
        pullback(1.0)


def test_a_closure_over_a_differentiated_value_is_refused(point):
    def closing(W, h):
        return np.sum(srcad.checkpoint(functools.partial(steps, W=W))(h))
    with pytest.raises(SrcadError):
        srcad.grad(closing)(*point)


def test_not_a_function():
    with pytest.raises(NotCallableError, match="takes a function") as error:
        srcad.checkpoint(np.ones(3))
    assert isinstance(error.value, TypeError)


# ---- tape mode -----------------------------------------------------------------------------
@pytest.mark.parametrize("fn, plain", PAIRS, ids=PAIR_IDS)
def test_tape_grad(fn, plain, point):
    for wrt in (0, 1):
        close(srcad.tape.grad(fn, wrt=wrt)(*point), srcad.grad(plain, wrt=wrt)(*point))


def test_tape_hessian_with_nested_tapes(point):
    W, h0 = point
    x = srcad.constant(h0)
    with srcad.GradientTape() as outer:
        outer.watch(x)
        with srcad.GradientTape() as inner:
            inner.watch(x)
            y = rnn(W, x)
        gradient = inner.gradient(y, x)
    close(outer.jacobian(gradient, x).numpy(), srcad.hessian(rnn_plain, wrt=1)(W, h0))


def test_tape_pytrees_keywords_and_jacobian(point):
    rng = np.random.default_rng(1)
    params = {"W": srcad.Variable(rng.standard_normal((3, 3))),
              "b": srcad.Variable(rng.standard_normal(3))}
    x = point[1]
    with srcad.GradientTape(persistent=True) as tape:
        loss = pytree_loss(params, x)
        z = segment(x, W=params["W"], count=2)
    gradients = tape.gradient(loss, params)
    plain = {key: v.numpy() for key, v in params.items()}
    expected = srcad.grad(pytree_loss_plain)(plain, x)
    for key in params:
        close(gradients[key].numpy(), expected[key])
    close(tape.jacobian(z, params["W"]).numpy(),
          srcad.jacobian(lambda W: steps(x, W, 2))(plain["W"]))


def test_tape_keeps_the_value_at_the_call_of_an_array_written_later(point):
    W, h0 = point
    W_tensor, h = srcad.constant(W), h0.copy()
    with srcad.GradientTape() as tape:
        tape.watch(W_tensor)
        y = np.sum(segment(h, W_tensor))
        h[:] = 0.0  # a plain array: the node holds a copy
    close(tape.gradient(y, W_tensor).numpy(),
          srcad.grad(lambda W: np.sum(steps(h0, W)))(W))


def test_tape_refuses_a_differentiated_closure(point):
    W, h0 = point
    x = srcad.Variable(W)
    reads_x = srcad.checkpoint(lambda h: np.tanh(x @ h))
    with srcad.GradientTape() as tape:
        h = tape.watch(srcad.constant(h0))
        with pytest.raises(SrcadError, match="not one of its arguments"):
            reads_x(h)
        y = np.sum(reads_x(h0))  # no argument differentiated: recorded as it runs
    close(tape.gradient(y, x).numpy(), srcad.grad(lambda W: np.sum(np.tanh(W @ h0)))(W))


# ---- memory ----------------------------------------------------------------------------------
def long_rnn(W, h0):
    h = h0
    for _ in range(400):
        h = np.tanh(W @ h)
    return np.sum(h ** 2)


def twenty_steps(h, W):
    for _ in range(20):
        h = np.tanh(W @ h)
    return h


checkpointed_twenty = srcad.checkpoint(twenty_steps)


def split_rnn(W, h0):
    h = h0
    for _ in range(20):
        h = checkpointed_twenty(h, W)
    return np.sum(h ** 2)


def split_rnn_unchecked(W, h0):
    h = h0
    for _ in range(20):
        h = twenty_steps(h, W)
    return np.sum(h ** 2)


@pytest.mark.parametrize("mode", ["source", "tape", "hvp"])
def test_checkpointed_segments_keep_a_fraction_of_the_memory(mode):
    rng = np.random.default_rng(0)
    W, h0 = rng.standard_normal((64, 64)) / 8, rng.standard_normal((64, 16))
    if mode == "hvp":  # reverse mode over the tangent program recomputes too
        v = rng.standard_normal(h0.shape)
        args = (W, h0, v)
        derivative = functools.partial(srcad.hvp, wrt=1)
    else:
        args = (W, h0)
        derivative = srcad.grad if mode == "source" else srcad.tape.grad
    split = peak_memory(derivative(split_rnn), *args)
    unsplit = peak_memory(derivative(long_rnn), *args)
    unchecked = peak_memory(derivative(split_rnn_unchecked), *args)
    # 400 states of 8 KiB kept against 20 segment inputs and one segment's 20 states
    assert split < unsplit / 3 and split < unchecked / 3, (split, unsplit, unchecked)
    close(derivative(split_rnn)(*args), derivative(long_rnn)(*args))


# ---- found by review: writes the hash or the tape did not see -------------------------------
def _zero_first(h):
    h[0] = 0.0
    return np.sin(h)


zeroing = srcad.checkpoint(_zero_first)


def writes_its_argument(x):
    h = x * 1.0
    return np.sum(zeroing(h)) + np.sum(h)


def test_a_checkpointed_function_writing_its_argument_is_refused_in_both_modes():
    """Recomputed from its argument, it would start from the value it wrote (tape mode gave
    a gradient without the second sum's path)."""
    x = np.array([0.3, 0.8, 1.1])
    with pytest.raises(UnsoundAliasingError, match="writes into an argument passed to it"):
        srcad.grad(writes_its_argument)(x)
    with pytest.raises(UnsoundAliasingError, match="writes into a tensor passed to it"):
        srcad.tape.grad(writes_its_argument)(x)


def test_an_integer_array_or_a_number_in_a_list_written_before_the_pullback_is_refused():
    x = np.array([0.3, 0.8, 1.1])
    take = srcad.checkpoint(lambda h, index: np.sin(h[index]))
    index = np.array([0, 1])
    _, pullback = srcad.vjp(lambda x: np.sum(take(x, index)), x)
    index[0] = 2
    with pytest.raises(UnsoundAliasingError, match="written in place after the call"):
        pullback(1.0)
    scaled = srcad.checkpoint(lambda h, s: np.sin(h) * s[0])
    factors = [2.0]
    _, pullback = srcad.vjp(lambda x: np.sum(scaled(x, factors)), x)
    factors[0] = 5.0
    with pytest.raises(UnsoundAliasingError, match="written in place after the call"):
        pullback(1.0)


@dataclasses.dataclass
class _Layer:
    W: np.ndarray
    b: np.ndarray


_layer = srcad.checkpoint(lambda p, h: np.tanh(p.W @ h + p.b))


def through_a_dataclass(W, x):
    return np.sum(_layer(_Layer(W, x * 0.5), x) ** 2)


def test_a_dataclass_argument_is_rebuilt_as_it_was_in_tape_mode():
    """Found by review: tape mode rebuilt the arguments from a None-filled copy, whose
    dataclass held no floats and flattened to nothing (a crash inside the recomputation)."""
    W, x = np.array([[0.5, -0.2], [0.1, 0.3]]), np.array([0.4, -0.7])
    expected = numerical_gradient(through_a_dataclass, (W, x), 0)
    np.testing.assert_allclose(srcad.grad(through_a_dataclass)(W, x), expected, rtol=1e-6)
    np.testing.assert_allclose(srcad.tape.grad(through_a_dataclass)(W, x), expected, rtol=1e-6)
