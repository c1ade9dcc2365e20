"""derivative_calls: derivatives called where srcad differentiates.

A function may call `srcad.grad(h)` (or `value_and_grad`, a derivative of a derivative,
meta-learning's inner steps), `srcad.jvp(h, ...)`, or `srcad.vjp(h, ...)` and its
pullback. Each such call is differentiated as a primitive whose derivatives srcad builds from h's tangent program (srcad/runtime/calls.py):
`G = grad(h, wrt=W)` maps the arguments to ∇_W h; its VJP at a cotangent u is the gradient
of the directional derivative ⟨∇_W h, u⟩ = jvp(h; u on W), and its JVP along t is the
gradient over W of jvp(h; t): both are reverse mode over h's tangent program. For a
derivative of a derivative, `derivative_tangent_program` writes G's own tangent program as
Python source, so every order is transformed the same way. The pullback `srcad.vjp(h, x)`
returns is a function value holding x (runtime/held.py): its call at a cotangent c is the
call `G(x, c)` of the gradient G of ⟨h(x), c⟩, differentiated as above.
"""
from __future__ import annotations

import functools
import inspect

import numpy as np

from srcad.api import derivative as api
from srcad.api import forward as forward_api
from srcad.api.adapters import parameters_of
from srcad.api.forward import like_output
from srcad.errors import MissingRuleError, UnsupportedDerivativeError, UsageError
from srcad.kernels.adjoints import accumulate, holds_floats
from srcad.runtime import calls
from srcad.runtime.arguments import chosen_wrt, like_argument, seed_for
from srcad.runtime.calls import SeedOrder, compiled_source, tangent_program
from srcad.runtime.held import (HeldParts, held_callee, held_form, held_keywords_fixed,
                                held_parts, held_tangents)
from srcad.runtime.methods import shifted

_NONE = inspect.Parameter.empty


# `G = grad(h, wrt=W)` maps the arguments to ∇_W h. Its VJP at a cotangent u is the gradient
# of the directional derivative ⟨∇_W h, u⟩ = jvp(h; u on W), and its JVP along t is the
# gradient over W of jvp(h; t): both are reverse mode over h's tangent program.

def vjp_of_derivative(fn, active: tuple, args: tuple, kwargs: dict):
    """`(fn(*args, **kwargs), pullback)` for `fn` made by `srcad.grad`/`value_and_grad`,
    or a pullback made by `srcad.vjp` (where it is made outside: what it holds is fixed),
    or one computed by a form (a Jacobian, a Hessian, an hvp: api/jacobians.py)."""
    if type(fn).kind == "form":
        return calls.call_vjp(fn.form(args, kwargs), active, *args, **kwargs)
    if type(fn).kind == "vjp":
        pure, held, held_kwargs = pullback_form(fn)
        return calls.call_vjp(pure, shifted(active, len(held)), *held, *args,
                              **held_kwargs, **kwargs)
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
    """`(fn(*args, **kwargs), its tangent)` for `fn` made by `srcad.grad`/`value_and_grad`
    (or `srcad.vjp`, or a form, as above)."""
    if type(fn).kind == "form":
        return calls.jvp_call(fn.form(args, kwargs), active, tangents, args, kwargs)
    if type(fn).kind == "vjp":
        pure, held, held_kwargs = pullback_form(fn)
        return calls.jvp_call(pure, shifted(active, len(held)), tangents, (*held, *args),
                              {**held_kwargs, **kwargs})
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
    if type(fn).kind == "grad_with_aux":
        _refuse_aux("srcad.grad(..., has_aux=True)")
    if type(fn).kind == "with_aux":
        _refuse_aux(f"srcad.{fn.what}(..., has_aux=True)")
    if type(fn).kind not in ("grad", "value_and_grad"):
        raise MissingRuleError(
            f"srcad differentiates calls of {fn!r}, a pullback `srcad.vjp` made, to second "
            "order only.", fix="for third derivatives, differentiate a function that calls "
            "`srcad.grad` or `srcad.value_and_grad` instead.")
    d = fn.derivative
    return d.at(args, kwargs) if isinstance(d, api.ByArity) else d


def _refuse_aux(what: str):
    raise UnsupportedDerivativeError(
        f"srcad does not differentiate a call of {what} inside a differentiated function.",
        fix="call it there on a function returning the differentiated value alone; for "
        "gradients, `srcad.value_and_grad(f, has_aux=True)` may be called there.")


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
    Python source that srcad can differentiate once more (third order and beyond). A form's
    (api/jacobians.py) is its plain code's."""
    if type(fn).kind == "form":
        return tangent_program(fn.form(args, kwargs), spec, args, kwargs)
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
        if bound.arguments.get("has_aux"):
            _refuse_aux("srcad.jvp(..., has_aux=True)")
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


