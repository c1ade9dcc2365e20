"""normalize: fenced function → simple form, one operation per assignment.

The simple form, which every later stage may assume:

    body      := statement* `return NAME`                (a single exit, always last)
    statement := NAME = expr
               | NAME[index] = atom                      (writing into an array or list)
               | NAME, NAME, ... = NAME                  (unpacking a tuple value)
               | expr                                    (run for its effect, not differentiated)
               | if NAME: block else: block
               | NAME.append(atom)                       (lists built in loops, comprehensions)
               | for NAME in NAME: block                 (the iterable is not rebound inside)
               | while NAME: block                       (the block ends by recomputing NAME)
               | break                                   (only as `if flag: break`, see exits)
               | def NAME(...): ...                      (a nested function, kept whole)
    expr      := atom | atom OP atom | UNARYOP atom | callee(atom, ..., key=atom)
               | atom[index] | atom.attr | (atom, ...) | [atom, ...] | {atom: atom, ...}
               | a comparison or f-string, kept whole (its value has no derivative)
    atom      := NAME | constant | tuple of atoms | attribute chain of a global (`np.pi`)

List comprehensions and generator expressions become loops that append to a new list.
Conditions of `if` and `while` are computed into a name by one opaque statement (they
have no derivative; `and`/`or` keep their short-circuit). Conditional expressions and
`and`/`or` used as values become `if` statements. `break`/`continue`/`return` are lowered
first (see exits).

Names: a variable reassigned at the top level of the function gets a new version (`x` →
`x_1`), so straight-line code needs no stack; an assignment inside a branch or loop writes
the current version, and never reads its own target (`x = x * w` goes through a
temporary), so the reverse sweep can restore the old value after using the new one.
The result's `versions` maps each new version to the user's name, and `return_variable`
names the variable `return`s were lowered to (if any). Temporaries are named
after their operation (`sin_0`, `mul_1`). Nodes keep the user's line numbers so later
errors point at the user's code.
"""
from __future__ import annotations

import copy
import inspect
import operator
import types

import gast

from srcad.compiler.frontend.closures import NestedFunctions, convert_closures
from srcad.compiler.frontend.desugar import (Desugaring, buffers_filled, dicts_as_displays,
                                             explicit_super, maps_as_comprehensions,
                                             outs_checked, scatters_as_writes, sets_as_calls,
                                             starred_unpackings)
from srcad.compiler.frontend.exits import lower_exits
from srcad.compiler.frontend.container_writes import container_writes_as_updates
from srcad.compiler.frontend.parse import ParsedFunction, param_names
from srcad.compiler.frontend.scopes import bound_in, stores
from srcad.compiler.frontend.try_blocks import outline_try_blocks
from srcad.compiler.frontend.trees import clone, every_statement, located, new_name, walk
from srcad.compiler.transform.naming import Namer
from srcad.errors import UnsupportedSyntaxError
from srcad.kernels import adjoints
from srcad.kernels.pytrees import is_record_class
from srcad.ops import python_statements
from srcad.ops.python_statements import LIST_UPDATES
from srcad.runtime import methods

OPERATOR_NAMES = {
    gast.Add: "add", gast.Sub: "sub", gast.Mult: "mul", gast.Div: "div", gast.Pow: "pow",
    gast.MatMult: "matmul", gast.FloorDiv: "floordiv", gast.Mod: "mod",
    gast.LShift: "lshift", gast.RShift: "rshift", gast.BitAnd: "bitand",
    gast.BitOr: "bitor", gast.BitXor: "bitxor",
    gast.USub: "neg", gast.UAdd: "pos", gast.Not: "not", gast.Invert: "invert",
}
OPAQUE = (gast.Compare, gast.JoinedStr)
IN_PLACE_OPERATORS = {
    gast.Add: operator.iadd, gast.Sub: operator.isub, gast.Mult: operator.imul,
    gast.Div: operator.itruediv, gast.Pow: operator.ipow, gast.MatMult: operator.imatmul,
    gast.FloorDiv: operator.ifloordiv, gast.Mod: operator.imod, gast.LShift: operator.ilshift,
    gast.RShift: operator.irshift, gast.BitAnd: operator.iand, gast.BitOr: operator.ior,
    gast.BitXor: operator.ixor,
}
# the methods of a list or dict a name may hold that frontend/container_writes.py and
# resolve.py follow or refuse, not a record's to update (normalize._updates_a_record)
_CONTAINER_METHODS = {"append", "extend", "update", "setdefault", "copy", *LIST_UPDATES}


