"""softmax: the derivative of a softmax written out in NumPy, as one rule.

ML code writes softmax stabilised by its maximum:

    S = X - np.max(X, axis=1, keepdims=True)
    E = np.exp(S)
    A = E / np.sum(E, axis=1, keepdims=True)

The chain rule through these lines costs a pass over the array per operation and keeps `E`
for the backward sweep; the softmax's own VJP, `A * (g - sum(g * A))`, reads `A` alone. And
`A` is the same for any shift constant along the summed axis, so the shift's derivative is
zero: the chain rule finds it as terms that cancel (the max's tie-sharing VJP of a row sum
of rounding errors). Where the lines match, with `E`, the sum and `S` bound once and read
only as above (no other code sees them) and the sum alone between `np.exp` and the quotient
(nothing writes `S` there), `A = E / s` keeps its forward code but is
differentiated as `softmax(S, axis)`, which `S` alone feeds, and a shift that is a max or
min reduction, constant along every summed axis, gets no derivative (`invariant_shift`), as
`jax.nn.softmax` stops the gradient of its maximum (both, with their rules, in
ops/fused_softmax.py). Only the reverse-mode transforms do
this: a forward Jacobian batches the lines as they are.
"""
from __future__ import annotations

import operator
from collections import Counter

import gast
import numpy as np

from srcad.compiler.analysis.shapes import reduction_axes
from srcad.compiler.frontend.parse import param_names
from srcad.compiler.frontend.resolve import Branch, Loop, Operation, operations, walk
from srcad.compiler.frontend.trees import name_counts
from srcad.ops.fused_softmax import invariant_shift, softmax
from srcad.ops.registry import reduction_of



def use_softmax_rules(simple: gast.FunctionDef, block) -> None:
    """Differentiate each softmax of `block` written as the module docstring shows by the
    rules of `softmax` (and its shift by those of `invariant_shift`)."""
    if not any(op.kind == "call" and op.callee is operator.truediv for op in operations(block)):
        return  # (no quotient, no softmax: the function's names are not counted for nothing)
    reads, binds = name_counts(simple)
    parameters = set(param_names(simple))
    for nodes in _blocks(block):
        _use_in_block(nodes, reads, binds, parameters)


def _blocks(block):
    """`block` and every block nested in it: the straight-line lists of nodes."""
    yield block
    for node in walk(block):
        if isinstance(node, Branch):
            yield node.body
            yield node.orelse
        elif isinstance(node, Loop):
            yield node.body


def _use_in_block(nodes: list, reads: Counter, binds: Counter, parameters: set) -> None:
    """`use_softmax_rules` on the lines of one block: `A = E / s` differentiated as the
    softmax of `S` only where the sum alone lies between `E` and the quotient, so that `S`
    is the value `E` was made of (no rebinding, write into it or into an alias between)."""
    made = {node.targets[0]: position for position, node in enumerate(nodes)
            if isinstance(node, Operation) and node.kind == "call" and len(node.targets) == 1
            and binds[node.targets[0]] == 1}

    def only_read_by(name: str, count: int) -> bool:
        return binds[name] == 1 and reads[name] == count

    for position, normalised in enumerate(nodes):  # A = E / s
        if not (isinstance(normalised, Operation) and normalised.kind == "call"
                and normalised.callee is operator.truediv
                and all(isinstance(a, gast.Name) for a in normalised.args)):
            continue
        exponentials, total = (_made_by(nodes, made, a) for a in normalised.args)
        if exponentials is None or total is None or not only_read_by(total.targets[0], 1) \
                or not only_read_by(exponentials.targets[0], 2) \
                or not _is_call(exponentials, np.exp) or exponentials.keywords \
                or len(exponentials.args) != 1 or not _is_call(total, np.sum) \
                or total.args[0].id != exponentials.targets[0]:
            continue
        summed = reduction_axes(total)
        if summed is None or summed[0] is not None and not (summed[0] and summed[1]):
            continue  # (`E / np.sum(E, axis=1)` divides along another axis; `axis=()` is E)
        exponent = exponentials.args[0]
        if nodes[made[exponentials.targets[0]] + 1:position] != [total]:
            continue  # (the VJP reaches `S` where the quotient is: nothing may write it first)
        axes = summed[0] or (None,)
        axis = gast.Constant(axes[0], None) if len(axes) == 1 else gast.Tuple(
            [gast.Constant(a, None) for a in axes], gast.Load())
        normalised.callee, normalised.args = softmax, (exponent,)
        normalised.keywords = (("axis", axis),)
        shifted = _made_by(nodes, made, exponent)
        if shifted is not None and only_read_by(shifted.targets[0], 1) \
                and shifted.callee is operator.sub and _is_invariant(
                    shifted, _made_by(nodes, made, shifted.args[1]), summed, binds,
                    parameters):
            shifted.callee = invariant_shift


def _made_by(nodes, made, name):
    """The operation of `nodes` binding `name`, if it is a name bound once there."""
    position = made.get(getattr(name, "id", None))
    return None if position is None else nodes[position]


def _is_invariant(shifted, shift, summed, binds, parameters) -> bool:
    """Whether `shift`, the operation making what `shifted` subtracts, is a max or min
    reduction constant along the `summed` axes of the softmax."""
    if shift is None or not _is_call(shift, shift.callee) \
            or reduction_of(shift.callee) not in (np.maximum, np.minimum):
        return False
    base = shifted.args[0]
    aligned = isinstance(base, gast.Name) and shift.args[0].id == base.id \
        and binds[base.id] + (base.id in parameters) == 1
    return _constant_along(reduction_axes(shift), summed, aligned)


def _is_call(op, callee) -> bool:
    """Whether `op` calls `callee` (as a function) on a name first."""
    return op.callee is callee and not op.method and bool(op.args) \
        and isinstance(op.args[0], gast.Name)


def _constant_along(shift, summed, aligned: bool) -> bool:
    """Whether a reduction `shift` is constant along the axes of a softmax's sum `summed`:
    a full reduction is; else the sum keeps its axes (it divides along them) and the shift
    reduced each of them, kept, counted from the same end (negative axes count from the
    last, which broadcasting aligns; others need the shift made of the shifted array
    itself, `aligned`, so that both have as many axes)."""
    if shift is None:
        return False
    (shift_axes, shift_kept), (summed_axes, summed_kept) = shift, summed
    if shift_axes is None:
        return True
    axes = set(shift_axes) | set(summed_axes or ())
    return summed_axes is not None and summed_kept and shift_kept \
        and set(summed_axes) <= set(shift_axes) and (aligned or max(axes) < 0)
