"""array_arguments: which arguments of a NumPy call are arrays a list may stand for.

NumPy makes an array of a list or tuple passed where it takes one (`np.dot([a, b], w)`);
the rules are written for arrays. Source mode makes that array before the call
(transform/sequences.py), tape mode before it records the call (tape/dispatch.py): at the
positions this module names, never for a function that takes a sequence of arrays.
"""
from __future__ import annotations

import operator

from srcad.ops.registry import takes_sequences, vjp_rules

# `x op y` on lists raises for these (NumPy makes arrays of them); `%` formats strings
_ARRAY_OPERATORS = (operator.sub, operator.truediv, operator.floordiv, operator.pow,
                    operator.matmul)


def array_positions(callee, count: int) -> range | list:
    """The positions of a call's arguments NumPy or SciPy takes as arrays, with a rule."""
    if any(callee is op for op in _ARRAY_OPERATORS):
        return range(count)
    module = getattr(callee, "__module__", None) or ""
    if module.split(".")[0] not in ("numpy", "scipy") \
            or takes_sequences(callee):  # (the array is made by NumPy itself)
        return []
    rules = vjp_rules(callee)
    return [k for k, rule in enumerate(rules.rules[:count]) if rule is not None] if rules else []
