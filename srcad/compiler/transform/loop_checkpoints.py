"""loop_checkpoints: a loop marked `srcad.checkpointed` is recorded one segment at a time.

A loop's forward sweep records what its backward sweep reads, for every trip: for a
10,000-step RNN, 10,000 states. Marked, `for t in srcad.checkpointed(range(T)):`, the
loop's forward sweep runs plainly in segments (about sqrt(T) trips each), keeping before
each segment only the state the loop reads from earlier trips and earlier code
(kernels/loop_checkpoints.py); the backward sweep takes the segments last first, puts the
segment's state back, runs the segment's forward sweep again, recording, and then the
loop's own backward sweep over it. The tape holds one segment at a time; each trip runs
twice forward.

    forward sweep                          backward sweep
    for t in xs: <recording body>          trips = stack.pop()
    stack.append(len(xs))                  for _ in range(trips): <adjoint body>
                 ─▶
    saved = LoopCheckpoints(xs, ...)       saved = stack.pop()
    for segment in saved.segments:         for segment, kept in saved.in_reverse():
        saved.keep((h, u), (1,))               h, u = kept
        for t in segment: <body>               for t in segment: <recording body>
    saved.finish((h, u))                       stack.append(len(segment))
    stack.append(saved)                        saved.check((h, u))
                                               trips = stack.pop()
                                               for _ in range(trips): <adjoint body>

The state kept is what the recording body reads before it binds it, of the names that
change (bound more than once, bound in a loop, or written into): the rest holds the same
value whenever the segment runs again. Arrays, lists and dicts the function writes into are
kept as copies of what they hold; an array inside a list or dict read later is never
written into (analysis/aliasing.py refuses it), so a shallow copy is all there is to put
back. The backward sweep binds the loop's names in the
forward sweep's frame (its `nonlocal`s), as restores do.

Takes the resolved block and the sweeps as reverse.py has them after settle and record;
returns them rewritten.
"""
from __future__ import annotations

import builtins
from dataclasses import dataclass

import gast

from srcad.compiler.analysis.aliasing import written_into
from srcad.compiler.frontend.resolve import (Branch, Loop, Operation, operations, own_names,
                                             walk)
from srcad.compiler.frontend.scopes import scope_names
from srcad.compiler.transform.adjoints import assign, load, store
from srcad.compiler.transform.recording import (Tape, is_push, ranges_bound_once, record,
                                                 record_loop)
from srcad.errors import UnsupportedDerivativeError
from srcad.kernels.loop_checkpoints import LoopCheckpoints
from srcad.ops.registry import is_control
from srcad.runtime.methods import method_update
from srcad.runtime.control import checkpointed


@dataclass
class Sweep:
    """What reverse.py made of the function that the rewrite reads."""

    block: list
    recorded: set
    trips: dict
    tape: Tape
    shapes: frozenset
    bindings: object
    namer: object
    activity: object
    aliases: object
    parsed: object

    def __post_init__(self):
        self.ranges = ranges_bound_once(self.block)


class FrameNames:
    """What reverse.py needs to know of the rewrite: the names the backward sweep now binds
    in the forward sweep's frame, and those to bind to None first (they may be unbound
    when a segment's state is kept)."""

    def __init__(self):
        self.rebound: set = set()
        self.unbound_first: set = set()
        self.rewritten = False  # (the backward sweep then reads what settling saw it not read)


def checkpoint_loops(forward: list, backward: list, sweep: Sweep, params,
                     maybe_unbound) -> FrameNames:
    """Rewrite, in place, `forward` and `backward` for each marked loop the backward sweep
    replays."""
    block = sweep.block
    made = FrameNames()
    marked = [node for node in walk(block) if isinstance(node, Loop)
              and id(node) in sweep.trips and _mark_of(node, block) is not None]
    if not marked:
        return made
    own = own_names(block, params)
    changing = _changing(block, params) | _written_own(sweep, own)
    for loop in marked:
        _rewrite(loop, forward, backward, sweep, changing, made)
    made.rewritten = True
    local = {*params} | scope_names(forward, gast.Store)
    made.rebound &= local
    made.unbound_first &= set(maybe_unbound)
    return made


def _mark_of(loop: Loop, block: list):
    return next((op for op in operations(block) if op.targets == (loop.iterable,)
                 and op.kind == "call" and op.callee is checkpointed), None)


