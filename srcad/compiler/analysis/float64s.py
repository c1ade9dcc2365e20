"""float64s: what is known of each value of generated straight-line code, where some
parameters hold float64 arrays of known ranks (transform/specialise.py acts on it).

A value is `Known` when it surely has dtype float64: an array (of a rank, and of a shape
class of analysis/shapes.py, where known), a NumPy float64 number, or either. The knowledge
flows from the parameters through the operations NumPy's promotion keeps in float64 (found
by running the operation on sample numbers of the operands' kinds: a float64 operand meets
a Python int or float and stays float64), reductions, matmul, basic indexing and the
backward sweep's helpers whose result's kind is that of an operand. A value computed from
arrays of one shape class elementwise has that class; a value of no class gets one of its
own where it is bound, so that what is computed from it elementwise shares it. Statements
inside loops and branches forget the names they bind.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass, replace

import gast
import numpy as np

from srcad.compiler.analysis.shapes import Reduced
from srcad.compiler.frontend.trees import blocks, name_nodes
from srcad.ops.fused_softmax import softmax_vjp
from srcad.kernels import outlines, adjoints as helpers
from srcad.runtime.arguments import seed_for


@dataclass(frozen=True)
class Known:
    """A value of dtype float64: form "array" (of `rank` where known), "number" (a NumPy
    float64) or "either"; `shape` its shape class where known; `outline` for an outline
    of such a value (transform/outline.py), which is not computed."""

    form: str
    rank: int | None = None
    shape: object = None
    outline: bool = False


INT, FLOAT = "int", "float"  # Python numbers (`x.shape[1]`, a constant)
SHAPE = "shape"              # a tuple of Python ints (`x.shape`)
_SAMPLES = {INT: 2, FLOAT: 0.5}
_OPERATORS = {gast.Add: operator.add, gast.Sub: operator.sub, gast.Mult: operator.mul,
              gast.Div: operator.truediv, gast.Pow: operator.pow}
REDUCTIONS = (np.sum, np.mean, np.max, np.min, np.amax, np.amin, np.prod)
_WRITTEN_INTO = {helpers.add_into: operator.add, helpers.subtract_into: operator.sub,
                 helpers.multiply_into: operator.mul, helpers.divide_into: operator.truediv}


class Knowledge:
    """What is known of each name, statement after statement of a function's body."""

    def __init__(self, arrays: dict, shapes: dict, bindings, floats=frozenset()):
        """`arrays`: parameter → the rank of the float64 array it holds; `shapes`: the
        forward names' shape classes; `bindings` resolves the callees of generated code;
        `floats`: parameters holding Python floats."""
        self.facts = {name: Known("array", rank, shapes.get(name))
                      for name, rank in arrays.items()}
        self.facts.update(dict.fromkeys(floats, FLOAT))
        self.shapes, self.bindings = shapes, bindings

    def learn(self, statement) -> None:
        """Take in what `statement`, which runs next, binds."""
        if isinstance(statement, gast.Assign) and len(statement.targets) == 1 \
                and isinstance(statement.targets[0], gast.Name):
            target = statement.targets[0].id
            known = self.value_of(statement.value)
            if isinstance(known, Known) and known.form != "number" and known.shape is None:
                known = replace(known, shape=self.shapes.get(target, ("bound", id(statement))))
            self.set(target, known)
            return
        for name in name_nodes(statement):  # a loop, a branch, an unpacking, a `del`:
            if isinstance(name.ctx, (gast.Store, gast.Del)):  # forget what it binds
                self.facts.pop(name.id, None)
        for defined in [statement, *(s for block in blocks(statement) for s in block)]:
            if isinstance(defined, (gast.FunctionDef, gast.ClassDef)):
                self.facts.pop(defined.name, None)

    def set(self, name: str, known) -> None:
        if known is None:
            self.facts.pop(name, None)
        else:
            self.facts[name] = known

    def value_of(self, node):
        if isinstance(node, gast.Name):
            return self.facts.get(node.id)
        if isinstance(node, gast.Constant):
            kind = type(node.value)
            return INT if kind is int else FLOAT if kind is float else None
        if isinstance(node, gast.UnaryOp) and isinstance(node.op, (gast.USub, gast.UAdd)):
            return self.value_of(node.operand)
        if isinstance(node, gast.BinOp):
            if isinstance(node.op, gast.MatMult):
                return _product(self.value_of(node.left), self.value_of(node.right))
            function = _OPERATORS.get(type(node.op))
            return function and _elementwise(function, [self.value_of(node.left),
                                                        self.value_of(node.right)])
        if isinstance(node, gast.Attribute):
            base = self.value_of(node.value)
            if is_array(base):
                if node.attr == "shape":
                    return SHAPE
                if node.attr == "T" and base.rank == 2:
                    return Known("array", 2)
                if node.attr == "size":
                    return INT
            return None
        if isinstance(node, gast.Subscript):
            return self._item(node)
        if isinstance(node, gast.Call) and not node.keywords:
            return self._call(node)
        if isinstance(node, gast.Call):
            return self._reduction(node)
        return None

    def _item(self, node):
        base = self.value_of(node.value)
        if base == SHAPE:
            return INT if constant(node.slice, int) else None
        if not is_array(base):
            return None
        dropped = dropped_axes(node.slice)
        if dropped is None or base.rank is None or dropped > base.rank:
            return None
        rank = base.rank - dropped
        return Known("array", rank) if dropped == 0 else Known("either", rank)

    def _call(self, node):
        callee = self.bindings.callee(node.func)
        arguments = [self.value_of(argument) for argument in node.args]
        if isinstance(callee, np.ufunc) and callee.nout == 1 and callee.signature is None \
                and callee.nin == len(arguments):
            return _elementwise(callee, arguments)
        if callee is np.matmul and len(arguments) == 2:
            return _product(*arguments)
        if callee in REDUCTIONS and len(arguments) == 1:
            return self._reduction(node)
        if callee is helpers.shape_of and arguments and isinstance(arguments[0], Known):
            return replace(arguments[0], outline=True)  # (a Shape: the array's rank and class)
        if (callee is helpers.unbroadcast and len(arguments) == 2) \
                or (callee is outlines.unbroadcast_from and len(arguments) == 3):
            # (unbroadcast_from's `g` may also be a number standing for its broadcast)
            g, like = arguments[0], arguments[-1]
            if isinstance(g, Known) and not g.outline and (
                    g.form == "array" or callee is outlines.unbroadcast_from) \
                    and isinstance(like, Known) and like.rank is not None:
                return Known("array" if like.rank else "either", like.rank, like.shape)
        if callee in _WRITTEN_INTO and len(arguments) == 2:  # (`total op other`, in place)
            return _elementwise(_WRITTEN_INTO[callee], arguments)
        if callee is outlines.outline and len(node.args) >= 2:  # (its elements not computed,
            known = _elementwise(self.bindings.callee(node.args[0]), [  # nor its operands')
                replace(a, outline=False) if isinstance(a, Known) else a for a in arguments[1:]])
            return replace(known, outline=True) if isinstance(known, Known) else None
        if callee is helpers.reduced_size:
            return INT
        if callee is outlines.reduction_outline and len(node.args) == 2 \
                and self.bindings.callee(node.args[0]) in (np.sum, np.mean) \
                and isinstance(arguments[1], Known):  # (a float64 array's or outline's)
            return Known("number", outline=True)
        if callee in (seed_for, outlines.cotangent_number) and isinstance(arguments[0], Known) \
                and arguments[0].form == "number":
            return Known("number")
        if callee is softmax_vjp and len(arguments) >= 2 and is_array(arguments[0]) \
                and isinstance(arguments[1], Known):  # (g, a cotangent of ans, has its shape)
            return replace(arguments[0], shape=arguments[1].shape)
        return None

    def _reduction(self, node):
        """`np.sum(x, axis=1, keepdims=True)` and the like (constant options): float64
        where `x` is, of `x`'s rank with keepdims, of one axis fewer for one axis."""
        callee = self.bindings.callee(node.func)
        if callee not in REDUCTIONS or len(node.args) != 1:
            return None
        operand = self.value_of(node.args[0])
        options = dict(node.keywords and [(k.arg, k.value) for k in node.keywords])
        if not (isinstance(operand, Known) and not operand.outline) \
                or set(options) - {"axis", "keepdims"} \
                or not all(isinstance(v, gast.Constant) for v in options.values()):
            return None
        axis = options.get("axis", gast.Constant(None, None)).value
        keepdims = options.get("keepdims", gast.Constant(False, None)).value
        if keepdims is True and operand.form == "array" and operand.rank:
            axes = (axis,) if type(axis) is int else axis
            reduced = operand.shape and Reduced(operand.shape, axes, True)
            return Known("array", operand.rank, reduced)
        if axis is None and keepdims is False:
            return Known("number")
        if type(axis) is int and keepdims is False and operand.form == "array" \
                and operand.rank and operand.rank > 1:
            return Known("array", operand.rank - 1)
        return Known("either")


