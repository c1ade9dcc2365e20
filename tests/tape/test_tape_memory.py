"""Tape mode at scale: long chains without recursion, memory released by the sweep."""
import gc
import sys
import tracemalloc
import weakref

import numpy as np

from srcad.tape import GradientTape, constant

SIZE = 20_000  # 160 kB per float64 array: large enough for tracemalloc to see clearly


def test_a_100000_operation_chain_differentiates_without_recursion():
    steps = 50_000  # a multiplication and an addition each: 100,000 recorded operations
    x = constant(np.array([0.1, 0.2, 0.3, 0.4]))
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(200)  # the sweep is a loop: the stack depth does not grow
    try:
        with GradientTape() as tape:
            tape.watch(x)
            h = x
            for _ in range(steps):
                h = h * 1.0001 + 0.1
        assert len(tape._nodes) == 2 * steps
        g = tape.gradient(h, x)
    finally:
        sys.setrecursionlimit(limit)
    np.testing.assert_allclose(np.asarray(g), np.full(4, 1.0001 ** steps), rtol=1e-9)
    assert tape._nodes == []


def _record_chain(tape, x, steps=40):
    """`steps` steps, each saving a few arrays of SIZE floats; weak references to them."""
    refs = []
    h = x
    for _ in range(steps):
        h = np.sin(h) * 0.5 + h
        refs.append(weakref.ref(h._value))
    return np.sum(h * h), refs


def test_a_non_persistent_tape_frees_what_it_recorded():
    x = constant(np.linspace(0.0, 1.0, SIZE))
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        with GradientTape() as tape:
            tape.watch(x)
            loss, refs = _record_chain(tape, x)
        held = tracemalloc.get_traced_memory()[0] - base
        tracemalloc.reset_peak()
        g = tape.gradient(loss, x)
        current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    array = SIZE * 8
    assert held > 80 * array  # the forward pass saved its intermediates ...
    assert current - base < 4 * array  # ... and after the gradient only g (and loss) remain
    # freed during the sweep, not after it: the peak stays near what the forward pass held
    assert peak - base < held + 6 * array
    assert sum(ref() is not None for ref in refs) <= 1
    assert np.asarray(g).shape == (SIZE,)


def test_a_persistent_tape_keeps_its_recording_until_deleted():
    x = constant(np.linspace(0.0, 1.0, SIZE))
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        loss, refs = _record_chain(tape, x)
    first = np.asarray(tape.gradient(loss, x))
    assert sum(ref() is not None for ref in refs) == len(refs)
    np.testing.assert_array_equal(np.asarray(tape.gradient(loss, x)), first)
    del tape, loss
    gc.collect()
    assert sum(ref() is not None for ref in refs) == 0
