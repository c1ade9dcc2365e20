"""higher_order: differentiating derivative programs again.

A tangent program (srcad/transform/forward.py) is ordinary Python, except that a call whose
callee is only known when it runs becomes `call_jvp(f, active, tangents, *args)`. When
srcad differentiates the tangent program again (reverse over forward for Hessian-vector
products, forward over forward for third order), such a call is differentiated as the
call of *f's own tangent program*, `P(seeds, *args) -> (y, t_y)`, which is Python source
as well: for a Python function it is the function's generated tangent program, for
anything else (a NumPy function chosen at run time, an array method) the tangent program
of a one-line wrapper `def call(a0, a1): return callee(a0, a1)`, in which srcad resolves
`callee` and applies its JVP rules.
"""
from __future__ import annotations

import inspect
import itertools
import linecache
import types
import weakref

from srcad import calls
from srcad.arguments import like_argument, seed_for
from srcad.control import CustomGradient
from srcad.errors import MissingRuleError, UnsupportedDerivativeError, UsageError

_SERIAL = itertools.count(1)
_WRAPPERS: dict = {}
_ADAPTERS = weakref.WeakKeyDictionary()


def vjp_of_tangent_call(caller, active: tuple, args: tuple, kwargs: dict):
    """`(caller(*args, **kwargs), pullback)` for `caller` `calls.call_jvp` or
    `calls.call_method_jvp`, `active` giving the differentiated arguments of that call."""
    call = _TangentCall(caller, args, kwargs)
    inner = call.inner_active(active)
    result, pullback = calls.call_vjp(call.program, inner, call.seeds, *call.args, **kwargs)

    def outer(g):
        return call.outer_cotangents(active, inner, pullback(g))
    return result, outer


def jvp_of_tangent_call(caller, active: tuple, tangents: tuple, args: tuple, kwargs: dict):
    """`(caller(*args, **kwargs), its tangent)` for `caller` `calls.call_jvp` or
    `calls.call_method_jvp`: forward mode over the callee's tangent program."""
    call = _TangentCall(caller, args, kwargs)
    by_outer = dict(zip(active, tangents))
    kept = [(call.inner_position(spec), call.inner_tangent(spec, by_outer, kwargs))
            for spec in active if call.inner_position(spec) is not None]
    return calls.jvp_call(call.program, tuple(s for s, _ in kept), tuple(t for _, t in kept),
                          (call.seeds, *call.args), kwargs)


