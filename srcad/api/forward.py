"""forward_api: `srcad.jvp`, the forward-mode entry point.

`jvp(f, primals, tangents)` runs `f`'s tangent program (srcad/compiler/transform/forward.py) once:
one pass gives the output and its directional derivative along `tangents`. The call goes
through `srcad.runtime.calls.call_jvp`, so anything with a rule (`np.tanh`), a bound method or a
plain function is accepted, and the tangent program is cached like the adjoint.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from srcad.errors import TangentError, UsageError
from srcad.kernels.adjoints import dtype_of
from srcad.runtime import calls
from srcad.runtime.arguments import (children, is_container, like_argument, output_and_aux,
                                     promote, rebuild, unshared)
from srcad.tracebacks import api_boundary


@api_boundary
def jvp(fn: Callable, primals: tuple | list, tangents: tuple | list, *,
        has_aux: bool = False) -> tuple:
    """Forward mode: a function's output and its directional derivative, in one pass.

    Parameters
    ----------
    fn : callable
        The function.
    primals : tuple
        Its positional arguments.
    tangents : tuple
        One per primal: the direction, of the primal's structure, shape and float dtype,
        or None for an argument not differentiated (an integer count, a flag).
    has_aux : bool
        `fn` returns `(output, aux)`; only `output` is differentiated.

    Returns
    -------
    (output, output_tangent) or (output, output_tangent, aux)
        `fn(*primals)`, and its tangent along `tangents`, of the output's structure and
        shape.

    Examples
    --------
    >>> def f(x):
    ...     return x ** 2
    >>> srcad.jvp(f, (np.array([1.0, 2.0]),), (np.array([1.0, 0.5]),))
    (array([1., 4.]), array([2., 2.]))
    """
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise UsageError("jvp takes `primals` and `tangents` as tuples, one entry per "
                         "positional argument: `srcad.jvp(f, (x,), (v,))`.")
    if len(primals) != len(tangents):
        raise TangentError(f"jvp got {len(primals)} primal(s) but {len(tangents)} tangent(s); "
                           "give one tangent per primal (None for one not differentiated).")
    active = tuple(i for i, t in enumerate(tangents) if t is not None)
    args = list(primals)
    for i in active:
        args[i] = promote(primals[i], f"primals[{i}]")
    checked = tuple(checked_tangent(tangents[i], args[i], f"tangents[{i}]") for i in active)
    output, tangent = calls.jvp_call(fn, active, checked, args, {}, reached=False)
    if has_aux:  # (the aux's tangent, computed with the output's, is dropped)
        (output, aux), tangent = output_and_aux(output, "jvp"), \
            None if tangent is None else tangent[0]
        return output, unshared(like_output(tangent, output), (primals, tangents)), aux
    return output, unshared(like_output(tangent, output), (primals, tangents))


def like_output(tangent, output):
    """The tangent (None: zero) with the output's structure, shape and float dtype."""
    if is_container(output):
        return like_argument(tangent, output)
    if tangent is None:
        return like_argument(None, output)
    if isinstance(output, np.ndarray) and np.shape(tangent) != output.shape:
        tangent = np.broadcast_to(tangent, output.shape).copy()
    return like_argument(tangent, output)


def checked_tangent(tangent, primal, name: str):
    """`tangent`, checked against its (promoted) primal, with integers made the primal's
    floats: an integer tangent computed with would wrap (-uint8(1) is 255) or floor."""
    if is_container(primal):
        if type(tangent) is not type(primal) and not (
                isinstance(tangent, (tuple, list)) and isinstance(primal, (tuple, list))):
            raise TangentError(f"{name} must have its primal's structure "
                               f"({type(primal).__name__}), got {type(tangent).__name__}.")
        if not isinstance(primal, (dict, list, tuple)):  # a dataclass or registered class
            parts, given = children(primal), children(tangent)
            if len(given) != len(parts):
                raise TangentError(f"{name} must have its primal's structure: {len(parts)} "
                                   f"float fields or children, got {len(given)}.",
                                   fix="give floats and float arrays where the primal has them "
                                   "(`1.0`, not `1`).")
            return rebuild(primal, [checked_tangent(t, p, f"{name}.{k}")
                                    for k, (t, p) in enumerate(zip(given, parts))])
        keys = list(primal) if isinstance(primal, dict) else range(len(primal))
        if len(tangent) != len(primal) or (isinstance(primal, dict) and set(tangent) != set(keys)):
            raise TangentError(f"{name} must have its primal's structure: the same keys or "
                               "length.")
        leaves = [checked_tangent(tangent[key], primal[key], f"{name}[{key!r}]")
                  for key in keys]
        return rebuild(primal, leaves)
    if np.shape(tangent) != np.shape(primal):
        raise TangentError(f"{name} has shape {np.shape(tangent)} but its primal has shape "
                           f"{np.shape(primal)}; they must match.")
    kind = getattr(np.asarray(tangent).dtype, "kind", "f")
    if kind == "c" and np.iscomplexobj(primal):  # a complex primal moves in the complex plane
        return tangent
    if kind not in "fiu":
        what = "real or complex" if np.iscomplexobj(primal) else "real"
        raise TangentError(f"{name} must hold {what} numbers, got dtype "
                           f"{np.asarray(tangent).dtype}.",
                           fix="a real primal takes a real tangent: pass `np.real(v)`, or make "
                           "the primal complex." if kind == "c" else None)
    if kind == "f":
        return tangent
    if isinstance(tangent, (int, np.integer)):
        return float(tangent) if isinstance(primal, float) else dtype_of(primal).type(tangent)
    return np.asarray(tangent, dtype=dtype_of(primal))
