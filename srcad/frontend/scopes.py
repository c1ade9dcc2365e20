"""scopes: which names a function binds, assigns how often, and lets nested functions read.

Shared by normalize (SSA renaming, loop targets, closures) and resolve (locals vs globals).
"""
from __future__ import annotations

import gast

from srcad.frontend.parse import param_names


def local_names(fn: gast.FunctionDef) -> set:
    """The names a function binds: parameters, assignment targets, nested functions."""
    return set(param_names(fn)) | {
        n.id for n in gast.walk(fn) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)
    } | {n.name for n in gast.walk(fn) if isinstance(n, gast.FunctionDef) and n is not fn}


def captured_names(scope) -> set:
    """Names a nested function or lambda reads that it does not bind itself."""
    own = {n.id for n in gast.walk(scope.args) if isinstance(n, gast.Name)} | {
        n.id for n in gast.walk(scope) if isinstance(n, gast.Name)
        and isinstance(n.ctx, gast.Store)}
    return {n.id for n in gast.walk(scope) if isinstance(n, gast.Name)
            and isinstance(n.ctx, gast.Load)} - own


def stores(statements, name: str) -> bool:
    return any(isinstance(n, gast.Name) and n.id == name and isinstance(n.ctx, gast.Store)
               for s in statements for n in gast.walk(s))


def store_counts(fn) -> dict:
    counts = {}
    for node in gast.walk(fn):
        if isinstance(node, gast.Name) and isinstance(node.ctx, (gast.Store, gast.Param)):
            counts[node.id] = counts.get(node.id, 0) + 1
    return counts
