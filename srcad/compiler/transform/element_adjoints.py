"""element_adjoints: the adjoint of an array's element read in a loop, summed as a number.

An ODE step reading its rates `p[0]`..`p[3]` adds each step's cotangent into the adjoint of
`p` (`b_p = add_at(b_p, b_item, p, 0)`): a call and an array write per element per step,
most of a scalar loop's backward sweep. Where `p` is a float64 array the function never
rebinds (analysis/scalars.py: `element_sources`) and the loop only ever adds into `b_p`
at constant indices, each index gets a number that the loop sums, `acc = acc + b_item`, added
into `b_p` once after the loop: the same sum, in another order.

Takes the backward sweep's statements (gast, after settle); returns them rewritten.
"""
from __future__ import annotations

import gast

from srcad.compiler.frontend.trees import every_statement, name_nodes
from srcad.compiler.transform.adjoints import assign, load
from srcad.kernels import adjoints as helpers


def sum_element_adjoints(body: list, elements: dict, bindings, namer) -> list:
    """`body` with the element adjoints of the outermost loops summed as numbers."""
    if not elements:
        return body
    result = []
    for statement in body:
        if isinstance(statement, (gast.For, gast.While)):
            result.extend(_summed(statement, elements, bindings, namer))
        else:
            if isinstance(statement, gast.If):
                statement.body = sum_element_adjoints(statement.body, elements, bindings, namer)
                statement.orelse = sum_element_adjoints(statement.orelse, elements, bindings,
                                                        namer)
            result.append(statement)
    return result


def _summed(loop, elements: dict, bindings, namer) -> list:
    """`[acc = 0.0 ..., loop, b_p = add_at(b_p, acc, p, i) ...]`, or `[loop]` unchanged."""
    found = [(node, _element_addition(node, elements, bindings))
             for node in every_statement(loop) if isinstance(node, gast.Assign)]
    additions = {id(node): addition for node, addition in found if addition}
    if not additions:
        return [loop]
    adjoints = {addition[0] for addition in additions.values()}
    others = {t.id for node, addition in found if not addition
              for t in node.targets if isinstance(t, gast.Name)}
    summed = adjoints - others - _read_elsewhere(loop, found)
    if not summed:
        return [loop]
    sums = {}
    for node, addition in found:
        if addition and addition[0] in summed:
            adjoint, cotangent, array, index = addition
            key = (adjoint, array, index)
            if key not in sums:
                sums[key] = namer.claim(f"{adjoint}_at{index}" if index >= 0
                                        else f"{adjoint}_at_minus{-index}")
            node.targets = [gast.Name(sums[key], gast.Store(), None, None)]
            node.value = gast.BinOp(load(sums[key]), gast.Add(), cotangent)
    scatter = bindings.name_for("index_adjoint", helpers.index_adjoint)
    add_at = bindings.name_for("add_at", helpers.add_at)
    before = [assign(total, gast.Constant(0.0, None)) for total in sums.values()]
    after = []
    for (adjoint, array, index), total in sums.items():
        arguments = [load(total), load(array), gast.Constant(index, None)]
        after.append(assign(adjoint, gast.IfExp(
            gast.Compare(load(adjoint), [gast.Is()], [gast.Constant(None, None)]),
            gast.Call(load(scatter), arguments, []),
            gast.Call(load(add_at), [load(adjoint), *arguments], []))))
    return before + [loop] + after


def _element_addition(node: gast.Assign, elements: dict, bindings):
    """`(b_p, cotangent, p, index)` for `b_p = add_at(b_p, g, p, index)` or
    `b_p = index_adjoint(g, p, index) if b_p is None else add_at(b_p, g, p, index)`, `p`
    in `elements` (rank 1) and `index` an integer constant; else None."""
    if len(node.targets) != 1 or not isinstance(node.targets[0], gast.Name):
        return None
    adjoint, value = node.targets[0].id, node.value
    if isinstance(value, gast.IfExp):
        first = _helper_call(value.body, helpers.index_adjoint, bindings)
        test = value.test
        if not (first and isinstance(test, gast.Compare) and _is_name(test.left, adjoint)
                and isinstance(test.ops[0], gast.Is)
                and isinstance(test.comparators[0], gast.Constant)
                and test.comparators[0].value is None):
            return None
        value = value.orelse
        addition = _addition(value, adjoint, elements, bindings)
        if addition is None or gast.dump(gast.Tuple(first.args, gast.Load())) != gast.dump(
                gast.Tuple(value.args[1:], gast.Load())):
            return None
        return addition
    return _addition(value, adjoint, elements, bindings)


def _addition(value, adjoint: str, elements: dict, bindings):
    call = _helper_call(value, helpers.add_at, bindings)
    if call is None or len(call.args) != 4 or not _is_name(call.args[0], adjoint):
        return None
    _, cotangent, array, index = call.args
    if isinstance(array, gast.Name) and elements.get(array.id) == 1 \
            and isinstance(index, gast.Constant) and type(index.value) is int:
        return adjoint, cotangent, array.id, index.value
    return None


def _helper_call(value, helper, bindings):
    if isinstance(value, gast.Call) and isinstance(value.func, gast.Name) \
            and not value.keywords and bindings.named(value.func.id) is helper:
        return value
    return None


def _is_name(node, name: str) -> bool:
    return isinstance(node, gast.Name) and node.id == name


def _read_elsewhere(loop, found: list) -> set:
    """The names the loop reads other than as the adjoint an element addition adds into
    (`b_p` in `add_at(b_p, ...)` and `b_p is None`); `found`: its assignments, each with
    its element addition or None."""
    counts = {}
    for node in name_nodes(loop):
        if isinstance(node.ctx, gast.Load):
            counts[node.id] = counts.get(node.id, 0) + 1
    for node, addition in found:
        if addition:
            counts[addition[0]] -= 2 if isinstance(node.value, gast.IfExp) else 1
    return {name for name, count in counts.items() if count}
