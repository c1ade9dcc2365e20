"""Rules for `numpy.fft`: the complex, real and Hermitian transforms in 1, 2 and n
dimensions, with their `n`/`s`, `axis`/`axes` and `norm` options, and the shifts.

Every transform is linear (the real ones over the reals), so each JVP is the transform of
the tangent. The VJPs follow srcad's complex convention (numpy_ufuncs.py: the transpose,
not the conjugate transpose). The DFT matrix is symmetric, so the transpose of `fft` is
`fft` with the same `norm`, and of `ifft` is `ifft`; `n` crops or zero-pads the input, whose
transpose zero-pads or crops the cotangent back (`_fit`). `rfft` is `fft` of a real input
keeping the first n//2 + 1 outputs; `irfft` reads the real parts of that half spectrum
(`_irfft_cotangent`). A cotangent of a real input is real. An n-dimensional transform is
NumPy's sequence of 1-D ones, pulled back in the reverse order (repeated axes included).
fftfreq and rfftfreq have the rule of their sample spacing `d` (their `n` is an integer).
"""
import numpy as np

from srcad.kernels.adjoints import dtype_of
from srcad.ops.registry import defjvp, defvjp

_SWAPPED = {None: "forward", "backward": "forward", "ortho": "ortho", "forward": "backward"}


def _fit(a, size, axis):
    """`a` cropped or zero-padded to `size` along `axis`: the transpose of the cropping or
    padding a transform's `n` does to its input (basic indexing and np.concatenate only,
    so that rules differentiate again and run on tape-mode tensors)."""
    axis = axis % np.ndim(a)
    length = np.shape(a)[axis]
    if length > size:
        return a[(slice(None),) * axis + (slice(0, size),)]
    if length < size:
        shape = np.shape(a)[:axis] + (size - length,) + np.shape(a)[axis + 1:]
        return np.concatenate([a, np.zeros(shape, dtype_of(a))], axis)
    return a


def _like_input(c, a):
    """The cotangent `c` of a real input `a` is its real part."""
    return c if dtype_of(a).kind == "c" else np.real(c)


def _fft_cotangent(g, size, axis, norm, inverse):
    """Pulls back one complex transform (fft, or ifft if `inverse`) of an input of `size`."""
    transform = np.fft.ifft if inverse else np.fft.fft
    return _fit(transform(g, axis=axis, norm=norm), size, axis)


def _rfft_cotangent(g, size, n, axis, norm):
    """Pulls back `rfft` of length `n` of a real input of `size`: the half spectrum's
    cotangent zero-padded to `n`, through `fft` (its transpose), real part."""
    return np.real(_fit(np.fft.fft(g, n, axis, norm), size, axis))