def refuse_unsupported_marks(block: list, activity, parsed, params, aliases) -> None:
    """Refuse, where it is marked, a loop the backward sweep could not run again soundly
    (before the adjoint is made: a marked iterable carrying a derivative has no rule)."""
    loops = [node for node in walk(block) if isinstance(node, Loop)
             and _mark_of(node, block) is not None]
    ids = set(map(id, loops))
    writes_objects = any(op.writes_attribute or op.callee is method_update
                         for op in operations(block))
    own = own_names(block, params)
    for loop in loops:
        reason = None
        foreign = sorted(name for op, name in ((op, written_into(op))
                                               for op in operations(loop.body))
                         if name is not None and (name not in own or id(op) not in (
                             aliases.own_writes) and aliases.points_to.get(
                             name, {name}) & set(params)))
        effects = [op for op in operations(loop.body) if op.kind == "effect"
                   and not is_control(op.callee)
                   or op.callee is builtins.next]  # (an iterator is state srcad keeps not)
        if loop.iterable in activity.active:
            reason = "it loops over values that carry a derivative"
        elif effects:
            where = parsed.location(effects[0].statement)
            reason = (f"`{where.line.strip() if where else 'a call'}` runs for its effect "
                      "(or advances an iterator), which a segment run again would repeat")
        elif any(op.kind == "jump" for op in _own_operations(loop.body)):
            reason = "its body leaves it early (`break` or `return`)"
        elif foreign:
            reason = (f"it writes into `{foreign[0]}`, which may be the caller's (an argument, "
                      "a global): a segment run again would write into it again")
        elif any(isinstance(node, Loop) and id(node) in ids for node in walk(loop.body)):
            reason = "a loop inside it is marked too"
        elif writes_objects:
            reason = "the function writes into objects' attributes"
        if reason:
            raise UnsupportedDerivativeError(
                f"srcad cannot checkpoint this loop: {reason}.", parsed.location(loop.statement),
                "remove the `srcad.checkpointed` mark, or checkpoint a helper the loop calls "
                "with `srcad.checkpoint`.")


def _own_operations(body: list):
    """The operations of a loop's body, but for those of the loops inside it."""
    for node in body:
        if isinstance(node, Operation):
            yield node
        elif isinstance(node, Branch):
            yield from _own_operations(node.body)
            yield from _own_operations(node.orelse)


def _changing(block: list, params) -> set:
    """The names bound more than once (a parameter counts as bound), or in a loop (its
    element too)."""
    seen, changing = set(params), set()
    for node in walk(block):
        if isinstance(node, Loop):
            changing.update(t for op in operations(node.body) for t in op.targets)
            changing.add(node.element)
        for name in node.targets if isinstance(node, Operation) else ():
            (changing if name in seen else seen).add(name)
    return changing


def _rewrite(loop: Loop, forward: list, backward: list, sweep, changing: set,
             made: FrameNames) -> None:
    """`changing`: the function's names whose value may differ when a segment runs again
    (rebound, or showing memory the function writes into)."""
    namer, tape, bind = sweep.namer, sweep.tape, sweep.bindings.name_for
    saved, segment, kept = (namer.claim(n) for n in ("checkpoints", "segment", "kept"))
    again = record_loop(loop, sweep.recorded, sweep.trips, tape, bind, sweep.shapes,
                        sweep.ranges, over=segment)
    written = {written_into(op) for op in operations(sweep.block)} - {None}
    # A name bound in the loop alone and read before it is bound only by the recording of
    # its old value needs no keeping: the backward sweep pops that value back into it for
    # nothing (the segment run next binds it before reading it; code before the loop
    # never read it).
    stacks = set(tape.names)
    read = _exposed(again, skip=lambda statement: is_push(statement, stacks))
    state = sorted(_exposed(again) & changing & (read | _bound_outside(loop, sweep.block)))
    copied = [k for k, name in enumerate(state) if _shares(name, written, sweep.aliases)]
    values = gast.Tuple([load(n) for n in state], gast.Load())
    maker = load(bind("LoopCheckpoints", LoopCheckpoints))
    where = f"{sweep.parsed.filename}:{loop.statement.lineno}"
    plain = gast.For(store(loop.element), load(segment),
                     record(loop.body, set(), {}, tape, bind, sweep.shapes, sweep.ranges)
                     or [gast.Pass()], [], None)
    keep = _method(saved, "keep", [values, gast.Tuple(
        [gast.Constant(k, None) for k in copied], gast.Load())])
    _replace(forward, lambda s: getattr(s, "recorded_loop", None) is loop, [
        assign(saved, gast.Call(maker, [load(loop.iterable), gast.Constant(where, None)], [])),
        gast.For(store(segment), gast.Attribute(load(saved), "segments", gast.Load()),
                 [keep, plain], [], None),
        _method(saved, "finish", [values]),
        tape.push(saved, load(saved))])
    unpacked = [gast.Assign([gast.Tuple([store(n) for n in state], gast.Store())],
                            load(kept), None)] if state else []
    replayed = [s for s in _statements(backward)
                if getattr(s, "replayed_loop", None) is loop]
    rerun = [*unpacked, *again, _method(saved, "check", [values]), *replayed]
    _replace(backward, lambda s: getattr(s, "replayed_loop", None) is loop, [
        assign(saved, tape.pop(saved)),
        gast.For(gast.Tuple([store(segment), store(kept)], gast.Store()),
                 gast.Call(gast.Attribute(load(saved), "in_reverse", gast.Load()), [], []),
                 rerun, [], None)])
    made.rebound |= set(state) | scope_names(again, gast.Store)
    made.unbound_first |= set(state)


