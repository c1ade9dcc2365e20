"""tangents: what forward-mode (tangent) programs call at run time.

A tangent is None (zero), a value of its primal's shape, or for a tuple, list or dict the
same kind of container of tangents (None for an element without one). The reverse-mode
helpers, which adjoints call, are in adjoints.py.
"""
import numpy as np

from srcad.kernels.adjoints import dtype_of
from srcad.kernels.pytrees import is_record


def broadcast_like(g, ans):
    """`g` spread to `ans`'s shape: the tangent an argument broadcast into `ans` gives it."""
    target = getattr(ans, "shape", ())
    if isinstance(g, (list, tuple)) and not isinstance(ans, (list, tuple)):
        g = filled(g)  # (a display's tangent, combined with an array)
    if getattr(g, "shape", ()) == target:
        return g
    # the output's precision: a Python-float tangent spread over float32 stays float32
    return np.zeros(np.shape(ans), np.promote_types(dtype_of(ans), np.float16)) + g


def filled(tangents) -> list:
    """The tangent of a list or tuple NumPy takes as an array (`y[:] = [x[0], 1.0]`): its
    items, a zero in place of each None (an item without a tangent)."""
    like = next((t for t in tangents if t is not None), 0.0)
    return [np.zeros_like(like) if t is None else t for t in tangents]


def dense(tangents, primals) -> list:
    """The tangents of a sequence's elements, a zero array in place of each None (in a
    nested display too: `[x, [x[0], 5.0]]` to np.concatenate)."""
    if tangents is None:
        tangents = [None] * len(primals)
    return [np.zeros(np.shape(p), np.promote_types(dtype_of(p), np.float16)) if t is None
            else dense(t, p) if isinstance(t, (list, tuple)) and isinstance(p, (list, tuple))
            else t for t, p in zip(tangents, primals)]


def owned(tangent):
    """A copy of `tangent` that forward mode may write into (`t_y[i] = t_v`)."""
    if tangent is None:
        return None
    if isinstance(tangent, (list, tuple)):
        return list(tangent)
    if isinstance(tangent, dict):
        return dict(tangent)
    return np.array(tangent)


def zero_tangent(y, appended: int = 0):
    """A zero tangent for `y`, to write an element's tangent into: zeros for an array,
    Nones for a list (without its last `appended` elements) or a dict."""
    if isinstance(y, list):
        return [None] * (len(y) - appended)
    if isinstance(y, dict):
        return dict.fromkeys(y)
    if is_record(y):  # (a record's tangent holds its attributes' by name: kernels/pytrees.py)
        return {}
    return np.zeros(np.shape(y), np.promote_types(dtype_of(y), np.float16))


def zero_element(tangent):
    """What an element without a tangent is written as into `tangent`."""
    return None if isinstance(tangent, (list, dict)) else 0.0


def stored_tangent(target, tangent):
    """The tangent written with a value into `target[index]`: zero where `target` holds
    integers or booleans, which truncate the value."""
    if type(target) is np.ndarray and isinstance(tangent, (list, tuple)):
        tangent = filled(tangent)
    if type(target) is np.ndarray and target.dtype.kind not in "fc":
        return np.zeros_like(tangent)
    return tangent


def tangent_elements(tangent, count: int):
    """The tangents of the `count` values unpacked from a value with this tangent."""
    return (None,) * count if tangent is None else tangent
