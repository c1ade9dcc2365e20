"""Rules for numpy.linalg: inv, solve, det, slogdet, cholesky, eigh, eigvalsh, eig, svd,
pinv, norm, matrix_power and multi_dot.

Matrices are the last two axes, so stacks `(..., m, n)` work wherever NumPy takes them. The
rules are built from NumPy functions that have rules themselves (matmul, solve, swapaxes,
tril, where, ...): they run on tape-mode tensors, and srcad differentiates them again for
second derivatives. Functions with several results (slogdet, eigh, eig, svd) get their
cotangent as a tuple with None for a result nothing read, and their JVPs return a tuple.

`cholesky` and `eigh` read one triangle of their argument (`upper`, `UPLO`) and so do `svd`
and `pinv` with `hermitian=True`: their derivatives are taken with respect to that triangle,
as NumPy computes them, which is exact for any argument, symmetric or not.

Where a derivative does not exist, the rules raise instead of returning a number: the
eigenvectors (or singular vectors) of repeated eigenvalues, a pseudo-inverse at a rank
deficient matrix, `norm(x, 0)`, complex eigenvalues of `eig`, the arbitrary completing
columns of `svd(full_matrices=True)`. A JVP cannot tell whether the vectors it returns are
used, so their tangents at repeated values are nan rather than an error.
"""
import numpy as np

from srcad.errors import UnsupportedDerivativeError
from srcad.rules.registry import defjvp, defvjp, nondifferentiable
from srcad.runtime import dtype_of, unbroadcast


# ---- helpers ---------------------------------------------------------------------------------
def _mT(x):
    """The transpose of the last two axes."""
    return np.swapaxes(x, -1, -2)


def _eye(x):
    """An identity as wide as `x`'s last axis, in `x`'s floating precision."""
    return np.eye(np.shape(x)[-1], dtype=np.result_type(dtype_of(x), np.float16))


def _symmetric_from(a, lower):
    """The symmetric matrix whose lower (else upper) triangle is `a`'s: what the functions
    that read one triangle factor."""
    if lower:
        return np.tril(a) + _mT(np.tril(a, -1))
    return np.triu(a) + _mT(np.triu(a, 1))


def _onto_triangle(h, lower):
    """The adjoint of `_symmetric_from`: the cotangent `h` of the symmetric matrix gathered
    onto the triangle it was read from."""
    if lower:
        return np.tril(h) + np.tril(_mT(h), -1)
    return np.triu(h) + np.triu(_mT(h), 1)


def _rounding(values):
    """How far apart values of this size may be by rounding alone (n eps max|value|, per
    matrix): closer values count as equal, smaller ones as zero."""
    largest = np.max(np.abs(values), axis=-1, keepdims=True)
    return np.shape(values)[-1] * np.finfo(dtype_of(values)).eps * largest


def _tied(values):
    """[..., i, j]: whether values i and j are equal to rounding (the diagonal is)."""
    gaps = values[..., None, :] - values[..., :, None]
    return np.abs(gaps) <= _rounding(values)[..., None]


def _reciprocal_or_nan(x, zero):
    """1 / x, and nan (without a warning) where `zero`."""
    return np.where(zero, np.nan, 1 / np.where(zero, 1, x))


def _inverse_gaps(values, tied):
    """F[..., i, j] = 1 / (values[j] - values[i]) off the diagonal, 0 on it: how fast
    eigenvectors (or singular vectors) turn towards each other; nan where `tied`."""
    gaps = values[..., None, :] - values[..., :, None]
    return np.where(np.eye(np.shape(values)[-1], dtype=bool), 0, _reciprocal_or_nan(gaps, tied))


