"""reverse: simple form → adjoint program (a VJP maker), as a gast module.

For `def f(x, w)` returning `out`, the generated module reads

    def srcad_scope(<names bound for the generated code>, <f's free variables>):
        def f_vjp(x, w):
            <f's statements: the forward sweep>
            def f_backward(b_out):
                <one adjoint statement per active statement, in reverse order>
                return b_x                  # a tuple when several arguments are in wrt
            return out, f_backward
        return f_vjp

The backward sweep reads forward values through the closure; the simple form assigns each
name once, so they are intact. The first contribution to an adjoint assigns it
(`b_x = ...`), later ones add (`b_x = b_x + ...`); an adjoint never contributed to is a
symbolic zero and costs nothing, until a `wrt` argument needs it as `zeros_like(x)`.
"""
from __future__ import annotations

import gast
import numpy as np

from srcad import runtime
from srcad.analysis.activity import Activity
from srcad.errors import MissingRuleError, RuleSignatureError
from srcad.frontend.parse import ParsedFunction
from srcad.frontend.resolve import Operation
from srcad.rules import vjp_rules
from srcad.transform.bindings import Bindings
from srcad.transform.naming import Namer, adjoint_name
from srcad.transform.templates import instantiate, template_of

SCOPE = "srcad_scope"


def _load(name):
    return gast.Name(name, gast.Load(), None, None)


def _store(name):
    return gast.Name(name, gast.Store(), None, None)


def reverse(simple_fn: gast.FunctionDef, operations: list[Operation], activity: Activity,
            wrt: tuple[str, ...], output: str, parsed: ParsedFunction, namer: Namer,
            bindings: Bindings, user_freevars: tuple[str, ...]) -> tuple[gast.Module, str]:
    """The adjoint module and the name of the VJP maker inside it."""
    builder = _BackwardBuilder(operations, activity, parsed, namer, bindings)
    backward_name = namer.claim(f"{parsed.name}_backward")
    vjp_name = namer.claim(f"{parsed.name}_vjp")
    seed = adjoint_name(namer, output)
    builder.adjoints[output] = seed
    backward_body = builder.build()
    gradients = [_load(builder.adjoints[w]) if w in builder.adjoints else
                 gast.Call(_load(bindings.name_for("zeros_like", runtime.zeros_like)),
                           [_load(w)], []) for w in wrt]
    result = gradients[0] if len(gradients) == 1 else gast.Tuple(gradients, gast.Load())
    backward = _function(backward_name, [seed], backward_body + [gast.Return(result)])
    returned = next(s for s in simple_fn.body if isinstance(s, gast.Return)).value
    forward = [s for s in simple_fn.body if not isinstance(s, gast.Return)]
    vjp_body = forward + [backward, gast.Return(
        gast.Tuple([returned, _load(backward_name)], gast.Load()))]
    vjp = gast.FunctionDef(vjp_name, simple_fn.args, vjp_body, [], None, None, [])
    scope_params = sorted(bindings.cells) + list(user_freevars)
    scope = _function(SCOPE, scope_params, [vjp, gast.Return(_load(vjp_name))])
    return gast.Module([scope], []), vjp_name


def _function(name, params, body):
    args = gast.arguments([_param(p) for p in params], [], None, [], [], None, [])
    return gast.FunctionDef(name, args, body, [], None, None, [])


def _param(name):
    return gast.Name(name, gast.Param(), None, None)


