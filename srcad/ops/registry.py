"""registry: the one table of derivative rules, keyed by the raw callable.

Source mode (which resolves `np.sin` when it transforms a function) and tape mode (which
sees the same function object in `__array_function__`) find the same rule here. A VJP rule
is a plain function `rule(g, ans, *args, **kwargs) -> cotangent of one argument`: `g` is the
cotangent of the output, `ans` the output, then the call's own arguments. `defvjp` takes
one rule per positional parameter, `None` for a parameter without a gradient.

A JVP rule has the same signature, `rule(g, ans, *args, **kwargs)`, with `g` the tangent of
one argument; it returns that argument's contribution to the output's tangent, with the
output's shape (`broadcast_like(g, ans)` where the argument may be broadcast). Forward mode
sums the contributions of the arguments whose tangents are nonzero.

SciPy is optional, so its rules (`srcad.ops.scipy_*`) load lazily: the first lookup of a
callable that comes from SciPy imports them, then answers. Lookups of other callables stay
one dictionary lookup (plus, on a miss and until SciPy's rules are loaded, a cheap check).
"""
from __future__ import annotations

import importlib
import inspect
import sys
import threading
from dataclasses import dataclass
from typing import Callable

import numpy as np

from srcad.errors import SrcadError
from srcad.tracebacks import api_boundary


@dataclass(frozen=True)
class VJPRules:
    primal: Callable
    rules: tuple  # rules[i] gives the cotangent of positional parameter i, or None


@dataclass(frozen=True)
class JVPRules:
    primal: Callable
    rules: tuple  # rules[i] gives the output tangent due to positional parameter i, or None


@dataclass
class Op:
    """Everything srcad knows of one callable: its derivatives and the facts the compiler
    and the tape rely on. A fact left None is not known (the callable is not one)."""

    primal: Callable
    owner: str                      # who said it: "srcad", "scipy" (srcad's SciPy rules) or
    #                                 "user" (a rule the user registered replaces srcad's)
    vjp: VJPRules | None = None
    jvp: JVPRules | None = None
    nondifferentiable: bool = False  # its outputs carry no derivative (np.floor, np.argmax)
    view: bool | str | Callable = False  # it may return an argument's memory (np.reshape);
    #                                  "read-only": only as a view NumPy will not write into;
    #                                  or a function of the call saying whether (see `view_of`)
    new_array: bool = False          # it returns an ndarray of memory of its own (np.zeros)
    elementwise: bool = False        # element i of the output depends on element i of each
    #                                  (broadcast) argument alone (np.sin, operator.add)
    math_twin: str | None = None     # the `math` function that computes it on one float
    promotes: bool = False           # elementwise, its result has its operands' promoted
    #                                  dtype when one of them is inexact (transform/outline.py)
    reduction: object = None         # it reduces axes (np.sum): the ufunc whose `reduce` it
    #                                  is (np.add), or its name when it is none's (np.mean)
    pure: bool = False               # calling it has no effect but its value (out= aside)
    sequence: str | None = None      # it returns a tuple, list or dict of arrays: "shares"
    #                                  when they are its arguments' items or views of them
    #                                  (np.split, list), "new" when they are new (np.linalg.eigh)
    takes_sequences: bool = False    # its first argument may be a sequence of arrays (np.stack)
    methods: tuple = ()              # the ndarray methods that call it (np.sum: "sum")
    batched: Callable | None = None  # its rule on batched tangents (kernels/batched.py), for
    #                                  a callable that is not elementwise
    control: bool = False            # srcad's own stand-in for a statement of control (`with`,
    #                                  `try`, `raise`, `assert`): made for its effect, which is
    #                                  the statement's, so code run again runs it again as such


_OPS: dict = {}
_owner = "srcad"  # who registers now: srcad while it is imported, then the user
RULES_EDITION = [0]  # counts the user's registrations: a program compiled under an earlier
#                      edition may have inlined a rule since replaced (emit.py's guards)


def op_of(fn) -> Op | None:
    """The record of `fn`, or None when srcad knows nothing of it."""
    try:
        op = _OPS.get(fn)
    except TypeError:  # an unhashable callable has no record
        return None
    if op is None and (_SCIPY.pending and _SCIPY.load_for(fn)
                       or _COMPAT.pending and _COMPAT.load_for(fn)):
        return _OPS.get(fn)
    return op


def _record(fn) -> Op:
    op = _OPS.get(fn)
    if op is None:
        op = _OPS[fn] = Op(fn, _registering())
    return op


