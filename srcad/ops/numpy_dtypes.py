"""Rules for a value's dtype and its elements as numbers: `x.astype(...)` (also a NumPy
number's, and NumPy 2.1's `np.astype`) and `x.item(...)`."""
import math

import numpy as np

from srcad.kernels.adjoints import dtype_of, through_cast
from srcad.ops.registry import declare, defjvp, defvjp, jvp_rules, nondifferentiable, vjp_rules


def astype_vjp(g, ans, a, dtype, *args, **kwargs):
    """A real output's cotangent is its real part (complex to real drops the imaginary
    part); an integer or boolean output is piecewise constant in `a`: zero, as in JAX (the
    cotangent passed through was a wrong gradient, off finite differences)."""
    if dtype_of(ans).kind not in "fc":
        return np.zeros(np.shape(a), np.promote_types(dtype_of(a), np.float16))
    if dtype_of(a).kind == "f":
        return np.real(g).astype(dtype_of(a)) if hasattr(g, "astype") \
            else np.asarray(np.real(g), dtype_of(a))
    return g if dtype_of(ans).kind == "c" else np.real(g)


def astype_jvp(g, ans, a, dtype, *args, **kwargs):
    if dtype_of(ans).kind not in "fc":
        return np.zeros(np.shape(ans), np.promote_types(dtype_of(a), np.float16))
    return np.asarray(g if dtype_of(ans).kind == "c" else np.real(g), dtype_of(ans))


defvjp(np.ndarray.astype, astype_vjp)
defjvp(np.ndarray.astype, astype_jvp)


def converted(a, dtype, *args, **kwargs):
    """`a.astype(dtype, ...)` for an array or a NumPy number, as a function: what source
    mode calls for the method of a value that surely is one (analysis/arrays.py)."""
    return a.astype(dtype, *args, **kwargs)


for _astype in [np.generic.astype, converted] + ([np.astype] if hasattr(np, "astype") else []):
    defvjp(_astype, *vjp_rules(np.ndarray.astype).rules)  # a NumPy number's, srcad's and
    defjvp(_astype, *jvp_rules(np.ndarray.astype).rules)  # NumPy 2.1's function form


def _flat_index(shape: tuple, args: tuple) -> int:
    """Where `a.item(*args)` reads in `a` raveled: a flat index, a multi-index, or the only
    element."""
    if len(args) > 1 or args and isinstance(args[0], tuple):
        return int(np.ravel_multi_index(args if len(args) > 1 else args[0], shape))
    return args[0] % max(math.prod(shape), 1) if args else 0


nondifferentiable(_flat_index)


def item_vjp(g, ans, a, *args):
    """`a.item(*args)`: `g` at the element read, zeros elsewhere (a real `a` takes the real
    part of a `g` with an imaginary part riding along)."""
    result = np.zeros(np.size(a), np.promote_types(dtype_of(a), np.float16))
    result[_flat_index(np.shape(a), args)] = through_cast(g, result.dtype)
    return np.reshape(result, np.shape(a))


def item_jvp(g, ans, a, *args):
    return np.ravel(g)[_flat_index(np.shape(a), args)]


for _item in (np.ndarray.item, np.generic.item):
    defvjp(_item, item_vjp)
    defjvp(_item, item_jvp)


# (the rules' own helper, linear in `g`: tangent programs that call it are differentiated again)
defvjp(through_cast, lambda g, ans, value, dtype: through_cast(g, dtype), None)
defjvp(through_cast, lambda g, ans, value, dtype: through_cast(g, dtype), None)

declare(np.ndarray.astype, methods=("astype",))  # (the methods that call them: runtime/methods.py)
declare(np.ndarray.item, methods=("item",))


# what they return is a dtype or a bool about types: no derivative, whatever they are passed
nondifferentiable(np.promote_types, np.result_type, np.can_cast, np.min_scalar_type,
                  np.issubdtype, np.iscomplexobj, np.isrealobj)
