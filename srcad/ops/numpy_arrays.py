"""Rules for shape operations, joining and splitting, and indexing (astype and item are in
numpy_dtypes.py).

Each function's JVP rule is registered right after its VJP rule. Rules that fit in one
expression are lambdas (the inliner substitutes them into the adjoint or the tangent code);
the others are `def`s called by name. These functions are linear in their array arguments
(np.clip and np.partition piecewise), so most JVPs are the function itself applied to the
tangent. Reductions are in numpy_reductions.py, contractions in numpy_contractions.py.
"""
import operator

import numpy as np

from srcad.kernels import batched
from srcad.errors import SrcadError, UnsupportedDerivativeError
from srcad.ops.registry import declare, defjvp, defvjp, nondifferentiable, vjp_rules
from srcad.kernels.adjoints import (dtype_of, holds_floats, index_adjoint, inverse_permutation,
                                    through_cast, unbroadcast, unravel)
from srcad.kernels.tangents import broadcast_like, dense
from srcad.kernels.pytrees import is_record

# ---- shape operations ------------------------------------------------------------------------
defvjp(np.reshape, lambda g, ans, a, shape=None, order="C": np.reshape(g, np.shape(a), order=order))
defjvp(np.reshape, lambda g, ans, a, shape=None, order="C":
       np.reshape(g, np.shape(ans), order=order))
defvjp(np.copy, lambda g, ans, a, order="K", subok=False: g)
defjvp(np.copy, lambda g, ans, a, order="K", subok=False: g)
defvjp(np.ravel, lambda g, ans, a, order="C": unravel(g, a, order))


def ravel_jvp(g, ans, a, order="C"):
    """`np.ravel`: orders "A" and "K" follow `a`'s memory layout, which `g` need not share,
    so `g` is read in the order that `unravel` undoes."""
    return np.ravel(g, order) if order not in ("A", "K") else \
        np.ravel(g)[np.argsort(np.ravel(unravel(np.arange(np.size(a)), a, order)))]


defjvp(np.ravel, ravel_jvp)


def flattened(a, order="C"):
    """`a.flatten(order)`, a new array (np.ravel's may be a view), as a function: what source
    mode calls for the method of a value that surely is an array or a NumPy number
    (analysis/arrays.py)."""
    return a.flatten(order)


defvjp(flattened, *vjp_rules(np.ravel).rules)
defjvp(flattened, ravel_jvp)


def copied(array):
    """A copy of an array passed to a helper's variant (compiler/frontend/functional.py),
    or of a record (kernels/pytrees.py), holding its attributes, and copies of the lists and
    dicts among them (which a method appends to); its tangent is a copy too (the caller
    writes both back into its own)."""
    if is_record(array):
        made = object.__new__(type(array))
        vars(made).update({name: type(value)(value) if type(value) in (list, dict) else value
                           for name, value in vars(array).items()})
        return made
    return np.copy(array)


defvjp(copied, lambda g, ans, array: g)
defjvp(copied, lambda g, ans, array: {name: list(t) if isinstance(t, list) else dict(t) if
                                      isinstance(t, dict) else t for name, t in g.items()}
       if isinstance(g, dict) else np.copy(g))  # (a record's tangent, its lists copied too)

def filled(*values):
    """`b = np.zeros(n); b[0] = v0; ...; b[n - 1] = v(n-1)` as one call (the frontend writes a
    buffer filled element by element so, compiler/frontend/desugar.py): the same array,
    each value cast as the element writes cast it, and one rule per element instead of a
    saved and restored region per write."""
    for value in values:
        if type(value) not in _NUMBERS:
            break
    else:  # (the common case, numbers: one call, where writing each costs a call of its own)
        return np.array(values, np.float64)
    out = np.zeros(len(values))
    for position, value in enumerate(values):
        out[position] = value
    return out


_NUMBERS = frozenset({float, int, np.float64})
FILLED_MOST = 16  # elements of a buffer written out as `filled`, at most


def _filled_vjp(position: int):
    def rule(g, ans, *values):
        part, value = g[position], values[position]
        return part if type(value) in _NUMBERS or np.ndim(value) == 0 \
            else np.reshape(part, np.shape(value))
    return rule


