"""inline: a small helper of the same module, called as a whole statement, written out.

A helper called once per step of a loop (an ODE's right-hand side filling
`dy = np.zeros(2)`, a layer) costs at run time a dispatch, a pullback closure and a program
of its own per call (runtime/calls.py): most of an RK4 integrator's gradient. Written out in
the caller, it is part of one program, which the analyses see through (numbers, shapes,
buffers written in place) and the generated code reads as the user's helper spelled out.

A call is written out where it is a whole statement (`k = f(a, b)`, `a, b = f(x)`, `f(buf)`,
`return f(x)`, `s += f(x)`) and the callee is a plain function of the caller's module (the
same globals and file, no closure, no decorator that wraps it, no rule of srcad's or the
user's), small, made of statements srcad follows, returning only at its end, and reading no
global the caller binds. Its names are renamed apart (`dy` of `_rhs` becomes `dy_rhs`), its
parameters bound to the arguments first (a default only where it is a constant), its return
value assigned last. Helpers called by the written-out body are written out in turn, to a
depth of `_DEPTH`, never into themselves. The callee's lines keep their numbers, so an
error names the line of the helper. The callee's name, code and defaults are guarded:
changing one between calls of the derivative makes the program again (a helper rebound
while the derivative runs is not seen, as for every callee srcad resolves).

The caller is then a different program for the passes; where one of them refuses it, the
pipeline makes it again without writing helpers out (pipeline.run_passes), so writing out
never turns a derivative srcad gave into a refusal.
"""
from __future__ import annotations

import inspect
import types
from dataclasses import replace

import gast

from srcad.compiler.frontend.parse import ParsedFunction, param_names, parse_function
from srcad.compiler.frontend.resolve import Guard
from srcad.compiler.frontend.scopes import local_names
from srcad.compiler.frontend.trees import clone, statements_in, walk
from srcad.errors import SrcadError
from srcad.ops.registry import op_of

_DEPTH = 3          # helpers written out inside written-out helpers, at most
_STATEMENTS = 40    # statements of a helper written out, at most
_BUDGET = 600       # statements written out into one function, at most

# what a helper may be made of: statements the pipeline follows, no scope of its own
_STATEMENT_KINDS = (gast.Assign, gast.AugAssign, gast.AnnAssign, gast.Expr, gast.If,
                    gast.For, gast.While, gast.Pass, gast.Break, gast.Continue, gast.Return)
_NESTING = (gast.If, gast.For, gast.While, gast.With, gast.Try)
_REFUSED_NODES = (gast.Lambda, gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef,
                  gast.Yield, gast.YieldFrom, gast.Await, gast.Global, gast.Nonlocal,
                  gast.NamedExpr, gast.Starred)


def inline_helpers(parsed: ParsedFunction, resolver) -> ParsedFunction | None:
    """`parsed` with the helper calls this module may write out written out (a new tree:
    `parsed` is left as it is), or None where there is none."""
    fn = resolver.fn
    if not _calls_functions(parsed.node, resolver):
        return None  # (most functions: not copied and searched for nothing)
    node = clone(parsed.node)
    caller_names = local_names(node) | set(fn.__code__.co_freevars)
    taken = {n.id for n in walk(node) if isinstance(n, gast.Name)}
    writer = _Writer(fn, resolver, caller_names, taken)
    node.body = writer.statements(node.body, (fn.__code__,), 0)
    return replace(parsed, node=node) if writer.calls else None


