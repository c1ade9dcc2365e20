"""derivative_calls: derivatives called where srcad differentiates.

A function may call `srcad.grad(h)` (or `value_and_grad`, a derivative of a derivative,
meta-learning's inner steps) or `srcad.jvp(h, ...)`. Each such call is differentiated as a
primitive whose derivatives srcad builds from h's tangent program (srcad/runtime/calls.py):
`G = grad(h, wrt=W)` maps the arguments to ∇_W h; its VJP at a cotangent u is the gradient
of the directional derivative ⟨∇_W h, u⟩ = jvp(h; u on W), and its JVP along t is the
gradient over W of jvp(h; t): both are reverse mode over h's tangent program. For a
derivative of a derivative, `derivative_tangent_program` writes G's own tangent program as
Python source, so every order is transformed the same way.
"""
from __future__ import annotations

import inspect

from srcad.api import derivative as api
from srcad.api import forward as forward_api
from srcad.api.adapters import parameters_of
from srcad.api.forward import like_output
from srcad.errors import MissingRuleError, UsageError
from srcad.runtime import calls
from srcad.runtime.arguments import like_argument, seed_for
from srcad.runtime.calls import compiled_source, tangent_program

_NONE = inspect.Parameter.empty


# `G = grad(h, wrt=W)` maps the arguments to ∇_W h. Its VJP at a cotangent u is the gradient
# of the directional derivative ⟨∇_W h, u⟩ = jvp(h; u on W), and its JVP along t is the
# gradient over W of jvp(h; t): both are reverse mode over h's tangent program.

def vjp_of_derivative(fn, active: tuple, args: tuple, kwargs: dict):
    """`(fn(*args, **kwargs), pullback)` for `fn` made by `srcad.grad`/`value_and_grad`."""
    fn = fn.in_source_mode()
    plan = _Plan(fn, args, kwargs)
    result = fn(*args, **kwargs)
    kwargs = plan.kwargs  # (and the defaults of `wrt` arguments the call leaves out)
    program, order = tangent_program(plan.function, plan.wrt_spec, plan.args, kwargs)
    inner = _after_seeds(active)

    def pullback(g):
        if g is None:
            return (None,) * len(active)
        value_cotangent, u = (None, g) if plan.gradient_only else g
        seeds = order(plan.dense(u), plan.args, kwargs)
        (_, slope), back = calls.call_vjp(program, inner, seeds, *plan.args, **kwargs)
        return back((value_cotangent, plan.slope_seed(slope)))
    return result, pullback


def jvp_of_derivative(fn, active: tuple, tangents: tuple, args: tuple, kwargs: dict):
    """`(fn(*args, **kwargs), its tangent)` for `fn` made by `srcad.grad`/`value_and_grad`."""
    fn = fn.in_source_mode()
    plan = _Plan(fn, args, kwargs)
    result = fn(*args, **kwargs)
    kwargs = plan.kwargs  # (and the defaults of `wrt` arguments the call leaves out)
    live = [(spec, t) for spec, t in zip(active, tangents) if t is not None]
    program, order = tangent_program(plan.function, tuple(s for s, _ in live), args, kwargs)
    seeds = order(tuple(t for _, t in live), args, kwargs)
    (_, slope), back = calls.call_vjp(program, _after_seeds(plan.wrt_spec), seeds, *args,
                                      **kwargs)
    cotangents = back((None, plan.slope_seed(slope))) if slope is not None \
        else (None,) * len(plan.wrt_spec)
    gradients = plan.shaped(cotangents)
    return result, gradients if plan.gradient_only else (slope, gradients)


