"""Fit the four rates of a predator-prey (Lotka-Volterra) model to noisy counts.

The simulator is a classical Runge-Kutta integrator written as numerical code usually is:
the trajectory is an `np.empty` buffer filled row by row, and the right-hand side writes
into `np.zeros` stage buffers that every step reuses (`rates(y, theta, out=k1)`). autograd
and JAX refuse such in-place writes; srcad differentiates the code as it stands. Its
gradient is checked against finite differences, then handed to scipy.optimize as `jac=`.
Needs SciPy. Run: python examples/ode_parameter_fit.py
"""
import numpy as np
import scipy.optimize

import srcad
from srcad.api.testing import numerical_gradient

DT, STEPS, EVERY = 0.1, 150, 10  # 15 time units, an observation every 10 steps


def rates(y, theta, out):
    """dy/dt of (prey, predators), written into `out`."""
    growth, predation, conversion, death = theta[0], theta[1], theta[2], theta[3]
    out[0] = growth * y[0] - predation * y[0] * y[1]
    out[1] = conversion * y[0] * y[1] - death * y[1]


def simulate(theta, y0):
    """The states at every step, by fourth-order Runge-Kutta."""
    trajectory = np.empty((STEPS + 1, 2))
    trajectory[0] = y0
    k1, k2, k3, k4 = np.zeros(2), np.zeros(2), np.zeros(2), np.zeros(2)
    for i in range(STEPS):
        y = trajectory[i]
        rates(y, theta, k1)
        rates(y + 0.5 * DT * k1, theta, k2)
        rates(y + 0.5 * DT * k2, theta, k3)
        rates(y + DT * k3, theta, k4)
        trajectory[i + 1] = y + DT / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
    return trajectory


def loss(log_theta, y0, observed):
    """Squared error of the log counts at the observation times; the rates are fitted on
    a log scale, which keeps them positive."""
    predicted = simulate(np.exp(log_theta), y0)[EVERY::EVERY]
    return np.sum((np.log(predicted) - np.log(observed)) ** 2)


def main():
    rng = np.random.default_rng(11)
    true_theta, y0 = np.array([1.0, 0.5, 0.3, 0.8]), np.array([2.0, 1.0])
    noise = np.exp(0.02 * rng.standard_normal((STEPS // EVERY, 2)))  # (2% multiplicative)
    observed = simulate(true_theta, y0)[EVERY::EVERY] * noise

    gradient = srcad.grad(loss)
    start = np.log(np.array([0.7, 0.4, 0.4, 0.6]))
    by_differences = numerical_gradient(loss, (start, y0, observed), 0)
    np.testing.assert_allclose(gradient(start, y0, observed), by_differences, rtol=1e-5)
    print(f"gradient at the start: {np.round(gradient(start, y0, observed), 3)} "
          "(matches finite differences)")

    fitted = scipy.optimize.minimize(loss, start, args=(y0, observed), jac=gradient,
                                     method="L-BFGS-B")
    assert fitted.success, fitted.message
    theta = np.exp(fitted.x)
    print(f"L-BFGS-B: {fitted.nit} iterations, loss {loss(start, y0, observed):.3f} -> "
          f"{fitted.fun:.5f}")
    for name, value, truth in zip(["growth", "predation", "conversion", "death"], theta,
                                  true_theta):
        print(f"  {name:10s} {value:.3f}  (data made with {truth})")
    np.testing.assert_allclose(theta, true_theta, rtol=0.05)


if __name__ == "__main__":
    main()
