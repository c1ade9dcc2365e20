"""copies: read the original where the fused program names a value twice.

The backward sweep hands one cotangent to several operands by copying it
(`b_mul_7 = b_add_11`, `b_log_10 = b_add_11` for the operands of a sum), and the fused
program (fuse.py) copies its output and its seed (`value = sub_13`, `b_sub_13 = 1.0`). On
Python floats a copy and its `del` cost as much as the arithmetic around them (the scalar
benchmark: a fifth of the program), so the fused program of floats reads the original
instead: `b_add_9 = 1.0 / add_9` in place of `b_log_10 = b_add_11; b_add_9 = b_log_10 / add_9`.

Input: a function body and the names read after it. Output: the body where every read of a
copy `t = s` (a name or a number) that `s` and `t` still hold is a read of `s`, without the
copies nothing reads any more, and without the `del` of a copy or of its original while the
copy is read (the value stays held until the end: on floats that costs nothing). Loops and
branches are followed: a copy made before a loop reaches into it only if the loop assigns
neither name. Objects are the same either way, so writes into arrays (`multiply_into`) see
no difference.
"""
from __future__ import annotations

import copy

import gast

from srcad.compiler.frontend.trees import walk
from srcad.compiler.transform.optimize import drop_dead_stores

_SCOPES = (gast.Lambda, gast.ListComp, gast.SetComp, gast.DictComp, gast.GeneratorExp)


def propagate_copies(statements: list, live_out: set) -> list:
    """`statements` with reads of copies replaced by reads of their originals."""
    statements = _block(statements, {})
    bound_anyway = {n.id for s in statements for n in walk(s) if isinstance(n, gast.Name)
                    and isinstance(n.ctx, gast.Del)} | {
        s.target.id for s in _all_statements(statements)
        if isinstance(s, gast.AugAssign) and isinstance(s.target, gast.Name)}
    copies = {id(s.value) for s in _all_statements(statements) if _copied(s) is not None
              and s.targets[0].id not in bound_anyway}  # (a `del t` or `t += 1` needs t)
    return drop_dead_stores(statements, live_out, lambda value: id(value) in copies)


def _block(statements: list, copies: dict) -> list:
    """The statements with reads of the active `copies` (target → original) replaced; the
    dict is updated as the statements assign and copy."""
    kept = []
    for statement in statements:
        if isinstance(statement, gast.Delete):  # of a copy, or of what a copy reads: kept
            read = {o.id for o in copies.values() if isinstance(o, gast.Name)}
            names = [t for t in statement.targets
                     if not (isinstance(t, gast.Name) and (t.id in copies or t.id in read))]
            if names:
                _forget(copies, _stored(gast.Delete(names)))
                kept.append(gast.Delete(names))
            continue
        if isinstance(statement, (gast.For, gast.While)):
            _forget(copies, _stored(statement))  # (a copy made inside dies with the body)
            if isinstance(statement, gast.For):
                statement.iter = _replaced(statement.iter, copies)
            else:
                statement.test = _replaced(statement.test, copies)
            statement.body = _block(statement.body, dict(copies))
            statement.orelse = _block(statement.orelse, dict(copies))
        elif isinstance(statement, gast.If):
            statement.test = _replaced(statement.test, copies)
            statement.body = _block(statement.body, dict(copies))
            statement.orelse = _block(statement.orelse, dict(copies))
            _forget(copies, _stored(statement))
        elif isinstance(statement, (gast.Assign, gast.AugAssign, gast.Expr, gast.Return)):
            if statement.value is not None:
                statement.value = _replaced(statement.value, copies)
            if _assigns_itself(statement):  # `b_x = b_x`, left by reading an original
                continue
            names = {t: o for t, o in copies.items() if isinstance(o, gast.Name)}
            targets = statement.targets if isinstance(statement, gast.Assign) \
                else [statement.target] if isinstance(statement, gast.AugAssign) else []
            for target in targets:  # (a number cannot stand where a value is written)
                _replace(target, names)
            _forget(copies, _stored(statement))
            copied = _copied(statement)
            if copied is not None:
                copies[statement.targets[0].id] = copied
        else:  # try, with, a nested function: nothing is read through a copy inside
            _forget(copies, _stored(statement) | _named(statement))
        kept.append(statement)
    return kept


def _assigns_itself(statement) -> bool:
    return isinstance(statement, gast.Assign) and len(statement.targets) == 1 \
        and isinstance(statement.targets[0], gast.Name) and isinstance(statement.value, gast.Name) \
        and statement.value.id == statement.targets[0].id


def _copied(statement):
    """`s` of a copy `t = s` of a name or a number, else None."""
    if isinstance(statement, gast.Assign) and len(statement.targets) == 1 \
            and isinstance(statement.targets[0], gast.Name):
        value = statement.value
        if isinstance(value, gast.Name) and value.id != statement.targets[0].id:
            return value
        if isinstance(value, gast.Constant) and type(value.value) in (int, float):
            return value
    return None


def _replace(node, copies: dict):
    """`node` with the reads of copies replaced, in place (a read is a Name loaded outside a
    lambda or comprehension, whose own parameters may shadow it)."""
    for field, child in gast.iter_fields(node):
        if isinstance(child, list):
            for i, item in enumerate(child):
                if isinstance(item, gast.AST):
                    child[i] = _replaced(item, copies)
        elif isinstance(child, gast.AST):
            setattr(node, field, _replaced(child, copies))
    return node


def _replaced(node, copies: dict):
    if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Load) and node.id in copies:
        return copy.copy(copies[node.id])
    if isinstance(node, _SCOPES):
        return node
    return _replace(node, copies)


def _forget(copies: dict, names: set) -> None:
    """Drop the copies whose target or original is one of `names` (assigned or deleted)."""
    for target, original in list(copies.items()):
        if target in names or getattr(original, "id", None) in names:
            del copies[target]


def _stored(node) -> set:
    return {n.id for n in walk(node) if isinstance(n, gast.Name)
            and isinstance(n.ctx, (gast.Store, gast.Del))}


def _named(node) -> set:
    return {n.id for n in walk(node) if isinstance(n, gast.Name)}


def _all_statements(statements):
    for statement in statements:
        yield statement
        for field in ("body", "orelse", "finalbody"):
            yield from _all_statements(getattr(statement, field, []))
