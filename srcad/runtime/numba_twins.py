"""numba_twins: srcad's run-time helpers as numba compiles them (`backend="numba"`).

A gradient program made for numba (compiler/numba_backend.py) calls the same helpers as the
Python program: `unbroadcast`, `add_at`, `matmul_vjp_a`, a rule of `filled`... Each gets an
implementation here that numba uses when it compiles a call to it (`numba.extending.overload`),
chosen by the types numba infers, so the closure of the program stays as it is. The twins
cover what numba's programs meet: float64 arrays and numbers. Importing this module imports
numba; it registers the twins once.

A twin need not reproduce the Python helper's memory tricks (writing in place, outlines):
the programs numba compiles are made without them (numba_backend.PYTHON_ONLY).
"""
from __future__ import annotations

import cmath
import math

import numba
import numpy as np
from numba import types
from numba.extending import overload

from srcad.kernels import adjoints, numba_programs, outlines, regions
from srcad.ops import fused_softmax, numpy_arrays, numpy_contractions, numpy_reductions
from srcad.ops.registry import vjp_rules
from srcad.runtime.arguments import seed_for

TWINNED: set = set()  # the helpers numba compiles calls to


def _twin(helper):
    """Register the decorated function, which returns an implementation for numba's types
    (or None where it has none: numba then fails to type the program, which runs as
    Python), as `helper`'s twin."""
    def register(typed):
        overload(helper)(typed)
        TWINNED.add(helper)
        return typed
    return register


def _number(t) -> bool:
    """Whether `t` is a number's type, or an Optional's that holds one (an adjoint that is
    None until its first contribution)."""
    t = t.type if isinstance(t, types.Optional) else t
    return isinstance(t, (types.Number, types.Boolean))


def _none(t) -> bool:
    return isinstance(t, types.NoneType)


def _basic(index) -> bool:
    """An index that picks each element once (an integer, a slice, a tuple of them), which
    numba reads and writes as NumPy does; an array of indices may repeat one."""
    if isinstance(index, types.BaseTuple):
        return all(_basic(part) for part in index.types)
    return isinstance(index, (types.Integer, types.SliceType))


def _left_out(*ts) -> bool:
    """Whether each optional argument was left at its default None."""
    return all(t is None or isinstance(t, (types.NoneType, types.Omitted)) for t in ts)


def _literally(t, value) -> bool:
    """Whether the optional argument `t` is `value` (True or False), given or left out."""
    return t is value or isinstance(t, types.Omitted) and t.value is value \
        or isinstance(t, types.BooleanLiteral) and t.literal_value is value


def _array(t):
    """The array type `t` is, or an Optional may hold (None until first set); else None."""
    t = t.type if isinstance(t, types.Optional) else t
    return t if isinstance(t, types.Array) else None


def _element(array, index) -> bool:
    """Whether `array[index]` is one element: an integer per axis."""
    array = array.type if isinstance(array, types.Optional) else array
    indices = index.types if isinstance(index, types.BaseTuple) else (index,)
    return len(indices) == array.ndim and all(isinstance(i, types.Integer) for i in indices)


def _arrays_of_floats(*ts) -> bool:
    return all(isinstance(t, types.Array) and isinstance(t.dtype, types.Float) for t in ts)


# ---- sums over broadcast axes ------------------------------------------------------------------
@numba.njit
def _summed_into(g, shape):
    """`g` (C order) summed over the axes along which an array of `shape` was broadcast to
    `g`'s shape: the leading axes, and those where `shape` has length 1."""
    out = np.zeros(shape)
    flat, source = out.reshape(-1), np.ascontiguousarray(g).reshape(-1)
    g_shape, extra = g.shape, g.ndim - len(shape)
    for i in range(source.size):
        rest, at, stride = i, 0, 1
        for axis in range(g.ndim - 1, -1, -1):
            index = rest % g_shape[axis]
            rest //= g_shape[axis]
            own = axis - extra
            if own >= 0:
                if shape[own] != 1:
                    at += index * stride
                stride *= shape[own]
        flat[at] += source[i]
    return out


@_twin(adjoints.unbroadcast)
def _unbroadcast(g, x):
    if _number(x):
        if _number(g):
            return lambda g, x: g
        return lambda g, x: np.sum(g)
    if isinstance(x, types.Array):
        if _number(g):
            return lambda g, x: np.full(x.shape, g)
        if g.ndim < x.ndim:
            return None  # (no rule hands an operand a cotangent of fewer axes)
        if g.ndim == x.ndim:
            def same_rank(g, x):
                if g.shape == x.shape:
                    return np.ascontiguousarray(g)
                return _summed_into(g, x.shape)
            return same_rank
        return lambda g, x: _summed_into(g, x.shape)
    return None


@_twin(adjoints.summed_product)
def _summed_product(a, b, x):
    return lambda a, b, x: adjoints.unbroadcast(a * b, x)


