"""Rules for `scipy.special`: gamma-family, error, Bessel, logistic and entropy functions,
logsumexp, softmax and log_softmax.

Loaded lazily by the registry the first time srcad looks up a SciPy callable, so
`import srcad` never imports SciPy. The elementwise functions are ufuncs whose Jacobian is
diagonal: as in `numpy_ufuncs`, one rule (`g` times the derivative) serves as VJP and JVP,
and a binary function's VJP sums back over broadcasting with `unbroadcast`. Derivatives
are written with functions that have rules themselves (mostly `scipy.special`'s own), so
that srcad can differentiate them again, and with Python-float constants, so that float32
stays float32. A parameter whose derivative SciPy cannot evaluate in closed form (a Bessel
function's order, gammainc's `a`) gets a rule that raises `UnsupportedDerivativeError`
rather than a silent zero; integer parameters (polygamma's order) get none.
"""
import math

import numpy as np
from scipy import special

from srcad.errors import UnsupportedDerivativeError
from srcad.kernels.adjoints import Underivable, dtype_of, expand_reduced, unbroadcast
from srcad.ops.numpy_ufuncs import define_pointwise
from srcad.ops.registry import defjvp, defvjp, nondifferentiable

TWO_OVER_ROOT_PI = 2.0 / math.sqrt(math.pi)
HALF_ROOT_PI = math.sqrt(math.pi) / 2.0
ROOT_TWO_PI = math.sqrt(2.0 * math.pi)


def no_derivative(function: str, parameter: str, fix: str):
    """A VJP/JVP rule for a parameter srcad does not differentiate: zero for a zero tangent,
    else an `Underivable`, which raises, naming why, where it is used (not where it only
    reaches a constant in a list beside differentiated values)."""
    def rule(g, ans, *args, **kwargs):
        if not np.any(g):
            return None
        return Underivable(UnsupportedDerivativeError(
            f"srcad has no derivative of `{function}` with respect to `{parameter}`: it has no "
            "closed form in terms of functions SciPy provides.", fix=fix))
    rule.__name__ = rule.__qualname__ = f"no_derivative_{function.rsplit('.', 1)[-1]}_{parameter}"
    return rule


def refuse_complex(function: str, *values):
    """Refuse complex arguments of a SciPy function that casts them to float (dropping the
    imaginary parts, with a ComplexWarning): its rules, written for real ones, would give
    derivatives of the complex formula (a check: srcad calls it, never follows it)."""
    if any(dtype_of(v).kind == "c" for v in values if v is not None):
        raise UnsupportedDerivativeError(
            f"srcad does not differentiate `{function}` of complex arguments: SciPy casts "
            "them to float, dropping their imaginary parts.",
            fix="pass the real parts, e.g. np.real(z), if that is what you mean.")


def define_binary(fn, vjp_x, vjp_y, jvp_x, jvp_y):
    defvjp(fn, vjp_x, vjp_y)
    defjvp(fn, jvp_x, jvp_y)


# ---- gamma and beta functions --------------------------------------------------------------
define_pointwise(special.gamma, lambda g, ans, x: g * ans * special.digamma(x))
define_pointwise(special.gammaln, lambda g, ans, x: g * special.digamma(x))
define_pointwise(special.rgamma, lambda g, ans, x: -g * ans * special.digamma(x))
# psi'(x) = zeta(2, x) (also for negative x); unlike polygamma(1, x) it keeps float32.
define_pointwise(special.digamma, lambda g, ans, x: g * special.zeta(2.0, x))
# multigammaln(a, d) = d (d - 1) / 4 log(pi) + sum over j < d of gammaln(a - j / 2)
defvjp(special.multigammaln, lambda g, ans, a, d:
       g * np.sum(special.digamma(np.expand_dims(a, -1) - np.arange(d) / 2.0), axis=-1), None)
defjvp(special.multigammaln, lambda g, ans, a, d:
       g * np.sum(special.digamma(np.expand_dims(a, -1) - np.arange(d) / 2.0), axis=-1), None)
defvjp(special.polygamma, None,  # the order n is an integer: no derivative
       lambda g, ans, n, x: unbroadcast(g * special.polygamma(n + 1, x), x))
defjvp(special.polygamma, None, lambda g, ans, n, x: g * special.polygamma(n + 1, x))
_ZETA_S = no_derivative("scipy.special.zeta", "x",
                        "differentiate with respect to q only; hold x (the exponent) constant.")
