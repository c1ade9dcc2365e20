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

SciPy is optional, so its rules (`srcad.ops.scipy_*`) load lazily: the first lookup of a
callable that comes from SciPy imports them, then answers. Lookups of other callables stay
one dictionary lookup (plus, on a miss and until SciPy's rules are loaded, a cheap check).
"""
from __future__ import annotations

import importlib
import sys
import threading
from dataclasses import dataclass
from typing import Callable

import numpy as np

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
_USER_RULES: set = set()  # callables the user gave a VJP or JVP (srcad registers its own while
#                           it is imported, SciPy's as they load): forward and reverse mode
#                           may disagree on them (transform/forward_grad.py)
_importing_srcad = True   # until srcad/__init__.py calls `own_rules_registered`
RULES_EDITION = [0]  # counts the user's registrations: a program compiled under an earlier
#                      edition may have inlined a rule since replaced (compile.py's guards)


def defvjp(fn: Callable, *rules) -> None:
    """Register the VJP rules of `fn`, one per positional parameter (`None`: no gradient).

    Example: `srcad.defvjp(np.sin, lambda g, ans, x: g * np.cos(x))`. A rule registered for
    a Python function overrides source transformation of that function.
    """
    _check_rules("defvjp", fn, rules)
    _load_scipy_rules_for(fn)  # so that srcad's SciPy rules, loaded later, cannot override
    _VJPS[fn] = VJPRules(fn, tuple(rules))
    _NONDIFFERENTIABLE.discard(fn)
    _note_user_rule(fn)


def returns_new_array(rule: Callable) -> Callable:
    """Mark a VJP rule whose cotangent is always an array of its own, never `g`, an argument
    or a view of one: the backward sweep then owns it and may write into it in place
    (transform/adjoints.py). A rule that may return what it was given must not be marked."""
    rule.returns_new_array = True
    return rule


def defjvp(fn: Callable, *rules) -> None:
    """Register the JVP rules of `fn`, one per positional parameter (`None`: no tangent).

    Example: `srcad.defjvp(np.sin, lambda g, ans, x: g * np.cos(x))`, where `g` is the
    tangent of `x`. A rule registered for a Python function overrides source transformation
    of that function in forward mode.
    """
    _check_rules("defjvp", fn, rules)
    _load_scipy_rules_for(fn)
    _JVPS[fn] = JVPRules(fn, tuple(rules))
    _NONDIFFERENTIABLE.discard(fn)
    _note_user_rule(fn)


def _check_rules(maker: str, fn, rules) -> None:
    if not (callable(fn) or hasattr(fn, "__get__")):
        raise TypeError(f"{maker} needs a callable or an attribute descriptor, got {fn!r}")
    if not rules or not all(r is None or callable(r) for r in rules):
        raise TypeError(f"{maker} needs one rule (a callable or None) per positional parameter")


def nondifferentiable(*fns: Callable) -> None:
    """Declare callables whose outputs carry no derivative (`np.floor`, `np.argmax`, ...)."""
    for fn in fns:
        _load_scipy_rules_for(fn)
        if fn in _VJPS or fn in _JVPS:
            raise SrcadError(f"{fn!r} already has derivative rules; it cannot also be "
                             "non-differentiable")
        _NONDIFFERENTIABLE.add(fn)
        if not (_importing_srcad or _scipy_loading):
            RULES_EDITION[0] += 1


def vjp_rules(fn) -> VJPRules | None:
    try:
        rules = _VJPS.get(fn)
    except TypeError:  # an unhashable callable cannot have rules
        return None
    if rules is None and _scipy_pending and _load_scipy_rules_for(fn):
        return _VJPS.get(fn)
    return rules


def jvp_rules(fn) -> JVPRules | None:
    try:
        rules = _JVPS.get(fn)
    except TypeError:
        return None
    if rules is None and _scipy_pending and _load_scipy_rules_for(fn):
        return _JVPS.get(fn)
    return rules


def _note_user_rule(fn) -> None:
    if not (_importing_srcad or _scipy_loading):
        _USER_RULES.add(fn)
        RULES_EDITION[0] += 1


def own_rules_registered() -> None:
    """srcad's own rules are in (SciPy's aside): rules registered from now on are the user's."""
    global _importing_srcad
    _importing_srcad = False


def has_user_rules(fn) -> bool:
    """Whether the user registered a VJP or JVP for `fn`."""
    try:
        return fn in _USER_RULES
    except TypeError:  # an unhashable callable has no rules
        return False


def is_nondifferentiable(fn) -> bool:
    try:
        if fn in _NONDIFFERENTIABLE:
            return True
    except TypeError:
        return False
    # A callable with rules is differentiable: only others may be SciPy's, not yet loaded.
    return _scipy_pending and fn not in _VJPS and _load_scipy_rules_for(fn) \
        and fn in _NONDIFFERENTIABLE


# ---- SciPy's rules, imported on first use ----------------------------------------------------
_SCIPY_RULES = ("srcad.ops.scipy_special", "srcad.ops.scipy_stats",
                "srcad.ops.scipy_multivariate", "srcad.ops.scipy_linalg")
_scipy_pending = True   # SciPy's rules are not loaded yet
_scipy_loading = False  # the thread holding the lock is importing them
_scipy_lock = threading.RLock()
_UFUNC_ORIGINS: dict = {}  # ufunc -> whether it is SciPy's (tape mode asks for each call)


def _from_scipy(fn) -> bool:
    """Whether `fn` is SciPy's: its module, or its receiver's (`scipy.stats.norm.pdf`), is
    in `scipy`. SciPy's ufuncs (`scipy.special.gamma`) have no `__module__`: they are the
    ones `scipy.special` names. Nothing is SciPy's before SciPy is imported."""
    if "scipy" not in sys.modules:
        return False
    if type(fn) is np.ufunc:
        origin = _UFUNC_ORIGINS.get(fn)
        if origin is None:
            special = sys.modules.get("scipy.special")
            origin = _UFUNC_ORIGINS[fn] = (special is not None
                                           and vars(special).get(fn.__name__) is fn)
        return origin
    for owner in (fn, getattr(fn, "__self__", None)):
        module = getattr(owner, "__module__", None)
        if isinstance(module, str) and (module == "scipy" or module.startswith("scipy.")):
            return True
    return False


def _load_scipy_rules_for(fn) -> bool:
    """Import srcad's SciPy rules if `fn` is SciPy's and they are not loaded yet. True if
    they are loaded now, by this call or by another thread it waited for: look `fn` up
    again. (The rule modules' own registrations come back here while loading.)"""
    global _scipy_pending, _scipy_loading
    if not (_scipy_pending and _from_scipy(fn)):
        return False
    with _scipy_lock:
        if not _scipy_pending or _scipy_loading:
            return not _scipy_pending
        _scipy_loading = True
        try:
            for module in _SCIPY_RULES:
                importlib.import_module(module)
            _scipy_pending = False
        finally:
            _scipy_loading = False
    return True
