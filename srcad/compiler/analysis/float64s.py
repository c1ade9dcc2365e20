"""float64s: what is known of each value of generated straight-line code, where some
parameters hold float64 arrays of known ranks (transform/specialise.py acts on it).

A value is `Known` when it surely has dtype float64: an array (of a rank, and of a shape
class of analysis/shapes.py, where known), a NumPy float64 number, or either. The knowledge
flows from the parameters through the operations NumPy's promotion keeps in float64 (found
by running the operation on sample numbers of the operands' kinds: a float64 operand meets
a Python int or float and stays float64), reductions, matmul, basic indexing and the
backward sweep's helpers whose result's kind is that of an operand. A value computed from
arrays of one shape class elementwise has that class; a value of no class gets one of its
own where it is bound, so that what is computed from it elementwise shares it.

Loops and branches are followed too. A branch's arms are joined: what both say of a name.
A loop's first statement sees what holds at every trip's start: what holds before the
loop and after its body, found by going round until nothing changes (a few rounds; where
that does not settle, nothing of what the loop binds). Shape classes are made per
execution, so that a class never joins values of two trips; a name whose class the join
loses gets one of its own at the loop's head. A value popped from the tape (a recorded
name's old value, in the backward sweep) is what every push under its key
(`recording.push`'s `tape_key`) is known to push, learnt by a pass over the whole function
before (`pushes`), without shape classes, but for those that hold wherever a name is read
(a parameter's, `shapes`', a `filled` buffer's length). A recorded name pushed while it
still holds the None it starts with is never read so (the function would have read a
name it had not bound): that push, and that None where paths join, say nothing.
"""
from __future__ import annotations

import functools
import itertools
import operator
from typing import NamedTuple

import gast
import numpy as np

from srcad.compiler.analysis.shapes import Reduced
from srcad.compiler.frontend.trees import NAME_FIELDS, blocks, name_nodes, statements_in
from srcad.ops.fused_softmax import softmax_vjp
from srcad.ops.numpy_arrays import filled
from srcad.ops.registry import vjp_rules
from srcad.kernels import outlines, adjoints as helpers
from srcad.runtime.arguments import seed_for


class Known(NamedTuple):
    """A value of dtype float64: form "array" (of `rank` where known), "number" (a NumPy
    float64) or "either"; `shape` its shape class where known; `outline` for an outline
    of such a value (transform/outline.py), which is not computed. (A named tuple: a pass
    makes hundreds, and a frozen dataclass took 2-3 us to make or `replace`.)"""

    form: str
    rank: int | None = None
    shape: object = None
    outline: bool = False


INT, FLOAT = "int", "float"  # Python numbers (`x.shape[1]`, a constant)
SHAPE = "shape"              # a tuple of Python ints (`x.shape`)
_SAMPLES = {INT: 2, FLOAT: 0.5}
_OPERATORS = {gast.Add: operator.add, gast.Sub: operator.sub, gast.Mult: operator.mul,
              gast.Div: operator.truediv, gast.Pow: operator.pow}
REDUCTIONS = (np.sum, np.mean, np.max, np.min, np.amax, np.amin, np.prod)
_WRITTEN_INTO = {helpers.add_into: operator.add, helpers.subtract_into: operator.sub,
                 helpers.multiply_into: operator.mul, helpers.divide_into: operator.truediv}


