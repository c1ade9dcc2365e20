"""Rules for sorting and selecting (sort, unique, take, take_along_axis, nan_to_num), for
lookups in tables and polynomials (interp, polyval, gradient, sinc, linspace, full), and the
index and search functions that have no derivative.

Selecting is linear in the array selected from: a JVP selects from the tangent as the
primal selects from the values, and a VJP adds the cotangent into zeros at the positions
selected (repeats add up). NumPy writes several of these functions in Python (interp,
polyval, gradient, sinc, linspace); a rule is faster than following their source, and tape
mode, which never reads source, needs one. Parameters that can carry a derivative however
they are passed (np.interp's `left` and `right`, np.nan_to_num's `nan`, np.full's
`fill_value`) have rules, so a value passed for them is differentiated, not dropped.
"""
import numpy as np

from srcad.errors import SrcadError
from srcad.rules.registry import defjvp, defvjp, nondifferentiable
from srcad.runtime import broadcast_like, dense, dtype_of, unbroadcast


def added_into_zeros(values, shape, index):
    """Zeros of `shape` with `values` added at `index`, repeated positions adding up (a
    tape-mode tensor `values` gives a tensor, which records the additions)."""
    result = np.zeros_like(values, shape=shape)
    np.add.at(result, index, values)
    return result


# ---- sorting ---------------------------------------------------------------------------------
def _sort_order(a, axis):
    """The permutation np.sort applies along `axis`, found by a stable sort: of elements
    that tie, the first is sorted first, and each position of the result takes the
    derivative of exactly one element."""
    return np.argsort(a, axis=axis, kind="stable")


def sort_vjp(g, ans, a, axis=-1, kind=None, order=None, *, stable=None):
    """`np.sort`: `g` sent back through the inverse of the sorting permutation."""
    if axis is None:
        return np.reshape(sort_vjp(g, ans, np.ravel(a)), np.shape(a))
    return np.take_along_axis(g, np.argsort(_sort_order(a, axis), axis=axis), axis=axis)


def sort_jvp(g, ans, a, axis=-1, kind=None, order=None, *, stable=None):
    """`np.sort`: `g` permuted as the values are (over the flat array for axis None)."""
    if axis is None:
        return sort_jvp(np.ravel(g), ans, np.ravel(a))
    return np.take_along_axis(g, _sort_order(a, axis), axis=axis)


defvjp(np.sort, sort_vjp)
defjvp(np.sort, sort_jvp)


def unique_positions(ar, axis, equal_nan):
    """The flat position in `ar` of the first element equal to each value `np.unique(ar)`
    returns (integers, so srcad never differentiates this)."""
    if axis is not None:
        raise SrcadError("srcad differentiates np.unique over the flattened array only, not "
                         "with `axis`.", fix="sort the rows yourself (np.lexsort) and select "
                         "the first of equal ones.")
    return np.unique(ar, return_index=True, equal_nan=equal_nan)[1]


nondifferentiable(unique_positions)


def unique_vjp(g, ans, ar, return_index=False, return_inverse=False, return_counts=False,
               axis=None, *, equal_nan=True, sorted=True):
    """`np.unique`: each value's cotangent goes to the first element equal to it (as np.sort
    gives each position to one element); with `return_*`, only the values (the first
    output) carry one."""
    g = g[0] if isinstance(ans, tuple) else g
    if g is None:
        return np.zeros(np.shape(ar), np.result_type(dtype_of(ar), np.float16))
    positions = unique_positions(ar, axis, equal_nan)
    return np.reshape(added_into_zeros(g, (np.size(ar),), positions), np.shape(ar))


def unique_jvp(g, ans, ar, return_index=False, return_inverse=False, return_counts=False,
               axis=None, *, equal_nan=True, sorted=True):
    """`np.unique`: each value's tangent is that of the first element equal to it; the
    integer outputs have none."""
    values = np.ravel(g)[unique_positions(ar, axis, equal_nan)]
    return (values,) + (None,) * (len(ans) - 1) if isinstance(ans, tuple) else values


