"""runtime: the helpers generated adjoint code and rules call while they run.

Generated code refers to this module and its parts: regions.py (element writes),
tangents.py (forward mode) and outlines.py (values known by their shape). Every helper is
small and fast on the common case (shapes already equal, basic indexing), because it runs
on every derivative call.
"""
from __future__ import annotations

import linecache
import math
import operator

import numpy as np

from srcad.errors import Location, MissingRuleError, SrcadError, UnsoundAliasingError
from srcad.kernels.pytrees import child_index, computed_attribute, is_record, node

_BASIC_INDEX_TYPES = (int, np.integer, slice, type(None), type(Ellipsis))
_FLOAT64 = np.dtype(np.float64)


def unbroadcast(g, x):
    """Sum `g` over the axes along which `x` was broadcast, so the result has `x`'s shape."""
    target = getattr(x, "shape", ())  # attribute reads: this runs for every binary operation
    g_shape = getattr(g, "shape", ())
    if g_shape == target:
        if not target and isinstance(g, (list, tuple)) and isinstance(x, (list, tuple)):
            _refuse_a_join()
        if type(g) is dict and is_record(x):
            _refuse_an_operator(x)
        return g
    if type(x) is not np.ndarray:
        target = np.shape(x)  # x may be a list or another array-like
    if type(g) is np.ndarray:
        total = np.add.reduce  # (np.sum of an array is np.add.reduce behind 1.5 us of dispatch)
    else:  # NumPy calls only, never np.asarray: g may be a tape-mode tensor
        g_shape, total = np.shape(g), np.sum
    axes = _SUMMED.get((g_shape, target))
    if axes is None:
        axes = _summed_axes(g_shape, target)
    leading, stretched = axes
    if leading:
        g = total(g, axis=leading)
    if stretched:
        g = total(g, axis=stretched, keepdims=True)
    return g


def summed_product(a, b, x):
    """`unbroadcast(a * b, x)` of a number `x` (`dt * f` in an ODE step gives `dt` this
    cotangent): for float64 arrays of one shape, a dot product, which makes no product
    array and reads the operands once."""
    if type(a) is np.ndarray and type(b) is np.ndarray and a.dtype is _FLOAT64 \
            and b.dtype is _FLOAT64 and a.shape == b.shape and not getattr(x, "shape", ()):
        return np.dot(a, b) if a.ndim == 1 else np.vdot(a, b)
    return unbroadcast(a * b, x)


def _summed_axes(g_shape: tuple, target: tuple) -> tuple:
    """The axes `unbroadcast` sums a cotangent of `g_shape` over to reach `target`: the
    leading ones, then those where `target` has length 1 (kept), remembered per pair."""
    leading = len(g_shape) - len(target)
    axes = (tuple(range(leading)) if leading > 0 else (),
            tuple(i for i, n in enumerate(target) if n == 1 and g_shape[leading + i] != 1))
    if len(_SUMMED) > 4096:  # (a program of ever new shapes must not grow it forever)
        _SUMMED.clear()
    _SUMMED[g_shape, target] = axes
    return axes


_SUMMED: dict = {}


def _refuse_an_operator(x):
    """An operator's derivative reached an object of the user's (its derivative a dict of its
    attributes'): the operator ran its class's method, which the derivative did not follow."""
    raise MissingRuleError(
        f"srcad cannot differentiate an operator applied to a {type(x).__name__}: it runs the "
        "class's method (`__add__`, `__mul__`...), which srcad does not follow there.",
        fix="call the method by name (`a.add(b)`), which srcad follows.")


def _refuse_a_join():
    raise MissingRuleError(
        "srcad differentiated `a + b` of two lists or tuples as a sum: it could not tell "
        "they are sequences (results of calls, or items of a list), and a join hands each "
        "item its own part of the cotangent, not all of it.",
        fix="build the sequence in the function itself (`[*a, *b]` is refused too; "
        "`list(a) + list(b)` or a display such as `[x] + [y]` is differentiated as a join).")


def dtype_of(x):
    """`x`'s dtype without converting it (a tape-mode tensor has one; a list does not)."""
    dtype = getattr(x, "dtype", None)
    if isinstance(dtype, np.dtype):
        return dtype
    return _PYTHON_DTYPES.get(type(x)) or np.asarray(x).dtype  # (np.asarray costs 0.5 us)


_PYTHON_DTYPES = {kind: np.asarray(kind()).dtype for kind in (bool, int, float, complex)}


