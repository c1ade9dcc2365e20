"""Rule cases for complex numbers (np.real, np.imag, np.conj, np.abs, np.angle, complex
arithmetic) and `numpy.fft`.

Complex arguments come from the complex domains below; tests/ops/test_rules.py checks their
VJPs against finite differences along the real and the imaginary parts (srcad's
convention, JAX's: the cotangent of z = x + iy is dL/dx - i dL/dy) and their JVPs along
complex tangents. Complex outputs are checked with complex cotangents; the `np.real(...)`
rows are the common use, a real loss of complex intermediates.
"""
import builtins
import operator

import numpy as np

from srcad.ops.numpy_dtypes import converted
from tests.ops.rule_table import DOMAINS, Case, binary, on, unary

# Away from 0 and from the branch cut of log, sqrt and angle along the negative reals.
DOMAINS["complex"] = lambda rng, shape: (rng.standard_normal(shape)
                                         + 1j * rng.standard_normal(shape))
DOMAINS["complex_nonzero"] = lambda rng, shape: (rng.uniform(0.5, 2.0, shape)
                                                 * np.exp(1j * rng.uniform(-2.8, 2.8, shape)))

# Constant complex weights the real-loss rows multiply spectra by.
W5 = np.exp(0.7j * np.arange(5)) * np.linspace(0.5, 1.5, 5)
W34 = np.exp(0.3j * np.arange(12)).reshape(3, 4)


# ---- complex numbers -----------------------------------------------------------------------
COMPLEX_UNARY = [
    (np.real, lambda z: np.real(z), "complex"),
    (np.real, lambda z: np.real(z * z), "complex"),
    (np.ndarray.real, lambda z: (z * z).real, "complex"),
    (np.imag, lambda z: np.imag(z), "complex"),
    (np.imag, lambda z: np.imag(z * z) * np.real(z), "complex"),
    (np.ndarray.imag, lambda z: (z * z).imag, "complex"),
    (np.conjugate, lambda z: np.conj(z), "complex"),
    (np.conjugate, lambda z: np.conjugate(z) * z, "complex"),
    (np.real_if_close, lambda z: np.real_if_close(z), "complex"),
    (np.real_if_close, lambda z: np.real_if_close(z - 1j * np.imag(z)) * np.abs(z), "complex"),
    (np.absolute, lambda z: np.abs(z), "complex_nonzero"),
    (np.absolute, lambda z: np.absolute(z * z) ** 2, "complex_nonzero"),
    (np.angle, lambda z: np.angle(z), "complex_nonzero"),
    (np.angle, lambda z: np.angle(z, deg=True), "complex_nonzero"),
    (np.sign, lambda z: np.sign(z), "complex_nonzero"),  # (z / |z|: not constant)
    (np.sign, lambda z: np.real(np.sign(z * z) * W5[:1]) * z, "complex_nonzero"),
    (np.exp, lambda z: np.exp(z), "complex"),
    (np.log, lambda z: np.log(z), "complex_nonzero"),
    (np.sqrt, lambda z: np.sqrt(z), "complex_nonzero"),
    (np.sin, lambda z: np.sin(z), "complex"),
    (np.tanh, lambda z: np.tanh(z), "complex"),
    (np.reciprocal, lambda z: np.reciprocal(z), "complex_nonzero"),
    (operator.neg, lambda z: -z, "complex"),
    (operator.pow, lambda z: z ** 3, "complex"),
    (operator.pow, lambda z: z ** 0.5, "complex_nonzero"),
    (operator.mul, lambda z: 1j * z, "complex"),
    (builtins.abs, lambda z: abs(z), "complex_nonzero"),
    (builtins.abs, lambda z: abs(z * z) * z, "complex_nonzero"),
]
ARRAY_METHODS = [  # of complex arrays
    (converted, lambda z: z.astype(np.real(z).dtype) * (1.0 + 2.0j), "complex"),
    (np.conjugate, lambda z: z.conj() * z.conjugate() * 1j, "complex"),
]
ON_REALS = [  # real arguments through complex intermediates and back
    (np.real, lambda x: np.real(x)),
    (np.imag, lambda x: np.imag(x) + x),
    (np.conjugate, lambda x: np.conj(x)),
    (np.real_if_close, lambda x: np.real_if_close(x * (1.0 + 1e-16j))),
    (operator.mul, lambda x: np.abs(np.exp(1j * x) * (x + 2.0j)) ** 2),
    (np.angle, lambda x: np.angle((x + 0.5j) * (1.0 - 1j))),
    (np.imag, lambda x: np.imag(np.exp(1j * x) * x) + np.real(x * (1.0 + 2.0j))),
]
COMPLEX_BINARY = [
    (operator.add, lambda z, w: z + w, "complex", "complex"),
    (operator.sub, lambda z, w: z - w, "complex", "complex"),
    (operator.mul, lambda z, w: z * w, "complex", "complex"),
    (operator.truediv, lambda z, w: z / w, "complex", "complex_nonzero"),
    (operator.pow, lambda z, w: z ** w, "complex_nonzero", "complex"),
    (np.multiply, lambda z, w: np.multiply(z, np.conj(w)), "complex", "complex"),
    (operator.mul, lambda x, z: x * z, "real", "complex"),  # real times complex
    (operator.truediv, lambda x, z: x / z, "real", "complex_nonzero"),
    (operator.add, lambda z, x: np.abs(z + x), "complex_nonzero", "positive"),
]
VDOT = [  # np.vdot conjugates its first argument
    (np.vdot, lambda z, w: np.vdot(z, w), "complex", "complex"),
    (np.vdot, lambda z, w: np.vdot(z * w, w + 1.0), "complex", "complex"),
    (np.vdot, lambda x, w: np.vdot(x, w), "real", "complex"),
]
COMPLEX_SHAPES = [(None, None), ((), ()), ((4,), (4,)), ((3, 1), (1, 4)), ((2, 3), None)]


