"""Recover the conductivity of a rod from its final temperature, with code written in place.

The simulator is written the way numerical code usually is: a state array updated in place
by helpers (`apply_boundary(u)` writes into `u`), fluxes assembled with `np.add.at`, and a
buffer from `np.zeros` filled in a loop. srcad differentiates it as it stands (autograd and
JAX refuse in-place writes), and the gradient is checked against finite differences before
a few steps of gradient descent fit the conductivities. Run:
python examples/heat_inverse_problem.py
"""
import numpy as np

import srcad
from srcad.api.testing import numerical_gradient

CELLS = 12
LEFT, RIGHT = np.arange(CELLS - 1), np.arange(1, CELLS)  # the two cells of each interface


def apply_boundary(u):
    u[0] = 1.0           # a heated left end
    u[-1] = u[-2]        # an insulated right end


def step(u, conductivity, dt):
    """One explicit Euler step: interface fluxes scattered into their two cells."""
    flux = conductivity * (u[RIGHT] - u[LEFT])
    change = np.zeros(CELLS)
    np.add.at(change, LEFT, flux)
    np.subtract.at(change, RIGHT, flux)
    u += dt * change
    apply_boundary(u)


def final_temperature(conductivity, steps=60, dt=0.05):
    u = np.zeros(CELLS)
    apply_boundary(u)
    for _ in range(steps):
        step(u, conductivity, dt)
    return u


def misfit(conductivity, observed):
    return np.sum((final_temperature(conductivity) - observed) ** 2)


def main(iterations=200, learning_rate=2.0):
    truth = 0.6 + 0.3 * np.sin(np.linspace(0.0, 3.0, CELLS - 1))
    observed = final_temperature(truth)
    guess = np.full(CELLS - 1, 0.5)
    gradient = srcad.grad(misfit)
    difference = np.max(np.abs(gradient(guess, observed)
                               - numerical_gradient(misfit, (guess, observed), 0)))
    print(f"gradient vs finite differences: max difference {difference:.1e}")
    print(f"misfit at the start: {misfit(guess, observed):.3e}")
    for _ in range(iterations):
        guess = guess - learning_rate * gradient(guess, observed)
    print(f"misfit after {iterations} steps: {misfit(guess, observed):.3e}")


if __name__ == "__main__":
    main()
