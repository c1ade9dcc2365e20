"""executors: a Jacobian, Hessian or batch Jacobian computed in blocks on other processes.

`srcad.jacobian(f, executor=ex, block_size=k)` → an `OnExecutor`: a callable that cuts the
work the local call would do into blocks of `k` rows or columns and runs each block as one
task on `ex`, a `concurrent.futures.Executor` (a process or thread pool) or a
`dask.distributed.Client` (recognised by its type: Dask is imported only when the object is
one of its own).

- What a block is, the derivative object says (jacobians.py: `parts`, `part`,
  `from_parts`): the rows, columns or directions its local call computes, decided as that
  call decides; this module only cuts, ships and gathers.
- Bit-identical to the local call: each row or column is computed by the same program from
  the same numbers; blocks are only concatenated, never summed.
- What a task carries: its block, and a `Job` shared by the blocks of a call: the
  function as a `shipping.Parcel` (its source, globals, closure and the user's rules),
  pickled once per call, with its digest; the derivative's class (pickled by reference)
  and options; the generated source here (`.source`); the arguments. Dask gets the job
  once, as the result of a task the blocks depend on, and moves it to each worker once; a
  process pool pickles it with every task. A worker rebuilds a parcel once (`_REBUILT`,
  by digest) and srcad's cache keeps the programs it generates from it, so later blocks
  and later calls of an unchanged function reuse them.
- The generated source is sent as the contract, not as the code to run: a program binds
  objects (rules, helpers, the user's globals) as cells, which text cannot carry, so the
  worker generates its own from the function's source. srcad's names are deterministic, so
  the two are the same text, and the worker refuses to run a block if they are not (another
  srcad version there, a rule it lacks): bit-identical results rest on the same program.
- Failures: every block is awaited and the first error raised (the others cancelled), so a
  result is complete or there is none. Dask reruns a task whose worker died
  (`distributed.scheduler.allowed-failures`); a process pool reports its broken pool.
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

from srcad.api import shipping
from srcad.errors import SrcadError, UsageError
from srcad.runtime.arguments import leaves, rebuilt
from srcad.tracebacks import api_boundary
from srcad.version import __version__

_INSTALL = "pip install 'srcad[dask]'"
_REOPEN = ("pass an executor that is open: make the derivative inside the `with` block of "
           "the pool or client, or make it again with a new one.")
_BLOCKS_PER_WORKER = 4  # default blocks: a few per worker, so a slow worker holds up little


@dataclass(frozen=True)
class Job:
    """What every block of one call needs."""

    digest: str
    parcel: bytes
    kind: type       # jacobians._Jacobian, _Hessian, _BatchJacobian, _FixedArity, or
    #                  data_parallel.PerChunk (the gradient a chunk of rows runs)
    options: tuple   # kind(fn, *options)
    source: str | None  # kind(fn, *options).source here (None: it has none to show)
    args: tuple
    kwargs: dict
    way: object      # for a Jacobian's blocks, what `kind.parts` said; for chunks of rows,
    #                  the data's places in the arguments


class OnExecutor:
    """`kind(fn, *options)` whose blocks run on an executor; `.source` is the local one's."""

    def __init__(self, fn, kind: type, options: tuple, executor, block_size):
        self.fn, self.kind, self.options = fn, kind, options
        self.executor, self.block_size = checked(fn, executor, block_size)
        self.local = kind(fn, *options)

    @property
    def source(self) -> str:
        return self.local.source

    @api_boundary
    def __call__(self, *args, **kwargs):
        open_executor(self.executor)
        way, counts = self.local.parts(args, kwargs)
        blocks = [(which, chosen) for which, count in counts for chosen in self._ranges(count)]
        if not blocks:  # (no rows or columns: nothing to send)
            return self.local(*args, **kwargs)
        job = shipped(self.fn, self.kind, self.options, self.local, args, kwargs, way)
        return self.local.from_parts(args, way, gathered(self.executor, job, run_block,
                                                         blocks))

    def _ranges(self, count: int) -> list:
        return ranges(count, self.block_size, self.executor)


def shipped(fn, kind: type, options: tuple, local, args: tuple, kwargs: dict, way) -> Job:
    """The job of one call: `fn` packed with its globals as they are now."""
    parcel = shipping.dumped(shipping.packed(fn))
    return Job(hashlib.sha256(parcel).hexdigest(), parcel, kind, options, _source(local), args,
               kwargs, way)


def ranges(count: int, block_size: int | None, executor) -> list:
    """`range(count)` cut into blocks of `block_size`, or into about four per worker."""
    size = block_size or max(1, math.ceil(count / (_BLOCKS_PER_WORKER * workers(executor))))
    return [range(start, min(start + size, count)) for start in range(0, count, size)]


