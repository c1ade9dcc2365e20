"""Rules for lookups in tables and polynomials: interp, polyval, gradient and sinc.

NumPy writes these in Python; a rule is faster than following their source, and tape mode,
which never reads source, needs one. np.interp's `left` and `right` have rules, so a value
passed for them is differentiated, not dropped.
"""
import numpy as np

from srcad.errors import SrcadError
from srcad.kernels.adjoints import dtype_of, unbroadcast
from srcad.kernels.tangents import broadcast_like, dense
from srcad.ops.numpy_indexing import added_into_zeros
from srcad.ops.registry import declare, defjvp, defvjp, nondifferentiable


# ---- interpolation ---------------------------------------------------------------------------
def interp_intervals(x, xp, period):
    """For each `x`, the interval `j` of `xp` it lies in, xp[j] <= x < xp[j + 1] (the first
    or the last one beyond the ends); integers, so srcad never differentiates this."""
    if period is not None:
        raise SrcadError("srcad does not differentiate np.interp with `period`.",
                         fix="reduce x modulo the period and extend xp and fp by one period "
                         "on each side yourself.")
    if np.shape(xp)[0] < 2:
        raise SrcadError("srcad differentiates np.interp on two or more points.",
                         fix="with one point, the result is fp[0] (or left, right).")
    return np.clip(np.searchsorted(xp, x, side="right") - 1, 0, np.shape(xp)[0] - 2)


nondifferentiable(interp_intervals)


def _interval(x, xp, period):
    """For each `x`: its interval `j`, the weight `w` of `xp[j + 1]` in it (clipped to
    [0, 1] beyond the ends, as np.interp extends the end values), the interval's slope
    factor `1 / (xp[j+1] - xp[j])`, and whether `x` lies inside [xp[0], xp[-1]]."""
    j = interp_intervals(x, xp, period)
    lo, hi = xp[j], xp[j + 1]
    inverse_width = 1.0 / (hi - lo)
    w = np.clip((x - lo) * inverse_width, 0.0, 1.0)
    return j, w, inverse_width, (x >= xp[0]) & (x <= xp[-1])


def _kept(x, xp, left, right):
    """Where np.interp's value comes from `fp`, not from a `left` or `right` given."""
    return ((True if left is None else x >= xp[0])
            & (True if right is None else x <= xp[-1]))


def interp_x_rule(g, ans, x, xp, fp, left=None, right=None, period=None):
    """`np.interp` w.r.t. x: the slope of its interval inside [xp[0], xp[-1]], 0 beyond."""
    j, w, inverse_width, inside = _interval(x, xp, period)
    return g * (fp[j + 1] - fp[j]) * inverse_width * inside


def interp_xp_vjp(g, ans, x, xp, fp, left=None, right=None, period=None):
    """`np.interp` w.r.t. xp: inside its interval, y = fp[j] + s (x - xp[j]) with the slope
    s = (fp[j+1] - fp[j]) / (xp[j+1] - xp[j]), so dy/dxp[j] = -s (1 - w), dy/dxp[j+1] = -s w."""
    j, w, inverse_width, inside = _interval(x, xp, period)
    s = g * (fp[j + 1] - fp[j]) * inverse_width * inside
    n = np.shape(xp)
    return added_into_zeros(-s * (1.0 - w), n, j) + added_into_zeros(-s * w, n, j + 1)


def interp_fp_vjp(g, ans, x, xp, fp, left=None, right=None, period=None):
    """`np.interp` w.r.t. fp: weights 1 - w and w on the ends of each value's interval."""
    j, w, _, _ = _interval(x, xp, period)
    g = g * _kept(x, xp, left, right)
    n = np.shape(fp)
    return added_into_zeros(g * (1.0 - w), n, j) + added_into_zeros(g * w, n, j + 1)


