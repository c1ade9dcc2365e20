"""Rules for the eigendecompositions and the singular value decomposition of numpy.linalg:
`eigh`, `eigvalsh`, `eig`, `svd` (thin, full, values only, hermitian), of real and complex
matrices; complex vectors follow the phases LAPACK picks (see "the phases" below).

The vectors of repeated eigenvalues or singular values have no derivative: their rules raise
(a JVP returns nan, not knowing whether the vectors are used). `eigh` and `svd(hermitian=True)`
read one triangle of their argument and are differentiated with respect to that triangle.
"""
import numpy as np

from srcad.errors import UnsupportedDerivativeError
from srcad.ops.numpy_linalg import (eye, inverse_gaps, mH, mT, onto_triangle, reciprocal_or_nan,
                                      refuse_completion, refuse_repeated, refuse_zero, rounding,
                                      symmetric_from, tied)
from srcad.kernels.adjoints import dtype_of
from srcad.ops.registry import declare, defjvp, defvjp, nondifferentiable


# ---- eigendecompositions -----------------------------------------------------------------------
def _lower(UPLO):
    return UPLO.upper() == "L"


def eigh_vjp(g, ans, a, UPLO="L"):
    """S̄ = V (diag(w̄) + F ∘ Vᴴ V̄) Vᴴ, gathered onto the triangle S was read from (worked
    with gradients, the conjugates of srcad's cotangents, for a complex S)."""
    w, v = ans
    middle = np.zeros_like(v)
    if g[0] is not None:
        middle = middle + eye(w) * np.real(g[0])[..., None, :]  # w is real: Re (ufuncs)
    if g[1] is not None:
        refuse_repeated(w, "eigenvectors of np.linalg.eigh")
        gv = np.conj(g[1])
        if dtype_of(v).kind == "c":
            gv = gv + _phase_cotangent(np.imag(_diagonal(mH(v) @ gv)), gv, v,
                                       _phase_row(v, _lower(UPLO)), "eigenvectors of "
                                       "np.linalg.eigh")
        middle = middle + inverse_gaps(w, tied(w)) * (mH(v) @ gv)
    return np.conj(onto_triangle(v @ middle @ mH(v), _lower(UPLO)))


def eigh_jvp(g, ans, a, UPLO="L"):
    """dw = diag(Vᴴ dS V), dV = V (F ∘ Vᴴ dS V), turned to keep LAPACK's phases."""
    w, v = ans
    rotated = mH(v) @ symmetric_from(g, _lower(UPLO)) @ v
    dv = v @ (inverse_gaps(w, tied(w)) * rotated)
    if dtype_of(v).kind == "c":
        dv = dv + 1j * v * _phase_turn(dv, v, _phase_row(v, _lower(UPLO)))
    return np.real(_diagonal(rotated)), dv


defvjp(np.linalg.eigh, eigh_vjp)
defjvp(np.linalg.eigh, eigh_jvp)


def eigvalsh_vjp(g, ans, a, UPLO="L"):
    v = np.linalg.eigh(a, UPLO)[1]
    return np.conj(onto_triangle((v * np.real(g)[..., None, :]) @ mH(v), _lower(UPLO)))


def eigvalsh_jvp(g, ans, a, UPLO="L"):
    v = np.linalg.eigh(a, UPLO)[1]
    return np.real(np.sum(np.conj(v) * (symmetric_from(g, _lower(UPLO)) @ v), axis=-2))


defvjp(np.linalg.eigvalsh, eigvalsh_vjp)
defjvp(np.linalg.eigvalsh, eigvalsh_jvp)


# ---- the phases of complex eigenvectors and singular vectors --------------------------------
# Each complex vector of eigh and svd is defined up to a phase (for svd, one phase turns a
# left and a right vector together). LAPACK's reductions choose it by leaving one row of a
# factor real: eigh's first row (UPLO="L") or last ("U"); svd's first row of V, or of U for a
# wide matrix, which it factors transposed. The rules follow that choice where they see it:
# each vector's tangent turns by iθ to keep that row real. Where no row is real, or a
# vector's entry in it is too small to fix a phase (a block-diagonal matrix), LAPACK's phase
# has no derivative: a loss that reads it is refused in reverse mode, and a tangent keeps
# the phase still, which is exact for everything that does not read it (a JVP cannot tell).
def _diagonal(x):
    return np.diagonal(x, 0, -2, -1)