# ---- numpy.fft: one axis -------------------------------------------------------------------
ON_REAL_VECTOR = [  # x of shape (5,): odd lengths
    (np.fft.fft, lambda x: np.fft.fft(x)),
    (np.fft.fft, lambda x: np.real(np.fft.fft(x) * W5)),
    (np.fft.fft, lambda x: np.fft.fft(x, 8)),
    (np.fft.fft, lambda x: np.fft.fft(x, n=3, norm="ortho")),
    (np.fft.ifft, lambda x: np.imag(np.fft.ifft(x) * W5)),
    (np.fft.ifft, lambda x: np.fft.ifft(x, 7, norm="forward")),
    (np.fft.rfft, lambda x: np.fft.rfft(x)),
    (np.fft.rfft, lambda x: np.abs(np.fft.rfft(x)) ** 2),
    (np.fft.rfft, lambda x: np.fft.rfft(x, 8)),
    (np.fft.rfft, lambda x: np.fft.rfft(x, n=4, norm="ortho")),
    (np.fft.rfft, lambda x: np.fft.rfft(x, norm="forward")),
    (np.fft.irfft, lambda x: np.fft.irfft(x)),  # a real half spectrum
    (np.fft.irfft, lambda x: np.fft.irfft(np.fft.rfft(x), 5)),
    (np.fft.ihfft, lambda x: np.fft.ihfft(x)),
    (np.fft.ihfft, lambda x: np.fft.ihfft(x, 6, norm="ortho")),
    (np.fft.hfft, lambda x: np.fft.hfft(x, 7)),
    (np.fft.fftshift, lambda x: np.fft.fftshift(x)),
    (np.fft.ifftshift, lambda x: np.fft.ifftshift(x)),
    (np.fft.fftshift, lambda x: np.fft.ifftshift(np.fft.fftshift(np.fft.fft(x)) * W5)),
]
ON_EVEN_VECTOR = [  # x of shape (6,)
    (np.fft.rfft, lambda x: np.fft.rfft(x)),
    (np.fft.rfft, lambda x: np.fft.rfft(x, 5, norm="ortho")),
    (np.fft.irfft, lambda x: np.fft.irfft(np.fft.rfft(x))),
    (np.fft.ifftshift, lambda x: np.fft.ifftshift(x)),
]
ON_SPECTRUM = [  # z complex of shape (4,): a half spectrum for irfft and hfft
    (np.fft.fft, lambda z: np.fft.fft(z)),
    (np.fft.fft, lambda z: np.fft.fft(z, 6, norm="forward")),
    (np.fft.ifft, lambda z: np.fft.ifft(z)),
    (np.fft.ifft, lambda z: np.fft.ifft(z, n=3, norm="ortho")),
    (np.fft.irfft, lambda z: np.fft.irfft(z)),
    (np.fft.irfft, lambda z: np.fft.irfft(z, 7)),
    (np.fft.irfft, lambda z: np.fft.irfft(z, 3, norm="ortho")),
    (np.fft.irfft, lambda z: np.fft.irfft(z, n=12, norm="forward")),
    (np.fft.hfft, lambda z: np.fft.hfft(z)),
    (np.fft.hfft, lambda z: np.fft.hfft(z, 5, norm="ortho")),
    (np.fft.hfft, lambda z: np.fft.hfft(z, n=4, norm="forward")),
    (np.fft.fftshift, lambda z: np.fft.fftshift(z)),
    (np.fft.ifftshift, lambda z: np.fft.ifftshift(z)),
]
ON_REAL_MATRIX = [  # x of shape (3, 4): transforms along an axis, 2-D ones
    (np.fft.fft, lambda x: np.fft.fft(x, axis=0)),
    (np.fft.ifft, lambda x: np.fft.ifft(x, 5, 0)),
    (np.fft.rfft, lambda x: np.fft.rfft(x, axis=0)),
    (np.fft.rfft, lambda x: np.fft.rfft(x, n=6, axis=-2, norm="forward")),
    (np.fft.irfft, lambda x: np.fft.irfft(x, axis=0)),
    (np.fft.hfft, lambda x: np.fft.hfft(x, axis=-2)),
    (np.fft.ihfft, lambda x: np.fft.ihfft(x, axis=0, norm="forward")),
    (np.fft.fft2, lambda x: np.fft.fft2(x)),
    (np.fft.fft2, lambda x: np.real(np.fft.fft2(x) * W34)),
    (np.fft.fft2, lambda x: np.fft.fft2(x, (4, 3), norm="ortho")),
    (np.fft.ifft2, lambda x: np.fft.ifft2(x, s=(2, 6), norm="forward")),
    (np.fft.rfft2, lambda x: np.fft.rfft2(x)),
    (np.fft.rfft2, lambda x: np.fft.rfft2(x, (4, 5), norm="ortho")),
    (np.fft.rfft2, lambda x: np.fft.rfft2(x, axes=(1, 0))),
    (np.fft.irfft2, lambda x: np.fft.irfft2(np.fft.rfft2(x), s=(3, 4))),
    (np.fft.irfft2, lambda x: np.fft.irfft2(x)),
    (np.fft.fftshift, lambda x: np.fft.fftshift(x, axes=0)),
    (np.fft.ifftshift, lambda x: np.fft.ifftshift(x, axes=(0, 1))),
]
ON_COMPLEX_MATRIX = [  # z complex of shape (3, 4)
    (np.var, lambda z: np.var(z)),
    (np.var, lambda z: np.var(z * z, axis=0, ddof=1) * z[0]),
    (np.std, lambda z: np.std(z, axis=1, keepdims=True) * z),
    (np.linalg.norm, lambda z: np.linalg.norm(z)),
    (np.linalg.norm, lambda z: np.linalg.norm(z, axis=1) * z[:, 0]),
    (np.linalg.slogdet, lambda z: np.linalg.slogdet(z[:, :3])[1]),
    (np.linalg.slogdet, lambda z: np.linalg.slogdet(z[:, 1:])[0] * (1.0 + 2.0j)),
    (np.fft.fft, lambda z: np.fft.fft(z, axis=0, norm="ortho")),
    (np.fft.fft2, lambda z: np.fft.fft2(z)),
    (np.fft.ifft2, lambda z: np.fft.ifft2(z, (5, 2))),
    (np.fft.fftn, lambda z: np.fft.fftn(z)),
    (np.fft.ifftn, lambda z: np.fft.ifftn(z, norm="ortho")),
    (np.fft.irfft2, lambda z: np.fft.irfft2(z)),
    (np.fft.irfft2, lambda z: np.fft.irfft2(z, (4, 5), norm="forward")),
    (np.fft.irfft2, lambda z: np.fft.irfft2(z, axes=(1, 0))),
    (np.fft.irfftn, lambda z: np.fft.irfftn(z)),
    (np.fft.irfftn, lambda z: np.fft.irfftn(z, s=(2, 7), axes=(0, 1), norm="ortho")),
    (np.fft.irfftn, lambda z: np.fft.irfftn(z, axes=(0,))),
]
ON_REAL_CUBE = [  # x of shape (2, 3, 4): n-dimensional transforms
    (np.fft.fftn, lambda x: np.fft.fftn(x)),
    (np.fft.fftn, lambda x: np.fft.fftn(x, axes=(0, 2))),
    (np.fft.fftn, lambda x: np.fft.fftn(x, (3, 2), axes=(2, 0), norm="ortho")),
    (np.fft.fftn, lambda x: np.fft.fftn(x, axes=(1, 1))),  # a repeated axis
    (np.fft.ifftn, lambda x: np.fft.ifftn(x, s=(4, 5), axes=(1, 2), norm="forward")),
    (np.fft.rfftn, lambda x: np.fft.rfftn(x)),
    (np.fft.rfftn, lambda x: np.fft.rfftn(x, axes=(2, 1))),
    (np.fft.rfftn, lambda x: np.fft.rfftn(x, (3, 3, 5), axes=(0, 1, 2), norm="ortho")),
    (np.fft.rfftn, lambda x: np.abs(np.fft.rfftn(x, axes=(0,)))),
    (np.fft.irfftn, lambda x: np.fft.irfftn(np.fft.rfftn(x), x.shape, axes=(0, 1, 2))),
    (np.fft.irfftn, lambda x: np.fft.irfftn(x, (2, 5), axes=(0, 1), norm="forward")),
    (np.fft.fftshift, lambda x: np.fft.fftshift(x)),
    (np.fft.ifftshift, lambda x: np.fft.ifftshift(x, axes=(-1, 0))),
]
FREQUENCIES = [  # the sample spacing d
    (np.fft.fftfreq, lambda d: np.fft.fftfreq(6, d), "positive"),
    (np.fft.rfftfreq, lambda d: np.fft.rfftfreq(7, d=d) * d ** 2, "positive"),
]


def _complex_rows(shape, rows):
    return [Case(primal, fn, (("complex", shape),)) for primal, fn in rows]


CASES = (
    unary(COMPLEX_UNARY, [None, (), (5,), (2, 3)]) + unary(ARRAY_METHODS, [(), (5,), (2, 3)])
    + on(None, ON_REALS) + on((4,), ON_REALS)
    + binary(COMPLEX_BINARY, COMPLEX_SHAPES)
    + binary(VDOT, [((4,), (4,)), ((2, 3), (2, 3))])
    + on((5,), ON_REAL_VECTOR) + on((6,), ON_EVEN_VECTOR) + _complex_rows((4,), ON_SPECTRUM)
    + on((3, 4), ON_REAL_MATRIX) + _complex_rows((3, 4), ON_COMPLEX_MATRIX)
    + on((2, 3, 4), ON_REAL_CUBE)
    + unary(FREQUENCIES, [None, ()])
)
