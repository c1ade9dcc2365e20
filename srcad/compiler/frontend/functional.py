"""functional: a helper that writes into its array argument, called as one that returns it.

`apply_bc(u)`, with `def apply_bc(u): u[0] = 0.0`, changes the caller's array inside a call,
where the caller's derivative cannot follow the write. The caller calls the helper's
*functional variant* instead, and writes what it returns back itself:

    apply_bc(u)              ─▶    returned_0 = apply_bc_returning_u(u)
                                   written_1 = returned_0[1]
                                   u[...] = written_1

The variant is the helper's own tree with `u = copy(u)` first and `(value, u)` returned:
its writes go into its own copy, an in-place update like any other in its derivative, and
the write back is one in the caller's (saved, undone and checked for aliasing there). It is
compiled with the helper's file name, globals and closure, and `parse_function` returns its
tree (parse.register_variant), so errors point at the helper's lines. Only for a helper of the
user's without a rule, called with names and constants, passed an array the caller surely
holds and passes nowhere else in the call, that returns nothing that may show that array
(pipeline.parameters_written).
"""
from __future__ import annotations

import ast
import inspect
import types
import weakref

import gast

from srcad.compiler.frontend.exits import walk_local
from srcad.compiler.frontend.parse import (ParsedFunction, compiled_tree, parse_function,
                                           register_variant)
from srcad.compiler.frontend.resolve import operations
from srcad.compiler.frontend.trees import clone, statement_lists, walk
from srcad.ops.numpy_arrays import copied
from srcad.ops.registry import is_nondifferentiable, vjp_rules

_MADE = weakref.WeakKeyDictionary()  # helper → {written parameters: its functional variant}


def call_written_helpers(simple: gast.FunctionDef, block, resolver, namer, arrays: frozenset,
                         written_by) -> bool:
    """Rewrite, in `simple`, each call of a helper that writes into parameters (`written_by(
    fn)` names them) passed names of `arrays` (names that surely hold arrays: a number
    passed there is only rebound, a list would need writing back item by item) as the
    module docstring shows. Returns whether `simple` changed (its block is then resolved
    again)."""
    parents, changed = statement_lists(simple), False
    for op in operations(block):
        call = getattr(op.statement, "value", None)
        if op.kind not in ("call", "effect") or not _user_function(op.callee) \
                or not isinstance(call, gast.Call) or op.method is not None \
                or not all(map(_is_atom, [*call.args, *(k.value for k in call.keywords)])):
            continue  # (a call made for its effect keeps expressions as its arguments)
        written = written_by(op.callee)
        passed = _passed(op.callee, call, written)
        if not written or passed is None or not all(
                isinstance(a, gast.Name) and a.id in arrays for a in passed):
            continue
        names = [n.id for a in [*call.args, *(k.value for k in call.keywords)]
                 for n in walk(a) if isinstance(n, gast.Name)]
        if any(names.count(a.id) > 1 for a in passed):
            continue  # (`h(u, u)`: the helper's writes into one show in the other)
        variant = resolver.helper(functional_variant(op.callee, written), namer)
        returned = namer.temporary("returned")
        statements = [gast.Assign([gast.Name(returned, gast.Store(), None, None)],
                                  gast.Call(variant, call.args, call.keywords), None)]
        if op.kind == "call":
            statements.append(gast.Assign(op.statement.targets, _item(returned, 0), None))
        for k, argument in enumerate(passed, start=1):
            value = namer.temporary("written")
            statements += [gast.Assign([gast.Name(value, gast.Store(), None, None)],
                                       _item(returned, k), None),
                           gast.Assign([gast.Subscript(gast.Name(argument.id, gast.Load(), None,
                                                                 None),
                                                       gast.Constant(Ellipsis, None),
                                                       gast.Store())],
                                       gast.Name(value, gast.Load(), None, None), None)]
        for statement in statements:
            gast.copy_location(statement, op.statement)
            statement.unrecorded = getattr(op.statement, "unrecorded", False)
        siblings = parents[id(op.statement)]
        at = next(i for i, s in enumerate(siblings) if s is op.statement)
        siblings[at:at + 1] = statements
        changed = True
    return changed