class Knowledge:
    """What is known of each name, statement after statement of a function's body."""

    def __init__(self, arrays: dict, shapes: dict, bindings, floats=frozenset(),
                 popped=None, bound=frozenset(), volatile=frozenset(),
                 sometimes_unset=frozenset()):
        """`arrays`: parameter → the rank of the float64 array it holds; `shapes`: the
        forward names' shape classes; `bindings` resolves the callees of generated code;
        `floats`: parameters holding Python floats; `popped`: tape key → what each value
        popped under it is known to be (`tape_knowledge`); `bound`: the names bound
        before the body runs (its parameters, its globals); `volatile`: names that code
        elsewhere may rebind (declared global, or nonlocal in a function inside);
        `sometimes_unset`: the tape keys some of whose pushes push a starting None."""
        self.facts = {name: Known("array", rank, shapes.get(name))
                      for name, rank in arrays.items()}
        self.facts.update(dict.fromkeys(floats, FLOAT))
        self.shapes, self.bindings = shapes, bindings
        self.lasting = set(shapes.values())  # classes that hold wherever a name is read
        self.popped = popped or {}
        self.unset = set()  # recorded names still holding the None they start with
        self.unsure = set()  # names known where the program reads them, which may hold
        #                      such a None elsewhere (a join, a pop): read by the program
        #                      alone, never by a rewrite
        self.sometimes_unset = sometimes_unset
        self.unset_pushes = set()  # tape keys a push of a starting None learnt is under
        self.bound = {*bound, *arrays, *floats}  # names bound on the way here
        self.volatile = volatile  # names a call may rebind: known nowhere
        self.pushed = {}  # tape key → what its pushes learnt push (while `gathering`)
        self.seen = set()  # the push calls learnt (while `gathering`)
        self.popping = False  # whether a pop came before
        self.pushes_after_pops = False  # whether a push learnt came after a pop
        self.gathering = False
        self._classes = itertools.count()
        self._journals = []  # per branch being followed: name → what held before it changed

    def learn(self, statement) -> None:
        """Take in what `statement`, which runs next, binds."""
        if isinstance(statement, gast.Assign) and len(statement.targets) == 1 \
                and isinstance(statement.targets[0], gast.Name):
            target = statement.targets[0].id
            if getattr(statement, "starts_unbound", False):
                self._touch(target)
                self.facts.pop(target, None)
                self.unset.add(target)
                self.bound.add(target)
                return
            known = self.value_of(statement.value)
            if isinstance(known, Known) and known.form != "number" and known.shape is None:
                known = known._replace(shape=self.shapes.get(target) or self.new_class())
            self.set(target, known)
            if getattr(statement.value, "tape_key", None) in self.sometimes_unset:
                self.unsure.add(target)
            return
        if isinstance(statement, gast.Expr) and hasattr(statement.value, "tape_key"):
            self._learn_push(statement.value)
            return
        if not self.through(statement, self.learn_block):
            self.forget(statement)

    def learn_block(self, block: list) -> list:
        for statement in block:
            self.learn(statement)
        return block

    def new_class(self) -> tuple:
        """A shape class of its own, for a value bound now (each execution of a statement
        in a loop makes a value of a shape of its own)."""
        return ("bound", next(self._classes))

    def forget(self, statement) -> None:
        """Take in `statement` knowing nothing of what it binds."""
        for name in name_nodes(statement):  # a loop, a branch, an unpacking, a `del`:
            if isinstance(name.ctx, (gast.Store, gast.Del)):  # forget what it binds
                self._touch(name.id)
                self.facts.pop(name.id, None)
                self.unset.discard(name.id)
                self.unsure.discard(name.id)
                self.bound.add(name.id)
        if type(statement) is gast.Delete:  # (a third of a gradient program: defines nothing)
            return
        for defined in [statement, *(s for block in blocks(statement) for s in block)]:
            if isinstance(defined, (gast.FunctionDef, gast.ClassDef)):
                self._touch(defined.name)
                self.facts.pop(defined.name, None)

    def set(self, name: str, known) -> None:
        self._touch(name)
        self.unset.discard(name)
        self.unsure.discard(name)
        self.bound.add(name)
        if known is None:
            self.facts.pop(name, None)
        else:
            self.facts[name] = known

    # ---- loops and branches ------------------------------------------------------------
    def through(self, statement, run) -> bool:
        """Follow the loop or branch `statement`, `run(block) → block` taking in (and
        rewriting) each of its blocks; False for any other statement."""
        if isinstance(statement, gast.If):
            self._journals.append({})
            statement.body = run(statement.body)
            before_body = self._journals.pop()  # (what the body changed, as it was)
            taken = {name: self._entry(name) for name in before_body}
            for name, entry in before_body.items():
                self._put(name, entry)
            self._journals.append({})
            statement.orelse = run(statement.orelse)
            before_orelse = self._journals.pop()
            for name in [*taken, *(name for name in before_orelse if name not in taken)]:
                one = taken[name] if name in taken else before_orelse[name]
                self._put(name, self._joined_entry(one, self._entry(name)))
            return True
        if not isinstance(statement, (gast.For, gast.While)) or statement.orelse:
            return False
        head = self._loop_head(statement)
        self._restore(head)
        self._enter(statement)
        statement.body = run(statement.body)
        self._restore(head)
        if _leaves_early(statement):
            self.forget(statement)
        return True

    def _loop_head(self, loop):
        """What holds at the start of every trip of `loop`: the state before it joined
        with that after its body, until that settles; or the state before it, without
        what the loop binds."""
        entry = self._state()
        if not _goes_round_plainly(loop):
            self.forget(loop)
            return self._state()
        head = self._at_head(entry, None, loop)
        gathering, self.gathering = self.gathering, False  # (rounds assume; gather after)
        try:
            for _ in range(_ROUNDS):
                self._restore(head)
                self._enter(loop)
                self.learn_block(loop.body)
                again = self._at_head(entry, self._state(), loop)
                if again == head:
                    return head
                head = again
        finally:
            self.gathering = gathering
        self._restore(entry)
        self.forget(loop)
        return self._state()

    def _enter(self, loop) -> None:
        if isinstance(loop, gast.For):
            for name in name_nodes(loop.target):
                self.set(name.id, None)

    def _at_head(self, entry, end, loop):
        """What holds at the head of `loop`, reached from `entry` or from the end of a trip
        (`end`; None at the first visit): the classes made at its previous visit dropped;
        names of one class on both paths (a cotangent and the value it is the cotangent
        of) share one made here, and each other array has one of its own."""
        facts, unset, bound, unsure = entry if end is None else self._joined(entry, end)
        pairs = {}
        for name, known in facts.items():
            if isinstance(known, Known) and known.shape is not None \
                    and _made_at(known.shape, id(loop)):
                known = facts[name] = known._replace(shape=None)
            if isinstance(known, Known) and known.form != "number" and known.shape is None:
                pairs.setdefault(_classes_of(name, entry, end), []).append(name)
        for pair, names in pairs.items():
            for group in ([name] for name in names) if None in pair else [names]:
                shape = ("head", id(loop), min(group))
                for name in group:
                    facts[name] = facts[name]._replace(shape=shape)
        return facts, unset, bound, unsure

    def _state(self):
        return (dict(self.facts), frozenset(self.unset), frozenset(self.bound),
                frozenset(self.unsure))

    def _restore(self, state) -> None:
        facts, unset, bound, unsure = state
        if self._journals:  # (a loop in a branch: each name it may change, as it was)
            for name in [*self.facts, *facts, *sorted(self.unset | self.bound | self.unsure
                                                       | unset | bound | unsure)]:
                self._touch(name)
        self.facts, self.unset, self.bound = dict(facts), set(unset), set(bound)
        self.unsure = set(unsure)

    def _touch(self, name: str) -> None:
        """Note, in each branch being followed, what holds of `name` before it changes."""
        for journal in self._journals:
            if name not in journal:
                journal[name] = self._entry(name)

    def _entry(self, name: str) -> tuple:
        """What holds of `name` now: `(known, unset, bound, unsure)`."""
        return _entry_in((self.facts, self.unset, self.bound, self.unsure), name)

    def _put(self, name: str, entry: tuple) -> None:
        known, unset, bound, unsure = entry
        if known is None:
            self.facts.pop(name, None)
        else:
            self.facts[name] = known
        for held, member in ((self.unset, unset), (self.bound, bound), (self.unsure, unsure)):
            if member:
                held.add(name)
            else:
                held.discard(name)

    def _joined_entry(self, one: tuple, other: tuple) -> tuple:
        """What holds of a name after either of two paths, given what holds of it on each
        (`_entry`s). Where the name is not bound on one path, or holds the None a recorded
        name starts with, that path says nothing of it: it is never read so (the function
        would have read a name it had not bound); the name is `unsure` then."""
        (a, a_unset, a_bound, a_unsure), (b, b_unset, b_bound, b_unsure) = one, other
        a_silent = a is None and (a_unset or not a_bound)
        b_silent = b is None and (b_unset or not b_bound)
        if a_silent or b_silent:  # (not the class: the values differ)
            known = self._lasting(b if a_silent else a)
        else:
            known = meet(a, b)
        unread = known is None and (a_unset or b_unset) and (a_unset or not a_bound) \
            and (b_unset or not b_bound)
        doubtful = a_silent or b_silent or a_unsure or b_unsure
        return known, unread, a_bound or b_bound, doubtful and known is not None

    def _joined(self, one, other):
        """`_joined_entry` of every name of two states, names in the order the paths bound
        them (so that the program made is the same in every process)."""
        facts, unset, unsure = {}, set(), set()
        names = [*one[0], *(name for name in other[0] if name not in one[0])]
        for name in names + list((one[1] | other[1]) - set(names)):  # (unset: in no facts)
            known, unread, _, doubtful = self._joined_entry(_entry_in(one, name),
                                                            _entry_in(other, name))
            if known is not None:
                facts[name] = known
            if unread:
                unset.add(name)
            if doubtful:
                unsure.add(name)
        return facts, frozenset(unset), one[2] | other[2], frozenset(unsure)

    # ---- the tape ----------------------------------------------------------------------
    def _learn_push(self, call) -> None:
        key = getattr(call, "tape_key", None)
        if key is None or not self.gathering:
            return
        self.seen.add(id(call))
        self.pushes_after_pops |= self.popping
        pushed, = call.args
        if _pushed_name(pushed, self.bindings) in self.unset:  # (popped back, never read)
            self.unset_pushes.add(key)
            return
        known = self._lasting(self.value_of(pushed))
        self.pushed[key] = meet(self.pushed[key], known) if key in self.pushed else known

    def _lasting(self, known):
        """`known` without a shape class that holds only where it was made."""
        if isinstance(known, Known) and known.shape is not None \
                and not self._lasts(known.shape):
            return known._replace(shape=None)
        return known

    def _lasts(self, shape) -> bool:
        if isinstance(shape, Reduced):
            return self._lasts(shape.of)
        return shape in self.lasting or isinstance(shape, tuple) and shape[:1] == ("filled",)

    def value_of(self, node):
        if isinstance(node, gast.Name):
            return None if node.id in self.volatile else self.facts.get(node.id)
        if isinstance(node, gast.Call) and hasattr(node, "tape_key") and not node.args:
            self.popping = True
            return self.popped.get(node.tape_key)  # (a pop: what its pushes push)
        if isinstance(node, gast.Constant):
            kind = type(node.value)
            return INT if kind is int else FLOAT if kind is float else None
        if isinstance(node, gast.UnaryOp) and isinstance(node.op, (gast.USub, gast.UAdd)):
            return self.value_of(node.operand)
        if isinstance(node, gast.BinOp):
            if isinstance(node.op, gast.MatMult):
                return _product(self.value_of(node.left), self.value_of(node.right))
            function = _OPERATORS.get(type(node.op))
            return function and _elementwise(function, [self.value_of(node.left),
                                                        self.value_of(node.right)])
        if isinstance(node, gast.Attribute):
            base = self.value_of(node.value)
            if is_array(base):
                if node.attr == "shape":
                    return SHAPE
                if node.attr == "T" and base.rank == 2:
                    return Known("array", 2)
                if node.attr == "size":
                    return INT
            return None
        if isinstance(node, gast.Subscript):
            return self._item(node)
        if isinstance(node, gast.Call) and not node.keywords:
            return self._call(node)
        if isinstance(node, gast.Call):
            return self._reduction(node)
        return None

    def _item(self, node):
        base = self.value_of(node.value)
        if base == SHAPE:
            return INT if constant(node.slice, int) else None
        if not is_array(base):
            return None
        dropped = dropped_axes(node.slice)
        if dropped is None or base.rank is None or dropped > base.rank:
            return None
        rank = base.rank - dropped  # (an element of an ndarray is a NumPy number)
        return Known("array", rank) if rank else Known("number")

    def _call(self, node):
        callee = self.bindings.callee(node.func)
        arguments = [self.value_of(argument) for argument in node.args]
        if isinstance(callee, np.ufunc) and callee.nout == 1 and callee.signature is None \
                and callee.nin == len(arguments):
            return _elementwise(callee, arguments)
        if callee is np.matmul and len(arguments) == 2:
            return _product(*arguments)
        if callee is filled and arguments and not any(
                isinstance(argument, gast.Starred) for argument in node.args):
            return Known("array", 1, ("filled", len(arguments)))  # (shape (n,), always)
        if callee in REDUCTIONS and len(arguments) == 1:
            return self._reduction(node)
        if callee is helpers.shape_of and arguments and isinstance(arguments[0], Known):
            return arguments[0]._replace(outline=True)  # (a Shape: the array's rank and class)
        if (callee is helpers.unbroadcast and len(arguments) == 2) \
                or (callee is outlines.unbroadcast_from and len(arguments) == 3):
            # (unbroadcast_from's `g` may also be a number standing for its broadcast)
            g, like = arguments[0], arguments[-1]
            if isinstance(g, Known) and not g.outline and (
                    g.form == "array" or callee is outlines.unbroadcast_from) \
                    and isinstance(like, Known) and like.rank is not None:
                return Known("array" if like.rank else "either", like.rank, like.shape)
        if callee is helpers.index_adjoint and len(arguments) == 3 \
                and dropped_axes(node.args[2]) is not None:  # (g in zeros of x's shape)
            g, x, _ = arguments
            if is_array(x) and x.rank and isinstance(g, Known) and not g.outline:
                return Known("array", x.rank, x.shape)
            return None
        if callee is helpers.add_at and len(arguments) == 4 \
                and dropped_axes(node.args[3]) is not None:  # (g added into total's part)
            total, g, x, _ = arguments
            if is_array(total) and is_array(x) and x.shape is not None \
                    and total.shape == x.shape and isinstance(g, Known) and not g.outline:
                return total
            return None
        if callee in _element_rules() and 2 + _element_rules()[callee] < len(arguments) \
                and is_array(arguments[0]):  # (the element's cotangent: g[i])
            value = arguments[2 + _element_rules()[callee]]
            number = value in (INT, FLOAT) or is_number(value, outline=False)
            return Known("number") if number else Known("either")
        if callee is helpers.accumulate and len(arguments) == 2:
            return _elementwise(operator.add, arguments)
        if callee in _WRITTEN_INTO and len(arguments) == 2:  # (`total op other`, in place)
            return _elementwise(_WRITTEN_INTO[callee], arguments)
        if callee is outlines.outline and len(node.args) >= 2:  # (its elements not computed,
            known = _elementwise(self.bindings.callee(node.args[0]), [  # nor its operands')
                a._replace(outline=False) if isinstance(a, Known) else a for a in arguments[1:]])
            return known._replace(outline=True) if isinstance(known, Known) else None
        if callee is helpers.reduced_size:
            return INT
        if callee is outlines.reduction_outline and len(node.args) == 2 \
                and self.bindings.callee(node.args[0]) in (np.sum, np.mean) \
                and isinstance(arguments[1], Known):  # (a float64 array's or outline's)
            return Known("number", outline=True)
        if callee in (seed_for, outlines.cotangent_number) and isinstance(arguments[0], Known) \
                and arguments[0].form == "number":
            return Known("number")
        if callee is softmax_vjp and len(arguments) >= 2 and is_array(arguments[0]) \
                and isinstance(arguments[1], Known):  # (g, a cotangent of ans, has its shape)
            return arguments[0]._replace(shape=arguments[1].shape)
        return None

    def _reduction(self, node):
        """`np.sum(x, axis=1, keepdims=True)` and the like (constant options): float64
        where `x` is, of `x`'s rank with keepdims, of one axis fewer for one axis."""
        callee = self.bindings.callee(node.func)
        if callee not in REDUCTIONS or len(node.args) != 1:
            return None
        operand = self.value_of(node.args[0])
        options = dict(node.keywords and [(k.arg, k.value) for k in node.keywords])
        if not (isinstance(operand, Known) and not operand.outline) \
                or set(options) - {"axis", "keepdims"} \
                or not all(isinstance(v, gast.Constant) for v in options.values()):
            return None
        axis = options.get("axis", gast.Constant(None, None)).value
        keepdims = options.get("keepdims", gast.Constant(False, None)).value
        if keepdims is True and operand.form == "array" and operand.rank:
            axes = (axis,) if type(axis) is int else axis
            reduced = operand.shape and Reduced(operand.shape, axes, True)
            return Known("array", operand.rank, reduced)
        if axis is None and keepdims is False:
            return Known("number")
        if type(axis) is int and keepdims is False and operand.form == "array" \
                and operand.rank and operand.rank > 1:
            return Known("array", operand.rank - 1)
        return Known("either")


