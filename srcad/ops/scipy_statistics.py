"""Rules for `scipy.stats`' sample statistics: moment, skew, kurtosis, gmean, hmean, pmean,
sem, variation, entropy (reductions along `axis`) and zscore.

Loaded lazily with the other SciPy rules (see `registry`). SciPy writes these with its
array-API helpers (a vendored namespace, `xpx.at`, `try` around NaN handling), which srcad
does not follow by source; these rules stand in for them. Each reduction's rule comes from
its partial derivative: an array that broadcasts against the argument, with the reduced
axes kept (as `keepdims=True` leaves them). The VJP spreads the output's cotangent over the
reduced axes and multiplies; the JVP sums the tangent times the partial over them. SciPy
reads `axis=None` as all the axes of the flattened array, which is NumPy's reading too.

The partials are written with NumPy functions that have rules, so a Hessian differentiates
them again. `nan_policy="omit"` (which drops elements) and a non-float `dtype=` are
refused; `nan_policy="raise"` raises in SciPy's own call, before any rule runs.
"""
import math

import numpy as np
import scipy.stats as stats

from srcad.errors import UnsupportedDerivativeError
from srcad.kernels.adjoints import expand_reduced, kept_axes, reduced_size, unbroadcast
from srcad.ops.registry import defjvp, defvjp, nondifferentiable
from srcad.ops.scipy_special import refuse_complex


def check_options(function: str, values, nan_policy="propagate", dtype=None):
    """Refuse what the rules would get wrong: complex values (SciPy's statistics of them
    are not holomorphic), elements dropped by nan_policy="omit", an integer dtype."""
    refuse_complex(f"scipy.stats.{function}", *values)
    if nan_policy == "omit":
        raise UnsupportedDerivativeError(
            f"srcad does not differentiate `scipy.stats.{function}` with "
            "nan_policy='omit': which elements count depends on the values.",
            fix="select the elements first, e.g. `a[~np.isnan(a)]`, and call it with the "
            "default nan_policy.")
    if dtype is not None and np.dtype(dtype).kind != "f":
        raise UnsupportedDerivativeError(
            f"srcad differentiates `scipy.stats.{function}` with a floating dtype= only, "
            f"not {np.dtype(dtype).name}.", fix="drop dtype= or pass a float dtype.")


def _spread(g, a, axis, keepdims, partial, target):
    """VJP of a reduction of `a` with `partial` (broadcasting against `a`), for the
    argument `target` (`a` itself, or weights broadcast against it)."""
    return unbroadcast(expand_reduced(g, a, axis, keepdims) * partial, target)


def _gathered(g, axis, keepdims, partial):
    """JVP of a reduction: the tangent times the partial, summed over the reduced axes."""
    return np.sum(g * partial, axis=axis, keepdims=keepdims)


def _kept(ans, a, axis, keepdims):
    return kept_axes(ans, np.shape(a), axis, keepdims)


# ---- central moments, skewness, kurtosis -----------------------------------------------------
def _centred(a, axis):
    return a - np.mean(a, axis=axis, keepdims=True)


def _moment_partial(c, order, axis):
    """d m_k / da for the central moment m_k = mean(c^k), c = a - mean(a): the mean's own
    move cancels in k (c^(k-1) - m_(k-1)) / n. Zero for k = 0 and for k = 1 (m_1 = 0)."""
    if order == 0:
        return 0.0 * c
    power = c ** (order - 1)
    return order * (power - np.mean(power, axis=axis, keepdims=True)) / reduced_size(c, axis)


def _about_center(a, order, axis, center):
    """d moment / da: about the mean, or about a constant `center` (k c^(k-1) / n)."""
    if center is None:
        return _moment_partial(_centred(a, axis), order, axis)
    if order == 0:
        return 0.0 * a
    return order * (a - center) ** (order - 1) / reduced_size(a, axis)


def _check_order(order):
    if np.ndim(order) != 0:
        raise UnsupportedDerivativeError(
            "srcad differentiates `scipy.stats.moment` with one order at a time.",
            fix="call it once per order: `[moment(a, k) for k in orders]`.")


def moment_vjp(g, ans, a, order=1, axis=0, nan_policy="propagate", *, center=None,
               keepdims=False):
    check_options("moment", (a,), nan_policy)
    _check_order(order)
    return _spread(g, a, axis, keepdims, _about_center(a, order, axis, center), a)


