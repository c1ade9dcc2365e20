"""shapes: names that surely have one shape, known before any value exists.

Where the array operands of an elementwise operation surely share a shape, none of them was
broadcast, and the output has that shape too: its adjoint needs no `unbroadcast` (no sum,
no shape read, and no outline of a forward value kept only for its shape), nor its tangent
a `broadcast_like`. In `np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2)` every array has the
shape of `x[1:]`.

Shapes are classes of names. Each differentiated parameter that is no container starts one
(the API makes it a float array or a number, so its `+` adds); a copy, an elementwise
operation whose names are all of one class (besides numbers), a copy by `np.copy` or
`np.asarray` (`u = start.copy()` of a stencil), and a slice `x[s:-e]` of the
first axis take theirs: `x[s:-e]` has `max(len(x) - s - e, 0)` rows, so the class is that
of `x` with `s + e` rows fewer (`x[1:]` and `x[:-1]` share one). A reduction of a classed
name that keeps its axes (or reduces all of them) is `Reduced`: it broadcasts into its
operand without enlarging it, so `x - np.max(x, axis=1, keepdims=True)` has the class of
`x`. A name bound more than once has none (a loop may change its shape).
"""
from __future__ import annotations

import operator
from collections import Counter
from dataclasses import dataclass

import gast
import numpy as np

from srcad.compiler.frontend.resolve import IN_PLACE_KINDS, Loop, Operation, operations, walk
from srcad.ops.registry import is_elementwise, reduction_of



def shape_classes(block, arrays, scalars: frozenset) -> dict:
    """name → its shape class, for the names of `block` derived from the parameters named
    in `arrays` (differentiated arrays or numbers) as the module docstring says."""
    bindings = Counter(target for op in operations(block) for target in op.targets)
    bindings.update(op.mutates for op in operations(block)
                    if op.kind in IN_PLACE_KINDS and op.kind != "setitem")
    bindings.update(node.element for node in walk(block) if isinstance(node, Loop))
    classes = {name: (name,) for name in arrays if not bindings[name] and name not in scalars}
    for op in operations(block):
        if len(op.targets) == 1 and bindings[op.targets[0]] == 1 and op.kind in ("call", "copy"):
            shape = _class_of(op, classes, scalars)
            if shape is not None:
                classes[op.targets[0]] = shape
    return classes


_COPIES = (np.copy, np.asarray)  # (of an array: its shape; np.ascontiguousarray makes a
# 0-d array 1-d)


@dataclass(frozen=True)
class Reduced:
    """The class of `f(x, axis=axes, keepdims=True)` (or of any full reduction) for an `x`
    of class `of`: it broadcasts into `of` without enlarging it."""

    of: object
    axes: tuple | None
    kept: bool


def _class_of(op: Operation, classes: dict, scalars: frozenset):
    if op.kind == "copy":
        return classes.get(op.args[0].id)
    if op.method is None and reduction_of(op.callee) is not None and op.args \
            and isinstance(op.args[0], gast.Name) and op.args[0].id in classes:
        reduction = reduction_axes(op)
        if reduction is not None and (reduction[0] is None or reduction[1]):
            return Reduced(classes[op.args[0].id], *reduction)
        return None
    if op.keywords or op.method is not None:
        return None
    if op.callee in _COPIES and len(op.args) == 1 and isinstance(op.args[0], gast.Name):
        return classes.get(op.args[0].id)
    if op.callee is operator.getitem:
        base, index = op.args
        rows = _rows_dropped(index)
        if rows is None or not isinstance(base, gast.Name) or base.id not in classes:
            return None
        shape = classes[base.id]
        return shape if rows == 0 else (shape, rows)
    if not is_elementwise(op.callee):
        return None
    shapes = set()
    for argument in op.args:
        if isinstance(argument, gast.Name) and argument.id not in scalars:
            shapes.add(classes.get(argument.id))
        elif not (isinstance(argument, gast.Constant) and type(argument.value) in (int, float)
                  or isinstance(argument, gast.Name)):
            return None
    full = {shape for shape in shapes if not isinstance(shape, Reduced)}
    if len(full) == 1 and all(shape.of in full for shape in shapes - full):
        return full.pop()  # (`x - np.max(x, axis=1, keepdims=True)` has the shape of `x`)
    return shapes.pop() if len(shapes) == 1 else None


def reduction_axes(op):
    """`(axes, keepdims)` of a reduction `f(a, axis, ..., keepdims=...)` whose axis and
    keepdims are constants (axes: None for all, else a tuple of ints), or None."""
    if len(op.args) > 2:
        return None
    options = {"axis": op.args[1] if len(op.args) == 2 else gast.Constant(None, None)}
    options.update(op.keywords)
    options.setdefault("keepdims", gast.Constant(False, None))
    if set(options) != {"axis", "keepdims"}:
        return None
    axis, keepdims = options["axis"], options["keepdims"]
    if not isinstance(keepdims, gast.Constant) or not isinstance(keepdims.value, bool):
        return None
    if isinstance(axis, gast.Tuple) and all(isinstance(e, gast.Constant) for e in axis.elts):
        axes = tuple(e.value for e in axis.elts)
    elif isinstance(axis, gast.Constant):
        axes = None if axis.value is None else (axis.value,)
    else:
        return None
    if axes is not None and not all(type(a) is int for a in axes):
        return None
    return axes, keepdims.value


def _rows_dropped(index):
    """For `slice(s, -e)` or `slice(s, None)` (constants, s >= 0, e > 0, no step): s + e."""
    if not (isinstance(index, gast.Call) and isinstance(index.func, gast.Name)
            and index.func.id == "slice" and len(index.args) == 2
            and all(isinstance(a, gast.Constant) for a in index.args)):
        return None
    start, stop = (a.value for a in index.args)
    start = 0 if start is None else start
    stop = 0 if stop is None else stop if type(stop) is int and stop < 0 else None
    if type(start) is not int or start < 0 or stop is None:  # (`x[s:0]` is empty)
        return None
    return start - stop
