"""executors: Jacobians, Hessians and batch Jacobians computed in blocks on other processes.

`srcad.jacobian(f, executor=ex, block_size=k)` → a callable that cuts the work the local
call would do into blocks of `k` rows or columns and runs each block as one task on `ex`: a
`concurrent.futures.Executor` (a process or thread pool) or a `dask.distributed.Client`
(recognised by its type, so Dask is imported only when the object is one of its own).

- Which way, as the local call chooses (jacobians._Jacobian.__call__): reverse-mode rows,
  forward-mode columns by the batched tangent program (each block seeds it with its own
  unit directions), or columns one tangent run each. `batch_jacobian` cuts the unit
  directions of an example, which every argument's shape allows, not the examples (an
  argument other than `wrt` may be batched too). The client decides with a run of one
  column, and concatenates what the blocks return.
- Bit-identical to the local call: each row or column is computed by the same program from
  the same numbers; blocks are only concatenated, never summed.
- What a task carries: the function as a `shipping.Parcel` (its source, globals, closure
  and the user's rules), pickled once per call, with a digest; what to make of it (the
  kind, `wrt`, `mode`); the arguments; its block. A worker rebuilds a parcel once
  (`_REBUILT`, by digest) and srcad's cache keeps the programs it generates from it, so
  later blocks and later calls of an unchanged function reuse them.
- Failures: every block is awaited and the first error raised (the others cancelled), so a
  result is complete or there is none. Dask reruns a task whose worker died
  (`distributed.scheduler.allowed-failures`); a process pool reports its broken pool.

`run_block` is what a worker calls. It is of this layer, not a lower one: a block is the
Jacobian's own code (`jacobians._rows`, `_Columns`, the batched program), which is api's.
"""
from __future__ import annotations

import concurrent.futures
import hashlib
import math
import os
import pickle
import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from srcad.api import jacobians, shipping
from srcad.api.adapters import per_call
from srcad.api.jacobian_batches import seed_of
from srcad.compiler.passes import enabled
from srcad.runtime.arguments import copied
from srcad.errors import MissingJVPRuleError, UsageError
from srcad.tracebacks import api_boundary

_INSTALL = "pip install 'srcad[dask]'"
_BLOCKS_PER_WORKER = 4  # default blocks: a few per worker, so a slow worker holds up little


@dataclass(frozen=True)
class _Task:
    digest: str
    parcel: bytes
    made: tuple   # (kind, wrt, mode)
    args: tuple
    kwargs: dict
    way: str      # "rows", "columns", "batched" (jacobian) or "directions" (batch_jacobian)
    which: int    # the `wrt` argument a batched block seeds
    chosen: range


def on_executor(fn, made: tuple, executor, block_size):
    """`made` = (kind, wrt, mode): the derivative `jacobians` makes of `fn` with this kind,
    whose blocks run on `executor`."""
    kind, wrt, _ = made
    shipping.packed(fn)  # (refuses what cannot ship now, not at the first call)
    if per_call(fn, wrt):
        raise UsageError(f"an executor runs {kind} of a Python function with named "
                         "parameters and no derivative rules of its own.",
                         fix="wrap the callable in a function defined in your script.")
    return _OnExecutor(fn, made, _checked_executor(executor), _checked_block_size(block_size))


def _made(fn, made: tuple):
    kind, wrt, mode = made
    if kind == "hessian":
        return jacobians._Hessian(fn, wrt)
    if kind == "batch_jacobian":
        return jacobians._BatchJacobian(fn, wrt)
    return jacobians._Jacobian(fn, wrt, mode)


class _OnExecutor:
    """A Jacobian, Hessian or batch Jacobian whose blocks run on an executor; `.source` is
    the local one's."""

    def __init__(self, fn, made, executor, block_size):
        self.fn, self.made, self.executor, self.block_size = fn, made, executor, block_size
        self.local = _made(fn, made)

    @property
    def source(self) -> str:
        return self.local.source

    @api_boundary
    def __call__(self, *args, **kwargs):
        if self.made[0] == "batch_jacobian":
            return self._batch_jacobian(args)
        local = self.local
        inputs = [args[p] for p in local.positions]
        jacobians._refuse_complex(inputs, "argument")
        way = _way(local, args, kwargs, inputs)
        if way == "batched":
            blocks = [(which, chosen) for which, p in enumerate(local.positions)
                      for chosen in self._ranges(jacobians._size(args[p]))]
        else:
            count = jacobians._size(inputs) if way == "columns" else jacobians._size(
                local.fn(*copied(args), **copied(kwargs)))
            blocks = [(0, chosen) for chosen in self._ranges(count)]
        results = self._results(args, kwargs, way, blocks)
        output = results[0][0]
        jacobians._refuse_complex([output], "output")
        matrix = np.concatenate([m for _, m in results], axis=0 if way == "rows" else 1)
        return local.assembled(output, jacobians._row_blocks(matrix, output, inputs), inputs)

    def _batch_jacobian(self, args):
        x = self.local.batch_of(args)
        count = int(np.prod(x.shape[1:], dtype=int))
        results = self._results(args, {}, "directions",
                                [(0, chosen) for chosen in self._ranges(count)])
        columns = np.concatenate([c for _, c in results], axis=-1)
        return self.local.finished(args, results[0][0], columns)

    def _ranges(self, count: int) -> list:
        size = self.block_size or max(1, math.ceil(count / (
            _BLOCKS_PER_WORKER * _workers(self.executor))))
        return [range(start, min(start + size, count)) for start in range(0, count, size)]

    def _results(self, args, kwargs, way, blocks) -> list:
        parcel = shipping.dumped(shipping.packed(self.fn))  # (globals as they are now)
        digest = hashlib.sha256(parcel).hexdigest()
        tasks = [_Task(digest, parcel, self.made, args, kwargs, way, which, chosen)
                 for which, chosen in blocks]
        if not tasks:  # (no rows or columns: nothing to send)
            return [run_block(_Task(digest, parcel, self.made, args, kwargs, way, 0, range(0)))]
        return _gathered(self.executor, tasks)


