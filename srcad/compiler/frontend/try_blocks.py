"""try_blocks: `try` statements → a nested function for the body, called through `attempt`.

    try:                                def srcad_try(*, x):
        y = np.log(x)                       y = np.log(x)
    except FloatingPointError:  ─▶          return (y,)
        y = x                           srcad_raised, y = attempt(srcad_try, (FloatingPointError,),
                                                                  1, x=x)
                                        if srcad_raised is None:
                                            pass                      # the `else:` block
                                        elif handles(srcad_raised, FloatingPointError):
                                            y = x

The body either completes, and its derivative is its function's (srcad differentiates the
call like any other), or raises and leaves nothing recorded, the variables it bound unseen
(they were its function's). That is Python's meaning as long as nothing on the exception
path reads a variable the body bound before it raised, so a handler that may complete
without binding such a variable, which `finally:` or later code reads, is refused. The body
receives the enclosing variables it reads as keyword arguments (as closures.py does), so
their derivatives flow through the call; a variable the body may leave unbound that was not
bound before holds `Unbound` after it. `finally:` runs after the body and the handler,
then an exception no handler took is raised again (ops/python_statements.py).

Refused, with the reason: `return`, `break` or `continue` in the body (but a `return` that
ends the body of a `try` without `finally:`), `except*`, and a body that writes into an
enclosing array or list (the call would write into its arguments, which aliasing refuses).
"""
from __future__ import annotations

import gast

from srcad.compiler.frontend.exits import walk_local
from srcad.compiler.frontend.parse import ParsedFunction, param_names
from srcad.compiler.frontend.scopes import scope_names, surely_bound_by
from srcad.compiler.frontend.trees import walk
from srcad.errors import UnsupportedSyntaxError
from srcad.ops import python_statements


def outline_try_blocks(fn: gast.FunctionDef, resolver, namer, parsed: ParsedFunction) -> None:
    """Rewrite every `try` of `fn` (not of its nested functions), innermost first: an inner
    `try` goes into the outer one's body function. A variable passed to a body function that
    may not be bound yet when it is called (bound later in a loop) starts as `Unbound`."""
    local = set(param_names(fn)) | {n.id for n in walk_local(fn) if isinstance(n, gast.Name)
                                    and isinstance(n.ctx, gast.Store)}
    outliner = _Outliner(fn, resolver, namer, parsed, local)
    outliner.block(fn.body)
    fn.body[:0] = [gast.copy_location(gast.Assign([_name(n, gast.Store())], outliner._unbound(),
                                                  None), fn) for n in sorted(outliner.early)]


def _name(identifier, ctx=None):
    return gast.Name(identifier, ctx or gast.Load(), None, None)


def _local_nodes(statements):
    """The nodes of a block, not entering the functions it defines."""
    for statement in statements:
        if not isinstance(statement, gast.FunctionDef):
            yield from walk_local(statement)


def _bound_in(statements) -> list:
    """Variables the statements bind (not inside nested functions), in order."""
    names = []
    for statement in statements:
        if isinstance(statement, gast.FunctionDef):
            names.append(statement.name)
            continue
        for node in walk_local(statement):
            if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Store):
                names.append(node.id)
    return list(dict.fromkeys(names))


def _reading_names(nodes) -> list:
    """The names among `nodes` that read a variable (`t += 1` reads `t`)."""
    nodes = list(nodes)
    augmented = {id(n.target) for n in nodes if isinstance(n, gast.AugAssign)}
    return [n for n in nodes if isinstance(n, gast.Name)
            and (isinstance(n.ctx, gast.Load) or id(n) in augmented)]


def _surely_bound(statements) -> set:
    """Names the top level of a block binds on every path through it."""
    return set().union(*map(surely_bound_by, statements))


def _read_first(statements, name) -> bool:
    """Whether the block may read `name` before its top level (or a `with` block's) binds
    it."""
    for statement in statements:
        if isinstance(statement, gast.With):
            if any(name in scope_names(item.context_expr, gast.Load) for item in statement.items) \
                    or _read_first(statement.body, name):
                return True
        elif name in scope_names(statement, gast.Load):
            return True
        if name in _surely_bound([statement]):
            return False
    return False


