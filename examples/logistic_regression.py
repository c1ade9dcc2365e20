"""Fit a logistic regression by gradient descent with srcad.grad.

Run: python examples/logistic_regression.py
"""
import numpy as np

import srcad


def loss(w, b, x, y):
    """Mean negative log-likelihood, with a small L2 penalty on the weights."""
    z = x @ w + b
    p = 1.0 / (1.0 + np.exp(-z))
    log_likelihood = y * np.log(p) + (1.0 - y) * np.log(1.0 - p)
    return -np.mean(log_likelihood) + 1e-3 * np.sum(w ** 2)


def main(steps=200, learning_rate=0.5):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((500, 3))
    true_w = np.array([2.0, -1.0, 0.5])
    y = (rng.random(500) < 1.0 / (1.0 + np.exp(-(x @ true_w - 0.3)))).astype(float)
    w, b = np.zeros(3), 0.0
    value_and_gradient = srcad.value_and_grad(loss, wrt=(0, 1))
    for step in range(steps):
        value, (g_w, g_b) = value_and_gradient(w, b, x, y)
        w, b = w - learning_rate * g_w, b - learning_rate * g_b
        if step % 50 == 0:
            print(f"step {step:4d}  loss {value:.4f}")
    print(f"fitted w = {np.round(w, 2)}, b = {b:.2f} (data made with w = {true_w}, b = -0.3)")
    return w, b


if __name__ == "__main__":
    main()
