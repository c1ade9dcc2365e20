"""pipeline: the stages that turn a Python function into its compiled adjoint, in order.

    parse ─▶ fence ─▶ normalize (exits) ─▶ resolve ─▶ activity ─▶ aliasing
          ─▶ reverse (tbr, recording) [─▶ math calls ─▶ fuse ─▶ specialise] or forward ─▶ compile

Start reading here. Each stage's module docstring states what it takes, what it returns
and the invariant it guarantees to the next one. The cache (srcad.compiler.cache) calls
`transform` once per function, `wrt` and options.
"""
from __future__ import annotations

import weakref

from dataclasses import replace

import gast

from srcad.compiler.analysis.activity import analyze_activity
from srcad.compiler.analysis.aliasing import check_in_place_updates, reach
from srcad.compiler.analysis.arrays import resolve_array_methods, surely_ndarrays
from srcad.compiler.transform.sequences import (resolve_container_copies,
                                       resolve_sequence_arithmetic, sequences_as_arrays)
from srcad.compiler.analysis.scalars import only_numbers, scalar_names
from srcad.compiler.analysis.shapes import shape_classes
from srcad.compiler.emit import CompiledAdjoint, compile_adjoint
from srcad.compiler.frontend.fence import fence
from srcad.compiler.frontend.functional import call_written_helpers, forget_variants
from srcad.compiler.frontend.normalize import normalize
from srcad.compiler.frontend.parse import param_names, parse_function
from srcad.compiler.frontend.resolve import Operation, Resolver, operations, resolve
from srcad.compiler.passes import enabled
from srcad.compiler.transform.batched import BatchedTangents
from srcad.compiler.transform.bindings import Bindings
from srcad.compiler.transform.forward import forward
from srcad.compiler.transform.forward_grad import check_forward_grad, seed_with_one
from srcad.compiler.transform.fuse import fuse
from srcad.compiler.transform.math_calls import use_math
from srcad.compiler.transform.naming import Namer
from srcad.compiler.transform.reverse import reverse
from srcad.compiler.transform.softmax import use_softmax_rules
from srcad.compiler.transform.specialise import specialise
from srcad.ops.registry import RULES_EDITION


def transform(fn, wrt: tuple[str, ...], has_aux: bool = False,
              containers: frozenset = frozenset(), mode: str = "rev",
              scalars: frozenset = frozenset(), arrays: frozenset = frozenset()
              ) -> CompiledAdjoint:
    """The VJP maker (mode "rev") or JVP function (mode "fwd") of `fn` with respect to the
    parameters named in `wrt`.

    "rev": calling the result with `fn`'s arguments returns `(output, backward)`, and
    `backward(cotangent_of_output)` returns the gradient of each `wrt` parameter.
    "fused" (for Python-float `wrt` arguments): calling the result with `fn`'s arguments
    returns `(output, gradients)` at once (transform/fuse.py); it is *optimistic* when NumPy
    calls were rewritten to `math` (transform/math_calls.py): its caller must then run the
    "rev" program instead when it raises or returns something not finite.
    "gradient": calling the result with `fn`'s arguments returns the gradients alone, and it
    computes no more of the output than their seed needs (transform/outline.py).
    "forward-grad" (for one Python-float `wrt` argument): "fused" by forward mode, with the
    tangent 1.0 (transform/forward_grad.py), for functions of numbers alone (else raises
    NotForwardable); optimistic as "fused" is.
    "fwd": calling it with a tuple of the `wrt` parameters' tangents, then `fn`'s arguments,
    returns `(output, tangent_of_output)`; a tangent is None where it is zero.
    "batch": the same with batched tangents (transform/batched.py, for forward Jacobians);
    raises `NotBatchable` for a function with an operation that has no batched form.
    "slope": "fwd" taking the same arguments and returning `tangent_of_output` alone, computed
    without the operations that only lead to the output (transform/dead_code.py): reverse
    mode over it gives Hessian-vector products.
    With `has_aux`, `fn` returns `(output, aux)` and only `output` is differentiated.
    `containers` names the `wrt` parameters that hold dicts, lists or tuples of values;
    `scalars` the parameters, `wrt` or not, that hold Python numbers (the code is
    specialised on it); `arrays`, for mode "gradient", `(parameter, rank)` of those that
    hold float64 arrays (transform/specialise.py).
    """
    rules_edition = RULES_EDITION[0]  # (a rule registered from here on makes the result stale)
    parsed, namer, resolver, simple, block = _frontend(fn, frozenset(wrt) - containers - scalars)
    output = simple.body[-1].value.id
    if has_aux:
        output, block = _split_aux(simple, output, block, namer)
    bindings = Bindings(namer, resolver)
    resolve_array_methods(block, frozenset(wrt) - containers, bindings.name_for)
    resolve_container_copies(block, bindings.name_for)
    if mode in ("rev", "fused", "gradient") and enabled("softmax"):
        use_softmax_rules(simple, block)                         # softmax
    activity = analyze_activity(block, set(wrt), output)         # activity
    resolve_sequence_arithmetic(block, containers, activity.active)
    numbers = scalar_names(block, param_names(simple), scalars, simple.return_variable)
    activity = replace(activity, scalars=numbers,
                       shapes=shape_classes(block, frozenset(wrt) - containers, numbers))
    aliases = check_in_place_updates(block, output, param_names(simple),  # aliasing
                                     simple.versions, parsed, simple.return_variable,
                                     numbers, resolver.peek)
    if mode in ("fwd", "batch", "slope", "forward-grad"):
        if mode == "forward-grad":
            check_forward_grad(block, activity)
        if mode == "batch":  # tangents of whole arrays: no float specialisation
            activity = replace(activity, scalars=frozenset())
        module, name = forward(simple, block, activity, wrt, output, parsed, namer,  # forward
                               bindings, containers,
                               BatchedTangents if mode == "batch" else None,
                               tangent_only=mode == "slope")
        if mode == "forward-grad":
            seed_with_one(module, name)
    else:
        module, name = reverse(simple, block, activity, aliases, wrt, output, parsed, namer,
                               bindings, containers,  # reverse
                               gradient_only=mode == "gradient")
    optimistic = False
    if mode in ("fused", "forward-grad"):           # math calls, fuse (scalar fast path)
        callee = bindings.callee
        optimistic = enabled("math") and not has_aux and output in activity.scalars \
            and only_numbers(block, activity.scalars, callee) \
            and use_math(module, activity.scalars, callee, bindings.name_for)
    if mode in ("fused", "gradient"):
        module, name = fuse(module, name, namer, bindings, has_aux, optimistic,
                            gradient_only=mode == "gradient")
    if mode == "gradient" and arrays and enabled("specialise"):  # specialise (float64)
        specialise(_function_named(module, name), dict(arrays), activity.shapes, bindings)
    bindings.rescope(module, fn.__code__.co_freevars)
    kind = {"fwd": "jvp", "batch": "batched jvp", "slope": "jvp", "rev": "vjp",
            "fused": "grad", "gradient": "gradient", "forward-grad": "grad"}[mode]
    label = f"{kind} of {parsed.name} ({parsed.filename}:{parsed.node.lineno})"
    return compile_adjoint(module, name, bindings.cells, resolver.guards.values(), label,
                           replayable=mode == "rev" and _replayable(block),
                           writes=not _replayable(block),
                           optimistic=optimistic, argument_writes=aliases.argument_writes,
                           by_forward_mode=mode == "forward-grad", rules_edition=rules_edition)