# zeta(x, q), Hurwitz's: d/dq = -x zeta(x + 1, q). Riemann's (q None) has no q. The Python
# function `zeta` calls the ufunc `_zeta`, which is what tape mode sees (digamma's
# derivative calls zeta, so a nested tape meets it): both get the rules.
for _zeta in (special.zeta, getattr(special._ufuncs, "_zeta", special.zeta)):
    defvjp(_zeta, _ZETA_S, lambda g, ans, x, q=None, out=None:
           unbroadcast(-g * x * special.zeta(x + 1.0, q), q))
    defjvp(_zeta, _ZETA_S, lambda g, ans, x, q=None, out=None:
           -g * x * special.zeta(x + 1.0, q))

define_binary(special.beta,
              lambda g, ans, a, b: unbroadcast(
                  g * ans * (special.digamma(a) - special.digamma(a + b)), a),
              lambda g, ans, a, b: unbroadcast(
                  g * ans * (special.digamma(b) - special.digamma(a + b)), b),
              lambda g, ans, a, b: g * ans * (special.digamma(a) - special.digamma(a + b)),
              lambda g, ans, a, b: g * ans * (special.digamma(b) - special.digamma(a + b)))
define_binary(special.betaln,
              lambda g, ans, a, b: unbroadcast(
                  g * (special.digamma(a) - special.digamma(a + b)), a),
              lambda g, ans, a, b: unbroadcast(
                  g * (special.digamma(b) - special.digamma(a + b)), b),
              lambda g, ans, a, b: g * (special.digamma(a) - special.digamma(a + b)),
              lambda g, ans, a, b: g * (special.digamma(b) - special.digamma(a + b)))


def _on_dtype_of(x, *parameters):
    """The parameters of a density in x, broadcast onto x's dtype: SciPy computes xlogy and
    gammaln of a Python float in float64, which would make a float32 cotangent float64."""
    zero = np.zeros_like(x)
    return tuple(parameter + zero for parameter in parameters)


def _gamma_log_density(a, x):
    """The log of the gamma density x^(a-1) e^-x / Gamma(a), the derivative of gammainc in
    x: in logs, so that a large `a` does not overflow Gamma(a)."""
    a, = _on_dtype_of(x, a)
    return special.xlogy(a - 1.0, x) - x - special.gammaln(a)


def _incomplete_gamma(sign: float):
    """`gammainc` (sign 1) or `gammaincc` (-1) in x."""
    vjp_x = lambda g, ans, a, x: unbroadcast(  # noqa: E731
        sign * g * np.exp(_gamma_log_density(a, x)), x)
    jvp_x = lambda g, ans, a, x: sign * g * np.exp(_gamma_log_density(a, x))  # noqa: E731
    return vjp_x, jvp_x


for _fn, _sign in ((special.gammainc, 1.0), (special.gammaincc, -1.0)):
    _a_rule = no_derivative(f"scipy.special.{_fn.__name__}", "a",
                            "differentiate with respect to x only; hold a constant.")
    _vjp_x, _jvp_x = _incomplete_gamma(_sign)
    define_binary(_fn, _a_rule, _vjp_x, _a_rule, _jvp_x)


def _beta_log_density(a, b, x):
    """The log of the beta density at x, the derivative of betainc in x."""
    a, b = _on_dtype_of(x, a, b)
    return special.xlogy(a - 1.0, x) + special.xlog1py(b - 1.0, -x) - special.betaln(a, b)


_BETAINC_A, _BETAINC_B = (
    no_derivative("scipy.special.betainc", name,
                  "differentiate with respect to x only; hold a and b constant.")
    for name in ("a", "b"))
defvjp(special.betainc, _BETAINC_A, _BETAINC_B, lambda g, ans, a, b, x:
       unbroadcast(g * np.exp(_beta_log_density(a, b, x)), x))
defjvp(special.betainc, _BETAINC_A, _BETAINC_B, lambda g, ans, a, b, x:
       g * np.exp(_beta_log_density(a, b, x)))

