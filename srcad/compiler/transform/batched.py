"""batched: resolved simple form → a *batched* tangent program, for forward Jacobians.

The program is the tangent program of forward.py, with every tangent carrying a leading
batch axis (srcad/kernels/batched.py says what a batched tangent is): called with the identity
basis as the seed, one run gives every column of the Jacobian, at NumPy's speed on whole
arrays instead of one Python-level run per column.

Only operations whose batched form is known are batched: elementwise ufuncs and arithmetic
(their rules applied to tangents aligned to the output's rank), `np.where`, matmul and
`np.dot`, `np.sum`/`np.mean`, indexing, reshapes, transposes and stacking, lists of
tangents, and calls of the user's helpers (their own batched programs, `batching.call`).
Anything else (a method call, a write into an element, a loop over an array, any other NumPy
function) raises `NotBatchable` when the program is built (or, for a helper, when it runs),
and the Jacobian runs the ordinary tangent program per column instead: the batched program
is never an approximation.
"""
from __future__ import annotations


import gast
import numpy as np

from srcad.compiler.frontend.resolve import Operation
from srcad.compiler.transform.adjoints import SET, load
from srcad.compiler.transform.forward import MAYBE, Tangents
from srcad.kernels import tangents
from srcad.ops.registry import is_elementwise
from srcad.kernels import batched
from srcad.kernels.batched import NotBatchable
from srcad.ops.registry import batched_rule
from srcad.runtime import batching

_SUBSTITUTES = {tangents.broadcast_like: batched.broadcast_like}


class BatchedTangents(Tangents):
    """Tangents with a leading batch axis (a `sweep_class` of `forward.forward`)."""

    # ---- elementwise rules: aligned tangents in, full contributions out ----------------------
    # (A one-argument ufunc's output has its argument's shape: its tangent is already both.)
    unary = False
    sums_broadcast = False  # the batch axis aligns only where `full` puts it

    def rule_tangent(self, g, target: str):
        if self.unary:
            return g
        return gast.Call(self._batching("aligned"), [g, load(target)], [])

    def contribution(self, expression, target: str):
        if self.unary:
            return expression
        spread = self._spread(expression, target)
        if spread is not None:
            return spread
        return gast.Call(self._batching("full"), [expression, load(target)], [])

    def _spread(self, expression, target: str):
        """`broadcast_like(g, target)` for a rule's `broadcast_like(aligned(g, target),
        target)` (the tangent of `a + b` in `a`), else None: `broadcast_like` aligns `g`
        and makes it full itself, and each wrapper costs a call per run."""
        def call_of(node, function) -> bool:
            return isinstance(node, gast.Call) and len(node.args) == 2 and not node.keywords \
                and isinstance(node.args[1], gast.Name) and node.args[1].id == target \
                and self.bindings.callee(node.func) is function
        if call_of(expression, batched.broadcast_like) \
                and call_of(expression.args[0], batched.aligned):
            return gast.Call(expression.func, [expression.args[0].args[0], load(target)], [])
        return None

    def bind(self, name: str, obj) -> str:
        substitute = next((s for o, s in _SUBSTITUTES.items() if obj is o), obj)
        return self.bindings.name_for(name, substitute)

    def helper(self, name: str):
        if name == "tangent_elements":  # (an array's rows: along the axis after the batch's)
            return load(self.bindings.name_for("batched_tangent_elements",
                                               batching.tangent_elements))
        return super().helper(name)

    def _batching(self, name: str):
        return load(self.bindings.name_for(f"batched_{name}", getattr(batched, name)))

    # ---- calls ------------------------------------------------------------------------------
    def _call(self, op: Operation):
        if is_elementwise(op.callee) or (op.callee is np.where and len(op.args) == 3):
            self.unary = isinstance(op.callee, np.ufunc) and op.callee.nin == 1 \
                and not op.keywords and len(op.args) == 1
            try:
                return super()._call(op)
            finally:
                self.unary = False
        rule = batched_rule(op.callee)
        if rule is None:
            raise NotBatchable(f"`{op.label}` has no batched form")
        tangents = [self.tangent_of_atom(a) for a in op.args]
        arguments = [gast.Tuple(tangents, gast.Load()), load(op.targets[0]), *op.args]
        call = gast.Call(self._batching("apply"),
                         [load(self.bindings.name_for(_name_of(rule), rule)),
                          *arguments],
                         [gast.keyword(k, v) for k, v in op.keywords])
        target = op.targets[0]
        sure = all(self.tangents.state(a.id) == SET for a in op.args
                   if isinstance(a, gast.Name) and a.id in self.active)
        self.tangents.states[target] = SET if sure else MAYBE
        return [gast.Assign([gast.Name(self.tangents.name(target), gast.Store(), None, None)],
                            call, None)]

    callee_caller = ("batched_call", batching.call)

    def method_caller(self, op):
        raise NotBatchable(f"the method call `{op.label}` is differentiated when it runs")

    # ---- sequences only: arrays would need their batch axis kept apart ---------------------
    def _iterated(self, node):
        if node.element is not None and node.element in self.active \
                and node.iterable not in self.tangents.sequences \
                and not _zero(self.tangent_of(node.iterable)):
            raise NotBatchable("a loop over the elements of an array")
        return super()._iterated(node)

    def _setitem(self, op):
        # (a name the analysis calls a sequence may hold an array: one unpacked from a call's
        # tuple, as a `try` body's results are; so no element write is batched)
        raise NotBatchable("a write into an array or list")


def _zero(node) -> bool:
    return isinstance(node, gast.Constant) and node.value is None


def _name_of(rule) -> str:
    """The name the generated code calls a batched rule by (a lambda's is no identifier)."""
    name = getattr(rule, "__name__", "")
    return name if name.isidentifier() else "batched_rule"
