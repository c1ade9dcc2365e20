"""outline: a gradient-only program does not compute what only the loss value needs.

`srcad.grad` returns the gradient, not the value. In its fused program (fuse.py) the value
is read only by the seed, which needs its shape and dtype (one real number), and the
backward sweep reads many intermediate values only for their shapes (`unbroadcast(g, x)`).
The operations that lead only there would still run: for a loss like
`np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)`, five passes over the
array of ten. Here they become *outlines* (srcad/kernels/outlines.py), their result's shape and
dtype without its elements:

    pow_4 = sub_3 ** 2                      pow_4 = outline(pow, sub_3, 2)
    mul_5 = 100.0 * pow_4          ─▶       mul_5 = outline(mul, 100.0, pow_4)
    sum_10 = np.sum(add_9)                  sum_10 = reduction_outline(np.sum, add_9)

Input: the forward sweep (reverse.py, before values are released), the names read after it
in full and those read only for their shape (by `unbroadcast` and its kin, by the seed).
An assignment whose target is read only for its shape becomes its outline if it is an
elementwise operator or ufunc that keeps its operands' inexact dtype, or a sum or mean over
all axes: its operands are then read for their outline only, in turn. So is an assignment
nothing reads (left out, it would not raise where the function does). Everything else
stays, and what it reads is read in full. A run of adjacent elementwise outlines that only
feed one another is then outlined by one call, `joint_outline`, which checks once that its leaves
are inexact arrays of one shape and dtype (each step's outline is then theirs) and
otherwise falls back on the chain, nested in one expression:

    sum_10 = joint_outline(np.sum, mul_5, sub_7) or reduction_outline(np.sum, outline(...))
"""
from __future__ import annotations

from collections import Counter

import gast
import numpy as np

from srcad.compiler.frontend.trees import clone
from srcad.compiler.transform.adjoints import assign, load
from srcad.compiler.transform.statement_names import StatementNames
from srcad.kernels import outlines
from srcad.ops.registry import promotes, reduction_of

_REDUCTION_DEFAULTS = {"axis": None, "dtype": None, "out": None, "keepdims": False}


def outline_unread(statements: list, values: set, shapes: set, bindings, known=None
                   ) -> tuple[list, set]:
    """`statements` (loops and branches are kept whole) with outlines in place of the values
    only the shapes of are read after them (`shapes`; `values` are read in full), and the
    names that now hold outlines; `known`: the names in each statement
    (statement_names.py), which gets those of the statements outlined."""
    known = StatementNames() if known is None else known
    read_after = set(values) | set(shapes)
    values, shapes = set(values), set(shapes)
    kept, outlined = [], {}
    reads, binds = Counter(), Counter()  # (of the statements kept, for _joined)
    for statement in reversed(statements):
        target = _assigned_name(statement)
        if target is not None:
            read_in_full = target in values
            values.discard(target)
            shapes.discard(target)
            # (a value nothing reads is outlined too, not left out: its shapes are still
            # checked, as the user's function would raise on operands that do not broadcast)
            atoms = None if read_in_full else _atoms_of(statement.value, bindings)
            if atoms is not None:
                kind, fn, operands = atoms
                helper = ("reduction_outline", outlines.reduction_outline) \
                    if kind == "reduction" else ("outline", outlines.outline)
                kept.append(assign(target, gast.Call(
                    load(bindings.name_for(*helper)), [fn, *operands], [])))
                _count(known.of(kept[-1]), reads, binds)
                outlined[target] = kind
                shapes.update(o.id for o in operands if isinstance(o, gast.Name))
                continue
        names = known.of(statement)  # (a nested function's annotations count as read)
        for name in names:
            if type(name.ctx) is gast.Load:
                (shapes if getattr(name, "shape_only", False) else values).add(name.id)
        _count(names, reads, binds)
        kept.append(statement)
    return _joined(kept[::-1], outlined, read_after, reads, binds, bindings)


def _count(names: list, reads: Counter, binds: Counter) -> None:
    """Add the `Name` nodes `names` to the counts of reads and of bindings (stores, dels)."""
    for name in names:
        if type(name.ctx) is gast.Load:
            reads[name.id] += 1
        elif type(name.ctx) is not gast.Param:
            binds[name.id] += 1


