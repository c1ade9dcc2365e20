"""desugar: loops over `enumerate`/`zip`/`reversed`, comprehensions, conditional expressions,
`and`/`or` values, `xs.extend(ys)`, `raise`, `assert` and `with stop_recording():` → the
plain statements of the simple form (and `map(...)`, `super()` before the rest).

A mixin of the normalizer (it emits through the normalizer's own methods); each method
takes the user's construct and returns the name or loop that replaces it.
"""
from __future__ import annotations

import builtins
import functools
import types

import gast
import numpy as np

from srcad.compiler.frontend.fence import starred_unpacking
from srcad.compiler.frontend.scopes import local_names
from srcad.compiler.frontend.trees import blocks, clone, walk
from srcad.errors import UnsupportedSyntaxError
from srcad.ops import numpy_arrays, numpy_indexing, python_builtins, python_statements
from srcad.runtime.control import stop_recording


class Desugaring:
    def _indexed_iteration(self, node):
        """`for t in enumerate(s)` / `zip(a, b)` / `reversed(s)` (nested too, as in
        `enumerate(zip(a, b))`) as a loop over indices, `for k in range(len(s)): t = (k,
        s[k])`, so element adjoints reach the sequences (each read through `indexable`: a
        dict's `s[k]` is not its k-th key)."""
        kind = self._iteration_kind(node.iter)
        if kind is None or {"len", "min", "range"} & self.locals:  # (the rewrite calls them)
            return None
        index = gast.Name(self.namer.temporary("index"), gast.Load(), None, None)
        if kind == "reversed":  # (counting down, each item read as it is)
            count, item = self._view(node.iter.args[0])
            indices = _call("range", [gast.BinOp(count, gast.Sub(), gast.Constant(1, None)),
                                      gast.Constant(-1, None), gast.Constant(-1, None)])
        else:
            count, item = self._view(node.iter)
            indices = _call("range", [count])
        assignment = gast.copy_location(gast.Assign([node.target], item(index), None), node)
        return gast.copy_location(gast.For(gast.Name(index.id, gast.Store(), None, None),
                                           indices, [assignment] + node.body, [], None), node)

    def _iteration_kind(self, call):
        """"enumerate", "zip" or "reversed" for a call of that builtin this rewrite takes."""
        if not (isinstance(call, gast.Call) and isinstance(call.func, gast.Name)
                and call.args and not any(isinstance(a, gast.Starred) for a in call.args)):
            return None
        kind = call.func.id
        if kind not in _INDEXED or not self.resolver.is_builtin(kind, _INDEXED[kind]) \
                or (call.keywords and kind != "enumerate") or (kind != "zip" and len(call.args) != 1):
            return None
        if kind == "reversed" and self._iteration_kind(call.args[0]) is not None:
            return None  # (Python refuses: an iterator is not reversible)
        return kind

    def _view(self, expression):
        """`(length, item)` of what a loop iterates: `length` an expression, `item(k)` the
        expression of item k; a sequence is evaluated once, into a name."""
        kind = self._iteration_kind(expression)
        if kind is None:
            atom = self._atom(expression)  # (a display is indexable as it is)
            sequence = self._name_for(atom if isinstance(atom, (gast.List, gast.Tuple)) else
                                      gast.Call(self.resolver.helper(
                                          python_builtins.indexable, self.namer), [atom], []),
                                      expression, base="sequence", force=True)
            return _call("len", [sequence]), lambda k: gast.Subscript(clone(sequence), clone(k),
                                                                      gast.Load())
        views = [self._view(argument) for argument in expression.args]
        counts = [count for count, _ in views]
        count = counts[0] if len(counts) == 1 else _call("min", counts)
        if kind == "zip":
            return count, lambda k: gast.Tuple([item(k) for _, item in views], gast.Load())
        (inner, item), = views
        if kind == "reversed":
            return count, lambda k: item(gast.BinOp(gast.BinOp(clone(inner), gast.Sub(),
                                                               gast.Constant(1, None)),
                                                    gast.Sub(), k))
        start = expression.keywords[0].value if expression.keywords else gast.Constant(0, None)
        return count, lambda k: gast.Tuple([clone(k) if isinstance(start, gast.Constant)
                                            and start.value == 0 else
                                            gast.BinOp(clone(k), gast.Add(), clone(start)),
                                            item(k)], gast.Load())

    def _extend(self, node: gast.Expr):
        """`xs.extend(ys)` as `for y in ys: xs.append(y)`."""
        call = node.value
        item = self.namer.claim("item")
        append = gast.Expr(gast.Call(gast.Attribute(clone(call.func.value), "append",
                                                    gast.Load()),
                                     [gast.Name(item, gast.Load(), None, None)], []))
        self._statement(gast.copy_location(gast.For(
            gast.Name(item, gast.Store(), None, None), call.args[0],
            [gast.copy_location(append, node)], [], None), node))

    def _calls_a_helper(self, call) -> bool:
        """`helper(...)` of a Python function of the user's, made for its effect."""
        return isinstance(call, gast.Call) and self._is_global_chain(call.func) \
            and not any(isinstance(a, gast.Starred) for a in call.args) \
            and all(k.arg is not None for k in call.keywords) \
            and isinstance(self.resolver.chain_value(call.func), types.FunctionType) \
            and (self.resolver.chain_value(call.func).__module__ or "").split(".")[0] \
            not in ("numpy", "scipy", "srcad")

    def _inserts(self, call) -> bool:
        """`list_insert(xs, i, v)`, frontend/container_writes.py's `xs.insert(i, v)`."""
        return self._calls(call, python_statements.list_insert)

    def _pops(self, node) -> bool:
        """Whether `node` holds `popped(xs, i)` (container_writes.py's `xs.pop(i)`), an operation
        of its own, never part of an opaque comparison. (No walk where nothing pops.)"""
        return python_statements.popped in self.resolver.helpers.values() \
            and any(self._calls(n, python_statements.popped) for n in walk(node))

    def _calls(self, call, helper) -> bool:
        return isinstance(call, gast.Call) and isinstance(call.func, gast.Name) \
            and self.resolver.peek(call.func.id) is helper

    def _is_reduce(self, call: gast.Call) -> bool:
        return 2 <= len(call.args) <= 3 and not call.keywords \
            and not any(isinstance(a, gast.Starred) for a in call.args) \
            and self._is_global_chain(call.func) \
            and self.resolver.chain_value(call.func) is functools.reduce

    def _reduction(self, call: gast.Call) -> gast.Name:
        """`functools.reduce(f, items[, start])` as the loop it runs, `total = items[0]` (or
        `start`), then `for item in items[1:]` (or `items`): `total = f(total, item)`, so
        each step is differentiated (without `start`, `items` is a list comprehension over
        what was passed, which any iterable gives)."""
        parameters = _simple_parameters(call.args[0]) if isinstance(
            call.args[0], gast.Lambda) else None  # (a lambda's body is inlined, as map's)
        function = None if parameters is not None and len(parameters) == 2 else self._name_for(
            self._atom(call.args[0]), call.args[0], base="function", force=True)
        element = self.namer.claim("element")  # (a list of any iterable, zip(...) too)
        iterable = call.args[1] if len(call.args) == 3 else gast.copy_location(gast.ListComp(
            gast.Name(element, gast.Load(), None, None), [gast.comprehension(
                gast.Name(element, gast.Store(), None, None), call.args[1], [], 0)]),
            call.args[1])
        items = self._name_for(self._atom(iterable), call.args[1], base="items", force=True)
        total, item = self.namer.claim("total"), self.namer.claim("item")
        self.stores[item] = 1
        if len(call.args) == 3:
            start, rest = call.args[2], items
        else:  # (Python's error for no items, where `items[0]` would raise IndexError)
            error = gast.Call(gast.Name("TypeError", gast.Load(), None, None), [gast.Constant(
                "reduce() of empty iterable with no initial value", None)], [])
            self._statement(gast.copy_location(gast.If(
                gast.UnaryOp(gast.Not(), items), [gast.copy_location(
                    gast.Raise(error, None), call)], []), call))
            start = gast.Subscript(items, gast.Constant(0, None), gast.Load())
            rest = gast.Subscript(items, gast.Slice(gast.Constant(1, None), None, None),
                                  gast.Load())
        self._statement(gast.copy_location(gast.Assign(
            [gast.Name(total, gast.Store(), None, None)], start, None), call))
        step = gast.Assign([gast.Name(total, gast.Store(), None, None)], gast.Call(
            function, [gast.Name(total, gast.Load(), None, None),
                       gast.Name(item, gast.Load(), None, None)], []) if function else
            _renamed_names(call.args[0].body, dict(zip(parameters, (total, item)))),
            None)
        self._statement(gast.copy_location(gast.For(
            gast.Name(item, gast.Store(), None, None), rest,
            [gast.copy_location(step, call)], [], None), call))
        return self._load(total)

    def _is_first_of_generator(self, call: gast.Call) -> bool:
        return 1 <= len(call.args) <= 2 and not call.keywords \
            and isinstance(call.args[0], gast.GeneratorExp) \
            and len(call.args[0].generators) == 1 and isinstance(call.func, gast.Name) \
            and self.resolver.is_builtin(call.func.id, builtins.next)

    def _first_of_generator(self, call: gast.Call) -> gast.Name:
        """`next(e for x in xs if c[, default])` as the loop Python runs up to the first
        element, `found, missing = default, True`, then `for x in xs: if missing: if c:
        found, missing = e, False` (a list of every element, as other generators become, is
        no iterator for `next`, and would compute elements Python never reaches); with no
        default, a loop that finds nothing raises StopIteration. (No `break`: the frontend
        lowered the function's own before it came here.)"""
        generator = call.args[0]
        [loop] = generator.generators
        renames = {}
        for target in walk(loop.target):
            if isinstance(target, gast.Name):
                renames[target.id] = self.namer.claim(target.id)
                self.stores[renames[target.id]] = 1
        found, missing = self.namer.claim("found"), self.namer.claim("missing")

        def assign(name, value):
            return gast.copy_location(gast.Assign([gast.Name(name, gast.Store(), None, None)],
                                                  value, None), call)
        self._statement(assign(found, call.args[1] if len(call.args) == 2
                               else gast.Constant(None, None)))
        self._statement(assign(missing, gast.Constant(True, None)))
        body = [assign(found, _renamed_names(generator.elt, renames)),
                assign(missing, gast.Constant(False, None))]
        for test in reversed(loop.ifs):
            body = [gast.copy_location(gast.If(_renamed_names(test, renames), body, []), call)]
        looking = gast.copy_location(gast.If(gast.Name(missing, gast.Load(), None, None), body,
                                             []), call)
        self._statement(gast.copy_location(gast.For(
            _renamed_names(loop.target, renames), _renamed_names(loop.iter, renames),
            [looking], [], None), call))
        if len(call.args) == 1:
            exhausted = gast.Raise(gast.Call(gast.Name("StopIteration", gast.Load(), None, None),
                                             [], []), None)
            self._statement(gast.copy_location(gast.If(
                gast.Name(missing, gast.Load(), None, None), [gast.copy_location(
                    exhausted, call)], []), call))
        return self._load(found)

    def _merged_display(self, node: gast.Dict):
        """`{**a, "k": v, **b}` as `merged(merged(a, {"k": v}), b)`: the displays between
        the unpacked mappings, merged in order (later keys win, as in Python)."""
        merge = self.resolver.helper(python_builtins.merged, self.namer)
        parts, pairs = [], []
        for key, value in zip(node.keys, node.values):
            if key is None:
                if pairs:
                    parts.append(gast.Dict(*map(list, zip(*pairs))))
                    pairs = []
                parts.append(value)
            else:
                pairs.append((key, value))
        if pairs:
            parts.append(gast.Dict(*map(list, zip(*pairs))))
        result = parts[0] if isinstance(parts[0], gast.Dict) else gast.Dict([], [])
        for part in parts[1:] if isinstance(parts[0], gast.Dict) else parts:
            result = gast.Call(merge, [result, part], [])
        return self._simple(gast.copy_location(result, node))

    def _starred_call(self, node: gast.Call):
        """`f(a, *xs, k=v, **kw)` as `starred_call(f, joined((a,), tuple(xs)), merged({"k":
        v}, kw))` (a method's as `starred_method(receiver, "name", ...)`): the arguments
        become one tuple and one dict, whose items runtime/calls.py differentiates as the
        arguments of the call they make when it runs."""
        def helper(fn):
            return self.resolver.helper(fn, self.namer)
        segments, plain = [], []
        for argument in node.args:
            if isinstance(argument, gast.Starred):
                if plain:
                    segments.append(gast.Tuple(plain, gast.Load()))
                    plain = []
                segments.append(argument.value)
            else:
                plain.append(argument)
        if plain:
            segments.append(gast.Tuple(plain, gast.Load()))
        if len(segments) == 1:  # `f(*xs)`: the iterable itself
            positional = segments[0]
        else:
            positional = None
            for segment in segments:
                part = segment if isinstance(segment, gast.Tuple) \
                    else gast.Call(helper(tuple), [segment], [])
                positional = part if positional is None \
                    else gast.Call(helper(python_builtins.joined), [positional, part], [])
        keywords = gast.Dict([None if k.arg is None else gast.Constant(k.arg, None)
                              for k in node.keywords], [k.value for k in node.keywords])
        parts = [self._atom(positional), self._atom(keywords)]
        func = node.func
        if isinstance(func, gast.Attribute) and not self._is_global_chain(func):
            call = gast.Call(helper(python_builtins.starred_method), [
                self._atom(func.value), gast.Constant(func.attr, None), *parts], [])
        else:
            callee = func if self._is_global_chain(func) else self._atom(func)
            call = gast.Call(helper(python_builtins.starred_call), [callee, *parts], [])
        return gast.copy_location(call, node)

    def _raise(self, node: gast.Raise):
        """`raise E` (`from C`) as a call the forward sweep runs, `raised(E, C)`."""
        helper = self.resolver.helper(python_builtins.raised, self.namer)
        arguments = [node.exc] + ([node.cause] if node.cause is not None else [])
        self._emit(gast.Expr(self._renamed(gast.Call(helper, arguments, []))), node)

    def _assert(self, node: gast.Assert):
        """`assert test, message` as `if not test: assertion_failed(message)`."""
        helper = self.resolver.helper(python_builtins.assertion_failed, self.namer)
        failed = gast.Expr(gast.Call(helper, [node.msg] if node.msg is not None else [], []))
        self._statement(gast.copy_location(gast.If(
            gast.UnaryOp(gast.Not(), node.test), [gast.copy_location(failed, node)], []), node))

    def _with(self, node: gast.With):
        """`with m as v, n: body` as `v = entered(m)`, `entered(n)`, the body, `exited(n)`,
        `exited(m)` (ops/python_statements.py); `with srcad.stop_recording():` marks its
        block instead."""
        if self._stops_recording(node):
            return self._unrecorded_block(node)
        managers = []
        for item in node.items:
            if isinstance(item.context_expr, gast.Call) \
                    and self.resolver.chain_value(item.context_expr.func) is stop_recording:
                raise UnsupportedSyntaxError(
                    f"srcad cannot differentiate `stop_recording()` beside other context "
                    f"managers or with `as` (in {self.parsed.name}).",
                    self.parsed.location(item.context_expr), "write `with srcad.stop_recording():` "
                    "on a line of its own, the other managers inside it.")
            manager = self._name_for(self._simple(item.context_expr), item.context_expr,
                                     base="manager", force=True)
            managers.append(manager)
            entry = gast.copy_location(gast.Call(self.resolver.helper(
                python_statements.entered, self.namer), [manager], []), node)
            if item.optional_vars is None:
                self._emit(gast.Expr(entry), node)
            else:
                self._assign(item.optional_vars, self._name_for(entry, node, base="entered"),
                             node)
        for statement in node.body:
            self._statement(statement)
        for manager in reversed(managers):
            self._emit(gast.Expr(gast.Call(self.resolver.helper(
                python_statements.exited, self.namer), [clone(manager)], [])), node)

    def _stops_recording(self, node: gast.With) -> bool:
        expression = node.items[0].context_expr
        return len(node.items) == 1 and node.items[0].optional_vars is None \
            and isinstance(expression, gast.Call) \
            and self.resolver.chain_value(expression.func) is stop_recording

    def _unrecorded_block(self, node: gast.With):
        """`with srcad.stop_recording(): ...`: the block runs as written; its statements are
        marked so that their results are constants to the derivative."""
        start = len(self.body)
        self.unrecorded += 1
        for statement in node.body:
            self._statement(statement)
        self.unrecorded -= 1
        for statement in self.body[start:]:
            for part in walk(statement):
                if isinstance(part, gast.stmt):
                    part.unrecorded = True

    def _choice(self, node: gast.IfExp) -> gast.Name:
        """`a if c else b` as an `if` statement assigning a temporary."""
        result = self.namer.temporary("choice")
        test = self._condition(node.test, [])
        branches = [self._block([], prologue=lambda e=e: self._emit_temp(result, self._atom(e), e))
                    for e in (node.body, node.orelse)]
        self._emit(gast.If(test, *branches), node)
        return gast.Name(result, gast.Load(), None, None)

    def _comprehension(self, node) -> gast.Name:
        """`[e for x in xs if c]` (or a generator) as a loop appending to a new list, and
        `{k: v for ...}` as one storing into a new dict; the loop variables get fresh names,
        as they are local to the comprehension."""
        is_dict = isinstance(node, gast.DictComp)
        result = self.namer.temporary("dict" if is_dict else "list")
        self._emit_temp(result, gast.Dict([], []) if is_dict else gast.List([], gast.Load()),
                        node)
        renames = {}
        loops = []
        for generator in node.generators:
            iterable = _renamed_names(generator.iter, renames)
            for target in walk(generator.target):
                if isinstance(target, gast.Name):
                    renames[target.id] = self.namer.claim(target.id)
                    self.stores[renames[target.id]] = 1
            loops.append((_renamed_names(generator.target, renames), iterable,
                          [_renamed_names(test, renames) for test in generator.ifs]))
        if is_dict:
            statement = gast.Assign([gast.Subscript(
                gast.Name(result, gast.Load(), None, None), _renamed_names(node.key, renames),
                gast.Store())], _renamed_names(node.value, renames), None)
        else:
            append = gast.Attribute(gast.Name(result, gast.Load(), None, None), "append",
                                    gast.Load())
            statement = gast.Expr(gast.Call(append, [_renamed_names(node.elt, renames)], []))
        self.locals.add(result)
        for target, iterable, tests in reversed(loops):
            for test in reversed(tests):
                statement = gast.If(test, [statement], [])
            statement = gast.For(target, iterable, [statement], [], None)
        self._statement(gast.copy_location(statement, node))
        return gast.Name(result, gast.Load(), None, None)

    def _short_circuit(self, node: gast.BoolOp) -> gast.Name:
        """`a or b` / `a and b` as value: `t = a`, then `t = b` only if `a` decides nothing."""
        result = self.namer.temporary("either" if isinstance(node.op, gast.Or) else "both")
        self._emit_temp(result, self._atom(node.values[0]), node)
        for value in node.values[1:]:
            test = self.namer.temporary("cond")
            self._emit_temp(test, gast.UnaryOp(gast.Not(), gast.Name(result, gast.Load(), None,
                                                                      None)), node)
            rest = self._block([], prologue=lambda v=value: self._emit_temp(result, self._atom(v), v))
            body, orelse = (rest, []) if isinstance(node.op, gast.Or) else ([gast.Pass()], rest)
            self._emit(gast.If(gast.Name(test, gast.Load(), None, None), body, orelse), node)
        return gast.Name(result, gast.Load(), None, None)