def _filled_jvp(position: int):
    def rule(g, ans, *values):
        return filled(*[g if k == position else 0.0 for k in range(len(values))])
    return rule


defvjp(filled, *[_filled_vjp(position) for position in range(FILLED_MOST)])
defjvp(filled, *[_filled_jvp(position) for position in range(FILLED_MOST)])
declare(filled, new_array=True, pure=True)

defvjp(np.transpose, lambda g, ans, a, axes=None: np.transpose(g, inverse_permutation(axes)))
defjvp(np.transpose, lambda g, ans, a, axes=None: np.transpose(g, axes))
defvjp(np.ndarray.T, lambda g, ans, a: np.transpose(g))
defjvp(np.ndarray.T, lambda g, ans, a: np.transpose(g))
defvjp(operator.getitem, lambda g, ans, a, index: index_adjoint(g, a, index))
# a tuple, list or dict `a` has a container of tangents: g[index] picks from it too
defjvp(operator.getitem, lambda g, ans, a, index: g[index])


# ---- np.r_[...] and np.c_[...] -----------------------------------------------------------------
# Their index holds what they join (arrays and numbers): each element of a piece lands in one
# place of the result, so a piece's cotangent gathers from the output's, and the output's
# tangent from the pieces'. Source mode resolves `np.r_[x, y]` to `joined_by(np.r_, (x, y))`.
_CONCATENATORS = (type(np.r_), type(np.c_))


def is_concatenator(obj) -> bool:
    return isinstance(obj, _CONCATENATORS)


def joined_by(concatenator, index):
    """`concatenator[index]`, for `np.r_` or `np.c_`, as a function with rules."""
    return concatenator[index]


def _places(concatenator, index) -> tuple:
    """Per piece of `concatenator[index]`: the flat positions in the result of its elements,
    in order (None for a slice, a directive or a piece without floats), found by joining
    the pieces marked with imaginary numbers."""
    pieces = _joined(index)
    _refuse_unjoinable(pieces)
    marked, first = [], []
    for piece in pieces:
        floats = not isinstance(piece, (slice, str)) and holds_floats(piece)
        first.append(sum(np.size(p) for p, f in zip(pieces, first) if f is not None)
                     if floats else None)
        marked.append(1j * (first[-1] + 1 + np.reshape(np.arange(np.size(piece)),
                                                        np.shape(piece))) if floats else piece)
    ids = np.ravel(concatenator[tuple(marked) if isinstance(index, tuple) else marked[0]]).imag
    ids = np.round(ids).astype(np.intp) - 1
    places = []
    for piece, start in zip(pieces, first):
        if start is None:
            places.append(None)
            continue
        inside = np.flatnonzero((ids >= start) & (ids < start + np.size(piece)))
        order = np.empty(np.size(piece), dtype=np.intp)
        order[ids[inside] - start] = inside
        places.append(order)
    return tuple(places)


def _refuse_unjoinable(pieces) -> None:
    """A slice with a float bound makes values of its own (`np.r_[0.0:x:5j]`), and a matrix
    directive ("r", "c") an np.matrix, whose `*` is a product: neither is a join."""
    for piece in pieces:
        if isinstance(piece, slice) and any(
                isinstance(bound, (float, np.floating)) or holds_floats(np.asarray(bound))
                for bound in (piece.start, piece.stop) if bound is not None):
            raise UnsupportedDerivativeError(
                "srcad differentiates np.r_[...] and np.c_[...] as joins of the values they "
                "are indexed with; a slice with a float bound makes values of its own.",
                fix="make the range with np.linspace or np.arange and join that.")
        if isinstance(piece, str) and piece.split(",")[0].strip() in ("r", "c"):
            raise UnsupportedDerivativeError(
                "srcad cannot differentiate np.r_[...] with the matrix directive "
                f"{piece!r}: it makes an np.matrix, whose `*` and `**` are matrix products.",
                fix="join into an array (no directive, or \"0,2\") and use `@`.")


def joined_vjp(g, ans, concatenator, index):
    """The cotangent of the index: each joined piece's elements, gathered from g."""
    parts = tuple(None if place is None else np.reshape(np.ravel(g)[place], np.shape(piece))
                  for place, piece in zip(_places(concatenator, index), _joined(index)))
    return parts if isinstance(index, tuple) else parts[0]


