"""activity: which variables need adjoints.

A variable is *varied* if it depends differentiably on an argument in `wrt`, and *useful*
if the output depends differentiably on it; it is *active* if both. Only active variables
get adjoint code, and only calls with an active argument need a derivative rule, so
`np.zeros(n)` or a call on constants never asks for one.

Usefulness of tuples, lists and dicts built in the function is tracked per element where
they are only unpacked: in `return loss, {"norm": n}` with `has_aux`, the aux dict is not
useful, so `n` gets no adjoint even though it sits in the same tuple as `loss`.

Input: the `Operation`s of straight-line simple form (every name assigned once). Output:
an `Activity`.
"""
from __future__ import annotations

from dataclasses import dataclass

import gast

from srcad.frontend.resolve import Operation
from srcad.rules import is_nondifferentiable

DIFFERENTIABLE_KINDS = {"call", "copy", "pack", "unpack"}


@dataclass(frozen=True)
class Activity:
    active: frozenset          # names that need adjoints
    partial: dict              # packed name → keys of its only useful elements

    def element_useful(self, name: str, key) -> bool:
        return name not in self.partial or _key(key) in self.partial[name]


def carries_derivative(op: Operation) -> bool:
    """Whether derivatives can flow from the operation's arguments to its targets."""
    return op.kind in DIFFERENTIABLE_KINDS and not (
        op.kind == "call" and is_nondifferentiable(op.callee))


def analyze_activity(operations: list[Operation], wrt: set[str], output: str) -> Activity:
    varied = set(wrt)
    for op in operations:
        if carries_derivative(op) and varied.intersection(op.read_names()):
            varied.update(op.targets)
    useful, partial = {output}, {}
    for op in reversed(operations):
        if not carries_derivative(op):
            continue
        if op.kind == "unpack":
            keys = {i for i, target in enumerate(op.targets) if target in useful}
            if keys:
                partial.setdefault(op.args[0].id, set()).update(keys)
        elif op.kind == "pack" and op.targets[0] not in useful and op.targets[0] in partial:
            for key, element in zip(op.keys, op.args):
                if _key(key) in partial[op.targets[0]]:
                    useful.update(_names(element))
        elif useful.intersection(op.targets):
            useful.update(op.read_names())
    partial = {name: keys for name, keys in partial.items() if name not in useful}
    return Activity(frozenset(varied & (useful | set(partial))), partial)


def _key(node):
    return node.value if isinstance(node, gast.Constant) else ("node", id(node))


def _names(node):
    return [n.id for n in gast.walk(node) if isinstance(n, gast.Name)]
