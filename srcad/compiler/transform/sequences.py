"""sequences: which names of a function may hold tuples, lists or dicts.

The adjoint (or tangent) of such a name adds element by element (`accumulate`, in
kernels/adjoints.py), never by `+`, which would concatenate; both transforms ask this before they emit an addition.
"""
from __future__ import annotations

import operator

import gast
import numpy as np

from srcad.compiler.frontend.parse import param_names
from srcad.compiler.frontend.resolve import (IN_PLACE_KINDS, Loop, Operation, bound_names,
                                             operations, surely, walk)
from srcad.compiler.frontend.trees import statement_lists
from srcad.ops.array_arguments import array_positions
from srcad.ops.python_builtins import indexable, joined, repeated
from srcad.ops.registry import sequence_result


def sequence_names(block, containers) -> set:
    """Names that may hold tuples, lists or dicts, whose adjoints add element by element:
    packed values, unpacked values, container parameters and what is read out of them."""
    names = set(containers)
    for node in operations(block):
        if node.kind == "pack" or (node.kind == "call" and _may_return_a_sequence(node)):
            names.update(node.targets)
        elif node.kind == "unpack":
            names.add(node.args[0].id)
        elif node.kind in ("append", "insert", "pop"):
            names.add(node.mutates)
    packed = {node.targets[0]: node.args for node in operations(block) if node.kind == "pack"}
    while True:
        size = len(names)
        for node in walk(block):
            if isinstance(node, Loop) and node.iterable in names:
                names.add(node.element)
            elif isinstance(node, Operation) and node.kind == "unpack" and (
                    node.args[0].id not in packed  # elements of a value made elsewhere
                    or any(getattr(a, "id", None) in names for a in packed[node.args[0].id])):
                names.update(node.targets)
            elif isinstance(node, Operation) and node.targets and node.args \
                    and isinstance(node.args[0], gast.Name) and node.args[0].id in names \
                    and (node.kind in ("copy", "pop") or node.callee is operator.getitem
                         or node.callee is indexable):
                names.update(node.targets)
        if len(names) == size:
            return names


def resolve_sequence_arithmetic(block, params, containers, active) -> None:
    """Give `a + b` and `a * n` that join or repeat a list or tuple the rules of
    concatenation and repetition (`joined`, `repeated` in ops/python_builtins.py, which
    fall back to the operators' rules for arrays), where the result is `active` (needs a
    derivative): the operators' rules would hand each item of the result the whole
    cotangent (a zero, or a wrong, gradient). An operand must surely be a sequence (a
    display, or a name only ever bound to one): an item read from a list may be a list
    too, but is a number or an array in all but rare code, and their `+` stays inlined
    (`unbroadcast` refuses a join it is handed nonetheless)."""
    changed = True
    while changed:  # (a joined or repeated sequence may be joined or repeated in turn)
        sure, changed = _surely_sequences(block, params), False

        def is_sure(atom) -> bool:
            return isinstance(atom, (gast.List, gast.Tuple)) \
                or isinstance(atom, gast.Name) and atom.id in sure

        def may_be_an_integer(atom) -> bool:
            return isinstance(atom, gast.Name) or isinstance(atom, gast.Constant) \
                and isinstance(atom.value, int)
        # `+` and `*` of an active result with an operand surely a sequence (a constant
        # needs no rule): where there are none, which names may be sequences is not asked
        pairs = [op for op in operations(block)
                 if op.kind == "call" and op.method is None and len(op.args) == 2
                 and op.targets[0] in active
                 and (op.callee is operator.add or op.callee is operator.mul)
                 and any(map(is_sure, op.args))]
        if not pairs:
            return
        names = sequence_names(block, containers)

        def may_be(atom) -> bool:
            return isinstance(atom, gast.Name) and atom.id in names or is_sure(atom)
        for op in pairs:
            first, second = op.args
            if op.callee is operator.add and may_be(first) and may_be(second) \
                    and (is_sure(first) or is_sure(second)):
                op.callee, changed = joined, True
            elif op.callee is operator.mul and (is_sure(first) and may_be_an_integer(second)
                                                or may_be_an_integer(first) and is_sure(second)):
                op.callee, changed = repeated, True


def sequences_as_arrays(simple: gast.FunctionDef, block, resolver, namer) -> bool:
    """Hand NumPy the array it would make of a list or tuple, `np.dot([a, b], w)`,
    `[a, b] @ m` or `np.sum(xs)` after `xs.append(...)`: `t = np.asarray(xs)` goes in
    before the call, which reads `t`. The callee's rules then see an array, and `asarray`'s
    rules hand each item its share of the cotangent (or make the tangent of their array).
    Only arguments that are surely sequences (a display, or a name only ever bound to one)
    at positions the callee has a rule for (a shape or an index stays as written), and
    never `+` and `*`, which join and repeat lists (`joined` and `repeated` decide when
    they run). Returns whether `simple` changed (its block is then resolved again)."""
    sure, parents, changed = _surely_sequences(block, param_names(simple)), None, False
    for op in operations(block):
        if op.kind != "call" or op.method is not None or op.dynamic:
            continue
        for k in array_positions(op.callee, len(op.args)):
            atom = op.args[k]
            if not (isinstance(atom, gast.Name) and atom.id in sure
                    or isinstance(atom, (gast.List, gast.Tuple))):
                continue
            array = gast.Name(namer.temporary("array"), gast.Store(), None, None)
            made = gast.copy_location(gast.Assign([array], gast.Call(
                resolver.helper(np.asarray, namer), [atom], []), None), op.statement)
            made.unrecorded = getattr(op.statement, "unrecorded", False)
            parents = parents or statement_lists(simple)  # (where one goes in, at last)
            statements = parents[id(op.statement)]
            statements.insert(next(i for i, s in enumerate(statements) if s is op.statement),
                              made)
            _replace_operand(op.statement.value, atom, gast.Name(array.id, gast.Load(), None,
                                                                 None))
            changed = True
    return changed


