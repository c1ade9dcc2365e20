"""batched: what batched tangent programs (compiler/transform/batched.py) run on.

A forward Jacobian takes one tangent per input element. A batched tangent program carries
all of them at once: the batched tangent of a value `v` is an array of shape `(n,) + v.shape`
whose row k is v's tangent along the k-th basis direction (JAX gets the same from `vmap` of
a JVP). One run, with NumPy working on whole `(n, ...)` arrays, gives every column.

Elementwise rules work on batched tangents unchanged once each tangent is `aligned` to the
output's rank (`(n, 1, .., 1) + v.shape`: NumPy's broadcasting aligns trailing axes, so
logical axes then meet logical axes) and each contribution is made `full` again. Operations
that move axes have a batched rule in their record (`declare(fn, batched=rule)` in
srcad/ops), `rule(ans, tangents, *args, **kwargs)` with one tangent per positional argument
(None where it has none), each naming the batch axis explicitly. A form a rule does not
cover raises `NotBatchable` when it runs, and the Jacobian is then computed column by
column: a batched result is exact or not used.
"""
from __future__ import annotations

import operator

import numpy as np

from srcad.kernels.adjoints import dtype_of
from srcad.kernels.outlines import shape


class NotBatchable(Exception):
    """A function, or a form of a call met when it runs, has no batched form: the Jacobian
    is computed column by column instead."""


_BASES: dict = {}  # (size, dtype) -> the read-only identity that seeds a batched program


def basis(size: int, dtype):
    """The seed of a batched program for an input of `size` elements: the identity, one
    direction per row (read-only and shared, so `is_basis` can recognise it)."""
    key = (size, np.dtype(dtype))
    identity = _BASES.get(key)
    if identity is None:
        identity = np.eye(size, dtype=dtype)
        identity.flags.writeable = False
        identity = _BASES[key] = identity
    return identity


def is_basis(tangent) -> bool:
    """Whether `tangent` is a seed from `basis` itself: the identity or a view of all of it
    with its layout (a view of the same shape and strides of an n × n array starts at it)."""
    if type(tangent) is not np.ndarray or tangent.ndim != 2:
        return False
    identity = _BASES.get((tangent.shape[0], tangent.dtype))
    return identity is not None and (tangent is identity or tangent.base is identity) \
        and tangent.shape == identity.shape and tangent.strides == identity.strides



def aligned(tangent, ans):
    """A batched tangent of an elementwise operation's argument, with axes of length 1
    after the batch axis up to the rank of the operation's output `ans`."""
    return aligned_to(tangent, len(shape(ans)))


def aligned_to(tangent, rank: int):
    if tangent is None:  # (a value the program differentiates that has no tangent when it
        refused("a differentiated value without a tangent")  # runs: a list whose
    batched = shape(tangent)                                 # differentiated items were popped)
    missing = rank + 1 - len(batched)
    if missing <= 0:
        return tangent
    return np.reshape(tangent, batched[:1] + (1,) * missing + batched[1:])


def full(tangent, ans):
    """The batched tangent of `ans` in its full shape `(n,) + ans.shape`."""
    logical = shape(ans)
    if shape(tangent)[1:] == logical:  # the common case: already full
        return tangent
    tangent = aligned(tangent, ans)
    return np.broadcast_to(tangent, shape(tangent)[:1] + logical)


def broadcast_like(g, ans):
    """`tangents.broadcast_like` for batched tangents (the output's precision kept)."""
    spread = full(g, ans)
    if type(ans) is np.ndarray and spread.dtype == ans.dtype:  # the common case
        return spread
    dtype = np.promote_types(dtype_of(ans), np.float16)
    return spread if spread.dtype == dtype or not np.can_cast(spread.dtype, dtype, "safe") \
        else spread.astype(dtype)


def apply(rule, tangents, ans, *args, **kwargs):
    """`rule(ans, tangents, *args, **kwargs)`, or None when no argument has a tangent."""
    for t in tangents:  # (a loop, not `all`: it runs once per operation of every run)
        if t is not None and not (isinstance(t, (list, tuple)) and all(p is None for p in t)):
            return rule(ans, tangents, *args, **kwargs)
    return None


def refused(what: str):
    """Raise NotBatchable: the form `what` has no batched rule."""
    raise NotBatchable(f"no batched form for {what}")


def logical_axis(axis, ndim: int):
    """A logical axis (a tuple of them, or None for all) as an axis of the batched array."""
    if axis is None:
        return tuple(range(1, ndim + 1))
    if isinstance(axis, tuple):
        return tuple(logical_axis(a, ndim) for a in axis)
    return operator.index(axis) % ndim + 1 if ndim else refused("an axis of a scalar")