_ROUNDS = 4  # goes round a loop to find what holds at its head, at most


@functools.cache
def _element_rules() -> dict:
    """The rule of each element of a `filled` buffer → the element's position."""
    return {rule: position for position, rule in enumerate(vjp_rules(filled).rules)}


def tape_knowledge(function: gast.FunctionDef, arrays: dict, shapes: dict, bindings,
                   floats=frozenset()) -> Knowledge:
    """A Knowledge of `function`'s body whose pops know what their pushes push, where the
    body has a loop: learnt by the pass that takes it in, as it goes, where every pop
    comes after all the pushes (a gradient program's forward sweep pushes, its backward
    sweep pops); else by passes over the body before (a pass learns pushes of values
    popped in an earlier one). A key is known only where every push under it was learnt
    and its list is used for nothing but pushes, pops and its length."""
    parameters = {node.id for node in name_nodes(function.args)}
    if not _holds_a_loop(function):  # (straight-line code is followed statement by statement)
        return Knowledge(arrays, shapes, bindings, floats, bound=parameters)
    pushes, lists, untrusted, declared, in_order = _tape_uses(function)

    def fresh(popped=None, sometimes_unset=frozenset()) -> Knowledge:
        return Knowledge(arrays, shapes, bindings, floats, popped, parameters | declared,
                         declared, sometimes_unset)

    if in_order:  # (every pop comes after all its pushes: learnt by the pass itself)
        knowledge = fresh()
        knowledge.gathering = True
        knowledge.popped = _LearntPops(knowledge, pushes, lists, untrusted)
        knowledge.sometimes_unset = knowledge.unset_pushes
        return knowledge
    popped, sometimes_unset = {}, frozenset()
    for _ in range(2):
        probe = fresh(popped, sometimes_unset)
        probe.gathering = True
        probe.learn_block(function.body)
        learnt = {key: known for key, known in probe.pushed.items()
                  if known is not None
                  and lists[key] not in untrusted and pushes[key] <= probe.seen}
        sometimes_unset = frozenset(probe.unset_pushes)
        if learnt == popped or not probe.pushes_after_pops:  # (then another pass learns
            popped = learnt                                  # nothing new)
            break
        popped = learnt
    return fresh(popped, sometimes_unset)