def _renamed_names(node, renames: dict):
    """A copy of `node` with the names in `renames` replaced."""
    node = clone(node)
    for child in walk(node):
        if isinstance(child, gast.Name) and child.id in renames:
            child.id = renames[child.id]
    return node


_INDEXED = {"enumerate": enumerate, "zip": zip, "reversed": reversed}


def _call(name, args):
    return gast.Call(gast.Name(name, gast.Load(), None, None), args, [])


def sets_as_calls(fn: gast.FunctionDef, resolver, namer) -> None:
    """`{a, b}` as `set((a, b))` and `{e for x in xs}` as `set([e for x in xs])`: a set holds
    hashable values (shapes, dtypes, names), and `set` has no rule, so a float in one that
    carries a derivative is refused when it runs."""
    for node in walk(fn):
        for field, value in gast.iter_fields(node):
            values = value if isinstance(value, list) else [value]
            made = [_set_call(v, resolver, namer) for v in values]
            if any(m is not v for m, v in zip(made, values)):
                setattr(node, field, made if isinstance(value, list) else made[0])


def _set_call(node, resolver, namer):
    if isinstance(node, gast.Set):
        items = gast.Tuple(node.elts, gast.Load())
    elif isinstance(node, gast.SetComp):
        items = gast.ListComp(node.elt, node.generators)
    else:
        return node
    return gast.copy_location(gast.Call(resolver.helper(builtins.set, namer), [
        gast.copy_location(items, node)], []), node)


