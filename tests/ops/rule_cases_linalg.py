"""Rule cases for `numpy.linalg`: square, stacked and rectangular matrices.

The matrices come from the domains below, well conditioned and with well separated eigen-
and singular values, so that finite differences agree with the rules in float32 too.
Eigenvectors and singular vectors are read through expressions that do not depend on their
signs (`v * v`, `np.abs(u)`, `u @ diag(s) @ vh`). `eigh`, `eigvalsh` and `cholesky` read one
triangle of their argument: some rows pass a symmetric matrix made in the function, others
a non-symmetric one, whose other triangle has a zero derivative.
"""
import numpy as np

from srcad.kernels.adjoints import field
from srcad.ops.numpy_linalg import lower_inverse, solve_transposed
from tests.ops.rule_table import DOMAINS, Case, binary


def _separated(rng, shape):
    """Matrices near diag(1.5, 3, 4.5, ...) (as far as the shape allows): invertible, with
    real eigenvalues and singular values well apart, not symmetric."""
    rows, columns = shape[-2:]
    return (np.eye(rows, columns) * 1.5 * np.arange(1, columns + 1)
            + 0.3 * rng.standard_normal(shape))


def _positive_definite(rng, shape):
    a = rng.standard_normal(shape)
    return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])


def _separated_complex(rng, shape):
    """`_separated` matrices plus an imaginary part: their Hermitian parts (what eigh reads)
    and singular values stay well apart."""
    return _separated(rng, shape) + 0.3j * rng.standard_normal(shape)


DOMAINS["separated"] = _separated
DOMAINS["separated_complex"] = _separated_complex
DOMAINS["spd"] = _positive_definite


def symmetric(a):
    return (a + np.swapaxes(a, -1, -2)) / 2


# ---- inverses, determinants, solves ---------------------------------------------------------
def sign_times_logdet(a):
    sign, logdet = np.linalg.slogdet(a)
    return sign * np.exp(logdet) + logdet


def slogdet_read_twice(a):
    result = np.linalg.slogdet(a)
    return result[1] * result[0] + result[1]


SQUARE = [
    (np.linalg.cond, lambda a: np.linalg.cond(a, -2)),
    (np.linalg.cond, lambda a: np.linalg.cond(a, 1)),
    (np.linalg.cond, lambda a: np.linalg.cond(a, "fro") * np.linalg.cond(a, -np.inf)),
    (np.linalg.inv, lambda a: np.linalg.inv(a)),
    (np.linalg.inv, lambda a: np.linalg.inv(a * a) - a),
    (np.linalg.det, lambda a: np.linalg.det(a)),
    (np.linalg.det, lambda a: np.linalg.det(a @ a) * a[..., 0, 0]),
    (np.linalg.slogdet, lambda a: np.linalg.slogdet(a)[1]),
    (np.linalg.slogdet, sign_times_logdet),
    (np.linalg.slogdet, slogdet_read_twice),
    (field, lambda a: np.linalg.slogdet(a).logabsdet),  # named tuples' fields, read by name
    (field, lambda a: np.linalg.eigh(symmetric(a)).eigenvalues ** 2),
    (np.linalg.matrix_power, lambda a: np.linalg.matrix_power(a, 3)),
    (np.linalg.matrix_power, lambda a: np.linalg.matrix_power(a, 1)),
    (np.linalg.matrix_power, lambda a: np.linalg.matrix_power(a, -2)),
    (np.linalg.matrix_power, lambda a: np.linalg.matrix_power(a, -1)),
    (np.linalg.matrix_power, lambda a: np.linalg.matrix_power(a, 0) * a),
]
SOLVE = [(np.linalg.solve, lambda a, b: np.linalg.solve(a, b), "separated", "real")]
SOLVE_SHAPES = [  # a 1-D b is one vector; otherwise b is a stack of matrices (NumPy 2)
    ((3, 3), (3,)), ((3, 3), (3, 2)), ((2, 3, 3), (3,)), ((2, 3, 3), (2, 3, 2)),
    ((3, 3), (2, 3, 2)), ((2, 3, 3), (3, 2)), ((1, 3, 3), (2, 3, 1)),
]


# ---- Cholesky and symmetric eigendecompositions ------------------------------------------------
def eigh_vectors(a):
    w, v = np.linalg.eigh(symmetric(a))
    return v * v * w[..., None, :]


def eigh_exponential(a):
    """exp of a symmetric matrix, V exp(w) Vᵀ: a function of both results."""
    w, v = np.linalg.eigh(symmetric(a))
    return v @ (np.exp(w)[..., :, None] * np.swapaxes(v, -1, -2))


def eigh_upper_triangle(a):
    w, v = np.linalg.eigh(a, UPLO="U")
    return np.abs(v) + w[..., None, :]