defvjp(np.unique, unique_vjp)
defjvp(np.unique, unique_jvp)


# ---- selecting -------------------------------------------------------------------------------
def _taken_positions(indices, n, mode):
    """The positions `np.take` reads along an axis of length `n` for `indices`: "wrap" wraps
    them, "clip" clips them (negative ones to 0), "raise" counts negative ones from the end."""
    if mode == "wrap":
        return np.mod(indices, n)
    if mode == "clip":
        return np.clip(indices, 0, n - 1)
    return indices


def take_vjp(g, ans, a, indices, axis=None, out=None, mode="raise"):
    """`np.take`: `g` added into zeros of `a`'s shape at the positions taken."""
    if axis is None:
        return np.reshape(take_vjp(g, ans, np.ravel(a), indices, 0, mode=mode), np.shape(a))
    axis = axis % np.ndim(a)
    positions = _taken_positions(indices, np.shape(a)[axis], mode)
    return added_into_zeros(g, np.shape(a), (slice(None),) * axis + (positions,))


defvjp(np.take, take_vjp, None)
defjvp(np.take, lambda g, ans, a, indices, axis=None, out=None, mode="raise":
       np.take(g, indices, axis, mode=mode), None)


def take_along_axis_vjp(g, ans, arr, indices, axis=-1):
    """`np.take_along_axis`: `g` added into zeros of `arr`'s shape at the positions taken,
    the other axes indexed by open ranges (which broadcast as `indices` does)."""
    if axis is None:
        return np.reshape(take_along_axis_vjp(g, ans, np.ravel(arr), indices, 0), np.shape(arr))
    shape = np.shape(arr)
    axis = axis % len(shape)
    index = tuple(indices if k == axis else
                  np.reshape(np.arange(n), [n if j == k else 1 for j in range(len(shape))])
                  for k, n in enumerate(shape))
    return added_into_zeros(g, shape, index)


defvjp(np.take_along_axis, take_along_axis_vjp, None)
defjvp(np.take_along_axis, lambda g, ans, arr, indices, axis=-1:
       np.take_along_axis(g, indices, axis=axis), None)


# np.nan_to_num: finite elements pass through; the others take the value given for them.
def _replaced(g, x, kind, value):
    """The part of `g` at the elements of `x` replaced by `value` (`kind`: np.isnan,
    np.isposinf, np.isneginf), summed to `value`'s shape."""
    return unbroadcast(np.where(kind(x), g, 0.0), value)


defvjp(np.nan_to_num,
       lambda g, ans, x, copy=True, nan=0.0, posinf=None, neginf=None:
       np.where(np.isfinite(x), g, 0.0),
       None,
       lambda g, ans, x, copy=True, nan=0.0, posinf=None, neginf=None:
       _replaced(g, x, np.isnan, nan),
       lambda g, ans, x, copy=True, nan=0.0, posinf=None, neginf=None:
       _replaced(g, x, np.isposinf, posinf),
       lambda g, ans, x, copy=True, nan=0.0, posinf=None, neginf=None:
       _replaced(g, x, np.isneginf, neginf))
defjvp(np.nan_to_num,
       lambda g, ans, x, copy=True, nan=0.0, posinf=None, neginf=None:
       np.where(np.isfinite(x), g, 0.0),
       None,
       lambda g, ans, x, copy=True, nan=0.0, posinf=None, neginf=None:
       broadcast_like(np.where(np.isnan(x), g, 0.0), ans),
       lambda g, ans, x, copy=True, nan=0.0, posinf=None, neginf=None:
       broadcast_like(np.where(np.isposinf(x), g, 0.0), ans),
       lambda g, ans, x, copy=True, nan=0.0, posinf=None, neginf=None:
       broadcast_like(np.where(np.isneginf(x), g, 0.0), ans))


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
    powers = np.arange(n - 1, -1, -1, dtype=np.result_type(dtype_of(x), np.float16))
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
                                 np.result_type(dtype_of(f), np.float16))
    parts = g if len(stencils) > 1 else (g,)
    total = np.zeros(np.shape(f), np.result_type(dtype_of(f), np.float16))
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


