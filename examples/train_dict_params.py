"""Train a small two-layer network whose parameters live in a dict of arrays.

srcad.value_and_grad returns the gradient with the same dict structure, so the update is
one comprehension. Run: python examples/train_dict_params.py
"""
import numpy as np

import srcad


def predict(params, x):
    hidden = np.tanh(x @ params["W1"] + params["b1"])
    return hidden @ params["W2"] + params["b2"]


def loss(params, x, y):
    error = predict(params, x) - y
    return np.mean(error ** 2)


def main(steps=300, learning_rate=0.1):
    rng = np.random.default_rng(0)
    x = rng.uniform(-2.0, 2.0, (128, 1))
    y = np.sin(2.0 * x[:, 0])
    params = {"W1": rng.standard_normal((1, 16)) * 0.5, "b1": np.zeros(16),
              "W2": rng.standard_normal(16) * 0.5, "b2": 0.0}
    value_and_gradient = srcad.value_and_grad(loss)
    for step in range(steps):
        value, gradient = value_and_gradient(params, x, y)
        params = {name: params[name] - learning_rate * gradient[name] for name in params}
        if step % 100 == 0:
            print(f"step {step:4d}  loss {value:.4f}")
    final = loss(params, x, y)
    print(f"final loss {final:.4f}")
    return final


if __name__ == "__main__":
    main()
