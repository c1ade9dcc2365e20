"""optimize: local simplifications that make inlined rules read like hand-written code.

Input: an expression built by substituting a call's arguments into a rule. Output: the same
value, computed with less: `None is None` and `x if True else y` fold, numeric constants
combine (`2 - 1` → `1`), `x ** 1` → `x`, and `unbroadcast(e, x)` → `e` where `x` is known to
have the output's shape (an elementwise operation with a scalar constant), and
`np.where(2, a, b)` → `a`; `reduce_first` moves work out of an `unbroadcast` sum.
"""
from __future__ import annotations

import operator
from collections import Counter

import gast

from srcad.compiler.frontend.trees import NAME_FIELDS, name_nodes, names_in, walk
from srcad.kernels import adjoints as helpers

_FOLDABLE = {gast.Add: operator.add, gast.Sub: operator.sub, gast.Mult: operator.mul}


def constant_node(value):
    """A literal node for simple Python values (numbers, strings, None, tuples); else None."""
    if value is None or isinstance(value, (bool, int, float, complex, str)):
        return gast.Constant(value, None)
    if isinstance(value, tuple):
        elements = [constant_node(v) for v in value]
        if all(e is not None for e in elements):
            return gast.Tuple(elements, gast.Load())
    return None


def simplify(expression, unbroadcast_names=frozenset(), same_shape=frozenset(),
             is_where=lambda func: False):
    """`is_where(func)` tells whether a callee expression is `np.where`, which folds when
    its condition is a constant."""
    return _Simplifier(unbroadcast_names, same_shape, is_where).simplified(expression)


def _number(node):
    if isinstance(node, gast.Constant) and type(node.value) in (int, float):
        return node.value
    return None


class _Simplifier:
    """Children first, then the node (as a NodeTransformer whose every visit begins with
    generic_visit), through the fields directly: this runs on every rule inlined, and
    NodeTransformer's dispatch by method name cost a tenth of the adjoint's making."""

    def __init__(self, unbroadcast_names, same_shape, is_where):
        self.unbroadcast_names = unbroadcast_names
        self.same_shape = same_shape
        self.is_where = is_where

    def simplified(self, node):
        for field in node._fields:
            value = getattr(node, field, None)
            if type(value) is list:
                value[:] = [self.simplified(item) if isinstance(item, gast.AST) else item
                            for item in value]
            elif isinstance(value, gast.AST):
                setattr(node, field, self.simplified(value))
        fold = _FOLDS.get(type(node))
        return node if fold is None else fold(self, node)

    def compare(self, node):
        if (len(node.ops) == 1 and isinstance(node.left, gast.Constant)
                and isinstance(node.comparators[0], gast.Constant)
                and node.comparators[0].value is None
                and isinstance(node.ops[0], (gast.Is, gast.IsNot))):
            same = node.left.value is None
            return gast.Constant(same if isinstance(node.ops[0], gast.Is) else not same, None)
        return node

    def if_expression(self, node):
        if isinstance(node.test, gast.Constant):
            return node.body if node.test.value else node.orelse
        return node

    def binary_operation(self, node):
        left, right = _number(node.left), _number(node.right)
        if left is not None and right is not None and type(node.op) in _FOLDABLE:
            return gast.Constant(_FOLDABLE[type(node.op)](left, right), None)
        if isinstance(node.op, gast.Pow) and right == 1:
            return node.left
        return node

    def call(self, node):
        func = node.func
        if self.is_where(func) and len(node.args) == 3 and isinstance(node.args[0], gast.Constant):
            return node.args[1] if node.args[0].value else node.args[2]
        if (isinstance(func, gast.Name) and func.id in self.unbroadcast_names
                and getattr(func, "free_in_rule", False) and len(node.args) == 2
                and isinstance(node.args[1], gast.Name) and node.args[1].id in self.same_shape):
            return node.args[0]
        return node


_FOLDS = {gast.Compare: _Simplifier.compare, gast.IfExp: _Simplifier.if_expression,
          gast.BinOp: _Simplifier.binary_operation, gast.Call: _Simplifier.call}


