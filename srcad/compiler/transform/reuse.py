"""reuse: compute a cotangent in the memory of the adjoint it is computed from.

Input: the cotangent expressions one operation gives its arguments, in the order the
backward sweep evaluates them, and the name `g` of the output's adjoint, which the sweep
owns (an array it made and handed to no one, transform/adjoints.py) and never reads again
after this operation. Output: an order to evaluate them in, and the same expressions, the last one that reads `g` rewritten
to write the arithmetic on `g` into `g`'s array (`multiply_into` and friends in
kernels/adjoints.py), and that read of `g` marked `consumed`, so that a cotangent that is `g`
itself (`unbroadcast(g, x)`, a copy) makes the argument's adjoint the owner of the array.

    b_x = b_y * 2 * x        ─▶      b_x = multiply_into(multiply_into(b_y, 2), x)

Sound only if nothing else holds `g`'s array when it is overwritten: `g` is read once in
the rewritten expression, and each earlier expression that reads `g` gives a new array
(arithmetic, or `unbroadcast` or `expand_reduced` of arithmetic), never `g` or a view.
"""
from __future__ import annotations

import gast

from srcad.compiler.frontend.trees import clone, name_nodes, names_in
from srcad.kernels import adjoints as helpers

_IN_PLACE = {gast.Add: ("add_into", helpers.add_into),
             gast.Sub: ("subtract_into", helpers.subtract_into),
             gast.Mult: ("multiply_into", helpers.multiply_into),
             gast.Div: ("divide_into", helpers.divide_into)}
_COMMUTATIVE = (gast.Add, gast.Mult)
_NEGATIVE = ("negative_into", helpers.negative_into)
HELPERS = frozenset(obj for _, obj in [*_IN_PLACE.values(), _NEGATIVE])
_COPYING = (helpers.unbroadcast, helpers.expand_reduced)


def consume(expressions: list, g: str, helper_of, bind) -> tuple[list, list]:
    """The positions of `expressions` in the order to evaluate them, and the expressions,
    the last reader of `g` writing into `g` where that is sound. A reader that may give
    `g` itself goes last, so that the readers that make new arrays read `g` intact first
    (each expression is one argument's cotangent: their order changes no value).

    `helper_of(call)` is the runtime helper a call node calls (or None); `bind(name, obj)`
    names a helper for generated code."""
    reads = [g in names_in(expression) for expression in expressions]
    order = sorted(range(len(expressions)), key=lambda i: reads[i] and not
                   _new_array(expressions[i], helper_of))
    readers = [i for i in order if reads[i]]
    if not readers:
        return order, expressions
    last = readers[-1]
    if sum(n.id == g for n in name_nodes(expressions[last])) != 1 \
            or not all(_new_array(expressions[i], helper_of) for i in readers[:-1]):
        return order, expressions
    rewritten = list(expressions)
    rewritten[last] = _Rewriter(g, bind, helper_of).visit(clone(expressions[last]))
    return order, rewritten


def _new_array(expression, helper_of) -> bool:
    """Whether `expression` surely gives an array of its own (never one of its operands)."""
    if isinstance(expression, (gast.BinOp, gast.UnaryOp)):
        return not isinstance(expression, gast.UnaryOp) \
            or isinstance(expression.op, (gast.USub, gast.UAdd))
    return isinstance(expression, gast.Call) and helper_of(expression) in _COPYING \
        and bool(expression.args) and _new_array(expression.args[0], helper_of)


class _Rewriter(gast.NodeTransformer):
    """Arithmetic whose operand holds `g`'s array (`g`, or a rewritten operation on it)
    becomes an operation into that array; the read of `g` is marked `consumed`."""

    def __init__(self, g: str, bind, helper_of):
        self.g = g
        self.bind = bind
        self.helper_of = helper_of

    def visit_Call(self, node):  # `unbroadcast(g, y)` is g's array or a new sum of it
        self.generic_visit(node)
        if self.helper_of(node) is helpers.unbroadcast and node.args \
                and self._holds_g(node.args[0]):
            node.holds_g = True
        return node

    def visit_Name(self, node):
        if node.id == self.g:
            node.consumed = True
        return node

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, gast.USub) and self._holds_g(node.operand):
            return self._call(_NEGATIVE, [node.operand])
        return node

    def visit_BinOp(self, node):
        self.generic_visit(node)
        helper = _IN_PLACE.get(type(node.op))
        if helper is None:
            return node
        if self._holds_g(node.left):
            return self._call(helper, [node.left, node.right])
        if isinstance(node.op, _COMMUTATIVE) and self._holds_g(node.right):
            return self._call(helper, [node.right, node.left])
        return node

    def _holds_g(self, node) -> bool:
        return getattr(node, "consumed", False) or getattr(node, "holds_g", False)

    def _call(self, helper, args):
        call = gast.Call(gast.Name(self.bind(*helper), gast.Load(), None, None), args, [])
        call.holds_g = True
        return call
