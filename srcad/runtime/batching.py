"""batching: what batched tangent programs (transform/batched.py) call when they run, beyond
the rules (kernels/batched.py says what a batched tangent is): the calls of the user's
helpers, by their own batched programs, and the elements of a batched tangent."""
from __future__ import annotations

import types

import numpy as np

from srcad.kernels.batched import NotBatchable, refused
from srcad.ops.callables import unwrapped
from srcad.ops.python_statements import attempt
from srcad.runtime import calls
from srcad.runtime.control import CustomGradient
from srcad.runtime.hooks import ABOVE


# ---- calls of the user's helpers ----------------------------------------------------------------
def call(fn, active: tuple, tangents: tuple, *args, **kwargs):
    """`(fn(*args, **kwargs), its batched tangent)` for a Python function without rules:
    its own batched tangent program, seeded with the batched tangents of the arguments at
    `active` (positions or names). Anything else is not batched here."""
    if fn is attempt:  # (a `try` body: its Jacobian is taken column by column)
        refused("a `try` statement")
    function = unwrapped(calls.spread(fn, args))
    if not isinstance(function, types.FunctionType) or isinstance(fn, CustomGradient) \
            or calls.vjp_rules(fn) is not None or calls.jvp_rules(fn) is not None \
            or calls.is_derivative(fn) or calls.is_nondifferentiable(fn):
        refused(f"the call of {fn!r}")
    live = [(spec, t) for spec, t in zip(active, tangents) if t is not None]  # (a zero one
    active, tangents = tuple(s for s, _ in live), tuple(t for _, t in live)  # is no seed)
    if not live:
        return fn(*args, **kwargs), None
    places = [calls.parameter_of(function, spec) for spec in active]
    if any(part is not None for _, part in places) \
            or any(isinstance(t, (list, tuple, dict)) for t in tangents):
        refused("a call passing `*args`, `**kwargs` or containers with tangents")
    names = tuple(name for name, _ in places)
    if len(set(names)) != len(names):
        refused("a call passing one parameter twice")
    key = (function.__code__, names)
    if key in _UNBATCHABLE:  # known from an earlier call: do not transform again
        refused(f"the call of {fn!r}")
    try:
        program = ABOVE.compiled_adjoint(function, names, mode="batch").bound(function)
    except NotBatchable:
        _UNBATCHABLE.add(key)
        raise
    with calls.NESTED:
        return program(tuple(tangents), *args, **kwargs)


_UNBATCHABLE = set()  # (code, parameter names) of helpers without a batched program


def tangent_elements(tangent, count: int):
    """`tangents.tangent_elements` for batched tangents: an array's rows along its first
    logical axis (the batch axis comes first), a sequence's items as they are."""
    if tangent is None:
        return (None,) * count
    if isinstance(tangent, np.ndarray):
        return tuple(tangent[:, i] for i in range(count))
    return tangent
