"""srcad: exact gradients of ordinary Python/NumPy code by source transformation.

`srcad.grad(f)` reads `f`'s source, generates its adjoint program as Python source, compiles
it once and caches it. See `srcad.compiler.pipeline` for how, and the README for what.
"""
from srcad import errors, tape
from srcad.api import custom_programs, derivative_calls
from srcad.api.derivative import grad, show, value_and_grad, vjp
from srcad.api.forward import jvp
from srcad.api.jacobians import batch_jacobian, hessian, hvp, jacobian
from srcad.api.testing import check_grads
from srcad.compiler import passes
from srcad.compiler.cache import cache_info, clear_cache, compiled_adjoint, set_cache_size
from srcad.compiler.frontend.functional import method_variant, record_constructor
from srcad.compiler.pipeline import arguments_written
from srcad.kernels.pytrees import register_pytree_node
from srcad.ops import defjvp, defvjp
from srcad.ops import registry as _registry
from srcad.runtime import hooks as _hooks
from srcad.runtime.control import (checkpoint, checkpointed, clip_by_global_norm,
                                   clip_by_value, custom_gradient, stop_gradient,
                                   stop_recording)
from srcad.tape import GradientTape, Variable, constant
from srcad.version import __version__

__all__ = ["grad", "value_and_grad", "vjp", "jvp", "jacobian", "batch_jacobian", "hessian",
           "hvp", "show", "defvjp", "defjvp", "check_grads", "cache_info", "clear_cache",
           "set_cache_size", "stop_gradient", "stop_recording", "custom_gradient", "checkpoint",
           "checkpointed", "clip_by_global_norm", "clip_by_value", "errors", "passes", "tape",
           "GradientTape", "Variable", "constant", "register_pytree_node", "__version__"]

# what the runtime calls in the layers above it (runtime/hooks.py; the tape installs its own)
_hooks.install(
    compiled_adjoint=compiled_adjoint, grad=grad, value_and_grad=value_and_grad, jvp=jvp,
    vjp=vjp, vjp_of_derivative=derivative_calls.vjp_of_derivative,
    jvp_of_derivative=derivative_calls.jvp_of_derivative,
    vjp_of_jvp=derivative_calls.vjp_of_jvp, jvp_of_jvp=derivative_calls.jvp_of_jvp,
    vjp_of_vjp=derivative_calls.vjp_of_vjp, jvp_of_vjp=derivative_calls.jvp_of_vjp,
    pullback_form=derivative_calls.pullback_form,
    vjp_tangent_program=derivative_calls.vjp_tangent_program,
    held_tangent_program=derivative_calls.held_tangent_program,
    jvp_tangent_program=derivative_calls.jvp_tangent_program,
    derivative_tangent_program=derivative_calls.derivative_tangent_program,
    custom_tangent_program=custom_programs.custom_tangent_program,
    record_constructor=record_constructor, method_variant=method_variant,
    arguments_written=arguments_written)
_registry.own_rules_registered()  # (last: the rules registered from here on are the user's)
