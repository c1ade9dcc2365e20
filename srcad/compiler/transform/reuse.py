"""reuse: compute a cotangent in the memory of the adjoint it is computed from.

Input: the cotangent expressions one operation gives its arguments, in the order the
backward sweep evaluates them, and the name `g` of the output's adjoint, which the sweep
owns (an array it made and handed to no one, transform/adjoints.py) and never reads again
after this operation. Output: an order to evaluate them in, and the same expressions, the last one that reads `g` rewritten
to write the arithmetic on `g` into `g`'s array (`multiply_into` and friends in
kernels/adjoints.py), and that read of `g` marked `consumed`, so that a cotangent that is `g`
itself (`unbroadcast(g, x)`, a copy) makes the argument's adjoint the owner of the array.

    b_x = b_y * 2 * x        ─▶      b_x = multiply_into(multiply_into(b_y, 2), x)

Sound only if nothing else holds `g`'s array when it is overwritten: `g` is read once in
the rewritten expression, and each earlier expression that reads `g` gives a new array
(arithmetic, or `unbroadcast` or `expand_reduced` of arithmetic), never `g` or a view.

A copy's adjoint gathered in a scatter's zeros only to be added into the original's
(`un = np.copy(u)` read by slices, a stencil step) is gathered in the original's adjoint
instead, when nothing reads or writes that adjoint meanwhile (`accumulate_in_source`):

    b_un = index_adjoint(g, un, s)            b_un = add_at(b_u, g, un, s)
    b_un = add_at(b_un, h, un, t)     ─▶      b_un = add_at(b_un, h, un, t)
    b_u = add_into(b_u, b_un)                 b_u = b_un
"""
from __future__ import annotations

import gast

from collections import Counter

from srcad.compiler.frontend.trees import NAME_FIELDS, clone, name_nodes, names_in
from srcad.compiler.transform.statement_names import StatementNames
from srcad.kernels import adjoints as helpers

_IN_PLACE = {gast.Add: ("add_into", helpers.add_into),
             gast.Sub: ("subtract_into", helpers.subtract_into),
             gast.Mult: ("multiply_into", helpers.multiply_into),
             gast.Div: ("divide_into", helpers.divide_into)}
_COMMUTATIVE = (gast.Add, gast.Mult)
_NEGATIVE = ("negative_into", helpers.negative_into)
HELPERS = frozenset(obj for _, obj in [*_IN_PLACE.values(), _NEGATIVE])
_COPYING = (helpers.unbroadcast, helpers.expand_reduced)


def consume(expressions: list, g: str, helper_of, bind) -> tuple[list, list]:
    """The positions of `expressions` in the order to evaluate them, and the expressions,
    the last reader of `g` writing into `g` where that is sound. A reader that may give
    `g` itself goes last, so that the readers that make new arrays read `g` intact first
    (each expression is one argument's cotangent: their order changes no value).

    `helper_of(call)` is the runtime helper a call node calls (or None); `bind(name, obj)`
    names a helper for generated code."""
    reads = [sum(n.id == g for n in name_nodes(expression)) for expression in expressions]
    order = sorted(range(len(expressions)), key=lambda i: reads[i] > 0 and not
                   _new_array(expressions[i], helper_of))
    readers = [i for i in order if reads[i]]
    if not readers:
        return order, expressions
    last = readers[-1]
    if reads[last] != 1 or not all(_new_array(expressions[i], helper_of) for i in readers[:-1]):
        return order, expressions
    rewritten = list(expressions)
    rewritten[last] = _Rewriter(g, bind, helper_of).rewritten(expressions[last])
    return order, rewritten


def _new_array(expression, helper_of) -> bool:
    """Whether `expression` surely gives an array of its own (never one of its operands)."""
    if isinstance(expression, (gast.BinOp, gast.UnaryOp)):
        return not isinstance(expression, gast.UnaryOp) \
            or isinstance(expression.op, (gast.USub, gast.UAdd))
    return isinstance(expression, gast.Call) and helper_of(expression) in _COPYING \
        and bool(expression.args) and _new_array(expression.args[0], helper_of)


class _Rewriter:
    """Arithmetic whose operand holds `g`'s array (`g`, or a rewritten operation on it)
    becomes an operation into that array; the read of `g` is marked `consumed`. Only the
    nodes on the way from the expression down to its one read of `g` change: those are
    copied (the others may stand in other expressions too: a called rule's arguments)."""

    def __init__(self, g: str, bind, helper_of):
        self.g = g
        self.bind = bind
        self.helper_of = helper_of

    def rewritten(self, node):
        """`node` rewritten, or None where `g` is not read under it."""
        kind = type(node)
        if kind is gast.Name:
            if node.id != self.g:
                return None
            read = clone(node)
            read.consumed = True
            return read
        for field in NAME_FIELDS[kind]:
            value = getattr(node, field, None)
            if type(value) is list:
                for index, item in enumerate(value):
                    child = self.rewritten(item) if isinstance(item, gast.AST) else None
                    if child is not None:
                        return self._with_child(node, field, value[:index] + [child]
                                                + value[index + 1:])
            elif isinstance(value, gast.AST):
                child = self.rewritten(value)
                if child is not None:
                    return self._with_child(node, field, child)
        return None

    def _with_child(self, node, field: str, child):
        """A copy of `node` with `child` (holding `g`) in `field`, rewritten in turn."""
        kind = type(node)
        copied = kind.__new__(kind)
        copied.__dict__.update(node.__dict__)
        setattr(copied, field, child)
        if kind is gast.Call:  # `unbroadcast(g, y)` is g's array or a new sum of it
            if self.helper_of(copied) is helpers.unbroadcast and copied.args \
                    and self._holds_g(copied.args[0]):
                copied.holds_g = True
        elif kind is gast.UnaryOp:
            if isinstance(copied.op, gast.USub) and self._holds_g(copied.operand):
                return self._call(_NEGATIVE, [copied.operand])
        elif kind is gast.BinOp:
            helper = _IN_PLACE.get(type(copied.op))
            if helper is not None and self._holds_g(copied.left):
                return self._call(helper, [copied.left, copied.right])
            if helper is not None and isinstance(copied.op, _COMMUTATIVE) \
                    and self._holds_g(copied.right):
                return self._call(helper, [copied.right, copied.left])
        return copied

    def _holds_g(self, node) -> bool:
        return getattr(node, "consumed", False) or getattr(node, "holds_g", False)

    def _call(self, helper, args):
        call = gast.Call(gast.Name(self.bind(*helper), gast.Load(), None, None), args, [])
        call.holds_g = True
        return call


