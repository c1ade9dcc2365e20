"""data_parallel: the gradient of a loss that adds up over the rows of its data, chunk by chunk.

`srcad.grad(loss, wrt, chunks_of=("X", "y"), reduction="mean")` (and `value_and_grad`) →
a `ChunkedGradient`: a callable that cuts the data arguments into chunks of rows, runs the
gradient program once per chunk, where the chunks are, and adds the results up.

- Additivity is declared, never assumed: `reduction="sum"` says loss(data) is the sum of
  loss(chunk) over the chunks, `"mean"` that it is the mean (each chunk's result weighted
  by its share of the rows, `rows / total`, a Python float). `chunks_of=` without
  `reduction=` is refused: srcad cannot see whether a loss adds up over rows, and summing
  one that does not would be silently wrong.
- Data arguments are NumPy arrays, cut into chunks of `block_size` rows (without it, one
  chunk in-process, about four per worker on an executor), or `dask.array` arrays, cut
  by their own row chunks (the same for every data argument; columns in one piece). A
  NumPy data argument beside a Dask one is cut as the Dask one is.
- Where a chunk's gradient runs: in this process without an executor; as a task of
  `executor` (a `concurrent.futures.Executor` or a `dask.distributed.Client`, shipping
  the function as `executors` does: `shipping.Parcel`, rebuilt once per worker); for Dask
  data, as a task of the array's graph, so the scheduler runs it where the chunk is
  (`executor`, or Dask's current scheduler).
- Deterministic: the chunks' results are added by a fixed-order pairwise tree (chunk 0 + 1,
  2 + 3, ..., then the sums pairwise), whichever process computes which chunk, so a call is
  bit-identical to the same call with the same chunks and no executor (the local
  reference) and to any other executor; it differs from the unchunked gradient only by
  rounding (the sums are grouped differently).
"""
from __future__ import annotations

import inspect
import types

import numpy as np

from srcad.api import executors
from srcad.api.adapters import adapter, by_position, per_call
from srcad.compiler.frontend.parse import code_of
from srcad.errors import UsageError, WrtError
from srcad.runtime.arguments import leaves, rebuilt, wrt_parameters
from srcad.runtime.calls import fixed_arity
from srcad.tracebacks import api_boundary

_REDUCTIONS = ("sum", "mean")


class PerChunk:
    """`make(fn, wrt, backend=backend)` (srcad's grad or value_and_grad), the derivative each
    chunk runs; `executors.derivative_here` makes it on a worker. With an `arity` (a count of
    positional arguments and the names of keyword ones), of `fixed_arity(fn, *arity)`, as
    grad differentiates a loss with rules of its own (derivative.ByArity): its program then
    exists before a first call, here and on a worker alike, so the two can be compared."""

    def __init__(self, fn, make, wrt, backend, arity=None):
        if arity is not None:
            fn, wrt = fixed_arity(fn, *arity), by_position(fn, wrt)
        self.derivative = make(fn, wrt, backend=backend)

    @property
    def source(self) -> str:
        return self.derivative.source

    def on_chunk(self, args: tuple, kwargs: dict, places: tuple, weight, chunk: tuple):
        """The derivative at the arguments with the chunk's rows in the data's places,
        weighted (a mean) or not (a sum: `weight` None)."""
        args, kwargs = list(args), dict(kwargs)
        for place, rows in zip(places, chunk):
            rows = np.require(rows, requirements="CA")  # (as a worker gets it: see aligned)
            if isinstance(place, int):
                args[place] = rows
            else:
                kwargs[place] = rows
        result = self.derivative(*args, **kwargs)
        return result if weight is None else rebuilt(
            result, iter([leaf * weight for leaf in leaves(result)]))


def run_chunk(job: executors.Job, weight, *chunk):
    """What a worker runs for one chunk."""
    return executors.derivative_here(job).on_chunk(executors.aligned(job.args),
                                                   executors.aligned(job.kwargs), job.way,
                                                   weight, chunk)


def added(first, second):
    """Two chunks' results added leaf by leaf, in this order."""
    return rebuilt(first, iter([a + b for a, b in zip(leaves(first), leaves(second))]))


def tree_sum(parts: list, add=added):
    """`parts` added pairwise, level by level, in a fixed order (`add` may build a task)."""
    while len(parts) > 1:
        parts = [add(parts[i], parts[i + 1]) if i + 1 < len(parts) else parts[i]
                 for i in range(0, len(parts), 2)]
    return parts[0]


