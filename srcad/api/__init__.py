"""api: the user's entry points (grad, value_and_grad, vjp, jvp, Jacobians, Hessians, show),
the quick call paths, the derivatives of derivative calls, and the testing helpers.

The top layer: it builds on the compiler, the tape, the runtime and the ops, and nothing in
srcad imports it but `srcad/__init__.py` and the command line.
"""
from srcad.api import custom_programs, derivative, derivative_calls, forward
from srcad.compiler import cache
from srcad.runtime import hooks

hooks.install(
    compiled_adjoint=cache.compiled_adjoint, grad=derivative.grad,
    value_and_grad=derivative.value_and_grad, jvp=forward.jvp,
    vjp_of_derivative=derivative_calls.vjp_of_derivative,
    jvp_of_derivative=derivative_calls.jvp_of_derivative,
    vjp_of_jvp=derivative_calls.vjp_of_jvp, jvp_of_jvp=derivative_calls.jvp_of_jvp,
    derivative_tangent_program=derivative_calls.derivative_tangent_program,
    custom_tangent_program=custom_programs.custom_tangent_program)