def through_cast(x, dtype):
    """How a cast to `dtype` (an operation's `dtype=`, None for none) passes derivatives on:
    `x`, a tangent, a cotangent or a value a rule reads, as it is for no dtype or a complex
    one; its real part for a real one (NumPy drops the imaginary part of a complex value it
    casts, so a tangent loses it there, and a cotangent, real on the real side, reaches the
    complex side without one); zeros for an integer or boolean one, which rounds: it has no
    derivative."""
    if dtype is None:
        return x
    kind = np.dtype(dtype).kind
    if kind == "c":
        return x
    if kind == "f":
        return np.real(x)
    precision = np.promote_types(dtype_of(x), np.float16)  # (x's floating precision, real)
    return np.zeros(np.shape(x), np.finfo(precision).dtype)


def _keeps(dtype: np.dtype, other: np.dtype) -> bool:
    """Whether `dtype` with `other` promotes to `dtype` (the same dtype first: it is)."""
    return other is dtype or np.promote_types(dtype, other) == dtype


def reduced_axes(axis, ndim: int) -> tuple:
    """`axis` as a sorted tuple of non-negative axes (`None` means all of them)."""
    if axis is None or ndim == 0:  # (NumPy takes axis 0 or -1 of a 0-d array: there are none)
        return tuple(range(ndim))
    axes = axis if isinstance(axis, tuple) else (axis,)
    return tuple(sorted(a % ndim for a in axes))


def expand_reduced(g, x, axis=None, keepdims=False):
    """Spread the cotangent of a reduction over `x` back to `x`'s shape."""
    shape = np.shape(x)
    g = kept_axes(g, shape, axis, keepdims)
    dtype = np.promote_types(dtype_of(g), np.float16)
    if is_plain(g):
        return np.full(shape, g, dtype)  # one pass over memory, where `zeros + g` takes two
    # `zeros + g`, not `np.full(shape, g)` or `spread[...] = g`, which convert g to a plain
    # array: a tape-mode tensor must stay one, so that a nested tape records this
    return np.zeros(shape, dtype) + g


def kept_axes(g, shape, axis=None, keepdims=False):
    """The cotangent `g` of a reduction over `axis` of an array of `shape`, with the reduced
    axes back as length 1 (as `keepdims=True` leaves them): it broadcasts against `shape`."""
    if axis is None or keepdims:
        return g
    reduced = reduced_axes(axis, len(shape))
    return np.reshape(g, tuple(1 if i in reduced else n for i, n in enumerate(shape)))


def holds_floats(value, _seen=None) -> bool:
    """Whether `value` (or an item of a tuple or list, a value of a dict, an attribute of a
    record) holds inexact numbers, which carry derivatives (an integer, an index or an
    axis, does not)."""
    if isinstance(value, (tuple, list)):
        return any(holds_floats(v, _seen) for v in value)
    if isinstance(value, dict):
        return any(holds_floats(v, _seen) for v in value.values())
    if is_record(value):  # (records may hold each other, or themselves)
        _seen = set() if _seen is None else _seen
        if id(value) in _seen:
            return False
        _seen.add(id(value))
        return any(holds_floats(v, _seen) for v in vars(value).values())
    kind = getattr(getattr(value, "dtype", None), "kind", None)
    return kind in ("f", "c") or isinstance(value, (float, complex))


def is_plain(value) -> bool:
    """A NumPy array or number, not a tape-mode tensor (which must stay one to be recorded)."""
    return type(value) is np.ndarray or type(value) in (float, int) \
        or isinstance(value, np.generic)


def reduced_size(x, axis=None) -> int:
    """How many elements of `x` a reduction over `axis` combines into one."""
    shape = np.shape(x)
    return math.prod(shape[a] for a in reduced_axes(axis, len(shape)))