def eigh_lower_triangle(a):
    w, v = np.linalg.eigh(a)
    return np.abs(v) * w[..., None, :]


SEPARATED = [
    (np.linalg.cholesky,
     lambda a: np.linalg.cholesky(a @ np.swapaxes(a, -1, -2) + 3 * np.eye(3, dtype=a.dtype))),
    (np.linalg.eigh, lambda a: np.linalg.eigh(symmetric(a))[0]),
    (np.linalg.eigh, eigh_vectors),
    (np.linalg.eigh, eigh_exponential),
    (np.linalg.eigh, eigh_upper_triangle),
    (np.linalg.eigh, eigh_lower_triangle),
    (np.linalg.eigvalsh, lambda a: np.linalg.eigvalsh(symmetric(a))),
    (np.linalg.eigvalsh, lambda a: np.linalg.eigvalsh(a)),
    (np.linalg.eigvalsh, lambda a: np.linalg.eigvalsh(a, UPLO="U")),
]
POSITIVE_DEFINITE = [  # symmetric arguments, differentiated in every element
    (np.linalg.cholesky, lambda a: np.linalg.cholesky(a)),
    (np.linalg.cholesky, lambda a: np.linalg.cholesky(a, upper=True)),
    (np.linalg.eigvalsh, lambda a: np.log(np.linalg.eigvalsh(a))),
    (np.linalg.det, lambda a: np.log(np.linalg.det(a))),
]


# ---- general eigendecomposition (real eigenvalues) ----------------------------------------------
def eig_vectors(a):
    w, v = np.linalg.eig(a)
    return v * v * w[..., None, :]


def eig_values_and_vectors(a):
    w, v = np.linalg.eig(a)
    return np.abs(v) + w[..., None, :] ** 2


EIG = [
    (np.linalg.eig, lambda a: np.linalg.eig(a)[0]),
    (np.linalg.eig, eig_vectors),
    (np.linalg.eig, eig_values_and_vectors),
]