def declare(fn: Callable, **facts) -> None:
    """Record facts of `fn` the compiler, the runtime and the tape rely on (`Op` lists
    them: `view`, `new_array`, `elementwise`, `math_twin`, `promotes`, `reduction`,
    `pure`, `sequence`, `takes_sequences`, `methods`, `batched`, `control`); srcad's modules
    declare them beside the rules (docs/architecture.md)."""
    op = _record(fn)
    for fact, value in facts.items():
        if fact not in _FACTS:
            raise TypeError(f"no such fact of a callable: {fact}")
        setattr(op, fact, value)
    for name in facts.get("methods", ()):
        _METHODS[name] = fn


_FACTS = ("view", "new_array", "elementwise", "math_twin", "promotes", "reduction", "pure",
          "sequence", "takes_sequences", "methods", "batched", "control")
_METHODS: dict = {}  # ndarray method name -> the callable whose record says it calls it


@api_boundary
def defvjp(fn: Callable, *rules: Callable | None) -> None:
    """Register the reverse-mode derivative rules of a callable.

    A rule registered for a Python function replaces the transformation of its source, at
    once, in derivatives compiled before too.

    Parameters
    ----------
    fn : callable
        The function, ufunc or method the rules are for.
    *rules : callable or None
        One per positional parameter: `rule(g, ans, *args, **kwargs)` returns the
        cotangent of that parameter from the output's cotangent `g` and the output `ans`;
        None for a parameter with no derivative.

    Examples
    --------
    >>> def softplus(x):
    ...     return np.log1p(np.exp(x))
    >>> srcad.defvjp(softplus, lambda g, ans, x: g / (1.0 + np.exp(-x)))
    >>> srcad.grad(softplus)(0.0)
    0.5
    """
    _check_rules("defvjp", fn, rules)
    _load_scipy_rules_for(fn)  # so that srcad's SciPy rules, loaded later, cannot override
    op = _record(fn)
    op.vjp, op.nondifferentiable = VJPRules(fn, tuple(rules)), False
    _note_user_rule(op)


def returns_new_array(rule: Callable) -> Callable:
    """Mark a VJP rule whose cotangent is always an array of its own, never `g`, an argument
    or a view of one: the backward sweep then owns it and may write into it in place
    (transform/adjoints.py). A rule that may return what it was given must not be marked."""
    rule.returns_new_array = True
    return rule


@api_boundary
def defjvp(fn: Callable, *rules: Callable | None) -> None:
    """Register the forward-mode derivative rules of a callable.

    A rule registered for a Python function replaces the transformation of its source in
    forward mode.

    Parameters
    ----------
    fn : callable
        The function, ufunc or method the rules are for.
    *rules : callable or None
        One per positional parameter: `rule(g, ans, *args, **kwargs)` returns that
        parameter's contribution to the output's tangent, from its tangent `g` and the
        output `ans`; None for a parameter with no derivative.

    Examples
    --------
    >>> def softplus(x):
    ...     return np.log1p(np.exp(x))
    >>> srcad.defjvp(softplus, lambda g, ans, x: g / (1.0 + np.exp(-x)))
    >>> srcad.jvp(softplus, (np.array([0.0]),), (np.array([2.0]),))
    (array([0.69314718]), array([1.]))
    """
    _check_rules("defjvp", fn, rules)
    _load_scipy_rules_for(fn)
    op = _record(fn)
    op.jvp, op.nondifferentiable = JVPRules(fn, tuple(rules)), False
    _note_user_rule(op)


def _check_rules(maker: str, fn, rules) -> None:
    if not (callable(fn) or hasattr(fn, "__get__")):
        raise TypeError(f"{maker} needs a callable or an attribute descriptor, got {fn!r}")
    if not rules or not all(r is None or callable(r) for r in rules):
        raise TypeError(f"{maker} needs one rule (a callable or None) per positional parameter")


def nondifferentiable(*fns: Callable) -> None:
    """Declare callables whose outputs carry no derivative (`np.floor`, `np.argmax`, ...)."""
    for fn in fns:
        _load_scipy_rules_for(fn)
        op = _record(fn)
        if op.vjp is not None or op.jvp is not None:
            raise SrcadError(f"{fn!r} already has derivative rules; it cannot also be "
                             "non-differentiable")
        op.nondifferentiable = True
        if _registering() == "user":
            RULES_EDITION[0] += 1