class _TangentCall:
    """One `call_jvp(f, spec, tangents, *args)` (or `call_method_jvp(receiver, name, spec,
    tangents, *args)`) seen as `P(seeds, *fargs)`: where each of its arguments lands among
    P's, and the way back."""

    def __init__(self, caller, args, kwargs):
        if caller is calls.call_method_jvp:
            receiver, name, spec, tangents, *rest = args
            fn, spec, fargs, dropped = calls.method_callee(receiver, name, spec, tuple(rest))
            self.shift = int(dropped)  # a module as receiver: not passed on, no tangent
            origins = list(range(4, 4 + len(rest)))
            if calls.packs_shape(receiver, name, tuple(rest)):  # `x.reshape(5, 1)`
                origins = [0, None]  # the receiver, then the shape tuple: fixed
            elif len(fargs) > len(rest):
                origins.insert(0, 0)  # the receiver became the first argument
            self.tangent_position = 3
        else:
            fn, spec, tangents, *fargs = args
            self.shift = 0
            origins = list(range(3, 3 + len(fargs)))
            self.tangent_position = 2
        function = inspect.unwrap(fn)
        if isinstance(function, types.MethodType) and isinstance(function.__func__,
                                                                 types.FunctionType):
            fn, fargs = function.__func__, (function.__self__, *fargs)
            spec = tuple(s + 1 if isinstance(s, int) else s for s in spec)
            origins.insert(0, None)
        self.origins = origins  # outer position of each of P's arguments after the seeds
        self.count = len(tangents)
        self.args = tuple(fargs)
        # the tangents given, by index into the outer tuple; `spec[i - shift]` is each one's
        self.live = tuple(i for i, t in enumerate(tangents) if t is not None and i >= self.shift)
        self.program, self.order = _tangent_program(
            fn, tuple(spec[i - self.shift] for i in self.live), self.args, kwargs)
        self.seeds = self.order(tuple(tangents[i] for i in self.live), self.args, kwargs)

    def inner_position(self, spec):
        """Where an argument of the outer call lands among P's (None: nowhere)."""
        if isinstance(spec, str):
            return spec
        if spec == self.tangent_position:
            return 0 if self.live else None
        return self.origins.index(spec) + 1 if spec in self.origins else None

    def inner_active(self, active) -> tuple:
        return tuple(p for p in map(self.inner_position, active) if p is not None)

    def inner_tangent(self, spec, by_outer, kwargs):
        tangent = by_outer[spec]
        if spec == self.tangent_position and tangent is not None:
            return self.order(tuple(tangent[i] for i in self.live), self.args, kwargs)
        return tangent

    def outer_cotangents(self, active, inner, cotangents) -> tuple:
        by_inner = dict(zip(inner, cotangents))
        result = []
        for spec in active:
            position = self.inner_position(spec)
            cotangent = by_inner.get(position) if position is not None else None
            if position == 0 and cotangent is not None:
                full = [None] * self.count
                for i, c in zip(self.live, self.order.back(cotangent)):
                    full[i] = c
                cotangent = tuple(full)
            result.append(cotangent)
        return tuple(result)


class _SeedOrder:
    """P's seeds (a tuple by parameter name) from tangents in call order, and back."""

    def __init__(self, function, places):
        self.function, self.places = function, places
        self.names = tuple(dict.fromkeys(name for name, _ in places))

    def __call__(self, tangents, args, kwargs):
        by_name = {}
        for (name, part), tangent in zip(self.places, tangents):
            if part is None:
                by_name[name] = tangent
            else:  # an element of `*args` or `**kwargs`: the others have no tangent
                packed = by_name.setdefault(name, calls.unfilled(self.function, name, args,
                                                                 kwargs))
                packed[part] = tangent
        return tuple(tuple(v) if isinstance(v, list) else v for v in map(by_name.get, self.names))

    def back(self, seed_cotangents):
        by_name = dict(zip(self.names, seed_cotangents))
        return tuple(calls.part_of(by_name[name], part) for name, part in self.places)


def _tangent_program(fn, spec: tuple, args: tuple, kwargs: dict):
    """`(P, seed_order)`: f's tangent program for the arguments `spec`, a Python function
    with source, and the map between its seeds and tangents in `spec` order."""
    if calls.is_derivative(fn):
        return _derivative_tangent_program(fn, spec, args, kwargs)
    if fn is calls.call_jvp or fn is calls.call_method_jvp:  # a tangent program's call
        fn = _direct_call(fn, args, kwargs)
    if isinstance(fn, CustomGradient):  # before unwrapping, which would find its body
        raise UnsupportedDerivativeError(
            f"srcad cannot take a second derivative through the custom gradient "
            f"{fn.__name__}: its grad_fn depends on the arguments through the values it "
            "captures, which srcad does not follow.",
            fix=f"register rules with `srcad.defvjp({fn.__name__}, ...)` and "
            f"`srcad.defjvp({fn.__name__}, ...)` written with NumPy (srcad differentiates "
            "those), or use tape mode (`srcad.GradientTape`), which records grad_fn.")
    function = inspect.unwrap(fn)
    if isinstance(function, types.FunctionType) and calls.jvp_rules(fn) is None \
            and calls.jvp_rules(function) is None:
        fn = function  # its own tangent program, as `calls.jvp_call` would run it
    else:
        fn = _wrapper(fn, len(args), tuple(kwargs))
    places = [calls.parameter_of(fn, s) for s in spec]
    order = _SeedOrder(fn, places)
    containers = calls.containers_of(places, spec, args, kwargs)
    return calls.transformed(fn, order.names, containers, "fwd").bound(fn), order


