"""signs: a negated cotangent made by its own product, or scaled by its only reader.

The cotangent of `y` in `x - y` is `-g`; where `g` is a product with a constant, the
backward sweep computes it and then negates it, a second pass over the array:

    b_sub_7 = b_pow_8 * 2 * sub_7            b_item_6 = b_pow_8 * -2 * sub_7
    b_item_6 = negative_into(b_sub_7)   ─▶

(Rosenbrock's `(1.0 - x[:-1]) ** 2`, every least-squares residual `y - f(x)`). Where the
negation's only reader scales it by a number instead (`x - y ** 2`), the number moves
into the negation, which then costs nothing of its own:

    b_pow_2 = -unbroadcast(b_sub_3, pow_2)                      b_pow_2 = unbroadcast(b_sub_3, pow_2) * -2
    b_item_1 = multiply_into(multiply_into(b_pow_2, 2), item_1)   ─▶   b_item_1 = multiply_into(b_pow_2, item_1)

Input: the backward sweep's statements and the names read after them. Output: the same
where a name assigned a product with a numeric factor is read once, by its negation, and
nowhere else: the negation's target takes the product with the factor negated (exact:
rounding is symmetric in sign). Statements between them mention neither name, so the value
is the same at every later read. The second form computes `(-e) * c` as `e * -c`, the same
number, where it was made, so statements between cannot change it.
"""
from __future__ import annotations

from collections import Counter

import gast

from srcad.compiler.frontend.trees import walk
from srcad.compiler.transform.statement_names import StatementNames
from srcad.kernels import adjoints as helpers

_FACTORS = (helpers.multiply_into, helpers.divide_into)


def fold_negations(statements: list, helper_of, read_after: set, known=None) -> list:
    """`statements` with negations of single-use products folded into the products;
    `helper_of(call)` is the runtime helper a call calls; `known`: the names in each
    statement (statement_names.py), where the caller has them; a statement changed in
    place is forgotten there."""
    known = StatementNames() if known is None else known
    mentions = Counter([n.id for n in known.among(statements)])
    return _block(statements, helper_of, mentions, read_after, known)


def _block(statements: list, helper_of, mentions: Counter, read_after: set, known) -> list:
    statements = list(statements)
    for field_owner in statements:
        for field in ("body", "orelse"):
            inner = getattr(field_owner, field, None)
            if isinstance(inner, list) and inner:
                setattr(field_owner, field, _block(inner, helper_of, mentions, read_after,
                                                   known))
                known.forget(field_owner)
    position = 0
    while position < len(statements):
        folded = _folded(statements, position, helper_of, mentions, read_after, known)
        if folded is not None:
            statements[position], reader = folded
            del statements[reader]
        else:
            _scale_negation(statements, position, helper_of, mentions, read_after, known)
        position += 1
    return statements


def _folded(statements, position, helper_of, mentions, read_after, known):
    """`(the product assigned to the negation's target, the negation's position)`, or None."""
    product = statements[position]
    if not (isinstance(product, gast.Assign) and len(product.targets) == 1
            and isinstance(product.targets[0], gast.Name)):
        return None
    name = product.targets[0].id
    if mentions[name] != 2 or name in read_after:
        return None
    negated = _negated(product.value, helper_of)  # (first: most products have no factor)
    if negated is None:
        return None
    between = []  # the names each statement after the product mentions, up to the reader
    for reader in range(position + 1, len(statements)):
        names = {n.id for n in known.of(statements[reader])}
        if name not in names:
            between.append(names)
            continue
        target = _negation_target(statements[reader], name, helper_of)
        if target is None or any(target in mentioned for mentioned in between):
            return None
        return gast.Assign([gast.Name(target, gast.Store(), None, None)], negated, None), reader
    return None


def _negation_target(statement, name: str, helper_of):
    """`t` of `t = -name` or `t = negative_into(name)`, else None."""
    if not (isinstance(statement, gast.Assign) and len(statement.targets) == 1
            and isinstance(statement.targets[0], gast.Name)):
        return None
    value = statement.value
    if isinstance(value, gast.UnaryOp) and isinstance(value.op, gast.USub):
        operand = value.operand
    elif helper_of(value) is helpers.negative_into and len(value.args) == 1:
        operand = value.args[0]
    else:
        return None
    return statement.targets[0].id if isinstance(operand, gast.Name) \
        and operand.id == name else None