def joined_jvp(g, ans, concatenator, index):
    """The tangent of the joined result: each element from its piece's tangent (zero for
    the constant pieces and the slices)."""
    tangents = g if isinstance(index, tuple) else (g,)
    dtype = dtype_of([t for t in tangents if t is not None][0])
    sources, lookup, offset = [np.zeros(1, dtype)], np.zeros(np.size(ans), np.intp), 1
    for place, piece, tangent in zip(_places(concatenator, index), _joined(index), tangents):
        if place is None:
            continue
        sources.append(np.zeros(np.size(piece), dtype) if tangent is None
                       else np.ravel(dense(tangent, piece)) if isinstance(tangent, (list, tuple))
                       else np.ravel(tangent))
        lookup[place] = offset + np.arange(np.size(piece))
        offset += np.size(piece)
    return np.reshape(np.concatenate(sources)[lookup], np.shape(ans))


def _joined(index) -> tuple:
    return index if isinstance(index, tuple) else (index,)


defvjp(joined_by, None, joined_vjp)
defjvp(joined_by, None, joined_jvp)
nondifferentiable(_places)  # (positions: a derivative of the rules reads them)


defvjp(np.squeeze, lambda g, ans, a, axis=None: np.reshape(g, np.shape(a)))
defjvp(np.squeeze, lambda g, ans, a, axis=None: np.squeeze(g, axis))
defvjp(np.expand_dims, lambda g, ans, a, axis: np.reshape(g, np.shape(a)))
defjvp(np.expand_dims, lambda g, ans, a, axis: np.expand_dims(g, axis))
defvjp(np.atleast_1d, lambda g, ans, a: np.reshape(g, np.shape(a)))
defjvp(np.atleast_1d, lambda g, ans, a: np.atleast_1d(g))
defvjp(np.atleast_2d, lambda g, ans, a: np.reshape(g, np.shape(a)))
defjvp(np.atleast_2d, lambda g, ans, a: np.atleast_2d(g))
defvjp(np.atleast_3d, lambda g, ans, a: np.reshape(g, np.shape(a)))
defjvp(np.atleast_3d, lambda g, ans, a: np.atleast_3d(g))
defvjp(np.swapaxes, lambda g, ans, a, axis1, axis2: np.swapaxes(g, axis1, axis2))
defjvp(np.swapaxes, lambda g, ans, a, axis1, axis2: np.swapaxes(g, axis1, axis2))
defvjp(np.moveaxis, lambda g, ans, a, source, destination: np.moveaxis(g, destination, source))
defjvp(np.moveaxis, lambda g, ans, a, source, destination: np.moveaxis(g, source, destination))


def rolled_to(a, axis, start):
    """Where `np.rollaxis(a, axis, start)` moves `axis` to, as np.moveaxis's destination."""
    ndim = np.ndim(a)
    start = start + ndim if start < 0 else start
    return start - 1 if axis % ndim < start else start


defvjp(np.rollaxis, lambda g, ans, a, axis, start=0:
       np.moveaxis(g, rolled_to(a, axis, start), axis))
defjvp(np.rollaxis, lambda g, ans, a, axis, start=0: np.rollaxis(g, axis, start))
defvjp(np.broadcast_to, lambda g, ans, a, shape, subok=False: unbroadcast(g, a))
defjvp(np.broadcast_to, lambda g, ans, a, shape, subok=False: np.broadcast_to(g, shape))
defvjp(np.flip, lambda g, ans, m, axis=None: np.flip(g, axis))
defjvp(np.flip, lambda g, ans, m, axis=None: np.flip(g, axis))
defvjp(np.fliplr, lambda g, ans, m: np.fliplr(g))
defjvp(np.fliplr, lambda g, ans, m: np.fliplr(g))
defvjp(np.flipud, lambda g, ans, m: np.flipud(g))
defjvp(np.flipud, lambda g, ans, m: np.flipud(g))
defvjp(np.roll, lambda g, ans, a, shift, axis=None: np.roll(g, np.negative(shift), axis))
defjvp(np.roll, lambda g, ans, a, shift, axis=None: np.roll(g, shift, axis))
defvjp(np.rot90, lambda g, ans, m, k=1, axes=(0, 1): np.rot90(g, -k, axes))
defjvp(np.rot90, lambda g, ans, m, k=1, axes=(0, 1): np.rot90(g, k, axes))

