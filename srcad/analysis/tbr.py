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

from dataclasses import dataclass

from srcad.frontend.resolve import Branch, Loop


@dataclass(frozen=True)
class Sites:
    overwrites: frozenset     # (id(site), name): this assignment may overwrite a value
    maybe_unbound: frozenset  # names that may be unbound at one of their overwrites
    elements: frozenset       # names of `for` loop elements (rebound every iteration)


def assignment_sites(block: list, params) -> Sites:
    analysis = _Binding()
    analysis.block(block, set(params), set(params))
    return Sites(frozenset(analysis.overwrites), frozenset(analysis.maybe_unbound),
                 frozenset(analysis.elements))


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
