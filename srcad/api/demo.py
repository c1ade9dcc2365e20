"""The demo `python -m srcad demo` runs: a small network's loss and its gradient.

It prints the function, the adjoint srcad generates for it, the gradient checked against
central finite differences, and the time of the first (transforming) call, of a cached
call and of a hand-written NumPy gradient.
"""
from __future__ import annotations

import inspect
import time

import numpy as np

from srcad.api.derivative import grad
from srcad.api.testing import numerical_gradient
from srcad.compiler.cache import clear_cache


def loss(w1, b1, w2, x, y):
    """Mean squared error of a two-layer network, with an L2 penalty on the weights."""
    hidden = np.tanh(x @ w1 + b1)
    prediction = hidden @ w2
    error = prediction - y
    data_term = np.mean(error ** 2)
    penalty = 1e-3 * (np.sum(w1 ** 2) + np.sum(w2 ** 2))
    if data_term > 1e3:
        penalty = penalty * 0.0
    return data_term + penalty


def loss_gradient_by_hand(w1, b1, w2, x, y):
    """The gradient a person would write for `loss`, for the timing comparison."""
    hidden = np.tanh(x @ w1 + b1)
    error = hidden @ w2 - y
    data_term = np.mean(error ** 2)
    scale = 0.0 if data_term > 1e3 else 1e-3
    g_prediction = 2.0 * error / error.size
    g_w2 = hidden.T @ g_prediction + 2 * scale * w2
    g_pre = np.outer(g_prediction, w2) * (1.0 - hidden ** 2)
    return x.T @ g_pre + 2 * scale * w1, g_pre.sum(axis=0), g_w2


def _median_seconds(call, repeat=200):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def run() -> None:
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((64, 8)), rng.standard_normal(64)
    w1, b1, w2 = rng.standard_normal((8, 16)) * 0.3, np.zeros(16), rng.standard_normal(16)
    args = (w1, b1, w2, x, y)
    print("# the function\n" + inspect.getsource(loss))
    clear_cache()
    gradient = grad(loss, wrt=(0, 1, 2))
    start = time.perf_counter()
    gradients = gradient(*args)
    first = time.perf_counter() - start
    print("# the adjoint srcad generated (srcad.grad(loss, wrt=(0, 1, 2)).source)")
    print(gradient.source)
    error = max(np.max(np.abs(g - numerical_gradient(loss, args, i)))
                for i, g in enumerate(gradients))
    by_hand_error = max(np.max(np.abs(g - h)) for g, h in
                        zip(gradients, loss_gradient_by_hand(*args)))
    print(f"# max |srcad - central finite differences| = {error:.2e} "
          f"(against the hand-written gradient: {by_hand_error:.2e})")
    cached = _median_seconds(lambda: gradient(*args))
    by_hand = _median_seconds(lambda: loss_gradient_by_hand(*args))
    print(f"# first call (transform + compile + run): {first * 1e3:.2f} ms")
    print(f"# cached call: {cached * 1e6:.1f} us; hand-written NumPy gradient: "
          f"{by_hand * 1e6:.1f} us (ratio {cached / by_hand:.2f})")
