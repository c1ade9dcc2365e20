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

from srcad import calls
from srcad.control import CustomGradient

_SERIAL = itertools.count(1)
_WRAPPERS: dict = {}


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
    inner = call.inner_active(active)
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
            if len(fargs) > len(rest):
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
    function = inspect.unwrap(fn)
    if isinstance(function, types.FunctionType) and calls.jvp_rules(fn) is None \
            and calls.jvp_rules(function) is None:
        fn = function  # its own tangent program, as `calls.jvp_call` would run it
    elif isinstance(fn, CustomGradient):
        calls.jvp_call(fn, (0,), (0.0,), (), {})  # raises: no tangent for a custom gradient
    else:
        fn = _wrapper(fn, len(args), tuple(kwargs))
    places = [calls.parameter_of(fn, s) for s in spec]
    order = _SeedOrder(fn, places)
    containers = calls.containers_of(places, spec, args, kwargs)
    return calls.transformed(fn, order.names, containers, "fwd").bound(fn), order


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
    filename = f"<srcad-call-{next(_SERIAL)} of {getattr(callee, '__name__', 'a callable')}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"callee": callee, "__name__": __name__}
    exec(compile(source, filename, "exec"), namespace)
    made = namespace["call"]
    if key is not None:
        _WRAPPERS[key] = made
    return made
