"""calls: differentiating a call whose callee is only known when it runs.

Generated code routes three kinds of call through here: calls to the user's own Python
functions (their adjoints are generated and cached like any other), calls of a value held
in a variable (`f = np.tanh if smooth else np.sign; f(x)`, `getattr(np, name)(x)`), and
methods of a local value (`x.sum(axis=0)`, `model.forward(x)`). Each returns the call's
result and a *pullback*: `pullback(g)` gives the cotangents of the arguments marked active
at the call site, in that order (None for zero). The same rule registry serves every mode.
"""
from __future__ import annotations

import functools
import inspect
import sys
import threading
import types
import weakref

import numpy as np

from srcad.runtime.arguments import copied, is_container
from srcad.runtime.control import CustomGradient, positional_only, wrong_count
from srcad.errors import MissingRuleError, SrcadError
from srcad.compiler.frontend.parse import unwrapped
from srcad.runtime.methods import method_callee, shifted
from srcad.ops import is_nondifferentiable, jvp_rules, nondifferentiable, vjp_rules

def call_vjp(fn, active: tuple, *args, **kwargs):
    """`(fn(*args, **kwargs), pullback)`; `active` lists argument positions and keyword names."""
    rules = vjp_rules(fn)
    if rules is not None:
        return _by_rules(fn, rules, active, args, kwargs)
    if fn is call_jvp or fn is call_method_jvp:  # in a tangent program differentiated again
        from srcad.runtime.higher_order import vjp_of_tangent_call
        return vjp_of_tangent_call(fn, active, args, kwargs)
    if is_derivative(fn):  # `srcad.grad(h)` called in the differentiated function
        from srcad.api.derivative_calls import vjp_of_derivative
        return vjp_of_derivative(fn, active, args, kwargs)
    if _is_jvp(fn):
        from srcad.api.derivative_calls import vjp_of_jvp
        return vjp_of_jvp(active, args, kwargs)
    if isinstance(fn, CustomGradient):
        return _by_custom_gradient(fn, active, args, kwargs)
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
    if tangent is not None and _holds_floats(value):
        raise type(error)(error.message, error.location, error.fix)


nondifferentiable(refuse_unruled)  # a check: a derivative program differentiated again runs it


def _holds_floats(value) -> bool:
    if isinstance(value, (tuple, list)):
        return any(_holds_floats(v) for v in value)
    kind = getattr(getattr(value, "dtype", None), "kind", None)
    return kind in ("f", "c") or isinstance(value, (float, complex))


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
    positions = [_rule_position(rules, spec) for spec in active]
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


def _rule_position(rules, spec):
    """The index of the rule for an argument given by position or keyword name."""
    if isinstance(spec, int):
        return spec if spec < len(rules.rules) else None
    first = next(r for r in rules.rules if r is not None)
    names = list(inspect.signature(first).parameters)[2:]
    return names.index(spec) if spec in names and names.index(spec) < len(rules.rules) else None


def _by_source(function, active, args, kwargs):
    places = [parameter_of(function, spec) for spec in active]
    names = tuple(dict.fromkeys(name for name, _ in places))  # each parameter once
    compiled = transformed(function, names, containers_of(places, active, args, kwargs), "rev",
                           call=(args, kwargs))
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
    """The parameters that receive containers: `*args`, `**kwargs`, dicts, lists, tuples."""
    packed = {name for name, part in places if part is not None}
    values = {name: args[spec] if isinstance(spec, int) else kwargs[spec]
              for (name, part), spec in zip(places, active) if part is None}
    return frozenset(packed | {n for n, v in values.items() if is_container(v)})


def transformed(function, names, containers, mode, reached=True, call=None):
    """The cached transformation of a function; when it was reached from a call in the
    user's code, errors say how srcad got there, and `call`, its `(args, kwargs)`, is
    refused where the function writes into one of them (but for srcad's own programs: a
    tangent program differentiated again writes where the user's function did, which a
    derivative of that function restores)."""
    from srcad.compiler import cache

    try:
        compiled = cache.compiled_adjoint(function, names, containers=containers, mode=mode)
        if compiled.argument_writes and reached and call is not None \
                and not function.__code__.co_filename.startswith("<srcad-"):
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


