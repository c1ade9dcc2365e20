"""closures: nested functions that read the enclosing function's variables get them passed.

    def f(x):                                   def f(x):
        k = np.cos(x)                               k = np.cos(x)
        def inner(d):               →               def inner(d, *, x=x, k=k):
            return d * np.sin(x) * k                    return d * np.sin(x) * k
        return inner(2.0)                           return inner(2.0, x=x, k=k)

A closure hides a data dependence from the derivative: `inner(2.0)` depends on `x` through a
cell, and srcad differentiates calls through their arguments. Passing each captured variable
as a keyword-only argument, at every call, makes the dependence an argument like any other,
so both modes follow it (and so does the custom-gradient machinery, whose `grad_fn` is such a
closure). The defaults keep the function's meaning wherever it is called without them.

A closure reads its variables when it is called, and so does a call that passes them: the
rewrite is exact wherever every call passes them, so it is applied to a nested `def` or a
lambda assigned to a name when the name is bound once and used only as the callee of calls
in the enclosing function itself (the function does not escape: a caller elsewhere would
not pass the keywords), written after the definition, and it has no decorators and does not
read itself. The variables it reads may be bound after the definition (ADBench's GMM
objective defines `inner_term` before the `Ls` it reads) and more than once; those bound
once before it, by a parameter or a plain statement of an enclosing block, also become the
defaults, which a derivative call that is handed the function relies on (it is only
converted if all are). Anything else stays a closure, and a closure reading a
differentiated variable is refused later (`transform/refusals`).

`NestedFunctions` is the normalizer's side: the definition is kept whole, its default values
read at the enclosing variables' current versions.
"""
from __future__ import annotations


import gast

from srcad.compiler.frontend.exits import walk_local
from srcad.compiler.frontend.parse import param_names
from srcad.compiler.frontend.scopes import captured_names, store_counts, surely_bound_by
from srcad.compiler.frontend.trees import blocks, clone, walk
from srcad.errors import UnsupportedSyntaxError

_COMPOUND_BLOCKS = ("body", "orelse", "finalbody", "handlers")


class NestedFunctions:
    """The normalizer's handling of a nested `def` or lambda (a mixin of it): kept whole,
    with its default values reading the current versions of the enclosing variables."""

    def _nested_function(self, node):
        self._check_captures(node)
        nested = clone(node)
        arguments = nested.args
        arguments.defaults = [self._renamed(d) for d in node.args.defaults]
        arguments.kw_defaults = [None if d is None else self._renamed(d)
                                 for d in node.args.kw_defaults]
        return nested

    def _check_captures(self, scope):
        """A nested function or lambda may read the enclosing function's variables only if
        they are assigned once: the simple form renames reassigned variables, and a closure
        would see the wrong version."""
        for name in sorted(captured_names(scope) & self.locals):
            if self.stores.get(name, 0) > 1:
                raise UnsupportedSyntaxError(
                    f"srcad cannot differentiate a nested function that reads `{name}`, which "
                    f"{self.parsed.name} assigns more than once.", self.parsed.location(scope),
                    f"pass `{name}` to the nested function as an argument.")


def convert_closures(fn: gast.FunctionDef, is_derivative_call) -> gast.FunctionDef:
    """Rewrite `fn` (in place, and return it) as the module docstring shows.

    `is_derivative_call(call)` tells a generated program's `call_jvp(f, ...)` or
    `call_vjp(f, ...)` (or `call_jvp(call_jvp, ..., f, ...)` a level up): differentiated
    again, a derivative program that srcad generated from converted code calls `f` that way,
    passing everything already."""
    if not _defines_functions(fn):  # (nearly every function: what follows, and finding
        return fn                   # the definitions, walk all of it)
    definitions = list(_definitions(fn.body, set(param_names(fn))))
    if not definitions:  # (what follows walks the whole function several times)
        return fn
    stores = store_counts(fn)  # assignments and parameters, then `def`s too:
    for node in walk(fn):
        if isinstance(node, gast.FunctionDef) and node is not fn:
            stores[node.name] = stores.get(node.name, 0) + 1
    local = _local_names(fn)
    calls = [n for n in walk_local(fn) if isinstance(n, gast.Call)
             and isinstance(n.func, gast.Name)]
    shadowed = _comprehension_variables(fn)
    nested = {name for _, name, _ in definitions}
    passing = {id(a) for n in calls if any(_names(a, nested) for a in n.args)
               and is_derivative_call(n) for a in n.args if _names(a, nested)}
    for scope, name, bound in definitions:
        captured = sorted(captured_names(scope) & local)
        defaults = _defaults_reading(scope.args, local)
        if not (captured or defaults):
            continue
        sites = [call for call in calls if call.func.id == name]
        read_by_defaults = set().union(*(default_reads_of(d) & local for _, d in defaults))
        if _convertible(fn, scope, name, captured, read_by_defaults, bound, stores, passing) \
                and all(_completable(call, scope) and not shadowed.get(id(call), set())
                        & set(captured) for call in sites):
            _add_keyword_parameters(scope.args, captured, {
                c for c in captured if stores.get(c, 0) == 1 and c in bound})
            scope.passes_enclosing = True  # see `scopes.enclosing_reads`
            for call in sites:
                _pass_enclosing(call, scope.args, captured, defaults)
    return fn