defvjp(np.triu, lambda g, ans, m, k=0: np.triu(g, k))
defjvp(np.triu, lambda g, ans, m, k=0: np.triu(g, k))
defvjp(np.tril, lambda g, ans, m, k=0: np.tril(g, k))
defjvp(np.tril, lambda g, ans, m, k=0: np.tril(g, k))


def diagonal_vjp(g, ans, a, offset=0, axis1=0, axis2=1):
    """`np.diagonal`: `g` written on the diagonal of zeros shaped like `a`."""
    ndim = np.ndim(a)
    if ndim == 2 and offset == 0 and np.shape(a)[0] == np.shape(a)[1]:
        return np.diag(g)  # (a square matrix's diagonal: one call, not zeros and an index)
    axis1, axis2 = axis1 % ndim, axis2 % ndim
    rest = [n for i, n in enumerate(np.shape(a)) if i not in (axis1, axis2)]
    result = np.zeros(tuple(rest) + (np.shape(a)[axis1], np.shape(a)[axis2]), dtype_of(g))
    steps = np.arange(np.shape(g)[-1])
    result[..., steps + max(-offset, 0), steps + max(offset, 0)] = g
    return np.moveaxis(result, (-2, -1), (axis1, axis2))


def diag_vjp(g, ans, v, k=0):
    return np.diag(g, k) if np.ndim(v) == 1 else diagonal_vjp(g, ans, v, k)


defvjp(np.diagonal, diagonal_vjp)
defjvp(np.diagonal, lambda g, ans, a, offset=0, axis1=0, axis2=1:
       np.diagonal(g, offset, axis1, axis2))
defvjp(np.diag, diag_vjp)
defjvp(np.diag, lambda g, ans, v, k=0: np.diag(g, k))
declare(np.diag, view="read-only")  # (a matrix's diagonal, as np.diagonal's)

# np.full and np.linspace carry their values' derivatives: their rules are in numpy_indexing.py
nondifferentiable(np.shape, np.ndim, np.size, np.ndarray.shape, np.ndarray.ndim,
                  np.ndarray.size, np.ndarray.dtype, np.zeros, np.ones, np.empty,
                  np.zeros_like, np.ones_like, np.empty_like, np.eye,
                  np.argmax, np.argmin, np.argsort)



# ---- np.arange: the values start + i * step (`stop` only sets how many) ------------------
def arange_weights(ans, stop, position):
    """d ans[i] / d start (position 0: 1) or d step (2: i); zero for values rounded to
    integers and for `np.arange(stop)`, whose one argument is the stop (read, never
    differentiated)."""
    if dtype_of(ans).kind not in "fc" or (position == 0 and stop is None):
        return np.zeros(np.shape(ans))
    return np.ones(np.shape(ans)) if position == 0 else np.arange(np.size(ans), dtype=float)


nondifferentiable(arange_weights)
defvjp(np.arange,
       lambda g, ans, start, stop=None, step=None, *args, **kwargs:
       unbroadcast(np.sum(g * arange_weights(ans, stop, 0)), start),
       None,
       lambda g, ans, start, stop=None, step=None, *args, **kwargs:
       unbroadcast(np.sum(g * arange_weights(ans, stop, 2)), step))
defjvp(np.arange,
       lambda g, ans, start, stop=None, step=None, *args, **kwargs:
       g * arange_weights(ans, stop, 0),
       None,
       lambda g, ans, start, stop=None, step=None, *args, **kwargs:
       g * arange_weights(ans, stop, 2))


# ---- joining arrays --------------------------------------------------------------------------
# The tangent of a sequence of arrays is a list of tangents, None for an element without one:
# `dense` puts zeros in their place. A `dtype=` (with casting="unsafe") may cast complex
# arrays to real ones, or round to integers: the cotangents and tangents pass through the
# cast (`through_cast`: the real part, or zeros). (np.array's too.)
def stack_vjp(g, ans, arrays, axis=0, out=None, **kwargs):
    g = through_cast(g, kwargs.get("dtype"))
    lead = (slice(None),) * (axis % np.ndim(g))  # g[:, ..., i]: indexing has a rule
    return [g[lead + (i,)] for i in range(len(arrays))]