def _refuse_repeated(values, what):
    """Vectors of equal eigen- or singular values have no derivative (any rotation of them
    is as good): refuse rather than return nan or noise."""
    if np.any(_tied(values) > np.eye(np.shape(values)[-1], dtype=bool)):
        raise UnsupportedDerivativeError(
            f"the {what} have no derivative here: some of their values are equal (to "
            "rounding), and the vectors of equal values can turn into each other.",
            fix="differentiate through the values only, or through functions of the vectors "
            "that do not depend on how they are chosen (`u @ diag(s) @ vh`), at a matrix "
            "whose values are distinct.")


def _refuse_zero(s, what):
    if np.any(s <= _rounding(s)):
        raise UnsupportedDerivativeError(
            f"the {what} of a zero singular value (to rounding) have no derivative: the "
            "matrix is rank deficient.", fix="differentiate through the singular values only, "
            "or at a matrix of full rank.")


def _refuse_complex(w):
    if dtype_of(w).kind == "c":
        raise UnsupportedDerivativeError(
            "srcad differentiates np.linalg.eig only where all eigenvalues are real (its "
            "result is then real); this matrix has complex eigenvalues.",
            fix="use np.linalg.eigh for a symmetric matrix, or a real-valued function of the "
            "matrix (np.linalg.det, np.trace of powers).")


def _refuse_complex_input(a, what):
    """Rules derived for real matrices (symmetric ones transposed, not conjugated) would
    give wrong numbers for complex ones: refuse them."""
    if dtype_of(a).kind == "c":
        raise UnsupportedDerivativeError(
            f"srcad differentiates {what} of real arrays only; this one is complex.",
            fix="differentiate with respect to the real and imaginary parts as two real "
            "arrays (`a = x + 1j * y`) through functions srcad supports for complex values "
            "(matmul, inv, solve, det, slogdet, the 2-norm), or keep the matrix real.")


def _refuse_completion(cotangent):
    """The columns `svd(full_matrices=True)` adds to a rectangular matrix's U (rows to
    Vh) are any basis of the rest of the space: nothing may depend on them."""
    if np.any(cotangent != 0):
        raise UnsupportedDerivativeError(
            "np.linalg.svd(a, full_matrices=True) of a non-square matrix completes U (or Vh) "
            "with an arbitrary basis, which has no derivative, and the result depends on it.",
            fix="pass full_matrices=False, or use only the first min(m, n) columns of U "
            "(rows of Vh).")


def _refuse_rank_deficient(a, pinv):
    """trace(pinv(a) @ a) is the rank that np.linalg.pinv kept."""
    rank = np.sum(pinv * _mT(a), axis=(-2, -1))
    if np.any(np.round(rank) < min(np.shape(a)[-2:])):
        raise UnsupportedDerivativeError(
            "np.linalg.pinv is discontinuous at a rank deficient matrix (its cutoff drops "
            "singular values that any perturbation brings back): it has no derivative there.",
            fix="regularize instead, e.g. np.linalg.solve(a.T @ a + eps * np.eye(n), a.T), or "
            "differentiate at a matrix of full rank.")


nondifferentiable(_refuse_repeated, _refuse_zero, _refuse_complex, _refuse_completion,
                  _refuse_rank_deficient, _refuse_complex_input)


# ---- inverses and solves -----------------------------------------------------------------------
defvjp(np.linalg.inv, lambda g, ans, a: -np.swapaxes(ans, -1, -2) @ g @ np.swapaxes(ans, -1, -2))
defjvp(np.linalg.inv, lambda g, ans, a: -ans @ g @ ans)


def solve_vjp_a(g, ans, a, b):
    """x = A⁻¹ b: Ā = -b̄ xᵀ with b̄ = A⁻ᵀ x̄ (a 1-D `b` is one column, as NumPy 2 reads it)."""
    if np.ndim(b) == 1:
        g, ans = g[..., None], ans[..., None]
    return unbroadcast(-np.linalg.solve(_mT(a), g) @ _mT(ans), a)


def solve_vjp_b(g, ans, a, b):
    if np.ndim(b) == 1:
        return unbroadcast(np.linalg.solve(_mT(a), g[..., None])[..., 0], b)
    return unbroadcast(np.linalg.solve(_mT(a), g), b)