# ---- arrays made from values -----------------------------------------------------------------
def linspace_fraction(ans, num, endpoint, retstep, dtype, axis):
    """The fractions t of the samples `ans` of np.linspace, start (1 - t) + stop t, in their
    precision and shaped to broadcast along their axis (read, never differentiated)."""
    if retstep:
        raise SrcadError("srcad does not differentiate np.linspace with retstep=True.",
                         fix="compute the step yourself: (stop - start) / (num - 1).")
    if dtype is not None and np.dtype(dtype).kind not in "fc":
        raise SrcadError(f"srcad does not differentiate np.linspace with dtype={dtype!r}: "
                         "its samples are rounded.", fix="convert the result instead.")
    shape = [1] * np.ndim(ans)
    shape[axis] = num
    steps = max(num - 1, 1) if endpoint else num
    return np.reshape(np.arange(num, dtype=ans.dtype) / steps, shape)


nondifferentiable(linspace_fraction)


def linspace_vjp(position):
    """The VJP rule of np.linspace's `start` (position 0) or `stop` (1)."""
    def rule(g, ans, start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0,
             **kwargs):
        t = linspace_fraction(ans, num, endpoint, retstep, dtype, axis)
        return unbroadcast(np.sum(g * (t if position else 1.0 - t), axis=axis),
                           (start, stop)[position])
    rule.__name__ = rule.__qualname__ = f"linspace_vjp_{('start', 'stop')[position]}"
    return rule


def linspace_jvp(position):
    """The JVP rule of np.linspace's `start` (position 0) or `stop` (1): `g` spread over the
    samples' axis, weighted by 1 - t or t."""
    def rule(g, ans, start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0,
             **kwargs):
        t = linspace_fraction(ans, num, endpoint, retstep, dtype, axis)
        axis = axis % np.ndim(ans)
        sides = np.shape(ans)[:axis] + np.shape(ans)[axis + 1:]  # start and stop broadcast
        return np.expand_dims(np.broadcast_to(g, sides), axis) * (t if position else 1.0 - t)
    rule.__name__ = rule.__qualname__ = f"linspace_jvp_{('start', 'stop')[position]}"
    return rule


defvjp(np.linspace, linspace_vjp(0), linspace_vjp(1))
defjvp(np.linspace, linspace_jvp(0), linspace_jvp(1))
defvjp(np.full, None, lambda g, ans, shape, fill_value, *args, **kwargs:
       unbroadcast(g, fill_value))
defjvp(np.full, None, lambda g, ans, shape, fill_value, *args, **kwargs: broadcast_like(g, ans))
defvjp(np.full_like, None, lambda g, ans, a, fill_value, *args, **kwargs:
       unbroadcast(g, fill_value))
defjvp(np.full_like, None, lambda g, ans, a, fill_value, *args, **kwargs:
       broadcast_like(g, ans))

# ---- no derivative: indices, masks, counts, tests --------------------------------------------
nondifferentiable(
    np.around, np.all, np.any, np.argpartition, np.argwhere, np.array_equiv, np.iscomplex,
    np.iscomplexobj, np.isrealobj, np.isscalar, np.result_type, np.digitize, np.lexsort,
    np.isin, np.nanargmax, np.nanargmin, np.unravel_index, np.ravel_multi_index, np.tri,
    np.identity, np.indices, np.tril_indices, np.triu_indices, np.diag_indices,
    np.tril_indices_from, np.triu_indices_from, np.diag_indices_from, np.bitwise_and,
    np.bitwise_or, np.bitwise_xor, np.invert, np.left_shift, np.right_shift, np.gcd, np.lcm,
)