# ---- `srcad.vjp(f, *args)` and its pullback called where srcad differentiates ----------------
class _VjpCall:
    """A call `srcad.vjp(fn, *primals, wrt=..., **kwargs)` with the arguments `active` lists
    differentiated: `inner` lists them as arguments of `fn`."""

    def __init__(self, active: tuple, args: tuple, kwargs: dict):
        kwargs = dict(kwargs)
        self.fn = args[0] if args else kwargs.pop("fn")
        self.primals = tuple(args[1:])
        self.wrt = chosen_wrt(kwargs.pop("wrt", None), kwargs.pop("argnums", None))
        if kwargs.pop("has_aux", False):
            _refuse_aux("srcad.vjp(..., has_aux=True)")
        self.kwargs = kwargs
        if 0 in active or "fn" in active:
            raise UnsupportedDerivativeError(
                "srcad cannot differentiate `srcad.vjp` of a function value computed from "
                "differentiated values (a pullback, a partial, a closure another function "
                "made).", fix="define the function with `def` where it is differentiated, "
                "passing those values as arguments.")
        self.inner = tuple(a - 1 if isinstance(a, int) else a for a in active)

    def made(self) -> tuple:
        return api.vjp(self.fn, *self.primals, wrt=self.wrt, **self.kwargs)

    def held_parts(self, parts: tuple) -> HeldParts:
        """The tangent of the pullback: the tangents of the values it holds."""
        by_spec = dict(zip(self.inner, parts))
        return HeldParts(tuple(by_spec.get(i) for i in range(len(self.primals))),
                         {k: by_spec.get(k) for k in self.kwargs})


def vjp_of_vjp(active: tuple, args: tuple, kwargs: dict):
    """`srcad.vjp(f, *args)` and the pullback of that call: its output's cotangent goes
    through f's pullback, its pullback's (a HeldParts) straight to the values it holds."""
    call = _VjpCall(active, args, kwargs)
    made = call.made()
    _, output_pullback = calls.call_vjp(call.fn, call.inner, *call.primals, **call.kwargs)

    def pullback(g):
        if g is None:
            return (None,) * len(active)
        output_part, value_part = g
        parts = output_pullback(output_part) if output_part is not None \
            else (None,) * len(call.inner)
        if value_part is None:
            return parts
        return tuple(accumulate(p, value_part.part(spec)) for p, spec in zip(parts, call.inner))
    return made, pullback


def jvp_of_vjp(active: tuple, tangents: tuple, args: tuple, kwargs: dict):
    """`srcad.vjp(f, *args)` and its tangent: f's output's, and for the pullback the
    tangents of the values it holds."""
    call = _VjpCall(active, args, kwargs)
    made = call.made()
    _, output_tangent = calls.jvp_call(call.fn, call.inner, tangents, call.primals, call.kwargs)
    return made, (output_tangent, call.held_parts(tangents))


def pullback_form(pullback) -> tuple:
    """`(G, args, kwargs)` for a pullback of `srcad.vjp(f, *args, **kwargs)`, with
    `pullback(c) == G(*args, c, **kwargs)`: G is the gradient of ⟨f(*args), c⟩ over the
    arguments the vjp differentiates (runtime/held.py differentiates its calls)."""
    args, kwargs = pullback.arguments
    d = pullback.derivative
    if d.has_aux:
        _refuse_aux("the pullback of srcad.vjp(..., has_aux=True)")
    d = d.at(args, kwargs) if isinstance(d, api.ByArity) else d
    wrt = tuple(p if p is not None and p < len(args) else name
                for p, name in zip(d.positions, d.names))
    for spec in wrt:
        if isinstance(spec, str) and spec not in kwargs:
            _missing(pullback, spec)
    leaves = tuple(_float_leaves(pullback.output))
    key = (d.fn, wrt if d.as_tuple else wrt[0], len(args), tuple(kwargs), leaves)
    try:
        gradient = _inner_product_gradient(*key)
    except TypeError:  # an unhashable function: made for this call alone
        gradient = _inner_product_gradient.__wrapped__(*key)
    return gradient, args, kwargs


