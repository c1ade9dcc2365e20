"""inplace: writes into tensors (`y[i] = v`, `y += v`, `np.copyto(y, v)`) with NumPy's
semantics, recorded, and views that follow them.

Copy on write. A write gives the tensor a new id (a new version: nodes that read the old
version keep naming it) and writes into its array in place only when nothing else refers to
that array, which CPython's reference count tells exactly. When a node saved the array, a
view shares it or the user holds it, the tensor gets a written copy instead. So a value a
node saved is never changed behind its back, and a loop filling a buffer that nothing reads
meanwhile writes in place at NumPy's cost. (The alternative, versioning with an error when a
saved value was overwritten, as PyTorch does, refuses programs NumPy runs fine.)

Views. `y[1:]`, `x.T`, `np.reshape(x, s)` share memory with their base in NumPy. A tensor made
that way keeps its base and the function that makes the view (`ViewFunction`), and the base
keeps weak references to its views. A write into a view writes through into the base (a
node of its own); a write into a base re-derives each live view from the new base value (the
view operation recorded again). Values therefore match NumPy's aliasing exactly, and
gradients flow through the writes. Variables have TensorFlow's value semantics instead:
`assign` replaces their array, and slices of them are never views that follow it.
"""
from __future__ import annotations

import operator
import sys
import weakref

import numpy as np

from srcad.errors import MissingRuleError
from srcad.kernels.adjoints import RealShape, unbroadcast
from srcad.kernels.regions import region_adjoint
import srcad.tape.dispatch as dispatch
from srcad.tape.errors import caller_location
from srcad.tape.state import RECORDING, new_id


class ViewFunction:
    """`fn(*args, **kwargs)` with the base put at `position` (and its item `item`, for a
    function returning several views, `np.split`): applied to a base's array it gives the
    NumPy view, applied to a base tensor it records the view operation."""

    __slots__ = ("fn", "args", "kwargs", "position", "item")

    def __init__(self, fn, args, kwargs, position, item=None):
        self.fn, self.args, self.kwargs, self.position = fn, args, kwargs, position
        self.item = item

    def __call__(self, base):
        args = list(self.args)
        args[self.position] = base
        result = self.fn(*args, **self.kwargs)
        return result if self.item is None else result[self.item]


class Alias:
    """A tensor's memory sharing: the base it views (None for an owner) and its live views."""

    __slots__ = ("base", "view_fn", "views", "prune_at")

    def __init__(self, base=None, view_fn=None):
        self.base, self.view_fn, self.views = base, view_fn, []
        self.prune_at = 8  # prune dead references when the list grows to this length


TRANSPOSE = operator.attrgetter("T")


def register_view(view, base, view_fn: ViewFunction) -> None:
    """Record that `view`'s array is `view_fn(base's array)`, memory shared."""
    view._alias = Alias(base, view_fn)
    alias = base._alias
    if alias is None:
        alias = base._alias = Alias()
    views = alias.views
    if len(views) >= alias.prune_at:  # drop views that died; amortized O(1) per view
        views[:] = [ref for ref in views if ref() is not None]
        alias.prune_at = max(8, 2 * len(views))
    views.append(weakref.ref(view))


def adopt_views(result, func, args, kwargs) -> None:
    """After `result = func(*args, **kwargs)`: make each tensor of `result` (or of the list
    or tuple it is, `np.split`'s) whose array shares memory with a plain tensor argument a
    view of it (NumPy returns views from reshape, transpose, split, and an array itself
    from np.real or np.squeeze of a real or squeezed one)."""
    if type(result) is dispatch.Tensor:
        _adopt_view(result, func, args, kwargs, None)
    elif type(result) in (list, tuple):
        for item, part in enumerate(result):
            if type(part) is dispatch.Tensor:
                _adopt_view(part, func, args, kwargs, item)


def _adopt_view(out, func, args, kwargs, item) -> None:
    array = out._value
    if type(array) is not np.ndarray or array.base is None and not any(
            type(arg) is dispatch.Tensor and arg._value is array for arg in args):
        return  # (an array of its own)
    for position, arg in enumerate(args):
        if type(arg) is dispatch.Tensor and type(arg._value) is np.ndarray \
                and np.may_share_memory(array, arg._value):
            raw_args, _ = dispatch.unwrap_arguments(args)
            raw_args[position] = None
            raw_kwargs = {k: dispatch.value_of(v) for k, v in kwargs.items()}
            register_view(out, arg, ViewFunction(func, tuple(raw_args), raw_kwargs, position,
                                                 item))
            return


