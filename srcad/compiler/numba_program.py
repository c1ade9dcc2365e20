"""numba_program: the copy of a gradient program that numba compiles (numba_backend.py), with
its tapes of numbers as arrays and its result returned with whether it is finite.

The typed tape (transform/recording.py `Tape`) is a list per recorded name and loop; numba's
appends and pops of a list cost as much as the program's arithmetic. Where a list holds
numbers alone (a name the analysis knows as a number, a loop's trip count), the copy keeps
it as an array and a count (kernels/numba_programs.py):

    stack_u = []                  stack_u = tape_of(0.0); top_stack_u = 0
    for _ in range_2:             stack_u = tape_reserved(stack_u, top_stack_u + loop_trips(range_2))
                                  for _ in range_2:
        stack_u.append(u)             tape_store(stack_u, top_stack_u, u); top_stack_u += 1
    ...                           ...
    u = stack_u.pop()             top_stack_u -= 1; u = tape_popped(stack_u, top_stack_u, u)

A tape a top-level loop meets empty is made with its room at once (`tape_of(0.0, room)`),
and a trip count pushed and popped once, both at the top level, is held by a name
(`stack_trips = len(range_0)` ... `trips = stack_trips`). A push outside a `for` loop over a
name (a `while` loop's) grows the array when it is full (`tape_pushed`). A list used any
other way, holding arrays, or popped where the count cannot be stepped first (a `while`
loop's test) stays a list. numba's twins of the helpers
(runtime/numba_twins.py) refuse a value of another type than the array's (a tape of floats for
a name numba types as an integer): numba then compiles the program with lists. The Python
program keeps its lists: it is the fallback, and the readable reference.

`return r` becomes `return (r, all_finite(r))`: numba's code tells whether the result is
finite (where it is not, the Python program decides what the call gives).
"""
from __future__ import annotations

import builtins

import gast

from srcad.compiler.transform.adjoints import assign, load, store
from srcad.kernels import numba_programs

FLOAT, INTEGER = "float", "integer"


def numba_copy(function: gast.FunctionDef, numbers: frozenset, integers: set,
               bindings) -> gast.FunctionDef:
    """A copy of `function` (numba's program, lowered) with its tapes of numbers as arrays
    and its result returned with whether it is finite. `integers`: the names it binds to
    integers alone."""
    kinds = _number_tapes(function, numbers, integers, bindings)
    made = _copied(function)
    made.name = bindings.namer.claim(f"{function.name}_numba")
    tapes = _Tapes(kinds, {stack: bindings.namer.claim(f"top_{stack}") for stack in kinds},
                   _single_values(function, kinds), bindings)
    made.body = tapes.rewritten(made.body, top_level=True)
    made.body = _checked_returns(made.body, bindings.name_for(
        "all_finite", numba_programs.all_finite), bindings.namer.claim("result"))
    return made


def _checked_returns(statements: list, finite: str, result: str) -> list:
    """`statements` with each `return r` made `result = r; return (result, finite(result))`."""
    made = []
    for statement in statements:
        if isinstance(statement, gast.Return):
            made += [assign(result, statement.value or gast.Constant(None, None)),
                     gast.Return(gast.Tuple([load(result), gast.Call(
                         load(finite), [load(result)], [])], gast.Load()))]
            continue
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(statement, field, None)
            if isinstance(inner, list) and inner and not isinstance(
                    statement, (gast.FunctionDef, gast.Lambda)):
                setattr(statement, field, _checked_returns(inner, finite, result))
        made.append(statement)
    return made


def _number_tapes(function, numbers: frozenset, integers: set, bindings) -> dict:
    """`{list: FLOAT or INTEGER}` for the tape lists of `function` that hold numbers of one
    kind and are used by pushes and pops alone (a float one popped into a name it pushed)."""
    lists = {s.targets[0].id for s in function.body if _empty_list(s)}
    uses = {name: 0 for name in lists}
    kinds: dict = {name: set() for name in lists}
    pushed: dict = {name: set() for name in lists}
    known = {name: 1 for name in lists}  # (the preamble's binding)
    popped_into: dict = {name: set() for name in lists}
    for node in gast.walk(function):
        if isinstance(node, gast.Name) and node.id in lists:
            uses[node.id] += 1
        stack = _pushed_onto(node, lists)
        if stack:
            known[stack] += 1
            value = node.value.args[0]
            kinds[stack].add(_kind(value, numbers, integers, bindings))
            pushed[stack].add(value.id if isinstance(value, gast.Name) else None)
        stack = _popped_from(node, lists)
        if stack:
            known[stack] += 1
        if isinstance(node, gast.Assign) and _popped_from(node.value, lists):
            popped_into[node.value.func.value.id].update(
                t.id if isinstance(t, gast.Name) else None for t in node.targets)
        if isinstance(node, gast.stmt):
            for stack in _unsteppable(node, lists):
                uses[stack] = -1
    chosen = {}
    for stack in lists:
        kind = kinds[stack].pop() if len(kinds[stack]) == 1 else None
        if uses[stack] != known[stack] or kind is None:
            continue
        if kind == FLOAT and not (popped_into[stack] and popped_into[stack] <= pushed[stack]
                                  and _pops(function, stack) == _assigned_pops(function, stack)):
            continue
        chosen[stack] = kind
    return chosen


