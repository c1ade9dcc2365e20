"""api: the user's entry points (grad, value_and_grad, vjp, jvp, Jacobians, Hessians, show),
the quick call paths, the derivatives of derivative calls, and the testing helpers.

The top layer: it builds on the compiler, the tape, the runtime and the ops, and nothing in
srcad imports it but `srcad/__init__.py` and the command line.
"""
