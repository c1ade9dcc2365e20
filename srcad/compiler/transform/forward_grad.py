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

It is made only for a program whose differentiated values are all numbers and that
writes into nothing (`check_forward_grad`), where the two modes agree: with arrays, a
partial that is infinite or nan where an element is not selected (`np.where`, indexing)
gives nan in reverse mode (`0 * inf`) and is dropped in forward mode, so floats and arrays
would disagree; and the reverse program undoes writes into the caller's objects, which a
JVP does not. Forward mode uses the JVP rules where reverse mode uses the VJP rules:
srcad's own pairs agree, but a user's rule may have no twin, or a twin that does not
agree (a straight-through gradient), so a callee with one keeps reverse mode too.
"""
from __future__ import annotations

import gast

from srcad.compiler.frontend.resolve import operations
from srcad.compiler.frontend.trees import walk
from srcad.compiler.transform.adjoints import assign
from srcad.errors import SrcadError
from srcad.ops.registry import has_user_rules


class NotForwardable(SrcadError):
    """A function whose gradient on floats is computed by reverse mode instead (api)."""


def check_forward_grad(block: list, activity) -> None:
    """Raise NotForwardable unless forward mode gives the gradient reverse mode would:
    every differentiated value a number, no write into any object, no callee with a rule
    of the user's."""
    if not activity.active <= activity.scalars:
        raise NotForwardable("a differentiated value that is not a number")
    for op in operations(block):
        if op.mutates:
            raise NotForwardable(f"a write into `{op.mutates}`")
        if op.kind == "call" and has_user_rules(op.callee):
            raise NotForwardable(f"`{op.label}` has a rule of the user's")


def seed_with_one(module: gast.Module, jvp_name: str) -> None:
    """In place: the JVP named `jvp_name` takes `fn`'s arguments alone, its one `wrt`
    tangent being 1.0."""
    jvp = next(node for node in walk(module)
               if isinstance(node, gast.FunctionDef) and node.name == jvp_name)
    unpack = jvp.body[0]  # `(t_x,) = tangents`, written first by forward.forward
    (seed,) = unpack.targets[0].elts
    del (jvp.args.posonlyargs or jvp.args.args)[0]  # (`tangents`, put first there)
    jvp.body[0] = assign(seed.id, gast.Constant(1.0, None))
