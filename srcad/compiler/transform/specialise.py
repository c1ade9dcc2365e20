"""specialise: the gradient-only program for float64 arrays, without the checks of helpers.

The helpers a backward sweep calls (`add_at`, `multiply_into`, `seed_for`, the matmul
rules) check the types, dtypes and shapes of what they are given on every call, because
the program runs on any arguments: lists, float32, tape-mode tensors. `grad` on float64
arrays runs a program specialised on them (api.Derivative keys its programs on the rank of
each positional argument that is a float64 array). What analysis/float64s.py knows of each
name of its straight-line body decides which helper calls pass their checks; those become
the NumPy code of the helper's common case:

    b_sum = seed_for(joint_outline(np.sum, d, e) or ...)    ─▶  b_sum = float64_one
    b_x = index_adjoint(g, x, slice(None, -1))              ─▶  b_x = np.zeros(x.shape)
                                                                b_x[:-1] = g
    b_x = add_at(b_x, h, x, slice(1, None))                 ─▶  b_x[1:] += h
    b_a = multiply_into(b_a, c)                             ─▶  b_a = np.multiply(b_a, c, b_a)
                                 (c of b_a's rank only:         if b_a.shape == c.shape
                                  shapes compared)              else multiply_into(b_a, c)
    b_m = negative_into(b_n)                                ─▶  b_m = np.negative(b_n, b_n)
    b_w = unbroadcast_from(array_of(b) * m, t, w)           ─▶  (b * m: b a float64 number)
    b_A = matmul_vjp_a(g, None, A, B)                       ─▶  b_A = g @ B.T
    b_w = matmul_vjp_b(g, None, X, w)                       ─▶  b_w = X.T @ g
    b_s = unbroadcast(g, s)                                 ─▶  b_s = g
                                                            (of one shape, or numbers)
    b_c = unbroadcast(g, c)      (c: a Python float)        ─▶  b_c = np.add.reduce(g, axis=(0,))
    b_z = unbroadcast(g, z)      (of one rank: shapes       ─▶  b_z = g if g.shape == z.shape
                                  compared when it runs)            else unbroadcast(g, z)
    m = np.max(S, axis=1, keepdims=True)                    ─▶  m = np.maximum.reduce(S, ...)

An outline (transform/outline.py) that only the seed read is then dropped, where its
operands are known to broadcast (one shape class): it would have raised nothing.
Statements inside loops and branches are rewritten too, on what holds there
(analysis/float64s.py follows loops and branches, and what the tape's pops hold).
"""
from __future__ import annotations

from collections import Counter
from typing import NamedTuple

import gast
import numpy as np

from srcad.kernels import outlines, adjoints as helpers
from srcad.compiler.analysis.float64s import (FLOAT, INT, Known, Knowledge, constant, dropped_axes,
                                     is_array, is_number, same_shape, tape_knowledge)
from srcad.compiler.frontend.trees import NAME_FIELDS, name_nodes, walk
from srcad.compiler.transform.adjoints import assign, load
from srcad.ops.numpy_contractions import matmul_vjp_a, matmul_vjp_b
from srcad.ops.registry import reduction_of
from srcad.runtime.arguments import seed_for

FLOAT64_ONE = np.float64(1.0)  # the seed of a float64 number
_IN_PLACE = {helpers.add_into: np.add, helpers.subtract_into: np.subtract,
             helpers.multiply_into: np.multiply, helpers.divide_into: np.true_divide}


def specialise(function: gast.FunctionDef, arrays: dict, shapes: dict, bindings,
               floats: frozenset = frozenset()) -> None:
    """Rewrite the helper calls of `function`'s top-level statements that the knowledge of
    `arrays` (parameter → rank of the float64 array it holds) and `floats` (parameters
    holding Python floats) lets go; `shapes` gives the forward names' shape classes."""
    rewriter = _Rewriter(tape_knowledge(function, arrays, shapes, bindings, floats), bindings)
    body = rewriter.block(function.body)
    for statement in body:  # (the passes below read names bound once, as bound last)
        if isinstance(statement, (gast.For, gast.While, gast.If)):
            rewriter.known.forget(statement)
    body = _unread_values_dropped(body, rewriter.outlined, rewriter.uses, bindings)
    if bindings.named_already(FLOAT64_ONE):
        body = _seed_products_elided(body, rewriter.known, bindings, set(arrays),
                                     rewriter.uses)
    function.body = body


