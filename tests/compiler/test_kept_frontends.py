"""A function's simple form made once for all its programs (compiler/frontend/kept.py): each
mode's program the same as when it is made alone, the numbers right, and made again where a
binding it relied on changed."""
import numpy as np
import pytest

import srcad
from srcad.compiler import pipeline


@pytest.fixture(autouse=True)
def empty_cache():
    srcad.clear_cache()
    yield
    srcad.clear_cache()


@pytest.fixture
def frontends(monkeypatch):
    """The functions whose simple form was made, once per making."""
    made = []
    original = pipeline._simple_form
    monkeypatch.setattr(pipeline, "_simple_form",
                        lambda fn, *how: made.append(fn.__name__) or original(fn, *how))
    return made


def model(x, w):
    h = np.tanh(x @ w)
    for step in range(3):
        if step % 2 == 0:
            h = np.sin(h) * x
        else:
            h = h - 0.1 * h * h
    a, b = h[0], h + 0.5
    return np.sum(b * b) + a * 2.0


def numeric_gradient(f, x, w, eps=1e-6):
    flat = x.ravel()
    out = np.empty_like(flat)
    for i in range(flat.size):
        step = np.zeros_like(flat)
        step[i] = eps
        out[i] = (f(x + step.reshape(x.shape), w) - f(x - step.reshape(x.shape), w)) / (2 * eps)
    return out.reshape(x.shape)


ARGS = (np.array([0.3, -0.2, 0.5]), np.array([[0.2, -0.1, 0.4], [0.3, 0.5, -0.2],
                                               [-0.4, 0.1, 0.3]]))
MODES = {
    "grad": lambda: srcad.grad(model)(*ARGS),
    "value_and_grad": lambda: srcad.value_and_grad(model)(*ARGS),
    "vjp": lambda: srcad.vjp(model, *ARGS)[1](1.0),
    "jvp": lambda: srcad.jvp(model, ARGS, (np.ones(3), None)),
}


def test_every_mode_of_one_function_makes_the_simple_form_once(frontends):
    results = {name: run() for name, run in MODES.items()}
    assert frontends == ["model"]
    expected = numeric_gradient(model, *ARGS)
    np.testing.assert_allclose(results["grad"], expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(results["value_and_grad"][1], expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(results["vjp"], expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(results["jvp"][1], expected.sum(), rtol=1e-6)


@pytest.mark.parametrize("last", ["gradient", "rev", "fwd", "slope"])
def test_a_program_made_after_the_others_is_the_one_made_alone(last):
    """What the passes of the programs made before did to their copies of the simple form
    (the forward sweep is its statements) reaches neither the kept one nor the next copy."""
    def source(mode):
        options = {"arrays": frozenset({("x", 1), ("w", 2)})} if mode == "gradient" else {}
        return pipeline.source_after(model, ("x",), mode, "emit", **options)

    alone = source(last)
    srcad.clear_cache()
    for mode in ("gradient", "rev", "fwd", "slope"):
        if mode != last:
            source(mode)
    assert source(last) == alone


ACTIVATION = np.sin


def scaled(x):
    return np.sum(ACTIVATION(x) * 2.0)


def test_a_global_rebound_between_modes_makes_the_simple_form_again(frontends, monkeypatch):
    x = np.array([0.1, 0.7])
    np.testing.assert_allclose(srcad.grad(scaled)(x), 2.0 * np.cos(x))
    monkeypatch.setattr(f"{__name__}.ACTIVATION", np.tanh)  # (a global the frontend resolved)
    value, gradient = srcad.value_and_grad(scaled)(x)
    np.testing.assert_allclose(value, np.sum(np.tanh(x) * 2.0))
    np.testing.assert_allclose(gradient, 2.0 * (1.0 - np.tanh(x) ** 2))
    assert frontends == ["scaled", "scaled"]


def closure(activation):
    def f(x):
        return np.sum(activation(x) * x)
    return f


def test_closures_of_one_code_share_it_only_where_their_cells_agree(frontends):
    x = np.array([0.4, -0.3])
    with_sin, with_sin_too, with_cos = closure(np.sin), closure(np.sin), closure(np.cos)
    np.testing.assert_allclose(srcad.grad(with_sin)(x), np.cos(x) * x + np.sin(x))
    np.testing.assert_allclose(srcad.value_and_grad(with_sin_too)(x)[1],
                               np.cos(x) * x + np.sin(x))
    np.testing.assert_allclose(srcad.value_and_grad(with_cos)(x)[1], -np.sin(x) * x + np.cos(x))
    assert frontends == ["f", "f"]  # (the cell holding np.cos: made again)


def logistic(params, X):
    z = X @ params["w"] + params["b"]
    return np.sum(np.log1p(np.exp(-z)))


def test_a_program_taking_leaves_and_one_taking_the_container_keep_their_own_forms():
    """The leaves (frontend/leaves.py) rewrite the parsed function: they are part of the key."""
    X = np.array([[0.5, -1.0], [1.5, 0.2], [-0.3, 0.8]])
    params = {"w": np.array([0.3, -0.7]), "b": 0.2}
    gradient = srcad.grad(logistic)(params, X)
    value, pullback = srcad.vjp(logistic, params, X)
    through_container = pullback(1.0)
    z = X @ params["w"] + params["b"]
    weights = -1.0 / (1.0 + np.exp(z))
    for result in (gradient, through_container):
        np.testing.assert_allclose(result["w"], X.T @ weights)
        np.testing.assert_allclose(result["b"], np.sum(weights))
