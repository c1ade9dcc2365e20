"""fused_softmax: srcad's softmax and shift, with rules of their own, which
compiler/transform/softmax.py puts in place of a softmax written out in NumPy (its docstring
says when): the softmax's VJP reads its output alone, and a shift constant along the summed
axes gets no derivative.
"""
from __future__ import annotations

import numpy as np

from srcad.kernels.adjoints import unbroadcast
from srcad.kernels.tangents import broadcast_like
from srcad.ops.registry import declare, defjvp, defvjp, returns_new_array


def invariant_shift(x, shift):
    """`x - shift`, where nothing downstream depends on `shift` (see the module docstring)."""
    return x - shift


defvjp(invariant_shift, lambda g, ans, x, shift: unbroadcast(g, x), None)
defjvp(invariant_shift, lambda g, ans, x, shift: broadcast_like(g, ans), None)
declare(invariant_shift, elementwise=True)  # (it broadcasts as `-` does)


def softmax(x, axis=None):
    """`exp(x)` normalised to sum 1 along `axis` (all axes for None)."""
    exponentials = np.exp(x)
    return exponentials / np.sum(exponentials, axis=axis, keepdims=True)


@returns_new_array
def softmax_vjp(g, ans, axis=None):
    """`ans * (g - sum(g * ans))`, in one array: the Jacobian `diag(A) - A A^T` (per slice
    along `axis`) is symmetric, so this is its JVP too."""
    product = g * ans
    if type(product) is np.ndarray and product.shape == np.shape(g):
        total = np.add.reduce(product, axis=axis, keepdims=True)  # (np.sum's dispatch: 1.5 us)
        return np.multiply(np.subtract(g, total, out=product), ans, out=product)
    return (g - np.sum(product, axis=axis, keepdims=True)) * ans


defvjp(softmax, lambda g, ans, x, axis=None: softmax_vjp(g, ans, axis))
defjvp(softmax, lambda g, ans, x, axis=None: softmax_vjp(g, ans, axis))