# ---- copy on write -----------------------------------------------------------------------
def _references_of_an_unshared_array() -> int:
    """What `sys.getrefcount` reports inside `_writable` for an array only a tensor holds."""
    class Holder:
        __slots__ = ("_value", "_alias")

    holder = Holder()
    holder._value, holder._alias = np.zeros(1), None
    return _count_references(holder)


def _count_references(tensor):
    array = tensor._value
    return sys.getrefcount(array)


_UNSHARED = _references_of_an_unshared_array()


def _writable(tensor):
    """The array a write into `tensor` goes to: its own, or a copy if anything else may
    read the old contents (a node, a view, the user) or it is memory of another array."""
    array = tensor._value
    if type(array) is not np.ndarray:
        raise TypeError(f"'{type(array).__name__}' object does not support item assignment")
    if not array.flags.writeable:
        raise ValueError("assignment destination is read-only")
    if array.base is not None or sys.getrefcount(array) > _UNSHARED or \
            (tensor._alias is not None and tensor._alias.base is not None):
        return array.copy(order="K")
    return array


# ---- writes ------------------------------------------------------------------------------
def _cleared_rule(g, ans, y, index, value):
    """Cotangent of `y` before `y[index] = value`: the overwritten part contributed nothing.
    Written with NumPy calls that tensors dispatch, so a nested tape records it."""
    cleared = np.copy(g)
    cleared[index] = 0
    return cleared


def _region_rule(g, ans, y, index, value):
    return region_adjoint(g, index, value)


def _region_into_real_rule(g, ans, y, index, value):
    """A real array casts a complex value written into it: the cotangent's real part."""
    return region_adjoint(g, index, value, _REAL)


_REAL = RealShape(())  # (stands for the real array written into)


def _through_base_rule(g, ans, base, view_fn, value):
    cleared = np.copy(g)
    view_fn(cleared)[...] = 0
    return cleared


def _through_value_rule(g, ans, base, view_fn, value):
    return view_fn(g)


SETITEM_RULES = (_cleared_rule, None, _region_rule)
SETITEM_INTO_REAL_RULES = (_cleared_rule, None, _region_into_real_rule)
THROUGH_RULES = (_through_base_rule, None, _through_value_rule)


def assign(tensor, index, value) -> None:
    """`tensor[index] = value`, as NumPy does it, recorded as a new version of `tensor`."""
    if type(tensor) is not dispatch.Tensor:  # a Variable: it refuses, as TensorFlow's do
        tensor.__setitem__(index, value)
        return
    raw_index = dispatch.unwrap_index(index)
    if isinstance(value, dispatch.Tensor):
        raw_value, value_id = value._read() if type(value) is not dispatch.Tensor \
            else (value._value, value._id)
    else:
        raw_value, value_id = value, None
    old_id = tensor._id
    target = _writable(tensor)
    target[raw_index] = raw_value
    tensor._value = target
    tensor._id = new_id()
    tapes = RECORDING.tapes
    if tapes:
        rules = SETITEM_INTO_REAL_RULES if target.dtype.kind == "f" else SETITEM_RULES
        dispatch.record_on(tapes, (rules, (None, dispatch.kept(raw_index),
                                                   dispatch.kept(raw_value, value_id)), None,
                                   (old_id, None, value_id), tensor._id, None))
    _after_write(tensor)