# ---- singular value decomposition, pseudo-inverse ----------------------------------------------
def svd_thin(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return np.abs(u) @ (s[..., :, None] * np.abs(vh))


def svd_full_leading(a):
    """With full_matrices=True, the vectors of the singular values (not the completion)."""
    u, s, vh = np.linalg.svd(a)
    k = s.shape[-1]
    return np.abs(u[..., :k]) @ (s[..., :, None] * np.abs(vh[..., :k, :]))


def svd_reconstruction(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return (u * np.sqrt(s)[..., None, :]) @ vh


def svd_hermitian(a):
    u, s, vh = np.linalg.svd(a, hermitian=True)
    return np.abs(u) @ (s[..., :, None] * np.abs(vh))


ANY_SHAPE = [
    (np.linalg.cond, lambda a: np.linalg.cond(a)),
    (np.linalg.svd, lambda a: np.linalg.svd(a)[1]),
    (np.linalg.svd, lambda a: np.linalg.svd(a, compute_uv=False)),
    (np.linalg.svd, svd_thin),
    (np.linalg.svd, svd_full_leading),
    (np.linalg.svd, svd_reconstruction),
    (np.linalg.pinv, lambda a: np.linalg.pinv(a)),
    (np.linalg.pinv, lambda a: np.linalg.pinv(a, rcond=1e-10)),
]
HERMITIAN = [  # square only; the lower triangle is read
    (np.linalg.svd, svd_hermitian),
    (np.linalg.svd, lambda a: np.linalg.svd(a, compute_uv=False, hermitian=True)),
    (np.linalg.pinv, lambda a: np.linalg.pinv(a, hermitian=True)),
]


# ---- complex matrices: Hermitian eigendecompositions, svd ------------------------------------
def eigh_complex_vectors(a):
    """|v| does not depend on the phase LAPACK picks for each vector."""
    w, v = np.linalg.eigh(a)
    return np.abs(v) * w[..., None, :]


def eigh_complex_phases(a):
    """Reads the vectors' phases, which LAPACK fixes by keeping the last row real ("U")."""
    w, v = np.linalg.eigh(a, "U")
    return np.real(v[..., 0, :]) + np.imag(v[..., 1, :]) * w


def svd_complex_phases(a):
    """Reads the vectors' phases, which LAPACK fixes by keeping V's (a wide matrix: U's)
    first row real."""
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return np.sum(np.imag(u), axis=-2) * s + np.real(vh[..., :, 1])


COMPLEX_SQUARE = [
    (np.linalg.cond, lambda a: np.linalg.cond(a) + np.linalg.cond(a, "nuc")),
    (np.linalg.eigh, lambda a: np.linalg.eigh(a)[0]),
    (np.linalg.eigh, eigh_complex_vectors),
    (np.linalg.eigh, eigh_complex_phases),
    (np.linalg.eigvalsh, lambda a: np.linalg.eigvalsh(a, UPLO="U")),
    (np.linalg.svd, svd_hermitian),
]
COMPLEX_ANY_SHAPE = [
    (np.linalg.cond, lambda a: np.linalg.cond(a)),
    (np.linalg.svd, lambda a: np.linalg.svd(a)[1]),
    (np.linalg.svd, lambda a: np.linalg.svd(a, compute_uv=False) * 1j),
    (np.linalg.svd, svd_thin),
    (np.linalg.svd, svd_full_leading),
    (np.linalg.svd, svd_reconstruction),
    (np.linalg.svd, svd_complex_phases),
]


# ---- norms ---------------------------------------------------------------------------------------
ON_VECTOR = [  # x of shape (5,), no zeros
    (np.linalg.norm, lambda x: np.linalg.norm(x)),
    (np.linalg.norm, lambda x: np.linalg.norm(x, 2)),
    (np.linalg.norm, lambda x: np.linalg.norm(x, 1)),
    (np.linalg.norm, lambda x: np.linalg.norm(x, np.inf)),
    (np.linalg.norm, lambda x: np.linalg.norm(x, -np.inf)),
    (np.linalg.norm, lambda x: np.linalg.norm(x, 3)),
    (np.linalg.norm, lambda x: np.linalg.norm(x, ord=0.5)),
    (np.linalg.norm, lambda x: np.linalg.norm(x, ord=-1.5)),
    (np.linalg.norm, lambda x: np.linalg.norm(x, keepdims=True)),
    (np.linalg.norm, lambda x: np.linalg.norm(x, 1, axis=0, keepdims=True)),
]
ON_MATRIX = [  # x of shape (3, 4), no zeros
    (np.linalg.norm, lambda x: np.linalg.norm(x)),
    (np.linalg.norm, lambda x: np.linalg.norm(x, "fro")),
    (np.linalg.norm, lambda x: np.linalg.norm(x, "nuc")),
    (np.linalg.norm, lambda x: np.linalg.norm(x, 1)),
    (np.linalg.norm, lambda x: np.linalg.norm(x, -1)),
    (np.linalg.norm, lambda x: np.linalg.norm(x, 2)),
    (np.linalg.norm, lambda x: np.linalg.norm(x, -2)),
    (np.linalg.norm, lambda x: np.linalg.norm(x, np.inf)),
    (np.linalg.norm, lambda x: np.linalg.norm(x, -np.inf)),
    (np.linalg.norm, lambda x: np.linalg.norm(x, axis=1)),
    (np.linalg.norm, lambda x: np.linalg.norm(x, np.inf, axis=0)),
    (np.linalg.norm, lambda x: np.linalg.norm(x, 2, axis=(1, 0), keepdims=True)),
]
ON_CUBE = [  # x of shape (2, 3, 4), no zeros
    (np.linalg.norm, lambda x: np.linalg.norm(x)),
    (np.linalg.norm, lambda x: np.linalg.norm(x, keepdims=True)),
    (np.linalg.norm, lambda x: np.linalg.norm(x, axis=1)),
    (np.linalg.norm, lambda x: np.linalg.norm(x, 3, axis=-1, keepdims=True)),
    (np.linalg.norm, lambda x: np.linalg.norm(x, -np.inf, axis=0)),
    (np.linalg.norm, lambda x: np.linalg.norm(x, axis=(2, 0))),
    (np.linalg.norm, lambda x: np.linalg.norm(x, "fro", axis=(-1, -2), keepdims=True)),
    (np.linalg.norm, lambda x: np.linalg.norm(x, "nuc", axis=(1, 2))),
    (np.linalg.norm, lambda x: np.linalg.norm(x, 2, axis=(2, 0), keepdims=True)),
    (np.linalg.norm, lambda x: np.linalg.norm(x, -2, axis=(-2, -1))),
    (np.linalg.norm, lambda x: np.linalg.norm(x, 1, axis=(0, 2))),
    (np.linalg.norm, lambda x: np.linalg.norm(x, -1, axis=(2, 1), keepdims=True)),
    (np.linalg.norm, lambda x: np.linalg.norm(x, np.inf, axis=(1, 2))),
    (np.linalg.norm, lambda x: np.linalg.norm(x, -np.inf, axis=(2, 0))),
    (np.linalg.vector_norm, lambda x: np.linalg.vector_norm(x)),
    (np.linalg.vector_norm, lambda x: np.linalg.vector_norm(x, axis=(0, 2), ord=3)),
    (np.linalg.vector_norm, lambda x: np.linalg.vector_norm(x, axis=-1, keepdims=True, ord=1)),
    (np.linalg.vector_norm, lambda x: np.linalg.vector_norm(x, axis=1, ord=np.inf)),
    (np.linalg.vector_norm, lambda x: np.linalg.vector_norm(x, keepdims=True, ord=-1.5)),
    (np.linalg.matrix_norm, lambda x: np.linalg.matrix_norm(x)),
    (np.linalg.matrix_norm, lambda x: np.linalg.matrix_norm(x, ord="nuc", keepdims=True)),
    (np.linalg.matrix_norm, lambda x: np.linalg.matrix_norm(x, ord=2)),
    (np.linalg.matrix_norm, lambda x: np.linalg.matrix_norm(x, ord=-np.inf)),
]


# ---- chained products ----------------------------------------------------------------------------
MULTI_DOT = [  # (primal, fn, shape pairs)
    (np.linalg.multi_dot, lambda a, b: np.linalg.multi_dot([a, b, b.T]), [((3, 4), (4, 2))]),
    (np.linalg.multi_dot, lambda a, b: np.linalg.multi_dot([a, b, b.T, a.T]),
     [((3, 4), (4, 2))]),
    (np.linalg.multi_dot, lambda a, b: np.linalg.multi_dot([b, a, a, b]), [((3, 3), (3,))]),
    (np.linalg.multi_dot, lambda a, b: np.linalg.multi_dot([b, a, a.T]), [((3, 4), (3,))]),
    (np.linalg.multi_dot, lambda a, b: np.linalg.multi_dot((a, a.T, b)), [((3, 4), (3,))]),
]


# ---- srcad's own triangular helpers: a Cholesky factor's inverse, A⁻ᵀ B in the solve rules ----
def lower_triangle_inverse(a):
    """Reads the lower triangle only: the upper one's derivative is zero."""
    return lower_inverse(a + 3.0 * np.eye(3))


def lower_transposed_solve(a, b):
    """Exact zeros above the diagonal: LAPACK's triangular solve, where SciPy is installed."""
    return solve_transposed(np.tril(a) + 3.0 * np.eye(3), b)


def upper_transposed_solve(a, b):
    return solve_transposed(np.triu(a) + 3.0 * np.eye(3), b)


def fortran_ordered_transposed_solve(a, b):
    """The transpose of a C-ordered lower triangle: an upper one in LAPACK's own order."""
    return solve_transposed(np.swapaxes(np.tril(a) + 3.0 * np.eye(3), -1, -2), b)


TRIANGULAR = [(solve_transposed, fn, "separated", "real") for fn in (
    lower_transposed_solve, upper_transposed_solve, fortran_ordered_transposed_solve,
    lambda a, b: solve_transposed(a, b))]
TRIANGULAR_SHAPES = [((3, 3), (3, 2)), ((3, 3), (3, 1)), ((2, 3, 3), (3, 2)),
                     ((3, 3), (2, 3, 2))]  # (stacks are solved by NumPy)


def _rows(domain, shape, rows):
    return [Case(primal, fn, ((domain, shape),)) for primal, fn in rows]


CASES = (
    _rows("separated", (3, 3), SQUARE + SEPARATED + EIG + ANY_SHAPE + HERMITIAN)
    + _rows("separated", (2, 3, 3), SQUARE + SEPARATED + EIG + ANY_SHAPE + HERMITIAN)
    + _rows("spd", (3, 3), POSITIVE_DEFINITE) + _rows("spd", (2, 3, 3), POSITIVE_DEFINITE)
    + _rows("separated", (4, 3), ANY_SHAPE) + _rows("separated", (3, 4), ANY_SHAPE)
    + _rows("separated", (2, 4, 3), ANY_SHAPE)
    + binary(SOLVE, SOLVE_SHAPES) + binary(TRIANGULAR, TRIANGULAR_SHAPES)
    + _rows("real", (3, 3), [(lower_inverse, lower_triangle_inverse)])
    + _rows("real", (2, 3, 3), [(lower_inverse, lower_triangle_inverse)])
    + _rows("nonzero", (5,), ON_VECTOR) + _rows("nonzero", (3, 4), ON_MATRIX)
    + _rows("nonzero", (2, 3, 4), ON_CUBE)
    + _rows("separated_complex", (3, 3), COMPLEX_SQUARE + COMPLEX_ANY_SHAPE)
    + _rows("separated_complex", (2, 3, 3), COMPLEX_SQUARE)
    + _rows("separated_complex", (4, 3), COMPLEX_ANY_SHAPE)
    + _rows("separated_complex", (2, 3, 4), COMPLEX_ANY_SHAPE)
    + _rows("complex_nonzero", (5,), ON_VECTOR) + _rows("complex_nonzero", (3, 4), ON_MATRIX)
    + _rows("complex_nonzero", (2, 3, 4), ON_CUBE)
    + [case for primal, fn, pairs in MULTI_DOT
       for case in binary([(primal, fn, "real", "real")], pairs)]
)