def _phase_row(q, lower):
    """The row of the factor `q` LAPACK keeps real, or None."""
    row = 0 if lower else np.shape(q)[-2] - 1
    entries = q[..., row, :]
    real = np.all(np.abs(np.imag(entries)) <= 1e-2 * np.sqrt(np.finfo(dtype_of(q)).eps))
    return row if real else None


def _anchored(q, row):
    """[..., 1, k]: whether column k's entry in `row` is large enough to fix its phase."""
    if row is None:
        return np.zeros(np.shape(q)[:-2] + (1,) + np.shape(q)[-1:], bool)
    entries = np.abs(q[..., row:row + 1, :])
    return entries > np.sqrt(np.finfo(dtype_of(q)).eps)


def _phase_turn(dq, q, row):
    """θ [..., 1, k]: how fast each vector turns (by iθ) for `row` of q to stay real under
    the tangent dq; 0 where no row or entry fixes the phase."""
    if row is None:
        return np.zeros(np.shape(q)[:-2] + (1,) + np.shape(q)[-1:], dtype_of(np.real(q)))
    anchored = _anchored(q, row)
    entries = np.where(anchored, np.real(q[..., row:row + 1, :]), 1)
    return np.where(anchored, -np.imag(dq[..., row:row + 1, :]) / entries, 0)


def _phase_cotangent(along, gq, q, row, what):
    """What a loss's `along` (dL/dθ per column, for turning each vector by iθ) adds to the
    gradient of the factor `q` through `_phase_turn`; the loss is refused where it reads a
    phase no row fixes."""
    anchored = _anchored(q, row)
    size = np.sqrt(np.sum(np.abs(gq) ** 2, axis=-2, keepdims=True))
    reads = np.abs(along[..., None, :]) > np.sqrt(np.finfo(dtype_of(q)).eps) * size
    if np.any(reads & ~anchored):
        raise UnsupportedDerivativeError(
            f"the {what} are complex, each defined up to a phase, and this loss depends on "
            "their phases, which LAPACK chooses in a way srcad cannot follow here.",
            fix="differentiate a function of the vectors that does not depend on their phases "
            "(np.abs(v), v * np.conj(v), v @ np.diag(w) @ v.conj().T), or of the values only.")
    if row is None:
        return np.zeros_like(gq)
    mask = (np.arange(np.shape(q)[-2]) == row)[:, None] & anchored
    entries = np.where(anchored, np.real(q[..., row:row + 1, :]), 1)
    return np.where(mask, -1j * along[..., None, :] / entries, 0)


nondifferentiable(_phase_row, _anchored)


def eig_vjp(g, ans, a):
    """Ā = V⁻ᵀ (diag(w̄) + F ∘ Vᵀ V̄') Vᵀ, where V̄' adds to V̄ the cotangents of what fixes
    each eigenvector: its unit length and, for a complex one, its phase (_phase_fixed)."""
    w, v = ans
    _refuse_defective(w, v)
    middle = np.zeros_like(v)
    if g[0] is not None:
        middle = middle + eye(w) * g[0][..., None, :]
    if g[1] is not None:
        refuse_repeated(w, "eigenvectors of np.linalg.eig")
        middle = middle + inverse_gaps(w, tied(w)) * (mT(v) @ _vector_cotangent(g, w, v, a))
    cotangent = np.linalg.solve(mT(v), middle @ mT(v))
    return cotangent if dtype_of(a).kind == "c" else np.real(cotangent)


