"""Rules for arithmetic operators and NumPy's elementwise functions: VJPs and JVPs.

Each rule is one expression (but np.abs's, which branch on a real or complex argument and
are called by name), so the transforms inline it with the call's arguments
substituted: the adjoint reads `b_x = b_y * np.cos(x)`, not a call to a rule, and the
tangent `t_y = t_x * np.cos(x)`. Operators (`x * y`) and their ufunc twins
(`np.multiply(x, y)`) share their rules. A VJP sums its cotangent back to its argument's
shape with `unbroadcast`; a JVP gives a contribution of the output's shape, spreading an
argument broadcast into the output with `broadcast_like`. The transforms drop both where
shapes provably agree. A function of one argument has a diagonal Jacobian, so one rule
(the derivative times `g`) serves as its VJP and its JVP alike: `define_pointwise`.

Complex numbers follow JAX's and autograd's convention. A tangent is pushed forward by the
complex derivative; a cotangent is pulled back by its transpose, not its conjugate
transpose: for a real loss L of z = x + iy the cotangent of z is dL/dx - i dL/dy, so that
dL = Re(sum(cotangent * dz)). A holomorphic function's VJP is then `g * f'(z)`, its JVP's
expression, and the rules of `*`, `/`, `**`, exp, log, sin, ... serve complex values as
they are. Functions of z and conj(z) together need rules of their own (complex numbers,
below). A real value's cotangent is its real part: an imaginary part may ride along
(`y = x * 1j` gives `b_x = b_y * 1j`), which the API drops for real arguments and which
every rule from a complex input to a real output (np.real, np.abs, ...) drops with
`np.real(g)`.
"""
import math
import operator

import numpy as np

from srcad.kernels.adjoints import dtype_of, log_or_zero, unbroadcast
from srcad.kernels.tangents import broadcast_like
from srcad.ops.registry import declare, defjvp, defvjp, nondifferentiable

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
# Where y == 0, x ** y is 1 and its x-derivative 0 (not 0 * 0 ** -1, nan at x == 0). Both
# rules put the `where` in the base, so that an exponent held in a Python-number variable
# stays a Python number: `np.where(y, y - 1, 1)` is a float64 array then, which makes the
# cotangent or tangent of a float32 x float64.
_define_twins((operator.pow, np.power),
              vjp=(lambda g, ans, x, y: unbroadcast(g * y * np.where(y, x, 1.0) ** (y - 1), x),
                   lambda g, ans, x, y: unbroadcast(g * ans * log_or_zero(x), y)),
              jvp=(lambda g, ans, x, y: g * y * np.where(y, x, 1.0) ** (y - 1),
                   lambda g, ans, x, y: g * ans * log_or_zero(x)))
_define_twins((operator.mod, np.mod),
              vjp=(lambda g, ans, x, y: unbroadcast(g, x),
                   lambda g, ans, x, y: unbroadcast(-g * np.floor_divide(x, y), y)),
              jvp=(lambda g, ans, x, y: broadcast_like(g, ans),
                   lambda g, ans, x, y: -g * np.floor_divide(x, y)))
# np.fmod is C's fmod, with the dividend's sign: x - y trunc(x / y), where np.mod floors.
_define_twins((np.fmod,),
              vjp=(lambda g, ans, x, y: unbroadcast(g, x),
                   lambda g, ans, x, y: unbroadcast(-g * np.trunc(x / y), y)),
              jvp=(lambda g, ans, x, y: broadcast_like(g, ans),
                   lambda g, ans, x, y: -g * np.trunc(x / y)))