def _comprehension_variables(fn) -> dict:
    """For each call inside a comprehension, the names its comprehensions bind: a captured
    variable passed there would be the comprehension's, not the enclosing function's."""
    bound = {}
    for node in walk_local(fn):
        if isinstance(node, (gast.ListComp, gast.SetComp, gast.GeneratorExp, gast.DictComp)):
            names = {n.id for g in node.generators for n in walk(g.target)
                     if isinstance(n, gast.Name)}
            for inner in walk(node):
                if isinstance(inner, gast.Call):
                    bound.setdefault(id(inner), set()).update(names)
    return bound


def _names(node, names) -> bool:
    return isinstance(node, gast.Name) and node.id in names


def _defaults_reading(arguments: gast.arguments, local: set) -> list:
    """`(parameter, default)` for each default value that reads a local variable."""
    positional = [*arguments.posonlyargs, *arguments.args]
    pairs = list(zip(positional[len(positional) - len(arguments.defaults):], arguments.defaults))
    pairs += [(p, d) for p, d in zip(arguments.kwonlyargs, arguments.kw_defaults) if d is not None]
    return [(parameter.id, default) for parameter, default in pairs
            if default_reads_of(default) & local]


def default_reads_of(expression) -> set:
    return {n.id for n in walk(expression)
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)}


def _completable(call: gast.Call, scope) -> bool:
    """Whether the parameters a call fills are known where it is written (no `*`, `**`),
    and it comes after the definition (in a loop, an earlier line would call the previous
    iteration's function, made with other values)."""
    return call.lineno > scope.end_lineno \
        and not any(isinstance(a, gast.Starred) for a in call.args) \
        and all(k.arg is not None for k in call.keywords)


def _pass_enclosing(call: gast.Call, arguments: gast.arguments, captured, defaults) -> None:
    """Pass what the function reads from here: captured variables, and the defaults (which
    read local variables) of the parameters the call leaves to them."""
    positional = [p.id for p in (*arguments.posonlyargs, *arguments.args)]
    supplied = set(positional[:len(call.args)]) | {k.arg for k in call.keywords}
    call.keywords += [gast.keyword(p, clone(d)) for p, d in defaults
                      if p not in supplied]
    call.keywords += [gast.keyword(c, gast.Name(c, gast.Load(), None, None)) for c in captured]


def _local_names(fn) -> set:
    """The variables of `fn` itself (a nested function's own are not; a nested function's
    name is, but reading one is an escape that `_convertible` refuses anyway)."""
    return set(param_names(fn)) | {
        n.id for n in walk_local(fn) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}


def _defines_functions(fn) -> bool:
    """Whether a block of `fn` holds a `def` or an assignment of a lambda: where `_definitions`
    finds them, and in the functions they define; statements only, no expression walked."""
    return any(isinstance(statement, gast.FunctionDef) or isinstance(statement, gast.Assign)
               and isinstance(statement.value, gast.Lambda)
               for block in blocks(fn) for statement in block)


def _definitions(statements, bound: set):
    """`(scope, name, names surely bound before it)` for each nested function of a block,
    descending into compound statements (whose own bindings are not sure afterwards)."""
    bound = set(bound)
    for statement in statements:
        if isinstance(statement, gast.FunctionDef):
            yield statement, statement.name, frozenset(bound)
        elif isinstance(statement, gast.Assign) and len(statement.targets) == 1 \
                and isinstance(statement.targets[0], gast.Name) \
                and isinstance(statement.value, gast.Lambda):
            yield statement.value, statement.targets[0].id, frozenset(bound)
        for field in _COMPOUND_BLOCKS if not isinstance(statement, gast.FunctionDef) else ():
            for block in _blocks(getattr(statement, field, None)):  # (a nested function's
                yield from _definitions(block, bound)               # are its own)
        bound |= surely_bound_by(statement)


def _blocks(value):
    if not value:
        return []
    if isinstance(value[0], gast.ExceptHandler):
        return [handler.body for handler in value]
    return [value]


def _convertible(fn, scope, name, captured, read_by_defaults, bound, stores, passing) -> bool:
    """Whether passing the values at each call is exact (see the module docstring): it is
    only called here (or handed to a derivative call, which needs the defaults: then its
    captured variables are bound once, before); defaults' variables are not rebound after."""
    if name in captured or getattr(scope, "decorator_list", None) \
            or stores.get(name, 0) != 1:
        return False
    passed_on = any(id(n) in passing for n in walk(fn)
                    if isinstance(n, gast.Name) and n.id == name)
    if passed_on and any(stores.get(c, 0) != 1 or c not in bound for c in captured):
        return False  # (a derivative call passing it on calls it without the keywords)
    if not read_by_defaults <= bound or any(
            isinstance(n, gast.Name) and n.id in read_by_defaults
            and isinstance(n.ctx, gast.Store) and n.lineno > scope.lineno
            for n in walk(fn)):
        return False
    callees = {id(n.func) for n in walk_local(fn) if isinstance(n, gast.Call)} | passing
    return all(id(n) in callees for n in walk(fn)
               if isinstance(n, gast.Name) and n.id == name and isinstance(n.ctx, gast.Load))


def _add_keyword_parameters(arguments: gast.arguments, names, defaulted: set) -> None:
    """A keyword-only parameter per captured name; those bound once before the definition
    default to their value (the others are passed at every call)."""
    for captured in names:
        arguments.kwonlyargs.append(gast.Name(captured, gast.Param(), None, None))
        arguments.kw_defaults.append(gast.Name(captured, gast.Load(), None, None)
                                     if captured in defaulted else None)
