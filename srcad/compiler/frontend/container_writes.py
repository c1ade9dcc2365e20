"""container_writes: a list or dict the function makes, used as memory (a stack, a queue, a
work list, a table of parameters), updated in place as Python does it.

`xs.append(v)` is an operation of its own (resolve.py); the other updates become it, its
inverse and element assignments, each undone by the backward sweep as written:

    v = xs.pop(i)          v = popped(xs, i)                   ("pop" operation)
    xs.insert(i, v)        list_insert(xs, i, v)               ("insert" operation)
    xs.remove(v)           _ = popped(xs, position_of(xs, v))
    del xs[i]              _ = popped(xs, i)
    del xs[a:b]            for p in deleted_positions(xs, slice(a, b)): _ = popped(xs, p)
    xs.clear()             for _ in range(len(xs)): _ = popped(xs, -1)
    xs.reverse()           xs[:] = xs[::-1]
    xs.sort(key=k)         xs[:] = sorted(xs, key=k)

A dict's updates become element writes (`d[k] = v`, which the backward sweep undoes):

    d.update(m, k=v)       u = {**m, "k": v}; for key in u: d[key] = u[key]
    d.setdefault(k, v)     if k not in d: d[k] = v         (`r = d.setdefault(...)`: r = d[k])

Only for a name every binding of which surely makes a list (a display, a comprehension,
`list(...)`, `sorted(...)`, a copy or slice of such a list, a join of lists, a list times a
count) or a dict (a display, a comprehension, `dict(...)`, a copy): a parameter, an element
or another object with a `pop` method keeps Python's meaning, and where it carries a
derivative its update is refused (resolve.py, transform/refusals.py, with the fix).
"""
from __future__ import annotations

import builtins

import gast

from srcad.compiler.frontend.parse import param_names
from srcad.compiler.frontend.trees import Census, walk
from srcad.errors import UnsupportedSyntaxError
from srcad.ops import python_statements

def container_writes_as_updates(fn: gast.FunctionDef, lists, resolver, namer,
                                held: Census) -> frozenset:
    """Rewrite, in place, the updates of `lists` (`surely_lists(fn)`) and of the names that
    surely hold dicts as the module says; returns those names. `held`: `fn`'s census."""
    dicts = surely_dicts(fn, resolver, held)
    if lists or dicts:
        _Rewriter(lists, dicts, resolver, namer).statements(fn.body)
    return dicts


def surely_lists(fn: gast.FunctionDef, resolver, held: Census) -> frozenset:
    """The names of `fn` every binding of which makes a list (a greatest fixpoint: a copy of
    a list is one if the list is); `held`: `fn`'s census."""
    return _surely(fn, resolver, _LIST, held)


def surely_dicts(fn: gast.FunctionDef, resolver, held: Census) -> frozenset:
    """The names of `fn` every binding of which makes a dict."""
    return _surely(fn, resolver, _DICT, held)


def _surely(fn, resolver, kind, held: Census) -> frozenset:
    if not _may_make(kind, resolver, held):
        return frozenset()
    values = {name: [None] for name in param_names(fn)}
    binders = _own_nodes(fn) if gast.NamedExpr in held.kinds else _own_statements(fn)
    for node in binders:
        for target, value in _bindings(node):
            if isinstance(target, gast.Name):
                values.setdefault(target.id, []).append(value)
            else:
                for name in walk(target):
                    if isinstance(name, gast.Name) and isinstance(name.ctx, gast.Store):
                        values.setdefault(name.id, []).append(None)
    sure, local = {name for name, made in values.items() if None not in made}, set(values)
    while True:
        kept = {name for name in sure if all(_makes(kind, v, sure, resolver, local)
                                             for v in values[name])}
        if kept == sure:
            return frozenset(sure)
        sure = kept