declare(np.fmod, math_twin="fmod", promotes=True)
# A tie splits the cotangent in halves, as autograd does: the tangent there is the mean of
# the two arguments' tangents.
_define_twins((np.maximum, np.fmax, np.minimum, np.fmin),
              vjp=(lambda g, ans, x, y: unbroadcast(np.where(x == y, 0.5 * g, g * (x == ans)), x),
                   lambda g, ans, x, y: unbroadcast(np.where(x == y, 0.5 * g, g * (y == ans)), y)),
              jvp=(lambda g, ans, x, y: np.where(x == y, 0.5 * g, g * (x == ans)),
                   lambda g, ans, x, y: np.where(x == y, 0.5 * g, g * (y == ans))))
# np.where(condition) alone gives indices: x and y default to None (no derivative to bind)
defvjp(np.where,
       None,
       lambda g, ans, condition, x=None, y=None: unbroadcast(np.where(condition, g, 0.0), x),
       lambda g, ans, condition, x=None, y=None: unbroadcast(np.where(condition, 0.0, g), y))
defjvp(np.where,
       None,
       lambda g, ans, condition, x=None, y=None: broadcast_like(np.where(condition, g, 0.0), ans),
       lambda g, ans, condition, x=None, y=None: broadcast_like(np.where(condition, 0.0, g), ans))

# ---- unary arithmetic -------------------------------------------------------------------
define_pointwise((operator.neg, np.negative), lambda g, ans, x: -g)
define_pointwise((operator.pos, np.positive), lambda g, ans, x: g)
for _operator in (operator.add, operator.sub, operator.mul, operator.truediv, operator.pow,
                  operator.mod, operator.neg, operator.pos):
    declare(_operator, elementwise=True)  # (as their ufuncs are: is_elementwise tells those)

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
define_pointwise(np.fabs, lambda g, ans, x: g * np.sign(x))
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

# ---- complex numbers -----------------------------------------------------------------------
# np.real(z) and z.real, np.imag(z) and z.imag: L = g Re(z) has the cotangent g, and
# L = g Im(z) the cotangent -i g (for a real z, whose imaginary part is the constant 0, an
# imaginary cotangent: zero once its real part is taken).
for _real in (np.real, np.ndarray.real):  # (views of a complex array's memory)
    define_pointwise(_real, lambda g, ans, val: np.real(g))
    declare(_real, view=True)
for _imag in (np.imag, np.ndarray.imag):
    defvjp(_imag, lambda g, ans, val: np.real(g) * -1j)
    defjvp(_imag, lambda g, ans, val: np.imag(g))
    declare(_imag, view=True)
# d conj(z) = conj(dz): conj is its own transpose under Re(sum(c * dz)).
define_pointwise(np.conjugate, lambda g, ans, x: np.conj(g))
# np.real_if_close is np.real where it drops the imaginary parts, else the identity.
define_pointwise(np.real_if_close, lambda g, ans, a, tol=100:
                 np.real(g) if dtype_of(ans).kind != "c" else g)
declare(np.real_if_close, view=True)  # (its argument itself, when that is real)


def absolute_vjp(g, ans, x):
    """|x|: sign(x) for real x (0 at the kink, as autograd); conj(x) / |x| for complex x
    (0 at 0), since d|z| = Re(conj(z) dz) / |z|."""
    if dtype_of(x).kind != "c":
        return g * np.sign(x)
    return np.real(g) * np.conj(x) / np.where(ans == 0, 1, ans)


def absolute_jvp(g, ans, x):
    """|x|: the tangent Re(conj(x) g) / |x| of complex x (0 at 0), sign(x) g of real x."""
    if dtype_of(x).kind != "c":
        return g * np.sign(x)
    return np.real(np.conj(x) * g) / np.where(ans == 0, 1, ans)


defvjp(np.absolute, absolute_vjp)
defjvp(np.absolute, absolute_jvp)


def angle_vjp(g, ans, z, deg=False):
    """np.angle: d angle(z) = Im(dz / z), so the cotangent is -i g / z (0 at z = 0; for a
    real z, whose angle is piecewise constant, an imaginary one: zero once its real part
    is taken)."""
    return np.real(g) * (RAD if deg else 1.0) * -1j / np.where(z == 0, 1, z)


