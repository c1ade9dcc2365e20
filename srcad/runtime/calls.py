"""calls: differentiating a call whose callee is only known when it runs.

Generated code routes three kinds of call through here: calls to the user's own Python
functions (their adjoints are generated and cached like any other), calls of a value held
in a variable (`f = np.tanh if smooth else np.sign; f(x)`, `getattr(np, name)(x)`), and
methods of a local value (`x.sum(axis=0)`, `model.forward(x)`). Each returns the call's
result and a *pullback*: `pullback(g)` gives the cotangents of the arguments marked active
at the call site, in that order (None for zero). The same rule registry serves every mode.

Calls in tangent programs differentiated again (the last section): a tangent program
(srcad/compiler/transform/forward.py) is ordinary Python, except that a call whose callee is
only known when it runs becomes `call_jvp(f, active, tangents, *args)`. When srcad
differentiates the tangent program again (reverse over forward for Hessian-vector
products, forward over forward for third order), such a call is differentiated as the
call of *f's own tangent program*, `P(seeds, *args) -> (y, t_y)`, which is Python source
as well: for a Python function it is the function's generated tangent program, for
anything else (a NumPy function chosen at run time, an array method) the tangent program
of a one-line wrapper `def call(a0, a1): return srcad_callee(a0, a1)`, in which srcad
resolves `srcad_callee` and applies its JVP rules.
"""
from __future__ import annotations

import functools
import inspect
import itertools
import linecache
import sys
import threading
import types

import numpy as np

from srcad.errors import (MissingJVPRuleError, MissingRuleError, SrcadError,
                          UnsoundAliasingError, UnsupportedDerivativeError,
                          UnsupportedSyntaxError)
from srcad.kernels.adjoints import holds_floats
from srcad.kernels.pytrees import (child_fields, constructor_places, constructs_node,
                                   constructs_record, is_record, node)
from srcad.kernels.snapshots import digest
from srcad.kernels.tangents import zero_tangent
from srcad.ops import is_nondifferentiable, jvp_rules, nondifferentiable, vjp_rules
from srcad.ops.callables import unwrapped
from srcad.ops.python_builtins import starred_call, starred_method
from srcad.ops.python_statements import attempt
from srcad.ops.registry import rule_slot
from srcad.runtime import attempts, held, methods
from srcad.runtime.arguments import copied, is_container, leaves
from srcad.runtime.as_written import refusal_of, remember_refusal, run_as_constant
from srcad.runtime.control import Checkpoint, CustomGradient, positional_only, wrong_count
from srcad.runtime.hooks import ABOVE, DerivativeFunction
from srcad.runtime.methods import (method_callee, record_call, refuse_argument_updates,
                                   shifted)


def call_vjp(fn, active: tuple, *args, **kwargs):
    """`(fn(*args, **kwargs), pullback)`; `active` lists argument positions and keyword names."""
    if constructs_record(fn):  # a plain class built of differentiated values
        fn = record_constructor(fn)
    if record_call(fn) is not None:  # a record called: its class's `__call__` of it
        return call_vjp(record_call(fn), shifted(active, 1), fn, *args, **kwargs)
    rules = vjp_rules(fn)
    if rules is not None:
        return _by_rules(fn, rules, active, args, kwargs)
    if fn is starred_call or fn is starred_method:  # `f(*xs, **kw)`: the call spelled out
        return _by_source(spread(fn, args), active, args, kwargs)
    if fn is call_jvp or fn is call_method_jvp:  # in a tangent program differentiated again
        return vjp_of_tangent_call(fn, active, args, kwargs)
    if fn is attempt:  # a `try` statement's body
        return attempts.vjp(call_vjp, active, args, kwargs)
    if isinstance(fn, held.HeldCall):  # a differentiated function value called
        return held.vjp(call_vjp, fn, active, args, kwargs)
    if fn is functools.partial:  # (of differentiated values: a held function value)
        return held.partial_vjp(active, args, kwargs)
    if isinstance(fn, DerivativeFunction):  # `srcad.grad(h)` called in the function
        return ABOVE.vjp_of_derivative(fn, active, args, kwargs)
    if fn is ABOVE.jvp:
        return ABOVE.vjp_of_jvp(active, args, kwargs)
    if fn is ABOVE.vjp:
        return ABOVE.vjp_of_vjp(active, args, kwargs)
    if isinstance(fn, CustomGradient):
        return _by_custom_gradient(fn, active, args, kwargs)
    if isinstance(fn, Checkpoint):
        return _by_recomputation(fn, active, args, kwargs)
    if constructs_node(fn):  # a dataclass built of differentiated values
        return _by_node_constructor(fn, active, args, kwargs)
    if isinstance(fn, functools.partial):
        return call_vjp(fn.func, shifted(active, len(fn.args)), *fn.args, *args,
                        **{**fn.keywords, **kwargs})
    if is_nondifferentiable(fn):
        return fn(*args, **kwargs), _no_cotangents(active)
    function = unwrapped(fn)
    if isinstance(function, types.MethodType):  # a bound method: its receiver comes first
        return _by_rules_or_source(function.__func__, shifted(active, 1),
                                   (function.__self__, *args), kwargs)
    if isinstance(function, types.FunctionType):
        return _by_source(function, active, args, kwargs)
    raise MissingRuleError(
        f"srcad has no derivative rule for {fn!r}, and a differentiated value flows into it.",
        fix="register one with `srcad.defvjp(fn, lambda g, ans, x: ...)`.")


