"""Rules for arithmetic operators and NumPy's elementwise functions: VJPs and JVPs.

Each rule is one expression, so the transforms inline it with the call's arguments
substituted: the adjoint reads `b_x = b_y * np.cos(x)`, not a call to a rule, and the
tangent `t_y = t_x * np.cos(x)`. Operators (`x * y`) and their ufunc twins
(`np.multiply(x, y)`) share their rules. A VJP sums its cotangent back to its argument's
shape with `unbroadcast`; a JVP gives a contribution of the output's shape, spreading an
argument broadcast into the output with `broadcast_like`. The transforms drop both where
shapes provably agree. A function of one argument has a diagonal Jacobian, so one rule
(the derivative times `g`) serves as its VJP and its JVP alike: `define_pointwise`.
"""
import math
import operator

import numpy as np

from srcad.rules.registry import defjvp, defvjp, nondifferentiable
from srcad.runtime import broadcast_like, log_or_zero, unbroadcast

# Python floats, so multiplying a float32 array by them keeps float32.
LN2, LN10 = math.log(2.0), math.log(10.0)
DEG, RAD = math.pi / 180.0, 180.0 / math.pi


def _define_twins(functions, vjp, jvp):
    """Register the VJP rules `vjp` and the JVP rules `jvp` of each of `functions` (an
    operator and its ufunc twin, or functions with the same derivatives)."""
    for fn in functions:
        defvjp(fn, *vjp)
        defjvp(fn, *jvp)


def define_pointwise(functions, *rules):
    """Register `rules` as both the VJP and the JVP rules of `functions` (one function or a
    tuple of twins), whose every argument has the output's shape: a function of one array,
    or of Python numbers. Its Jacobian is diagonal, so the rule of an argument, `g` times
    the derivative, maps the output's cotangent back and the argument's tangent forward."""
    for fn in functions if isinstance(functions, tuple) else (functions,):
        defvjp(fn, *rules)
        defjvp(fn, *rules)


# ---- binary arithmetic ----------------------------------------------------------------
_define_twins((operator.add, np.add),
              vjp=(lambda g, ans, x, y: unbroadcast(g, x),
                   lambda g, ans, x, y: unbroadcast(g, y)),
              jvp=(lambda g, ans, x, y: broadcast_like(g, ans),
                   lambda g, ans, x, y: broadcast_like(g, ans)))
_define_twins((operator.sub, np.subtract),
              vjp=(lambda g, ans, x, y: unbroadcast(g, x),
                   lambda g, ans, x, y: unbroadcast(-g, y)),
              jvp=(lambda g, ans, x, y: broadcast_like(g, ans),
                   lambda g, ans, x, y: broadcast_like(-g, ans)))
# In the JVPs below, `g` (an argument's shape) times a value of the output's shape, or of
# the other argument's shape, has the output's shape: no broadcast_like is needed.
_define_twins((operator.mul, np.multiply),
              vjp=(lambda g, ans, x, y: unbroadcast(g * y, x),
                   lambda g, ans, x, y: unbroadcast(g * x, y)),
              jvp=(lambda g, ans, x, y: g * y,
                   lambda g, ans, x, y: g * x))
_define_twins((operator.truediv, np.divide),
              vjp=(lambda g, ans, x, y: unbroadcast(g / y, x),
                   lambda g, ans, x, y: unbroadcast(-g * ans / y, y)),
              jvp=(lambda g, ans, x, y: g / y,
                   lambda g, ans, x, y: -g * ans / y))
# Where y == 0, x ** y is 1 and its x-derivative 0 (not 0 * 0 ** -1, nan at x == 0). The
# JVP takes the same values with the `where` in the base, so that an exponent held in a
# Python-number variable stays a Python number: `np.where(y, y - 1, 1)` is a float64 array
# then, which makes the tangent of a float32 x float64.
_define_twins((operator.pow, np.power),
              vjp=(lambda g, ans, x, y: unbroadcast(g * y * x ** np.where(y, y - 1, 1), x),
                   lambda g, ans, x, y: unbroadcast(g * ans * log_or_zero(x), y)),
              jvp=(lambda g, ans, x, y: g * y * np.where(y, x, 1.0) ** (y - 1),
                   lambda g, ans, x, y: g * ans * log_or_zero(x)))
_define_twins((operator.mod, np.mod),
              vjp=(lambda g, ans, x, y: unbroadcast(g, x),
                   lambda g, ans, x, y: unbroadcast(-g * np.floor_divide(x, y), y)),
              jvp=(lambda g, ans, x, y: broadcast_like(g, ans),
                   lambda g, ans, x, y: -g * np.floor_divide(x, y)))
# A tie splits the cotangent in halves, as autograd does: the tangent there is the mean of
# the two arguments' tangents.
_define_twins((np.maximum, np.fmax, np.minimum, np.fmin),
              vjp=(lambda g, ans, x, y: unbroadcast(np.where(x == y, 0.5 * g, g * (x == ans)), x),
                   lambda g, ans, x, y: unbroadcast(np.where(x == y, 0.5 * g, g * (y == ans)), y)),
              jvp=(lambda g, ans, x, y: np.where(x == y, 0.5 * g, g * (x == ans)),
                   lambda g, ans, x, y: np.where(x == y, 0.5 * g, g * (y == ans))))
defvjp(np.where,
       None,
       lambda g, ans, condition, x, y: unbroadcast(np.where(condition, g, 0.0), x),
       lambda g, ans, condition, x, y: unbroadcast(np.where(condition, 0.0, g), y))
defjvp(np.where,
       None,
       lambda g, ans, condition, x, y: broadcast_like(np.where(condition, g, 0.0), ans),
       lambda g, ans, condition, x, y: broadcast_like(np.where(condition, 0.0, g), ans))