def maps_as_comprehensions(fn: gast.FunctionDef, resolver) -> None:
    """`map(f, a, b)` read once where it stands (a call's argument, a loop's iterable) as
    `[f(x, y) for x, y in zip(a, b)]`, before nested functions are converted: a lambda `f`
    that reads differentiated variables is then called where srcad can pass them. `f` is
    a name, an attribute or a lambda (evaluating it once per item changes nothing). A `map`
    or `zip` the function binds itself is left alone."""
    bound = local_names(fn)
    for node in walk(fn):
        if isinstance(node, gast.Call):
            node.args = [_comprehension_of(a, resolver, bound) for a in node.args]
        elif isinstance(node, (gast.For, gast.comprehension)):
            node.iter = _comprehension_of(node.iter, resolver, bound)


def _comprehension_of(node, resolver, bound):
    if not (isinstance(node, gast.Call) and isinstance(node.func, gast.Name)
            and len(node.args) > 1 and not node.keywords
            and not any(isinstance(a, gast.Starred) for a in node.args)
            and isinstance(node.args[0], (gast.Name, gast.Attribute, gast.Lambda))
            and node.func.id not in bound and resolver.is_builtin(node.func.id, map)
            and (len(node.args) == 2
                 or "zip" not in bound and resolver.is_builtin("zip", zip))):
        return node
    function, count = node.args[0], len(node.args) - 1
    parameters = _simple_parameters(function) if isinstance(function, gast.Lambda) else None
    if isinstance(function, gast.Lambda) and (parameters is None or len(parameters) != count):
        return node
    items = parameters or [f"srcad_item_{i}" for i in range(count)]
    iterable = node.args[1] if count == 1 else _call("zip", list(node.args[1:]))
    target = gast.Name(items[0], gast.Store(), None, None) if count == 1 else gast.Tuple(
        [gast.Name(i, gast.Store(), None, None) for i in items], gast.Store())
    element = function.body if parameters else gast.Call(  # (a lambda's body, inlined: its
        function, [gast.Name(i, gast.Load(), None, None) for i in items], [])  # parameters
    # are the comprehension's variables, and it reads the enclosing function's directly)
    return gast.copy_location(gast.ListComp(element, [gast.comprehension(
        target, iterable, [], 0)]), node)


