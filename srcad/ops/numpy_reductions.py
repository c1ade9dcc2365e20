"""Rules for reductions (sum, mean, nansum, nanmean, max, min, var, std, prod, trace) and
cumulative sums and products.

Each function's JVP rule is registered right after its VJP rule. Rules that fit in one
expression are lambdas (the inliner substitutes them into the adjoint or the tangent code);
the others are `def`s called by name. The linear reductions' JVPs are the reduction of the
tangent; prod and cumprod are exact where the array has zeros, and max and min share
between tied elements in both modes.

A `dtype=` may cast a complex array to a real one (NumPy drops the imaginary parts) or any
array to integers (which round): the linear reductions' rules pass the cotangent and the
tangent through the cast (`through_cast`: the real part, or zeros), prod and cumprod
differentiate the product of the cast values, and var and std, whose casts mix the two, are
refused. The test `dtype is None` keeps the common call free of that work (it folds away
where a rule is inlined).
"""
import math

import numpy as np

from srcad.kernels import batched
from srcad.errors import SrcadError, UnsupportedDerivativeError
from srcad.ops.registry import declare, defjvp, defvjp, nondifferentiable, returns_new_array
from srcad.kernels.adjoints import (dtype_of, expand_reduced, inverse_permutation, kept_axes,
                           through_cast, reduced_axes, reduced_size)

# ---- reductions --------------------------------------------------------------------------
# (`initial`, added to the sum, has no derivative: NumPy's own code passes `initial=0`)
defvjp(np.sum, lambda g, ans, a, axis=None, dtype=None, out=None, keepdims=False, initial=0:
       expand_reduced(g if dtype is None else through_cast(g, dtype), a, axis, keepdims))
defjvp(np.sum, lambda g, ans, a, axis=None, dtype=None, out=None, keepdims=False, initial=0:
       np.sum(g if dtype is None else through_cast(g, dtype), axis, dtype=dtype,
              keepdims=keepdims))
defvjp(np.mean, lambda g, ans, a, axis=None, dtype=None, out=None, keepdims=False:
       expand_reduced((g if dtype is None else through_cast(g, dtype)) / reduced_size(a, axis),
                      a, axis, keepdims))
defjvp(np.mean, lambda g, ans, a, axis=None, dtype=None, out=None, keepdims=False:
       np.mean(g if dtype is None else through_cast(g, dtype), axis, dtype=dtype,
               keepdims=keepdims))



# np.nansum and np.nanmean skip NaNs (NumPy writes zeros over them in a copy, in place, so
# following its source would not work): a NaN element gets no derivative, the others the sum's
# and the mean's over the elements that count
def _counted(a):
    return ~np.isnan(a)


def nansum_vjp(g, ans, a, axis=None, dtype=None, out=None, keepdims=False):
    if dtype is not None:
        g = through_cast(g, dtype)
    return np.where(_counted(a), expand_reduced(g, a, axis, keepdims), 0.0)


def nansum_jvp(g, ans, a, axis=None, dtype=None, out=None, keepdims=False):
    if dtype is not None:
        g = through_cast(g, dtype)
    return np.sum(np.where(_counted(a), g, 0.0), axis, dtype=dtype, keepdims=keepdims)


def nanmean_vjp(g, ans, a, axis=None, dtype=None, out=None, keepdims=False):
    if dtype is not None:
        g = through_cast(g, dtype)
    counted = _counted(a)
    count = np.sum(counted, axis=axis, keepdims=True, dtype=dtype_of(a))  # (a's precision)
    return np.where(counted, expand_reduced(g, a, axis, keepdims) / count, 0.0)


def nanmean_jvp(g, ans, a, axis=None, dtype=None, out=None, keepdims=False):
    if dtype is not None:
        g = through_cast(g, dtype)
    counted = _counted(a)
    return np.sum(np.where(counted, g, 0.0), axis, dtype=dtype, keepdims=keepdims) \
        / np.sum(counted, axis=axis, keepdims=keepdims, dtype=dtype_of(a))


defvjp(np.nansum, nansum_vjp)
defjvp(np.nansum, nansum_jvp)
defvjp(np.nanmean, nanmean_vjp)
defjvp(np.nanmean, nanmean_jvp)


