"""numpy.linalg beyond the rule table (tests/ops/rule_cases_linalg.py): functions with several
results in tape mode and read more than once in source mode, second derivatives through the
rules in every mode, the derivatives srcad refuses, and autograd as an independent oracle."""
import itertools
import types

import numpy as np
import pytest

import srcad
from srcad.errors import UnsupportedDerivativeError
from srcad.api.testing import numerical_gradient

_R = np.random.default_rng(7)
SQUARE = np.diag([1.5, 3.0, 4.5]) + 0.3 * _R.standard_normal((3, 3))
TALL = np.eye(4, 3) * [1.5, 3.0, 4.5] + 0.3 * _R.standard_normal((4, 3))


def symmetric(a):
    return (a + a.T) / 2


# ---- several results: each mode hands the rule the cotangents of the ones that were read ----
def logdet_only(a):
    sign, logdet = np.linalg.slogdet(a)
    return logdet * 2.0


def eigenvalues_only(a):
    w, v = np.linalg.eigh(symmetric(a))
    return np.sum(w ** 2)


def eigenvectors_only(a):
    w, v = np.linalg.eigh(symmetric(a))
    return np.sum(v ** 4)


def singular_values_and_vectors(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return np.sum(s ** 3) + np.sum(u ** 4) + np.sum(vh[0] ** 4)


def real_eigenvalues(a):
    # np.real: NumPy 2.5 returns complex eigenvalues even where they are real
    return np.sum(np.real(np.linalg.eig(a)[0]) ** 3)


ROTATING = np.array([[0.3, -2.0, 0.1], [1.5, 0.2, 0.4], [0.1, 0.3, 1.0]])  # λ = 0.25 ± 1.7i, 1.0


def complex_eigenvalues(a):
    w = np.linalg.eig(a)[0]
    return np.sum(np.real(w) ** 2 * np.imag(w))


def complex_eigenvectors(a):
    """A function of the vectors' phase (LAPACK makes each one's largest component real);
    squares, since the sign of that component is LAPACK's free choice."""
    v = np.linalg.eig(a)[1]
    return np.sum(np.real(v) ** 2 * np.arange(3.0)) + np.sum(np.imag(v[1]) ** 2)


def read_twice(a):
    result = np.linalg.slogdet(a)
    return result[1] * result[0] + result[1]


def pieces_multiplied(a):
    pieces = np.split(a, 2)
    return np.sum(pieces[0] * pieces[1])


def slopes_multiplied(a):
    slopes = np.gradient(a)
    return np.sum(slopes[0] * slopes[1])


SEVERAL_RESULTS = [
    (logdet_only, SQUARE), (eigenvalues_only, SQUARE), (eigenvectors_only, SQUARE),
    (singular_values_and_vectors, TALL), (real_eigenvalues, SQUARE), (read_twice, SQUARE),
    (pieces_multiplied, np.arange(1.0, 7.0)), (slopes_multiplied, TALL),
    (complex_eigenvalues, ROTATING), (complex_eigenvectors, ROTATING),
]


@pytest.mark.parametrize("fn, x", SEVERAL_RESULTS, ids=[fn.__name__ for fn, _ in SEVERAL_RESULTS])
@pytest.mark.parametrize("mode", ["source", "tape"])
def test_several_results_match_finite_differences(fn, x, mode):
    """Tape mode records NumPy's named tuples (slogdet, eigh, svd) like tuples; source mode
    adds the cotangents of two reads of one result element by element."""
    gradient = (srcad.grad if mode == "source" else srcad.tape.grad)(fn)(x)
    np.testing.assert_allclose(np.asarray(gradient), numerical_gradient(fn, (x,), 0),
                               rtol=1e-6, atol=1e-6)


# ---- second derivatives: the rules are differentiated again -----------------------------------
def inverse_and_solve(a):
    return np.sum(np.linalg.inv(a) ** 2) + np.sum(np.linalg.solve(a, np.cos(a[0])) ** 2)


def determinants(a):
    return np.linalg.det(a) + np.linalg.slogdet(a)[1] ** 2


def cholesky_factor(a):
    return np.sum(np.linalg.cholesky(a @ a.T + 3.0 * np.eye(3), upper=True) ** 3)


def eigen(a):
    w, v = np.linalg.eigh(symmetric(a))
    return np.sum(w ** 3) + np.sum(v ** 4) + np.sum(np.linalg.eigvalsh(a) ** 3)


def general_eigen(a):
    w, v = np.linalg.eig(a)
    return np.sum(np.real(w) ** 3) + np.sum(np.real(v) ** 4)


def rotating_eigen(a):
    w, v = np.linalg.eig(a)
    return np.sum(np.imag(w) ** 3) + np.sum(np.abs(v) ** 4) + np.sum(np.real(v) ** 2)


def singular(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return np.sum(s ** 3) + np.sum(u ** 4) + np.sum(vh ** 4)


def pseudo_inverse(a):
    return np.sum(np.linalg.pinv(a) ** 2)


def norms(a):
    return (np.linalg.norm(a, 2) ** 2 + np.linalg.norm(a, "nuc") ** 2 + np.linalg.norm(a) ** 3
            + np.sum(np.linalg.norm(a, 3, axis=0) ** 2) + np.linalg.norm(a, 1) ** 2
            + np.linalg.cond(a) ** 2)


def complex_eigen(a):
    w, v = np.linalg.eigh(a)
    return np.sum(w ** 3) + np.sum(np.abs(v) ** 3) + np.sum(np.real(v[0]) * w)


def complex_singular(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return (np.sum(s ** 3) + np.sum(np.abs(u) ** 3) + np.sum(np.abs(vh) ** 3)
            + np.sum(np.imag(u[1]) * s))


def complex_norms(a):
    return (np.linalg.norm(a, 2) ** 2 + np.linalg.norm(a, "nuc") ** 2 + np.linalg.norm(a) ** 3
            + np.sum(np.linalg.norm(a, 3, axis=0) ** 2) + np.linalg.norm(a, -np.inf) ** 2)


def products(a):
    return (np.sum(np.linalg.matrix_power(a, 3)) + np.sum(np.linalg.matrix_power(a, -2))
            + np.linalg.cond(a, 1) ** 2
            + np.sum(np.linalg.multi_dot([a, a.T, a]) ** 2))


SECOND_ORDER = [
    (inverse_and_solve, SQUARE), (determinants, SQUARE), (cholesky_factor, SQUARE),
    (eigen, SQUARE), (general_eigen, SQUARE), (rotating_eigen, ROTATING), (singular, TALL),
    (pseudo_inverse, TALL),
    (norms, TALL), (products, SQUARE), (complex_eigen, SQUARE + 0.4j * _R.standard_normal((3, 3))),
    (complex_singular, TALL + 0.4j * _R.standard_normal((4, 3))),
    (complex_singular, TALL.T + 0.4j * _R.standard_normal((3, 4))),
    (complex_norms, TALL + 0.4j * _R.standard_normal((4, 3))),
]


def _hessian_times(fn, x, direction, h=1e-5):
    """The Hessian of `fn` applied to `direction`, by central differences of srcad's gradient."""
    gradient = srcad.grad(fn)
    return (gradient(x + h * direction) - gradient(x - h * direction)) / (2 * h)


def _tape_over_tape(fn, x, direction):
    x = srcad.Variable(x)
    with srcad.GradientTape() as outer:
        with srcad.GradientTape() as inner:
            y = fn(x)
        along = np.real(np.sum(inner.gradient(y, x) * direction))
    return outer.gradient(along, x).numpy()


SECOND_ORDER_MODES = [(fn, x, mode) for fn, x in SECOND_ORDER
                      for mode in ["hvp", "reverse over reverse", "tape over tape"]
                      if not (mode == "hvp" and np.iscomplexobj(x))]  # hvp is real-only


@pytest.mark.parametrize("fn, x, mode", SECOND_ORDER_MODES,
                         ids=[f"{mode}-{fn.__name__}" for fn, _, mode in SECOND_ORDER_MODES])
def test_second_derivatives(fn, x, mode):
    """For a complex x, Re Σ grad(x) d is differentiated: its gradient is the Hessian applied
    to d, as a real-linear map, in srcad's convention for complex cotangents."""
    rng = np.random.default_rng(1)
    direction = rng.standard_normal(x.shape)
    if np.iscomplexobj(x):
        direction = direction + 1j * rng.standard_normal(x.shape)
    if mode == "hvp":  # reverse mode over the tangent program, where JVP rules are inlined
        got = srcad.hvp(fn)(x, direction)
    elif mode == "reverse over reverse":
        gradient = srcad.grad(fn)
        got = srcad.grad(lambda y: np.real(np.sum(gradient(y) * direction)))(x)
    else:
        got = _tape_over_tape(fn, x, direction)
    np.testing.assert_allclose(got, _hessian_times(fn, x, direction), rtol=1e-6, atol=1e-7)


# ---- refusals: no number where the derivative does not exist ----------------------------------
def eigenvectors_at_identity(a):
    w, v = np.linalg.eigh(a + np.eye(3))
    return np.sum(v ** 4)


def eigenvalues_at_identity(a):
    w, v = np.linalg.eigh(a + np.eye(3))
    return np.sum(w ** 2)


def completed_basis(a):
    u, s, vh = np.linalg.svd(a)
    return np.sum(u ** 4)


def rank_deficient_vectors(a):
    u, s, vh = np.linalg.svd(np.outer(a[:, 0], a[0]), full_matrices=False)
    return np.sum(u ** 4)


def rank_deficient_pseudo_inverse(a):
    return np.sum(np.linalg.pinv(np.outer(a[:, 0], a[0])))


def count_nonzero(a):
    return np.linalg.norm(a[0], 0)


def phase_of_a_rotation(a):
    """[[0, -t], [t, 0]] has eigenvectors (1, ∓i)/√2: both components equally large, so
    which one LAPACK makes real, and so the phase, flips under perturbation."""
    rotation = np.array([[0.0, -1.0], [1.0, 0.0]])
    return np.sum(np.real(np.linalg.eig(rotation * a[0, 0])[1]) * np.arange(1.0, 3.0)[:, None])


BLOCKS = np.array([[2.0, 0.5 + 0.5j, 0.0], [0.3 - 0.2j, 1.0, 0.0], [0.0, 0.0, 3.0 + 1.0j]])


def phases_of_blocks(a):
    """A block-diagonal matrix's vector (0, 0, 1) has a zero where LAPACK's real row is:
    nothing fixes its phase, which this loss reads."""
    u, s, vh = np.linalg.svd(a + BLOCKS)
    return np.sum(np.imag(u))


def hermitian_phases_of_blocks(a):
    w, v = np.linalg.eigh(a + BLOCKS)
    return np.sum(np.imag(v))


REFUSED = [
    (phases_of_blocks, np.zeros((3, 3)), "phases"),
    (hermitian_phases_of_blocks, np.zeros((3, 3)), "phases"),
    (eigenvectors_at_identity, np.zeros((3, 3)), "equal"),
    (completed_basis, TALL, "full_matrices"),
    (rank_deficient_vectors, SQUARE, "equal"),
    (rank_deficient_pseudo_inverse, SQUARE, "rank deficient"),
    (count_nonzero, SQUARE, "ord=0"),
    (phase_of_a_rotation, SQUARE, "phase"),
]


@pytest.mark.parametrize("fn, x, words", REFUSED, ids=[fn.__name__ for fn, *_ in REFUSED])
@pytest.mark.parametrize("mode", ["source", "tape"])
def test_undefined_derivatives_are_refused(fn, x, words, mode):
    with pytest.raises(UnsupportedDerivativeError, match=words):
        (srcad.grad if mode == "source" else srcad.tape.grad)(fn)(x)


def test_eigenvalues_at_repeated_values_keep_their_derivative():
    """Only the vectors of equal eigenvalues lack a derivative; the values have one."""
    gradient = srcad.grad(eigenvalues_at_identity)(np.zeros((3, 3)))
    np.testing.assert_allclose(gradient, 2 * np.eye(3))


def test_forward_mode_gives_nan_for_vectors_without_a_derivative():
    """A JVP cannot tell whether the vectors will be used: their tangent is nan, never a
    made-up number, and the values' tangent stays exact."""
    _, tangent = srcad.jvp(eigenvectors_at_identity, (np.zeros((3, 3)),), (np.ones((3, 3)),))
    assert np.isnan(tangent)
    _, tangent = srcad.jvp(eigenvalues_at_identity, (np.zeros((3, 3)),), (np.eye(3),))
    assert tangent == pytest.approx(6.0)
    _, tangent = srcad.jvp(phase_of_a_rotation, (SQUARE,), (np.ones((3, 3)),))
    assert np.isnan(tangent)


def sizes_of_blocks(a):
    u, s, vh = np.linalg.svd(a + BLOCKS)
    w, v = np.linalg.eigh(a + BLOCKS)
    return (np.sum(np.abs(u) ** 2 * np.arange(3.0)) + np.sum(np.abs(vh) ** 3)
            + np.sum(np.abs(v) ** 3))


def test_complex_vectors_without_a_fixed_phase_give_what_does_not_read_it():
    """Where no entry fixes a complex vector's phase, a loss that ignores the phase still has
    its derivative, in both modes (the tangent keeps the phase still)."""
    x = np.zeros((3, 3), complex)
    direction = np.arange(9.0).reshape(3, 3) * (1 - 0.5j) / 9
    expected = (sizes_of_blocks(x + 1e-6 * direction)
                - sizes_of_blocks(x - 1e-6 * direction)) / 2e-6
    gradient = srcad.grad(sizes_of_blocks)(x)
    assert np.real(np.sum(gradient * direction)) == pytest.approx(expected, rel=1e-6)
    assert srcad.jvp(sizes_of_blocks, (x,), (direction,))[1] == pytest.approx(expected, rel=1e-6)


def sizes_where_the_phase_jumps(a):
    """|v| ignores the phase, but nothing can tell that from its cotangent."""
    rotation = np.array([[0.0, -1.0], [1.0, 0.0]]) + np.diag([0.0, 2.0]) * a[0, 1]
    return np.sum(np.abs(np.linalg.eig(rotation * a[0, 0])[1]) ** 4 * np.arange(2.0)[:, None])


def defective(a):
    """[[1, 1], [0, 1]] has one eigenvector for its double eigenvalue."""
    jordan = np.array([[1.0, 1.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 3.0]])
    return np.sum(np.real(np.linalg.eig(jordan + 0.0 * a)[0]) ** 3)


CIRCULANT = np.array([[1.0, 2.0, 0.5], [0.5, 1.0, 2.0], [2.0, 0.5, 1.0]])  # |v_ij| all equal


@pytest.mark.parametrize("fn, x, words", [
    (sizes_where_the_phase_jumps, np.array([[1.3, 0.0], [0.0, 0.0]]), "phase"),
    (defective, np.zeros((3, 3)), "defective")], ids=["phase", "defective"])
@pytest.mark.parametrize("mode", ["source", "tape"])
def test_eig_refuses_where_it_has_no_derivative(fn, x, words, mode):
    with pytest.raises(UnsupportedDerivativeError, match=words):
        (srcad.grad if mode == "source" else srcad.tape.grad)(fn)(x)
    _, tangent = srcad.jvp(fn, (x,), (np.ones_like(x),))
    assert np.isnan(tangent)


@pytest.mark.parametrize("mode", ["source", "tape"])
def test_a_loss_that_reads_no_vector_is_not_refused_where_the_phase_jumps(mode):
    """v @ diag(w) @ inv(v) is the matrix itself: the vectors' cotangent cancels to
    rounding, which is no reason to refuse."""
    def rebuilt(a):
        w, v = np.linalg.eig(a)
        return np.sum(np.real(v @ np.diag(w) @ np.linalg.inv(v)) ** 2)

    gradient = (srcad.grad if mode == "source" else srcad.tape.grad)(rebuilt)(CIRCULANT)
    np.testing.assert_allclose(gradient, 2 * CIRCULANT, atol=1e-8)


# ---- an independent oracle -----------------------------------------------------------------------
def linear_algebra_composite(a, b):
    s = symmetric(a) @ symmetric(a) + 3.0 * np.eye(3)
    w, v = np.linalg.eigh(s)
    u, sv, vh = np.linalg.svd(b, full_matrices=False)
    c = np.linalg.cholesky(s)
    return (np.linalg.slogdet(s)[1] + np.sum(np.linalg.solve(s, b) ** 2) + np.sum(w ** 1.5)
            + np.sum(np.linalg.inv(s) * c) + np.linalg.det(a) + np.sum(sv ** 2 * u[0] ** 2)
            + np.linalg.norm(b) + np.linalg.norm(a, axis=0)[1] + np.sum(np.linalg.pinv(b) ** 2))


def test_composite_matches_autograd():
    autograd = pytest.importorskip("autograd")
    import autograd.numpy as anp
    fn = linear_algebra_composite
    twin = types.FunctionType(fn.__code__, dict(fn.__globals__, np=anp), fn.__name__)
    args = (SQUARE, _R.standard_normal((3, 2)))
    gradients = srcad.grad(fn, wrt=(0, 1))(*args)
    for position, gradient in enumerate(gradients):
        np.testing.assert_allclose(gradient, autograd.grad(twin, position)(*args),
                                   rtol=1e-9, atol=1e-11)


# ---- the triangular shortcuts of the solve and Cholesky rules --------------------------------
def _lower_factor(n=40, dtype=np.float64, rng=_R):
    a = rng.standard_normal((n, n))
    return np.linalg.cholesky(a @ a.T + n * np.eye(n)).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("make", [lambda l: l, lambda l: l.T, lambda l: np.ascontiguousarray(l.T),
                                  lambda l: np.asfortranarray(l)],
                         ids=["lower", "upper in Fortran order", "upper", "lower in Fortran order"])
def test_solves_with_a_triangle_are_numpys(make, dtype):
    """Against float64's solve, within the precision of `dtype` relative to the solution's
    scale (an element near zero has no relative accuracy in float32), on data of its own
    (not what the tests before it left of the shared generator)."""
    from srcad.ops.numpy_linalg import solve_transposed
    rng = np.random.default_rng(11)
    a = make(_lower_factor(dtype=dtype, rng=rng))
    b = rng.standard_normal((40, 3)).astype(dtype)
    expected = np.linalg.solve(a.T.astype(np.float64), b.astype(np.float64))
    tolerance = 1e-4 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(solve_transposed(a, b), expected, rtol=tolerance,
                               atol=tolerance * np.abs(expected).max())


@pytest.mark.parametrize("where", [(0, 5), (12, 30), (38, 39)])
def test_a_matrix_nonzero_anywhere_outside_one_triangle_is_solved_as_a_general_one(where):
    """A triangular solve reads one triangle: a single element outside it, the corner kept
    zero, must send the matrix to the general solver."""
    from srcad.ops.numpy_linalg import solve_transposed, triangle_of
    b = _R.standard_normal((40, 1))
    lower, upper = _lower_factor(), _lower_factor().T.copy()
    lower[where], upper[where[::-1]] = 0.7, 0.7
    for a in (lower, upper):
        assert a[0, -1] == 0 or a[-1, 0] == 0
        assert triangle_of(a) is None
        np.testing.assert_allclose(solve_transposed(a, b), np.linalg.solve(a.T, b), rtol=1e-12)


def test_the_inverse_of_a_lower_triangle_ignores_the_other_one_and_refuses_a_singular_one():
    from srcad.ops.numpy_linalg import lower_inverse
    l = _lower_factor()
    filled = l + np.triu(_R.standard_normal(l.shape), 1)
    np.testing.assert_allclose(lower_inverse(filled), np.linalg.inv(l), rtol=1e-12, atol=1e-15)
    l[3, 3] = 0.0
    with pytest.raises(np.linalg.LinAlgError):
        lower_inverse(l)


@pytest.mark.parametrize("order", ["C", "F"])
def test_a_nan_or_inf_outside_the_triangle_is_not_zero_and_is_masked_exactly(order):
    """The triangle checks read a matrix in its own memory order; the halved triangles
    zero the other one in place, where inf * 0 would have left nan."""
    from srcad.ops.numpy_linalg import halved_triangle, triangle_of
    lower = np.asarray(_lower_factor(6), order=order)
    assert triangle_of(lower) == "lower" and triangle_of(lower.T) == "upper"
    for bad in (np.nan, np.inf):
        filled = lower.copy(order=order)
        filled[1, 4] = bad
        assert triangle_of(filled) is None and triangle_of(filled.T) is None
        for x, keep in ((filled, True), (filled.T, False), (np.stack([filled, -filled]), True)):
            mask = np.tri(6, dtype=bool) if keep else np.tri(6, dtype=bool).T
            with np.errstate(invalid="ignore"):  # (inf * 0 outside the triangle: masked)
                expected = np.where(mask, x * np.where(np.eye(6, dtype=bool), 0.5, 1.0), 0)
                np.testing.assert_array_equal(halved_triangle(x, keep), expected)


def test_the_inverse_of_a_lower_triangle_in_fortran_order_is_numpys():
    from srcad.ops.numpy_linalg import lower_inverse
    l = _lower_factor()
    filled = np.asfortranarray(l + np.triu(_R.standard_normal(l.shape), 1))
    np.testing.assert_allclose(lower_inverse(filled), np.linalg.inv(l), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("scipy", [True, False], ids=["trmm", "without scipy"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_products_with_a_triangle_are_numpys_in_every_order(scipy, dtype, monkeypatch):
    """trmm sees Fortran order: C-ordered operands are passed transposed, which flips the
    triangle, the side and the transposition."""
    from srcad.ops import numpy_linalg
    if not scipy:
        monkeypatch.setattr(numpy_linalg, "_blas_and_lapack", lambda: None)
    lower = _lower_factor(7, dtype)
    general = _R.standard_normal((7, 7)).astype(dtype)
    tolerance = {"rtol": 1e-5 if dtype == np.float32 else 1e-12, "atol": 1e-5}
    for t_order, x_order, is_lower, left, transposed in itertools.product(
            "CF", "CF", (True, False), (True, False), (True, False)):
        t = np.asarray(lower if is_lower else lower.T, order=t_order)
        x = np.asarray(general, order=x_order)
        op = t.T if transposed else t
        product = numpy_linalg.triangular_product(t, x, is_lower, left, transposed)
        np.testing.assert_allclose(product, op @ x if left else x @ op, **tolerance)
    stack, vector = np.stack([lower, 2 * lower]), general[0]
    np.testing.assert_allclose(numpy_linalg.triangular_product(stack, general, True),
                               stack @ general, **tolerance)
    np.testing.assert_allclose(numpy_linalg.triangular_product(lower, vector, True, False),
                               vector @ lower, **tolerance)


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("order", ["C", "F"])
def test_cholesky_adjoint_through_trmm_matches_finite_differences(upper, order):
    """A 12 x 12 factor in either memory order and triangle, through the BLAS products."""
    a = _R.standard_normal((12, 12))
    weights = _R.standard_normal((12, 12))

    def f(s):
        return np.sum(weights * np.linalg.cholesky(s, upper=upper))

    s = np.asarray(a @ a.T + 12 * np.eye(12), order=order)
    np.testing.assert_allclose(srcad.grad(f)(s), numerical_gradient(f, (s,), 0),
                               rtol=1e-6, atol=1e-8)


def test_gaussian_process_likelihood_matches_autograd_and_finite_differences():
    """The benchmark's GP: solves with a Cholesky factor and its transpose, log(diag(L))."""
    from srcad.bench.workloads import gp_nll, _gp_args
    theta, X, y = _gp_args()
    gradient = srcad.grad(gp_nll)(theta, X, y)
    np.testing.assert_allclose(gradient, numerical_gradient(gp_nll, (theta, X, y), 0),
                               rtol=1e-6)
    autograd = pytest.importorskip("autograd")
    import autograd.numpy as anp
    twin = types.FunctionType(gp_nll.__code__, dict(gp_nll.__globals__, np=anp), "gp_nll")
    np.testing.assert_allclose(gradient, autograd.grad(twin)(theta, X, y), rtol=1e-10)
