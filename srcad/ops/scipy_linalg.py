"""Rules for `scipy.linalg`: solve_triangular, solve, inv, det, expm, sqrtm, solve_sylvester.

Loaded lazily with the other SciPy rules (see `registry`). Each derivative is written with
SciPy's own solvers and NumPy operations that have rules, so that srcad can differentiate
it again (second derivatives). For a linear solve x = A^-1 b, the cotangent of b is a
solve with the transposed matrix, and A's is minus its outer product with x.

Where SciPy reads only part of a matrix (a triangle, the diagonal, the band of a
tridiagonal), A's derivative is zero outside that part, exactly as the function behaves.
The symmetric solvers (`assume_a='sym'`, `'pos'`, ...) read one triangle of a matrix
meant to be symmetric: there A's derivative is the symmetric one (what autograd and JAX
give), which is exact for symmetric perturbations.
"""
import numpy as np
import scipy.linalg as linalg

from srcad.errors import UnsupportedDerivativeError
from srcad.ops.registry import defjvp, defvjp, nondifferentiable


def _transpose(a):
    """The transpose of each matrix in a batch: the last two axes swapped."""
    return np.swapaxes(a, -1, -2)


def _outer(u, v):
    """u v^T for vectors, u @ v^T for matrices of columns."""
    if np.ndim(u) == 1:
        return u[:, np.newaxis] * v
    return u @ _transpose(v)


def _one_matrix(function: str, a, b, trans=0):
    if np.ndim(a) != 2 or np.ndim(b) not in (1, 2):
        raise UnsupportedDerivativeError(
            f"srcad differentiates `scipy.linalg.{function}` for one matrix and a vector or "
            f"matrix right-hand side, not a batch (a has shape {np.shape(a)}, b "
            f"{np.shape(b)}).", fix="loop over the batch, or stack the right-hand sides as "
            "the columns of one matrix.")
    if trans in (2, "C") and np.iscomplexobj(a):  # a solve with a^H is not holomorphic in a
        raise UnsupportedDerivativeError(
            f"srcad does not differentiate `scipy.linalg.{function}` with trans='C' for a "
            "complex matrix.", fix="conjugate the matrix yourself and pass trans='T'.")


# ---- solve_triangular ----------------------------------------------------------------------
def _triangle(m, lower, unit_diagonal):
    """The part of `m` a triangular solve reads: a triangle, without the diagonal when it is
    taken to be ones."""
    if lower:
        return np.tril(m, -1 if unit_diagonal else 0)
    return np.triu(m, 1 if unit_diagonal else 0)


def _is_transposed(trans) -> bool:
    """Whether `trans` solves with a^T ('C' is 'T' for the real matrices srcad allows it
    for)."""
    return trans in (1, 2, "T", "C")


def solve_triangular_vjp_a(g, ans, a, b, trans=0, lower=False, unit_diagonal=False,
                           overwrite_b=False, check_finite=True):
    _one_matrix("solve_triangular", a, b, trans)
    transposed = _is_transposed(trans)
    gb = linalg.solve_triangular(a, g, 0 if transposed else 1, lower, unit_diagonal)
    return -_triangle(_outer(ans, gb) if transposed else _outer(gb, ans), lower, unit_diagonal)


def solve_triangular_vjp_b(g, ans, a, b, trans=0, lower=False, unit_diagonal=False,
                           overwrite_b=False, check_finite=True):
    _one_matrix("solve_triangular", a, b, trans)
    return linalg.solve_triangular(a, g, 0 if _is_transposed(trans) else 1, lower,
                                   unit_diagonal)


def solve_triangular_jvp_a(g, ans, a, b, trans=0, lower=False, unit_diagonal=False,
                           overwrite_b=False, check_finite=True):
    """x = op(A)^-1 b: x' = -op(A)^-1 op(A') x, with A' restricted to what the solve reads."""
    _one_matrix("solve_triangular", a, b, trans)
    da = _triangle(g, lower, unit_diagonal)
    da = np.transpose(da) if _is_transposed(trans) else da
    return -linalg.solve_triangular(a, da @ ans, trans, lower, unit_diagonal)