def solve_jvp_a(g, ans, a, b):
    """dx = -A⁻¹ dA x."""
    if np.ndim(b) == 1:
        return -np.linalg.solve(a, g @ ans[..., None])[..., 0]
    return -np.linalg.solve(a, g @ ans)


defvjp(np.linalg.solve, solve_vjp_a, solve_vjp_b)
defjvp(np.linalg.solve, solve_jvp_a, lambda g, ans, a, b: np.linalg.solve(a, g))


def _refuse_complex_pinv(a, hermitian):
    """For a complex matrix the terms in dAᵀ become dAᴴ, not holomorphic: only a square
    (invertible) matrix, where they vanish, is differentiated."""
    if hermitian or np.shape(a)[-1] != np.shape(a)[-2]:
        _refuse_complex_input(a, "np.linalg.pinv of a non-square or hermitian=True matrix")


nondifferentiable(_refuse_complex_pinv)


def pinv_vjp(g, ans, a, rcond=None, hermitian=False, **kwargs):
    """The adjoint of the pseudo-inverse's differential (Golub and Pereyra), which holds
    where the rank does not change: A⁺ here is n x m, `a` m x n."""
    _refuse_complex_pinv(a, hermitian)
    a = _symmetric_from(a, True) if hermitian else a
    _refuse_rank_deficient(a, ans)
    p, pt, gt = ans, _mT(ans), _mT(g)
    within = gt @ p @ pt
    across = pt @ (p @ gt)
    grad = -pt @ g @ pt + within - a @ (p @ within) + across - (across @ p) @ a
    return _onto_triangle(grad, True) if hermitian else grad


def pinv_jvp(g, ans, a, rcond=None, hermitian=False, **kwargs):
    """dA⁺ = -A⁺ dA A⁺ + A⁺ A⁺ᵀ dAᵀ (I - A A⁺) + (I - A⁺ A) dAᵀ A⁺ᵀ A⁺."""
    _refuse_complex_pinv(a, hermitian)
    a = _symmetric_from(a, True) if hermitian else a
    _refuse_rank_deficient(a, ans)
    da = _mT(_symmetric_from(g, True) if hermitian else g)  # dAᵀ
    p, pt = ans, _mT(ans)
    rows = p @ (pt @ da)
    columns = da @ pt @ p
    return -p @ _mT(da) @ p + rows - (rows @ a) @ p + columns - p @ (a @ columns)


defvjp(np.linalg.pinv, pinv_vjp)
defjvp(np.linalg.pinv, pinv_jvp)


# ---- determinants ------------------------------------------------------------------------------
defvjp(np.linalg.det, lambda g, ans, a:
       (g * ans)[..., None, None] * np.swapaxes(np.linalg.inv(a), -1, -2))
defjvp(np.linalg.det, lambda g, ans, a:
       ans * np.trace(np.linalg.solve(a, g), axis1=-2, axis2=-1))


def slogdet_vjp(g, ans, a):
    """With t = tr(A⁻¹ dA) = d log det A: d log|det A| = Re(t), A⁻ᵀ times the real part of
    its cotangent. A real matrix's sign is piecewise constant; a complex one's moves,
    d sign = i sign Im(t), which pulls i Im(ḡ sign) A⁻ᵀ back."""
    if g[1] is None and (g[0] is None or dtype_of(a).kind != "c"):
        return np.zeros_like(a)
    scale = np.zeros_like(ans[1]) if g[1] is None else np.real(g[1])
    if dtype_of(a).kind == "c" and g[0] is not None:
        scale = scale + 1j * np.imag(g[0] * ans[0])
    return scale[..., None, None] * _mT(np.linalg.inv(a))


