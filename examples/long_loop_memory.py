"""Peak memory of the gradient of a 1000-step loop over a (256,) array: srcad against a
backward pass written by hand, both measured with tracemalloc.

Run: python examples/long_loop_memory.py
"""
import tracemalloc

import numpy as np

import srcad

STEPS = 1000


def simulate(x):
    h = x
    for step in range(STEPS):
        h = h + 0.001 * np.sin(h)
    return np.sum(h)


def simulate_gradient_by_hand(x):
    """What a person writes: keep every state, then walk back through them."""
    states = []
    h = x
    for step in range(STEPS):
        states.append(h)
        h = h + 0.001 * np.sin(h)
    g = np.ones_like(h)
    for h in reversed(states):
        g = g + 0.001 * np.cos(h) * g
    return g


def peak_bytes(call, x):
    call(x)  # warm up: srcad transforms and compiles on the first call
    tracemalloc.start()
    result = call(x)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak, result


def main():
    x = np.linspace(0.0, 1.0, 256)
    srcad_peak, srcad_gradient = peak_bytes(srcad.grad(simulate), x)
    hand_peak, hand_gradient = peak_bytes(simulate_gradient_by_hand, x)
    assert np.allclose(srcad_gradient, hand_gradient)
    print(f"{STEPS} steps over a {x.shape} array ({x.nbytes} bytes per state)")
    print(f"srcad.grad peak:        {srcad_peak / 1e6:.2f} MB")
    print(f"hand-written peak:      {hand_peak / 1e6:.2f} MB")
    print(f"ratio:                  {srcad_peak / hand_peak:.2f}")


if __name__ == "__main__":
    main()