defvjp(linalg.solve_triangular, solve_triangular_vjp_a, solve_triangular_vjp_b)
defjvp(linalg.solve_triangular, solve_triangular_jvp_a,
       lambda g, ans, a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False,
       check_finite=True: linalg.solve_triangular(a, g, trans, lower, unit_diagonal))


# ---- solve and inv -------------------------------------------------------------------------
_GENERAL = (None, "gen", "general", "banded")  # banded: the band is found from a's zeros
_SYMMETRIC = ("sym", "symmetric", "her", "hermitian", "pos", "positive definite")
_STRUCTURES = _GENERAL + _SYMMETRIC + ("diagonal", "tridiagonal", "upper triangular",
                                       "lower triangular")


def _check_structure(assume_a):
    if assume_a not in _STRUCTURES:
        raise UnsupportedDerivativeError(
            f"srcad does not differentiate scipy.linalg with assume_a={assume_a!r}.",
            fix=f"use one of {', '.join(repr(s) for s in _STRUCTURES if s)}, or leave it out.")


def _structured(m, assume_a):
    """A matrix derivative restricted to what a solver with `assume_a` reads (symmetrized
    for the symmetric solvers)."""
    _check_structure(assume_a)
    if assume_a in _GENERAL:
        return m
    if assume_a in _SYMMETRIC:
        return (m + _transpose(m)) / 2.0
    if assume_a == "diagonal":
        return np.tril(np.triu(m))
    if assume_a == "tridiagonal":
        return np.tril(np.triu(m, -1), 1)
    if assume_a == "upper triangular":
        return np.triu(m)
    return np.tril(m)  # "lower triangular"


_TRANSPOSED_STRUCTURE = {"upper triangular": "lower triangular",
                         "lower triangular": "upper triangular"}


def _solve_adjoint(a, g, lower, assume_a, transposed):
    """The cotangent of solve's `b`: the system with a transposed (a itself if the call
    solved with a^T). a^T is passed as such, as SciPy's transposed=True refuses complex
    values (a complex cotangent); it holds a's read triangle in the other one."""
    if transposed:
        return linalg.solve(a, g, lower=lower, assume_a=assume_a)
    return linalg.solve(_transpose(a), g, lower=not lower,
                        assume_a=_TRANSPOSED_STRUCTURE.get(assume_a, assume_a))


def solve_vjp_a(g, ans, a, b, lower=False, overwrite_a=False, overwrite_b=False,
                check_finite=True, assume_a=None, transposed=False):
    _one_matrix("solve", a, b)
    gb = _solve_adjoint(a, g, lower, assume_a, transposed)
    return -_structured(_outer(ans, gb) if transposed else _outer(gb, ans), assume_a)


def solve_vjp_b(g, ans, a, b, lower=False, overwrite_a=False, overwrite_b=False,
                check_finite=True, assume_a=None, transposed=False):
    _one_matrix("solve", a, b)
    return _solve_adjoint(a, g, lower, assume_a, transposed)


def solve_jvp_a(g, ans, a, b, lower=False, overwrite_a=False, overwrite_b=False,
                check_finite=True, assume_a=None, transposed=False):
    _one_matrix("solve", a, b)
    da = _structured(g, assume_a)
    da = np.transpose(da) if transposed else da
    return -linalg.solve(a, da @ ans, lower=lower, assume_a=assume_a, transposed=transposed)


def solve_jvp_b(g, ans, a, b, lower=False, overwrite_a=False, overwrite_b=False,
                check_finite=True, assume_a=None, transposed=False):
    _one_matrix("solve", a, b)
    return linalg.solve(a, g, lower=lower, assume_a=assume_a, transposed=transposed)


defvjp(linalg.solve, solve_vjp_a, solve_vjp_b)
defjvp(linalg.solve, solve_jvp_a, solve_jvp_b)