def angle_jvp(g, ans, z, deg=False):
    return np.imag(g / np.where(z == 0, 1, z)) * (RAD if deg else 1.0)


defvjp(np.angle, angle_vjp)
defjvp(np.angle, angle_jvp)


def sign_vjp(g, ans, x):
    """np.sign: piecewise constant for real x (0); z / |z| for complex z, whose cotangent
    is (g - Re(g s) conj(s)) / |z| with s = z / |z| (0 at 0), from ds = (dz - s Re(conj(s)
    dz)) / |z|."""
    if dtype_of(x).kind != "c":
        return np.zeros_like(g)
    r = np.abs(x)
    return np.where(r == 0, 0, g - np.real(g * ans) * np.conj(ans)) / np.where(r == 0, 1, r)


def sign_jvp(g, ans, x):
    if dtype_of(x).kind != "c":
        return np.zeros_like(g)
    r = np.abs(x)
    return np.where(r == 0, 0, g - ans * np.real(np.conj(ans) * g)) / np.where(r == 0, 1, r)


defvjp(np.sign, sign_vjp)
defjvp(np.sign, sign_jvp)

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
    np.isfinite, np.isnan, np.isinf, np.greater, np.greater_equal, np.less,
    np.less_equal, np.equal, np.not_equal, np.logical_and, np.logical_or, np.logical_not,
    operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne,
    operator.not_, operator.invert, np.fix, np.signbit, np.logical_xor, np.isclose,
    np.allclose, np.array_equal, np.count_nonzero, np.nonzero, np.flatnonzero,
    np.searchsorted, np.isreal, np.isposinf, np.isneginf, np.heaviside,
)


# ---- the `math` function computing each on one Python float (transform/math_calls.py calls
# it there, a tenth of the ufunc's time; the derivative rules stay the ufunc's)
for _ufunc, _twin in [
        (np.sin, "sin"), (np.cos, "cos"), (np.tan, "tan"), (np.arcsin, "asin"),
        (np.arccos, "acos"), (np.arctan, "atan"), (np.sinh, "sinh"), (np.cosh, "cosh"),
        (np.tanh, "tanh"), (np.arcsinh, "asinh"), (np.arccosh, "acosh"), (np.arctanh, "atanh"),
        (np.exp, "exp"), (np.exp2, "exp2"), (np.expm1, "expm1"), (np.log, "log"),
        (np.log2, "log2"), (np.log10, "log10"), (np.log1p, "log1p"), (np.sqrt, "sqrt"),
        (np.cbrt, "cbrt"), (np.fabs, "fabs"), (np.arctan2, "atan2"), (np.hypot, "hypot"),
        (np.copysign, "copysign"), (np.degrees, "degrees"), (np.radians, "radians"),
        (np.rad2deg, "degrees"), (np.deg2rad, "radians")]:
    declare(_ufunc, math_twin=_twin)


# ---- the ufuncs whose result has their operands' promoted dtype when one of them is inexact:
# an outline knows it without running them (transform/outline.py)
for _ufunc in (
        np.add, np.subtract, np.multiply, np.divide, np.power, np.negative, np.positive,
        np.sin, np.cos, np.tan, np.arcsin, np.arccos, np.arctan, np.sinh, np.cosh, np.tanh,
        np.arcsinh, np.arccosh, np.arctanh, np.exp, np.exp2, np.expm1, np.log, np.log2,
        np.log10, np.log1p, np.sqrt, np.square, np.reciprocal, np.maximum, np.minimum,
        np.fmax, np.fmin, np.logaddexp, np.conjugate):
    declare(_ufunc, promotes=True)

# the ndarray methods that call them (runtime/methods.py)
declare(np.conjugate, methods=("conj", "conjugate"))
for _method in ("round", "nonzero", "searchsorted"):
    declare(getattr(np, _method), methods=(_method,))