def eig_jvp(g, ans, a):
    """dw = diag(V⁻¹ dA V); dV = V (F ∘ V⁻¹ dA V), less its part along each vector that
    would change the vector's length or, for a complex one, its phase (_phase_fixed).
    nan where there is no derivative: everything at a defective matrix, a vector whose
    phase LAPACK may choose otherwise under any perturbation (_anchor_tied)."""
    w, v = ans
    rotated = np.linalg.solve(v, g @ v)
    dv = v @ (inverse_gaps(w, tied(w)) * rotated)
    dv = dv - v * np.real(np.sum(np.conj(v) * dv, axis=-2, keepdims=True))
    if dtype_of(v).kind == "c":
        anchor = _anchor(v)
        turn = np.imag(_at(anchor, dv)) / np.real(_at(anchor, v))
        fixed = _phase_fixed(w, v, a)
        dv = dv - 1j * v * np.where(fixed, turn, 0)
        dv = np.where(fixed & _anchor_tied(v), np.nan, dv)
    defective = _defective(w, v)
    return (np.where(defective[..., None], np.nan, np.diagonal(rotated, 0, -2, -1)),
            np.where(defective[..., None, None], np.nan, dv))


def _vector_cotangent(g, w, v, a):
    """V̄ plus the cotangents of the two constraints on each vector: unit length takes
    away Re(s) conj(v), a fixed phase adds -i Im(s) / v[anchor] at the anchor, where
    s = Σᵢ V̄ᵢₖ vᵢₖ is how the loss changes along the vector itself."""
    gv = g[1]
    along = np.sum(gv * v, axis=-2, keepdims=True)
    projected = gv - np.real(along) * np.conj(v)
    if dtype_of(v).kind != "c":
        return projected
    fixed = _phase_fixed(w, v, a)
    _refuse_unanchored_phase(g, w, v, fixed)
    anchor = _anchor(v)
    turn = np.where(fixed, np.imag(along), 0)
    return projected - 1j * np.where(anchor, turn / np.real(_at(anchor, v)), 0)


def _defective(w, v):
    """[...]: whether a matrix has equal eigenvalues (to rounding) without as many
    independent eigenvectors (V's columns, of unit length, nearly dependent): its
    eigenvalues then move like the square root of a perturbation, with no derivative."""
    repeated = np.any(tied(w) > np.eye(np.shape(w)[-1], dtype=bool), axis=(-2, -1))
    singular = np.linalg.svd(v, compute_uv=False)[..., -1]
    return repeated & (singular <= np.sqrt(np.finfo(dtype_of(v)).eps))


def _refuse_defective(w, v):
    if np.any(_defective(w, v)):
        raise UnsupportedDerivativeError(
            "np.linalg.eig has no derivative at a defective matrix (equal eigenvalues "
            "without a full set of eigenvectors, like [[1, 1], [0, 1]]): the eigenvalues "
            "split like the square root of a perturbation.",
            fix="differentiate at a matrix whose eigenvalues are distinct, or write the loss "
            "with the matrix itself (np.trace(a @ a @ a) is the sum of the cubed "
            "eigenvalues).")


def _phase_fixed(w, v, a):
    """[..., 1, k]: whether complex eigenvector k's phase is LAPACK's choice, which its
    derivative must follow: the vector's component of largest modulus is real. A real
    eigenvalue of a real matrix has a real vector, which stays real by itself."""
    shape = np.shape(w)[:-1] + (1,) + np.shape(w)[-1:]
    if dtype_of(a).kind == "c":
        return np.ones(shape, bool)
    return np.reshape(np.abs(np.imag(w)) > rounding(w), shape)


def _anchor(v):
    """A mask of each eigenvector's first component of largest modulus, which LAPACK
    makes real."""
    rows = np.arange(np.shape(v)[-2])[:, None]
    return rows == np.argmax(np.abs(v), axis=-2)[..., None, :]


def _at(anchor, x):
    """x at each column's anchor, as a row [..., 1, k]."""
    return np.sum(np.where(anchor, x, 0), axis=-2, keepdims=True)


def _anchor_tied(v):
    """[..., 1, k]: whether another component of vector k is as large as its anchor (to
    within √eps): which one LAPACK makes real may then flip, and the phase with it."""
    size = np.sort(np.abs(v), axis=-2)
    largest = size[..., -1:, :]
    return largest - size[..., -2:-1, :] <= np.sqrt(np.finfo(dtype_of(v)).eps) * largest