class _Writer:
    def __init__(self, fn, resolver, caller_names: set, taken: set):
        self.fn = fn
        self.resolver = resolver
        self.caller_names = caller_names
        self.taken = taken
        self.written = 0  # statements written out so far
        self.calls = 0    # calls written out
        self.helpers: dict = {}  # code → its parsed definition, or None where not inlinable

    def statements(self, statements: list, chain: tuple, depth: int) -> list:
        result = []
        for statement in statements:
            if isinstance(statement, _NESTING):  # (not a nested function: its own scope)
                for field in ("body", "orelse", "finalbody"):
                    inner = getattr(statement, field, None)
                    if inner:
                        setattr(statement, field, self.statements(inner, chain, depth))
                for handler in getattr(statement, "handlers", ()):
                    handler.body = self.statements(handler.body, chain, depth)
            written = self.written_out(statement, chain, depth)
            result.extend([statement] if written is None else written)
        return result

    def written_out(self, statement, chain: tuple, depth: int):
        """The statements that replace `statement`, or None to keep it."""
        call = _whole_statement_call(statement)
        if call is None or depth >= _DEPTH or not isinstance(call.func, gast.Name) \
                or call.func.id in self.caller_names:
            return None
        callee = self.resolver.peek(call.func.id)
        definition = self.definition(callee, chain)
        if definition is None:
            return None
        bindings = _bound_arguments(definition, call)
        if bindings is None:
            return None
        body, value = _body_and_value(definition)
        if self.written + len(body) > _BUDGET:
            return None
        renamed = self._renaming(definition, callee.__name__)
        rebound = _rebound_names(definition)
        parameters = []
        for parameter, argument in bindings:
            if isinstance(argument, gast.Name) and parameter not in rebound:
                renamed[parameter] = argument.id  # (the caller's name itself: no copy)
            else:
                parameters.append(_located(gast.Assign(
                    [gast.Name(renamed[parameter], gast.Store(), None, None)], argument, None),
                    statement))
        body = [_renamed(clone(s), renamed) for s in body]
        value = _renamed(clone(value), renamed)
        self._guard(call.func.id, callee)
        self.written += len(body) + len(parameters)
        self.calls += 1
        body = self.statements(body, chain + (callee.__code__,), depth + 1)
        return parameters + body + _result(statement, value, renamed.get(_UNREAD))

    def _guard(self, name: str, callee) -> None:
        """Guards on the helper's name, and on its code and defaults: a program made
        with one helper written out is made again when any of them changes (between
        calls of the derivative, as every binding the program relies on)."""
        self.resolver.lookup(name)
        for attribute in ("__code__", "__defaults__", "__kwdefaults__"):
            self.resolver.rely_on(Guard(f"{name}.{attribute}", getattr(callee, attribute),
                                        attributes=(attribute,), root=callee))

    def definition(self, callee, chain: tuple):
        """The callee's parsed definition if it may be written out, else None."""
        if type(callee) is not types.FunctionType:
            return None
        code = callee.__code__
        if code in chain:
            return None
        if code not in self.helpers:
            self.helpers[code] = self._inlinable(callee)
        return self.helpers[code]

    def _inlinable(self, callee):
        code, fn = callee.__code__, self.fn
        if callee.__globals__ is not fn.__globals__ or code.co_filename != fn.__code__.co_filename \
                or code.co_freevars or code.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE
                                                        | inspect.CO_ASYNC_GENERATOR) \
                or hasattr(callee, "__wrapped__") or op_of(callee) is not None:
            return None
        try:
            node = parse_function(callee).node
        except SrcadError:
            return None
        arguments = node.args
        if arguments.vararg or arguments.kwarg or not _made_of_followed_statements(node) \
                or not _defaults_as_written(callee, arguments):
            return None
        own = local_names(node)
        if ({n.id for n in walk(node) if isinstance(n, gast.Name)} - own) & self.caller_names:
            return None  # (a global the helper reads is bound in the caller)
        return node

    def _renaming(self, definition, callee_name: str) -> dict:
        renamed = {}
        stem = callee_name if callee_name.startswith("_") else "_" + callee_name
        for name in sorted(local_names(definition) | {_UNREAD}):
            fresh, k = f"{name}{stem}", 1
            while fresh in self.taken or fresh in self.fn.__globals__:
                fresh, k = f"{name}{stem}_{k}", k + 1
            self.taken.add(fresh)
            renamed[name] = fresh
        return renamed


def _calls_functions(node: gast.FunctionDef, resolver) -> bool:
    """Whether a statement of `node` is a call of a name bound to a plain function (in any
    block: more statements than _Writer looks at, so never fewer calls it writes out)."""
    for statement in node.body:
        for inner in statements_in(statement):
            call = _whole_statement_call(inner)
            if call is not None and isinstance(call.func, gast.Name) \
                    and type(resolver.peek(call.func.id)) is types.FunctionType:
                return True
    return False


def _whole_statement_call(statement):
    """The call a statement is made of (`x = f(..)`, `f(..)`, `return f(..)`, `s += f(..)`
    with a name `s`), or None."""
    if isinstance(statement, (gast.Assign, gast.Expr, gast.Return)) or (
            isinstance(statement, gast.AugAssign) and isinstance(statement.target, gast.Name)):
        value = statement.value
        return value if isinstance(value, gast.Call) else None
    return None