def slogdet_jvp(g, ans, a):
    """sign: 0 for a real matrix, i sign Im(t) for a complex one; log|det|: Re(t)."""
    t = np.trace(np.linalg.solve(a, g), axis1=-2, axis2=-1)
    sign = ans[0] * (1j * np.imag(t)) if dtype_of(a).kind == "c" else np.zeros_like(ans[0])
    return sign, np.real(t)


defvjp(np.linalg.slogdet, slogdet_vjp)
defjvp(np.linalg.slogdet, slogdet_jvp)


# ---- Cholesky ----------------------------------------------------------------------------------
def _half_diagonal(x):
    """The lower triangle of `x` with half its diagonal: Φ in dL = L Φ(L⁻¹ dS L⁻ᵀ)."""
    return np.tril(x) - 0.5 * x * _eye(x)


def cholesky_vjp(g, ans, a, upper=False):
    """S = L Lᵀ: S̄ = L⁻ᵀ Φ(Lᵀ L̄) L⁻¹, gathered onto the triangle S was read from."""
    _refuse_complex_input(a, "np.linalg.cholesky")
    l, g = (_mT(ans), _mT(g)) if upper else (ans, g)
    left = np.linalg.solve(_mT(l), _half_diagonal(_mT(l) @ g))  # L⁻ᵀ Φ(Lᵀ L̄)
    return _onto_triangle(_mT(np.linalg.solve(_mT(l), _mT(left))), not upper)


def cholesky_jvp(g, ans, a, upper=False):
    _refuse_complex_input(a, "np.linalg.cholesky")
    l = _mT(ans) if upper else ans
    inner = np.linalg.solve(l, _symmetric_from(g, not upper))  # L⁻¹ dS
    tangent = l @ _half_diagonal(_mT(np.linalg.solve(l, _mT(inner))))
    return _mT(tangent) if upper else tangent


defvjp(np.linalg.cholesky, cholesky_vjp)
defjvp(np.linalg.cholesky, cholesky_jvp)


# ---- eigendecompositions -----------------------------------------------------------------------
def _lower(UPLO):
    return UPLO.upper() == "L"


def eigh_vjp(g, ans, a, UPLO="L"):
    """S̄ = V (diag(w̄) + F ∘ Vᵀ V̄) Vᵀ, gathered onto the triangle S was read from."""
    _refuse_complex_input(a, "np.linalg.eigh")
    w, v = ans
    middle = np.zeros_like(v)
    if g[0] is not None:
        middle = middle + _eye(w) * g[0][..., None, :]
    if g[1] is not None:
        _refuse_repeated(w, "eigenvectors of np.linalg.eigh")
        middle = middle + _inverse_gaps(w, _tied(w)) * (_mT(v) @ g[1])
    return _onto_triangle(v @ middle @ _mT(v), _lower(UPLO))


def eigh_jvp(g, ans, a, UPLO="L"):
    """dw = diag(Vᵀ dS V), dV = V (F ∘ Vᵀ dS V)."""
    _refuse_complex_input(a, "np.linalg.eigh")
    w, v = ans
    rotated = _mT(v) @ _symmetric_from(g, _lower(UPLO)) @ v
    return np.diagonal(rotated, 0, -2, -1), v @ (_inverse_gaps(w, _tied(w)) * rotated)


defvjp(np.linalg.eigh, eigh_vjp)
defjvp(np.linalg.eigh, eigh_jvp)


def eigvalsh_vjp(g, ans, a, UPLO="L"):
    _refuse_complex_input(a, "np.linalg.eigvalsh")
    v = np.linalg.eigh(a, UPLO)[1]
    return _onto_triangle((v * g[..., None, :]) @ _mT(v), _lower(UPLO))


def eigvalsh_jvp(g, ans, a, UPLO="L"):
    _refuse_complex_input(a, "np.linalg.eigvalsh")
    v = np.linalg.eigh(a, UPLO)[1]
    return np.sum(v * (_symmetric_from(g, _lower(UPLO)) @ v), axis=-2)


