"""scopes: which names a function binds, assigns how often, and lets nested functions read.

Shared by normalize (SSA renaming, loop targets, closures) and resolve (locals vs globals).
"""
from __future__ import annotations

from typing import NamedTuple

import gast

from srcad.compiler.frontend.parse import param_names
from srcad.compiler.frontend.trees import NAME_FIELDS, attribute_chain, name_nodes, walk


class Bound(NamedTuple):
    """What a function binds, gathered in one walk of it (normalize asks all three)."""

    names: set   # the names it binds (local_names)
    counts: dict  # how often it binds each name, functions it defines aside (store_counts)
    owners: set  # the roots of the attribute chains it, or a function in it, assigns to


def bound_in(fn: gast.FunctionDef) -> Bound:
    """What `fn` binds: its names (parameters, assignment targets, nested functions and
    what they bind), how often its own scope binds each, the objects whose attributes it
    sets. One walk through the fields that may hold names, stopping at names."""
    bound = Bound(set(param_names(fn)), {}, set())
    _gather_bound(fn, None, bound)
    return bound


def _gather_bound(node, nested: bool | None, bound: Bound) -> None:
    """Gather what `node` binds into `bound`; `nested`: inside a function or lambda that
    `fn` defines (None for `fn` itself), whose bindings `fn` does not count."""
    kind = type(node)
    if kind is gast.Name:
        context = type(node.ctx)
        if context is gast.Store:
            bound.names.add(node.id)
        if not nested and (context is gast.Store or context is gast.Param):
            bound.counts[node.id] = bound.counts.get(node.id, 0) + 1
        if getattr(node, "annotation", None) is None:
            return
    elif kind is gast.Attribute and type(node.ctx) is gast.Store:
        root = attribute_chain(node)[0]
        if type(root) is gast.Name:
            bound.owners.add(root.id)
    elif kind is gast.FunctionDef or kind is gast.Lambda:
        if nested is not None:  # (one `fn` defines: a scope of its own)
            if kind is gast.FunctionDef:
                bound.names.add(node.name)
        nested = nested is not None
    for field in NAME_FIELDS[kind]:
        value = getattr(node, field, None)
        if type(value) is list:
            for item in value:
                if isinstance(item, gast.AST):
                    _gather_bound(item, nested, bound)
        elif isinstance(value, gast.AST):
            _gather_bound(value, nested, bound)


def local_names(fn: gast.FunctionDef) -> set:
    """The names a function binds: parameters, assignment targets, nested functions."""
    return bound_in(fn).names


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
    return bound_in(fn).counts


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
