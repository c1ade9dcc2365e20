"""Gradient checkpointing: the gradient of a 4000-step tanh RNN with every state kept; with
the loop split into 63 calls of a `srcad.checkpoint` helper of 63 steps, whose backward
sweep keeps each segment's input alone and recomputes one segment at a time; and with the
loop as written, marked `srcad.checkpointed`, which srcad splits into segments itself. Peak
memory measured with tracemalloc; the three gradients are the same numbers.

Run: python examples/checkpointing.py
"""
import math
import time
import tracemalloc

import numpy as np

import srcad

STEPS = 4000
HIDDEN = 32


def unrolled(W, h0, xs):
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + xs[t])
    return np.sum(h ** 2)


@srcad.checkpoint
def segment(h, W, xs):
    """Called plainly, the recurrence over the rows of `xs`; differentiated, a call whose
    intermediates are recomputed when the gradient reaches it."""
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + xs[t])
    return h


def segmented(W, h0, xs):
    length = math.isqrt(xs.shape[0])
    h = h0
    for start in range(0, xs.shape[0], length):
        h = segment(h, W, xs[start:start + length])
    return np.sum(h ** 2)


def marked(W, h0, xs):
    h = h0
    for t in srcad.checkpointed(range(xs.shape[0])):  # segments of about sqrt(T) steps
        h = np.tanh(W @ h + xs[t])
    return np.sum(h ** 2)


def measured(gradient, *args):
    gradient(*args)  # warm up: srcad transforms and compiles on the first call
    start = time.perf_counter()
    gradient(*args)
    seconds = time.perf_counter() - start
    tracemalloc.start()
    result = gradient(*args)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak, seconds, result


def main():
    rng = np.random.default_rng(0)
    W = rng.standard_normal((HIDDEN, HIDDEN)) / math.sqrt(HIDDEN)
    h0, xs = rng.standard_normal(HIDDEN), rng.standard_normal((STEPS, HIDDEN)) * 0.5
    plain_peak, plain_time, plain_gradient = measured(srcad.grad(unrolled), W, h0, xs)
    split_peak, split_time, split_gradient = measured(srcad.grad(segmented), W, h0, xs)
    marked_peak, marked_time, marked_gradient = measured(srcad.grad(marked), W, h0, xs)
    assert np.allclose(plain_gradient, split_gradient, rtol=1e-10, atol=1e-12)
    assert np.allclose(plain_gradient, marked_gradient, rtol=1e-10, atol=1e-12)
    print(f"{STEPS} steps of a tanh RNN with hidden size {HIDDEN}, gradient over W")
    print(f"unrolled peak:      {plain_peak / 1e6:.2f} MB   {plain_time * 1e3:.0f} ms")
    print(f"checkpointed peak:  {split_peak / 1e6:.2f} MB   {split_time * 1e3:.0f} ms"
          f"   ({math.isqrt(STEPS)}-step segments)")
    print(f"marked loop peak:   {marked_peak / 1e6:.2f} MB   {marked_time * 1e3:.0f} ms")
    print(f"memory ratios:      {split_peak / plain_peak:.2f} (helper), "
          f"{marked_peak / plain_peak:.2f} (marked)")
    print(f"time ratios:        {split_time / plain_time:.2f} (helper), "
          f"{marked_time / plain_time:.2f} (marked)")


if __name__ == "__main__":
    main()
