"""custom_programs: the tangent program of a `@custom_gradient` function, as Python source
that srcad differentiates again (second and higher derivatives through a custom gradient).

First derivatives call the user's `grad_fn` as it runs (srcad/runtime/calls.py and
control.py). A second derivative must also know how `grad_fn(u)` changes with the
arguments, which it reads from the enclosing function through closure cells. So srcad rewrites the decorated function's own
source into its *pullback function*,

    def f(x):                                   def srcad_pullback_of_f(x, *, srcad_cotangent):
        e = np.exp(x)                               e = np.exp(x)
        def grad_fn(dy):                 →          def grad_fn(dy):
            return dy * e / (1 + e)                     return dy * e / (1 + e)
        return np.log1p(e), grad_fn                 return grad_fn(srcad_cotangent)

in which `grad_fn` is called in place (frontend/closures passes it `e`), and builds

    def call(srcad_seeds, a0):                       # P(seeds, *args) -> (y, J t)
        srcad_value = srcad_custom(a0)               # the value; its VJP is grad_fn
        srcad_zero = srcad_zero_cotangent(srcad_value)
        return srcad_value, srcad_pairing_gradient(a0, srcad_zero, srcad_seeds)

where `srcad_pairing_gradient = srcad.grad(pairing, wrt=u)` and `pairing(a0, u, seeds)` is
`Σ ⟨pullback(a0, u)[p], seeds[k]⟩`: linear in u, its gradient is `J t`. Everything in P is
ordinary source srcad differentiates, so reverse over P gives the second derivative with the
user's rule, and forward over P the third.
"""
from __future__ import annotations

import copy
import itertools
import linecache
import types

import gast

from srcad.api.derivative import grad
from srcad.compiler.emit import python_source
from srcad.compiler.frontend.parse import nested_codes, parse_function
from srcad.compiler.frontend.trees import clone
from srcad.errors import UnsupportedDerivativeError
from srcad.ops.registry import nondifferentiable
from srcad.runtime import calls
from srcad.runtime.arguments import like_argument
from srcad.runtime.calls import SeedOrder, compiled_source
from srcad.runtime.control import CustomGradient, positional_only

_SERIAL = itertools.count(1)
_PROGRAMS: dict = {}
COTANGENT = "srcad_cotangent"


def zero_cotangent(value):
    """The point where the pairing is differentiated (it is linear in the cotangent)."""
    return like_argument(None, value)


nondifferentiable(zero_cotangent)


def custom_tangent_program(fn: CustomGradient, spec: tuple, args: tuple, kwargs: dict):
    """`(P, seed_order)` for `fn` called with `args`/`kwargs`, differentiated along the
    positional arguments `spec` (see `calls.tangent_program`)."""
    positional_only(fn, spec)
    function = fn.function
    places = [calls.parameter_of(function, s) for s in spec]
    if any(part is not None for _, part in places):
        raise UnsupportedDerivativeError(
            f"srcad cannot take a second derivative through the custom gradient "
            f"{fn.__name__} along arguments passed into its `*args`.",
            fix="give the decorated function named parameters.")
    order = SeedOrder(function, places)
    key = (fn, len(args), tuple(kwargs), tuple(spec))
    program = _PROGRAMS.get(key)
    if program is None:
        program = _PROGRAMS[key] = _program(fn, len(args), tuple(kwargs), spec, order.names)
    return program, order


