"""forward: resolved simple form → tangent program (a JVP), as a gast module.

For `def f(x, w)` returning `out`, the generated module reads

    def srcad_scope(<names bound for the generated code>, <f's free variables>):
        def f_jvp(tangents, x, w):
            (t_x, t_w) = tangents
            <each statement of f, followed by the statement computing its target's tangent>
            return (out, t_out)
        return f_jvp

Control flow needs no tape: each statement's tangent is computed right after it, in the
same branch and loop iteration. A tangent is None when it is zero; which tangents are
surely set, surely None or either is tracked statically as for adjoints
(srcad/compiler/transform/adjoints.py), so straight-line code reads `t_y = t_x * np.cos(x)` with no
tests. The generated program is ordinary Python that srcad can transform again: reverse
mode over it gives Hessian-vector products and gradients of gradients.

Tangents of arrays written in place (`y[i] = v`, `xs.append(v)`) are updated in place too
(`t_y[i] = t_v`), so each definition of such an array takes its own copy of the tangent (`owned`) and never
writes into a tangent the caller passed or another variable shares.
"""
from __future__ import annotations

import builtins
import functools
import operator

import gast

from srcad.compiler.analysis.activity import Activity, carries_derivative
from srcad.compiler.frontend.parse import ParsedFunction
from srcad.compiler.frontend.resolve import IN_PLACE_KINDS, Branch, Loop, Operation, operations
from srcad.errors import MissingJVPRuleError
from srcad.kernels import adjoints as helpers, batched, tangents
from srcad.ops import jvp_rules
from srcad.runtime import calls
from srcad.compiler.transform.adjoints import (NONE, SET, UNSET, Adjoints, assign, is_none, join,
                                               load, store)
from srcad.compiler.passes import enabled
from srcad.compiler.transform.bindings import Bindings
from srcad.compiler.transform.dead_code import drop_dead
from srcad.compiler.transform.naming import Namer
from srcad.compiler.transform.optimize import counted, loaded_names
from srcad.compiler.transform.refusals import check_operation, qualified_name
from srcad.compiler.transform.reverse import SCOPE, function_def
from srcad.compiler.transform.sequences import sequence_names
from srcad.compiler.transform.signs import added
from srcad.compiler.transform.rule_calls import (rule_applications, same_shape_arguments,
                                        unruled_arguments, unruled_check)
from srcad.compiler.transform.tangent_writes import TangentWrites, is_none_constant
from srcad.compiler.transform.templates import instantiate

MAYBE = "maybe"
_NONE = gast.Constant(None, None)


def forward(simple_fn: gast.FunctionDef, block: list, activity: Activity, wrt: tuple[str, ...],
            output: str, parsed: ParsedFunction, namer: Namer, bindings: Bindings,
            containers: frozenset = frozenset(), sweep_class=None,
            tangent_only: bool = False) -> tuple[gast.Module, str]:
    """The tangent module and the name of the JVP function inside it (`sweep_class`, a
    subclass of `Tangents`, builds another kind of tangent program: batched.py; with
    `tangent_only` it takes each `wrt` tangent as a parameter of its own, `f_jvp(t_x, t_w,
    x, w)`, returns the output's tangent alone, and computes only what that needs)."""
    tangents = Adjoints(namer, bindings, sequence_names(block, containers), prefix="t")
    jvp_name = namer.claim(f"{parsed.name}_jvp")
    mutated = {op.mutates for op in operations(block) if op.mutates}
    sweep = (sweep_class or Tangents)(activity, parsed, bindings, tangents, mutated)
    if tangent_only:  # each tangent a parameter of its own: specialise sees its kind
        seeds, preamble = [tangents.seed(w) for w in wrt], []
    else:
        seeds = [namer.claim("tangents")]
        preamble = [gast.Assign([gast.Tuple([store(tangents.seed(w)) for w in wrt],
                                            gast.Store())], load(seeds[0]), None)]
    preamble += sweep.take_ownership([w for w in wrt if w in mutated])
    for w in containers:
        tangents.states[w] = SET
    body = sweep.block(block)
    if tangent_only:
        result = _surely_a_tangent(sweep, output, simple_fn.body[-1].value)
        if enabled("dead-code"):
            body = drop_dead(body, loaded_names(result), bindings.callee)
    else:
        result = gast.Tuple([simple_fn.body[-1].value, sweep.tangent_of(output)], gast.Load())
    args = simple_fn.args
    (args.posonlyargs or args.args)[:0] = [gast.Name(seed, gast.Param(), None, None)
                                           for seed in seeds]
    jvp = gast.FunctionDef(jvp_name, args, preamble + body + [gast.Return(result)], [], None,
                           None, [])
    scope = function_def(SCOPE, [],  # (its parameters: emit.compile_adjoint)
                         [jvp, gast.Return(load(jvp_name))])
    return gast.Module([scope], []), jvp_name


