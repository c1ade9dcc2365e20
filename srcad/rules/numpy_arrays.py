"""Rules for reductions, shape operations, contractions and indexing.

Rules that fit in one expression are lambdas (the inliner substitutes them into the
adjoint); contractions need a few statements and are `def`s the adjoint calls by name.
"""
import operator

import numpy as np

from srcad.rules.registry import defvjp, nondifferentiable
from srcad.runtime import (dtype_of, expand_reduced, index_adjoint, inverse_permutation,
                           reduced_size, unbroadcast, unravel)

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

# ---- shape operations ------------------------------------------------------------------------
defvjp(np.reshape, lambda g, ans, a, shape=None, order="C": np.reshape(g, np.shape(a), order=order))
defvjp(np.copy, lambda g, ans, a, order="K", subok=False: g)
defvjp(np.ravel, lambda g, ans, a, order="C": unravel(g, a, order))
defvjp(np.transpose, lambda g, ans, a, axes=None: np.transpose(g, inverse_permutation(axes)))
defvjp(np.ndarray.T, lambda g, ans, a: np.transpose(g))
defvjp(operator.getitem, lambda g, ans, a, index: index_adjoint(g, a, index))

nondifferentiable(np.shape, np.ndim, np.size, np.ndarray.shape, np.ndarray.ndim,
                  np.ndarray.size, np.ndarray.dtype, np.zeros, np.ones, np.empty, np.full,
                  np.zeros_like, np.ones_like, np.empty_like, np.arange, np.linspace, np.eye,
                  np.argmax, np.argmin, np.argsort)


# ---- contractions ------------------------------------------------------------------------------
def _as_matrices(g, a, b):
    """Treat 1-D operands of `matmul` as a row (`a`) or a column (`b`), as NumPy does.

    Indexing and NumPy calls with rules only (no np.asarray), so that the contractions'
    rules run on tape-mode tensors too and a nested tape records them."""
    if np.ndim(b) == 1:  # first: when both are vectors, g is a scalar that becomes (1, 1)
        b, g = b[:, np.newaxis], g[..., np.newaxis]
    if np.ndim(a) == 1:
        a, g = a[np.newaxis, :], g[..., np.newaxis, :]
    return g, a, b


def _swap_last_axes(a):
    """`np.swapaxes(a, -1, -2)`, written with `np.transpose`, which has a rule."""
    n = np.ndim(a)
    return np.transpose(a, tuple(range(n - 2)) + (n - 1, n - 2))


def matmul_vjp_a(g, ans, a, b):
    if np.ndim(a) == 2 and np.ndim(b) == 2:  # the common case first: no batch, no vectors
        return g @ np.transpose(b)
    if np.ndim(a) == 2 and np.ndim(b) == 1:
        return g[:, np.newaxis] * b  # np.outer(g, b), with rules
    g2, a2, b2 = _as_matrices(g, a, b)
    grad = g2 @ _swap_last_axes(b2)
    if np.ndim(a) == 1:
        grad = grad[..., 0, :]
    return unbroadcast(grad, a)


def matmul_vjp_b(g, ans, a, b):
    if np.ndim(a) == 2 and np.ndim(b) in (1, 2):
        return np.transpose(a) @ g
    if np.ndim(a) == 1 and np.ndim(b) == 2:
        return a[:, np.newaxis] * g  # np.outer(a, g), with rules
    g2, a2, b2 = _as_matrices(g, a, b)
    grad = _swap_last_axes(a2) @ g2
    if np.ndim(b) == 1:
        grad = grad[..., :, 0]
    return unbroadcast(grad, b)


def dot_vjp_a(g, ans, a, b):
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return unbroadcast(g * b, a)
    if np.ndim(a) <= 2 and np.ndim(b) <= 2:  # np.dot is np.matmul here
        return matmul_vjp_a(g, ans, a, b)
    b_axes = _dot_free_axes_of_b(b)
    g_axes = tuple(range(np.ndim(g) - len(b_axes), np.ndim(g)))
    return np.tensordot(g, b, axes=(g_axes, b_axes))


def dot_vjp_b(g, ans, a, b):
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return unbroadcast(g * a, b)
    if np.ndim(a) <= 2 and np.ndim(b) <= 2:
        return matmul_vjp_b(g, ans, a, b)
    lead = tuple(range(np.ndim(a) - 1))
    grad = np.tensordot(a, g, axes=(lead, lead))
    return np.moveaxis(grad, 0, max(np.ndim(b) - 2, 0))


def _dot_free_axes_of_b(b):
    """`np.dot` contracts `b`'s second-to-last axis (its only axis if 1-D); the rest stay."""
    contracted = max(np.ndim(b) - 2, 0)
    return tuple(i for i in range(np.ndim(b)) if i != contracted)


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

for _matmul in (operator.matmul, np.matmul):
    defvjp(_matmul, matmul_vjp_a, matmul_vjp_b)
defvjp(np.dot, dot_vjp_a, dot_vjp_b)
