"""numba_backend: a gradient program of numbers compiled to machine code by numba.

`srcad.grad(f, backend="numba")` asks for it. The program is the one srcad makes anyway,
for Python floats ("fused") or float64 arrays ("gradient"), with a typed tape (a list per
recorded name and loop: transform/recording.py `Tape`), then made numba's:

- a name recorded before its first binding starts as 0.0, not None, where it holds a
  number (a list of floats, not of optional floats);
- the seed of a number output is 1.0; `del` statements go (numba frees at the end);
- it is made without the rewrites that serve Python alone (PYTHON_ONLY);
- srcad's helpers it calls (`unbroadcast`, `add_at`, `matmul_vjp_a`, ...) keep their names:
  runtime/numba_twins.py gives numba an implementation of each.

The generated Python stays the program's readable reference, and the fallback: where numba
is not installed, or the program calls anything numba cannot compile (a helper of srcad's
without a twin, a function of the user's, a global array numba would freeze as a constant),
or numba cannot type it at its first call, the Python program runs, and keeps running for
it; so does a call on arrays of another precision than float64 (the twins compute in it).
"""
from __future__ import annotations

import builtins
import types
import warnings
import weakref

import gast
import numpy as np

from srcad.compiler.transform.adjoints import load
from srcad.runtime.arguments import seed_for


def lower(module: gast.Module, name: str, numbers: frozenset, bindings) -> None:
    """Make the program `name` of `module` numba's (see the module's docstring), in place."""
    function = next(node for node in gast.walk(module)
                    if isinstance(node, gast.FunctionDef) and node.name == name)
    function.body = _lowered(function.body, numbers)
    for node in gast.walk(function):
        if isinstance(node, gast.Call) and isinstance(node.func, gast.Name) \
                and bindings.named(node.func.id) is seed_for and len(node.args) == 1 \
                and isinstance(node.args[0], gast.Name) and node.args[0].id in numbers:
            # (`seed_for(y)` of a number is 1.0: written `float(1.0)`, a call in its place)
            node.func = load(bindings.name_for("float", builtins.float))
            node.args = [gast.Constant(1.0, None)]


def _lowered(statements: list, numbers: frozenset) -> list:
    """`statements` without `del`, and a number set to None set to 0.0 instead."""
    kept = []
    for statement in statements:
        if isinstance(statement, gast.Delete):
            continue
        if isinstance(statement, gast.Assign) and len(statement.targets) == 1 \
                and isinstance(statement.targets[0], gast.Name) \
                and statement.targets[0].id in numbers \
                and isinstance(statement.value, gast.Constant) and statement.value.value is None:
            statement.value = gast.Constant(0.0, None)
        for field in ("body", "orelse"):
            inner = getattr(statement, field, None)
            if isinstance(inner, list) and inner:
                setattr(statement, field, _lowered(inner, numbers) or [gast.Pass()])
        kept.append(statement)
    return kept


PYTHON_ONLY = ("outline", "reuse", "release", "specialise")
"""The rewrites a program for numba is made without: outlines are objects numba cannot type,
and the others save memory or NumPy's dispatch, which numba's compiled loops do not pay."""

# the code objects of programs numba could not compile (they run as Python), and of those it
# did: weak, so that a program the cache lets go is let go here too
_failed: weakref.WeakSet = weakref.WeakSet()
_compiled: weakref.WeakSet = weakref.WeakSet()


def compiled_codes() -> frozenset:
    """The code objects of the programs numba compiled (and runs) so far."""
    return frozenset(_compiled)


def compiled(program, bound: types.FunctionType):
    """`bound` (`program` bound to the user's function: CompiledAdjoint.bind) compiled by
    numba, or `bound` itself where it cannot be (see the module's docstring). A program
    that may write into its arguments is left to Python, since a call numba's arithmetic fails
    (a float divided by zero raises where NumPy's gives inf) runs again as Python, which
    decides what the call gives."""
    code = bound.__code__
    if program.argument_writes or code in _failed:
        return bound
    try:
        import numba
    except ImportError:
        _failed.add(code)
        return bound
    if not (_twinned_cells(bound) and _plain_globals(bound)):
        _failed.add(code)
        return bound
    jitted = numba.njit(bound)

    def first(*args):  # (numba compiles at the first call)
        if not _twinned_arguments(args):
            return bound(*args)
        try:
            with warnings.catch_warnings():  # (numba's advice on the generated code is
                warnings.simplefilter(       # not the user's)
                    "ignore", numba.core.errors.NumbaPerformanceWarning)
                result = jitted(*args)
        except numba.core.errors.NumbaError:
            _failed.add(code)
            current[0] = bound
            return bound(*args)
        except Exception:
            return bound(*args)
        _compiled.add(code)
        current[0] = then
        return result

    def then(*args):
        if not _twinned_arguments(args):
            return bound(*args)
        try:
            return jitted(*args)
        except Exception:
            return bound(*args)

    current = [first]
    return lambda *args: current[0](*args)


def _twinned_arguments(args: tuple) -> bool:
    """Whether the arrays among `args` are float64 or hold no numbers with a derivative
    (integer or boolean data): the twins compute in float64, as numba's programs do."""
    return all(type(a) is not np.ndarray or a.dtype.kind not in "fc" or a.dtype == _FLOAT64
               for a in args)


_FLOAT64 = np.dtype(np.float64)


def _twinned_cells(bound) -> bool:
    """Whether the closure of `bound` holds only srcad's helpers that have numba twins
    (runtime/numba_twins.py registers them with numba) and NumPy's, math's or builtins."""
    from srcad.runtime.numba_twins import TWINNED
    return all((_hashable(cell.cell_contents) and cell.cell_contents in TWINNED)
               or _numpy_or_math(cell.cell_contents) for cell in bound.__closure__ or ())


def _plain_globals(bound) -> bool:
    """Whether the globals the program reads are NumPy, math and their functions (numba
    would freeze an array or a number it reads as a constant)."""
    namespace = bound.__globals__
    return all(_numpy_or_math(namespace[name]) for name in bound.__code__.co_names
               if name in namespace)


def _numpy_or_math(value) -> bool:
    """A module, function or type of NumPy, math or the builtins (not an array: data)."""
    if isinstance(value, (np.ndarray, np.generic)):
        return False
    module = value.__name__ if isinstance(value, types.ModuleType) \
        else getattr(value, "__module__", None) or ""
    return callable(value) or isinstance(value, types.ModuleType) \
        if module.split(".")[0] in ("numpy", "math", "builtins") else False


def _hashable(value) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True
