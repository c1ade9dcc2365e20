"""checkpointing: what checkpointing trades, memory for time, on a long recurrence.

A tanh RNN of hidden size 32 runs T steps, `h = tanh(W @ h + x_t)`, and the gradient of
`sum(h_T ** 2)` over W is taken three ways: unrolled, where the backward sweep keeps every
step's state (memory grows as T); as about sqrt(T) segments of sqrt(T) steps, each a call
of a `srcad.checkpoint` helper, whose input alone is kept; and as the unrolled loop marked
`srcad.checkpointed`, which srcad segments itself. Checkpointed, the backward sweep
recomputes one segment at a time: memory grows as sqrt(T), for one more forward sweep's
time.

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


def marked(W, h0, xs, length):
    """The unrolled loop, marked for srcad to checkpoint (segments of about sqrt(T) steps)."""
    h = h0
    for t in srcad.checkpointed(range(xs.shape[0])):
        h = np.tanh(W @ h + xs[t])
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
    """One row per T: peak memory and time of the gradient unrolled, in checkpointed
    helper calls and as a marked loop, and whether the gradients agree; printed as a
    table."""
    rows = []
    for steps in sizes:
        args = arguments(steps)
        plain_peak, plain_time, plain_gradient = measured(srcad.grad(unrolled), args, repeat)
        row = {"steps": steps, "segments": math.ceil(steps / args[3]),
               "unrolled_peak": plain_peak, "unrolled_seconds": plain_time, "agrees": True}
        for name, function in (("checkpointed", segmented), ("marked", marked)):
            peak, seconds, gradient = measured(srcad.grad(function), args, repeat)
            row.update({f"{name}_peak": peak, f"{name}_seconds": seconds})
            row["agrees"] &= bool(np.allclose(plain_gradient, gradient, rtol=1e-10,
                                              atol=1e-12))
        rows.append(row)
    out(table(rows))
    return rows


def table(rows) -> str:
    lines = [f"Gradient of a tanh RNN (hidden {HIDDEN}) of T steps: unrolled, in sqrt(T) "
             "`srcad.checkpoint` helper calls, and as a loop marked `srcad.checkpointed` "
             "(peak memory by tracemalloc, least time of runs; ratios to unrolled)",
             f"{'T':>6} {'segments':>8}  {'peak unrolled':>13} {'helper':>15} {'marked':>15}"
             f"  {'time unrolled':>13} {'helper':>15} {'marked':>15}  agrees"]
    for row in rows:
        peaks = [f"{row[f'{n}_peak'] / 2**20:>7.2f} MiB {row[f'{n}_peak'] / row['unrolled_peak']:>4.2f}"
                 for n in ("checkpointed", "marked")]
        times = [f"{row[f'{n}_seconds'] * 1e3:>7.1f} ms "
                 f"{row[f'{n}_seconds'] / row['unrolled_seconds']:>4.2f}x"
                 for n in ("checkpointed", "marked")]
        lines.append(
            f"{row['steps']:>6} {row['segments']:>8}  {row['unrolled_peak'] / 2**20:>9.2f} MiB "
            f"{peaks[0]} {peaks[1]}  {row['unrolled_seconds'] * 1e3:>10.1f} ms "
            f"{times[0]} {times[1]}  {row['agrees']}")
    return "\n".join(lines)