def _holds_a_loop(function) -> bool:
    """Whether `function`'s body holds a loop (not the functions it defines): searched
    under its compound statements alone, not its assignments, calls and `del`s (nearly
    all of a long gradient program's statements: a search of each cost 10 ms at 2,000
    lines)."""
    return any(type(statement) not in _SIMPLE and type(statement) is not gast.FunctionDef
               and any(isinstance(inner, (gast.For, gast.While))
                       for inner in statements_in(statement))
               for statement in function.body)


_SIMPLE = frozenset({gast.Assign, gast.AugAssign, gast.AnnAssign, gast.Expr, gast.Delete,
                     gast.Return, gast.Pass, gast.Break, gast.Continue, gast.Raise,
                     gast.Assert, gast.Global, gast.Nonlocal, gast.Import, gast.ImportFrom})


def _entry_in(state: tuple, name: str) -> tuple:
    """What a state `(facts, unset, bound, unsure)` holds of `name`: `(known, unset, bound,
    unsure)`."""
    facts, unset, bound, unsure = state
    return facts.get(name), name in unset, name in bound, name in unsure


class _LearntPops:
    """What the values popped under each tape key are known to be, read off what the pushes
    a Knowledge gathered so far pushed (as `tape_knowledge`'s passes learn it), where every
    pop comes after all the pushes under its key: one pass then learns and uses it."""

    def __init__(self, knowledge: Knowledge, pushes: dict, lists: dict, untrusted: set):
        self.knowledge, self.pushes, self.lists, self.untrusted = \
            knowledge, pushes, lists, untrusted

    def get(self, key):
        known = self.knowledge.pushed.get(key)
        if known is None or self.lists[key] in self.untrusted \
                or not self.pushes[key] <= self.knowledge.seen:
            return None
        return known


