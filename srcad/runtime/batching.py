"""batching: the run-time side of batched tangent programs (transform/batched.py).

A forward Jacobian takes one tangent per input element. A batched tangent program carries
all of them at once: the batched tangent of a value `v` is an array of shape `(n,) + v.shape`
whose row k is v's tangent along the k-th basis direction (JAX gets the same from `vmap` of
a JVP). One run, with NumPy working on whole `(n, ...)` arrays, gives every column.

Elementwise rules work on batched tangents unchanged once each tangent is `aligned` to the
output's rank (`(n, 1, .., 1) + v.shape`: NumPy's broadcasting aligns trailing axes, so
logical axes then meet logical axes) and each contribution is made `full` again. Operations
that move axes have the rules below, `rule(ans, tangents, *args, **kwargs)` with one tangent
per positional argument (None where it has none), each naming the batch axis explicitly.
A form a rule does not cover raises `NotBatchable` when it runs, and the Jacobian is then
computed column by column: a batched result is exact or not used.
"""
from __future__ import annotations

import operator
import types

import numpy as np

from srcad.kernels.adjoints import dtype_of
from srcad.kernels.outlines import shape
from srcad.ops.callables import unwrapped
from srcad.ops.python_builtins import INDEXED_AS_ITERATED, indexable
from srcad.runtime import calls
from srcad.runtime.control import CustomGradient
from srcad.runtime.hooks import ABOVE


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
    return _aligned_to(tangent, len(shape(ans)))


def _aligned_to(tangent, rank: int):
    batched = shape(tangent)
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
    if all(t is None or (isinstance(t, (list, tuple)) and all(p is None for p in t))
           for t in tangents):
        return None
    return rule(ans, tangents, *args, **kwargs)


def _refused(what: str):
    raise NotBatchable(f"no batched form for {what}")


def _logical_axis(axis, ndim: int):
    """A logical axis (a tuple of them, or None for all) as an axis of the batched array."""
    if axis is None:
        return tuple(range(1, ndim + 1))
    if isinstance(axis, tuple):
        return tuple(_logical_axis(a, ndim) for a in axis)
    return operator.index(axis) % ndim + 1 if ndim else _refused("an axis of a scalar")


# ---- rules -------------------------------------------------------------------------------------
def matmul(ans, tangents, a, b):
    """`a @ b`: vectors become a row (`a`) and a column (`b`) as in NumPy, batched tangents
    are aligned to the stacked product's rank (the batch axis leads, which matmul
    broadcasts), and the added axes are taken out again."""
    t_a, t_b = tangents
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        _refused("matmul of a scalar")
    if t_a is None and np.ndim(a) <= 2 and np.ndim(b) == 1:  # one product: (n, k) @ (k, m)
        transposed = np.swapaxes(a, -1, -2) if np.ndim(a) == 2 else a
        return full(transposed if is_basis(t_b) else np.matmul(t_b, transposed), ans)
    rows, columns = np.ndim(a) == 1, np.ndim(b) == 1
    a_matrix = np.reshape(a, (1, -1)) if rows else a
    b_matrix = np.reshape(b, (-1, 1)) if columns else b
    rank = max(np.ndim(a_matrix), np.ndim(b_matrix))  # of the stacked product
    parts = []
    if t_a is not None:
        t_matrix = t_a[:, None, :] if rows else t_a
        parts.append(np.matmul(_aligned_to(t_matrix, rank), b_matrix))
    if t_b is not None:
        t_matrix = t_b[..., None] if columns else t_b
        parts.append(np.matmul(a_matrix, _aligned_to(t_matrix, rank)))
    total = parts[0] if len(parts) == 1 else parts[0] + parts[1]
    if columns:
        total = total[..., 0]
    if rows:
        total = total[..., 0, :] if not columns else total[..., 0]
    return full(total, ans)


def dot(ans, tangents, a, b):
    """`np.dot`: matmul for arrays of up to two dimensions."""
    if not (1 <= np.ndim(a) <= 2 and 1 <= np.ndim(b) <= 2):
        _refused("np.dot of scalars or of arrays above two dimensions")
    return matmul(ans, tangents, a, b)


def _reduction(fn, name: str):
    """The batched rule of `np.sum` or `np.mean` over logical axes (both are linear)."""
    def rule(ans, tangents, a, axis=None, dtype=None, out=None, keepdims=False, **options):
        if out is not None or options:
            _refused(f"np.{fn.__name__} with out=, initial= or where=")
        return full(fn(tangents[0], axis=_logical_axis(axis, np.ndim(a)), dtype=dtype,
                       keepdims=keepdims), ans)
    rule.__name__ = name
    return rule


summed, averaged = _reduction(np.sum, "summed"), _reduction(np.mean, "averaged")