def _joined(statements: list, outlined: dict, read_after: set, reads: Counter,
            binds: Counter, bindings) -> tuple[list, set]:
    """`statements` with each run of adjacent elementwise outlines that only feed one another
    outlined by one `joint_outline` call, falling back on the run as one nested expression
    where it gives None (`outline` costs a call per step: five for Rosenbrock's loss), and
    the names that hold outlines. `outlined` maps those names to their kind; `reads` and
    `binds` count each name's reads and bindings in `statements`. Only adjacent steps join:
    a statement between them might raise first, have an effect or change a list the chain
    reads."""
    named = {position: name for position, name in enumerate(map(_assigned_name, statements))
             if name in outlined and binds[name] == 1}
    reader = {operand.id: position for position in named
              for operand in statements[position].value.args[1:]
              if isinstance(operand, gast.Name)}
    inlined = {name for name in named.values() if outlined[name] == "elementwise"
               and name not in read_after and reads[name] == 1 and name in reader}
    dropped = set()
    for position in sorted(named, reverse=True):
        if position in dropped:
            continue
        run, step = {position}, position - 1
        while named.get(step) in inlined and reader[named[step]] in run:
            run.add(step)
            step -= 1
        if len(run) == 1:
            continue
        leaves = []
        chain = _nested(position, statements, named, run, leaves)
        if _joinable(leaves):
            names = dict.fromkeys(leaf.id for leaf in leaves if isinstance(leaf, gast.Name))
            joint = gast.Call(load(bindings.name_for("joint_outline", outlines.joint_outline)),
                              [clone(chain.args[0]), *map(load, names)], [])
            statements[position] = assign(named[position], gast.BoolOp(gast.Or(), [joint, chain]))
            dropped |= run - {position}
    return ([s for position, s in enumerate(statements) if position not in dropped],
            set(outlined) - {named[position] for position in dropped})


def _joinable(leaves) -> bool:
    """Whether a run of outlines on `leaves` can be outlined by `joint_outline`: every
    constant is a real Python number (a complex one changes the dtype) and every step
    reads a name (Python's arithmetic on numbers alone may make a complex number)."""
    return all(leaf is not None and (not isinstance(leaf, gast.Constant)
                                     or type(leaf.value) in (int, float)) for leaf in leaves)


def _nested(position, statements, named, run, leaves: list):
    """The outline call of `statements[position]` with its operands made in `run` replaced
    by their own calls, nested; the other operands go to `leaves`. A call with no name
    among its operands adds a leaf None, which keeps the run as it is."""
    call = statements[position].value
    made_in_run = {named[step]: step for step in run if step != position}
    operands = []
    for operand in call.args[1:]:
        if isinstance(operand, gast.Name) and operand.id in made_in_run:
            operands.append(_nested(made_in_run[operand.id], statements, named, run, leaves))
        else:
            leaves.append(operand)
            operands.append(clone(operand))
    if not any(isinstance(operand, (gast.Name, gast.Call)) for operand in operands):
        leaves.append(None)
    return gast.Call(clone(call.func), [clone(call.args[0]), *operands], [])


def _assigned_name(statement):
    if isinstance(statement, gast.Assign) and len(statement.targets) == 1 \
            and isinstance(statement.targets[0], gast.Name):
        return statement.targets[0].id
    return None


def _atoms_of(expression, bindings):
    """`(kind, callee expression, operands)` of an outlined operation on names and numbers."""
    if isinstance(expression, gast.BinOp):
        operands, operator_name = [expression.left, expression.right], type(expression.op)
    elif isinstance(expression, gast.UnaryOp):
        operands, operator_name = [expression.operand], type(expression.op)
    elif isinstance(expression, gast.Call):
        callee = bindings.callee(expression.func)
        arguments = expression.args
        if promotes(callee) and not expression.keywords \
                and len(arguments) == callee.nin and all(map(_is_atom, arguments)):
            return "elementwise", expression.func, arguments  # (a further one is `out`)
        if reduction_of(callee) in (np.add, "mean") and arguments and _is_atom(arguments[0]) \
                and _over_all_axes(expression):
            return "reduction", expression.func, arguments[:1]
        return None
    else:
        return None
    fn = outlines.OUTLINED_OPERATORS.get(operator_name.__name__)
    if fn is None or not all(map(_is_atom, operands)):
        return None
    return "elementwise", load(bindings.name_for(fn.__name__, fn)), operands


def _over_all_axes(call) -> bool:
    """`np.sum(x)` or `np.mean(x)` with the defaults spelled out or not (an inlined rule
    writes `np.mean(t, None, dtype=None, keepdims=False)`): over all axes, into a number."""
    spelled = list(zip(_REDUCTION_DEFAULTS, call.args[1:])) + [
        (k.arg, k.value) for k in call.keywords]
    return len(call.args) <= len(_REDUCTION_DEFAULTS) + 1 and all(
        name in _REDUCTION_DEFAULTS and isinstance(value, gast.Constant)
        and value.value is _REDUCTION_DEFAULTS[name] for name, value in spelled)


def _is_atom(node) -> bool:
    return isinstance(node, gast.Name) or isinstance(node, gast.Constant) and type(
        node.value) in (int, float, complex)