# ---- error functions and the normal distribution's -----------------------------------------
define_pointwise(special.erf, lambda g, ans, x: g * TWO_OVER_ROOT_PI * np.exp(-x ** 2))
define_pointwise(special.erfc, lambda g, ans, x: -g * TWO_OVER_ROOT_PI * np.exp(-x ** 2))
define_pointwise(special.erfinv, lambda g, ans, x: g * HALF_ROOT_PI * np.exp(ans ** 2))
define_pointwise(special.erfcinv, lambda g, ans, x: -g * HALF_ROOT_PI * np.exp(ans ** 2))
define_pointwise(special.erfcx, lambda g, ans, x: g * (2.0 * x * ans - TWO_OVER_ROOT_PI))
define_pointwise(special.ndtr, lambda g, ans, x: g * np.exp(-0.5 * x ** 2) / ROOT_TWO_PI)
# The normal density over its cdf, in logs: exact far in the lower tail, where both vanish.
define_pointwise(special.log_ndtr,
                 lambda g, ans, x: g * np.exp(-0.5 * x ** 2 - ans) / ROOT_TWO_PI)
define_pointwise(special.ndtri, lambda g, ans, x: g * ROOT_TWO_PI * np.exp(0.5 * ans ** 2))

# ---- Bessel functions (derivatives in the argument x) --------------------------------------
define_pointwise(special.j0, lambda g, ans, x: -g * special.j1(x))
define_pointwise(special.j1, lambda g, ans, x: g * (special.j0(x) - special.jv(2.0, x)) / 2.0)
define_pointwise(special.y0, lambda g, ans, x: -g * special.y1(x))
define_pointwise(special.y1, lambda g, ans, x: g * (special.y0(x) - special.yv(2.0, x)) / 2.0)
define_pointwise(special.i0, lambda g, ans, x: g * special.i1(x))
define_pointwise(special.i1, lambda g, ans, x: g * (special.i0(x) + special.iv(2.0, x)) / 2.0)
# The exponentially scaled ones carry exp(-|x|), whose derivative is -sign(x) times it.
define_pointwise(special.i0e, lambda g, ans, x: g * (special.i1e(x) - np.sign(x) * ans))
define_pointwise(special.i1e, lambda g, ans, x:
                 g * ((special.i0e(x) + special.ive(2.0, x)) / 2.0 - np.sign(x) * ans))


def _bessel_of_order(fn, vjp_x, jvp_x):
    """A Bessel function `fn(v, x)`: rules in x; its order v has no derivative srcad takes."""
    order = no_derivative(f"scipy.special.{fn.__name__}", "v",
                          "differentiate with respect to x only; hold the order v constant.")
    define_binary(fn, order, vjp_x, order, jvp_x)


# yn(n, x): an integer order n, which has no derivative.
defvjp(special.yn, None, lambda g, ans, n, x:
       unbroadcast(g * (special.yn(n - 1, x) - special.yn(n + 1, x)) / 2.0, x))
defjvp(special.yn, None, lambda g, ans, n, x:
       g * (special.yn(n - 1, x) - special.yn(n + 1, x)) / 2.0)
_bessel_of_order(
    special.jv,
    lambda g, ans, v, x: unbroadcast(
        g * (special.jv(v - 1.0, x) - special.jv(v + 1.0, x)) / 2.0, x),
    lambda g, ans, v, x: g * (special.jv(v - 1.0, x) - special.jv(v + 1.0, x)) / 2.0)
_bessel_of_order(
    special.yv,
    lambda g, ans, v, x: unbroadcast(
        g * (special.yv(v - 1.0, x) - special.yv(v + 1.0, x)) / 2.0, x),
    lambda g, ans, v, x: g * (special.yv(v - 1.0, x) - special.yv(v + 1.0, x)) / 2.0)
_bessel_of_order(
    special.iv,
    lambda g, ans, v, x: unbroadcast(
        g * (special.iv(v - 1.0, x) + special.iv(v + 1.0, x)) / 2.0, x),
    lambda g, ans, v, x: g * (special.iv(v - 1.0, x) + special.iv(v + 1.0, x)) / 2.0)
_bessel_of_order(
    special.ive,
    lambda g, ans, v, x: unbroadcast(g * (
        (special.ive(v - 1.0, x) + special.ive(v + 1.0, x)) / 2.0 - np.sign(x) * ans), x),
    lambda g, ans, v, x: g * (
        (special.ive(v - 1.0, x) + special.ive(v + 1.0, x)) / 2.0 - np.sign(x) * ans))

# ---- logistic functions --------------------------------------------------------------------
define_pointwise(special.expit, lambda g, ans, x: g * ans * (1.0 - ans))
define_pointwise(special.logit, lambda g, ans, x: g / (x * (1.0 - x)))
define_pointwise(special.log_expit, lambda g, ans, x: g * special.expit(-x))

