"""An array's Array API namespace (`xp = x.__array_namespace__()`): a constant.

The namespace is a module chosen by the array's type, whatever its values: no derivative
flows through it. Its functions are then looked up at run time (runtime/methods.py) and
find their own records: for a NumPy array the namespace is `numpy`, so `xp.sin(x)` is
`np.sin(x)` with NumPy's rules.

`array_api_compat.array_namespace(x)` of a NumPy array is array_api_compat's NumPy
namespace, most of whose functions are NumPy's. A few are wrappers that reach NumPy through
code source mode cannot follow (an import inside, a result class, `out=`); those that
compute NumPy's function on NumPy arrays get its record, and `array_namespace` itself is a
constant (`learn_compat_wrappers`, which the registry calls the first time it meets one of
array_api_compat's functions).
"""
import dataclasses
import importlib

import numpy as np

from srcad.ops.numpy_indexing import sort_jvp, sort_vjp
from srcad.ops.registry import declare, defjvp, defvjp, nondifferentiable, op_of


def namespace_of(a, *args, **kwargs):
    """`a.__array_namespace__(...)` for an array or a NumPy number alike: what
    differentiated code calls for the method (the record's `methods`)."""
    return a.__array_namespace__(*args, **kwargs)


nondifferentiable(namespace_of)
declare(namespace_of, methods=("__array_namespace__",))


# array_api_compat's wrapper (its namespace, `linalg` or not, and name) → the NumPy function
# it computes on NumPy arrays, its arguments at the same positions and keywords NumPy's rules
# take (np.clip's take `min=` and `max=`)
_SAME_AS_NUMPY = {("", "clip"): np.clip, ("", "sign"): np.sign,
                  ("linalg", "solve"): np.linalg.solve, ("linalg", "slogdet"): np.linalg.slogdet,
                  ("linalg", "eigh"): np.linalg.eigh, ("linalg", "svd"): np.linalg.svd}


def learn_compat_wrappers() -> None:
    """Give array_api_compat's NumPy wrappers above NumPy's records (rules and facts alike),
    and its `sort`, whose `descending` reverses NumPy's order, rules of its own."""
    compat = importlib.import_module("array_api_compat")  # (its caller has: fn is its)
    namespace = importlib.import_module("array_api_compat.numpy")
    for finder in (getattr(compat, name, None) for name in ("array_namespace", "get_namespace")):
        if finder is not None and op_of(finder) is None:
            nondifferentiable(finder)  # (a module: no derivative flows through it)
    for (part, name), numpy_function in _SAME_AS_NUMPY.items():
        wrapper = getattr(namespace.linalg if part else namespace, name, None)
        if wrapper is None or wrapper is numpy_function or op_of(wrapper) is not None:
            continue
        op = op_of(numpy_function)
        facts = {fact.name: getattr(op, fact.name) for fact in dataclasses.fields(op)
                 if fact.name not in ("primal", "owner", "vjp", "jvp", "methods")}
        if op.vjp is not None:
            defvjp(wrapper, *op.vjp.rules)
        if op.jvp is not None:
            defjvp(wrapper, *op.jvp.rules)
        if op.nondifferentiable:
            nondifferentiable(wrapper)
        declare(wrapper, **{k: v for k, v in facts.items() if k != "nondifferentiable"})
    if getattr(namespace, "sort", np.sort) is not np.sort and op_of(namespace.sort) is None:
        defvjp(namespace.sort, compat_sort_vjp)
        defjvp(namespace.sort, compat_sort_jvp)


def compat_sort_vjp(g, ans, x, axis=-1, descending=False, stable=True, **kwargs):
    """array_api_compat's `sort`: NumPy's stable sort, reversed when `descending`."""
    if descending:
        g = np.flip(g, axis)
    return sort_vjp(g, ans, x, axis)


def compat_sort_jvp(g, ans, x, axis=-1, descending=False, stable=True, **kwargs):
    tangent = sort_jvp(g, ans, x, axis)
    return np.flip(tangent, axis) if descending else tangent
