"""regions: the helpers generated code calls for element writes, `y[index] = v`.

The forward sweep saves the region a write overwrites (`saved_region`); the backward sweep
hands the region's cotangent to `v` (`region_adjoint`) and then zeroes it in `y`'s adjoint
(`cleared_region` in an adjoint it owns, `without_region` in a copy), since the values
overwritten contributed nothing to the output.
"""
from __future__ import annotations

import numpy as np

from srcad.errors import MissingRuleError, SrcadError
from srcad.kernels.adjoints import OwnedList, RealShape, dtype_of, unbroadcast


def saved_region(y, index):
    """A copy of `y[index]`, the values `y[index] = v` is about to overwrite (a key a dict
    does not hold yet: `NEW_KEY`, which the backward sweep puts back in its place)."""
    if type(y) is dict and index not in y:
        return NEW_KEY
    part = y[index]
    return part.copy() if isinstance(part, np.ndarray) else part


def saved_attribute(obj, name: str):
    """What the record `obj` holds as `name` before `obj.name = v` (`NEW_KEY`: nothing; of
    an object with no `__dict__` too, whose write `attribute_written` refuses next)."""
    return getattr(obj, "__dict__", {}).get(name, NEW_KEY)


def restore_attribute(obj, name: str, value) -> None:
    """Undo `obj.name = v`: put back what `saved_attribute` saved."""
    if value is NEW_KEY:
        vars(obj).pop(name, None)
    else:
        vars(obj)[name] = value


class _NewKey:
    """What a dict held under a key before `d[key] = v` added it: nothing."""

    def __repr__(self):
        return "NEW_KEY"


NEW_KEY = _NewKey()


def region_adjoint(g, index, value, target=None):
    """Cotangent of `value` in `y[index] = value`, from the cotangent `g` of `y` (`target`,
    or its shape): zero where `y` holds integers or booleans, which truncate `value`."""
    if type(g) is np.ndarray and type(index) is slice and g.dtype.kind == "f" \
            and (type(target) is np.ndarray and target.dtype.kind == "f"
                 or isinstance(target, RealShape)):  # the common case, one call deep
        return unbroadcast(g[index].copy(), value)  # (a view of g: `cleared_region` next)
    if g is None:
        return None
    if isinstance(g, dict):  # (a dict's or record's adjoint may lack a key added later)
        part = g.get(index)
        if part is None or isinstance(part, (list, tuple, dict)):  # (a container's, whole)
            return part
        return unbroadcast(part, value)
    if type(target) is np.ndarray and target.dtype.kind not in "fc":
        return unbroadcast(np.zeros(np.shape(g[index]), dtype_of(g)), value)
    if isinstance(index, (list, np.ndarray)) and np.asarray(index).dtype.kind in "iu" \
            and len(np.unique(index)) != np.size(index):
        raise SrcadError(
            "an element assignment `y[index] = v` with repeated indices keeps only the last "
            "write, so srcad cannot tell which element of `v` the result depends on.",
            fix="index each element once.")
    part = g[index]
    if part is None:  # (a list's adjoint holds None for an item nothing reached)
        return None
    if type(part) is np.ndarray and part.base is not None:
        part = part.copy()  # (a view of g, whose region `cleared_region` zeroes next)
    if isinstance(part, (list, tuple)):  # a list's items written from a list: item by item
        if len(part) != len(value):
            raise MissingRuleError(
                "srcad cannot differentiate a slice assignment that changes a list's length.",
                fix="build a new list instead (`L = L[:i] + [v] + L[j:]`).")
        return part
    if _casts_to_real(target) and dtype_of(part).kind == "c":
        part = np.real(part)  # (a complex value written into a real array: its real part)
    return unbroadcast(part, value)


def _casts_to_real(target) -> bool:
    """Whether `target` (an array or its `shape_of`) is a real floating array."""
    return isinstance(target, RealShape) or (type(target) is np.ndarray
                                             and target.dtype.kind == "f")


def owned_copy(g):
    """A copy of the adjoint `g` (None stays None) that the backward sweep owns; a list's
    or tuple's stays a list of its items' (np.copy made it an array)."""
    if g is None:
        return None
    if isinstance(g, (list, tuple)):
        return OwnedList(g)
    if isinstance(g, dict):
        return dict(g)
    return np.copy(g)  # (np.copy keeps a tape-mode tensor one)


def cleared_region(g, index):
    """`without_region(g, index)`, zeroed in place: for an adjoint the backward sweep made
    and handed to no one (OWNED in transform/adjoints.py), as a loop writing `y[i] = v`
    clears one region per iteration, where a copy of `y`'s whole adjoint each time would
    make the loop quadratic in `len(y)`."""
    if type(g) is np.ndarray and g.flags.writeable:
        g[index] = 0
        return g
    return without_region(g, index)


def without_region(g, index):
    """The cotangent of `y` before `y[index] = v`: the overwritten part contributed nothing."""
    if isinstance(g, (tuple, list)):
        cleared = g if type(g) is OwnedList else OwnedList(g)
        if isinstance(index, slice):  # (a slice of a list is assigned a list)
            cleared[index] = [None] * len(range(*index.indices(len(cleared))))
        else:
            cleared[index] = None
        return cleared
    if isinstance(g, dict):
        return {**g, index: None}
    cleared = np.copy(g)  # np.copy dispatches for tape-mode tensors; np.array(g) does not
    cleared[index] = 0
    return cleared


# ---- a list's `pop` and `insert` -----------------------------------------------------------
# The backward sweep meets a list as the update left it; each helper finds the position the
# update used from the list's length then, the way `list.pop` and `list.insert` resolve it.
def _popped_at(after: list, index: int) -> int:
    """Where `items.pop(index)` took its item from, given `items` after it."""
    return index if index >= 0 else index + len(after) + 1


def _inserted_at(after: list, index: int) -> int:
    """Where `items.insert(index, v)` put `v`, given `items` after it."""
    before = len(after) - 1
    if index < 0:
        index += before
    return min(max(index, 0), before)


def restore_popped(items: list, index: int, item) -> None:
    """Undo `item = items.pop(index)`: put it back."""
    items.insert(_popped_at(items, index), item)


def restore_inserted(items: list, index: int) -> None:
    """Undo `items.insert(index, v)`: take `v` out again."""
    del items[_inserted_at(items, index)]


def popped_adjoint(g, g_item, items: list, index: int):
    """The adjoint of `items` before `item = items.pop(index)`, from its adjoint `g` after
    and `item`'s: `g_item` goes back where the item was (None, zero, where neither has one)."""
    if g is None and g_item is None:
        return None
    whole = OwnedList([None] * len(items) if g is None else g) if type(g) is not OwnedList \
        else g
    whole.insert(_popped_at(items, index), g_item)
    return whole


def inserted_adjoint(g, items: list, index: int):
    """The cotangent of `v` in `items.insert(index, v)`, from the adjoint `g` of `items`."""
    return g[_inserted_at(items, index)]


def without_inserted(g, items: list, index: int):
    """The adjoint of `items` before `items.insert(index, v)`: `g` without `v`'s."""
    whole = g if type(g) is OwnedList else OwnedList(g)
    del whole[_inserted_at(items, index)]
    return whole


def detached(value):
    """`value` with the lists and dicts in it (nested in tuples, lists and dicts) copied: what
    a function returns, where its backward sweep will undo its updates of a list in place."""
    if isinstance(value, tuple) and type(value) is tuple:
        return tuple(detached(item) for item in value)
    if type(value) is list:
        return [detached(item) for item in value]
    if type(value) is dict:
        return {key: detached(item) for key, item in value.items()}
    return value
