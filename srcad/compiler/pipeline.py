"""pipeline: the passes that turn a Python function into its compiled derivative, in order.

    frontend (parse ─▶ fence ─▶ normalize ─▶ resolve) ─▶ softmax* ─▶ analyze (activity,
    numbers, shapes, aliasing) ─▶ reverse (tbr, recording; signs*, release*) or forward
    [─▶ math* ─▶ fuse ─▶ specialise*] ─▶ emit

Start reading here. A mode is a list of passes over one `Program` (PASSES; `python -m srcad
show --passes` prints them), and a pass marked * can be switched off
(`srcad.passes.off(name)`): a wrong derivative is bisected that way, and the differential
fuzzer compares each program with and without them. `srcad.show(f, upto=name)` prints the
program after any pass. Each pass's module docstring states what it takes, what it returns
and the invariant it guarantees to the next one. The cache (srcad.compiler.cache) calls
`transform` once per function, `wrt` and options; the frontend's simple form is made once
per function and copied for each of its programs (frontend/kept.py).
"""
from __future__ import annotations

import functools
import gc
import weakref
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Callable, NamedTuple

import gast

from srcad.compiler.analysis.activity import Activity, analyze_activity
from srcad.compiler.analysis.aliasing import Aliases, check_in_place_updates, reach
from srcad.compiler.analysis.arrays import resolve_array_methods, surely_ndarrays
from srcad.compiler.transform.sequences import (resolve_container_copies,
                                       resolve_sequence_arithmetic, sequences_as_arrays)
from srcad.compiler.analysis.scalars import (array_ranks, element_sources, only_numbers,
                                             scalar_names)
from srcad.compiler.analysis.shapes import shape_classes
from srcad.compiler import numba_backend
from srcad.compiler.emit import CompiledAdjoint, compile_adjoint, python_source
from srcad.compiler.frontend.fence import fence
from srcad.compiler.frontend.container_writes import surely_lists
from srcad.compiler.frontend.functional import call_written_helpers, forget_variants
from srcad.compiler.frontend.inline import inline_helpers
from srcad.compiler.frontend.kept import forget_frontends, frontend_of
from srcad.compiler.frontend.leaves import unpacked_leaves
from srcad.compiler.frontend.normalize import normalize
from srcad.compiler.frontend.parse import (ParsedFunction, forget_parses, param_names,
                                           parse_function)
from srcad.compiler.frontend.resolve import Operation, Resolver, operations, resolve
from srcad.compiler.frontend.trees import walk
from srcad.compiler.passes import OPTIONAL, enabled, off_in_this_thread, switched_off
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
from srcad.errors import SrcadError, UnsoundAliasingError, UsageError
from srcad.kernels.pytrees import constructs_record
from srcad.ops.python_statements import ContextsUnwound, entered
from srcad.ops.registry import RULES_EDITION
from srcad.runtime.arguments import output_and_aux
from srcad.runtime.methods import refuse_argument_updates


MODES = {
    "rev": "the adjoint `vjp` and `value_and_grad` run: `(output, backward)`",
    "fused": "`grad` of Python floats: `(output, gradients)` in one program",
    "gradient": "`grad` of arrays: the gradients alone, the output's elements not computed",
    "forward-grad": "`grad` of one Python float by forward mode, with the tangent 1.0",
    "fwd": "the tangent program of `jvp`: `(output, tangent)`",
    "batch": "the tangent program with batched tangents (forward Jacobians)",
    "slope": "the tangent program returning the tangent alone (Hessian-vector products)",
}


