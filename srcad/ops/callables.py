"""callables: the function behind a callable object, as srcad reads and differentiates it.

A decorated function (`functools.wraps`) stands for the function it wraps, and an object
whose class defines `__call__` in Python (a layer, a model) for that method bound to it.
Source mode parses what `unwrapped` gives, tape mode and the runtime call it.
"""
from __future__ import annotations

import inspect
import types


def unwrapped(fn):
    """`inspect.unwrap(fn)`, but a bound method of a decorated function (`functools.wraps`)
    stays bound: unwrapping the method itself reads `__wrapped__` through it and finds the
    plain function, without the receiver it must be called with. An object whose class
    defines `__call__` in Python (a layer, a model) is that bound method."""
    if call_method_of(fn) is not None:
        fn = fn.__call__
    if isinstance(fn, types.MethodType):
        function = inspect.unwrap(fn.__func__)
        return fn if function is fn.__func__ else types.MethodType(function, fn.__self__)
    return inspect.unwrap(fn)


def call_method_of(fn):
    """The `__call__` function of `fn`'s class, for an object whose class defines it in
    Python (not srcad's own derivative and rule objects); None for anything else."""
    if isinstance(fn, (types.FunctionType, types.MethodType, type)) or \
            type(fn).__module__.startswith("srcad."):
        return None
    call = getattr(type(fn), "__call__", None)
    return call if isinstance(call, types.FunctionType) else None