def is_array(known) -> bool:
    """Whether `known` says: a float64 array, computed (no outline)."""
    return isinstance(known, Known) and known.form == "array" and not known.outline


def same_shape(g, like) -> bool:
    """Whether `unbroadcast(g, like)` is `g`: both of one shape class."""
    return is_array(g) and isinstance(like, Known) and like.shape is not None and g.shape == like.shape


def is_number(known, outline: bool = True) -> bool:
    return isinstance(known, Known) and known.form == "number" and (outline or not known.outline)


def _elementwise(function, operands):
    """What `function(*operands)`, elementwise, is known to be: float64 where NumPy's
    promotion of the operands' kinds gives float64 (run on sample numbers), an array where
    an operand is one, of the operands' rank and shape class where they share one; a
    Python number where all operands are (`n - 1`)."""
    if any(operand is None or operand == SHAPE for operand in operands):
        return None
    known = [operand for operand in operands if isinstance(operand, Known)]
    if any(operand.outline for operand in known):
        return None
    if not known and function is operator.pow:
        return None  # (Python's `**` of numbers alone may be complex: (-2) ** 0.5)
    samples = [np.float64(0.5) if isinstance(operand, Known) else _SAMPLES[operand]
               for operand in operands]
    try:
        with np.errstate(all="ignore"):
            kind = type(function(*samples))
    except Exception:
        return None
    if not known:
        return {int: INT, float: FLOAT, np.float64: Known("number")}.get(kind)
    if kind is not np.float64:
        return None
    arrays = [operand for operand in known if operand.form != "number"]
    if not arrays:
        return Known("number")
    ranks = {operand.rank for operand in arrays}
    classes = {operand.shape for operand in arrays}
    full = {shape for shape in classes if not isinstance(shape, Reduced)}
    if len(full) == 1 and None not in full and all(shape.of in full for shape in classes - full):
        classes = full  # (`x - np.max(x, axis=1, keepdims=True)` has the shape of `x`)
    rank = max(ranks) if None not in ranks else None
    # (an operation on 0-d arrays alone gives a NumPy number)
    form = "array" if any(operand.form == "array" and operand.rank for operand in arrays) \
        else "either"
    return Known(form, rank if form == "array" else None,
                 classes.pop() if len(classes) == 1 else None)