@dataclass
class Program:
    """What the passes share: the request, and what each pass made of the function."""

    fn: Callable
    wrt: tuple
    mode: str = "rev"
    has_aux: bool = False
    containers: frozenset = frozenset()  # `wrt` parameters holding dicts, lists, tuples
    scalars: frozenset = frozenset()     # parameters holding Python numbers
    arrays: frozenset = frozenset()      # (parameter, rank) of float64 arrays ("gradient")
    leaves: tuple = ()  # (parameter, ((path, kind), ..)): taken leaf by leaf (frontend/leaves.py)
    requested: tuple = ()  # (wrt, scalars, arrays) as asked, before `leaves` replaced them
    rules_edition: int = 0
    parsed: ParsedFunction | None = None  # frontend
    namer: Namer | None = None
    resolver: Resolver | None = None
    simple: gast.FunctionDef | None = None  # the function in simple form
    block: list = field(default_factory=list)  # its operations
    output: str = ""
    bindings: Bindings | None = None
    activity: Activity | None = None      # analyze
    aliases: Aliases | None = None
    module: gast.Module | None = None     # reverse / forward: the derivative program
    name: str = ""                        # its function's name in `module`
    optimistic: bool = False              # math: its caller must check it (math_calls.py)
    backend: str = "python"               # "numba": made for numba_backend.py
    inline: bool = True                   # helpers may be written out (frontend/inline.py)
    inlined: bool = False                 # some were


def frontend(program: Program) -> None:
    """parse ─▶ fence ─▶ normalize ─▶ resolve: the function in simple form, its operations
    with their callees resolved; `has_aux` splits the output from the aux."""
    fn, wrt = program.fn, frozenset(program.wrt)
    (program.parsed, program.namer, program.resolver, program.simple, program.block,
     program.inlined), renamed = _frontend(fn, wrt - program.containers - program.scalars,
                                           program.inline and enabled("inline"),
                                           program.leaves)
    if renamed:
        _take_leaves(program, renamed)
    program.output = program.simple.body[-1].value.id
    program.bindings = Bindings(program.namer, program.resolver)
    if program.has_aux:
        program.output, program.block = _split_aux(program.simple, program.output,
                                                   program.block, program.namer,
                                                   program.bindings.name_for)
    params = param_names(program.simple)
    resolve_array_methods(program.block, params, wrt - program.containers,
                          program.bindings.name_for)
    resolve_container_copies(program.block, params, program.bindings.name_for)


def _take_leaves(program: Program, renamed: dict) -> None:
    """`wrt`, `scalars` and `arrays` of the program whose container parameters `renamed`
    became their leaves' (frontend/leaves.py): a leaf of kind "float" holds a Python
    number, one of an int kind a float64 array of that rank."""
    program.requested = (program.wrt, program.scalars, program.arrays)
    kinds = {name: kind for parameter, described in program.leaves
             for name, (_, kind) in zip(renamed[parameter], described)}
    program.wrt = tuple(leaf for name in program.wrt for leaf in renamed.get(name, (name,)))
    program.scalars = program.scalars | {n for n, kind in kinds.items() if kind == "float"}
    program.arrays = program.arrays | {(n, kind) for n, kind in kinds.items()
                                       if type(kind) is int}


def softmax_rules(program: Program) -> None:
    """A softmax written out gets the softmax's own rules (transform/softmax.py)."""
    use_softmax_rules(program.simple, program.block)


def analyze(program: Program) -> None:
    """Activity, Python numbers, shape classes, aliasing (which refuses unsound writes)."""
    block, wrt = program.block, frozenset(program.wrt)
    activity = analyze_activity(block, set(wrt), program.output)
    resolve_sequence_arithmetic(block, param_names(program.simple), program.containers,
                                activity.active)
    elements = element_sources(block, dict(program.arrays))
    params = param_names(program.simple)
    numbers = scalar_names(block, params, program.scalars, program.simple.return_variable,
                           elements)
    ranks = array_ranks(block, params, dict(program.arrays), numbers)
    if ranks.keys() - elements.keys():  # (elements of arrays the function makes: numbers too)
        numbers = scalar_names(block, params, program.scalars, program.simple.return_variable,
                               ranks)
    program.activity = replace(activity, scalars=numbers, elements=elements,
                               shapes=shape_classes(block, wrt - program.containers, numbers))
    program.aliases = check_in_place_updates(
        block, program.output, param_names(program.simple), program.simple.versions,
        program.parsed, program.simple.return_variable, numbers, program.resolver.peek)