def getitem(ans, tangents, a, index):
    """`a[index]`: the same index after the batch axis (advanced indices stay together)."""
    t_a = tangents[0]
    if tangents[1] is not None:
        _refused("an index with a tangent")
    if isinstance(t_a, (list, tuple, dict)):  # an element of a sequence: its own tangent
        return t_a[index]
    return full(t_a[(slice(None),) + (index if isinstance(index, tuple) else (index,))], ans)


def reshape(ans, tangents, a, *shape, **options):
    if len(shape) > 1 or any(t is not None for t in tangents[1:]) \
            or options.get("order", "C") != "C":
        _refused("np.reshape with an order other than 'C'")
    t = tangents[0]
    return np.reshape(t, np.shape(t)[:1] + np.shape(ans))


def transpose(ans, tangents, a, axes=None):
    ndim = np.ndim(a)
    order = tuple(reversed(range(ndim))) if axes is None else tuple(
        operator.index(k) % ndim for k in axes)
    return np.transpose(full(tangents[0], a), (0,) + tuple(k + 1 for k in order))


def stack(ans, tangents, arrays, axis=0, **options):
    """`np.stack(list)`: elements without a tangent are zero."""
    parts = tangents[0]
    if not isinstance(parts, (list, tuple)) or options.get("out") is not None \
            or not all(t is None or isinstance(t, np.ndarray) for t in parts):
        _refused("np.stack of anything but a list of arrays and numbers")
    n = next(np.shape(t)[0] for t in parts if t is not None)
    rows = [np.zeros((n,) + np.shape(x)) if t is None else full(t, x)
            for t, x in zip(parts, arrays)]
    return full(np.stack(rows, axis=operator.index(axis) % np.ndim(ans) + 1), ans)


def array(ans, tangents, value, dtype=None, *, copy=True, order="K", subok=False, ndmin=0,
          like=None):
    """`np.array(list)` stacks its elements; `np.array(x)` of an array copies it."""
    if ndmin or order not in ("K", "C", "A") or subok or like is not None \
            or (dtype is not None and not np.issubdtype(np.dtype(dtype), np.inexact)):
        _refused("np.array with these options")
    if isinstance(tangents[0], np.ndarray):
        return np.array(full(tangents[0], ans))
    return stack(ans, tangents[:1], value)


# ---- calls of the user's helpers ----------------------------------------------------------------
def call(fn, active: tuple, tangents: tuple, *args, **kwargs):
    """`(fn(*args, **kwargs), its batched tangent)` for a Python function without rules:
    its own batched tangent program, seeded with the batched tangents of the arguments at
    `active` (positions or names). Anything else is not batched here."""
    function = unwrapped(fn)
    if not isinstance(function, types.FunctionType) or isinstance(fn, CustomGradient) \
            or calls.vjp_rules(fn) is not None or calls.jvp_rules(fn) is not None \
            or calls.is_derivative(fn) or calls.is_nondifferentiable(fn):
        _refused(f"the call of {fn!r}")
    live = [(spec, t) for spec, t in zip(active, tangents) if t is not None]  # (a zero one
    active, tangents = tuple(s for s, _ in live), tuple(t for _, t in live)  # is no seed)
    if not live:
        return fn(*args, **kwargs), None
    places = [calls.parameter_of(function, spec) for spec in active]
    if any(part is not None for _, part in places) \
            or any(isinstance(t, (list, tuple, dict)) for t in tangents):
        _refused("a call passing `*args`, `**kwargs` or containers with tangents")
    names = tuple(name for name, _ in places)
    if len(set(names)) != len(names):
        _refused("a call passing one parameter twice")
    key = (function.__code__, names)
    if key in _UNBATCHABLE:  # known from an earlier call: do not transform again
        _refused(f"the call of {fn!r}")
    try:
        program = ABOVE.compiled_adjoint(function, names, mode="batch").bound(function)
    except NotBatchable:
        _UNBATCHABLE.add(key)
        raise
    with calls.NESTED:
        return program(tuple(tangents), *args, **kwargs)


_UNBATCHABLE = set()  # (code, parameter names) of helpers without a batched program


def tangent_elements(tangent, count: int):
    """`tangents.tangent_elements` for batched tangents: an array's rows along its first
    logical axis (the batch axis comes first), a sequence's items as they are."""
    if tangent is None:
        return (None,) * count
    if isinstance(tangent, np.ndarray):
        return tuple(tangent[:, i] for i in range(count))
    return tangent


def passed_on(ans, tangents, values):
    """`indexable(values)` (ops/python_builtins.py): the tangent of what it passes on."""
    return tangents[0] if isinstance(values, INDEXED_AS_ITERATED) else None


RULES = {indexable: passed_on, np.matmul: matmul, operator.matmul: matmul, np.dot: dot, np.sum: summed,
         np.mean: averaged, operator.getitem: getitem, np.reshape: reshape,
         np.transpose: transpose, getattr(np.ndarray, "T"): transpose, np.stack: stack,
         np.array: array}
