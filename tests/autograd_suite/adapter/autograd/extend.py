"""autograd's primitive and rule registration, as srcad rules: autograd's VJP maker
`maker(ans, *args) -> (g -> cotangent)` is srcad's rule `rule(g, ans, *args)`."""
import inspect
import types

import srcad
from srcad.errors import MissingJVPRuleError, MissingRuleError
from autograd.vspaces import VSpace, vspace  # noqa: F401


def primitive(fun):
    """A function srcad does not follow into: a copy of `fun` (its own object, the same
    parameters), whose derivatives are the rules registered for it, and until then raise
    NotImplementedError as autograd's do."""
    if isinstance(fun, types.FunctionType):
        wrapped = types.FunctionType(fun.__code__, fun.__globals__, fun.__name__,
                                     fun.__defaults__, fun.__closure__)
        wrapped.__kwdefaults__ = fun.__kwdefaults__
    else:
        def wrapped(*args, **kwargs):
            return fun(*args, **kwargs)
        wrapped.__name__ = getattr(fun, "__name__", "primitive")
    wrapped.defgrad = lambda maker, argnum=0: defvjp(wrapped, maker, argnums=[argnum])
    undefined = [_undefined("VJP", wrapped, k) for k in range(_arity(wrapped))]
    srcad.defvjp(wrapped, *undefined)
    srcad.defjvp(wrapped, *(_undefined("JVP", wrapped, k) for k in range(_arity(wrapped))))
    return wrapped


def _undefined(kind, fun, argnum):
    """A rule autograd's user has not defined (srcad's error: a NotImplementedError, and
    `jacobian(mode="auto")` turns to reverse mode on it)."""
    error = MissingJVPRuleError if kind == "JVP" else MissingRuleError

    def rule(g, ans, *args, **kwargs):
        raise error(f"{kind} of {fun.__name__} wrt argnum {argnum} not defined")
    return rule


notrace_primitive = primitive


_VJPS: dict = {}  # function → {argnum: srcad rule}
_JVPS: dict = {}


def _registered(fun, table, register, kind):
    count = max(_arity(fun), max(table) + 1)
    register(fun, *(table.get(k, _undefined(kind, fun, k)) for k in range(count)))


def defvjp(fun, *makers, argnums=None):
    table = _VJPS.setdefault(fun, {})
    for argnum, maker in zip(argnums or range(len(makers)), makers):
        table[argnum] = None if maker is None else (
            lambda g, ans, *args, _maker=maker, **kwargs: _maker(ans, *args, **kwargs)(g))
    _registered(fun, table, srcad.defvjp, "VJP")


def _arity(fun) -> int:
    """How many positional parameters `fun` has (a few, for `*args`)."""
    try:
        parameters = inspect.signature(fun).parameters.values()
    except (TypeError, ValueError):
        return 4
    if any(p.kind is p.VAR_POSITIONAL for p in parameters):
        return 4
    return sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in parameters)


def defvjp_argnum(fun, maker):
    """`maker(argnum, ans, args, kwargs) -> (g -> cotangent)`, for any argument."""
    def rule_for(argnum):
        return lambda g, ans, *args, **kwargs: maker(argnum, ans, args, kwargs)(g)
    defvjp(fun, *(rule_for(k) for k in range(_arity(fun))))


def defjvp(fun, *rules, argnums=None):
    table = _JVPS.setdefault(fun, {})
    for argnum, rule in zip(argnums or range(len(rules)), rules):
        table[argnum] = rule
    _registered(fun, table, srcad.defjvp, "JVP")


def defjvp_argnum(fun, rule):
    """`rule(argnum, g, ans, args, kwargs)`, for any argument."""
    defjvp(fun, *((lambda g, ans, *args, _k=k, **kwargs: rule(_k, g, ans, args, kwargs))
                  for k in range(_arity(fun))))


def def_linear(fun):
    """A function linear in each argument: its rules are the function itself."""
    def position_rule(k):
        def rule(g, ans, *args, **kwargs):
            replaced = list(args)
            replaced[k] = g
            return fun(*replaced, **kwargs)
        return rule
    defjvp(fun, *(position_rule(k) for k in range(_arity(fun))))
