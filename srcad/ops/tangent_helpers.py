"""Rules for the helpers forward mode's tangent programs call (srcad/kernels/tangents.py).

A tangent program is ordinary Python that srcad transforms again for second derivatives
(reverse over forward for Hessian-vector products, forward over forward for third order);
its helpers are linear in the tangents they receive, so each rule applies the helper's own
adjoint or the helper itself to the incoming cotangent or tangent.
"""
from __future__ import annotations

from srcad.kernels.adjoints import accumulate, unbroadcast
from srcad.ops.registry import declare, defjvp, defvjp, nondifferentiable
from srcad.kernels.tangents import (broadcast_like, dense, owned, stored_tangent, tangent_elements,
                            zero_element, zero_tangent)

defvjp(broadcast_like, lambda g, ans, tangent, like: unbroadcast(g, tangent), None)
defjvp(broadcast_like, lambda g, ans, tangent, like: broadcast_like(g, like), None)

defvjp(stored_tangent, None, lambda g, ans, target, tangent: stored_tangent(target, g))
defjvp(stored_tangent, None, lambda g, ans, target, tangent: stored_tangent(target, g))

defvjp(owned, lambda g, ans, tangent: g)
defjvp(owned, lambda g, ans, tangent: owned(g))

defvjp(tangent_elements, lambda g, ans, tangent, count: None if tangent is None else g, None)
defjvp(tangent_elements,
       lambda g, ans, tangent, count: None if tangent is None else tangent_elements(g, count),
       None)


def _dense_vjp(g, ans, tangents, primals):
    """The cotangents of the tangents that were there; a zero filled in gets none."""
    if tangents is None:
        return None
    return [None if t is None else c for c, t in zip(g, tangents)]


defvjp(dense, _dense_vjp, None)
defjvp(dense, lambda g, ans, tangents, primals: dense(g, primals), None)



def _accumulated(g, ans, part):
    """The cotangent of a term of `accumulate`: all of the sum's, summed where an array
    term was broadcast."""
    return g if isinstance(part, (list, tuple, dict)) else unbroadcast(g, part)


# `accumulate(total, extra)` adds the tangents of a list's items (forward.py `_sum`)
defvjp(accumulate, lambda g, ans, total, extra: _accumulated(g, ans, total),
       lambda g, ans, total, extra: _accumulated(g, ans, extra))
defjvp(accumulate, lambda g, ans, total, extra: g, lambda g, ans, total, extra: g)

nondifferentiable(zero_tangent, zero_element)
declare(zero_tangent, sequence="new")  # a new list or dict of Nones (analysis/aliasing.py)