def reverse_mode(program: Program) -> None:
    """The adjoint: a forward sweep recording what the backward sweep reads, and the
    backward sweep (transform/reverse.py; its rewrites `signs` and `release` inside)."""
    program.module, program.name = reverse(
        program.simple, program.block, program.activity, program.aliases, program.wrt,
        program.output, program.parsed, program.namer, program.bindings, program.containers,
        gradient_only=program.mode == "gradient", typed_tape=program.backend == "numba")


def forward_mode(program: Program) -> None:
    """The tangent program (transform/forward.py): batched tangents for "batch", the tangent
    alone for "slope", seeded with 1.0 for "forward-grad" (numbers only, else NotForwardable)."""
    mode, activity = program.mode, program.activity
    if mode == "forward-grad":
        check_forward_grad(program.block, activity)
    if mode == "batch":  # tangents of whole arrays: no float specialisation
        activity = replace(activity, scalars=frozenset())
    program.module, program.name = forward(
        program.simple, program.block, activity, program.wrt, program.output, program.parsed,
        program.namer, program.bindings, program.containers,
        BatchedTangents if mode == "batch" else None, tangent_only=mode == "slope")
    if mode == "forward-grad":
        seed_with_one(program.module, program.name)


def math_calls(program: Program) -> None:
    """Ufunc calls on Python floats become `math` calls, for a program of numbers alone
    (transform/math_calls.py): the program is then optimistic."""
    callee, activity = program.bindings.callee, program.activity
    program.optimistic = not program.has_aux and program.output in activity.scalars \
        and only_numbers(program.block, activity.scalars, callee) \
        and use_math(program.module, activity.scalars, callee, program.bindings.name_for)


def fuse_sweeps(program: Program) -> None:
    """Forward and backward sweep in one function returning the gradients
    (transform/fuse.py); "gradient" returns no value."""
    program.module, program.name = fuse(program.module, program.name, program.namer,
                                        program.bindings, program.has_aux, program.optimistic,
                                        gradient_only=program.mode == "gradient")


def specialise_float64(program: Program) -> None:
    """Operations on the float64 arrays of `arrays` written for them (transform/specialise.py)."""
    if program.arrays:
        specialise(_function_named(program.module, program.name), dict(program.arrays),
                   program.activity.shapes, program.bindings,
                   program.scalars & set(param_names(program.simple)))


def numba_ready(program: Program) -> None:
    """For `backend="numba"`: the program made numba's (numba_backend.py)."""
    if program.backend == "numba":
        numba_backend.lower(program.module, program.name, program.activity.scalars,
                            program.bindings)


class Pass(NamedTuple):
    name: str
    run: Callable[[Program], None]
    summary: str
    optional: bool = False  # it can be switched off: `srcad.passes.off(name)`


_FRONTEND = Pass("frontend", frontend, "parse, fence, normalize, resolve: the simple form")
_SOFTMAX = Pass("softmax", softmax_rules, "a softmax written out gets its own rules", True)
_ANALYZE = Pass("analyze", analyze, "activity, numbers, shape classes, aliasing")
_REVERSE = Pass("reverse", reverse_mode, "the adjoint: forward and backward sweep")
_FORWARD = Pass("forward", forward_mode, "the tangent program")
_MATH = Pass("math", math_calls, "ufuncs on Python floats become `math` calls", True)
_FUSE = Pass("fuse", fuse_sweeps, "both sweeps in one function returning the gradients")
_SPECIALISE = Pass("specialise", specialise_float64, "code written for float64 arrays", True)
_NUMBA = Pass("numba", numba_ready,
               "for backend=\"numba\": numba's twins, a copy whose tapes of numbers are arrays")

