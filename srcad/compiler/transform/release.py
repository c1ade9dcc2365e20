"""release: let go of each value as soon as a sweep is done with it, as a person would.

The simple form names every intermediate value, so without this pass every array of a sweep
stays alive until the sweep returns: the peak memory of a gradient is then the sum of its
intermediates rather than the few a hand-written gradient holds at once (and fresh pages
cost time as well as memory). Input: a sweep's statements. Output: the same statements with
`del a, b` after the top-level statement that last touches `a` and `b` (but the last, after
which the sweep returns and frees them anyway), or `x = shape_of(x)`
there for a value a later reader needs only the shape of (the backward sweep's
`unbroadcast(g, x)` reads the forward sweep's `x` that way).

A name is released only where it is surely bound and nothing reads it again: its first
appearance is a top-level assignment (not of a constant, a `range` or a `len`), and the release follows its last appearance at the
top level (a loop or branch that touches it counts as one statement). Names in `kept` (read
later from outside these statements: returned, captured by the backward sweep or a nested
function, restored from the stack) are never released.

    a = f(x)                 a = f(x)
    b = g(a)         ─▶      b = g(a)
    c = h(b, x)              del a
    return c                 c = h(b, x)
                             del b
                             return c
"""
from __future__ import annotations

import gast

from srcad.compiler.frontend.trees import name_nodes, new_name
from srcad.compiler.transform.adjoints import assign, load
from srcad.compiler.transform.statement_names import StatementNames
from srcad.kernels import adjoints as helpers


def release(statements: list, kept: set, shapes: frozenset = frozenset(), bind=None,
            known=None) -> list:
    """`statements` with releases; `shapes` are the names to keep as `shape_of(name)`
    (`bind(name, obj)` names the helper for generated code); `known`: the names in each
    statement (statement_names.py), where the caller has them."""
    known = StatementNames() if known is None else known
    seen = set()  # (the names mentioned before)
    last: dict[str, int] = {}
    bound = set()  # (the names a statement that first mentions them binds)
    for position, statement in enumerate(statements):
        mentioned, assigned = _names(statement, known)
        if assigned:
            bound |= assigned - seen
        seen |= mentioned
        last.update(dict.fromkeys(mentioned, position))
    after: dict[int, list] = {}
    for name in sorted(bound - set(kept)):
        after.setdefault(last[name], []).append(name)
    released = []
    for position, statement in enumerate(statements):
        released.append(statement)
        names = after.get(position)
        if not names:
            continue
        released += [assign(n, _shape_of(n, bind)) for n in names if n in shapes]
        dropped = [n for n in names if n not in shapes]
        if dropped and position < len(statements) - 1:  # the sweep's end frees them anyway
            released.append(gast.Delete([new_name(n, gast.Del) for n in dropped]))
    return released


def _may_hold_an_array(statement) -> bool:
    """False for `n = 0`, `r = range(k)`, `n = len(xs)`: releasing those frees nothing and
    would only clutter the program (loop counters, the trip counts of recording)."""
    value = getattr(statement, "value", None)
    return not (isinstance(value, gast.Constant) or isinstance(value, gast.Call) and isinstance(
        value.func, gast.Name) and value.func.id in ("range", "len"))


def _names(statement, known) -> tuple[set, set]:
    """The names `statement` mentions, and those it binds whole as a plain assignment that
    may hold an array (not elements), from one search for names (the targets searched again
    only where one is more than a name)."""
    mentioned = {name.id for name in known.of(statement)}
    if not isinstance(statement, gast.Assign) or not _may_hold_an_array(statement):
        return mentioned, set()
    targets = statement.targets
    if any(type(target) is not gast.Name for target in targets):
        targets = name_nodes(targets)
    return mentioned, {n.id for n in targets if isinstance(n.ctx, gast.Store)}


def _shape_of(name: str, bind):
    value = load(name)
    value.shape_only = True  # (what outline.py looks for)
    return gast.Call(load(bind("shape_of", helpers.shape_of)), [value], [])
