"""Rules for reductions, shape operations, joining and splitting, and indexing.

Rules that fit in one expression are lambdas (the inliner substitutes them into the
adjoint); the others are `def`s the adjoint calls by name. Contractions are in
numpy_contractions.py.
"""
import operator

import numpy as np

from srcad.errors import SrcadError
from srcad.rules.registry import defvjp, nondifferentiable
from srcad.runtime import (dtype_of, expand_reduced, index_adjoint, inverse_permutation,
                           reduced_axes, reduced_size, unbroadcast, unravel)

# ---- reductions --------------------------------------------------------------------------
defvjp(np.sum, lambda g, ans, a, axis=None, dtype=None, out=None, keepdims=False:
       expand_reduced(g, a, axis, keepdims))
defvjp(np.mean, lambda g, ans, a, axis=None, dtype=None, out=None, keepdims=False:
       expand_reduced(g / reduced_size(a, axis), a, axis, keepdims))


def extremum_vjp(g, ans, a, axis=None, out=None, keepdims=False, **kwargs):
    """`np.max`/`np.min`: the cotangent is shared equally by the elements that tie for the
    extremum, as autograd does."""
    winners = a == expand_reduced(ans, a, axis, keepdims)
    spread = expand_reduced(g, a, axis, keepdims)
    ties = np.sum(winners, axis=axis, keepdims=True, dtype=np.result_type(spread))
    return spread * winners / ties


defvjp(np.max, extremum_vjp)
defvjp(np.min, extremum_vjp)
defvjp(np.ndarray.astype, lambda g, ans, a, dtype, *args, **kwargs:
       (g.astype(dtype_of(a)) if hasattr(g, "astype") else np.asarray(g, dtype_of(a)))
       if dtype_of(a).kind == "f" else g)


def var_vjp(g, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kwargs):
    """`np.var`: 2 (a - mean) / (n - ddof), spread over the reduced axes."""
    centred = a - np.mean(a, axis=axis, keepdims=True)
    return expand_reduced(g, a, axis, keepdims) * centred * (2.0 / (reduced_size(a, axis) - ddof))


def std_vjp(g, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kwargs):
    return var_vjp(g / (2.0 * ans), ans, a, axis, dtype, out, ddof, keepdims)


def cumsum_vjp(g, ans, a, axis=None, dtype=None, out=None):
    """`np.cumsum`: the reversed cumulative sum of `g` (over the flat array for axis None)."""
    if axis is None:
        return np.reshape(np.flip(np.cumsum(np.flip(g))), np.shape(a))
    return np.flip(np.cumsum(np.flip(g, axis), axis), axis)