PASSES = {  # each mode's passes, in order; `emit` compiles what the last one made
    "rev": (_FRONTEND, _SOFTMAX, _ANALYZE, _REVERSE),
    "fused": (_FRONTEND, _SOFTMAX, _ANALYZE, _REVERSE, _MATH, _FUSE, _NUMBA),
    "gradient": (_FRONTEND, _SOFTMAX, _ANALYZE, _REVERSE, _FUSE, _SPECIALISE, _NUMBA),
    "forward-grad": (_FRONTEND, _ANALYZE, _FORWARD, _MATH),
    "fwd": (_FRONTEND, _ANALYZE, _FORWARD),
    "batch": (_FRONTEND, _ANALYZE, _FORWARD),
    "slope": (_FRONTEND, _ANALYZE, _FORWARD),
}
INNER = {"frontend": ("inline",),
         "reverse": ("signs", "reuse", "outline", "release", "first-trip"),
         "fuse": ("copies",),
         "forward": ("dead-code",)}  # optional rewrites a pass makes inside it


def run_passes(program: Program, upto: str | None = None) -> Program:
    """Run the passes of `program.mode` in order (those switched off left out), through
    the pass `upto` when given."""
    passes = PASSES[program.mode]
    if upto is not None and upto not in [p.name for p in passes]:
        raise UsageError(f"mode {program.mode!r} has no pass {upto!r}; its passes are "
                         f"{', '.join(p.name for p in passes)}, then emit; or "
                         f"{DIFFERENTIATE!r}, the plain derivative.")
    unfit = numba_backend.PYTHON_ONLY if program.backend == "numba" else ()
    try:
        with off_in_this_thread(*unfit):
            for step in passes:
                if not (step.optional and not enabled(step.name)):
                    step.run(program)
                if step.name == upto:
                    break
    except SrcadError:
        if not program.inlined:
            raise
        # (a helper written out made a program a pass refuses: the calls as they were)
        wrt, scalars, arrays = program.requested or (program.wrt, program.scalars,
                                                     program.arrays)
        return run_passes(Program(program.fn, wrt, program.mode, program.has_aux,
                                  program.containers, scalars, arrays, program.leaves,
                                  rules_edition=program.rules_edition,
                                  backend=program.backend, inline=False), upto)
    return program


def transform(fn, wrt: tuple[str, ...], has_aux: bool = False,
              containers: frozenset = frozenset(), mode: str = "rev",
              scalars: frozenset = frozenset(), arrays: frozenset = frozenset(),
              backend: str = "python", leaves: tuple = ()) -> CompiledAdjoint:
    """The derivative program of `fn` with respect to the parameters named in `wrt`, made
    by the passes of `mode` (MODES says what each returns) and compiled.

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
    "slope": "fwd" taking each tangent as a parameter of its own (not in a tuple) before `fn`'s
    arguments and returning `tangent_of_output` alone, computed without the operations that
    only lead to the output (transform/dead_code.py): reverse mode over it gives
    Hessian-vector products, specialised on a float64 tangent as on the arguments.
    With `has_aux`, `fn` returns `(output, aux)` and only `output` is differentiated.
    `containers` names the `wrt` parameters that hold dicts, lists or tuples of values;
    `scalars` the parameters, `wrt` or not, that hold Python numbers (the code is
    specialised on it); `arrays`, for mode "gradient", `(parameter, rank)` of those that
    hold float64 arrays (transform/specialise.py). `backend="numba"` (modes "fused" and
    "gradient"): a program made for numba_backend.compiled. `leaves`, `(parameter, ((path,
    kind), ..))` of `wrt` parameters holding dicts, lists or tuples, makes a program that
    takes those leaf by leaf in their place and returns their gradients one by one
    (frontend/leaves.py; kind "float", a float64 array's rank, or None), or raises
    NotUnpackable.
    """
    with _collector_paused():
        return _compiled(Program(fn, wrt, mode, has_aux, containers, scalars, arrays, leaves,
                                 rules_edition=RULES_EDITION[0],  # (a rule registered from
                                 backend=backend))                 # here on: stale)


def _compiled(program: Program) -> CompiledAdjoint:
    """The program's passes run and emitted, in a frame of its own: its trees are freed as
    it returns, before the collector resumes (_collector_paused)."""
    return emit(run_passes(program))