def _way(local, args, kwargs, inputs) -> str:
    """How the local call computes this Jacobian: "batched", "columns" or "rows"."""
    positions = local.positions
    if local.mode != "rev" and enabled("batch") and all(
            seed_of(args[p]) is not None for p in positions):
        ran = local.batched.run(0, seed_of(args[positions[0]])[:1], args, kwargs)
        if ran is not None and (local.mode == "fwd" or
                                jacobians._size(ran[0]) >= jacobians._size(inputs)):
            return "batched"
    if local.mode == "rev":
        return "rows"
    try:
        output = jacobians._Columns(local.fn, args, kwargs, positions, range(1)).output
    except MissingJVPRuleError:
        if local.mode != "auto":
            raise
        return "rows"
    jacobians._refuse_complex([output], "output")
    return "rows" if local.mode == "auto" and jacobians._size(output) < jacobians._size(
        inputs) else "columns"


# ---- on a worker ------------------------------------------------------------------------------
_REBUILT: OrderedDict = OrderedDict()  # (digest, made) → the derivative made of the parcel
_REBUILT_KEPT = 16
_lock = threading.Lock()


def run_block(task: _Task):
    """`(output, block)`: the rows `(rows, inputs)` or columns `(outputs, columns)` of a
    Jacobian, or a batch Jacobian's `(output, columns stacked on a last axis)`."""
    key = (task.digest, task.made)
    with _lock:
        local = _REBUILT.get(key)
        if local is None:
            local = _REBUILT[key] = _made(shipping.unpacked(pickle.loads(task.parcel)),
                                          task.made)
            while len(_REBUILT) > _REBUILT_KEPT:
                _REBUILT.popitem(last=False)
        _REBUILT.move_to_end(key)
    args, kwargs, chosen = task.args, task.kwargs, task.chosen
    if task.way == "directions":
        return local.directions(args, local.batch_of(args), chosen)
    if task.way == "rows":
        return jacobians._rows(local.fn, args, kwargs, local.wrt, chosen)
    if task.way == "batched":
        x = args[local.positions[task.which]]
        ran = local.batched.run(task.which, seed_of(x)[chosen.start:chosen.stop], args, kwargs)
        if ran is not None:
            output, tangent = ran
            return output, np.zeros((jacobians._size(output), len(chosen))) if tangent is None \
                else np.reshape(tangent, (len(chosen), -1)).T
        # a form without a batched rule met on this run: the local call's columns instead
        offset = sum(jacobians._size(args[p]) for p in local.positions[:task.which])
        chosen = range(offset + chosen.start, offset + chosen.stop)
    columns = jacobians._Columns(local.fn, args, kwargs, local.positions, chosen)
    return columns.output, np.concatenate(columns.matrices(), axis=0)


# ---- executors --------------------------------------------------------------------------------
def _is_dask_client(executor) -> bool:
    return type(executor).__module__.split(".")[0] == "distributed" and hasattr(
        executor, "submit") and hasattr(executor, "gather")


def _checked_executor(executor):
    """A `concurrent.futures.Executor`, a `dask.distributed.Client`, or "dask" (the client
    `distributed.get_client()` finds)."""
    if isinstance(executor, concurrent.futures.Executor) or _is_dask_client(executor):
        return executor
    if isinstance(executor, str) and executor == "dask":
        try:
            from distributed import get_client
        except ImportError:
            raise UsageError("executor=\"dask\" needs Dask's distributed scheduler, which "
                             "is not installed.", fix=_INSTALL) from None
        try:
            return get_client()
        except ValueError:
            raise UsageError("executor=\"dask\" found no Dask client.",
                             fix="start one first: `from distributed import Client; "
                             "client = Client()`, or pass the client itself.") from None
    raise UsageError(f"executor= takes a concurrent.futures.Executor (a process or thread "
                     f"pool) or a dask.distributed.Client; got {executor!r}.",
                     fix=f"pass `concurrent.futures.ProcessPoolExecutor()`, or for Dask "
                     f"({_INSTALL}) a `distributed.Client`.")


def _checked_block_size(block_size):
    if block_size is None or (type(block_size) is int and block_size >= 1):
        return block_size
    raise UsageError(f"block_size= is the number of rows or columns per task, a positive "
                     f"int; got {block_size!r}.",
                     fix="leave it out for about four tasks per worker.")


def _workers(executor) -> int:
    if _is_dask_client(executor):
        return max(1, sum(executor.nthreads().values()))
    return getattr(executor, "_max_workers", None) or os.cpu_count() or 1


def _gathered(executor, tasks: list) -> list:
    """Each task's result, in order; the first failure is raised and the rest cancelled."""
    if _is_dask_client(executor):
        futures = [executor.submit(run_block, task, pure=False) for task in tasks]
        try:
            return executor.gather(futures)
        except BaseException:
            executor.cancel(futures)
            raise
    futures = [executor.submit(run_block, task) for task in tasks]
    try:
        return [future.result() for future in futures]
    except BaseException:
        for future in futures:
            future.cancel()
        raise