def _tape_uses(function):
    """`(pushes, lists, untrusted, declared, in_order)`: the ids of the push calls under
    each tape key, each key's list, the lists something else uses (a push or pop not
    marked, any read but a marked push's or pop's, or `len(list)`), the names declared
    global or nonlocal, and whether every push comes before every pop wherever the body
    runs: none after a pop in the text, and no loop holding both (its next trip would
    push after it popped)."""
    uses = _TapeUses()
    uses.visit(function)
    tape = set(uses.lists.values())
    untrusted = {name.id for name in uses.names
                 if name.id in tape and id(name) not in uses.allowed}
    return uses.pushes, uses.lists, untrusted, frozenset(uses.declared), uses.in_order


class _TapeUses:
    """What `_tape_uses` gathers, in the order of the text: a recursion through the fields
    that may hold names, without a call for a name or a constant (half the nodes)."""

    def __init__(self):
        self.pushes, self.lists, self.allowed, self.names, self.declared = \
            {}, {}, set(), [], set()
        self.loops = []  # [pushes, pops] of each loop the visit is in
        self.popped, self.in_order = False, True

    def visit(self, node) -> None:
        kind = type(node)
        loop = kind is gast.For or kind is gast.While
        if kind is gast.Call:
            self._call(node)
        elif loop:
            self.loops.append([False, False])
        elif kind is gast.Global or kind is gast.Nonlocal:
            self.declared.update(node.names)
        for field in NAME_FIELDS[kind]:
            value = getattr(node, field, None)
            for item in value if type(value) is list else (value,):
                child = type(item)
                if child is gast.Name:
                    if type(item.ctx) is gast.Load:
                        self.names.append(item)
                    if getattr(item, "annotation", None) is not None:
                        self.visit(item.annotation)
                elif child is not gast.Constant and isinstance(item, gast.AST):
                    self.visit(item)
        if loop:
            self.in_order &= not all(self.loops.pop())

    def _call(self, node) -> None:
        function = node.func
        if hasattr(node, "tape_key") and type(function) is gast.Attribute \
                and type(function.value) is gast.Name:
            self.lists[node.tape_key] = function.value.id
            self.allowed.add(id(function.value))
            push = function.attr == "append"
            if push:
                self.pushes.setdefault(node.tape_key, set()).add(id(node))
                self.in_order &= not self.popped
            else:
                self.popped = True
            for loop in self.loops:
                loop[not push] = True
        elif type(function) is gast.Name and function.id == "len" and len(node.args) == 1:
            self.allowed.add(id(node.args[0]))