def accumulate_in_source(statements: list, helper_of, bind, known=None) -> list:
    """`statements` (a backward sweep) with each adjoint that starts as a scatter and ends
    added into an owned adjoint (`add_into`: the sweep made that array and handed it to no
    one) gathered in that adjoint's array from the start, where between the two nothing
    but the gathering mentions either name, and nothing reads the gathered name after.
    `known`: the names in each statement (statement_names.py), where the caller has them;
    a statement changed in place is forgotten there."""
    known = StatementNames() if known is None else known
    _gather_in_source(statements, _Loads(statements, known), helper_of, bind, known)
    return statements


class _Loads:
    """How often each name is read in a sweep, counted when first asked: only a scatter
    added into an owned adjoint asks, which most sweeps have none of. (The first question
    comes before the first rewrite, so the counts are those of the sweep as it was.)"""

    def __init__(self, statements: list, known):
        self.statements = statements
        self.known = known
        self.counts = None

    def __getitem__(self, name: str) -> int:
        if self.counts is None:
            self.counts = Counter(n.id for n in self.known.among(self.statements)
                                  if isinstance(n.ctx, gast.Load))
        return self.counts[name]


def _gather_in_source(block: list, loads: _Loads, helper_of, bind, known) -> None:
    for position, statement in enumerate(block):
        for field in ("body", "orelse"):
            if isinstance(getattr(statement, field, None), list):
                _gather_in_source(getattr(statement, field), loads, helper_of, bind, known)
                known.forget(statement)
        added = _added_into(statement, helper_of)
        if added is None:
            continue
        total, part = added
        start = _scatter_before(block, position, total, part, loads, helper_of, known)
        if start is not None:
            scatter = block[start].value
            add_at = gast.Name(bind("add_at", helpers.add_at), gast.Load(), None, None)
            block[start].value = gast.Call(add_at, [gast.Name(total, gast.Load(), None, None),
                                                    *scatter.args], [])
            statement.value = gast.Name(part, gast.Load(), None, None)
            known.forget(block[start])
            known.forget(statement)


def _added_into(statement, helper_of):
    """(total, part) of `total = add_into(total, part)`, else None."""
    if not (isinstance(statement, gast.Assign) and len(statement.targets) == 1
            and isinstance(statement.targets[0], gast.Name)):
        return None
    call = statement.value
    if helper_of(call) is not helpers.add_into or len(call.args) != 2 or call.keywords \
            or not all(isinstance(a, gast.Name) for a in call.args):
        return None
    total, part = (a.id for a in call.args)
    return (total, part) if total == statement.targets[0].id and total != part else None


def _scatter_before(block: list, position: int, total: str, part: str, loads: _Loads,
                    helper_of, known) -> int | None:
    """Where `part = index_adjoint(...)` starts the gathering that `block[position]` adds
    into `total`, if every statement between only adds into `part` (`part = add_at(part,
    ...)`, or `add_into`), neither mentions `total`, and `part` is read nowhere else."""
    reads = 1  # (the `add_into` itself)
    for start in range(position - 1, -1, -1):
        statement = block[start]
        names = known.of(statement)
        if any(n.id == total for n in names):
            return None
        mentions = [n for n in names if n.id == part]
        if not mentions:
            continue
        if _starts_gathering(statement, part, helper_of):
            return start if reads == loads[part] else None
        gathering = [s for s in _statements(statement) if _gathers(s, part, helper_of)]
        if len(mentions) != 2 * len(gathering):  # (each: `part = add_at(part, ...)`)
            return None
        reads += len(gathering)
    return None


def _starts_gathering(statement, part: str, helper_of) -> bool:
    return isinstance(statement, gast.Assign) and len(statement.targets) == 1 \
        and isinstance(statement.targets[0], gast.Name) and statement.targets[0].id == part \
        and helper_of(statement.value) is helpers.index_adjoint \
        and len(statement.value.args) == 3 and not statement.value.keywords \
        and part not in names_in(statement.value)


def _gathers(statement, part: str, helper_of) -> bool:
    """`part = add_at(part, ...)` or `part = add_into(part, ...)`, `part` read once."""
    return isinstance(statement, gast.Assign) and len(statement.targets) == 1 \
        and isinstance(statement.targets[0], gast.Name) and statement.targets[0].id == part \
        and helper_of(statement.value) in (helpers.add_at, helpers.add_into) \
        and isinstance(statement.value.args[0], gast.Name) \
        and statement.value.args[0].id == part \
        and sum(n.id == part for n in name_nodes(statement.value)) == 1


def _statements(statement) -> list:
    """`statement` and the statements inside it (an `if` guarding a contribution)."""
    found = [statement]
    for field in ("body", "orelse"):
        for inner in getattr(statement, field, None) or ():
            found.extend(_statements(inner))
    return found