def _pieces(g, edges, axis):
    """`np.split(g, edges, axis)` by slicing, which has a rule."""
    lead = (slice(None),) * axis
    bounds = [0, *(int(e) for e in edges), np.shape(g)[axis]]
    return [g[lead + (slice(lo, hi),)] for lo, hi in zip(bounds[:-1], bounds[1:])]


def concatenate_vjp(g, ans, arrays, axis=0, out=None, **kwargs):
    g = through_cast(g, kwargs.get("dtype"))
    if axis is None:
        sizes = [np.size(a) for a in arrays]
        pieces = _pieces(np.ravel(g), np.cumsum(sizes)[:-1], 0)
        return [np.reshape(p, np.shape(a)) for p, a in zip(pieces, arrays)]
    axis = axis % np.ndim(g)
    edges = np.cumsum([np.shape(a)[axis] for a in arrays])[:-1]
    return _pieces(g, edges, axis)


def vstack_vjp(g, ans, tup, **kwargs):
    g = through_cast(g, kwargs.get("dtype"))
    rows = np.cumsum([np.shape(np.atleast_2d(a))[0] for a in tup])[:-1]
    return [np.reshape(p, np.shape(a)) for p, a in zip(_pieces(g, rows, 0), tup)]


def hstack_vjp(g, ans, tup, **kwargs):
    g = through_cast(g, kwargs.get("dtype"))
    axis = 0 if np.ndim(g) == 1 else 1
    edges = np.cumsum([np.shape(np.atleast_1d(a))[axis] for a in tup])[:-1]
    return [np.reshape(p, np.shape(a)) for p, a in zip(_pieces(g, edges, axis), tup)]


def column_stack_vjp(g, ans, tup):
    """Each array its columns: one for a vector, its own for a matrix."""
    edges = np.cumsum([1 if np.ndim(a) < 2 else np.shape(a)[1] for a in tup])[:-1]
    return [np.reshape(p, np.shape(a)) for p, a in zip(_pieces(g, edges, 1), tup)]


def _own_ndim(object) -> int:
    """How many axes `np.array(object)` has without `ndmin`."""
    if isinstance(object, (list, tuple)):
        return 1 + (_own_ndim(object[0]) if object else 0)
    return np.ndim(object)


def array_vjp(g, ans, object, dtype=None, **kwargs):
    """`np.array(nested lists of values)`: each value gets its slice of the cotangent (the
    leading axes of length 1 that `ndmin` added dropped first)."""
    if dtype is not None:
        g = through_cast(g, dtype)
    if kwargs.get("ndmin", 0):
        g = np.reshape(g, np.shape(g)[np.ndim(g) - _own_ndim(object):])
    if isinstance(object, (list, tuple)):
        return type(object)(array_vjp(g[i], None, item) for i, item in enumerate(object))
    return np.reshape(g, np.shape(object)) if isinstance(object, np.ndarray) else g


def _filled(g, object):
    """The tangent `g` of nested lists of values, with zeros for its None parts."""
    if not isinstance(object, (list, tuple)):
        return g
    return [_filled(t, item) for t, item in zip(dense(g, object), object)]


def array_jvp(g, ans, object, dtype=None, **kwargs):
    """`np.array(nested lists of values)`: their tangents in one array, of the output's
    shape (`ndmin`) and precision."""
    tangent = np.asarray(_filled(g, object), np.promote_types(dtype_of(ans), np.float16))
    return np.reshape(through_cast(tangent, dtype), np.shape(ans))


defvjp(np.stack, stack_vjp)
defjvp(np.stack, lambda g, ans, arrays, axis=0, out=None, dtype=None, casting="same_kind":
       through_cast(np.stack(dense(g, arrays), axis, dtype=dtype, casting=casting), dtype))
defvjp(np.concatenate, concatenate_vjp)
defjvp(np.concatenate, lambda g, ans, arrays, axis=0, out=None, dtype=None, casting="same_kind":
       through_cast(np.concatenate(dense(g, arrays), axis, dtype=dtype, casting=casting),
                    dtype))
