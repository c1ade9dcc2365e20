"""trees: copying gast trees.

Every rule inlined into an adjoint starts from a fresh copy of its template, so copying is
on the path of every first call. `copy.deepcopy` is general (a memo of every object, the
pickle protocol) and made up a quarter of a transformation; a gast tree needs none of it:
nodes, lists of nodes, and immutable leaves (strings, numbers, None).
"""
from __future__ import annotations

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