@contextmanager
def _collector_paused():
    """Python's cycle collector paused while a derivative is made, and resumed after.

    The passes allocate tree nodes by the hundred thousand, and each time enough of them
    have survived, the collector walks every object alive, the growing trees included: a
    2000-line function spent a fifth of its first call in six such walks, and that share
    grows with the length of the function. What a transformation discards is freed by
    reference counting, before the collector resumes: its first pass then meets only what
    outlives the transformation (a Program still referenced made it walk every tree of the
    transformation, a twentieth of a long function's first call). Where the
    collector was off already (the user's choice, or another thread's transformation) it
    is left as it is."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def emit(program: Program) -> CompiledAdjoint:
    """The derivative program compiled, with what its callers must know of it."""
    _unwinding_contexts(program)
    kind = {"fwd": "jvp", "batch": "batched jvp", "slope": "jvp", "rev": "vjp",
            "fused": "grad", "gradient": "gradient", "forward-grad": "grad"}[program.mode]
    parsed = program.parsed
    label = f"{kind} of {parsed.name} ({parsed.filename}:{parsed.node.lineno})"
    replayable = _replayable(program.block)
    return compile_adjoint(program.module, program.name, program.bindings.cells,
                           program.fn.__code__.co_freevars,
                           program.resolver.guards.values(), label,
                           replayable=program.mode == "rev" and replayable,
                           writes=not replayable, optimistic=program.optimistic,
                           argument_writes=program.aliases.argument_writes,
                           by_forward_mode=program.mode == "forward-grad",
                           rules_edition=program.rules_edition)


DIFFERENTIATE = "differentiate"  # `upto`: the derivative as a person would write it


def source_after(fn, wrt: tuple[str, ...], mode: str, upto: str, **options) -> str:
    """The program as it stands after the pass `upto` of `mode`, as source: the function in
    simple form before a derivative is made, the derivative program after (`srcad.show`);
    `options` are Program's (`scalars`, `arrays`). `upto="differentiate"` is the mode's
    reverse or forward pass without the rewrites inside it and the optional passes before
    it: the plain derivative."""
    if upto == "emit":  # (what runs: the compiled program)
        return emit(run_passes(Program(fn, wrt, mode, **options))).source.rstrip("\n")
    if upto == DIFFERENTIATE:  # (without the optional passes before it either: softmax)
        upto = next(step.name for step in PASSES[mode] if step.name in ("reverse", "forward"))
        earlier = [step.name for step in PASSES[mode][:[s.name for s in PASSES[mode]].index(
            upto)] if step.optional]
        with off_in_this_thread(*INNER[upto], *earlier):
            program = run_passes(Program(fn, wrt, mode, **options), upto)
    else:
        program = run_passes(Program(fn, wrt, mode, **options), upto)
    return python_source(program.module if program.module is not None else program.simple)


def describe_passes() -> str:
    """Every mode's passes, in order, as `python -m srcad show --passes` prints them."""
    def named(step: Pass) -> str:
        inner = ", ".join(f"{name}*" for name in INNER.get(step.name, ()))
        return step.name + ("*" if step.optional else "") + (f" [{inner}]" if inner else "")

    lines = [f"{mode:<13} {' -> '.join([*map(named, passes), 'emit'])}"
             for mode, passes in PASSES.items()]
    lines += ["", "modes:"] + [f"  {mode:<13} {text}" for mode, text in MODES.items()]
    steps = {step.name: step for passes in PASSES.values() for step in passes}
    lines += ["", "passes:"]
    for step in steps.values():
        lines.append(f"  {step.name + ('*' if step.optional else ''):<13} {step.summary}")
        lines += [f"    {name + '*':<11} {OPTIONAL[name]}" for name in INNER.get(step.name, ())]
    lines.append(f"  {'emit':<13} compiled, its source registered in linecache")
    inside = {name for names in INNER.values() for name in names}
    choices = sorted(set(OPTIONAL) - set(steps) - inside)
    lines += ["", "* can be switched off, `with srcad.passes.off(name):`, as can the API's choices "
              f"of mode: {', '.join(choices)} (srcad.passes.OPTIONAL)",
              f"`--upto {DIFFERENTIATE}` shows the program after reverse or forward without "
              "the rewrites inside it or the optional passes before it: the plain derivative"]
    return "\n".join(lines)