def _negated(expression, helper_of, fresh: bool = True):
    """`expression` with one numeric factor of its product negated, or None where it has
    none (a factor 0 stays: `-(x * 0)` is -0.0 where `x * -0` is 0.0). A negation inside
    is dropped instead, unless the value must stay an array of its own (`fresh`: the
    whole value, and what a helper writes into), which `-x` is and `x` is not."""
    if isinstance(expression, gast.Constant) and type(expression.value) in (int, float) \
            and expression.value != 0:
        return gast.Constant(-expression.value, None)
    if isinstance(expression, gast.UnaryOp) and isinstance(expression.op, gast.USub):
        return None if fresh else expression.operand
    if isinstance(expression, gast.BinOp) and isinstance(expression.op, (gast.Mult, gast.Div)):
        for side in ("left", "right"):
            negated = _negated(getattr(expression, side), helper_of, fresh=False)
            if negated is not None:
                parts = {"left": expression.left, "right": expression.right, side: negated}
                return gast.BinOp(parts["left"], expression.op, parts["right"])
        return None
    if helper_of(expression) in _FACTORS and len(expression.args) == 2:
        for index, argument in enumerate(expression.args):  # (the first is written into)
            negated = _negated(argument, helper_of, fresh=index == 0)
            if negated is not None:
                args = list(expression.args)
                args[index] = negated
                return gast.Call(expression.func, args, expression.keywords)
    return None


def _scale_negation(statements, position, helper_of, mentions, read_after, known) -> None:
    """Where `statements[position]` is `b = -e` (or `negative_into(e)`) and the one
    statement reading `b` scales it by a number `c` first (`b * c`, `c * b`,
    `multiply_into(b, c)`), `b = e * -c` (`multiply_into(e, -c)`) and the reader reads `b`."""
    negation = statements[position]
    if not (isinstance(negation, gast.Assign) and len(negation.targets) == 1
            and isinstance(negation.targets[0], gast.Name)):
        return
    name = negation.targets[0].id
    value = negation.value
    if isinstance(value, gast.UnaryOp) and isinstance(value.op, gast.USub):
        operand, in_place = value.operand, False
    elif helper_of(value) is helpers.negative_into and len(value.args) == 1:
        operand, in_place = value.args[0], True
    else:
        return
    if mentions[name] != 2 or name in read_after:
        return
    reader = next((s for s in statements[position + 1:]
                   if any(n.id == name for n in known.of(s))), None)
    if reader is None:
        return
    for node in walk(reader):
        for field, value in gast.iter_fields(node):
            children = value if isinstance(value, list) else [value]
            for index, child in enumerate(children):
                factor = _scale_of(child, name, helper_of)
                if factor is None:
                    continue
                negated = gast.Constant(-factor.value, None)
                children[index] = gast.Name(name, gast.Load(), None, None)
                if not isinstance(value, list):
                    setattr(node, field, children[0])
                if in_place and helper_of(child) is helpers.multiply_into:
                    negation.value = gast.Call(child.func, [operand, negated], [])
                else:
                    negation.value = gast.BinOp(operand, gast.Mult(), negated)
                known.forget(reader)
                known.forget(negation)
                return


def _scale_of(expression, name: str, helper_of):
    """The numeric Constant `expression` scales the Name `name` by, or None."""
    if isinstance(expression, gast.BinOp) and isinstance(expression.op, gast.Mult):
        operands = (expression.left, expression.right)
    elif helper_of(expression) is helpers.multiply_into and len(expression.args) == 2:
        operands = tuple(expression.args)
    else:
        return None
    for scaled, factor in (operands, operands[::-1]):
        if isinstance(scaled, gast.Name) and scaled.id == name \
                and isinstance(factor, gast.Constant) \
                and type(factor.value) in (int, float) and factor.value != 0:
            return factor
    return None


def added(a, b) -> gast.BinOp:
    """`a + b`, as `a - e` where `b` is `-e` times or over other factors (`t_a / x +
    -t_x * q / x` → `t_a / x - t_x * q / x`: one operation less, the same number)."""
    negated = _negation_stripped(b)
    if negated is None:
        return gast.BinOp(a, gast.Add(), b)
    return gast.BinOp(a, gast.Sub(), negated)


def _negation_stripped(node):
    """`e * c / d` for `-e * c / d` (factors by `*` and `/` only), else None."""
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub):
        return node.operand
    if isinstance(node, gast.BinOp) and isinstance(node.op, (gast.Mult, gast.Div)):
        left = _negation_stripped(node.left)
        if left is not None:
            return gast.BinOp(left, node.op, node.right)
    return None