def refuse_argument_writes(argument_writes: dict, function, args, kwargs) -> None:
    """Raise the refusal `analysis.aliasing.check_in_place_updates` made for a parameter the
    called function writes into, when this call passes that parameter something mutable
    (writing into a Python number only rebinds the name)."""
    bound = inspect.signature(function).bind(*args, **kwargs).arguments
    for param, refusal in argument_writes.items():
        if param in bound and _mutable(bound[param]):
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
    return getattr(fn, "derivative", None) is not None and hasattr(fn, "__wrapped__") \
        and type(fn).__module__ == "srcad.api.derivative" or _is_tape_gradient(fn)


def _is_tape_gradient(fn) -> bool:
    if type(fn).__name__ != "TapeGradient":  # (the common case, on every call: no import)
        return False
    from srcad.tape.functional import TapeGradient  # (tape mode imports this module)
    return isinstance(fn, TapeGradient)


_TWINS = weakref.WeakKeyDictionary()


def source_derivative(fn):
    """`fn`, a derivative object, as source mode differentiates it: `srcad.tape.grad(h, wrt)`
    computes the function `srcad.grad(h, wrt)` does, so that one's derivatives are its own
    (its `__wrapped__`, h, would give h's derivatives instead)."""
    if not _is_tape_gradient(fn):
        return fn
    twin = _TWINS.get(fn)
    if twin is None:
        from srcad.api.derivative import grad
        twin = _TWINS[fn] = grad(fn.fn, wrt=fn.wrt)
    return twin


def _is_jvp(fn) -> bool:
    from srcad.api.forward import jvp
    return fn is jvp


# ---- forward mode -----------------------------------------------------------------------------
def call_jvp(fn, active: tuple, tangents: tuple, *args, **kwargs):
    """`(fn(*args, **kwargs), tangent of the result)`; `tangents` holds the tangents of the
    arguments `active` lists (positions and keyword names), None where zero."""
    return jvp_call(fn, active, tangents, args, kwargs)


def jvp_call(fn, active, tangents, args, kwargs, reached=True):
    """`call_jvp`; `reached` tells whether srcad got to `fn` from a call in the user's
    differentiated code (errors say so) or was handed it directly."""
    rules = jvp_rules(fn)
    if rules is not None:
        return _jvp_by_rules(fn, rules, active, tangents, args, kwargs)
    if is_nondifferentiable(fn) or all(t is None for t in tangents):
        return fn(*args, **kwargs), None
    if fn is call_jvp or fn is call_method_jvp:  # a tangent program differentiated again
        from srcad.runtime.higher_order import jvp_of_tangent_call
        return jvp_of_tangent_call(fn, active, tangents, args, kwargs)
    if isinstance(fn, functools.partial):
        return jvp_call(fn.func, shifted(active, len(fn.args)), tangents,
                        (*fn.args, *args), {**fn.keywords, **kwargs}, reached)
    if is_derivative(fn):
        from srcad.api.derivative_calls import jvp_of_derivative
        return jvp_of_derivative(fn, active, tangents, args, kwargs)
    if _is_jvp(fn):
        from srcad.api.derivative_calls import jvp_of_jvp
        return jvp_of_jvp(active, tangents, args, kwargs)
    if isinstance(fn, CustomGradient):
        return fn.jvp(active, tangents, args, kwargs)
    function = unwrapped(fn)
    if isinstance(function, types.MethodType):  # a bound method: its receiver comes first
        return jvp_call(function.__func__, shifted(active, 1), tangents,
                        (function.__self__, *args), kwargs, reached)
    if isinstance(function, types.FunctionType):
        return _jvp_by_source(function, active, tangents, args, kwargs, reached)
    raise MissingRuleError(
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
        position = _rule_position(rules, spec)
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
    compiled = transformed(function, names, containers_of(places, active, args, kwargs), "fwd",
                           reached, (args, kwargs))
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