@returns_new_array
def extremum_vjp(g, ans, a, axis=None, out=None, keepdims=False, initial=None, where=True):
    """`np.max`/`np.min`: the cotangent is shared equally by the elements that tie for the
    extremum, as autograd does; elements `where` leaves out take no part, and `initial`
    (a constant) counts as one more candidate, so it takes its share of a tie. `ans` and `g`
    broadcast against `a` with the reduced axes kept: no array of `a`'s shape is made for
    either, only the winners and the result."""
    reached = kept_axes(ans, np.shape(a), axis, keepdims)
    winners = _winners(a, reached, where)
    g = kept_axes(g, np.shape(a), axis, keepdims)
    if initial is None and type(winners) is np.ndarray \
            and np.count_nonzero(winners) == np.size(reached) and not np.isnan(reached).any():
        return g * winners  # one winner per extremum (none is NaN): no tie to share
    ties = np.sum(winners, axis=axis, keepdims=True,
                  dtype=np.promote_types(dtype_of(g), np.float16))
    if initial is not None:
        ties = ties + (reached == initial)
    return g / ties * winners  # (one pass over a)


def _winners(a, reached, where):
    """The elements of `a` equal to their extremum `reached` that `where` keeps."""
    winners = a == reached
    return winners if where is True else np.logical_and(winners, where)


def extremum_jvp(g, ans, a, axis=None, out=None, keepdims=False, initial=None, where=True):
    """`np.max`/`np.min`: the mean tangent of the candidates that tie, as the VJP shares
    (`initial`, a constant, has tangent zero)."""
    winners = _winners(a, expand_reduced(ans, a, axis, keepdims), where)
    ties = np.sum(winners, axis=axis, keepdims=keepdims, dtype=np.result_type(g))
    if initial is not None:
        ties = ties + (ans == initial)
    return np.sum(g * winners, axis=axis, keepdims=keepdims) / ties


defvjp(np.max, extremum_vjp)
defjvp(np.max, extremum_jvp)
defvjp(np.min, extremum_vjp)
defjvp(np.min, extremum_jvp)
for _extremum in (np.amax, np.amin):  # NumPy 2's np.amax and np.amin are functions of their own
    defvjp(_extremum, extremum_vjp)
    defjvp(_extremum, extremum_jvp)


def _scale(a, axis, ddof, options) -> float:
    """`2 / (n - ddof)` of `np.var`/`np.std` (NumPy 2 also spells ddof `correction`); no
    degrees of freedom left give infinity, as NumPy's own quotient does (with its warning)."""
    if options.get("where", None) is not None:
        raise SrcadError("srcad's rules for np.var and np.std do not take a `where` mask.",
                         fix="select the elements first: `np.var(a[mask])`.")
    freedom = reduced_size(a, axis) - options.get("correction", ddof)
    return 2.0 / freedom if freedom > 0 else math.inf


def _refuse_cast(a, dtype):
    """np.var(a, dtype=float) of a complex `a` is the mean of |a - mean(Re a)|**2 (NumPy
    casts the mean, not the deviations), and an integer dtype rounds the mean and the result:
    no derivative is offered for those mixes."""
    if dtype is None:
        return
    kind = np.dtype(dtype).kind
    if kind not in "fc" or kind == "f" and dtype_of(a).kind == "c":
        raise UnsupportedDerivativeError(
            f"srcad does not differentiate np.var or np.std of a {dtype_of(a).name} array with "
            f"dtype={np.dtype(dtype).name}: NumPy casts the mean to that type but not the "
            "deviations from it.",
            fix="drop dtype=, or cast first: np.var(np.real(z)) for the spread of the real "
            "parts, np.var(np.round(x)) for integers (which have no derivative).")


def _variance_cotangent(g, a, axis, dtype, keepdims, ddof, options):
    """`np.var`: 2 (a - mean) / (n - ddof), spread over the reduced axes. The variance of
    a complex `a` is the mean of |a - mean|**2, real: its cotangent is 2 conj(a - mean)
    times the real part of `g`."""
    _refuse_cast(a, dtype)
    centred = a - np.mean(a, axis=axis, keepdims=True)
    spread = expand_reduced(g, a, axis, keepdims)
    if dtype_of(a).kind == "c":
        spread, centred = np.real(spread), np.conj(centred)
    return spread * centred * _scale(a, axis, ddof, options)


