"""Rules for reductions, shape operations, contractions and indexing.

Rules that fit in one expression are lambdas (the inliner substitutes them into the
adjoint); contractions need a few statements and are `def`s the adjoint calls by name.
"""
import operator

import numpy as np

from srcad.rules.registry import defvjp, nondifferentiable
from srcad.runtime import (expand_reduced, index_adjoint, inverse_permutation, reduced_size,
                           unbroadcast)

# ---- reductions --------------------------------------------------------------------------
defvjp(np.sum, lambda g, ans, a, axis=None, dtype=None, out=None, keepdims=False:
       expand_reduced(g, a, axis, keepdims))
defvjp(np.mean, lambda g, ans, a, axis=None, dtype=None, out=None, keepdims=False:
       expand_reduced(g / reduced_size(a, axis), a, axis, keepdims))

# ---- shape operations ------------------------------------------------------------------------
defvjp(np.reshape, lambda g, ans, a, shape=None, order="C": np.reshape(g, np.shape(a), order=order))
defvjp(np.copy, lambda g, ans, a, order="K", subok=False: g)
defvjp(np.ravel, lambda g, ans, a, order="C": np.reshape(g, np.shape(a), order=order))
defvjp(np.transpose, lambda g, ans, a, axes=None: np.transpose(g, inverse_permutation(axes)))
defvjp(np.ndarray.T, lambda g, ans, a: np.transpose(g))
defvjp(operator.getitem, lambda g, ans, a, index: index_adjoint(g, a, index))

nondifferentiable(np.shape, np.ndim, np.size, np.ndarray.shape, np.ndarray.ndim,
                  np.ndarray.size, np.ndarray.dtype, np.zeros, np.ones, np.empty, np.full,
                  np.zeros_like, np.ones_like, np.empty_like, np.arange, np.linspace, np.eye,
                  np.argmax, np.argmin, np.argsort)


# ---- contractions ------------------------------------------------------------------------------
def _as_matrices(g, a, b):
    """Treat 1-D operands of `matmul` as a row (`a`) or a column (`b`), as NumPy does."""
    a, b = np.asarray(a), np.asarray(b)
    if b.ndim == 1:  # first: when both are vectors, g is a scalar that becomes (1, 1)
        b, g = b[:, np.newaxis], np.expand_dims(g, -1)
    if a.ndim == 1:
        a, g = a[np.newaxis, :], np.expand_dims(g, -2)
    return g, a, b


def matmul_vjp_a(g, ans, a, b):
    g2, a2, b2 = _as_matrices(g, a, b)
    grad = g2 @ np.swapaxes(b2, -1, -2)
    if np.ndim(a) == 1:
        grad = grad[..., 0, :]
    return unbroadcast(grad, a)


def matmul_vjp_b(g, ans, a, b):
    g2, a2, b2 = _as_matrices(g, a, b)
    grad = np.swapaxes(a2, -1, -2) @ g2
    if np.ndim(b) == 1:
        grad = grad[..., :, 0]
    return unbroadcast(grad, b)


def dot_vjp_a(g, ans, a, b):
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return unbroadcast(g * b, a)
    b_axes = _dot_free_axes_of_b(b)
    g_axes = tuple(range(np.ndim(g) - len(b_axes), np.ndim(g)))
    return np.tensordot(g, b, axes=(g_axes, b_axes))


def dot_vjp_b(g, ans, a, b):
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return unbroadcast(g * a, b)
    lead = tuple(range(np.ndim(a) - 1))
    grad = np.tensordot(a, g, axes=(lead, lead))
    return np.moveaxis(grad, 0, max(np.ndim(b) - 2, 0))


def _dot_free_axes_of_b(b):
    """`np.dot` contracts `b`'s second-to-last axis (its only axis if 1-D); the rest stay."""
    contracted = max(np.ndim(b) - 2, 0)
    return tuple(i for i in range(np.ndim(b)) if i != contracted)


for _matmul in (operator.matmul, np.matmul):
    defvjp(_matmul, matmul_vjp_a, matmul_vjp_b)
defvjp(np.dot, dot_vjp_a, dot_vjp_b)
