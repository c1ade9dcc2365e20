"""recording: the forward sweep, the function's own code plus what the backward sweep needs.

Input: the resolved block, the assignments whose old value the backward sweep pops back
(`recorded`, as (site, name) pairs) and the loops it replays (`trips`, loop → counter name).
Output: forward statements that push each recorded old value just before it is overwritten
(for `y[i] = v`, a copy of the old `y[i]`; only the shape of a value whose shape is all the
backward sweep reads),
push each replayed loop's trip count after it (counted per trip; but for a loop over a
`range` that never breaks, its length, and for a loop whose every trip pushes the same
values, how much the stack grew over that number), and push a `for` loop's element at the end of
each iteration (before a trailing `if flag: break`) when the backward sweep reads it.
"""
from __future__ import annotations

import builtins
from collections import Counter

import gast

from srcad.compiler.frontend.resolve import Branch, Loop, operations, walk
from srcad.compiler.transform.adjoints import assign, load, store
from srcad.kernels import regions, adjoints as helpers


REGION = "<region>"  # in `recorded`: the old contents of an element assignment's target


def push(stack: str, value, key):
    """`stack.append(value)`, its call marked with the tape's `key` (`tape_key`: what
    analysis/float64s.py pairs a pop with its pushes by)."""
    value = load(value) if isinstance(value, str) else value
    call = gast.Call(gast.Attribute(load(stack), "append", gast.Load()), [value], [])
    call.tape_key = key
    return gast.Expr(call)


def pop(stack: str, key):
    """`stack.pop()`, marked with the tape's `key` as `push` marks its pushes."""
    call = gast.Call(gast.Attribute(load(stack), "pop", gast.Load()), [], [])
    call.tape_key = key
    return call


def unbound(name: str):
    """`name = None` for a recorded name the function may not have bound where its old
    value is pushed, marked `starts_unbound`: analysis/float64s.py knows that this None is
    never read (the function would have read a name it had not bound)."""
    made = assign(name, gast.Constant(None, None))
    made.starts_unbound = True
    return made


class Tape:
    """The lists the forward sweep pushes onto and the backward sweep pops from: one,
    `stack`, or, `typed`, one for each key (a recorded name, a loop's trip count, an element
    assignment's old contents), so that each holds values of one type, as a compiler that
    types lists needs (the numba backend). Per key, pushes and pops still pair up last in,
    first out, as the subsequence of a stack's pushes and pops that any one key makes
    does."""

    def __init__(self, namer, typed: bool = False):
        self.namer = namer
        self.typed = typed
        self.shared = None if typed else namer.claim("stack")
        self.lists: dict = {}

    def name(self, key) -> str:
        if not self.typed:
            return self.shared
        if key not in self.lists:
            label = key if isinstance(key, str) else key[0]
            self.lists[key] = self.namer.claim(f"stack_{label}")
        return self.lists[key]

    def push(self, key, value):
        return push(self.name(key), value, key)

    def pop(self, key):
        return pop(self.name(key), key)

    @property
    def names(self) -> list[str]:
        return list(self.lists.values()) if self.typed else [self.shared]


def record(block: list, recorded: set, trips: dict, tape: Tape, bind, shapes=frozenset(),
           ranges=None) -> list:
    """`ranges`: the names bound once, to a `range(...)` (found in `block` if not given)."""
    if ranges is None:
        ranges = ranges_bound_once(block)
    statements = []
    for node in block:
        if isinstance(node, Branch):
            body = record(node.body, recorded, trips, tape, bind, shapes, ranges) \
                or [gast.Pass()]
            statements.append(gast.If(load(node.condition), body, record(
                node.orelse, recorded, trips, tape, bind, shapes, ranges)))
        elif isinstance(node, Loop):
            made = record_loop(node, recorded, trips, tape, bind, shapes, ranges)
            for statement in made:  # (transform/loop_checkpoints.py finds a loop's statements)
                statement.recorded_loop = node
            statements.extend(made)
        else:
            if (id(node), REGION) in recorded:
                container, index, _ = node.args
                save = regions.saved_attribute if node.writes_attribute else regions.saved_region
                saved = gast.Call(load(bind(save.__name__, save)), [container, index], [])
                statements.append(tape.push(region_key(node), saved))
            statements.extend(tape.push(t, _saved(t, shapes, bind)) for t in node.targets
                              if (id(node), t) in recorded)
            statements.append(node.forward or node.statement)
    return statements