def dicts_as_displays(fn: gast.FunctionDef, resolver) -> None:
    """`dict(zip(keys, values))`, `dict((k, v) for ...)` and `dict([("a", x), ...])`, with
    keywords or not, as the displays and comprehensions that build the same dict
    (`{k: v for k, v in zip(keys, values)}`, `{**that, "b": x}`), whose items srcad follows
    one by one. Another argument (a mapping held in a name, say) is left to `dict`, and so
    is a `dict` or `zip` the function binds itself."""
    bound = local_names(fn)

    def builtin(name_node, builtin):
        return isinstance(name_node, gast.Name) and name_node.id not in bound \
            and resolver.is_builtin(name_node.id, builtin)
    for node in walk(fn):
        for field, value in gast.iter_fields(node):
            if isinstance(value, gast.Call):
                setattr(node, field, _dict_display(value, builtin))
            elif isinstance(value, list):
                value[:] = [_dict_display(v, builtin) if isinstance(v, gast.Call) else v
                            for v in value]


def _dict_display(call: gast.Call, builtin):
    if not (len(call.args) == 1 and all(k.arg is not None for k in call.keywords)
            and builtin(call.func, dict)):
        return call
    built = _pairs_as_dict(call.args[0], builtin)
    if built is None:
        return call
    keys = [gast.Constant(k.arg, None) for k in call.keywords]
    values = [k.value for k in call.keywords]
    if isinstance(built, gast.Dict):
        built.keys.extend(keys)
        built.values.extend(values)
    elif keys:
        built = gast.Dict([None, *keys], [built, *values])
    return gast.copy_location(built, call)