def _frontend(fn, arrays: frozenset, inline: bool = False, leaves: tuple = ()):
    """parse ─▶ (leaves) ─▶ (inline) ─▶ fence ─▶ normalize ─▶ resolve, made once for every
    program of the function (frontend/kept.py), and the rewrites that need resolved callees
    and the parameters holding arrays, `arrays` (a helper that writes into one); last,
    whether helpers were written out; and the leaf parameters of the parameters of
    `leaves`."""
    parsed, namer, resolver, simple, block, inlined, renamed = frontend_of(
        fn, (inline, leaves, switched_off(), RULES_EDITION[0]),
        lambda: _simple_form(fn, inline, leaves))
    arrays = arrays.union(*renamed.values())
    try:
        ndarrays = functools.cache(functools.partial(surely_ndarrays, block, param_names(simple),
                                                     arrays))  # (asked only if a helper writes)
        if call_written_helpers(simple, block, resolver, namer, ndarrays, parameters_written):
            block = resolve(simple, resolver)
        _refuse_constructors_writing_arguments(block, parsed)
    except SrcadError:  # (the calls as they were: see run_passes)
        if not inlined:
            raise
        return _frontend(fn, arrays, leaves=leaves)
    return (parsed, namer, resolver, simple, block, inlined), renamed


def _simple_form(fn, inline: bool, leaves: tuple = ()) -> tuple:
    """The function in simple form, its operations resolved (a list handed to NumPy made
    an array), with the containers of `leaves` taken leaf by leaf and helpers written out
    where `inline` and they can be; whether they were, and the leaves' parameters."""
    parsed, renamed = parse_function(fn), {}                     # parse
    if leaves:
        parsed, renamed = unpacked_leaves(parsed, leaves)        # leaves
    resolver = Resolver(fn, parsed)
    written_out = inline_helpers(parsed, resolver) if inline else None
    if written_out is None:
        return (*_resolved(parsed, resolver), False, renamed)
    resolver.parsed = written_out                                # inline
    try:
        return (*_resolved(written_out, resolver), True, renamed)
    except SrcadError:
        return _simple_form(fn, False, leaves)


def _resolved(parsed, resolver) -> tuple:
    lists = surely_lists(parsed.node, resolver, parsed.held)
    fence(parsed, lists)                                         # fence
    namer = Namer(parsed.held.names)  # (the names the user wrote)
    simple = normalize(parsed, namer, resolver, lists)           # normalize
    block = resolve(simple, resolver)                            # resolve
    if sequences_as_arrays(simple, block, resolver, namer):
        block = resolve(simple, resolver)
    return parsed, namer, resolver, simple, block


def _refuse_constructors_writing_arguments(block, parsed) -> None:
    """`C(v, registry)` whose `__init__` writes into `registry` (appends the new object, say):
    refused where it is called, differentiated or not, since what it wrote would be read
    without the derivative (runtime/methods.refuse_argument_updates)."""
    for op in operations(block):
        if op.kind == "call" and constructs_record(op.callee):
            try:
                refuse_argument_updates(op.callee.__init__, f"{op.callee.__name__}(...)")
            except UnsoundAliasingError as error:
                raise UnsoundAliasingError(error.message, parsed.location(op.statement),
                                           error.fix) from None


# function → the parameters it writes into (None while it is analysed); weak, so a closure
# made in a loop leaves with its entry
_WRITTEN = weakref.WeakKeyDictionary()


def parameters_written(fn) -> tuple:
    """The parameters `fn` writes into (an array passed to it changed in place), for
    frontend/functional.py; () where it writes none, returns one of them (its variant would
    hand the caller a copy), is being analysed (recursion) or cannot be transformed."""
    written, returned = _writes(fn)
    return () if set(written) & returned else written


