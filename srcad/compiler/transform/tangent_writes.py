"""tangent_writes: forward mode's tangents of values written in place (`y[i] = v`,
`y.append(v)`): the tangent is written the same way, so that reverse mode over the tangent
program undoes those writes like the user's. A mixin of forward.Tangents.
"""
from __future__ import annotations

import gast

from srcad.compiler.frontend.resolve import Operation
from srcad.compiler.frontend.trees import clone
from srcad.compiler.transform.adjoints import MAYBE, NONE, SET, UNSET, assign, is_none, load
from srcad.ops import python_statements

_NONE = gast.Constant(None, None)


class TangentWrites:
    def take_ownership(self, names) -> list:
        """`t_y = owned(t_y)` for names whose tangent is about to be written in place."""
        statements = []
        for name in names:
            if name in self.mutated and self.tangents.state(name) not in (UNSET, NONE):
                tangent = self.tangents.name(name)
                statements.append(assign(tangent, gast.Call(self.helper("owned"), [
                    load(tangent)], [])))
        return statements

    def _setitem(self, op):
        container, index, value = op.args
        return self._update(op, lambda tangent, element: [gast.Assign(
            [gast.Subscript(load(tangent), index, gast.Store())],
            gast.Call(self.helper("stored_tangent"), [clone(container), element], []), None)])

    def _append(self, op):
        return self._update(op, lambda tangent, element: [gast.Expr(gast.Call(
            gast.Attribute(load(tangent), "append", gast.Load()), [element], []))])

    def _insert(self, op):
        """`xs.insert(index, value)`: the tangent is inserted the same way."""
        insert = load(self.bindings.name_for("list_insert", python_statements.list_insert))
        index = op.args[1]
        return self._update(op, lambda tangent, element: [gast.Expr(gast.Call(
            insert, [load(tangent), clone(index), element], []))])

    def _pop(self, op):
        """`item = xs.pop(index)`: the item's tangent is popped from the list's the same way
        (or is zero where the list has none), even where the item is not used (an operation
        again, for reverse mode over the tangent program)."""
        (item,), container = op.targets, op.mutates
        state = self.tangents.state(container)
        if state in (UNSET, NONE):
            return self._clear(item)
        popped = assign(self.tangents.name(item), gast.Call(
            load(self.bindings.name_for("popped", python_statements.popped)),
            [load(self.tangents.name(container)), clone(op.args[1])], []))
        self.tangents.states[item] = MAYBE  # (an item of a list may have no tangent)
        if state == SET:
            return [popped]
        return [gast.If(is_none(self.tangents.name(container), negate=True), [popped],
                        [assign(self.tangents.name(item), _NONE)])]

    def _update(self, op: Operation, write) -> list:
        """The tangent of `y` after `y[i] = v`, `y.append(v)` or `y.insert(i, v)`, written
        the same way, `write(t_y, element)`: ordinary in-place statements, so that reverse
        mode over the tangent program undoes them like the user's. `y` gets a zero tangent when `v` brings
        the first nonzero one; a zero `v` writes a zero element."""
        name, value = op.mutates, op.args[-1]
        tangent, state = self.tangents.name(name), self.tangents.state(name)
        value_tangent = self.tangent_of_atom(value)
        zero = gast.Call(self.helper("zero_element"), [load(tangent)], [])
        if state in (UNSET, NONE):
            unset = []
        elif state == SET:
            unset = write(tangent, zero)
        else:
            unset = [gast.If(is_none(tangent, negate=True), write(tangent, zero), [])]
        if is_none_constant(value_tangent):
            return unset
        start = [assign(tangent, gast.Call(self.helper("zero_tangent"), [
            load(name), gast.Constant(int(op.kind in ("append", "insert")), None)], []))]
        if state == MAYBE:
            start = [gast.If(is_none(tangent), start, [])]
        written = (start if state != SET else []) + write(tangent, value_tangent)
        if not isinstance(value_tangent, gast.Name) \
                or self.tangents.state(value_tangent.id) == SET:
            self.tangents.states[name] = SET
            return written
        self.tangents.states[name] = SET if state == SET else MAYBE
        declared = [assign(tangent, _NONE)] if state == UNSET else []
        return declared + [gast.If(is_none(value_tangent.id, negate=True), written, unset)]


def is_none_constant(node) -> bool:
    """Whether a tangent expression is the literal None (a zero tangent)."""
    return isinstance(node, gast.Constant) and node.value is None
