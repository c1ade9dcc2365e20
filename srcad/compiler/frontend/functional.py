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

from srcad.compiler.frontend.desugar import explicit_super
from srcad.compiler.frontend.exits import walk_local
from srcad.compiler.frontend.parse import (ParsedFunction, compiled_tree, parse_function,
                                           register_variant)
from srcad.compiler.frontend.resolve import operations
from srcad.compiler.frontend.trees import clone, statement_lists, walk
from srcad.ops.numpy_arrays import copied
from srcad.ops.python_statements import new_record
from srcad.ops.registry import is_nondifferentiable, vjp_rules

_MADE = weakref.WeakKeyDictionary()  # helper → {written parameters: its functional variant}
_CONSTRUCTORS = weakref.WeakKeyDictionary()  # class → its record constructor


def call_written_helpers(simple: gast.FunctionDef, block, resolver, namer, arrays,
                         written_by) -> bool:
    """Rewrite, in `simple`, each call of a helper that writes into parameters (`written_by(
    fn)` names them) passed names of `arrays()` (names that surely hold arrays: a number
    passed there is only rebound, a list would need writing back item by item) as the
    module docstring shows. Returns whether `simple` changed (its block is then resolved
    again). (`arrays()`, a fixpoint over the block, and the statement lists are made only
    for such a call: nearly no function makes one.)"""
    parents, changed = None, False
    for op in operations(block):
        call = getattr(op.statement, "value", None)
        if op.kind not in ("call", "effect") or not _user_function(op.callee) \
                or not isinstance(call, gast.Call) or op.method is not None \
                or not all(map(_is_atom, [*call.args, *(k.value for k in call.keywords)])):
            continue  # (a call made for its effect keeps expressions as its arguments)
        written = written_by(op.callee)
        passed = _passed(op.callee, call, written)
        if not written or passed is None or not all(
                isinstance(a, gast.Name) and a.id in arrays() for a in passed):
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
        if parents is None:  # (at the first rewrite: the tree as yet unchanged)
            parents = statement_lists(simple)
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
    copies = [_assigned(p, gast.Call(gast.Name("srcad_copy_of", gast.Load(), None, None),
                                     [gast.Name(p, gast.Load(), None, None)], []))
              for p in written]

    def returned(value):
        return gast.Tuple([value or gast.Constant(None, None)] + [
            gast.Name(p, gast.Load(), None, None) for p in written], gast.Load())
    variant = _compiled(fn, parsed, node, copies, returned, {"srcad_copy_of": copied})
    variant.copied_parameters = written  # (for analysis/aliasing.py)
    _MADE.setdefault(fn, {})[written] = variant
    return variant


def method_variant(fn: types.FunctionType) -> types.FunctionType:
    """The functional variant of a method, for its receiver (its first parameter):
    `(value, receiver)`, updated in a copy (runtime/methods.method_update)."""
    return functional_variant(fn, (next(iter(inspect.signature(fn).parameters)),))


def record_constructor(cls: type) -> types.FunctionType:
    """`cls(...)` for a plain class of the user's (kernels/pytrees.constructs_record), as
    a function srcad differentiates where `cls` is built of differentiated values
    (runtime/calls.py): its `__init__`, whose `self` is a new record of its own,
    returned.

        def __init___made(W, b):      # class Layer: def __init__(self, W, b): ...
            self = srcad_new(srcad_class)
            self.W = W
            self.b = b
            return self
    """
    init = cls.__init__
    made = _CONSTRUCTORS.get(cls)
    if made is not None and made.srcad_init is init:
        return made
    parsed = parse_function(init)
    node = clone(parsed.node)
    node.name = f"{init.__name__}_made"
    explicit_super(node, init.__code__)  # (`super()` reads the first parameter, dropped next)
    arguments = node.args
    first = (arguments.posonlyargs or arguments.args).pop(0).id
    made = _compiled(init, parsed, node, [_assigned(first, gast.Call(
        gast.Name("srcad_new", gast.Load(), None, None),
        [gast.Name("srcad_class", gast.Load(), None, None)], []))],
        lambda value: gast.Name(first, gast.Load(), None, None),
        {"srcad_new": new_record, "srcad_class": cls})
    made.srcad_init = init
    _CONSTRUCTORS[cls] = made
    return made


def _assigned(name: str, value) -> gast.Assign:
    return gast.Assign([gast.Name(name, gast.Store(), None, None)], value, None)


def _compiled(fn: types.FunctionType, parsed: ParsedFunction, node: gast.FunctionDef,
              prelude: list, returned, cells: dict) -> types.FunctionType:
    """The function `node`, `fn`'s tree rewritten: `prelude` run first, each `return v` made
    `return returned(v)`; compiled with `fn`'s file name, globals, defaults and closure
    (and `cells` besides), and its tree registered for `parse_function` (errors point at
    `fn`'s lines)."""
    for statement in walk_local(node):
        if isinstance(statement, gast.Return):
            statement.value = returned(statement.value)
    node.body = [gast.copy_location(s, node) for s in prelude] + node.body + [
        gast.copy_location(gast.Return(returned(None)), node)]
    for part in walk(node):  # (compile wants every location; the new nodes have the def's)
        if isinstance(part, (gast.stmt, gast.expr)) and not hasattr(part, "lineno"):
            gast.copy_location(part, node)
    freevars = fn.__code__.co_freevars
    scope = gast.FunctionDef("srcad_scope", gast.arguments(
        [], [gast.Name(n, gast.Param(), None, None) for n in (*freevars, *cells)],
        None, [], [], None, []), [node, gast.Return(gast.Name(node.name, gast.Load(), None,
                                                                 None))], [], None, None)
    module = ast.fix_missing_locations(gast.gast_to_ast(gast.Module([scope], [])))
    code = compiled_tree(module, parsed.filename)
    inner = next(c for c in next(c for c in code.co_consts if isinstance(c, types.CodeType))
                 .co_consts if isinstance(c, types.CodeType) and c.co_name == node.name)
    cells = {**dict(zip(freevars, fn.__closure__ or ())),
             **{name: types.CellType(value) for name, value in cells.items()}}
    made = types.FunctionType(inner, fn.__globals__, node.name, fn.__defaults__,
                              tuple(cells[n] for n in inner.co_freevars))
    made.__kwdefaults__ = fn.__kwdefaults__
    register_variant(inner, ParsedFunction(node, parsed.filename, parsed.lines, parsed.name))
    return made


def forget_variants() -> None:
    _MADE.clear()
    _CONSTRUCTORS.clear()


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
