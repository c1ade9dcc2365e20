"""Rules for `np.linalg.norm`, every `ord` and `axis` NumPy accepts, and `keepdims`, for
NumPy 2's `np.linalg.vector_norm` and `np.linalg.matrix_norm`, and for `np.linalg.cond`.

Vector norms (2, 1, ±inf, general p) and matrix norms ('fro', 'nuc', ±1, ±2, ±inf). At
kinks the conventions of srcad's other rules hold: ties for ±inf and the induced ±1/±inf
norms share the derivative as `np.max` does, tied singular values share it for ±2, a zero
vector's 2-norm has derivative 0 (as `abs` at 0). Complex arrays take every `ord` too: |x|
moves along Re(conj(x) dx) / |x|, and the spectral norms along Re diag(Uᴴ dA V).
`norm(x, 0)` counts nonzeros and is refused.
"""
import numpy as np

from srcad.errors import UnsupportedDerivativeError
from srcad.kernels.adjoints import dtype_of
from srcad.ops.numpy_linalg import mH, mT, rounding
from srcad.ops.registry import defjvp, defvjp


# ---- norms -------------------------------------------------------------------------------------
def _norm_axes(x, ord, axis):
    """How np.linalg.norm reads `ord` and `axis`: ("vector", None) for the 2-norm of the
    flattened array, ("vector", (axis,)) or ("matrix", (row axis, column axis))."""
    ndim = np.ndim(x)
    if axis is None:
        if ord is None:
            return "vector", None
        axis = tuple(range(ndim))
    axes = _axes(x, axis)
    return ("vector" if len(axes) == 1 else "matrix"), axes


def _axes(x, axis):
    """`axis` (an int or a tuple) as a tuple of nonnegative axes of `x`; None (all) kept."""
    if axis is None:
        return None
    return tuple(a % np.ndim(x) for a in (axis if isinstance(axis, tuple) else (axis,)))


def _kept(value, x, axes):
    """A reduction's `value` with `x`'s reduced axes back, of length 1 (as keepdims)."""
    shape = np.shape(x)
    return np.reshape(value, tuple(1 if axes is None or i in axes else n
                                   for i, n in enumerate(shape)))


def _refuse_ord_zero(ord):
    if ord == 0:
        raise UnsupportedDerivativeError(
            "np.linalg.norm(x, ord=0) counts the nonzero elements: a step function, whose "
            "derivative is zero wherever it exists.",
            fix="wrap it in srcad.stop_gradient(...) if it is meant as a constant, or use a "
            "differentiable penalty such as ord=1.")


def _direction(x):
    """d|x| = Re(_direction(x) dx): sign(x), or conj(x) / |x| for a complex x (0 at 0, as
    abs's rule has)."""
    if dtype_of(x).kind != "c":
        return np.sign(x)
    size = np.abs(x)
    return np.conj(x) / np.where(size == 0, 1, size)


def _vector_norm_vjp(g, ans, x, p, axes):
    """The p-norm over `axes`: x |x|^(p-2) / norm^(p-1), sign(x) for p = 1, and for
    p = ±inf the elements that tie for the extreme |x| share, as np.max's rule does. A
    complex x pulls back conj(x) where a real one pulls back x (as np.abs does)."""
    g, ans = np.real(_kept(g, x, axes)), _kept(ans, x, axes)
    if p == 2:
        return np.conj(x) * (g / np.where(ans == 0, 1, ans))
    if p == 1:
        return _direction(x) * g
    if p in (np.inf, -np.inf):
        winners = np.abs(x) == ans
        ties = np.sum(winners, axis=axes, keepdims=True, dtype=np.result_type(g))
        return _direction(x) * winners * (g / ties)
    _refuse_ord_zero(p)
    return _direction(x) * np.abs(x) ** (p - 1) * (g / np.where(ans == 0, 1, ans) ** (p - 1))


