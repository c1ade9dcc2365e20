"""memory_sweep: what a long notebook or a hyperparameter sweep costs srcad, measured.

Differentiates N partials `partial(loss, data=d)`, N closures over `d` and N // 10 Hessians
of closures, each with its own array `d`, and prints for each kind the time per derivative
(made and called once), how many of the arrays are still alive afterwards, and the memory
traced (tracemalloc) after the sweep and after `srcad.clear_cache()`:

    python -m tests.memory_sweep 5000

tests/runtime/test_threads_and_memory.py asserts the bounds on a smaller sweep.
"""
from __future__ import annotations

import functools
import gc
import sys
import time
import tracemalloc
import weakref

import numpy as np

import srcad


def loss(x, data):
    return np.sum((x * data) ** 2)


def closure_over(data):
    def inner(x):
        return np.sum(np.sin(x * data))
    return inner


def sweep(count: int, kind: str) -> int:
    """Make and call `count` derivatives of `kind`; the number of data arrays still alive."""
    x, alive = np.ones(3), []
    for i in range(count):
        data = np.full(3, float(i))
        fn = functools.partial(loss, data=data) if kind == "partial" else closure_over(data)
        (srcad.hessian(fn) if kind == "hessian" else srcad.grad(fn))(x)
        alive.append(weakref.ref(data))
    del data, fn
    gc.collect()
    return sum(ref() is not None for ref in alive)


def main(argv=None) -> int:
    count = int((argv or sys.argv[1:] or ["5000"])[0])
    tracemalloc.start()
    for kind, n in (("partial", count), ("closure", count), ("hessian", count // 10)):
        srcad.clear_cache()
        gc.collect()
        base = tracemalloc.get_traced_memory()[0]
        start = time.perf_counter()
        alive = sweep(n, kind)
        seconds = (time.perf_counter() - start) / n
        grown = tracemalloc.get_traced_memory()[0] - base
        entries = srcad.cache_info().entries
        srcad.clear_cache()
        gc.collect()
        after = tracemalloc.get_traced_memory()[0] - base
        print(f"{n} {kind}s: {seconds * 1e3:.2f} ms each, {alive} data arrays alive, "
              f"{entries} cache entries, +{grown / 1e6:.1f} MB, "
              f"+{after / 1e6:.1f} MB after clear_cache()")
    return 0


if __name__ == "__main__":
    sys.exit(main())
