"""Rules for numpy.linalg: inv, solve, det, slogdet, cholesky, pinv, matrix_power and
multi_dot, and the helpers the decompositions (numpy_decompositions.py: eigh, eigvalsh, eig,
svd) and norms (numpy_norms.py) share.

Matrices are the last two axes, so stacks `(..., m, n)` work wherever NumPy takes them. The
rules are built from NumPy functions that have rules themselves (matmul, solve, swapaxes,
tril, where, ...): they run on tape-mode tensors, and srcad differentiates them again for
second derivatives. Functions with several results (slogdet, eigh, eig, svd) get their
cotangent as a tuple with None for a result nothing read, and their JVPs return a tuple.
Two helpers are primitives with rules of their own, so that they may call LAPACK's
triangular routines (through SciPy, where it is installed): `solve_transposed`, the solve
every solve's adjoint makes, which solves a triangular matrix (a Cholesky factor) as one, and
`lower_inverse`, the inverse the Cholesky rules use.

`cholesky` and `eigh` read one triangle of their argument (`upper`, `UPLO`) and so do `svd`
and `pinv` with `hermitian=True`: their derivatives are taken with respect to that triangle,
as NumPy computes them, which is exact for any argument, symmetric or not.

Where a derivative does not exist, the rules raise instead of returning a number: the
eigenvectors (or singular vectors) of repeated eigenvalues, a pseudo-inverse at a rank
deficient matrix, `norm(x, 0)`, the arbitrary completing
columns of `svd(full_matrices=True)`. A JVP cannot tell whether the vectors it returns are
used, so their tangents at repeated values are nan rather than an error.
"""
import functools

import numpy as np

from srcad.errors import UnsupportedDerivativeError
from srcad.kernels.adjoints import dtype_of, unbroadcast
from srcad.ops.registry import UNKNOWN, declare, defjvp, defvjp, nondifferentiable


# ---- helpers ---------------------------------------------------------------------------------
def mT(x):
    """The transpose of the last two axes."""
    return np.swapaxes(x, -1, -2)


def eye(x):
    """An identity as wide as `x`'s last axis, in `x`'s floating precision."""
    return np.eye(np.shape(x)[-1], dtype=np.promote_types(dtype_of(x), np.float16))


def mH(x):
    """The conjugate transpose of the last two axes (the transpose, for a real `x`)."""
    return np.conj(mT(x)) if dtype_of(x).kind == "c" else mT(x)


def symmetric_from(a, lower):
    """The symmetric (for a complex `a`, Hermitian) matrix whose lower (else upper) triangle
    is `a`'s: what the functions that read one triangle factor. LAPACK reads the real part
    of a complex diagonal only."""
    if dtype_of(a).kind == "c":
        strict = np.tril(a, -1) if lower else np.triu(a, 1)
        return strict + mH(strict) + np.real(np.diagonal(a, 0, -2, -1))[..., None, :] * eye(a)
    if lower:
        return np.tril(a) + mT(np.tril(a, -1))
    return np.triu(a) + mT(np.triu(a, 1))


@functools.lru_cache(maxsize=32)
def halved_lower(n, dtype):
    """(mask, weights) of an n x n lower triangle, the weights 1 below the diagonal and 1/2
    on it: made once per size, as np.tril makes its mask on every call."""
    mask = np.tri(n, dtype=bool)
    weights = (mask - 0.5 * np.eye(n)).astype(dtype)
    mask.flags.writeable = weights.flags.writeable = False
    return mask, weights


@functools.lru_cache(maxsize=32)
def strict_triangles(n):
    """(above, below): the masks of an n x n matrix's strict upper and lower triangles, both
    in C order, made once per size."""
    above = ~np.tri(n, dtype=bool)
    below = np.ascontiguousarray(above.T)
    above.flags.writeable = below.flags.writeable = False
    return above, below