# ---- x log y and entropies -----------------------------------------------------------------
# Where x is 0, xlogy is 0 whatever y is, so its y-derivative x / y is 0 there, not nan.
define_binary(special.xlogy,
              lambda g, ans, x, y: unbroadcast(g * np.log(y), x),
              lambda g, ans, x, y: unbroadcast(g * x / np.where(x == 0, 1.0, y), y),
              lambda g, ans, x, y: g * np.log(y),
              lambda g, ans, x, y: g * x / np.where(x == 0, 1.0, y))
define_binary(special.xlog1py,
              lambda g, ans, x, y: unbroadcast(g * np.log1p(y), x),
              lambda g, ans, x, y: unbroadcast(g * x / np.where(x == 0, 1.0, 1.0 + y), y),
              lambda g, ans, x, y: g * np.log1p(y),
              lambda g, ans, x, y: g * x / np.where(x == 0, 1.0, 1.0 + y))
define_pointwise(special.entr, lambda g, ans, x: -g * (np.log(x) + 1.0))
define_binary(special.rel_entr,  # x log(x / y)
              lambda g, ans, x, y: unbroadcast(g * (np.log(x / y) + 1.0), x),
              lambda g, ans, x, y: unbroadcast(-g * x / y, y),
              lambda g, ans, x, y: g * (np.log(x / y) + 1.0),
              lambda g, ans, x, y: -g * x / y)
define_binary(special.kl_div,  # x log(x / y) - x + y
              lambda g, ans, x, y: unbroadcast(g * np.log(x / y), x),
              lambda g, ans, x, y: unbroadcast(g * (1.0 - x / y), y),
              lambda g, ans, x, y: g * np.log(x / y),
              lambda g, ans, x, y: g * (1.0 - x / y))


# ---- logsumexp, softmax, log_softmax -------------------------------------------------------
def _check_sign(return_sign):
    """Refuse `return_sign=True` (a tuple of results). Declared non-differentiable below,
    so that srcad calls it, and does not follow it, when it differentiates a rule again."""
    if return_sign:
        raise UnsupportedDerivativeError(
            "srcad does not differentiate `scipy.special.logsumexp(..., return_sign=True)`.",
            fix="keep the weights `b` positive and drop return_sign.")


def _softmax_weights(ans, a, axis, b, keepdims, return_sign):
    """exp(a - logsumexp(a)), in the shape `a` and `b` broadcast to: each element's share
    of the sum (b's weights not applied)."""
    _check_sign(return_sign)
    full = a if b is None else a + np.zeros_like(b)
    return np.exp(full - expand_reduced(ans, full, axis, keepdims))


def logsumexp_vjp_a(g, ans, a, axis=None, b=None, keepdims=False, return_sign=False):
    weights = _softmax_weights(ans, a, axis, b, keepdims, return_sign)
    spread = expand_reduced(g, weights, axis, keepdims) * weights
    return unbroadcast(spread if b is None else spread * b, a)


def logsumexp_vjp_b(g, ans, a, axis=None, b=None, keepdims=False, return_sign=False):
    weights = _softmax_weights(ans, a, axis, b, keepdims, return_sign)
    return unbroadcast(expand_reduced(g, weights, axis, keepdims) * weights, b)


def logsumexp_jvp_a(g, ans, a, axis=None, b=None, keepdims=False, return_sign=False):
    weights = _softmax_weights(ans, a, axis, b, keepdims, return_sign)
    return np.sum(g * weights if b is None else g * weights * b, axis=axis, keepdims=keepdims)


def logsumexp_jvp_b(g, ans, a, axis=None, b=None, keepdims=False, return_sign=False):
    weights = _softmax_weights(ans, a, axis, b, keepdims, return_sign)
    return np.sum(g * weights, axis=axis, keepdims=keepdims)


defvjp(special.logsumexp, logsumexp_vjp_a, None, logsumexp_vjp_b)
defjvp(special.logsumexp, logsumexp_jvp_a, None, logsumexp_jvp_b)

# softmax's Jacobian diag(s) - s s^T is symmetric: the same rule maps cotangents and tangents.
define_pointwise(special.softmax, lambda g, ans, x, axis=None:
                 ans * (g - np.sum(g * ans, axis=axis, keepdims=True)))
