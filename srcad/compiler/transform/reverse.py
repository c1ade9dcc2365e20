"""reverse: resolved simple form → adjoint program (a VJP maker), as a gast module.

For `def f(x, w)` returning `out`, the generated module reads

    def srcad_scope(<names bound for the generated code>, <f's free variables>):
        def f_vjp(x, w):
            <f's statements, pushing what the backward sweep needs: the forward sweep>
            def f_backward(b_out):
                <adjoints of the statements in reverse, popping: the backward sweep>
                return b_x                  # a tuple when several arguments are in wrt
            return out, f_backward
        return f_vjp

Control flow is replayed with tape semantics: a branch is taken again by its condition
(restored from the stack if it was overwritten), a loop runs again for its pushed trip
count, and every overwritten value the backward sweep reads is popped back right after the
adjoint of the statement that overwrote it (analysis/tbr.py), so adjoint code reads primal
values by name. Adjoints follow srcad/compiler/transform/adjoints.py."""
from __future__ import annotations

import gast

from srcad.compiler.analysis.activity import Activity, carries_derivative
from srcad.compiler.analysis.tbr import assignment_sites
from srcad.compiler.frontend.parse import ParsedFunction, param_names
from srcad.compiler.frontend.resolve import IN_PLACE_KINDS, Branch, Loop, Operation, operations
from srcad.compiler.frontend.trees import clone, name_nodes, walk
from srcad.compiler.passes import enabled
from srcad.errors import MissingRuleError
from srcad.kernels import outlines, regions, adjoints as helpers
from srcad.ops import vjp_rules
from srcad.runtime import calls
from srcad.compiler.transform.adjoints import (MAYBE, MAYBE_OWNED, NONE, OWNED, SET, UNIFORM,
                                               UNSET, Adjoints, assign, is_none, join, load,
                                               store)
from srcad.compiler.transform.bindings import Bindings
from srcad.compiler.transform.naming import Namer
from srcad.compiler.transform.optimize import (counted, drop_dead_zero_stores, loaded_names,
                                      names_read, reduce_first)
from srcad.compiler.transform.element_adjoints import sum_element_adjoints
from srcad.compiler.transform.first_trip import skip_first_trip_adjoints
from srcad.compiler.transform.loop_checkpoints import (Sweep, checkpoint_loops,
                                                      refuse_unsupported_marks)
from srcad.compiler.transform.outline import outline_unread
from srcad.compiler.transform.recording import REGION, Tape, record, unbound
from srcad.compiler.transform.refusals import check_operation, qualified_name
from srcad.compiler.transform.release import release
from srcad.compiler.transform.reuse import accumulate_in_source, consume
from srcad.compiler.transform.sequences import sequence_names
from srcad.compiler.transform.settle import ReplayLoop, Restore, RestoreRegion, settle
from srcad.compiler.transform.signs import fold_negations
from srcad.compiler.transform.statement_names import StatementNames
from srcad.compiler.transform.rule_calls import (rule_applications, same_shape_arguments,
                                        unruled_arguments, unruled_check)
from srcad.compiler.transform import uniform
from srcad.compiler.transform.templates import instantiate

SCOPE = "srcad_scope"


