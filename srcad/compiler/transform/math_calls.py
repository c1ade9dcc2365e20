"""math_calls: NumPy calls on numbers → `math` calls, in a gradient program on Python floats.

`np.sin(x)` on a Python float costs about three times `math.sin(x)`, and returns an
`np.float64` whose arithmetic is twice as slow as a float's. In a program specialised on
float arguments (analysis/scalars.py), a ufunc with a `math` twin applied to numbers is
rewritten to the twin, in the user's statements and in the inlined rules alike:

    sin_1 = np.sin(x)            ─▶    sin_1 = math_sin(x)          (math_sin is math.sin)
    b_x = b_sin_1 * np.cos(x)    ─▶    b_x = b_sin_1 * math_cos(x)

The twins agree with NumPy to within an ulp or two (NumPy's own loops round differently
from libm: exp and log1p differ by 1 ulp on ~5% of arguments, tanh by up to 2), but not at
the edges: where NumPy returns nan or inf with a warning, `math` raises (log(0), sqrt(-1),
exp(1000), sin(inf)), float division by zero raises where `np.float64` gives inf, and `**`
of a negative float gives a complex number where NumPy gives nan. So the rewritten program is
*optimistic*: it is made only for programs that compute nothing but numbers (no effects,
`scalars.only_numbers`), `**` with an exponent that is not an integer constant goes through
`real_power`, which raises instead of going complex, and the caller (api.Derivative) runs
the general NumPy program instead whenever the optimistic one raises or returns a value or
gradient that is not finite. What remains different, by design: the value `value_and_grad`
returns is a float where NumPy makes an np.float64 (equal, and a float subclass), results
may differ in the last bit or two as above, and NumPy's warning for an intermediate overflow
whose inf never reaches the result (`min(inf, 1.0)`) is not issued.
"""
from __future__ import annotations

import builtins
import math

import gast
import numpy as np

from srcad.compiler.frontend.trees import walk
from srcad.compiler.transform.adjoints import load
from srcad.ops.registry import math_twin

def real_power(base, exponent):
    """`base ** exponent` for an optimistic program: raises where Python would return a
    complex number (a negative base, a fractional exponent), so the call is handed to the
    NumPy program, which returns nan there."""
    result = base ** exponent
    if type(result) is complex:
        raise ValueError("a real power with a complex result")
    return result


def use_math(module: gast.Module, numbers: frozenset, callee_of, name_for) -> bool:
    """Rewrite, in place, the ufunc calls on numbers in `module` to their `math` twins;
    whether any was (then `**` goes through `real_power` too, and the program is
    optimistic). `callee_of(func_node)` is the object a called name denotes, `name_for(name,
    obj)` the name generated code reads `obj` under (see bindings)."""
    calls = [node for node in walk(module) if isinstance(node, gast.Call)
             and not node.keywords and all(_is_number(a, numbers) for a in node.args)]
    twins = [(node, twin) for node in calls
             if isinstance(callee := callee_of(node.func), np.ufunc)
             and (twin := math_twin(callee)) is not None]
    if not twins:
        return False
    for node, twin in twins:  # bound one by one: a closure cell is read faster than
        node.func = load(name_for(f"math_{twin}", getattr(math, twin)))  # `math.sin`
    _real_powers(module, lambda: name_for("real_power", real_power), callee_of)
    return True


def _real_powers(module: gast.Module, power_name, callee_of) -> None:
    """`a ** b` and `pow(a, b)` → `real_power(a, b)`, unless `b` is an integer constant."""
    class Powers(gast.NodeTransformer):
        def visit_BinOp(self, node):
            self.generic_visit(node)
            if not isinstance(node.op, gast.Pow) or _integral_constant(node.right):
                return node
            return gast.Call(load(power_name()), [node.left, node.right], [])

        def visit_Call(self, node):
            self.generic_visit(node)
            if len(node.args) == 2 and callee_of(node.func) is builtins.pow:
                node.func = load(power_name())
            return node

    Powers().visit(module)


def _integral_constant(node) -> bool:
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, (gast.USub, gast.UAdd)):
        node = node.operand
    return isinstance(node, gast.Constant) and (isinstance(node.value, int) or isinstance(
        node.value, float) and node.value.is_integer())


def _is_number(node, numbers: frozenset) -> bool:
    if isinstance(node, gast.Name):
        return node.id in numbers
    if isinstance(node, gast.Constant):
        return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
    if isinstance(node, gast.UnaryOp):
        return isinstance(node.op, (gast.USub, gast.UAdd)) and _is_number(node.operand, numbers)
    return isinstance(node, gast.BinOp) and _is_number(node.left, numbers) \
        and _is_number(node.right, numbers)