def _product(a, b):
    """`a @ b` of float64 arrays of known ranks."""
    if not (isinstance(a, Known) and isinstance(b, Known) and a.form == b.form == "array"
            and a.rank and b.rank and not a.outline and not b.outline):
        return None
    if a.rank == 1 and b.rank == 1:
        return Known("number")
    rank = max(a.rank, b.rank) if a.rank > 1 and b.rank > 1 else a.rank + b.rank - 2
    return Known("array" if rank else "number", rank)


def constant(node, kind) -> bool:
    return isinstance(node, gast.Constant) and type(node.value) is kind


def dropped_axes(index) -> int | None:
    """The axes a constant basic index drops (an int drops one, a slice none), or None for
    any other index."""
    parts = index.elts if isinstance(index, gast.Tuple) else [index]
    if not parts:
        return None  # (`x[()]` of a 0-d array is a number)
    dropped = 0
    for part in parts:
        if constant(part, int):
            dropped += 1
        elif not constant_slice(part):
            return None
    return dropped


def constant_slice(node) -> bool:
    """`slice(a, b)` or `slice(a, b, c)` of constant ints or None (how the generated code
    passes `x[a:b]`'s index; `slice(b)` alone, which stops at b, is not written so), or a
    `gast.Slice` of such."""
    if isinstance(node, gast.Slice):
        bounds = (node.lower, node.upper, node.step)
        return all(b is None or constant(b, int) or constant(b, type(None)) for b in bounds)
    return (isinstance(node, gast.Call) and isinstance(node.func, gast.Name)
            and node.func.id == "slice" and not node.keywords and 2 <= len(node.args) <= 3
            and all(constant(a, int) or constant(a, type(None)) for a in node.args))
