"""Per-operation overhead of tape mode: microseconds per NumPy operation on a chain of small
operations, next to plain NumPy's for the same chain.

The chain is `h = np.sin(h) * 0.999 + 0.01` repeated until `--ops` operations (default
10,000) have run, on a 0-d float64 and on a 3-element array: the values are tiny, so the
times are the per-operation cost, not NumPy's arithmetic. Each row is the best of
`--repeat` runs divided by the number of operations:

    numpy              the chain on plain NumPy values (the floor)
    tensors, no tape   the chain on srcad tensors with no tape recording (dispatch only)
    record             inside a GradientTape that watches the input
    record + gradient  recording, then `tape.gradient` (the reverse sweep) of the result

`--ops 100000` also shows that a long chain needs no recursion. Last, the memory a
non-persistent tape holds (tracemalloc) for the same chain over 10,000-element arrays:
after recording, at the peak of `gradient` (the sweep frees each node once used, so no more
than before it) and after it (only the result and the gradient are left).

Run: python examples/tape_overhead.py [--ops 10000] [--repeat 5]
"""
import argparse
import gc
import time
import tracemalloc

import numpy as np

from srcad.tape import GradientTape, constant


def chain(h, steps):
    for _ in range(steps):
        h = np.sin(h) * 0.999 + 0.01
    return h


def numpy_only(x, steps):
    chain(x, steps)


def tensors_no_tape(x, steps):
    chain(constant(x), steps)


def record(x, steps, differentiate=False):
    source = constant(x)
    with GradientTape() as tape:
        tape.watch(source)
        h = chain(source, steps)
    if differentiate:
        tape.gradient(h, source)


def record_and_gradient(x, steps):
    record(x, steps, differentiate=True)


def best_seconds(run, x, steps, repeat):
    times = []
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        run(x, steps)
        times.append(time.perf_counter() - start)
    return min(times)


MEMORY_STEPS, MEMORY_SIZE = 100, 10_000


def memory():
    """Megabytes held: after recording, at the peak of `gradient`, after `gradient`."""
    x = constant(np.linspace(0.0, 1.0, MEMORY_SIZE))
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    with GradientTape() as tape:
        tape.watch(x)
        h = chain(x, MEMORY_STEPS)
    recorded = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    g = tape.gradient(h, x)
    after, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del g, h
    return [(m - base) / 1e6 for m in (recorded, peak, after)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    options = parser.parse_args()
    steps = options.ops // 3
    ops = 3 * steps
    print(f"us per operation, chain of {ops} operations, best of {options.repeat}")
    print(f"{'':20}{'0-d float64':>14}{'3-element':>14}")
    inputs = (np.float64(0.5), np.array([0.5, -0.3, 0.8]))
    floor = None
    for name, run in [("numpy", numpy_only), ("tensors, no tape", tensors_no_tape),
                      ("record", record), ("record + gradient", record_and_gradient)]:
        micros = [1e6 * best_seconds(run, x, steps, options.repeat) / ops for x in inputs]
        floor = floor or micros
        cells = "".join(f"{m:7.2f} ({m / f:4.1f}x)" for m, f in zip(micros, floor))
        print(f"{name:20}{cells}")
    recorded, peak, after = memory()
    print(f"non-persistent tape, {3 * MEMORY_STEPS} operations on ({MEMORY_SIZE},) float64: "
          f"{recorded:.1f} MB after recording, {peak:.1f} MB peak in gradient, "
          f"{after:.2f} MB after it")


if __name__ == "__main__":
    main()
