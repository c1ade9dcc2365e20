"""Rules for the names NumPy 2 added for the Array API standard, which code written for any
Array API library calls (`xp.linalg.vecdot`, `xp.cumulative_sum`, `xp.linalg.svdvals`).

Most are NumPy functions under a new name or with the last two axes fixed: their rules are
the older function's, given the arguments it would have been called with; `np.unstack` is
`np.split` into single slices. `np.vecdot`,
`np.matvec` and `np.vecmat` are generalized ufuncs with rules of their own. A name the
installed NumPy lacks is left out (each came with NumPy 2.0, `cumulative_*` with 2.1,
`matvec` and `vecmat` with 2.2).
"""
from __future__ import annotations

import numpy as np

import srcad.ops.numpy_contractions  # noqa: F401  (registers np.outer's rules and others', read below)
from srcad.kernels.adjoints import unbroadcast
from srcad.ops.numpy_arrays import diagonal_vjp
from srcad.ops.numpy_decompositions import svd_jvp, svd_vjp
from srcad.ops.numpy_dtypes import through_cast
from srcad.ops.numpy_reductions import trace_vjp
from srcad.ops.registry import batched_rule, declare, defjvp, defvjp, jvp_rules, vjp_rules


def _present(module, *names):
    """The functions of `module` named `names` that this NumPy has."""
    return [getattr(module, name) for name in names if hasattr(module, name)]


# ---- the same functions under the standard's names ----------------------------------------
for _new, _old in [(getattr(np.linalg, name, None), getattr(np, name))
                   for name in ("outer", "cross", "tensordot", "matmul")]:
    if _new is not None and _new is not _old:  # (the standard's signature: positions alike)
        defvjp(_new, *vjp_rules(_old).rules)
        defjvp(_new, *jvp_rules(_old).rules)
        if batched_rule(_old) is not None:
            declare(_new, batched=batched_rule(_old))

for _transpose in _present(np, "matrix_transpose") + _present(np.linalg, "matrix_transpose"):
    defvjp(_transpose, lambda g, ans, x: np.swapaxes(g, -1, -2))
    defjvp(_transpose, lambda g, ans, x: np.swapaxes(g, -1, -2))
    declare(_transpose, view=True, pure=True)

if hasattr(np.linalg, "diagonal"):  # the last two axes, where np.diagonal takes the first two
    defvjp(np.linalg.diagonal, lambda g, ans, x, offset=0: diagonal_vjp(g, ans, x, offset, -2, -1))
    defjvp(np.linalg.diagonal, lambda g, ans, x, offset=0: np.linalg.diagonal(g, offset=offset))
    declare(np.linalg.diagonal, view=True)

if hasattr(np.linalg, "trace"):
    defvjp(np.linalg.trace, lambda g, ans, x, offset=0, dtype=None:
           trace_vjp(g, ans, x, offset, -2, -1, dtype))
    defjvp(np.linalg.trace, lambda g, ans, x, offset=0, dtype=None:
           np.linalg.trace(through_cast(g, dtype), offset=offset, dtype=dtype))

if hasattr(np.linalg, "svdvals"):
    defvjp(np.linalg.svdvals, lambda g, ans, x: svd_vjp(g, ans, x, compute_uv=False))
    defjvp(np.linalg.svdvals, lambda g, ans, x: svd_jvp(g, ans, x, compute_uv=False))


if hasattr(np, "unstack"):  # views of x's slices along `axis`, as np.split's pieces
    defvjp(np.unstack, lambda g, ans, x, axis=0: np.stack(
        [np.zeros_like(piece) if part is None else part for part, piece in zip(g, ans)],
        axis=axis))
    defjvp(np.unstack, lambda g, ans, x, axis=0: np.unstack(g, axis=axis))
    declare(np.unstack, sequence="shares")


# ---- cumulative sums and products, optionally from the empty one -------------------------------
def _without_initial(g, axis, include_initial):
    """The cotangent of the cumulative values proper: with `include_initial`, the first
    (the empty sum or product, a constant) dropped along `axis`."""
    if not include_initial:
        return g
    return np.take(g, np.arange(1, np.shape(g)[axis or 0]), axis=axis or 0)