defvjp(np.vstack, vstack_vjp)
defjvp(np.vstack, lambda g, ans, tup, dtype=None, casting="same_kind":
       through_cast(np.vstack(dense(g, tup), dtype=dtype, casting=casting), dtype))
defvjp(np.hstack, hstack_vjp)
defjvp(np.hstack, lambda g, ans, tup, dtype=None, casting="same_kind":
       through_cast(np.hstack(dense(g, tup), dtype=dtype, casting=casting), dtype))
defvjp(np.column_stack, column_stack_vjp)
defjvp(np.column_stack, lambda g, ans, tup: np.column_stack(dense(g, tup)))
for _array in (np.array, np.asarray, np.asanyarray):
    defvjp(_array, array_vjp)
    defjvp(_array, array_jvp)


def _clip_rule(position, mode):
    """The VJP (`mode` "vjp") or JVP ("jvp") rule of argument `position` of `np.clip`."""
    def rule(g, ans, a, a_min=None, a_max=None, out=None, **kwargs):
        """`np.clip`: `a` where it lies inside the bounds, each bound where it clips."""
        a_min = kwargs.get("min") if a_min is None or a_min is np._NoValue else a_min
        a_max = kwargs.get("max") if a_max is None or a_max is np._NoValue else a_max
        if position == 0:
            follows = (True if a_min is None else a >= a_min) \
                & (True if a_max is None else a <= a_max)
        elif position == 1:  # np.clip is minimum(maximum(a, a_min), a_max): a_max wins ties
            follows = (a < a_min) & (True if a_max is None else a_min <= a_max)
        else:
            follows = (a if a_min is None else np.maximum(a, a_min)) > a_max
        if mode == "jvp":
            return broadcast_like(g * follows, ans)
        return unbroadcast(g * follows, (a, a_min, a_max)[position])
    rule.__name__ = rule.__qualname__ = f"clip_{mode}_{position}"
    return rule


defvjp(np.clip, *(_clip_rule(position, "vjp") for position in range(3)))
defjvp(np.clip, *(_clip_rule(position, "jvp") for position in range(3)))


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
dsplit_vjp = _split_vjp(lambda ary: 2)
defvjp(np.split, split_vjp)
defjvp(np.split, lambda g, ans, ary, indices_or_sections, axis=0:
       np.split(g, indices_or_sections, axis))
defvjp(np.array_split, split_vjp)
defjvp(np.array_split, lambda g, ans, ary, indices_or_sections, axis=0:
       np.array_split(g, indices_or_sections, axis))
defvjp(np.hsplit, hsplit_vjp)
defjvp(np.hsplit, lambda g, ans, ary, indices_or_sections: np.hsplit(g, indices_or_sections))
defvjp(np.vsplit, vsplit_vjp)
defjvp(np.vsplit, lambda g, ans, ary, indices_or_sections: np.vsplit(g, indices_or_sections))
defvjp(np.dsplit, dsplit_vjp)
defjvp(np.dsplit, lambda g, ans, ary, indices_or_sections: np.dsplit(g, indices_or_sections))
defvjp(np.repeat, repeat_vjp)
defjvp(np.repeat, lambda g, ans, a, repeats, axis=None: np.repeat(g, repeats, axis))
defvjp(np.tile, tile_vjp)
defjvp(np.tile, lambda g, ans, A, reps: np.tile(g, reps))


def _constant_mode(mode):
    """`np.pad`'s `mode`, which must be "constant" for srcad to differentiate it."""
    if mode != "constant":
        raise SrcadError(f"srcad has no derivative of np.pad with mode={mode!r}",
                         fix="use mode='constant', or build the padding by concatenation.")
    return mode


def pad_vjp(g, ans, array, pad_width, mode="constant", **kwargs):
    """`np.pad` with constants: the cotangent of the part that was `array`."""
    _constant_mode(mode)
    widths = np.broadcast_to(np.asarray(pad_width, dtype=int), (np.ndim(array), 2))
    return g[tuple(slice(lo, lo + n) for (lo, _), n in zip(widths, np.shape(array)))]


defvjp(np.pad, pad_vjp)
# the constants have no tangent: `g` padded with zeros
defjvp(np.pad, lambda g, ans, array, pad_width, mode="constant", **kwargs:
       np.pad(g, pad_width, _constant_mode(mode)))


