"""methods: what `receiver.name(*args)` in differentiated code calls.

An array's methods share the rules of the NumPy functions they stand for (`x.sum()` is
`np.sum(x)`), a dict's views run as functions with rules, a module chosen at run time
(`xp.sum(x)`) passes the call on, and a Python method is its function with the receiver
first. `active` (argument positions and keyword names) is rewritten to match.
"""
from __future__ import annotations

import types

import numpy as np

from srcad.errors import MissingRuleError
from srcad.ops.registry import method_function
from srcad.ops.numpy_arrays import flattened
from srcad.ops.numpy_dtypes import converted
from srcad.ops.python_builtins import dict_get, dict_items, dict_keys, dict_values

# The functions source mode calls in place of the methods of a value that surely is an array
# or a NumPy number (analysis/arrays.py), where they are not what the method calls when it
# runs (the records' `methods`): `astype` and `flatten` by srcad's functions of them (which
# give the same result for either), `item` by none
_STATICALLY = {"astype": converted, "flatten": flattened, "item": None}
# a NumPy number's own methods, where NumPy's function would make it an array
_NUMBER_METHODS = {"astype": np.generic.astype, "item": np.generic.item}
SHAPE_METHODS = {"reshape", "transpose"}  # x.reshape(2, 3) means np.reshape(x, (2, 3))
# a dict's views, run as functions with rules (a list of the items, the values; the keys)
DICT_METHODS = {"items": dict_items, "values": dict_values, "keys": dict_keys, "get": dict_get}


def method_callee(receiver, name: str, active: tuple, args: tuple):
    """What `receiver.name(*args)` calls, as `(callee, active, args, receiver_dropped)`:
    `active` and `args` rewritten for the callee; `receiver_dropped` when the receiver (a
    module) is active but is not passed on."""
    function = method_function(name)
    if isinstance(receiver, (np.ndarray, np.generic)) and function is not None:
        if packs_shape(receiver, name, args):
            if any(a not in (0,) for a in active):
                raise MissingRuleError(f"srcad cannot differentiate `.{name}` with respect to "
                                       "its shape arguments.")
            args = (args,)
        callee = function if isinstance(receiver, np.ndarray) \
            else _NUMBER_METHODS.get(name, function)
        return callee, active, (receiver, *args), False
    if isinstance(receiver, dict) and name in DICT_METHODS \
            and bool(args) == (name == "get"):  # (`get` takes a key; the views nothing)
        return DICT_METHODS[name], active, (receiver, *args), False
    if type(receiver) in (list, dict) and name == "copy" and not args:  # (a shallow copy)
        return type(receiver), active, (receiver,), False
    if isinstance(receiver, types.ModuleType):  # `xp.sum(x)` with `xp` chosen at run time
        kept = shifted(tuple(a for a in active if a != 0), -1)
        return getattr(receiver, name), kept, args, 0 in active
    method = getattr(receiver, name)
    if isinstance(method, types.MethodType) and isinstance(method.__func__, types.FunctionType):
        return method.__func__, active, (receiver, *args), False
    if 0 in active:
        raise MissingRuleError(
            f"srcad cannot differentiate the method `{name}` of a {type(receiver).__name__}.",
            fix="call the NumPy function instead (`np.sum(x)` for `x.sum()`), or register a "
            "rule with `srcad.defvjp`.")
    return method, shifted(active, -1), args, False


def static_method(name: str):
    """The function source mode calls for `x.name(...)` where `x` surely is an array or a
    NumPy number, taking the same arguments (a shape method's packed: SHAPE_METHODS), or
    None where it calls the method when it runs."""
    return _STATICALLY[name] if name in _STATICALLY else method_function(name)


def packs_shape(receiver, name: str, args: tuple) -> bool:
    """Whether `receiver.name(*args)` passes its arguments on as one shape tuple."""
    return isinstance(receiver, (np.ndarray, np.generic)) and name in SHAPE_METHODS \
        and len(args) > 1


def shifted(active, offset) -> tuple:
    """`active` for the same arguments with the positional ones moved by `offset`."""
    return tuple(a + offset if isinstance(a, int) else a for a in active)