def _pairs_as_dict(pairs, builtin):
    """The display or comprehension building `dict(pairs)`, or None."""
    def pair(node):
        return isinstance(node, (gast.Tuple, gast.List)) and len(node.elts) == 2 \
            and not any(isinstance(e, gast.Starred) for e in node.elts)
    if isinstance(pairs, (gast.Dict, gast.DictComp)):  # (a display: the new dict it builds)
        return pairs
    if isinstance(pairs, (gast.List, gast.Tuple)) and all(pair(e) for e in pairs.elts):
        return gast.Dict([e.elts[0] for e in pairs.elts], [e.elts[1] for e in pairs.elts])
    if isinstance(pairs, (gast.GeneratorExp, gast.ListComp)) and pair(pairs.elt):
        return gast.DictComp(pairs.elt.elts[0], pairs.elt.elts[1], pairs.generators)
    if isinstance(pairs, gast.Call) and len(pairs.args) == 2 and not pairs.keywords \
            and not any(isinstance(a, gast.Starred) for a in pairs.args) \
            and builtin(pairs.func, zip):
        names = [gast.Name(n, gast.Store(), None, None) for n in ("srcad_key", "srcad_value")]
        return gast.DictComp(gast.Name("srcad_key", gast.Load(), None, None),
                             gast.Name("srcad_value", gast.Load(), None, None),
                             [gast.comprehension(gast.Tuple(names, gast.Store()), pairs, [], 0)])
    return None


