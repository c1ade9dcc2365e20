"""srcad.tape: tape mode, a GradientTape with TensorFlow's semantics over plain NumPy.

    x = srcad.Variable(np.ones(3))
    with srcad.GradientTape() as tape:
        y = np.sum(np.sin(x) * 2.0)        # plain NumPy on tensors: recorded
    tape.gradient(y, x)                    # cotangent of x, as a tensor

Tensors implement NumPy's dispatch protocols, so the functions source mode differentiates run
unchanged under a tape, with the same rule registry (`srcad.ops`). `grad(f, wrt=...)` runs
`f` under a tape with `srcad.grad`'s conventions. Modules, in dependency order: `state`
(recording tapes, ids), `dispatch` (recording one operation), `inplace` (writes and views),
`tensor`, `variables`, `backward` (the reverse sweep), `gradient_tape`, `functional`.
"""
from srcad.tape.errors import (BatchDependenceError, TapeConversionError, TapeStateError,
                               TapeTypeError)
from srcad.runtime import hooks as _hooks
from srcad.tape import control as _control
from srcad.tape.functional import grad
from srcad.tape.gradient_tape import GradientTape, UnconnectedGradients
from srcad.tape.tensor import Tensor
from srcad.tape.variables import Variable, constant

_hooks.install(tape_stop_gradient=_control.stop_gradient, tape_paused=_control.paused,
               tape_custom_gradient=_control.call_custom_gradient,
               tape_checkpoint=_control.call_checkpoint)

__all__ = ["Tensor", "Variable", "constant", "GradientTape", "UnconnectedGradients", "grad",
           "TapeConversionError", "TapeStateError", "TapeTypeError", "BatchDependenceError"]