class _Rewriter:
    def __init__(self, known: Knowledge, bindings):
        self.known, self.bindings = known, bindings
        self.outlined = set()  # the statements that make outlines known to raise nothing
        self.uses = _UsesOf(bindings)  # the names of the assignments the rewrite kept

    def rewritten(self, statement) -> list:
        """The statements `statement` becomes (itself where no rewrite applies)."""
        if isinstance(statement, gast.Assign) and len(statement.targets) == 1 \
                and isinstance(statement.targets[0], gast.Name):
            value = statement.value
            names = [statement.targets[0], value] if type(value) is gast.Name \
                else [statement.targets[0]]
            statement.value = self._inner_calls_rewritten(value, names)
            replaced = self._assignment(statement, statement.targets[0].id, statement.value)
            if replaced is not None:
                return replaced
            reduction = self._ufunc_reduction(statement.value)  # (on what precedes it)
            if self._raises_nothing(statement.value):
                self.outlined.add(id(statement))
            self.known.learn(statement)
            if reduction is not None:
                statement.value = reduction
            elif statement.value is value:  # (the names found are those under it)
                self.uses[id(statement)] = statement, names
            return [statement]
        if not self.known.through(statement, self.block):
            self.known.learn(statement)
        return [statement]

    def block(self, statements: list) -> list:
        return [new for statement in statements for new in self.rewritten(statement)]

    def _raises_nothing(self, value) -> bool:
        """Whether `value` is `outline(fn, ..)` or a sum's or mean's `reduction_outline` of
        float64 operands known to broadcast (one shape class, or numbers): its outline is
        known, and it would have raised nothing."""
        if not (isinstance(value, gast.Call) and len(value.args) >= 2 and not value.keywords):
            return False
        callee = self.bindings.callee(value.func)
        if not (callee is outlines.outline or callee is outlines.reduction_outline
                and len(value.args) == 2
                and self.bindings.callee(value.args[0]) in (np.sum, np.mean)):
            return False
        operands = [self.known.value_of(argument) for argument in value.args[1:]]
        if not all(o in (INT, FLOAT) or isinstance(o, Known) for o in operands):
            return False
        classes = {o.shape for o in operands if isinstance(o, Known) and o.form != "number"}
        return len(classes) <= 1 and None not in classes or len(operands) == 1 \
            and isinstance(operands[0], Known)

    def _inner_calls_rewritten(self, value, names: list):
        """`value` with each `reduced_size(x, None)` of a float64 array `x` read as `x.size`
        (a third of a microsecond against one): of `x` itself, or of an array bound now
        of x's shape class where `x` is an outline (the mean of a value not computed); and
        each `unbroadcast(g, like)` inside it (`accumulate(b, unbroadcast(g * h, k))`)
        whose `g` is of `like`'s shape class made `g`; each `array_of(b)` of a float64
        number `b` made `b`. The names under the calls rewritten are added to `names`."""
        self._calls_inside_rewritten(value, names)
        if self._number_wrapped(value):
            return value.args[0]
        return self._size_of(value) or value if isinstance(value, gast.Call) else value

    def _calls_inside_rewritten(self, node, names: list) -> None:
        """Each call under `node` rewritten (`_inner_call_rewritten`), outer before inner:
        a recursion into the fields that may hold calls (walking every node, contexts and
        operators too, cost a tenth of a long function's first call), as `name_nodes`
        searches them: the names it meets, those of the calls rewritten, go to `names`."""
        for field in NAME_FIELDS[type(node)]:
            child = getattr(node, field, None)
            if type(child) is list:
                child[:] = [self._inner_call_rewritten(item) for item in child]
                for item in child:
                    if type(item) is gast.Name:
                        names.append(item)
                    elif isinstance(item, gast.AST) and type(item) is not gast.Constant:
                        self._calls_inside_rewritten(item, names)
            elif type(child) is gast.Name:
                names.append(child)
            elif isinstance(child, gast.AST) and type(child) is not gast.Constant:
                if type(child) is gast.Call:
                    child = self._inner_call_rewritten(child)
                    setattr(node, field, child)
                    if type(child) is gast.Name:  # (`array_of(b)` made `b`)
                        names.append(child)
                        continue
                self._calls_inside_rewritten(child, names)

    def _inner_call_rewritten(self, node):
        if not isinstance(node, gast.Call):
            return node
        if len(node.args) == 2 and not node.keywords \
                and self.bindings.callee(node.func) is helpers.unbroadcast \
                and same_shape(*map(self.known.value_of, node.args)):
            return node.args[0]
        if self._number_wrapped(node):
            return node.args[0]
        return self._size_of(node) or node

    def _number_wrapped(self, node) -> bool:
        """Whether `node` is `array_of(b)` of a float64 number `b`: NumPy's float64 meets a
        list as a 0-d array does, without the call."""
        return isinstance(node, gast.Call) and len(node.args) == 1 and not node.keywords \
            and self.bindings.callee(node.func) is outlines.array_of \
            and is_number(self.known.value_of(node.args[0]), outline=False)

    def _size_of(self, call):
        """`x.size` for `call`, `reduced_size(x, None)` whose `x` has a float64 array of
        its shape class bound now, else None."""
        if not (len(call.args) in (1, 2) and not call.keywords
                and self.bindings.callee(call.func) is helpers.reduced_size
                and (len(call.args) == 1 or constant(call.args[1], type(None)))
                and isinstance(call.args[0], gast.Name)):
            return None
        operand = self.known.value_of(call.args[0])
        if is_array(operand):
            sized = call.args[0].id
        elif isinstance(operand, Known) and operand.form == "array" and operand.shape is not None:
            sized = next((name for name, known in self.known.facts.items()  # (a name read
                          if is_array(known) and known.shape == operand.shape  # anew: one
                          and name not in self.known.unsure), None)            # bound here)
            if sized is None:
                return None
        else:
            return None
        return gast.Attribute(load(sized), "size", gast.Load())

    def _ufunc_reduction(self, value):
        """`np.add.reduce(x, axis=None)` for `np.sum(x)` of an array `x` (likewise max, min,
        prod), or None: the same sum, without NumPy's 1.5 us of dispatch in Python."""
        if not (isinstance(value, gast.Call) and len(value.args) == 1):
            return None
        ufunc = reduction_of(self.bindings.callee(value.func))
        operand = self.known.value_of(value.args[0])
        options = {keyword.arg: keyword.value for keyword in value.keywords}
        if not isinstance(ufunc, np.ufunc) or not (is_array(operand) and operand.rank) \
                or set(options) - {"axis", "keepdims"} \
                or not all(isinstance(option, gast.Constant) for option in options.values()):
            return None
        options.setdefault("axis", gast.Constant(None, None))  # (reduce's default is axis 0)
        function = gast.Attribute(gast.Attribute(load(self._numpy()), ufunc.__name__,
                                                 gast.Load()), "reduce", gast.Load())
        return gast.Call(function, value.args,
                         [gast.keyword(name, option) for name, option in options.items()])

    def _assignment(self, statement, target: str, value):
        """The statements `target = value` becomes, or None where it stays."""
        if isinstance(value, gast.BoolOp) and isinstance(value.op, gast.Or):
            known = self._outline(value.values[0])
            self.known.set(target, known)
            if known is not None:
                self.outlined.add(id(statement))
            return [statement]
        if not isinstance(value, gast.Call) or value.keywords:
            return None
        callee = self.bindings.callee(value.func)
        arguments = [self.known.value_of(argument) for argument in value.args]
        if callee is seed_for and is_number(arguments[0]):
            self.known.set(target, Known("number"))
            return [assign(target, load(self.bindings.name_for("float64_one", FLOAT64_ONE)))]
        if callee is outlines.cotangent_number and is_number(arguments[0], outline=False):
            self.known.set(target, arguments[0])
            return [assign(target, value.args[0])]
        if callee is helpers.index_adjoint:
            return self._index_adjoint(target, value)
        if callee is helpers.add_at:
            return self._add_at(target, value)
        if callee is helpers.accumulate and len(arguments) == 2 \
                and all(isinstance(a, Known) and not a.outline for a in arguments):
            self.known.set(target, self.known.value_of(value))  # (neither is None)
            return [assign(target, gast.BinOp(value.args[0], gast.Add(), value.args[1]))]
        if callee in _IN_PLACE and len(arguments) == 2:
            return self._in_place(target, _IN_PLACE[callee], value, arguments)
        if callee is helpers.negative_into and len(arguments) == 1 and is_array(arguments[0]) \
                and isinstance(value.args[0], gast.Name):
            self.known.set(target, arguments[0])
            negative = gast.Attribute(load(self._numpy()), "negative", gast.Load())
            return [assign(target, gast.Call(negative, [value.args[0], value.args[0]], []))]
        if callee is helpers.unbroadcast and len(arguments) == 2 and same_shape(*arguments):
            self.known.set(target, arguments[0]._replace(shape=arguments[1].shape))
            return [assign(target, value.args[0])]
        if callee is helpers.unbroadcast and len(arguments) == 2 \
                and is_number(arguments[0], outline=False) and is_number(arguments[1]):
            self.known.set(target, arguments[0])  # (a number's cotangent, for a number)
            return [assign(target, value.args[0])]
        if callee is helpers.unbroadcast and len(arguments) == 2 and arguments[1] == FLOAT \
                and is_array(arguments[0]) and arguments[0].rank:  # (a Python float's: the sum)
            self.known.set(target, Known("number"))
            axes = gast.Tuple([gast.Constant(a, None) for a in range(arguments[0].rank)],
                              gast.Load())
            total = gast.Attribute(gast.Attribute(load(self._numpy()), "add", gast.Load()),
                                   "reduce", gast.Load())
            return [assign(target, gast.Call(total, [value.args[0]],
                                             [gast.keyword("axis", axes)]))]
        if callee in (matmul_vjp_a, matmul_vjp_b) and len(arguments) == 4:
            return self._matmul(target, callee is matmul_vjp_a, value.args, arguments)
        if callee in (helpers.unbroadcast, outlines.unbroadcast_from):
            return self._unbroadcast_checked(target, value, arguments)
        return None

    def _unbroadcast_checked(self, target, call, arguments):
        """`unbroadcast(g, x)` (or `unbroadcast_from(g, out, x)`) of a float64 array `g`
        and float64 arrays or outlines of its rank, of shapes not known to be one, as `g`
        where the shapes, compared when it runs, are one, and the call where they are not:

            b_z = unbroadcast(multiply_into(b, y), z)  ─▶  b_z = multiply_into(b, y)
                                                          b_z = b_z if b_z.shape == z.shape
                                                              else unbroadcast(b_z, z)

        (a comparison of two tuples, where the call reads attributes and compares them too,
        behind a call)."""
        g, *likes = arguments
        if not (is_array(g) and g.rank is not None and len(call.args) in (2, 3)
                and all(isinstance(node, gast.Name) and node.id != target
                        for node in call.args[1:])
                and all(isinstance(like, Known) and like.rank == g.rank for like in likes)):
            return None
        known = self.known.value_of(call)
        computed = call.args[0]
        held = computed.id if isinstance(computed, gast.Name) else target  # (g, computed once)
        first = assign(target, computed)
        first = self._assignment(first, target, computed) or [first]  # (a helper's rewritten)
        self.known.set(target, g._replace(shape=known.shape) if known is not None else g)
        test = gast.Compare(gast.Attribute(load(held), "shape", gast.Load()),
                            [gast.Eq()] * len(likes),
                            [gast.Attribute(load(node.id), "shape", gast.Load())
                             for node in call.args[1:]])
        call.args[0] = load(held)
        checked = assign(target, gast.IfExp(test, load(held), call))
        return [checked] if held != target else [*first, checked]

    def _outline(self, call):
        """What `joint_outline(fn, *leaves)` (the first of `joint_outline(...) or
        outline(...)`) is known to be: a float64 outline where every leaf is a float64
        array or outline of one shape class (so the chain broadcasts as the forward sweep
        would have: nothing to check), a number for a full sum or mean."""
        if not (isinstance(call, gast.Call) and call.args and not call.keywords
                and self.bindings.callee(call.func) is outlines.joint_outline):
            return None
        leaves = [self.known.value_of(leaf) for leaf in call.args[1:]]
        if not leaves or not all(isinstance(leaf, Known) and leaf.form == "array"
                                 for leaf in leaves):
            return None
        classes = {leaf.shape for leaf in leaves}
        if len(leaves) > 1 and (len(classes) != 1 or None in classes):
            return None  # (arrays of shapes not known to be one may not broadcast)
        if self.bindings.callee(call.args[0]) in (np.sum, np.mean):
            return Known("number", outline=True)
        ranks = {leaf.rank for leaf in leaves}
        return Known("array", ranks.pop() if len(ranks) == 1 else None, leaves[0].shape, True)

    def _index_adjoint(self, target, call):
        known = self.known.value_of(call)  # (an array of x's shape class, or None)
        if known is None:
            return None
        self.known.set(target, known)
        g, x, index = call.args
        zeros = gast.Call(gast.Attribute(load(self._numpy()), "zeros", gast.Load()),
                          [gast.Attribute(x, "shape", gast.Load())], [])
        written = gast.Subscript(load(target), _index_node(index), gast.Store())
        return [assign(target, zeros), gast.Assign([written], g, None)]

    def _add_at(self, target, call):
        known = self.known.value_of(call)  # (total, of x's shape class, or None)
        total, g, _, index = call.args
        if known is None or not isinstance(total, gast.Name):
            return None
        written = gast.Subscript(load(total.id), _index_node(index), gast.Store())
        statements = [gast.AugAssign(written, gast.Add(), g)]
        if target != total.id:
            statements.append(assign(target, load(total.id)))
        self.known.set(target, known)
        return statements

    def _in_place(self, target, ufunc, helper_call, arguments):
        """`ufunc(total, other, total)` for `add_into(total, other)` and its kind, where
        `other` is a number or of `total`'s shape class; for an array of its rank, of a
        shape not known to be one, where the shapes compared when it runs are one."""
        total, other = arguments
        nodes = helper_call.args
        if not (is_array(total) and isinstance(nodes[0], gast.Name)):
            return None
        product = self._product_of(nodes[1])  # (`add_into(b_w, matmul_vjp_b(...))`)
        if product is not None:
            nodes = [nodes[0], product[0]]
            other = product[1]
        call = gast.Call(gast.Attribute(load(self._numpy()), ufunc.__name__, gast.Load()),
                         [nodes[0], nodes[1], load(nodes[0].id)], [])
        if other in (INT, FLOAT) or isinstance(other, Known) and not other.outline and (
                other.form == "number" or other.shape is not None and other.shape == total.shape):
            self.known.set(target, total)
            return [assign(target, call)]
        if not (is_array(other) and other.rank == total.rank and total.rank is not None
                and isinstance(nodes[1], gast.Name)):
            return None
        self.known.set(target, Known("array", total.rank))  # (of the broadcast shape)
        test = gast.Compare(gast.Attribute(load(nodes[0].id), "shape", gast.Load()), [gast.Eq()],
                            [gast.Attribute(load(nodes[1].id), "shape", gast.Load())])
        return [assign(target, gast.IfExp(test, call, helper_call))]

    def _matmul(self, target, first: bool, nodes, arguments):
        """`matmul_vjp_a`/`_b` of vectors and matrices as the product its common case
        computes: `g @ B.T`, `A.T @ g`, an outer product, or `g * b` for two vectors."""
        product = self._matmul_product(first, nodes, arguments)
        if product is None:
            return None
        self.known.set(target, product[1])
        return [assign(target, product[0])]

    def _product_of(self, node):
        """`(expression, known)` for a call of `matmul_vjp_a`/`_b` that `_matmul` writes
        as a product, else None."""
        if not (isinstance(node, gast.Call) and len(node.args) == 4 and not node.keywords):
            return None
        callee = self.bindings.callee(node.func)
        if callee not in (matmul_vjp_a, matmul_vjp_b):
            return None
        return self._matmul_product(callee is matmul_vjp_a, node.args,
                                    [self.known.value_of(argument) for argument in node.args])

    def _matmul_product(self, first: bool, nodes, arguments):
        g, _, a, b = arguments
        if not (is_array(a) and is_array(b) and a.rank in (1, 2) and b.rank in (1, 2)):
            return None
        ranks = (a.rank, b.rank)
        if not (is_number(g, outline=False) if ranks == (1, 1)
                else is_array(g) and g.rank == (2 if ranks == (2, 2) else 1)):
            return None
        known = Known("array", a.rank if first else b.rank,
                      a.shape if first else b.shape)
        cotangent, other = nodes[0], nodes[3] if first else nodes[2]
        if ranks == (1, 1):
            product = gast.BinOp(cotangent, gast.Mult(), other)
        elif ranks == (2, 1) if first else ranks == (1, 2):  # an outer product
            column = gast.Subscript(cotangent if first else other, gast.Tuple(
                [gast.Slice(None, None, None), gast.Constant(None, None)], gast.Load()),
                gast.Load())
            product = gast.BinOp(column, gast.Mult(), other if first else cotangent)
        elif first:  # g @ B.T, or B @ g for a vector a
            product = gast.BinOp(cotangent, gast.MatMult(), gast.Attribute(
                other, "T", gast.Load())) if ranks == (2, 2) \
                else gast.BinOp(other, gast.MatMult(), cotangent)
        else:  # A.T @ g
            product = gast.BinOp(gast.Attribute(other, "T", gast.Load()), gast.MatMult(),
                                 cotangent)
        return product, known

    def _numpy(self) -> str:
        return self.bindings.name_for("np", np)