def spread(fn, args: tuple):
    """`fn`, or for `starred_call(f, xs, kw)` (`starred_method(r, "name", xs, kw)`) a
    function of the same parameters that makes the call with the items of `xs` and `kw`
    spelled out for this call, `def call(callee, xs, kw): return callee(xs[0], xs[1],
    k=kw["k"])`: srcad transforms it as any function, in every mode and order."""
    if fn is not starred_call and fn is not starred_method:
        return fn
    method = fn is starred_method
    positional, keywords = args[1 + method], args[2 + method]
    if not isinstance(positional, (tuple, list, np.ndarray)) or not isinstance(keywords, dict) \
            or not all(isinstance(k, str) and k.isidentifier() for k in keywords):
        raise UnsupportedDerivativeError(
            f"srcad differentiates `*xs` of a tuple, list or array and `**kw` of a dict with "
            f"names for keys; this call passes a {type(positional).__name__} and a "
            f"{type(keywords).__name__}.", fix="make a tuple of the values first: "
            "`f(*tuple(xs))`.")
    items = ", ".join([f"xs[{k}]" for k in range(len(positional))]
                      + [f"{k}=kw[{k!r}]" for k in keywords])
    head, callee = ("receiver, name, ", f"receiver.{args[1]}") if method \
        else ("callee, ", "callee")
    return defined_by(f"def call({head}xs, kw):\n    return {callee}({items})\n", "call", {})


def call_method_vjp(receiver, name: str, active: tuple, *args, **kwargs):
    """`receiver.name(*args, **kwargs)` and its pullback; position 0 of `active` is the
    receiver."""
    fn, shifted, args, padded = method_callee(receiver, name, active, args)
    result, pullback = call_vjp(fn, shifted, *args, **kwargs)
    return result, (_with_receiver_zero(pullback) if padded else pullback)


def refuse_unruled(error: MissingRuleError, value, tangent) -> None:
    """Raise `error`, made where srcad transformed a call, when a value passed where the
    callee has no rule holds floats and has a tangent (True in the backward sweep): an
    integer computed from differentiated values (an index, an axis) carries no derivative."""
    if tangent is not None and holds_floats(value):
        raise type(error)(error.message, error.location, error.fix)


nondifferentiable(refuse_unruled)  # a check: a derivative program differentiated again runs it


def _refuse_unruled_at_run_time(fn, spec, args, kwargs, maker: str) -> None:
    """`refuse_unruled` for a call resolved when it runs, whose argument `spec` (a position
    or keyword name) has no rule slot."""
    name = f"positional argument {spec}" if isinstance(spec, int) else f"`{spec}=`"
    value = args[spec] if isinstance(spec, int) else kwargs[spec]
    refuse_unruled(MissingRuleError(
        f"a differentiated value is passed as {name} of {getattr(fn, '__qualname__', fn)!r}, "
        "and srcad has no derivative rule for that argument: its derivative would be "
        "silently lost.", fix=f"register a rule for that parameter with `srcad.{maker}` (one "
        "per positional parameter) and pass the value there, or wrap it in "
        "`srcad.stop_gradient(...)` if it should get no derivative."), value, True)


def _with_receiver_zero(pullback):
    """A pullback that also answers for the receiver (a module: no cotangent)."""
    def padded(g):
        return (None, *pullback(g))
    return padded