def rule_slot(rules: tuple, spec) -> int | None:
    """The index of the rule in `rules` (one per positional parameter) that answers for an
    argument given by position or keyword name: a position below their count, or a keyword
    naming one of those parameters in the rules' signature (after `g, ans`). None where no
    rule answers: the argument's derivative would be lost, which every mode refuses."""
    if isinstance(spec, int):
        return spec if spec < len(rules) else None
    first = next((rule for rule in rules if rule is not None), None)
    try:
        parameters = list(inspect.signature(first).parameters.values())[2:2 + len(rules)]
    except (TypeError, ValueError):  # (no rule, or one without a signature to read)
        return None
    return next((k for k, p in enumerate(parameters) if p.name == spec
                 and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)), None)


def vjp_rules(fn) -> VJPRules | None:
    op = op_of(fn)
    return None if op is None else op.vjp


def jvp_rules(fn) -> JVPRules | None:
    op = op_of(fn)
    return None if op is None else op.jvp


def _registering() -> str:
    """Who registers now: "scipy" in the thread loading srcad's SciPy rules, "srcad" in the
    thread giving array_api_compat's wrappers their records (another thread's registration
    meanwhile is still its own), else `_owner`."""
    thread = threading.get_ident()
    return next((lazy.owner for lazy in (_SCIPY, _COMPAT) if lazy.loader == thread), _owner)


def _note_user_rule(op: Op) -> None:
    if _registering() == "user":
        op.owner = "user"
        RULES_EDITION[0] += 1


def own_rules_registered() -> None:
    """srcad's own rules are in (SciPy's aside): rules registered from now on are the user's."""
    global _owner
    _owner = "user"


def has_user_rules(fn) -> bool:
    """Whether the user registered a VJP or JVP for `fn`."""
    op = op_of(fn)
    return op is not None and op.owner == "user" and (op.vjp is not None or op.jvp is not None)


def is_nondifferentiable(fn) -> bool:
    op = op_of(fn)
    return op is not None and op.nondifferentiable


def is_control(fn) -> bool:
    """Whether `fn` is srcad's own stand-in for a statement of control (`Op.control`): a
    call made for its effect that a pass may take for the statement."""
    op = op_of(fn)
    return op is not None and op.control


def is_view(fn) -> bool:
    """Whether `fn` may return memory of an argument (analysis/aliasing.py follows it)."""
    op = op_of(fn)
    return op is not None and bool(op.view)


UNKNOWN = object()  # an argument whose value is only known when the call runs


def view_of(fn, arguments: tuple, keywords: tuple) -> bool:
    """Whether this call of `fn` may return an argument's memory: `arguments` holds the
    positional arguments' values where the code spells them out as constants, else
    UNKNOWN; `keywords` the names of the keyword arguments passed."""
    op = op_of(fn)
    if op is None or not op.view:
        return False
    return op.view(arguments, keywords) if callable(op.view) else True


def read_only_view(fn) -> bool:
    """Whether `fn` returns an argument's memory only as a read-only view (`np.diag` of a
    matrix; of a vector, a new one): a write into its result writes memory of its own."""
    op = op_of(fn)
    return op is not None and op.view == "read-only"


def makes_new_array(fn) -> bool:
    """Whether `fn` returns an ndarray of its own (`np.array(x, copy=False)` aside, which
    analysis/aliasing.py tells by its keyword)."""
    op = op_of(fn)
    return op is not None and op.new_array


def is_elementwise(fn) -> bool:
    """Whether `fn` maps elements to elements: a one-output ufunc without a core signature,
    or a callable declared so."""
    if isinstance(fn, np.ufunc):
        return fn.nout == 1 and fn.signature is None
    op = op_of(fn)
    return op is not None and op.elementwise


def math_twin(fn) -> str | None:
    """The name of the `math` function computing `fn` on one Python float, if any."""
    op = op_of(fn)
    return None if op is None else op.math_twin


def promotes(fn) -> bool:
    """Whether `fn`'s result has its operands' promoted dtype when one of them is inexact,
    so that its outline needs no run (compiler/transform/outline.py)."""
    op = op_of(fn)
    return op is not None and op.promotes


def reduction_of(fn):
    """The ufunc whose `reduce` `fn` is (np.add for np.sum), the name of a reduction that is
    no ufunc's ("mean", "std", "var"), or None for a callable that reduces no axes."""
    op = op_of(fn)
    return None if op is None else op.reduction


