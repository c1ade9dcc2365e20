"""tbr (to be recorded): which overwritten values the forward sweep must push.

The backward sweep reads primal variables by name, and before each statement's adjoint
every variable holds the value it had at that statement: an assignment that overwrites a
value pushes the old value, and the backward sweep pops it back right after the adjoint of
that assignment. This module finds the assignments that may overwrite a value (the name
may already be bound there: a parameter, a second assignment, any assignment in a loop)
with a forward "possibly bound" analysis; reverse.py then keeps only those whose value the
backward sweep actually reads. A name assigned once outside loops (most of the simple
form, thanks to its SSA renaming) is never pushed.

Where a name may be unbound at such an assignment (the first iteration of a loop), the
forward sweep binds it to None first, so pushing the "old value" is always legal.
"""
from __future__ import annotations

import operator
from collections import Counter
from dataclasses import dataclass, replace

import gast

from srcad.compiler.analysis.scalars import makes_a_number
from srcad.compiler.frontend.resolve import Branch, Loop, Operation, operations, walk
from srcad.ops.registry import is_pure


@dataclass(frozen=True)
class Sites:
    overwrites: frozenset     # (id(site), name): this assignment may overwrite a value
    maybe_unbound: frozenset  # names that may be unbound at one of their overwrites
    elements: frozenset       # names of `for` loop elements (rebound every iteration)


def assignment_sites(block: list, params, numbers: frozenset = frozenset(),
                     elements: dict | None = None) -> Sites:
    """The sites of `block`; an assignment in a loop that makes the same number in every
    iteration overwrites nothing the backward sweep needs (see `_invariant_sites`;
    `elements` as for analysis/scalars.py's `makes_a_number`, of differentiated arrays:
    writes into those are refused or rewritten before, where an argument that is not
    differentiated may be written by any call it is passed to)."""
    analysis = _Binding()
    analysis.block(block, {*params}, {*params})
    sites = Sites(frozenset(analysis.overwrites), frozenset(analysis.maybe_unbound),
                  frozenset(analysis.elements))
    invariant = _invariant_sites(block, numbers, params, elements)
    return replace(sites, overwrites=sites.overwrites - invariant) if invariant else sites


def _invariant_sites(block: list, numbers: frozenset, params, elements: dict | None) -> set:
    """(id(site), name) of the assignments in loops that compute a number from numbers and
    constants no enclosing loop changes (`neg_1 = -k` of `a = -k * x` in an ODE step),
    where the name is no parameter and has no other binding: every iteration binds it to
    the same value, so the value it overwrites is that value again (or nothing, before the
    first), and the backward sweep, which never reads it before the loop, needs no copy of
    it (an ODE's 200 steps pushed and popped 200 copies of -k)."""
    if not numbers:
        return set()
    stores = Counter(t for op in operations(block) for t in op.targets)
    stores.update(node.element for node in walk(block) if isinstance(node, Loop))
    stores.update({name: 2 for name in params})  # (bound before any loop: never invariant)
    found = set()

    def visit(nodes, varying: frozenset):
        for node in nodes:
            if isinstance(node, Branch):
                visit(node.body, varying)
                visit(node.orelse, varying)
            elif isinstance(node, Loop):
                inner = varying | _changed_in(node)
                read_here = None if _may_write_arguments(node, params) else elements
                found.update((id(op), op.targets[0]) for op in node.body
                             if isinstance(op, Operation) and len(op.targets) == 1
                             and stores[op.targets[0]] == 1 and op.targets[0] in numbers
                             and makes_a_number(op, numbers, read_here)
                             and not inner.intersection(op.read_names()))
                visit(node.body, inner)

    visit(block, frozenset())
    return found


def _may_write_arguments(loop: Loop, params) -> bool:
    """Whether the loop may write into an argument's memory (an element of an argument
    array is then no invariant): it writes into a parameter, or passes one to a call that
    may have an effect (`np.copyto`, a helper). Any parameter: two may be one array."""
    for node in walk(loop.body):
        if isinstance(node, Operation):
            if node.mutates in params:
                return True
            if node.kind == "call" and node.callee is not operator.getitem \
                    and not is_pure(node.callee) and any(
                        isinstance(a, gast.Name) and a.id in params for a in node.args):
                return True
    return False


def _changed_in(loop: Loop) -> frozenset:
    """The names a loop binds or writes into, its element included."""
    changed = {loop.element} if loop.element else set()
    for node in walk(loop.body):
        if isinstance(node, Loop) and node.element:
            changed.add(node.element)
        elif isinstance(node, Operation):
            changed.update(node.targets)
            if node.mutates:
                changed.add(node.mutates)
    return frozenset(changed)


class _Binding:
    def __init__(self):
        self.overwrites = set()
        self.maybe_unbound = set()
        self.elements = set()

    def block(self, nodes, possibly: set, surely: set):
        """Walk `nodes` updating the names possibly and surely bound after each."""
        for node in nodes:
            if isinstance(node, Branch):
                p1, s1 = self.block(node.body, set(possibly), set(surely))
                p2, s2 = self.block(node.orelse, set(possibly), set(surely))
                possibly, surely = p1 | p2, s1 & s2
            elif isinstance(node, Loop):
                self.elements.update([node.element] if node.element else [])
                header = set(possibly) | ({node.element} if node.element else set())
                while True:
                    inside_surely = set(surely) | ({node.element} if node.element else set())
                    end, _ = self.block(node.body, set(header), inside_surely)
                    if end <= header:
                        break
                    header |= end
                possibly = header
            else:
                for target in node.targets:
                    if target in possibly:
                        self.overwrites.add((id(node), target))
                        if target not in surely:
                            self.maybe_unbound.add(target)
                    possibly.add(target)
                    surely.add(target)
        return possibly, surely