# ---- unary arithmetic -------------------------------------------------------------------
define_pointwise((operator.neg, np.negative), lambda g, ans, x: -g)
define_pointwise((operator.pos, np.positive), lambda g, ans, x: g)

# ---- elementwise functions --------------------------------------------------------------
define_pointwise(np.exp, lambda g, ans, x: g * ans)
define_pointwise(np.exp2, lambda g, ans, x: g * ans * LN2)
define_pointwise(np.expm1, lambda g, ans, x: g * (ans + 1.0))
define_pointwise(np.log, lambda g, ans, x: g / x)
define_pointwise(np.log2, lambda g, ans, x: g / (x * LN2))
define_pointwise(np.log10, lambda g, ans, x: g / (x * LN10))
define_pointwise(np.log1p, lambda g, ans, x: g / (1.0 + x))
define_pointwise(np.sqrt, lambda g, ans, x: g * 0.5 / ans)
define_pointwise(np.cbrt, lambda g, ans, x: g / (3.0 * ans ** 2))
define_pointwise(np.square, lambda g, ans, x: g * 2.0 * x)
define_pointwise(np.reciprocal, lambda g, ans, x: -g * ans ** 2)
define_pointwise((np.absolute, np.fabs), lambda g, ans, x: g * np.sign(x))
define_pointwise(np.sin, lambda g, ans, x: g * np.cos(x))
define_pointwise(np.cos, lambda g, ans, x: -g * np.sin(x))
define_pointwise(np.tan, lambda g, ans, x: g / np.cos(x) ** 2)
define_pointwise(np.arcsin, lambda g, ans, x: g / np.sqrt(1.0 - x ** 2))
define_pointwise(np.arccos, lambda g, ans, x: -g / np.sqrt(1.0 - x ** 2))
define_pointwise(np.arctan, lambda g, ans, x: g / (1.0 + x ** 2))
define_pointwise(np.sinh, lambda g, ans, x: g * np.cosh(x))
define_pointwise(np.cosh, lambda g, ans, x: g * np.sinh(x))
define_pointwise(np.tanh, lambda g, ans, x: g * (1.0 - ans ** 2))
define_pointwise(np.arcsinh, lambda g, ans, x: g / np.sqrt(x ** 2 + 1.0))
define_pointwise(np.arccosh, lambda g, ans, x: g / np.sqrt(x ** 2 - 1.0))
define_pointwise(np.arctanh, lambda g, ans, x: g / (1.0 - x ** 2))
define_pointwise((np.deg2rad, np.radians), lambda g, ans, x: g * DEG)
define_pointwise((np.rad2deg, np.degrees), lambda g, ans, x: g * RAD)

# ---- binary elementwise functions -------------------------------------------------------
defvjp(np.logaddexp,
       lambda g, ans, x, y: unbroadcast(g * np.exp(x - ans), x),
       lambda g, ans, x, y: unbroadcast(g * np.exp(y - ans), y))
defjvp(np.logaddexp,
       lambda g, ans, x, y: g * np.exp(x - ans),
       lambda g, ans, x, y: g * np.exp(y - ans))
defvjp(np.logaddexp2,
       lambda g, ans, x, y: unbroadcast(g * np.exp2(x - ans), x),
       lambda g, ans, x, y: unbroadcast(g * np.exp2(y - ans), y))
defjvp(np.logaddexp2,
       lambda g, ans, x, y: g * np.exp2(x - ans),
       lambda g, ans, x, y: g * np.exp2(y - ans))
defvjp(np.hypot,
       lambda g, ans, x, y: unbroadcast(g * x / ans, x),
       lambda g, ans, x, y: unbroadcast(g * y / ans, y))
defjvp(np.hypot,
       lambda g, ans, x, y: g * x / ans,
       lambda g, ans, x, y: g * y / ans)
defvjp(np.arctan2,  # arctan2(y, x): the first argument is the ordinate
       lambda g, ans, y, x: unbroadcast(g * x / (x ** 2 + y ** 2), y),
       lambda g, ans, y, x: unbroadcast(-g * y / (x ** 2 + y ** 2), x))
defjvp(np.arctan2,
       lambda g, ans, y, x: g * x / (x ** 2 + y ** 2),
       lambda g, ans, y, x: -g * y / (x ** 2 + y ** 2))
defvjp(np.copysign,  # |x| with y's sign: y's derivative is zero away from its jump
       lambda g, ans, x, y: unbroadcast(g * np.sign(x) * np.sign(ans), x),
       None)
defjvp(np.copysign,
       lambda g, ans, x, y: g * np.sign(x) * np.sign(ans),
       None)
defvjp(np.float_power,  # always float64, so the `where` may stay in the exponent
       lambda g, ans, x, y: unbroadcast(g * y * np.float_power(x, np.where(y, y - 1, 1)), x),
       lambda g, ans, x, y: unbroadcast(g * ans * log_or_zero(x), y))
defjvp(np.float_power,
       lambda g, ans, x, y: g * y * np.float_power(x, np.where(y, y - 1, 1)),
       lambda g, ans, x, y: g * ans * log_or_zero(x))

nondifferentiable(
    operator.floordiv, np.floor_divide, np.floor, np.ceil, np.trunc, np.rint, np.round,
    np.sign, np.isfinite, np.isnan, np.isinf, np.greater, np.greater_equal, np.less,
    np.less_equal, np.equal, np.not_equal, np.logical_and, np.logical_or, np.logical_not,
    operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne,
    operator.not_, operator.invert, np.fix, np.signbit, np.logical_xor, np.isclose,
    np.allclose, np.array_equal, np.count_nonzero, np.nonzero, np.flatnonzero,
    np.searchsorted, np.isreal, np.isposinf, np.isneginf, np.heaviside,
)