def normalize(parsed: ParsedFunction, namer: Namer, resolver,
              lists=frozenset()) -> gast.FunctionDef:
    """Return a new FunctionDef in simple form; `parsed.node` is left untouched.

    `resolver` tells whether a name is a builtin (`enumerate`, `zip`, `reversed` loops are
    rewritten over indices so their elements' adjoints reach the sequences); `lists` names
    the variables that surely hold lists (`surely_lists`), whose updates container_writes.py
    rewrites."""
    from srcad.runtime.calls import call_jvp, call_vjp  # (what derivative programs call)

    def is_derivative_call(call):
        return resolver.chain_value(call.func) in (call_jvp, call_vjp)
    fn, held = clone(parsed.node), parsed.held  # (a rewrite of a rare construct runs where
    #                                             the function has one; none before makes one)
    if gast.Set in held.kinds or gast.SetComp in held.kinds:
        sets_as_calls(fn, resolver, namer)
    bound_to = [resolver.peek(name) for name in held.names]  # (one lookup of each name)
    if any(value is map for value in bound_to):
        maps_as_comprehensions(fn, resolver)
    if any(value is dict for value in bound_to):
        dicts_as_displays(fn, resolver)
    dicts = container_writes_as_updates(fn, lists, resolver, namer, held)
    explicit_super(fn, resolver.fn.__code__)
    scatters_as_writes(fn, resolver, namer)
    if gast.Try not in held.kinds:  # (an exception caught between a buffer and its writes
        buffers_filled(fn, resolver, namer)  # would find it unbound or as it was)
    if "out" in held.keywords:
        outs_checked(fn, resolver, namer, parsed)
    if gast.Starred in held.kinds:
        starred_unpackings(fn, resolver, namer)
    if gast.Try in held.kinds:
        outline_try_blocks(fn, resolver, namer, parsed)
    fn = lower_exits(convert_closures(fn, is_derivative_call), namer)
    return _Normalizer(fn, namer, resolver, parsed, lists | dicts).run()


