"""outline: a gradient-only program does not compute what only the loss value needs.

`srcad.grad` returns the gradient, not the value. In its fused program (fuse.py) the value
is read only by the seed, which needs its shape and dtype (one real number), and the
backward sweep reads many intermediate values only for their shapes (`unbroadcast(g, x)`).
The operations that lead only there would still run: for a loss like
`np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)`, five passes over the
array of ten. Here they become *outlines* (srcad/outlines.py), their result's shape and
dtype without its elements:

    pow_4 = sub_3 ** 2                      pow_4 = outline(pow, sub_3, 2)
    mul_5 = 100.0 * pow_4          ─▶       mul_5 = outline(mul, 100.0, pow_4)
    sum_10 = np.sum(add_9)                  sum_10 = reduction_outline(np.sum, add_9)
    b_sum_10 = seed_for(sum_10)             b_sum_10 = seed_for(sum_10)

Input: the fused body's statements and the names the program returns. An assignment whose
target the rest reads only for its shape (names marked `shape_only`: by `unbroadcast` and
its kin, by `shape_of`, by `seed_for`) becomes its outline if it is an elementwise operator or ufunc
that keeps its operands' inexact dtype, or a sum or mean over all axes: its operands are
then read for their outline only, in turn. A pure assignment nothing reads is dropped
(dead_code.py). Everything else stays, and what it reads is read in full.
"""
from __future__ import annotations

import gast
import numpy as np

from srcad import outlines, runtime
from srcad.frontend.trees import walk
from srcad.transform.adjoints import assign, load
from srcad.transform.dead_code import pure
from srcad.transform.optimize import names_read

_REDUCTIONS = (np.sum, np.mean)


def outline_unread(statements: list, returned: set, bindings) -> list:
    """`statements` (a straight sequence; loops and branches are kept whole) with outlines
    in place of the values only their shapes are read of."""
    values, shapes = set(returned), set()
    kept, made = [], set()
    for statement in reversed(statements):
        target = _assigned_name(statement)
        if target is not None and target not in values:
            wanted = target in shapes
            if not wanted and pure(statement.value, bindings.callee):
                continue  # nothing reads it
            outline = _outline(statement.value, bindings) if wanted else None
            values.discard(target)
            shapes.discard(target)
            if outline is not None:
                statement = assign(target, outline)
                made.add(id(statement))
                shapes.update(n.id for n in walk(outline) if isinstance(n, gast.Name)
                              and bindings.named(n.id) is None)
                kept.append(statement)
                continue
        elif target is not None:
            values.discard(target)
            shapes.discard(target)
        read_values, read_shapes = names_read([statement])
        values |= read_values
        shapes |= read_shapes
        kept.append(statement)
    return _without_reshaping(kept[::-1], made, bindings)


def _without_reshaping(statements: list, made: set, bindings) -> list:
    """Leave out `x = shape_of(x)` where `x` holds an outline (`made`): it holds no array."""
    outlined, kept = set(), []
    for statement in statements:
        target = _assigned_name(statement)
        if target in outlined and isinstance(statement.value, gast.Call) \
                and bindings.callee(statement.value.func) is runtime.shape_of:
            continue
        if target is not None:
            (outlined.add if id(statement) in made else outlined.discard)(target)
        kept.append(statement)
    return kept


def _assigned_name(statement):
    if isinstance(statement, gast.Assign) and len(statement.targets) == 1 \
            and isinstance(statement.targets[0], gast.Name):
        return statement.targets[0].id
    return None


def _outline(expression, bindings):
    """The call computing `expression`'s outline, or None where it has none."""
    atoms = _atoms_of(expression, bindings)
    if atoms is None:
        return None
    kind, fn, operands = atoms
    helper = ("reduction_outline", outlines.reduction_outline) if kind == "reduction" \
        else ("outline", outlines.outline)
    return gast.Call(load(bindings.name_for(*helper)), [fn, *operands], [])


def _atoms_of(expression, bindings):
    """`(kind, callee expression, operands)` of an outlined operation on names and numbers."""
    if isinstance(expression, gast.BinOp):
        operands, operator_name = [expression.left, expression.right], type(expression.op)
    elif isinstance(expression, gast.UnaryOp):
        operands, operator_name = [expression.operand], type(expression.op)
    elif isinstance(expression, gast.Call) and not expression.keywords:
        callee = bindings.callee(expression.func)
        if not all(map(_is_atom, expression.args)):
            return None
        if id(callee) in outlines.OUTLINED_UFUNCS:
            return "elementwise", expression.func, expression.args
        if any(callee is r for r in _REDUCTIONS) and len(expression.args) == 1:
            return "reduction", expression.func, expression.args
        return None
    else:
        return None
    fn = outlines.OUTLINED_OPERATORS.get(operator_name.__name__)
    if fn is None or not all(map(_is_atom, operands)):
        return None
    return "elementwise", load(bindings.name_for(fn.__name__, fn)), operands


def _is_atom(node) -> bool:
    return isinstance(node, gast.Name) or isinstance(node, gast.Constant) and type(
        node.value) in (int, float, complex)