def trace_vjp(g, ans, a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """`np.trace`: `g` on the (offset) diagonal of the plane `axis1`, `axis2`."""
    n1, n2 = np.shape(a)[axis1], np.shape(a)[axis2]
    eye = np.eye(n1, n2, offset, dtype=np.result_type(dtype_of(g), np.float16))
    g = np.expand_dims(g, (0, 1))  # g's axes follow the plane's, as in np.trace's result
    return np.moveaxis(eye.reshape(eye.shape + (1,) * (np.ndim(g) - 2)) * g,
                       (0, 1), (axis1 % np.ndim(a), axis2 % np.ndim(a)))


defvjp(np.var, var_vjp)
defvjp(np.std, std_vjp)
defvjp(np.cumsum, cumsum_vjp)
defvjp(np.trace, trace_vjp)


def prod_vjp(g, ans, a, axis=None, dtype=None, out=None, keepdims=False, **kwargs):
    """`np.prod`: each element gets the product of the others, from exclusive cumulative
    products on both sides (exact with zeros: nothing divides by an element)."""
    shape = np.shape(a)
    axes = reduced_axes(axis, len(shape))
    order = [i for i in range(len(shape)) if i not in axes] + list(axes)
    moved = np.transpose(a, order)
    flat = np.reshape(moved, np.shape(moved)[:len(shape) - len(axes)] + (-1,))
    ones = np.ones_like(flat[..., :1])
    left = np.cumprod(np.concatenate([ones, flat[..., :-1]], -1), -1)
    right = np.flip(np.cumprod(np.concatenate([ones, np.flip(flat[..., 1:], -1)], -1), -1), -1)
    others = np.transpose(np.reshape(left * right, np.shape(moved)), inverse_permutation(order))
    return expand_reduced(g, a, axis, keepdims) * others


defvjp(np.prod, prod_vjp)

# ---- shape operations ------------------------------------------------------------------------
defvjp(np.reshape, lambda g, ans, a, shape=None, order="C": np.reshape(g, np.shape(a), order=order))
defvjp(np.copy, lambda g, ans, a, order="K", subok=False: g)
defvjp(np.ravel, lambda g, ans, a, order="C": unravel(g, a, order))
defvjp(np.transpose, lambda g, ans, a, axes=None: np.transpose(g, inverse_permutation(axes)))
defvjp(np.ndarray.T, lambda g, ans, a: np.transpose(g))
defvjp(operator.getitem, lambda g, ans, a, index: index_adjoint(g, a, index))

defvjp(np.squeeze, lambda g, ans, a, axis=None: np.reshape(g, np.shape(a)))
defvjp(np.expand_dims, lambda g, ans, a, axis: np.reshape(g, np.shape(a)))
defvjp(np.atleast_1d, lambda g, ans, a: np.reshape(g, np.shape(a)))
defvjp(np.atleast_2d, lambda g, ans, a: np.reshape(g, np.shape(a)))
defvjp(np.atleast_3d, lambda g, ans, a: np.reshape(g, np.shape(a)))
defvjp(np.swapaxes, lambda g, ans, a, axis1, axis2: np.swapaxes(g, axis1, axis2))
defvjp(np.moveaxis, lambda g, ans, a, source, destination: np.moveaxis(g, destination, source))
defvjp(np.broadcast_to, lambda g, ans, a, shape, subok=False: unbroadcast(g, a))
defvjp(np.flip, lambda g, ans, m, axis=None: np.flip(g, axis))
defvjp(np.fliplr, lambda g, ans, m: np.fliplr(g))
defvjp(np.flipud, lambda g, ans, m: np.flipud(g))
defvjp(np.roll, lambda g, ans, a, shift, axis=None: np.roll(g, np.negative(shift), axis))
defvjp(np.rot90, lambda g, ans, m, k=1, axes=(0, 1): np.rot90(g, -k, axes))

defvjp(np.triu, lambda g, ans, m, k=0: np.triu(g, k))
defvjp(np.tril, lambda g, ans, m, k=0: np.tril(g, k))


def diagonal_vjp(g, ans, a, offset=0, axis1=0, axis2=1):
    """`np.diagonal`: `g` written on the diagonal of zeros shaped like `a`."""
    ndim = np.ndim(a)
    axis1, axis2 = axis1 % ndim, axis2 % ndim
    rest = [n for i, n in enumerate(np.shape(a)) if i not in (axis1, axis2)]
    result = np.zeros(tuple(rest) + (np.shape(a)[axis1], np.shape(a)[axis2]), dtype_of(g))
    steps = np.arange(np.shape(g)[-1])
    result[..., steps + max(-offset, 0), steps + max(offset, 0)] = g
    return np.moveaxis(result, (-2, -1), (axis1, axis2))


def diag_vjp(g, ans, v, k=0):
    return np.diag(g, k) if np.ndim(v) == 1 else diagonal_vjp(g, ans, v, k)


defvjp(np.diagonal, diagonal_vjp)
defvjp(np.diag, diag_vjp)

nondifferentiable(np.shape, np.ndim, np.size, np.ndarray.shape, np.ndarray.ndim,
                  np.ndarray.size, np.ndarray.dtype, np.zeros, np.ones, np.empty, np.full,
                  np.zeros_like, np.ones_like, np.empty_like, np.arange, np.linspace, np.eye,
                  np.argmax, np.argmin, np.argsort)


# ---- joining arrays --------------------------------------------------------------------------
def stack_vjp(g, ans, arrays, axis=0, out=None, **kwargs):
    lead = (slice(None),) * (axis % np.ndim(g))  # g[:, ..., i]: indexing has a rule
    return [g[lead + (i,)] for i in range(len(arrays))]


def _pieces(g, edges, axis):
    """`np.split(g, edges, axis)` by slicing, which has a rule."""
    lead = (slice(None),) * axis
    bounds = [0, *(int(e) for e in edges), np.shape(g)[axis]]
    return [g[lead + (slice(lo, hi),)] for lo, hi in zip(bounds[:-1], bounds[1:])]


def concatenate_vjp(g, ans, arrays, axis=0, out=None, **kwargs):
    if axis is None:
        sizes = [np.size(a) for a in arrays]
        pieces = _pieces(np.ravel(g), np.cumsum(sizes)[:-1], 0)
        return [np.reshape(p, np.shape(a)) for p, a in zip(pieces, arrays)]
    axis = axis % np.ndim(g)
    edges = np.cumsum([np.shape(a)[axis] for a in arrays])[:-1]
    return _pieces(g, edges, axis)


def vstack_vjp(g, ans, tup, **kwargs):
    rows = np.cumsum([np.shape(np.atleast_2d(a))[0] for a in tup])[:-1]
    return [np.reshape(p, np.shape(a)) for p, a in zip(_pieces(g, rows, 0), tup)]


def hstack_vjp(g, ans, tup, **kwargs):
    axis = 0 if np.ndim(g) == 1 else 1
    edges = np.cumsum([np.shape(np.atleast_1d(a))[axis] for a in tup])[:-1]
    return [np.reshape(p, np.shape(a)) for p, a in zip(_pieces(g, edges, axis), tup)]


def array_vjp(g, ans, object, dtype=None, **kwargs):
    """`np.array(nested lists of values)`: each value gets its slice of the cotangent."""
    if isinstance(object, (list, tuple)):
        return type(object)(array_vjp(g[i], None, item) for i, item in enumerate(object))
    return np.reshape(g, np.shape(object)) if isinstance(object, np.ndarray) else g


defvjp(np.stack, stack_vjp)
defvjp(np.concatenate, concatenate_vjp)
defvjp(np.vstack, vstack_vjp)
defvjp(np.hstack, hstack_vjp)
defvjp(np.array, array_vjp)
defvjp(np.asarray, array_vjp)
defvjp(np.asanyarray, array_vjp)


def clip_vjp(position):
    def rule(g, ans, a, a_min=None, a_max=None, out=None, **kwargs):
        """`np.clip`: `a` where it lies inside the bounds, each bound where it clips."""
        a_min = kwargs.get("min") if a_min is None or a_min is np._NoValue else a_min
        a_max = kwargs.get("max") if a_max is None or a_max is np._NoValue else a_max
        if position == 0:
            inside = (True if a_min is None else a >= a_min) & (True if a_max is None else a <= a_max)
            return unbroadcast(g * inside, a)
        if position == 1:  # np.clip is minimum(maximum(a, a_min), a_max): a_max wins ties
            return unbroadcast(g * ((a < a_min) & (True if a_max is None else a_min <= a_max)),
                               a_min)
        return unbroadcast(g * ((a if a_min is None else np.maximum(a, a_min)) > a_max), a_max)
    rule.__name__ = rule.__qualname__ = f"clip_vjp_{position}"
    return rule


defvjp(np.clip, clip_vjp(0), clip_vjp(1), clip_vjp(2))


def repeat_vjp(g, ans, a, repeats, axis=None):
    """`np.repeat`: each element gets the sum of the cotangents of its copies."""
    if axis is None:
        return np.reshape(repeat_vjp(g, ans, np.ravel(a), repeats, 0), np.shape(a))
    n = np.shape(a)[axis]
    moved = np.moveaxis(g, axis, 0)
    result = np.zeros((n,) + np.shape(moved)[1:], dtype_of(g))
    np.add.at(result, np.repeat(np.arange(n), repeats), moved)
    return np.moveaxis(result, 0, axis)


def tile_vjp(g, ans, A, reps):
    """`np.tile`: the cotangents of the tiles, added up."""
    reps = (reps,) if np.ndim(reps) == 0 else tuple(reps)
    shape = np.shape(A)
    d = max(len(shape), len(reps))
    tiles = (1,) * (d - len(reps)) + reps
    sides = (1,) * (d - len(shape)) + shape
    g = np.reshape(g, tuple(n for pair in zip(tiles, sides) for n in pair))
    return np.reshape(np.sum(g, axis=tuple(range(0, 2 * d, 2))), shape)


def _split_vjp(axis_of):
    def rule(g, ans, ary, indices_or_sections, *args, **kwargs):
        """The pieces' cotangents put back together (None: a piece nobody used)."""
        axis = axis_of(ary, *args, **kwargs)
        return np.concatenate([np.zeros_like(piece) if part is None else part
                               for part, piece in zip(g, ans)], axis=axis)
    return rule


split_vjp = _split_vjp(lambda ary, axis=0: axis)
hsplit_vjp = _split_vjp(lambda ary: 1 if np.ndim(ary) > 1 else 0)
vsplit_vjp = _split_vjp(lambda ary: 0)
defvjp(np.split, split_vjp)
defvjp(np.array_split, split_vjp)
defvjp(np.hsplit, hsplit_vjp)
defvjp(np.vsplit, vsplit_vjp)
defvjp(np.repeat, repeat_vjp)
defvjp(np.tile, tile_vjp)


def pad_vjp(g, ans, array, pad_width, mode="constant", **kwargs):
    """`np.pad` with constants: the cotangent of the part that was `array`."""
    if mode != "constant":
        raise SrcadError(f"srcad has no derivative of np.pad with mode={mode!r}",
                         fix="use mode='constant', or build the padding by concatenation.")
    widths = np.broadcast_to(np.asarray(pad_width, dtype=int), (np.ndim(array), 2))
    return g[tuple(slice(lo, lo + n) for (lo, _), n in zip(widths, np.shape(array)))]


defvjp(np.pad, pad_vjp)


def diff_vjp(g, ans, a, n=1, axis=-1, prepend=np._NoValue, append=np._NoValue):
    """`np.diff`: each difference gives +g to its later element and -g to its earlier one;
    the parts that were `prepend` and `append` are cut off."""
    axis = axis % np.ndim(a)
    lead = (slice(None),) * axis
    for _ in range(n):
        zero = np.zeros_like(g[lead + (slice(0, 1),)])
        g = np.concatenate([zero, g], axis) - np.concatenate([g, zero], axis)
    start = 0 if prepend is np._NoValue else (np.shape(prepend)[axis] if np.ndim(prepend) else 1)
    return g[lead + (slice(start, start + np.shape(a)[axis]),)]


def partition_vjp(g, ans, a, kth, axis=-1, kind="introselect", order=None):
    """`np.partition`: `g` sent back through the permutation `np.argpartition` finds."""
    if axis is None:
        return np.reshape(partition_vjp(g, ans, np.ravel(a), kth), np.shape(a))
    permutation = np.argpartition(a, kth, axis=axis)
    return np.take_along_axis(g, np.argsort(permutation, axis=axis), axis=axis)


defvjp(np.diff, diff_vjp)
defvjp(np.partition, partition_vjp)


def cumprod_vjp(g, ans, a, axis=None, dtype=None, out=None):
    """`np.cumprod`: element j gets sum over i >= j of g[i] times the product of a[:i + 1]
    without a[j], computed without dividing (exact where `a` has zeros; O(n**2) memory)."""
    if axis is None:
        return np.reshape(cumprod_vjp(g, ans, np.ravel(a), 0), np.shape(a))
    x, gm = np.moveaxis(a, axis, -1), np.moveaxis(g, axis, -1)
    n = np.shape(x)[-1]
    others = np.cumprod(np.where(np.eye(n, dtype=bool), 1, x[..., None, :]), axis=-1)
    grad = np.sum(np.triu(others) * gm[..., None, :], axis=-1)  # [..., j, i] with i >= j
    return np.moveaxis(grad, -1, axis)


defvjp(np.cumprod, cumprod_vjp)
