"""activity: which variables need adjoints.

A variable is *varied* if it depends differentiably on an argument in `wrt`, and *useful*
if the output depends differentiably on it; it is *active* if both. Only active variables
get adjoint code, and only calls with an active argument need a derivative rule, so
`np.zeros(n)` or a call on constants never asks for one.

The analysis is by name over the structured simple form: a branch contributes both of its
blocks, a loop body is repeated until nothing changes (values flow around the loop), and the
element of a `for` loop depends on its iterable. Conditions carry no derivative.

Usefulness of tuples, lists and dicts built in the function is tracked per element where
they are only unpacked: in `return loss, {"norm": n}` with `has_aux`, the aux dict is not
useful, so `n` gets no adjoint even though it sits in the same tuple as `loss`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import gast

from srcad.compiler.frontend.resolve import Branch, Loop, Operation, operations
from srcad.compiler.frontend.trees import walk
from srcad.ops import is_nondifferentiable

DIFFERENTIABLE_KINDS = {"call", "copy", "pack", "unpack", "setitem", "append", "insert", "pop"}


@dataclass(frozen=True)
class Activity:
    active: frozenset          # names that need adjoints
    partial: dict              # packed name → keys of its only useful elements
    varied: frozenset          # names that depend on `wrt` (needed or not)
    scalars: frozenset = frozenset()  # names surely holding numbers (analysis/scalars.py)
    elements: dict = field(default_factory=dict)  # float64 array parameter → rank, whose
    # elements are numbers (analysis/scalars.py: element_sources)
    shapes: dict = field(default_factory=dict)  # name → its shape class (analysis/shapes.py)

    def element_useful(self, name: str, key) -> bool:
        return name not in self.partial or _key(key) in self.partial[name]


def carries_derivative(op: Operation) -> bool:
    """Whether derivatives can flow from the operation's arguments to its targets."""
    return op.kind in DIFFERENTIABLE_KINDS and not (
        op.kind == "call" and is_nondifferentiable(op.callee))


def analyze_activity(block: list, wrt: set[str], output: str) -> Activity:
    # (the ids of the operations derivatives flow through, asked once: each sweep meets
    # every operation, and the callee's lookup in the rules was a fifth of the analysis)
    carrying = {id(op) for op in operations(block) if carries_derivative(op)}
    varied = set(wrt)
    _until_stable(lambda: _forward(block, varied, carrying), varied)
    useful, partial, taken = {output}, {}, set()
    _until_stable(lambda: _backward(block, useful, partial, taken, carrying), useful, partial)
    partial = {name: keys for name, keys in partial.items() if name not in useful}
    return Activity(frozenset(varied & (useful | set(partial))), partial, frozenset(varied))


def _until_stable(step, *collections):
    """Repeat `step` until the sets (and dicts of sets) it grows stop growing."""
    while True:
        before = _size(collections)
        step()
        if _size(collections) == before:
            return


def _size(collections) -> int:
    return sum(len(c) if isinstance(c, set) else sum(len(v) + 1 for v in c.values())
               for c in collections)


def _forward(block, varied, carrying: set):
    for node in block:
        if isinstance(node, Branch):
            _forward(node.body, varied, carrying)
            _forward(node.orelse, varied, carrying)
        elif isinstance(node, Loop):
            if node.iterable in varied:
                varied.add(node.element)
            _until_stable(lambda n=node: _forward(n.body, varied, carrying), varied)
        elif id(node) in carrying and not node.unrecorded \
                and not _varies_already(node, varied) \
                and not varied.isdisjoint(node.read_names()):
            varied.update(node.targets)
            if node.mutates:
                varied.add(node.mutates)


def _varies_already(op: Operation, varied: set) -> bool:
    """Whether every name `op` binds or writes into varies already: what it reads cannot
    add to `varied` (the sweeps after the first skip most operations so)."""
    return varied.issuperset(op.targets) and (not op.mutates or op.mutates in varied)


def _backward(block, useful, partial, taken: set, carrying: set):
    """One sweep back through `block`, growing `useful` and `partial`; `taken` holds the ids
    of the operations whose reads are all useful already, which no later sweep reads again;
    `carrying` those of the operations that carry derivatives."""
    for node in reversed(block):
        if isinstance(node, Branch):
            _backward(node.body, useful, partial, taken, carrying)
            _backward(node.orelse, useful, partial, taken, carrying)
        elif isinstance(node, Loop):
            _until_stable(lambda n=node: _backward(n.body, useful, partial, taken, carrying),
                          useful, partial)
            if node.element in useful or node.element in partial:  # (`k, v = element`)
                useful.add(node.iterable)
        elif id(node) not in carrying:
            continue
        elif node.kind == "unpack":  # (an item itself partly useful is needed: `y, z = a`)
            keys = {i for i, target in enumerate(node.targets)
                    if target in useful or target in partial}
            if keys:
                partial.setdefault(node.args[0].id, set()).update(keys)
        elif node.kind == "pack" and node.targets[0] not in useful \
                and node.targets[0] in partial:
            for key, element in zip(node.keys, node.args):
                if _key(key) in partial[node.targets[0]]:
                    useful.update(_names(element))
        elif id(node) not in taken and not node.unrecorded and (
                not useful.isdisjoint(node.targets) or node.mutates in useful
                or node.mutates in partial or not partial.keys().isdisjoint(node.targets)):
            # a call or copy whose result is only partly useful still needs all its inputs
            useful.update(node.read_names())
            taken.add(id(node))


def _key(node):
    return node.value if isinstance(node, gast.Constant) else ("node", id(node))


def _names(node):
    return [n.id for n in walk(node) if isinstance(n, gast.Name)]
