"""numba_backend: a gradient program of numbers compiled to machine code by numba.

`srcad.grad(f, backend="numba")` asks for it. The program is the one srcad makes anyway,
for Python floats ("fused") or float64 arrays ("gradient"), with a typed tape (a list per
recorded name and loop: transform/recording.py `Tape`), then made numba's:

- a name recorded before its first binding starts as 0.0, not None, where it holds a
  number (a list of floats, not of optional floats);
- the seed of a number output is 1.0; `del` statements go (numba frees at the end);
- srcad's helpers are called as numba twins (`_TWINS`): an element's adjoint scattered
  into zeros, or added into the adjoint of its array.

The generated Python stays the program's readable reference, and the fallback: where numba
is not installed, or the program calls anything numba cannot compile (an array helper of
srcad's, a function of the user's, a global array numba would freeze as a constant), or
numba cannot type it at its first call, the Python program runs, and keeps running for it.
"""
from __future__ import annotations

import builtins
import types

import gast
import numpy as np

from srcad.compiler.transform.adjoints import load
from srcad.kernels import adjoints as helpers
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


def _index_adjoint(g, x, index):
    out = np.zeros(x.shape)
    out[index] = g
    return out


def _add_at(total, g, x, index):
    total[index] += g
    return total


_TWINS = {helpers.index_adjoint: _index_adjoint, helpers.add_at: _add_at}
_failed: set = set()  # code objects numba could not compile: they run as Python
_compiled: set = set()  # those it did


def compiled_codes() -> frozenset:
    """The code objects of the programs numba compiled (and runs) so far."""
    return frozenset(_compiled)


def compiled(program, bound: types.FunctionType):
    """`bound` (`program` bound to the user's function: CompiledAdjoint.bind) compiled by
    numba, or `bound` itself where it cannot be (see the module's docstring). A program
    that may write into its arguments is left to Python: a call numba's arithmetic fails
    (a float divided by zero raises where NumPy's gives inf) runs again as Python, which
    decides what the call gives."""
    code = bound.__code__
    if program.writes or code in _failed:
        return bound
    try:
        import numba
    except ImportError:
        _failed.add(code)
        return bound
    cells = _numba_cells(bound)
    if cells is None or not _plain_globals(bound):
        _failed.add(code)
        return bound
    jitted = numba.njit(types.FunctionType(code, bound.__globals__, bound.__name__,
                                           bound.__defaults__, cells))

    def first(*args):  # (numba compiles at the first call)
        try:
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
        try:
            return jitted(*args)
        except Exception:
            return bound(*args)

    current = [first]
    return lambda *args: current[0](*args)


def _numba_cells(bound) -> tuple | None:
    """The closure of `bound` with srcad's helpers replaced by their twins, or None if it
    holds anything else that is not NumPy's, math's or a builtin."""
    import numba
    cells = []
    for cell in bound.__closure__ or ():
        value = cell.cell_contents
        twin = _TWINS.get(value) if _hashable(value) else None
        if twin is not None:
            cells.append(types.CellType(numba.njit(twin)))
        elif _numpy_or_math(value):
            cells.append(cell)
        else:
            return None
    return tuple(cells)


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
