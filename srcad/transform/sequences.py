"""sequences: which names of a function may hold tuples, lists or dicts.

The adjoint (or tangent) of such a name adds element by element (`runtime.accumulate`), never
by `+`, which would concatenate; both transforms ask this before they emit an addition.
"""
from __future__ import annotations

import operator

import gast
import numpy as np

from srcad.frontend.resolve import Loop, Operation, operations, walk
from srcad.rules.python_builtins import indexable


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
