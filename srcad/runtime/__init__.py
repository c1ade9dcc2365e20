"""runtime: what generated code and tape mode call while they run.

Calls whose callee is only known at run time, methods, nested derivatives, the markers
(`stop_gradient`, `custom_gradient`) and the argument conventions. It builds on the ops and
the kernels; what it needs from the layers above (compiling a callee it meets, the API's
derivative objects, the tape) it reaches through `hooks.py`, which srcad/__init__.py and the tape fill.
"""