def _index_node(index):
    """The index as a subscript writes it: `slice(None, -1)` → `:-1`."""
    parts = index.elts if isinstance(index, gast.Tuple) else [index]
    written = [gast.Slice(*[None if constant(bound, type(None)) else bound
                            for bound in (list(part.args) + [None] * 3)[:3]])
               if isinstance(part, gast.Call) else part for part in parts]
    return gast.Tuple(written, gast.Load()) if isinstance(index, gast.Tuple) else written[0]


class _Uses(NamedTuple):
    """What the passes after the rewrite read of a statement: the names under it it reads,
    binds, and otherwise mentions (deletes, a lambda's parameters), and `x` of
    `x = shape_of(x)`."""

    statement: gast.stmt  # (held: its id stays its own)
    reads: list
    binds: list
    others: list
    shape: str | None


def _uses(statement, names: list, bindings) -> _Uses:
    """The `_Uses` of `statement`, whose names (`name_nodes`) are `names`."""
    reads, binds, others = [], [], []
    for node in names:
        kind = type(node.ctx)
        (reads if kind is gast.Load else binds if kind is gast.Store else others).append(node.id)
    return _Uses(statement, reads, binds, others, _shape_kept(statement, bindings))


class _UsesOf(dict):
    """statement id → `(statement, its names)`, of the names the rewrite's recursion met
    under each assignment it kept (a second search of a long program's body cost a sixth
    of the pass), made its `_Uses` when first asked; a statement of no entry is searched
    (`name_nodes`)."""

    def __init__(self, bindings):
        super().__init__()
        self.bindings = bindings

    def __call__(self, statement) -> _Uses:
        found = self.get(id(statement))
        if found is None:
            return _uses(statement, name_nodes(statement), self.bindings)
        if type(found) is tuple:  # (the statement and its names)
            found = self[id(statement)] = _uses(*found, self.bindings)
        return found


