"""Derivatives where NumPy or SciPy casts a value to another dtype: a complex value to a
real dtype, dropping its imaginary part (with a ComplexWarning), or any value to integers,
rounding it (no derivative). Reductions, array constructors and einsum with `dtype=`, float()
and np.float64(), np.full, np.full_like and np.linspace; also x.item() of a real x and
scipy.linalg.solve under a complex cotangent. Each complex loss is the real part of the
function times a complex constant, so that the cotangent of a real intermediate value carries
an imaginary part, which the rules must drop. srcad.grad (source mode), srcad.tape.grad and
srcad.jvp are checked against central differences along the real and imaginary parts; the
casts srcad refuses (np.var and np.std with a real dtype of a complex array or an integer
one, einsum rounding to integers, SciPy densities of complex arguments) must raise
UnsupportedDerivativeError naming the function.
"""
import numpy as np
import pytest
import scipy.linalg as linalg
import scipy.stats as stats

import srcad
from srcad.errors import UnsupportedDerivativeError

pytestmark = pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")

C = 1.0 + 2.0j  # (the complex factor of each loss)
W = np.array([0.3, -1.2, 0.7, 2.0])
V = np.array([0.5 - 1.0j, 2.0 + 0.5j, -1.0 + 0.2j, 0.4j])  # a complex constant operand
_rng = np.random.default_rng(3)
Z = _rng.standard_normal(4) + 1j * _rng.standard_normal(4)
A = _rng.standard_normal((3, 3)) + 1j * _rng.standard_normal((3, 3)) + 3.0 * np.eye(3)
B = _rng.standard_normal(3)
REAL_A = np.real(A)


def sum_dtype(z):
    return np.real(np.sum(z, dtype=np.float64) * C)


def mean_dtype(z):
    return np.real(np.mean(z, dtype=np.float64) * C)


def nansum_dtype(z):
    return np.real(np.nansum(z, dtype=np.float64) * C)


def nanmean_dtype(z):
    return np.real(np.nanmean(z, dtype=np.float64) * C)


def trace_dtype(a):
    return np.real(np.trace(a, dtype=np.float64) * C)


def cumsum_dtype(z):
    return np.real(np.sum(np.cumsum(z, dtype=np.float64) * C * W))


def prod_dtype(z):
    return np.real(np.prod(z, dtype=np.float64) * C)


def prod_dtype_axis(a):
    return np.real(np.sum(np.prod(a, axis=0, dtype=np.float64) * C * W[:3]))


def cumprod_dtype(z):
    return np.real(np.sum(np.cumprod(z, dtype=np.float64) * C * W))


def asarray_dtype(z):
    return np.real(np.sum(np.asarray(z, dtype=np.float64) * C * W))


def array_dtype(z):
    return np.real(np.sum(np.array(z, dtype=np.float64) * C * W))


def asanyarray_dtype(z):
    return np.real(np.sum(np.asanyarray(z, dtype=np.float64) * C * W))


def concatenate_dtype(z):
    joined = np.concatenate([z, z[:2]], dtype=np.float64, casting="unsafe")
    return np.real(np.sum(joined * C * np.arange(6.0)))


def stack_dtype(z):
    return np.real(np.sum(np.stack([z, 2.0 * z], dtype=np.float64, casting="unsafe") * C * W))


def hstack_dtype(z):
    joined = np.hstack([z, z[1:]], dtype=np.float64, casting="unsafe")
    return np.real(np.sum(joined * C * np.arange(7.0)))


def einsum_dtype(z):
    return np.real(np.einsum("i,i->", z, V, dtype=np.float64, casting="unsafe") * C)


def float64_of_complex(z):
    return np.real(np.float64(z[0]) * C)


def float_of_complex(z):
    return np.real(float(z[0]) * C)


def full_dtype(z):
    return np.real(np.sum(np.full(4, z[1], dtype=np.float64) * C * W))


def full_like_real(z):
    return np.real(np.sum(np.full_like(W, z[1]) * C * W))


