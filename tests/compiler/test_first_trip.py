"""A loop's first forward trip (its backward sweep's last) computes no adjoint of a value
from before the loop that needs none (transform/first_trip.py): the gradients stay those of
finite differences, tape mode and the program without the pass, and the product for the
input batch is left out."""
import numpy as np
import pytest

import srcad
from srcad.compiler.pipeline import PASSES, source_after
from tests.checks import assert_gradient_matches_finite_differences


def mlp(params, inputs):
    for W, b in params:
        inputs = np.tanh(inputs @ W + b)
    return np.sum(inputs ** 2)


def rnn(W, U, xs):
    h = np.zeros(W.shape[0])
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + U @ xs[t])
    return np.sum(h * h)


def carried_from_a_differentiated_start(W, h):
    for _ in range(3):
        h = np.tanh(W @ h)
    return np.sum(h)


def read_again_after_the_loop(W, x):
    h = x * 1.0
    for _ in range(2):
        h = np.sin(W @ h)
    return np.sum(h) + np.sum(x * h)


R = np.random.default_rng(5)
PARAMS = [(R.standard_normal((3, 4)) / 2, R.standard_normal(4)),
          (R.standard_normal((4, 2)) / 2, R.standard_normal(2))]


@pytest.mark.parametrize("fn, args, wrt", [
    (rnn, (R.standard_normal((3, 3)) / 2, R.standard_normal((3, 2)), R.standard_normal((4, 2))),
     (0, 1)),
    (carried_from_a_differentiated_start, (R.standard_normal((3, 3)) / 2,
                                           R.standard_normal(3)), (0, 1)),
    (read_again_after_the_loop, (R.standard_normal((2, 2)), R.standard_normal(2)), (0, 1)),
], ids=lambda c: getattr(c, "__name__", None))
def test_gradients_agree_with_finite_differences_tape_mode_and_without_the_pass(fn, args, wrt):
    assert_gradient_matches_finite_differences(fn, args, wrt)
    got = srcad.grad(fn, wrt=wrt)(*args)
    with srcad.passes.off("first-trip"):
        plain = srcad.grad(fn, wrt=wrt)(*args)
    for a, b, c in zip(got, plain, srcad.tape.grad(fn, wrt=wrt)(*args)):
        np.testing.assert_allclose(a, b, rtol=1e-12)
        np.testing.assert_allclose(a, c, rtol=1e-10)


def test_the_input_batchs_adjoint_is_left_out_of_the_first_trip():
    inputs = R.standard_normal((5, 3))
    got = srcad.grad(mlp)(PARAMS, inputs)
    taped = srcad.tape.grad(mlp)(PARAMS, inputs)
    for (gW, gb), (tW, tb) in zip(got, taped):
        np.testing.assert_allclose(gW, tW, rtol=1e-10)
        np.testing.assert_allclose(gb, tb, rtol=1e-10)
    source = source_after(mlp, ("params",), "gradient", PASSES["gradient"][-1].name,
                          containers=frozenset({"params"}), arrays=frozenset({("inputs", 2)}))
    assert "if step:\n                b_inputs = matmul_vjp_a(" in source


def test_an_adjoint_read_after_the_loop_is_kept_on_every_trip():
    source = source_after(carried_from_a_differentiated_start, ("W", "h"), "rev", "emit")
    assert "if remaining" not in source