def _with_initial(t, axis, include_initial):
    """A tangent of the cumulative values proper with the empty one's first (0: a constant)."""
    if not include_initial:
        return t
    first = np.zeros_like(np.take(t, [0], axis=axis or 0))
    return np.concatenate([first, t], axis=axis or 0)


def _define_cumulative(function, old):
    """`function(x, axis=None, dtype=None, include_initial=False)`: `old`'s values (np.cumsum's,
    np.cumprod's), the empty sum or product first where `include_initial`: `old`'s rules."""
    vjp, jvp = vjp_rules(old).rules[0], jvp_rules(old).rules[0]
    defvjp(function, lambda g, ans, x, axis=None, dtype=None, out=None, include_initial=False:
           vjp(_without_initial(g, axis, include_initial), None, x, axis, dtype))
    defjvp(function, lambda g, ans, x, axis=None, dtype=None, out=None, include_initial=False:
           _with_initial(jvp(g, None, x, axis, dtype), axis, include_initial))


for _name, _old in (("cumulative_sum", np.cumsum), ("cumulative_prod", np.cumprod)):
    if hasattr(np, _name):
        _define_cumulative(getattr(np, _name), _old)


# ---- products of vectors: generalized ufuncs over the last axis (or `axis`) ---------------------
def _core_last(x, axis):
    return np.moveaxis(x, axis, -1)


def _spread(g, keepdims, axis):
    """`g` of the product's loop shape with a new last axis to broadcast along the vectors."""
    return np.moveaxis(g, axis, -1) if keepdims else g[..., None]


def vecdot_vjp_x1(g, ans, x1, x2, axis=-1, keepdims=False, **options):
    """`vecdot(x1, x2) = sum(conj(x1) * x2, axis)`: x1's cotangent is conjugated (as vdot's)."""
    part = np.conj(_spread(g, keepdims, axis) * _core_last(x2, axis))
    return np.moveaxis(unbroadcast(part, _core_last(x1, axis)), -1, axis)


def vecdot_vjp_x2(g, ans, x1, x2, axis=-1, keepdims=False, **options):
    part = _spread(g, keepdims, axis) * np.conj(_core_last(x1, axis))
    return np.moveaxis(unbroadcast(part, _core_last(x2, axis)), -1, axis)


def _vecdot_jvp(first):
    def rule(g, ans, x1, x2, axis=-1, keepdims=False, **options):
        pair = (g, x2) if first else (x1, g)
        return np.vecdot(*pair, axis=axis, keepdims=keepdims)
    return rule


for _vecdot in _present(np, "vecdot") + _present(np.linalg, "vecdot"):
    defvjp(_vecdot, vecdot_vjp_x1, vecdot_vjp_x2)
    defjvp(_vecdot, _vecdot_jvp(True), _vecdot_jvp(False))


# matvec(A, v)[..., i] = sum_j A_ij v_j, as matmul (no conjugate); vecmat(v, A)[..., j] =
# sum_i conj(v_i) A_ij, as vdot of v with each column (v's cotangent conjugated, as vdot's)
if hasattr(np, "matvec"):
    defvjp(np.matvec,
           lambda g, ans, a, v: unbroadcast(g[..., :, None] * v[..., None, :], a),
           lambda g, ans, a, v: unbroadcast(np.matvec(np.swapaxes(a, -1, -2), g), v))
    defjvp(np.matvec,
           lambda g, ans, a, v: np.matvec(g, v),
           lambda g, ans, a, v: np.matvec(a, g))

if hasattr(np, "vecmat"):
    defvjp(np.vecmat,
           lambda g, ans, v, a: unbroadcast(np.conj(np.matvec(a, g)), v),
           lambda g, ans, v, a: unbroadcast(np.conj(v)[..., :, None] * g[..., None, :], a))
    defjvp(np.vecmat,
           lambda g, ans, v, a: np.vecmat(g, a),
           lambda g, ans, v, a: np.vecmat(v, g))