def _by_rules_or_source(function, active, args, kwargs):
    rules = vjp_rules(function)
    if rules is not None:
        return _by_rules(function, rules, active, args, kwargs)
    return _by_source(function, active, args, kwargs)


def _no_cotangents(active):
    return lambda g: (None,) * len(active)


def _by_rules(fn, rules, active, args, kwargs):
    result = fn(*args, **kwargs)
    positions = [rule_slot(rules.rules, spec) for spec in active]
    for spec, position in zip(active, positions):
        if position is None:
            _refuse_unruled_at_run_time(fn, spec, args, kwargs, "defvjp")

    def pullback(g):
        if g is None:
            return (None,) * len(active)
        return tuple(None if p is None or rules.rules[p] is None
                     else rules.rules[p](g, result, *args, **kwargs) for p in positions)
    return result, pullback


def _by_custom_gradient(fn: CustomGradient, active, args, kwargs):
    positional_only(fn, active)
    result, grad_fn = fn.forward(*args, **kwargs)

    def pullback(g):
        if g is None:
            return (None,) * len(active)
        cotangents = grad_fn(g)
        if not isinstance(cotangents, (tuple, list)):
            cotangents = (cotangents,)
        if len(cotangents) != len(args):
            wrong_count(fn, len(cotangents), len(args))
        return tuple(cotangents[spec] for spec in active)
    return result, pullback


def _by_recomputation(fn: Checkpoint, active, args, kwargs):
    """`fn(*args, **kwargs)` run plainly, and a pullback that holds the arguments alone and
    differentiates the function from them when it is applied: its intermediates live only
    meanwhile. The arguments are kept by reference, not copied (a parameter passed to each
    of a loop's segments would be copied once per segment), with a hash of their arrays and
    numbers: a derivative program restores what it writes into them before the pullback
    runs, and one written otherwise since the call (or by the function itself) is refused,
    never recomputed from."""
    at_call = digest(leaves((args, kwargs)))
    result = fn.function(*args, **kwargs)
    if digest(leaves((args, kwargs))) != at_call:
        raise UnsoundAliasingError(
            f"the checkpointed function {fn.__name__} writes into an argument passed to it: "
            "recomputing it for the derivative would start from the written value.",
            fix="write into a copy inside the function (`h = h.copy()` before the write), "
            "or pass it a copy.")

    def pullback(g):
        if g is None:
            return (None,) * len(active)
        if digest(leaves((args, kwargs))) != at_call:
            raise UnsoundAliasingError(
                f"an argument passed to the checkpointed function {fn.__name__} (an array, a "
                "number in a list) was written in place after the call, before its derivative "
                "recomputed the function from it.",
                fix="write into a copy (`x = x.copy()` before the write), or pass the "
                "checkpointed function a copy: `step(x.copy())`.")
        _, recomputed = call_vjp(fn.function, active, *args, **kwargs)
        return recomputed(g)
    return result, pullback


def _by_node_constructor(cls, active, args, kwargs):
    """`cls(*args, **kwargs)` for a dataclass: its adjoint, a tuple of its children's (as a
    named tuple's: kernels/adjoints.field_adjoint), gives each argument its field's."""
    instance = cls(*args, **kwargs)
    places = constructor_places(cls, instance, args, kwargs)

    def pullback(g):
        parts = g if g is None or isinstance(g, tuple) else node(g)[0]
        return tuple(None if parts is None or spec not in places else parts[places[spec]]
                     for spec in active)
    return instance, pullback


def _by_source(function, active, args, kwargs):
    places = [parameter_of(function, spec) for spec in active]
    names = tuple(dict.fromkeys(name for name, _ in places))  # each parameter once
    compiled = _transformed_or_refusal(function, names, containers_of(places, active, args,
                                                                       kwargs), "rev",
                                       call=(args, kwargs))
    if isinstance(compiled, SrcadError):  # (a constant, or the refusal raised)
        return run_as_constant(function, args, kwargs, compiled), _no_cotangents(active)
    with NESTED:
        result, backward = compiled.bound(function)(*args, **kwargs)

    def pullback(g):
        if g is None:
            return (None,) * len(active)
        with NESTED:
            cotangents = backward(g)
        by_name = dict(zip(names, cotangents if len(names) > 1 else (cotangents,)))
        return tuple(part_of(by_name[name], part) for name, part in places)
    return result, pullback


