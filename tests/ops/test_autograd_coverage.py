"""Coverage against autograd: every function autograd differentiates, srcad differentiates
too (has a VJP rule) or knows has no derivative, and every function autograd declares
non-differentiable srcad declares so too (or differentiates: srcad's np.full_like carries
its fill value's derivative, which autograd drops).

autograd keeps its VJPs in `autograd.core.primitive_vjps`, keyed by the primitives its
wrapped modules export; `primitive.fun` is the NumPy or SciPy callable itself, which is what
srcad's registry is keyed by. Lookups go through `registry.vjp_rules` and
`registry.is_nondifferentiable`, which load srcad's SciPy rules as source mode does.
"""
import importlib
import inspect
import operator
import pkgutil

import numpy as np
import pytest

from srcad.ops import registry
from srcad.ops.table import display_name

autograd = pytest.importorskip("autograd")

# Primitives that are autograd's own machinery (vector spaces, containers, the adjoints it
# differentiates for higher orders, fixed points), not functions users call.
MACHINERY_MODULES = ("autograd.core", "autograd.builtins", "autograd.misc.fixed_points")
MACHINERY = {
    "autograd.numpy.numpy_vjps.untake", "autograd.numpy.numpy_vjps.dot_adjoint_0",
    "autograd.numpy.numpy_vjps.dot_adjoint_1", "autograd.numpy.numpy_vjps.tensordot_adjoint_0",
    "autograd.numpy.numpy_vjps.tensordot_adjoint_1", "autograd.numpy.numpy_wrapper.make_diagonal",
    "autograd.numpy.fft.truncate_pad",
}
# Primitives through which autograd differentiates a function users call.
STANDS_FOR = {
    "autograd.numpy.numpy_boxes.ArrayBox.__getitem__": operator.getitem,  # x[i]
    "autograd.numpy.numpy_wrapper.array_from_args": np.array,
    "autograd.numpy.numpy_wrapper._array_from_scalar_or_array": np.array,
    "autograd.numpy.numpy_wrapper.concatenate_args": np.concatenate,
    "autograd.numpy.numpy_wrapper._astype": np.ndarray.astype,  # x.astype, in autograd 1.7
}

# What srcad does not cover yet. Helpers are adding numpy.linalg, numpy.fft and complex
# numbers, and SciPy rules as this list is written: the integrator prunes it (the test
# below fails for every entry srcad has come to cover).
NOT_YET = {
    # SciPy
    "autograd.scipy.signal.convolve",  # autograd's own convolve, for scipy.signal.convolve
    "scipy.integrate.odeint",
    "scipy.linalg.solve_banded",
}


def _load_autograd():
    """Import every autograd module, so that each registers its VJPs."""
    for module in pkgutil.walk_packages(autograd.__path__, "autograd."):
        if module.name != "autograd.test_util":
            importlib.import_module(module.name)


def autograd_differentiates() -> dict:
    """{display name: the callable srcad looks up} for every VJP autograd registers."""
    _load_autograd()
    from autograd.core import primitive_vjps
    found = {}
    for primitive in primitive_vjps:
        name = display_name(primitive.fun)
        if name in MACHINERY or name.startswith(MACHINERY_MODULES):
            continue
        found[name] = STANDS_FOR.get(name, primitive.fun)
    return found


def _raw(primitive):
    """The callable an autograd primitive wraps: `fun` of a traced one, the `f_raw` an
    untraced one (np.shape, np.ndim) closes over."""
    if hasattr(primitive, "fun"):
        return primitive.fun
    return inspect.getclosurevars(primitive).nonlocals.get("f_raw", primitive)


def _covered(fn) -> bool:
    return registry.vjp_rules(fn) is not None or registry.is_nondifferentiable(fn)


def test_srcad_covers_what_autograd_differentiates():
    missing = sorted(name for name, fn in autograd_differentiates().items()
                     if not _covered(fn) and name not in NOT_YET)
    assert not missing, f"autograd differentiates these, srcad has no rule: {missing}"


def test_the_list_of_what_srcad_lacks_is_up_to_date():
    found = autograd_differentiates()
    stale = sorted(name for name in NOT_YET if name not in found or _covered(found[name]))
    assert not stale, f"srcad covers these now (or autograd has no such VJP): remove {stale}"


def test_what_autograd_finds_non_differentiable_srcad_does_too():
    _load_autograd()
    from autograd.numpy.numpy_vjps import nograd_functions
    missing = sorted(display_name(_raw(f)) for f in nograd_functions if not _covered(_raw(f)))
    assert not missing, f"srcad does not know these have no derivative: {missing}"