def _vector_norm_jvp(g, ans, x, p, axes, keepdims):
    if p == 2:
        return (np.sum(np.real(np.conj(x) * g), axis=axes, keepdims=keepdims)
                / np.where(ans == 0, 1, ans))
    if p == 1:
        return np.sum(np.real(_direction(x) * g), axis=axes, keepdims=keepdims)
    if p in (np.inf, -np.inf):
        winners = np.abs(x) == _kept(ans, x, axes)
        return (np.sum(np.real(_direction(x) * g) * winners, axis=axes, keepdims=keepdims)
                / np.sum(winners, axis=axes, keepdims=keepdims, dtype=np.result_type(ans)))
    _refuse_ord_zero(p)
    return (np.sum(np.real(_direction(x) * g) * np.abs(x) ** (p - 1), axis=axes,
                   keepdims=keepdims) / np.where(ans == 0, 1, ans) ** (p - 1))


def _spectral_weights(s, ord):
    """d norm / d s, equal to rounding counting as equal: 1 per nonzero singular value for
    "nuc" (0 for a zero one, as abs has at 0); for 2 (-2) the largest (smallest) singular
    values share 1 when they tie, as np.max's rule shares."""
    if ord == "nuc":
        return np.where(s > rounding(s), np.ones_like(s), np.zeros_like(s))
    winners = np.abs(s - (s[..., :1] if ord == 2 else s[..., -1:])) <= rounding(s)
    return winners / np.sum(winners, axis=-1, keepdims=True, dtype=dtype_of(s))


def _spectral_norm_vjp(g, ans, x, ord, axes):
    """ord 2, -2, "nuc": U diag(weights) Vᴴ (conjugated, for a complex x), with the matrix
    axes moved last and back."""
    u, s, vh = np.linalg.svd(np.moveaxis(x, axes, (-2, -1)), full_matrices=False)
    scale = np.moveaxis(np.real(_kept(g, x, axes)), axes, (-2, -1))
    grad = np.conj((u * _spectral_weights(s, ord)[..., None, :]) @ vh) * scale
    return np.moveaxis(grad, (-2, -1), axes)


def _spectral_norm_jvp(g, ans, x, ord, axes):
    u, s, vh = np.linalg.svd(np.moveaxis(x, axes, (-2, -1)), full_matrices=False)
    turned = np.real(np.conj(u) * (np.moveaxis(g, axes, (-2, -1)) @ mH(vh)))  # Re diag(Uᴴ dA V)
    return np.reshape(np.sum(turned * _spectral_weights(s, ord)[..., None, :], axis=(-2, -1)),
                      np.shape(ans))


def _induced_axes(ord, axes):
    """ord ±1: the column sums (over the row axis) compete; ord ±inf: the row sums."""
    return axes[0] if ord in (1, -1) else axes[1]


def _induced_norm_vjp(g, ans, x, ord, axes):
    """ord ±1, ±inf: sign(x) on the rows or columns whose sums tie for the extreme."""
    g, ans = np.real(_kept(g, x, axes)), _kept(ans, x, axes)
    winners = np.sum(np.abs(x), axis=_induced_axes(ord, axes), keepdims=True) == ans
    ties = np.sum(winners, axis=axes, keepdims=True, dtype=np.result_type(g))
    return _direction(x) * (winners * (g / ties))


def _induced_norm_jvp(g, ans, x, ord, axes, keepdims):
    summed = _induced_axes(ord, axes)
    winners = np.sum(np.abs(x), axis=summed, keepdims=True) == _kept(ans, x, axes)
    sums = np.sum(np.real(_direction(x) * g), axis=summed, keepdims=True)
    return (np.sum(sums * winners, axis=axes, keepdims=keepdims)
            / np.sum(winners, axis=axes, keepdims=keepdims, dtype=np.result_type(ans)))


def norm_vjp(g, ans, x, ord=None, axis=None, keepdims=False):
    kind, axes = _norm_axes(x, ord, axis)
    if kind == "vector":
        return _vector_norm_vjp(g, ans, x, 2 if ord is None else ord, axes)
    if ord in (None, "fro", "f"):
        return _vector_norm_vjp(g, ans, x, 2, axes)
    if ord in (2, -2, "nuc"):
        return _spectral_norm_vjp(g, ans, x, ord, axes)
    return _induced_norm_vjp(g, ans, x, ord, axes)