def _direct_call(caller, args: tuple, kwargs: dict) -> types.FunctionType:
    """For a tangent program's `call_jvp(f, spec, tangents, *fargs)` (or `call_method_jvp`):
    a function with the call's parameters that calls f's tangent program directly,
    `program(seeds, *fargs)`, so srcad can take the tangent program of the call itself."""
    call = _TangentCall(caller, args, kwargs)
    if any(part is not None for _, part in call.order.places):
        raise UnsupportedDerivativeError(
            "srcad cannot differentiate a third time through a call that passes "
            "differentiated values into `*args` or `**kwargs`.",
            fix="give the called function named parameters.")
    outer = {name: index for (name, _), index in zip(call.order.places, call.live)}
    tangents = f"a{call.tangent_position}"
    seeds = "(" + "".join(f"{tangents}[{outer[name]}], " for name in call.order.names) + ")"
    namespace, passed = {"program": call.program}, []
    for k, origin in enumerate(call.origins):
        if origin is None:  # a bound method's receiver: fixed for this call
            namespace[f"bound_{k}"] = call.args[k]
        passed.append(f"bound_{k}" if origin is None else f"a{origin}")
    keywords = list(kwargs)
    parameters = ", ".join([f"a{i}" for i in range(len(args))]
                           + (["*", *keywords] if keywords else []))
    arguments = ", ".join([seeds, *passed, *(f"{k}={k}" for k in keywords)])
    source = f"def call({parameters}):\n    return program({arguments})\n"
    try:
        key = (call.program, source, *(namespace[k] for k in sorted(namespace) if k != "program"))
        made = _WRAPPERS.get(key)
    except TypeError:  # an unhashable receiver: no reuse
        key, made = None, None
    if made is None:
        made = _compiled_source(source, "call", namespace, "<srcad-direct call>")
        if key is not None:
            _WRAPPERS[key] = made
    return made


def _wrapper(callee, count: int, keywords: tuple) -> types.FunctionType:
    """`def call(a0, .., *, k, ..): return callee(a0, .., k=k, ..)`, with source in
    linecache, so that srcad transforms a call of `callee` (a NumPy function, a builtin)
    with the rules it has."""
    try:
        key = (callee, count, keywords)
        made = _WRAPPERS.get(key)
    except TypeError:  # an unhashable callee: no reuse
        key, made = None, None
    if made is not None:
        return made
    positional = [f"a{i}" for i in range(count)]
    parameters = ", ".join(positional + (["*"] + list(keywords) if keywords else []))
    arguments = ", ".join(positional + [f"{k}={k}" for k in keywords])
    source = f"def call({parameters}):\n    return callee({arguments})\n"
    made = _compiled_source(source, "call", {"callee": callee},
                            f"<srcad-call of {getattr(callee, '__name__', 'a callable')}>")
    if key is not None:
        _WRAPPERS[key] = made
    return made


def _compiled_source(source: str, name: str, namespace: dict, label: str):
    """The function `name` defined by `source`, which is registered in linecache (srcad
    reads it to transform the function) under a unique filename."""
    filename = f"{label[:-1]} {next(_SERIAL)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {**namespace, "__name__": __name__}
    exec(compile(source, filename, "exec"), namespace)
    return namespace[name]


# ---- derivative objects (`srcad.grad(f)`) called where srcad differentiates -------------------
# `G = grad(h, wrt=W)` maps the arguments to ∇_W h. Its VJP at a cotangent u is the gradient
# of the directional derivative ⟨∇_W h, u⟩ = jvp(h; u on W), and its JVP along t is the
# gradient over W of jvp(h; t): both are reverse mode over h's tangent program.

