"""into_index: the first cotangent of a slice of an array, computed straight into the
adjoint's elements.

The cotangent of `x[1:]` is `g` scattered into zeros of `x`'s shape, so the backward sweep
of every stencil (`x[1:] - x[:-1]`: Rosenbrock, finite differences, residuals of a
discretised ODE) computes `g` and then copies it, two passes over the elements where one
does:

    b_item = b_d * -2 * e                   b_x = ufunc_into_index(multiply, b_d * -2, e,
    b_x = index_adjoint(b_item, x, s)  ─▶                           x, s)

`ufunc_into_index` makes the zeros and has the outermost operation write its result into
the slice (`out=`), where the operands give an array of that slice's shape and of `x`'s
inexact dtype (arrays of that shape and dtype, Python numbers) and the index selects a view;
in every other case it is `index_adjoint` of the operator's result, as before.

Input: a backward sweep's statements and the names read after them. Output: the same,
where an arithmetic assignment is followed at once by the `index_adjoint` that alone reads
its target, the pair made one call (nested blocks too). Nothing runs between the two, so
the value is the same.
"""
from __future__ import annotations

import operator
from collections import Counter

import gast
import numpy as np

from srcad import runtime
from srcad.frontend.trees import walk
from srcad.transform.adjoints import load

_UFUNCS = {gast.Add: np.add, gast.Sub: np.subtract, gast.Mult: np.multiply,
           gast.Div: np.true_divide}
_IN_PLACE = {runtime.add_into: np.add, runtime.subtract_into: np.subtract,
             runtime.multiply_into: np.multiply, runtime.divide_into: np.true_divide}
_OPERATORS = {np.add: operator.add, np.subtract: operator.sub, np.multiply: operator.mul,
              np.true_divide: operator.truediv}  # (lists add up by `+`, not by np.add)


def ufunc_into_index(ufunc, a, b, x, index):
    """`index_adjoint(ufunc(a, b), x, index)`, with `ufunc` writing into the zeros."""
    if type(x) is np.ndarray and x.dtype.kind in "fc" and runtime.is_basic_index(index):
        result = np.zeros(x.shape, x.dtype)
        region = result[index]
        if _fits(a, region) and _fits(b, region):
            ufunc(a, b, out=region)
            return result
    return runtime.index_adjoint(_OPERATORS[ufunc](a, b), x, index)


def _fits(operand, region) -> bool:
    """Whether `operand` keeps `ufunc`'s result to the region's shape and dtype."""
    kind = type(operand)
    if kind is np.ndarray:
        return operand.dtype is region.dtype and operand.shape == region.shape
    return kind is float or kind is int


def write_into_index(statements: list, helper_of, name_for, read_after: set) -> list:
    """`statements` with each arithmetic-then-`index_adjoint` pair made one
    `ufunc_into_index` call; `helper_of(call)` is the runtime helper a call calls,
    `name_for(name, obj)` the name generated code reads `obj` under."""
    mentions = Counter(n.id for s in statements for n in walk(s) if isinstance(n, gast.Name))
    return _block(statements, helper_of, name_for, mentions, read_after)


def _block(statements, helper_of, name_for, mentions, read_after) -> list:
    result = []
    for statement in statements:
        for field in ("body", "orelse"):
            inner = getattr(statement, field, None)
            if isinstance(inner, list) and inner:
                setattr(statement, field,
                        _block(inner, helper_of, name_for, mentions, read_after))
        joined = _joined(result[-1], statement, helper_of, name_for, mentions, read_after) \
            if result else None
        if joined is not None:
            result[-1] = joined
        else:
            result.append(statement)
    return result


def _joined(first, second, helper_of, name_for, mentions, read_after):
    """The one statement for `t = a <op> b; y = index_adjoint(t, x, index)`, or None."""
    operation = _operation(first, helper_of)
    if operation is None or not _assigns_one_name(second):
        return None
    name = first.targets[0].id
    scatter = second.value
    if helper_of(scatter) is not runtime.index_adjoint or len(scatter.args) != 3 \
            or not isinstance(scatter.args[0], gast.Name) or scatter.args[0].id != name \
            or mentions[name] != 2 or name in read_after:
        return None
    ufunc, a, b = operation
    call = gast.Call(load(name_for("ufunc_into_index", ufunc_into_index)),
                     [load(name_for(ufunc.__name__, ufunc)), a, b, *scatter.args[1:]], [])
    return gast.Assign(second.targets, call, None)


def _operation(statement, helper_of):
    """`(ufunc, a, b)` of `t = a <op> b` or `t = multiply_into(a, b)` and the like."""
    if not _assigns_one_name(statement):
        return None
    value = statement.value
    if isinstance(value, gast.BinOp) and type(value.op) in _UFUNCS:
        return _UFUNCS[type(value.op)], value.left, value.right
    ufunc = _IN_PLACE.get(helper_of(value))
    if ufunc is not None and len(value.args) == 2 and not value.keywords:
        return ufunc, *value.args
    return None


def _assigns_one_name(statement) -> bool:
    return isinstance(statement, gast.Assign) and len(statement.targets) == 1 \
        and isinstance(statement.targets[0], gast.Name)