class _Nesting(threading.local):
    """The user's functions nested in generated code, per thread. Each level costs three
    frames (the generated program, `call_vjp`, `_by_source`; four in forward mode) where
    the function's own recursion costs one, so the recursion limit is raised while they
    nest deeply, up to four times what it was: srcad reaches the depth the function
    reaches (about 990 levels by default, where 330 raised RecursionError). The limit is
    the process's: it is put back when the last thread that needed more leaves."""

    depth = 0
    raising = False  # whether this thread counts among those that raised the limit

    def __enter__(self):
        self.depth += 1
        needed = _FRAMES * self.depth + _ROOM
        if needed > sys.getrecursionlimit() or (
                # another thread's raise: count among the raisers before relying on it
                not self.raising and _LIMIT["threads"] and needed > _LIMIT["base"]):
            _raise_limit(self, needed)

    def __exit__(self, *exc_info):
        self.depth -= 1
        if self.depth == 0 and self.raising:
            self.raising = False
            _leave_raised_limit()


_FRAMES = 4  # frames a nested level costs, at most
_ROOM = 200  # frames for what runs besides the nested calls (NumPy, srcad, the caller)
NESTED = _Nesting()
_LIMIT = {"threads": 0, "base": 0, "raised": 0}  # threads nested deeply; the limit before
_LIMIT_LOCK = threading.Lock()


def _raise_limit(nesting, needed: int) -> None:
    with _LIMIT_LOCK:
        if not nesting.raising:
            if _LIMIT["threads"] == 0:
                _LIMIT["base"], _LIMIT["raised"] = sys.getrecursionlimit(), 0
            _LIMIT["threads"] += 1
            nesting.raising = True
        raised = min(2 * needed, _FRAMES * _LIMIT["base"] + _ROOM)
        if raised > sys.getrecursionlimit():
            sys.setrecursionlimit(raised)
            _LIMIT["raised"] = raised


def _leave_raised_limit() -> None:
    with _LIMIT_LOCK:
        _LIMIT["threads"] -= 1
        if _LIMIT["threads"] == 0 and _LIMIT["raised"] \
                and sys.getrecursionlimit() == _LIMIT["raised"]:  # (unless the user set it)
            sys.setrecursionlimit(_LIMIT["base"])


def containers_of(places, active, args, kwargs) -> frozenset:
    """The parameters that receive containers: `*args`, `**kwargs`, dicts, lists, tuples,
    nodes and records (kernels/pytrees.py)."""
    packed = {name for name, part in places if part is not None}
    values = {name: args[spec] if isinstance(spec, int) else kwargs[spec]
              for (name, part), spec in zip(places, active) if part is None}
    return frozenset(packed | {n for n, v in values.items()
                               if is_container(v) or is_record(v)})


def transformed(function, names, containers, mode, reached=True, call=None):
    """The cached transformation of a function; when it was reached from a call in the
    user's code, errors say how srcad got there, and `call`, its `(args, kwargs)`, is
    refused where the function writes into one of them (but for srcad's own programs: a
    tangent program differentiated again writes where the user's function did, which a
    derivative of that function restores)."""
    try:
        compiled = ABOVE.compiled_adjoint(function, names, containers=containers, mode=mode)
        if compiled.argument_writes and reached and call is not None \
                and not getattr(function, "srcad_program", False):
            refuse_argument_writes(compiled.argument_writes, function, *call)
        return compiled
    except SrcadError as error:
        if not reached:
            raise
        maker = "defjvp" if mode == "fwd" else "defvjp"
        raise type(error)(
            f"{error.message}\n(srcad reached `{function.__module__}.{function.__qualname__}` "
            "from a call in the function you differentiate, and followed it into its source)",
            error.location,
            f"{(error.fix or '').rstrip('.')}. Or register a rule for "
            f"`{function.__qualname__}` with `srcad.{maker}`, so srcad does not follow its "
            "source.") from None


def _transformed_or_refusal(function, names, containers, mode, reached=True, call=None):
    """`transformed(...)`, or for a function reached from a call whose transformation is
    refused, the refusal: the caller runs it as written where that is exact (as_written.py)."""
    key = (names, containers, mode)
    refusal = refusal_of(function, key)
    if refusal is not None:
        return refusal
    try:
        return transformed(function, names, containers, mode, reached, call)
    except SrcadError as error:
        if not reached:
            raise
        if isinstance(error, UnsupportedSyntaxError):  # (it holds for these arguments)
            remember_refusal(function, key, error)
        return error