def moment_jvp(g, ans, a, order=1, axis=0, nan_policy="propagate", *, center=None,
               keepdims=False):
    check_options("moment", (a,), nan_policy)
    _check_order(order)
    return _gathered(g, axis, keepdims, _about_center(a, order, axis, center))


def _standardized_partial(a, axis, order):
    """d/da of the standardized moment m_k / m2^(k/2) (k = 3: skewness, 4: kurtosis):
    (dm_k - (k/2) m_k / m2 dm2) / m2^(k/2)."""
    c = _centred(a, axis)
    m2 = np.mean(c ** 2, axis=axis, keepdims=True)
    mk = np.mean(c ** order, axis=axis, keepdims=True)
    moved = _moment_partial(c, order, axis) - 0.5 * order * mk / m2 * _moment_partial(c, 2, axis)
    return moved / m2 ** (0.5 * order)


def _skew_partial(a, axis, bias):
    """d skew / da, times sqrt(n (n - 1)) / (n - 2) unbiased (SciPy corrects only for
    n > 2)."""
    partial, n = _standardized_partial(a, axis, 3), reduced_size(a, axis)
    return partial if bias or n <= 2 else partial * (math.sqrt(n * (n - 1.0)) / (n - 2.0))


def skew_vjp(g, ans, a, axis=0, bias=True, nan_policy="propagate", *, keepdims=False):
    check_options("skew", (a,), nan_policy)
    return _spread(g, a, axis, keepdims, _skew_partial(a, axis, bias), a)


def skew_jvp(g, ans, a, axis=0, bias=True, nan_policy="propagate", *, keepdims=False):
    check_options("skew", (a,), nan_policy)
    return _gathered(g, axis, keepdims, _skew_partial(a, axis, bias))


def _kurtosis_partial(a, axis, bias):
    """d kurtosis / da (Fisher's subtracts a constant 3), times (n^2 - 1) / ((n - 2) (n - 3))
    unbiased (SciPy corrects only for n > 3)."""
    partial, n = _standardized_partial(a, axis, 4), reduced_size(a, axis)
    return partial if bias or n <= 3 else partial * ((n * n - 1.0) / ((n - 2.0) * (n - 3.0)))


def kurtosis_vjp(g, ans, a, axis=0, fisher=True, bias=True, nan_policy="propagate", *,
                 keepdims=False):
    check_options("kurtosis", (a,), nan_policy)
    return _spread(g, a, axis, keepdims, _kurtosis_partial(a, axis, bias), a)


def kurtosis_jvp(g, ans, a, axis=0, fisher=True, bias=True, nan_policy="propagate", *,
                 keepdims=False):
    check_options("kurtosis", (a,), nan_policy)
    return _gathered(g, axis, keepdims, _kurtosis_partial(a, axis, bias))


defvjp(stats.moment, moment_vjp)  # (the order is an integer)
defjvp(stats.moment, moment_jvp)
defvjp(stats.skew, skew_vjp)
defjvp(stats.skew, skew_jvp)
defvjp(stats.kurtosis, kurtosis_vjp)
defjvp(stats.kurtosis, kurtosis_jvp)


# ---- spread about the mean: sem, variation, zscore -------------------------------------------
def _over(numerator, denominator):
    """numerator / denominator, zero where the denominator is: a spread of zero (equal
    elements) has the subgradient zero, as |x| at 0 and np.std's rules."""
    zero = denominator == 0
    return np.where(zero, 0.0, numerator / np.where(zero, 1.0, denominator))


def _sem_partial(ans, a, axis, ddof, keepdims):
    """d sem / da, sem = std(a, ddof) / sqrt(n): c / ((n - ddof) n sem)."""
    n = reduced_size(a, axis)
    return _over(_centred(a, axis), (n - ddof) * n * _kept(ans, a, axis, keepdims))


def sem_vjp(g, ans, a, axis=0, ddof=1, nan_policy="propagate", *, keepdims=False):
    check_options("sem", (a,), nan_policy)
    return _spread(g, a, axis, keepdims, _sem_partial(ans, a, axis, ddof, keepdims), a)


def sem_jvp(g, ans, a, axis=0, ddof=1, nan_policy="propagate", *, keepdims=False):
    check_options("sem", (a,), nan_policy)
    return _gathered(g, axis, keepdims, _sem_partial(ans, a, axis, ddof, keepdims))


