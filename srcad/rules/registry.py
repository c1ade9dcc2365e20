"""registry: the one table of derivative rules, keyed by the raw callable.

Source mode (which resolves `np.sin` when it transforms a function) and tape mode (which
sees the same function object in `__array_function__`) find the same rule here. A VJP rule
is a plain function `rule(g, ans, *args, **kwargs) -> cotangent of one argument`: `g` is the
cotangent of the output, `ans` the output, then the call's own arguments. `defvjp` takes
one rule per positional parameter, `None` for a parameter without a gradient.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from srcad.errors import SrcadError


@dataclass(frozen=True)
class VJPRules:
    primal: Callable
    rules: tuple  # rules[i] gives the cotangent of positional parameter i, or None


_VJPS: dict = {}
_NONDIFFERENTIABLE: set = set()


def defvjp(fn: Callable, *rules) -> None:
    """Register the VJP rules of `fn`, one per positional parameter (`None`: no gradient).

    Example: `srcad.defvjp(np.sin, lambda g, ans, x: g * np.cos(x))`. A rule registered for
    a Python function overrides source transformation of that function.
    """
    if not (callable(fn) or hasattr(fn, "__get__")):
        raise TypeError(f"defvjp needs a callable or an attribute descriptor, got {fn!r}")
    if not rules or not all(r is None or callable(r) for r in rules):
        raise TypeError("defvjp needs one rule (a callable or None) per positional parameter")
    _VJPS[fn] = VJPRules(fn, tuple(rules))
    _NONDIFFERENTIABLE.discard(fn)


def nondifferentiable(*fns: Callable) -> None:
    """Declare callables whose outputs carry no derivative (`np.floor`, `np.argmax`, ...)."""
    for fn in fns:
        if fn in _VJPS:
            raise SrcadError(f"{fn!r} already has VJP rules; it cannot also be non-differentiable")
        _NONDIFFERENTIABLE.add(fn)


def vjp_rules(fn) -> VJPRules | None:
    try:
        return _VJPS.get(fn)
    except TypeError:  # an unhashable callable cannot have rules
        return None


def is_nondifferentiable(fn) -> bool:
    try:
        return fn in _NONDIFFERENTIABLE
    except TypeError:
        return False
