"""The demo `python -m srcad demo` runs: a logistic-regression loss and its gradient.

It prints the function, the adjoint srcad generates for it, the gradient checked against
central finite differences, and the time of the first (transforming) call, of a cached
call and of a hand-written NumPy gradient.
"""
from __future__ import annotations

import inspect
import time

import numpy as np

import srcad
from srcad.testing import numerical_gradient


def loss(w, b, x, y):
    """Mean negative log-likelihood of a logistic regression."""
    z = x @ w + b
    p = 1.0 / (1.0 + np.exp(-z))
    log_likelihood = y * np.log(p) + (1.0 - y) * np.log(1.0 - p)
    return -np.mean(log_likelihood)


def loss_gradient_by_hand(w, b, x, y):
    """The gradient a person would write for `loss`, for the timing comparison."""
    p = 1.0 / (1.0 + np.exp(-(x @ w + b)))
    residual = (p - y) / len(y)
    return x.T @ residual, np.sum(residual)


def _median_seconds(call, repeat=200):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def run() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((200, 5))
    y = (rng.random(200) < 0.5).astype(float)
    w, b = rng.standard_normal(5), 0.1
    print("# the function\n" + inspect.getsource(loss))
    srcad.clear_cache()
    gradient = srcad.grad(loss, wrt=(0, 1))
    start = time.perf_counter()
    g_w, g_b = gradient(w, b, x, y)
    first = time.perf_counter() - start
    print("# the adjoint srcad generated (srcad.grad(loss, wrt=(0, 1)).source)")
    print(gradient.source)
    error = max(np.max(np.abs(g_w - numerical_gradient(loss, (w, b, x, y), 0))),
                abs(g_b - numerical_gradient(loss, (w, b, x, y), 1)))
    print(f"# gradient: d/dw = {np.round(g_w, 6)}, d/db = {g_b:.6f}")
    print(f"# max |srcad - central finite differences| = {error:.2e}")
    cached = _median_seconds(lambda: gradient(w, b, x, y))
    by_hand = _median_seconds(lambda: loss_gradient_by_hand(w, b, x, y))
    print(f"# first call (transform + compile + run): {first * 1e3:.2f} ms")
    print(f"# cached call: {cached * 1e6:.1f} us; hand-written NumPy gradient: "
          f"{by_hand * 1e6:.1f} us (ratio {cached / by_hand:.2f})")