class _Outliner:
    def __init__(self, fn, resolver, namer, parsed, local):
        self.fn, self.resolver, self.namer, self.parsed, self.local = \
            fn, resolver, namer, parsed, local
        self.outlined = set()  # the body functions made so far (not the user's variables)
        self.loops = []  # the loops around the statement being rewritten
        self.early = set()  # variables passed to a body function before they may be bound

    def block(self, statements: list) -> None:
        for index, statement in enumerate(statements):
            if isinstance(statement, gast.FunctionDef):
                continue  # (its own `try`s are outlined when srcad transforms it)
            if isinstance(statement, (gast.For, gast.While)):
                self.loops.append(statement)
            for field in ("body", "orelse", "finalbody"):
                if isinstance(getattr(statement, field, None), list):
                    self.block(getattr(statement, field))
            for handler in getattr(statement, "handlers", ()):
                self.block(handler.body)
            if isinstance(statement, (gast.For, gast.While)):
                self.loops.pop()
            if isinstance(statement, gast.Try):
                statements[index:index + 1] = self._outlined(statement)

    def _maybe_bound_before(self, node: gast.Try, name: str) -> bool:
        """Whether `name` may hold a value when the `try` starts: a parameter, or bound on
        an earlier line or anywhere in a loop around the `try` (then it may also be unbound
        there, the first time: it starts as `Unbound`)."""
        if name in param_names(self.fn):
            return True
        stores = [n for n in walk(self.fn) if isinstance(n, gast.Name) and n.id == name
                  and isinstance(n.ctx, gast.Store)]
        before = any(n.lineno < node.lineno and self._at_top(n) for n in stores)
        looped = {id(m) for loop in self.loops for m in walk(loop)}
        if not before and any(id(n) in looped or n.lineno < node.lineno for n in stores):
            self.early.add(name)
            return True
        return before

    def _at_top(self, store) -> bool:
        """Whether an assignment target is one of `fn`'s top-level statements' (bound on
        every path to what follows)."""
        return any(store is n for s in self.fn.body
                   if isinstance(s, (gast.Assign, gast.AnnAssign, gast.AugAssign))
                   for n in walk(s))

    def _refuse(self, node, what, fix):
        raise UnsupportedSyntaxError(f"srcad cannot differentiate {what} (in {self.parsed.name}).",
                                     self.parsed.location(node), fix)

    def _outlined(self, node: gast.Try) -> list:
        """The `try` as the module docstring shows: the body's function, its call through
        `attempt`, the `if` statements choosing what runs after, `finally:`."""
        if node.finalbody:  # (`finally:` follows them here: a jump out would skip it)
            for part in _local_nodes([*node.orelse, *(s for h in node.handlers
                                                       for s in h.body)]):
                if isinstance(part, (gast.Return, gast.Raise)) or isinstance(
                        part, (gast.Break, gast.Continue)) and not self._in_loop(
                        part, [*node.orelse, *(s for h in node.handlers for s in h.body)]):
                    self._refuse(part, f"`{type(part).__name__.lower()}` in an `except` or "
                                 "`else` block of a `try` with `finally:`",
                                 "keep the exception or value in a variable and raise or "
                                 "return it after the `try` statement")
        body, returned = self._returning_body(node)
        definition, results, passed = self._body_function(node, body, returned)
        raised = self.namer.claim("srcad_raised")
        kinds = gast.Tuple([self._kinds(h) for h in node.handlers], gast.Load())
        if node.finalbody:  # (every exception is caught, to run `finally:` first)
            kinds = _name("BaseException")
        call = gast.Call(self._helper(python_statements.attempt), [
            _name(definition.name), kinds, gast.Constant(tuple(results), None)],
            [gast.keyword(p, _name(p)) for p in passed])
        statements = [definition, gast.Assign([gast.Tuple(
            [_name(raised, gast.Store()), *(_name(n, gast.Store()) for n in results)],
            gast.Store())], call, None)]
        unhandled = self.namer.claim("srcad_unhandled") if node.finalbody else None
        if unhandled:
            statements.append(gast.Assign([_name(unhandled, gast.Store())],
                                          gast.Constant(None, None), None))
        succeeded = [gast.Return(_name(returned))] if returned else list(node.orelse)
        statements.append(gast.If(gast.Compare(_name(raised), [gast.Is()],
                                               [gast.Constant(None, None)]),
                                  succeeded or [gast.Pass()],
                                  self._handlers(node, raised, unhandled)))
        statements += node.finalbody
        if unhandled:
            statements.append(gast.Expr(gast.Call(self._helper(python_statements.reraised),
                                                  [_name(unhandled)], [])))
        for part in (n for s in statements for n in walk(s)):
            if isinstance(part, (gast.stmt, gast.expr)) and getattr(part, "lineno", None) is None:
                gast.copy_location(part, node)  # (what it made stands at the `try`'s line)
        return statements

    def _returning_body(self, node: gast.Try) -> tuple[list, str | None]:
        """The body, its closing `return v` (without `finally:`) made `try_returned = v`;
        any other jump out of it refused."""
        body, returned = list(node.body), None
        if isinstance(body[-1], gast.Return) and not node.finalbody:
            returned = self.namer.claim("try_returned")
            body[-1] = gast.copy_location(gast.Assign(
                [_name(returned, gast.Store())],
                body[-1].value or gast.Constant(None, None), None), body[-1])
        for part in _local_nodes(body):
            if isinstance(part, (gast.Return, gast.Break, gast.Continue)) and not (
                    isinstance(part, (gast.Break, gast.Continue)) and self._in_loop(part, body)):
                self._refuse(part, f"`{type(part).__name__.lower()}` inside a `try` block",
                             "assign the value to a variable and return (or break) after the "
                             "`try` statement")
        return body, returned

    def _body_function(self, node: gast.Try, body: list, returned) -> tuple:
        """`(def srcad_try(*, passed...): body; return results, results, passed)`: it
        returns what the body binds that is read elsewhere, and receives what the body reads
        before binding it and what it may leave as it was."""
        inside = {id(n) for s in node.body for n in walk(s)}
        read_outside = {n.id for n in _reading_names(walk(self.fn)) if id(n) not in inside}
        if self.loops:  # (what the body reads before binding it, it reads from the last trip)
            read_outside |= {n for n in scope_names(body, gast.Load) if _read_first(body, n)}
        bound = [n for n in _bound_in(body) if n != returned and n not in self.outlined
                 and n in read_outside]  # (what the body makes for itself stays there)
        kept = self._kept_on_exception(node, body, bound)
        surely = _surely_bound(body)
        passed = {n for n in scope_names(body, gast.Load) & self.local if _read_first(body, n)
                  and self._maybe_bound_before(node, n)}
        passed |= {n for n in bound if (n not in surely or n in kept)
                   and self._maybe_bound_before(node, n)}
        passed = sorted(passed)
        unbound = [n for n in bound if n not in surely and n not in passed]
        function = self.namer.claim("srcad_try")
        self.outlined.add(function)
        results = [*bound, *([returned] if returned else [])]
        definition = gast.FunctionDef(
            function, gast.arguments([], [], None, [_name(p, gast.Param()) for p in passed],
                                     [None] * len(passed), None, []),
            [gast.Assign([_name(n, gast.Store())], self._unbound(), None) for n in unbound]
            + body + [gast.Return(gast.Tuple([_name(n) for n in results], gast.Load()))],
            [], None, None, [])
        return definition, results, passed

    def _handlers(self, node: gast.Try, raised: str, unhandled: str | None) -> list:
        """`if handles(raised, E1): ... else: if handles(raised, E2): ...`, the exception
        bound to each handler's name, a bare `raise` raising it again; what no handler
        takes is kept in `unhandled` (with `finally:`) to be raised after it."""
        chain = [gast.Assign([_name(unhandled, gast.Store())], _name(raised), None)] \
            if unhandled else []
        for handler in reversed(node.handlers):
            for part in _local_nodes(handler.body):
                if isinstance(part, gast.Raise) and part.exc is None:
                    part.exc = _name(raised)
            handled = ([gast.Assign([_name(handler.name.id, gast.Store())], _name(raised), None)]
                       if handler.name is not None else []) + handler.body
            chain = [gast.If(gast.Call(self._helper(python_statements.handles), [
                _name(raised), self._kinds(handler)], []), handled, chain)]
        return chain

    def _unbound(self):
        return self._helper(python_statements.Unbound)

    def _kinds(self, handler):
        return handler.type if handler.type is not None else _name("BaseException")

    def _helper(self, obj):
        return self.resolver.helper(obj, self.namer)

    def _in_loop(self, jump, body) -> bool:
        """Whether a `break`/`continue` belongs to a loop inside the `try` body."""
        return any(isinstance(loop, (gast.For, gast.While)) and any(
            n is jump for s in loop.body for n in walk_local(s))
            for s in body for loop in walk_local(s))

    def _kept_on_exception(self, node: gast.Try, body: list, bound: list) -> set:
        """The variables of the body that the exception path reads (a handler that may
        complete without binding them, `finally:` or later code): each must be bound only
        by the body's last statement, a plain assignment, so that a body that raised left
        it as it was (`attempt` passes that value on); else this `try` is refused."""
        inside = {id(n) for s in [*node.body, *node.orelse] for n in walk(s)}
        after = {n.id for n in _reading_names(walk(self.fn)) if id(n) not in inside}
        last = body[-1]
        lastly = _surely_bound([last]) if isinstance(last, gast.Assign) and all(
            isinstance(n, (gast.Name, gast.Tuple, gast.List)) for t in last.targets
            for n in walk(t) if not isinstance(n, gast.expr_context)) \
            and not set(_bound_in(body[:-1])) & _surely_bound([last]) else set()
        kept = set()
        # (`finally:` runs after a raise too)
        for name in set(bound) & scope_names(node.finalbody, gast.Load):
            if name not in lastly:
                self._refuse(node.finalbody[0], f"this `try`: when its body raises, `finally:` "
                             f"may read `{name}`, which the body may have bound before it "
                             "raised", f"compute `{name}` before the `try`")
            kept.add(name)
        for handler in node.handlers:
            if handler.body and isinstance(handler.body[-1], gast.Raise):
                continue
            for name in bound:
                if not (_read_first(handler.body, name) or (
                        name not in _surely_bound(handler.body)
                        and (name in after or name in scope_names(node.finalbody, gast.Load)))):
                    continue
                if name not in lastly:
                    self._refuse(handler, f"this `try`: when its body raises, the handler "
                                 f"may read `{name}`, which the body may have bound before "
                                 "it raised", f"bind `{name}` in the handler too "
                                 f"(`{name} = ...`), or compute it before the `try`")
                kept.add(name)
        return kept