def reduce_first(expression, helper_of, numbers: frozenset = frozenset(), bind=None):
    """`unbroadcast(e, y)` with the work it can do on `y`'s smaller shape done there: a
    negation after the sum (`-unbroadcast(g, y)`), and a product or quotient by `y` itself
    (constant along the axes summed). A softmax's `E / s` gives its divisor the cotangent
    `unbroadcast(-g * ans / s, s)`: three passes over `E`'s size, where
    `-unbroadcast(g * ans, s) / s` takes one. A product summed into a number `y` (one of
    `numbers`), not of two numbers, is `summed_product(a, b, y)`: a dot product where it
    can be. `helper_of(call)`: the runtime helper it calls; `bind(name, obj)` names one."""
    if not (isinstance(expression, gast.Call) and helper_of(expression) is helpers.unbroadcast
            and len(expression.args) == 2 and not expression.keywords
            and isinstance(expression.args[1], gast.Name)):
        return expression
    term, target = expression.args

    def summed(inner):
        return reduce_first(gast.Call(expression.func, [inner, target], []), helper_of,
                            numbers, bind)

    if isinstance(term, gast.UnaryOp) and isinstance(term.op, gast.USub):
        return gast.UnaryOp(gast.USub(), summed(term.operand))
    if isinstance(term, gast.BinOp) and isinstance(term.op, (gast.Mult, gast.Div)):
        if isinstance(term.right, gast.Name) and term.right.id == target.id:
            return gast.BinOp(summed(term.left), term.op, term.right)
        if isinstance(term.left, gast.UnaryOp) and isinstance(term.left.op, gast.USub):
            return gast.UnaryOp(gast.USub(), summed(gast.BinOp(term.left.operand, term.op,
                                                                term.right)))
    if isinstance(term, gast.BinOp) and isinstance(term.op, gast.Mult) and target.id in numbers \
            and isinstance(term.left, gast.Name) and isinstance(term.right, gast.Name) \
            and not (term.left.id in numbers and term.right.id in numbers) and bind:
        product = gast.Name(bind("summed_product", helpers.summed_product), gast.Load(), None,
                            None)
        return gast.Call(product, [term.left, term.right, target], [])
    return expression


def counted(owners: list, terms: list, helper_of=lambda call: None) -> list:
    """`(position, term)` for the terms of `owners` (parallel lists) to keep, where a term
    repeated for the same owner is kept once, times the count: `x * x` gives both operands
    the cotangent `g * x` and the tangent `t_x * x`, and doubling is exact: `g * 2 * x` is
    `g * x + g * x` without a second rule's passes and helpers. A term `unbroadcast(e, x)`
    becomes `unbroadcast(e * 2, x)`, the form uniform.py and `reduce_first` read
    (`helper_of(call)`: the runtime helper a call calls)."""
    names = [getattr(owner, "id", owner) for owner in owners]  # (a Name owner: its name)
    if len(set(names)) == len(names):  # (the common case: no owner twice)
        return list(enumerate(terms))
    keys = [(name, _structure(term)) for name, term in zip(names, terms)]
    counts = Counter(keys)
    return [(position, term if counts[key] == 1 else _times(term, counts[key], helper_of))
            for position, (key, term) in enumerate(zip(keys, terms))
            if keys.index(key) == position]


def _structure(node):
    """What `gast.dump` prints of a node (its class and fields, recursively, leaves by their
    `repr`), as a key: terms of one structure compute one value. (A dump formats a string,
    a call per field, for each term of an operation given one operand twice, `x * x`.)"""
    if isinstance(node, gast.AST):
        return type(node), tuple(_structure(getattr(node, field, None)) for field in node._fields)
    if type(node) is list:
        return list, tuple(map(_structure, node))
    return repr(node)


def _times(term, count: int, helper_of):
    """`term * count`, the count next to the first factor of a product (a cotangent that is
    one number, `g * x`, becomes `g * 2 * x`: a product of numbers, then one pass)."""
    if helper_of(term) is helpers.unbroadcast and len(term.args) == 2:
        return gast.Call(term.func, [_times(term.args[0], count, helper_of), term.args[1]],
                         term.keywords)
    if isinstance(term, gast.BinOp) and isinstance(term.op, (gast.Mult, gast.Div)):
        return gast.BinOp(_times(term.left, count, helper_of), term.op, term.right)
    return gast.BinOp(term, gast.Mult(), gast.Constant(count, None))


def drop_dead_zero_stores(statements: list, live_out: set, known=None) -> list:
    """Remove `b_x = None` where nothing reads `b_x` before it is assigned again.

    The backward sweep resets adjoints to None after each use so that loops start every
    iteration from zero; outside loops, or where the next use assigns first, the reset is
    dead. A structured liveness pass (loops to a fixpoint) finds those. A sweep that resets
    none is not searched for names. `known`: the names in each statement
    (statement_names.py), where the caller has them.
    """
    if not _resets(statements):
        return statements
    reads = None if known is None else lambda statement: {
        n.id for n in known.of(statement) if type(n.ctx) is gast.Load}
    kept, _ = _live(statements, set(live_out), _is_none, reads)
    return kept