class ChunkedGradient:
    """`make(fn, wrt)` of a loss additive over the rows of its data arguments, computed
    chunk by chunk; `.source` is the program each chunk runs."""

    def __init__(self, make, fn, wrt, *, chunks_of, reduction, executor, block_size,
                 has_aux, backend):
        what = make.__name__
        if chunks_of is None:
            raise UsageError(
                f"executor=, block_size= and reduction= on {what} compute the gradient of a "
                "loss over data cut into chunks of rows; no chunks_of= names the data.",
                fix=f"name the data arguments: `srcad.{what}(loss, chunks_of=(\"X\", "
                "\"y\"), reduction=\"mean\", executor=...)`.")
        if reduction not in _REDUCTIONS:
            raise UsageError(
                f"chunks_of= cuts the data into chunks and adds up the loss's gradient over "
                f"them, which is right only for a loss that adds up over the rows; "
                f"reduction={reduction!r} does not declare how it does.",
                fix="declare it: reduction=\"sum\" (the loss is a sum over rows) or "
                "reduction=\"mean\" (a mean over rows), or leave chunks_of= out.")
        if has_aux:
            raise UsageError("has_aux= is not taken with chunks_of=: an aux per chunk has "
                             "no sum.", fix="compute the aux by a call of the loss itself.")
        called = _as_called(fn)
        self.data = _data_parameters(called, chunks_of)
        differentiated, _ = wrt_parameters(code_of(called), wrt)
        both = sorted(set(self.data) & set(differentiated))
        if both:
            raise UsageError(
                f"wrt={wrt!r} selects {', '.join(both)}, a data argument chunks_of= cuts into "
                "rows (wrt= is the first argument when not given); the gradient in data "
                "split across chunks is not a sum.",
                fix="pass wrt= naming the parameters to differentiate, and name only the "
                "data in chunks_of=.")
        self.executor, self.block_size = executors.checked(fn, executor, block_size)
        self.fn, self.reduction = fn, reduction
        self.options = (make, wrt, backend)
        self.local = PerChunk(fn, *self.options)
        self.per_arity = per_call(fn, wrt)
        self._shipped_locals = {self.options: self.local}  # PerChunk options → made here
        self.signature = inspect.signature(called)

    @property
    def source(self) -> str:
        return self.local.source

    @api_boundary
    def __call__(self, *args, **kwargs):
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as error:
            raise UsageError(f"the arguments do not fit the loss's parameters "
                             f"{tuple(self.signature.parameters)}: {error}.",
                             fix="pass the loss's arguments as a call of it takes them.") \
                from None
        args, kwargs = list(bound.args), dict(bound.kwargs)
        places = tuple(self._place(name, args, kwargs) for name in self.data)
        data = [args[p] if isinstance(p, int) else kwargs[p] for p in places]
        for place in places:  # (the data travel in chunks, not with every task)
            if isinstance(place, int):
                args[place] = None
            else:
                kwargs[place] = None
        for name, value in bound.arguments.items():
            if name not in self.data and any(map(_is_dask_array, leaves(value))):
                whole = _is_dask_array(value)
                raise UsageError(
                    f"{name} {'is' if whole else 'holds'} a Dask array, and only the data "
                    "arguments (chunks_of=) are cut into chunks; every chunk needs the whole "
                    "of the others.",
                    fix=f"compute it first (`{name}.compute()`), or name it in chunks_of=."
                    if whole else f"compute the Dask arrays in {name} first "
                    "(`dask.compute(...)`).")
        rows = _rows(self.data, data)
        executors.open_executor(self.executor)
        if any(map(_is_dask_array, data)):
            return self._on_dask(tuple(args), kwargs, places, data, rows)
        cuts = [range(rows)] if self.executor is None and self.block_size is None else \
            executors.ranges(rows, self.block_size, self.executor)
        weights = [self._weight(len(cut), rows) for cut in cuts]
        chunks = [tuple(d[cut.start:cut.stop] for d in data) for cut in cuts]
        if self.executor is None:
            return tree_sum([self.local.on_chunk(args, kwargs, places, weight, chunk)
                             for weight, chunk in zip(weights, chunks)])
        job = self._job(tuple(args), kwargs, places)
        return tree_sum(executors.gathered(self.executor, job, run_chunk, [
            (weight, *chunk) for weight, chunk in zip(weights, chunks)]))

    def _job(self, args: tuple, kwargs: dict, places: tuple) -> executors.Job:
        """The job of a call; a loss with rules of its own ships with the call's arity."""
        options = self.options + ((len(args), tuple(kwargs)),) if self.per_arity \
            else self.options
        local = self._shipped_locals.get(options)
        if local is None:
            local = self._shipped_locals[options] = PerChunk(self.fn, *options)
        return executors.shipped(self.fn, PerChunk, options, local, args, kwargs, places)

    def _place(self, name: str, args: list, kwargs: dict):
        """Where data argument `name` is in the bound call: a position or a keyword."""
        position = list(self.signature.parameters).index(name)
        if position < len(args):
            return position
        if name in kwargs:
            return name
        raise UsageError(f"the data argument {name} (chunks_of=) was not passed.",
                         fix=f"pass {name}, the rows the loss adds up over.")

    def _weight(self, count: int, rows: int):
        return count / rows if self.reduction == "mean" else None

    def _on_dask(self, args: tuple, kwargs: dict, places: tuple, data: list, rows: int):
        """The chunks' gradients and their tree sum as tasks of the data's graph."""
        import dask
        import dask.array

        if self.block_size is not None:
            raise UsageError("block_size= cuts NumPy data; a Dask array is cut by its own "
                             "row chunks.",
                             fix="leave block_size out, or rechunk the data: "
                             "`X.rechunk({0: rows_per_chunk})`.")
        first = next(d for d in data if _is_dask_array(d))
        data = [dask.array.from_array(d, chunks=(first.chunks[0],) + d.shape[1:])
                if not _is_dask_array(d) else d for d in data]
        for name, d in zip(self.data, data):
            if d.chunks[0] != first.chunks[0]:
                raise UsageError(
                    f"the data arguments are cut into different row chunks: "
                    f"{self.data[0]} into {first.chunks[0]}, {name} into {d.chunks[0]}.",
                    fix=f"rechunk one as the other: `{name}.rechunk({{0: "
                    f"{self.data[0]}.chunks[0]}})`.")
        blocks = [d.rechunk({axis: -1 for axis in range(1, d.ndim)}).to_delayed().reshape(-1)
                  for d in data]
        job = dask.delayed(self._job(args, kwargs, places), traverse=False)
        task = dask.delayed(run_chunk, pure=False)
        parts = [task(job, self._weight(count, rows), *chunk)
                 for count, chunk in zip(first.chunks[0], zip(*blocks)) if count]
        # (an empty chunk adds nothing, and its mean would be NaN)
        total = tree_sum(parts, dask.delayed(added, pure=False))
        if self.executor is None:
            return dask.compute(total)[0]
        return dask.compute(total, scheduler=self.executor)[0]


