"""scalars: names that surely hold a number (shape `()`) when given parameters are floats.

`srcad.grad` of a function of Python floats is specialised on that fact: an adjoint rule's
`unbroadcast(g, x)` (and a tangent rule's `broadcast_like`) is the identity when the
operation's output and `x` are both numbers, so the generated code leaves the call out. A
name is a number if every definition of it is: a float parameter, a numeric constant, a
copy of a number, or arithmetic, a one-output ufunc, a `math` function or `abs`/`float`
applied to numbers only. Computed as a greatest fixpoint, so loops and branches are covered;
anything else (an array, a call result, a loop element, a value written in place) is not.
"""
from __future__ import annotations

import builtins

import gast
import numpy as np

from srcad.frontend.resolve import Loop, Operation, walk

_ARITHMETIC = {"+", "-", "*", "/", "**", "%", "//", "unary -", "unary +"}
_NUMBER_BUILTINS = {builtins.abs, builtins.float, builtins.pow}


def scalar_names(block: list, params, scalar_params: frozenset) -> frozenset:
    """The names of `block` (and its parameters) that hold numbers on every path, given that
    the parameters in `scalar_params` do."""
    if not scalar_params:
        return frozenset()
    candidates = {*params}
    for node in walk(block):
        if isinstance(node, Operation):
            candidates.update(node.targets)
    candidates -= set(params) - set(scalar_params)
    while True:
        size = len(candidates)
        for node in walk(block):
            if isinstance(node, Loop) and node.element:
                candidates.discard(node.element)
            elif isinstance(node, Operation):
                if node.mutates:
                    candidates.discard(node.mutates)
                if not _makes_a_number(node, candidates):
                    candidates.difference_update(node.targets)
        if len(candidates) == size:
            return frozenset(candidates)


def _makes_a_number(op: Operation, numbers: set) -> bool:
    if len(op.targets) != 1 or op.keywords:
        return False
    if op.kind == "constant":
        value = getattr(op.statement, "value", None)
        return isinstance(value, gast.Constant) and _is_number(value.value)
    if op.kind == "copy":
        return _is_number_atom(op.args[0], numbers)
    if op.kind != "call" or op.method or not _number_callee(op):
        return False
    return all(_is_number_atom(a, numbers) for a in op.args)


def _number_callee(op: Operation) -> bool:
    callee = op.callee
    if op.label in _ARITHMETIC:
        return True
    if isinstance(callee, np.ufunc):
        return callee.nout == 1 and callee.nin in (1, 2)
    try:
        return callee in _NUMBER_BUILTINS or getattr(callee, "__module__", None) == "math"
    except TypeError:  # an unhashable callee
        return False


def _is_number_atom(node, numbers: set) -> bool:
    if isinstance(node, gast.Name):
        return node.id in numbers
    return isinstance(node, gast.Constant) and _is_number(node.value)


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