def inplace_operator(op, rules, tensor, other):
    """`tensor op= other`: in place for an array (aliases see it, as in NumPy), a new tensor
    for a scalar (NumPy scalars are immutable, so `+=` rebinds)."""
    result = dispatch.binary(op, rules, tensor, other)
    old = tensor._value
    if type(old) is not np.ndarray:
        return result
    value = result._value
    if type(value) is np.ndarray and value.shape == old.shape and value.dtype == old.dtype:
        tensor._value, tensor._id = value, result._id  # the result is the new version
        _after_write(tensor)
        return tensor
    result_dtype = np.result_type(value)
    if not np.can_cast(result_dtype, old.dtype, "same_kind"):
        raise TypeError(f"Cannot cast ufunc output from {result_dtype!r} to {old.dtype!r} "
                        "with casting rule 'same_kind'")
    if np.shape(value) != old.shape and np.broadcast_shapes(np.shape(value), old.shape) \
            != old.shape:
        raise ValueError(f"non-broadcastable output operand with shape {old.shape} doesn't "
                         f"match the broadcast shape {np.shape(value)}")
    assign(tensor, Ellipsis, result)
    return tensor


def copyto(dst, src, casting="same_kind", where=True):
    """`np.copyto(dst, src)`: a write into `dst` when it is a tensor."""
    if not isinstance(dst, dispatch.Tensor):
        if isinstance(src, dispatch.Tensor) and dispatch.is_live(src):
            raise dispatch.conversion_error("np.copyto writes into a plain array")
        return np.copyto(dst, dispatch.value_of(src), casting=casting,
                         where=dispatch.value_of(where))
    if where is not True:
        raise MissingRuleError("tape mode does not record `np.copyto(..., where=mask)` into "
                               "a tensor.", caller_location(),
                               fix="write `dst[mask] = src[mask]` instead.")
    assign(dst, Ellipsis, src)
    return None


def _add_at_base_rule(g, ans, y, index, value):
    return g


def _add_at_value_rule(g, ans, y, index, value):
    return unbroadcast(g[index], value)


ADD_AT_RULES = (_add_at_base_rule, None, _add_at_value_rule)


def add_at(tensor, index, value) -> None:
    """`np.add.at(tensor, index, value)`: unbuffered `tensor[index] += value`, repeated
    indices adding up, recorded as a new version of `tensor`."""
    if type(tensor) is not dispatch.Tensor:
        tensor.__setitem__(index, value)  # a Variable refuses
    raw_index = dispatch.unwrap_index(index)
    raw_value, value_id = (value._read() if isinstance(value, dispatch.Tensor)
                           else (value, None))
    old_id = tensor._id
    target = _writable(tensor)
    np.add.at(target, raw_index, raw_value)
    tensor._value = target
    tensor._id = new_id()
    tapes = RECORDING.tapes
    if tapes:
        dispatch.record_on(tapes, (ADD_AT_RULES, (None, dispatch.kept(raw_index),
                                                  dispatch.kept(raw_value, value_id)), None,
                                   (old_id, None, value_id), tensor._id, None))
    _after_write(tensor)


def assign_out(out, result) -> None:
    """A NumPy call's `out=` argument that is a tensor: it takes the result as a write."""
    if isinstance(out, tuple):
        (out,) = out
    assign(out, Ellipsis, result)


# ---- aliasing ------------------------------------------------------------------------------
def _after_write(tensor) -> None:
    alias = tensor._alias
    if alias is None:
        return
    if alias.base is not None:
        _write_through(tensor)
    elif alias.views:
        _refresh_views(tensor)


def _write_through(view) -> None:
    """The view was written: write its new value into the base's memory it shows."""
    alias = view._alias
    base, view_fn = alias.base, alias.view_fn
    old_id = base._id
    target = _writable(base)
    region = view_fn(target)
    if not np.may_share_memory(region, target):
        raise AssertionError("internal error: a registered view no longer views its base")
    region[...] = view._value
    base._value = target
    base._id = new_id()
    tapes = RECORDING.tapes
    if tapes:
        dispatch.record_on(tapes, (THROUGH_RULES, (None, view_fn, view._value), None,
                                   (old_id, None, view._id), base._id, None))
    _after_write(base)


def _refresh_views(base) -> None:
    """The base was written: each live view becomes the view of its new value (recorded)."""
    alias = base._alias
    refs, alias.views = alias.views, []
    kept = []
    for ref in refs:
        view = ref()
        if view is None:
            continue
        kept.append(ref)
        fresh = view._alias.view_fn(base)
        view._value, view._id = fresh._value, fresh._id
        if view._alias.views:
            _refresh_views(view)
    # views of `base` made while refreshing (the `fresh` ones) are temporaries: drop them
    alias.views = kept