defvjp(np.linalg.eigvalsh, eigvalsh_vjp)
defjvp(np.linalg.eigvalsh, eigvalsh_jvp)


def eig_vjp(g, ans, a):
    """Ā = V⁻ᵀ (diag(w̄) + F ∘ Vᵀ N(V̄)) Vᵀ, where N keeps the eigenvectors' unit length."""
    w, v = ans
    _refuse_complex(w)
    middle = np.zeros_like(v)
    if g[0] is not None:
        middle = middle + _eye(w) * g[0][..., None, :]
    if g[1] is not None:
        _refuse_repeated(w, "eigenvectors of np.linalg.eig")
        turned = _mT(v) @ g[1]
        turned = turned - (_mT(v) @ v) * np.diagonal(turned, 0, -2, -1)[..., None, :]
        middle = middle + _inverse_gaps(w, _tied(w)) * turned
    return np.linalg.solve(_mT(v), middle @ _mT(v))


def eig_jvp(g, ans, a):
    """dw = diag(V⁻¹ dA V); dV = V (F ∘ V⁻¹ dA V), less its part along each (unit) vector."""
    w, v = ans
    _refuse_complex(w)
    rotated = np.linalg.solve(v, g @ v)
    dv = v @ (_inverse_gaps(w, _tied(w)) * rotated)
    return np.diagonal(rotated, 0, -2, -1), dv - v * np.sum(v * dv, axis=-2, keepdims=True)


defvjp(np.linalg.eig, eig_vjp)
defjvp(np.linalg.eig, eig_jvp)


# ---- singular value decomposition -----------------------------------------------------------
def _thin(ans, g, full_matrices):
    """U, s, Vh and their cotangents `g` (None for a JVP) cut to min(m, n) vectors: with
    `full_matrices`, a non-square matrix's extra vectors are arbitrary, so nothing may
    depend on them."""
    u, s, vh = ans
    k = np.shape(s)[-1]
    if not full_matrices or np.shape(u)[-1] == np.shape(vh)[-2] == k:
        return u, s, vh, g
    gu, gs, gvh = g if g is not None else (None, None, None)
    if gu is not None:
        _refuse_completion(gu[..., k:])
        gu = gu[..., :k]
    if gvh is not None:
        _refuse_completion(gvh[..., k:, :])
        gvh = gvh[..., :k, :]
    return u[..., :k], s, vh[..., :k, :], (gu, gs, gvh)


def svd_vjp(g, ans, a, full_matrices=True, compute_uv=True, hermitian=False):
    """Ā = U [(F ∘ (UᵀŪ - ŪᵀU)) S + diag(s̄) + S (F ∘ (VᵀV̄ - V̄ᵀV))] Vᵀ, F = 1 / (s_j² - s_i²),
    plus the parts of Ū and V̄ outside the spans of a non-square matrix's U and V."""
    _refuse_complex_input(a, "np.linalg.svd")
    if not compute_uv:
        u, _, vh = np.linalg.svd(_symmetric_from(a, True) if hermitian else a,
                                 full_matrices=False)
        grad = (u * g[..., None, :]) @ vh
        return _onto_triangle(grad, True) if hermitian else grad
    u, s, vh, (gu, gs, gvh) = _thin(ans, g, full_matrices)
    middle = np.zeros(np.shape(s) + np.shape(s)[-1:], dtype_of(s))
    if gs is not None:
        middle = middle + _eye(s) * gs[..., None, :]
    if gu is not None or gvh is not None:
        _refuse_repeated(s, "singular vectors of np.linalg.svd")
        spin = _inverse_gaps(s * s, _tied(s))
    grad = 0
    if gu is not None:
        turned = _mT(u) @ gu
        middle = middle + spin * (turned - _mT(turned)) * s[..., None, :]
        if np.shape(u)[-2] > np.shape(s)[-1]:
            _refuse_zero(s, "left singular vectors")
            grad = ((gu - u @ turned) / s[..., None, :]) @ vh
    if gvh is not None:
        turned = vh @ _mT(gvh)  # Vᵀ V̄
        middle = middle + s[..., :, None] * (spin * (turned - _mT(turned)))
        if np.shape(vh)[-1] > np.shape(s)[-1]:
            _refuse_zero(s, "right singular vectors")
            grad = grad + u @ ((gvh - _mT(turned) @ vh) / s[..., :, None])
    grad = grad + u @ middle @ vh
    return _onto_triangle(grad, True) if hermitian else grad