class _Plan:
    """What differentiating a call of `G = grad(h, wrt)` needs to know of G: its `wrt`
    arguments and its output conventions."""

    def __init__(self, fn, args, kwargs):
        d = _derivative(fn, args, kwargs)
        self.function = d.fn  # (what G differentiates: for `*args`, one per count of them)
        self.gradient_only = type(fn).kind == "grad"
        self.has_aux = d.has_aux
        self.several = isinstance(d.wrt, tuple)
        self.args = tuple(args)
        self.wrt_spec = tuple(p if p is not None and p < len(args) else name  # (or by keyword)
                              for p, name in zip(d.positions, d.names))
        self.kwargs = kwargs  # and the defaults of `wrt` arguments the call leaves out:
        missing = [s for s in self.wrt_spec if isinstance(s, str) and s not in kwargs]
        if missing:
            parameters = inspect.signature(d.fn).parameters
            self.kwargs = {**{s: parameters[s].default for s in missing if getattr(
                parameters.get(s), "default", _NONE) is not _NONE}, **kwargs}
        self.wrt_values = [args[s] if isinstance(s, int) and s < len(args) else self.kwargs[s]
                           if s in self.kwargs else _missing(fn, s) for s in self.wrt_spec]

    def dense(self, u) -> tuple:
        """The cotangent of G's output as tangents of the `wrt` arguments, zeros for None."""
        parts = u if self.several else (u,)
        return tuple(like_argument(None, x) if p is None else p
                     for p, x in zip(parts, self.wrt_values))

    def slope_seed(self, slope):
        """The cotangent that picks h's directional derivative out of its tangent."""
        if self.has_aux:
            return None if slope is None else (seed_for(slope[0]), None)
        return None if slope is None else seed_for(slope)

    def shaped(self, cotangents):
        shaped = tuple(like_argument(c, x) for c, x in zip(cotangents, self.wrt_values))
        return shaped if self.several else shaped[0]


def _derivative(fn, args: tuple, kwargs: dict) -> api.Derivative:
    """The Derivative a call of `fn` with these arguments runs."""
    if type(fn).kind not in ("grad", "value_and_grad"):
        raise MissingRuleError(
            f"srcad cannot differentiate {fn!r}: the pullback `srcad.vjp` returns holds the "
            "values of its forward sweep, which srcad cannot follow.",
            fix="differentiate a function that calls `srcad.grad` or `srcad.value_and_grad` "
            "instead.")
    d = fn.derivative
    return d.at(args, kwargs) if isinstance(d, api.ByArity) else d


def _missing(fn, spec):
    raise UsageError(f"{fn!r} was called without its argument {spec!r}; srcad differentiates "
                     "derivatives of functions called with the arguments they differentiate.",
                     fix="pass every `wrt` argument explicitly.")


def _after_seeds(active) -> tuple:
    """Argument specs of a call, for the tangent program whose first argument is the seeds."""
    return tuple(a + 1 if isinstance(a, int) else a for a in active)


def derivative_tangent_program(fn, spec: tuple, args: tuple, kwargs: dict):
    """`(P, seed_order)` for a derivative object `G = grad(h)`: `P(seeds, *params)` returns
    `G(*params)` and its tangent, the gradient of h's directional derivative, written as
    Python source that srcad can differentiate once more (third order and beyond)."""
    fn = fn.in_source_mode()
    d = _derivative(fn, args, kwargs)
    program, order = tangent_program(d.fn, spec, args, kwargs)
    # (of G, or for `*args` of the function with one parameter per argument of this call)
    parameters, passed, defaults = parameters_of(
        d.fn if isinstance(fn.derivative, api.ByArity) else fn)
    seeds = "seeds"
    while seeds in inspect.signature(fn).parameters:  # a derivative of one: no clash
        seeds += "_"
    pick = "[1][0]" if d.has_aux else "[1]"
    slope = compiled_source(
        f"def slope({seeds}, {parameters}):\n    return srcad_program({seeds}, {passed}){pick}\n",
        "slope", {"srcad_program": program, **defaults}, "<srcad-slope>")
    wrt = _after_seeds(tuple(p if p is not None else n for p, n in zip(d.positions, d.names)))
    gradient = api.grad(slope, wrt=wrt if isinstance(d.wrt, tuple) else wrt[0])
    tangent = "srcad_gradient({0})" if type(fn).kind == "grad" \
        else "(srcad_program({0})[1], srcad_gradient({0}))"
    source = (f"def tangent_program({seeds}, {parameters}):\n"
              f"    return (srcad_callee({passed}), {tangent.format(seeds + ', ' + passed)})\n")
    made = compiled_source(source, "tangent_program", {
        "srcad_callee": fn, "srcad_gradient": gradient, "srcad_program": program, **defaults},
        f"<srcad-tangent program of {fn!r}>")
    return made, order