def _unread_values_dropped(body: list, outlined: set, uses_of: _UsesOf, bindings) -> list:
    """`body` without the values nothing reads afterwards, in one sweep from its end that
    reads each statement's names once (`uses_of`; each search of a long program's body
    cost as much as a tenth of the pass):

    - the statements of `outlined` (outlines known to compute nothing and to raise
      nothing) whose names no later statement reads, nor those names in the `del`
      statements that follow;
    - each `x = shape_of(x)` whose Shape nothing mentions afterwards (it stood for an
      adjoint that `unbroadcast` no longer needs) made `del x`: the array is freed as
      before, without a call that makes an object.

    Reads are gathered only while an outline comes earlier, mentions from the first
    `x = shape_of(x)` on (most programs have neither: then nothing is walked). A later
    `del x` mentions `x` unless an outline of `x` it deletes is dropped: those come after
    the Shape (it reads an outline of `x` bound before it), so are dropped by the time the
    sweep reaches it."""
    first = next((i for i, statement in enumerate(body) if _shape_kept(statement, bindings)),
                 len(body)) if bindings.named_already(helpers.shape_of) else len(body)
    if not outlined and first == len(body):
        return body
    earlier = sum(id(statement) in outlined for statement in body)
    read, mentioned, deleted, removed = set(), set(), set(), set()
    kept, deletes = [], []
    for position in range(len(body) - 1, -1, -1):
        statement = body[position]
        if id(statement) in outlined:
            earlier -= 1
            if statement.targets[0].id not in read:
                removed.add(statement.targets[0].id)
                continue
        kept.append(statement)
        shaped = position >= first
        if type(statement) is gast.Delete:
            deletes.append(statement)
            for target in statement.targets if earlier or shaped else ():
                if type(target) is gast.Name:
                    if shaped:
                        deleted.add(target.id)
                    continue
                names = name_nodes(target)  # (`del x[i]` reads x and i)
                if earlier:
                    read.update([node.id for node in names if type(node.ctx) is gast.Load])
                if shaped:
                    mentioned.update([node.id for node in names])
            continue
        if not (earlier or shaped):
            continue
        uses = uses_of(statement)
        if earlier:
            read.update(uses.reads)
        if not shaped:
            continue
        if uses.shape is not None and uses.shape not in mentioned \
                and (uses.shape not in deleted or uses.shape in removed):
            kept[-1] = gast.Delete([gast.Name(uses.shape, gast.Del(), None, None)])
            mentioned.add(uses.shape)
            continue
        mentioned.update(uses.reads)
        mentioned.update(uses.binds)
        mentioned.update(uses.others)
    for statement in deletes:
        statement.targets = [t for t in statement.targets
                             if not (isinstance(t, gast.Name) and t.id in removed)]
    kept.reverse()
    return [s for s in kept if not (type(s) is gast.Delete and not s.targets)]