def region_key(op) -> tuple:
    """The tape's key for the old contents an element assignment overwrites."""
    return ("region", id(op))


def record_loop(node: Loop, recorded, trips, tape: Tape, bind, shapes, ranges,
                over: str | None = None) -> list:
    """The forward sweep of `node`; `over`: the name of what to loop over instead of its
    iterable (a segment of it)."""
    iterable = over or node.iterable
    body = record(node.body, recorded, trips, tape, bind, shapes, ranges)
    if node.element and (id(node), node.element) in recorded:
        at = len(body) - 1 if body and _is_break_test(body[-1]) else len(body)
        body.insert(at, tape.push(node.element, _saved(node.element, shapes, bind)))
    counter = trips.get(id(node))
    if node.element:
        loop = gast.For(store(node.element), load(iterable), body or [gast.Pass()], [], None)
    else:
        loop = gast.While(node.statement.test, body or [gast.Pass()], [])
    if not counter:
        return [loop]
    breaks = any(op.kind == "jump" for op in operations(node.body))
    length = load(bind("len", builtins.len))
    if iterable in ranges and not breaks:
        # a loop over a range that never breaks runs len(range) times: no count per trip
        return [loop, tape.push(counter, gast.Call(length, [load(iterable)], []))]
    pushes = 0 if tape.typed else sum(is_push(statement, tape.names) for statement in body)
    if pushes and not breaks and all(isinstance(s, (gast.Expr, gast.Assign, gast.AugAssign))
                                     for s in body):
        # every trip pushes the same values: the count is what the stack grew by, over that
        stack = tape.shared
        grown = gast.BinOp(gast.Call(length, [load(stack)], []), gast.Sub(), load(counter))
        trip_count = gast.BinOp(grown, gast.FloorDiv(), gast.Constant(pushes, None))
        return [assign(counter, gast.Call(length, [load(stack)], [])), loop,
                push(stack, trip_count, counter)]
    body.insert(0, assign(counter, gast.BinOp(load(counter), gast.Add(), gast.Constant(1, None))))
    return [assign(counter, gast.Constant(0, None)), loop, tape.push(counter, counter)]


def is_push(statement, stacks) -> bool:
    """Whether `statement` pushes onto one of the lists named `stacks` (`stack.append(v)`)."""
    call = getattr(statement, "value", None)
    return isinstance(statement, gast.Expr) and isinstance(call, gast.Call) \
        and isinstance(call.func, gast.Attribute) and call.func.attr == "append" \
        and isinstance(call.func.value, gast.Name) and call.func.value.id in stacks


def ranges_bound_once(block: list) -> frozenset:
    """The names bound once, to a `range(...)`."""
    bindings = Counter(t for op in operations(block) for t in op.targets)
    bindings.update(node.element for node in walk(block)
                    if isinstance(node, Loop) and node.element)
    return frozenset(op.targets[0] for op in operations(block)
                     if op.kind == "call" and op.callee is builtins.range
                     and len(op.targets) == 1 and bindings[op.targets[0]] == 1)


def _saved(name: str, shapes, bind):
    """What to record of `name`: its value, or only its shape if that is all that is read."""
    if name not in shapes:
        return load(name)
    return gast.Call(load(bind("shape_of", helpers.shape_of)), [load(name)], [])


def _is_break_test(statement) -> bool:
    return isinstance(statement, gast.If) and len(statement.body) == 1 \
        and isinstance(statement.body[0], gast.Break)
