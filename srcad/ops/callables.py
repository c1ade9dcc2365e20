"""callables: the function behind a callable object, as srcad reads and differentiates it.

A decorated function (`functools.wraps`) stands for the function it wraps, and an object
whose class defines `__call__` in Python (a layer, a model) for that method bound to it.
Source mode parses what `unwrapped` gives, tape mode and the runtime call it.
"""
from __future__ import annotations

import inspect
import types


def unwrapped(fn):
    """The Python function `fn` runs: `fn` itself when it is one, else what its
    `__wrapped__` chain leads to (`functools.lru_cache`, `functools.wraps` of an object),
    stopping at the first Python function. A decorator's wrapper is what runs, and it may
    change the value (`2 * f(x)`): it is transformed as written, never skipped for the
    function it wraps. A bound method stays bound; an object whose class defines
    `__call__` in Python (a layer, a model) is that bound method."""
    if call_method_of(fn) is not None:
        fn = fn.__call__
    if isinstance(fn, types.MethodType):
        function = inspect.unwrap(fn.__func__, stop=_runs_itself)
        return fn if function is fn.__func__ else types.MethodType(function, fn.__self__)
    return inspect.unwrap(fn, stop=_runs_itself)


def _runs_itself(fn) -> bool:
    return isinstance(fn, types.FunctionType)


def call_method_of(fn):
    """The `__call__` function of `fn`'s class, for an object whose class defines it in
    Python (not srcad's own derivative and rule objects); None for anything else."""
    if isinstance(fn, (types.FunctionType, types.MethodType, type)) or \
            type(fn).__module__.startswith("srcad."):
        return None
    call = getattr(type(fn), "__call__", None)
    return call if isinstance(call, types.FunctionType) else None
