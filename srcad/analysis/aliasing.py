"""aliasing: names that may share memory, and a refusal where in-place updates meet them.

srcad differentiates `y[i] = v` and `x += v` by restoring overwritten values, which is sound
as long as what is written into is not also visible under another name read later: a view
(`row = y[0]`), a second name (`z = y`), a list element. NumPy keeps no record of views, so
this is decided by a points-to analysis over the function: each name may refer to a set of
abstract objects (a parameter, or the value an operation makes), and a name made by a view,
a copy of a name, indexing, a call without a known rule, a tuple or list holding arrays, or
a loop element refers to its sources' objects. `y[i] = v` copies `v` into an array; storing
an array into a list element this way is not tracked. An in-place update is refused, with
an error that names both, when a name that may refer to the updated object at that point
is read afterwards, instead of risking a wrong gradient.
"""
from __future__ import annotations

import operator

import numpy as np

from srcad.errors import UnsoundAliasingError
from srcad.frontend.resolve import Branch, Loop, Operation, walk
from srcad.rules import is_nondifferentiable, vjp_rules

VIEW_FUNCTIONS = {
    operator.getitem, np.reshape, np.ravel, np.transpose, np.ndarray.T, np.squeeze,
    np.expand_dims, np.asarray, np.asanyarray, np.atleast_1d, np.atleast_2d, np.atleast_3d,
    np.swapaxes, np.moveaxis, np.broadcast_to, np.diagonal, np.real, np.imag,
}


class Aliases:
    """Which abstract objects each name may refer to, over the whole function."""

    def __init__(self, points_to: dict):
        self.points_to = points_to

    def group(self, name: str) -> set[str]:
        """Every name that may refer to an object `name` may refer to."""
        objects = self.points_to.get(name, {name})
        return {n for n, pointed in self.points_to.items() if pointed & objects} | {name}


class _PointsTo:
    """Forward analysis; `before[id(op)]` is the state in front of each operation."""

    def __init__(self, return_variable=None):
        self.before: dict[int, dict] = {}
        self.everywhere: dict[str, set] = {}
        self.return_variable = return_variable

    def block(self, nodes, state: dict) -> dict:
        for node in nodes:
            if isinstance(node, Branch):
                state = _join(self.block(node.body, dict(state)),
                              self.block(node.orelse, dict(state)))
            elif isinstance(node, Loop):
                state = self._loop(node, state)
            else:
                self.before[id(node)] = state
                state = dict(state)
                sources = [] if node.targets == (self.return_variable,) else _sources(node)
                for target in node.targets:
                    state[target] = set().union(*(state.get(s, {s}) for s in sources)) \
                        if sources else {f"{target}@{id(node)}"}
                    self._note(target, state[target])
        return state

    def _loop(self, node: Loop, state: dict) -> dict:
        header = dict(state)
        while True:
            inside = dict(header)
            if node.element:
                inside[node.element] = set(header.get(node.iterable, {node.iterable}))
                self._note(node.element, inside[node.element])
            joined = _join(header, self.block(node.body, inside))
            if joined == header:
                return header
            header = joined

    def _note(self, name, objects):
        self.everywhere.setdefault(name, set()).update(objects)


def _join(a: dict, b: dict) -> dict:
    return {name: a.get(name, set()) | b.get(name, set()) for name in set(a) | set(b)}


def _sources(op: Operation) -> list[str]:
    """Names whose memory the operation's result may share."""
    names = [a.id for a in op.args if hasattr(a, "id")]
    if op.augmented:  # `x += v`: the result is the object `x` was, not `v`
        return [op.augmented] + (names if op.kind == "copy" else [])
    if op.kind in ("copy", "pack", "unpack"):
        return names
    if op.kind == "call" and _may_return_a_view(op.callee):
        return names
    return []


def _may_return_a_view(callee) -> bool:
    try:
        if callee in VIEW_FUNCTIONS:
            return True
    except TypeError:
        return True
    if isinstance(callee, np.ufunc) or is_nondifferentiable(callee):
        return False
    return vjp_rules(callee) is None


def check_in_place_updates(block: list, output: str, params, versions: dict, parsed,
                           return_variable=None) -> Aliases:
    """Refuse an in-place update of memory that another name, read later, also shows, and
    return what may share memory with what (to decide which in-place updates to undo).

    `versions` maps SSA versions to the user's names: `x_1` and `x` are one variable.
    `return_variable` holds the value of a lowered `return`: once it is assigned no user
    statement runs, so it never sees a later update."""
    analysis = _PointsTo(return_variable)
    start = {name: {name} for name in params}
    for name, objects in start.items():
        analysis._note(name, objects)
    analysis.block(block, start)
    later = {}
    _live(block, {output}, later)
    for node in walk(block):
        if not isinstance(node, Operation):
            continue
        written = node.mutates if node.kind in ("setitem", "append") else node.augmented
        if written is None:
            continue
        state = analysis.before[id(node)]
        objects = state.get(written, {written})
        variable = versions.get(written, written)
        shared = sorted(n for n in later[id(node)] if versions.get(n, n) != variable
                        and state.get(n, {n}) & objects)
        if shared:
            raise UnsoundAliasingError(
                f"srcad cannot differentiate this in-place update soundly: `{written}` may "
                f"share memory with `{shared[0]}`, which is read after the update "
                f"(in {parsed.name}).",
                parsed.location(node.statement),
                f"make a new array before writing into it (`{written} = {written}.copy()`), "
                f"or write `{written} = {written} + ...` instead of an in-place update.")
    return Aliases(analysis.everywhere)


def _live(block, live_out: set, later: dict) -> set:
    """Liveness: record, for each operation, the names that may be read after it before
    being assigned again; return the names live at the start of `block`."""
    live = set(live_out)
    for node in reversed(block):
        if isinstance(node, Branch):
            live = _live(node.body, live, later) | _live(node.orelse, live, later) \
                | {node.condition}
        elif isinstance(node, Loop):
            header = live | ({node.iterable} if node.iterable else set())
            while True:
                inside = _live(node.body, header, later) - {node.element}
                if inside <= header:
                    break
                header |= inside
            live = header
        else:
            later[id(node)] = set(live)
            live = (live - set(node.targets)) | set(node.read_names())
    return live
