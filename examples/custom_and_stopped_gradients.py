"""Shaping derivatives: a custom gradient, a straight-through estimator, a target network.

Run: python examples/custom_and_stopped_gradients.py
"""
import numpy as np

import srcad


@srcad.custom_gradient
def softplus(x):
    """log(1 + exp(x)) computed stably, with the derivative sigmoid(x) given directly."""
    y = np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0.0)

    def grad_fn(dy):
        return dy / (1.0 + np.exp(-x))
    return y, grad_fn


def quantize(w):
    return np.round(w * 4.0) / 4.0


# Straight-through estimator: rounding has a zero derivative almost everywhere, so pass
# the cotangent through unchanged instead of tracing np.round.
srcad.defvjp(quantize, lambda g, ans, w: g)


def quantized_regression_loss(w, x, y):
    return np.mean((x @ quantize(w) - y) ** 2) + 1e-2 * np.sum(softplus(w))


def td_loss(weights, target_weights, states, rewards, next_states, discount=0.9):
    """Temporal-difference loss: the target network's estimate is a constant."""
    values = states @ weights
    targets = rewards + discount * srcad.stop_gradient(next_states @ target_weights)
    return np.mean((values - targets) ** 2)


def main():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 3))
    y = x @ np.array([0.5, -1.25, 2.0])
    w = np.zeros(3)
    gradient = srcad.grad(quantized_regression_loss)
    for step in range(200):
        w = w - 0.05 * gradient(w, x, y)
    print("quantized weights:", quantize(w))

    states, next_states = rng.standard_normal((32, 4)), rng.standard_normal((32, 4))
    rewards, weights = rng.standard_normal(32), np.zeros(4)
    target_weights = weights.copy()
    td_gradient = srcad.grad(td_loss)
    for step in range(100):
        weights = weights - 0.1 * td_gradient(weights, target_weights, states, rewards,
                                              next_states)
        if step % 20 == 19:
            target_weights = weights.copy()
    print("TD loss:", round(float(td_loss(weights, target_weights, states, rewards,
                                          next_states)), 4))

    # Second derivatives differentiate grad_fn itself, so they stay finite where the
    # automatic Hessian of log1p(exp(x)) overflows (exp(1000) is inf).
    curvature = srcad.hessian(lambda v: np.sum(softplus(v)))(np.array([-2.0, 0.0, 1000.0]))
    print("softplus curvature:", np.round(np.diag(curvature), 4))
    return quantize(w)


if __name__ == "__main__":
    main()