def _replace_operand(value, old, new) -> None:
    if isinstance(value, gast.BinOp):
        value.left, value.right = (new if o is old else o for o in (value.left, value.right))
    else:
        value.args = [new if a is old else a for a in value.args]


def resolve_container_copies(block, params, name_of) -> None:
    """`ys = xs.copy()` of an `xs` that surely is a list (or a dict) as `ys = list(xs)` (or
    `dict(xs)`): a new container, holding the items `xs` holds (so appending to `ys`, or
    setting a key of it, leaves `xs` alone), with the rules of `list` (`dict`).
    `name_of(preferred, obj)`: the name generated code calls `obj` by."""
    copies = [op for op in operations(block) if op.kind == "call" and op.method == "copy"
              and len(op.args) == 1 and not op.keywords]
    if not copies:  # (nearly every function: the names are not asked after)
        return
    lists, dicts = _surely_made(block, params, list), _surely_made(block, params, dict)
    for op in copies:
        receiver = getattr(op.args[0], "id", None)
        kind = list if receiver in lists else dict if receiver in dicts else None
        if kind is not None:
            callee = gast.Name(name_of(kind.__name__, kind), gast.Load(), None, None)
            op.statement.value = gast.copy_location(gast.Call(callee, [op.args[0]], []),
                                                    op.statement.value)
            op.callee, op.method, op.dynamic = kind, None, False


def _surely_made(block, params, kind) -> frozenset:
    """The names bound only to containers of `kind` (list or dict): displays (and for dicts,
    comprehensions), `kind(...)` and copies, kept by writes and appends (a tuple has no
    `.copy()`: it is no list here)."""
    display = gast.List if kind is list else gast.Dict

    def makes(op: Operation, sure: set) -> bool:
        if op.kind == "setitem" or op.kind in ("append", "insert", "pop") and kind is list:
            return True
        if op.kind == "pack":
            return isinstance(op.statement.value, display)
        if op.kind == "copy" or op.method == "copy":
            return bool(op.args) and getattr(op.args[0], "id", None) in sure
        return op.kind == "call" and op.callee is kind
    return surely(block, bound_names(block, params), makes)


def _surely_sequences(block, params) -> set:
    """The names bound only to lists or tuples: displays, `list(...)`, `tuple(...)`, joins
    and repetitions of them, and copies (a greatest fixpoint, as arrays.surely_arrays)."""
    return surely(block, bound_names(block, params), _makes_a_sequence)


def _makes_a_sequence(op: Operation, sure: set) -> bool:
    if op.kind in IN_PLACE_KINDS:  # (they keep a list one)
        return True
    if op.kind == "pack":  # (a dict display is no sequence)
        return isinstance(op.statement.value, (gast.List, gast.Tuple))
    def is_sure(atom) -> bool:
        return isinstance(atom, (gast.List, gast.Tuple)) \
            or isinstance(atom, gast.Name) and atom.id in sure
    if op.kind == "copy":
        return bool(op.args) and all(map(is_sure, op.args))
    if op.kind != "call":
        return False
    if op.callee is operator.getitem:  # (a slice of a sequence is one)
        index = op.args[1]
        return is_sure(op.args[0]) and isinstance(index, gast.Call) \
            and getattr(index.func, "id", None) == "slice"
    if op.callee is operator.add or op.callee is joined:  # (a join of two sequences)
        return all(map(is_sure, op.args))
    if op.callee is operator.mul or op.callee is repeated:  # (a sequence repeated)
        return any(map(is_sure, op.args))
    return op.callee is list or op.callee is tuple


_ARRAY_LIBRARIES = ("numpy", "math", "builtins", "operator", "_operator", "scipy")


def _may_return_a_sequence(op: Operation) -> bool:
    """A call to the user's code (a helper, a method, a custom gradient, a function with
    a rule the user registered) may return a tuple, list or dict; NumPy's functions do not,
    but for those that split an array or return several results (their records'
    `sequence`): the adjoints their elements' readers give (`p[0]`, `p[1]`) add element by
    element, never by tuple `+`."""
    if op.callee is indexable:  # (its argument, or the keys of a dict: see sequence_names)
        return False
    module = getattr(op.callee, "__module__", None) or ""
    return op.dynamic or module.split(".")[0] not in _ARRAY_LIBRARIES \
        or sequence_result(op.callee) is not None