def _diff_part(part, g, a, n, axis, prepend):
    """`np.diff`: the cotangent of `part` (0: prepend, 1: a, 2: append) of the array it
    differences; each difference gives +g to its later element and -g to its earlier one."""
    axis = axis % np.ndim(a)
    lead = (slice(None),) * axis
    for _ in range(n):
        zero = np.zeros_like(g[lead + (slice(0, 1),)])
        g = np.concatenate([zero, g], axis) - np.concatenate([g, zero], axis)
    start = 0 if prepend is np._NoValue else (np.shape(prepend)[axis] if np.ndim(prepend) else 1)
    bounds = [0, start, start + np.shape(a)[axis], np.shape(g)[axis]]
    return g[lead + (slice(bounds[part], bounds[part + 1]),)]


def diff_vjp(g, ans, a, n=1, axis=-1, prepend=np._NoValue, append=np._NoValue):
    return _diff_part(1, g, a, n, axis, prepend)


def diff_prepend_vjp(g, ans, a, n=1, axis=-1, prepend=np._NoValue, append=np._NoValue):
    """A scalar `prepend` or `append` is spread along the other axes: its cotangent sums."""
    return unbroadcast(_diff_part(0, g, a, n, axis, prepend), prepend)


def diff_append_vjp(g, ans, a, n=1, axis=-1, prepend=np._NoValue, append=np._NoValue):
    return unbroadcast(_diff_part(2, g, a, n, axis, prepend), append)


def _zeros_for(constant):
    """The tangent of a constant `prepend` or `append` of `np.diff` (np._NoValue: none)."""
    return constant if constant is np._NoValue else np.zeros_like(constant)


def partition_vjp(g, ans, a, kth, axis=-1, kind="introselect", order=None):
    """`np.partition`: `g` sent back through the permutation `np.argpartition` finds."""
    if axis is None:
        return np.reshape(partition_vjp(g, ans, np.ravel(a), kth), np.shape(a))
    permutation = np.argpartition(a, kth, axis=axis)
    return np.take_along_axis(g, np.argsort(permutation, axis=axis), axis=axis)


defvjp(np.diff, diff_vjp, None, None, diff_prepend_vjp, diff_append_vjp)
defjvp(np.diff, lambda g, ans, a, n=1, axis=-1, prepend=np._NoValue, append=np._NoValue:
       np.diff(g, n, axis, _zeros_for(prepend), _zeros_for(append)),
       None, None,
       lambda g, ans, a, n=1, axis=-1, prepend=np._NoValue, append=np._NoValue:
       np.diff(np.zeros_like(a, dtype=ans.dtype), n, axis, g, _zeros_for(append)),
       lambda g, ans, a, n=1, axis=-1, prepend=np._NoValue, append=np._NoValue:
       np.diff(np.zeros_like(a, dtype=ans.dtype), n, axis, _zeros_for(prepend), g))
defvjp(np.partition, partition_vjp)
# the permutation np.argpartition finds, as in the VJP (axis None: over the flat array)
defjvp(np.partition, lambda g, ans, a, kth, axis=-1, kind="introselect", order=None:
       np.take_along_axis(g, np.argpartition(a, kth, axis=axis), axis=axis))


# ---- views: these may return memory of their first argument, which in-place writes reach
# (analysis/aliasing.py follows them); the last ones have no rules, but are views all the same
for _view in (operator.getitem, np.reshape, np.ravel, np.transpose, np.ndarray.T, np.squeeze,
              np.expand_dims, np.asarray, np.asanyarray, np.atleast_1d, np.atleast_2d,
              np.atleast_3d, np.swapaxes, np.moveaxis, np.rollaxis, np.broadcast_to,
              np.diagonal, np.flip, np.flipud, np.fliplr, np.rot90, np.ascontiguousarray,
              np.asfortranarray, np.require,
              *(getattr(np, name) for name in ("permute_dims", "matrix_transpose", "unstack")
                if hasattr(np, name)),  # (NumPy 2's)
              *(getattr(np.ndarray, name) for name in ("mT",) if hasattr(np.ndarray, name))):
    declare(_view, view=True)