def _bound_outside(loop: Loop, block: list) -> set:
    inside = {id(node) for node in walk(loop.body)}
    return {t for op in operations(block) if id(op) not in inside for t in op.targets}


def _written_own(sweep, own: set) -> set:
    """The function's own names that may show memory it writes into."""
    written = {written_into(op) for op in operations(sweep.block)} - {None}
    return {name for name in own if _shares(name, written, sweep.aliases)}


def _shares(name: str, written: set, aliases) -> bool:
    """Whether `name` may show memory the function writes into."""
    objects = aliases.points_to.get(name, {name})
    return any(objects & aliases.points_to.get(w, {w}) for w in written)


def _method(owner: str, name: str, args: list):
    return gast.Expr(gast.Call(gast.Attribute(load(owner), name, gast.Load()), args, []))


def _statements(statements: list):
    """Every statement of `statements`, nested ones included."""
    for statement in statements:
        yield statement
        for field in ("body", "orelse", "finalbody"):
            yield from _statements(getattr(statement, field, None) or [])
        for handler in getattr(statement, "handlers", None) or []:
            yield from _statements(handler.body)


def _replace(statements: list, belongs, replacement: list) -> bool:
    """Replace the run of statements that `belongs` (found at any depth) by `replacement`."""
    positions = [k for k, s in enumerate(statements) if belongs(s)]
    if positions:
        statements[positions[0]:positions[-1] + 1] = replacement
        return True
    for statement in statements:
        lists = [getattr(statement, f, None) or [] for f in ("body", "orelse", "finalbody")]
        lists += [h.body for h in getattr(statement, "handlers", None) or []]
        if any(_replace(inner, belongs, replacement) for inner in lists):
            return True
    return False


def _exposed(statements: list, bound: frozenset = frozenset(), skip=None) -> set:
    """The names `statements` may read before binding them, run from the top with `bound`
    bound; a loop's body counts as run any number of times; statements that `skip` are
    left out."""
    exposed, bound = set(), set(bound)
    for statement in statements:
        if skip is not None and skip(statement):
            continue
        if isinstance(statement, gast.If):
            exposed |= _reads(statement.test) - bound
            exposed |= _exposed(statement.body, frozenset(bound), skip)
            exposed |= _exposed(statement.orelse, frozenset(bound), skip)
            bound |= _surely_bound(statement.body) & _surely_bound(statement.orelse)
        elif isinstance(statement, (gast.For, gast.While)):
            head = statement.iter if isinstance(statement, gast.For) else statement.test
            exposed |= _reads(head) - bound
            inner = bound | (scope_names(statement.target, gast.Store)
                             if isinstance(statement, gast.For) else set())
            exposed |= _exposed(statement.body, frozenset(inner), skip)
            exposed |= _exposed(statement.orelse, frozenset(bound), skip)
        else:
            exposed |= _reads(statement) - bound
            bound |= scope_names(statement, gast.Store)
            bound -= scope_names(statement, gast.Del)
    return exposed


def _surely_bound(statements: list) -> set:
    return scope_names([s for s in statements
                        if not isinstance(s, (gast.If, gast.For, gast.While))], gast.Store)


def _reads(node) -> set:
    return scope_names(node, gast.Load) | scope_names(node, gast.Del)
