"""executors: what computing derivatives on worker processes gains and costs on this machine.

Two tables. Wall time of a large Jacobian (a reaction-advection simulator of n cells, its
n x n Jacobian in forward-mode column blocks) and of a data-parallel gradient (the
benchmark's two-layer network, `workloads.mlp_loss`, its mean squared error over many
rows, `chunks_of=("X", "Y"), reduction="mean"`, in 8 chunks), in this process without an
executor and on 1 and 2 worker processes of a Dask LocalCluster and of a spawned
`ProcessPoolExecutor`. Every setup is up at once and the calls are interleaved, round by
round, the best of the rounds kept (other work on the machine slows a round, not a
setup); every result is checked bit for bit against the local one (Dask's workers run
BLAS on one thread: run the table with OMP_NUM_THREADS=1 for every process to round
alike). Dask keeps the data on its workers (scattered there before timing); a process
pool gets its chunk of the NumPy data with each task, at each call.

And the cost of one task: the extra time of 128 tasks over 1 for the same work (a
128-row Jacobian of a small function, block_size=1 against 128; a gradient over 128 rows,
chunks of 1 row against one chunk), divided by 127, on a Dask LocalCluster of 2
processes, a process pool of 2 and a thread pool of 2. docs/distributed.md turns these
figures into a model of the speed-up on N machines.

The functions are defined from source text (`first_call.define`), as a user's script is
to srcad: executors ship only functions defined outside the installed packages.

`python -m srcad.bench --scaling` prints the tables; `speedups` returns them.
"""
from __future__ import annotations

import concurrent.futures
import contextlib
import inspect
import logging
import multiprocessing
import time

import numpy as np

import srcad
from srcad.bench.first_call import define
from srcad.bench.workloads import mlp_loss

SIMULATOR = '''
def advection(u):
    """40 upwind steps of u' = -0.5 u_x + 0.1 u_xx + u (1 - u) (u - 0.3), periodic."""
    for _ in range(40):
        left, right = np.roll(u, 1), np.roll(u, -1)
        u = u + 0.05 * (0.5 * (left - u) + 0.1 * (left - 2.0 * u + right)
                        + u * (1.0 - u) * (u - 0.3))
    return u
'''

SMALL = '''
def small(x):
    return np.sin(x) * x[::-1]


def small_loss(w, X):
    return np.mean(np.sin(X @ w))
'''
CHUNKS = 8          # of the data-parallel gradient
TASKS = 128         # of the per-task cost
HIDDEN, OUTPUTS = 64, 10