@_twin(outlines.unbroadcast_from)
def _unbroadcast_from(g, out, x):
    if not isinstance(out, types.Array):
        return lambda g, out, x: adjoints.unbroadcast(g, x)
    if _number(g) or g.ndim != out.ndim:  # (`g` stands for its broadcast to `out`)
        return lambda g, out, x: adjoints.unbroadcast(np.zeros(out.shape) + g, x)

    def spread(g, out, x):
        return adjoints.unbroadcast(g if g.shape == out.shape else np.zeros(out.shape) + g, x)
    return spread


@_twin(outlines.cotangent_number)
def _cotangent_number(g):
    return lambda g: g


@_twin(seed_for)
def _seed_for(output):
    if _number(output):
        return lambda output: 1.0
    if isinstance(output, types.Array):
        def one_element(output):
            if output.size != 1:
                raise ValueError("grad applies to functions whose output has one element")
            return np.ones_like(output)
        return one_element
    return None


@_twin(adjoints.shape_of)
def _shape_of(x):  # (the Python program keeps shapes to free arrays: numba keeps values)
    return lambda x: x


# ---- adding up adjoints ---------------------------------------------------------------------
@_twin(adjoints.add_into)
def _add_into(total, other):
    return lambda total, other: total + other


@_twin(adjoints.subtract_into)
def _subtract_into(total, other):
    return lambda total, other: total - other


@_twin(adjoints.multiply_into)
def _multiply_into(total, other):
    return lambda total, other: total * other


@_twin(adjoints.divide_into)
def _divide_into(total, other):
    return lambda total, other: total / other


@_twin(adjoints.negative_into)
def _negative_into(total):
    return lambda total: -total


@_twin(adjoints.accumulate)
def _accumulate(total, extra):
    if _none(total):
        return lambda total, extra: extra
    if _none(extra):
        return lambda total, extra: total
    def added(total, extra):
        if total is None:
            return extra
        return total + extra
    return added


# ---- element reads and writes ----------------------------------------------------------------
@_twin(adjoints.index_adjoint)
def _index_adjoint(g, x, index):
    if isinstance(x, types.Array) and _basic(index):
        def scattered(g, x, index):
            out = np.zeros(x.shape)
            out[index] = g
            return out
        return scattered
    return None


@_twin(adjoints.add_at)
def _add_at(total, g, x, index):
    if _none(total):
        return lambda total, g, x, index: adjoints.index_adjoint(g, x, index)
    if isinstance(total, (types.Array, types.Optional)) and _basic(index):
        # (an Optional adjoint is None until its first contribution)
        def added(total, g, x, index):
            if total is None:
                return adjoints.index_adjoint(g, x, index)
            total[index] += g
            return total
        return added
    return None


@_twin(adjoints.accumulate_at)
def _accumulate_at(total, g, x, index):
    if isinstance(x, types.Array):
        return lambda total, g, x, index: adjoints.add_at(total, g, x, index)
    return None


@_twin(adjoints.expand_reduced)
def _expand_reduced(g, x, axis=None, keepdims=False):
    if _number(g) and _array(x) and _left_out(axis) and _literally(keepdims, False):
        return lambda g, x, axis=None, keepdims=False: np.full(x.shape, g)
    if _number(g) and _number(x):
        return lambda g, x, axis=None, keepdims=False: g
    return None


@_twin(adjoints.add_spread)
def _add_spread(total, g, x, axis=None, keepdims=False):
    if _number(g) and _array(x) and _array(total) and _left_out(axis) \
            and _literally(keepdims, False):
        def added(total, g, x, axis=None, keepdims=False):
            if total is None:
                return np.full(x.shape, g)
            return total + g
        return added
    return None


@_twin(regions.saved_region)
def _saved_region(y, index):
    if isinstance(y, types.Array) and _basic(index):
        if _element(y, index):
            return lambda y, index: y[index]
        return lambda y, index: y[index].copy()
    return None


@_twin(regions.region_adjoint)
def _region_adjoint(g, index, value, target=None):
    if _none(g):
        return lambda g, index, value, target=None: None
    if isinstance(target, types.Array) and not isinstance(target.dtype, types.Float):
        return None  # (integers written into truncate `value`: no derivative reaches it)
    if isinstance(g, (types.Array, types.Optional)) and _basic(index):
        element = _element(g, index)

        def part(g, index, value, target=None):
            if g is None:
                return None
            if element:
                return adjoints.unbroadcast(g[index], value)
            # (a copy: `cleared_region` zeroes the region of `g` next)
            return adjoints.unbroadcast(g[index].copy(), value)
        return part
    return None


@_twin(regions.cleared_region)
def _cleared_region(g, index):
    if isinstance(g, types.Array) and _basic(index):
        def cleared(g, index):
            g[index] = 0.0
            return g
        return cleared
    return None


# ---- tapes of numbers as arrays (compiler/numba_program.py) ------------------------------------
# The helpers' own code, compiled by numba, where the types fit the tape's; else None: the
# program is not typed, and the one with lists runs instead.
@_twin(numba_programs.tape_of)
def _tape_of(prototype, room=0):
    if isinstance(prototype, types.Float):
        return lambda prototype, room=0: np.empty(room, np.float64)
    if isinstance(prototype, types.Integer):
        return lambda prototype, room=0: np.empty(room, np.int64)
    return None