def arguments_written(fn) -> tuple:
    """Every parameter `fn` may write into (runtime/methods.py refuses a method or an
    `__init__` that writes into an argument other than its object); () where it cannot be
    analysed (its transformation, if it comes, says why)."""
    return _writes(fn)[0]


def _writes(fn) -> tuple:
    """`(parameters fn writes into, the objects its result may show)`, analysed once."""
    if fn in _WRITTEN:
        return _WRITTEN[fn] or ((), set())
    _WRITTEN[fn] = None
    found = ((), set())
    try:
        (parsed, _, resolver, simple, block, _), _ = _frontend(fn, frozenset())
        output = simple.body[-1].value.id
        aliases = check_in_place_updates(block, output, param_names(simple), simple.versions,
                                         parsed, simple.return_variable,
                                         value_of=resolver.peek)
        found = (tuple(sorted(aliases.argument_writes)),
                 reach(aliases.points_to.get(output, {output}), aliases.contents))
    except Exception:  # (any function srcad cannot analyse: its call stays as it is)
        pass
    _WRITTEN[fn] = found
    return found


def forget_helper_analyses() -> None:
    """Forget what `parameters_written` found, the variants made, the functions parsed and
    their simple forms (`clear_cache`)."""
    _WRITTEN.clear()
    forget_variants()
    forget_parses()
    forget_frontends()


def _replayable(block) -> bool:
    """Whether the backward sweep changes nothing but its closure's cells and lists (what
    `replay.replaying` restores): no array written in place (the sweep restores it), no
    call whose pullback keeps a stack of its own."""
    return not any(op.kind in ("setitem", "effect") or op.augmented or op.dynamic
                   for op in operations(block))


def _unwinding_contexts(program: Program) -> None:
    """A program that enters context managers (the user's `with`) runs inside
    `ContextsUnwound()`, which exits those an exception leaves open (ops/python_statements.py).
    Only a program that may name `entered` is searched for it: one given a name for it, or
    whose function sees it as `entered`; for any other, `name_for` would make up a name
    that no code reads (nearly all programs: the walk cost 4% of a long function's first
    call)."""
    if not program.bindings.named_already(entered) \
            and program.resolver.peek("entered") is not entered:
        return
    name = program.bindings.name_for("entered", entered)
    if not any(isinstance(n, gast.Name) and n.id == name for n in walk(program.module)):
        return
    function = _function_named(program.module, program.name)
    guard = gast.Call(gast.Name(program.bindings.name_for("ContextsUnwound", ContextsUnwound),
                                gast.Load(), None, None), [], [])
    function.body = [gast.With([gast.withitem(guard, None)], function.body, None)]


def _function_named(module: gast.Module, name: str) -> gast.FunctionDef:
    return next(node for node in module.body[0].body
                if isinstance(node, gast.FunctionDef) and node.name == name)


def _split_aux(simple: gast.FunctionDef, returned: str, operations, namer, bind):
    """Unpack `(output, aux) = returned` so only `output` is differentiated; the forward
    sweep unpacks `output_and_aux(returned)`, which names the mistake where the function
    returns no pair (`bind(name, obj)` names it for generated code)."""
    output, aux = namer.temporary("output"), namer.temporary("aux")

    def unpacked(value):
        pair = gast.Tuple([gast.Name(output, gast.Store(), None, None),
                           gast.Name(aux, gast.Store(), None, None)], gast.Store())
        return gast.Assign([pair], value, None)

    unpack = unpacked(gast.Name(returned, gast.Load(), None, None))
    simple.body.insert(len(simple.body) - 1, unpack)
    operation = Operation(unpack, "unpack", (output, aux), args=(unpack.value,))
    checked = gast.Call(gast.Name(bind("output_and_aux", output_and_aux), gast.Load(), None,
                                  None), [unpack.value, gast.Constant("grad", None)], [])
    operation.forward = gast.copy_location(unpacked(checked), unpack)
    return output, operations + [operation]