def _variation_partial(ans, a, axis, ddof, keepdims):
    """d variation / da, variation = std(a, ddof) / mean(a):
    (c / ((n - ddof) std) - variation / n) / mean."""
    n = reduced_size(a, axis)
    mean = np.mean(a, axis=axis, keepdims=True)
    ratio = _kept(ans, a, axis, keepdims)
    return (_over(_centred(a, axis), (n - ddof) * ratio * mean) - ratio / n) / mean


def variation_vjp(g, ans, a, axis=0, nan_policy="propagate", ddof=0, *, keepdims=False):
    check_options("variation", (a,), nan_policy)
    return _spread(g, a, axis, keepdims, _variation_partial(ans, a, axis, ddof, keepdims), a)


def variation_jvp(g, ans, a, axis=0, nan_policy="propagate", ddof=0, *, keepdims=False):
    check_options("variation", (a,), nan_policy)
    return _gathered(g, axis, keepdims, _variation_partial(ans, a, axis, ddof, keepdims))


def zscore_rule(g, ans, a, axis=0, ddof=0, nan_policy="propagate"):
    """z = c / s: dz = (dc - z ds) / s with ds = sum(z dc) / (n - ddof). Its Jacobian is
    symmetric, so the same map takes cotangents back and tangents forward."""
    check_options("zscore", (a,), nan_policy)
    n = reduced_size(a, axis)
    std = np.std(a, axis=axis, ddof=ddof, keepdims=True)
    moved = g - np.mean(g, axis=axis, keepdims=True)
    return (moved - ans * np.sum(g * ans, axis=axis, keepdims=True) / (n - ddof)) / std


defvjp(stats.sem, sem_vjp)
defjvp(stats.sem, sem_jvp)
defvjp(stats.variation, variation_vjp)
defjvp(stats.variation, variation_jvp)
defvjp(stats.zscore, zscore_rule)
defjvp(stats.zscore, zscore_rule)


# ---- weighted means: geometric, harmonic, power ----------------------------------------------
def _weighted(a, axis, weights):
    """The weights, broadcast against `a`, and their sums over the reduced axes (kept)."""
    w = np.ones_like(a) if weights is None else weights + 0.0 * a
    return w, np.sum(w, axis=axis, keepdims=True)


def _gmean_partials(ans, a, axis, weights, keepdims):
    """gmean = exp(sum(w log a) / W): ans w / (W a) in a, ans (log a - log ans) / W in w."""
    w, total = _weighted(a, axis, weights)
    mean = _kept(ans, a, axis, keepdims)
    return mean * w / (total * a), mean * (np.log(a) - np.log(mean)) / total


def _hmean_partials(ans, a, axis, weights, keepdims):
    """hmean = W / sum(w / a): H^2 w / (W a^2) in a, (H / W) (1 - H / a) in w."""
    w, total = _weighted(a, axis, weights)
    mean = _kept(ans, a, axis, keepdims)
    return mean ** 2 * w / (total * a ** 2), mean / total * (1.0 - mean / a)


def _mean_rule(function: str, partials, position, vjp):
    """The VJP (or JVP) of gmean or hmean in `a` (position 0) or `weights` (1), from their
    `partials`. (hmean's weights are keyword-only: no rule slot answers for them there.)"""
    def rule(g, ans, a, axis=0, dtype=None, weights=None, *, nan_policy="propagate",
             keepdims=False):
        check_options(function, (a, weights), nan_policy, dtype)
        partial = partials(ans, a, axis, weights, keepdims)[position]
        if vjp:
            return _spread(g, a, axis, keepdims, partial, (a, weights)[position])
        return _gathered(g, axis, keepdims, partial)
    rule.__name__ = rule.__qualname__ = f"{function}_{'vjp' if vjp else 'jvp'}_{position}"
    return rule


def _pmean_partials(ans, a, p, axis, weights, keepdims):
    """pmean = M^(1/p), M = sum(w a^p) / W: in a, P^(1-p) w a^(p-1) / W; in w,
    P^(1-p) (a^p - M) / (p W); in p, P (sum(w a^p log a) / (p W M) - log M / p^2).
    At p = 0 it is the geometric mean, whose partials these are then."""
    if p == 0:
        partial_a, partial_w = _gmean_partials(ans, a, axis, weights, keepdims)
        return partial_a, None, partial_w
    w, total = _weighted(a, axis, weights)
    mean = _kept(ans, a, axis, keepdims)
    powered = a ** p
    m = mean ** p
    partial_p = mean * (np.sum(w * powered * np.log(a), axis=axis, keepdims=True)
                        / (p * total * m) - np.log(m) / p ** 2)
    return (mean ** (1.0 - p) * w * a ** (p - 1.0) / total, partial_p,
            mean ** (1.0 - p) * (powered - m) / (p * total))