def _shape_kept(statement, bindings) -> str | None:
    """`x` of a statement `x = shape_of(x)`, else None."""
    name = _single_target(statement)
    value = getattr(statement, "value", None)
    if name is None or not (isinstance(value, gast.Call) and len(value.args) == 1
                            and isinstance(value.args[0], gast.Name)
                            and value.args[0].id == name
                            and bindings.callee(value.func) is helpers.shape_of):
        return None
    return name


def _seed_products_elided(body: list, known: Knowledge, bindings, parameters: set,
                          uses_of: _UsesOf) -> list:
    """`body` without the products of the seed 1.0 and a float64 array `e` that it can do
    without. Such a product, `t = b * e` with `b` the seed of a sum (or a copy of it), is
    the cotangent of the other factor of a product summed; computed, it costs one more
    array and one more pass over memory, for `e`'s own values:

        t = b_sum * x                              (x: an argument)
        b_y = add_into(b_y, multiply_into(t, c))   ─▶  b_y = add_into(b_y, multiply_into(c, x))
        b_x = b_sum * e                            ─▶  b_x = e   (e: made here, read no more)

    (`c` a new array: `np.cos(y)`).

    The product's one reader multiplying it into a new array writes `e` into that array
    instead; an array `e` of the function's own (a ufunc's or an operator's, bound once)
    that nothing reads afterwards gives the product its memory. Names bound more than once
    are left alone: what is known of them holds where they are bound last."""
    one = bindings.name_for("float64_one", FLOAT64_ONE)
    bound, reads = Counter(), Counter()
    for statement in body:
        uses = uses_of(statement)
        bound.update(uses.binds)
        reads.update(uses.reads)
    ones = {one}
    made_here = set()  # arrays of the function's own: a ufunc's or an operator's, new
    kept, dropped = [], set()
    for position, statement in enumerate(body):
        target = _single_target(statement)
        if target is None:
            kept.append(statement)
            continue
        value, once = statement.value, bound[target] == 1
        if once and isinstance(value, gast.Name) and value.id in ones:
            ones.add(target)
        elif once and _makes_new_array(value, known, bindings):
            made_here.add(target)
        factor = _times_one(value, ones)
        if factor is None or bound[factor] != (factor not in parameters) \
                or not is_array(known.value_of(load(factor))):  # (bound once, or an argument)
            kept.append(statement)
            continue
        reader = once and _multiplied_into_new_array(body[position + 1:], target, reads, known,
                                                     bindings)
        if reader:  # (the new array takes `e`'s values: t is not made)
            reader.args = [reader.args[1], load(factor)]
            dropped.add(target)
            continue
        if factor in made_here and factor not in parameters and reads[factor] == 1:
            statement.value = load(factor)  # (t takes e's array: nothing reads e again)
        kept.append(statement)
    for statement in kept:  # (`del t` of a product not made)
        if isinstance(statement, gast.Delete):
            statement.targets = [t for t in statement.targets
                                 if not (isinstance(t, gast.Name) and t.id in dropped)]
    return [s for s in kept if not (isinstance(s, gast.Delete) and not s.targets)]