def halved_triangle(x, lower):
    """`x`'s lower (else upper) triangle with half its diagonal, zero elsewhere (also where
    `x` is inf or nan): Φ in dL = L Φ(L⁻¹ dS L⁻ᵀ). An ndarray is zeroed in place where the
    triangle ends, which costs two thirds of np.where."""
    n = np.shape(x)[-1]
    mask, weights = halved_lower(n, dtype_of(x))
    above, below = strict_triangles(n)
    if not lower:
        mask, weights, above = mask.T, weights.T, below
    if type(x) is not np.ndarray:  # (a tape-mode tensor: differentiated again)
        return np.where(mask, x * weights, 0)
    result = x * weights
    np.copyto(result, 0, where=above)
    return result


def onto_triangle(h, lower):
    """The adjoint of `symmetric_from`: the cotangent `h` of the symmetric (Hermitian)
    matrix gathered onto the triangle it was read from. For a real `h` that is
    (h + hᵀ) on the triangle with half its diagonal."""
    if dtype_of(h).kind == "c":
        strict = (np.tril(h, -1) + np.tril(mH(h), -1) if lower
                  else np.triu(h, 1) + np.triu(mH(h), 1))
        return strict + np.real(np.diagonal(h, 0, -2, -1))[..., None, :] * eye(h)
    return halved_triangle(h + mT(h), lower)


def rounding(values):
    """How far apart values of this size may be by rounding alone (n eps max|value|, per
    matrix): closer values count as equal, smaller ones as zero."""
    largest = np.max(np.abs(values), axis=-1, keepdims=True)
    return np.shape(values)[-1] * np.finfo(dtype_of(values)).eps * largest


def tied(values):
    """[..., i, j]: whether values i and j are equal to rounding (the diagonal is)."""
    gaps = values[..., None, :] - values[..., :, None]
    return np.abs(gaps) <= rounding(values)[..., None]


def reciprocal_or_nan(x, zero):
    """1 / x, and nan (without a warning) where `zero`."""
    return np.where(zero, np.nan, 1 / np.where(zero, 1, x))


def inverse_gaps(values, tied):
    """F[..., i, j] = 1 / (values[j] - values[i]) off the diagonal, 0 on it: how fast
    eigenvectors (or singular vectors) turn towards each other; nan where `tied`."""
    gaps = values[..., None, :] - values[..., :, None]
    return np.where(np.eye(np.shape(values)[-1], dtype=bool), 0, reciprocal_or_nan(gaps, tied))


def refuse_repeated(values, what):
    """Vectors of equal eigen- or singular values have no derivative (any rotation of them
    is as good): refuse rather than return nan or noise."""
    if np.any(tied(values) > np.eye(np.shape(values)[-1], dtype=bool)):
        raise UnsupportedDerivativeError(
            f"the {what} have no derivative here: some of their values are equal (to "
            "rounding), and the vectors of equal values can turn into each other.",
            fix="differentiate through the values only, or through functions of the vectors "
            "that do not depend on how they are chosen (`u @ diag(s) @ vh`), at a matrix "
            "whose values are distinct.")


def refuse_zero(s, what):
    if np.any(s <= rounding(s)):
        raise UnsupportedDerivativeError(
            f"the {what} of a zero singular value (to rounding) have no derivative: the "
            "matrix is rank deficient.", fix="differentiate through the singular values only, "
            "or at a matrix of full rank.")


def refuse_complex_input(a, what):
    """Rules derived for real matrices (symmetric ones transposed, not conjugated) would
    give wrong numbers for complex ones: refuse them."""
    if dtype_of(a).kind == "c":
        raise UnsupportedDerivativeError(
            f"srcad differentiates {what} of real arrays only; this one is complex.",
            fix="differentiate with respect to the real and imaginary parts as two real "
            "arrays (`a = x + 1j * y`) through functions srcad supports for complex values "
            "(matmul, inv, solve, det, slogdet, eig, eigh, svd, norm), or keep the matrix real.")


