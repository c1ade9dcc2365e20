"""Rules for Python builtins that numerical code differentiates through."""
import builtins

import numpy as np

from srcad.rules.registry import defvjp, nondifferentiable
from srcad.runtime import unbroadcast


def sum_vjp_iterable(g, ans, iterable, start=0):
    """`sum(xs)` adds the elements (or the rows of an array) one by one."""
    if isinstance(iterable, np.ndarray):
        return np.broadcast_to(g, iterable.shape)
    return type(iterable)(unbroadcast(g, item) for item in iterable) \
        if isinstance(iterable, (list, tuple)) else [unbroadcast(g, item) for item in iterable]


defvjp(builtins.sum, sum_vjp_iterable, lambda g, ans, iterable, start=0: unbroadcast(g, start))
defvjp(float, lambda g, ans, x: g)
defvjp(abs, lambda g, ans, x: g * np.sign(x))
nondifferentiable(int, bool, len, range, isinstance, enumerate, zip, reversed)
