"""adapters: a plain Python function standing for a callable srcad cannot transform itself.

A derivative object (`srcad.grad(f)`), a custom gradient, a `functools.partial` or a bound
method has no body of its own to transform: `srcad.grad(srcad.grad(f))`,
`srcad.hessian(model.loss)` and `srcad.jacobian(partial(loss, data=d))` transform instead a
function with its parameters whose body calls it, so the transformation sees an ordinary
call (and indexes the parameters as the user does). A function that gathers its positional
arguments in `*args`, differentiated with respect to one of them (`wrt` counts the
arguments of a call, as JAX's `argnums` and autograd's `argnum` do), is differentiated
through a function with one parameter per argument of the call (`calls.fixed_arity`).
"""
from __future__ import annotations

import functools
import inspect
import types

from srcad.errors import UsageError
from srcad.ops import jvp_rules, vjp_rules
from srcad.ops.callables import unwrapped
from srcad.runtime.calls import defined_by, fixed_arity, is_derivative
from srcad.runtime.control import Checkpoint, CustomGradient
from srcad.runtime.hooks import DerivativeFunction
from srcad.tracebacks import api_boundary


def transformable(fn):
    """`fn`, or a plain function with its parameters that calls it when `fn` is a derivative
    object, a bound method, a `functools.partial` or a custom gradient (Jacobians and
    Hessians index its parameters as the user does; a custom gradient's body is not what is
    differentiated, nor a checkpoint's, whose call recomputes it)."""
    if has_no_body_of_its_own(fn) or isinstance(unwrapped(fn), types.MethodType):
        return adapter(fn)
    return fn


def has_no_body_of_its_own(fn) -> bool:
    """A callable srcad differentiates through a call of it, not by transforming the body
    `inspect.unwrap` would find: a derivative object, a custom gradient, a checkpoint, a
    partial."""
    return is_derivative(fn) or isinstance(fn, (Checkpoint, CustomGradient, functools.partial))


def adapter(fn) -> types.FunctionType:
    """A Python function with `fn`'s parameters that calls `fn` (a derivative object, a
    bound method), so that the transforms see an ordinary function calling it:
    `srcad.grad(srcad.grad(f))`, `srcad.hessian(model.loss)`. Made anew for each call,
    from one code object per parameter list, so the cache transforms it once per list (a
    table from `fn` to its adapter, which references `fn`, kept both alive forever). A
    `functools.partial` calls its function with the bound values read as data, so every
    partial of one function shares one program (a sweep over `partial(loss, data=d)`)."""
    parameters, passed, defaults = parameters_of(fn)
    callee, bound = (fn.func, fn.args) if type(fn) is functools.partial else (fn, ())
    namespace = {"srcad_callee": callee, **defaults}
    for position, value in enumerate(bound):
        namespace[f"srcad_bound_{position}"] = value
    passed = ", ".join([*(f"srcad_bound_{p}" for p in range(len(bound))), *(
        [passed] if passed else [])])
    name = getattr(callee, "__name__", "")
    name = f"derivative_of_{name}" if name.isidentifier() else "derivative"
    source = f"def {name}({parameters}):\n    return srcad_callee({passed})\n"
    return defined_by(source, name, namespace)


def per_call(fn, wrt) -> bool:
    """Whether srcad differentiates `fn` through a function with one parameter per
    argument of a call (`calls.fixed_arity`), made for each count of arguments: where
    `wrt` indexes what `*args` gathers, and for a callable with derivative rules
    (`srcad.grad(np.sqrt)`, a user's function with `defvjp`), whose rules then apply."""
    return gathers(fn, wrt) or vjp_rules(fn) is not None or jvp_rules(fn) is not None


def gathers(fn, wrt) -> bool:
    """Whether the Python function `fn` runs gathers positional arguments in `*args` and
    `wrt` selects one of them: a position (or the name, in the signature the user sees
    through `__wrapped__`, of a parameter) past the named positional parameters of what
    runs. A decorator's `wrapper(*args, **kwargs)` is what runs."""
    try:
        runs = list(inspect.signature(unwrapped(fn), follow_wrapped=False).parameters.values())
        positions = by_position(fn, wrt)
    except (TypeError, ValueError):  # (a callable without a signature: no `*args` seen)
        return False
    if not any(p.kind is p.VAR_POSITIONAL for p in runs):
        return False
    named = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in runs)
    return any(isinstance(item, int) and not isinstance(item, bool) and item >= named
               for item in (positions if isinstance(positions, tuple) else (positions,)))


def by_position(fn, wrt):
    """`wrt` with the names of positional parameters (in the signature the user sees, through
    `__wrapped__`) as their positions, for `fixed_arity`'s function, whose parameters are
    `a0, a1, ...`."""
    try:
        parameters = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):  # (a builtin without one: positions only)
        parameters = []
    named = [p.name for p in parameters if p.kind in (p.POSITIONAL_ONLY,
                                                      p.POSITIONAL_OR_KEYWORD)]
    items = tuple(named.index(w) if isinstance(w, str) and w in named else w
                  for w in (wrt if isinstance(wrt, tuple) else (wrt,)))
    return items if isinstance(wrt, tuple) else items[0]


class PerArity(DerivativeFunction):
    """`make(fixed_arity(fn, ...), wrt)` for each count of positional arguments and names of
    keyword arguments a call passes (the last `trailing` positional ones are not `fn`'s:
    hvp's vector), called with the call's arguments: a Jacobian, Hessian or hvp of a
    function that gathers `*args`, with `wrt` indexing one of them, or of a callable with
    rules (`per_call`)."""

    kind = "form"  # (a call where srcad differentiates runs the made one's form)

    def __init__(self, fn, wrt, make, trailing: int = 0):
        self.fn, self.wrt, self.make, self.trailing = fn, by_position(fn, wrt), make, trailing
        self._made = {}
        self.latest = None

    def _for(self, args, kwargs):
        key = (len(args) - self.trailing, tuple(kwargs))
        made = self._made.get(key)
        if made is None:
            made = self._made[key] = self.make(fixed_arity(self.fn, *key), self.wrt)
        self.latest = made
        return made

    @api_boundary
    def __call__(self, *args, **kwargs):
        return self._for(args, kwargs)(*args, **kwargs)

    def form(self, args: tuple, kwargs: dict):
        return self._for(args, kwargs).form(args, kwargs)

    @property
    def source(self) -> str:
        if self.latest is None:
            raise UsageError(f"the program of {self.fn!r} is made for the arguments of a call "
                             "(it gathers `*args`, or srcad applies its rules), and it has not "
                             "been called yet.",
                             fix="call it once first.")
        return self.latest.source


def parameters_of(fn) -> tuple[str, str, dict]:
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
            defaults[f"srcad_default_{name}"] = parameter.default
            text += f"=srcad_default_{name}"
        parameters.append(text)
        passed.append(f"{name}={name}" if kind is parameter.KEYWORD_ONLY else text.split("=")[0])
    return ", ".join(parameters), ", ".join(passed), defaults