# ---- new arrays: these return an ndarray of memory of their own (analysis/aliasing.py starts
# a new object at each, analysis/arrays.py knows their results are arrays)
for _maker in (np.zeros, np.ones, np.empty, np.full, np.zeros_like, np.ones_like, np.empty_like,
               np.full_like, np.eye, np.identity, np.arange, np.linspace, np.copy, np.stack,
               np.concatenate, np.array):
    declare(_maker, new_array=True)


# ---- batched tangents (kernels/batched.py) ------------------------------------------------------
def batched_getitem(ans, tangents, a, index):
    """`a[index]`: the same index after the batch axis (advanced indices stay together)."""
    t_a = tangents[0]
    if tangents[1] is not None:
        batched.refused("an index with a tangent")
    if isinstance(t_a, (list, tuple, dict)):  # an element of a sequence: its own tangent
        return t_a[index]
    index = index if isinstance(index, tuple) else (index,)
    return batched.full(t_a[(slice(None),) + index], ans)


def batched_reshape(ans, tangents, a, *shape, **options):
    if len(shape) > 1 or any(t is not None for t in tangents[1:]) \
            or options.get("order", "C") != "C":
        batched.refused("np.reshape with an order other than 'C'")
    t = tangents[0]
    return np.reshape(t, np.shape(t)[:1] + np.shape(ans))


def batched_transpose(ans, tangents, a, axes=None):
    ndim = np.ndim(a)
    order = tuple(reversed(range(ndim))) if axes is None else tuple(
        operator.index(k) % ndim for k in axes)
    return np.transpose(batched.full(tangents[0], a), (0,) + tuple(k + 1 for k in order))


def batched_stack(ans, tangents, arrays, axis=0, **options):
    """`np.stack(list)`: elements without a tangent are zero."""
    parts = tangents[0]
    if not isinstance(parts, (list, tuple)) or options.get("out") is not None \
            or not all(t is None or isinstance(t, np.ndarray) for t in parts):
        batched.refused("np.stack of anything but a list of arrays and numbers")
    n = next(np.shape(t)[0] for t in parts if t is not None)
    rows = [np.zeros((n,) + np.shape(x)) if t is None else batched.full(t, x)
            for t, x in zip(parts, arrays)]
    return batched.full(np.stack(rows, axis=operator.index(axis) % np.ndim(ans) + 1), ans)


def batched_array(ans, tangents, value, dtype=None, *, copy=True, order="K", subok=False, ndmin=0,
          like=None):
    """`np.array(list)` stacks its elements; `np.array(x)` of an array copies it."""
    if ndmin or order not in ("K", "C", "A") or subok or like is not None \
            or (dtype is not None and not np.issubdtype(np.dtype(dtype), np.inexact)):
        batched.refused("np.array with these options")
    if isinstance(tangents[0], np.ndarray):
        return np.array(batched.full(tangents[0], ans))
    return batched_stack(ans, tangents[:1], value)


declare(operator.getitem, batched=batched_getitem)
declare(np.reshape, batched=batched_reshape)
declare(np.transpose, batched=batched_transpose)
declare(np.ndarray.T, batched=batched_transpose)
declare(np.stack, batched=batched_stack)
declare(np.array, batched=batched_array)


# ---- what the compiler knows of them besides their rules ----------------------------------------
for _pure in (np.reshape, np.transpose):
    declare(_pure, pure=True)
# they return a list of views of their argument (analysis/aliasing.py)
for _splitter in (np.split, np.array_split, np.hsplit, np.vsplit, np.dsplit):
    declare(_splitter, sequence="shares")
# their first argument may be a sequence of arrays (ops/array_arguments.py)
for _maker in (np.array, np.asarray, np.asanyarray, np.concatenate, np.stack, np.vstack,
               np.hstack, np.column_stack, np.atleast_1d, np.atleast_2d, np.atleast_3d):
    declare(_maker, takes_sequences=True)
# the ndarray methods that call them (runtime/methods.py): `.flatten()` calls np.ravel when it
# runs, and srcad's `flattened` (a copy) in source mode, where the method is resolved
for _method in ("reshape", "transpose", "copy", "clip", "diagonal", "squeeze", "swapaxes",
                "repeat", "argmax", "argmin", "argsort"):
    declare(getattr(np, _method), methods=(_method,))
declare(np.ravel, methods=("ravel", "flatten"))