def _source(derivative) -> str | None:
    try:
        return derivative.source
    except SrcadError:  # (a program that exists only for some arguments, or none at all)
        return None


# ---- on a worker ------------------------------------------------------------------------------
_REBUILT: OrderedDict = OrderedDict()  # (digest, kind, options) → the derivative made there
_REBUILT_KEPT = 16
_lock = threading.Lock()


def derivative_here(job: Job):
    """`job.kind(fn, *job.options)` for the function the job ships, made once per worker (by
    digest) and checked to generate the program the sender's does."""
    key = (job.digest, job.kind, job.options)
    with _lock:
        local = _REBUILT.get(key)
        if local is None:
            local = job.kind(shipping.unpacked(pickle.loads(job.parcel)), *job.options)
            if _source(local) != job.source:
                raise UsageError(
                    f"this worker generates another derivative program than the process "
                    f"that sent it (srcad {__version__} here), and would compute other "
                    "numbers.",
                    fix="install the same srcad version on the workers as on the client "
                    "(and the same versions of the packages the function calls).")
            _REBUILT[key] = local
            while len(_REBUILT) > _REBUILT_KEPT:
                _REBUILT.popitem(last=False)
        _REBUILT.move_to_end(key)
    return local


def run_block(job: Job, which: int, chosen: range):
    """What a worker runs: the derivative's `part` for one block."""
    return derivative_here(job).part(aligned(job.args), aligned(job.kwargs), job.way, which, chosen)


def aligned(value):
    """`value` with each NumPy array not aligned for its dtype copied into one that is.
    Dask hands a worker arrays unpickled at any byte offset, and NumPy computes on those
    with its own loops instead of BLAS, which round otherwise: the numbers would differ."""
    found = leaves(value)
    if all(type(leaf) is not np.ndarray or leaf.flags.aligned for leaf in found):
        return value
    return rebuilt(value, iter([np.require(leaf, requirements="A") if type(
        leaf) is np.ndarray else leaf for leaf in found]))


# ---- executors --------------------------------------------------------------------------------
def of_dask(value, package: str, *attributes: str) -> bool:
    """Whether `value` is an object of Dask's `package` ("dask", "distributed") with
    `attributes`: recognised by its type's module, so Dask is imported only for its own."""
    return type(value).__module__.split(".")[0] == package and all(
        hasattr(value, attribute) for attribute in attributes)


def is_dask_client(executor) -> bool:
    return of_dask(executor, "distributed", "submit", "gather")


def checked(fn, executor, block_size) -> tuple:
    """`executor` and `block_size`, checked; with an executor, `fn` is packed once to refuse
    what cannot ship now rather than at the first call."""
    if executor is not None:
        shipping.packed(fn)
        executor = checked_executor(executor)
    return executor, checked_block_size(block_size)


def checked_executor(executor):
    """A `concurrent.futures.Executor`, a `dask.distributed.Client`, or "dask" (the client
    `distributed.get_client()` finds)."""
    if isinstance(executor, concurrent.futures.Executor) or is_dask_client(executor):
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


def open_executor(executor) -> None:
    """Refuses a Dask client that is closed (before Dask's own error, which names none of
    srcad's options)."""
    if is_dask_client(executor) and executor.status in ("closing", "closed"):
        raise UsageError("the Dask client passed as executor= is closed.", fix=_REOPEN)


def checked_block_size(block_size):
    if block_size is None or (type(block_size) is int and block_size >= 1):
        return block_size
    raise UsageError(f"block_size= is the number of rows or columns per task, a positive "
                     f"int; got {block_size!r}.",
                     fix="leave it out for about four tasks per worker.")


def workers(executor) -> int:
    if is_dask_client(executor):
        return max(1, sum(executor.nthreads().values()))
    return getattr(executor, "_max_workers", None) or os.cpu_count() or 1


def _returned(job: Job) -> Job:
    return job


def gathered(executor, job: Job, task, blocks: list) -> list:
    """`task(job, *block)` for each block, run on `executor`: the results in order; the first
    failure is raised and the rest cancelled."""
    if is_dask_client(executor):
        # the job as a task's result, not scattered data: a worker that dies with it loses
        # nothing the scheduler cannot compute again
        shared = executor.submit(_returned, job, pure=False)
        futures = [executor.submit(task, shared, *block, pure=False) for block in blocks]
        try:
            return executor.gather(futures)
        except BaseException:
            executor.cancel(futures)
            raise
    futures = []
    try:
        for block in blocks:
            futures.append(executor.submit(task, job, *block))
    except RuntimeError as error:  # (submit's only one: shut down)
        for future in futures:
            future.cancel()
        raise UsageError(f"the executor takes no more tasks: {error}.", fix=_REOPEN) from None
    try:
        return [future.result() for future in futures]
    except BaseException:
        for future in futures:
            future.cancel()
        raise
