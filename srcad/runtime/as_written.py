"""as_written: a function srcad cannot transform, run as written where that is exact.

Library code reached from a differentiated call is full of dispatch and validation that
srcad cannot (or need not) transform: `xp = array_namespace(x)` in SciPy holds a `try`,
argument checks return a bool, helpers compute a dtype or a shape. Such a call has no
derivative however it was computed, provided that

- what it returns holds no floats (None, numbers that are not floats, strings, modules,
  classes, dtypes, arrays of integers or bools, functions with no captured values, and
  tuples, lists and dicts of these), and
- it writes no float into anything the caller can see: the float arrays, lists and dicts
  among its arguments and its closure's values are the same afterwards (checked on a copy).

So when transforming the callee is refused, srcad runs it as written and checks both; if
either fails, the refusal stands, saying what was found. Arguments srcad cannot look into
(a user's object) keep the refusal too: a float written into one would be lost.

A call made for its effect that is passed a differentiated value (`_check_finite(x)`,
`validate(params)`) runs the same way, through `effect_unchanged`: what it returns is
dropped, so only the second check applies.
"""
from __future__ import annotations

import linecache
import types
import weakref

import numpy as np

from srcad.errors import Location, SrcadError, UnsoundAliasingError
from srcad.ops.registry import nondifferentiable

_REFUSED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # function → its refusal


def refusal_of(function) -> SrcadError | None:
    """The refusal to transform `function` found before (a syntax refusal never changes)."""
    return _REFUSED.get(function)


def remember_refusal(function, refusal: SrcadError) -> None:
    _REFUSED[function] = refusal


def run_as_constant(function, args: tuple, kwargs: dict, refusal: SrcadError):
    """`function(*args, **kwargs)` as a constant of the derivative, or `refusal` raised
    (with the reason) where that would not be exact; see the module docstring."""
    reachable = [*args, *kwargs.values(),
                 *(cell.cell_contents for cell in function.__closure__ or ()
                   if _filled(cell))]
    opaque = next((v for v in reachable if not _inspectable(v)), None)
    if opaque is not None:
        _refuse(refusal, f"a {type(opaque).__name__} it is passed, which srcad cannot look "
                         "into for floats written into it")
    snapshots = [_snapshot(value) for value in reachable]
    result = function(*args, **kwargs)
    if not _float_free(result):
        _refuse(refusal, f"its result (a {type(result).__name__}) holds floats")
    if not all(unchanged() for unchanged in snapshots):
        _refuse(refusal, "it wrote into an argument or a value it captured")
    return result


def effect_unchanged(fn, where: tuple, /, *args, **kwargs) -> None:
    """`fn(*args, **kwargs)` made for its effect, refused (`where`: the call's text, file,
    line, column and function) if it wrote into a float array, list or dict it was passed
    (a method's receiver included)."""
    receiver = getattr(fn, "__self__", None)
    watched = [*args, *kwargs.values(), *([receiver] if receiver is not None else [])]
    snapshots = [_snapshot(value) for value in watched]
    fn(*args, **kwargs)
    if not all(unchanged() for unchanged in snapshots):
        call, filename, lineno, col, function = where
        raise UnsoundAliasingError(
            f"`{call}(...)` wrote into a differentiated value passed to it (in {function}): "
            "srcad cannot follow a write made inside a call made for its effect.",
            Location(filename, lineno, col, None, function, linecache.getline(filename, lineno)),
            "assign its result instead of calling it for its effect, or pass a copy.")


nondifferentiable(effect_unchanged)  # (its own check: a program differentiated again runs it)


def _refuse(refusal: SrcadError, found: str):
    raise type(refusal)(
        f"{refusal.message}\n(srcad ran the function as written, since a call that returns no "
        f"floats and writes none has no derivative; but {found})", refusal.location,
        refusal.fix) from None


def _filled(cell) -> bool:
    try:
        cell.cell_contents
    except ValueError:  # (an empty cell: a variable not yet assigned)
        return False
    return True


_ATOMS = (type(None), bool, int, float, complex, str, bytes, np.generic, np.dtype, type,
          types.ModuleType, types.BuiltinFunctionType, np.ufunc, slice, range,
          type(Ellipsis))


def _inspectable(value) -> bool:
    """Whether a float written into `value` would show in `_snapshot`."""
    if isinstance(value, (tuple, list)):
        return all(map(_inspectable, value))
    if isinstance(value, dict):
        return all(map(_inspectable, value.values()))
    return isinstance(value, (*_ATOMS, np.ndarray, types.FunctionType))


def _snapshot(value):
    """A check that `value` (and what it holds) is as it is now."""
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "fc":
            return lambda: True
        copy = value.copy()
        return lambda: value.shape == copy.shape and np.array_equal(value, copy,
                                                                      equal_nan=True)
    if isinstance(value, (list, dict)):
        held = _held(value)
        inner = [_snapshot(v) for v in (value.values() if isinstance(value, dict) else value)]
        return lambda: _held(value) == held and all(check() for check in inner)
    if isinstance(value, tuple):
        inner = [_snapshot(v) for v in value]
        return lambda: all(check() for check in inner)
    return lambda: True


def _held(container) -> list:
    """What a list or dict holds, by identity (`==` on arrays would compare elements)."""
    if isinstance(container, dict):
        return [(key, id(v)) for key, v in container.items()]
    return [id(v) for v in container]


def _float_free(value) -> bool:
    if isinstance(value, (tuple, list)):
        return all(map(_float_free, value))
    if isinstance(value, dict):
        return all(map(_float_free, value.keys())) and all(map(_float_free, value.values()))
    if isinstance(value, (float, complex)):
        return False
    if isinstance(value, (np.ndarray, np.generic)):
        return value.dtype.kind not in "fcOV"
    if isinstance(value, types.FunctionType):  # (a closure may hold differentiated values)
        return not any(_filled(c) and not _float_free(c.cell_contents)
                       for c in value.__closure__ or ())
    return isinstance(value, _ATOMS)