def interp_xp_jvp(g, ans, x, xp, fp, left=None, right=None, period=None):
    """`np.interp` w.r.t. xp: the tangents of the interval's ends, weighted as in the VJP."""
    j, w, inverse_width, inside = _interval(x, xp, period)
    return -(fp[j + 1] - fp[j]) * inverse_width * inside * (g[j] * (1.0 - w) + g[j + 1] * w)


defvjp(np.interp, interp_x_rule, interp_xp_vjp, interp_fp_vjp,
       lambda g, ans, x, xp, fp, left=None, right=None, period=None:
       np.sum(np.where(x < xp[0], g, 0.0)),
       lambda g, ans, x, xp, fp, left=None, right=None, period=None:
       np.sum(np.where(x > xp[-1], g, 0.0)))
# interp is linear in fp: the tangent interpolates fp's tangent (0 where left/right given)
defjvp(np.interp, interp_x_rule, interp_xp_jvp,
       lambda g, ans, x, xp, fp, left=None, right=None, period=None:
       np.interp(x, xp, g, None if left is None else 0.0, None if right is None else 0.0,
                 period),
       lambda g, ans, x, xp, fp, left=None, right=None, period=None:
       np.where(x < xp[0], g, 0.0 * g),
       lambda g, ans, x, xp, fp, left=None, right=None, period=None:
       np.where(x > xp[-1], g, 0.0 * g))


# ---- polynomials, finite differences, sinc ---------------------------------------------------
def _coefficients(p):
    """np.polyval's coefficients as one array (a list of numbers or arrays, stacked)."""
    return np.stack(p) if isinstance(p, (list, tuple)) else p


def _derivative_coefficients(c):
    """The coefficients of the derivative of the polynomial with coefficients `c` (highest
    power first, each coefficient may be an array)."""
    n = np.shape(c)[0]
    powers = np.arange(n - 1, 0, -1, dtype=c.dtype)
    return c[:-1] * np.reshape(powers, (n - 1,) + (1,) * (np.ndim(c) - 1))


def polyval_p_vjp(g, ans, p, x):
    """`np.polyval` w.r.t. p: coefficient i multiplies x ** (n - 1 - i); an array of
    coefficients has the axes of the result that it was broadcast along summed."""
    c = _coefficients(p)
    n = np.shape(c)[0]
    powers = np.arange(n - 1, -1, -1, dtype=np.promote_types(dtype_of(x), np.float16))
    terms = g * x ** np.reshape(powers, (n,) + (1,) * np.ndim(ans))
    spread = tuple(range(1, 1 + np.ndim(ans) - (np.ndim(c) - 1)))  # axes c[i] lacks
    return unbroadcast(np.sum(terms, axis=spread) if spread else terms, c)


defvjp(np.polyval, polyval_p_vjp,
       lambda g, ans, p, x: unbroadcast(g * np.polyval(_derivative_coefficients(
           _coefficients(p)), x), x))
# polyval is linear in p: the tangent is the polynomial with the tangents as coefficients
defjvp(np.polyval,
       lambda g, ans, p, x: np.polyval(dense(g, p) if isinstance(p, (list, tuple)) else g, x),
       lambda g, ans, p, x: broadcast_like(g * np.polyval(_derivative_coefficients(
           _coefficients(p)), x), ans))


def gradient_stencils(ndim, shape, varargs, axis, edge_order, dtype):
    """np.gradient, axis by axis, as a stencil of at most three neighbours: for each axis
    `(axis, start, weights)`, output i reading input start[i] + d with weights[d][i].

    The window of row i starts at clip(i - 1, 0, n - 3); its three positions have different
    residues mod 3, so np.gradient of the comb (positions = c mod 3) gives, at row i, the
    weight of the window position of residue c: NumPy's own spacing and edge rules make the
    weights. Reads no value that carries a derivative, so srcad never differentiates this."""
    axes = range(ndim) if axis is None else axis if isinstance(axis, (tuple, list)) else (axis,)
    axes = [a % ndim for a in axes]
    spacings = varargs * len(axes) if len(varargs) == 1 else varargs or [()] * len(axes)
    stencils = []
    for ax, spacing in zip(axes, spacings):
        positions = np.arange(shape[ax])
        spacing = spacing if isinstance(spacing, tuple) else (spacing,)
        combs = [np.gradient((positions % 3 == c).astype(float), *spacing, edge_order=edge_order)
                 for c in range(3)]
        start = np.clip(positions - 1, 0, max(shape[ax] - 3, 0))
        weights = [np.choose((start + d) % 3, combs).astype(dtype)
                   for d in range(min(shape[ax], 3))]
        stencils.append((ax, start, weights))
    return stencils


