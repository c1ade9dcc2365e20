"""Rules for Python builtins and the `math` module, for code written on Python floats."""
import builtins
import math
import operator

import numpy as np

from srcad.rules.registry import defvjp, nondifferentiable, vjp_rules
from srcad.runtime import unbroadcast


def sum_vjp_iterable(g, ans, iterable, start=0):
    """`sum(xs)` adds the elements (or the rows of an array) one by one."""
    if isinstance(iterable, np.ndarray):
        return np.broadcast_to(g, iterable.shape)
    return type(iterable)(unbroadcast(g, item) for item in iterable) \
        if isinstance(iterable, (list, tuple)) else [unbroadcast(g, item) for item in iterable]


def extremum_rule(position: int):
    """The rule of argument `position` of `max`/`min`: the cotangent goes to the value that
    was returned (the first of equal ones, as Python picks it); over one iterable, to that
    element."""
    def rule(g, ans, *args, key=None, default=None):
        if len(args) == 1:
            items = list(args[0])
            chosen = next((k for k, item in enumerate(items) if item is ans), None)
            return tuple(g if k == chosen else None for k in range(len(items)))
        chosen = next(k for k, item in enumerate(args) if item is ans)
        return g if chosen == position else 0.0 * g
    rule.__name__ = f"extremum_vjp_{position}"
    return rule


defvjp(builtins.sum, sum_vjp_iterable, lambda g, ans, iterable, start=0: unbroadcast(g, start))
defvjp(float, lambda g, ans, x: g)
defvjp(abs, lambda g, ans, x: g * np.sign(x))
for _extremum in (builtins.max, builtins.min):
    defvjp(_extremum, *[extremum_rule(position) for position in range(8)])
defvjp(builtins.pow, *vjp_rules(operator.pow).rules)

# ---- math, on Python floats ------------------------------------------------------------------
defvjp(math.sin, lambda g, ans, x: g * math.cos(x))
defvjp(math.cos, lambda g, ans, x: -g * math.sin(x))
defvjp(math.tan, lambda g, ans, x: g / math.cos(x) ** 2)
defvjp(math.asin, lambda g, ans, x: g / math.sqrt(1.0 - x * x))
defvjp(math.acos, lambda g, ans, x: -g / math.sqrt(1.0 - x * x))
defvjp(math.atan, lambda g, ans, x: g / (1.0 + x * x))
defvjp(math.sinh, lambda g, ans, x: g * math.cosh(x))
defvjp(math.cosh, lambda g, ans, x: g * math.sinh(x))
defvjp(math.tanh, lambda g, ans, x: g * (1.0 - ans * ans))
defvjp(math.exp, lambda g, ans, x: g * ans)
defvjp(math.expm1, lambda g, ans, x: g * (ans + 1.0))
defvjp(math.log,
       lambda g, ans, x, base=math.e: g / (x * math.log(base)),
       lambda g, ans, x, base=math.e: -g * ans / (base * math.log(base)))
defvjp(math.log1p, lambda g, ans, x: g / (1.0 + x))
defvjp(math.log2, lambda g, ans, x: g / (x * math.log(2.0)))
defvjp(math.log10, lambda g, ans, x: g / (x * math.log(10.0)))
defvjp(math.sqrt, lambda g, ans, x: g * 0.5 / ans)
defvjp(math.fabs, lambda g, ans, x: g * math.copysign(1.0, x) if x else 0.0 * g)
defvjp(math.pow,
       lambda g, ans, x, y: g * y * x ** (y - 1) if y else 0.0 * g,
       lambda g, ans, x, y: g * ans * math.log(x) if x > 0 else 0.0 * g)
defvjp(math.hypot, lambda g, ans, x, y: g * x / ans, lambda g, ans, x, y: g * y / ans)
defvjp(math.atan2, lambda g, ans, y, x: g * x / (x * x + y * y),
       lambda g, ans, y, x: -g * y / (x * x + y * y))

nondifferentiable(int, bool, len, range, isinstance, enumerate, zip, reversed, round,
                  math.floor, math.ceil, math.trunc, math.isnan, math.isinf, math.isfinite)