def _simple_parameters(function: gast.Lambda):
    """A lambda's parameter names, if it has only plain positional ones."""
    arguments = function.args
    if arguments.vararg or arguments.kwarg or arguments.kwonlyargs or arguments.defaults \
            or arguments.posonlyargs:
        return None
    return [a.id for a in arguments.args]


def explicit_super(fn: gast.FunctionDef, code) -> None:
    """`super()` in a method as `super(__class__, self)`: the zero-argument form reads the
    first argument of the function it runs in, which in a tangent program is the seeds."""
    parameters = fn.args.posonlyargs + fn.args.args
    if "__class__" not in code.co_freevars or not parameters:
        return
    for node in walk(fn):
        if isinstance(node, gast.Call) and isinstance(node.func, gast.Name) \
                and node.func.id == "super" and not node.args and not node.keywords:
            node.args = [gast.Name("__class__", gast.Load(), None, None),
                         gast.Name(parameters[0].id, gast.Load(), None, None)]


def outs_checked(fn: gast.FunctionDef, resolver, namer, parsed) -> None:
    """A call's `out=` argument: `out=None` is left out (the same call, as NumPy's own
    functions pass `out=out` on), and any other value, known only when the call runs,
    becomes `without_out(value, f, ...)(...)`, which is `f` for None and raises for an
    array (srcad does not differentiate writes through `out=`)."""
    for node in walk(fn):
        if not (isinstance(node, gast.Call) and any(k.arg == "out" for k in node.keywords)):
            continue
        out = next(k.value for k in node.keywords if k.arg == "out")
        node.keywords = [k for k in node.keywords if k.arg != "out"]
        if isinstance(out, gast.Constant) and out.value is None:
            continue
        where = parsed.location(node)
        label = gast.unparse(node.func)
        node.func = gast.copy_location(gast.Call(
            resolver.helper(python_builtins.without_out, namer),
            [out, node.func] + [gast.Constant(v, None) for v in (
                label, parsed.filename, where.lineno if where else 0,
                where.col if where else 0, parsed.name)], []), node)


