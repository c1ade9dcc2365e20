"""attempts: the derivatives of `attempt(body, handled, names, **captured)`, the call a `try`
statement becomes (frontend/try_blocks.py, ops/python_statements.py).

When the body completes, the call's derivative is the body's; when it raises an exception
the handlers take, it left nothing recorded, and the values `attempt` passes on (what the
variables `names` held before) pass on their derivatives. srcad's own refusals raised
inside the body are never the user's exceptions: they go on.

The tangent program of a call of `attempt`, which srcad differentiates again for second
derivatives, is Python source (`TANGENT_SOURCE`): the same `attempt`, of a body that returns
the body's value and tangent, so reverse or forward mode over it meets a `try` body's
tangent program as any other call. `runtime/calls.py` dispatches here, handing over its
`call_vjp` and `jvp_call`.
"""
from __future__ import annotations

import functools

from srcad.errors import SrcadError
from srcad.ops.python_statements import attempt, kept, untouched


def vjp(call_vjp, active: tuple, args: tuple, kwargs: dict):
    """`(attempt(*args, **kwargs), pullback)`; `active` names captured values."""
    body, handled, names = args
    unchanged = untouched(kwargs)
    try:
        values, pullback = call_vjp(body, active, **kwargs)
    except handled as exception:
        _not_srcads(exception)
        unchanged()
        return (exception, *kept(names, kwargs)), _kept_pullback(active, names)
    unchanged()

    def outcome_pullback(g):
        return (None,) * len(active) if g is None else pullback(tuple(g[1:]))
    return (None, *values), outcome_pullback


def jvp(jvp_call, active: tuple, tangents: tuple, args: tuple, kwargs: dict):
    """`(attempt(*args, **kwargs), its tangent)`."""
    body, handled, names = args
    unchanged = untouched(kwargs)
    try:
        values, tangent = jvp_call(body, active, tangents, (), kwargs)
    except handled as exception:
        _not_srcads(exception)
        unchanged()
        kept_tangents = kept(names, dict(zip(active, tangents)))
        return (exception, *kept(names, kwargs)), (
            None if all(t is None for t in kept_tangents) else (None, *kept_tangents))
    unchanged()
    return (None, *values), None if tangent is None else (None, *tangent)


def _not_srcads(exception) -> None:
    if isinstance(exception, SrcadError):
        raise exception


def _kept_pullback(active, names):
    def pullback(g):
        if g is None:
            return (None,) * len(active)
        return tuple(_total([c for name, c in zip(names, g[1:]) if name == spec])
                     for spec in active)
    return pullback


def _total(parts):
    parts = [p for p in parts if p is not None]
    return functools.reduce(lambda a, b: a + b, parts) if parts else None


# P(seeds, body, handled, names, **captured) -> (attempt's value, its tangent); the seeds are
# one dict, by captured name (runtime/calls.py SeedOrder: `**captured` is one parameter), or
# none at all where no captured value has a tangent
TANGENT_SOURCE = '''
def body_tangent(*, body, tangents, captured):
    active = tuple([name for name in tangents if tangents[name] is not None])
    return (call_jvp(body, active, tuple([tangents[name] for name in active]), **captured),)


def attempt_tangent(seeds, body, handled, names, **captured):
    tangents = seeds[0] if seeds else {}
    raised, pair = attempt(body_tangent, handled, ("pair",), body=body, tangents=tangents,
                           captured=captured)
    if raised is None:
        values, value_tangents = pair
        if value_tangents is None:
            return (None,) + tuple(values), None
        return (None,) + tuple(values), (None,) + tuple(value_tangents)
    return (raised,) + kept(names, captured), (None,) + kept(names, tangents)
'''


def tangent_program(defined_by, call_jvp):
    """The tangent program of `attempt`, defined by `TANGENT_SOURCE`."""
    return defined_by(TANGENT_SOURCE, "attempt_tangent",
                      {"attempt": attempt, "kept": kept, "call_jvp": call_jvp})