def index_adjoint(g, x, index):
    """Cotangent of `x[index]`: `g` scattered into zeros of `x`'s shape (repeats add up).

    For a tuple, list or dict `x`, the same kind of container with None (zero) for the
    elements not indexed."""
    if type(x) is np.ndarray and type(index) is slice and is_plain(g):  # `x[a:b]`, the common
        dtype, g_dtype = x.dtype, dtype_of(g)                           # case, one call deep
        if g_dtype is not dtype:  # (NumPy's own dtypes are singletons: float64 is float64)
            dtype = np.promote_types(dtype, g_dtype)
        result = np.zeros(x.shape, dtype)  # (faster than zeroing only the rest, and than
        result[index] = g                  # np.zeros_like, at 10 elements and at 10^4)
        return result
    if isinstance(x, (tuple, list)):
        result = [None] * len(x)
        if isinstance(index, slice):
            for position, part in zip(range(len(x))[index], g):
                result[position] = part
        else:
            result[index] = g
        return tuple(result)
    if isinstance(x, dict):
        return {key: g if key == index else None for key in x}
    dtype = np.promote_types(dtype_of(x), dtype_of(g))
    if is_plain(g):  # (np.zeros is 2-3x faster than np.zeros_like on 10^4 elements)
        result = np.zeros(np.shape(x), dtype)
    else:  # zeros_like of a tape-mode tensor is one, so `result[index] = g` records
        result = np.zeros_like(g, shape=np.shape(x), dtype=dtype)
    if _is_basic(index) or _is_boolean_mask(index):
        result[index] = g
    else:
        np.add.at(result, index, g)
    return result


def _is_basic(index) -> bool:
    """Whether `index` selects each element at most once, as a view (a slice first: the
    common case, and the generator below costs a microsecond)."""
    if type(index) is slice or type(index) is int:
        return True
    parts = index if isinstance(index, tuple) else (index,)
    return all(isinstance(p, _BASIC_INDEX_TYPES) for p in parts)


def _is_boolean_mask(index) -> bool:
    return isinstance(index, np.ndarray) and index.dtype == np.bool_


# ---- writing into an adjoint the backward sweep owns -----------------------------------------
# Generated code calls these only on an adjoint whose array it made itself and handed to no
# one (OWNED in transform/adjoints.py), either to add into it or, at its last read, to
# compute the next cotangent in its memory (transform/reuse.py), so writing into it changes
# no other value. Each falls back to a new array where writing in place would give another
# shape or dtype than the plain operator, or where a value is a tape-mode tensor (which must
# record the operation): a fresh array costs page faults on every call, where the reused one
# is already mapped.

def _written_into(name: str, ufunc, plain):
    """The helper `name(total, other)`: `plain(total, other)`, written into `total` where
    that gives the same array (one call deep, its common case first: it runs per operation
    of a backward sweep, on arrays as small as a 4-vector)."""
    def written_into(total, other):
        if type(total) is np.ndarray and total.size >= _SMALL and total.dtype.kind in "fc":
            kind = type(other)
            if kind is float or kind is int or kind is total.dtype.type or (
                    kind is np.ndarray and other.dtype == total.dtype
                    and other.shape == total.shape):  # (a NumPy number of total's dtype too)
                return ufunc(total, other, total)  # (`out` by position: the fastest call)
            if (kind is np.ndarray or isinstance(other, np.generic)) \
                    and _broadcasts_into(other.shape, total.shape) \
                    and _keeps(total.dtype, other.dtype):
                return ufunc(total, other, total)
        return plain(total, other)
    written_into.__name__ = written_into.__qualname__ = name
    written_into.__doc__ = f"`{plain.__name__}(total, other)`, written into `total`."
    return written_into


# Below a kilobyte NumPy recycles array buffers itself, and the checks that writing in place
# is sound cost more than the new array (a 4-vector's product: 0.33 us, checked: 0.75 us).
_SMALL = 128


def _broadcasts_into(shape: tuple, target: tuple) -> bool:
    """Whether an operand of `shape` broadcasts against `target` without enlarging it."""
    return shape == target or len(shape) <= len(target) and all(
        n in (1, m) for n, m in zip(shape[::-1], target[::-1]))


def _added(total, other):
    """`total + other`, item by item for container adjoints (`+` would join them)."""
    if isinstance(total, (tuple, list, dict)):
        return accumulate(total, other)
    return total + other


add_into = _written_into("add_into", np.add, _added)
subtract_into = _written_into("subtract_into", np.subtract, operator.sub)
multiply_into = _written_into("multiply_into", np.multiply, operator.mul)
divide_into = _written_into("divide_into", np.true_divide, operator.truediv)


def negative_into(total):
    """`-total`, in place."""
    if type(total) is np.ndarray and total.size >= _SMALL and total.dtype.kind in "fc":
        return np.negative(total, out=total)
    return -total