def reverse(simple_fn: gast.FunctionDef, block: list, activity: Activity, aliases,
            wrt: tuple[str, ...], output: str, parsed: ParsedFunction, namer: Namer,
            bindings: Bindings, containers: frozenset = frozenset(),
            gradient_only: bool = False, typed_tape: bool = False
            ) -> tuple[gast.Module, str]:
    """The adjoint module and the name of the VJP maker inside it. `gradient_only`: the
    output is read for its shape alone (fuse.py seeds with it and returns no value), so the
    forward sweep computes of it and what leads only to it no more (outline.py).
    `typed_tape`: a list per recorded name and loop, not one stack (recording.Tape)."""
    refuse_unsupported_marks(block, activity, parsed, param_names(simple_fn), aliases)
    sequences = sequence_names(block, containers)
    adjoints = Adjoints(namer, bindings, sequences, numbers=activity.scalars)
    tape = Tape(namer, typed_tape)
    backward_name = namer.claim(f"{parsed.name}_backward")
    vjp_name = namer.claim(f"{parsed.name}_vjp")
    seed = adjoints.seed(output)
    raw = _Backward(activity, parsed, namer, bindings, adjoints).block(block)
    raw += adjoints.materialise(wrt)
    gradients = [adjoints.returned(w) for w in wrt]
    sites = assignment_sites(block, param_names(simple_fn), activity.scalars,
                             {p: r for p, r in activity.elements.items() if p in wrt})
    backward_body, recorded, trips, shapes, read, known = settle(
        raw, block, sites, aliases, tape, bindings.name_for)
    restored = sorted({name for _, name in recorded if name != REGION})
    sweep = Sweep(block, recorded, trips, tape, shapes, bindings, namer, activity, aliases,
                  parsed)
    forward = record(block, recorded, trips, tape, bindings.name_for, shapes, sweep.ranges)
    checkpointed = checkpoint_loops(forward, backward_body, sweep, param_names(simple_fn),
                                    sites.maybe_unbound)
    pushed = loaded_names(gast.Module(forward + backward_body, [])) if tape.typed \
        else set(tape.names)  # (a checkpointed loop pushes in the backward sweep too)
    preamble = [assign(name, gast.List([], gast.Load())) for name in tape.names
                if name in pushed] if recorded or trips else []
    preamble += [unbound(n) for n in sorted(
        {n for n in restored if n in sites.maybe_unbound} | checkpointed.unbound_first)]
    result = gradients[0] if len(gradients) == 1 else gast.Tuple(gradients, gast.Load())
    if checkpointed.rewritten:  # (in place, inside statements too: their names are new)
        known = StatementNames()
    # (the passes from here on ask each statement for its names once: statement_names.py)
    backward_body = drop_dead_zero_stores(backward_body, loaded_names(result), known)
    if enabled("signs"):
        backward_body = fold_negations(backward_body, adjoints.helper_of, loaded_names(result),
                                       known)
    if enabled("reuse"):
        backward_body = accumulate_in_source(backward_body, adjoints.helper_of,
                                             bindings.name_for, known)
    returned = simple_fn.body[-1].value
    updated = {op.mutates for op in operations(block)
               if op.kind in IN_PLACE_KINDS and op.mutates in sequences}
    if loaded_names(returned) & set().union(*map(aliases.group, updated)):
        # the backward sweep undoes the updates of a list in place: the caller keeps a copy
        returned = gast.Call(load(bindings.name_for("detached", regions.detached)),
                             [returned], [])
    # (what the settled sweep reads, but where a loop's recording moved into it: the rewrites
    # since drop reads of adjoints and helpers only, which the forward sweep binds not)
    values, shapes = names_read(backward_body) if checkpointed.rewritten else read
    captured = set().union(*(op.captures for op in operations(block)))
    kept = {*values, *restored, *captured, *activity.scalars}
    forward = preamble + forward
    known_forward = StatementNames()
    if gradient_only and enabled("outline"):  # the output is read for its shape alone
        forward, outlined = outline_unread(forward, kept, shapes | loaded_names(returned),
                                           bindings, known_forward)
        kept |= outlined  # (an outline is no array: nothing to release)
    kept |= loaded_names(returned)
    if enabled("release"):
        forward = release(forward, kept, frozenset(shapes - values), bindings.name_for,
                          known_forward)
        backward_body = release(backward_body, {*restored, *checkpointed.rebound,
                                                 *loaded_names(result)}, known=known)
    backward_body = sum_element_adjoints(backward_body, activity.elements, bindings, namer)
    if enabled("first-trip") and any(isinstance(s, gast.For) for s in backward_body):
        # (it rewrites top-level loops alone: the names bound are gathered only for them)
        bound = {*tape.names, *param_names(simple_fn)} | {
            node.id for node in name_nodes(forward + backward_body)
            if isinstance(node.ctx, gast.Store)}
        backward_body = skip_first_trip_adjoints(backward_body, loaded_names(result), bindings,
                                                 namer, bound)
    frame = sorted(set(restored) | checkpointed.rebound)  # (names bound in f_vjp's frame)
    declarations = [gast.Nonlocal(frame)] if frame else []
    backward = function_def(backward_name, [seed],
                         declarations + backward_body + [gast.Return(result)])
    vjp_body = forward + [backward, gast.Return(
        gast.Tuple([returned, load(backward_name)], gast.Load()))]
    vjp = gast.FunctionDef(vjp_name, simple_fn.args, vjp_body, [], None, None, [])
    scope = function_def(SCOPE, [], [vjp, gast.Return(load(vjp_name))])  # (emit.compile_adjoint)
    return gast.Module([scope], []), vjp_name