def meet(a, b):
    """What both `a` and `b` say of a value (None: nothing): float64 where both are, of
    the rank and shape class both have; an outline where either is."""
    if a == b:
        return a
    if not (isinstance(a, Known) and isinstance(b, Known)):
        return None
    return Known(a.form if a.form == b.form else "either",
                 a.rank if a.rank == b.rank else None,
                 a.shape if a.shape == b.shape else None,
                 a.outline or b.outline)


def _goes_round_plainly(loop) -> bool:
    """Whether every trip of `loop` starts where the one before ended: no `continue`, an
    inner loop's counted too (the frontend lowers the function's own to flags)."""
    return not any(isinstance(statement, gast.Continue) for statement in statements_in(loop))


def _leaves_early(loop) -> bool:
    """Whether `loop` may end at a `break`, elsewhere than its head (an inner loop's `break`
    counts too: less is known, never more)."""
    return any(isinstance(statement, gast.Break) for statement in statements_in(loop))


def _classes_of(name: str, entry, end) -> tuple:
    """`name`'s shape classes in the states `entry` and `end` (None where it has none)."""
    return tuple(getattr(state[0].get(name), "shape", None) if state is not None else None
                 for state in (entry, end))


def _made_at(shape, loop_id: int) -> bool:
    """Whether the shape class `shape` was made at the head of the loop `loop_id`."""
    if isinstance(shape, Reduced):
        return _made_at(shape.of, loop_id)
    return isinstance(shape, tuple) and len(shape) == 3 and shape[:2] == ("head", loop_id)