def norm_jvp(g, ans, x, ord=None, axis=None, keepdims=False):
    kind, axes = _norm_axes(x, ord, axis)
    if kind == "vector":
        return _vector_norm_jvp(g, ans, x, 2 if ord is None else ord, axes, keepdims)
    if ord in (None, "fro", "f"):
        return _vector_norm_jvp(g, ans, x, 2, axes, keepdims)
    if ord in (2, -2, "nuc"):
        return _spectral_norm_jvp(g, ans, x, ord, axes)
    return _induced_norm_jvp(g, ans, x, ord, axes, keepdims)


defvjp(np.linalg.norm, norm_vjp)
defjvp(np.linalg.norm, norm_jvp)


# NumPy 2's Array API norms: `vector_norm` is the p-norm over any axes (all by default),
# `matrix_norm` is `norm` over the last two axes
def vector_norm_vjp(g, ans, x, *, axis=None, keepdims=False, ord=2):
    return _vector_norm_vjp(g, ans, x, ord, _axes(x, axis))


def vector_norm_jvp(g, ans, x, *, axis=None, keepdims=False, ord=2):
    return _vector_norm_jvp(g, ans, x, ord, _axes(x, axis), keepdims)


def matrix_norm_vjp(g, ans, x, *, keepdims=False, ord="fro"):
    return norm_vjp(g, ans, x, ord, (-2, -1), keepdims)


def matrix_norm_jvp(g, ans, x, *, keepdims=False, ord="fro"):
    return norm_jvp(g, ans, x, ord, (-2, -1), keepdims)


defvjp(np.linalg.vector_norm, vector_norm_vjp)
defjvp(np.linalg.vector_norm, vector_norm_jvp)
defvjp(np.linalg.matrix_norm, matrix_norm_vjp)
defjvp(np.linalg.matrix_norm, matrix_norm_jvp)


# ---- condition numbers -----------------------------------------------------------------------
# np.linalg.cond(x, p): s_max / s_min for p None, 2 (s_min / s_max for -2), else
# norm(x, p) * norm(inv(x), p). NumPy's code calls LAPACK's inverse directly, where srcad
# cannot follow: the rules are written from those two forms. Tied extreme singular values
# share the derivative, as the spectral norms' do.
def _cond_singular_weights(x, p):
    """U, Vᴴ and d cond / d s."""
    u, s, vh = np.linalg.svd(x, full_matrices=False)
    largest, smallest = s[..., :1], s[..., -1:]
    if p == -2:
        weights = (_spectral_weights(s, -2) / largest
                   - smallest / largest ** 2 * _spectral_weights(s, 2))
    else:
        weights = (_spectral_weights(s, 2) / smallest
                   - largest / smallest ** 2 * _spectral_weights(s, -2))
    return u, vh, weights


def cond_vjp(g, ans, x, p=None):
    if p in (None, 2, -2):
        u, vh, weights = _cond_singular_weights(x, p)
        scale = np.real(g)[..., None] * weights
        return np.conj((u * scale[..., None, :]) @ vh)
    inverse = np.linalg.inv(x)
    size = np.linalg.norm(x, p, axis=(-2, -1))
    inverse_size = np.linalg.norm(inverse, p, axis=(-2, -1))
    g = np.real(g)
    through_inverse = norm_vjp(g * size, inverse_size, inverse, p, (-2, -1))
    return (norm_vjp(g * inverse_size, size, x, p, (-2, -1))
            - mT(inverse) @ through_inverse @ mT(inverse))


def cond_jvp(g, ans, x, p=None):
    if p in (None, 2, -2):
        u, vh, weights = _cond_singular_weights(x, p)
        turned = np.real(np.conj(u) * (g @ mH(vh)))  # Re diag(Uᴴ dA V), summed below
        return np.sum(turned * weights[..., None, :], axis=(-2, -1))
    inverse = np.linalg.inv(x)
    size = np.linalg.norm(x, p, axis=(-2, -1))
    inverse_size = np.linalg.norm(inverse, p, axis=(-2, -1))
    return (norm_jvp(g, size, x, p, (-2, -1)) * inverse_size
            + size * norm_jvp(-inverse @ g @ inverse, inverse_size, inverse, p, (-2, -1)))


defvjp(np.linalg.cond, cond_vjp)
defjvp(np.linalg.cond, cond_jvp)
