"""exits: `break`, `continue` and `return` anywhere → flags, so control reaches the end.

Input: a fenced FunctionDef. Output: the same function in which
- `return` appears only once, as the last statement of the function;
- `continue` does not appear, and `break` appears only as `if <flag>: break`, the last
  statement of a loop body;
- a statement that may jump is followed by the rest of its block guarded by
  `if not <flag>: ...`;
- a loop's `else:` block follows the loop, guarded by `if not <flag>:` if it may break.
So every loop body that starts also reaches its end, which is what lets the reverse sweep
replay a loop by its trip count and pop the stack in step with the forward sweep.

    for x in xs:                        for x in xs:
        if x < 0:                           continuing = False
            continue            ─▶          if x < 0:
        total = total + x                       continuing = True
                                            if not continuing:
                                                total = total + x
"""
from __future__ import annotations

import gast

from srcad.compiler.frontend.trees import statements_in
from srcad.compiler.transform.naming import Namer


def lower_exits(fn: gast.FunctionDef, namer: Namer) -> gast.FunctionDef:
    body = fn.body
    final = body[-1:] if body and isinstance(body[-1], gast.Return) else []
    inner = body[:len(body) - len(final)]
    jumps = [n for s in inner for n in statements_in(s)
             if isinstance(n, (gast.Return, gast.Break, gast.Continue))
             or isinstance(n, (gast.For, gast.While)) and n.orelse]  # (`else` runs unless
    if not any(isinstance(n, gast.Return) for n in jumps):          # the loop broke)
        if jumps:
            fn.body = _Lowering(namer, returns=False).block(inner, loop=None) + final
        return fn
    lowering = _Lowering(namer, returns=True)
    lowered = lowering.block(body, loop=None)
    value = _name(lowering.result, gast.Load())
    init = [_assign(lowering.result, gast.Constant(None, None)),
            _assign(lowering.returning, gast.Constant(False, None))]
    fn.body = init + lowered + [gast.copy_location(gast.Return(value), fn)]
    fn.return_variable = lowering.result
    return fn


def walk_local(node):
    """`gast.walk`, without entering nested functions and lambdas (their own scopes)."""
    yield node
    for child in gast.iter_child_nodes(node):
        if not isinstance(child, (gast.FunctionDef, gast.Lambda)):
            yield from walk_local(child)


def _name(identifier, ctx):
    return gast.Name(identifier, ctx, None, None)


def _assign(identifier, value):
    return gast.Assign([_name(identifier, gast.Store())], value, None)


def _any(flags):
    return _name(flags[0], gast.Load()) if len(flags) == 1 else gast.BoolOp(
        gast.Or(), [_name(f, gast.Load()) for f in flags])


def _not(flags):
    tests = [gast.UnaryOp(gast.Not(), _name(f, gast.Load())) for f in flags]
    return tests[0] if len(tests) == 1 else gast.BoolOp(gast.And(), tests)


class _Loop:
    """Flags of the innermost loop being lowered (created when first needed)."""

    def __init__(self, namer):
        self.namer = namer
        self.breaking = None
        self.continuing = None

    def flag(self, kind):
        if getattr(self, kind) is None:
            setattr(self, kind, self.namer.claim(kind))
        return getattr(self, kind)


class _Lowering:
    def __init__(self, namer: Namer, returns: bool):
        self.namer = namer
        self.result = namer.claim("result") if returns else None
        self.returning = namer.claim("returning") if returns else None

    def block(self, statements, loop):
        lowered = []
        for i, statement in enumerate(statements):
            new, flags = self.statement(statement, loop)
            lowered.extend(new)
            if flags:
                rest = self.block(statements[i + 1:], loop)
                if rest:
                    lowered.append(gast.copy_location(gast.If(_not(flags), rest, []), statement))
                break
        return lowered

    def statement(self, node, loop):
        """The lowered statements and the flags they may have set (to guard what follows)."""
        if isinstance(node, gast.Return):
            value = node.value or gast.Constant(None, None)
            return [gast.copy_location(_assign(self.result, value), node),
                    gast.copy_location(_assign(self.returning, gast.Constant(True, None)), node)
                    ], [self.returning]
        if isinstance(node, (gast.Break, gast.Continue)):
            kind = "breaking" if isinstance(node, gast.Break) else "continuing"
            flag = loop.flag(kind)
            return [gast.copy_location(_assign(flag, gast.Constant(True, None)), node)], [flag]
        if isinstance(node, gast.If):
            node.body = self.block(node.body, loop)
            node.orelse = self.block(node.orelse, loop)
            return [node], self._flags_set_in(node, loop)
        if isinstance(node, gast.With):  # (the managers are exited at the block's end)
            node.body = self.block(node.body, loop)
            return [node], self._flags_set_in(node, loop)
        if isinstance(node, (gast.For, gast.While)):
            return self._loop(node, loop)
        return [node], []

    def _loop(self, node, outer):
        """The loop with its exits lowered; its `else:` block follows it, run unless the
        loop broke or returned, and jumps out of that block belong to the `outer` loop."""
        inner = _Loop(self.namer)
        node.body = self.block(node.body, inner)
        exits = [f for f in (inner.breaking, self._returns_in(node)) if f]
        prologue = []
        if inner.continuing:
            node.body.insert(0, _assign(inner.continuing, gast.Constant(False, None)))
        if inner.breaking:
            prologue.append(gast.copy_location(
                _assign(inner.breaking, gast.Constant(False, None)), node))
        if exits:
            node.body.append(gast.If(_any(exits), [gast.Break()], []))
        flags = [self.returning] if self._returns_in(node) else []
        if not node.orelse:
            return prologue + [node], flags
        otherwise, node.orelse = self.block(node.orelse, outer), []
        if exits:
            otherwise = [gast.copy_location(gast.If(_not(exits), otherwise, []), node)]
        after = gast.If(gast.Constant(True, None), otherwise, [])  # (only to look into)
        flags += [f for f in self._flags_set_in(after, outer) if f not in flags]
        return prologue + [node] + otherwise, flags

    def _returns_in(self, node):
        found = self.returning is not None and any(
            isinstance(n, gast.Assign) and isinstance(n.targets[0], gast.Name)
            and n.targets[0].id == self.returning for n in walk_local(node))
        return self.returning if found else None

    def _flags_set_in(self, node, loop):
        names = {n.targets[0].id for n in walk_local(node) if isinstance(n, gast.Assign)
                 and isinstance(n.targets[0], gast.Name)}
        candidates = [self.returning] if self.returning else []
        if loop is not None:
            candidates += [loop.breaking, loop.continuing]
        return [f for f in candidates if f and f in names]