def linspace_dtype(z):
    return np.real(np.sum(np.linspace(z[0], z[1], 4, dtype=np.float64) * C * W))


def item_of_real(z):
    return np.real(z.real.item(1) * C)


def setitem_element(z):
    y = np.zeros(4)
    y[1] = z[0]
    return np.real(np.sum(y * C * W))


def setitem_slice(z):
    y = np.ones(4)
    y[1:3] = z[:2] * 2.0
    return np.real(np.sum(y * C * W))


def solve_in_a(a):
    return np.real(np.sum(linalg.solve(a, B) * C * W[:3]))


def solve_in_b(b):
    return np.real(np.sum(linalg.solve(A, b) * C * W[:3]))


def solve_transposed(a):
    return np.real(np.sum(linalg.solve(a, B, transposed=True) * C * W[:3]))


def solve_triangular_structure(a):
    return np.real(np.sum(linalg.solve(a, B, assume_a="upper triangular") * C * W[:3]))


# ---- integer dtypes round: the cast values have no derivative --------------------------------
X = np.array([1.3, 2.6, -0.4, 3.2])  # (away from integers: the differences see no step)


def sum_int(x):
    return np.sum(x, dtype=np.int64) * 1.5 + np.sum(x ** 2)


def mean_int(x):
    return np.mean(x, dtype=np.int32) * 1.5 + np.sum(x ** 2)


def cumsum_and_prod_int(x):
    return np.sum(np.cumsum(x, dtype=int) * W) + np.prod(x, dtype=int) + np.sum(np.sin(x))


def trace_int(a):
    return np.trace(a, dtype=int) + np.sum(a ** 2)


def asarray_int(x):
    return np.sum(np.asarray(x, dtype=np.int64) * x)


def concatenate_int(x):
    return np.sum(np.concatenate([x, x ** 2], dtype=np.int64, casting="unsafe") * x[0])


def full_int(x):
    return np.sum(np.full(3, x[3], dtype=int) * x[:3])


CASES = [(sum_int, X), (mean_int, X), (cumsum_and_prod_int, X), (trace_int, REAL_A),
         (asarray_int, X), (concatenate_int, X), (full_int, X),
         (sum_dtype, Z), (mean_dtype, Z), (nansum_dtype, Z), (nanmean_dtype, Z),
         (trace_dtype, A), (cumsum_dtype, Z), (prod_dtype, Z), (prod_dtype_axis, A),
         (cumprod_dtype, Z), (asarray_dtype, Z), (array_dtype, Z), (asanyarray_dtype, Z),
         (concatenate_dtype, Z), (stack_dtype, Z), (hstack_dtype, Z), (einsum_dtype, Z),
         (float64_of_complex, Z), (float_of_complex, Z), (full_dtype, Z),
         (full_like_real, Z), (linspace_dtype, Z), (item_of_real, Z), (setitem_element, Z),
         (setitem_slice, Z), (solve_in_a, A),
         (solve_in_a, REAL_A), (solve_in_b, B), (solve_in_b, B + 0.5j),
         (solve_transposed, REAL_A), (solve_triangular_structure, np.triu(A))]
PARAMS = [pytest.param(fn, x, id=f"{fn.__name__}-{x.dtype.name}") for fn, x in CASES]
# (tape mode refuses to convert a tensor to a plain array, which these calls do)
NOT_TAPED = {asarray_int, concatenate_int, asarray_dtype, array_dtype, asanyarray_dtype, float64_of_complex, float_of_complex,
             full_like_real, item_of_real, solve_in_a, solve_in_b, solve_transposed,
             solve_triangular_structure}
H = 1e-6


def _difference(fn, x, direction):
    return (fn(x + H * direction) - fn(x - H * direction)) / (2.0 * H)