def _single_values(function, kinds: dict) -> set:
    """The tapes of integers of `kinds` (a top-level loop's trip count) that `function`
    pushes once and pops once, both in its own body (not in a loop or a branch), the push
    first: each holds one value, which a name holds as well."""
    pushes: dict = {}
    pops: dict = {}
    for node in gast.walk(function):
        stack = _pushed_onto(node, kinds) or _popped_from(node, kinds)
        if stack:
            (pushes if isinstance(node, gast.Expr) else pops).setdefault(stack, []).append(node)
    at = {}  # (a push statement, or the pop assigned by one, → its place in the body)
    for place, statement in enumerate(function.body):
        if _pushed_onto(statement, kinds):
            at[id(statement)] = place
        elif isinstance(statement, gast.Assign) and _popped_from(statement.value, kinds):
            at[id(statement.value)] = place
    return {stack for stack, kind in kinds.items()
            if kind == INTEGER and len(pushes.get(stack, ())) == 1 == len(pops.get(stack, ()))
            and id(pushes[stack][0]) in at and id(pops[stack][0]) in at
            and at[id(pushes[stack][0])] < at[id(pops[stack][0])]}


def _empty_list(statement) -> bool:
    return isinstance(statement, gast.Assign) and len(statement.targets) == 1 \
        and isinstance(statement.targets[0], gast.Name) \
        and isinstance(statement.value, gast.List) and not statement.value.elts


def _pushed_onto(node, lists) -> str | None:
    """The list `node` pushes onto, where it is a statement `stack.append(value)`."""
    call = node.value if isinstance(node, gast.Expr) else None
    if isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute) \
            and call.func.attr == "append" and isinstance(call.func.value, gast.Name) \
            and call.func.value.id in lists and len(call.args) == 1 and not call.keywords:
        return call.func.value.id
    return None


def _popped_from(node, lists) -> str | None:
    """The list `node` pops from, where it is a call `stack.pop()`."""
    if isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute) \
            and node.func.attr == "pop" and isinstance(node.func.value, gast.Name) \
            and node.func.value.id in lists and not node.args and not node.keywords:
        return node.func.value.id
    return None


_OWN = ("targets", "target", "value", "test", "iter")  # (a statement's own expressions)


def _unsteppable(statement, lists) -> set:
    """The lists `statement` pops from where the count cannot be stepped down once, before
    it: in a `while` loop's test (run once per trip), under a condition (`a if c else b`,
    `and`, `or`), or twice."""
    found, seen = set(), set()
    for field in _OWN:
        part = getattr(statement, field, None)
        for expression in part if isinstance(part, list) else [part]:
            if not isinstance(expression, gast.AST):
                continue
            for node in gast.walk(expression):
                conditional = isinstance(node, (gast.IfExp, gast.BoolOp, gast.Lambda))
                for inner in gast.walk(node) if conditional else [node]:
                    stack = _popped_from(inner, lists)
                    if stack and (conditional or stack in seen
                                  or isinstance(statement, gast.While)):
                        found.add(stack)
                    elif stack:
                        seen.add(stack)
    return found


def _pops(function, stack: str) -> int:
    return sum(_popped_from(node, {stack}) is not None for node in gast.walk(function))


def _assigned_pops(function, stack: str) -> int:
    """The pops of `stack` that are the whole value of an assignment to one name."""
    return sum(isinstance(node, gast.Assign) and len(node.targets) == 1
               and isinstance(node.targets[0], gast.Name)
               and _popped_from(node.value, {stack}) is not None
               for node in gast.walk(function))


def _kind(value, numbers: frozenset, integers: set, bindings) -> str | None:
    """FLOAT or INTEGER for a pushed value that is a number, else None."""
    if isinstance(value, gast.Name):
        return INTEGER if value.id in integers else FLOAT if value.id in numbers else None
    if isinstance(value, gast.Call) and isinstance(value.func, gast.Name) \
            and bindings.named(value.func.id) is builtins.len:
        return INTEGER  # (a loop's trip count)
    return None