nondifferentiable(gradient_stencils)


def gradient_vjp(g, ans, f, *varargs, axis=None, edge_order=1):
    """`np.gradient` is linear in f: each axis's stencil, transposed (each output's g times
    its weights added back at the inputs it read), applied to that axis's cotangent."""
    stencils = gradient_stencils(np.ndim(f), np.shape(f), varargs, axis, edge_order,
                                 np.promote_types(dtype_of(f), np.float16))
    parts = g if len(stencils) > 1 else (g,)
    total = np.zeros(np.shape(f), np.promote_types(dtype_of(f), np.float16))
    for part, (ax, start, weights) in zip(parts, stencils):
        if part is not None:  # an output nobody used
            moved = np.moveaxis(part, ax, -1)
            lead = (slice(None),) * (np.ndim(moved) - 1)
            for d, weight in enumerate(weights):
                back = added_into_zeros(moved * weight, np.shape(moved), lead + (start + d,))
                total = total + np.moveaxis(back, -1, ax)
    return total


def gradient_jvp(g, ans, f, *varargs, axis=None, edge_order=1):
    """`np.gradient` of the tangent, by the same stencils (indexing, which has rules)."""
    precision = (ans[0] if isinstance(ans, tuple) else ans).dtype
    stencils = gradient_stencils(np.ndim(f), np.shape(f), varargs, axis, edge_order, precision)
    parts = []
    for ax, start, weights in stencils:
        moved = np.moveaxis(g, ax, -1)
        lead = (slice(None),) * (np.ndim(moved) - 1)
        total = moved[lead + (start,)] * weights[0]
        for d in range(1, len(weights)):
            total = total + moved[lead + (start + d,)] * weights[d]
        parts.append(np.moveaxis(total, -1, ax))
    return parts[0] if len(parts) == 1 else parts  # a list, which srcad differentiates


def _spacing_refused(g, ans, f, *varargs, axis=None, edge_order=1):
    raise SrcadError("srcad differentiates np.gradient with respect to the values, not the "
                     "spacing.", fix="pass the spacing as a constant, or divide the result "
                     "of np.gradient(f) by it.")


defvjp(np.gradient, gradient_vjp, *[_spacing_refused] * 8)
defjvp(np.gradient, gradient_jvp, *[_spacing_refused] * 8)


def sinc_slope(y):
    """(y cos y - sin y) / y ** 2, the derivative of sin(y) / y. Where |y| < 0.1 the quotient
    cancels, and its Taylor polynomial is exact to double precision there; it also gives
    the derivatives at 0 (to the 8th) when this is differentiated again."""
    small = np.abs(y) < 0.1
    safe = np.where(small, 1.0, y)
    y2 = y * y
    series = y * (-1.0 / 3.0 + y2 * (1.0 / 30.0 + y2 * (-1.0 / 840.0 + y2 / 45360.0)))
    return np.where(small, series, (safe * np.cos(safe) - np.sin(safe)) / (safe * safe))


defvjp(np.sinc, lambda g, ans, x: g * np.pi * sinc_slope(np.pi * x))
defjvp(np.sinc, lambda g, ans, x: g * np.pi * sinc_slope(np.pi * x))

declare(np.gradient, sequence="new")  # (of an array of several axes: one array per axis)