def record_constructor(cls):
    """The function srcad differentiates for `cls(...)` (compiler/frontend/functional.py),
    refused where its `__init__` writes into an argument."""
    refuse_argument_updates(cls.__init__, f"{cls.__name__}(...)")
    return ABOVE.record_constructor(cls)


def refuse_argument_writes(argument_writes: dict, function, args, kwargs) -> None:
    """Raise the refusal `analysis.aliasing.check_in_place_updates` made for a parameter the
    called function writes into, when this call passes that parameter something mutable
    (writing into a Python number only rebinds the name, as `s.n += 1` does in a method's
    variant, which writes into a copy of the record `s`)."""
    bound = inspect.signature(function).bind(*args, **kwargs).arguments
    for param, refusal in argument_writes.items():
        value = bound.get(param)
        if param not in bound or not _mutable(value):
            continue
        if refusal.attributes is not None and is_record(value) and not any(
                _mutable(getattr(value, name, None))
                and not (name in vars(value) and type(vars(value)[name]) in (list, dict))
                for name in refusal.attributes):
            continue  # (a record's numbers, rebound, and lists, copied: ops/numpy_arrays.copied)
        raise refusal


def _mutable(value) -> bool:
    if isinstance(value, (tuple, frozenset)):  # (its items may be arrays)
        return any(map(_mutable, value))
    return not isinstance(value, (int, float, complex, str, bytes, np.generic, type(None)))


def part_of(cotangent, part):
    """The cotangent of one argument gathered into `*args` (by index) or `**kwargs` (by key)."""
    if part is None or cotangent is None:
        return cotangent
    return cotangent[part]


def parameter_of(function, spec):
    """The parameter an argument lands in, and its place inside `*args`/`**kwargs` if so."""
    code = function.__code__
    positional = code.co_varnames[:code.co_argcount]
    named = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    rest = code.co_varnames[code.co_argcount + code.co_kwonlyargcount:]
    has_varargs, has_varkw = bool(code.co_flags & inspect.CO_VARARGS), bool(
        code.co_flags & inspect.CO_VARKEYWORDS)
    if isinstance(spec, int) and spec < len(positional):
        return positional[spec], None
    if isinstance(spec, int) and has_varargs:
        return rest[0], spec - len(positional)
    if isinstance(spec, str) and spec in named:
        return spec, None
    if isinstance(spec, str) and has_varkw:
        return rest[1 if has_varargs else 0], spec
    raise SrcadError(f"srcad cannot match argument {spec!r} to a parameter of "
                     f"{function.__qualname__}.")


def is_derivative(fn) -> bool:
    """A function `srcad.grad` (or `value_and_grad`, `vjp`) made, or `srcad.tape.grad`."""
    return isinstance(fn, DerivativeFunction)


# ---- forward mode -----------------------------------------------------------------------------
def call_jvp(fn, active: tuple, tangents: tuple, *args, **kwargs):
    """`(fn(*args, **kwargs), tangent of the result)`; `tangents` holds the tangents of the
    arguments `active` lists (positions and keyword names), None where zero."""
    return jvp_call(fn, active, tangents, args, kwargs)