class _Normalizer(Desugaring, NestedFunctions):
    def __init__(self, fn: gast.FunctionDef, namer: Namer, resolver, parsed: ParsedFunction,
                 holders=frozenset()):
        self.fn = fn
        self.holders = holders  # the lists and dicts of the function's: items held whole
        self.namer = namer
        self.resolver = resolver
        self.parsed = parsed
        bound = bound_in(fn)  # (one walk: what it binds, how often, whose attributes)
        self.locals = bound.names
        self.current = {name: name for name in param_names(fn)}
        self.body: list = []
        self.depth = 0  # how many branches and loops enclose the statement being normalized
        self.stores = bound.counts
        self.versions: dict[str, str] = {}  # `x_1` → `x`: SSA versions of the user's variables
        self.deferred = None  # name → its version, made current once an unpacking is bound
        self.unrecorded = 0  # inside `with stop_recording():`
        self.written_owners = bound.owners  # `counter.n = ...`: not a fixed global
        # the objects whose attributes are memory (records): the function's own, and the
        # parameters a helper's functional variant copies (frontend/functional.py)
        self.owned = self.locals - set(param_names(fn)) | _copied_parameters(fn)
        self.built = self._classes_built()
        self.records = {name for name in self.owned
                        if name in self.written_owners or name in self.built}

    def run(self) -> gast.FunctionDef:
        for statement in self.fn.body:
            if isinstance(statement, gast.Return):
                self._return(statement.value or gast.Constant(None, None), statement)
                break
            self._statement(statement)
        else:
            self._return(gast.Constant(None, None), self.fn)
        result = copy.copy(self.fn)
        result.body = self.body
        result.versions = self.versions
        result.return_variable = getattr(self.fn, "return_variable", None)
        return result

    # ---- statements ---------------------------------------------------------------------
    def _statement(self, node):
        if isinstance(node, gast.Expr) and self._updates_a_record(node.value):
            self._record_update(node.value, used=False)
        elif isinstance(node, gast.Assign) and self._unpacked_in_order(node):
            # (outside loops and branches, later values read the versions bound before)
            self.deferred = {} if self.depth == 0 else None
            for target, element in zip(node.targets[0].elts, node.value.elts):
                value = self._simple(element)
                if self._reads_targets(value, [target]):
                    value = self._name_for(value, element)
                self._assign(target, value, node)
            self.current.update(self.deferred or {})
            self.deferred = None
        elif isinstance(node, gast.Assign):
            value = self._simple(node.value)
            if len(node.targets) > 1 or self._reads_targets(value, node.targets):
                value = self._name_for(value, node.value)
            for target in node.targets:
                self._assign(target, value, node)
        elif isinstance(node, gast.AugAssign) and isinstance(node.target, gast.Subscript):
            container = self._load(node.target.value.id)
            index = self._index(node.target.slice)
            if node.target.value.id in self.holders:  # `d[k] += v` updates the item in place
                old = self._name_for(gast.Call(self.resolver.helper(adjoints.held_item,
                                                                    self.namer), [
                    container, index, gast.Constant(self._where(node, node.target), None)],
                    []), node, base="item")  # (checked as `s.t += v` is)
                new = self._name_for(gast.BinOp(old, node.op, self._atom(node.value)), node)
                self.body[-1].augmented = old.id
            else:  # (an array's `y[i] += v` is `y[i] = y[i] + v`)
                old = self._name_for(gast.Subscript(container, index, gast.Load()), node)
                new = self._name_for(gast.BinOp(old, node.op, self._atom(node.value)), node)
            self._emit(gast.Assign([gast.Subscript(container, clone(index), gast.Store())],
                                   new, None), node)
        elif isinstance(node, gast.AugAssign) and isinstance(node.target, gast.Attribute) \
                and isinstance(node.target.value, gast.Name) and node.target.value.id in self.owned:
            # a record's `s.t += v` as Python runs it: `t = held_attribute(s, "t")`, `t += v`
            # (which aliasing checks as an update in place, as for a name, but for `s`
            # itself: `held_attribute` checks it holds `t` as `.t` only), then `s.t = t`
            held = self._held_attribute(node.target, node)
            updated = self._name_for(gast.BinOp(held, node.op, self._atom(node.value)), node)
            self.body[-1].augmented = held.id
            self._assign(gast.Attribute(node.target.value, node.target.attr, gast.Store()),
                         updated, node)
        elif isinstance(node, gast.AugAssign) and isinstance(node.target, gast.Attribute):
            owner = self._atom(node.target.value)
            old = self._name_for(gast.Attribute(owner, node.target.attr, gast.Load()), node)
            new = self._name_for(gast.Call(self.resolver.helper(
                IN_PLACE_OPERATORS[type(node.op)], self.namer), [old, self._atom(node.value)],
                []), node)  # (`+=` of an array held in the attribute writes into it)
            self._assign(gast.Attribute(node.target.value, node.target.attr, gast.Store()), new,
                         node)
        elif isinstance(node, gast.AugAssign):
            updated = self._load(node.target.id).id
            value = gast.BinOp(self._atom(gast.Name(node.target.id, gast.Load(), None, None)),
                               node.op, self._atom(node.value))
            if self._reads_targets(value, [node.target]):
                value = self._name_for(value, node)
            self._assign(node.target, located(value, node), node)
            self.body[-1].augmented = updated  # `x += v` mutates an array: aliasing checks it
        elif isinstance(node, gast.AnnAssign) and node.value is not None:
            value = self._simple(node.value)
            if self._reads_targets(value, [node.target]):
                value = self._name_for(value, node)
            self._assign(node.target, value, node)
        elif isinstance(node, gast.Expr) and self._appends_to_attribute(node.value):
            self._record_list_append(node)
        elif isinstance(node, gast.Expr) and _is_append(node.value, self.locals, "extend"):
            self._extend(node)
        elif isinstance(node, gast.Expr) and _is_append(node.value, self.locals):
            call = node.value
            method = gast.Attribute(self._load(call.func.value.id), "append", gast.Load())
            self._emit(gast.Expr(gast.Call(method, [self._atom(call.args[0])], [])), node)
        elif isinstance(node, gast.Expr) and (self._calls_a_helper(node.value)
                                              or self._inserts(node.value)):
            call = node.value  # (its arguments as atoms: frontend/functional.py may rewrite
            #                    a helper's call; an insert is an operation of atoms)
            self._emit(gast.Expr(gast.Call(call.func, [self._atom(a) for a in call.args], [
                gast.keyword(k.arg, self._atom(k.value)) for k in call.keywords])), node)
        elif isinstance(node, gast.Expr) and self._pops(node.value):
            value = self._simple(node.value)  # (each pop an operation of its own, in order)
            if isinstance(value, gast.Call):
                self._emit(gast.Expr(value), node)
            else:
                self._name_for(value, node)
        elif isinstance(node, gast.Expr) and _passes_calls(node.value):
            call = node.value  # `log.append(len(xs))`: what it passes, computed first (an
            #                    effect receives `len(xs)`, a number, not `xs`: check_effect)
            self._emit(gast.Expr(self._renamed(gast.Call(call.func, [
                self._atom(a) if isinstance(a, gast.Call) else a for a in call.args], [
                gast.keyword(k.arg, self._atom(k.value) if isinstance(k.value, gast.Call)
                             else k.value) for k in call.keywords]))), node)
        elif isinstance(node, gast.Expr) and not _is_docstring(node):
            self._emit(gast.Expr(self._renamed(node.value)), node)
        elif isinstance(node, gast.If):
            test = self._condition(node.test, node.body + node.orelse)
            body, orelse = self._block(node.body), self._block(node.orelse)
            self._emit(gast.If(test, body or [gast.Pass()], orelse), node)
        elif isinstance(node, gast.For):
            self._for(node)
        elif isinstance(node, gast.While):
            test = self._condition(node.test, node.body)
            body = self._block(node.body, epilogue=lambda: self._recompute(test, node.test))
            self._emit(gast.While(test, body, []), node)
        elif isinstance(node, gast.Break):
            self._emit(gast.Break(), node)
        elif isinstance(node, gast.Raise):
            self._raise(node)
        elif isinstance(node, gast.Assert):
            self._assert(node)
        elif isinstance(node, gast.Delete):
            pass  # (`del name`, fenced: the name's lifetime; what it held lives on elsewhere)
        elif isinstance(node, gast.With):
            self._with(node)
        elif isinstance(node, gast.FunctionDef):
            nested = self._nested_function(node)
            nested.name = self._define(node.name).id
            self._emit(nested, node)

    def _for(self, node):
        indexed = self._indexed_iteration(node)
        if indexed is not None:
            node = indexed
        rebound = isinstance(node.iter, gast.Name) and (stores(node.body, node.iter.id) or any(
            isinstance(n, gast.Name) and n.id == node.iter.id for n in walk(node.target)))
        iterable = self._atom(node.iter)
        if not isinstance(iterable, gast.Name) or rebound:
            iterable = self._name_for(iterable, node.iter, base="iterable", force=True)
        target = node.target
        direct = isinstance(target, gast.Name) and self.stores.get(target.id) == 1
        element = self._define(target.id) if direct else gast.Name(
            self.namer.temporary("element"), gast.Store(), None, None)
        prologue = None if direct else (lambda: self._assign(
            target, gast.Name(element.id, gast.Load(), None, None), node))
        body = self._block(node.body, prologue=prologue)
        self._emit(gast.For(element, iterable, body, [], None), node)

    def _block(self, statements, prologue=None, epilogue=None) -> list:
        """Normalize a nested block into a list of its own."""
        outer, self.body = self.body, []
        self.depth += 1
        if prologue:
            prologue()
        for statement in statements:
            self._statement(statement)
        if epilogue:
            epilogue()
        self.depth -= 1
        block, self.body = self.body, outer
        return block

    def _condition(self, test, block) -> gast.Name:
        """The test as a name that `block` does not rebind (the reverse sweep reads it)."""
        if isinstance(test, gast.Name) and not stores(block, test.id):
            return self._load(test.id)
        name = self.namer.temporary("cond")
        self._emit(gast.Assign([gast.Name(name, gast.Store(), None, None)],
                               self._test(test), None), test)
        return gast.Name(name, gast.Load(), None, None)

    def _test(self, test):
        """A test as one opaque expression, but where it pops a list (`while xs.pop() > 0`):
        then its parts are operations, as a value's would be."""
        return self._simple(test) if self._pops(test) else self._renamed(test)

    def _operands_first(self, node):
        """A comparison or f-string whose operands pop a list (`xs.pop() > 0`), its operands
        computed first, in order, into names (the pops become operations)."""
        if isinstance(node, gast.JoinedStr):
            return gast.JoinedStr([gast.FormattedValue(self._atom(part.value), part.conversion,
                                                       part.format_spec)
                                   if isinstance(part, gast.FormattedValue) else part
                                   for part in node.values])
        if len(node.ops) > 1 and self._pops(gast.Tuple(node.comparators[1:], gast.Load())):
            raise UnsupportedSyntaxError(
                f"srcad cannot differentiate a list's `pop` inside a chained comparison (in "
                f"{self.parsed.name}): Python pops only if the comparisons before it hold.",
                self.parsed.location(node), "pop into a name first, or compare in steps.")
        return gast.Compare(self._atom(node.left), node.ops,
                            [self._atom(c) for c in node.comparators])

    def _recompute(self, name: gast.Name, test):
        if not (isinstance(test, gast.Name) and test.id == name.id):
            self._emit(gast.Assign([gast.Name(name.id, gast.Store(), None, None)],
                                   self._test(test), None), test)

    def _updates_a_record(self, call) -> bool:
        """`s.step(x)` or `s(x)` on a record of the function's (a name it builds from a class
        or writes attributes of), or `super(C, s).step(x)` on one it owns, calling a method
        that may update it."""
        receiver = call.func.value if isinstance(call, gast.Call) and isinstance(
            call.func, gast.Attribute) else call.func if isinstance(call, gast.Call) else None
        if _super_of(receiver) in self.owned:
            return not any(isinstance(a, gast.Starred) for a in call.args) \
                and all(k.arg is not None for k in call.keywords)
        if not isinstance(receiver, gast.Name) or receiver.id not in self.records:
            return False
        name = "__call__" if receiver is call.func else call.func.attr
        cls = self.built.get(receiver.id)
        return (cls is None or isinstance(inspect.getattr_static(cls, name, None),
                                          types.FunctionType)) \
            and (receiver is call.func or name not in _CONTAINER_METHODS) \
            and not any(isinstance(a, gast.Starred) for a in call.args) \
            and all(k.arg is not None for k in call.keywords)

    def _record_update(self, call: gast.Call, used=True) -> gast.Name | None:
        """`s.step(x)` as `returned = method_update(s, "step", x)`, its value `returned[0]`
        (where `used`), `s = returned[1]` (runtime/methods.py): the method updates a copy of
        `s`, which `s` is then, as if updated in place (aliasing refuses where another name
        shows the old one, as for `x += v`)."""
        origin = call
        receiver = call.func.value if isinstance(call.func, gast.Attribute) else call.func
        name = gast.Constant(call.func.attr if isinstance(call.func, gast.Attribute)
                             else "__call__", None)
        if _super_of(receiver) is not None:  # `super(C, s).name(...)`: C's, after C
            name = gast.Tuple([self._atom(receiver.args[0]), name], gast.Load())
            receiver = receiver.args[1]
        before = self._load(receiver.id).id
        returned = self._name_for(gast.Call(self.resolver.helper(methods.method_update,
                                                                 self.namer), [
            self._load(receiver.id), name, *(self._atom(a) for a in call.args)],
            [gast.keyword(k.arg, self._atom(k.value)) for k in call.keywords]), origin,
            base="returned")
        value = self._name_for(gast.Subscript(returned, gast.Constant(0, None), gast.Load()),
                               origin) if used else None
        self._assign(gast.Name(receiver.id, gast.Store(), None, None), gast.Subscript(
            returned, gast.Constant(1, None), gast.Load()), origin)
        self.body[-1].augmented = before
        return value

    def _appends_to_attribute(self, call) -> bool:
        """`s.items.append(v)` or `.extend(vs)` of a list a record of the function holds."""
        return isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute) \
            and call.func.attr in ("append", "extend") and len(call.args) == 1 \
            and not call.keywords and not isinstance(call.args[0], gast.Starred) \
            and isinstance(call.func.value, gast.Attribute) \
            and isinstance(call.func.value.value, gast.Name) \
            and call.func.value.value.id in self.owned

    def _record_list_append(self, node: gast.Expr):
        """`s.items.append(v)` as `items = held_attribute(s, "items")`, `items.append(v)`,
        `s.items = items`: the list's update an operation of its own, checked as `s.t += v`
        is (see `_statement`)."""
        call = node.value
        held = self._held_attribute(call.func.value, node)
        self.locals.add(held.id)
        self._statement(located(gast.Expr(gast.Call(gast.Attribute(
            gast.Name(held.id, gast.Load(), None, None), call.func.attr, gast.Load()),
            call.args, [])), node))
        self._assign(gast.Attribute(call.func.value.value, call.func.value.attr, gast.Store()),
                     self._load(held.id), node)

    def _held_attribute(self, attribute: gast.Attribute, origin) -> gast.Name:
        """`held = held_attribute(s, "t", where)`: `s.t`, read to be updated in place and
        stored back (kernels/adjoints.held_attribute; aliasing lets `s` show the update)."""
        return self._name_for(gast.Call(self.resolver.helper(adjoints.held_attribute,
                                                             self.namer), [
            self._atom(attribute.value), gast.Constant(attribute.attr, None),
            gast.Constant(self._where(origin, attribute), None)], []), origin, base=attribute.attr)

    def _where(self, origin, target) -> tuple:
        """The text, file, line, column and function of the write `target` (an attribute or
        an item), for the refusals `attribute_written` and `held_attribute` raise."""
        location = self.parsed.location(origin)
        written = f"{target.value.id}.{target.attr}" if isinstance(target, gast.Attribute) \
            else f"{target.value.id}[...]"
        return (f"{written} = ...", self.parsed.filename,
                location.lineno if location else 0, location.col if location else 0,
                self.parsed.name)

    def _return(self, value, origin):
        atom = self._name_for(self._atom(value), value)
        self._emit(gast.Return(atom), origin)

    def _assign(self, target, value, origin):
        """Bind `target` (a name, a nest of tuples of names, or an element) to `value`."""
        if isinstance(target, gast.Subscript):
            container = self._load(target.value.id)
            value = value if _is_atom(value) else self._name_for(value, origin)
            if isinstance(value, gast.Name) and value.id == container.id:  # `y[i] = y`: the
                value = self._name_for(value, origin, base="whole", force=True)  # y before
            element = gast.Subscript(container, self._index(target.slice), gast.Store())
            self._emit(gast.Assign([element], value, None), origin)
            return
        if isinstance(target, gast.Attribute):  # `obj.name = v`: a call made for its effect
            owned = isinstance(target.value, gast.Name) and target.value.id in self.owned
            helper = python_statements.attribute_written if owned else \
                python_statements.attribute_set
            where = [gast.Constant(self._where(origin, target), None)] if owned else []
            if not _is_atom(value) or owned and isinstance(value, gast.List):
                value = self._name_for(value, origin)  # (a list a record holds: memory)
            self._emit(gast.Expr(gast.Call(self.resolver.helper(helper, self.namer), [
                self._atom(target.value), gast.Constant(target.attr, None), value, *where],
                [])), origin)
            return
        if isinstance(target, gast.Name):
            if not (isinstance(value, gast.Name) and value.id == self.current.get(target.id)):
                self._emit(gast.Assign([self._define(target.id)], value, None), origin)
            return
        if isinstance(value, (gast.Tuple, gast.List)) and len(value.elts) == len(target.elts) \
                and not (self.depth and self._reads_targets(value, [target])):
            for element_target, element in zip(target.elts, value.elts):
                self._assign(element_target, element, origin)
            return
        source = self._name_for(value, origin)
        inner = [(t, None) if isinstance(t, gast.Name) else
                 (t, gast.Name(self.namer.temporary("tuple"), gast.Store(), None, None))
                 for t in target.elts]
        names = [self._define(t.id) if holder is None else holder for t, holder in inner]
        self._emit(gast.Assign([gast.Tuple(names, gast.Store())], source, None), origin)
        for t, holder in inner:
            if holder is not None:
                self._assign(t, gast.Name(holder.id, gast.Load(), None, None), origin)

    def _define(self, name: str) -> gast.Name:
        if name not in self.current:
            version = name
        elif self.depth == 0:
            version = self.namer.claim(name)
            self.versions[version] = name
        else:
            version = self.current[name]
        self.namer.used.add(version)
        self.locals.add(version)
        if self.deferred is None:
            self.current[name] = version
        else:
            self.deferred[name] = version
        return new_name(version, gast.Store)

    def _unpacked_in_order(self, node) -> bool:
        """Whether `a, b = e0, e1` may bind its names one after the other, `a = e0` then
        `b = e1`, without a temporary holding each value until all are made (a sixth of the
        statements of a program written so, and as many more in its derivative): the names
        are distinct, and no value after the first calls what might read one (a function of
        the function's own, reading `a` in a cell) or reads one bound before it. Outside
        loops and branches a value may read a name bound before the statement (`a, b = b,
        a + b`): each binding makes a new version, current only once all are bound."""
        target, value = node.targets[0], node.value
        if not (len(node.targets) == 1 and isinstance(target, (gast.Tuple, gast.List))
                and isinstance(value, (gast.Tuple, gast.List))
                and len(target.elts) == len(value.elts)
                and all(type(name) is gast.Name for name in target.elts)
                and not any(type(element) is gast.Starred for element in value.elts)):
            return False
        names = [name.id for name in target.elts]
        if len(set(names)) < len(names):
            return False
        earlier = {name for name in names[:1] if self.depth or name not in self.current}
        for name, element in zip(names[1:], value.elts[1:]):
            if any(isinstance(node, gast.Name) and node.id in earlier
                   or isinstance(node, (gast.Starred, gast.NamedExpr))
                   or isinstance(node, gast.Call) and not self._is_global_chain(node.func)
                   for node in walk(element)):
                return False
            if self.depth or name not in self.current:
                earlier.add(name)
        return True

    def _reads_targets(self, value, targets) -> bool:
        """Whether `value` (nested code only) reads a variable that `targets` rebind."""
        if not self.depth:
            return False
        bound = {self.current.get(n.id) for t in targets for n in walk(t)
                 if isinstance(n, gast.Name)}
        return not isinstance(value, gast.Name) and any(
            isinstance(n, gast.Name) and n.id in bound for n in walk(value))

    def _emit(self, statement, origin):
        self.body.append(located(statement, origin))

    # ---- expressions ----------------------------------------------------------------------
    def _simple(self, node):
        """One operation whose operands are atoms (operands are flattened into temporaries)."""
        result = self._simple_uncopied(node)
        return located(result, node) if result is not node else result

    def _simple_uncopied(self, node):
        if isinstance(node, gast.Name):
            return self._load(node.id)
        if isinstance(node, gast.Constant) or self._is_global_chain(node):
            return node
        if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub) \
                and isinstance(node.operand, gast.Constant) \
                and isinstance(node.operand.value, (int, float, complex)):
            return gast.Constant(-node.operand.value, None)
        if isinstance(node, gast.Call) and self._updates_a_record(node):
            return self._record_update(node)
        if isinstance(node, gast.BinOp):
            return gast.BinOp(self._atom(node.left), node.op, self._atom(node.right))
        if isinstance(node, gast.UnaryOp):
            return gast.UnaryOp(node.op, self._atom(node.operand))
        if isinstance(node, OPAQUE) and self._pops(node):
            return self._renamed(self._operands_first(node))
        if isinstance(node, OPAQUE):
            return self._renamed(node)
        if isinstance(node, gast.IfExp):
            return self._choice(node)
        if isinstance(node, gast.Call) and self._is_first_of_generator(node):
            return self._first_of_generator(node)
        if isinstance(node, (gast.ListComp, gast.GeneratorExp, gast.DictComp)):
            return self._comprehension(node)
        if isinstance(node, gast.Lambda):
            return self._nested_function(node)
        if isinstance(node, gast.BoolOp):
            return self._short_circuit(node)
        if isinstance(node, gast.Call) and self._is_reduce(node):
            return self._reduction(node)
        if isinstance(node, gast.Call) and (any(isinstance(a, gast.Starred) for a in node.args)
                                            or any(k.arg is None for k in node.keywords)):
            return self._starred_call(node)
        if isinstance(node, gast.Call):
            func = node.func if self._is_global_chain(node.func) else gast.Attribute(
                self._atom(node.func.value), node.func.attr, gast.Load()) if isinstance(
                node.func, gast.Attribute) else self._simple(node.func) if isinstance(
                node.func, gast.Name) else self._atom(node.func)  # (`make(w)(x)`: a value)
            return gast.Call(func, [self._atom(a) for a in node.args],
                             [gast.keyword(k.arg, self._atom(k.value)) for k in node.keywords])
        if isinstance(node, gast.Subscript):
            return gast.Subscript(self._atom(node.value), self._index(node.slice), gast.Load())
        if isinstance(node, gast.Attribute) and isinstance(node.value, gast.Name) \
                and isinstance(self._property_of(node), property):
            # a property of a record of a known class: its getter, called (and followed)
            return gast.Call(self.resolver.helper(self._property_of(node).fget, self.namer),
                             [self._atom(node.value)], [])
        if isinstance(node, gast.Attribute) and isinstance(node.value, gast.Name) \
                and node.value.id in self.owned and node.value.id in self.written_owners:
            # a record's attribute, whatever its name (`s.mean` is no array's method here)
            return gast.Call(self.resolver.helper(adjoints.field, self.namer), [
                self._atom(node.value), gast.Constant(node.attr, None)], [])
        if isinstance(node, gast.Attribute):
            return gast.Attribute(self._atom(node.value), node.attr, gast.Load())
        if isinstance(node, (gast.Tuple, gast.List)):
            return type(node)([self._atom(e) for e in node.elts], gast.Load())
        if isinstance(node, gast.Dict) and None in node.keys:
            return self._merged_display(node)
        if isinstance(node, gast.Dict):
            return gast.Dict([self._atom(k) for k in node.keys], [self._atom(v) for v in node.values])
        raise AssertionError(f"fence let through {type(node).__name__}")

    def _emit_temp(self, name, value, origin):
        self.locals.add(name)
        self._emit(gast.Assign([new_name(name, gast.Store)], value, None), origin)

    def _atom(self, node):
        simple = self._simple(node)
        if _is_atom(simple) or self._is_global_chain(simple):
            return simple
        return self._name_for(simple, node)

    def _index(self, node):
        if isinstance(node, gast.Slice):
            return gast.Slice(*(None if part is None else self._atom(part)
                                for part in (node.lower, node.upper, node.step)))
        if isinstance(node, gast.Tuple):
            return gast.Tuple([self._index(e) for e in node.elts], gast.Load())
        return self._atom(node)

    def _name_for(self, simple, origin, base=None, force=False) -> gast.Name:
        """A name holding `simple`: itself if it already is one, else a new temporary."""
        if isinstance(simple, gast.Name) and not force:
            return simple
        name = self.namer.temporary(base or _base_name(simple))
        self._emit_temp(name, simple, origin)
        return new_name(name, gast.Load)

    def _load(self, name: str) -> gast.Name:
        return new_name(self.current.get(name, name), gast.Load)

    def _renamed(self, node):
        """A copy of an opaque expression with every local name at its current version."""
        node = clone(node)
        for child in walk(node):
            if isinstance(child, gast.Name) and child.id in self.current:
                child.id = self.current[child.id]
        return node

    def _property_of(self, attribute: gast.Attribute):
        """What the class of the record `attribute.value` names holds as `attribute.attr`,
        where the function built it from a known class (`property` for a property)."""
        cls = self.built.get(attribute.value.id)
        return None if cls is None else inspect.getattr_static(cls, attribute.attr, None)

    def _classes_built(self) -> dict:
        """`{name: C}` for the function's names that `name = C(...)` binds somewhere, `C` a
        plain class of the user's (kernels/pytrees.is_record_class)."""
        built = {}
        for node in every_statement(self.fn):
            if isinstance(node, gast.Assign) and len(node.targets) == 1 \
                    and isinstance(node.targets[0], gast.Name) \
                    and node.targets[0].id in self.owned and isinstance(node.value, gast.Call) \
                    and self._is_global_chain(node.value.func) \
                    and is_record_class(self.resolver.peek_chain(node.value.func)):
                built[node.targets[0].id] = self.resolver.peek_chain(node.value.func)
        return built

    def _is_global_chain(self, node) -> bool:
        """A global's attribute chain (`np.pi`, `np.linalg.norm`), read where it is used:
        not one whose root the function writes attributes of (its value changes)."""
        chained = isinstance(node, gast.Attribute)
        while isinstance(node, gast.Attribute):
            node = node.value
        return isinstance(node, gast.Name) and node.id not in self.locals \
            and node is not None and isinstance(node.ctx, gast.Load) \
            and not (chained and node.id in self.written_owners)


