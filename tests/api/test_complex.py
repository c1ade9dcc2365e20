"""Complex numbers through the API, `check_grads` and tape mode, and NumPy's in-place
functions in tape mode: each test once failed (a wrong number, or a crash) and checks the
value it must have, or the clear refusal it must raise. The rules' own complex cases are in
tests/ops/rule_cases_fft.py."""
import numpy as np
import pytest

import srcad
from srcad import tape
from srcad.errors import MissingRuleError, TangentError, UnsupportedDerivativeError

Z = np.array([1.0 + 2.0j, -0.5 + 0.3j, 0.7 - 1.1j])


def complex_gradient(fn, z, eps=1e-6):
    """dL/dx - i dL/dy of a real `fn` by central differences (srcad's convention)."""
    z = np.asarray(z, np.complex128)
    out = np.zeros_like(z)
    for index in np.ndindex(z.shape):
        step = np.zeros_like(z)
        step[index] = eps
        along_x = (fn(z + step) - fn(z - step)) / (2 * eps)
        along_y = (fn(z + 1j * step) - fn(z - 1j * step)) / (2 * eps)
        out[index] = along_x - 1j * along_y
    return out


# ---- srcad.jvp takes complex tangents -------------------------------------------------------
def squared(z):
    return z * z


def test_jvp_takes_a_complex_tangent_for_a_complex_primal():
    tangent = np.array([1.0 - 1.0j, 0.5j, 2.0])
    value, out = srcad.jvp(squared, (Z,), (tangent,))
    np.testing.assert_allclose(out, 2 * Z * tangent)


def test_jvp_refuses_a_complex_tangent_for_a_real_primal():
    with pytest.raises(TangentError, match="real"):
        srcad.jvp(squared, (np.ones(3),), (np.ones(3) * 1j,))


# ---- check_grads on complex arguments -------------------------------------------------------
def energy(z):
    return np.sum(np.abs(z * (1.0 + 2.0j)) ** 2)


def conjugated_square(z):
    return np.conj(z) ** 2


def test_check_grads_accepts_complex_arguments():
    srcad.check_grads(energy, (Z,), wrt=0)
    srcad.check_grads(conjugated_square, (Z,))  # a complex output: a complex cotangent


def test_check_grads_catches_a_wrong_complex_rule():
    """A conjugated cotangent (the other convention) must not pass."""
    from srcad.ops import registry

    op = registry.op_of(np.conjugate)
    rules = op.vjp
    op.vjp = registry.VJPRules(np.conjugate, (lambda g, ans, x: g,))
    srcad.clear_cache()
    try:
        with pytest.raises(AssertionError, match="gradient check failed"):
            srcad.check_grads(conjugated_square, (Z,))
    finally:
        op.vjp = rules
        srcad.clear_cache()


# ---- tape mode ---------------------------------------------------------------------------
def parts_product(x):
    z = x * (1.0 + 1.0j) + 0.5j
    return np.sum(z.real * z.imag + z.conj().imag)


def modulus_squared(z):
    return np.abs(z) ** 2


def phase_weighted(x):
    return np.real(np.exp(1j * x) * (x + 2.0j))


def test_tape_tensor_has_real_imag_and_conj():
    x = np.array([1.0, 2.0, -0.5])
    np.testing.assert_allclose(tape.grad(parts_product)(x), srcad.grad(parts_product)(x))
    np.testing.assert_allclose(tape.grad(parts_product)(x), 2 * x + 0.5 - 1.0)


def test_tape_grad_takes_a_python_complex():
    gradient = tape.grad(modulus_squared)(1.0 + 2.0j)
    assert gradient == pytest.approx(2.0 - 4.0j)


def test_tape_complex_array_gradient_matches_differences():
    np.testing.assert_allclose(tape.grad(energy)(Z), complex_gradient(energy, Z), rtol=1e-6)


def test_nested_tape_grad_of_a_real_argument_through_complex_values():
    """The inner gradient's imaginary part (meaningless for a real x) must not reach the
    outer tape, whose output must be real."""
    inner = tape.grad(phase_weighted)
    second = tape.grad(lambda x: inner(x))(0.3)
    assert isinstance(second, float)
    assert second == pytest.approx(srcad.grad(srcad.grad(phase_weighted))(0.3))


# ---- numpy.linalg: complex inputs ----------------------------------------------------------
def frobenius(a):
    return np.linalg.norm(a)


def log_modulus_and_phase(a):
    sign, logabsdet = np.linalg.slogdet(a)
    return logabsdet + np.real(sign * (1.0 + 2.0j))


def eigenvalue_sum(a):
    return np.sum(np.linalg.eigvalsh(a) * np.arange(3))


A = np.array([[3.0 + 1.0j, 0.5, -1.0j], [0.2j, 2.0 - 0.5j, 0.3], [1.0, -0.4 + 0.2j, 4.0]])


@pytest.mark.parametrize("fn", [frobenius, log_modulus_and_phase, eigenvalue_sum])
def test_linalg_complex_to_real_gradients_match_differences(fn):
    np.testing.assert_allclose(srcad.grad(fn)(A), complex_gradient(fn, A), atol=1e-7)
    tangent = np.full(A.shape, 0.3 + 0.7j)
    _, out = srcad.jvp(fn, (A,), (tangent,))
    assert out == pytest.approx((fn(A + 1e-6 * tangent) - fn(A - 1e-6 * tangent)) / 2e-6)


def cholesky_sum(a):
    return np.real(np.sum(np.linalg.cholesky(a @ a.conj().T + 3 * np.eye(3))))


def test_linalg_refuses_complex_cholesky():
    with pytest.raises(UnsupportedDerivativeError, match="real arrays only"):
        srcad.grad(cholesky_sum)(A)


# ---- tape mode: NumPy functions that write in place ----------------------------------------
def put_along_rows(x):
    y = np.zeros_like(x)
    np.put_along_axis(y, np.array([[1], [0]]), x[:, :1], axis=1)
    return np.sum(y * x)


def zero_diagonal(x):
    y = x * 1.0
    np.fill_diagonal(y, 0.0)
    return np.sum(y ** 2)


def put_first(x):
    y = x * 2.0
    np.put(y, [0], 0.0)
    return np.sum(y)


def place_masked(x):
    y = x * 2.0
    np.place(y, y > 2.0, [0.0])
    return np.sum(y)


def putmask_masked(x):
    y = x * 2.0
    np.putmask(y, y > 2.0, 0.0)
    return np.sum(y)


def into_plain_array(x):
    y = np.zeros((2, 2))
    np.put_along_axis(y, np.array([[0], [1]]), x[:, :1], axis=1)
    return np.sum(y)


@pytest.mark.parametrize("fn", [put_along_rows, zero_diagonal, put_first, place_masked,
                                putmask_masked, into_plain_array])
def test_tape_refuses_in_place_numpy_functions_on_tracked_tensors(fn):
    with pytest.raises(MissingRuleError, match="in place") as raised:
        tape.grad(fn)(np.arange(1.0, 5.0).reshape(2, 2))
    assert raised.value.fix and raised.value.location is not None


def test_in_place_numpy_functions_still_run_without_a_tape():
    y = tape.Tensor(np.zeros((2, 2)))
    np.fill_diagonal(y, 3.0)
    np.testing.assert_allclose(y.numpy(), 3.0 * np.eye(2))