def _numerical_cotangent(fn, x):
    """dL/dx - i dL/dy of the real loss at z = x + iy (dL/dx for a real argument)."""
    expected = np.zeros(x.shape, x.dtype)
    for index in np.ndindex(x.shape):
        unit = np.zeros(x.shape)
        unit[index] = 1.0
        expected[index] = _difference(fn, x, unit)
        if x.dtype.kind == "c":
            expected[index] -= 1j * _difference(fn, x, 1j * unit)
    return expected


@pytest.mark.parametrize("fn, x", PARAMS)
def test_gradient_matches_finite_differences(fn, x):
    np.testing.assert_allclose(srcad.grad(fn)(x), _numerical_cotangent(fn, x), rtol=1e-6,
                               atol=1e-7)


@pytest.mark.parametrize("fn, x", [p for p in PARAMS if p.values[0] not in NOT_TAPED])
def test_tape_gradient_matches_finite_differences(fn, x):
    grad = srcad.tape.grad
    np.testing.assert_allclose(grad(fn)(x), _numerical_cotangent(fn, x), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("fn, x", PARAMS)
def test_jvp_matches_finite_differences(fn, x):
    rng = np.random.default_rng(5)
    direction = rng.standard_normal(x.shape)
    if x.dtype.kind == "c":
        direction = direction + 1j * rng.standard_normal(x.shape)
    value, tangent = srcad.jvp(fn, (x,), (direction,))
    np.testing.assert_allclose(value, fn(x))
    np.testing.assert_allclose(tangent, _difference(fn, x, direction), rtol=1e-6, atol=1e-7)


# ---- refused: NumPy mixes the two, SciPy casts -----------------------------------------------
def var_dtype(z):
    return np.real(np.var(z, dtype=np.float64) * C)


def std_dtype(z):
    return np.real(np.std(z, dtype=np.float64) * C)


def norm_logpdf_of_complex_loc(z):
    return np.real(np.sum(stats.norm.logpdf(W, loc=z)) * C)


def mvn_logpdf_of_complex_x(z):
    return np.real(stats.multivariate_normal.logpdf(z[:2], np.zeros(2), np.eye(2)) * C)


def var_int(z):
    return np.var(np.real(z), dtype=np.int64)


def einsum_int(z):
    return np.einsum("i,i->", np.real(z), np.real(z), dtype=np.int64, casting="unsafe") * 1.0


REFUSED = [pytest.param(var_dtype, "np.var", id="var"),
           pytest.param(var_int, "np.var", id="var-int"),
           pytest.param(einsum_int, "np.einsum", id="einsum-int"),
           pytest.param(std_dtype, "np.std", id="std"),
           pytest.param(norm_logpdf_of_complex_loc, "scipy.stats.norm.logpdf", id="norm"),
           pytest.param(mvn_logpdf_of_complex_x, "scipy.stats.multivariate_normal", id="mvn")]
NOT_TAPED |= {norm_logpdf_of_complex_loc, mvn_logpdf_of_complex_x}  # (SciPy converts)


ROUNDED = {var_int, einsum_int}  # (tape mode records no integer result: its derivative is 0)


@pytest.mark.parametrize("fn, name, mode", [
    (*p.values, mode) for p in REFUSED for mode in ("source", "tape", "jvp")
    if not (mode == "tape" and p.values[0] in NOT_TAPED | ROUNDED)])
def test_cast_refused(fn, name, mode):
    derivative = {"source": lambda: srcad.grad(fn)(Z), "tape": lambda: srcad.tape.grad(fn)(Z),
                  "jvp": lambda: srcad.jvp(fn, (Z,), (np.ones(4) + 1j,))}[mode]
    with pytest.raises(UnsupportedDerivativeError, match=name.replace(".", r"\.")):
        derivative()


def test_real_dtype_of_a_real_array_still_differentiates():
    """np.var with dtype= of a real array is not refused (nothing is cast away)."""
    x = np.real(Z)
    np.testing.assert_allclose(srcad.grad(var_dtype)(x), _numerical_cotangent(var_dtype, x),
                               rtol=1e-6, atol=1e-7)
