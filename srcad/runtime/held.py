"""held: calls of a function value that holds differentiated values.

The pullback `srcad.vjp(f, x)` returns is a function value computed from x: calling it
inside differentiated code (`srcad.vjp(f, x)[1](v)`, how autograd's `check_grads` checks
second derivatives, and how one writes a Gauss-Newton product) depends on x through what
it holds. srcad sees such a value as a *held form*: a function `pure` of what it holds and
of the call's own arguments, `value(*a, **k) == pure(*held_args, *a, **held_kwargs, **k)`.
For a pullback, `pure` is the gradient of ⟨f(*args), cotangent⟩ (api/derivative_calls.py),
a derivative srcad differentiates as any other; for `functools.partial(f, *args, **kwargs)`
it is f, holding what the partial binds.

Where the function value of a call is differentiated, the compiler makes the call
`site(value, *a, **k)` through a `HeldCall` (transform/refusals.py), and the derivatives
of that call are the derivatives of `pure`'s call. The tangent or cotangent of a held
function value is a `HeldParts`: one per value it holds, positional and by keyword.
"""
from __future__ import annotations

import functools
import types

import numpy as np

from srcad.errors import SrcadError, UnsupportedDerivativeError
from srcad.kernels.adjoints import accumulate, holds_floats
from srcad.ops.registry import declare, defjvp, defvjp, nondifferentiable
from srcad.runtime.hooks import ABOVE, DerivativeFunction
from srcad.runtime.methods import record_call, shifted


class HeldCall:
    """A call site whose callee is a differentiated function value: calling the site calls
    the value. `refusal` is the error, with the user's line, for a value with no held
    form (a closure another function made)."""

    def __init__(self, refusal: SrcadError):
        self.refusal = refusal

    def __call__(self, fn, *args, **kwargs):
        return fn(*args, **kwargs)

    def form(self, fn) -> tuple:
        """`(pure, held_args, held_kwargs)` of the function value `fn`, or the refusal."""
        if isinstance(fn, DerivativeFunction) and type(fn).kind == "vjp":
            return ABOVE.pullback_form(fn)
        if isinstance(fn, functools.partial):
            return fn.func, fn.args, fn.keywords
        if _holds_nothing(fn):  # (picked from a list holding floats, say)
            return fn, (), {}
        raise type(self.refusal)(self.refusal.message, self.refusal.location, self.refusal.fix)


def _holds_nothing(fn) -> bool:
    """A callable that holds no values at all: a ufunc, a class, a builtin function of a
    module, a Python function without closure cells or defaults."""
    if isinstance(fn, (np.ufunc, type)):
        return True
    if isinstance(fn, types.BuiltinFunctionType):
        return fn.__self__ is None or isinstance(fn.__self__, types.ModuleType)
    return isinstance(fn, types.FunctionType) and not fn.__closure__ \
        and not fn.__defaults__ and not fn.__kwdefaults__


class HeldParts:
    """The tangent or cotangent of a held function value: one per value it holds (None
    for zero), `args` by position and `kwargs` by name."""

    def __init__(self, args: tuple, kwargs: dict):
        self.args, self.kwargs = args, kwargs

    def __add__(self, other):
        if other is None:
            return self
        names = {**self.kwargs, **other.kwargs}  # (a call may override what a partial binds)
        return HeldParts(tuple(accumulate(a, b) for a, b in zip(self.args, other.args)),
                         {k: accumulate(self.kwargs.get(k), other.kwargs.get(k)) for k in names})

    __radd__ = __add__

    def part(self, spec):
        """The part for a held position or keyword name (None beyond what it holds)."""
        if isinstance(spec, int):
            return self.args[spec] if spec < len(self.args) else None
        return self.kwargs.get(spec)


class _Split:
    """How a call of a held function value maps onto the call of its `pure` function:
    the held values that hold floats come first (when the value is differentiated), then
    the call's own active arguments, shifted past the held positional ones."""

    def __init__(self, site: HeldCall, active: tuple, args: tuple, kwargs: dict):
        fn, self.call_args = args[0], args[1:]
        self.value_active = 0 in active
        self.call_active = shifted(tuple(a for a in active if a != 0), -1)
        if not self.value_active:
            self.pure, self.args, self.kwargs, self.held = fn, self.call_args, kwargs, ()
            self.inner = self.call_active
            return
        self.pure, held_args, held_kwargs = site.form(fn)
        held_kwargs = {k: v for k, v in held_kwargs.items() if k not in kwargs}
        self.count = len(held_args)
        self.held = tuple(i for i, v in enumerate(held_args) if holds_floats(v)) + tuple(
            k for k, v in held_kwargs.items() if holds_floats(v))
        self.args, self.kwargs = (*held_args, *self.call_args), {**held_kwargs, **kwargs}
        self.inner = self.held + shifted(self.call_active, self.count)
        self.held_kwargs = tuple(held_kwargs)

    def parts(self, inner_parts: tuple) -> tuple:
        """The tangents or cotangents of the site's active arguments, from those of the
        call of `pure` (`inner_parts`, in the order of `inner`)."""
        if not self.value_active:
            return tuple(inner_parts)
        held = dict(zip(self.held, inner_parts[:len(self.held)]))
        value = HeldParts(tuple(held.get(i) for i in range(self.count)),
                          {k: held.get(k) for k in self.held_kwargs})
        return (value, *inner_parts[len(self.held):])

    def inner_tangents(self, tangents: tuple) -> tuple:
        """The tangents of `inner`, from the site's (a HeldParts first where the value is
        differentiated)."""
        if not self.value_active:
            return tuple(tangents)
        value = tangents[0] or HeldParts((), {})
        return tuple(value.part(spec) for spec in self.held) + tuple(tangents[1:])