def _float_leaves(value, path=()):
    """`(index path, is complex)` of each part of an output that holds floats."""
    if isinstance(value, (tuple, list)):
        for i, item in enumerate(value):
            yield from _float_leaves(item, (*path, i))
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _float_leaves(item, (*path, key))
    elif holds_floats(value):
        yield path, bool(np.iscomplexobj(value))


@functools.lru_cache(maxsize=256)
def _inner_product_gradient(fn, wrt, count: int, keywords: tuple, leaves: tuple):
    """`srcad.grad` of `def inner(a0, .., cotangent, *, k, ..)`, the real inner product of
    `fn(a0, .., k=k, ..)` and `cotangent` over the output's float parts `leaves`."""
    positional = [f"srcad_argument_{i}" for i in range(count)]
    cotangent = "cotangent" if "cotangent" not in keywords else "srcad_cotangent"
    parameters = ", ".join([*positional, cotangent] + (["*", *keywords] if keywords else []))
    passed = ", ".join([*positional, *(f"{k}={k}" for k in keywords)])
    terms = []
    for path, complex_valued in leaves:
        index = "".join(f"[{step!r}]" for step in path)
        term = f"srcad_numpy.sum(srcad_output{index} * {cotangent}{index})"
        terms.append(f"srcad_numpy.real({term})" if complex_valued else term)
    source = (f"def inner({parameters}):\n"
              f"    srcad_output = srcad_function({passed})\n"
              f"    return {' + '.join(terms) or '0.0'}\n")
    inner = compiled_source(source, "inner", {"srcad_function": fn, "srcad_numpy": np},
                            f"<srcad-inner product of {getattr(fn, '__name__', 'a function')}>")
    return api.grad(inner, wrt=wrt)


# ---- tangent programs of `srcad.vjp(f, *args)` and of a held call, for third derivatives -----
# Python source srcad differentiates once more: `P(seeds, *arguments)` returns the call's
# value and its tangent, the seeds being the tangents of the arguments `spec` lists.
_TANGENT_PROGRAMS: dict = {}


def vjp_tangent_program(spec: tuple, args: tuple, kwargs: dict):
    """`(P, seed order)` for a call `srcad.vjp(f, *primals, **kwargs)`: its value, and as
    tangent f's output's (`srcad.jvp` of f) and the pullback's (a HeldParts of the
    primals' tangents)."""
    call = _VjpCall(spec, args, kwargs)
    _refuse_keywords_a_third_time(call.inner)
    count, keywords = len(call.primals), tuple(kwargs)
    key = ("vjp", count, keywords, call.inner)
    program = _TANGENT_PROGRAMS.get(key)
    if program is None:
        primals = [f"a{i}" for i in range(count)]
        seeds = {position: k for k, position in enumerate(call.inner)}
        tangents = [f"srcad_seeds[{seeds[i]}]" if i in seeds else "None" for i in range(count)]
        passed = [k for k in keywords if k != "wrt"]
        callee = f"srcad_partial(srcad_fn, {', '.join(f'{k}={k}' for k in passed)})" if passed \
            else "srcad_fn"
        source = (
            f"def vjp_tangent_program(srcad_seeds, srcad_fn, {', '.join(primals)}"
            f"{', *, ' + ', '.join(keywords) if keywords else ''}):\n"
            f"    made = srcad_vjp(srcad_fn, "
            f"{', '.join(primals + [f'{k}={k}' for k in keywords])})\n"
            f"    slope = srcad_jvp({callee}, ({', '.join(primals)},), "
            f"({', '.join(tangents)},))[1]\n"
            f"    return (made, (slope, srcad_held_parts(({', '.join(tangents)},), "
            f"{{{', '.join(f'{k!r}: None' for k in passed)}}})))\n")
        program = _TANGENT_PROGRAMS[key] = compiled_source(source, "vjp_tangent_program", {
            "srcad_vjp": api.vjp, "srcad_jvp": forward_api.jvp, "srcad_partial": functools.partial,
            "srcad_held_parts": held_parts}, "<srcad-tangent program of srcad.vjp>")
    return program, SeedOrder(None, [(f"seed{k}", None) for k in range(len(spec))])


