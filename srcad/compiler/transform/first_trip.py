"""first_trip: the adjoints the backward sweep's last trip of a loop computes for nothing.

A loop's backward sweep runs its trips in reverse, so its last trip is the forward sweep's
first. There, a loop-carried value read by the step came from before the loop, and where
that value needs no adjoint (the input batch of `for W, b in params: h = np.tanh(h @ W +
b)`, an RNN's zero state), the adjoint the step computes for it is read by nothing: not by
a later statement of the trip, not after the loop. Activity is per name, for every trip
alike; this pass is the first trip's own: such an assignment runs only while trips remain
(`if step: b_h = matmul_vjp_a(...)`), which saves a product of the batch's size per call.

Takes the backward sweep's statements (gast, after settle and release); returns them with
the top-level loops guarded so. Only assignments to a name of values made by srcad's rules
and helpers or by NumPy are guarded: the helpers that add or multiply into their first
argument (`add_into`, `multiply_into`) write only into an adjoint the sweep owns, which the
skipped assignment's own target is the last name of (reuse.py), so skipping one changes
nothing else.
"""
from __future__ import annotations

import builtins

import gast

from srcad.compiler.frontend.trees import name_nodes, walk
from srcad.compiler.transform.adjoints import load


def skip_first_trip_adjoints(body: list, returned: set, bindings, namer, local: set) -> list:
    """`body` with each top-level loop's last-trip-dead assignments guarded; `returned`:
    the names read after `body`; `local`: the names the generated function binds (a call
    of a method of one, `stack.pop()`, has an effect)."""
    for position, statement in enumerate(body):
        if not _replayed(statement, bindings):
            continue
        read_after = _names_read(body[position + 1:]) | returned
        dead = _dead_in_last_trip(statement.body, read_after, bindings, local)
        if dead:
            _guard(statement, dead, namer)
    return body


def _replayed(statement, bindings) -> bool:
    """A backward loop as settle makes it: `for i in range(trips - 1, -1, -1)` or
    `for _ in range(trips)`."""
    if not (isinstance(statement, gast.For) and isinstance(statement.target, gast.Name)
            and isinstance(statement.iter, gast.Call) and not statement.orelse
            and isinstance(statement.iter.func, gast.Name)
            and bindings.named(statement.iter.func.id) is builtins.range):
        return False
    arguments = statement.iter.args
    return len(arguments) == 1 or len(arguments) == 3 and all(
        isinstance(a, gast.Constant) and a.value == -1 for a in arguments[1:])


def _dead_in_last_trip(statements: list, read_after: set, bindings, local: set) -> set:
    """The ids of the top-level assignments whose name nothing reads or deletes later in
    the trip or after the loop, and whose value has no effect and costs more than a name
    (one pass from the end: what the statements after each one read, gathered as it goes)."""
    dead, read_later = set(), set(read_after)
    for statement in reversed(statements):
        if isinstance(statement, gast.Assign) and len(statement.targets) == 1 \
                and isinstance(statement.targets[0], gast.Name) \
                and statement.targets[0].id not in read_later \
                and not isinstance(statement.value, (gast.Name, gast.Constant)) \
                and _no_effect(statement.value, bindings, local):
            dead.add(id(statement))
        read_later |= _names_read([statement])
    return dead


def _names_read(statements) -> set:
    """Names loaded or deleted in `statements` (a `del` of a name never bound would raise)."""
    return {node.id for node in name_nodes(statements)
            if not isinstance(node.ctx, (gast.Store, gast.Param))}


def _no_effect(value, bindings, local: set) -> bool:
    for node in walk(value):
        if isinstance(node, gast.Call):
            function = node.func
            while isinstance(function, gast.Attribute):
                function = function.value
            if not isinstance(function, gast.Name) or function.id in local or (
                    function is node.func and bindings.named(function.id) is None):
                return False
        elif isinstance(node, (gast.NamedExpr, gast.Lambda, gast.Yield, gast.Await)):
            return False
    return True


def _guard(loop: gast.For, dead: set, namer) -> None:
    """Run the `dead` assignments only while trips remain: the loop counts down to 0."""
    arguments = loop.iter.args
    if len(arguments) == 1:  # `for _ in range(trips)`: counted down instead
        step = namer.claim("remaining")
        loop.target = gast.Name(step, gast.Store(), None, None)
        loop.iter = gast.Call(loop.iter.func, [
            gast.BinOp(arguments[0], gast.Sub(), gast.Constant(1, None)),
            gast.Constant(-1, None), gast.Constant(-1, None)], [])
    step = loop.target.id
    loop.body = [gast.If(load(step), [statement], []) if id(statement) in dead else statement
                 for statement in loop.body]