def _may_make(kind, resolver, held: Census) -> bool:
    """Whether a function of census `held` holds a display of the kind (_LIST, _DICT) or a
    name bound to a builtin that makes one. Where it holds neither, no name of it is surely
    one, and its bindings are not walked (a walk of every statement and a question for each
    value, in nearly every function): a name bound only from names of its kind never holds
    one when it runs, as the first of those bindings to run reads a name not bound yet."""
    displays, makers = kind
    return any(display in held.kinds for display in displays) or any(
        resolver.peek(name) is maker for name in held.names for maker in makers)


_SCOPES = (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda, gast.ListComp, gast.SetComp,
           gast.DictComp, gast.GeneratorExp, gast.ClassDef)


def _own_nodes(fn):
    """The nodes of `fn`'s own scope: not those of the functions, lambdas and
    comprehensions it holds (their names are theirs)."""
    todo = list(gast.iter_child_nodes(fn))
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, _SCOPES):
            todo.extend(gast.iter_child_nodes(node))


def _own_statements(fn):
    """The statements and exception handlers of `fn`'s own scope: all that binds names in
    it but an assignment expression (`:=`), which only `_own_nodes` finds (in a function
    without one, the expressions are not walked)."""
    todo = list(fn.body)
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, _SCOPES):
            for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                block = getattr(node, field, None)
                if type(block) is list:
                    todo.extend(block)


_KEEPS_ITS_KIND = object()  # `xs += ys` extends a list in place (`d |= m` a dict): it stays one