def functional_variant(fn: types.FunctionType, written: tuple):
    """`fn` with each parameter of `written` copied first and returned after its value."""
    made = _MADE.get(fn, {}).get(written)
    if made is not None:
        return made
    parsed = parse_function(fn)
    node = clone(parsed.node)
    node.name = f"{fn.__name__}_returning_{'_'.join(written)}"
    copies = [gast.copy_location(gast.Assign(
        [gast.Name(p, gast.Store(), None, None)],
        gast.Call(gast.Name("srcad_copy_of", gast.Load(), None, None),
                  [gast.Name(p, gast.Load(), None, None)], []), None), node) for p in written]

    def returned(value):
        return gast.Tuple([value or gast.Constant(None, None)] + [
            gast.Name(p, gast.Load(), None, None) for p in written], gast.Load())
    for statement in walk_local(node):
        if isinstance(statement, gast.Return):
            statement.value = returned(statement.value)
    node.body = copies + node.body + [gast.copy_location(gast.Return(returned(None)), node)]
    for part in walk(node):  # (compile wants every location; the new nodes have the def's)
        if isinstance(part, (gast.stmt, gast.expr)) and not hasattr(part, "lineno"):
            gast.copy_location(part, node)
    freevars = fn.__code__.co_freevars
    scope = gast.FunctionDef("srcad_scope", gast.arguments(
        [], [gast.Name(n, gast.Param(), None, None) for n in (*freevars, "srcad_copy_of")],
        None, [], [], None, []), [node, gast.Return(gast.Name(node.name, gast.Load(), None,
                                                                 None))], [], None, None)
    module = ast.fix_missing_locations(gast.gast_to_ast(gast.Module([scope], [])))
    code = compiled_tree(module, parsed.filename)
    inner = next(c for c in next(c for c in code.co_consts if isinstance(c, types.CodeType))
                 .co_consts if isinstance(c, types.CodeType) and c.co_name == node.name)
    cells = dict(zip(freevars, fn.__closure__ or ()))
    cells["srcad_copy_of"] = types.CellType(copied)
    variant = types.FunctionType(inner, fn.__globals__, node.name, fn.__defaults__,
                                 tuple(cells[n] for n in inner.co_freevars))
    variant.__kwdefaults__ = fn.__kwdefaults__
    variant.copied_parameters = written  # (for analysis/aliasing.py)
    register_variant(inner, ParsedFunction(node, parsed.filename, parsed.lines, parsed.name))
    _MADE.setdefault(fn, {})[written] = variant
    return variant


def forget_variants() -> None:
    _MADE.clear()


def _user_function(callee) -> bool:
    """A Python function of the user's, without a rule (a library's is left as it is)."""
    module = getattr(callee, "__module__", None) or ""
    return isinstance(callee, types.FunctionType) and vjp_rules(callee) is None \
        and not is_nondifferentiable(callee) \
        and module.split(".")[0] not in ("numpy", "scipy", "srcad")


def _is_atom(node) -> bool:
    return isinstance(node, (gast.Name, gast.Constant))


def _passed(fn, call: gast.Call, written: tuple):
    """The atoms a call passes for the parameters `written`, or None where it passes one by
    `*`/`**`, or not at all (its default)."""
    if any(isinstance(a, gast.Starred) for a in call.args) or any(
            k.arg is None for k in call.keywords):
        return None
    try:
        bound = inspect.signature(fn).bind(*call.args, **{k.arg: k.value for k in call.keywords})
    except TypeError:
        return None
    passed = [bound.arguments.get(p) for p in written]
    return None if any(a is None for a in passed) else passed


def _item(name: str, index: int) -> gast.Subscript:
    return gast.Subscript(gast.Name(name, gast.Load(), None, None), gast.Constant(index, None),
                          gast.Load())