def jvp_call(fn, active, tangents, args, kwargs, reached=True):
    """`call_jvp`; `reached` tells whether srcad got to `fn` from a call in the user's
    differentiated code (errors say so) or was handed it directly."""
    if constructs_record(fn):  # a plain class built of differentiated values
        fn = record_constructor(fn)
    if record_call(fn) is not None:  # a record called: its class's `__call__` of it
        return jvp_call(record_call(fn), shifted(active, 1), tangents, (fn, *args), kwargs,
                        reached)
    rules = jvp_rules(fn)
    if rules is not None:
        return _jvp_by_rules(fn, rules, active, tangents, args, kwargs)
    if is_nondifferentiable(fn) or all(t is None for t in tangents):
        return fn(*args, **kwargs), None
    if fn is starred_call or fn is starred_method:  # `f(*xs, **kw)`: the call spelled out
        return _jvp_by_source(spread(fn, args), active, tangents, args, kwargs, reached)
    if fn is call_jvp or fn is call_method_jvp:  # a tangent program differentiated again
        return jvp_of_tangent_call(fn, active, tangents, args, kwargs)
    if fn is attempt:  # a `try` statement's body
        return attempts.jvp(jvp_call, active, tangents, args, kwargs)
    if isinstance(fn, held.HeldCall):  # a differentiated function value called
        return held.jvp(jvp_call, fn, active, tangents, args, kwargs)
    if fn is functools.partial:
        return held.partial_jvp(active, tangents, args, kwargs)
    if isinstance(fn, functools.partial):
        return jvp_call(fn.func, shifted(active, len(fn.args)), tangents,
                        (*fn.args, *args), {**fn.keywords, **kwargs}, reached)
    if isinstance(fn, DerivativeFunction):
        return ABOVE.jvp_of_derivative(fn, active, tangents, args, kwargs)
    if fn is ABOVE.jvp:
        return ABOVE.jvp_of_jvp(active, tangents, args, kwargs)
    if fn is ABOVE.vjp:
        return ABOVE.jvp_of_vjp(active, tangents, args, kwargs)
    if isinstance(fn, CustomGradient):
        return fn.jvp(active, tangents, args, kwargs)
    if isinstance(fn, Checkpoint):  # nothing to keep in forward mode: the function's tangent
        return jvp_call(fn.function, active, tangents, args, kwargs, reached)
    if constructs_node(fn):
        instance = fn(*args, **kwargs)
        places = constructor_places(fn, instance, args, kwargs)
        children = [zero_tangent(child) for child in node(instance)[0]]
        for spec, tangent in zip(active, tangents):
            if spec in places and tangent is not None:
                children[places[spec]] = tangent
        return instance, tuple(children)
    function = unwrapped(fn)
    if isinstance(function, types.MethodType):  # a bound method: its receiver comes first
        return jvp_call(function.__func__, shifted(active, 1), tangents,
                        (function.__self__, *args), kwargs, reached)
    if isinstance(function, types.FunctionType):
        return _jvp_by_source(function, active, tangents, args, kwargs, reached)
    raise MissingJVPRuleError(
        f"srcad has no forward-mode (JVP) rule for {fn!r}, and a differentiated value flows "
        "into it.", fix="register one with `srcad.defjvp(fn, lambda g, ans, x: ...)`.")


def call_method_jvp(receiver, name: str, active: tuple, tangents: tuple, *args, **kwargs):
    """`receiver.name(*args, **kwargs)` and its tangent; position 0 of `active` is the
    receiver."""
    fn, shifted, args, dropped = method_callee(receiver, name, active, args)
    if dropped:
        tangents = tangents[1:]
    return call_jvp(fn, shifted, tangents, *args, **kwargs)


def _jvp_by_rules(fn, rules, active, tangents, args, kwargs):
    result = fn(*args, **kwargs)
    total = None
    for spec, tangent in zip(active, tangents):
        position = rule_slot(rules.rules, spec)
        if tangent is not None and position is None:
            _refuse_unruled_at_run_time(fn, spec, args, kwargs, "defjvp")
        if tangent is None or position is None or rules.rules[position] is None:
            continue
        part = rules.rules[position](tangent, result, *args, **kwargs)
        if part is not None:  # (None: a zero contribution)
            total = part if total is None else total + part
    return result, total


def _jvp_by_source(function, active, tangents, args, kwargs, reached):
    # the tangent program is made for the arguments with tangents: a None one (an argument
    # not yet differentiated, as in a loop's first trip) is zero, not an input to seed
    live = [(spec, tangent) for spec, tangent in zip(active, tangents) if tangent is not None]
    active, tangents = tuple(s for s, _ in live), tuple(t for _, t in live)
    places = [parameter_of(function, spec) for spec in active]
    names = tuple(dict.fromkeys(name for name, _ in places))
    compiled = _transformed_or_refusal(function, names, containers_of(places, active, args,
                                                                       kwargs), "fwd",
                                       reached, (args, kwargs))
    if isinstance(compiled, SrcadError):  # (a constant, or the refusal raised)
        return run_as_constant(function, args, kwargs, compiled), None
    by_name = {}
    for (name, part), tangent, spec in zip(places, tangents, active):
        if part is None:
            by_name[name] = tangent
        else:  # an element of `*args` or `**kwargs`: the others have no tangent
            packed = by_name.setdefault(name, unfilled(function, name, args, kwargs))
            packed[part] = tangent
    seeds = tuple(tuple(v) if isinstance(v, list) else v for v in map(by_name.get, names))
    if compiled.argument_writes and not reached:  # (the user's function writes into its
        args = [copied(a) for a in args]          # arguments: as grad, leave the caller's)
        kwargs = {k: copied(v) for k, v in kwargs.items()}
    with NESTED:
        return compiled.bound(function)(seeds, *args, **kwargs)


