"""jacobian_batches: a forward Jacobian from one run of the batched tangent program.

`jacobians._Jacobian` asks here first; None means "not batched" and it runs the ordinary
tangent program once per input element instead (the result is the same, only slower).
Batched: every `wrt` argument is a float array or number (not a dict, list or tuple), the
output is one real float array or number (a complex one goes to the columns, which refuse it), and the function has a batched tangent program
(transform/batched.py) whose rules cover every form met when it runs (srcad/kernels/batched.py, the records' batched rules).
The programs are looked up once per Jacobian object and kept while their guards hold, and
the seed once per dtype and shape of the argument, so a repeated Jacobian costs one program
run and a transposed copy (`one_array`).
"""
from __future__ import annotations

import threading

import numpy as np

from srcad.api.fast_paths import guards_of
from srcad.compiler import cache
from srcad.compiler.passes import enabled
from srcad.runtime.arguments import copied
from srcad.kernels.batched import NotBatchable, basis

_UNBATCHABLE = set()  # (code, parameter name) of functions without a batched program
_lock = threading.Lock()
_ARGUMENT_TYPES = (np.ndarray, float, np.floating)


class BatchedColumns:
    """The batched programs of `function` for the parameters `names` (at `positions`)."""

    def __init__(self, function, names, positions):
        self.function, self.names, self.positions = function, names, positions
        self.programs = None  # [(compiled, bound, guards)] once found; False: not batchable
        self.seeds = {}  # (dtype, shape) of the one array argument → its seed

    def one_array(self, args, kwargs, always: bool):
        """The Jacobian in the one `wrt` argument, a real float array, from one batched run,
        as `__call__` and `_block` give it; None where the general path decides (another
        kind of argument, no batched program, batching switched off, or, unless `always`,
        an output with fewer elements than the argument: rows are then fewer runs).
        What the general path works out on every call is worked out once per argument
        dtype and shape here: a repeated Jacobian of a small layer spent half its time
        outside the program."""
        position = self.positions[0]
        x = args[position] if position < len(args) else None
        if type(x) is not np.ndarray or x.dtype.kind != "f" or not enabled("batch"):
            return None
        seed = self.seeds.get((x.dtype, x.shape))
        if seed is None:
            seed = self.seeds[x.dtype, x.shape] = seed_of(x)
        elif seed is False:  # (rows, found before)
            return None
        ran = self.run(0, seed, args, kwargs)
        if ran is None or not always and (
                ran[0].size if type(ran[0]) is np.ndarray else 1) < x.size:
            # (another output, or rows: the general path for arguments of this kind, which
            # would otherwise run the program twice on every call)
            self.seeds[x.dtype, x.shape] = False
            return None
        return _block(ran[1], ran[0], x, args)

    def __call__(self, args, kwargs):
        """`(output, blocks)` as `_Columns` gives them (`blocks[0][which] == [J]`), or
        None."""
        output, per_argument = None, []
        for which, position in enumerate(self.positions):
            x = args[position]
            seed = seed_of(x)
            if seed is None:
                return None
            ran = self.run(which, seed, args, kwargs)
            if ran is None:
                return None
            output, tangent = ran
            per_argument.append([_block(tangent, output, x, args)])
        return output, [per_argument]

    def run(self, which: int, seed, args, kwargs):
        """`(output, batched tangent)` of one run seeded with `seed` along the `which`-th
        parameter (float arguments only), or None: not batchable, or an output that is not
        one array or number."""
        programs = self._programs()
        if not programs:
            return None
        compiled, run, _ = programs[which]
        try:
            output, tangent = run((seed,), *(copied(args) if compiled.writes else args),
                                  **(copied(kwargs) if compiled.writes else kwargs))
        except NotBatchable:  # a form the batched rules do not cover: columns from now on
            self.programs = False
            return None
        if not (type(output) is float or isinstance(output, _ARGUMENT_TYPES)
                and output.dtype.kind == "f"):
            return None  # a dict, list or tuple, or a complex value: columns decide
        return output, tangent

    def _programs(self):
        if self.programs is False:  # not batchable, or a run found a form without one
            return False
        if self.programs:
            for _, _, current in self.programs:
                if not current():
                    break
            else:
                return self.programs
        found = [_program(self.function, name) for name in self.names]
        self.programs = False if None in found else found
        return self.programs


def seed_of(x):
    """The seed of a batched run for the argument `x`: one unit direction per element, or
    None for an argument that is not a float array or number."""
    if type(x) is np.ndarray and x.dtype.kind == "f":
        return basis(x.size, x.dtype).reshape((x.size,) + x.shape)
    if type(x) is float or isinstance(x, np.floating):
        return basis(1, np.promote_types(getattr(x, "dtype", np.float64), np.float16)).reshape(1)
    return None


def _block(tangent, output, x, args):
    """`out.shape + x.shape` from a batched tangent of the output (None: zeros), an array
    of its own: a copy where it is a view of memory the program did not make for it."""
    if type(tangent) is np.ndarray and type(output) is np.ndarray and type(x) is np.ndarray \
            and tangent.ndim == 2 and output.ndim == 1 and x.ndim == 1:
        block = tangent.T  # (the common case: a vector of a vector; attributes, not np.ndim)
    elif tangent is None:
        return np.zeros(np.shape(output) + np.shape(x))
    else:  # (n, *out) → (*out, n), then n as x's shape
        rank = np.ndim(tangent)
        moved = np.transpose(tangent, tuple(range(1, rank)) + (0,))
        block = moved.reshape(np.shape(output) + np.shape(x))
    # a view may be of the user's own array (the batched rule of matmul gives `a.T` for `a @ x`)
    # or of the read-only seed (`f(x) = x`); one of a new array the program made (writeable,
    # owning its memory, no argument) is the Jacobian's own, as the transposed product of a
    # layer's Jacobian is: a copy of 64 x 64 was a sixth of its time
    if block.flags.owndata or block.base is tangent and tangent.flags.owndata \
            and tangent.flags.writeable and not any(tangent is a for a in args):
        return block
    return block.copy()


def _program(function, name):
    """`(compiled, bound, guards)`: the batched tangent program for the parameter `name`, or
    None."""
    key = (function.__code__, name)
    if key in _UNBATCHABLE:
        return None
    try:
        compiled = cache.compiled_adjoint(function, (name,), mode="batch")
    except NotBatchable:
        with _lock:
            _UNBATCHABLE.add(key)
        return None
    return compiled, compiled.bound(function), guards_of(compiled, function)
