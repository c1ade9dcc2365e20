"""higher_order: differentiating derivative programs again.

A tangent program (srcad/compiler/transform/forward.py) is ordinary Python, except that a call whose
callee is only known when it runs becomes `call_jvp(f, active, tangents, *args)`. When
srcad differentiates the tangent program again (reverse over forward for Hessian-vector
products, forward over forward for third order), such a call is differentiated as the
call of *f's own tangent program*, `P(seeds, *args) -> (y, t_y)`, which is Python source
as well: for a Python function it is the function's generated tangent program, for
anything else (a NumPy function chosen at run time, an array method) the tangent program
of a one-line wrapper `def call(a0, a1): return srcad_callee(a0, a1)`, in which srcad
resolves `srcad_callee` and applies its JVP rules.
"""
from __future__ import annotations

import functools
import itertools
import linecache
import types

from srcad.runtime import calls, methods
from srcad.runtime.control import CustomGradient
from srcad.errors import UnsupportedDerivativeError
from srcad.compiler.frontend.parse import unwrapped

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
            fn, spec, fargs, dropped = methods.method_callee(receiver, name, spec, tuple(rest))
            self.shift = int(dropped)  # a module as receiver: not passed on, no tangent
            origins = list(range(4, 4 + len(rest)))
            if methods.packs_shape(receiver, name, tuple(rest)):  # `x.reshape(5, 1)`
                origins = [0, None]  # the receiver, then the shape tuple: fixed
            elif len(fargs) > len(rest):
                origins.insert(0, 0)  # the receiver became the first argument
            self.tangent_position = 3
        else:
            fn, spec, tangents, *fargs = args
            self.shift = 0
            origins = list(range(3, 3 + len(fargs)))
            self.tangent_position = 2
        function = unwrapped(fn)
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
        self.program, self.order = tangent_program(
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


class SeedOrder:
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


def tangent_program(fn, spec: tuple, args: tuple, kwargs: dict):
    """`(P, seed_order)`: f's tangent program for the arguments `spec`, a Python function
    with source, and the map between its seeds and tangents in `spec` order."""
    if calls.is_derivative(fn):
        from srcad.api.derivative_calls import derivative_tangent_program
        return derivative_tangent_program(fn, spec, args, kwargs)
    if fn is calls.call_jvp or fn is calls.call_method_jvp:  # a tangent program's call
        fn = _direct_call(fn, args, kwargs)
    if isinstance(fn, CustomGradient):  # before unwrapping, which would find its body
        from srcad.api.custom_programs import custom_tangent_program
        return custom_tangent_program(fn, spec, args, kwargs)
    function = unwrapped(fn)
    if isinstance(function, types.FunctionType) and calls.jvp_rules(fn) is None \
            and calls.jvp_rules(function) is None and not calls.is_nondifferentiable(fn):
        fn = function  # its own tangent program, as `calls.jvp_call` would run it
    else:
        fn = _wrapper(fn, len(args), tuple(kwargs))
    places = [calls.parameter_of(fn, s) for s in spec]
    order = SeedOrder(fn, places)
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
    namespace, passed = {"srcad_program": call.program}, []
    for k, origin in enumerate(call.origins):
        if origin is None:  # a bound method's receiver: fixed for this call
            namespace[f"srcad_bound_{k}"] = call.args[k]
        passed.append(f"srcad_bound_{k}" if origin is None else f"a{origin}")
    keywords = list(kwargs)
    parameters = ", ".join([f"a{i}" for i in range(len(args))]
                           + (["*", *keywords] if keywords else []))
    arguments = ", ".join([seeds, *passed, *(f"{k}={k}" for k in keywords)])
    source = f"def call({parameters}):\n    return srcad_program({arguments})\n"
    try:
        key = (call.program, source,
               *(namespace[k] for k in sorted(namespace) if k != "srcad_program"))
        made = _WRAPPERS.get(key)
    except TypeError:  # an unhashable receiver: no reuse
        key, made = None, None
    if made is None:
        made = compiled_source(source, "call", namespace, "<srcad-direct call>")
        if key is not None:
            _WRAPPERS[key] = made
    return made


def _wrapper(callee, count: int, keywords: tuple) -> types.FunctionType:
    """`def call(a0, .., *, k, ..): return callee(a0, .., k=k, ..)`, with source in
    linecache, so that srcad transforms a call of `callee` (a NumPy function, a builtin)
    with the rules it has; a `functools.partial` calls its function with the values it
    binds (constants here: a partial of differentiated values is refused where it is made)."""
    try:
        key = (callee, count, keywords)
        made = _WRAPPERS.get(key)
    except TypeError:  # an unhashable callee: no reuse
        key, made = None, None
    if made is not None:
        return made
    positional = [f"a{i}" for i in range(count)]
    parameters = ", ".join(positional + (["*"] + list(keywords) if keywords else []))
    namespace, bound = {"srcad_callee": callee}, []
    if isinstance(callee, functools.partial):  # call its function, with what it binds fixed
        namespace = {"srcad_callee": callee.func,
                     **{f"srcad_bound_{i}": v for i, v in enumerate(callee.args)},
                     **{f"srcad_bound_{k}": v for k, v in callee.keywords.items()}}
        bound = [f"srcad_bound_{i}" for i in range(len(callee.args))] + [
            f"{k}=srcad_bound_{k}" for k in callee.keywords if k not in keywords]
    arguments = ", ".join(bound + positional + [f"{k}={k}" for k in keywords])
    source = f"def call({parameters}):\n    return srcad_callee({arguments})\n"
    label = getattr(namespace["srcad_callee"], "__name__", "a callable")
    made = compiled_source(source, "call", namespace, f"<srcad-call of {label}>")
    if key is not None:
        _WRAPPERS[key] = made
    return made


def defined_by(source: str, name: str, namespace: dict):
    """The function `name` that `source` defines, run in a namespace of its own; one code
    object (and one linecache entry) per source text, so the cache sees one function."""
    code = _MODULE_CODES.get(source)
    if code is None:  # (one per parameter list a program differentiates: a few)
        filename = f"<srcad-adapter {next(_SERIAL)}>"
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        code = _MODULE_CODES.setdefault(source, compile(source, filename, "exec"))
    namespace = {**namespace, "__name__": __name__}
    exec(code, namespace)
    return namespace[name]


_MODULE_CODES: dict = {}  # adapter source → its module's code


def compiled_source(source: str, name: str, namespace: dict, label: str):
    """The function `name` defined by `source`, which is registered in linecache (srcad
    reads it to transform the function) under a unique filename."""
    filename = f"{label[:-1]} {next(_SERIAL)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {**namespace, "__name__": __name__}
    exec(compile(source, filename, "exec"), namespace)
    return namespace[name]