defvjp(special.log_softmax, lambda g, ans, x, axis=None:
       g - np.exp(ans) * np.sum(g, axis=axis, keepdims=True))
defjvp(special.log_softmax, lambda g, ans, x, axis=None:
       g - np.sum(np.exp(ans) * g, axis=axis, keepdims=True))

nondifferentiable(special.gammasgn, special.round, _check_sign, refuse_complex)


# ---- robust losses and Box-Cox transforms (functions of two arguments) ---------------------
def define_by_partials(fn, partial_x, partial_y):
    """Rules of a binary ufunc `fn(x, y)` from its elementwise partials `partial(ans, x, y)`:
    the VJP sums g times the partial back over broadcasting, the JVP is g times it."""
    define_binary(fn,
                  lambda g, ans, x, y: unbroadcast(g * partial_x(ans, x, y), x),
                  lambda g, ans, x, y: unbroadcast(g * partial_y(ans, x, y), y),
                  lambda g, ans, x, y: g * partial_x(ans, x, y),
                  lambda g, ans, x, y: g * partial_y(ans, x, y))


def _huber_r(ans, delta, r):
    """d huber / dr: r inside the band |r| <= delta, delta sign(r) outside."""
    return np.where(np.abs(r) <= delta, r, delta * np.sign(r))


def _huber_delta(ans, delta, r):
    """d huber / d delta: 0 inside the band, |r| - delta outside."""
    return np.where(np.abs(r) <= delta, 0.0 * r, np.abs(r) - delta)


def _pseudo_huber_root(delta, r):
    """sqrt(1 + (r / delta)^2), written as sqrt(delta^2 + r^2) / |delta| would divide 0 by 0."""
    return np.sqrt(1.0 + (r / delta) ** 2)


def _pseudo_huber_r(ans, delta, r):
    return r / _pseudo_huber_root(delta, r)


def _pseudo_huber_delta(ans, delta, r):
    root = _pseudo_huber_root(delta, r)
    return 2.0 * delta * (root - 1.0) - r ** 2 / (delta * root)


def _nonzero(lmbda):
    """lmbda with its zeros replaced by 1: the Box-Cox formulas divide by it, and their
    lmbda = 0 branch (the logarithm's limit) is taken by `np.where` beside them."""
    return np.where(lmbda == 0, 1.0, lmbda)


def _boxcox_lmbda(ans, base, lmbda):
    """d/d lmbda of (base^lmbda - 1) / lmbda: (base^lmbda log base - ans) / lmbda, and
    log(base)^2 / 2 at lmbda = 0, where the transform is log(base)."""
    log = np.log(base)
    return np.where(lmbda == 0, 0.5 * log ** 2,
                    (base ** lmbda * log - ans) / _nonzero(lmbda))


def _inverse_boxcox_lmbda(value, y, lmbda):
    """d/d lmbda of value = (1 + lmbda y)^(1 / lmbda): value (y / (lmbda (1 + lmbda y))
    - log(1 + lmbda y) / lmbda^2), and -value y^2 / 2 at lmbda = 0 (value = exp(y))."""
    safe = _nonzero(lmbda)
    base = 1.0 + lmbda * y
    return value * np.where(lmbda == 0, -0.5 * y ** 2,
                            y / (safe * base) - np.log(base) / safe ** 2)


define_by_partials(special.huber, _huber_delta, _huber_r)
define_by_partials(special.pseudo_huber, _pseudo_huber_delta, _pseudo_huber_r)
define_by_partials(special.boxcox, lambda ans, x, lmbda: x ** (lmbda - 1.0),
                   lambda ans, x, lmbda: _boxcox_lmbda(ans, x, lmbda))
define_by_partials(special.boxcox1p, lambda ans, x, lmbda: (1.0 + x) ** (lmbda - 1.0),
                   lambda ans, x, lmbda: _boxcox_lmbda(ans, 1.0 + x, lmbda))
define_by_partials(special.inv_boxcox, lambda ans, y, lmbda: ans / (1.0 + lmbda * y),
                   lambda ans, y, lmbda: _inverse_boxcox_lmbda(ans, y, lmbda))
define_by_partials(special.inv_boxcox1p, lambda ans, y, lmbda: (ans + 1.0) / (1.0 + lmbda * y),
                   lambda ans, y, lmbda: _inverse_boxcox_lmbda(ans + 1.0, y, lmbda))