def add_at(total, g, x, index):
    """`total + index_adjoint(g, x, index)`, in place: adds `g` into `total[index]` without
    a zero array of `x`'s shape."""
    if type(total) is np.ndarray and type(x) is np.ndarray and total.shape == x.shape:
        dtype, kind = total.dtype, type(g)
        if kind is np.ndarray and g.dtype is dtype and x.dtype is dtype:  # the common case
            if type(index) is slice:
                region = total[index]  # (a view: added into, not read and written back)
                region += g
                return total
            if type(index) is int:
                total[index] += g
                return total
        if (kind is np.float64 or kind is float) and type(index) is int \
                and dtype is _FLOAT64 and x.dtype is dtype:  # an element's, in a loop of numbers
            total[index] += g
            return total
        if is_plain(g) and _keeps(dtype, x.dtype) and _keeps(dtype, dtype_of(g)):
            if _is_basic(index) or _is_boolean_mask(index):
                total[index] += g  # each element once
            else:
                np.add.at(total, index, g)  # repeated indices add up
            return total
    if isinstance(total, (tuple, list, dict)):  # (a container adjoint adds item by item)
        return accumulate(total, index_adjoint(g, x, index))
    return total + index_adjoint(g, x, index)


def add_spread(total, g, x, axis=None, keepdims=False):
    """`total + expand_reduced(g, x, axis, keepdims)`, in place: `g` is broadcast, not
    spread into an array of its own."""
    if type(total) is np.ndarray and total.shape == np.shape(x) and is_plain(g) \
            and np.promote_types(np.promote_types(total.dtype, dtype_of(g)), np.float16) \
            == total.dtype:
        total += kept_axes(g, total.shape, axis, keepdims)
        return total
    return total + expand_reduced(g, x, axis, keepdims)


class Underivable:
    """The derivative of an argument srcad cannot differentiate in (a Bessel function's
    order), as a rule gives it: harmless where it reaches only constants (the order kept in a
    list beside a differentiated value, whose adjoint is the list's), and the rule's error
    wherever it is used: converted, passed to NumPy or handed back as a derivative. Sums and
    scalings of it are it (the chain rule through them is as undefined)."""

    def __init__(self, error: SrcadError):
        self.error = error

    def raised(self, *args, **kwargs):
        raise type(self.error)(self.error.message, self.error.location, self.error.fix)

    def absorbed(self, *args):
        return self

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method == "__call__" and ufunc in _LINEAR_UFUNCS:
            return self
        self.raised()

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = \
        __rtruediv__ = __neg__ = absorbed
    __array__ = __float__ = __complex__ = __getitem__ = __iter__ = __matmul__ = \
        __rmatmul__ = __pow__ = raised


_LINEAR_UFUNCS = (np.add, np.subtract, np.multiply, np.true_divide, np.negative)


# ---- adjoints of lists and tuples, element by element -------------------------------------------
class OwnedList(list):
    """The adjoint of a list or tuple that the runtime made and handed to no one else: the
    helpers below write into it. A loop over a list of n items reads, drops or adds one
    element's cotangent per iteration; doing so on a new tuple each time made the backward
    sweep of a list comprehension quadratic in n. (Generated code passes an adjoint on and
    never reads it again, as for OWNED arrays in transform/adjoints.py.)"""


def accumulate_at(total, g, x, index):
    """`accumulate(total, index_adjoint(g, x, index))`, written into `total` when `x` is a
    list or tuple (copied into an OwnedList first unless it is one)."""
    if not isinstance(x, (tuple, list)):
        return accumulate(total, index_adjoint(g, x, index))
    if type(total) is not OwnedList:
        total = OwnedList([None] * len(x) if total is None else total)
    if isinstance(index, slice):
        for position, part in zip(range(len(x))[index], g):
            total[position] = accumulate(total[position], part)
    else:
        total[index] = accumulate(total[index], g)
    return total


def without_last(g):
    """The adjoint of a list before its last `append`: `g[:-1]`, dropped in place."""
    if type(g) is OwnedList:
        g.pop()
        return g
    return OwnedList(g[:-1])


def unpacked_adjoint(parts: tuple, value):
    """The adjoint `a, b = value` gives `value`: its items', as a tuple, but for an array
    (its rows unpacked) an array of them, zeros for None, as its other readers give."""
    if type(value) is not np.ndarray or all(part is None for part in parts):
        return parts if type(value) is not np.ndarray else None
    return np.stack([np.zeros(row.shape, np.promote_types(row.dtype, np.float16))
                     if part is None else part for part, row in zip(parts, value)])