# ---- `srcad.jvp(f, primals, tangents)` called where srcad differentiates -----------------------
class _JvpCall:
    """A call of `srcad.jvp` seen as f's tangent program `P(seeds, *primals)`."""

    def __init__(self, args, kwargs):
        bound = inspect.signature(forward_api.jvp).bind(*args, **kwargs)
        self.fn, primals, tangents = (bound.arguments[k] for k in ("fn", "primals", "tangents"))
        self.primals, self.count = tuple(primals), len(tangents)
        self.live = tuple(i for i, t in enumerate(tangents) if t is not None)
        self.program, self.order = tangent_program(self.fn, self.live, self.primals, {})
        self.seeds = self.order(tuple(tangents[i] for i in self.live), self.primals, {})

    @staticmethod
    def which(spec) -> str | None:
        """"primals", "tangents" or None (the function) for an argument of `srcad.jvp`."""
        return {1: "primals", 2: "tangents"}.get(spec, spec if spec in (
            "primals", "tangents") else None)

    def inner_active(self, active) -> tuple:
        kinds = {self.which(spec) for spec in active}
        return ((0,) if "tangents" in kinds and self.live else ()) + (
            tuple(range(1, len(self.primals) + 1)) if "primals" in kinds else ())

    def outer(self, active, inner, cotangents) -> tuple:
        by_inner = dict(zip(inner, cotangents))
        tangents = [None] * self.count
        if 0 in by_inner and by_inner[0] is not None:
            for i, c in zip(self.live, self.order.back(by_inner[0])):
                tangents[i] = c
        primals = tuple(by_inner.get(i + 1) for i in range(len(self.primals)))
        parts = {"primals": primals, "tangents": tuple(tangents), None: None}
        return tuple(parts[self.which(spec)] for spec in active)

    @staticmethod
    def shaped(pair):
        output, tangent = pair
        return output, like_output(tangent, output)


def vjp_of_jvp(active: tuple, args: tuple, kwargs: dict):
    """`srcad.jvp(f, primals, tangents)` and its pullback: reverse mode over f's tangent
    program, with respect to the primals and the tangents."""
    call = _JvpCall(args, kwargs)
    inner = call.inner_active(active)
    pair, pullback = calls.call_vjp(call.program, inner, call.seeds, *call.primals)

    def outer(g):
        return call.outer(active, inner, pullback(g)) if g is not None \
            else (None,) * len(active)
    return call.shaped(pair), outer


def jvp_of_jvp(active: tuple, tangents: tuple, args: tuple, kwargs: dict):
    """`srcad.jvp(f, primals, tangents)` and its tangent: forward mode over f's tangent
    program."""
    call = _JvpCall(args, kwargs)
    given = {call.which(spec): t for spec, t in zip(active, tangents)}
    specs, inner_tangents = [], []
    if given.get("tangents") is not None and call.live:
        specs.append(0)
        inner_tangents.append(call.order(tuple(given["tangents"][i] for i in call.live),
                                         call.primals, {}))
    if given.get("primals") is not None:
        specs += range(1, len(call.primals) + 1)
        inner_tangents += list(given["primals"])
    pair, tangent = calls.jvp_call(call.program, tuple(specs), tuple(inner_tangents),
                                   (call.seeds, *call.primals), {})
    output = call.shaped(pair)
    if tangent is None:
        return output, None
    return output, tuple(None if t is None else like_output(t, o)
                         for t, o in zip(tangent, output))
