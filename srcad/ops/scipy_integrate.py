"""Rules for `scipy.integrate`'s sampled-data quadratures: trapezoid (in y, x and dx) and
simpson (in y).

Loaded lazily with the other SciPy rules (see `registry`). Both rules are linear in the
samples y: the JVP in y is the quadrature of the tangent, the VJP spreads the cotangent
over the axis with each sample's quadrature weight. The trapezoid rule is bilinear in
(spacings, y), so its JVP in x is the quadrature of y over the tangent's "grid"
(`trapezoid(y, x=t)` sums diff(t) times the interval means), and in dx the quadrature
times the tangent. Simpson's weights depend on x nonlinearly (the parabolas through
unequal intervals, and Cartwright's correction for an even count): its derivatives in x
and dx are refused. The rules call `scipy.integrate` and NumPy functions that have rules,
so a Hessian differentiates them again.
"""
import numpy as np
import scipy.integrate as integrate

from srcad.kernels.adjoints import dtype_of, expand_reduced, unbroadcast
from srcad.ops.registry import defjvp, defvjp
from srcad.ops.scipy_special import no_derivative, refuse_complex


def _along(values, ndim, axis):
    """A 1-D array of values along `axis` shaped to broadcast against an ndim-array."""
    shape = [1] * ndim
    shape[axis] = np.shape(values)[0]
    return np.reshape(values, tuple(shape))


def _spacings(y, x, dx, axis):
    """The intervals between samples, broadcasting against y, in y's dtype: diff(x) along
    the axis (x 1-D, or with y's dimensions), or dx."""
    if x is None:
        shape = [1] * np.ndim(y)
        shape[axis] = np.shape(y)[axis] - 1
        return dx * np.ones(tuple(shape), dtype_of(y))
    h = _along(np.diff(x), np.ndim(y), axis) if np.ndim(x) == 1 else np.diff(x, axis=axis)
    if dtype_of(h) != dtype_of(y):  # (SciPy computes in y's precision)
        h = h.astype(dtype_of(y))
    return h


def _padded(values, axis, before):
    """`values` with one zero slice added before (or after) along `axis`."""
    shape = list(np.shape(values))
    shape[axis] = 1
    zero = np.zeros(tuple(shape), dtype_of(values))
    return np.concatenate([zero, values] if before else [values, zero], axis=axis)


def _pair_means(y, axis):
    """(y_i + y_(i+1)) / 2 along `axis`: the mean height over each interval."""
    n = np.shape(y)[axis]
    return 0.5 * (np.take(y, np.arange(n - 1), axis=axis)
                  + np.take(y, np.arange(1, n), axis=axis))


def _trapezoid_vjp_y(g, ans, y, x=None, dx=1.0, axis=-1):
    """Sample i weighs (h_(i-1) + h_i) / 2, with no interval beyond the ends."""
    refuse_complex("scipy.integrate.trapezoid", y, x, dx)
    h = _spacings(y, x, dx, axis)
    weights = 0.5 * (_padded(h, axis, True) + _padded(h, axis, False))
    return unbroadcast(expand_reduced(g, y, axis) * weights, y)


def _trapezoid_vjp_x(g, ans, y, x=None, dx=1.0, axis=-1):
    """x_i starts interval i and ends interval i - 1: S_(i-1) - S_i, S the interval means
    times the cotangent; summed over the other axes for a 1-D x."""
    refuse_complex("scipy.integrate.trapezoid", y, x, dx)
    means = _pair_means(y, axis) * expand_reduced(g, _pair_means(y, axis), axis)
    spread = _padded(means, axis, True) - _padded(means, axis, False)
    if np.ndim(x) == 1:
        others = tuple(i for i in range(np.ndim(spread)) if i != axis % np.ndim(spread))
        return np.sum(spread, axis=others)
    return unbroadcast(spread, x)


def _trapezoid_vjp_dx(g, ans, y, x=None, dx=1.0, axis=-1):
    """dx scales the integral (it is unused when x is given)."""
    if x is not None:
        return None
    return unbroadcast(g * integrate.trapezoid(y, axis=axis), dx)


def _trapezoid_jvp_y(g, ans, y, x=None, dx=1.0, axis=-1):
    return integrate.trapezoid(g, x, dx, axis)


def _trapezoid_jvp_x(g, ans, y, x=None, dx=1.0, axis=-1):
    return integrate.trapezoid(y, g, axis=axis)


def _trapezoid_jvp_dx(g, ans, y, x=None, dx=1.0, axis=-1):
    if x is not None:
        return None
    return g * integrate.trapezoid(y, axis=axis)


defvjp(integrate.trapezoid, _trapezoid_vjp_y, _trapezoid_vjp_x, _trapezoid_vjp_dx)
defjvp(integrate.trapezoid, _trapezoid_jvp_y, _trapezoid_jvp_x, _trapezoid_jvp_dx)


def _simpson_weights(y, x, dx, axis):
    """Each sample's weight in simpson along `axis`, broadcasting against y: the rule
    applied to each unit vector (SciPy's own arithmetic, so the weights are its own). With
    an x of y's dimensions every slice has weights of its own."""
    n = np.shape(y)[axis]
    basis = np.eye(n)
    if x is None or np.ndim(x) == 1:
        weights = integrate.simpson(basis, x=x, dx=dx, axis=-1)
        return _along(weights.astype(dtype_of(y), copy=False), np.ndim(y), axis)
    grid = np.moveaxis(x, axis, -1)
    batch = (n,) + np.shape(grid)
    units = np.broadcast_to(np.reshape(basis, (n,) + (1,) * (np.ndim(grid) - 1) + (n,)), batch)
    weights = integrate.simpson(units, x=np.broadcast_to(grid, batch), axis=-1)
    return np.moveaxis(np.moveaxis(weights.astype(dtype_of(y), copy=False), 0, -1), -1, axis)


def _simpson_vjp_y(g, ans, y, x=None, *, dx=1.0, axis=-1):
    refuse_complex("scipy.integrate.simpson", y, x, dx)
    return unbroadcast(expand_reduced(g, y, axis) * _simpson_weights(y, x, dx, axis), y)


def _simpson_jvp_y(g, ans, y, x=None, *, dx=1.0, axis=-1):
    return integrate.simpson(g, x=x, dx=dx, axis=axis)


_NO_DERIVATIVE_IN_X = no_derivative(
    "scipy.integrate.simpson", "x",
    "hold the sample points constant, or use scipy.integrate.trapezoid, whose derivative "
    "in x srcad takes.")


def _simpson_x(g, ans, y, x=None, *, dx=1.0, axis=-1):
    """(simpson's own signature, so that the transforms bind a call's keywords to it)"""
    return _NO_DERIVATIVE_IN_X(g, ans)


defvjp(integrate.simpson, _simpson_vjp_y, _simpson_x)
defjvp(integrate.simpson, _simpson_jvp_y, _simpson_x)