def _frontend(fn, arrays: frozenset):
    """parse ─▶ fence ─▶ normalize ─▶ resolve, and the rewrites that need resolved callees
    (a list handed to NumPy, a helper that writes into an array of `arrays`)."""
    parsed = parse_function(fn)                                  # parse
    fence(parsed)                                                # fence
    namer = Namer.for_function(parsed.node)
    resolver = Resolver(fn, parsed)
    simple = normalize(parsed, namer, resolver)                  # normalize
    block = resolve(simple, resolver)                            # resolve
    if sequences_as_arrays(simple, block, resolver, namer):
        block = resolve(simple, resolver)
    if call_written_helpers(simple, block, resolver, namer, surely_ndarrays(block, arrays),
                            parameters_written):
        block = resolve(simple, resolver)
    return parsed, namer, resolver, simple, block


# function → the parameters it writes into (None while it is analysed); weak, so a closure
# made in a loop leaves with its entry
_WRITTEN = weakref.WeakKeyDictionary()


def parameters_written(fn) -> tuple:
    """The parameters `fn` writes into (an array passed to it changed in place), for
    frontend/functional.py; () where it writes none, returns one of them (its variant would
    hand the caller a copy), is being analysed (recursion) or cannot be transformed."""
    if fn in _WRITTEN:
        return _WRITTEN[fn] or ()
    _WRITTEN[fn] = None
    written = ()
    try:
        parsed, _, resolver, simple, block = _frontend(fn, frozenset())
        output = simple.body[-1].value.id
        aliases = check_in_place_updates(block, output, param_names(simple), simple.versions,
                                         parsed, simple.return_variable,
                                         value_of=resolver.peek)
        returned = reach(aliases.points_to.get(output, {output}), aliases.contents)
        if not set(aliases.argument_writes) & returned:
            written = tuple(sorted(aliases.argument_writes))
    except Exception:  # (any function srcad cannot analyse: its call stays as it is)
        pass
    _WRITTEN[fn] = written
    return written


def forget_helper_analyses() -> None:
    """Forget what `parameters_written` found and the variants made (`clear_cache`)."""
    _WRITTEN.clear()
    forget_variants()


def _replayable(block) -> bool:
    """Whether the backward sweep changes nothing but its closure's cells and lists (what
    `replay.replaying` restores): no array written in place (the sweep restores it), no
    call whose pullback keeps a stack of its own."""
    return not any(op.kind in ("setitem", "effect") or op.augmented or op.dynamic
                   for op in operations(block))


def _function_named(module: gast.Module, name: str) -> gast.FunctionDef:
    return next(node for node in module.body[0].body
                if isinstance(node, gast.FunctionDef) and node.name == name)


def _split_aux(simple: gast.FunctionDef, returned: str, operations, namer):
    """Unpack `(output, aux) = returned` so only `output` is differentiated."""
    output, aux = namer.temporary("output"), namer.temporary("aux")
    unpack = gast.Assign([gast.Tuple([gast.Name(output, gast.Store(), None, None),
                                      gast.Name(aux, gast.Store(), None, None)], gast.Store())],
                         gast.Name(returned, gast.Load(), None, None), None)
    simple.body.insert(len(simple.body) - 1, unpack)
    operation = Operation(unpack, "unpack", (output, aux), args=(unpack.value,))
    return output, operations + [operation]
