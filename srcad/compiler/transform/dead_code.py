"""dead_code: leave out assignments nobody reads, in a program that returns only a part
of what the user's function computes.

A Hessian-vector product differentiates the tangent program, which needs the tangent of
the output and not the output itself: the operations that only lead to the value (the
`np.log1p` and the `np.mean` of a loss whose tangent needs neither) would otherwise run,
and be recorded, on every call. Input: a function body's statements and the names read
after it. Output: the statements without the assignments that are read by nothing after
them and that surely do nothing else: arithmetic, NumPy ufuncs and the reductions below,
and the runtime's tangent helpers, inside loops and branches too (the liveness pass of
optimize.py). A call of anything else (the user's helpers, which may print or append to a
list) stays, as do statements other than plain assignments. (Left out, an operation on
operands that do not fit cannot raise: the tangent's own operations on the same operands
do.)
"""
from __future__ import annotations

import gast
import numpy as np

from srcad.compiler.transform.optimize import drop_dead_stores
from srcad.kernels import adjoints as helpers, tangents
from srcad.ops.registry import is_pure

_PURE_HELPERS = frozenset(map(id, (tangents.broadcast_like, helpers.shape_of)))  # srcad's own


def drop_dead(statements: list, live_after: set, resolve) -> list:
    """`statements` without the dead pure assignments; `resolve(expression)` is the object a
    callee expression names (None if unknown)."""
    return drop_dead_stores(statements, live_after, lambda value: pure(value, resolve))


def pure(expression, resolve) -> bool:
    """Whether evaluating `expression` has no effect but its value (and NumPy's warnings)."""
    if isinstance(expression, (gast.Name, gast.Constant)):
        return True
    if isinstance(expression, gast.BinOp):
        return pure(expression.left, resolve) and pure(expression.right, resolve)
    if isinstance(expression, gast.UnaryOp):
        return pure(expression.operand, resolve)
    if isinstance(expression, (gast.Tuple, gast.List)):
        return all(pure(e, resolve) for e in expression.elts)
    if isinstance(expression, gast.Call):
        callee = resolve(expression.func)
        if isinstance(callee, np.ufunc) and len(expression.args) > callee.nin:
            return False  # the further positional argument is `out`, written into
        return (is_pure(callee) or id(callee) in _PURE_HELPERS) \
            and all(pure(a, resolve) for a in expression.args) \
            and all(k.arg != "out" and pure(k.value, resolve) for k in expression.keywords)
    return False
