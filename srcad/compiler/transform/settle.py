"""settle: which restores the backward sweep keeps, and so what the forward sweep records.

The backward sweep is first built with a placeholder wherever a value could be popped back
(`Restore`, `RestoreRegion`) and a loop could be replayed (`ReplayLoop`). Settling keeps a
restore only if the backward sweep reads the value (for an in-place update, a name that may
share its memory, after the restore: an element write is undone only for a later read, and
not for a read of the dtype, which it keeps), drops the branches and loops left without
work, and repeats until nothing changes; what survives is exactly what the forward sweep
must push.
"""
from __future__ import annotations

import builtins
from dataclasses import dataclass

import gast

from srcad.compiler.frontend.resolve import IN_PLACE_KINDS, Loop, Operation, operations
from srcad.compiler.transform.adjoints import assign, load
from srcad.compiler.transform.optimize import names_read, read_among
from srcad.compiler.transform.recording import REGION, Tape, region_key
from srcad.compiler.transform.statement_names import StatementNames
from srcad.kernels import regions


@dataclass
class Restore:
    """Placeholder: `name = stack.pop()`, kept if the forward sweep records `name` there."""

    site: object
    name: str


@dataclass
class RestoreRegion:
    """Placeholder: `y[index] = stack.pop()` for the element assignment `site` (`xs.pop()`
    for an append), kept if the backward sweep reads `y` or a name sharing its memory."""

    site: Operation


@dataclass
class ReplayLoop:
    """Placeholder for a loop of the backward sweep, kept if its body does any work."""

    loop: Loop
    trips: str
    index: str | None
    body: list


# ---- settling what is recorded -------------------------------------------------------------
def settle(raw: list, block: list, sites, aliases, tape: Tape, bind):
    """Drop the restores whose value the backward sweep never reads, then the branches and
    loops left without work, until nothing changes. Returns the backward statements, the
    recorded (site, name) pairs, the replayed loops' counters, the recorded names the
    backward sweep reads only the shape of (the forward sweep records just their shape),
    what the statements read (`names_read`'s pair: found here, not by a walk again) and
    the names in each statement (for the passes after, which ask again).
    `bind(name, obj)`: the name the backward sweep calls `obj` (`range`, a helper) by."""
    pushed = {name for _, name in sites.overwrites} | sites.elements
    updates = {id(op): op for op in operations(block) if op.kind in IN_PLACE_KINDS}
    known = StatementNames()  # (the statements other than placeholders stay from round to round)
    while True:
        finisher = _Finisher(pushed, sites.overwrites, set(updates), tape, bind)
        statements = finisher.block(raw)
        values, shapes = read_among(known.among(statements))
        later = _read_after(statements, finisher.region_restores, frozenset()) \
            if finisher.region_restores else {}
        still = {name for name in pushed if name in values or name in shapes}
        kept = {key: op for key, op in updates.items()
                if _read_later(op, later.get(finisher.region_restores.get(key)), aliases)}
        if still == pushed and kept.keys() == updates.keys():
            return (statements, finisher.recorded, finisher.trips, still - values,
                    (values, shapes), known)
        pushed, updates = still, kept


def _read_after(statements: list, restores: dict, after: frozenset) -> dict:
    """id(restore) → the names the backward sweep reads after that region restore (in a
    loop, anywhere in it too: the next trip reads them after it), other restores and reads
    of a dtype aside."""
    skipped = frozenset(restores.values())
    found = {}
    later = set(after)
    for statement in reversed(statements):
        read = set().union(*names_read([statement], skipped, dtypes=False))
        if id(statement) in skipped:
            found[id(statement)] = frozenset(later)
        elif isinstance(statement, gast.If):
            found.update(_read_after(statement.body, restores, frozenset(later)))
            found.update(_read_after(statement.orelse, restores, frozenset(later)))
        elif hasattr(statement, "body"):  # (a loop's next trip comes after: all it reads)
            found.update(_read_after(statement.body, restores, frozenset(later | read)))
        later |= read
    return found


