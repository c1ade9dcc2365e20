"""nest: flatten a structure of lists, tuples and dicts to its leaves, and build it back.

TensorFlow's `tf.nest` conventions: dicts are walked in sorted key order, a namedtuple keeps
its type, a dataclass or registered class (kernels/pytrees.py) is walked through its
children and keeps its class, anything else is a leaf (tensors, arrays, None).
"""
from __future__ import annotations

from srcad.kernels.pytrees import node


def flatten(structure) -> list:
    """The leaves of `structure`, depth first."""
    leaves = []
    _flatten_into(structure, leaves)
    return leaves


def _flatten_into(structure, leaves):
    if isinstance(structure, dict):
        for key in sorted(structure):
            _flatten_into(structure[key], leaves)
    elif isinstance(structure, (list, tuple)):
        for item in structure:
            _flatten_into(item, leaves)
    elif (parts := node(structure)) is not None:
        for item in parts[0]:
            _flatten_into(item, leaves)
    else:
        leaves.append(structure)


def pack_as(structure, leaves):
    """`structure` rebuilt with `leaves` (as many as `flatten(structure)` gives) in place."""
    iterator = iter(leaves)
    result = _pack(structure, iterator)
    return result


def _pack(structure, iterator):
    if isinstance(structure, dict):
        packed = {key: _pack(structure[key], iterator) for key in sorted(structure)}
        return type(structure)((key, packed[key]) for key in structure)
    if isinstance(structure, (list, tuple)):
        items = [_pack(item, iterator) for item in structure]
        if isinstance(structure, tuple) and hasattr(structure, "_fields"):
            return type(structure)(*items)
        return type(structure)(items)
    if (parts := node(structure)) is not None:
        return parts[1]([_pack(item, iterator) for item in parts[0]])
    return next(iterator)
