"""testing: finite-difference checks of derivatives, for users and for srcad's own tests."""
from __future__ import annotations

import numpy as np

from srcad.arguments import wrt_parameters
from srcad.errors import UsageError
from srcad.frontend.parse import code_of


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

    For each argument in `wrt` (all positional float arguments by default), a random
    direction `v` and cotangent `u` are drawn, and `u · (J v)` by finite differences is
    compared with `vjp(u) · v`. Raises AssertionError with both numbers on a mismatch.
    """
    from srcad.api import vjp

    if order != 1:
        raise UsageError("check_grads checks first derivatives (order=1).")
    rng = np.random.default_rng(seed)
    code = code_of(fn)
    if wrt is None:
        wrt = tuple(i for i, a in enumerate(args[:code.co_argcount])
                    if np.asarray(a).dtype.kind in "fi" and not isinstance(a, bool))
    for position in (wrt if isinstance(wrt, tuple) else (wrt,)):
        _, (index,) = wrt_parameters(code, position)
        x = np.asarray(args[index], dtype=np.float64)
        direction = rng.standard_normal(x.shape)
        output, vjp_fn = vjp(fn, *args, wrt=index)
        cotangent = rng.standard_normal(np.shape(output))
        if not np.ndim(output):
            cotangent = float(cotangent)
        analytic = np.sum(np.asarray(vjp_fn(cotangent)) * direction)

        def along(t):
            shifted = list(args)
            shifted[index] = x + t * direction if x.ndim else float(x + t * direction)
            return np.sum(cotangent * np.asarray(fn(*shifted)))

        numeric = (along(eps) - along(-eps)) / (2 * eps)
        if not np.isclose(analytic, numeric, rtol=rtol, atol=atol):
            raise AssertionError(
                f"gradient check failed for argument {index} of {code.co_name}: "
                f"reverse mode gives {analytic!r}, finite differences {numeric!r}")