def _pushed_name(pushed, bindings) -> str | None:
    """`x` of a push of `x` or of `shape_of(x)`, else None."""
    if isinstance(pushed, gast.Call) and len(pushed.args) == 1 \
            and bindings.callee(pushed.func) is helpers.shape_of:
        pushed = pushed.args[0]
    return pushed.id if isinstance(pushed, gast.Name) else None


def is_array(known) -> bool:
    """Whether `known` says: a float64 array, computed (no outline)."""
    return isinstance(known, Known) and known.form == "array" and not known.outline


def same_shape(g, like) -> bool:
    """Whether `unbroadcast(g, like)` is `g`: both of one shape class."""
    return is_array(g) and isinstance(like, Known) and like.shape is not None and g.shape == like.shape


def is_number(known, outline: bool = True) -> bool:
    return isinstance(known, Known) and known.form == "number" and (outline or not known.outline)


def _elementwise(function, operands):
    """What `function(*operands)`, elementwise, is known to be: float64 where NumPy's
    promotion of the operands' kinds gives float64 (run on sample numbers), an array where
    an operand is one, of the operands' rank and shape class where they share one; a
    Python number where all operands are (`n - 1`)."""
    if any(operand is None or operand == SHAPE for operand in operands):
        return None
    known = [operand for operand in operands if isinstance(operand, Known)]
    if any(operand.outline for operand in known):
        return None
    if not known and function is operator.pow:
        return None  # (Python's `**` of numbers alone may be complex: (-2) ** 0.5)
    kind = _result_type(function, tuple(FLOAT64 if isinstance(operand, Known) else operand
                                         for operand in operands))
    if kind is None:
        return None
    if not known:
        return {int: INT, float: FLOAT, np.float64: Known("number")}.get(kind)
    if kind is not np.float64:
        return None
    arrays = [operand for operand in known if operand.form != "number"]
    if not arrays:
        return Known("number")
    ranks = {operand.rank for operand in arrays}
    classes = {operand.shape for operand in arrays}
    full = {shape for shape in classes if not isinstance(shape, Reduced)}
    if len(full) == 1 and None not in full and all(shape.of in full for shape in classes - full):
        classes = full  # (`x - np.max(x, axis=1, keepdims=True)` has the shape of `x`)
    rank = max(ranks) if None not in ranks else None
    # (an operation on 0-d arrays alone gives a NumPy number)
    form = "array" if any(operand.form == "array" and operand.rank for operand in arrays) \
        else "either"
    return Known(form, rank if form == "array" else None,
                 classes.pop() if len(classes) == 1 else None)


