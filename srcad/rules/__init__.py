"""Derivative rules: one registry shared by every mode, filled by the modules below."""
from srcad.rules import numpy_arrays, numpy_ufuncs, python_builtins  # noqa: F401  (register)
from srcad.rules.registry import defvjp, is_nondifferentiable, nondifferentiable, vjp_rules

__all__ = ["defvjp", "nondifferentiable", "vjp_rules", "is_nondifferentiable"]
