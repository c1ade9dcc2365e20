"""effects: a call made for its effect that is passed a differentiated value (`validate(x)`,
`rng.shuffle(y)`, `log.append(...)` through a helper), which generated code runs through
`effect_unchanged` (transform/refusals.py).

What it returns is dropped, so it matters only where it writes: a Python function is
followed (srcad transforms it like any callee: a write into what it was passed, an
attribute or a global list meets srcad's own checks there); anything else runs as written,
refused afterwards if it wrote a float into an array, list, dict or object it was passed
(its receiver included), and refused before if it is passed something srcad cannot look
into.
"""
from __future__ import annotations

import linecache
import types

from srcad.errors import Location, UnsoundAliasingError
from srcad.kernels.adjoints import holds_floats
from srcad.kernels.snapshots import inspectable, snapshot
from srcad.ops.callables import unwrapped
from srcad.ops.registry import nondifferentiable
from srcad.runtime.calls import call_vjp


def effect_unchanged(fn, where: tuple, /, *args, **kwargs) -> None:
    """`fn(*args, **kwargs)` made for its effect (`where`: the call's text, file, line,
    column and function); see the module docstring."""
    function = unwrapped(fn)
    if isinstance(getattr(function, "__func__", function), types.FunctionType):
        active = tuple(k for k, a in enumerate(args) if holds_floats(a)) + tuple(
            k for k, v in kwargs.items() if holds_floats(v))
        call_vjp(fn, active, *args, **kwargs)
        return
    receiver = getattr(fn, "__self__", None)
    watched = [*args, *kwargs.values(), *([receiver] if receiver is not None else [])]
    opaque = next((v for v in watched if not inspectable(v)), None)
    if opaque is not None:
        _refuse(where, f"it is passed a {type(opaque).__name__}, which srcad cannot look into "
                       "for a differentiated value written into it")
    snapshots = [snapshot(value) for value in watched]
    fn(*args, **kwargs)
    if not all(unchanged() for unchanged in snapshots):
        _refuse(where, "it wrote into a differentiated value passed to it")


nondifferentiable(effect_unchanged)  # (its own check: a program differentiated again runs it)


def _refuse(where: tuple, found: str):
    call, filename, lineno, col, function = where
    raise UnsoundAliasingError(
        f"`{call}(...)`, called for its effect in {function}: {found}, and srcad cannot "
        "follow a write made inside such a call.",
        Location(filename, lineno, col, None, function, linecache.getline(filename, lineno)),
        "assign its result instead of calling it for its effect, or pass a copy.")
