"""fuse: VJP maker → gradient function, for `grad` and `value_and_grad` on Python floats,
and for `grad` on any arguments (the gradient-only program, which returns no output).

The VJP maker returns `(output, backward)`, a closure the caller then seeds: for a function
of a few floats, making that closure and its cells costs as much as the arithmetic. The
fused function runs the backward sweep's statements in the forward sweep's frame, seeded as
`srcad.runtime.arguments.seed_for` seeds it, and returns `(output, gradients)`:

    def f_vjp(x):                          def f_grad(x):
        <forward sweep>                        <forward sweep>
        def f_backward(b_y):        ─▶         value = y
            nonlocal x                         b_y = seed_for(value)
            <backward sweep>                   <backward sweep>
            return b_x                         return (value, b_x)
        return (y, f_backward)

Sound because a name the backward sweep assigns without `nonlocal` is a local of the closure
that it always assigns before reading, so sharing the frame changes nothing it reads; and the
output is read before the backward sweep restores overwritten values into the frame.
"""
from __future__ import annotations

import gast

from srcad.compiler.passes import enabled
from srcad.compiler.transform.adjoints import assign, load
from srcad.compiler.transform.bindings import Bindings
from srcad.compiler.transform.copies import propagate_copies
from srcad.compiler.transform.naming import Namer
from srcad.runtime.arguments import seed_for


def fuse(module: gast.Module, vjp_name: str, namer: Namer, bindings: Bindings,
         has_aux: bool, optimistic: bool, gradient_only: bool = False
         ) -> tuple[gast.Module, str]:
    """The module with its VJP maker replaced by the gradient function, and that function's
    name (it is called like the user's function). With `has_aux` the output is
    `(value, aux)` and only `value` seeds the backward sweep. An optimistic program (see
    math_calls; its output is a number) is seeded with 1.0 where `seed_for` may give
    np.float64(1.0): the gradients are equal, and where float arithmetic would raise and
    np.float64's give inf, the general program takes the call over anyway. A
    `gradient_only` program returns the gradients alone, and computes of the output and
    what leads only to it no more than the seed needs (reverse.py made it so); the others
    read the original of a copy instead of the copy (copies.py)."""
    scope = module.body[0]
    vjp = next(s for s in scope.body if isinstance(s, gast.FunctionDef) and s.name == vjp_name)
    *forward, backward, returned = vjp.body
    *sweep, result = [s for s in backward.body if not isinstance(s, gast.Nonlocal)]
    output = returned.value.elts[0]
    if gradient_only:  # (the output may be an outline: reverse.py)
        seed = gast.Call(load(bindings.name_for("seed_for", seed_for)), [output], [])
        vjp.body = [*forward, assign(backward.args.args[0].id, seed), *sweep,
                    gast.Return(result.value)]
    else:
        value = namer.claim("value")
        seeded = gast.Subscript(load(value), gast.Constant(0, None), gast.Load()) \
            if has_aux else load(value)
        seed = gast.Constant(1.0, None) if optimistic else gast.Call(
            load(bindings.name_for("seed_for", seed_for)), [seeded], [])
        vjp.body = [*forward, assign(value, output), assign(backward.args.args[0].id, seed),
                    *sweep, gast.Return(gast.Tuple([load(value), result.value], gast.Load()))]
        if enabled("copies"):  # (on floats a copy costs as much as an operation)
            vjp.body = propagate_copies(vjp.body, set())
    vjp.name = namer.claim(vjp_name.removesuffix("_vjp") + "_grad")
    scope.body[-1] = gast.Return(load(vjp.name))
    return module, vjp.name
