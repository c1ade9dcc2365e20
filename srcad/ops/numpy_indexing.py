"""Rules for sorting and selecting (sort, unique, take, take_along_axis, nan_to_num), for
arrays made from values (linspace, full), and the index and search functions that have no
derivative (lookups in tables and polynomials: numpy_lookups.py).

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
from srcad.kernels.adjoints import dtype_of, through_cast, unbroadcast
from srcad.kernels.tangents import broadcast_like
from srcad.ops.registry import declare, defjvp, defvjp, nondifferentiable


def added_into_zeros(values, shape, index):
    """Zeros of `shape` with `values` added at `index`, repeated positions adding up (a
    tape-mode tensor `values` gives a tensor, which records the additions)."""
    result = np.zeros_like(values, shape=shape)
    np.add.at(result, index, values)
    return result


def scattered_add(a, index, values):
    """A copy of `a` with `values` added at `index`, repeated positions adding up: what
    `np.add.at(a, index, values)` writes into `a`, which source mode differentiates as
    `a[...] = scattered_add(a, index, values)` (frontend/desugar.py)."""
    result = np.copy(a)
    np.add.at(result, index, values)
    return result


defvjp(scattered_add, lambda g, ans, a, index, values: g, None,
       lambda g, ans, a, index, values: unbroadcast(g[index], values))
defjvp(scattered_add, lambda g, ans, a, index, values: g, None,
       lambda g, ans, a, index, values: added_into_zeros(
           np.broadcast_to(g, np.shape(ans[index])), np.shape(ans), index))


# ---- sorting ---------------------------------------------------------------------------------
def _sort_order(a, axis, descending=False):
    """The permutation np.sort applies along `axis`, found by a stable sort: of elements
    that tie, the first is sorted first, and each position of the result takes the
    derivative of exactly one element (NumPy 2.3's `descending=True`: largest first)."""
    if descending is True:
        return np.argsort(a, axis=axis, stable=True, descending=True)
    return np.argsort(a, axis=axis, kind="stable")


def sort_vjp(g, ans, a, axis=-1, kind=None, order=None, *, stable=None, descending=False):
    """`np.sort`: `g` sent back through the inverse of the sorting permutation."""
    if axis is None:
        return np.reshape(sort_vjp(g, ans, np.ravel(a), descending=descending), np.shape(a))
    return np.take_along_axis(g, np.argsort(_sort_order(a, axis, descending), axis=axis),
                              axis=axis)


def sort_jvp(g, ans, a, axis=-1, kind=None, order=None, *, stable=None, descending=False):
    """`np.sort`: `g` permuted as the values are (over the flat array for axis None)."""
    if axis is None:
        return sort_jvp(np.ravel(g), ans, np.ravel(a), descending=descending)
    return np.take_along_axis(g, _sort_order(a, axis, descending), axis=axis)


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
        return np.zeros(np.shape(ar), np.promote_types(dtype_of(ar), np.float16))
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


# np.select: each element comes from the first choice whose condition holds there, else from
# `default` (NumPy's code writes the choices into its result with np.copyto, last first).
def _selections(condlist, shape):
    """The masks of the elements each choice gives, and of those `default` gives."""
    taken, masks = np.zeros(shape, bool), []
    for condition in condlist:
        mask = np.broadcast_to(condition, shape) & ~taken
        masks.append(mask)
        taken = taken | mask
    return masks, ~taken


def select_vjp_choices(g, ans, condlist, choicelist, default=0):
    masks, _ = _selections(condlist, np.shape(ans))
    return [unbroadcast(np.where(mask, g, 0.0), choice) for mask, choice in zip(masks, choicelist)]


def select_vjp_default(g, ans, condlist, choicelist, default=0):
    return unbroadcast(np.where(_selections(condlist, np.shape(ans))[1], g, 0.0), default)


def select_jvp_choices(g, ans, condlist, choicelist, default=0):
    tangents = [np.zeros(np.shape(ans)) if t is None else t for t in g]
    return broadcast_like(np.select(condlist, tangents, 0.0), ans)


def select_jvp_default(g, ans, condlist, choicelist, default=0):
    return broadcast_like(np.where(_selections(condlist, np.shape(ans))[1], g, 0.0), ans)


defvjp(np.select, None, select_vjp_choices, select_vjp_default)
defjvp(np.select, None, select_jvp_choices, select_jvp_default)
nondifferentiable(_selections)


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
        g = through_cast(g, dtype)  # (a real dtype casts complex ends)
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
        g = through_cast(g, dtype)
        axis = axis % np.ndim(ans)
        sides = np.shape(ans)[:axis] + np.shape(ans)[axis + 1:]  # start and stop broadcast
        return np.expand_dims(np.broadcast_to(g, sides), axis) * (t if position else 1.0 - t)
    rule.__name__ = rule.__qualname__ = f"linspace_jvp_{('start', 'stop')[position]}"
    return rule


defvjp(np.linspace, linspace_vjp(0), linspace_vjp(1))
defjvp(np.linspace, linspace_jvp(0), linspace_jvp(1))
# (a complex fill value in a real array is cast: its real part)
defvjp(np.full, None, lambda g, ans, shape, fill_value, *args, **kwargs:
       unbroadcast(through_cast(g, dtype_of(ans)), fill_value))
defjvp(np.full, None, lambda g, ans, shape, fill_value, *args, **kwargs:
       broadcast_like(through_cast(g, dtype_of(ans)), ans))
defvjp(np.full_like, None, lambda g, ans, a, fill_value, *args, **kwargs:
       unbroadcast(through_cast(g, dtype_of(ans)), fill_value))
defjvp(np.full_like, None, lambda g, ans, a, fill_value, *args, **kwargs:
       broadcast_like(through_cast(g, dtype_of(ans)), ans))

# ---- no derivative: indices, masks, counts, tests --------------------------------------------
nondifferentiable(
    np.around, np.all, np.any, np.argpartition, np.argwhere, np.array_equiv, np.iscomplex,
    np.iscomplexobj, np.isrealobj, np.isscalar, np.result_type, np.digitize, np.lexsort,
    np.isin, np.nanargmax, np.nanargmin, np.unravel_index, np.ravel_multi_index, np.tri,
    np.identity, np.indices, np.tril_indices, np.triu_indices, np.diag_indices,
    np.tril_indices_from, np.triu_indices_from, np.diag_indices_from, np.bitwise_and,
    np.bitwise_or, np.bitwise_xor, np.invert, np.left_shift, np.right_shift, np.gcd, np.lcm,
)


for _method in ("take", "any", "all"):  # the ndarray methods that call them (runtime/methods.py)
    declare(getattr(np, _method), methods=(_method,))