def _super_of(node) -> str | None:
    """`s` for `super(C, s)` (frontend/desugar.explicit_super writes `super()` so)."""
    if isinstance(node, gast.Call) and isinstance(node.func, gast.Name) \
            and node.func.id == "super" and len(node.args) == 2 and not node.keywords \
            and isinstance(node.args[1], gast.Name):
        return node.args[1].id
    return None


def _copied_parameters(fn: gast.FunctionDef) -> set:
    """The parameters a helper's functional variant copies first (`p = srcad_copy_of(p)`,
    frontend/functional.py): its own from then on."""
    return {statement.targets[0].id for statement in fn.body
            if isinstance(statement, gast.Assign) and isinstance(statement.value, gast.Call)
            and isinstance(statement.value.func, gast.Name)
            and statement.value.func.id == "srcad_copy_of"}


def _is_atom(node) -> bool:
    if isinstance(node, (gast.Tuple, gast.List)):
        return all(_is_atom(e) for e in node.elts)
    return isinstance(node, (gast.Name, gast.Constant))


def _base_name(node) -> str:
    if isinstance(node, gast.Call):
        func = node.func
        return (func.attr if isinstance(func, gast.Attribute) else
                func.id if isinstance(func, gast.Name) else "call")
    if isinstance(node, (gast.BinOp, gast.UnaryOp)):
        return OPERATOR_NAMES[type(node.op)]
    return {gast.Subscript: "item", gast.Tuple: "tuple", gast.List: "list", gast.Dict: "dict",
            gast.Lambda: "function",
            gast.Compare: "cond", gast.JoinedStr: "text"}.get(type(node), "out") \
        if not isinstance(node, gast.Attribute) else node.attr


def _is_append(call, local_names, method="append") -> bool:
    return (isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute)
            and call.func.attr == method and isinstance(call.func.value, gast.Name)
            and call.func.value.id in local_names and len(call.args) == 1
            and not call.keywords)


def _passes_calls(value) -> bool:
    """A call made for its effect passing the results of calls, none of them spread."""
    return isinstance(value, gast.Call) and not any(
        isinstance(a, gast.Starred) for a in value.args) \
        and all(k.arg is not None for k in value.keywords) \
        and any(isinstance(a, gast.Call) for a in [*value.args, *(k.value for k in
                                                                   value.keywords)])


def _is_docstring(node) -> bool:
    return isinstance(node.value, gast.Constant) and isinstance(node.value.value, str)
