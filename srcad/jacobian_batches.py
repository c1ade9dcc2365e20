"""jacobian_batches: a forward Jacobian from one run of the batched tangent program.

`jacobians._Columns` asks here first; None means "not batched" and it runs the ordinary
tangent program once per input element instead (the result is the same, only slower).
Batched: every `wrt` argument is an array or a number (not a dict, list or tuple), the
output is one array or number, and the function has a batched tangent program
(transform/batched.py), whose rules cover every form met when it runs (srcad/batching.py).
"""
from __future__ import annotations

import threading

import numpy as np

from srcad import cache
from srcad.arguments import copied, is_container
from srcad.transform.batched import NotBatchable

_UNBATCHABLE = set()  # (code, parameter name) of functions without a batched program
_lock = threading.Lock()


def batched_blocks(function, args: list, positions, names):
    """`(output, blocks)` as `_Columns` gives them (`blocks[0][which] == [J]`), or None."""
    if any(is_container(args[p]) for p in positions):
        return None
    programs = [_program(function, name) for name in names]
    if None in programs:
        return None
    output, per_argument = None, []
    for program, position in zip(programs, positions):
        x = args[position]
        size = int(np.size(x))
        seed = np.eye(size, dtype=np.result_type(getattr(x, "dtype", np.float64), np.float16))
        compiled, run = program
        try:
            output, tangent = run((seed.reshape((size,) + np.shape(x)),),
                                  *(copied(args) if compiled.writes else args))
        except NotImplementedError:  # a form the batched rules do not cover
            return None
        if is_container(output):
            return None
        if tangent is None:
            block = np.zeros(np.shape(output) + np.shape(x))
        else:
            block = np.moveaxis(np.asarray(tangent), 0, -1).reshape(np.shape(output) +
                                                                    np.shape(x))
        per_argument.append([block])
    return output, [per_argument]


def _program(function, name):
    """`(compiled, bound)` batched tangent program for the parameter `name`, or None."""
    key = (function.__code__, name)
    if key in _UNBATCHABLE:
        return None
    try:
        compiled = cache.compiled_adjoint(function, (name,), mode="batch")
        return compiled, compiled.bound(function)
    except NotBatchable:
        with _lock:
            _UNBATCHABLE.add(key)
        return None
