"""forward_grad: `grad` of a function of one Python float, as a JVP seeded with 1.0.

With one number to differentiate and a number out, the gradient is a single tangent, and
forward mode needs no tape: each loop iteration computes its tangents as it runs, where
the reverse program pushes what its backward sweep will pop (Newton's square root: 1.45 us
against 2.2 us). So for such calls api.Derivative asks for mode "forward-grad"
(pipeline.transform), and the JVP of transform/forward.py becomes

    def f_jvp(tangents, x):              def f_jvp(x):
        t_x, = tangents          ─▶          t_x = 1.0
        ...                                  ...
        return (y, t_y)                      return (y, t_y)

and a tangent of a number that is zero before a loop or branch sets it is 0.0 rather than
None (`NumberTangents`), so the loop tests nothing: `t_v * c`, not
`if t_v is not None: t_mul = t_v * c`.

Forward mode uses the JVP rules where reverse mode uses the VJP rules. srcad's own pairs
agree, but a VJP a user registered without its JVP would be bypassed (a helper with a
custom gradient differentiated from its source, or `np.sin`'s rule replaced). So a program
calling such a callable is not made (`check_forward_grad` raises), and one whose callees
are found when it runs is not used while any such VJP is registered (api.Derivative
takes the reverse program then).
"""
from __future__ import annotations

import gast

from srcad.errors import MissingRuleError
from srcad.frontend.resolve import operations
from srcad.frontend.trees import walk
from srcad.rules.registry import vjps_without_jvps
from srcad.transform.adjoints import NONE, SET, UNSET, assign
from srcad.transform.forward import Tangents


def seed_with_one(module: gast.Module, jvp_name: str) -> None:
    """In place: the JVP named `jvp_name` takes `fn`'s arguments alone, its one `wrt`
    tangent being 1.0."""
    jvp = next(node for node in walk(module)
               if isinstance(node, gast.FunctionDef) and node.name == jvp_name)
    unpack = jvp.body[0]  # `(t_x,) = tangents`, written first by forward.forward
    (seed,) = unpack.targets[0].elts
    del jvp.args.args[0]
    jvp.body[0] = assign(seed.id, gast.Constant(1.0, None))


def check_forward_grad(block: list, parsed) -> bool:
    """Whether a call in `block` finds its callee's derivative when it runs; raises
    MissingRuleError (api.Derivative then uses reverse mode) for a callee whose VJP was
    registered without its JVP."""
    calls = [op for op in operations(block) if op.kind == "call"]
    for op in calls:
        if any(op.callee is custom for custom in vjps_without_jvps):
            raise MissingRuleError(f"forward mode would bypass the VJP registered for "
                                   f"`{op.label}`", parsed.location(op.statement))
    return any(op.dynamic for op in calls)


class NumberTangents(Tangents):
    """Tangents where a zero tangent of a number is the number 0.0 wherever None would
    leave it unknown (maybe None, maybe not) after a block."""

    def make_variables(self, names) -> list:
        numbers = names & self.activity.scalars
        return super().make_variables(names - numbers) + [
            statement for name in sorted(numbers) for statement in self._zero(name)]

    def _clear(self, name: str) -> list:
        if name not in self.activity.scalars:
            return super()._clear(name)
        return self._zero(name)

    def _zero(self, name: str) -> list:
        if self.tangents.state(name) not in (UNSET, NONE):
            return []  # (set, or maybe set: kept)
        self.tangents.states[name] = SET
        return [assign(self.tangents.name(name), gast.Constant(0.0, None))]