def unfilled(function, name, args, kwargs):
    """Tangents for what lands in `*args` (a list) or `**kwargs` (a dict), all None."""
    code = function.__code__
    if code.co_flags & inspect.CO_VARARGS and name == code.co_varnames[
            code.co_argcount + code.co_kwonlyargcount]:
        return [None] * (len(args) - code.co_argcount)
    named = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    return {key: None for key in kwargs if key not in named}


# ---- calls in tangent programs differentiated again ------------------------------------------
_SERIAL = itertools.count(1)
_WRAPPERS: dict = {}


def vjp_of_tangent_call(caller, active: tuple, args: tuple, kwargs: dict):
    """`(caller(*args, **kwargs), pullback)` for `caller` `call_jvp` or
    `call_method_jvp`, `active` giving the differentiated arguments of that call."""
    try:
        call = _TangentCall(caller, args, kwargs)
    except SrcadError as refusal:  # (a constant if it is one: as_written.py)
        return run_as_constant(caller, args, kwargs, refusal), _no_cotangents(active)
    inner = call.inner_active(active)
    result, pullback = call_vjp(call.program, inner, call.seeds, *call.args, **kwargs)

    def outer(g):
        return call.outer_cotangents(active, inner, pullback(g))
    return result, outer


def jvp_of_tangent_call(caller, active: tuple, tangents: tuple, args: tuple, kwargs: dict):
    """`(caller(*args, **kwargs), its tangent)` for `caller` `call_jvp` or
    `call_method_jvp`: forward mode over the callee's tangent program."""
    try:
        call = _TangentCall(caller, args, kwargs)
    except SrcadError as refusal:  # (a constant if it is one: as_written.py)
        return run_as_constant(caller, args, kwargs, refusal), None
    by_outer = dict(zip(active, tangents))
    kept = [(call.inner_position(spec), call.inner_tangent(spec, by_outer, kwargs))
            for spec in active if call.inner_position(spec) is not None]
    return jvp_call(call.program, tuple(s for s, _ in kept), tuple(t for _, t in kept),
                          (call.seeds, *call.args), kwargs)


class _TangentCall:
    """One `call_jvp(f, spec, tangents, *args)` (or `call_method_jvp(receiver, name, spec,
    tangents, *args)`) seen as `P(seeds, *fargs)`: where each of its arguments lands among
    P's, and the way back."""

    def __init__(self, caller, args, kwargs):
        if caller is call_method_jvp:
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
        if isinstance(function, types.MethodType) and isinstance(
                function.__func__, types.FunctionType) and jvp_rules(fn) is None:
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
                packed = by_name.setdefault(name, unfilled(self.function, name, args,
                                                                 kwargs))
                packed[part] = tangent
        return tuple(tuple(v) if isinstance(v, list) else v for v in map(by_name.get, self.names))

    def back(self, seed_cotangents):
        by_name = dict(zip(self.names, seed_cotangents))
        return tuple(part_of(by_name[name], part) for name, part in self.places)


def tangent_program(fn, spec: tuple, args: tuple, kwargs: dict):
    """`(P, seed_order)`: f's tangent program for the arguments `spec`, a Python function
    with source, and the map between its seeds and tangents in `spec` order."""
    if constructs_record(fn):  # a plain class built of differentiated values
        fn = record_constructor(fn)
    if isinstance(fn, held.HeldCall) and record_call(args[0]) is not None:
        fn = record_call(args[0])  # (a record called: its class's `__call__` of it)
    if is_derivative(fn):
        return ABOVE.derivative_tangent_program(fn, spec, args, kwargs)
    if fn is call_jvp or fn is call_method_jvp:  # a tangent program's call
        fn = _direct_call(fn, args, kwargs)
    if isinstance(fn, CustomGradient):  # before unwrapping, which would find its body
        return ABOVE.custom_tangent_program(fn, spec, args, kwargs)
    if isinstance(fn, Checkpoint):  # reverse mode over it recomputes too
        program, order = tangent_program(fn.function, spec, args, kwargs)
        return Checkpoint(program), order
    if fn is ABOVE.vjp:  # (written out as Python source: api/derivative_calls.py)
        return ABOVE.vjp_tangent_program(spec, args, kwargs)
    if fn is ABOVE.jvp:
        return ABOVE.jvp_tangent_program(spec, args, kwargs)
    if isinstance(fn, held.HeldCall):
        return ABOVE.held_tangent_program(fn, spec, args, kwargs)
    if fn is functools.partial:
        raise UnsupportedDerivativeError(
            "srcad differentiates a call of `functools.partial` of differentiated values and "
            "of the function it returns once more (reverse or forward mode), not twice (a "
            "Hessian, a third derivative).",
            fix="for higher derivatives pass the values to the function itself.")
    if constructs_node(fn):
        return _constructor_tangent_program(fn, spec, args, kwargs)
    if fn is attempt:  # (its tangent program is written out: runtime/attempts.py)
        order = SeedOrder(attempt, [parameter_of(attempt, s) for s in spec])
        return attempts.tangent_program(defined_by, call_jvp), order
    function = unwrapped(spread(fn, args))
    if isinstance(function, types.FunctionType) and jvp_rules(fn) is None \
            and jvp_rules(function) is None and not is_nondifferentiable(fn):
        fn = function  # its own tangent program, as `jvp_call` would run it
    else:
        fn = fixed_arity(fn, len(args), tuple(kwargs))
    places = [parameter_of(fn, s) for s in spec]
    order = SeedOrder(fn, places)
    containers = containers_of(places, spec, args, kwargs)
    return transformed(fn, order.names, containers, "fwd").bound(fn), order


