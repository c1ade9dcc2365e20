"""leaves: a container parameter read only at fixed keys → one parameter per leaf.

    def loss(params, X):                    def loss(params_w, params_b, X):
        z = X @ params["w"] + params["b"]  ─▶    z = X @ params_w + params_b

for `params` holding `{"w": array, "b": float}` (the API passes `(path, kind)` of each leaf,
in the order it unpacks them: api/fast_paths.py). The derivative program then sees arrays
and numbers, not a dict: no item reads and no index adjoints per call, and the float64
specialisation applies to the leaves. Refused (`NotUnpackable`, the container program is
made instead) where the parameter is used otherwise: passed on, iterated, rebound, read at
a key held in a variable, at a path that ends above a leaf (a subtree), or given a default.

Invariant: the result reads each leaf where the function read it at its path, as the same
object, and binds nothing else; the parameters keep their order, the container's leaves in
its place.
"""
from __future__ import annotations

import re
from dataclasses import replace

import gast

from srcad.compiler.frontend.parse import ParsedFunction
from srcad.compiler.frontend.trees import clone, new_name, walk
from srcad.errors import SrcadError


class NotUnpackable(SrcadError):
    """The function uses a container parameter otherwise than by reads at fixed keys."""


def unpacked_leaves(parsed: ParsedFunction, leaves: tuple) -> tuple[ParsedFunction, dict]:
    """`parsed` with each parameter of `leaves` (`(parameter, ((path, kind), ...))`)
    replaced by one parameter per leaf, and `{parameter: (leaf parameter names, in order)}`;
    raises NotUnpackable."""
    node = clone(parsed.node)
    taken = set(parsed.held.names)
    paths, renamed = {}, {}
    for parameter, described in leaves:
        names = []
        for path, _ in described:
            name = _free_name(parameter + "".join(f"_{key}" for key in path), taken)
            taken.add(name)
            names.append(name)
            paths[parameter, path] = name
        renamed[parameter] = tuple(names)
    _refuse_other_bindings(node, renamed)
    _replace_parameters(node, renamed)
    node.body = [_rewritten(statement, paths, renamed) for statement in node.body]
    return replace(parsed, node=node), renamed


def _free_name(wanted: str, taken: set) -> str:
    base = re.sub(r"\W", "_", wanted)
    name, count = base, 0
    while name in taken:
        count += 1
        name = f"{base}_{count}"
    return name


def _refuse_other_bindings(node: gast.FunctionDef, renamed: dict) -> None:
    """A container parameter bound again anywhere (assigned, deleted, a nested function's
    parameter, `global`/`nonlocal`): its reads would not all be the argument's."""
    own = {id(argument) for argument in _own_parameters(node)}
    for found in walk(node):
        if isinstance(found, gast.Name) and found.id in renamed \
                and type(found.ctx) is not gast.Load and id(found) not in own:
            raise NotUnpackable(f"the parameter {found.id!r} is bound again")
        if isinstance(found, (gast.Global, gast.Nonlocal)) and set(found.names) & renamed.keys():
            raise NotUnpackable("a container parameter is declared global or nonlocal")


def _own_parameters(node: gast.FunctionDef) -> list:
    return [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs,
            *(a for a in (node.args.vararg, node.args.kwarg) if a is not None)]


def _replace_parameters(node: gast.FunctionDef, renamed: dict) -> None:
    positional = [*node.args.posonlyargs, *node.args.args]
    defaulted = {a.id for a in positional[len(positional) - len(node.args.defaults):]}
    found = set()
    for field in ("posonlyargs", "args"):
        replaced = []
        for argument in getattr(node.args, field):
            if argument.id in renamed:
                if argument.id in defaulted:
                    raise NotUnpackable(f"the parameter {argument.id!r} has a default")
                found.add(argument.id)
                replaced += [new_name(name, gast.Param) for name in renamed[argument.id]]
            else:
                replaced.append(argument)
        setattr(node.args, field, replaced)
    if found != renamed.keys():
        raise NotUnpackable("a container parameter is not positional")


def _rewritten(node, paths: dict, renamed: dict):
    """`node` with each read at a leaf's path a read of the leaf's parameter."""
    if isinstance(node, gast.Subscript):
        leaf = _leaf_read(node, paths, renamed)
        if leaf is not None:
            return leaf
    elif isinstance(node, gast.Name) and node.id in renamed:
        raise NotUnpackable(f"the parameter {node.id!r} is used as a whole")
    for field in node._fields:
        value = getattr(node, field, None)
        if type(value) is list:
            setattr(node, field, [_rewritten(item, paths, renamed)
                                  if isinstance(item, gast.AST) else item for item in value])
        elif isinstance(value, gast.AST):
            setattr(node, field, _rewritten(value, paths, renamed))
    return node


def _leaf_read(node: gast.Subscript, paths: dict, renamed: dict):
    """For `p[k1][k2]..`, constant keys, of a parameter `p` of `renamed`: `node` with the
    read at the leaf's path the leaf's parameter (the reads past it, into the leaf, kept);
    None for a subscript of anything else."""
    chain = []  # the subscripts from `node` inwards, while their keys are constants
    inner = node
    while isinstance(inner, gast.Subscript) and _is_key(inner.slice):
        chain.append(inner)
        inner = inner.value
    if not (isinstance(inner, gast.Name) and inner.id in renamed):
        return None
    keys = [subscript.slice.value for subscript in reversed(chain)]
    for depth in range(1, len(keys) + 1):
        name = paths.get((inner.id, tuple(keys[:depth])))
        if name is None:
            continue
        read = chain[len(chain) - depth]
        if type(read.ctx) is not gast.Load:
            raise NotUnpackable(f"the parameter {inner.id!r} is written into")
        leaf = new_name(name, gast.Load)
        if depth == len(chain):
            return leaf
        chain[len(chain) - depth - 1].value = leaf
        return node
    raise NotUnpackable(f"the parameter {inner.id!r} is read at a path that is no leaf's")


def _is_key(index) -> bool:
    return isinstance(index, gast.Constant) and type(index.value) in (str, int)