class _Tapes:
    """The rewriting of one program's tape lists `kinds` into arrays counted by `tops`, and
    of those holding a single value (`singles`) into names."""

    def __init__(self, kinds: dict, tops: dict, singles: set, bindings):
        self.kinds, self.tops, self.singles = kinds, tops, singles
        self.made_with_room: set = set()  # (tapes a top-level loop's reservation made)
        self.helper = {name: bindings.name_for(name, getattr(numba_programs, attribute))
                       for name, attribute in (("tape_of", "tape_of"),
                                               ("tape_reserved", "reserved"),
                                               ("tape_pushed", "pushed"),
                                               ("tape_store", "store"),
                                               ("tape_popped", "popped"),
                                               ("loop_trips", "loop_trips"))}

    def call(self, helper: str, *args):
        return gast.Call(load(self.helper[helper]), list(args), [])

    def step(self, stack: str, op) -> gast.AugAssign:
        return gast.AugAssign(store(self.tops[stack]), op, gast.Constant(1, None))

    def prototype(self, stack: str) -> gast.Constant:
        return gast.Constant(0.0 if self.kinds[stack] == FLOAT else 0, None)

    def rewritten(self, statements: list, top_level: bool = False,
                  reserved: bool = False) -> list:
        """`statements` with the tapes as arrays. `reserved`: they are the body of a loop
        that reserved room for their pushes (or of a branch in one): they store without
        a test for room, which would make numba reload the array on every trip. At the
        top level, a tape that a loop's reservation meets empty is made with its room
        (one array, not an empty one and then its copy)."""
        made, touched, empty = [], set(), {}  # (empty: each tape's first binding)
        for statement in statements:
            if top_level and _empty_list(statement) and statement.targets[0].id in self.kinds:
                stack = statement.targets[0].id
                if stack not in self.singles:
                    empty[stack] = assign(stack, self.call("tape_of", self.prototype(stack)))
                    made += [empty[stack], assign(self.tops[stack], gast.Constant(0, None))]
                continue
            stack = _pushed_onto(statement, self.kinds)
            if stack in self.singles:
                made.append(assign(stack, statement.value.args[0]))
                continue
            if stack:
                value = (load(stack), load(self.tops[stack]), statement.value.args[0])
                made += [gast.Expr(self.call("tape_store", *value)) if reserved
                         else assign(stack, self.call("tape_pushed", *value)),
                         self.step(stack, gast.Add())]
                continue
            loop = isinstance(statement, gast.For) and isinstance(statement.iter, gast.Name)
            if loop:
                made += self.reservations(statement, set(empty) - touched)
            if top_level:
                touched.update(_pushed_onto(node, self.kinds) or _popped_from(node, self.kinds)
                               for node in gast.walk(statement))
            made += self.popping(statement)
            for field in ("body", "orelse"):
                inner = getattr(statement, field, None)
                if isinstance(inner, list) and inner:  # (as `_unnested` counts pushes)
                    setattr(statement, field, self.rewritten(inner, reserved=loop and field == (
                        "body") or reserved and isinstance(statement, gast.If)))
            made.append(statement)
        if not top_level:
            return made
        unbound = [empty[stack] for stack in self.made_with_room]
        return [s for s in made if not any(s is binding for binding in unbound)]

    def reservations(self, loop: gast.For, untouched: set) -> list:
        """Room, before `loop`, for the values its trips push (but those of loops inside
        it, which reserve their own); the `untouched` tapes, still empty, made with it."""
        counts: dict = {}
        for statement in _unnested(loop.body):
            stack = _pushed_onto(statement, self.kinds)
            if stack:
                counts[stack] = counts.get(stack, 0) + 1
        trips = self.call("loop_trips", load(loop.iter.id))
        made = []
        for stack, count in counts.items():
            room = gast.BinOp(load(self.tops[stack]), gast.Add(), _copied(trips) if count == 1
                              else gast.BinOp(gast.Constant(count, None), gast.Mult(),
                                              _copied(trips)))
            if stack in untouched:
                self.made_with_room.add(stack)
                made.append(assign(stack, self.call("tape_of", self.prototype(stack), room)))
            else:
                made.append(assign(stack, self.call("tape_reserved", load(stack), room)))
        return made

    def popping(self, statement) -> list:
        """The counts stepped down for the pops `statement` makes itself (not in its body),
        each pop replaced by a read of its array."""
        steps = []
        tapes = self

        class Pops(gast.NodeTransformer):
            def visit_Call(self, node):
                self.generic_visit(node)
                stack = _popped_from(node, tapes.kinds)
                if not stack:
                    return node
                if stack in tapes.singles:  # (a name, read)
                    return load(stack)
                steps.append(tapes.step(stack, gast.Sub()))
                top = load(tapes.tops[stack])
                if tapes.kinds[stack] == FLOAT:  # (assigned to a name it pushed: its twin
                    return tapes.call("tape_popped", load(stack), top,  # checks the name's type)
                                      load(statement.targets[0].id))
                return gast.Subscript(load(stack), top, gast.Load())

        for field in _OWN:
            part = getattr(statement, field, None)
            if isinstance(part, list):
                setattr(statement, field, [Pops().visit(p) for p in part])
            elif isinstance(part, gast.AST):
                setattr(statement, field, Pops().visit(part))
        return steps


def _copied(node):
    """`node` copied, its syntax alone (not the analyses' marks, which may hold objects a
    copy cannot make)."""
    if isinstance(node, list):
        return [_copied(item) for item in node]
    if not isinstance(node, gast.AST):
        return node
    return type(node)(**{field: _copied(getattr(node, field)) for field in node._fields})


def _unnested(statements: list):
    """The statements of `statements` and of the branches in them, not of loops in them."""
    for statement in statements:
        yield statement
        if isinstance(statement, gast.If):
            yield from _unnested(statement.body)
            yield from _unnested(statement.orelse)