def _bound_arguments(definition, call: gast.Call):
    """[(parameter, argument expression)] in the parameters' order, or None where the call
    passes what cannot be bound here (`*xs`, `**kw`, a missing argument whose default is no
    constant, an unknown keyword)."""
    arguments = definition.args
    positional = [p.id for p in arguments.posonlyargs + arguments.args]
    if len(call.args) > len(positional) or any(isinstance(a, gast.Starred) for a in call.args):
        return None
    given = dict(zip(positional, call.args))
    keyword_names = set(positional[len(arguments.posonlyargs):]) | {
        p.id for p in arguments.kwonlyargs}
    for keyword in call.keywords:
        if keyword.arg is None or keyword.arg not in keyword_names or keyword.arg in given:
            return None
        given[keyword.arg] = keyword.value
    defaults = dict(zip(positional[len(positional) - len(arguments.defaults):],
                        arguments.defaults))
    defaults.update({p.id: d for p, d in zip(arguments.kwonlyargs, arguments.kw_defaults)
                     if d is not None})
    bound = []
    for name in param_names(definition):
        if name in given:
            bound.append((name, given[name]))
        elif isinstance(defaults.get(name), gast.Constant):
            bound.append((name, clone(defaults[name])))
        else:
            return None
    # (arguments are evaluated in the call's order: keywords after positionals, as bound)
    order = [id(a) for a in call.args] + [id(k.value) for k in call.keywords]
    if [id(a) for _, a in bound if id(a) in order] != order:
        return None
    return bound


def _defaults_as_written(callee, arguments) -> bool:
    """Whether the constant defaults of the source are those the function holds (nobody
    replaced its `__defaults__`): a written-out call binds the constant."""
    pairs = list(zip(arguments.defaults, callee.__defaults__ or ()))
    pairs += [(node, (callee.__kwdefaults__ or {}).get(p.id))
              for p, node in zip(arguments.kwonlyargs, arguments.kw_defaults) if node is not None]
    return all(not isinstance(node, gast.Constant)
               or (type(node.value) is type(value) and node.value == value)
               for node, value in pairs)


def _made_of_followed_statements(node) -> bool:
    body = _without_docstring(node.body)
    if not body or len(body) > _STATEMENTS or any(
            isinstance(s, gast.Return) for s in body[:-1]):
        return False
    count = 0
    for inner in walk(gast.Module(body, [])):
        if isinstance(inner, _REFUSED_NODES):
            return False
        if isinstance(inner, gast.stmt):
            count += 1
            if not isinstance(inner, _STATEMENT_KINDS) or (
                    isinstance(inner, gast.Return) and inner is not body[-1]):
                return False
    return count <= _STATEMENTS


def _without_docstring(body: list) -> list:
    if body and isinstance(body[0], gast.Expr) and isinstance(body[0].value, gast.Constant) \
            and isinstance(body[0].value.value, str):
        return body[1:]
    return body


def _body_and_value(definition):
    body = _without_docstring(definition.body)
    if isinstance(body[-1], gast.Return):
        return body[:-1], body[-1].value or gast.Constant(None, None)
    return body, gast.Constant(None, None)


def _rebound_names(definition) -> set:
    """The names the helper's body binds (its parameters only where it assigns them)."""
    return {n.id for n in walk(gast.Module(definition.body, []))
            if isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Load)}


def _renamed(node, renamed: dict):
    for inner in walk(node):
        if isinstance(inner, gast.Name) and inner.id in renamed:
            inner.id = renamed[inner.id]
    return node


_UNREAD = "returned"  # (the name of a value a call made for its effect returns)


def _result(statement, value, unread: str) -> list:
    """What the call statement does with the helper's return value (a call made for its
    effect computes it still, into the name `unread`: it may raise)."""
    if isinstance(statement, gast.Assign):
        made = gast.Assign(statement.targets, value, None)
    elif isinstance(statement, gast.AugAssign):
        made = gast.AugAssign(statement.target, statement.op, value)
    elif isinstance(statement, gast.Return):
        made = gast.Return(value)
    elif isinstance(value, (gast.Name, gast.Constant)):
        return []
    else:
        made = gast.Assign([gast.Name(unread, gast.Store(), None, None)], value, None)
    return [_located(made, statement)]


def _located(node, where):
    return gast.copy_location(node, where)
