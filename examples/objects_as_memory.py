"""Objects as they are written in numerical code: layers built from parameters and called,
an integrator object stepped in a loop, a running statistic kept in an attribute.

srcad differentiates the objects the function makes as memory: attributes written and read
back, `__init__` run on differentiated values, methods that update their object.

Run: python examples/objects_as_memory.py
"""
import numpy as np

import srcad


class Dense:
    def __init__(self, W, b):
        self.W = W
        self.b = b

    def __call__(self, h):
        return np.tanh(h @ self.W + self.b)


class Model:
    def __init__(self, params):
        self.layers = [Dense(params["W1"], params["b1"]), Dense(params["W2"], params["b2"])]
        self.calls = 0

    def __call__(self, x):
        self.calls += 1
        for layer in self.layers:
            x = layer(x)
        return x


class Euler:
    """Integrates dy/dt = -rate * y + forcing(t), keeping the state on itself."""

    def __init__(self, y0, dt):
        self.y, self.t, self.dt = y0, 0.0, dt
        self.path = []

    def step(self, rate):
        self.y = self.y + self.dt * (-rate * self.y + np.sin(self.t))
        self.t += self.dt
        self.path.append(self.y)


def loss(params, x, y):
    model = Model(params)
    error = model(x)[:, 0] - y
    return np.mean(error ** 2)


def trajectory_misfit(rate, observed):
    ode = Euler(1.0, 0.05)
    while len(ode.path) < len(observed):
        ode.step(rate)
    return np.sum((np.array(ode.path) - observed) ** 2)


def main(steps=200, learning_rate=0.2):
    rng = np.random.default_rng(0)
    x = rng.uniform(-2.0, 2.0, (64, 1))
    y = 0.8 * np.sin(1.5 * x[:, 0])
    params = {"W1": rng.standard_normal((1, 8)) * 0.5, "b1": np.zeros(8),
              "W2": rng.standard_normal((8, 1)) * 0.5, "b2": np.zeros(1)}
    value_and_gradient = srcad.value_and_grad(loss)
    for step in range(steps):
        value, gradient = value_and_gradient(params, x, y)
        params = {name: params[name] - learning_rate * gradient[name] for name in params}
        if step % 50 == 0:
            print(f"step {step:4d}  loss {value:.4f}")
    print(f"final loss {loss(params, x, y):.4f}")

    truth = Euler(1.0, 0.05)  # the data: the same integrator at rate 0.7
    for _ in range(40):
        truth.step(0.7)
    observed = np.array(truth.path)
    rate = 0.2
    derivative = srcad.grad(trajectory_misfit)
    second = srcad.grad(derivative)  # (Newton's method: the derivative of the derivative)
    for _ in range(6):
        rate = rate - derivative(rate, observed) / second(rate, observed)
    print(f"recovered rate {rate:.6f} (true 0.7)")
    return loss(params, x, y), rate


if __name__ == "__main__":
    main()