def _refuse_unanchored_phase(g, w, v, fixed):
    """A complex vector whose anchor is tied jumps in phase under any perturbation, and
    the loss with it unless the loss ignores the phase, which its cotangent cannot tell:
    a loss that reads such a vector at all (beyond rounding, against the size of the whole
    cotangent) is refused."""
    gw = 0 if g[0] is None else np.sum(np.abs(g[0] * w), axis=-1)[..., None, None]
    read = np.sum(np.abs(g[1] * v), axis=-2, keepdims=True)
    scale = np.sum(read, axis=-1, keepdims=True) + gw
    if np.any(fixed & _anchor_tied(v) & (read > np.sqrt(np.finfo(dtype_of(v)).eps) * scale)):
        raise UnsupportedDerivativeError(
            "np.linalg.eig's eigenvectors have no derivative here: LAPACK fixes each complex "
            "vector's phase by making its component of largest modulus real, and two "
            "components of a vector this loss reads are equally large, so that choice (and "
            "the phase) jumps under any perturbation.",
            fix="differentiate at a matrix where one component of each such vector is the "
            "largest, or write the loss with the eigenvalues or the matrix itself.")


nondifferentiable(_defective, _refuse_defective, _phase_fixed, _anchor, _anchor_tied,
                  _refuse_unanchored_phase)


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
        refuse_completion(gu[..., k:])
        gu = gu[..., :k]
    if gvh is not None:
        refuse_completion(gvh[..., k:, :])
        gvh = gvh[..., :k, :]
    return u[..., :k], s, vh[..., :k, :], (gu, gs, gvh)


def svd_vjp(g, ans, a, full_matrices=True, compute_uv=True, hermitian=False):
    """Ā = U [(F ∘ (UᴴŪ - ŪᴴU)) S + diag(s̄) + S (F ∘ (VᴴV̄ - V̄ᴴV))] Vᴴ, F = 1 / (s_j² - s_i²),
    plus the parts of Ū and V̄ outside the spans of a non-square matrix's U and V, and for a
    complex matrix i Im(diag(UᴴŪ)) / S, which turns U against V (worked with gradients, the
    conjugates of srcad's cotangents)."""
    if not compute_uv:
        u, _, vh = np.linalg.svd(symmetric_from(a, True) if hermitian else a,
                                 full_matrices=False)
        grad = np.conj((u * np.real(g)[..., None, :]) @ vh)
        return onto_triangle(grad, True) if hermitian else grad
    u, s, vh, (gu, gs, gvh) = _thin(ans, g, full_matrices)
    middle = np.zeros(np.shape(s) + np.shape(s)[-1:], dtype_of(u))
    if gs is not None:
        middle = middle + eye(s) * np.real(gs)[..., None, :]  # s is real: Re (ufuncs)
    if gu is not None or gvh is not None:
        refuse_repeated(s, "singular vectors of np.linalg.svd")
        spin = inverse_gaps(s * s, tied(s))
    gu = None if gu is None else np.conj(gu)
    gv = None if gvh is None else mT(gvh)
    if dtype_of(u).kind == "c" and (gu is not None or gvh is not None):
        gu, gv = _svd_phase_gradients(gu, gv, u, vh)
    grad = 0
    if gu is not None:
        turned = mH(u) @ gu  # UᴴŪ
        middle = middle + spin * (turned - mH(turned)) * s[..., None, :]
        if dtype_of(u).kind == "c":
            middle = middle + 1j * eye(s) * (np.imag(_diagonal(turned)) / s)[..., None, :]
        if np.shape(u)[-2] > np.shape(s)[-1]:
            refuse_zero(s, "left singular vectors")
            grad = ((gu - u @ turned) / s[..., None, :]) @ vh
    if gv is not None:
        turned = vh @ gv  # VᴴV̄
        middle = middle + s[..., :, None] * (spin * (turned - mH(turned)))
        if np.shape(vh)[-1] > np.shape(s)[-1]:
            refuse_zero(s, "right singular vectors")
            grad = grad + u @ ((mH(gv) - mH(turned) @ vh) / s[..., :, None])
    grad = np.conj(grad + u @ middle @ vh)
    return onto_triangle(grad, True) if hermitian else grad


