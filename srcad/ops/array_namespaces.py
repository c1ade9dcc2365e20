"""An array's Array API namespace (`xp = x.__array_namespace__()`): a constant.

The namespace is a module chosen by the array's type, whatever its values: no derivative
flows through it. Its functions are then looked up at run time (runtime/methods.py) and
find their own records: for a NumPy array the namespace is `numpy`, so `xp.sin(x)` is
`np.sin(x)` with NumPy's rules.
"""
from srcad.ops.registry import declare, nondifferentiable


def namespace_of(a, *args, **kwargs):
    """`a.__array_namespace__(...)` for an array or a NumPy number alike: what
    differentiated code calls for the method (the record's `methods`)."""
    return a.__array_namespace__(*args, **kwargs)


nondifferentiable(namespace_of)
declare(namespace_of, methods=("__array_namespace__",))