def _variance_tangent(g, a, axis, dtype, keepdims, ddof, options):
    """`np.var`: the sum of 2 (a - mean) g / (n - ddof) (g's own mean drops out); for a
    complex `a`, of 2 Re(conj(a - mean) g) / (n - ddof)."""
    _refuse_cast(a, dtype)
    centred = a - np.mean(a, axis=axis, keepdims=True)
    terms = np.real(np.conj(centred) * g) if dtype_of(a).kind == "c" else centred * g
    return np.sum(terms, axis=axis, dtype=dtype, keepdims=keepdims) * _scale(
        a, axis, ddof, options)


# (the options pass on as a dict, not `**kwargs`: a derivative of these rules reads them)
def var_vjp(g, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kwargs):
    return _variance_cotangent(g, a, axis, dtype, keepdims, ddof, kwargs)


def var_jvp(g, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kwargs):
    return _variance_tangent(g, a, axis, dtype, keepdims, ddof, kwargs)


def std_vjp(g, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kwargs):
    """`np.std`: the variance's cotangent, of g / (2 std)."""
    return _variance_cotangent(_over_twice(g, ans), a, axis, dtype, keepdims, ddof, kwargs)


def std_jvp(g, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kwargs):
    """`np.std`: the tangent of the variance over 2 std, as the VJP divides."""
    return _over_twice(_variance_tangent(g, a, axis, dtype, keepdims, ddof, kwargs), ans)


def _over_twice(g, std):
    """g / (2 std), zero where std is zero: the std of one element is zero whatever it is,
    and where equal elements make it zero, zero is the subgradient (as |x|'s at 0)."""
    zero = std == 0
    return np.where(zero, 0.0, g / (2.0 * np.where(zero, 1.0, std)))


nondifferentiable(_scale)  # (from a count; a derivative of the rules need not read it)
nondifferentiable(_refuse_cast)
defvjp(np.var, var_vjp)
defjvp(np.var, var_jvp)
defvjp(np.std, std_vjp)
defjvp(np.std, std_jvp)


def _others_product(a, axis):
    """Each element's product of the others it is reduced with, from exclusive cumulative
    products on both sides (exact with zeros: nothing divides by an element)."""
    shape = np.shape(a)
    axes = reduced_axes(axis, len(shape))
    order = [i for i in range(len(shape)) if i not in axes] + list(axes)
    moved = np.transpose(a, order)
    flat = np.reshape(moved, np.shape(moved)[:len(shape) - len(axes)] + (-1,))
    ones = np.ones_like(flat[..., :1])
    left = np.cumprod(np.concatenate([ones, flat[..., :-1]], -1), -1)
    right = np.flip(np.cumprod(np.concatenate([ones, np.flip(flat[..., 1:], -1)], -1), -1), -1)
    return np.transpose(np.reshape(left * right, np.shape(moved)), inverse_permutation(order))


def _others_product_times_initial(a, axis, options):
    """`_others_product`, times np.prod's `initial` (a constant factor); its `where` mask
    is refused rather than ignored."""
    if options.get("where", True) is not True:
        raise SrcadError("srcad's rules for np.prod do not take a `where` mask.",
                         fix="select the elements first (`np.prod(a[mask])`), or write "
                         "`np.prod(np.where(mask, a, 1.0))`.")
    return _others_product(a, axis) * options.get("initial", 1)


def prod_vjp(g, ans, a, axis=None, dtype=None, out=None, keepdims=False, **options):
    """`np.prod`: each element gets the product of the others (of their real parts, with
    the real part of `g`, where a real `dtype` casts them)."""
    if dtype is not None:
        g, a = through_cast(g, dtype), through_cast(a, dtype)
    return expand_reduced(g, a, axis, keepdims) * _others_product_times_initial(a, axis, options)


def prod_jvp(g, ans, a, axis=None, dtype=None, out=None, keepdims=False, **options):
    """`np.prod`: the sum of each tangent times the product of the others."""
    if dtype is not None:
        g, a = through_cast(g, dtype), through_cast(a, dtype)
    return np.sum(g * _others_product_times_initial(a, axis, options), axis=axis, dtype=dtype,
                  keepdims=keepdims)


defvjp(np.prod, prod_vjp)
defjvp(np.prod, prod_jvp)


