"""testing: finite-difference checks of derivatives, for users and for srcad's own tests."""
from __future__ import annotations

import numpy as np

from srcad.api.derivative import vjp
from srcad.compiler.frontend.parse import code_of
from srcad.errors import UsageError
from srcad.runtime.arguments import wrt_parameters


def numerical_gradient(fn, args, position: int, eps: float = 1e-6):
    """Central finite differences of a scalar `fn` in argument `position` (float64)."""
    args = list(args)
    x = np.array(args[position], dtype=np.float64)
    gradient = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        shifted = []
        for step in (eps, -eps):
            probe = x.copy()
            probe[index] += step
            args[position] = probe if x.ndim else float(probe)
            shifted.append(np.sum(fn(*args)))
        gradient[index] = (shifted[0] - shifted[1]) / (2 * eps)
    return gradient if x.ndim else float(gradient)


def check_grads(fn, args, wrt=None, order=1, eps=1e-6, rtol=1e-5, atol=1e-6, seed=0):
    """Check srcad's VJP of `fn` at `args` against central finite differences.

    For each argument in `wrt` (all positional float or complex arguments by default), a
    random direction `v` and cotangent `u` are drawn, and `Re(u · (J v))` by finite
    differences is compared with `Re(vjp(u) · v)`. A complex argument's direction moves
    its real and imaginary parts, and a complex output gets a complex `u` (srcad's
    convention: the cotangent of z = x + iy is dL/dx - i dL/dy). Raises AssertionError
    with both numbers on a mismatch.
    """

    if order != 1:
        raise UsageError("check_grads checks first derivatives (order=1).")
    rng = np.random.default_rng(seed)
    code = code_of(fn)
    if wrt is None:
        wrt = tuple(i for i, a in enumerate(args[:code.co_argcount])
                    if np.asarray(a).dtype.kind in "fic" and not isinstance(a, bool))
    for position in (wrt if isinstance(wrt, tuple) else (wrt,)):
        _, (index,) = wrt_parameters(code, position)
        x = np.asarray(args[index], dtype=_widest(args[index]))
        direction = _draw(rng, x.shape, x.dtype)
        output, vjp_fn = vjp(fn, *args, wrt=index)
        cotangent = _draw(rng, np.shape(output), _widest(output))
        if not np.ndim(output):
            cotangent = cotangent.item()
        analytic = np.real(np.sum(np.asarray(vjp_fn(cotangent)) * direction))

        def along(t):
            shifted = list(args)
            shifted[index] = x + t * direction if x.ndim else (x + t * direction).item()
            return np.real(np.sum(cotangent * np.asarray(fn(*shifted))))

        numeric = (along(eps) - along(-eps)) / (2 * eps)
        if not np.isclose(analytic, numeric, rtol=rtol, atol=atol):
            raise AssertionError(
                f"gradient check failed for argument {index} of {code.co_name}: "
                f"reverse mode gives {analytic!r}, finite differences {numeric!r}")


def _widest(value):
    """complex128 for a complex value, float64 for another."""
    return np.complex128 if np.iscomplexobj(value) else np.float64


def _draw(rng, shape, dtype):
    """Standard normal numbers of `shape`; complex ones (real and imaginary parts) for a
    complex `dtype`."""
    sample = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        sample = sample + 1j * rng.standard_normal(shape)
    return np.asarray(sample)
