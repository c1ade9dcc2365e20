"""arrays: which names surely hold NumPy arrays, and their methods as the functions they are.

What the frontend cannot know from a name alone (`x.copy()` of a list is shallow, of an
array a new array; `a + b` of lists joins them) it knows where `x` surely holds an array:
a differentiated parameter (the API makes it one) and what NumPy makes from such. There, a
method call becomes a call of its function (`resolve_array_methods`), which aliasing knows
makes a new array (or a view) and whose rule the derivative inlines.
"""
from __future__ import annotations

import operator
import types

import gast
import numpy as np

from srcad.ops.numpy_arrays import copied
from srcad.compiler.frontend.resolve import Operation, bound_names, operations, surely
from srcad.ops import vjp_rules
from srcad.ops.registry import makes_new_array, method_function, sequence_result
from srcad.runtime.methods import SHAPE_METHODS, static_method


def resolve_array_methods(block: list, params, arrays, name_of) -> None:
    """Make each method call on an `x` that surely holds an array (or a NumPy number) a call
    of the function it stands for (`methods.static_method`), in its operation and its
    statement: `x.copy()` → `numpy.copy(x)`, `x.reshape(2, -1)` → `numpy.reshape(x, (2,
    -1))`, `x.astype(t)` → `converted(x, t)`. Their results are then known to be new arrays
    where they are (writes into `y = x.copy()` are not refused as writes into memory `x` may
    share, in a derivative of the derivative too, which reads the generated code), and the
    derivative is the function's rule, not a method looked up at run time. A list's
    `.copy()` is shallow, its items still the list's: it stays a method call.

    `arrays` names the parameters that hold arrays (the differentiated ones, as `grad`
    promotes them); `name_of(preferred, obj)`: the name the generated code calls `obj` by
    (transform/bindings.py)."""
    calls = [op for op in operations(block)
             if op.kind == "call" and static_method(op.method) is not None
             and not (op.method in SHAPE_METHODS and len(op.args) < 2)]
    held_arrays = surely_arrays(block, params, arrays) if calls else ()  # (none: not asked)
    for op in calls:
        receiver = op.args[0] if op.args else None
        if getattr(receiver, "id", None) not in held_arrays:
            continue
        function, rest = static_method(op.method), list(op.args[1:])
        if op.method in SHAPE_METHODS and len(rest) > 1:  # `x.reshape(2, 3)`: one shape
            rest = [gast.Tuple(rest, gast.Load())]
        name = function.__name__
        callee = gast.Attribute(gast.Name(name_of("np", np), gast.Load(), None, None), name,
                                gast.Load()) if getattr(np, name, None) is function \
            else gast.Name(name_of(name, function), gast.Load(), None, None)
        op.statement.value = gast.copy_location(gast.Call(
            callee, [receiver, *rest], op.statement.value.keywords), op.statement.value)
        op.callee, op.method, op.dynamic = function, None, False
        op.args = (receiver, *rest)


def surely_arrays(block: list, params, arrays) -> frozenset:
    """The names that hold a NumPy array or number on every path, given the parameters
    `arrays` that do: what one-output ufuncs, NumPy functions with a rule (but for those
    returning several arrays) and `np.zeros` and its kin make, arithmetic of such names,
    their elements and slices, and copies of them (a greatest fixpoint, as in scalars.py)."""
    return surely(block, set(arrays) | bound_names(block, params),
                  _makes_an_array)


def surely_ndarrays(block: list, params, arrays) -> frozenset:
    """The names that hold a NumPy array (never a number) on every path, given the
    parameters `arrays` that do: what `np.zeros` and its kin, `np.array`, copies and whole
    slices make, and arithmetic and ufuncs with such an array (frontend/functional.py
    writes into them)."""
    return surely(block, set(arrays) | bound_names(block, params),
                  _makes_an_ndarray)


def _makes_an_ndarray(op: Operation, arrays: set) -> bool:
    if op.kind == "setitem":
        return True
    if len(op.targets) != 1 or op.kind not in ("call", "copy"):
        return False
    first = getattr(op.args[0], "id", None) if op.args else None
    if op.kind == "copy" or op.method == "copy" or op.callee is np.copy or op.callee is copied:
        return first in arrays
    if among(op.callee, _ARITHMETIC) or isinstance(op.callee, np.ufunc) and op.callee.nout == 1:
        return any(getattr(a, "id", None) in arrays for a in op.args)
    if among(op.callee, (np.array, np.asarray, np.ascontiguousarray)):
        return True
    if op.callee is operator.getitem:  # (a slice, not an element)
        index = op.args[1]
        return first in arrays and isinstance(index, gast.Call) \
            and getattr(index.func, "id", None) == "slice"
    return op.method is None and makes_new_array(op.callee)


def _makes_an_array(op: Operation, arrays: set) -> bool:
    if op.kind == "setitem":  # (writing an element keeps the array one)
        return True
    if len(op.targets) != 1 or op.kind not in ("call", "copy"):
        return False
    of_arrays = {a.id for a in op.args if hasattr(a, "id")} <= arrays
    if op.kind == "copy" or among(op.callee, _ARITHMETIC):
        return of_arrays  # (`+` of two lists is a list)
    if method_function(op.method) is not None \
            and op.method not in ("item", "nonzero", "__array_namespace__"):
        return getattr(op.args[0], "id", None) in arrays  # (an array's method)
    if op.callee is operator.getitem or isinstance(op.callee, types.GetSetDescriptorType) \
            and op.callee.__objclass__ is np.ndarray:  # an element, a view or a gather of an
        return getattr(op.args[0], "id", None) in arrays  # array, or its `.T`, `.real`
    callee = op.callee
    if op.method is not None or sequence_result(callee) is not None:
        return False
    if isinstance(callee, np.ufunc):
        return callee.nout == 1
    module = getattr(callee, "__module__", None) or ""
    return module.split(".")[0] == "numpy" and vjp_rules(callee) is not None \
        or makes_new_array(callee) or callee is copied


def among(callee, functions) -> bool:
    """`callee in functions`, by identity (a callee may be unhashable). A loop, not `any`
    of a generator: the analyses ask it of every operation, several times."""
    for function in functions:
        if callee is function:
            return True
    return False


_ARITHMETIC = {operator.add, operator.sub, operator.mul, operator.truediv, operator.pow,
               operator.matmul, operator.neg, operator.pos}