def vjp_of_derivative(fn, active: tuple, args: tuple, kwargs: dict):
    """`(fn(*args, **kwargs), pullback)` for `fn` made by `srcad.grad`/`value_and_grad`."""
    plan = _Plan(fn, args, kwargs)
    result = fn(*args, **kwargs)
    inner = _after_seeds(active)

    def pullback(g):
        if g is None:
            return (None,) * len(active)
        value_cotangent, u = (None, g) if plan.gradient_only else g
        seeds = plan.order(plan.dense(u), plan.args, kwargs)
        (_, slope), back = calls.call_vjp(plan.program, inner, seeds, *plan.args, **kwargs)
        return back((value_cotangent, plan.slope_seed(slope)))
    return result, pullback


def jvp_of_derivative(fn, active: tuple, tangents: tuple, args: tuple, kwargs: dict):
    """`(fn(*args, **kwargs), its tangent)` for `fn` made by `srcad.grad`/`value_and_grad`."""
    d = _derivative(fn)
    live = [(spec, t) for spec, t in zip(active, tangents) if t is not None]
    program, order = _tangent_program(d.fn, tuple(s for s, _ in live), args, kwargs)
    seeds = order(tuple(t for _, t in live), args, kwargs)
    plan = _Plan(fn, args, kwargs)
    (_, slope), back = calls.call_vjp(program, _after_seeds(plan.wrt_spec), seeds, *args,
                                      **kwargs)
    cotangents = back((None, plan.slope_seed(slope))) if slope is not None \
        else (None,) * len(plan.wrt_spec)
    gradients = plan.shaped(cotangents)
    result = fn(*args, **kwargs)
    return result, gradients if plan.gradient_only else (slope, gradients)


class _Plan:
    """What differentiating a call of `G = grad(h, wrt)` needs: h's tangent program along
    the `wrt` arguments, and G's output conventions."""

    def __init__(self, fn, args, kwargs):
        d = _derivative(fn)
        self.gradient_only = type(fn).__name__ == "_Grad"
        self.has_aux = d.has_aux
        self.several = isinstance(d.wrt, tuple)
        self.args = tuple(args)
        self.wrt_spec = tuple(p if p is not None else name
                              for p, name in zip(d.positions, d.names))
        self.wrt_values = [args[s] if isinstance(s, int) and s < len(args) else kwargs[s]
                           if s in kwargs else _missing(fn, s) for s in self.wrt_spec]
        self.program, self.order = _tangent_program(d.fn, self.wrt_spec, self.args, kwargs)

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


def _derivative(fn):
    kind = type(fn).__name__
    if kind not in ("_Grad", "_ValueAndGrad"):
        raise MissingRuleError(
            f"srcad cannot differentiate {fn!r}: the pullback `srcad.vjp` returns holds the "
            "values of its forward sweep, which srcad cannot follow.",
            fix="differentiate a function that calls `srcad.grad` or `srcad.value_and_grad` "
            "instead.")
    return fn.derivative


def _missing(fn, spec):
    raise UsageError(f"{fn!r} was called without its argument {spec!r}; srcad differentiates "
                     "derivatives of functions called with the arguments they differentiate.",
                     fix="pass every `wrt` argument explicitly.")


def _after_seeds(active) -> tuple:
    """Argument specs of a call, for the tangent program whose first argument is the seeds."""
    return tuple(a + 1 if isinstance(a, int) else a for a in active)


def transformable(fn):
    """`fn`, or for a derivative object the function calling it that srcad transforms."""
    return adapter(fn) if calls.is_derivative(fn) else fn


def adapter(fn) -> types.FunctionType:
    """A Python function with `fn`'s parameters that calls `fn` (a derivative object), so
    that the transforms see an ordinary function calling it: `srcad.grad(srcad.grad(f))`."""
    made = _ADAPTERS.get(fn)
    if made is None:
        parameters, passed, defaults = _parameters(fn)
        name = getattr(fn, "__name__", "")
        name = f"derivative_of_{name}" if name.isidentifier() else "derivative"
        source = f"def {name}({parameters}):\n    return callee({passed})\n"
        made = _ADAPTERS[fn] = _compiled_source(source, name, {"callee": fn, **defaults},
                                                f"<srcad-{name}>")
    return made


