"""snapshots: checks that a value, and what it holds, is as it was, for code srcad runs
without following it (a callee run as written, a call made for its effect, a `try` body):
a float written where the derivative cannot see it must be refused, never lost.

Float arrays are compared by content (on a copy); lists, dicts and the attributes of plain
objects by what they hold (by identity: `==` on arrays compares elements), a few levels
down; numbers, strings, modules, classes, dtypes and functions cannot change. A value of
another kind (an object of a C type, a deque) cannot be looked into: `inspectable` says so,
and its callers refuse it.
"""
from __future__ import annotations

import hashlib
import types

import numpy as np

ATOMS = (type(None), bool, int, float, complex, str, bytes, np.generic, np.dtype, type,
         types.ModuleType, types.BuiltinFunctionType, types.FunctionType, np.ufunc, slice,
         range, type(Ellipsis))
_DEPTH = 3  # how far into lists, dicts and objects a snapshot looks


def inspectable(value, depth: int = _DEPTH) -> bool:
    """Whether a float written into `value` would show in `snapshot(value)`."""
    if _bound_to(value) is not None:
        return inspectable(_bound_to(value), depth)
    if isinstance(value, (*ATOMS, np.ndarray)):
        return True
    if depth == 0:
        return False
    if isinstance(value, (tuple, list)):
        return all(inspectable(v, depth - 1) for v in value)
    if isinstance(value, dict):
        return all(inspectable(v, depth - 1) for v in value.values())
    return _plain_object(value) and all(inspectable(v, depth - 1)
                                        for v in vars(value).values())


def snapshot(value, depth: int = _DEPTH):
    """A check, `unchanged() -> bool`, that `value` holds what it holds now (a bound
    method: its receiver; a function: the values it captured)."""
    if _bound_to(value) is not None:
        return snapshot(_bound_to(value), depth)
    if isinstance(value, types.FunctionType) and value.__closure__ and depth:
        inner = [snapshot(_contents(cell), depth - 1) for cell in value.__closure__]
        return lambda: all(check() for check in inner)
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "fc":
            return lambda: True
        copy = value.copy()
        return lambda: value.shape == copy.shape and np.array_equal(value, copy,
                                                                      equal_nan=True)
    if depth == 0 or isinstance(value, ATOMS):
        return lambda: True
    if isinstance(value, tuple):
        inner = [snapshot(v, depth - 1) for v in value]
        return lambda: all(check() for check in inner)
    if isinstance(value, (list, dict)) or _plain_object(value):
        mapping = vars(value) if _plain_object(value) else value
        held = _held(mapping)
        inner = [snapshot(v, depth - 1)
                 for v in (mapping.values() if isinstance(mapping, dict) else mapping)]
        return lambda: _held(mapping) == held and all(check() for check in inner)
    return lambda: True


def digest(values) -> bytes:
    """A hash of the shapes, dtypes and contents of the arrays and numbers among `values`
    (the leaves of a call's arguments): a check that they are unchanged which, unlike
    `snapshot`, keeps no copy of them (a checkpoint keeps its arguments by reference for
    its recomputation, runtime/calls.py). An object's attributes are not looked into."""
    hasher = hashlib.blake2b(digest_size=16)
    for value in values:
        if isinstance(value, np.ndarray) and value.dtype.kind != "O":
            hasher.update(repr((value.shape, value.dtype.str)).encode())
            hasher.update(value.data if value.flags.c_contiguous else value.tobytes())
        elif isinstance(value, (bool, int, float, complex, str, np.generic)):
            hasher.update(repr((type(value).__name__, value)).encode())
    return hasher.digest()


def namespace_snapshot(namespace: dict):
    """`snapshot` of a module's globals: the names bound, the float arrays bound to them,
    and what the lists, dicts and objects bound to them hold (one level)."""
    held = _held(namespace)
    inner = [snapshot(v, 1) for v in namespace.values()
             if isinstance(v, (list, dict, np.ndarray)) or _plain_object(v)]
    return lambda: _held(namespace) == held and all(check() for check in inner)


def _bound_to(value):
    """The receiver of a bound method (`store.append`), None for anything else."""
    receiver = getattr(value, "__self__", None) if isinstance(
        value, (types.MethodType, types.BuiltinMethodType)) else None
    return None if isinstance(receiver, types.ModuleType) else receiver


def _contents(cell):
    try:
        return cell.cell_contents
    except ValueError:  # (an empty cell)
        return None


def _plain_object(value) -> bool:
    """An instance of a Python class with a `__dict__` (its attributes are its state)."""
    return hasattr(value, "__dict__") and not isinstance(value, ATOMS) \
        and not isinstance(value, (types.MethodType, np.ndarray))


def _held(container) -> list:
    """What a list or dict holds, by identity."""
    if isinstance(container, dict):
        return [(key, id(v)) for key, v in container.items()]
    return [id(v) for v in container]