def accumulate(total, extra):
    """`total + extra` for adjoints of tuples, lists and dicts, element by element.

    `None` is the zero of an element nobody contributed to."""
    if total is None:
        return extra
    if extra is None:
        return total
    if isinstance(total, list):  # (a list's tangent may be appended to)
        return [accumulate(a, b) for a, b in zip(total, extra)]
    if isinstance(total, tuple):
        return tuple(accumulate(a, b) for a, b in zip(total, extra))
    if isinstance(total, dict):  # (a record's adjoint holds the attributes reached so far)
        return {key: accumulate(total.get(key), extra.get(key)) for key in {**total, **extra}}
    return total + extra


def log_or_zero(x):
    """`log(x)`, and 0 where `x` is 0 (where `0 ** y` has no `y`-derivative worth keeping),
    in `x`'s own precision: a Python float stays a Python float."""
    if type(x) is float or type(x) is int:  # (an np.float64 goes to NumPy: nan, not raise)
        return math.log(x) if x > 0 else 0.0 if x == 0 else float(np.log(x))
    return np.log(np.where(x == 0, 1, x))


def inverse_permutation(axes):
    """The axes that undo `np.transpose(x, axes)`; `None` (reverse all) undoes itself."""
    if axes is None:
        return None
    return tuple(np.argsort([axis % len(axes) for axis in axes]))


def unravel(g, x, order="C"):
    """The cotangent of `np.ravel(x, order)`: `g` back in `x`'s shape, in the same order
    ("K" and "A" follow `x`'s memory layout, as `np.ravel` does)."""
    if order not in ("A", "K"):
        return np.reshape(g, np.shape(x), order=order)
    x = np.asarray(x)  # x's memory layout decides the order: needs the array itself
    if order == "A":
        order = "F" if x.flags.f_contiguous and not x.flags.c_contiguous else "C"
    if order != "K":
        return np.reshape(g, x.shape, order=order)
    positions = np.empty_like(x, dtype=np.intp)  # same memory layout as x
    positions[...] = np.arange(x.size).reshape(x.shape)
    result = np.empty(x.size, dtype=np.result_type(g))
    result[np.ravel(positions, order="K")] = np.ravel(g)
    return result.reshape(x.shape)


class Shape(tuple):
    """The shape of a value, recorded in its place when the backward sweep reads nothing
    else of it (`unbroadcast(g, x)` needs only `x.shape`): keeps no array alive."""

    @property
    def shape(self):
        return tuple(self)


class RealShape(Shape):
    """The Shape of a real floating array: a complex value written into it is cast to its
    real part (`region_adjoint` drops the imaginary part of that value's cotangent)."""


def field(value, name: str):
    """`value.name`, an attribute of a local value that is not an array's (a named tuple's
    field: `np.linalg.eigh(a).eigenvalues`); its rules see the field by name."""
    return getattr(value, name)


def held_attribute(obj, name: str, where: tuple):
    """`obj.name`, read to update it in place and store it back (`obj.name += v`,
    `obj.name.append(v)`: compiler/frontend/normalize.py), where `obj` is a record: refused
    where `obj` also holds that value otherwise (another attribute, an item of one), which
    the update would change behind the derivative's back. (Another name that may show it
    is the aliasing analysis's to refuse.)"""
    value = getattr(obj, name)
    if _rebound(value):
        return value
    if name not in vars(obj):
        _refuse_held(where, "its class holds it, for every instance")
    return _held_once(value, [held for key, held in vars(obj).items() if key != name], where)


def held_item(container, key, where: tuple):
    """`container[key]` of a list or dict, read to be updated in place and stored back
    (`d[k] += v`): refused, as `held_attribute`, where the container holds it otherwise."""
    value = container[key]
    if _rebound(value):
        return value
    items = container.values() if isinstance(container, dict) else container
    return _held_once(value, [item for item in items if item is not value]
                      + [item for item in items if item is value][1:], where)


def _rebound(value) -> bool:
    """Whether `value += v` rebinds the name rather than change `value` in place."""
    return isinstance(value, (int, float, complex, str, bytes, tuple, type(None)))


def _held_once(value, others: list, where: tuple):
    """`value`, refused where one of `others` (what else its owner holds) holds it too."""
    if any(_holds(other, value) for other in others):
        _refuse_held(where, f"`{where[0].partition('.')[0].partition('[')[0]}` also holds it "
                     "elsewhere (or a view of it)")
    return value


