"""Derivative rules: one registry shared by every mode, filled by the modules below."""
from srcad.ops import (  # noqa: F401  (they register on import)
    array_namespaces, fused_softmax, numpy_array_api, numpy_arrays, numpy_contractions,
    numpy_decompositions, numpy_dtypes,
    numpy_fft, numpy_indexing, numpy_linalg, numpy_lookups, numpy_norms, numpy_reductions,
    numpy_ufuncs, python_builtins, python_math, tangent_helpers)
from srcad.ops.registry import (defjvp, defvjp, is_nondifferentiable, jvp_rules,
                                  nondifferentiable, vjp_rules)

__all__ = ["defvjp", "defjvp", "jvp_rules", "nondifferentiable", "vjp_rules", "is_nondifferentiable"]