def _read_later(op, names, aliases) -> bool:
    """Whether the update `op` must be undone: it writes memory the caller may hold (which
    the call leaves as it found it), or a name that may share its memory is read after its
    restore (`names`; None where that is not known: a restore `_read_after` did not reach,
    or none, which keeps the update)."""
    return names is None or aliases.may_be_the_callers(op.mutates) \
        or bool(aliases.group(op.mutates) & names)


class _Finisher:
    def __init__(self, pushed, overwrites, regions, tape: Tape, bind):
        self.pushed = pushed
        self.overwrites = overwrites
        self.regions = regions
        self.tape = tape
        self.bind = bind
        self.recorded: set = set()
        self.trips: dict = {}
        self.region_restores: dict = {}  # id(update) → id(its restore)

    def block(self, statements) -> list:
        finished = []
        for statement in statements:
            if isinstance(statement, Restore):
                site = (id(statement.site), statement.name)
                element = isinstance(statement.site, Loop)
                if statement.name in self.pushed and (element or site in self.overwrites):
                    self.recorded.add((id(statement.site), statement.name))
                    finished.append(assign(statement.name, self.tape.pop(statement.name)))
            elif isinstance(statement, RestoreRegion):
                if id(statement.site) in self.regions:
                    restore = self._restore_region(statement.site)
                    self.region_restores[id(statement.site)] = id(restore)
                    finished.append(restore)
            elif isinstance(statement, ReplayLoop):
                finished.extend(self._loop(statement))
            elif isinstance(statement, gast.If):
                finished.extend(self._branch(statement))
            else:
                finished.append(statement)
        return finished

    def _restore_region(self, op: Operation):
        """Undo an in-place update: pop the old `y[index]` back, drop the appended or
        inserted item, or put the popped one back."""
        container = op.args[0]
        if op.kind == "append":
            drop = gast.Call(gast.Attribute(container, "pop", gast.Load()), [], [])
            return gast.Expr(drop)
        if op.kind in ("insert", "pop"):
            undo = regions.restore_inserted if op.kind == "insert" else regions.restore_popped
            item = [load(op.targets[0])] if op.kind == "pop" else []
            return gast.Expr(gast.Call(load(self.bind(undo.__name__, undo)),
                                       [container, op.args[1], *item], []))
        self.recorded.add((id(op), REGION))
        if op.writes_attribute:
            restore = self.bind("restore_attribute", regions.restore_attribute)
            return gast.Expr(gast.Call(load(restore), [container, op.args[1],
                                                       self.tape.pop(region_key(op))], []))
        return gast.Assign([gast.Subscript(container, op.args[1], gast.Store())],
                           self.tape.pop(region_key(op)), None)

    def _branch(self, statement):
        body, orelse = self.block(statement.body), self.block(statement.orelse)
        if body:
            return [gast.If(statement.test, body, orelse)]
        if orelse:
            return [gast.If(gast.UnaryOp(gast.Not(), statement.test), orelse, [])]
        return []

    def _loop(self, replay: ReplayLoop):
        body = self.block(replay.body)
        if not body:
            return []
        self.trips[id(replay.loop)] = replay.trips
        if replay.index:
            steps = [gast.BinOp(load(replay.trips), gast.Sub(), gast.Constant(1, None)),
                     gast.Constant(-1, None), gast.Constant(-1, None)]
        else:
            steps = [load(replay.trips)]
        header = gast.Call(load(self.bind("range", builtins.range)), steps, [])
        target = gast.Name(replay.index or "_", gast.Store(), None, None)
        made = [assign(replay.trips, self.tape.pop(replay.trips)),
                gast.For(target, header, body, [], None)]
        for statement in made:  # (transform/loop_checkpoints.py finds a loop's statements)
            statement.replayed_loop = replay.loop
        return made