def refuse_completion(cotangent):
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
    rank = np.sum(pinv * mT(a), axis=(-2, -1))
    if np.any(np.round(rank) < min(np.shape(a)[-2:])):
        raise UnsupportedDerivativeError(
            "np.linalg.pinv is discontinuous at a rank deficient matrix (its cutoff drops "
            "singular values that any perturbation brings back): it has no derivative there.",
            fix="regularize instead, e.g. np.linalg.solve(a.T @ a + eps * np.eye(n), a.T), or "
            "differentiate at a matrix of full rank.")


nondifferentiable(refuse_repeated, refuse_zero, refuse_completion,
                  _refuse_rank_deficient, refuse_complex_input, halved_lower,
                  strict_triangles)


# ---- triangular matrices ---------------------------------------------------------------------
@functools.cache
def _blas_and_lapack():
    """SciPy's BLAS and LAPACK wrappers if SciPy is installed, else None. NumPy has no
    triangular solve, inverse or product: without SciPy a triangle is a general matrix."""
    try:
        from scipy.linalg import blas, lapack
    except ImportError:
        return None
    return blas, lapack


def _triangular_routine(name, a, b=None):
    """BLAS's or LAPACK's `name` (trmm, trtri, trtrs) for a 2-D float32 or float64 ndarray
    `a` (and `b` of the same dtype), or None: stacks, other dtypes and tape-mode tensors take
    NumPy's way."""
    modules = _blas_and_lapack()
    if modules is None or type(a) is not np.ndarray or a.ndim != 2 or (
            b is not None and (type(b) is not np.ndarray or b.dtype != a.dtype)):
        return None
    prefix = {np.dtype(np.float64): "d", np.dtype(np.float32): "s"}.get(a.dtype)
    blas, lapack = modules
    return None if prefix is None else getattr(blas if name == "trmm" else lapack, prefix + name)


def _in_fortran_order(a, lower):
    """LAPACK reads a matrix in Fortran order: a C-ordered `a` is passed as its transpose
    (no copy), whose triangle is the other one. Returns (matrix, lower, transposed)."""
    if a.flags.f_contiguous:
        return a, lower, False
    return a.T, not lower, True


def zero_above_diagonal(a):
    """Whether the square matrix `a` is zero above its diagonal (nan is not zero), read in
    the order of its memory: the mask of the other order would read it with strides."""
    above, below = strict_triangles(len(a))
    if a.flags.f_contiguous and not a.flags.c_contiguous:
        return not np.logical_and(a.T, below).any()
    return not np.logical_and(a, above).any()


def triangle_of(a):
    """"lower" or "upper" if the square matrix `a` is triangular (a Cholesky factor, its
    transpose), else None. A general matrix is told by its corners, in O(1)."""
    if a[0, -1] == 0 and zero_above_diagonal(a):
        return "lower"
    if a[-1, 0] == 0 and zero_above_diagonal(a.T):
        return "upper"
    return None


def lower_inverse(l):
    """The inverse of the lower triangle of `l` (a Cholesky factor): LAPACK's trtri, a third
    of a general inverse's work, where SciPy is installed."""
    trtri = _triangular_routine("trtri", l)
    if trtri is not None:
        matrix, lower, transposed = _in_fortran_order(l, True)
        inverse, info = trtri(matrix, lower=int(lower))
        if info == 0:  # (trtri leaves the other triangle as it found it: zeroed here, in
            above, below = strict_triangles(len(l))  # the C order of inverse.T)
            np.copyto(inverse.T, 0, where=below if lower else above)
            return inverse.T if transposed else inverse
    return np.linalg.inv(np.tril(l))


defvjp(lower_inverse, lambda g, ans, l: -np.tril(mT(ans) @ g @ mT(ans)))
defjvp(lower_inverse, lambda g, ans, l: -ans @ np.tril(g) @ ans)


