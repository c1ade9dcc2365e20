"""jacobians: full Jacobians, Hessians and Hessian-vector products.

Second derivatives are reverse-over-forward: the tangent program srcad generates for `f`
(srcad/transform/forward.py) is ordinary Python, and reverse mode transforms it again, so
`hvp(f)(x, v)` is the gradient of `x ↦ ⟨∇f(x), v⟩` computed by one forward and one backward
sweep over that program. Both programs are compiled once and cached. (The same numbers as
forward-over-reverse, since the Hessian is symmetric; this order needs no transformation of
the backward sweep's closures and stack.)
"""
from __future__ import annotations

import numpy as np

from srcad import api, cache
from srcad.arguments import like_argument, promote, seed_for, wrt_parameters
from srcad.errors import UsageError
from srcad.forward_api import jvp
from srcad.frontend.parse import code_of
from srcad.higher_order import transformable


def _single_position(fn, wrt, what: str) -> tuple[str, int]:
    if isinstance(wrt, tuple) or isinstance(wrt, str):
        raise UsageError(f"{what} takes one positional argument index in wrt, got {wrt!r}.",
                         fix="differentiate with respect to one array argument (pack several "
                         "into one array).")
    names, positions = wrt_parameters(code_of(fn), wrt)
    return names[0], positions[0]


def hvp(fn, wrt=0):
    """`hvp(f, wrt)(*args, v)`: the Hessian of scalar `f` in argument `wrt`, times `v`,
    without forming the Hessian."""
    name, position = _single_position(fn, wrt, "hvp")

    def apply(*args_and_vector):
        *args, vector = args_and_vector
        args[position] = promote(args[position], name)
        function = transformable(fn)
        program = cache.compiled_adjoint(function, (name,), mode="fwd").bound(function)
        (value, slope), pullback = api.vjp(program, (vector,), *args, wrt=position + 1)
        one = seed_for(value)  # the function must be scalar: a clear error otherwise
        if slope is None:  # on this path the output does not depend on the argument
            return like_argument(None, args[position])
        return pullback((one * 0, seed_for(slope)))
    return apply


def hessian(fn, wrt=0):
    """`hessian(f, wrt)(*args)`: shape `x.shape + x.shape` for the argument `x`, one
    Hessian-vector product per element of `x`."""
    product = hvp(fn, wrt)
    _, position = _single_position(fn, wrt, "hessian")

    def apply(*args):
        x = np.asarray(args[position], dtype=float)
        rows = [np.reshape(product(*args, basis), -1) for basis in _basis(x)]
        return np.reshape(np.array(rows), x.shape + x.shape)
    return apply


def jacobian(fn, wrt=0, mode="auto"):
    """`jacobian(f, wrt, mode)(*args)`: shape `out.shape + x.shape`. "fwd" runs one tangent
    program per input element, "rev" one backward sweep per output element; "auto" picks
    the fewer."""
    if mode not in ("auto", "fwd", "rev"):
        raise UsageError(f"mode={mode!r}: jacobian takes \"auto\", \"fwd\" or \"rev\".")
    _, position = _single_position(fn, wrt, "jacobian")

    def apply(*args):
        x = args[position]
        out = fn(*args)
        use_forward = mode == "fwd" or (mode == "auto" and np.size(x) <= np.size(out))
        if use_forward:
            tangents = [None] * len(args)
            columns = []
            for basis in _basis(np.asarray(x, dtype=float)):
                tangents[position] = basis if np.ndim(x) else float(basis)
                columns.append(np.reshape(jvp(fn, tuple(args), tuple(tangents))[1], -1))
            flat = np.array(columns).T
        else:
            value, pullback = api.vjp(fn, *args, wrt=position)
            flat = np.array([np.reshape(pullback(basis[()] if np.ndim(value) == 0 else basis),
                                        -1) for basis in _basis(np.asarray(value, float))])
        return np.reshape(flat, np.shape(out) + np.shape(x))
    return apply


def _basis(x: np.ndarray):
    """The unit arrays of `x`'s shape and dtype, one per element."""
    for k in range(x.size):
        unit = np.zeros(x.size, dtype=x.dtype)
        unit[k] = 1
        yield unit.reshape(x.shape)