@_twin(numba_programs.reserved)
def _reserved(tape, size):
    return numba_programs.reserved


def _fits(tape, value) -> bool:
    """Whether `value` is a number `tape` holds as it is: an integer, or a float on a tape
    of floats (an integer on one: its name is a float where it is popped, `_popped`, as the
    list's would be)."""
    return isinstance(value, types.Integer) and (value.signed or value.bitwidth < 64) \
        or tape.dtype == types.float64 and isinstance(value, types.Float)


@_twin(numba_programs.pushed)
def _pushed(tape, top, value):
    return numba_programs.pushed if _fits(tape, value) else None


@_twin(numba_programs.store)
def _store(tape, top, value):
    return numba_programs.store if _fits(tape, value) else None


@_twin(numba_programs.popped)
def _popped(tape, top, current):
    if current == types.float64:  # (not an integer: numba types its name as the list did)
        return numba_programs.popped
    return None


@_twin(numba_programs.loop_trips)
def _loop_trips(iterable):
    if isinstance(iterable, (types.RangeType, types.Array, types.BaseTuple)):
        return lambda iterable: len(iterable)
    return None  # (a list may grow as the loop runs: the program with lists)


# ---- rules of srcad's that gradient programs call --------------------------------------------
@_twin(numpy_contractions.matmul_vjp_a)
def _matmul_vjp_a(g, ans, a, b):
    if not _arrays_of_floats(a, b):
        return None
    if a.ndim == 2 and b.ndim == 2:
        return lambda g, ans, a, b: g @ np.ascontiguousarray(b.T)
    if a.ndim == 2 and b.ndim == 1:
        return lambda g, ans, a, b: np.outer(g, b)
    if a.ndim == 1 and b.ndim == 2:
        return lambda g, ans, a, b: b @ g
    if a.ndim == 1 and b.ndim == 1:
        return lambda g, ans, a, b: g * b
    return None


@_twin(numpy_contractions.matmul_vjp_b)
def _matmul_vjp_b(g, ans, a, b):
    if not _arrays_of_floats(a, b):
        return None
    if a.ndim == 2 and b.ndim == 2:
        return lambda g, ans, a, b: np.ascontiguousarray(a.T) @ g
    if a.ndim == 2 and b.ndim == 1:
        return lambda g, ans, a, b: g @ a
    if a.ndim == 1 and b.ndim == 2:
        return lambda g, ans, a, b: np.outer(a, g)
    if a.ndim == 1 and b.ndim == 1:
        return lambda g, ans, a, b: g * a
    return None


@_twin(numpy_reductions.extremum_vjp)
def _extremum_vjp(g, ans, a, axis=None, out=None, keepdims=False, initial=None, where=True):
    if not (isinstance(a, types.Array) and _number(ans) and _left_out(axis, out, initial)
            and _literally(keepdims, False) and _literally(where, True)):
        return None
    def shared(g, ans, a, axis=None, out=None, keepdims=False, initial=None, where=True):
        winners = (a == ans).astype(np.float64)  # (ties share the cotangent equally)
        return g / np.sum(winners) * winners
    return shared


@_twin(fused_softmax.softmax_vjp)
def _softmax_vjp(g, ans, axis=None):
    if _left_out(axis):
        return lambda g, ans, axis=None: (g - np.sum(g * ans)) * ans
    return None


@_twin(numpy_arrays.filled)
def _filled(*values):
    def made(*values):
        out, position = np.zeros(len(values)), 0
        for value in numba.literal_unroll(values):
            out[position] = value
            position += 1
        return out
    return made


def _filled_rule(rule, position: int):
    @_twin(rule)
    def part(g, ans, *values):
        if isinstance(g, types.Array) and g.ndim == 1 and _number(values[position]):
            return lambda g, ans, *values: g[position]
        return None


for _position, _rule in enumerate(vjp_rules(numpy_arrays.filled).rules):
    _filled_rule(_rule, _position)


# ---- the finiteness of a result, in numba's code ---------------------------------------------
@_twin(numba_programs.all_finite)
def _all_finite(result):
    if isinstance(result, types.BaseTuple):
        if len(result) == 0:
            return lambda result: True
        return lambda result: numba_programs.all_finite(result[0]) \
            and numba_programs.all_finite(result[1:])
    inner = result.type if isinstance(result, types.Optional) else result  # (None, or one)
    if isinstance(inner, types.Array) and isinstance(inner.dtype, (types.Float, types.Complex)):
        def elements(result):
            if result is None:
                return True
            for value in result.flat:
                if not np.isfinite(value):
                    return False
            return True
        return elements
    if isinstance(inner, types.Float):
        return lambda result: result is None or math.isfinite(result)
    if isinstance(inner, types.Complex):
        return lambda result: result is None or cmath.isfinite(result)
    return lambda result: True  # (integers, booleans, None)
