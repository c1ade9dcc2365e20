"""testing: finite-difference checks of derivatives, for users and for srcad's own tests."""
from __future__ import annotations

import inspect
from typing import Callable

import numpy as np

from srcad.api.derivative import vjp
from srcad.compiler.frontend.parse import code_of
from srcad.errors import UsageError
from srcad.runtime.arguments import Wrt, chosen_wrt, wrt_parameters
from srcad.tracebacks import api_boundary


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


@api_boundary
def check_grads(fn: Callable, args: tuple, wrt: Wrt | None = None, order: int = 1,
                eps: float = 1e-6, rtol: float = 1e-5, atol: float = 1e-6, seed: int = 0, *,
                argnums: Wrt | None = None) -> None:
    """Check srcad's VJP of a function against central finite differences.

    For each argument in `wrt`, a random direction `v` and cotangent `u` are drawn, and
    `Re(u · (J v))` by finite differences is compared with `Re(vjp(u) · v)`. A complex
    argument's direction moves its real and imaginary parts, and a complex output gets a
    complex `u` (srcad's convention: the cotangent of z = x + iy is dL/dx - i dL/dy).

    Parameters
    ----------
    fn : callable
        The function.
    args : tuple
        Its positional arguments, where the derivative is checked.
    wrt, argnums : int or tuple, optional
        The arguments to check, as for `grad`; default: every float or complex one.
    order : int
        1: first derivatives (the only order checked).
    eps, rtol, atol : float
        The finite-difference step, and the tolerances of the comparison (`np.isclose`).
    seed : int
        Of the random directions and cotangents.

    Raises
    ------
    AssertionError
        With both numbers, where they differ.

    Examples
    --------
    >>> def f(x, w):
    ...     return np.tanh(x @ w)
    >>> srcad.check_grads(f, (np.ones(2), np.eye(2)))  # silent: the derivatives agree
    """
    if argnums is not None:
        wrt = chosen_wrt(wrt, argnums)

    if order != 1:
        raise UsageError("check_grads checks first derivatives (order=1).")
    rng = np.random.default_rng(seed)
    code = code_of(fn)
    if wrt is None:
        wrt = tuple(i for i, a in enumerate(args[:code.co_argcount])
                    if np.asarray(a).dtype.kind in "fic" and not isinstance(a, bool))
        if not wrt:  # (never a check that checks nothing)
            fix = "wrap it in a function whose parameters name them" \
                if code.co_flags & inspect.CO_VARARGS else "pass the positions as `wrt=`"
            raise UsageError(f"check_grads found no named float parameter of "
                             f"`{fn.__name__}` to check: {fix}.")
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