def _is_none(value) -> bool:
    return isinstance(value, gast.Constant) and value.value is None


def _resets(statements: list) -> bool:
    """Whether one of `statements`, or of the blocks inside them, is `name = None`."""
    for statement in statements:
        if isinstance(statement, gast.Assign):
            if isinstance(statement.targets[0], gast.Name) and _is_none(statement.value):
                return True
        elif _resets(getattr(statement, "body", None) or []) \
                or _resets(getattr(statement, "orelse", None) or []):
            return True
    return False


def drop_dead_stores(statements: list, live_out: set, removable) -> list:
    """`statements` without the assignments `name = value` where nothing reads `name` before
    it is assigned again (`live_out`: the names read after them) and `removable(value)`."""
    kept, _ = _live(statements, set(live_out), removable)
    return kept


def _live(statements, live, removable, reads=None):
    """The statements kept, and the names live before them; `live` (the names live after
    them) is updated in place, so a long block costs no copy per statement. `reads(s)`:
    the names a statement `s` of `statements` (not of a block inside) reads, where the
    caller knows them."""
    kept = []
    for statement in reversed(statements):
        statement, live = _live_statement(statement, live, removable, reads)
        if statement is not None:
            kept.append(statement)
    return kept[::-1], live


def _live_statement(statement, live, removable, reads):
    if isinstance(statement, gast.Assign) and isinstance(statement.targets[0], gast.Name):
        target = statement.targets[0].id
        if target not in live and removable(statement.value):
            return None, live
        live.discard(target)
        live |= reads(statement) if reads and len(statement.targets) == 1 \
            else loaded_names(statement.value)
        return statement, live
    if isinstance(statement, gast.If):  # (its blocks see only the live names they mention,
        touched = names_in(statement)      # not a copy of every live name: one per branch)
        body, live_body = _live(statement.body, live & touched, removable)
        orelse, live_else = _live(statement.orelse, live & touched, removable)
        if not body:
            body = [gast.Pass()]
        live -= touched
        live |= live_body
        live |= live_else
        live |= loaded_names(statement.test)
        return gast.If(statement.test, body, orelse), live
    if isinstance(statement, gast.For):
        header = live & names_in(statement)  # (likewise)
        header |= loaded_names(statement.iter)
        while True:
            body, inside = _live(statement.body, set(header), removable)
            inside = inside - {n.id for n in walk(statement.target) if isinstance(n, gast.Name)}
            if inside <= header:
                break
            header |= inside
        live |= header
        return gast.For(statement.target, statement.iter, body or [gast.Pass()], [], None), live
    live |= reads(statement) if reads else loaded_names(statement)
    return statement, live


def loaded_names(node) -> set:
    """The names `node` reads."""
    return {n.id for n in name_nodes(node) if isinstance(n.ctx, gast.Load)}


def names_read(statements, skip=frozenset(), dtypes: bool = True) -> tuple[set, set]:
    """Names loaded by `statements` (leaving out those whose ids are in `skip`): those whose
    value is read, and those read only for their shape somewhere. `dtypes=False` leaves out
    the reads of a dtype alone (`dtype_only`), which no element write changes."""
    values, shapes = set(), set()
    for statement in statements:
        _gather_read(statement, skip, values, shapes, dtypes)
    return values, shapes


def read_among(names: list) -> tuple[set, set]:
    """`names_read`'s pair from the `Name` nodes a search found (`name_nodes`), for a caller
    that keeps the nodes for more questions."""
    values, shapes = set(), set()
    for name in names:
        if type(name.ctx) is gast.Load:
            (shapes if getattr(name, "shape_only", False) else values).add(name.id)
    return values, shapes


def _gather_read(node, skip, values: set, shapes: set, dtypes: bool) -> None:
    """names_read's recursion, by fields, not `gast.iter_child_nodes`: this runs on every
    first call. (A module function: a nested one calling itself is a cycle, left for the
    collector to find.)"""
    if skip and id(node) in skip:
        return
    kind = type(node)
    if kind is gast.Name:
        if type(node.ctx) is gast.Load and (dtypes or not getattr(node, "dtype_only", False)):
            (shapes if getattr(node, "shape_only", False) else values).add(node.id)
        return
    for field in NAME_FIELDS[kind]:
        child = getattr(node, field, None)
        if type(child) is list:
            for item in child:
                if isinstance(item, gast.AST):
                    _gather_read(item, skip, values, shapes, dtypes)
        elif isinstance(child, gast.AST):
            _gather_read(child, skip, values, shapes, dtypes)