class _BackwardBuilder:
    def __init__(self, operations, activity, parsed, namer, bindings):
        self.operations = operations
        self.activity = activity
        self.active = activity.active
        self.parsed = parsed
        self.namer = namer
        self.bindings = bindings
        self.adjoints: dict[str, str] = {}
        self.sequences = {t for op in operations if op.kind == "pack" for t in op.targets} | {
            op.args[0].id for op in operations if op.kind == "unpack"}
        self.statements: list = []

    def build(self) -> list:
        for op in reversed(self.operations):
            if self.active.intersection(op.targets) and op.targets[0] in self.adjoints \
                    or op.kind == "unpack" and any(t in self.adjoints for t in op.targets):
                getattr(self, f"_{op.kind}")(op)
        return self.statements

    # ---- one method per kind of operation ----------------------------------------------
    def _copy(self, op):
        self._accumulate(op.args[0], _load(self.adjoints[op.targets[0]]))

    def _pack(self, op):
        adjoint = _load(self.adjoints[op.targets[0]])
        for key, element in zip(op.keys, op.args):
            if self.activity.element_useful(op.targets[0], key):
                self._accumulate(element, gast.Subscript(adjoint, key, gast.Load()))

    def _unpack(self, op):
        parts = [_load(self.adjoints[t]) if t in self.adjoints else gast.Constant(None, None)
                 for t in op.targets]
        self._accumulate(op.args[0], gast.Tuple(parts, gast.Load()))

    def _call(self, op):
        entry = vjp_rules(op.callee)
        if entry is None:
            raise MissingRuleError(
                f"srcad has no derivative rule for `{op.label}` ({_qualified_name(op.callee)}), "
                f"and a differentiated value flows into it in {self.parsed.name}.",
                self.parsed.location(op.statement),
                f"register one with `srcad.defvjp({op.label}, lambda g, ans, x: ...)`: one "
                "rule per positional argument, `None` for an argument without a gradient.")
        g, ans = _load(self.adjoints[op.targets[0]]), _load(op.targets[0])
        same_shape = _same_shape_arguments(op)
        for position, rule in enumerate(entry.rules):
            if rule is None:
                continue
            template = template_of(rule)
            try:
                bound = template.bind(op.args, op.keywords)
            except TypeError as error:
                raise RuleSignatureError(
                    f"srcad's derivative rule for `{op.label}` does not accept these "
                    f"arguments: {error}.", self.parsed.location(op.statement),
                    "pass the arguments the rule's signature names, or register a rule "
                    "that accepts them with `srcad.defvjp`.") from None
            if position >= len(template.signature.parameters):
                continue
            argument = bound.arguments.get(template.parameter(position))
            if not self._carries(argument):
                continue
            cotangent = instantiate(template, bound, g, ans, self.bindings.name_for, same_shape)
            self._accumulate(argument, cotangent)

    # ---- accumulation ---------------------------------------------------------------------
    def _carries(self, argument) -> bool:
        return argument is not None and any(
            isinstance(n, gast.Name) and n.id in self.active for n in gast.walk(argument))

    def _accumulate(self, argument, contribution):
        """Add `contribution` to the adjoint of `argument` (a name or a tuple of atoms)."""
        if isinstance(argument, (gast.Tuple, gast.List)):
            holder = self.namer.temporary("b_elements")
            self._emit(holder, contribution)
            for i, element in enumerate(argument.elts):
                self._accumulate(element, gast.Subscript(_load(holder), gast.Constant(i, None),
                                                         gast.Load()))
            return
        if not isinstance(argument, gast.Name) or argument.id not in self.active:
            return
        name = argument.id
        if name not in self.adjoints:
            self.adjoints[name] = adjoint_name(self.namer, name)
            self._emit(self.adjoints[name], contribution)
        elif name in self.sequences:
            add = self.bindings.name_for("accumulate", runtime.accumulate)
            self._emit(self.adjoints[name], gast.Call(
                _load(add), [_load(self.adjoints[name]), contribution], []))
        else:
            self._emit(self.adjoints[name],
                       gast.BinOp(_load(self.adjoints[name]), gast.Add(), contribution))

    def _emit(self, target, value):
        self.statements.append(gast.Assign([_store(target)], value, None))


def _qualified_name(obj) -> str:
    module = getattr(obj, "__module__", None) or type(obj).__module__
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None) or repr(obj)
    return f"{module}.{name}"


def _same_shape_arguments(op: Operation) -> frozenset:
    """Arguments of an elementwise call whose other arguments are all scalar constants."""
    if not (isinstance(op.callee, np.ufunc) or op.label in _ELEMENTWISE_SYMBOLS):
        return frozenset()
    names = [a for a in op.args if isinstance(a, gast.Name)]
    scalars = [a for a in op.args if isinstance(a, gast.Constant)
               and isinstance(a.value, (int, float))]
    if len(names) == 1 and len(names) + len(scalars) == len(op.args) and not op.keywords:
        return frozenset({names[0].id})
    return frozenset()


_ELEMENTWISE_SYMBOLS = {"+", "-", "*", "/", "**", "%", "unary -", "unary +"}