def buffers_filled(fn: gast.FunctionDef, resolver, namer) -> None:
    """`b = np.zeros(n)` (or `np.empty(n)`, float64) whose every element is then written
    once, `b[k] = v`, before anything else reads or writes `b`, as `b_k = v` at each write
    and `b = filled(b_0, ..., b_n-1)` after the last: an ODE's right-hand side filling
    `dy` is one call with a rule per element, where each write saved, restored and took
    apart a region of the buffer (ops/numpy_arrays.filled makes the same array)."""
    shadowed = None
    for statements in blocks(fn):
        position = 0
        while position < len(statements):
            size = _new_buffer(statements[position], resolver)
            if size is not None:
                shadowed = local_names(fn) if shadowed is None else shadowed
                if _root(statements[position].value.func) not in shadowed \
                        and _fill(statements, position, size, resolver, namer):
                    continue
            position += 1


def _new_buffer(statement, resolver):
    """n for `b = np.zeros(n)` / `np.empty(n)` (n an integer constant up to
    filled's rule count; no dtype but float64), else None."""
    if not (isinstance(statement, gast.Assign) and len(statement.targets) == 1
            and isinstance(statement.targets[0], gast.Name)
            and isinstance(statement.value, gast.Call) and len(statement.value.args) == 1):
        return None
    call = statement.value
    size = call.args[0]
    if isinstance(size, gast.Tuple) and len(size.elts) == 1:
        size = size.elts[0]
    if not (isinstance(size, gast.Constant) and type(size.value) is int
            and 1 <= size.value <= numpy_arrays.FILLED_MOST):
        return None
    if any(k.arg != "dtype" or resolver.chain_value(k.value) not in (float, np.float64)
           for k in call.keywords):
        return None
    if resolver.chain_value(call.func) not in (np.zeros, np.empty):
        return None
    return size.value


