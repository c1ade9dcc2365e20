"""trees: copying and walking gast trees, on the path of every first call.

Every rule inlined into an adjoint starts from a fresh copy of its template, and every pass
walks the trees. `copy.deepcopy` is general (a memo of every object, the pickle protocol)
and made up a quarter of a transformation, and `ast.walk` goes through a generator per node;
a gast tree needs neither: nodes, lists of nodes, and immutable leaves (strings, numbers,
None), visited through each node's `_fields`.
"""
from __future__ import annotations

from collections import Counter, deque

import gast

def clone(node):
    """A deep copy of a gast node (or list of nodes), with every attribute it carries."""
    if type(node) is list:
        return [clone(item) for item in node]
    if not isinstance(node, gast.AST):
        return node
    kind = type(node)
    copied = kind.__new__(kind)
    copied.__dict__.update({key: clone(value) if type(value) is list
                            or isinstance(value, gast.AST) else value
                            for key, value in node.__dict__.items()})
    return copied


def walk(node):
    """Every node of the tree under `node`, in `ast.walk`'s order (breadth first)."""
    todo = deque([node])
    while todo:
        node = todo.popleft()
        for field in node._fields:
            value = getattr(node, field, None)
            if type(value) is list:
                todo.extend(item for item in value if isinstance(item, gast.AST))
            elif isinstance(value, gast.AST):
                todo.append(value)
        yield node


def name_counts(*nodes) -> tuple[Counter, Counter]:
    """How often each name is read (loaded) and bound (stored or deleted) under `nodes`."""
    reads, binds = Counter(), Counter()
    for tree in nodes:
        for node in walk(tree):
            if type(node) is gast.Name:
                if type(node.ctx) is gast.Load:
                    reads[node.id] += 1
                elif type(node.ctx) is not gast.Param:
                    binds[node.id] += 1
    return reads, binds


def statement_lists(fn: gast.FunctionDef) -> dict:
    """The statement list each statement of `fn` stands in, by the statement's id."""
    return {id(statement): statements for node in walk(fn)
            if isinstance(node, (gast.FunctionDef, gast.For, gast.While, gast.If))
            for statements in (node.body, getattr(node, "orelse", []))
            for statement in statements}