def svd_jvp(g, ans, a, full_matrices=True, compute_uv=True, hermitian=False):
    """ds = diag(Uᵀ dA V); dU = U (F ∘ (dP S + S dPᵀ)) + (I - U Uᵀ) dA V S⁻¹ and dV alike,
    with dP = Uᵀ dA V; nan for the arbitrary vectors `full_matrices` adds."""
    _refuse_complex_input(a, "np.linalg.svd")
    da = _symmetric_from(g, True) if hermitian else g
    if not compute_uv:
        u, _, vh = np.linalg.svd(_symmetric_from(a, True) if hermitian else a,
                                 full_matrices=False)
        return np.sum(u * (da @ _mT(vh)), axis=-2)
    u, s, vh, _ = _thin(ans, None, full_matrices)
    v = _mT(vh)
    dp = _mT(u) @ da @ v
    spin = _inverse_gaps(s * s, _tied(s))
    du = u @ (spin * (dp * s[..., None, :] + s[..., :, None] * _mT(dp)))
    dv = v @ (spin * (s[..., :, None] * dp + _mT(dp) * s[..., None, :]))
    inverse = _reciprocal_or_nan(s, s <= _rounding(s))
    if np.shape(u)[-2] > np.shape(s)[-1]:
        du = du + (da @ v - u @ dp) * inverse[..., None, :]
    if np.shape(v)[-2] > np.shape(s)[-1]:
        dv = dv + (_mT(da) @ u - v @ _mT(dp)) * inverse[..., None, :]
    full_u, full_vh = ans[0], ans[2]
    if np.shape(full_u)[-1] > np.shape(du)[-1]:
        du = np.concatenate([du, np.zeros_like(full_u[..., np.shape(du)[-1]:]) + np.nan], -1)
    if np.shape(full_vh)[-2] > np.shape(dv)[-1]:
        dv = np.concatenate([dv, np.zeros_like(_mT(full_vh)[..., np.shape(dv)[-1]:]) + np.nan],
                            -1)
    return du, np.diagonal(dp, 0, -2, -1), _mT(dv)


defvjp(np.linalg.svd, svd_vjp)
defjvp(np.linalg.svd, svd_jvp)


# ---- norms -------------------------------------------------------------------------------------
def _norm_axes(x, ord, axis):
    """How np.linalg.norm reads `ord` and `axis`: ("vector", None) for the 2-norm of the
    flattened array, ("vector", (axis,)) or ("matrix", (row axis, column axis))."""
    ndim = np.ndim(x)
    if axis is None:
        if ord is None:
            return "vector", None
        axis = tuple(range(ndim))
    axes = tuple(a % ndim for a in (axis if isinstance(axis, tuple) else (axis,)))
    return ("vector" if len(axes) == 1 else "matrix"), axes


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


def _vector_norm_vjp(g, ans, x, p, axes):
    """The p-norm over `axes`: x |x|^(p-2) / norm^(p-1), sign(x) for p = 1, and for
    p = ±inf the elements that tie for the extreme |x| share, as np.max's rule does. The
    2-norm of a complex x, real, pulls back conj(x) / norm (as np.abs does)."""
    g, ans = _kept(g, x, axes), _kept(ans, x, axes)
    if p == 2 and dtype_of(x).kind == "c":
        return np.conj(x) * (np.real(g) / np.where(ans == 0, 1, ans))
    _refuse_complex_input(x, f"np.linalg.norm(x, ord={p!r})")
    if p == 2:
        return x * (g / np.where(ans == 0, 1, ans))
    if p == 1:
        return np.sign(x) * g
    if p in (np.inf, -np.inf):
        winners = np.abs(x) == ans
        ties = np.sum(winners, axis=axes, keepdims=True, dtype=np.result_type(g))
        return np.sign(x) * winners * (g / ties)
    _refuse_ord_zero(p)
    return np.sign(x) * np.abs(x) ** (p - 1) * (g / np.where(ans == 0, 1, ans) ** (p - 1))