def held_tangent_program(site, spec: tuple, args: tuple, kwargs: dict):
    """`(P, seed order)` for a call `site(value, *call_args, **kwargs)` of a held function
    value: forward mode (`srcad.jvp`) over the call of its held form, the value's tangent (a
    HeldParts) giving the tangents of what it holds."""
    _refuse_keywords_a_third_time(spec)
    _, held, named = site.form(args[0])
    count, calls_count, keywords = len(held), len(args) - 1, tuple(kwargs)
    key = ("held", site, count, calls_count, keywords, tuple(spec), tuple(named))
    program = _TANGENT_PROGRAMS.get(key)
    if program is None:
        seeds = {position: k for k, position in enumerate(spec)}
        arguments = [f"a{i}" for i in range(calls_count)]
        held_names = [f"h{i}" for i in range(count)]
        value_tangent = f"srcad_seeds[{seeds[0]}]" if 0 in seeds else "None"
        tangents = [f"t_h{i}" for i in range(count)] + [
            f"srcad_seeds[{seeds[i + 1]}]" if i + 1 in seeds else "None"
            for i in range(calls_count)]
        bound = ", ".join(["srcad_site", "srcad_value", *(f"{k}={k}" for k in keywords)])
        unpacked = f"    srcad_fixed({value_tangent})\n" + ((
            f"    {', '.join(held_names)}, = srcad_held\n"
            f"    {', '.join(f't_h{i}' for i in range(count))}, = "
            f"srcad_held_tangents({value_tangent}, {count})\n") if count else "")
        source = (
            f"def held_tangent_program(srcad_seeds, srcad_value, {', '.join(arguments)}"
            f"{', *, ' + ', '.join(keywords) if keywords else ''}):\n"
            f"    srcad_held, srcad_named = srcad_form(srcad_site, srcad_value)\n"
            + unpacked +
            f"    return srcad_jvp(srcad_callee({bound}), ({', '.join(held_names + arguments)},), "
            f"({', '.join(tangents)},))\n")
        program = _TANGENT_PROGRAMS[key] = compiled_source(source, "held_tangent_program", {
            "srcad_jvp": forward_api.jvp, "srcad_callee": held_callee, "srcad_form": held_form,
            "srcad_held_tangents": held_tangents, "srcad_fixed": held_keywords_fixed,
            "srcad_site": site},
            "<srcad-tangent program of a held call>")
    return program, SeedOrder(None, [(f"seed{k}", None) for k in range(len(spec))])


def jvp_tangent_program(spec: tuple, args: tuple, kwargs: dict):
    """`(P, seed order)` for a call `srcad.jvp(f, primals, tangents)`: forward mode over
    f's own tangent program `P_f`, a plain program (`srcad.jvp(P_f, (seeds, *primals),
    (their tangents...))`), so that differentiating it again meets P_f's tangent program,
    not this one: each order is one more program of plain code."""
    call = _JvpCall(args, kwargs)
    kinds = [_JvpCall.which(s) for s in spec]
    if None in kinds or any(part is not None for _, part in call.order.places):
        raise UnsupportedDerivativeError(
            "srcad differentiates `srcad.jvp` of a function value computed from "
            "differentiated values, or of a function gathering `*args`, no more than twice.",
            fix="give the function named parameters, defined with `def`.")
    key = ("jvp", call.program, call.live, len(call.primals), tuple(kinds))
    program = _TANGENT_PROGRAMS.get(key)
    if program is None:
        moved = {kind: f"srcad_seeds[{k}]" for k, kind in enumerate(kinds)}
        count = len(call.primals)
        primals = [f"primals[{i}]" for i in range(count)]
        moved_primals = [f"{moved['primals']}[{i}]" for i in range(count)] \
            if "primals" in moved else ["None"] * count
        seeds = "(" + "".join(f"tangents[{i}], " for i in call.live) + ")"
        moved_seeds = "(" + "".join(f"{moved['tangents']}[{i}], " for i in call.live) + ")" \
            if "tangents" in moved else "None"
        source = (
            "def jvp_tangent_program(srcad_seeds, srcad_fn, primals, tangents):\n"
            f"    return srcad_jvp(srcad_program, ({seeds}, {', '.join(primals)}), "
            f"({moved_seeds}, {', '.join(moved_primals)}))\n")
        program = _TANGENT_PROGRAMS[key] = compiled_source(source, "jvp_tangent_program", {
            "srcad_jvp": forward_api.jvp, "srcad_program": call.program},
            "<srcad-tangent program of srcad.jvp>")
    return program, SeedOrder(None, [(f"seed{k}", None) for k in range(len(spec))])


def _refuse_keywords_a_third_time(spec) -> None:
    if any(isinstance(s, str) for s in spec):
        raise UnsupportedDerivativeError(
            "srcad differentiates `srcad.vjp` and the pullback it returns twice along "
            "arguments passed by keyword, not three times.",
            fix="pass the differentiated arguments by position.")