def triangular_product(t, x, lower, left=True, transposed=False):
    """op(t) @ x (`left`, else x @ op(t)), op(t) = tᵀ if `transposed`, for a `t` that is
    zero outside its `lower` (else upper) triangle: BLAS's trmm, which skips the zeros (a
    fifth less time than matmul at n=100), for 2-D ndarrays where SciPy is installed. trmm
    reads Fortran order: a C-ordered operand is passed as its transpose (no copy)."""
    trmm = _triangular_routine("trmm", t, x)
    if trmm is None or x.ndim != 2:
        t = mT(t) if transposed else t
        return t @ x if left else x @ t
    if not t.flags.f_contiguous:  # (its transpose is: the other triangle, the other op)
        t, lower, transposed = t.T, not lower, not transposed
    if x.flags.f_contiguous:
        return trmm(1.0, t, x, side=int(not left), lower=int(lower), trans_a=int(transposed))
    # (op(t) x)ᵀ = xᵀ op(t)ᵀ: the other side, the other op
    return trmm(1.0, t, x.T, side=int(left), lower=int(lower), trans_a=int(not transposed)).T


def solve_transposed(a, b):
    """A⁻ᵀ B for a stack of matrices `B`, the solve the adjoint of every solve makes. A
    triangular `a` (a Cholesky factor, its transpose) is solved as one, in O(n²), where
    SciPy is installed; a general one costs two reads of its corners more."""
    trtrs = _triangular_routine("trtrs", a, b)
    triangle = None if trtrs is None or b.ndim != 2 or len(a) != len(a.T) else triangle_of(a)
    if triangle is not None:
        matrix, lower, transposed = _in_fortran_order(a, triangle == "lower")
        x, info = trtrs(matrix, b, lower=int(lower), trans=int(not transposed))
        if info == 0:
            return x
    return np.linalg.solve(mT(a), b)


defvjp(solve_transposed,  # X = A⁻ᵀ B: Ā = -X (A⁻¹ X̄)ᵀ, B̄ = A⁻¹ X̄
       lambda g, ans, a, b: unbroadcast(-ans @ mT(solve_transposed(mT(a), g)), a),
       lambda g, ans, a, b: unbroadcast(solve_transposed(mT(a), g), b))
defjvp(solve_transposed,  # dX = A⁻ᵀ (dB - dAᵀ X)
       lambda g, ans, a, b: -solve_transposed(a, mT(g) @ ans),
       lambda g, ans, a, b: solve_transposed(a, g))


# ---- inverses and solves -----------------------------------------------------------------------
defvjp(np.linalg.inv, lambda g, ans, a: -np.swapaxes(ans, -1, -2) @ g @ np.swapaxes(ans, -1, -2))
defjvp(np.linalg.inv, lambda g, ans, a: -ans @ g @ ans)


def solve_vjp_a(g, ans, a, b):
    """x = A⁻¹ b: Ā = -b̄ xᵀ with b̄ = A⁻ᵀ x̄ (a 1-D `b` is one column, as NumPy 2 reads it)."""
    if np.ndim(b) == 1:  # (an outer product: broadcasting is faster than matmul)
        return unbroadcast(-solve_transposed(a, g[..., None]) * ans[..., None, :], a)
    return unbroadcast(-solve_transposed(a, g) @ mT(ans), a)


def solve_vjp_b(g, ans, a, b):
    if np.ndim(b) == 1:
        return unbroadcast(solve_transposed(a, g[..., None])[..., 0], b)
    return unbroadcast(solve_transposed(a, g), b)


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
        refuse_complex_input(a, "np.linalg.pinv of a non-square or hermitian=True matrix")


nondifferentiable(_refuse_complex_pinv)