def is_pure(fn) -> bool:
    """Whether calling `fn` has no effect but its value, given no `out=` argument."""
    op = op_of(fn)
    return isinstance(fn, np.ufunc) or (op is not None and op.pure)


def sequence_result(fn) -> str | None:
    """"shares" when `fn` returns a tuple, list or dict of its arguments' items or views of
    them, "new" when of arrays of their own, else None."""
    op = op_of(fn)
    return None if op is None else op.sequence


def takes_sequences(fn) -> bool:
    """Whether `fn`'s first argument may be a sequence of arrays (np.stack, np.array)."""
    op = op_of(fn)
    return op is not None and op.takes_sequences


def method_function(name: str):
    """The callable an ndarray's method `name` calls, with its rules (np.sum for `.sum`),
    or None when srcad knows no such method."""
    return _METHODS.get(name)


def batched_rule(fn):
    """`fn`'s rule on batched tangents (kernels/batched.py), or None."""
    op = op_of(fn)
    return None if op is None else op.batched


def records() -> list:
    """Every record, in the order srcad learned of them."""
    return list(_OPS.values())


# ---- records given on first use: SciPy's rules, array_api_compat's wrappers -----------------
_SCIPY_RULES = ("srcad.ops.scipy_special", "srcad.ops.scipy_stats",
                "srcad.ops.scipy_statistics", "srcad.ops.scipy_multivariate",
                "srcad.ops.scipy_linalg", "srcad.ops.scipy_integrate", "srcad.ops.scipy_spatial")
_UFUNC_ORIGINS: dict = {}  # ufunc -> whether it is SciPy's (tape mode asks for each call)


def _from_scipy(fn) -> bool:
    """Whether `fn` is SciPy's: its module, or its receiver's (`scipy.stats.norm.pdf`), is
    in `scipy`. SciPy's ufuncs (`scipy.special.gamma`) have no `__module__`: they are the
    ones `scipy.special` names. Nothing is SciPy's before SciPy is imported."""
    if "scipy" not in sys.modules:
        return False
    if type(fn) is np.ufunc:
        origin = _UFUNC_ORIGINS.get(fn)
        if origin is None:
            special = sys.modules.get("scipy.special")
            origin = _UFUNC_ORIGINS[fn] = (special is not None
                                           and vars(special).get(fn.__name__) is fn)
        return origin
    for owner in (fn, getattr(fn, "__self__", None)):
        module = getattr(owner, "__module__", None)
        if isinstance(module, str) and (module == "scipy" or module.startswith("scipy.")):
            return True
    return False


class _LazyRecords:
    """Records srcad gives a library's functions the first time it meets one of them, not at
    `import srcad` (which must not import the library): whether they are still to come, and
    the thread giving them, whose registrations are `owner`'s (another thread's meanwhile
    stay its own)."""

    def __init__(self, owner: str, belongs: Callable, learn: Callable):
        self.owner, self.belongs, self.learn = owner, belongs, learn
        self.pending, self.loader = True, None

    def load_for(self, fn) -> bool:
        """Give them if `fn` is the library's and they are not given yet. True once they are
        (by this call, or by another thread it waited for): look `fn` up again. (Their own
        registrations come back here while they load: the lock is reentrant.)"""
        if not (self.pending and self.belongs(fn)):
            return False
        with _LAZY_LOCK:
            if not self.pending or self.loader is not None:
                return not self.pending
            self.loader = threading.get_ident()
            try:
                self.learn()
                self.pending = False
            finally:
                self.loader = None
        return True


def _import_scipy_rules() -> None:
    for module in _SCIPY_RULES:
        importlib.import_module(module)


def _from_array_api_compat(fn) -> bool:
    module = getattr(fn, "__module__", None)
    return isinstance(module, str) and module.split(".")[0] == "array_api_compat"


def _learn_compat_wrappers() -> None:
    """array_api_compat's NumPy wrappers get NumPy's records (ops/array_namespaces.py)."""
    importlib.import_module("srcad.ops.array_namespaces").learn_compat_wrappers()


_LAZY_LOCK = threading.RLock()
_SCIPY = _LazyRecords("scipy", _from_scipy, _import_scipy_rules)
_COMPAT = _LazyRecords("srcad", _from_array_api_compat, _learn_compat_wrappers)
_load_scipy_rules_for = _SCIPY.load_for  # (before a user's rule: srcad's, loaded later, would
#                                          replace it)