def _refuse_p_at_zero(p):
    if p == 0:
        raise UnsupportedDerivativeError(
            "srcad does not differentiate `scipy.stats.pmean` with respect to p at p = 0, "
            "where SciPy switches to the geometric mean.",
            fix="hold p constant there, or differentiate at a p away from 0.")


def _pmean_rule(position, vjp):
    def rule(g, ans, a, p, *, axis=0, dtype=None, weights=None, nan_policy="propagate",
             keepdims=False):
        check_options("pmean", (a, p, weights), nan_policy, dtype)
        if position == 1:
            _refuse_p_at_zero(p)
        partial = _pmean_partials(ans, a, p, axis, weights, keepdims)[position]
        if position == 1:  # (one number for each result)
            partial = np.reshape(partial, np.shape(ans))
            return unbroadcast(g * partial, p) if vjp else g * partial
        if vjp:
            return _spread(g, a, axis, keepdims, partial, (a, p, weights)[position])
        return _gathered(g, axis, keepdims, partial)
    rule.__name__ = rule.__qualname__ = f"pmean_{'vjp' if vjp else 'jvp'}_{position}"
    return rule


defvjp(stats.gmean, _mean_rule("gmean", _gmean_partials, 0, True), None, None,
       _mean_rule("gmean", _gmean_partials, 1, True))
defjvp(stats.gmean, _mean_rule("gmean", _gmean_partials, 0, False), None, None,
       _mean_rule("gmean", _gmean_partials, 1, False))
defvjp(stats.hmean, _mean_rule("hmean", _hmean_partials, 0, True))
defjvp(stats.hmean, _mean_rule("hmean", _hmean_partials, 0, False))
defvjp(stats.pmean, _pmean_rule(0, True), _pmean_rule(1, True))
defjvp(stats.pmean, _pmean_rule(0, False), _pmean_rule(1, False))


# ---- entropy and relative entropy ------------------------------------------------------------
def _entropy_partials(ans, pk, qk, base, axis, keepdims):
    """The partials in pk, qk and base. With p = pk / sum(pk) and H = -sum(p log p) in
    nats: (-log p - H) / sum(pk) in pk; with q = qk / sum(qk) and D = sum(p log(p / q)):
    (log(p / q) - D) / sum(pk) in pk and (1 - p / q) / sum(qk) in qk; all over log(base)
    for another base, in which the value has the partial -value / (base log base)."""
    unit = 1.0 if base is None else math.log(base) if isinstance(base, (int, float)) \
        else np.log(base)  # (a Python number's logarithm stays one: float32 stays float32)
    value = _kept(ans, pk if qk is None else pk + 0.0 * qk, axis, keepdims)
    nats = value * unit
    total = np.sum(pk, axis=axis, keepdims=True)
    p = pk / total
    if qk is None:
        return ((-np.log(p) - nats) / (total * unit), None,
                None if base is None else -value / (base * unit))
    q_total = np.sum(qk, axis=axis, keepdims=True)
    q = qk / q_total
    return ((np.log(p / q) - nats) / (total * unit), (1.0 - p / q) / (q_total * unit),
            None if base is None else -value / (base * unit))


def _entropy_rule(position, vjp):
    def rule(g, ans, pk, qk=None, base=None, axis=0, *, nan_policy="propagate",
             keepdims=False):
        check_options("entropy", (pk, qk, base), nan_policy)
        partial = _entropy_partials(ans, pk, qk, base, axis, keepdims)[position]
        if position == 2:  # (one number for each result)
            partial = np.reshape(partial, np.shape(ans))
            return unbroadcast(g * partial, base) if vjp else g * partial
        full = pk if qk is None else pk + 0.0 * qk
        if vjp:
            return _spread(g, full, axis, keepdims, partial, (pk, qk)[position])
        return _gathered(g, axis, keepdims, partial)
    rule.__name__ = rule.__qualname__ = f"entropy_{'vjp' if vjp else 'jvp'}_{position}"
    return rule


defvjp(stats.entropy, *(_entropy_rule(i, True) for i in range(3)))
defjvp(stats.entropy, *(_entropy_rule(i, False) for i in range(3)))

nondifferentiable(check_options, _check_order, _refuse_p_at_zero)