def pinv_vjp(g, ans, a, rcond=None, hermitian=False, **kwargs):
    """The adjoint of the pseudo-inverse's differential (Golub and Pereyra), which holds
    where the rank does not change: A⁺ here is n x m, `a` m x n."""
    _refuse_complex_pinv(a, hermitian)
    a = symmetric_from(a, True) if hermitian else a
    _refuse_rank_deficient(a, ans)
    p, pt, gt = ans, mT(ans), mT(g)
    within = gt @ p @ pt
    across = pt @ (p @ gt)
    grad = -pt @ g @ pt + within - a @ (p @ within) + across - (across @ p) @ a
    return onto_triangle(grad, True) if hermitian else grad


def pinv_jvp(g, ans, a, rcond=None, hermitian=False, **kwargs):
    """dA⁺ = -A⁺ dA A⁺ + A⁺ A⁺ᵀ dAᵀ (I - A A⁺) + (I - A⁺ A) dAᵀ A⁺ᵀ A⁺."""
    _refuse_complex_pinv(a, hermitian)
    a = symmetric_from(a, True) if hermitian else a
    _refuse_rank_deficient(a, ans)
    da = mT(symmetric_from(g, True) if hermitian else g)  # dAᵀ
    p, pt = ans, mT(ans)
    rows = p @ (pt @ da)
    columns = da @ pt @ p
    return -p @ mT(da) @ p + rows - (rows @ a) @ p + columns - p @ (a @ columns)


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
    return scale[..., None, None] * mT(np.linalg.inv(a))


def slogdet_jvp(g, ans, a):
    """sign: 0 for a real matrix, i sign Im(t) for a complex one; log|det|: Re(t)."""
    t = np.trace(np.linalg.solve(a, g), axis1=-2, axis2=-1)
    sign = ans[0] * (1j * np.imag(t)) if dtype_of(a).kind == "c" else np.zeros_like(ans[0])
    return sign, np.real(t)


defvjp(np.linalg.slogdet, slogdet_vjp)
defjvp(np.linalg.slogdet, slogdet_jvp)


# ---- Cholesky ----------------------------------------------------------------------------------
def cholesky_vjp(g, ans, a, upper=False):
    """S = L Lᵀ: S̄ = L⁻ᵀ Φ(Lᵀ L̄) L⁻¹, gathered onto the triangle S was read from. One
    triangular inverse and two products cost less than two solves with n columns; all three
    products have a triangular factor (L, L⁻¹)."""
    refuse_complex_input(a, "np.linalg.cholesky")
    l, g = (mT(ans), mT(g)) if upper else (ans, g)
    inverse = lower_inverse(l)
    phi = halved_triangle(triangular_product(l, g, True, transposed=True), True)
    right = triangular_product(inverse, phi, True, left=False)
    return onto_triangle(triangular_product(inverse, right, True, transposed=True), not upper)


def cholesky_jvp(g, ans, a, upper=False):
    refuse_complex_input(a, "np.linalg.cholesky")
    l = mT(ans) if upper else ans
    inverse = lower_inverse(l)
    tangent = l @ halved_triangle(inverse @ symmetric_from(g, not upper) @ mT(inverse), True)
    return mT(tangent) if upper else tangent


defvjp(np.linalg.cholesky, cholesky_vjp)
defjvp(np.linalg.cholesky, cholesky_jvp)


# ---- products ----------------------------------------------------------------------------------
def matrix_power_vjp(g, ans, a, n):
    """Σ_k (Bᵀ)^k ḡ (Bᵀ)^(m-1-k) for A^n = B^m (B = A, or A⁻¹ for n < 0), then through
    the inverse."""
    if n == 0:
        return np.zeros_like(a)
    base = mT(a) if n > 0 else mT(np.linalg.inv(a))
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
declare(np.linalg.matrix_power, view=lambda arguments, keywords:  # (its power 1 is the
        len(arguments) < 2 or arguments[1] is UNKNOWN or arguments[1] == 1)  # matrix itself)


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
        cotangents.append(before if later is None else before @ mT(later))
        before = mT(m) @ before
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
declare(np.linalg.multi_dot, takes_sequences=True)  # (a list of matrices)
declare(np.linalg.slogdet, sequence="new")  # (sign, log |det|)