def _constructor_tangent_program(cls, spec: tuple, args: tuple, kwargs: dict):
    """`(P, seed order)` for a dataclass built of differentiated values: `P(seeds, a0, ..,
    *, k, ..)` returns the instance and its tangent, the display of its children's tangents
    (the seeds of the arguments they hold, zeros for the others, as tangent programs hold
    them), which srcad differentiates once more."""
    instance = cls(*args, **kwargs)
    places = constructor_places(cls, instance, args, kwargs)
    key = (cls, len(args), tuple(kwargs), tuple(spec), tuple(places.items()))
    program = _WRAPPERS.get(key)
    if program is None:
        seeds = {s: k for k, s in enumerate(spec)}
        children = [f"srcad_zero(srcad_instance.{name})" for name in child_fields(instance)]
        for s, child in places.items():
            if s in seeds:
                children[child] = f"srcad_seeds[{seeds[s]}]"
        positional = [f"a{i}" for i in range(len(args))]
        parameters = ", ".join(["srcad_seeds", *positional]
                               + (["*", *kwargs] if kwargs else []))
        arguments = ", ".join(positional + [f"{k}={k}" for k in kwargs])
        source = (f"def constructor_tangent({parameters}):\n"
                  f"    srcad_instance = srcad_callee({arguments})\n"
                  f"    return srcad_instance, ({''.join(c + ', ' for c in children)})\n")
        program = _WRAPPERS[key] = compiled_source(
            source, "constructor_tangent", {"srcad_callee": cls, "srcad_zero": zero_tangent},
            f"<srcad-tangent program of {cls.__name__}(...)>")
    return program, SeedOrder(None, [(f"seed{k}", None) for k in range(len(spec))])


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


def fixed_arity(callee, count: int, keywords: tuple) -> types.FunctionType:
    """`def call(a0, .., *, k, ..): return callee(a0, .., k=k, ..)`, with source in
    linecache, so that srcad transforms a call of `callee` (a NumPy function, a builtin)
    with the rules it has, or of a function gathering `*args` with one parameter per
    argument (api/adapters.py); a `functools.partial` calls its function with the values it
    binds (constants here: a partial of differentiated values is called through
    runtime/held.py)."""
    try:
        key = (callee, count, keywords)
        made = _WRAPPERS.get(key)
    except TypeError:  # an unhashable callee: no reuse
        key, made = None, None
    if made is not None:
        return made
    positional = [f"a{i}" for i in range(count)]
    parameters = ", ".join(positional + (["*"] + list(keywords) if keywords else []))
    namespace, bound, named = {"srcad_callee": callee}, [], []
    if isinstance(callee, functools.partial):  # call its function, with what it binds fixed
        namespace = {"srcad_callee": callee.func,
                     **{f"srcad_bound_{i}": v for i, v in enumerate(callee.args)},
                     **{f"srcad_bound_{k}": v for k, v in callee.keywords.items()}}
        bound = [f"srcad_bound_{i}" for i in range(len(callee.args))]
        named = [f"{k}=srcad_bound_{k}" for k in callee.keywords if k not in keywords]
    arguments = ", ".join(bound + positional + named + [f"{k}={k}" for k in keywords])
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