# X = A^-1: X' = -X A' X, so the cotangent is -X^T G X^T (batched over leading axes).
defvjp(linalg.inv, lambda g, ans, a, overwrite_a=False, check_finite=True, assume_a=None,
       lower=False: -_structured(_transpose(ans) @ g @ _transpose(ans), assume_a))
defjvp(linalg.inv, lambda g, ans, a, overwrite_a=False, check_finite=True, assume_a=None,
       lower=False: -(ans @ _structured(g, assume_a) @ ans))

# det(A)' = det(A) tr(A^-1 A'): the cotangent is g det(A) A^-T (batched).
defvjp(linalg.det, lambda g, ans, a, overwrite_a=False, check_finite=True:
       (g * ans)[..., np.newaxis, np.newaxis] * _transpose(linalg.inv(a)))
defjvp(linalg.det, lambda g, ans, a, overwrite_a=False, check_finite=True:
       ans * np.sum(_transpose(linalg.inv(a)) * g, axis=(-2, -1)))


# ---- matrix functions ----------------------------------------------------------------------
def _expm_frechet(a, e):
    """The Frechet derivative of expm at `a` in the direction `e` (batched): the upper right
    block of expm([[a, e], [0, a]]), so that it is differentiable again through expm."""
    n = np.shape(a)[-1]
    top = np.concatenate([a, e], axis=-1)
    bottom = np.concatenate([np.zeros_like(a), a], axis=-1)
    return linalg.expm(np.concatenate([top, bottom], axis=-2))[..., :n, n:]


# The adjoint of the Frechet derivative at A is the Frechet derivative at A^T.
defvjp(linalg.expm, lambda g, ans, A: _expm_frechet(_transpose(A), g))
defjvp(linalg.expm, lambda g, ans, A: _expm_frechet(A, g))


def _check_real_root(ans):
    if np.ndim(ans) != 2 or np.iscomplexobj(ans):
        raise UnsupportedDerivativeError(
            "srcad differentiates `scipy.linalg.sqrtm` for one matrix with a real square root "
            f"(the result has shape {np.shape(ans)} and dtype {np.result_type(ans)}).",
            fix="pass one matrix whose eigenvalues are positive (e.g. symmetric positive "
            "definite), or loop over a batch.")


def sqrtm_vjp(g, ans, A, disp=True, blocksize=64):
    """X X = A: X X' + X' X = A', a Sylvester equation in X'; its adjoint has X^T for X."""
    _check_real_root(ans)
    return linalg.solve_sylvester(np.transpose(ans), np.transpose(ans), g)


def sqrtm_jvp(g, ans, A, disp=True, blocksize=64):
    _check_real_root(ans)
    return linalg.solve_sylvester(ans, ans, g)


defvjp(linalg.sqrtm, sqrtm_vjp)
defjvp(linalg.sqrtm, sqrtm_jvp)

# A X + X B = Q: Q's cotangent solves the transposed equation; A's and B's follow from it.
defvjp(linalg.solve_sylvester,
       lambda g, ans, a, b, q:
       -linalg.solve_sylvester(np.transpose(a), np.transpose(b), g) @ np.transpose(ans),
       lambda g, ans, a, b, q:
       -np.transpose(ans) @ linalg.solve_sylvester(np.transpose(a), np.transpose(b), g),
       lambda g, ans, a, b, q: linalg.solve_sylvester(np.transpose(a), np.transpose(b), g))
defjvp(linalg.solve_sylvester,
       lambda g, ans, a, b, q: linalg.solve_sylvester(a, b, -(g @ ans)),
       lambda g, ans, a, b, q: linalg.solve_sylvester(a, b, -(ans @ g)),
       lambda g, ans, a, b, q: linalg.solve_sylvester(a, b, g))

nondifferentiable(linalg.bandwidth, linalg.issymmetric, linalg.ishermitian,
                  _one_matrix, _check_structure, _check_real_root)