def _derivative_tangent_program(fn, spec: tuple, args: tuple, kwargs: dict):
    """`(P, seed_order)` for a derivative object `G = grad(h)`: `P(seeds, *params)` returns
    `G(*params)` and its tangent, the gradient of h's directional derivative, written as
    Python source that srcad can differentiate once more (third order and beyond)."""
    d = _derivative(fn)
    program, order = _tangent_program(d.fn, spec, args, kwargs)
    parameters, passed, defaults = _parameters(fn)
    seeds = "seeds"
    while seeds in inspect.signature(fn).parameters:  # a derivative of one: no clash
        seeds += "_"
    pick = "[1][0]" if d.has_aux else "[1]"
    slope = _compiled_source(
        f"def slope({seeds}, {parameters}):\n    return program({seeds}, {passed}){pick}\n",
        "slope", {"program": program, **defaults}, "<srcad-slope>")
    from srcad import api
    wrt = _after_seeds(tuple(p if p is not None else n for p, n in zip(d.positions, d.names)))
    gradient = api.grad(slope, wrt=wrt if isinstance(d.wrt, tuple) else wrt[0])
    tangent = "gradient({0})" if type(fn).__name__ == "_Grad" \
        else "(program({0})[1], gradient({0}))"
    source = (f"def tangent_program({seeds}, {parameters}):\n"
              f"    return (callee({passed}), {tangent.format(seeds + ', ' + passed)})\n")
    made = _compiled_source(source, "tangent_program", {
        "callee": fn, "gradient": gradient, "program": program, **defaults},
        f"<srcad-tangent program of {fn!r}>")
    return made, order


def _parameters(fn) -> tuple[str, str, dict]:
    """`fn`'s parameter list as source, the arguments passing them on, and the defaults."""
    parameters, passed, defaults = [], [], {}
    starred = False
    for parameter in inspect.signature(fn).parameters.values():
        name, kind = parameter.name, parameter.kind
        if kind is parameter.VAR_KEYWORD:
            raise UsageError(f"srcad cannot differentiate {fn!r} again: its function takes "
                             f"`**{name}`.", fix="give it named parameters.")
        text = f"*{name}" if kind is parameter.VAR_POSITIONAL else name
        if kind is parameter.KEYWORD_ONLY and not starred:
            parameters.append("*")
        starred = starred or kind in (parameter.VAR_POSITIONAL, parameter.KEYWORD_ONLY)
        if parameter.default is not parameter.empty:
            defaults[f"default_{name}"] = parameter.default
            text += f"=default_{name}"
        parameters.append(text)
        passed.append(f"{name}={name}" if kind is parameter.KEYWORD_ONLY else text.split("=")[0])
    return ", ".join(parameters), ", ".join(passed), defaults


# ---- `srcad.jvp(f, primals, tangents)` called where srcad differentiates -----------------------
class _JvpCall:
    """A call of `srcad.jvp` seen as f's tangent program `P(seeds, *primals)`."""

    def __init__(self, args, kwargs):
        from srcad import forward_api
        bound = inspect.signature(forward_api.jvp).bind(*args, **kwargs)
        self.fn, primals, tangents = (bound.arguments[k] for k in ("fn", "primals", "tangents"))
        self.primals, self.count = tuple(primals), len(tangents)
        self.live = tuple(i for i, t in enumerate(tangents) if t is not None)
        self.program, self.order = _tangent_program(self.fn, self.live, self.primals, {})
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
        from srcad.forward_api import like_output
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
    from srcad.forward_api import like_output
    return output, tuple(None if t is None else like_output(t, o)
                         for t, o in zip(tangent, output))
