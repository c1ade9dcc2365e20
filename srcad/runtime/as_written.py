"""as_written: a function srcad cannot transform, run as written where that is exact.

Library code reached from a differentiated call is full of dispatch and validation that
srcad cannot (or need not) transform: `xp = array_namespace(x)` in SciPy holds a `try`,
argument checks return a bool, helpers compute a dtype or a shape. Such a call has no
derivative however it was computed, provided that

- what it returns holds no floats (None, numbers that are not floats, strings, modules,
  classes, dtypes, arrays of integers or bools, functions with no captured values, and
  tuples, lists and dicts of these), and
- it writes no float where the caller could read it back: the float arrays, lists, dicts
  and objects among its arguments, its closure's values and its module's globals are as
  they were (kernels/snapshots.py).

So when transforming the callee is refused, srcad runs it as written and checks both; if
either fails, the refusal stands, saying what was found. Arguments srcad cannot look into
(an object of a C type) keep the refusal too: a float written into one would be lost.
"""
from __future__ import annotations

import types
import weakref

import numpy as np

from srcad.errors import SrcadError
from srcad.kernels.snapshots import ATOMS, inspectable, namespace_snapshot, snapshot

_REFUSED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # function → {key: refusal}


def refusal_of(function, key) -> SrcadError | None:
    """The refusal to transform `function` for `key` (what is differentiated) found before."""
    return _REFUSED.get(function, {}).get(key)


def remember_refusal(function, key, refusal: SrcadError) -> None:
    _REFUSED.setdefault(function, {})[key] = refusal


def run_as_constant(function, args: tuple, kwargs: dict, refusal: SrcadError):
    """`function(*args, **kwargs)` as a constant of the derivative, or `refusal` raised
    (with the reason) where that would not be exact; see the module docstring."""
    reachable = [*args, *kwargs.values(),
                 *(cell.cell_contents for cell in function.__closure__ or ()
                   if _filled(cell))]
    opaque = next((v for v in reachable if not inspectable(v)), None)
    if opaque is not None:
        _refuse(refusal, f"a {type(opaque).__name__} it is passed, which srcad cannot look "
                         "into for floats written into it")
    snapshots = [snapshot(value) for value in reachable]
    snapshots.append(namespace_snapshot(getattr(function, "__globals__", {})))
    result = function(*args, **kwargs)
    if not _float_free(result):
        _refuse(refusal, f"its result (a {type(result).__name__}) holds floats")
    if not all(unchanged() for unchanged in snapshots):
        _refuse(refusal, "it wrote into an argument, a value it captured or a global")
    return result


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
    return isinstance(value, ATOMS)