def _single_target(statement) -> str | None:
    if isinstance(statement, gast.Assign) and len(statement.targets) == 1 \
            and isinstance(statement.targets[0], gast.Name):
        return statement.targets[0].id
    return None


def _times_one(value, ones: set) -> str | None:
    """`e` of `value`, where it is `one * e` or `e * one` of names, `one` among `ones`."""
    if not (isinstance(value, gast.BinOp) and isinstance(value.op, gast.Mult)
            and isinstance(value.left, gast.Name) and isinstance(value.right, gast.Name)):
        return None
    if value.left.id in ones and value.right.id not in ones:
        return value.right.id
    if value.right.id in ones and value.left.id not in ones:
        return value.left.id
    return None


def _makes_new_array(value, known: Knowledge, bindings) -> bool:
    """Whether `value` surely gives a float64 array no other name holds: an operator on
    arrays and numbers, or a ufunc of one output called with its inputs alone."""
    if not is_array(known.value_of(value)):
        return False
    if isinstance(value, gast.BinOp):
        return True
    if isinstance(value, gast.Call) and not value.keywords:
        callee = bindings.callee(value.func)
        return isinstance(callee, np.ufunc) and callee.nout == 1 and len(value.args) == callee.nin
    return False


def _multiplied_into_new_array(rest: list, name: str, reads: Counter, known, bindings):
    """The call `multiply_into(name, other)` in `rest`, where it is `name`'s one reader and
    `other` a new float64 array of `name`'s shape class; None where there is none."""
    if reads[name] != 1:
        return None
    for statement in rest:
        for node in walk(statement):
            if isinstance(node, gast.Call) and len(node.args) == 2 and not node.keywords \
                    and isinstance(node.args[0], gast.Name) and node.args[0].id == name \
                    and bindings.callee(node.func) is helpers.multiply_into:
                mine, other = known.value_of(node.args[0]), known.value_of(node.args[1])
                if _makes_new_array(node.args[1], known, bindings) and is_array(mine) \
                        and mine.shape is not None and other.shape == mine.shape:
                    return node
                return None
    return None
