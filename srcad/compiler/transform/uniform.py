"""uniform: cotangents that are one number at every element, kept as that number.

The cotangent a full reduction (`np.sum(x)`, `np.mean(x)`) gives its argument is the same
number at every element of it. Spread into an array (`np.full`), it costs a pass over memory,
and every elementwise rule on the way back costs a pass more (`b_y * 100.0`). Kept as the
number (the UNIFORM state of transform/adjoints.py), `b_y * 100.0` is arithmetic on one
float, and the first rule that mixes in an array (`b_y * 2 * x`) makes the array a person
would have made:

    s = np.sum(y)                      b_y = b_s                    (not np.full(...))
    y = 100.0 * z         ─▶           b_z = b_y * 100.0            (a number)
    z = x ** 2                         b_x = b_z * 2 * x            (one pass, x's shape)

A uniform cotangent crosses an elementwise operation, where a number in place of the array
changes no element of the result, only its shape: where the other arguments are number
constants, each argument has the output's shape; a term `unbroadcast(e, a)`, where `a` was
broadcast into the output, becomes `uniform_unbroadcast(e, out, a)` if `e` is a number (each
element of `a` appears size(out) / size(a) times in `out`) and `unbroadcast_from(e, out, a)`
otherwise (`e` stands for its broadcast to `out`'s shape). Any other operation reads the
array (`Adjoints.materialise`).
"""
from __future__ import annotations

import gast
import numpy as np

from srcad.compiler.frontend.resolve import Operation
from srcad.compiler.frontend.trees import clone, walk
from srcad.compiler.transform.adjoints import load
from srcad.compiler.transform.rule_calls import ELEMENTWISE_SYMBOLS
from srcad.kernels import outlines, adjoints as helpers


def spread_number(contribution, argument: str, helper_of):
    """The number `e` of a contribution `expand_reduced(e, argument)` (a full reduction's
    cotangent spread over its argument), or None for any other contribution."""
    if helper_of(contribution) is not helpers.expand_reduced or contribution.keywords:
        return None
    number, *rest = contribution.args
    spread_over = rest[0] if rest else None
    if not (isinstance(spread_over, gast.Name) and spread_over.id == argument):
        return None
    defaults = (None, False)  # axis, keepdims: all of the axes, dropped
    options = rest[1:]
    if len(options) > 2 or any(not isinstance(o, gast.Constant) or o.value is not d
                               for o, d in zip(options, defaults)):
        return None
    return number


def shares(op: Operation, arguments, cotangents, g: str, same_shape: frozenset,
           helper_of, bindings, numeric, scalars: frozenset = frozenset()):
    """How the uniform adjoint `g` of `op`'s output reaches each argument: a list of
    `(argument, expression, uniform)`, `uniform` telling whether the expression is a number
    standing for every element of the argument (else it is an array of the argument's
    shape); None where some argument needs `g` as an array. `numeric(name)` tells whether
    a name surely holds an array or a number (a differentiated value that is no sequence);
    `scalars` names numbers."""
    if op.keywords or not (isinstance(op.callee, np.ufunc) or op.label in ELEMENTWISE_SYMBOLS):
        return None
    result = []
    for argument, cotangent in zip(arguments, cotangents):
        if not isinstance(argument, gast.Name):
            return None
        if argument.id in same_shape and _elementwise(cotangent, bindings.callee):
            number = _reads_only(cotangent, g, bindings.named)
            if number or _full_shaped(cotangent, g, same_shape | scalars, bindings.named):
                result.append((argument.id, cotangent, number))
                continue
            # (`g * m` with m = np.max(x, axis=0, keepdims=True) has m's shape, not x's)
            cotangent = gast.Call(load(bindings.name_for("unbroadcast", helpers.unbroadcast)),
                                  [cotangent, load(argument.id)], [])
        if helper_of(cotangent) is not helpers.unbroadcast or cotangent.keywords:
            return None
        term, operand = cotangent.args
        if not (_elementwise(term, bindings.callee) and isinstance(operand, gast.Name)
                and operand.id == argument.id):
            return None
        number = _reads_only(term, g, bindings.named)
        if not number and not all(numeric(n.id) or n.id == g or bindings.named(n.id)
                                  for n in walk(term) if isinstance(n, gast.Name)):
            term = _as_array(term, g, bindings)  # another operand may be a list
        helper = ("uniform_unbroadcast", outlines.uniform_unbroadcast) if number \
            else ("unbroadcast_from", outlines.unbroadcast_from)
        share = gast.Call(load(bindings.name_for(*helper)), [term, _shape_read(op.targets[0]),
                                                _shape_read(argument.id)], [])
        result.append((argument.id, share, number))
    return result


def _as_array(term, g: str, bindings):
    """`term` with `g` read as a 0-d array (`outlines.array_of`)."""
    wrap = bindings.name_for("array_of", outlines.array_of)

    class Wrap(gast.NodeTransformer):
        def visit_Name(self, node):
            if node.id != g:
                return node
            return gast.Call(load(wrap), [node], [])
    return Wrap().visit(clone(term))


def _shape_read(name: str) -> gast.Name:
    node = load(name)
    node.shape_only = True  # only its shape is read: the forward sweep may keep just that
    return node


def _reads_only(expression, g: str, named) -> bool:
    """Whether the only value `expression` reads is `g` (besides bound modules/helpers)."""
    return all(n.id == g or named(n.id) is not None for n in walk(expression)
               if isinstance(n, gast.Name))


def _full_shaped(expression, g: str, full: frozenset, named) -> bool:
    """Whether each value `expression` reads besides `g` is in `full` (the names of the
    output's shape, and numbers): then an array it makes from the number `g` has the
    output's shape."""
    return all(n.id == g or n.id in full or named(n.id) is not None for n in walk(expression)
               if isinstance(n, gast.Name))


def _elementwise(expression, callee) -> bool:
    """Whether `expression` is built of names, number constants, operators and NumPy
    ufunc calls only: given a number for an array, it computes the same at every element."""
    if isinstance(expression, gast.Name):
        return True
    if isinstance(expression, gast.Constant):
        return isinstance(expression.value, (int, float)) and not isinstance(
            expression.value, bool)
    if isinstance(expression, gast.BinOp):
        return _elementwise(expression.left, callee) and _elementwise(expression.right, callee)
    if isinstance(expression, gast.UnaryOp):
        return isinstance(expression.op, (gast.USub, gast.UAdd)) \
            and _elementwise(expression.operand, callee)
    if isinstance(expression, gast.Call) and not expression.keywords:
        return isinstance(callee(expression.func), np.ufunc) \
            and all(_elementwise(a, callee) for a in expression.args)
    return False
