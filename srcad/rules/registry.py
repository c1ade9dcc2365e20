"""registry: the one table of derivative rules, keyed by the raw callable.

Source mode (which resolves `np.sin` when it transforms a function) and tape mode (which
sees the same function object in `__array_function__`) find the same rule here. A VJP rule
is a plain function `rule(g, ans, *args, **kwargs) -> cotangent of one argument`: `g` is the
cotangent of the output, `ans` the output, then the call's own arguments. `defvjp` takes
one rule per positional parameter, `None` for a parameter without a gradient.

A JVP rule has the same signature, `rule(g, ans, *args, **kwargs)`, with `g` the tangent of
one argument; it returns that argument's contribution to the output's tangent, with the
output's shape (`broadcast_like(g, ans)` where the argument may be broadcast). Forward mode
sums the contributions of the arguments whose tangents are nonzero.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from srcad.errors import SrcadError


@dataclass(frozen=True)
class VJPRules:
    primal: Callable
    rules: tuple  # rules[i] gives the cotangent of positional parameter i, or None


@dataclass(frozen=True)
class JVPRules:
    primal: Callable
    rules: tuple  # rules[i] gives the output tangent due to positional parameter i, or None


_VJPS: dict = {}
_JVPS: dict = {}
_NONDIFFERENTIABLE: set = set()


def defvjp(fn: Callable, *rules) -> None:
    """Register the VJP rules of `fn`, one per positional parameter (`None`: no gradient).

    Example: `srcad.defvjp(np.sin, lambda g, ans, x: g * np.cos(x))`. A rule registered for
    a Python function overrides source transformation of that function.
    """
    _check_rules("defvjp", fn, rules)
    _VJPS[fn] = VJPRules(fn, tuple(rules))
    _NONDIFFERENTIABLE.discard(fn)


def defjvp(fn: Callable, *rules) -> None:
    """Register the JVP rules of `fn`, one per positional parameter (`None`: no tangent).

    Example: `srcad.defjvp(np.sin, lambda g, ans, x: g * np.cos(x))`, where `g` is the
    tangent of `x`. A rule registered for a Python function overrides source transformation
    of that function in forward mode.
    """
    _check_rules("defjvp", fn, rules)
    _JVPS[fn] = JVPRules(fn, tuple(rules))
    _NONDIFFERENTIABLE.discard(fn)


def _check_rules(maker: str, fn, rules) -> None:
    if not (callable(fn) or hasattr(fn, "__get__")):
        raise TypeError(f"{maker} needs a callable or an attribute descriptor, got {fn!r}")
    if not rules or not all(r is None or callable(r) for r in rules):
        raise TypeError(f"{maker} needs one rule (a callable or None) per positional parameter")


def nondifferentiable(*fns: Callable) -> None:
    """Declare callables whose outputs carry no derivative (`np.floor`, `np.argmax`, ...)."""
    for fn in fns:
        if fn in _VJPS or fn in _JVPS:
            raise SrcadError(f"{fn!r} already has derivative rules; it cannot also be "
                             "non-differentiable")
        _NONDIFFERENTIABLE.add(fn)


def vjp_rules(fn) -> VJPRules | None:
    try:
        return _VJPS.get(fn)
    except TypeError:  # an unhashable callable cannot have rules
        return None


def jvp_rules(fn) -> JVPRules | None:
    try:
        return _JVPS.get(fn)
    except TypeError:
        return None


def is_nondifferentiable(fn) -> bool:
    try:
        return fn in _NONDIFFERENTIABLE
    except TypeError:
        return False