def _vector_norm_jvp(g, ans, x, p, axes, keepdims):
    if p == 2 and dtype_of(x).kind == "c":
        return (np.sum(np.real(np.conj(x) * g), axis=axes, keepdims=keepdims)
                / np.where(ans == 0, 1, ans))
    _refuse_complex_input(x, f"np.linalg.norm(x, ord={p!r})")
    if p == 2:
        return np.sum(x * g, axis=axes, keepdims=keepdims) / np.where(ans == 0, 1, ans)
    if p == 1:
        return np.sum(np.sign(x) * g, axis=axes, keepdims=keepdims)
    if p in (np.inf, -np.inf):
        winners = np.abs(x) == _kept(ans, x, axes)
        return (np.sum(np.sign(x) * winners * g, axis=axes, keepdims=keepdims)
                / np.sum(winners, axis=axes, keepdims=keepdims, dtype=np.result_type(g)))
    _refuse_ord_zero(p)
    return (np.sum(np.sign(x) * np.abs(x) ** (p - 1) * g, axis=axes, keepdims=keepdims)
            / np.where(ans == 0, 1, ans) ** (p - 1))


def _spectral_weights(s, ord):
    """d norm / d s, equal to rounding counting as equal: 1 per nonzero singular value for
    "nuc" (0 for a zero one, as abs has at 0); for 2 (-2) the largest (smallest) singular
    values share 1 when they tie, as np.max's rule shares."""
    if ord == "nuc":
        return np.where(s > _rounding(s), np.ones_like(s), np.zeros_like(s))
    winners = np.abs(s - (s[..., :1] if ord == 2 else s[..., -1:])) <= _rounding(s)
    return winners / np.sum(winners, axis=-1, keepdims=True, dtype=dtype_of(s))


def _spectral_norm_vjp(g, ans, x, ord, axes):
    """ord 2, -2, "nuc": U diag(weights) Vh, with the matrix axes moved last and back."""
    _refuse_complex_input(x, f"np.linalg.norm(x, ord={ord!r})")
    u, s, vh = np.linalg.svd(np.moveaxis(x, axes, (-2, -1)), full_matrices=False)
    scale = np.moveaxis(_kept(g, x, axes), axes, (-2, -1))
    grad = (u * _spectral_weights(s, ord)[..., None, :]) @ vh * scale
    return np.moveaxis(grad, (-2, -1), axes)


def _spectral_norm_jvp(g, ans, x, ord, axes):
    _refuse_complex_input(x, f"np.linalg.norm(x, ord={ord!r})")
    u, s, vh = np.linalg.svd(np.moveaxis(x, axes, (-2, -1)), full_matrices=False)
    turned = u * (np.moveaxis(g, axes, (-2, -1)) @ _mT(vh))  # diag(Uᵀ dA V), summed below
    return np.reshape(np.sum(turned * _spectral_weights(s, ord)[..., None, :], axis=(-2, -1)),
                      np.shape(ans))


def _induced_axes(ord, axes):
    """ord ±1: the column sums (over the row axis) compete; ord ±inf: the row sums."""
    return axes[0] if ord in (1, -1) else axes[1]