def _program(fn: CustomGradient, count: int, keywords: tuple, spec: tuple, names: tuple):
    """P and the pairing it differentiates, for this form of call."""
    positional = [f"a{i}" for i in range(count)]
    passed = ", ".join(positional + [f"{k}={k}" for k in keywords])
    star = ["*", *keywords] if keywords else []
    seed_of = {name: k for k, name in enumerate(names)}
    terms = "".join(
        f"    if srcad_parts[{p}] is not None:\n"
        f"        srcad_total = srcad_total + np.sum(srcad_parts[{p}] * "
        f"srcad_seeds[{seed_of[calls.parameter_of(fn.function, p)[0]]}])\n"
        for p in spec)
    pairing_source = (
        f"def pairing({', '.join(positional + ['srcad_u', 'srcad_seeds', *star])}):\n"
        f"    srcad_parts = srcad_pullback({passed}, {COTANGENT}=srcad_u)\n"
        "    if not isinstance(srcad_parts, (tuple, list)):\n"
        "        srcad_parts = (srcad_parts,)\n"
        "    srcad_total = 0.0\n" + terms + "    return srcad_total\n")
    namespace = {"srcad_pullback": pullback_function(fn), "np": __import__("numpy")}
    pairing = compiled_source(pairing_source, "pairing", namespace,
                              f"<srcad-pairing of {fn.__name__}>")
    program_source = (
        f"def call({', '.join(['srcad_seeds', *positional, *star])}):\n"
        f"    srcad_value = srcad_custom({passed})\n"
        "    srcad_zero = srcad_zero_cotangent(srcad_value)\n"
        f"    return srcad_value, srcad_pairing_gradient({', '.join(positional)}, srcad_zero, "
        f"srcad_seeds{''.join(f', {k}={k}' for k in keywords)})\n")
    namespace = {"srcad_custom": fn, "srcad_zero_cotangent": zero_cotangent,
                 "srcad_pairing_gradient": grad(pairing, wrt=count)}
    return compiled_source(program_source, "call", namespace,
                           f"<srcad-tangent program of {fn.__name__}>")


def pullback_function(fn: CustomGradient) -> types.FunctionType:
    """The decorated function with `return y, grad_fn` made `return grad_fn(cotangent)`,
    running in the function's own globals and closure cells."""
    function = fn.function
    node = clone(parse_function(function).node)
    node.name = f"srcad_pullback_of_{node.name}"
    node.args.kwonlyargs.append(gast.Name(COTANGENT, gast.Param(), None, None))
    node.args.kw_defaults.append(None)
    node.body = _returning_pullbacks(node.body, fn, itertools.count())
    source = python_source(node)
    free = function.__code__.co_freevars
    if free:  # compiled inside a function that binds the free names, so they stay cells
        body = "".join(f"    {name} = None\n" for name in free)
        indented = "".join(f"    {line}\n" for line in source.splitlines())
        source = f"def srcad_cells():\n{body}{indented}    return {node.name}\n"
    filename = f"<srcad-pullback of {fn.__name__} {next(_SERIAL)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    code = nested_codes(compile(source, filename, "exec"), node.name)[0]
    cells = dict(zip(free, function.__closure__ or ()))
    made = types.FunctionType(code, function.__globals__, node.name, function.__defaults__,
                              tuple(cells[name] for name in code.co_freevars))
    made.__kwdefaults__ = {**(function.__kwdefaults__ or {}), COTANGENT: None}
    return made


def _returning_pullbacks(statements, fn, serial) -> list:
    """`statements` with each `return y, grad_fn` of the function itself (not of nested
    functions) made `return grad_fn(srcad_cotangent)`."""
    rewritten = []
    for statement in statements:
        if isinstance(statement, gast.Return):
            rewritten += _pullback_return(statement, fn, next(serial))
            continue
        statement = copy.copy(statement)
        for field in ("body", "orelse", "finalbody"):
            block = getattr(statement, field, None)
            if block and not isinstance(statement, gast.FunctionDef):
                setattr(statement, field, _returning_pullbacks(block, fn, serial))
        if isinstance(statement, gast.Try):
            for handler in statement.handlers:
                handler.body = _returning_pullbacks(handler.body, fn, serial)
        rewritten.append(statement)
    return rewritten


def _pullback_return(statement: gast.Return, fn, serial: int) -> list:
    value = statement.value
    if not (isinstance(value, gast.Tuple) and len(value.elts) == 2):
        raise UnsupportedDerivativeError(
            f"srcad cannot take a second derivative through the custom gradient "
            f"{fn.__name__}: it reads the gradient function from `return value, grad_fn` "
            "written as a pair, and this return is not one.",
            fix=f"write `return y, grad_fn` in {fn.__name__}.")
    grad_fn = value.elts[1]
    cotangent = gast.Name(COTANGENT, gast.Load(), None, None)
    if isinstance(grad_fn, gast.Name):
        return [gast.copy_location(gast.Return(gast.Call(grad_fn, [cotangent], [])), statement)]
    name = f"srcad_grad_fn_{serial}"  # each bound once, so frontend/closures passes it
    named = gast.Name(name, gast.Store(), None, None)
    called = gast.Call(gast.Name(name, gast.Load(), None, None), [cotangent], [])
    return [gast.copy_location(gast.Assign([named], grad_fn, None), statement),
            gast.copy_location(gast.Return(called), statement)]