def _fill(statements: list, start: int, size: int, resolver, namer) -> bool:
    """Rewrite the buffer made at `statements[start]` if each element is written once
    before it is otherwise used (in this block); whether it was."""
    buffer = statements[start].targets[0].id
    writes = {}  # element → position of its write
    for position in range(start + 1, len(statements)):
        statement = statements[position]
        element = _element_written(statement, buffer, size)
        if element is not None and element not in writes \
                and not _mentions(statement.value, buffer):
            writes[element] = position
            if len(writes) == size:
                break
        elif _mentions(statement, buffer):
            return False
    else:
        return False
    names = {element: namer.claim(f"{buffer}_at{element}") for element in range(size)}
    for element, position in writes.items():
        write = statements[position]
        statements[position] = gast.copy_location(gast.Assign(
            [gast.Name(names[element], gast.Store(), None, None)], write.value, None), write)
    made = gast.Call(resolver.helper(numpy_arrays.filled, namer),
                     [gast.Name(names[k], gast.Load(), None, None) for k in range(size)], [])
    last = max(writes.values())
    statements.insert(last + 1, gast.copy_location(gast.Assign(
        [gast.Name(buffer, gast.Store(), None, None)], made, None), statements[start]))
    del statements[start]
    return True


def _element_written(statement, buffer: str, size: int):
    """k for `buffer[k] = v` (k an integer constant, negative counted from the end)."""
    if not (isinstance(statement, gast.Assign) and len(statement.targets) == 1):
        return None
    target = statement.targets[0]
    if not (isinstance(target, gast.Subscript) and isinstance(target.value, gast.Name)
            and target.value.id == buffer):
        return None
    index, sign = target.slice, 1
    if isinstance(index, gast.UnaryOp) and isinstance(index.op, gast.USub):
        index, sign = index.operand, -1
    if not (isinstance(index, gast.Constant) and type(index.value) is int
            and -size <= sign * index.value < size):
        return None
    return sign * index.value % size


def _mentions(node, name: str) -> bool:
    return any(isinstance(n, gast.Name) and n.id == name for n in walk(node))


def scatters_as_writes(fn: gast.FunctionDef, resolver, namer) -> None:
    """`np.add.at(a, index, v)` (and `np.subtract.at`) as `a[...] = scattered_add(a, index,
    v)` (or `-v`): NumPy adds into `a` in place, as a call srcad cannot see into; written as
    an assignment into `a`, it is an in-place update like any other (saved, undone, checked
    for aliasing), and the addition has rules (ops/numpy_indexing.py)."""
    shadowed = None  # (the function's local names, found once a call may be a scatter)
    for statements in blocks(fn):
        for position, statement in enumerate(statements):
            call = statement.value if isinstance(statement, gast.Expr) else None
            if isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute) \
                    and len(call.args) == 3 and not call.keywords \
                    and isinstance(call.args[0], gast.Name):
                shadowed = local_names(fn) if shadowed is None else shadowed
                statements[position] = _scatter_as_write(statement, call, resolver, namer,
                                                         shadowed)


def _scatter_as_write(statement, call, resolver, namer, shadowed):
    if _root(call.func) in shadowed:
        return statement
    callee = resolver.chain_value(call.func)
    if not any(callee == scatter for scatter in (np.add.at, np.subtract.at)):
        return statement
    array, index, values = call.args
    if callee == np.subtract.at:
        values = gast.UnaryOp(gast.USub(), values)
    target = gast.Subscript(gast.Name(array.id, gast.Store(), None, None),
                            gast.Constant(Ellipsis, None), gast.Store())
    value = gast.Call(resolver.helper(numpy_indexing.scattered_add, namer),
                      [gast.Name(array.id, gast.Load(), None, None), index, values], [])
    return gast.copy_location(gast.Assign([target], value, None), statement)


def _root(node) -> str | None:
    while isinstance(node, gast.Attribute):
        node = node.value
    return node.id if isinstance(node, gast.Name) else None


def starred_unpackings(fn: gast.FunctionDef, resolver, namer) -> None:
    """`first, *rest, last = value` as `first, rest, last = starred_parts(value, 1, 1)`,
    a plain unpacking of what Python's gives (`rest` a list; ops/python_builtins.py)."""
    for statements in blocks(fn):
        for statement in statements:
            if starred_unpacking(statement):
                _unstarred(statement, resolver, namer)


def _unstarred(statement: gast.Assign, resolver, namer) -> None:
    target = statement.targets[0]
    before = next(k for k, e in enumerate(target.elts) if isinstance(e, gast.Starred))
    after = len(target.elts) - before - 1
    statement.targets = [gast.Tuple([e.value if isinstance(e, gast.Starred) else e
                                     for e in target.elts], gast.Store())]
    statement.value = gast.Call(resolver.helper(python_builtins.starred_parts, namer), [
        statement.value, gast.Constant(before, None), gast.Constant(after, None)], [])