def _bindings(node):
    """(target, value) for each name `node` binds; value None where it is not an expression
    evaluated into the target (a loop's element, an exception, an import...)."""
    if isinstance(node, gast.Assign):
        return [(target, node.value if isinstance(target, gast.Name) else None)
                for target in node.targets]
    if isinstance(node, gast.AnnAssign) and node.value is not None:
        return [(node.target, node.value)]
    if isinstance(node, gast.AugAssign):  # (`xs += ys`, `xs *= 2`, `d |= m` keep the kind)
        return [(node.target, _KEEPS_ITS_KIND if isinstance(node.op, (gast.Add, gast.Mult,
                                                                    gast.BitOr)) else None)]
    if isinstance(node, gast.NamedExpr):
        return [(node.target, node.value)]
    if isinstance(node, (gast.For, gast.AsyncFor)):
        return [(node.target, None)]
    if isinstance(node, (gast.With, gast.AsyncWith)):
        return [(item.optional_vars, None) for item in node.items if item.optional_vars]
    if isinstance(node, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
        return [(gast.Name(node.name, gast.Store(), None, None), None)]
    if isinstance(node, gast.ExceptHandler) and node.name is not None:
        return [(node.name, None)]
    if isinstance(node, (gast.Import, gast.ImportFrom)):
        return [(gast.Name((a.asname or a.name).split(".")[0], gast.Store(), None, None), None)
                for a in node.names]
    if isinstance(node, (gast.Global, gast.Nonlocal)):
        return [(gast.Name(name, gast.Store(), None, None), None) for name in node.names]
    return []


# what makes each kind: its displays and comprehensions, and the builtins that return one
_LIST = ((gast.List, gast.ListComp), (list, sorted))
_DICT = ((gast.Dict, gast.DictComp), (dict,))


def _makes(kind, value, sure, resolver, local) -> bool:
    """Whether `value` surely makes a list (`kind` _LIST) or a dict (_DICT), given the names
    `sure` to hold one (`local`: the function's own names, which a builtin's name may be
    rebound to)."""
    displays, makers = kind

    def makes(part) -> bool:
        return _makes(kind, part, sure, resolver, local)
    if value is _KEEPS_ITS_KIND or isinstance(value, displays):
        return True
    if isinstance(value, gast.Name):
        return value.id in sure
    if isinstance(value, gast.IfExp):
        return makes(value.body) and makes(value.orelse)
    if isinstance(value, gast.Call) and isinstance(value.func, gast.Name):
        return value.func.id not in local \
            and any(resolver.is_builtin(value.func.id, maker) for maker in makers)
    if isinstance(value, gast.Call) and isinstance(value.func, gast.Attribute):
        return value.func.attr == "copy" and not value.args and makes(value.func.value)
    if kind is not _LIST:
        return False
    if isinstance(value, gast.BinOp) and isinstance(value.op, gast.Add):  # a join
        return makes(value.left) and makes(value.right)
    if isinstance(value, gast.BinOp) and isinstance(value.op, gast.Mult):  # `[0.0] * n`
        return makes(value.left) and _a_count(value.right) \
            or _a_count(value.left) and makes(value.right)
    if isinstance(value, gast.Subscript):  # a slice of a list
        return isinstance(value.slice, gast.Slice) and makes(value.value)
    return False


def _distinct(keys) -> list:
    """Constant keys, each once, where its last value is written (as a dict display keeps)."""
    return list({k.value: k for k in keys}.values())


def _a_count(value) -> bool:
    """Surely an integer where it is written (`3`, `len(xs)`, `int(n)`, `n + 1` of such): a
    list times anything else may be an array (`x * [1.0]` of an array `x` is one)."""
    if isinstance(value, gast.Constant):
        return type(value.value) is int
    if isinstance(value, gast.Call) and isinstance(value.func, gast.Name):
        return value.func.id in ("len", "int")
    if isinstance(value, gast.BinOp) and isinstance(value.op, (gast.Add, gast.Sub, gast.Mult,
                                                               gast.FloorDiv)):
        return _a_count(value.left) and _a_count(value.right)
    return False


class _Rewriter:
    def __init__(self, lists, dicts, resolver, namer):
        self.lists = lists
        self.dicts = dicts
        self.resolver = resolver
        self.namer = namer

    def statements(self, statements: list) -> None:
        """Rewrite a block, and the blocks nested in it, in place."""
        rewritten = []
        for statement in statements:
            for field in ("body", "orelse", "finalbody"):
                nested = getattr(statement, field, None)
                if isinstance(nested, list) and not isinstance(
                        statement, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
                    self.statements(nested)
            for handler in getattr(statement, "handlers", ()):
                self.statements(handler.body)
            for new in self._statement(statement):
                for node in walk(new):  # (the user's line, for errors and `show`)
                    if "lineno" in node._attributes and getattr(node, "lineno", None) is None:
                        gast.copy_location(node, statement)
                rewritten.append(new)
        statements[:] = rewritten

    def _statement(self, statement) -> list:
        self._pops_in(statement)
        if isinstance(statement, gast.Delete):
            return [s for target in statement.targets for s in self._delete(target)]
        call = statement.value if isinstance(statement, gast.Expr) else None
        if getattr(call, "pops", False):  # (a "pop" operation binds the item)
            return [self._bound(call)]
        if isinstance(statement, gast.Assign) and len(statement.targets) == 1 \
                and isinstance(statement.targets[0], gast.Name):
            call = statement.value  # (`r = d.setdefault(k, v)`)
        if self._receiver(call, self.dicts) is not None:
            return self._dict_update(statement, call)
        if isinstance(statement, gast.Assign):
            return [statement]
        receiver = self._receiver(call)
        if receiver is None or call.func.attr not in python_statements.LIST_UPDATES:
            return [statement]
        method, args, keywords = call.func.attr, call.args, call.keywords
        if method == "insert" and len(args) == 2 and not keywords:
            return [gast.Expr(self._call(python_statements.list_insert, receiver, *args))]
        if method == "remove" and len(args) == 1 and not keywords:
            where = self._call(python_statements.position_of, receiver, args[0])
            return [self._pop(receiver, where)]
        if method == "clear" and not args and not keywords:
            count = gast.Call(self._helper(builtins.len), [self._load(receiver)], [])
            return [self._for(gast.Call(self._helper(builtins.range), [count], []),
                              lambda _: self._pop(receiver, gast.Constant(-1, None)))]
        if method == "reverse" and not args and not keywords:
            backwards = gast.Subscript(self._load(receiver), gast.Slice(
                None, None, gast.Constant(-1, None)), gast.Load())
            return [self._write_all(receiver, backwards)]
        if method == "sort" and not args:
            ordered = gast.Call(self._helper(builtins.sorted), [self._load(receiver)], keywords)
            return [self._write_all(receiver, ordered)]
        return [statement]  # (`xs.pop()` itself became `popped(xs, -1)` above)

    def _dict_update(self, statement, call) -> list:
        """`d.update(...)` and `d.setdefault(k, v)` as element writes (the module's table);
        anything else of a dict stays as written."""
        d, method, args, keywords = call.func.value.id, call.func.attr, call.args, call.keywords
        if method == "setdefault" and len(args) == 2 and not keywords:
            key, value = (self._temporary(name, part) for name, part in
                          (("key", args[0]), ("default", args[1])))
            missing = gast.Compare(self._load(key[0]), [gast.NotIn()], [self._load(d)])
            write = self._write(d, self._load(key[0]), self._load(value[0]))
            statements = [key[1], value[1], gast.If(missing, [write], [])]
            if isinstance(statement, gast.Assign):
                statements.append(gast.Assign(statement.targets, gast.Subscript(
                    self._load(d), self._load(key[0]), gast.Load()), None))
            return statements
        given = args[0] if len(args) == 1 else gast.Dict([], []) if not args else None
        if method != "update" or isinstance(statement, gast.Assign) \
                or any(k.arg is None for k in keywords) or not self._a_dict(given):
            return [statement]  # (`d.update(pairs)`, `d.update(**m)`: refused as written)
        if isinstance(given, gast.Dict):  # (keywords join the display)
            given = gast.Dict([*given.keys, *(gast.Constant(k.arg, None) for k in keywords)],
                              [*given.values, *(k.value for k in keywords)])
            keywords = []
        elif isinstance(given, gast.Name):  # (a copy: what it holds when `update` runs)
            given = gast.Call(self._helper(dict), [given], [])
        name, made = self._temporary("update", given)
        statements = [made] + [self._write(name, gast.Constant(k.arg, None), k.value)
                               for k in keywords]
        keys = given.keys if isinstance(given, gast.Dict) else [None]
        if all(isinstance(k, gast.Constant) for k in keys):  # (each key written once, in order)
            return statements + [self._write(d, gast.Constant(k.value, None), gast.Subscript(
                self._load(name), gast.Constant(k.value, None), gast.Load()))
                for k in _distinct(keys)]
        return statements + [self._for(self._load(name), lambda key: self._write(
            d, key, gast.Subscript(self._load(name), key, gast.Load())))]

    def _a_dict(self, node) -> bool:
        """A display without `**`, a comprehension, or a name surely holding a dict."""
        return isinstance(node, gast.Dict) and None not in node.keys \
            or isinstance(node, gast.DictComp) \
            or isinstance(node, gast.Name) and node.id in self.dicts

    def _temporary(self, stem: str, value):
        """`(name, name = value)`, a new name."""
        name = self.namer.temporary(stem)
        return name, gast.Assign([gast.Name(name, gast.Store(), None, None)], value, None)

    @staticmethod
    def _write(d: str, key, value):
        return gast.Assign([gast.Subscript(gast.Name(d, gast.Store(), None, None), key,
                                           gast.Store())], value, None)

    def _delete(self, target) -> list:
        receiver = target.value.id if isinstance(target, gast.Subscript) \
            and isinstance(target.value, gast.Name) and target.value.id in self.lists else None
        if receiver is None:
            return [gast.Delete([target])]
        index = target.slice
        if not isinstance(index, gast.Slice):
            return [self._pop(receiver, index)]
        parts = [p if p is not None else gast.Constant(None, None)
                 for p in (index.lower, index.upper, index.step)]
        whole = gast.Call(self._helper(builtins.slice), parts, [])
        positions = self._call(python_statements.deleted_positions, receiver, whole)
        return [self._for(positions, lambda position: self._pop(receiver, position))]

    def _pops_in(self, statement) -> None:
        """`xs.pop(i)` anywhere in `statement` (not in a nested function) as `popped(xs, i)`."""
        self._refuse_lazy_pops(statement)
        todo = [statement]
        while todo:
            node = todo.pop()
            for field, value in gast.iter_fields(node):
                children = value if isinstance(value, list) else [value]
                for position, child in enumerate(children):
                    if not isinstance(child, gast.AST) or isinstance(
                            child, (gast.Lambda, gast.stmt)) or self._shadows(child):
                        continue
                    receiver = self._receiver(child)
                    if self._is_pop(child):
                        index = child.args[0] if child.args else gast.Constant(-1, None)
                        new = gast.copy_location(
                            self._call(python_statements.popped, receiver, index), child)
                        new.pops = True
                        if isinstance(value, list):
                            value[position] = new
                        else:
                            setattr(node, field, new)
                        child = new
                    todo.append(child)

    def _is_pop(self, node) -> bool:
        return self._receiver(node) is not None and node.func.attr == "pop" \
            and len(node.args) <= 1 and not node.keywords

    def _refuse_lazy_pops(self, statement) -> None:
        """A pop inside a generator expression runs only as far as its consumer reads it
        (`any(...)` stops early), where srcad's loop would run every pop."""
        for generator in walk(statement):
            if isinstance(generator, gast.GeneratorExp):
                pop = next((n for n in walk(generator) if self._is_pop(n)), None)
                if pop is not None:
                    parsed = self.resolver.parsed
                    raise UnsupportedSyntaxError(
                        f"srcad cannot differentiate `{pop.func.value.id}.pop(...)` inside a "
                        f"generator expression (in {parsed.name}): Python pops only as far "
                        "as the generator is read.", parsed.location(pop),
                        "pop in a loop, or make the items with a list comprehension `[...]`.")

    def _shadows(self, node) -> bool:
        """Whether `node` is a comprehension binding one of the list names as its own."""
        return isinstance(node, (gast.ListComp, gast.SetComp, gast.DictComp,
                                 gast.GeneratorExp)) and any(
            isinstance(n, gast.Name) and n.id in self.lists
            for generator in node.generators for n in walk(generator.target))

    def _receiver(self, call, names=None) -> str | None:
        """`xs` for a method call `xs.name(...)` on a surely-list name (or one of `names`)."""
        if isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute) \
                and isinstance(call.func.value, gast.Name) \
                and call.func.value.id in (self.lists if names is None else names):
            return call.func.value.id
        return None

    def _pop(self, receiver: str, index):
        return self._bound(self._call(python_statements.popped, receiver, index))

    def _bound(self, popping):
        """`popped_0 = popped(xs, i)`: the item bound to a new name (the backward sweep puts
        it back into the list)."""
        discarded = gast.Name(self.namer.temporary("popped"), gast.Store(), None, None)
        return gast.Assign([discarded], popping, None)

    def _write_all(self, receiver: str, value):
        whole = gast.Subscript(gast.Name(receiver, gast.Store(), None, None),
                               gast.Slice(None, None, None), gast.Store())
        return gast.Assign([whole], value, None)

    def _for(self, iterable, body):
        """`for p in iterable: body(p)`, `p` a new name."""
        position = self.namer.temporary("position")
        return gast.For(gast.Name(position, gast.Store(), None, None), iterable,
                        [body(gast.Name(position, gast.Load(), None, None))], [], None)

    def _call(self, helper, receiver: str, *args):
        return gast.Call(self._helper(helper), [self._load(receiver), *args], [])

    def _helper(self, obj):
        return self.resolver.helper(obj, self.namer)

    @staticmethod
    def _load(name: str):
        return gast.Name(name, gast.Load(), None, None)
