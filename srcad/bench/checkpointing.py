"""checkpointing: what `srcad.checkpoint` trades, memory for time, on a long recurrence.

A tanh RNN of hidden size 32 runs T steps, `h = tanh(W @ h + x_t)`, and the gradient of
`sum(h_T ** 2)` over W is taken twice: unrolled, where the backward sweep keeps every
step's state (memory grows as T), and as about sqrt(T) checkpointed segments of sqrt(T)
steps, where it keeps each segment's input and recomputes one segment at a time (memory
grows as sqrt(T), for one more forward sweep's time).

`python -m srcad.bench --checkpoint` prints the curve; `curve` returns it.
"""
from __future__ import annotations

import math
import time
import tracemalloc

import numpy as np

import srcad

SIZES = (1000, 4000, 10000)
HIDDEN = 32


def segment(h, W, xs):
    """The recurrence over the rows of `xs`, from the state `h`."""
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + xs[t])
    return h


checkpointed_segment = srcad.checkpoint(segment)


def unrolled(W, h0, xs, length):
    """The loss with every step in one loop (`length` unused: the same signature)."""
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + xs[t])
    return np.sum(h ** 2)


def segmented(W, h0, xs, length):
    """The same loss, as checkpointed segments of `length` steps."""
    h = h0
    for start in range(0, xs.shape[0], length):
        h = checkpointed_segment(h, W, xs[start:start + length])
    return np.sum(h ** 2)


def arguments(steps: int):
    rng = np.random.default_rng(0)
    return (rng.standard_normal((HIDDEN, HIDDEN)) / math.sqrt(HIDDEN),
            rng.standard_normal(HIDDEN), rng.standard_normal((steps, HIDDEN)) * 0.5,
            math.isqrt(steps))


def measured(gradient, args, repeat: int):
    """(peak bytes traced during one gradient, least seconds of `repeat`, the gradient);
    the first call, which transforms, is not measured."""
    value = gradient(*args)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        gradient(*args)
        times.append(time.perf_counter() - start)
    tracemalloc.start()
    try:
        gradient(*args)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak, min(times), value


def curve(sizes=SIZES, repeat: int = 3, out=print) -> list[dict]:
    """One row per T: peak memory and time of the gradient unrolled and checkpointed, and
    whether the two gradients agree; printed as a table."""
    rows = []
    for steps in sizes:
        args = arguments(steps)
        plain_peak, plain_time, plain_gradient = measured(srcad.grad(unrolled), args, repeat)
        split_peak, split_time, split_gradient = measured(srcad.grad(segmented), args, repeat)
        rows.append({"steps": steps, "segments": math.ceil(steps / args[3]),
                     "unrolled_peak": plain_peak, "checkpointed_peak": split_peak,
                     "unrolled_seconds": plain_time, "checkpointed_seconds": split_time,
                     "agrees": bool(np.allclose(plain_gradient, split_gradient,
                                                rtol=1e-10, atol=1e-12))})
    out(table(rows))
    return rows


def table(rows) -> str:
    lines = [f"Gradient of a tanh RNN (hidden {HIDDEN}) of T steps, unrolled vs sqrt(T) "
             "checkpointed segments (peak memory by tracemalloc, least time of runs)",
             f"{'T':>6} {'segments':>8}  {'peak unrolled':>13} {'checkpointed':>12} "
             f"{'ratio':>6}  {'time unrolled':>13} {'checkpointed':>12} {'ratio':>6}  agrees"]
    for row in rows:
        lines.append(
            f"{row['steps']:>6} {row['segments']:>8}  {row['unrolled_peak'] / 2**20:>9.2f} MiB "
            f"{row['checkpointed_peak'] / 2**20:>8.2f} MiB "
            f"{row['checkpointed_peak'] / row['unrolled_peak']:>6.2f}  "
            f"{row['unrolled_seconds'] * 1e3:>10.1f} ms {row['checkpointed_seconds'] * 1e3:>9.1f} ms "
            f"{row['checkpointed_seconds'] / row['unrolled_seconds']:>5.2f}x  {row['agrees']}")
    return "\n".join(lines)
