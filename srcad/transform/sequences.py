"""sequences: which names of a function may hold tuples, lists or dicts.

The adjoint (or tangent) of such a name adds element by element (`runtime.accumulate`), never
by `+`, which would concatenate; both transforms ask this before they emit an addition.
"""
from __future__ import annotations

import operator

import gast
import numpy as np

from srcad.frontend.resolve import Loop, Operation, operations, surely, walk
from srcad.rules.python_builtins import indexable, joined, repeated


def sequence_names(block, containers) -> set:
    """Names that may hold tuples, lists or dicts, whose adjoints add element by element:
    packed values, unpacked values, container parameters and what is read out of them."""
    names = set(containers)
    for node in operations(block):
        if node.kind == "pack" or (node.kind == "call" and _may_return_a_sequence(node)):
            names.update(node.targets)
        elif node.kind == "unpack":
            names.add(node.args[0].id)
        elif node.kind == "append":
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
                    and (node.kind == "copy" or node.callee is operator.getitem
                         or node.callee is indexable):
                names.update(node.targets)
        if len(names) == size:
            return names


def resolve_sequence_arithmetic(block, containers, active) -> None:
    """Give `a + b` and `a * n` that join or repeat a list or tuple the rules of
    concatenation and repetition (`joined`, `repeated` in rules/python_builtins.py, which
    fall back to the operators' rules for arrays), where the result is `active` (needs a
    derivative): the operators' rules would hand each item of the result the whole
    cotangent (a zero, or a wrong, gradient). An operand must surely be a sequence (a
    display, or a name only ever bound to one): an item read from a list may be a list
    too, but is a number or an array in all but rare code, and their `+` stays inlined
    (`unbroadcast` refuses a join it is handed nonetheless)."""
    changed = True
    while changed:  # (a joined or repeated sequence may be joined or repeated in turn)
        names, sure, changed = sequence_names(block, containers), _surely_sequences(block), False

        def may_be(atom) -> bool:
            return isinstance(atom, gast.Name) and atom.id in names or is_sure(atom)

        def is_sure(atom) -> bool:
            return isinstance(atom, (gast.List, gast.Tuple)) \
                or isinstance(atom, gast.Name) and atom.id in sure

        def may_be_an_integer(atom) -> bool:
            return isinstance(atom, gast.Name) or isinstance(atom, gast.Constant) \
                and isinstance(atom.value, int)
        for op in operations(block):
            if op.kind != "call" or op.method is not None or len(op.args) != 2 \
                    or op.targets[0] not in active:  # (a constant needs no rule)
                continue
            first, second = op.args
            if op.callee is operator.add and may_be(first) and may_be(second) \
                    and (is_sure(first) or is_sure(second)):
                op.callee, changed = joined, True
            elif op.callee is operator.mul and (is_sure(first) and may_be_an_integer(second)
                                                or may_be_an_integer(first) and is_sure(second)):
                op.callee, changed = repeated, True


def _surely_sequences(block) -> set:
    """The names bound only to lists or tuples: displays, `list(...)`, `tuple(...)`, joins
    and repetitions of them, and copies (a greatest fixpoint, as aliasing.surely_arrays)."""
    return surely(block, {t for op in operations(block) for t in op.targets}, _makes_a_sequence)


def _makes_a_sequence(op: Operation, sure: set) -> bool:
    if op.kind in ("append", "setitem"):  # (they keep a list one)
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
    if op.callee is operator.add or op.callee is joined:  # (a join of two sequences)
        return all(map(is_sure, op.args))
    if op.callee is operator.mul or op.callee is repeated:  # (a sequence repeated)
        return any(map(is_sure, op.args))
    return op.callee is list or op.callee is tuple


_ARRAY_LIBRARIES = ("numpy", "math", "builtins", "operator", "_operator", "scipy")
# Functions with rules that return a tuple, list or dict of arrays: the adjoints their
# elements' readers give (`p[0]`, `p[1]`) add element by element, never by tuple `+`
SEQUENCE_RESULTS = (np.split, np.array_split, np.hsplit, np.vsplit, np.dsplit, np.gradient,
                     np.linalg.slogdet, np.linalg.eigh, np.linalg.eig, np.linalg.svd,
                     list, tuple, dict)


def _may_return_a_sequence(op: Operation) -> bool:
    """A call to the user's code (a helper, a method, a custom gradient, a function with
    a rule the user registered) may return a tuple, list or dict; NumPy's functions do not,
    but for those that split an array or return several results (`SEQUENCE_RESULTS`)."""
    if op.callee is indexable:  # (its argument, or the keys of a dict: see sequence_names)
        return False
    module = getattr(op.callee, "__module__", None) or ""
    return op.dynamic or module.split(".")[0] not in _ARRAY_LIBRARIES \
        or any(op.callee is fn for fn in SEQUENCE_RESULTS)