def trace_vjp(g, ans, a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """`np.trace`: `g` on the (offset) diagonal of the plane `axis1`, `axis2`."""
    if dtype is not None:
        g = through_cast(g, dtype)
    n1, n2 = np.shape(a)[axis1], np.shape(a)[axis2]
    eye = np.eye(n1, n2, offset, dtype=np.promote_types(dtype_of(g), np.float16))
    g = np.expand_dims(g, (0, 1))  # g's axes follow the plane's, as in np.trace's result
    return np.moveaxis(eye.reshape(eye.shape + (1,) * (np.ndim(g) - 2)) * g,
                       (0, 1), (axis1 % np.ndim(a), axis2 % np.ndim(a)))


defvjp(np.trace, trace_vjp)
defjvp(np.trace, lambda g, ans, a, offset=0, axis1=0, axis2=1, dtype=None, out=None:
       np.trace(through_cast(g, dtype), offset, axis1, axis2, dtype))


# ---- cumulative sums and products ----------------------------------------------------------
def cumsum_vjp(g, ans, a, axis=None, dtype=None, out=None):
    """`np.cumsum`: the reversed cumulative sum of `g` (over the flat array for axis None)."""
    if dtype is not None:
        g = through_cast(g, dtype)
    if axis is None:
        return np.reshape(np.flip(np.cumsum(np.flip(g))), np.shape(a))
    return np.flip(np.cumsum(np.flip(g, axis), axis), axis)


defvjp(np.cumsum, cumsum_vjp)
defjvp(np.cumsum, lambda g, ans, a, axis=None, dtype=None, out=None:
       np.cumsum(through_cast(g, dtype), axis, dtype))


def _cumprod_terms(x):
    """[..., j, i]: for i >= j the product of x[..., :i + 1] without x[..., j], else 0;
    computed without dividing (exact where `x` has zeros; O(n**2) memory)."""
    n = np.shape(x)[-1]
    return np.triu(np.cumprod(np.where(np.eye(n, dtype=bool), 1, x[..., None, :]), axis=-1))


def cumprod_vjp(g, ans, a, axis=None, dtype=None, out=None):
    """`np.cumprod`: element j gets the sum over i >= j of g[i] times the product of
    a[:i + 1] without a[j] (the real parts where a real `dtype` casts them, as prod's)."""
    if dtype is not None:
        g, a = through_cast(g, dtype), through_cast(a, dtype)
    if axis is None:
        return np.reshape(cumprod_vjp(g, ans, np.ravel(a), 0), np.shape(a))
    terms = _cumprod_terms(np.moveaxis(a, axis, -1))
    grad = np.sum(terms * np.moveaxis(g, axis, -1)[..., None, :], axis=-1)  # sum over i
    return np.moveaxis(grad, -1, axis)


def cumprod_jvp(g, ans, a, axis=None, dtype=None, out=None):
    """`np.cumprod`: element i gets the sum over j <= i of g[j] times the product of
    a[:i + 1] without a[j]."""
    if dtype is not None:
        g, a = through_cast(g, dtype), through_cast(a, dtype)
    if axis is None:
        return cumprod_jvp(np.ravel(g), ans, np.ravel(a), 0, dtype)
    terms = _cumprod_terms(np.moveaxis(a, axis, -1))
    tangent = np.sum(terms * np.moveaxis(g, axis, -1)[..., :, None], axis=-2, dtype=dtype)
    return np.moveaxis(tangent, -1, axis)


defvjp(np.cumprod, cumprod_vjp)
defjvp(np.cumprod, cumprod_jvp)


# ---- the range and the median: elements picked out, as by np.max ----------------------------
def ptp_vjp(g, ans, a, axis=None, out=None, keepdims=False):
    """`np.ptp`, the maximum minus the minimum: each one's rule, the minimum's negated."""
    highest, lowest = (np.max(a, axis=axis, keepdims=keepdims),
                       np.min(a, axis=axis, keepdims=keepdims))
    return extremum_vjp(g, highest, a, axis, keepdims=keepdims) \
        - extremum_vjp(g, lowest, a, axis, keepdims=keepdims)


def ptp_jvp(g, ans, a, axis=None, out=None, keepdims=False):
    highest, lowest = (np.max(a, axis=axis, keepdims=keepdims),
                       np.min(a, axis=axis, keepdims=keepdims))
    return extremum_jvp(g, highest, a, axis, keepdims=keepdims) \
        - extremum_jvp(g, lowest, a, axis, keepdims=keepdims)


defvjp(np.ptp, ptp_vjp)
defjvp(np.ptp, ptp_jvp)


def _middle(a, axis, overwrite_input=False):
    """`(a, axis, middle)`: `a` (raveled for axis None) and the positions, along `axis`, of
    the one or two elements np.median averages (a stable sort breaks ties; none if empty)."""
    if overwrite_input:
        raise SrcadError("srcad differentiates np.median without `overwrite_input=True`, "
                         "which sorts the array in place.", fix="drop `overwrite_input`.")
    if axis is None:
        a, axis = np.ravel(a), 0
    if not isinstance(axis, (int, np.integer)):
        raise SrcadError("srcad differentiates np.median over one axis or all of them, not "
                         "over a tuple of axes.", fix="move the axes together and reshape "
                         "them into one (np.moveaxis, then np.reshape).")
    order = np.argsort(a, axis=axis, kind="stable")
    count = np.shape(a)[axis]
    picks = [count // 2] if count % 2 else [count // 2 - 1, count // 2] if count else []
    return a, axis, [np.take(order, [k], axis=axis) for k in picks]


def median_vjp(g, ans, a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """`np.median`: the middle element (or each of the middle two, half) takes `g`."""
    flat, along, middle = _middle(a, axis, overwrite_input)
    g = np.expand_dims(g, along) if not keepdims or axis is None else g
    if axis is None:
        g = np.reshape(g, (1,))
    result = np.zeros(np.shape(flat), np.promote_types(dtype_of(g), dtype_of(a)))
    for positions in middle:
        np.put_along_axis(result, positions, g / len(middle), axis=along)
    return np.reshape(result, np.shape(a))


def median_jvp(g, ans, a, axis=None, out=None, overwrite_input=False, keepdims=False):
    flat, along, middle = _middle(a, axis, overwrite_input)
    if not middle:  # (an empty array's median is nan)
        return np.full(np.shape(ans), np.nan)
    g = np.ravel(g) if axis is None else g
    total = sum(np.take_along_axis(g, positions, axis=along) for positions in middle)
    tangent = total / len(middle)
    return np.reshape(tangent, np.shape(ans)) if axis is None else \
        tangent if keepdims else np.squeeze(tangent, along)


defvjp(np.median, median_vjp)
defjvp(np.median, median_jvp)


# ---- batched tangents (kernels/batched.py) ------------------------------------------------------
def _batched_reduction(fn):
    """The batched rule of `np.sum` or `np.mean` over logical axes (both are linear)."""
    def rule(ans, tangents, a, axis=None, dtype=None, out=None, keepdims=False, **options):
        if out is not None or options:
            batched.refused(f"np.{fn.__name__} with out=, initial= or where=")
        axes = batched.logical_axis(axis, np.ndim(a))
        return batched.full(fn(tangents[0], axis=axes, dtype=dtype, keepdims=keepdims), ans)
    rule.__name__ = f"batched_{fn.__name__}"
    return rule


declare(np.sum, batched=_batched_reduction(np.sum))
declare(np.mean, batched=_batched_reduction(np.mean))


# ---- what the compiler knows of the reductions besides their rules ------------------------------
# the ufunc whose `reduce` each is, or its name (analysis/shapes.py, transform/specialise.py)
for _reduction, _by in [(np.sum, np.add), (np.prod, np.multiply), (np.max, np.maximum),
                        (np.amax, np.maximum), (np.min, np.minimum), (np.amin, np.minimum),
                        (np.mean, "mean"), (np.std, "std"), (np.var, "var"),
                        (np.nansum, "nansum"), (np.nanmean, "nanmean")]:
    declare(_reduction, reduction=_by)
for _pure in (np.sum, np.mean, np.prod, np.max, np.min, np.amax, np.amin, np.nansum,
              np.nanmean):
    declare(_pure, pure=True)
# the ndarray methods that call them (runtime/methods.py)
for _method in ("sum", "mean", "max", "min", "var", "std", "prod", "cumsum", "cumprod", "trace"):
    declare(getattr(np, _method), methods=(_method,))