def function_def(name, params, body):
    args = gast.arguments([gast.Name(p, gast.Param(), None, None) for p in params], [], None,
                          [], [], None, [])
    return gast.FunctionDef(name, args, body, [], None, None, [])


# ---- the backward sweep ----------------------------------------------------------------------
class _Backward:
    def __init__(self, activity: Activity, parsed, namer: Namer, bindings: Bindings,
                 adjoints: Adjoints):
        self.activity = activity
        self.active = activity.active
        self.parsed = parsed
        self.namer = namer
        self.bindings = bindings
        self.adjoints = adjoints
        self.depth = 0

    def block(self, nodes) -> list:
        statements = []
        for node in reversed(nodes):
            if isinstance(node, (Branch, Loop)):  # control flow never meets a UNIFORM adjoint
                statements.extend(self.adjoints.materialise(list(self.adjoints.states)))
            if isinstance(node, Branch):
                statements.extend(self.branch(node))
            elif isinstance(node, Loop):
                statements.extend(self.loop(node))
            else:
                statements.extend(self.operation(node))
        return statements

    # ---- control flow ------------------------------------------------------------------------
    def branch(self, node: Branch) -> list:
        statements = self.adjoints.make_variables(self._touched([node]))
        self.depth += 1
        before = self.adjoints.snapshot()
        body = self.block(node.body)
        after_body = self.adjoints.snapshot()
        self.adjoints.states = before
        orelse = self.block(node.orelse)
        self.adjoints.merge(after_body, self.adjoints.snapshot())
        self.depth -= 1
        return statements + [gast.If(load(node.condition), body, orelse)]

    def loop(self, node: Loop) -> list:
        statements = self.adjoints.make_variables(self._touched([node]))
        statements += self.adjoints.owned({op.mutates for op in operations(node.body)
                                           if op.kind == "setitem"})
        index = self.namer.claim("step") if {node.element, node.iterable} <= self.active \
            else None
        header = self.adjoints.snapshot()
        while True:  # until the states at the loop header are those at the end of the body
            self.adjoints.states = dict(header)
            body = self._loop_body(node, index)
            joined = join(header, self.adjoints.snapshot())
            if joined == header:
                break
            header = joined
        self.adjoints.states = header  # after zero or more iterations
        trips = self.namer.claim("trips")
        return statements + [ReplayLoop(node, trips, index, body)]

    def _loop_body(self, node: Loop, index: str | None) -> list:
        self.depth += 1
        body = [Restore(node, node.element)] if node.element else []
        body += self.block(node.body)
        if index:
            body += self._guarded(node.element, [node.iterable], lambda: self.adjoints.accumulate(
                node.iterable, self._index_adjoint(node, index)))
            body += self.adjoints.reset(node.element, True)
        self.depth -= 1
        return body

    def _index_adjoint(self, node: Loop, index: str):
        scatter = self.bindings.name_for("index_adjoint", helpers.index_adjoint)
        return gast.Call(load(scatter), [load(self.adjoints.name(node.element)),
                                         load(node.iterable), load(index)], [])

    def _touched(self, nodes) -> set:
        names = set()
        for node in nodes:
            if isinstance(node, Branch):
                names |= self._touched(node.body) | self._touched(node.orelse)
            elif isinstance(node, Loop):
                names |= self._touched(node.body) | {node.element, node.iterable}
            else:
                names |= set(node.targets) | set(node.read_names())
        return names & self.active

    # ---- operations ----------------------------------------------------------------------------
    def operation(self, op: Operation) -> list:
        check_operation(op, self.activity.varied, self.parsed, self.bindings.name_for)
        prelude = []
        if op.kind not in ("call", "copy") or op.dynamic:  # those two may read a number
            prelude = self.adjoints.materialise([t for t in (*op.targets, op.mutates) if t])
        return prelude + self._operation(op)

    def _operation(self, op: Operation) -> list:
        if op.kind == "pop":
            return self._pop(op)
        if op.kind in IN_PLACE_KINDS:
            statements = []
            if op.mutates in self.active:
                statements = self._guarded(op.mutates, op.read_names(),
                                           lambda: getattr(self, f"_{op.kind}")(op))
            return statements + [RestoreRegion(op)]
        statements = []
        if carries_derivative(op) and self.active.intersection(op.targets):
            if op.kind == "unpack":
                statements = self._unpack(op)
            else:
                statements = self._guarded(op.targets[0], op.read_names(),
                                           lambda: getattr(self, f"_{op.kind}")(op))
        for target in op.targets:
            statements += self.adjoints.reset(target, self.depth > 0)
        # the forward sweep pushes the targets' old values in order: pop them in reverse
        return statements + [Restore(op, t) for t in reversed(op.targets)]

    def _guarded(self, target: str, reads, derivative) -> list:
        """The statements `derivative()` makes, run only if the target's adjoint is nonzero."""
        state = self.adjoints.state(target)
        if state in (UNSET, NONE):
            return []
        if state in (SET, OWNED, UNIFORM):
            return derivative()
        statements = self.adjoints.materialise(set(reads) & self.active)  # (control flow)
        statements += self.adjoints.make_variables(set(reads) & self.active)
        with self.adjoints.joined_after():
            self.adjoints.set_state(target, OWNED if state == MAYBE_OWNED else SET)
            self.depth += 1
            body = derivative()
            self.depth -= 1
        guard = is_none(self.adjoints.name(target), negate=True)
        return statements + [gast.If(guard, body, [])]

    def _copy(self, op):
        g = self.adjoints.name(op.targets[0])
        if self.adjoints.state(op.targets[0]) == UNIFORM:
            if self._may_be_uniform(op.args[0]):
                return self.adjoints.uniform(op.args[0].id, load(g))
            statements = self.adjoints.materialise([op.targets[0]])
            return statements + self._contribute(op.args[0], load(g))
        _, (cotangent,) = self._consumed(op, g, [load(g)])
        return self._contribute(op.args[0], cotangent)

    def _pack(self, op):
        """`{k: v, ...}`, `[a, b]`: each element's adjoint is the item's; a display's key given
        again later holds the later value only (`{"a": x, "a": y}` is `{"a": y}`)."""
        statements = []
        adjoint = load(self.adjoints.name(op.targets[0]))
        constants = [k.value if isinstance(k, gast.Constant) else None for k in op.keys]
        for place, (key, element) in enumerate(zip(op.keys, op.args)):
            if constants[place] is not None and constants[place] in constants[place + 1:]:
                continue
            if self.activity.element_useful(op.targets[0], key):
                part = gast.Subscript(adjoint, key, gast.Load())
                statements += self._contribute(element, part, may_be_none=True)
        return statements

    def _setitem(self, op):
        """`y[index] = value`: the written region's adjoint goes to `value`, then is zero."""
        container, index, value = op.args
        value, target = clone(value), clone(container)
        value.shape_only = target.shape_only = True  # (for unbroadcasting, and the dtype)
        target.dtype_only = True  # (which the write keeps: no need to undo it for this read)
        region = self.bindings.name_for("region_adjoint", regions.region_adjoint)
        cotangent = gast.Call(load(region), [load(self.adjoints.name(op.mutates)), index,
                                             value, target], [])
        statements = [] if op.unrecorded else self._contribute(
            value, cotangent, may_be_none=op.mutates in self.adjoints.sequences)
        return statements + [self.adjoints.cleared(op.mutates, index)]

    def _append(self, op):
        """`xs.append(value)`: the last element's adjoint goes to `value` and is dropped."""
        adjoint = self.adjoints.name(op.mutates)
        last = gast.Subscript(load(adjoint), gast.Constant(-1, None), gast.Load())
        rest = gast.Call(load(self.bindings.name_for("without_last", helpers.without_last)),
                         [load(adjoint)], [])
        return self._contribute(op.args[1], last, may_be_none=True) + [assign(adjoint, rest)]

    def _insert(self, op):
        """`xs.insert(index, value)`: the inserted element's adjoint goes to `value` and is
        dropped (the list, as the insert left it, says where it is)."""
        container, index, value = op.args
        adjoint = self.adjoints.name(op.mutates)
        item, rest = (gast.Call(load(self.bindings.name_for(helper.__name__, helper)), [
            load(adjoint), clone(container), clone(index)], [])
            for helper in (regions.inserted_adjoint, regions.without_inserted))
        return self._contribute(value, item, may_be_none=True) + [assign(adjoint, rest)]

    def _pop(self, op) -> list:
        """`item = xs.pop(index)`: the item's adjoint goes back into the list's where the
        item was; then the list gets the item back, and `item` its old value."""
        (item,), container = op.targets, op.mutates
        statements = []
        states = {self.adjoints.state(name) for name in (container, item) if name in self.active}
        if container in self.active and states - {UNSET, NONE}:
            helper = self.bindings.name_for("popped_adjoint", regions.popped_adjoint)
            whole = gast.Call(load(helper), [self.adjoints.returned(container), (
                self.adjoints.returned(item) if item in self.active else
                gast.Constant(None, None)), clone(op.args[0]), clone(op.args[1])], [])
            statements.append(assign(self.adjoints.name(container), whole))
            self.adjoints.set_state(container, SET if states & {SET, OWNED} else MAYBE)
        statements += self.adjoints.reset(item, self.depth > 0)
        return statements + [RestoreRegion(op), Restore(op, item)]

    def _unpack(self, op):
        parts = gast.Tuple([self.adjoints.returned(t) for t in op.targets], gast.Load())
        helper = self.bindings.name_for("unpacked_adjoint", helpers.unpacked_adjoint)
        whole = gast.Call(load(helper), [parts, op.args[0]], [])
        return self._contribute(op.args[0], whole, may_be_none=True)

    def _call(self, op):
        if op.dynamic:
            return self._dynamic_call(op)
        if not any(self._carries(a) for a in (*op.args, *(v for _, v in op.keywords))):
            return []  # `C.copy()` of a constant: nothing to differentiate, no rule needed
        entry = vjp_rules(op.callee)
        if entry is None:
            raise MissingRuleError(
                f"srcad has no derivative rule for `{op.label}` ({qualified_name(op.callee)}), "
                f"and a differentiated value flows into it in {self.parsed.name}.",
                self.parsed.location(op.statement),
                f"register one with `srcad.defvjp({op.label}, lambda g, ans, x: ...)`: one "
                "rule per positional argument, `None` for an argument without a gradient.")
        g, ans = load(self.adjoints.name(op.targets[0])), load(op.targets[0])
        same_shape = same_shape_arguments(op, self.activity.scalars, self.activity.shapes)
        statements = [unruled_check(op, name, argument, gast.Constant(True, None), self.parsed,
                                    self.bindings, "defvjp")
                      for name, argument in unruled_arguments(entry, op)
                      if self._carries(argument)]
        arguments, cotangents = [], []
        for template, bound, argument in rule_applications(entry, op, self.parsed, "defvjp",
                                                            self.bindings):
            if self._carries(argument):
                arguments.append(argument)
                cotangents.append(instantiate(template, bound, g, ans, self.bindings.name_for,
                                              same_shape))
        kept = counted(arguments, cotangents, self.adjoints.helper_of)  # (`x * x`: once, twice)
        arguments, cotangents = [arguments[i] for i, _ in kept], [c for _, c in kept]
        if self.adjoints.state(op.targets[0]) == UNIFORM:
            sequences = self.adjoints.sequences
            shares = uniform.shares(op, arguments, cotangents, g.id, same_shape,
                                    self.adjoints.helper_of, self.bindings, lambda name: (
                                        name in self.active and name not in sequences),
                                    self.activity.scalars)
            if shares is not None and all(self._may_be_uniform(a) for a in arguments):
                for (name, share, is_number), argument in zip(shares, arguments):
                    statements += self.adjoints.uniform(name, share) if is_number \
                        else self._contribute(argument, share)
                return statements
            statements += self.adjoints.materialise([op.targets[0]])
        numbers = self.activity.scalars | ({g.id} if op.targets[0] in self.activity.scalars
                                           else set())
        cotangents = [reduce_first(c, self.adjoints.helper_of, numbers, self.bindings.name_for)
                      for c in cotangents]
        order, cotangents = self._consumed(op, g.id, cotangents)
        for position in order:
            statements += self._contribute(arguments[position], cotangents[position])
        return statements

    def _consumed(self, op, g: str, cotangents: list) -> tuple[list, list]:
        """An order to add `cotangents` in, and the cotangents, computed in the memory of
        the output's adjoint `g` where the backward sweep owns it (reuse.py): no other name
        holds it, and after this operation, its primal's definition, nothing reads it
        (unless the operation reads its own target)."""
        if self.adjoints.state(op.targets[0]) != OWNED or op.targets[0] in op.read_names() \
                or not enabled("reuse"):
            return range(len(cotangents)), cotangents
        return consume(cotangents, g, self.adjoints.helper_of, self.bindings.name_for)

    def _dynamic_call(self, op):
        """A call whose derivative is found when it runs: the forward sweep calls it through
        `call_vjp`, which also returns a pullback; the backward sweep applies the pullback and
        hands each active argument its cotangent."""
        positional = [i for i, a in enumerate(op.args) if self._carries(a)]
        named = [name for name, value in op.keywords if self._carries(value)]
        if op.forward is None:  # a loop's body is built more than once
            target = op.targets[0]
            pullback = self.namer.claim(f"{target}_pullback")
            if op.method:
                caller = self.bindings.name_for("call_method_vjp", calls.call_method_vjp)
                head = [op.args[0], gast.Constant(op.method, None)]
                rest = op.args[1:]
            else:
                caller = self.bindings.name_for("call_vjp", calls.call_vjp)
                head, rest = [op.statement.value.func], op.args
            spec = gast.Constant(tuple(positional + named), None)
            call = gast.Call(load(caller), [*head, spec, *rest],
                             [gast.keyword(k, v) for k, v in op.keywords])
            op.forward = gast.copy_location(gast.Assign(
                [gast.Tuple([store(target), store(pullback)], gast.Store())], call, None),
                op.statement)
            op.targets = (target, pullback)
        parts = self.namer.temporary("b_parts")
        statements = [assign(parts, gast.Call(load(op.targets[1]), [load(
            self.adjoints.name(op.targets[0]))], []))]
        arguments = [op.args[i] for i in positional] + [v for k, v in op.keywords if k in named]
        for k, argument in enumerate(arguments):
            part = gast.Subscript(load(parts), gast.Constant(k, None), gast.Load())
            statements += self._contribute(argument, part, may_be_none=True)
        return statements

    def _carries(self, argument) -> bool:
        # (nearly every argument of the simple form is an atom: a name is not walked)
        if type(argument) is gast.Name and getattr(argument, "annotation", None) is None:
            return argument.id in self.active
        return argument is not None and any(
            isinstance(n, gast.Name) and n.id in self.active for n in walk(argument))

    def _contribute(self, argument, contribution, may_be_none=False) -> list:
        """Add `contribution` to the adjoint of `argument` (a name or a tuple of atoms)."""
        if isinstance(argument, (gast.Tuple, gast.List)):
            holder = self.namer.temporary("b_elements")
            statements = [assign(holder, contribution)]
            for i, element in enumerate(argument.elts):
                part = gast.Subscript(load(holder), gast.Constant(i, None), gast.Load())
                if may_be_none:  # a pullback's part for a list argument may be None (zero)
                    part = gast.IfExp(is_none(holder), gast.Constant(None, None), part)
                statements += self._contribute(element, part, may_be_none=True)
            return statements
        if not isinstance(argument, gast.Name) or argument.id not in self.active:
            return []
        number = None if may_be_none or not self._may_be_uniform(argument) else \
            uniform.spread_number(contribution, argument.id, self.adjoints.helper_of)
        if number is not None:  # a full reduction's cotangent: kept a number (uniform.py)
            typed = self.bindings.name_for("cotangent_number", outlines.cotangent_number)
            return self.adjoints.uniform(argument.id, gast.Call(load(typed), [number], []))
        return self.adjoints.accumulate(argument.id, contribution, may_be_none)

    def _may_be_uniform(self, argument) -> bool:
        """Whether `argument`'s adjoint may hold a number standing for every element: an
        array's (not a number's, not a sequence's), outside loops and branches."""
        numbers = self.adjoints.numbers
        return self.depth == 0 and isinstance(argument, gast.Name) \
            and argument.id in self.active and numbers is not None \
            and argument.id not in numbers and argument.id not in self.adjoints.sequences