def speedups(cells: int = 1000, rows: int = 100_000, features: int = 64, repeat: int = 3,
             out=print) -> dict:
    """`{"wall": rows of the first table, "per_task": rows of the second}`, printed."""
    advection, small = define(SIMULATOR, "advection"), define(SMALL, "small")
    small_loss = define(SMALL, "small_loss")
    network = define(inspect.getsource(mlp_loss), "mlp_loss")
    rng = np.random.default_rng(0)
    u0 = 0.5 + 0.4 * np.sin(np.linspace(0.0, 6.0, cells))
    params = (rng.standard_normal((features, HIDDEN)) / 8,
              rng.standard_normal((HIDDEN, OUTPUTS)) / 8)
    X, Y = rng.standard_normal((rows, features)), rng.standard_normal((rows, OUTPUTS))
    with contextlib.ExitStack() as stack:
        setups = _setups(stack)
        jacobian_calls, gradient_calls = {}, {}
        for name, executor in setups.items():
            if name == "threads 2":
                continue
            jacobian_calls[name] = (srcad.jacobian(advection, executor=executor), (u0,))
            gradient_calls[name] = (srcad.grad(
                network, wrt=(0, 1), chunks_of=("X", "Y"), reduction="mean",
                executor=executor, block_size=None if name.startswith("dask") else -(
                    -rows // CHUNKS)), (*params, *_data(executor, X, Y, -(-rows // CHUNKS))))
        wall = [_wall(f"Jacobian {cells} x {cells}", jacobian_calls, repeat),
                _wall(f"gradient, {rows:,} rows", gradient_calls, repeat)]
        x, small_X = np.linspace(0.1, 1.3, TASKS), rng.standard_normal((TASKS, 4))
        per_task = []
        for name in ("dask 2", "pool 2", "threads 2"):
            if name not in setups:
                continue
            executor = setups[name]
            many = {"jacobian": (srcad.jacobian(small, mode="rev", executor=executor,
                                                block_size=1), (x,)),
                    "chunks": _small_gradient(small_loss, executor, small_X, 1)}
            one = {"jacobian": (srcad.jacobian(small, mode="rev", executor=executor,
                                               block_size=TASKS), (x,)),
                   "chunks": _small_gradient(small_loss, executor, small_X, TASKS)}
            per_task.append({"executor": name} | {
                kind: (_best(*many[kind], repeat) - _best(*one[kind], repeat)) / (TASKS - 1)
                for kind in many})
    result = {"wall": wall, "per_task": per_task}
    out(table(result))
    return result


def _setups(stack: contextlib.ExitStack) -> dict:
    """name → executor (None: in this process), every one started before any is timed."""
    setups = {"local": None}
    try:
        import distributed
    except ImportError:
        distributed = None
    for workers in (1, 2) if distributed is not None else ():
        cluster = stack.enter_context(distributed.LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0",
            silence_logs=logging.ERROR))
        setups[f"dask {workers}"] = stack.enter_context(distributed.Client(
            cluster, set_as_default=False))
    for workers in (1, 2):
        setups[f"pool {workers}"] = stack.enter_context(concurrent.futures.ProcessPoolExecutor(
            workers, mp_context=multiprocessing.get_context("spawn")))
    setups["threads 2"] = stack.enter_context(concurrent.futures.ThreadPoolExecutor(2))
    return setups


def _data(executor, X, Y, chunk_rows: int) -> tuple:
    """The data as the executor keeps it: Dask arrays whose chunks are on a cluster's
    workers (scattered there, as data loaded by the workers would be), else NumPy."""
    if executor is None or not hasattr(executor, "scatter"):
        return X, Y
    import dask
    import dask.array
    arrays = []
    for d in (X, Y):
        pieces = [d[start:start + chunk_rows] for start in range(0, len(d), chunk_rows)]
        arrays.append(dask.array.concatenate([
            dask.array.from_delayed(dask.delayed(future), piece.shape, piece.dtype)
            for future, piece in zip(executor.scatter(pieces), pieces)]))
    return tuple(arrays)


def _small_gradient(small_loss, executor, X, chunk_rows: int):
    on_dask = hasattr(executor, "scatter")
    return (srcad.grad(small_loss, chunks_of="X", reduction="mean", executor=executor,
                       block_size=None if on_dask else chunk_rows),
            (np.ones(X.shape[1]), *_data(executor, X, X, chunk_rows)[:1]))


def _wall(label: str, calls: dict, repeat: int) -> dict:
    """Seconds of each setup's call, interleaved by rounds, the best kept; and whether
    every result equals the local one bit for bit. A first call (compiling, here and on
    the workers) is not timed."""
    results = {name: call(*args) for name, (call, args) in calls.items()}
    local = _arrays(results["local"])
    differ = [name for name, r in results.items()
              if not all(np.array_equal(a, b) for a, b in zip(_arrays(r), local))]
    best = dict.fromkeys(calls, float("inf"))
    for _ in range(repeat):
        for name, (call, args) in calls.items():
            start = time.perf_counter()
            call(*args)
            best[name] = min(best[name], time.perf_counter() - start)
    return {"what": label, "differ": differ} | best


def _arrays(result) -> tuple:
    return result if isinstance(result, tuple) else (result,)


def _best(call, args, repeat: int) -> float:
    call(*args)  # (compiles, here and on the workers)
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        call(*args)
        best = min(best, time.perf_counter() - start)
    return best


def table(result: dict) -> str:
    names = [n for n in result["wall"][0] if n not in ("what", "differ")]
    lines = ["Wall time in this process (local) and on 1 and 2 worker processes (best of "
             "interleaved rounds, seconds; speed-up of 2 workers over 1)",
             f"{'':<26}" + "".join(f"{n:>9}" for n in names) + "  2 over 1  bit for bit"]
    for row in result["wall"]:
        gains = [f"{row[f'{kind} 1'] / row[f'{kind} 2']:.2f}x ({kind})"
                 for kind in ("dask", "pool") if f"{kind} 2" in row]
        lines.append(f"{row['what']:<26}" + "".join(f"{row[n]:>9.3f}" for n in names)
                     + f"  {', '.join(gains)}  "
                     + (f"not on {', '.join(row['differ'])}" if row["differ"] else "all"))
    if any(row["differ"] for row in result["wall"]):
        lines.append("(BLAS rounds otherwise on another number of threads, and Dask's "
                     "workers run it on one: run with OMP_NUM_THREADS=1 to compare alike)")
    lines += ["", f"Per task: the extra time of {TASKS} tasks over 1 for the same work, "
              f"/ {TASKS - 1}", f"{'executor':<12} {'Jacobian block':>15} {'gradient chunk':>15}"]
    for row in result["per_task"]:
        lines.append(f"{row['executor']:<12} {row['jacobian'] * 1e3:>12.2f} ms "
                     f"{row['chunks'] * 1e3:>12.2f} ms")
    return "\n".join(lines)