def _induced_norm_vjp(g, ans, x, ord, axes):
    """ord ±1, ±inf: sign(x) on the rows or columns whose sums tie for the extreme."""
    _refuse_complex_input(x, f"np.linalg.norm(x, ord={ord!r})")
    g, ans = _kept(g, x, axes), _kept(ans, x, axes)
    winners = np.sum(np.abs(x), axis=_induced_axes(ord, axes), keepdims=True) == ans
    ties = np.sum(winners, axis=axes, keepdims=True, dtype=np.result_type(g))
    return np.sign(x) * (winners * (g / ties))


def _induced_norm_jvp(g, ans, x, ord, axes, keepdims):
    _refuse_complex_input(x, f"np.linalg.norm(x, ord={ord!r})")
    summed = _induced_axes(ord, axes)
    winners = np.sum(np.abs(x), axis=summed, keepdims=True) == _kept(ans, x, axes)
    sums = np.sum(np.sign(x) * g, axis=summed, keepdims=True)
    return (np.sum(sums * winners, axis=axes, keepdims=keepdims)
            / np.sum(winners, axis=axes, keepdims=keepdims, dtype=np.result_type(g)))


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


# ---- products ----------------------------------------------------------------------------------
def matrix_power_vjp(g, ans, a, n):
    """Σ_k (Bᵀ)^k ḡ (Bᵀ)^(m-1-k) for A^n = B^m (B = A, or A⁻¹ for n < 0), then through
    the inverse."""
    if n == 0:
        return np.zeros_like(a)
    base = _mT(a) if n > 0 else _mT(np.linalg.inv(a))
    total, power = g, base
    for _ in range(abs(n) - 1):
        total = base @ total + g @ power
        power = power @ base
    return total if n > 0 else -base @ total @ base


def matrix_power_jvp(g, ans, a, n):
    """Σ_k B^k dB B^(m-1-k), with dB = -A⁻¹ dA A⁻¹ for n < 0."""
    if n == 0:
        return np.zeros_like(ans)
    base = a if n > 0 else np.linalg.inv(a)
    tangent = g if n > 0 else -base @ g @ base
    total, power = tangent, base
    for _ in range(abs(n) - 1):
        total = base @ total + tangent @ power
        power = power @ base
    return total


defvjp(np.linalg.matrix_power, matrix_power_vjp, None)
defjvp(np.linalg.matrix_power, matrix_power_jvp, None)


def _as_matrices(arrays):
    """multi_dot's operands, a 1-D first one as a row and a 1-D last one as a column."""
    first, last = arrays[0], arrays[-1]
    if np.ndim(first) == 1:
        first = first[None, :]
    if np.ndim(last) == 1:
        last = last[:, None]
    return [first] + [x for x in arrays[1:-1]] + [last]


def multi_dot_vjp(g, ans, arrays, out=None):
    """Each operand's cotangent: (the product before it)ᵀ ḡ (the product after it)ᵀ."""
    matrices = _as_matrices(arrays)
    g = np.reshape(g, (np.shape(matrices[0])[0], np.shape(matrices[-1])[1]))
    after = [None]  # after[j]: the product of the last j operands
    for m in matrices[:0:-1]:
        after.append(m if after[-1] is None else m @ after[-1])
    cotangents, before = [], g  # before: (the product of the operands so far)ᵀ ḡ
    for i, m in enumerate(matrices):
        later = after[len(matrices) - 1 - i]
        cotangents.append(before if later is None else before @ _mT(later))
        before = _mT(m) @ before
    return [np.reshape(c, np.shape(x)) for c, x in zip(cotangents, arrays)]


def multi_dot_jvp(g, ans, arrays, out=None):
    """Linear in each operand: the products with one tangent in its operand's place."""
    total = None
    for i, tangent in enumerate(g):
        if tangent is not None:
            term = np.linalg.multi_dot([tangent if j == i else x for j, x in enumerate(arrays)])
            total = term if total is None else total + term
    return total


defvjp(np.linalg.multi_dot, multi_dot_vjp)
defjvp(np.linalg.multi_dot, multi_dot_jvp)
