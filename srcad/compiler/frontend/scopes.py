"""scopes: which names a function binds, assigns how often, and lets nested functions read.

Shared by normalize (SSA renaming, loop targets, closures) and resolve (locals vs globals).
"""
from __future__ import annotations

import gast

from srcad.compiler.frontend.parse import param_names
from srcad.compiler.frontend.trees import blocks, name_nodes, walk


def local_names(fn: gast.FunctionDef) -> set:
    """The names a function binds: parameters, assignment targets, nested functions (its
    names and its blocks gathered, not every node walked: the frontend asks after each of
    its rewrites)."""
    names = set(param_names(fn))
    names.update(n.id for n in name_nodes(fn) if isinstance(n.ctx, gast.Store))
    names.update(s.name for block in blocks(fn) for s in block if isinstance(s, gast.FunctionDef))
    return names


def captured_names(scope) -> set:
    """Names a nested function or lambda reads that it does not bind itself."""
    own = {n.id for n in walk(scope.args)
           if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Param)} | {
        n.id for n in walk(scope) if isinstance(n, gast.Name)
        and isinstance(n.ctx, gast.Store)} | {
        n.name for n in walk(scope) if isinstance(n, gast.FunctionDef) and n is not scope}
    return {n.id for n in walk(scope) if isinstance(n, gast.Name)
            and isinstance(n.ctx, gast.Load)} - own


def default_reads(arguments: gast.arguments) -> set:
    """Names the default values of a function's parameters read (at definition time)."""
    return {n.id for default in (*arguments.defaults, *arguments.kw_defaults)
            if default is not None for n in walk(default)
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)}


def scope_names(node, context: type) -> set:
    """The names `node` (a node or a list of them) reads (`context` gast.Load), binds
    (gast.Store) or deletes (gast.Del) in its own scope: `t += 1` reads `t` too; a function
    or lambda it defines is a scope of its own, which binds the function's name and reads
    what it captures (when called) and what its defaults read (where it is defined)."""
    found, todo = set(), list(node) if type(node) is list else [node]
    while todo:
        current = todo.pop()
        if isinstance(current, (gast.FunctionDef, gast.Lambda)):
            if context is gast.Store and isinstance(current, gast.FunctionDef):
                found.add(current.name)
            elif context is gast.Load:
                found |= captured_names(current) | default_reads(current.args)
            continue
        if isinstance(current, gast.Name) and isinstance(current.ctx, context):
            found.add(current.id)
        elif context is gast.Load and isinstance(current, gast.AugAssign) \
                and isinstance(current.target, gast.Name):
            found.add(current.target.id)
        todo.extend(gast.iter_child_nodes(current))
    return found


def enclosing_reads(scope) -> frozenset:
    """The enclosing function's names a nested function or lambda depends on without
    receiving them as arguments at its calls: what it captures and what its defaults read
    (none once `closures` passes them at every call)."""
    if getattr(scope, "passes_enclosing", False):
        return frozenset()
    return frozenset(captured_names(scope) | default_reads(scope.args))


def stores(statements, name: str) -> bool:
    return any(isinstance(n, gast.Name) and n.id == name and isinstance(n.ctx, gast.Store)
               for s in statements for n in walk(s))


def store_counts(fn) -> dict:
    """How often `fn` binds each name (its parameters included; not what the functions it
    defines bind, which are theirs)."""
    counts = {}
    for node in name_nodes(fn, scopes=(gast.FunctionDef, gast.Lambda)):
        if isinstance(node.ctx, (gast.Store, gast.Param)):
            counts[node.id] = counts.get(node.id, 0) + 1
    return counts


def surely_bound_by(statement) -> set:
    """Names a statement surely binds when it completes (a `with` block: what its own top
    level binds; a compound statement otherwise: nothing sure)."""
    if isinstance(statement, gast.FunctionDef):
        return {statement.name}
    if isinstance(statement, (gast.Assign, gast.AnnAssign, gast.AugAssign)):
        targets = statement.targets if isinstance(statement, gast.Assign) else [statement.target]
        return {n.id for n in name_nodes(targets) if isinstance(n.ctx, gast.Store)}
    if isinstance(statement, gast.With):  # (its block runs to its end, or raises)
        return set().union(*map(surely_bound_by, statement.body))
    return set()
