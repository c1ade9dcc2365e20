"""GradientTape's Jacobians and higher derivatives: jacobian, batch_jacobian, nested tapes."""
import numpy as np
import pytest

from srcad.tape import BatchDependenceError, GradientTape, TapeTypeError, constant
from srcad.tape import grad as tape_grad
from srcad.api.testing import numerical_gradient

X = np.array([0.5, -0.3, 0.8])


def value(t):
    return None if t is None else np.asarray(t)


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


def test_jacobian_of_nested_sources_keeps_their_structure():
    x, other = constant(X), constant(np.ones((2, 2), np.float32))
    with GradientTape(persistent=True) as tape:
        tape.watch([x, other])
        y = np.sin(x)
        empty = x[:0] * 2.0
    got = tape.jacobian(y, {"x": x, "rest": [other]})
    np.testing.assert_allclose(value(got["x"]), np.diag(np.cos(X)))
    assert got["rest"] == [None]
    zeros = tape.jacobian(y, {"x": x, "rest": [other]}, unconnected_gradients="zero")
    assert value(zeros["rest"][0]).shape == (3, 2, 2) and not value(zeros["rest"][0]).any()
    assert value(zeros["rest"][0]).dtype == np.float32
    assert value(tape.jacobian(empty, x)).shape == (0, 3)  # an empty target: an empty Jacobian
    with pytest.raises(TypeError, match="one target tensor") as info:
        tape.jacobian([y, y], x)
    assert isinstance(info.value, TapeTypeError)


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


def test_batch_jacobian_of_an_unconnected_source_and_on_a_non_persistent_tape():
    x, unused = constant(np.ones((2, 3))), constant(np.ones((2, 4)))
    with GradientTape() as tape:
        tape.watch([x, unused])
        y = x[:, :2] ** 2
    assert tape._persistent is False and tape.batch_jacobian(y, unused) is None
    with pytest.raises(RuntimeError, match="one set of gradients"):
        tape.batch_jacobian(y, unused, unconnected_gradients="zero")
    with GradientTape(persistent=True) as tape:
        tape.watch([x, unused])
        y = x[:, :2] ** 2
    zero = value(tape.batch_jacobian(y, unused, unconnected_gradients="zero"))
    assert zero.shape == (2, 2, 4) and not zero.any()
    np.testing.assert_array_equal(value(tape.batch_jacobian(y, x))[1], [[2, 0, 0], [0, 2, 0]])


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
