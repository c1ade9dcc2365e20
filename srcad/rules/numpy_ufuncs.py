"""Rules for arithmetic operators and NumPy's elementwise functions.

Each rule is one expression, so the reverse transform inlines it with the call's arguments
substituted: the adjoint reads `b_x = b_y * np.cos(x)`, not a call to a rule. Operators
(`x * y`) and their ufunc twins (`np.multiply(x, y)`) share one rule. `unbroadcast` undoes
NumPy broadcasting; the inliner drops it where shapes provably agree.
"""
import math
import operator

import numpy as np

from srcad.rules.registry import defvjp, nondifferentiable
from srcad.runtime import log_or_zero, unbroadcast

# Python floats, so multiplying a float32 array by them keeps float32.
LN2, LN10 = math.log(2.0), math.log(10.0)
DEG, RAD = math.pi / 180.0, 180.0 / math.pi


def _define_twins(functions, *rules):
    for fn in functions:
        defvjp(fn, *rules)


# ---- binary arithmetic ----------------------------------------------------------------
_define_twins((operator.add, np.add),
              lambda g, ans, x, y: unbroadcast(g, x),
              lambda g, ans, x, y: unbroadcast(g, y))
_define_twins((operator.sub, np.subtract),
              lambda g, ans, x, y: unbroadcast(g, x),
              lambda g, ans, x, y: unbroadcast(-g, y))
_define_twins((operator.mul, np.multiply),
              lambda g, ans, x, y: unbroadcast(g * y, x),
              lambda g, ans, x, y: unbroadcast(g * x, y))
_define_twins((operator.truediv, np.divide),
              lambda g, ans, x, y: unbroadcast(g / y, x),
              lambda g, ans, x, y: unbroadcast(-g * ans / y, y))
_define_twins((operator.pow, np.power),
              lambda g, ans, x, y: unbroadcast(g * y * x ** np.where(y, y - 1, 1), x),
              lambda g, ans, x, y: unbroadcast(g * ans * log_or_zero(x), y))
_define_twins((operator.mod, np.mod),
              lambda g, ans, x, y: unbroadcast(g, x),
              lambda g, ans, x, y: unbroadcast(-g * np.floor_divide(x, y), y))
# A tie splits the cotangent in halves, as autograd does.
_define_twins((np.maximum, np.fmax, np.minimum, np.fmin),
              lambda g, ans, x, y: unbroadcast(np.where(x == y, 0.5 * g, g * (x == ans)), x),
              lambda g, ans, x, y: unbroadcast(np.where(x == y, 0.5 * g, g * (y == ans)), y))
defvjp(np.where,
       None,
       lambda g, ans, condition, x, y: unbroadcast(np.where(condition, g, 0.0), x),
       lambda g, ans, condition, x, y: unbroadcast(np.where(condition, 0.0, g), y))

# ---- unary arithmetic -------------------------------------------------------------------
_define_twins((operator.neg, np.negative), lambda g, ans, x: -g)
_define_twins((operator.pos, np.positive), lambda g, ans, x: g)

# ---- elementwise functions --------------------------------------------------------------
defvjp(np.exp, lambda g, ans, x: g * ans)
defvjp(np.exp2, lambda g, ans, x: g * ans * LN2)
defvjp(np.expm1, lambda g, ans, x: g * (ans + 1.0))
defvjp(np.log, lambda g, ans, x: g / x)
defvjp(np.log2, lambda g, ans, x: g / (x * LN2))
defvjp(np.log10, lambda g, ans, x: g / (x * LN10))
defvjp(np.log1p, lambda g, ans, x: g / (1.0 + x))
defvjp(np.sqrt, lambda g, ans, x: g * 0.5 / ans)
defvjp(np.cbrt, lambda g, ans, x: g / (3.0 * ans ** 2))
defvjp(np.square, lambda g, ans, x: g * 2.0 * x)
defvjp(np.reciprocal, lambda g, ans, x: -g * ans ** 2)
defvjp(np.absolute, lambda g, ans, x: g * np.sign(x))
defvjp(np.sin, lambda g, ans, x: g * np.cos(x))
defvjp(np.cos, lambda g, ans, x: -g * np.sin(x))
defvjp(np.tan, lambda g, ans, x: g / np.cos(x) ** 2)
defvjp(np.arcsin, lambda g, ans, x: g / np.sqrt(1.0 - x ** 2))
defvjp(np.arccos, lambda g, ans, x: -g / np.sqrt(1.0 - x ** 2))
defvjp(np.arctan, lambda g, ans, x: g / (1.0 + x ** 2))
defvjp(np.sinh, lambda g, ans, x: g * np.cosh(x))
defvjp(np.cosh, lambda g, ans, x: g * np.sinh(x))
defvjp(np.tanh, lambda g, ans, x: g * (1.0 - ans ** 2))
defvjp(np.arcsinh, lambda g, ans, x: g / np.sqrt(x ** 2 + 1.0))
defvjp(np.arccosh, lambda g, ans, x: g / np.sqrt(x ** 2 - 1.0))
defvjp(np.arctanh, lambda g, ans, x: g / (1.0 - x ** 2))

defvjp(np.fabs, lambda g, ans, x: g * np.sign(x))
defvjp(np.deg2rad, lambda g, ans, x: g * DEG)
defvjp(np.radians, lambda g, ans, x: g * DEG)
defvjp(np.rad2deg, lambda g, ans, x: g * RAD)
defvjp(np.degrees, lambda g, ans, x: g * RAD)

# ---- binary elementwise functions -------------------------------------------------------
defvjp(np.logaddexp,
       lambda g, ans, x, y: unbroadcast(g * np.exp(x - ans), x),
       lambda g, ans, x, y: unbroadcast(g * np.exp(y - ans), y))
defvjp(np.logaddexp2,
       lambda g, ans, x, y: unbroadcast(g * np.exp2(x - ans), x),
       lambda g, ans, x, y: unbroadcast(g * np.exp2(y - ans), y))
defvjp(np.hypot,
       lambda g, ans, x, y: unbroadcast(g * x / ans, x),
       lambda g, ans, x, y: unbroadcast(g * y / ans, y))
defvjp(np.arctan2,  # arctan2(y, x): the first argument is the ordinate
       lambda g, ans, y, x: unbroadcast(g * x / (x ** 2 + y ** 2), y),
       lambda g, ans, y, x: unbroadcast(-g * y / (x ** 2 + y ** 2), x))
defvjp(np.copysign,  # |x| with y's sign: y's derivative is zero away from its jump
       lambda g, ans, x, y: unbroadcast(g * np.sign(x) * np.sign(ans), x),
       None)
defvjp(np.float_power,
       lambda g, ans, x, y: unbroadcast(g * y * np.float_power(x, np.where(y, y - 1, 1)), x),
       lambda g, ans, x, y: unbroadcast(g * ans * log_or_zero(x), y))

nondifferentiable(
    operator.floordiv, np.floor_divide, np.floor, np.ceil, np.trunc, np.rint, np.round,
    np.sign, np.isfinite, np.isnan, np.isinf, np.greater, np.greater_equal, np.less,
    np.less_equal, np.equal, np.not_equal, np.logical_and, np.logical_or, np.logical_not,
    operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne,
    operator.not_, operator.invert, np.fix, np.signbit, np.logical_xor, np.isclose,
    np.allclose, np.array_equal, np.count_nonzero, np.nonzero, np.flatnonzero,
    np.searchsorted, np.isreal, np.isposinf, np.isneginf, np.heaviside,
)