def _surely_a_tangent(sweep, output: str, returned):
    """The output's tangent, zeros of its shape where it has none (None would not say
    whether the output is a number); the output is computed only for those."""
    if sweep.tangents.state(output) == SET:
        return load(sweep.tangents.name(output))
    zeros = gast.Call(sweep.helper("zero_tangent"), [returned], [])
    tangent = sweep.tangent_of(output)
    if is_none_constant(tangent):
        return zeros
    return gast.IfExp(is_none(tangent.id, negate=True), tangent, zeros)


class Tangents(TangentWrites):
    """Builds the tangent program statement by statement, in program order."""

    def __init__(self, activity: Activity, parsed, bindings: Bindings, tangents: Adjoints,
                 mutated: set):
        self.activity = activity
        self.active = activity.active
        self.parsed = parsed
        self.bindings = bindings
        self.tangents = tangents
        self.mutated = mutated  # names written in place: their tangents must be their own

    # Hooks of a rule's application, which batched tangent programs change (batched.py).
    def rule_tangent(self, g, target: str):
        """The tangent a rule receives for an argument of the call that defines `target`."""
        return g

    def contribution(self, expression, target: str):
        """A rule's contribution to `target`'s tangent, as the sum of them takes it."""
        return expression

    def bind(self, name: str, obj) -> str:
        """The name under which the generated code reads `obj`, a rule's free name."""
        return self.bindings.name_for(name, obj)

    # How a call whose callee is known when it runs gets its tangent (batched.py: batched).
    callee_caller = ("call_jvp", calls.call_jvp)

    def method_caller(self, op) -> str:
        return self.bindings.name_for("call_method_jvp", calls.call_method_jvp)

    def helper(self, name: str):
        return load(self.bindings.name_for(name, getattr(tangents, name)))

    def builtin(self, name: str):
        return load(self.bindings.name_for(name, getattr(builtins, name)))

    def tangent_of(self, name: str):
        """The tangent of a name as an expression (None when surely zero)."""
        if name not in self.active or self.tangents.state(name) in (UNSET, NONE):
            return gast.Constant(None, None)
        return load(self.tangents.name(name))

    def tangent_of_atom(self, node):
        """The tangent of an argument: a name, a constant or a tuple of atoms."""
        if isinstance(node, gast.Name):
            return self.tangent_of(node.id)
        if isinstance(node, (gast.Tuple, gast.List)):
            parts = [self.tangent_of_atom(e) for e in node.elts]
            if all(is_none_constant(p) for p in parts):
                return gast.Constant(None, None)
            return type(node)(parts, gast.Load())
        return gast.Constant(None, None)

    # ---- control flow --------------------------------------------------------------------------
    def block(self, nodes) -> list:
        statements = []
        for node in nodes:
            if isinstance(node, Branch):
                statements += self.branch(node)
            elif isinstance(node, Loop):
                statements += self.loop(node)
            else:
                statements += self.operation(node)
        return statements

    def branch(self, node: Branch) -> list:
        statements = self.tangents.make_variables(_assigned([node]) & self.active)
        before = self.tangents.snapshot()
        body = self.block(node.body) or [gast.Pass()]
        after_body = self.tangents.snapshot()
        self.tangents.states = before
        orelse = self.block(node.orelse)
        self.tangents.merge(after_body, self.tangents.snapshot())
        return statements + [gast.If(load(node.condition), body, orelse)]

    def loop(self, node: Loop) -> list:
        statements = self.tangents.make_variables(_assigned([node]) & self.active)
        header = self.tangents.snapshot()
        while True:  # until the states at the loop header are those at the end of the body
            self.tangents.states = dict(header)
            target, iterable, start = self._iterated(node)
            body = start + self.block(node.body) or [gast.Pass()]
            joined = join(header, self.tangents.snapshot())
            if joined == header:
                break
            header = joined
        self.tangents.states = header
        if node.element is None:
            return statements + [gast.While(node.statement.test, body, [])]
        return statements + [gast.For(target, iterable, body, [], None)]

    def _iterated(self, node: Loop):
        """The `for` target and iterable, with the element's tangent when it has one, and
        the statements that start each iteration."""
        if node.element is None:
            return None, None, []
        element, iterable = store(node.element), load(node.iterable)
        if node.element not in self.active:
            return element, iterable, []
        tangent = self.tangent_of(node.iterable)
        if is_none_constant(tangent):
            return element, iterable, self._clear(node.element)
        if self.tangents.state(node.iterable) != SET:
            tangent = gast.Call(self.helper("tangent_elements"), [tangent, gast.Call(
                self.builtin("len"), [load(node.iterable)], [])], [])
        self.tangents.states[node.element] = MAYBE
        target = gast.Tuple([element, store(self.tangents.name(node.element))], gast.Store())
        return target, gast.Call(self.builtin("zip"), [iterable, tangent], []), []

    def _clear(self, name: str) -> list:
        """The tangent of `name` becomes zero."""
        if self.tangents.state(name) in (UNSET, NONE):
            return []
        self.tangents.states[name] = NONE
        return [assign(self.tangents.name(name), gast.Constant(None, None))]

    # ---- operations ----------------------------------------------------------------------------
    def operation(self, op: Operation) -> list:
        check_operation(op, self.activity.varied, self.parsed, self.bindings.name_for)
        primal = [op.statement]
        if op.kind in IN_PLACE_KINDS:
            if op.mutates not in self.active:
                return primal
            return primal + getattr(self, f"_{op.kind}")(op)
        live = [t for t in op.targets if t in self.active]
        if not live:
            return primal
        if not carries_derivative(op) or not self._carries_any(op):
            return primal + [s for t in live for s in self._clear(t)]
        if op.kind == "call" and op.dynamic:
            return self._dynamic_call(op) + self.take_ownership(live)
        statements = primal + getattr(self, f"_{op.kind}")(op)
        if op.callee is operator.getitem and isinstance(op.args[0], gast.Name) \
                and op.args[0].id in self.tangents.sequences:
            self.tangents.states[op.targets[0]] = MAYBE  # an element may have no tangent
        return statements + self.take_ownership(live)

    def _carries_any(self, op: Operation) -> bool:
        nodes = [*op.args, *(value for _, value in op.keywords)]
        return any(not is_none_constant(self.tangent_of_atom(n)) for n in nodes)

    def _copy(self, op):
        source, target = op.args[0].id, op.targets[0]
        self.tangents.states[target] = self.tangents.state(source)
        return [assign(self.tangents.name(target), self.tangent_of(source))]

    def _pack(self, op):
        parts = [self.tangent_of_atom(element) if self.activity.element_useful(
            op.targets[0], key) else gast.Constant(None, None)
            for key, element in zip(op.keys, op.args)]
        value = op.statement.value
        packed = gast.Dict(list(value.keys), parts) if isinstance(value, gast.Dict) \
            else type(value)(parts, gast.Load())
        self.tangents.states[op.targets[0]] = SET
        return [assign(self.tangents.name(op.targets[0]), packed)]

    def _unpack(self, op):
        elements = gast.Call(self.helper("tangent_elements"), [
            self.tangent_of_atom(op.args[0]), gast.Constant(len(op.targets), None)], [])
        for target in op.targets:
            self.tangents.states[target] = MAYBE
        names = gast.Tuple([store(self.tangents.name(t)) for t in op.targets], gast.Store())
        return [gast.Assign([names], elements, None)]

    def _call(self, op):
        entry = jvp_rules(op.callee)
        if entry is None:
            raise MissingJVPRuleError(
                f"srcad has no forward-mode (JVP) rule for `{op.label}` "
                f"({qualified_name(op.callee)}), and a differentiated value flows into it in "
                f"{self.parsed.name}.", self.parsed.location(op.statement),
                f"register one with `srcad.defjvp({op.label}, lambda g, ans, x: ...)`, where "
                "`g` is the tangent of `x`: one rule per positional argument, `None` for an "
                "argument without a tangent.")
        checks = [unruled_check(op, name, argument, tangent, self.parsed, self.bindings,
                                "defjvp")
                  for name, argument in unruled_arguments(entry, op)
                  for tangent in [self.tangent_of_atom(argument)] if not is_none_constant(tangent)]
        target = op.targets[0]
        same_shape = same_shape_arguments(op, self.activity.scalars, self.activity.shapes)
        parts, arguments = [], []
        for template, bound, argument in rule_applications(entry, op, self.parsed, "defjvp",
                                                            self.bindings):
            g = self.tangent_of_atom(argument) if argument is not None else _NONE
            if is_none_constant(g):
                continue
            shaped = {target} if isinstance(argument, gast.Name) \
                and argument.id in same_shape else frozenset()
            contribution = self.contribution(instantiate(
                template, bound, self.rule_tangent(g, target), load(target), self.bind, shaped),
                target)
            guard = argument.id if isinstance(argument, gast.Name) \
                and self.tangents.state(argument.id) != SET else None
            parts.append((guard, contribution))
            arguments.append(argument)
        if self.sums_broadcast and len(parts) > 1 and all(guard is None for guard, _ in parts) \
                and len(parts) == sum(isinstance(a, gast.Name) for a in op.args) == len(op.args):
            parts = [(None, self._unspread(c, target)) for _, c in parts]
        parts = [(parts[i][0], term)  # (`x * x`: one term, twice)
                 for i, term in counted(arguments, [c for _, c in parts])]
        return checks + self._sum(target, parts)

    # Tangents have their own primal's shape: a sum of one per argument of an elementwise
    # operation has the output's shape by broadcasting (batched tangents: not by itself).
    sums_broadcast = True

    def _unspread(self, contribution, target: str):
        """`e` for a contribution `broadcast_like(e, target)`: every argument of the call
        has a tangent, and their sum broadcasts to the output's shape by itself (as
        `t_x + t_y` of `x + y`); without the spread, the output's value is not read."""
        if isinstance(contribution, gast.Call) and isinstance(contribution.func, gast.Name) \
                and self.bindings.named(contribution.func.id) is tangents.broadcast_like \
                and isinstance(contribution.args[1], gast.Name) \
                and contribution.args[1].id == target:
            return contribution.args[0]
        return contribution

    def _sum(self, target: str, parts) -> list:
        """`t_target = part + part + ...`, testing the parts whose argument may have none
        (parts that depend on the same argument share one test)."""
        name = self.tangents.name(target)
        groups = {}
        for guard, contribution in parts:
            groups.setdefault(guard, []).append(contribution)
        certain = groups.pop(None, [])
        accumulate = load(self.bindings.name_for("accumulate", helpers.accumulate)) \
            if target in self.tangents.sequences else None  # (`+` would join list tangents)

        def plus(a, b):
            return gast.Call(accumulate, [a, b], []) if accumulate else added(a, b)

        if certain:
            statements, state = [assign(name, functools.reduce(plus, certain))], SET
        elif self.tangents.state(target) == NONE:
            statements, state = [], NONE
        else:
            statements, state = [assign(name, gast.Constant(None, None))], NONE
        for guard, contributions in groups.items():
            contribution = functools.reduce(plus, contributions)
            if state == SET:
                update = plus(load(name), contribution)
            elif state == NONE:
                update = contribution
            else:
                update = gast.IfExp(is_none(name), contribution, plus(load(name), contribution))
            test = is_none(self.tangents.name(guard), negate=True)
            statements.append(gast.If(test, [assign(name, update)], []))
            state = SET if state == SET else MAYBE
        self.tangents.states[target] = state
        if state != NONE and target not in self.mutated \
                and any(self._shares_a_written_tangent(c) for _, c in parts):
            statements.append(assign(name, gast.Call(self.helper("owned"), [load(name)], [])))
        return statements

    def _shares_a_written_tangent(self, contribution) -> bool:
        """Whether `contribution` may be the very tangent of a value written in place later
        (`y - c` passes `t_y` on): the new value's tangent must not change with it."""
        while isinstance(contribution, gast.Call) and contribution.args \
                and self.bindings.named(getattr(contribution.func, "id", None)) in (
                    tangents.broadcast_like, batched.broadcast_like):
            contribution = contribution.args[0]
        return isinstance(contribution, gast.Name) and contribution.id in {
            self.tangents.name(m) for m in self.mutated}

    def _dynamic_call(self, op):
        """A call whose derivative is found when it runs: `y, t_y = call_jvp(f, ...)`."""
        positional = [i for i, a in enumerate(op.args) if not is_none_constant(self.tangent_of_atom(a))]
        named = [k for k, v in op.keywords if not is_none_constant(self.tangent_of_atom(v))]
        spec = gast.Constant(tuple(positional + named), None)
        tangents = gast.Tuple([self.tangent_of_atom(op.args[i]) for i in positional]
                              + [self.tangent_of_atom(v) for k, v in op.keywords if k in named],
                              gast.Load())
        if op.method:
            caller = self.method_caller(op)
            head, rest = [op.args[0], gast.Constant(op.method, None)], op.args[1:]
        else:
            caller = self.bindings.name_for(*self.callee_caller)
            head, rest = [op.statement.value.func], op.args
        call = gast.Call(load(caller), [*head, spec, tangents, *rest],
                         [gast.keyword(k, v) for k, v in op.keywords])
        target = op.targets[0]
        self.tangents.states[target] = MAYBE
        pair = gast.Tuple([store(target), store(self.tangents.name(target))], gast.Store())
        return [gast.copy_location(gast.Assign([pair], call, None), op.statement)]


def _assigned(nodes) -> set:
    """Names a block may assign (its tangents may change inside it)."""
    names = set()
    for node in nodes:
        if isinstance(node, Branch):
            names |= _assigned(node.body) | _assigned(node.orelse)
        elif isinstance(node, Loop):
            names |= _assigned(node.body) | {node.element}
        else:
            names |= set(node.targets) | ({node.mutates} if node.mutates else set())
    return names - {None}