def _irfft_cotangent(g, size, n, axis, norm):
    """Pulls back `irfft` of length `n` of a half spectrum of `size`.

    y_j = scale * sum_k w_k Re(c_k exp(2 pi i j k / n)) over k <= n // 2, where w_k is 2 for
    the terms that stand for a conjugate pair too, 1 for k = 0 and the Nyquist term k = n/2
    (whose imaginary parts irfft ignores). So the cotangent of c_k is w_k times
    scale * sum_j Re(g_j) exp(2 pi i j k / n) = conj(rfft(Re(g))) with the swapped norm."""
    c = np.conj(np.fft.rfft(np.real(g), axis=axis, norm=_SWAPPED[norm]))
    k = np.arange(n // 2 + 1)
    axis = axis % np.ndim(c)
    weights = np.where((k == 0) | (2 * k == n), 1, 2).astype(np.finfo(dtype_of(c)).dtype)
    return _fit(c * np.reshape(weights, (-1,) + (1,) * (np.ndim(c) - axis - 1)), size, axis)


def _irfft_length(a, n, axis):
    return 2 * (np.shape(a)[axis] - 1) if n is None else n


# ---- one axis ------------------------------------------------------------------------------
def fft_vjp(g, ans, a, n=None, axis=-1, norm=None, out=None):
    return _like_input(_fft_cotangent(g, np.shape(a)[axis], axis, norm, False), a)


def ifft_vjp(g, ans, a, n=None, axis=-1, norm=None, out=None):
    return _like_input(_fft_cotangent(g, np.shape(a)[axis], axis, norm, True), a)


def rfft_vjp(g, ans, a, n=None, axis=-1, norm=None, out=None):
    size = np.shape(a)[axis]
    return _rfft_cotangent(g, size, size if n is None else n, axis, norm)


def irfft_vjp(g, ans, a, n=None, axis=-1, norm=None, out=None):
    return _like_input(_irfft_cotangent(g, np.shape(a)[axis], _irfft_length(a, n, axis), axis,
                                        norm), a)


def hfft_vjp(g, ans, a, n=None, axis=-1, norm=None, out=None):
    """hfft(a) is irfft(conj(a)) with the swapped norm; conj is its own transpose."""
    c = _irfft_cotangent(g, np.shape(a)[axis], _irfft_length(a, n, axis), axis, _SWAPPED[norm])
    return _like_input(np.conj(c), a)


def ihfft_vjp(g, ans, a, n=None, axis=-1, norm=None, out=None):
    """ihfft(a) is conj(rfft(a)) with the swapped norm."""
    size = np.shape(a)[axis]
    return _rfft_cotangent(np.conj(g), size, size if n is None else n, axis, _SWAPPED[norm])


for _fn, _vjp in ((np.fft.fft, fft_vjp), (np.fft.ifft, ifft_vjp), (np.fft.rfft, rfft_vjp),
                  (np.fft.irfft, irfft_vjp), (np.fft.hfft, hfft_vjp),
                  (np.fft.ihfft, ihfft_vjp)):
    defvjp(_fn, _vjp)
defjvp(np.fft.fft, lambda g, ans, a, n=None, axis=-1, norm=None, out=None:
       np.fft.fft(g, n, axis, norm))
defjvp(np.fft.ifft, lambda g, ans, a, n=None, axis=-1, norm=None, out=None:
       np.fft.ifft(g, n, axis, norm))
defjvp(np.fft.rfft, lambda g, ans, a, n=None, axis=-1, norm=None, out=None:
       np.fft.rfft(g, n, axis, norm))
defjvp(np.fft.irfft, lambda g, ans, a, n=None, axis=-1, norm=None, out=None:
       np.fft.irfft(g, n, axis, norm))
defjvp(np.fft.hfft, lambda g, ans, a, n=None, axis=-1, norm=None, out=None:
       np.fft.hfft(g, n, axis, norm))
defjvp(np.fft.ihfft, lambda g, ans, a, n=None, axis=-1, norm=None, out=None:
       np.fft.ihfft(g, n, axis, norm))


# ---- n dimensions: NumPy's sequence of 1-D transforms, pulled back in reverse --------------
def _steps(a, s, axes, kinds):
    """NumPy's 1-D transforms of an n-dimensional one, in the order it applies them:
    (kind, axis, n, size of the input along axis) each. `kinds(count)` names the kind of
    each of `axes` and gives the order, as indices into `axes`."""
    original = np.shape(a)
    if axes is None:
        axes = range(-len(original) if s is None else -len(s), 0)
    axes = [axis % len(original) for axis in axes]
    kind_of, order = kinds(len(axes))
    if s is None:  # the input's lengths; irfftn's last defaults to 2 (m - 1), as irfft's n
        s = [None if kind_of[i] == "irfft" else original[axis] for i, axis in enumerate(axes)]
    shape, steps = list(original), []
    for i in order:
        axis, n = axes[i], s[i]
        if n == -1:  # NumPy 2: the whole input along this axis
            n = original[axis]
        elif n is None:  # the 1-D transform's default
            n = 2 * (shape[axis] - 1) if kind_of[i] == "irfft" else shape[axis]
        steps.append((kind_of[i], axis, n, shape[axis]))
        shape[axis] = n // 2 + 1 if kind_of[i] == "rfft" else n
    return steps


def _complex_kinds(kind):
    """fftn and ifftn transform the last of `axes` first."""
    return lambda count: ([kind] * count, list(range(count))[::-1])


def _rfftn_kinds(count):
    """rfftn: rfft along the last of `axes` first, then fft along the others, last first."""
    return ["fft"] * (count - 1) + ["rfft"], [count - 1] + list(range(count - 1))[::-1]


def _irfftn_kinds(count):
    """irfftn: ifft along the others, first to last, then irfft along the last of `axes`."""
    return ["ifft"] * (count - 1) + ["irfft"], list(range(count))


def _nd_vjp(kinds, default_axes):
    """The VJP of an n-dimensional transform whose 1-D steps `kinds` gives, with NumPy's
    default `axes` (None for fftn and co., (-2, -1) for fft2 and co.)."""
    def rule(g, ans, a, s=None, axes=default_axes, norm=None, out=None):
        for kind, axis, n, size in reversed(_steps(a, s, axes, kinds)):
            if kind == "rfft":
                g = _rfft_cotangent(g, size, n, axis, norm)
            elif kind == "irfft":
                g = _irfft_cotangent(g, size, n, axis, norm)
            else:
                g = _fft_cotangent(g, size, axis, norm, kind == "ifft")
        return _like_input(g, a)
    return rule


for _nd, _2d, _kinds in ((np.fft.fftn, np.fft.fft2, _complex_kinds("fft")),
                         (np.fft.ifftn, np.fft.ifft2, _complex_kinds("ifft")),
                         (np.fft.rfftn, np.fft.rfft2, _rfftn_kinds),
                         (np.fft.irfftn, np.fft.irfft2, _irfftn_kinds)):
    for _fn, _default_axes in ((_nd, None), (_2d, (-2, -1))):
        _rule = _nd_vjp(_kinds, _default_axes)
        _rule.__name__ = _rule.__qualname__ = f"{_fn.__name__}_vjp"
        defvjp(_fn, _rule)
defjvp(np.fft.fftn, lambda g, ans, a, s=None, axes=None, norm=None, out=None:
       np.fft.fftn(g, s, axes, norm))
defjvp(np.fft.ifftn, lambda g, ans, a, s=None, axes=None, norm=None, out=None:
       np.fft.ifftn(g, s, axes, norm))
defjvp(np.fft.rfftn, lambda g, ans, a, s=None, axes=None, norm=None, out=None:
       np.fft.rfftn(g, s, axes, norm))
defjvp(np.fft.irfftn, lambda g, ans, a, s=None, axes=None, norm=None, out=None:
       np.fft.irfftn(g, s, axes, norm))
defjvp(np.fft.fft2, lambda g, ans, a, s=None, axes=(-2, -1), norm=None, out=None:
       np.fft.fft2(g, s, axes, norm))
defjvp(np.fft.ifft2, lambda g, ans, a, s=None, axes=(-2, -1), norm=None, out=None:
       np.fft.ifft2(g, s, axes, norm))
defjvp(np.fft.rfft2, lambda g, ans, a, s=None, axes=(-2, -1), norm=None, out=None:
       np.fft.rfft2(g, s, axes, norm))
defjvp(np.fft.irfft2, lambda g, ans, a, s=None, axes=(-2, -1), norm=None, out=None:
       np.fft.irfft2(g, s, axes, norm))

# ---- shifts: permutations, whose transpose is the inverse shift ----------------------------
defvjp(np.fft.fftshift, lambda g, ans, x, axes=None: np.fft.ifftshift(g, axes))
defjvp(np.fft.fftshift, lambda g, ans, x, axes=None: np.fft.fftshift(g, axes))
defvjp(np.fft.ifftshift, lambda g, ans, x, axes=None: np.fft.fftshift(g, axes))
defjvp(np.fft.ifftshift, lambda g, ans, x, axes=None: np.fft.ifftshift(g, axes))

# ---- sample frequencies: k / (n d), differentiable in the sample spacing d -----------------
for _freq in (np.fft.fftfreq, np.fft.rfftfreq):
    defvjp(_freq, None, lambda g, ans, n, d=1.0, device=None: -np.sum(g * ans) / d)
    defjvp(_freq, None, lambda g, ans, n, d=1.0, device=None: -g * ans / d)