def _as_called(fn) -> types.FunctionType:
    """A plain function whose parameters are those a call of `fn` binds: `fn`, or for a bound
    method, a callable object or a `functools.partial`, the adapter srcad differentiates it
    through (no `self`, no argument the partial binds), so that positions in chunks_of= and
    wrt= count the arguments the user passes, as grad's do."""
    return fn if isinstance(fn, types.FunctionType) else adapter(fn)


def _data_parameters(called: types.FunctionType, chunks_of) -> tuple:
    """The names of the parameters chunks_of= selects."""
    try:
        return wrt_parameters(code_of(called), chunks_of)[0]
    except WrtError:
        parameters = tuple(inspect.signature(called).parameters)
        raise UsageError(f"chunks_of={chunks_of!r} does not name data arguments of the loss, "
                         f"whose parameters are {parameters}.",
                         fix="name each data argument once, by name or position, e.g. "
                         "chunks_of=(\"X\", \"y\"); data that *args gathers cannot be named: "
                         "give the loss a parameter for each.") from None


def _is_dask_array(value) -> bool:
    return executors.of_dask(value, "dask", "to_delayed")


def _rows(names: tuple, data: list) -> int:
    """The row count every data argument shares."""
    counts = []
    for name, d in zip(names, data):
        shape = getattr(d, "shape", None)
        if shape is None or len(shape) == 0:
            raise UsageError(f"the data argument {name} (chunks_of=) is {type(d).__name__}, "
                             "not an array with rows.",
                             fix=f"pass {name} as a NumPy or Dask array, one row per "
                             "example.")
        if shape[0] != shape[0]:  # (NaN: a Dask array whose rows are not counted yet)
            raise UsageError(f"the data argument {name} (chunks_of=) is a Dask array of "
                             "unknown row count (filtered by a mask, read from a data frame).",
                             fix=f"count its rows first: `{name}.compute_chunk_sizes()`.")
        counts.append(shape[0])
    if len(set(counts)) > 1:
        raise UsageError("the data arguments have different numbers of rows: " + ", ".join(
            f"{name} {count}" for name, count in zip(names, counts)) + ".",
                         fix="pass data arguments with one row per example each.")
    if counts[0] == 0:
        raise UsageError("the data arguments have no rows.", fix="pass at least one row.")
    return counts[0]
