"""Many threads on one derivative object, and long sweeps over partials and closures
(issue 29, cases 7 and 8): no error under 8 threads, memory bounded by the cache's limit,
and `clear_cache` frees what srcad holds."""
import functools
import gc
import linecache
import sys
import threading
import weakref

import numpy as np
import pytest

import srcad
from tests.memory_sweep import closure_over, loss


def mixed(x, c):
    return np.sum(np.sin(x) * np.cos(c) + x * c)


def mixed_gradient(x, c):
    return np.sum(np.cos(x) * np.cos(c) + c) if np.ndim(x) == 0 \
        else np.cos(x) * np.cos(c) + c


@pytest.fixture
def fast_switching():
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(interval)


def test_one_derivative_object_called_from_eight_threads(fast_switching):
    """Python floats and arrays in turn, for the differentiated argument and the other
    one: a float program specialised on `c` ran on an array `c` (TypeError) when one
    thread replaced the program while another read it."""
    hvp = srcad.hvp(mixed)
    derivatives = {"grad": srcad.grad(mixed), "value_and_grad": srcad.value_and_grad(mixed),
                   "jacobian": srcad.jacobian(mixed),
                   "vjp": lambda x, c: srcad.vjp(mixed, x, c)[1](1.0),
                   "jvp": lambda x, c: srcad.jvp(mixed, (x, c), (np.ones_like(x), 0.0 * c))[1],
                   "hvp": lambda x, c: hvp(x, c, np.ones_like(x)),
                   "tape": srcad.tape.grad(mixed)}
    expected = {"jvp": lambda x, c: np.sum(mixed_gradient(x, c)),
                "hvp": lambda x, c: np.sum(-np.sin(x) * np.cos(c)) if np.ndim(x) == 0
                else -np.sin(x) * np.cos(c)}
    failures = []

    def work(seed):
        rng = np.random.default_rng(seed)
        for step in range(60):
            x = float(rng.normal()) if step % 2 else rng.normal(size=3)
            c = float(rng.normal()) if step % 3 else rng.normal(size=3)
            for name, derivative in derivatives.items():
                try:
                    got = derivative(x, c)
                    got = got[1] if name == "value_and_grad" else got
                    if not np.allclose(got, expected.get(name, mixed_gradient)(x, c)):
                        failures.append((name, "wrong", x, c))
                except Exception as error:  # noqa: BLE001 (every failure counts)
                    failures.append((name, repr(error)))

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


def _srcad_sources():
    return sum(1 for name in linecache.cache if name.startswith("<srcad"))


@pytest.mark.parametrize("kind", ["partial", "closure", "hessian of a closure"])
def test_a_sweep_over_many_functions_stays_bounded(kind):
    """A partial or closure per data array: the data left memory only when the process
    did (a table of adapters referenced its keys), and the cache grew by an entry each."""
    srcad.clear_cache()
    previous = srcad.set_cache_size(8)
    sources = _srcad_sources()
    try:
        x, alive = np.ones(3), []
        for i in range(40 if kind.startswith("hessian") else 2000):
            data = np.full(3, float(i))
            fn = functools.partial(loss, data=data) if kind == "partial" \
                else closure_over(data)
            derivative = srcad.hessian(fn) if kind.startswith("hessian") else srcad.grad(fn)
            expected = (2 * data ** 2 * x) if kind == "partial" else None
            got = derivative(x)
            if expected is not None:
                np.testing.assert_allclose(got, expected)
            alive.append(weakref.ref(data))
            assert srcad.cache_info().entries <= 8
        del fn, derivative, data
        gc.collect()
        assert sum(ref() is not None for ref in alive) <= 16
        assert _srcad_sources() <= sources + 16
        srcad.clear_cache()
        gc.collect()
        assert sum(ref() is not None for ref in alive) == 0
        assert _srcad_sources() <= sources + 2
    finally:
        srcad.set_cache_size(previous)


def test_partials_of_one_function_share_one_program():
    srcad.clear_cache()
    for scale in (1.0, 2.0, 3.0):
        gradient = srcad.grad(functools.partial(loss, data=np.full(2, scale)))
        np.testing.assert_allclose(gradient(np.ones(2)), 2 * scale ** 2 * np.ones(2))
    assert srcad.cache_info().misses <= 2  # (the adapter and `loss`, each once)


def test_set_cache_size_evicts_the_least_recently_used_and_refuses_nonsense():
    srcad.clear_cache()
    previous = srcad.set_cache_size(2)
    try:
        functions = [closure_over(1.0), lambda x: np.sum(x ** 3), lambda x: np.sum(x ** 4)]
        for fn in functions:
            srcad.grad(fn)(np.ones(2))
        assert srcad.cache_info().entries == 2
        with pytest.raises(srcad.errors.UsageError, match="positive"):
            srcad.set_cache_size(0)
    finally:
        assert srcad.set_cache_size(previous) == 2


def _deep(x, n):
    return x if n == 0 else _deep(x * 1.0001, n - 1)


def test_threads_nesting_deeply_put_the_recursion_limit_back():
    """The limit is the process's: a thread that finished first did not put it back, and
    the last one put back the limit the other had raised (review of issue 29); a thread
    that went deep on the limit another had raised counts among the raisers, or the
    other's leaving put the limit back under its frames (CI, py3.12)."""
    limit = sys.getrecursionlimit()
    for _ in range(5):
        barrier = threading.Barrier(2)
        results = {}

        def deep(levels):
            barrier.wait()
            results[levels] = srcad.grad(_deep)(1.0, levels)

        threads = [threading.Thread(target=deep, args=(limit - spare,)) for spare in (200, 500)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert results == {n: pytest.approx(1.0001 ** n) for n in (limit - 200, limit - 500)}
        assert sys.getrecursionlimit() == limit


def test_a_tape_keeps_a_copy_of_a_plain_memmap_it_reads():
    """Subclasses of ndarray are written in place too (np.memmap)."""
    import tempfile
    with tempfile.TemporaryDirectory() as directory:
        mapped = np.memmap(f"{directory}/data", dtype=float, mode="w+", shape=(3,))
        mapped[:] = [1.0, 2.0, 3.0]
        x = srcad.constant(np.ones(3))
        with srcad.GradientTape() as tape:
            tape.watch(x)
            y = np.sum(x * mapped)
            mapped += 10.0
        np.testing.assert_allclose(tape.gradient(y, x), [1.0, 2.0, 3.0])
        del mapped