def vjp(call_vjp, site: HeldCall, active: tuple, args: tuple, kwargs: dict):
    """`(site(*args, **kwargs), pullback)`: reverse mode over the call of the held form (a
    record's `__call__` is its class's function of it and the arguments)."""
    if record_call(args[0]) is not None:
        return call_vjp(record_call(args[0]), active, *args, **kwargs)
    split = _Split(site, active, args, kwargs)
    result, pullback = call_vjp(split.pure, split.inner, *split.args, **split.kwargs)

    def held_pullback(g):
        if g is None:
            return (None,) * len(active)
        return split.parts(pullback(g))
    return result, held_pullback


def jvp(jvp_call, site: HeldCall, active: tuple, tangents: tuple, args: tuple, kwargs: dict):
    """`(site(*args, **kwargs), its tangent)`: forward mode over the call of the held form."""
    if record_call(args[0]) is not None:
        return jvp_call(record_call(args[0]), active, tangents, args, kwargs)
    split = _Split(site, active, args, kwargs)
    return jvp_call(split.pure, split.inner, split.inner_tangents(tangents), split.args,
                    split.kwargs)


def partial_vjp(active: tuple, args: tuple, kwargs: dict):
    """`functools.partial(f, *args, **kwargs)` of differentiated values, and its pullback:
    the cotangent of the partial (a HeldParts) is that of what it binds."""
    _refuse_differentiated_callee(active)
    made = functools.partial(*args, **kwargs)

    def pullback(g):
        if g is None:
            return (None,) * len(active)
        return tuple(g.part(spec - 1 if isinstance(spec, int) else spec) for spec in active)
    return made, pullback


def partial_jvp(active: tuple, tangents: tuple, args: tuple, kwargs: dict):
    """`functools.partial(f, *args, **kwargs)` and its tangent, that of what it binds."""
    _refuse_differentiated_callee(active)
    by_spec = dict(zip(active, tangents))
    return functools.partial(*args, **kwargs), HeldParts(
        tuple(by_spec.get(i) for i in range(1, len(args))),
        {k: by_spec.get(k) for k in kwargs})


def _refuse_differentiated_callee(active: tuple) -> None:
    if 0 in active:
        raise UnsupportedDerivativeError(
            "srcad cannot differentiate `functools.partial` of a function value computed from "
            "differentiated values.", fix="pass those values to the partial as arguments.")


# ---- the pieces of tangent programs of held values, differentiated once more ------------------
# (third derivatives: api/derivative_calls.py writes the tangent programs of `srcad.vjp(f, x)`
# and of a held call as Python source built from these)
def held_parts(args: tuple, kwargs: dict) -> HeldParts:
    """A HeldParts of these tangents (None for zero), as a function with rules."""
    return HeldParts(tuple(args), dict(kwargs))


def held_form(site: HeldCall, value) -> tuple:
    """`(held_args, held_kwargs)` of a held function value, as a function with rules: the
    derivative of what the value holds is the value's (a HeldParts)."""
    return site.form(value)[1:]


def held_callee(site: HeldCall, value, **kwargs):
    """The held form's `pure`, with the held keyword arguments and those of the call
    bound: a function, which carries no derivative."""
    pure, _, named = site.form(value)
    return functools.partial(pure, **named, **kwargs) if named or kwargs else pure


def held_keywords_fixed(parts) -> None:
    """Refuse a tangent of a held value's keyword arguments: the tangent program of its call
    binds them as constants (`held_callee`)."""
    if parts is not None and any(t is not None for t in parts.kwargs.values()):
        raise UnsupportedDerivativeError(
            "srcad differentiates a call of a function value holding differentiated keyword "
            "arguments twice, not three times.", fix="pass those values by position.")


def held_tangents(parts, count: int) -> tuple:
    """The first `count` positional parts of a HeldParts (all None for None)."""
    return (None,) * count if parts is None else tuple(parts.part(i) for i in range(count))


def _form_vjp(g, ans, site, value):
    if g is None or (g[0] is None and g[1] is None):
        return None
    args = (None,) * len(ans[0]) if g[0] is None else tuple(g[0])
    return HeldParts(args, {k: None if g[1] is None else g[1].get(k) for k in ans[1]})


defvjp(held_parts, lambda g, ans, args, kwargs: None if g is None else g.args,
       lambda g, ans, args, kwargs: None if g is None else g.kwargs)
defjvp(held_parts, lambda g, ans, args, kwargs: held_parts(g, dict.fromkeys(kwargs)),
       lambda g, ans, args, kwargs: held_parts((None,) * len(args), g))
defvjp(held_form, None, _form_vjp)
def _form_jvp(g, ans, site, value):
    return held_tangents(g, len(ans[0])), {k: None if g is None else g.part(k) for k in ans[1]}


defjvp(held_form, None, _form_jvp)
nondifferentiable(held_callee, held_keywords_fixed)
declare(held_form, view=True)  # (what a value holds, and a HeldParts' items, as they are)
declare(held_tangents, view=True)
defvjp(held_tangents, lambda g, ans, parts, count: HeldParts(tuple(g), {}), None)
defjvp(held_tangents, lambda g, ans, parts, count: held_tangents(g, count), None)