def _refuse_held(where: tuple, found: str):
    text, filename, lineno, col, function = where
    path = text.partition(" ")[0]
    raise UnsoundAliasingError(
        f"srcad cannot differentiate this update of `{path}` soundly: it changes a value in "
        f"place, and {found} (in {function}).",
        Location(filename, lineno, col, None, function, linecache.getline(filename, lineno)),
        f"assign a new value instead (`{path} = {path} + ...`, `{path} = {path} + [v]`).")


def held_tangent(t, obj, name: str):
    """The tangent of `held_attribute(obj, name, where)`: `record_tangent`'s, a name of its
    own so that the aliasing analysis knows the tangent is stored back too."""
    return record_tangent(t, obj, name)


def record_tangent(t, record, name: str):
    """The tangent of the record's attribute `record.name` from the record's, a dict by
    attribute name: zero where it holds none (a list's, Nones, to append to)."""
    _refuse_computed(record, name)
    part = None if t is None else t.get(name)
    if part is not None:
        return part
    held = getattr(record, name)
    if type(held) in (list, dict):
        return [None] * len(held) if type(held) is list else dict.fromkeys(held)
    shape = np.shape(held)
    return np.zeros(shape) if shape else 0.0


def _refuse_computed(record, name: str) -> None:
    if computed_attribute(record, name):
        raise MissingRuleError(
            f"srcad cannot differentiate through `.{name}` of a {type(record).__name__}: it "
            "is a property, computed by code of its class that a read does not follow.",
            fix=f"compute it in the function from the attributes it reads, or make `{name}` "
            "a method and call it.")


def _holds(container, value) -> bool:
    """Whether `container` is `value` (or shares an array's memory) or holds it in a list,
    tuple or dict, at any depth."""
    if container is value or type(container) is np.ndarray and type(value) is np.ndarray \
            and np.may_share_memory(container, value):
        return True
    if isinstance(container, dict):
        container = container.values()
    elif not isinstance(container, (list, tuple)):
        return False
    return any(_holds(item, value) for item in container)


def field_index(value, name: str) -> int | None:
    """Where the field `name` sits in the named tuple or node (kernels/pytrees.py) `value`,
    whose adjoint and tangent are tuples; None for a node's constant field."""
    fields = getattr(type(value), "_fields", None)
    if fields is not None and name in fields:
        return fields.index(name)
    if not isinstance(value, tuple) and node(value) is not None:
        return child_index(value, name)
    raise MissingRuleError(
        f"srcad cannot differentiate through the attribute `.{name}` of a "
        f"{type(value).__name__}: only the fields of named tuples, dataclasses and classes "
        "registered with `srcad.register_pytree_node` carry derivatives.",
        fix="pass the value itself, or index a tuple, or register the class with "
        "`srcad.register_pytree_node`.")


def field_adjoint(g, value, name: str) -> tuple | dict | None:
    """The adjoint of a named tuple or node whose field `name` has the adjoint `g`; of a
    record (kernels/pytrees.py), a dict of its attributes' adjoints; None for another object
    (one that rides in a tuple with differentiated values, as a method's receiver in
    `args`): srcad sees no derivative in its attributes (one made from differentiated values
    is refused where it is made)."""
    if is_record(value):
        _refuse_computed(value, name)
        return {name: g}
    if isinstance(value, tuple):
        size = len(value)
    elif (parts := node(value)) is not None:
        size = len(parts[0])
    else:
        return None
    index = field_index(value, name)
    if index is None:
        return None
    adjoint = [None] * size
    adjoint[index] = g
    return tuple(adjoint)


def field_tangent(t, value, name: str):
    """The tangent of `value.name` from `value`'s tangent `t` (a tuple or an instance of
    `value`'s class); a zero for a node's constant field."""
    if is_record(value):
        return record_tangent(t, value, name)
    index = field_index(value, name)
    if index is None:
        shape = np.shape(getattr(value, name))
        return np.zeros(shape) if shape else 0.0
    return t[index] if isinstance(t, tuple) else node(t)[0][index]


def shape_of(x):
    """`x`'s Shape; a number, which holds no array worth freeing, stays itself (cheaper), and
    so does an array of integers or booleans (its dtype tells `region_adjoint` that what is
    written into it has no derivative), and a list or tuple (`unbroadcast` refuses to sum
    a join of two)."""
    if type(x) is np.ndarray:
        kind = x.dtype.kind
        return RealShape(x.shape) if kind == "f" else Shape(x.shape) if kind == "c" else x
    if isinstance(x, (float, int, np.generic, list, tuple)):
        return x
    return Shape(np.shape(x))