FLOAT64 = "float64"  # (a float64 operand, for _result_type)


@functools.lru_cache(maxsize=1024)
def _result_type(function, kinds: tuple):
    """The type of `function`'s result on sample numbers of `kinds` (INT, FLOAT, FLOAT64),
    or None where it raises: what NumPy's promotion makes of them."""
    samples = [np.float64(0.5) if kind == FLOAT64 else _SAMPLES[kind] for kind in kinds]
    try:
        with np.errstate(all="ignore"):
            return type(function(*samples))
    except Exception:
        return None


def _product(a, b):
    """`a @ b` of float64 arrays of known ranks."""
    if not (isinstance(a, Known) and isinstance(b, Known) and a.form == b.form == "array"
            and a.rank and b.rank and not a.outline and not b.outline):
        return None
    if a.rank == 1 and b.rank == 1:
        return Known("number")
    rank = max(a.rank, b.rank) if a.rank > 1 and b.rank > 1 else a.rank + b.rank - 2
    return Known("array" if rank else "number", rank)


def constant(node, kind) -> bool:
    return isinstance(node, gast.Constant) and type(node.value) is kind


def dropped_axes(index) -> int | None:
    """The axes a constant basic index drops (an int drops one, a slice none), or None for
    any other index."""
    parts = index.elts if isinstance(index, gast.Tuple) else [index]
    if not parts:
        return None  # (`x[()]` of a 0-d array is a number)
    dropped = 0
    for part in parts:
        if constant(part, int):
            dropped += 1
        elif not constant_slice(part):
            return None
    return dropped


def constant_slice(node) -> bool:
    """`slice(a, b)` or `slice(a, b, c)` of constant ints or None (how the generated code
    passes `x[a:b]`'s index; `slice(b)` alone, which stops at b, is not written so), or a
    `gast.Slice` of such."""
    if isinstance(node, gast.Slice):
        bounds = (node.lower, node.upper, node.step)
        return all(b is None or constant(b, int) or constant(b, type(None)) for b in bounds)
    return (isinstance(node, gast.Call) and isinstance(node.func, gast.Name)
            and node.func.id == "slice" and not node.keywords and 2 <= len(node.args) <= 3
            and all(constant(a, int) or constant(a, type(None)) for a in node.args))
