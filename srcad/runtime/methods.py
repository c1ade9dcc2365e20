"""methods: what `receiver.name(*args)` in differentiated code calls.

An array's methods share the rules of the NumPy functions they stand for (`x.sum()` is
`np.sum(x)`), a dict's views run as functions with rules, a module chosen at run time
(`xp.sum(x)`) passes the call on, and a Python method is its function with the receiver
first. `active` (argument positions and keyword names) is rewritten to match.
"""
from __future__ import annotations

import inspect
import types

import numpy as np

from srcad.errors import MissingRuleError, UnsoundAliasingError, UnsupportedSyntaxError
from srcad.kernels.pytrees import is_record
from srcad.ops.registry import method_function, nondifferentiable
from srcad.ops.numpy_arrays import flattened
from srcad.ops.numpy_dtypes import converted
from srcad.ops.python_builtins import dict_get, dict_items, dict_keys, dict_values
from srcad.runtime.hooks import ABOVE

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
    module, an object whose static method is called) is active but is not passed on."""
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
    if isinstance(method, types.FunctionType):  # a static method: no receiver passed
        return method, shifted(tuple(a for a in active if a != 0), -1), args, 0 in active
    if 0 in active:
        raise MissingRuleError(
            f"srcad cannot differentiate the method `{name}` of a {type(receiver).__name__}.",
            fix="call the NumPy function instead (`np.sum(x)` for `x.sum()`), or register a "
            "rule with `srcad.defvjp`.")
    return method, shifted(active, -1), args, False


def method_update(receiver, name, /, *args, **kwargs):
    """`receiver.name(*args, **kwargs)` on a record the differentiated function holds
    (compiler/frontend/normalize.py writes the call so, with `receiver` bound to what this
    returns after it; `name` is `(cls, name)` for `super(cls, receiver).name(...)`):
    `(value, receiver after the call)`, made by the method's functional variant, which
    updates a copy of the receiver; srcad differentiates this function by its source like
    a user's."""
    return record_method(receiver, name)(receiver, *args, **kwargs)


def record_method(receiver, name):
    """The functional variant (compiler/frontend/functional.py) of the Python function
    `receiver.name` calls (for `name = (cls, name)`, `super(cls, receiver).name`), for a
    record `receiver`; refused for anything else, whose update in place srcad could not
    follow."""
    after, name = name if isinstance(name, tuple) else (None, name)
    classes = type(receiver).__mro__
    if after is not None:
        classes = classes[classes.index(after) + 1:]
    function = next((vars(c)[name] for c in classes if name in vars(c)), None)
    if name in vars(receiver) or not is_record(receiver) \
            or not isinstance(function, types.FunctionType):
        raise UnsupportedSyntaxError(
            f"srcad cannot differentiate `.{name}(...)` called for its effect on a "
            f"{type(receiver).__name__}: srcad follows such calls where the value is an "
            "instance of a plain class and the method a Python function of its class.",
            fix="build a new value and assign it instead (`xs = sorted(xs)`, `y = y + v`).")
    refuse_argument_updates(function, f"`.{name}(...)` of a {type(receiver).__name__}")
    return ABOVE.method_variant(function)


def refuse_argument_updates(function, what: str) -> None:
    """Refuse a method or `__init__` of a record that writes into an argument besides its
    object: srcad runs it on a copy of the object and could not follow that write."""
    first, *others = inspect.signature(function).parameters
    written = [p for p in ABOVE.arguments_written(function) if p in others]
    if written:
        raise UnsoundAliasingError(
            f"srcad cannot differentiate {what}: `{function.__qualname__}` writes into its "
            f"argument `{written[0]}` in place, a write the caller's derivative would not "
            "see.", fix=f"return the new value instead and assign it where {what} is called.")


nondifferentiable(record_method, refuse_argument_updates)


def record_call(value):
    """The Python function `value(...)` calls, for a record whose class defines `__call__`
    so (a layer, a model); else None."""
    function = inspect.getattr_static(type(value), "__call__", None)
    return function if isinstance(function, types.FunctionType) and is_record(value) else None


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
