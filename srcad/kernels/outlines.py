"""outlines: values generated code keeps without their elements.

A *uniform* cotangent is one number standing for itself at every element of its primal (the
cotangent of a full `np.sum`, transform/uniform.py); an *outline* is the shape and dtype of
a value a gradient-only program never computes, because it reads nothing else of it
(transform/outline.py: the operations that lead only to the loss value). The helpers here
compute with them as NumPy would with the arrays they stand for.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from srcad.errors import SrcadError
from srcad.kernels.adjoints import dtype_of, is_plain, unbroadcast


# ---- uniform cotangents ------------------------------------------------------------------------
def cotangent_number(g):
    """A full reduction's cotangent `g` as the number that stands for it at every element
    (transform/uniform.py): a NumPy scalar of the precision `expand_reduced` gives the
    array, so that it meets arrays as that array would (a Python float or int would take
    a float16 operand's precision, and times a list would repeat it)."""
    kind = type(g)
    if kind in _INEXACT_SCALARS:  # (the common case, and result_type costs a microsecond)
        return g
    if kind is float or kind is int:
        return np.float64(g)
    if kind is bool or is_plain(g):
        return np.promote_types(dtype_of(g), np.float16).type(g)
    return g  # a tape-mode tensor must stay one


_INEXACT_SCALARS = frozenset(t for t in np.sctypeDict.values() if issubclass(t, np.inexact))


def array_of(number):
    """A uniform cotangent as a 0-d array, for arithmetic with an operand that may be a list
    (`number * [1.0, 2.0]` would fail or repeat the list; an array's converts it)."""
    return np.asarray(number) if is_plain(number) else number


def uniform_unbroadcast(g, out, x):
    """`unbroadcast` of a *uniform* cotangent: `g`, a number, stands for itself at every
    element of `out`, into which the operand `x` was broadcast. Each element of `x` appears
    size(out) / size(x) times in `out`, so its cotangent is that many `g`s, the same at
    every element of `x`: a uniform cotangent again (transform/adjoints.py, UNIFORM)."""
    out_shape, x_shape = shape(out), shape(x)
    if out_shape == x_shape:
        return g
    size, own = math.prod(out_shape), math.prod(x_shape)
    return g if size == own else g * (size // own)


def unbroadcast_from(g, out, x):
    """`unbroadcast(g, x)` of a cotangent `g` of `out` computed from a uniform one: `g`
    stands for its broadcast to `out`'s shape, which it has unless the rule multiplied the
    number by an operand smaller than `out` (then its broadcast is summed, not copied)."""
    shape = np.shape(out)
    if np.shape(g) != shape:
        if np.shape(x) == shape or not is_plain(g):  # its own array (a tensor stays one)
            g = np.zeros(shape, np.promote_types(dtype_of(g), np.float16)) + g
        else:
            g = np.broadcast_to(g, shape)  # a view: unbroadcast sums it into a new array
    return unbroadcast(g, x)


# ---- outlines ----------------------------------------------------------------------------------
class Outline:
    """The shape and dtype of a value that was not computed: `np.shape`, `np.size` and
    `seed_for` read it as they read the array."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape: tuple, dtype: np.dtype):
        self.shape, self.dtype = shape, dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def __repr__(self):
        return f"Outline(shape={self.shape}, dtype={self.dtype})"


def outline(fn, *operands):
    """The outline of `fn(*operands)`, an elementwise operation whose result has the
    operands' broadcast shape and their promoted dtype when that is inexact; computed where
    it is not (integer division gives floats, not integers), where no operand is an array
    (Python's own arithmetic: a negative float to a fractional power is complex) or where an
    operand holds no numbers."""
    common = _common_outline(operands)  # the common case first
    if common is not None:
        return common
    shapes, types, arrays = [], [], False
    for operand in operands:
        kind = type(operand)
        if kind is Outline or kind is np.ndarray:
            shapes.append(operand.shape)
            types.append(operand.dtype)
            arrays = True
        elif isinstance(operand, np.generic):
            types.append(operand.dtype)
        elif kind in _PYTHON_NUMBERS:  # a Python number takes the arrays' precision
            types.append(kind)
        elif isinstance(operand, (int, float, complex)):  # a subclass: bool, an IntEnum
            types.append(next(t for t in _PYTHON_NUMBERS if isinstance(operand, t)))
        else:  # a list or tuple: NumPy converts it next to an array (alone, `+` joins
            converted = np.asarray(operand)  # lists and `*` repeats them)
            if converted.dtype.kind not in "biufc":
                return _computed(fn, operands)
            shapes.append(converted.shape)
            types.append(converted.dtype)
    if not arrays:
        return _computed(fn, operands)
    key = tuple(types)
    dtype = _PROMOTED.get(key)
    if dtype is None:
        dtype = _PROMOTED[key] = np.result_type(*(t if isinstance(t, np.dtype) else t(0)
                                                  for t in types))
    if dtype.kind not in "fc":
        return _computed(fn, operands)
    return Outline(_broadcast(shapes), dtype)


def _common_outline(operands, numbers: bool = True):
    """The outline of an elementwise operation on `operands` where they are inexact arrays
    (or outlines) of one shape and dtype and, if `numbers`, Python numbers, which take
    their precision: that shape and dtype. None for any other operands."""
    shape = dtype = None
    for operand in operands:
        kind = type(operand)
        if kind is np.ndarray or kind is Outline:
            if dtype is None:
                shape, dtype = operand.shape, operand.dtype
            elif operand.dtype != dtype or operand.shape != shape:
                return None
        elif not numbers or kind is not float and kind is not int:
            return None
    if dtype is None or dtype.kind not in "fc":
        return None
    return Outline(shape, dtype)


def joint_outline(fn, *leaves):
    """The outline of a chain of outlined operations that `fn` ends (transform/outline.py
    joins such chains), each on at least one of `leaves` or an earlier step and on real
    Python numbers, where the leaves are inexact arrays or outlines of one shape and dtype:
    each step's outline is then that shape and dtype (a step on numbers alone would follow
    Python's arithmetic), and a sum or mean over all axes that dtype's number. None in any
    other case, where the caller outlines the chain step by step."""
    common = _common_outline(leaves, numbers=False)
    if common is not None and (fn is np.sum or fn is np.mean):
        return Outline((), common.dtype)
    return common


_PROMOTED = {}  # the operands' dtypes and Python number types → the result's dtype
_PYTHON_NUMBERS = (bool, int, float, complex)  # (bool first: it is an int)


def shape(value) -> tuple:
    """np.shape, without its dispatch where the value is an array or an outline (helpers
    that run per operation read shapes this way)."""
    kind = type(value)
    return value.shape if kind is np.ndarray or kind is Outline else np.shape(value)


def _computed(fn, operands):
    outlined = [o for o in operands if type(o) is Outline]
    if outlined:
        other = next(o for o in operands if type(o) is not Outline)
        raise SrcadError(
            f"`srcad.grad` runs a program that knows only the shape and dtype of a value it "
            f"does not need ({outlined[0]!r}), and here that value meets {other!r}, which "
            f"NumPy combines with it only by its elements ({fn!r}).",
            fix="call `srcad.value_and_grad(f)(...)[1]`, which computes every value, or "
            "convert that operand to a float array.")
    return fn(*operands)


def reduction_outline(fn, a):
    """The outline of `np.sum(a)` or `np.mean(a)` over all axes: a number of `a`'s inexact
    dtype (an integer array's sum is computed: its dtype is the platform's integer)."""
    if type(a) is Outline or getattr(getattr(a, "dtype", None), "kind", "") in ("f", "c"):
        return Outline((), a.dtype)
    return fn(a)


def _broadcast(shapes: list) -> tuple:
    """np.broadcast_shapes, fast where the arrays' shapes are equal (a number has none)."""
    if len(shapes) == 1:
        return shapes[0]
    for shape in shapes:
        if shape != shapes[0]:
            return np.broadcast_shapes(*shapes)
    return shapes[0] if shapes else ()


OUTLINED_OPERATORS = {"Add": operator.add, "Sub": operator.sub, "Mult": operator.mul,
                      "Div": operator.truediv, "Pow": operator.pow, "USub": operator.neg,
                      "UAdd": operator.pos}