def _svd_phase_gradients(gu, gv, u, vh):
    """Ū and V̄ with what turning each pair of vectors together adds (_phase_cotangent):
    LAPACK keeps V's first row real, or U's for a wide matrix."""
    gu = np.zeros_like(u) if gu is None else gu
    gv = np.zeros_like(mH(vh)) if gv is None else gv
    along = np.imag(_diagonal(mH(u) @ gu)) + np.imag(_diagonal(vh @ gv))
    what = "singular vectors of np.linalg.svd"
    row = _phase_row(mH(vh), True)
    if row is not None:
        return gu, gv + _phase_cotangent(along, gv, mH(vh), row, what)
    return gu + _phase_cotangent(along, gu, u, _phase_row(u, True), what), gv


def svd_jvp(g, ans, a, full_matrices=True, compute_uv=True, hermitian=False):
    """ds = Re diag(Uᴴ dA V); dU = U (F ∘ (dP S + S dPᴴ)) + (I - U Uᴴ) dA V S⁻¹ and dV alike,
    with dP = Uᴴ dA V; for a complex matrix dU also turns by i Im(diag(dP)) / S, and both by
    what keeps LAPACK's phases; nan for the arbitrary vectors `full_matrices` adds."""
    da = symmetric_from(g, True) if hermitian else g
    if not compute_uv:
        u, _, vh = np.linalg.svd(symmetric_from(a, True) if hermitian else a,
                                 full_matrices=False)
        return np.real(np.sum(np.conj(u) * (da @ mH(vh)), axis=-2))
    u, s, vh, _ = _thin(ans, None, full_matrices)
    v = mH(vh)
    dp = mH(u) @ da @ v
    spin = inverse_gaps(s * s, tied(s))
    du = u @ (spin * (dp * s[..., None, :] + s[..., :, None] * mH(dp)))
    dv = v @ (spin * (s[..., :, None] * dp + mH(dp) * s[..., None, :]))
    inverse = reciprocal_or_nan(s, s <= rounding(s))
    if dtype_of(u).kind == "c":
        du = du + 1j * u * (np.imag(_diagonal(dp)) * inverse)[..., None, :]
    if np.shape(u)[-2] > np.shape(s)[-1]:
        du = du + (da @ v - u @ dp) * inverse[..., None, :]
    if np.shape(v)[-2] > np.shape(s)[-1]:
        dv = dv + (mH(da) @ u - v @ mH(dp)) * inverse[..., None, :]
    if dtype_of(u).kind == "c":
        turn = 1j * _svd_turn(du, dv, u, v)
        du, dv = du + u * turn, dv + v * turn
    full_u, full_vh = ans[0], ans[2]
    if np.shape(full_u)[-1] > np.shape(du)[-1]:
        du = np.concatenate([du, np.zeros_like(full_u[..., np.shape(du)[-1]:]) + np.nan], -1)
    if np.shape(full_vh)[-2] > np.shape(dv)[-1]:
        dv = np.concatenate([dv, np.zeros_like(mH(full_vh)[..., np.shape(dv)[-1]:]) + np.nan],
                            -1)
    return du, np.real(_diagonal(dp)), mH(dv)


def _svd_turn(du, dv, u, v):
    """θ turning dU and dV together (_phase_turn) to keep the row LAPACK keeps real."""
    row = _phase_row(v, True)
    if row is not None:
        return _phase_turn(dv, v, row)
    return _phase_turn(du, u, _phase_row(u, True))


defvjp(np.linalg.svd, svd_vjp)
defjvp(np.linalg.svd, svd_jvp)

# they return several arrays of their own, in a tuple (analysis/aliasing.py)
for _decomposition in (np.linalg.eigh, np.linalg.eig, np.linalg.svd):
    declare(_decomposition, sequence="new")
