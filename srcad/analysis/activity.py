"""activity: which variables need adjoints.

A variable is *varied* if it depends differentiably on an argument in `wrt`, and *useful*
if the output depends differentiably on it; it is *active* if both. Only active variables
get adjoint code, and only calls with an active argument need a derivative rule, so
`np.zeros(n)` or a call on constants never asks for one.

Input: the `Operation`s of straight-line simple form (every name assigned once). Output:
the set of active names.
"""
from __future__ import annotations

from srcad.frontend.resolve import Operation
from srcad.rules import is_nondifferentiable

DIFFERENTIABLE_KINDS = {"call", "copy", "pack", "unpack"}


def carries_derivative(op: Operation) -> bool:
    """Whether derivatives can flow from the operation's arguments to its targets."""
    return op.kind in DIFFERENTIABLE_KINDS and not (
        op.kind == "call" and is_nondifferentiable(op.callee))


def active_names(operations: list[Operation], wrt: set[str], output: str) -> set[str]:
    varied = set(wrt)
    for op in operations:
        if carries_derivative(op) and varied.intersection(op.read_names()):
            varied.update(op.targets)
    useful = {output}
    for op in reversed(operations):
        if carries_derivative(op) and useful.intersection(op.targets):
            useful.update(op.read_names())
    return varied & useful
